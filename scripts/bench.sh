#!/bin/sh
# Overhead benchmark (not part of the test suite): installs the peers it compares against
# (libbpf-tools, bpftrace), builds, and runs tests/bench/overhead.py. Run as root; about
# 10 minutes. Extra arguments go to overhead.py (--quick, --repeats N, --json FILE).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libbpf-tools bpftrace >/dev/null
[ -d build ] || meson setup build
ninja -C build
exec /usr/bin/python3 tests/bench/overhead.py "$@"
