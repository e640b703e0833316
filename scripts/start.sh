#!/bin/sh
# Fresh Debian 12: install the build dependencies, build, and start iopulsed in the
# foreground with a live table, using the repository's default config. Run as root.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
exec ./build/iopulsed -c etc/iopulse.yaml --print "$@"
