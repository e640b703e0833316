#!/bin/sh
# Builds the rpms with rpmbuild from packaging/rpm/iopulse.spec (on Debian, with the stand-ins
# for Fedora's macros in packaging/rpm/macros.non-fedora and Debian's toolchain: --nodeps),
# then checks them with rpm -qp (files, config files, requires, scriptlets) and runs rpmlint.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VERSION=$(cat VERSION)
TOP=$(mktemp -d /var/tmp/iopulse-rpm.XXXXXX)
trap 'rm -rf "$TOP"' EXIT INT TERM
fail() { echo "test-rpm: FAIL: $*" >&2; exit 1; }

need=""
for p in rpm rpmlint python3-build python3-installer python3-hatchling scdoc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
spec_version=$(sed -n 's/^Version: *//p' packaging/rpm/iopulse.spec)
[ "$spec_version" = "$VERSION" ] || fail "iopulse.spec Version $spec_version, VERSION $VERSION"

mkdir -p "$TOP/SOURCES" "$TOP/stage/iopulse-$VERSION"
git ls-files -z --cached --others --exclude-standard | \
	tar --null -T - -cf - | tar -xf - -C "$TOP/stage/iopulse-$VERSION"
tar -C "$TOP/stage" -czf "$TOP/SOURCES/iopulse-$VERSION.tar.gz" "iopulse-$VERSION"
cp packaging/systemd/iopulse.sysusers "$TOP/SOURCES/"

echo "== rpmbuild -bb"
env PATH=/usr/sbin:/usr/bin:/sbin:/bin rpmbuild -bb --nodeps \
	--load "$ROOT/packaging/rpm/macros.non-fedora" --define "_topdir $TOP" \
	packaging/rpm/iopulse.spec > "$TOP/build.log" 2>&1 || {
	tail -40 "$TOP/build.log"; fail "rpmbuild"; }
D=$(ls "$TOP"/RPMS/x86_64/iopulse-"$VERSION"-*.x86_64.rpm)
P=$(ls "$TOP"/RPMS/noarch/python3-iopulse-"$VERSION"-*.noarch.rpm)
mkdir -p build/packages
cp "$D" "$P" build/packages/

echo "== contents"
for r in "$D" "$P"; do
	echo "-- $(basename "$r")"
	rpm -qp --list "$r"
	echo "requires:"; rpm -qp --requires "$r" | grep -v '^rpmlib(' | sed 's/^/  /'
done
has() { rpm -qp --list "$1" | grep -qx "$2" || fail "$(basename "$1") lacks $2"; }
for f in /usr/sbin/iopulsed /etc/iopulse/iopulse.yaml /usr/lib/systemd/system/iopulsed.service \
	/usr/lib/sysusers.d/iopulsed.conf /usr/share/man/man8/iopulsed.8.gz \
	/usr/share/man/man5/iopulse.yaml.5.gz; do has "$D" "$f"; done
for f in /usr/bin/iopulse /usr/share/man/man1/iopulse.1.gz; do has "$P" "$f"; done
rpm -qp --list "$P" | grep -q "site-packages/iopulse/client.py$" || fail "no iopulse/client.py"
rpm -qp --configfiles "$D" | grep -qx /etc/iopulse/iopulse.yaml || fail "iopulse.yaml not %config"
rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$D" | grep -qx "/etc/iopulse/iopulse.yaml cn" ||
	fail "iopulse.yaml is not %config(noreplace)"
rpm -qp --requires "$D" | grep -q "libbpf" || fail "no libbpf requirement"
rpm -qp --requires "$P" | grep -q "grpcio" || fail "no grpcio requirement"

echo "== scriptlets"
rpm -qp --scripts "$D" | tee "$TOP/scripts.txt"
grep -q "useradd -r -g iopulse" "$TOP/scripts.txt" || fail "no user created in %pre"
grep -q "preset iopulsed.service" "$TOP/scripts.txt" || fail "%post does not go by presets"
grep -Eq "systemctl (--no-reload )?(enable|start)" "$TOP/scripts.txt" &&
	fail "a scriptlet enables or starts the service unconditionally"
grep -q "try-restart iopulsed.service" "$TOP/scripts.txt" || fail "no restart on upgrade"

echo "== rpmlint"
rpmlint -r packaging/rpm/iopulse.rpmlintrc "$D" "$P" 2>&1 | tee "$TOP/rpmlint.txt" || true
grep -q ": E: " "$TOP/rpmlint.txt" && fail "rpmlint reports errors"
echo "test-rpm: ok"
