"""iopulse.Client against an in-process fake daemon on a temp unix socket (no iopulsed)."""
from __future__ import annotations

import gc
import itertools
import os
import shutil
import socket
import subprocess
import sys
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


def test_missing_socket_fails_at_once_with_the_target(sockdir):
    target = f"unix:{sockdir}/none.sock"
    with iopulse.Client(target, connect_deadline=30) as c:
        for call in (c.info, c.snapshot, lambda: c.mark_phase("x"), c.subscribe):
            t0 = time.monotonic()
            with pytest.raises(iopulse.Unavailable) as ei:
                call()
            assert time.monotonic() - t0 < 5, "retried a missing socket"
            assert str(ei.value) == (f"cannot reach iopulsed at {target}: no such socket: "
                                     f"{sockdir}/none.sock: is iopulsed running?")
            assert ei.value.code == "UNAVAILABLE"


def _stale_socket(path: str) -> None:
    """A socket file nobody listens on: what a daemon that died leaves behind."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()


def test_refused_socket_is_retried_until_the_deadline(sockdir):
    path = f"{sockdir}/stale.sock"
    _stale_socket(path)
    seen: list = []
    with iopulse.Client(path, connect_deadline=1.0,
                        on_retry=lambda e, left: seen.append((str(e), left))) as c:
        t0 = time.monotonic()
        with pytest.raises(iopulse.Unavailable) as ei:
            c.info()
        took = time.monotonic() - t0
    assert 0.9 < took < 5, took
    assert "connection refused" in str(ei.value) and path in str(ei.value)
    assert len(seen) >= 3 and all("connection refused" in m for m, _ in seen)
    assert seen[0][1] > seen[-1][1] > 0          # seconds left, counting down


def test_tcp_refused_is_retried_and_unknown_host_is_not():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                    # nothing listens there now
    with iopulse.Client(f"127.0.0.1:{port}", connect_deadline=1.0) as c:
        t0 = time.monotonic()
        with pytest.raises(iopulse.Unavailable, match="Connection refused"):
            c.info()
        assert 0.9 < time.monotonic() - t0 < 5
    with iopulse.Client("no-such-host.invalid:7073", connect_deadline=30) as c:
        t0 = time.monotonic()
        with pytest.raises(iopulse.Unavailable) as ei:
            c.info()
        assert time.monotonic() - t0 < 25, "retried a host name that does not resolve"
        assert "resol" in str(ei.value)
        assert "is iopulsed running" not in str(ei.value)


@pytest.mark.parametrize("call", ["info", "subscribe"])
def test_retries_until_the_daemon_comes_up(sockdir, call):
    target = f"unix:{sockdir}/late.sock"
    _stale_socket(f"{sockdir}/late.sock")       # the daemon is starting: refused, not missing
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


def test_socket_replaced_while_waiting_is_waited_for(sockdir):
    """A starting daemon removes the stale socket before it binds its own: a socket that was
    there (refused) and is then missing for a moment is not a daemon that is not running."""
    path = f"{sockdir}/replaced.sock"
    _stale_socket(path)
    fake = FakeTelemetry()
    servers: list = []
    gone = threading.Timer(0.4, lambda: os.unlink(path))
    up = threading.Timer(1.0, lambda: servers.append(serve(fake, f"unix:{path}")))
    gone.start()
    up.start()
    try:
        t0 = time.monotonic()
        with iopulse.Client(path, connect_deadline=8) as c:
            assert c.info().last_seq == 7
        assert 0.9 < time.monotonic() - t0 < 4
    finally:
        gone.join()
        up.join()
        for s in servers:
            s.stop(None)


def test_a_restarting_daemon_is_waited_for(sockdir):
    """Once reached, a daemon whose socket is gone for a moment is restarting: retried."""
    path = f"{sockdir}/restart.sock"
    fake = FakeTelemetry()
    servers = [serve(fake, f"unix:{path}")]
    try:
        with iopulse.Client(path, connect_deadline=8) as c:
            assert c.info().last_seq == 7
            servers.pop().stop(None).wait()
            if os.path.exists(path):
                os.unlink(path)
            timer = threading.Timer(0.7, lambda: servers.append(serve(fake, f"unix:{path}")))
            timer.start()
            t0 = time.monotonic()
            assert c.info().last_seq == 7
            timer.join()
            assert 0.6 < time.monotonic() - t0 < 4
    finally:
        for s in servers:
            s.stop(None)


DENIED_PROBE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import iopulse
t0 = time.monotonic()
try:
    iopulse.Client(sys.argv[2], connect_deadline=20).info()
except iopulse.Unavailable as e:
    print(e)
print(f"{time.monotonic() - t0:.3f}", file=sys.stderr)
"""


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _python_for_nobody() -> str:
    """This interpreter if user nobody can run it with grpc (a venv in a home may be closed
    to it), else Debian's python3 with python3-grpcio."""
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run(NOBODY + [py, "-c", "import grpc, google.protobuf"],
                          capture_output=True, timeout=60).returncode == 0:
            return py
    raise AssertionError("no python3 with grpc that user nobody can run")


