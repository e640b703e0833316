#!/bin/sh
# Fresh Debian 12: install dependencies, build, and run every test (unit, then the
# privileged integration tests on real loop devices). Run as root. Exits non-zero on
# any failure.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
meson test -C build --suite unit --print-errorlogs
/usr/bin/python3 -m pytest -v -s -p no:cacheprovider tests/integration
