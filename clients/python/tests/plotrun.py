"""A deterministic recording for the plot tests: one parent phase (a fio command) holding
N job phases of varied length, bs and queue depth, then a phase of its own; intervals of
0.25, 1 and 2.5 s (a merged window); two devices and a syncing thread."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iopulse._pb import iopulse_pb2 as pb
from iopulse.histogram import Histogram
from iopulse.record import RunWriter

K = 5
T0_REAL = 1_763_800_000_000_000_000
T0_MONO = 500_000_000_000
BUSY, QUIET = "nvme0n1", "sda"
COMMAND = "fio --output-format=json --output=/var/tmp/out.json jobs/thirty-two-jobs.fio"


def _hist(pairs: list[tuple[int, int]]) -> Any:
    h = Histogram(K)
    for v, n in pairs:
        if n:
            h.record(v, n)
    return h.to_pb()


@dataclass
class Job:
    name: str
    labels: dict[str, str]
    intervals: list[float]          # seconds each
    base_ns: int                    # p50 of the total latency
    iops: int
    sequential: bool
    syncs: int = 0                  # fdatasync calls per second


@dataclass
class Layout:
    """What was written, for the tests to check against."""
    jobs: list[Job] = field(default_factory=list)
    intervals: list[tuple[float, float, str]] = field(default_factory=list)  # start, s, phase
    ios: dict[str, int] = field(default_factory=dict)
    qwait_row_rate: dict[int, float] = field(default_factory=dict)  # interval -> IOs/s at 10 µs


def jobs(n: int) -> list[Job]:
    out = []
    for i in range(n):
        rw = ("randread", "randwrite", "read", "write")[i % 4]
        bs = ("4k", "16k", "64k", "128k")[(i // 4) % 4]
        qd = (1, 4, 16, 64)[(i // 2) % 4]
        lengths = ([0.25] if i % 7 == 3 else [1.0] * (1 + i % 3))
        if i == 5:
            lengths = [2.5, 1.0]            # a merged window inside a job
        out.append(Job(f"{rw}-{bs}-qd{qd}" if i % 5 else f"job{i}",
                       {"rw": rw, "bs": bs, "iodepth": str(qd), "group": str(i + 1)},
                       lengths, base_ns=int(20_000 * 1.12 ** i), iops=2_000 + 900 * (i % 9),
                       sequential=not rw.startswith("rand"),
                       syncs=50 * (i % 3) if rw.endswith("write") else 0))
    return out


def _update(seq: int, start: float, secs: float, job: Any, layout: Layout) -> Any:
    s_ns, e_ns = int(start * 1e9), int((start + secs) * 1e9)
    u = pb.Update(seq=seq, first_seq=seq, merged=1, precision=K,
                  start_realtime_ns=T0_REAL + s_ns, end_realtime_ns=T0_REAL + e_ns,
                  start_monotonic_ns=T0_MONO + s_ns, end_monotonic_ns=T0_MONO + e_ns)
    for dev in (BUSY, QUIET):
        d = u.devices.add(name=dev, major=259 if dev == BUSY else 8, minor=0, osd_id=-1)
        if job is None or (dev == QUIET and seq % 2):
            continue
        if dev == QUIET:
            n, base, seqio = 20, 3_000_000, True
        else:
            n, base, seqio = int(job.iops * secs), job.base_ns, job.sequential
        op = d.read if (job is not None and "read" in job.name) and dev == BUSY else d.write
        op.ios, op.bytes = n, n * 4096
        tail = max(1, n // 1000)
        q = [(10_000, n - tail), (base * 20, tail)]
        op.queue_wait_ns.CopyFrom(_hist(q))
        op.service_ns.CopyFrom(_hist([(base, n - 10 * tail), (base * 4, 9 * tail),
                                      (base * 50, tail)]))
        op.total_ns.CopyFrom(_hist([(base + 10_000, n - 10 * tail), (base * 4, 9 * tail),
                                    (base * 60, tail)]))
        op.size_bytes.CopyFrom(_hist([(4096, n)]))
        if seqio:
            d.seek_sequential = n - n // 10
            d.seek_forward = n // 10
            d.seek_distance_sectors.CopyFrom(_hist([(0, n - n // 10), (2048, n // 10)]))
        else:
            d.seek_forward, d.seek_backward = n // 2, n - n // 2
            d.seek_distance_sectors.CopyFrom(_hist([(3 * 10 ** (2 + j % 7), n // 7)
                                                    for j in range(7)]))
        layout.ios[dev] = layout.ios.get(dev, 0) + n
        if dev == BUSY:
            layout.qwait_row_rate[seq] = (n - tail) / secs
    if job is not None and job.syncs:
        calls = int(job.syncs * secs)
        t = u.threads.add(pid=7000, tid=7001, comm="fio", process="fio", osd_id=-1,
                          device=BUSY, fdatasync=calls, latency_sum_ns=calls * 300_000)
        t.latency_ns.CopyFrom(_hist([(300_000, calls)]))
    return u


def write_run(path: str, n_jobs: int = 32) -> Layout:
    """Writes the run file; returns what it holds."""
    layout = Layout(jobs=jobs(n_jobs))
    plan: list[tuple[float, Any]] = [(1.0, None)]           # idle before the command
    for job in layout.jobs:
        plan += [(s, job) for s in job.intervals]
    plan += [(1.0, None), (1.0, "cooldown"), (1.0, "cooldown"), (0.5, None)]
    ids = iter(range(1, 10_000))
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record", "--",
                                                              *COMMAND.split()]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/iopulse.sock"})
        w.write_info(0, pb.Info(version="t", hostname="node0").SerializeToString())
        t, open_ids = 0.0, {}
        updates = []
        for seq, (secs, job) in enumerate(plan, 1):
            job_obj = job if isinstance(job, Job) else None
            if job == "cooldown":
                job_obj = Job("cooldown", {}, [1.0], 50_000, 500, True)
            u = _update(seq, t, secs, job_obj, layout)
            layout.intervals.append((t, secs, getattr(job_obj, "name", "")))
            updates.append((u, job))
            t += secs
        # marks: a phase begins at the end of the Update before its first one
        for i, (u, job) in enumerate(updates):
            nxt = updates[i + 1][1] if i + 1 < len(updates) else None
            edge = {"realtime_ns": u.end_realtime_ns, "monotonic_ns": u.end_monotonic_ns}
            # the end of this Update's phase when the next one differs
            if job is not None and nxt is not job:
                if isinstance(job, Job) or job == "cooldown":
                    key = job.name if isinstance(job, Job) else job
                    u.phases.add(name=key, end=True, begin_id=open_ids.pop(key), id=next(ids),
                                 **edge)
                if isinstance(job, Job) and not isinstance(nxt, Job):
                    u.phases.add(name="fio", end=True, begin_id=open_ids.pop("fio"),
                                 id=next(ids), **edge)
            if nxt is not None and nxt is not job:
                if isinstance(nxt, Job) and not isinstance(job, Job):
                    open_ids["fio"] = next(ids)
                    u.phases.add(name="fio", labels={"command": COMMAND}, id=open_ids["fio"],
                                 **edge)
                key = nxt.name if isinstance(nxt, Job) else nxt
                open_ids[key] = next(ids)
                u.phases.add(name=key, labels=nxt.labels if isinstance(nxt, Job) else {},
                             id=open_ids[key],
                             parent_id=open_ids["fio"] if isinstance(nxt, Job) else 0, **edge)
        for u, _ in updates:
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end", "status": "ok"})
    return layout
