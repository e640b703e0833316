"""What a client can make iopulsed hold is bounded: mark size, labels, open phases, request
size and subscribers are refused over their limits with RESOURCE_EXHAUSTED naming the config
key, GetInfo reports the limits, and the snapshot counts marks instead of keeping them."""
from __future__ import annotations

import signal

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
    what the machine does meanwhile (a busy disk fills more histogram buckets, every thread
    that syncs is kept since start: 0.2-3 KiB each), not something a client controls."""
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
