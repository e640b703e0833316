"""A client without the right to mark cannot take every Subscribe stream: it holds at most a
quarter of server.subscribers, the last eighth are kept for clients that may mark, and
`iopulse record` exits non-zero when a host delivered nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from grpc_testlib import CLIENT_ENV, iopulse, iopulse_cmd, wait_for

HOLD = """
import sys, iopulse
held, refused = [], ""
for _ in range(int(sys.argv[2])):
    c = iopulse.Client("unix:" + sys.argv[1])
    try:
        sub = iter(c.subscribe_raw(replay_seconds=5))
        next(sub)           # one Update taken, then never read again
        held.append((c, sub))
    except iopulse.IopulseError as e:
        refused = str(e)
        break
print(len(held), refused, flush=True)
sys.stdin.read()            # hold them until told
"""
OUTSIDER = ["--reuid=65534", "--regid=65534", "--clear-groups"]


def hold_as_outsider(sock: str, n: int) -> tuple[subprocess.Popen, int, str]:
    p = subprocess.Popen(["setpriv", *OUTSIDER, sys.executable, "-c", HOLD, sock, str(n)],
                         env=CLIENT_ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    count, _, refused = line.strip().partition(" ")
    return p, int(count), refused


def record(sock: str, out: str) -> subprocess.CompletedProcess:
    return subprocess.run(iopulse_cmd("record", "-o", out, "--force", "--target",
                                      f"unix:{sock}", "--duration", "2s"),
                          env=CLIENT_ENV, capture_output=True, text=True, timeout=120)


def test_a_reader_cannot_take_every_stream(daemon, tmp_path):
    sockdir = tempfile.mkdtemp(prefix="iop-slots-", dir="/tmp")
    os.chmod(sockdir, 0o755)
    sock = os.path.join(sockdir, "d.sock")
    cfg = tmp_path / "slots.yaml"
    cfg.write_text('server:\n  socket_mode: "0666"\n  mark_group: users\n  subscribers: 16\n')
    holder = None
    try:
        d = daemon("-i", "250ms", "--socket", sock, config=str(cfg))
        with iopulse.Client(f"unix:{sock}") as c:
            wait_for(lambda: c.info().last_seq >= 2, 20, "two intervals")
        # a reader asks for all 16 and more: it gets a quarter
        holder, got, refused = hold_as_outsider(sock, 20)
        print(f"\nreader: {got} streams held, then: {refused}")
        assert got == 4 and "RESOURCE_EXHAUSTED" in refused and "holds 4 streams" in refused
        # root (may mark) records meanwhile: Updates stored, exit 0
        out = str(tmp_path / "ok.iopulse")
        r = record(sock, out)
        print(r.stderr[-600:])
        assert r.returncode == 0, r.stderr
        assert "delivered no Update" not in r.stderr
        # root holds every other stream: record now gets none and says so, exit non-zero
        with iopulse.Client(f"unix:{sock}") as c:
            subs = []
            for _ in range(12):
                s = iter(c.subscribe_raw(replay_seconds=1))
                next(s)
                subs.append(s)
            r = record(sock, str(tmp_path / "none.iopulse"))
            print(r.stderr[-800:])
            assert r.returncode != 0
            assert "delivered no Update" in r.stderr and "RESOURCE_EXHAUSTED" in r.stderr
            for s in subs:
                s.cancel()
        assert d.stop() == 0, d.describe()
    finally:
        if holder is not None:
            holder.kill()
            holder.wait(10)
        shutil.rmtree(sockdir, ignore_errors=True)
