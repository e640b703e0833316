"""Helpers for the iopulsed integration tests: ground truth from outside the product
(/proc/diskstats, fio's JSON), the daemon under test as a child process, and sums over its
--json intervals (docs/json-output.md).

Processes and loop devices are always addressed by PID and exact device path, never by name.
"""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import re
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

REPO = Path(__file__).resolve().parents[2]
OPS = ("read", "write", "flush", "discard")
READY_RE = re.compile(r"\bready\b")
# docs/metrics.md (Completions the kernel does not report): latency samples for at least 99.95% of the
# completed IOs of a large workload whose completion reached the programs (those it did not
# reach are bounded by kernel_truth.py), beside busy-node.sh too; a few thousand IOs get 99.5%,
# where two or three untimed IOs already cross 0.05%.
TIMED_GOAL = 0.9995
TIMED_GOAL_SMALL = 0.995


# ------------------------------------------------------------------ /proc/diskstats --

@dataclasses.dataclass(frozen=True)
class DiskStats:
    """One /proc/diskstats line (Documentation/admin-guide/iostats.rst)."""
    name: str
    reads: int            # field 1: reads completed
    read_merges: int      # field 2
    read_sectors: int     # field 3
    writes: int           # field 5: writes completed
    write_merges: int     # field 6
    write_sectors: int    # field 7
    in_flight: int        # field 9
    discards: int         # field 12 (0 on kernels without it)
    discard_sectors: int  # field 14
    flushes: int          # field 16

    @property
    def read_bytes(self) -> int:
        return self.read_sectors * 512

    @property
    def write_bytes(self) -> int:
        return self.write_sectors * 512

    def __sub__(self, older: "DiskStats") -> "DiskStats":
        vals = {f.name: getattr(self, f.name) - getattr(older, f.name)
                for f in dataclasses.fields(self) if f.name not in ("name", "in_flight")}
        return DiskStats(name=self.name, in_flight=self.in_flight, **vals)


def diskstats(dev_name: str) -> DiskStats:
    """The /proc/diskstats counters of one device (kernel name, e.g. "loop3")."""
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if len(p) >= 14 and p[2] == dev_name:
                v = [int(x) for x in p[3:]] + [0] * 17
                return DiskStats(name=dev_name, reads=v[0], read_merges=v[1], read_sectors=v[2],
                                 writes=v[4], write_merges=v[5], write_sectors=v[6],
                                 in_flight=v[8], discards=v[11], discard_sectors=v[13],
                                 flushes=v[15])
    raise LookupError(f"{dev_name} not in /proc/diskstats")


def wait_idle(dev_name: str, timeout: float = 10.0) -> DiskStats:
    """Wait until the device has nothing in flight and its counters stand still for 200 ms;
    return that snapshot."""
    deadline = time.monotonic() + timeout
    prev = None
    while True:
        cur = diskstats(dev_name)
        with open(f"/sys/block/{dev_name}/inflight") as f:
            sys_inflight = sum(int(x) for x in f.read().split())
        if cur.in_flight == 0 and sys_inflight == 0 and cur == prev:
            return cur
        if time.monotonic() > deadline:
            raise TimeoutError(f"{dev_name} not idle after {timeout}s: {cur}, "
                               f"sysfs inflight {sys_inflight}")
        prev = cur if cur.in_flight == 0 and sys_inflight == 0 else None
        time.sleep(0.2)


# ------------------------------------------------------------------------------ fio --

class FioError(AssertionError):
    pass


def run_fio(timeout: float = 180, **opts: Any) -> dict:
    """Run fio with --output-format=json and return the parsed JSON.

    Options are given verbatim as fio spells them (underscores kept): run_fio(name="x",
    filename="/dev/loop3", rw="randread", bs="4k", direct=1, time_based=True, runtime="3s").
    True gives a bare flag. fio is stopped by its PID if it outlives timeout.
    """
    if "name" not in opts:
        raise ValueError("run_fio needs name=")
    cmd = ["fio", "--output-format=json"]
    for k, v in opts.items():
        if v is None or v is False:
            continue
        cmd.append(f"--{k}" if v is True else f"--{k}={v}")
    print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # by PID (Popen.kill signals proc.pid)
        out, err = proc.communicate()
        raise FioError(f"fio ran longer than {timeout}s: {' '.join(cmd)}\n{err}")
    if proc.returncode != 0:
        raise FioError(f"fio exited {proc.returncode}: {' '.join(cmd)}\n{err}\n{out[-2000:]}")
    start = out.find("{")
    if start < 0:
        raise FioError(f"no JSON in fio output:\n{out}\n{err}")
    res = json.loads(out[start:])
    for job in res["jobs"]:
        if job.get("error"):
            raise FioError(f"fio job {job['jobname']} error {job['error']}")
    return res


