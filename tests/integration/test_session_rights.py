"""Sessions need the right to mark: a Subscribe that holds a session (and so ends its open
phases when it goes) is refused to a client that may not mark, and a stream of another client
holding the same session name ends none of the phases it did not open."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from grpc_testlib import CLIENT_ENV, iopulse, wait_for

HOLD = """
import sys, time, iopulse
c = iopulse.Client("unix:" + sys.argv[1], session=sys.argv[2])
try:
    sub = c.subscribe(hold_session=True)
    next(iter(sub))
    print("subscribed", flush=True)
except iopulse.IopulseError as e:
    print(f"refused: {e}", flush=True)
    sys.exit(3)
"""


def _as(uid_gid: list[str], sock: str, session: str) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", *uid_gid, sys.executable, "-c", HOLD, sock, session],
                          env=CLIENT_ENV, capture_output=True, text=True, timeout=60)


def test_session_needs_the_mark_right_and_stays_its_owners(daemon, tmp_path):
    sockdir = tempfile.mkdtemp(prefix="iop-sess-", dir="/tmp")
    os.chmod(sockdir, 0o755)
    sock = os.path.join(sockdir, "d.sock")
    cfg = tmp_path / "mg.yaml"
    cfg.write_text('server:\n  socket_mode: "0666"\n  mark_group: users\n')
    outsider = ["--reuid=65534", "--regid=65534", "--clear-groups"]
    member = ["--reuid=65534", "--regid=100", "--clear-groups"]     # group users
    try:
        d = daemon("--socket", sock, config=str(cfg))
        with iopulse.Client(f"unix:{sock}", session="bench") as c:
            wait_for(lambda: c.info().last_seq >= 1, 10, "the first interval")
            held = c.subscribe(hold_session=True)
            begin = c.mark_phase("fill").mark
            r = _as(outsider, sock, "bench")
            print(f"\noutsider holding session 'bench': exit {r.returncode}: {r.stdout.strip()}"
                  f" {r.stderr.strip()[-300:]}")
            assert r.returncode == 3 and "PERMISSION_DENIED" in r.stdout, r.stdout + r.stderr
            # a member may hold a session, but its stream ending does not end root's phase
            r = _as(member, sock, "bench")
            print(f"member holding session 'bench', then gone: exit {r.returncode}: "
                  f"{r.stdout.strip()} {r.stderr.strip()[-300:]}")
            assert r.returncode == 0 and "subscribed" in r.stdout, r.stdout + r.stderr
            assert [m.id for m in c.info().open_phases] == [begin.id], \
                "another client's stream ended the session's phase"
            held.cancel()
        # root's own stream (and client) gone: its phase ends, abandoned
        with iopulse.Client(f"unix:{sock}") as c2:
            wait_for(lambda: not c2.info().open_phases, 10, "the abandoned phase to end")
        assert d.stop() == 0, d.describe()
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
