#!/bin/sh
# Fresh Debian 12: install dependencies, build, and run every test: C unit tests, the Python
# client's unit tests, the privileged integration tests (the real daemon with its BPF programs
# on loop devices, the gRPC server on sockets, the Python client over the wire), the Python
# client pip-installed into venvs with the newest and the oldest grpcio/protobuf it supports
# (scripts/test-client-matrix.sh), the Debian packages, rpms and the Python sdist/wheel
# (scripts/test-packages.sh, test-rpm.sh, test-python-dist.sh), then the gRPC server tests
# again against a daemon built with AddressSanitizer + UndefinedBehaviorSanitizer, a two-minute
# soak (tests/soak/soak.py), a short libFuzzer run of every target (scripts/fuzz.sh), and the
# kernel x controller matrix: Debian's kernels booted under qemu with emulated disks, the
# daemon held to each guest's /proc/diskstats and to blktrace (tests/vm/matrix.py, `vm`).
#
# Every stage runs even when an earlier one failed (but for the install and the build, which
# the rest need); a summary prints one line per stage with its result and duration, and the
# exit status is non-zero if any stage failed. Run as root.
#
#   ./scripts/test.sh                    every stage
#   ./scripts/test.sh integration soak   only the stages named (names as in the summary)
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
ONLY="$*"
SUMMARY=$(mktemp)
trap 'rm -f "$SUMMARY"' EXIT
FAILED=0

# stage NAME COMMAND...: runs COMMAND in a subshell with -e, records result and duration
stage() {
	name=$1; shift
	if [ -n "$ONLY" ] && ! printf ' %s ' "$ONLY" | grep -q " $name "; then
		return 0
	fi
	echo
	echo "== stage $name"
	t0=$(date +%s)
	( set -e; "$@" )
	rc=$?
	dt=$(( $(date +%s) - t0 ))
	if [ "$rc" -eq 0 ]; then
		res=passed
	else
		res="FAILED (exit $rc)"
		FAILED=$((FAILED + 1))
	fi
	printf '%-14s %-18s %4dm%02ds\n' "$name" "$res" $((dt / 60)) $((dt % 60)) >>"$SUMMARY"
	echo "== stage $name: $res in ${dt}s"
	return "$rc"
}

summary() {
	echo
	echo "== summary (stage, result, duration)"
	cat "$SUMMARY"
	total=$(wc -l <"$SUMMARY")
	echo "stages: $((total - FAILED)) passed, $FAILED failed"
}

build() {
	./scripts/install-deps.sh
	[ -d build ] || meson setup build
	ninja -C build
}

unit() {
	meson test -C build --suite unit --print-errorlogs
	PYTHONPATH=clients/python/src $PY -m pytest -q -p no:cacheprovider clients/python/tests
}

integration() {
	# the 15 slowest tests named at the end: where the stage's time goes
	$PY -m pytest -v -s -p no:cacheprovider --durations=15 tests/integration
}

client() {
	echo "Python client as scripts/install-client.sh installs it (Debian's python3 packages)"
	./scripts/install-client.sh
	build/pyenv/bin/python -m pytest -v -s -p no:cacheprovider tests/integration/test_grpc.py \
		-k test_cli_info_snapshot_watch_top_against_the_daemon
	./scripts/test-client-matrix.sh
}

packages() {
	echo "Debian (built, lintian, installed and run as the unit would), rpm, Python dist"
	./scripts/test-packages.sh
	./scripts/test-rpm.sh
	./scripts/test-python-dist.sh
}

asan() {
	[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined \
		-Db_lundef=false -Dtests=false
	ninja -C build-asan iopulsed
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	IOPULSED="$PWD/build-asan/iopulsed" \
		$PY -m pytest -v -s -p no:cacheprovider tests/integration/test_grpc.py \
		tests/integration/test_phases.py tests/integration/test_prometheus.py \
		tests/integration/test_limits.py tests/integration/test_tls.py \
		tests/integration/test_tcp_guard.py
}

soak() {
	echo "two minutes of load, hotplug, killed subscribers, marks and reloads"
	$PY tests/soak/soak.py --minutes 2 --report-every 20
}

fuzz() {
	echo "config loader, request handling, sysfs and Ceph readers, 30 s each"
	./scripts/fuzz.sh 30
}

vm() {
	echo "Debian kernels (tests/vm/kernels.txt) booted under qemu TCG with NVMe, megaraid_sas,"
	echo "AHCI, virtio-scsi and virtio-blk disks: build/iopulsed against the guest's diskstats"
	rc=0
	# the judge's rules on made-up cells first (tests/vm/test_blktruth.py)
	$PY -m pytest -q -p no:cacheprovider tests/vm/test_blktruth.py tests/vm/test_boot.py || rc=$?
	# two kernels booted at once; every mode and bfq too on the oldest and the newest
	# kernel, the default mode under none and mq-deadline on those between
	# (tests/vm/README.md: cost)
	$PY tests/vm/matrix.py --all-modes-on 5.10,7.3 --bfq-on 5.10,7.3 || rc=$?
	if [ -f build/vm-matrix/results.json ]; then
		$PY tests/vm/table.py build/vm-matrix/results.json
	fi
	return "$rc"
}

# (not inside `if`: a shell ignores set -e in a command an `if` tests, subshells included)
stage build build
if [ "$FAILED" -ne 0 ]; then
	summary
	echo "the build failed: no other stage can run" >&2
	exit 1
fi
stage unit unit
stage integration integration
stage client client
stage packages packages
stage asan asan
stage soak soak
stage fuzz fuzz
stage vm vm
summary
[ "$FAILED" -eq 0 ]
