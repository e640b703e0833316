#!/bin/sh
# The Python client as an sdist and a wheel (python -m build: the wheel is built from the
# sdist), installed into a fresh venv that takes grpcio/protobuf/rich from Debian's packages:
# it installs with pip without fetching anything and reports the project's version.
set -eu
cd "$(dirname "$0")/.."
VERSION=$(cat VERSION)
WORK=$(mktemp -d /var/tmp/iopulse-pydist.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() { echo "test-python-dist: FAIL: $*" >&2; exit 1; }

need=""
for p in python3-build python3-hatchling python3-venv python3-grpcio python3-protobuf python3-rich; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

# a copy outside the tree (hatchling would apply the tree's .gitignore to a build under build/)
mkdir -p "$WORK/src"
git ls-files -z --cached --others --exclude-standard clients/python VERSION | \
	tar --null -T - -cf - | tar -xf - -C "$WORK/src"
/usr/bin/python3 -m build --no-isolation --skip-dependency-check --outdir "$WORK/dist" \
	"$WORK/src/clients/python" > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "build"; }
ls "$WORK/dist"
SDIST="$WORK/dist/iopulse-$VERSION.tar.gz"
WHEEL="$WORK/dist/iopulse-$VERSION-py3-none-any.whl"
[ -f "$SDIST" ] && [ -f "$WHEEL" ] || fail "expected $SDIST and $WHEEL"
for f in VERSION LICENSE README.md pyproject.toml src/iopulse/client.py tests/test_model.py; do
	tar tzf "$SDIST" | grep -qx "iopulse-$VERSION/$f" || fail "sdist lacks $f"
done
[ "$(tar xzOf "$SDIST" "iopulse-$VERSION/VERSION")" = "$VERSION" ] || fail "sdist VERSION"

/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/pip" install -q --no-index "$WHEEL" || fail "pip install of the wheel"
got=$(cd / && "$WORK/venv/bin/iopulse" --version)
[ "$got" = "iopulse $VERSION" ] || fail "iopulse --version says '$got'"
(cd / && "$WORK/venv/bin/python" -c "import iopulse, sys; assert iopulse.__version__ == sys.argv[1], iopulse.__version__; print('import ok', iopulse.__file__)" "$VERSION")
echo "test-python-dist: ok"
