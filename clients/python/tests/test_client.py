"""iopulse.Client against an in-process fake daemon on a temp unix socket (no iopulsed)."""
from __future__ import annotations

import gc
import itertools
import threading
import time

import pytest

import iopulse
from fakes import FakeTelemetry, serve


def test_info_snapshot_and_filters(fake_daemon):
    target, fake = fake_daemon()
    with iopulse.Client(target) as c:
        i = c.info()
        assert i.version == "0.1.0-test" and i.histogram.precision == 5
        assert [d.name for d in i.devices] == ["sdb", "dm-0"]
        s = c.snapshot(devices=["sdb", "sdc"], threads=["bstore*"])
        assert list(s.devices) == ["sdb", "sdc"] and s.merged == 7
    req = fake.requests[-1]
    assert list(req.devices) == ["sdb", "sdc"] and list(req.threads) == ["bstore*"]


def test_errors_name_the_target_and_the_field(fake_daemon):
    target, _ = fake_daemon()
    with iopulse.Client(target) as c:
        with pytest.raises(iopulse.InvalidArgument) as ei:
            c.snapshot(devices=["nosuchdev"])
        assert target in str(ei.value) and "no device named 'nosuchdev'" in str(ei.value)
        assert ei.value.code == "INVALID_ARGUMENT" and ei.value.target == target
        with pytest.raises(iopulse.InvalidArgument, match="name: must not be empty"):
            c.mark_phase("")
        with pytest.raises(iopulse.InvalidArgument, match="interval_multiple"):
            list(itertools.islice(c.subscribe(interval_multiple=0), 1))
        with pytest.raises(iopulse.InvalidArgument, match="bad request"):
            c.subscribe(replay_seconds=-1)                      # refused before sending
        assert c.info().last_seq == 7                           # still fine afterwards


def test_deadline_exceeded(fake_daemon):
    target, _ = fake_daemon(info_delay=1.0)
    with iopulse.Client(target, timeout=0.2) as c:
        with pytest.raises(iopulse.DeadlineExceeded, match=target):
            c.info()


def test_phase_is_a_context_manager(fake_daemon):
    target, fake = fake_daemon()
    with iopulse.Client(target) as c:
        with c.mark_phase("fill", run=3) as ph:
            assert len(fake.marks) == 1                         # begin sent at the call
            c.mark_phase("warmup")                              # plain call: one mark
        assert ph.mark.id == 1 and ph.end_mark is not None and ph.end_mark.end
        with c.mark_phase("done", end=True):                    # an end mark: nothing more
            pass
        with pytest.raises(RuntimeError):
            with c.mark_phase("crash"):
                raise RuntimeError("benchmark failed")
    got = [(m.name, m.end, dict(m.labels)) for m in fake.marks]
    assert got == [("fill", False, {"run": "3"}), ("warmup", False, {}),
                   ("fill", True, {"run": "3"}), ("done", True, {}),
                   ("crash", False, {}), ("crash", True, {})]


def test_subscribe_passes_the_request_and_yields_updates(fake_daemon):
    target, fake = fake_daemon()
    with iopulse.Client(target) as c:
        with c.subscribe(interval_multiple=2, devices=["sdc"], threads=["kv*"],
                         replay_seconds=30) as sub:
            got = list(itertools.islice(sub, 3))
        assert sub.cancelled
    assert [(u.first_seq, u.seq, u.merged) for u in got] == [(1, 2, 2), (3, 4, 2), (5, 6, 2)]
    assert list(got[0].devices) == ["sdc"]
    req = fake.requests[-1]
    assert (req.interval_multiple, list(req.devices), list(req.threads), req.replay_seconds) \
        == (2, ["sdc"], ["kv*"], 30)
    assert fake.streams_ended.acquire(timeout=5), "the server did not see the cancel"


def test_cancel_from_another_thread_ends_iteration_quietly(fake_daemon):
    target, fake = fake_daemon()
    with iopulse.Client(target) as c:
        sub = c.subscribe()
        threading.Timer(0.3, sub.cancel).start()
        n = sum(1 for _ in sub)                                 # ends, no exception
        assert n >= 1
    assert fake.streams_ended.acquire(timeout=5)


def test_close_and_garbage_collection_cancel_streams(fake_daemon):
    target, fake = fake_daemon()
    c = iopulse.Client(target)
    sub = c.subscribe()
    next(sub)
    c.close()
    assert list(sub) == []
    assert fake.streams_ended.acquire(timeout=5), "close() did not cancel the stream"
    with pytest.raises(iopulse.IopulseError, match="closed"):
        c.info()

    c2 = iopulse.Client(target)
    sub2 = c2.subscribe()
    next(sub2)
    del sub2
    gc.collect()
    assert fake.streams_ended.acquire(timeout=5), "a dropped Subscription kept its stream"
    c2.close()


def test_unreachable_daemon_fails_fast_with_the_target(sockdir):
    target = f"unix:{sockdir}/none.sock"
    with iopulse.Client(target, connect_deadline=0.3) as c:
        for call in (c.info, c.snapshot, lambda: c.mark_phase("x"), c.subscribe):
            t0 = time.monotonic()
            with pytest.raises(iopulse.Unavailable) as ei:
                call()
            assert time.monotonic() - t0 < 3
            msg = str(ei.value)
            assert msg.startswith(f"cannot reach iopulsed at {target}: ")
            assert "No such file or directory" in msg and msg.endswith("(is iopulsed running?)")


@pytest.mark.parametrize("call", ["info", "subscribe"])
def test_retries_until_the_daemon_comes_up(sockdir, call):
    target = f"unix:{sockdir}/late.sock"
    fake = FakeTelemetry()
    timer = threading.Timer(0.7, lambda: servers.append(serve(fake, target)))
    servers: list = []
    timer.start()
    try:
        t0 = time.monotonic()
        with iopulse.Client(target, connect_deadline=8) as c:
            if call == "info":
                assert c.info().last_seq == 7
            else:
                with c.subscribe() as sub:
                    assert next(sub).seq == 1
        elapsed = time.monotonic() - t0
        assert 0.6 < elapsed < 4, elapsed      # waited for it, and not a 1 s+ gRPC backoff
    finally:
        timer.join()
        for s in servers:
            s.stop(None)


def test_backoff_schedule():
    r = iopulse.RetryPolicy(jitter=0.0)
    assert list(itertools.islice(r.delays(), 7)) == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    j = iopulse.RetryPolicy()
    for d, base in zip(j.delays(), [0.1, 0.2, 0.4, 0.8, 1.6, 2.0]):
        assert base * 0.9 <= d <= base * 1.1


def test_subscribe_timeout_ends_the_stream_with_deadline_exceeded(fake_daemon):
    target, fake = fake_daemon()
    with iopulse.Client(target) as c:
        t0 = time.monotonic()
        got = 0
        with pytest.raises(iopulse.DeadlineExceeded, match=target):
            for _ in c.subscribe(timeout=0.5):
                got += 1
        assert got >= 1 and 0.4 < time.monotonic() - t0 < 3
    assert fake.streams_ended.acquire(timeout=5)
