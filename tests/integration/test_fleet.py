"""Several agents in one `iopulse top`: two daemons on two sockets in one live table in a
pseudo-terminal; stopping one shows it as down while the other keeps updating."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from grpc_testlib import CLIENT_SRC, read_pty_until


def _seqs(text: str, target: str) -> list[int]:
    return [int(m) for m in re.findall(re.escape(target) + r": up, seq (\d+)", text)]


def test_top_over_two_daemons_survives_one_going_away(daemon):
    a = daemon("-i", "1s", "--no-sync")
    b = daemon("-i", "1s", "--no-sync")
    ta, tb = f"unix:{a.socket}", f"unix:{b.socket}"
    master, slave = os.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="200", LINES="50",
               PYTHONPATH=CLIENT_SRC)
    p = subprocess.Popen([sys.executable, "-m", "iopulse", "top", "--target", ta, "--target",
                          tb, "--merge"], stdin=slave, stdout=slave, stderr=slave, env=env,
                         close_fds=True)
    os.close(slave)

    def both_up(text: str) -> bool:
        return bool(_seqs(text, ta) and _seqs(text, tb) and "(merged)" in text and
                    "counted once" in text)

    def a_updates_after_down(text: str) -> bool:
        i = text.find(f"{tb}: DOWN")
        seqs = _seqs(text[i:], ta) if i >= 0 else []
        return len(set(seqs)) >= 2 and max(seqs) > max(_seqs(first, ta) or [0])

    try:
        first = read_pty_until(master, both_up, 60)
        assert b.stop(signal.SIGTERM) == 0, b.describe()
        t_down = time.monotonic()
        later = read_pty_until(master, a_updates_after_down, 30)
        took = time.monotonic() - t_down
        p.send_signal(signal.SIGINT)
        rc = p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
    down_at = later.find(f"{tb}: DOWN")
    after_down = later[down_at:] if down_at >= 0 else ""
    print(f"\nbefore: {ta} seqs {_seqs(first, ta)}, {tb} seqs {_seqs(first, tb)}; after "
          f"stopping {tb} ({took:.1f} s): {ta} seqs {_seqs(after_down, ta)}")
    assert _seqs(first, ta) and _seqs(first, tb), f"both hosts not on screen: {first[-3000:]!r}"
    assert "(merged)" in first
    # both daemons watch this host's devices: the merged lines count each of them once
    once = re.findall(r"merged: (\S+) of \S+ is \S+'s \S+: counted once", first)
    assert once, first[-3000:]
    assert down_at >= 0, f"{tb} never shown as down: {later[-3000:]!r}"
    seqs = _seqs(after_down, ta)
    assert len(set(seqs)) >= 2 and max(seqs) > max(_seqs(first, ta)), \
        f"{ta} stopped updating once {tb} went down: {seqs}"
    assert rc == 130, "Ctrl-C: exit status 130"


def test_watch_and_snapshot_over_several_daemons(daemon, tmp_path):
    import json
    a = daemon("-i", "1s", "--no-sync")
    b = daemon("-i", "1s", "--no-sync")
    ta, tb, gone = f"unix:{a.socket}", f"unix:{b.socket}", f"unix:{tmp_path}/gone.sock"
    env = dict(os.environ, PYTHONPATH=CLIENT_SRC)
    # 10 Updates: both daemons are in them unless one stream starts ~9 intervals after the
    # other (with 6, a start 5 s late on a loaded machine left one out)
    w = subprocess.run([sys.executable, "-m", "iopulse", "watch", "--target", ta, "--target", tb,
                        "--count", "10"], capture_output=True, text=True, env=env, timeout=120)
    assert w.returncode == 0, w.stderr
    lines = [json.loads(x) for x in w.stdout.splitlines()]
    print(f"\nwatch: {[(x['target'][-8:], x.get('seq')) for x in lines]}")
    assert len(lines) == 10 and {x["target"] for x in lines} == {ta, tb}
    for t in (ta, tb):
        seqs = [x["seq"] for x in lines if x["target"] == t]
        assert seqs == sorted(seqs), f"{t}: Updates out of order {seqs}"
    s = subprocess.run([sys.executable, "-m", "iopulse", "snapshot", "--json", "--target", ta,
                        "--target", tb, "--target", gone], capture_output=True, text=True,
                       env=env, timeout=120)
    got = {x["target"]: x for x in map(json.loads, s.stdout.splitlines())}
    print(f"snapshot exit {s.returncode}: {sorted((t[-8:], 'seq' in x) for t, x in got.items())}")
    assert s.returncode == 1, "a daemon that cannot be reached makes the exit status 1"
    assert got[ta]["seq"] >= 1 and got[tb]["seq"] >= 1
    assert "no such socket" in got[gone]["error"]
