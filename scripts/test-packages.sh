#!/bin/sh
# Builds the .debs and tests them installed (run as root on Debian 12, no systemd as PID 1
# needed): lintian; dpkg -i with apt for the dependencies; the installed unit verified; the
# installed daemon started as its unit would start it (the unit's user, group, ambient
# capabilities and bounding set, readiness over $NOTIFY_SOCKET); the installed `iopulse`, run
# by a member of the socket's group, sees a loop device's IO over the installed socket path,
# equal to /proc/diskstats; a user outside the group is refused; purge removes the files.
# Every process started is stopped by PID and every loop device detached, also on failure.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT="$ROOT/build/packages"
WORK=$(mktemp -d /var/tmp/iopulse-pkgtest.XXXXXX)
DAEMON_PID=""
NOTIFY_PID=""
LOOP=""
CLIENT_USER=iopclient

fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

cleanup() {
	set +e
	[ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && sleep 1 && kill -9 "$DAEMON_PID" 2>/dev/null
	[ -n "$NOTIFY_PID" ] && kill "$NOTIFY_PID" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	id "$CLIENT_USER" >/dev/null 2>&1 && userdel "$CLIENT_USER"
	dpkg -s iopulsed >/dev/null 2>&1 && apt-get purge -y -qq iopulsed >/dev/null
	dpkg -s python3-iopulse >/dev/null 2>&1 && apt-get purge -y -qq python3-iopulse >/dev/null
	rm -rf "$WORK" /run/iopulse
}
trap cleanup EXIT INT TERM

step "build"
rm -f "$OUT"/*.deb
scripts/build-deb.sh
DEB_D=$(ls "$OUT"/iopulsed_*_amd64.deb)
DEB_P=$(ls "$OUT"/python3-iopulse_*_all.deb)

step "lintian"
command -v lintian >/dev/null || apt-get install -y -qq --no-install-recommends lintian >/dev/null
lintian --tag-display-limit 0 "$DEB_D" "$DEB_P" 2>&1 | grep -v "root privileges" | tee "$WORK/lintian.txt"
grep -q "^E:" "$WORK/lintian.txt" && fail "lintian reports errors"

step "install"
apt-get install -y -qq "$DEB_D" "$DEB_P" >/dev/null
id iopulse >/dev/null 2>&1 || fail "the package did not create the user iopulse"
[ "$(/usr/sbin/iopulsed --version)" = "iopulsed $(cat VERSION)" ] || fail "iopulsed --version"
[ "$(/usr/bin/iopulse --version)" = "iopulse $(cat VERSION)" ] || fail "iopulse --version"
dpkg-query -W -f='${Conffiles}\n' iopulsed | grep -q /etc/iopulse/iopulse.yaml ||
	fail "/etc/iopulse/iopulse.yaml is not a conffile"
UNIT=/lib/systemd/system/iopulsed.service
verify=$(systemd-analyze verify "$UNIT" 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"
systemd-analyze security --offline=true "$UNIT" 2>/dev/null | tail -1

step "start the installed daemon as its unit does"
key() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
USER_=$(key User)
GROUP_=$(key Group)
CAPS=$(key AmbientCapabilities | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
BOUND=$(key CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
EXEC=$(key ExecStart)
echo "User=$USER_ Group=$GROUP_ ambient=$CAPS bounding=$BOUND: $EXEC"
# what systemd does before ExecStart: tracefs (sys-kernel-tracing.mount), RuntimeDirectory
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
rm -rf /run/iopulse
install -d -o "$USER_" -g "$GROUP_" -m "$(key RuntimeDirectoryMode)" /run/iopulse
mkdir -m 0755 "$WORK/notify"
/usr/bin/python3 - "$WORK/notify/sock" "$WORK/notify/got" <<'EOF' &
import socket, sys, os, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.settimeout(120)
open(sys.argv[2] + ".listening", "w").close()
with open(sys.argv[2], "a") as f:
    while True:
        msg = s.recv(4096).decode()
        f.write(msg + "\n"); f.flush()
        if "READY=1" in msg:
            break
EOF
NOTIFY_PID=$!
# the daemon starts once the socket is there (not after a fixed time: python starts slowly on
# a loaded machine, and a READY=1 sent before would be lost)
i=0
until [ -e "$WORK/notify/got.listening" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "the \$NOTIFY_SOCKET listener did not start in 60 s"
	kill -0 "$NOTIFY_PID" 2>/dev/null || fail "the \$NOTIFY_SOCKET listener exited"
	sleep 0.1
done
# shellcheck disable=SC2086 # ExecStart is a command line
NOTIFY_SOCKET="$WORK/notify/sock" setpriv --reuid="$USER_" --regid="$GROUP_" --init-groups \
	--inh-caps="-all,$CAPS" --ambient-caps="$CAPS" --bounding-set="-all,$BOUND" \
	--no-new-privs sh -c 'umask "$0" && exec "$@"' "$(key UMask)" $EXEC \
	> "$WORK/daemon.out" 2> "$WORK/daemon.err" &
DAEMON_PID=$!
i=0
until grep -q "READY=1" "$WORK/notify/got" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 900 ] || { cat "$WORK/daemon.err"; fail "no READY=1 on \$NOTIFY_SOCKET in 90 s"; }
	kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$WORK/daemon.err"; fail "iopulsed exited"; }
	sleep 0.1
done
NOTIFY_PID=""
cat "$WORK/daemon.err"
grep -q "warning" "$WORK/daemon.err" && fail "warnings from the daemon under the unit's privileges"
status=$(cat /proc/$DAEMON_PID/status)
echo "$status" | grep -q "^Uid:.*$(id -u "$USER_")" || fail "daemon not running as $USER_"
echo "$status" | grep -E "^Cap(Eff|Bnd|Amb)"
[ "$(stat -c '%U:%G %a' /run/iopulse/iopulse.sock)" = "$USER_:$GROUP_ 660" ] ||
	fail "socket $(stat -c '%U:%G %a' /run/iopulse/iopulse.sock)"

step "IO on a loop device, read by a member of the group"
useradd --no-create-home --shell /usr/sbin/nologin -G "$GROUP_" "$CLIENT_USER"
truncate -s 64M "$WORK/disk.img"
LOOP=$(losetup --direct-io=on -f --show "$WORK/disk.img")
NAME=$(basename "$LOOP")
# reads of the device: completed (/proc/diskstats), in flight, and iopulse's since the daemon
# started (a snapshot as the member of the group; fails until the daemon lists the device)
ds_reads() { awk -v d="$NAME" '$3 == d { print $4 }' /proc/diskstats; }
ds_inflight() { awk -v d="$NAME" '$3 == d { print $12 }' /proc/diskstats; }
iop_reads() {
	setpriv --reuid="$CLIENT_USER" --regid="$CLIENT_USER" --init-groups \
		/usr/bin/iopulse snapshot --json --device "$NAME" > "$WORK/snap.json" \
		2> "$WORK/snap.err" || return 1
	/usr/bin/python3 -c 'import json,sys; u=json.load(open(sys.argv[1])); print(sum(d["ops"]["read"]["ios"] for d in u["devices"] if d["name"] == sys.argv[2]))' "$WORK/snap.json" "$NAME"
}
# The baseline, before our reads: udev probes a new loop device and the daemon picks it up at
# its next interval, both later on a loaded machine, so no fixed sleep: wait until the device
# is idle and both counts stood still over two of the daemon's 1 s intervals (a completion the
# kernel never reported is counted one interval after the device was idle).
command -v udevadm >/dev/null && udevadm settle --timeout=60 || true
prev=""
i=0
while :; do
	i=$((i + 1))
	[ $i -le 30 ] || { cat "$WORK/snap.err" 2>/dev/null
		fail "$NAME: no steady baseline in 90 s (iopulse, diskstats: $prev)"; }
	cur=""
	if [ "$(ds_inflight)" = 0 ] && r=$(iop_reads); then
		cur="$r $(ds_reads)"
		[ "$cur" = "$prev" ] && [ "$(ds_inflight)" = 0 ] && break
	fi
	prev=$cur
	sleep 3
done
iop_before=${cur% *}
before=${cur#* }
dd if="$LOOP" of=/dev/null bs=4k count=2000 iflag=direct status=none
# the daemon counts a completion in the interval it sees it (or finds it): poll until it has
# caught up with /proc/diskstats, with a generous deadline, then compare
i=0
while :; do
	i=$((i + 1))
	after=$(ds_reads)
	if [ "$(ds_inflight)" = 0 ] && r=$(iop_reads); then
		got=$((r - iop_before))
		[ "$got" -eq $((after - before)) ] && break
	else
		got="?"
	fi
	[ $i -lt 60 ] || break
	sleep 1
done
echo "$NAME: reads $got from iopulse as $CLIENT_USER; /proc/diskstats $before -> $after"
[ "$got" != "?" ] || { cat "$WORK/snap.err"; fail "iopulse snapshot as a member of $GROUP_"; }
[ "$got" -eq $((after - before)) ] && [ "$got" -ge 2000 ] ||
	fail "iopulse reads $got != diskstats $((after - before))"

step "a user outside the group is refused"
if setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/iopulse info \
	> "$WORK/nobody.out" 2>&1; then
	fail "user nobody could read the socket"
fi
cat "$WORK/nobody.out"
grep -qi "permission denied" "$WORK/nobody.out" || fail "no 'permission denied' for nobody"

step "stop"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || fail "iopulsed exit status $? on SIGTERM"
DAEMON_PID=""
losetup -d "$LOOP"
LOOP=""

step "purge"
apt-get purge -y -qq iopulsed python3-iopulse >/dev/null
for f in /usr/sbin/iopulsed /etc/iopulse /usr/bin/iopulse /usr/lib/python3/dist-packages/iopulse \
	/lib/systemd/system/iopulsed.service /usr/lib/sysusers.d/iopulsed.conf; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
echo "test-packages: ok (the system user iopulse stays after purge, as Debian policy has it)"
