"""What a client can make iopulsed hold is bounded: mark size, labels, open phases, request
size and subscribers are refused over their limits with RESOURCE_EXHAUSTED naming the config
key, GetInfo reports the limits, and the snapshot counts marks instead of keeping them."""
from __future__ import annotations

import os
import signal
import threading
import time

import grpc
import pytest

from grpc_testlib import iopulse, wait_for
from iopulse._pb import iopulse_pb2 as pb
from iopulse._pb import iopulse_pb2_grpc as pb_grpc

LIMITS = """interval: 1s
server:
  mark_rate: 1000
  ring_mib: 64
  mark_bytes: 4096
  mark_labels: 8
  open_phases: 50
  subscribers: 3
  request_bytes: 65536
"""


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def marks_size(u) -> int:
    """Bytes of a snapshot without its devices and threads: what marks can grow. The rest is
    what the machine does meanwhile (a busy disk fills more histogram buckets, a syncing
    thread has an entry while it lives), not something a client controls."""
    c = pb.Update()
    c.CopyFrom(u)
    c.ClearField("devices")
    c.ClearField("threads")
    return c.ByteSize()


def refused(call, *args) -> str:
    with pytest.raises(grpc.RpcError) as ei:
        r = call(*args)
        if hasattr(r, "__next__"):
            next(r)
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, ei.value
    return ei.value.details()


def test_client_driven_memory_is_bounded(daemon, tmp_path):
    cfg = tmp_path / "limits.yaml"
    cfg.write_text(LIMITS)
    d = daemon(config=str(cfg))
    target = f"unix:{d.socket}"
    with iopulse.Client(target) as c:
        wait_for(lambda: c.info().last_seq >= 1, 30, "the first interval")
        lm = c.info().limits
    assert lm is not None
    assert (lm.mark_rate, lm.mark_bytes, lm.mark_labels, lm.open_phases, lm.subscribers,
            lm.request_bytes, lm.ring_mib) == (1000, 4096, 8, 50, 3, 65536, 64)

    ch = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 8 << 20)])
    stub = pb_grpc.TelemetryStub(ch)
    rss0 = rss_bytes(d.pid)
    # the reported attack: 3.8 MB marks, 60 of them (RSS went 34 MB -> 553 MB)
    huge = pb.MarkPhaseRequest(name="x", labels={"blob": "a" * (3800 << 10)})
    for _ in range(60):
        msg = refused(stub.MarkPhase, huge)
    print(f"\n3.8 MB mark: {msg}")
    assert "server.request_bytes" in msg
    rss1 = rss_bytes(d.pid)
    print(f"RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MiB after 60 refused 3.8 MB marks")
    with open(f"/proc/{d.pid}/maps") as f:
        asan = "libasan" in f.read()
    # AddressSanitizer holds freed memory in its quarantine (256 MB): RSS says nothing there
    assert asan or rss1 - rss0 < 48 << 20
    msg = refused(stub.MarkPhase, pb.MarkPhaseRequest(name="x", labels={"blob": "a" * 1000,
                                                                         "b2": "b" * 1000,
                                                                         "b3": "c" * 1000,
                                                                         "b4": "d" * 1000,
                                                                         "b5": "e" * 1000}))
    assert "at most 4096 (server.mark_bytes)" in msg, msg
    msg = refused(stub.MarkPhase, pb.MarkPhaseRequest(
        name="x", labels={f"k{i}": "v" for i in range(9)}))
    assert "9 labels: at most 8 per mark (server.mark_labels)" in msg, msg
    msg = refused(stub.GetSnapshot, pb.SnapshotRequest(devices=["d" * 100] * 1000))
    assert "server.request_bytes" in msg, msg
    # a session over 64 characters left the hub locked: the daemon hung (found by fuzzing)
    with pytest.raises(grpc.RpcError) as ei:
        next(stub.Subscribe(pb.SubscribeRequest(interval_multiple=1, session="s" * 65)))
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, ei.value
    seq = stub.GetInfo(pb.InfoRequest()).last_seq
    wait_for(lambda: stub.GetInfo(pb.InfoRequest(), timeout=10).last_seq >= seq + 2, 30,
             "intervals after the long session")

    # 50 open phases at most; 10 end, then 400 more marks (begin/end pairs) leave the snapshot
    # as small as it was
    for i in range(50):
        stub.MarkPhase(pb.MarkPhaseRequest(name=f"open{i}"))
    msg = refused(stub.MarkPhase, pb.MarkPhaseRequest(name="one-too-many"))
    assert "50 phases are open already, the most allowed (server.open_phases)" in msg, msg
    for i in range(10):
        stub.MarkPhase(pb.MarkPhaseRequest(name=f"open{i}", end=True))
    first = stub.GetSnapshot(pb.SnapshotRequest())
    snap0 = marks_size(first)
    for i in range(200):
        stub.MarkPhase(pb.MarkPhaseRequest(name="step", labels={"i": str(i)}))
        stub.MarkPhase(pb.MarkPhaseRequest(name="step", end=True))
    snap = stub.GetSnapshot(pb.SnapshotRequest())
    print(f"snapshot without devices and threads: {snap0} bytes after 60 marks, "
          f"{marks_size(snap)} after 460 (phase_marks {snap.phase_marks}, listed "
          f"{len(snap.phases)}); whole: {first.ByteSize()} and {snap.ByteSize()} bytes")
    assert snap.phase_marks == 460
    assert len(snap.phases) == 40 and all(not m.end for m in snap.phases)
    assert marks_size(snap) < snap0 + 4096

    # 3 streams at most
    subs = [stub.Subscribe(pb.SubscribeRequest(interval_multiple=1)) for _ in range(3)]
    for s in subs:
        next(s)
    msg = refused(stub.Subscribe, pb.SubscribeRequest(interval_multiple=1))
    assert "3 streams are open, the most allowed (server.subscribers)" in msg, msg
    subs[0].cancel()
    wait_for(lambda: stub.GetInfo(pb.InfoRequest()).subscribers == 2, 30, "a stream to end")
    s4 = stub.Subscribe(pb.SubscribeRequest(interval_multiple=1))
    assert next(s4).seq >= 1
    for s in subs[1:] + [s4]:
        s.cancel()
    ch.close()
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def _short_lived_syncers(path: str, n: int, comm: str) -> None:
    """n threads one after another, each named comm, each one fdatasync on path, then gone."""
    fd = os.open(path, os.O_WRONLY)

    def one() -> None:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
            f.write(comm)
        os.fdatasync(fd)

    try:
        for _ in range(n):
            t = threading.Thread(target=one)
            t.start()
            t.join()
    finally:
        os.close(fd)