def fio_sync_calls(res: dict) -> int:
    """Number of fsync/fdatasync/sync_file_range calls fio made (job 0).

    fio 3.33 leaves jobs[].sync.total_ios at 0 and counts the calls as samples of the sync
    latency (jobs[].sync.lat_ns.N); take whichever is set."""
    s = res["jobs"][0]["sync"]
    return max(int(s.get("total_ios", 0)), int(s.get("lat_ns", {}).get("N", 0)))


# --------------------------------------------------------------------- the daemon --

class Daemon:
    """iopulsed as a child process: stdout parsed as JSON lines by a reader thread, stderr
    to a file. Stopped by PID."""

    def __init__(self, argv: list[str], stderr_path: Path,
                 env: Optional[dict[str, str]] = None):
        self.argv = argv
        self.stderr_path = stderr_path
        self._err = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._err,
                                     stdin=subprocess.DEVNULL, env=env)
        self.pid = self.proc.pid
        self.socket: Optional[str] = None  # its gRPC unix socket, if it serves one
        self.intervals: list[dict] = []   # every JSON object, in order
        self.bad_lines: list[str] = []    # stdout lines that are not JSON
        self._q: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.killed = False
        self._reader = threading.Thread(target=self._read, name=f"iopulsed-{self.pid}",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                with self._lock:
                    self.bad_lines.append(line)
                continue
            with self._lock:
                self.intervals.append(obj)
            self._q.put(obj)
        self._q.put(None)  # EOF

    # -- state --
    def stderr_text(self) -> str:
        if not self._err.closed:
            self._err.flush()
        return self.stderr_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def describe(self) -> str:
        return (f"iopulsed pid {self.pid} ({' '.join(self.argv)}), "
                f"exit {self.proc.poll()}; stderr:\n{self.stderr_text()}")

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if READY_RE.search(self.stderr_text()):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"iopulsed exited before 'ready': {self.describe()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no 'ready' from iopulsed within {timeout}s: "
                                     f"{self.describe()}")
            time.sleep(0.05)

    # -- intervals --
    def next_interval(self, timeout: float = 10.0) -> dict:
        try:
            obj = self._q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no interval from iopulsed within {timeout}s: "
                                 f"{self.describe()}") from None
        if obj is None:
            self._q.put(None)
            raise AssertionError(f"iopulsed closed stdout: {self.describe()}")
        return obj

    def wait_for(self, pred: Callable[[dict], bool], timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no interval with {what} within {timeout}s")
            iv = self.next_interval(timeout=left)
            if pred(iv):
                return iv

    def drain(self) -> list[dict]:
        """Intervals queued so far (non-blocking)."""
        out = []
        while True:
            try:
                obj = self._q.get_nowait()
            except queue.Empty:
                return out
            if obj is None:
                self._q.put(None)
                return out
            out.append(obj)

    def all_intervals(self) -> list[dict]:
        with self._lock:
            return list(self.intervals)

    # -- signals and stop --
    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send sig (by PID), wait up to timeout, then SIGKILL. Returns the exit code and
        waits for the reader to see EOF, so all_intervals() is complete afterwards."""
        if self.proc.poll() is None:
            os.kill(self.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        self._err.close()
        return self.proc.returncode


# ------------------------------------------------------------- sums over intervals --

def dev_entries(intervals: Iterable[dict], name: str) -> Iterator[tuple[dict, dict]]:
    for iv in intervals:
        for d in iv.get("devices", []):
            if d.get("name") == name:
                yield iv, d


def sum_op(intervals: Iterable[dict], name: str, op: str, key: str) -> int:
    return sum(d["ops"][op][key] for _, d in dev_entries(intervals, name))


def sum_hist_count(intervals: Iterable[dict], name: str, op: str, hist: str) -> int:
    return sum(d["ops"][op][hist]["count"] for _, d in dev_entries(intervals, name))


def sum_seek(intervals: Iterable[dict], name: str) -> tuple[int, int, int]:
    s = f = b = 0
    for _, d in dev_entries(intervals, name):
        s += d["seek"]["sequential"]
        f += d["seek"]["forward"]
        b += d["seek"]["backward"]
    return s, f, b


def threads_where(intervals: Iterable[dict], pred: Callable[[dict], bool]) -> list[dict]:
    return [t for iv in intervals for t in iv.get("threads", []) if pred(t)]


def median(xs: list[float]) -> float:
    return statistics.median(xs)
