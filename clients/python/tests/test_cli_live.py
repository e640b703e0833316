"""The iopulse command against an in-process fake daemon: output, exit codes, top on a tty."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

import screen
from fakes import T0_REAL
from iopulse.cli import main
from test_cli import SRC


def test_watch_prints_one_json_line_per_update(fake_daemon, capsys):
    target, fake = fake_daemon()
    assert main(["--target", target, "watch", "--json", "--count", "3", "--device", "sdb",
                 "--thread", "bstore*", "--interval-multiple", "2", "--replay", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    ups = [json.loads(x) for x in lines]
    assert [u["seq"] for u in ups] == [2, 4, 6]
    assert ups[0]["devices"][0]["name"] == "sdb"
    assert ups[0]["devices"][0]["ops"]["write"]["queue_wait_ns"]["buckets"]
    req = fake.requests[-1]
    assert (req.interval_multiple, list(req.devices), list(req.threads), req.replay_seconds) \
        == (2, ["sdb"], ["bstore*"], 10)


def test_top_once_prints_devices_and_threads(fake_daemon, capsys):
    target, _ = fake_daemon()
    assert main(["--target", target, "top", "--once"]) == 0
    out = capsys.readouterr().out
    heads = screen.all_headers(out)
    for text in ("IOPS", "MB/s", "MiB/s", "qwait p99 (µs)", "svc p50 (µs)", "seq %",
                 "flushes/s", "preflush p99 (µs)", "total p99 (µs)", "calls/s", "p99 (µs)"):
        assert text in heads, (text, heads, out)
    for text in ("sdb (osd.3 block)", "bstore_kv_sync", "4242/4250", "busiest sync threads"):
        assert text in out, (text, out)
    (dev,) = [t for t in screen.tables(out) if "device" in t.headers and "op" in t.headers]
    # IOPS, MB/s, MiB/s, qwait p50 and p99 in µs (bucket midpoints), ..., seq %
    cells = dev.rows[0].split()
    assert cells[:8] == ["sdb", "(osd.3", "block)", "write", "100", "0.41", "0.39", "20.2"] \
        and "75.0" in cells, dev.rows


def test_snapshot_info_and_mark(fake_daemon, capsys):
    target, fake = fake_daemon()
    assert main(["--target", target, "snapshot", "--json", "--device", "sdb"]) == 0
    snap = json.loads(capsys.readouterr().out)
    assert snap["seq"] == 7 and snap["first_seq"] == 1
    assert main(["--target", target, "snapshot"]) == 0
    assert "sdb" in capsys.readouterr().out
    assert main(["--target", target, "info"]) == 0
    out = capsys.readouterr().out
    assert "0.1.0-test" in out and "dm vg-lv" in out and "osd.3 block" in out
    assert "open phases: none" in out, out
    assert main(["--target", target, "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel"] == "6.1.0-test"
    assert main(["--target", target, "mark", "fill", "--label", "run=3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("begin fill run=3: 2025-11-22T")
    assert f"realtime_ns {T0_REAL + 1000}" in out
    # the daemon's open phases, as GetInfo gives them (README: iopulse info)
    assert main(["--target", target, "info"]) == 0
    out = capsys.readouterr().out
    assert "open phases (1):\n  #1 fill since " in out and ", session s1, run=3\n" in out, out
    assert main(["--target", target, "mark", "fill", "--end"]) == 0
    assert capsys.readouterr().out.startswith("end fill: ")
    assert [(m.name, m.end, dict(m.labels)) for m in fake.marks] == \
        [("fill", False, {"run": "3"}), ("fill", True, {})]


def test_rejected_request_exits_2_and_names_the_field(fake_daemon, capsys):
    target, _ = fake_daemon()
    assert main(["--target", target, "snapshot", "--device", "nosuchdev"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"iopulse: GetSnapshot at {target} failed: INVALID_ARGUMENT: "
                   "devices: no device named 'nosuchdev'")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(SRC), TERM="xterm-256color", COLUMNS="160",
                LINES="40")


def _read_until(fd: int, want: bytes, count: int, timeout: float) -> bytes:
    buf, deadline = b"", time.monotonic() + timeout
    while buf.count(want) < count and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


def test_top_redraws_in_place_on_a_tty_and_ctrl_c_exits_130(fake_daemon):
    target, fake = fake_daemon(period=0.1)
    master, slave = os.openpty()
    p = subprocess.Popen([sys.executable, "-m", "iopulse", "--target", target, "top"],
                         stdin=slave, stdout=slave, stderr=slave, env=_env(), close_fds=True)
    os.close(slave)
    try:
        screen = _read_until(master, b"IOPS", 4, timeout=20)
        p.send_signal(signal.SIGINT)
        rc = p.wait(10)
        screen += _read_until(master, b"\0", 1, timeout=0.5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
    text = screen.decode(errors="replace")
    assert text.count("IOPS") >= 4, text[-2000:]
    assert "sdb (osd.3 block)" in text
    assert "\x1b[" in text and "\x1b[2K" in text, "no cursor control: not redrawn in place"
    assert "Traceback" not in text
    assert rc == 130
    assert fake.streams_ended.acquire(timeout=5)


def test_watch_needs_no_json_flag_and_takes_options_after_the_command(fake_daemon, capsys):
    target, _ = fake_daemon()
    assert main(["watch", "--count", "2", "--target", target, "--timeout", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [1, 2]


def test_top_on_a_tty_says_it_is_connecting_while_it_waits(sockdir):
    """A daemon that is (re)starting: its socket refuses connections for a while."""
    import socket as so

    from fakes import FakeTelemetry, serve
    path = f"{sockdir}/late.sock"
    s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    s.bind(path)
    s.close()
    servers: list = []
    master, slave = os.openpty()
    p = subprocess.Popen([sys.executable, "-m", "iopulse", "top", "--target", path,
                          "--connect-timeout", "30"],
                         stdin=slave, stdout=slave, stderr=slave, env=_env(), close_fds=True)
    os.close(slave)
    try:
        early = _read_until(master, b"retrying", 1, timeout=20)
        servers.append(serve(FakeTelemetry(period=0.1), f"unix:{path}"))
        later = _read_until(master, b"IOPS", 2, timeout=20)
        p.send_signal(signal.SIGINT)
        rc = p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
        for srv in servers:
            srv.stop(None)
    text = early.decode(errors="replace")
    assert f"connecting to unix:{path} ..." in text, text
    assert "connection refused" in text and "retrying for" in text, text
    assert later.count(b"IOPS") >= 2 and rc == 130


def test_top_without_a_tty_prints_one_table_per_update(fake_daemon):
    target, _ = fake_daemon(period=0.1)
    p = subprocess.Popen([sys.executable, "-m", "iopulse", "--target", target, "top"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        out = _read_until(p.stdout.fileno(), b"IOPS", 3, timeout=20)
        p.send_signal(signal.SIGINT)
        rc = p.wait(10)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        p.stdout.close()
        p.stderr.close()
    assert out.count(b"IOPS") >= 3 and b"seq 1 " in out and b"seq 2 " in out
    assert b"\x1b[2K" not in out
    assert rc == 130 and b"Traceback" not in err, err


def test_sigint_stops_top_started_with_sigint_ignored(fake_daemon):
    """A non-interactive shell starts background jobs with SIGINT ignored (`iopulse top &`,
    a test runner launched with `&`); `kill -INT` still stops iopulse, with 130."""
    target, _ = fake_daemon(period=0.1)
    # The shell ignores SIGINT and execs iopulse, which inherits that. Not preexec_fn: that
    # runs Python in the forked child of this process, whose gRPC server threads hold locks
    # the child can then never take (grpcio 1.85 aborted there, 1 start in about 30).
    p = subprocess.Popen(["sh", "-c", 'trap "" INT; exec "$0" -m iopulse --target "$1" top',
                          sys.executable, target],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        _read_until(p.stdout.fileno(), b"IOPS", 1, timeout=20)
        p.send_signal(signal.SIGINT)
        rc = p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        p.stdout.close()
        p.stderr.close()
    assert rc == 130


def _on_pty(argv: list[str], cols: int, until: bytes, count: int,
            interrupt: bool = False) -> tuple[str, int]:
    return screen.on_pty(argv, cols, _env(), until, count, interrupt=interrupt, timeout=30)


TOP_HEADERS = ["device", "op", "IOPS", "MB/s", "MiB/s", "qwait p50 (µs)", "qwait p99 (µs)",
               "svc p50 (µs)", "svc p99 (µs)", "total p99 (µs)", "seq %", "flushes/s",
               "preflush p99 (µs)", "thread", "pid/tid", "process", "OSD", "calls/s",
               "p99 (µs)"]
DEVICES = ("sdb", "loop0", "loop12345", "nvme0n1", "dm-0")


@pytest.mark.parametrize("cols", [80, 120, 180])
def test_top_on_a_terminal_shows_every_column_whole(fake_daemon, cols):
    target, _ = fake_daemon(devices=DEVICES, reads=30)
    text, rc = _on_pty([sys.executable, "-m", "iopulse", "--target", target, "top", "--once",
                        "--merge"], cols, b"busiest sync threads", 1)
    assert rc == 0 and "Traceback" not in text, text
    assert "…" not in text and screen.widest(text) <= cols, text
    heads = screen.all_headers(text)
    assert [h for h in TOP_HEADERS if h not in heads] == [], (heads, text)
    for t in screen.tables(text):
        if "IOPS" in t.headers:
            i = t.headers.index("IOPS")
            firsts = [r.split() for r in t.rows if r[1:2].strip()]
            assert {x[0] for x in firsts} >= set(DEVICES) - {"sdb"}, t.rows
            # whole numbers: 30 reads and 100 writes a second, 130 together
            lines = [r.split() for r in t.rows]
            assert ["loop0", "read", "30.0"] == next(x for x in lines if x[0] == "loop0")[:3]
            assert any(x[:2] == ["all", "130"] for x in lines), lines
            assert t.headers[i - 1] == "op"
    assert "sdb (osd.3 block)" in text and "(merged) 2 loop devices" in text


def test_live_top_at_80_columns_cuts_nothing(fake_daemon):
    target, _ = fake_daemon(period=0.1, devices=DEVICES, reads=30)
    text, rc = _on_pty([sys.executable, "-m", "iopulse", "--target", target, "top"], 80,
                       b"busiest sync threads", 3, interrupt=True)
    assert rc == 130 and "Traceback" not in text, text[-3000:]
    assert "…" not in text, text[-3000:]
    frame = text[text.rfind("iopulse top"):]
    for name in DEVICES[1:] + ("sdb (osd.3 block)",):
        assert name in frame, (name, frame)
    heads = screen.all_headers(text)
    assert [h for h in TOP_HEADERS if h not in heads] == [], heads
