#!/bin/sh
# Fresh Debian 12: install the dependencies, build, start iopulsed on the repository's default
# config (gRPC on /run/iopulse/iopulse.sock) and watch it live with `iopulse top`. Run as root.
# Ctrl-C (or q) leaves top and stops the daemon. Arguments go to iopulsed, e.g. --tcp 127.0.0.1:7073.
# Without a terminal (CI, pipes), `iopulse top` prints one table per update instead.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
./scripts/install-client.sh >/dev/null
SOCK=/run/iopulse/iopulse.sock
LOG=build/iopulsed.log
./build/iopulsed -c etc/iopulse.yaml "$@" 2>"$LOG" &
PID=$!
cleanup() {
	kill -TERM "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
}
trap cleanup EXIT INT TERM HUP
i=0
until grep -q "ready:" "$LOG" 2>/dev/null; do
	if ! kill -0 "$PID" 2>/dev/null; then
		echo "iopulsed did not start:" >&2
		cat "$LOG" >&2
		exit 1
	fi
	i=$((i + 1))
	[ "$i" -lt 300 ] || { echo "iopulsed not ready after 30 s; see $LOG" >&2; exit 1; }
	sleep 0.1
done
echo "iopulsed running (pid $PID, log $LOG); starting iopulse top"
build/pyenv/bin/iopulse --target "unix:$SOCK" top || true
