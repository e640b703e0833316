"""Another user cannot hide the sync calls that matter: a flood of an unprivileged user's live
threads leaves room for a watched thread (bstore_kv_sync) and gives way to others' threads
once idle, and exited threads with a name each do not keep a later thread's name out of the
snapshot."""
from __future__ import annotations

import os
import subprocess
import threading
import time

from grpc_testlib import iopulse, wait_for
from iopulse._pb import iopulse_pb2 as pb
from iopulse._pb import iopulse_pb2_grpc as pb_grpc
import grpc

NOBODY = 65534
FLOOD = 1100

# n threads of user nobody, each named iop-flood, each one fdatasync on fd, then alive and
# idle until stdin closes
FLOOD_SCRIPT = r"""
import os, sys, threading
fd, n = int(sys.argv[1]), int(sys.argv[2])
threading.stack_size(256 << 10)
go, done = threading.Event(), threading.Semaphore(0)
def one():
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write("iop-flood")
    os.fdatasync(fd)
    done.release()
    go.wait()
ts = [threading.Thread(target=one) for _ in range(n)]
for t in ts:
    t.start()
for _ in range(n):
    done.acquire()
print("synced", flush=True)
sys.stdin.read()
go.set()
for t in ts:
    t.join()
"""


def _syncer(path: str, comm: str, calls: int) -> None:
    """One thread named comm makes calls fdatasyncs on path, then exits."""
    fd = os.open(path, os.O_RDONLY)

    def run() -> None:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
            f.write(comm)
        for _ in range(calls):
            os.fdatasync(fd)

    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        os.close(fd)


def _calls(ivs, dev: str, comm: str) -> int:
    return sum(t["fdatasync"] for iv in ivs for t in iv["threads"]
               if t["device"] == dev and t["comm"] == comm)


def _drops(ivs, kind: str) -> int:
    return sum(iv["drops"][kind] for iv in ivs)


def _wait_intervals(d, pred, timeout: float, what: str) -> list:
    deadline = time.monotonic() + timeout
    while True:
        ivs = d.all_intervals()
        if pred(ivs):
            return ivs
        assert d.running() and time.monotonic() < deadline, \
            f"{what} not within {timeout} s: {d.describe()}"
        time.sleep(0.1)


def test_a_flood_of_another_users_threads_hides_no_watched_thread(loopdev, daemon):
    """1,100 live threads of user nobody, one fdatasync each, fill the default 1,024-entry
    table's unwatched share: a bstore_kv_sync thread's 50 calls still land under its name
    (the reserved room), and once the flood is idle its entries give way (the uid holding
    the most first) so that another, unwatched thread's calls are counted too. Every call of
    the flood is counted under its thread or in sync_full."""
    lo = loopdev("64M")
    d = daemon("--json", "-i", "500ms", "--devices", lo.name)
    d.next_interval(timeout=20)
    fd = os.open(lo.path, os.O_RDONLY)
    flood = subprocess.Popen(["/usr/bin/python3", "-c", FLOOD_SCRIPT, str(fd), str(FLOOD)],
                             pass_fds=(fd,), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             user=NOBODY, group=NOBODY, text=True)
    try:
        os.close(fd)
        assert flood.stdout.readline().strip() == "synced", "the flood did not sync"
        t0 = time.monotonic()
        _syncer(lo.path, "bstore_kv_sync", 50)
        ivs = _wait_intervals(d, lambda ivs: _calls(ivs, lo.name, "bstore_kv_sync") >= 50,
                              10, "bstore_kv_sync's 50 calls")
        watched_s = time.monotonic() - t0
        # the flood, idle now, gives way: entries of live threads removed after their last read
        ivs = _wait_intervals(d, lambda ivs: _drops(ivs, "sync_evicted") >= 40, 20,
                              "the idle flood's entries removed")
        evict_s = time.monotonic() - t0
        _syncer(lo.path, "iop-late", 10)
        ivs = _wait_intervals(d, lambda ivs: _calls(ivs, lo.name, "iop-late") >= 10, 10,
                              "an unwatched thread's 10 calls after the flood went idle")
    finally:
        flood.stdin.close()
        flood.wait(timeout=60)
    time.sleep(1.5)
    ivs = d.all_intervals()
    flood_calls = _calls(ivs, lo.name, "iop-flood")
    full = _drops(ivs, "sync_full")
    print(f"\n{FLOOD} live threads of uid {NOBODY}, one fdatasync each: counted {flood_calls}, "
          f"sync_full {full}, entries removed {_drops(ivs, 'sync_evicted')}; bstore_kv_sync "
          f"{_calls(ivs, lo.name, 'bstore_kv_sync')} of 50 (reported within {watched_s:.1f} s), "
          f"iop-late {_calls(ivs, lo.name, 'iop-late')} of 10 (idle entries removed from "
          f"{evict_s:.1f} s)")
    assert _calls(ivs, lo.name, "bstore_kv_sync") == 50
    assert _calls(ivs, lo.name, "iop-late") == 10
    assert flood_calls <= FLOOD
    # every call is under its thread or dropped by name (sync_full may hold other threads')
    assert flood_calls + full >= FLOOD, f"counted {flood_calls} + sync_full {full} < {FLOOD}"
    assert flood_calls < FLOOD, "the flood fit the unwatched share?"


def test_exited_threads_with_a_name_each_leave_a_later_name_its_place(loopdev, daemon):
    """1,200 exited threads with a name each (more than the snapshot's 1,024 names), then an
    exited bstore_kv_sync: its calls must fold under its own name, not into the device's
    nameless entry for other threads."""
    lo = loopdev("64M")
    n = 1200
    d = daemon("-i", "100ms", "--devices", lo.name, "--max-threads", "4096")
    target = f"unix:{d.socket}"
    with iopulse.Client(target) as c:
        wait_for(lambda: c.info().last_seq >= 1, 30, "the first interval")
    stub = pb_grpc.TelemetryStub(grpc.insecure_channel(target))

    def settled(threads: int):
        def ok() -> bool:
            snap = stub.GetSnapshot(pb.SnapshotRequest())
            mine = [t for t in snap.threads if t.device == lo.name]
            assert d.running(), d.describe()
            return all(t.threads_folded for t in mine) and \
                sum(t.threads_folded for t in mine) + snap.drops.sync_full >= threads
        return ok

    t0 = time.monotonic()
    for i in range(n):
        _syncer(lo.path, f"iopn-{i:05d}", 1)
    spawn_s = time.monotonic() - t0
    wait_for(settled(n), 60, f"{n} exited threads folded")
    _syncer(lo.path, "bstore_kv_sync", 5)
    wait_for(settled(n + 1), 60, "bstore_kv_sync folded")
    snap = stub.GetSnapshot(pb.SnapshotRequest())
    mine = [t for t in snap.threads if t.device == lo.name]
    named = [t for t in mine if t.comm]
    other = [t for t in mine if not t.comm]
    kv = [t for t in mine if t.comm == "bstore_kv_sync"]
    print(f"\n{n} threads with a name each in {spawn_s:.1f} s, then bstore_kv_sync: "
          f"{len(named)} named entries on {lo.name}, other threads' entry "
          f"{[(t.threads_folded, t.fdatasync) for t in other]}, bstore_kv_sync "
          f"{[(t.threads_folded, t.fdatasync) for t in kv]}, sync_full {snap.drops.sync_full}")
    assert [(t.threads_folded, t.fdatasync) for t in kv] == [(1, 5)]
    assert len(named) <= 1024
    assert sum(t.fdatasync for t in mine) + snap.drops.sync_full >= n + 5
