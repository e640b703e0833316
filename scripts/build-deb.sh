#!/bin/sh
# Builds the Debian packages iopulsed and python3-iopulse from this tree (run as root on
# Debian 12; installs the Build-Depends first). The .debs land in build/packages/.
#   scripts/build-deb.sh            build (with the unit tests)
#   DEB_BUILD_OPTIONS=nocheck scripts/build-deb.sh
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VERSION=$(cat VERSION)
# outside the tree: hatchling, building the client, would apply the tree's .gitignore (build/)
STAGE="${TMPDIR:-/var/tmp}/iopulse-deb-stage"
OUT="$ROOT/build/packages"

export DEBIAN_FRONTEND=noninteractive
if ! command -v mk-build-deps >/dev/null || ! command -v dpkg-buildpackage >/dev/null; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends devscripts equivs dpkg-dev >/dev/null
fi

# the tree's files (tracked and new, not ignored), with the packaging in debian/
rm -rf "$STAGE"
mkdir -p "$STAGE/iopulse-$VERSION" "$OUT"
git ls-files -z --cached --others --exclude-standard | \
	tar --null -T - -cf - | tar -xf - -C "$STAGE/iopulse-$VERSION"
SRC="$STAGE/iopulse-$VERSION"
cp -rL packaging/debian "$SRC/debian"
cp packaging/systemd/iopulse.sysusers "$SRC/debian/iopulsed.sysusers"

changelog=$(cd "$SRC" && dpkg-parsechangelog -S Version)
if [ "$changelog" != "$VERSION" ]; then
	echo "build-deb: packaging/debian/changelog is at $changelog, VERSION says $VERSION" >&2
	exit 1
fi

echo "build-deb: installing the Build-Depends" >&2
(cd "$STAGE" && mk-build-deps -i -r -t "apt-get -y -qq --no-install-recommends" \
	"$SRC/debian/control" >/dev/null)
rm -f "$STAGE"/iopulse-build-deps_*

echo "build-deb: dpkg-buildpackage" >&2
# Debian's own tools only (not a python3 of a venv or pyenv earlier in PATH)
(cd "$SRC" && env PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -us -uc -b) \
	> "$STAGE/build.log" 2>&1 || {
	tail -40 "$STAGE/build.log" >&2
	echo "build-deb: failed; the whole log is $STAGE/build.log" >&2
	exit 1
}
mv "$STAGE"/*.deb "$STAGE"/*.buildinfo "$STAGE"/*.changes "$OUT"/
ls "$OUT"/*.deb