def _as_nobody(src: str, target: str, took: list[float] | None = None) -> str:
    """Run the probe as user nobody (uid 65534) with a copy of the package it can read; took
    gets how long the client's call took (not the interpreter's start-up and imports)."""
    p = subprocess.run(NOBODY + [_python_for_nobody(), "-c", DENIED_PROBE, src, target],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    if took is not None:
        took.append(float(p.stderr.strip().splitlines()[-1]))
    return p.stdout.strip()


def test_permission_denied_fails_at_once_and_names_the_group(sockdir, tmp_path):
    assert os.geteuid() == 0, "run the tests as root: this one runs a client as user nobody"
    src = tempfile_copy_of_package(tmp_path)
    os.chmod(sockdir, 0o755)
    path = f"{sockdir}/locked.sock"
    fake = FakeTelemetry()
    server = serve(fake, f"unix:{path}")
    try:
        os.chown(path, 0, 0)
        os.chmod(path, 0o660)
        took: list[float] = []
        msg = _as_nobody(src, path, took)
        # the call gave up long before its 20 s connect deadline: no retries
        assert took[0] < 10, f"retried a socket it may not use for {took[0]} s"
        assert msg == (f"cannot reach iopulsed at unix:{path}: permission denied: {path} is "
                       "srw-rw---- root:root: add yourself to group root (usermod -aG root "
                       "nobody, then log in again)"), msg
        os.chmod(path, 0o600)
        assert "only root may use it; set server.socket_group" in _as_nobody(src, path)
        os.chmod(path, 0o666)
        os.chmod(sockdir, 0o750)
        msg = _as_nobody(src, path)
        assert f"permission denied: {path} (directory {sockdir}) is drwxr-x--- root:root: " \
            "add yourself to group root" in msg, msg
    finally:
        server.stop(None)


def tempfile_copy_of_package(tmp_path) -> str:
    """A world-readable copy of the iopulse package (the tree may sit where nobody can't go)."""
    dest = tmp_path / "site"
    shutil.copytree(os.path.dirname(iopulse.__file__), dest / "iopulse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for d in (tmp_path, dest, *[p for p in dest.rglob("*") if p.is_dir()]):
        os.chmod(d, 0o755)
    for f in dest.rglob("*"):
        if f.is_file():
            os.chmod(f, 0o644)
    return str(dest)


def test_any_decoding_error_becomes_an_iopulse_error(fake_daemon, monkeypatch):
    target, _ = fake_daemon()

    def broken(_msg, *a):
        raise TypeError("Descriptors cannot be created directly")

    with iopulse.Client(target) as c:
        monkeypatch.setattr(iopulse.Info, "from_pb", broken)
        with pytest.raises(iopulse.IopulseError) as ei:
            c.info()
        assert str(ei.value) == (f"GetInfo at {target}: malformed reply: TypeError: "
                                 "Descriptors cannot be created directly")
        monkeypatch.setattr(iopulse.Update, "from_pb", broken)
        with pytest.raises(iopulse.IopulseError, match="Subscribe at .* malformed reply: "
                           "TypeError"):
            next(iter(c.subscribe()))
        with pytest.raises(iopulse.IopulseError, match="GetSnapshot at .*TypeError"):
            c.snapshot()


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
