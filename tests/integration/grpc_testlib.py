"""Helpers for the gRPC tests: the iopulse client from this tree, subscriber threads."""
from __future__ import annotations

import os
import re
import select
import sys
import threading
import time
from typing import Callable, Optional

from iopulse_testlib import REPO

try:
    import iopulse  # the package under test as installed (a venv of the CI matrix) ...
except ImportError:
    sys.path.insert(0, str(REPO / "clients" / "python" / "src"))
    import iopulse  # ... or from the source tree


# Where the iopulse package under test lives (the source tree, or a venv's site-packages), so
# that `python -m iopulse` in a subprocess runs the same code.
CLIENT_SRC = os.path.dirname(os.path.dirname(iopulse.__file__))
CLIENT_ENV = dict(os.environ, PYTHONPATH=CLIENT_SRC)


def iopulse_cmd(*args: str) -> list[str]:
    """argv running the iopulse command of the package under test."""
    return [sys.executable, "-m", "iopulse", *args]


def wait_for(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def logged_port(d, pattern: str, timeout: float = 5.0) -> int:
    """A port iopulsed logged: group 1 of pattern in its stderr."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, d.stderr_text())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise AssertionError(f"no port matching {pattern!r} in the daemon's log: {d.describe()}")


def tcp_port(d, timeout: float = 5.0) -> int:
    """The TCP port iopulsed logged ('serving gRPC on tcp port N')."""
    return logged_port(d, r"serving gRPC on tcp port (\d+)", timeout)


def read_pty_until(master: int, done: Callable[[str], bool], timeout: float) -> str:
    """What the program under the pseudo-terminal writes until done(text) or timeout (a
    loaded machine takes seconds to start Python with grpc and rich, and to redraw)."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                out += os.read(master, 65536)
            except OSError:
                break
            if done(out.decode(errors="replace")):
                break
    return out.decode(errors="replace")


def read_pty(master: int, seconds: float) -> bytes:
    """Everything a program under a pseudo-terminal writes in the next seconds."""
    return read_pty_until(master, lambda _: False, seconds).encode()


class Collector(threading.Thread):
    """Subscribes and keeps every Update with its arrival time (time.time())."""

    def __init__(self, target: str, pause_after: Optional[int] = None, pause_s: float = 0.0,
                 **subscribe_args):
        super().__init__(daemon=True)
        self.client = iopulse.Client(target)
        self.args = subscribe_args
        self.updates: list = []
        self.arrived: list[float] = []
        self.error: Optional[BaseException] = None
        self.pause_after, self.pause_s = pause_after, pause_s
        self.sub = None
        self.started_ev = threading.Event()

    def run(self) -> None:
        try:
            self.sub = self.client.subscribe(**self.args)
            self.started_ev.set()
            for u in self.sub:
                self.updates.append(u)
                self.arrived.append(time.time())
                if self.pause_after is not None and len(self.updates) == self.pause_after:
                    time.sleep(self.pause_s)
        except BaseException as e:  # noqa: BLE001 - kept for the test to assert on
            self.error = e
        finally:
            self.started_ev.set()

    def stop(self) -> None:
        if self.sub is not None:
            self.sub.cancel()
        self.join(10)
        self.client.close()

    def seqs(self) -> list[tuple[int, int]]:
        return [(u.first_seq, u.seq) for u in self.updates]


def covered(updates) -> list[int]:
    """Every interval seq the Updates cover, in order (first_seq..seq of each)."""
    out: list[int] = []
    for u in updates:
        out.extend(range(u.first_seq, u.seq + 1))
    return out


def ios(update, dev: str, op: str) -> int:
    d = update.devices.get(dev)
    return d.ops[op].ios if d else 0


def nbytes(update, dev: str, op: str) -> int:
    d = update.devices.get(dev)
    return d.ops[op].bytes if d else 0


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")
