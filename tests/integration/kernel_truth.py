"""How many block_rq_complete events the kernel did not run a process's BPF programs for.

Two counts over one window: the tracepoint's hits, from a perf counter (the kernel's own
event counting, no BPF program involved), and the run counts of the process's programs on
that tracepoint (bpf_stats, `kernel.bpf_stats_enabled` turned on for the window). Every
program on a tracepoint runs once per hit unless the kernel skips it; a skip for recursion
is counted in the program's `recursion_misses`, and on some kernels a completion reaches
none of the programs with no miss counted. The difference, hits minus the most runs of any
one program, bounds from above how many completions no program saw: an IO the daemon could
not time for that reason is one of them.

The perf counter is read just before the run counts at the start and just after them at
the end, so the window of the hits holds the window of the runs: events at its edges make
the bound looser, never tighter. Both reads are system calls, microseconds apart.
"""
from __future__ import annotations

import ctypes
import os
import struct
import subprocess
from dataclasses import dataclass

TRACING = "/sys/kernel/tracing"
SYS_PERF_EVENT_OPEN = 298        # x86_64
SYS_BPF = 321                    # x86_64
PERF_TYPE_TRACEPOINT = 2
PERF_FLAG_FD_CLOEXEC = 8
PERF_ATTR_SIZE = 128
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
# struct bpf_prog_info (uapi, append-only): offsets of the fields read here
INFO_SIZE, INFO_NAME, INFO_RUN_CNT, INFO_MISSES = 232, 64, 200, 208
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _sys(nr: int, *args) -> int:
    r = _libc.syscall(nr, *args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"syscall {nr}: {os.strerror(e)}")
    return r


def tracepoint_id(event: str) -> int:
    """The id of a trace event (e.g. "block/block_rq_complete"), mounting tracefs where it
    is not mounted yet (a fresh machine)."""
    path = f"{TRACING}/events/{event}/id"
    if not os.path.exists(path):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACING], check=False,
                       capture_output=True)
    with open(path) as f:
        return int(f.read())


class TracepointCounter:
    """A perf counter of one trace event on every CPU (no sampling, no BPF)."""

    def __init__(self, event: str):
        attr = ctypes.create_string_buffer(PERF_ATTR_SIZE)
        struct.pack_into("IIQ", attr, 0, PERF_TYPE_TRACEPOINT, PERF_ATTR_SIZE,
                         tracepoint_id(event))
        self.fds: list[int] = []
        try:
            for cpu in range(os.cpu_count() or 1):
                self.fds.append(_sys(SYS_PERF_EVENT_OPEN, attr, ctypes.c_int(-1),
                                     ctypes.c_int(cpu), ctypes.c_int(-1),
                                     ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC)))
        except OSError:
            self.close()
            raise

    def read(self) -> int:
        return sum(struct.unpack("Q", os.read(fd, 8))[0] for fd in self.fds)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def prog_ids_of(pid: int) -> set[int]:
    """The BPF programs a process holds, from its descriptors."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(f"{fdinfo}/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            continue
    return ids


@dataclass
class ProgStats:
    name: str
    run_cnt: int
    misses: int


def prog_stats(fd: int) -> ProgStats:
    info = ctypes.create_string_buffer(INFO_SIZE)
    attr = ctypes.create_string_buffer(16)
    struct.pack_into("IIQ", attr, 0, fd, INFO_SIZE, ctypes.addressof(info))
    _sys(SYS_BPF, ctypes.c_int(BPF_OBJ_GET_INFO_BY_FD), attr, ctypes.c_uint(16))
    name = info.raw[INFO_NAME:INFO_NAME + 16].split(b"\0")[0].decode()
    run_cnt, misses = struct.unpack_from("QQ", info, INFO_RUN_CNT)
    return ProgStats(name, run_cnt, misses)


def prog_fd(prog_id: int) -> int:
    attr = ctypes.create_string_buffer(16)
    struct.pack_into("I", attr, 0, prog_id)
    return _sys(SYS_BPF, ctypes.c_int(BPF_PROG_GET_FD_BY_ID), attr, ctypes.c_uint(16))


@dataclass
class Delivery:
    hits: int                 # block_rq_complete events in the window (perf)
    runs: dict[str, int]      # runs of each program on it in the window
    misses: int               # recursion misses of those programs in the window

    @property
    def not_run(self) -> int:
        """Events no program of the process ran for (at most; see the module's note)."""
        return self.hits - max(self.runs.values(), default=0)

    def describe(self) -> str:
        return (f"block_rq_complete {self.hits} hits (perf), program runs {self.runs}, "
                f"recursion misses {self.misses}: at most {self.not_run} completions no "
                f"program ran for")


def assert_timed(timed: int, ios: int, unseen: int, kernel: Delivery, goal: float,
                 what: str = "IOs") -> None:
    """The README's promise for latency samples: the IOs counted completion_unseen are at
    most the completions the kernel ran no program for (kernel: the same window), and of the
    others at least goal are timed."""
    assert unseen <= kernel.not_run, \
        f"{unseen} {what} counted completion_unseen, but the kernel ran the programs for all " \
        f"but {kernel.not_run} completions: {kernel.describe()}"
    delivered = ios - unseen
    assert timed >= goal * delivered, \
        f"latency samples for {timed} of the {delivered} {what} whose completion the " \
        f"programs saw ({100 * timed / max(delivered, 1):.3f}%)"


class CompletionDelivery:
    """Counts, over `with` window, what the kernel delivered of block_rq_complete to the
    programs of process `pid` whose names start with one of `prefixes`."""

    def __init__(self, pid: int, prefixes: tuple[str, ...] = ("iop_rq_complete", "iop_compl")):
        self.pid = pid
        self.prefixes = prefixes
        self.result: Delivery | None = None

    def _snapshot(self) -> dict[int, ProgStats]:
        return {i: prog_stats(fd) for i, fd in self._fds.items()}

    def __enter__(self) -> "CompletionDelivery":
        with open(STATS_SYSCTL) as f:
            self._stats_was = f.read().strip()
        with open(STATS_SYSCTL, "w") as f:
            f.write("1")
        self._fds: dict[int, int] = {}
        try:
            for i in sorted(prog_ids_of(self.pid)):
                fd = prog_fd(i)
                if prog_stats(fd).name.startswith(self.prefixes):
                    self._fds[i] = fd
                else:
                    os.close(fd)
            if not self._fds:
                raise RuntimeError(f"process {self.pid} holds no program named "
                                   f"{' or '.join(self.prefixes)}*")
            self._perf = TracepointCounter("block/block_rq_complete")
        except BaseException:
            self._restore()
            raise
        self._hits0 = self._perf.read()
        self._s0 = self._snapshot()
        return self

    def __exit__(self, *exc) -> None:
        s1 = self._snapshot()
        hits1 = self._perf.read()
        runs: dict[str, int] = {}
        misses = 0
        for i, a in self._s0.items():
            b = s1[i]
            key = f"{b.name}#{i}"
            runs[key] = b.run_cnt - a.run_cnt
            misses += b.misses - a.misses
        self.result = Delivery(hits1 - self._hits0, runs, misses)
        self._restore()

    def _restore(self) -> None:
        if getattr(self, "_perf", None):
            self._perf.close()
        for fd in getattr(self, "_fds", {}).values():
            os.close(fd)
        self._fds = {}
        with open(STATS_SYSCTL, "w") as f:
            f.write(self._stats_was)