def test_exited_threads_fold_and_the_snapshot_stays_small(loopdev, daemon):
    """Short-lived threads that each sync once (the issue: an entry per thread ever seen made
    the snapshot 14 MB after 15k threads and unusable past 75k). Exited threads fold into one
    entry per name, process and device: every call is kept, the entries are not. A client that
    cannot take the snapshot (a 1 KiB receive limit) costs the daemon nothing."""
    lo = loopdev("64M")
    n = 4000
    d = daemon("-i", "100ms", "--devices", lo.name)
    target = f"unix:{d.socket}"
    with iopulse.Client(target) as c:
        wait_for(lambda: c.info().last_seq >= 1, 30, "the first interval")
    ch = grpc.insecure_channel(target)
    stub = pb_grpc.TelemetryStub(ch)
    t0 = time.monotonic()
    _short_lived_syncers(lo.path, n, "iop-churn")
    spawn_s = time.monotonic() - t0

    def mine(snap) -> list:
        return [t for t in snap.threads if t.comm == "iop-churn"]

    def settled(snap) -> bool:
        ts = mine(snap)
        return sum(t.fdatasync for t in ts) + snap.drops.sync_full >= n and \
            all(t.threads_folded for t in ts)

    # the exited threads' last calls come with the next interval; the fold every 16th
    deadline = time.monotonic() + 60
    snap = stub.GetSnapshot(pb.SnapshotRequest())
    while not settled(snap):
        assert d.running() and time.monotonic() < deadline, \
            f"not folded within 60 s: {len(mine(snap))} entries, " \
            f"{sum(t.fdatasync for t in mine(snap))} calls: {d.describe()}"
        time.sleep(0.2)
        snap = stub.GetSnapshot(pb.SnapshotRequest())
    ts = mine(snap)
    calls = sum(t.fdatasync for t in ts)
    print(f"\n{n} threads, one fdatasync each, in {spawn_s:.1f} s: snapshot entries "
          f"{len(ts)} (threads_folded {[t.threads_folded for t in ts]}), fdatasync {calls}, "
          f"sync_full {snap.drops.sync_full}, {snap.ByteSize()} bytes in all, "
          f"{len(snap.threads)} thread entries in all")
    assert len(ts) == 1, [(t.pid, t.tid, t.threads_folded) for t in ts]
    t = ts[0]
    assert (t.pid, t.tid, t.device) == (0, 0, lo.name)
    with open("/proc/self/comm") as f:
        assert t.process == f.read().strip()   # the process, named by its main thread
    # every call is there or counted as dropped (a full kernel table), none twice
    assert calls + snap.drops.sync_full == n
    assert t.threads_folded == calls   # one thread per call, each folded once
    assert sum(t.fdatasync_latency.histogram_ns.count) == calls

    # a client whose receive limit the snapshot exceeds: the call fails on its side only
    small = grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", 1024)])
    tiny = pb_grpc.TelemetryStub(small)
    assert snap.ByteSize() > 1024
    rss0 = rss_bytes(d.pid)
    for _ in range(50):
        with pytest.raises(grpc.RpcError) as ei:
            tiny.GetSnapshot(pb.SnapshotRequest())
        assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, ei.value
    rss1 = rss_bytes(d.pid)
    print(f"50 snapshots refused by the client: daemon RSS {rss0 / 2**20:.1f} -> "
          f"{rss1 / 2**20:.1f} MiB")
    with open(f"/proc/{d.pid}/maps") as f:
        asan = "libasan" in f.read()
    assert asan or rss1 - rss0 < 4 << 20
    small.close()
    ch.close()
    assert d.stop(signal.SIGTERM) == 0, d.describe()
