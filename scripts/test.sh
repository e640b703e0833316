#!/bin/sh
# Fresh Debian 12: install dependencies, build, and run every test: C unit tests, the Python
# client's unit tests, the privileged integration tests (the real daemon with its BPF programs
# on loop devices, the gRPC server on sockets, the Python client over the wire), the Python
# client pip-installed into venvs with the newest and the oldest grpcio/protobuf it supports
# (scripts/test-client-matrix.sh), the Debian packages, rpms and the Python sdist/wheel
# (scripts/test-packages.sh, test-rpm.sh, test-python-dist.sh), then the gRPC server tests
# again against a daemon built with AddressSanitizer + UndefinedBehaviorSanitizer, a two-minute
# soak (tests/soak/soak.py) and a short libFuzzer run of every target (scripts/fuzz.sh).
# Run as root. Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
meson test -C build --suite unit --print-errorlogs
PY=/usr/bin/python3
PYTHONPATH=clients/python/src $PY -m pytest -q -p no:cacheprovider clients/python/tests
$PY -m pytest -v -s -p no:cacheprovider tests/integration
echo "== Python client as scripts/install-client.sh installs it (Debian's python3 packages)"
./scripts/install-client.sh
build/pyenv/bin/python -m pytest -v -s -p no:cacheprovider tests/integration/test_grpc.py \
	-k test_cli_info_snapshot_watch_top_against_the_daemon
./scripts/test-client-matrix.sh

echo "== packages: Debian (built, lintian, installed and run as the unit would), rpm, Python dist"
./scripts/test-packages.sh
./scripts/test-rpm.sh
./scripts/test-python-dist.sh

echo "== gRPC server under ASan+UBSan"
[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
	-Dtests=false
ninja -C build-asan iopulsed
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
IOPULSED="$PWD/build-asan/iopulsed" \
	$PY -m pytest -v -s -p no:cacheprovider tests/integration/test_grpc.py \
	tests/integration/test_phases.py tests/integration/test_prometheus.py \
	tests/integration/test_limits.py tests/integration/test_tls.py

echo "== soak: two minutes of load, hotplug, killed subscribers, marks and reloads"
$PY tests/soak/soak.py --minutes 2 --report-every 20

echo "== fuzzing: config loader, request handling, sysfs and Ceph readers, 30 s each"
./scripts/fuzz.sh 30
