#!/bin/sh
# Installs the iopulse Python client and CLI into build/pyenv, a venv that uses Debian's
# python3-grpcio, python3-protobuf and python3-rich (nothing from PyPI), with the package
# linked from clients/python/src like an editable install. Run as root on Debian 12.
# Prints where the iopulse command is. (With PyPI access, `pip install clients/python` works
# anywhere too.)
set -eu
cd "$(dirname "$0")/.."
need=""
for p in python3-grpcio python3-protobuf python3-rich python3-venv; do
	dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
[ -x build/pyenv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages --without-pip build/pyenv
SITE=$(build/pyenv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$(pwd)/clients/python/src" > "$SITE/iopulse-src.pth"
cat > build/pyenv/bin/iopulse <<EOS
#!$(pwd)/build/pyenv/bin/python
import sys
from iopulse.cli import main
sys.exit(main())
EOS
chmod 755 build/pyenv/bin/iopulse
build/pyenv/bin/python -c 'import iopulse, grpc, google.protobuf, rich' || {
	echo "install-client: the iopulse package does not import in build/pyenv" >&2
	exit 1
}
echo "$(pwd)/build/pyenv/bin/iopulse"
