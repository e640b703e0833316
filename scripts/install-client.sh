#!/bin/sh
# Installs the iopulse Python client and CLI into build/pyenv (run as root on Debian 12):
# Debian's python3-grpcio, python3-protobuf and python3-rich provide the dependencies and
# python3-hatchling the build backend; a venv with --system-site-packages sees them, and the
# package is pip-installed editable from clients/python with --no-deps --no-build-isolation,
# so nothing comes from PyPI (works offline once the Debian packages are in). Prints the
# path of the iopulse command.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/build/pyenv"
PY=/usr/bin/python3
PKGS="python3-grpcio python3-protobuf python3-rich python3-pytest python3-venv python3-hatchling"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-client: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# A venv made without pip (or by an older version of this script) is made again.
if [ ! -x "$VENV/bin/pip" ]; then
	mkdir -p "$ROOT/build"
	"$PY" -m venv --clear --system-site-packages "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps \
	--no-build-isolation -e "$ROOT/clients/python" >&2

if ! "$VENV/bin/python" -c 'import iopulse, grpc, google.protobuf, rich' ||
	! "$VENV/bin/iopulse" --help >/dev/null; then
	echo "install-client: the iopulse package does not work in $VENV" >&2
	exit 1
fi
echo "$VENV/bin/iopulse"
