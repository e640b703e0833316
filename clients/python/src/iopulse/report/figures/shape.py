"""A run shaped for the plots, in plain Python: per interval rates and latency rows (each
interval divided by its own length), the phase tree with stable numbers, and per phase the
merged histograms, read through analysis.metrics. Times are seconds since the run's start."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ...analysis.metrics import aggregate
from ...histogram import Histogram, bucket_mid, rank
from ...model import DATA_OPS, LATENCY_OPS
from ...phases.model import Phase
from ...record.reader import Run

ROWS_PER_DECADE = 6
HEAT_LO, HEAT_HI = 1e2, 1e11            # 100 ns .. 100 s
HEAT_ROWS = ROWS_PER_DECADE * 9
HEAT_KINDS = (("queue wait", "queue_wait_ns"), ("service", "service_ns"))
MAX_LINES = 8                           # phases on one percentile axes; more: one panel each
NINES_MAX = 4.0                         # p99.99
NINES_MIN = math.log10(2)               # p50
SEEK_PER_DECADE = 2
SEEK_DECADES = 12                       # 1 .. 10^12 sectors


def heat_row(ns: float) -> int:
    """The latency row of a value: ROWS_PER_DECADE rows per decade from HEAT_LO."""
    r = math.floor((math.log10(max(ns, HEAT_LO)) - math.log10(HEAT_LO)) * ROWS_PER_DECADE)
    return min(HEAT_ROWS - 1, max(0, r))


def heat_edges() -> list[float]:
    """HEAT_ROWS + 1 row edges in ns."""
    return [HEAT_LO * 10 ** (r / ROWS_PER_DECADE) for r in range(HEAT_ROWS + 1)]


@dataclass
class DeviceSeries:
    """One device of one host, per interval in which the daemon reported it."""
    host: int
    device: str
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    iops: list[float] = field(default_factory=list)
    mbps: list[float] = field(default_factory=list)
    # per HEAT_KINDS name: per interval, IOs per second in each latency row (reads and writes)
    heat: dict[str, list[list[float]]] = field(default_factory=dict)
    ios: int = 0


@dataclass
class ThreadSeries:
    host: int
    comm: str
    tid: int
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)     # sync calls per second
    p99_ms: list[float] = field(default_factory=list)   # their latency p99, nan without calls
    calls: int = 0


@dataclass
class Series:
    t0_ns: int = 0
    end_s: float = 0.0
    devices: dict[tuple[int, str], DeviceSeries] = field(default_factory=dict)
    threads: dict[tuple[int, str, int], ThreadSeries] = field(default_factory=dict)

    def busiest(self, n: int) -> list[DeviceSeries]:
        """The n devices with the most IOs (ties: host, then name), none without IO."""
        ds = sorted(self.devices.values(), key=lambda d: (-d.ios, d.host, d.device))
        return [d for d in ds if d.ios][:n]

    def busiest_threads(self, n: int) -> list[ThreadSeries]:
        ts = sorted(self.threads.values(), key=lambda t: (-t.calls, t.host, t.comm, t.tid))
        return [t for t in ts if t.calls][:n]


def run_start_ns(run: Run) -> int:
    starts = [h.windows[0].start_realtime_ns for h in run.hosts if h.windows]
    return min(starts) if starts else 0


def series(run: Run) -> Series:
    """Every interval of every host, each rate divided by that interval's own length (the
    daemon merges intervals into longer windows when asked, or at phase edges)."""
    s = Series(t0_ns=run_start_ns(run))
    for host, u in run.iter_updates():
        secs = (u.end_monotonic_ns - u.start_monotonic_ns) / 1e9
        if secs <= 0:
            continue
        a, b = (u.start_realtime_ns - s.t0_ns) / 1e9, (u.end_realtime_ns - s.t0_ns) / 1e9
        s.end_s = max(s.end_s, b)
        k = u.precision
        for d in u.devices:
            ds = s.devices.get((host, d.name))
            if ds is None:
                ds = s.devices[(host, d.name)] = DeviceSeries(host, d.name)
            ios = sum(getattr(d, op).ios for op in DATA_OPS)
            ds.start.append(a)
            ds.end.append(b)
            ds.iops.append(ios / secs)
            ds.mbps.append(sum(getattr(d, op).bytes for op in DATA_OPS) / 1e6 / secs)
            ds.ios += ios
            for what, attr in HEAT_KINDS:
                col = [0.0] * HEAT_ROWS
                for op in LATENCY_OPS:
                    h = getattr(getattr(d, op), attr)
                    for i, c in zip(h.index, h.count):
                        col[heat_row(bucket_mid(i, h.precision or k))] += c / secs
                ds.heat.setdefault(what, []).append(col)
        for th in u.threads:
            ts = s.threads.get((host, th.comm, th.tid))
            if ts is None:
                ts = s.threads[(host, th.comm, th.tid)] = ThreadSeries(host, th.comm, th.tid)
            calls = th.fsync + th.fdatasync + th.sync_file_range
            ts.start.append(a)
            ts.end.append(b)
            ts.rate.append(calls / secs)
            p99 = Histogram.from_pb(th.latency_ns, k).percentile(99) \
                if calls and th.HasField("latency_ns") else None
            ts.p99_ms.append(math.nan if p99 is None else p99 / 1e6)
            ts.calls += calls
    return s


@dataclass
class PhaseEntry:
    """A phase with its number (its place in run.phases(), from 1: the same in every figure
    of the run), the numbers of the phases it contains, its row in the phase strip and, for
    a leaf, its place among the leaves (its colour)."""
    number: int
    phase: Phase
    start_s: float
    end_s: float
    children: list[int] = field(default_factory=list)
    lane: int = 0
    leaf_index: int = -1

    @property
    def leaf(self) -> bool:
        return not self.children


def _inside(q: Phase, p: Phase) -> bool:
    mid = (q.start_real_ns + q.end_real_ns) / 2
    return p.start_real_ns <= mid <= p.end_real_ns


def phase_entries(phases: list[Phase], t0_ns: int) -> list[PhaseEntry]:
    """Numbered phases; a parent (a phase that holds others, such as a whole fio command
    around its jobs) gets strip rows above its children and is not a leaf. Phases that
    overlap without one holding the other get rows of their own."""
    es = [PhaseEntry(n + 1, p, (p.start_real_ns - t0_ns) / 1e9, (p.end_real_ns - t0_ns) / 1e9)
          for n, p in enumerate(phases)]
    for q in es:
        for p in es:
            if p is not q and q.phase.parent == p.phase.name and \
                    q.phase.depth == p.phase.depth + 1 and _inside(q.phase, p.phase):
                p.children.append(q.number)
                break
    leaves = [e for e in es if e.leaf]
    for i, e in enumerate(leaves):
        e.leaf_index = i
    lanes = 0
    for group in (sorted((e for e in es if not e.leaf), key=lambda e: (e.phase.depth, e.start_s)),
                  leaves):
        ends: list[float] = []
        for e in group:
            for j, last in enumerate(ends):
                if e.start_s >= last:
                    e.lane, ends[j] = lanes + j, e.end_s
                    break
            else:
                e.lane = lanes + len(ends)
                ends.append(e.end_s)
        lanes += len(ends)
    return es


def whole_run(s: Series) -> list[PhaseEntry]:
    """For a run without phases: one phase from its first interval to its last, so the
    per-phase figures still show the run."""
    p = Phase("whole run", source="plot", exact=False, start_real_ns=s.t0_ns,
              end_real_ns=s.t0_ns + round(s.end_s * 1e9))
    return phase_entries([p], s.t0_ns)


def lane_count(entries: list[PhaseEntry]) -> int:
    return max((e.lane for e in entries), default=-1) + 1


@dataclass
class PhaseHists:
    """One leaf phase on one device: the merged total latency (reads and writes) and seek
    distance histograms."""
    entry: PhaseEntry
    total: Optional[Histogram]
    seek: Optional[Histogram]


def phase_hists(run: Run, entries: list[PhaseEntry]
                ) -> dict[tuple[int, str], list[PhaseHists]]:
    """(host, device) -> its leaf phases with IO there, in phase order. Parents are left out:
    their histograms are their children's added up."""
    aggs = aggregate(run, [e.phase for e in entries])
    out: dict[tuple[int, str], list[PhaseHists]] = {}
    for (n, host), pa in sorted(aggs.items()):
        e = entries[n]
        if not e.leaf:
            continue
        for name in sorted(pa.devices):
            a = pa.devices[name]
            total, seek = a.hist("total"), a.hist("seek")
            if total is not None or seek is not None:
                out.setdefault((host, name), []).append(PhaseHists(e, total, seek))
    return out


def tail(h: Histogram, per_nine: int = 50) -> list[tuple[float, float]]:
    """(nines, ns) from p50 to p99.99, per_nine points per nine and one on each whole nine:
    nines = -log10(1 - q), so p90 is 1, p99 2, p99.9 3. A curve ends where the phase has too
    few IOs to tell the percentiles apart (10^n IOs for n nines)."""
    n = h.count
    if not n:
        return []
    buckets = list(h.buckets())
    top = min(NINES_MAX, math.log10(n)) if n > 1 else NINES_MIN
    xs = [NINES_MIN] + [j / per_nine for j in range(math.ceil(NINES_MIN * per_nine + 1e-9),
                                                     int(top * per_nine + 1e-9) + 1)]
    if top > xs[-1] + 1e-9:
        xs.append(top)
    out, seen, j = [], 0, 0
    for x in xs:
        r = rank(100.0 * (1.0 - 10.0 ** -x), n)
        while seen + buckets[j][1] < r:
            seen += buckets[j][1]
            j += 1
        out.append((x, float(bucket_mid(buckets[j][0], h.precision))))
    return out


def seek_edges() -> list[float]:
    """Edges of the seek distance columns after the first (distance 0): 1 .. 10^12
    sectors, SEEK_PER_DECADE per decade."""
    return [10 ** (j / SEEK_PER_DECADE) for j in range(SEEK_DECADES * SEEK_PER_DECADE + 1)]


def seek_shares(h: Histogram) -> list[float]:
    """Percent of the dispatches per column: distance 0 first, then seek_edges()."""
    n = h.count
    cols = [0.0] * (1 + SEEK_DECADES * SEEK_PER_DECADE)
    if not n:
        return cols
    for i, c in h.buckets():
        v = bucket_mid(i, h.precision)
        if v <= 0:
            j = 0
        else:
            j = 1 + min(SEEK_DECADES * SEEK_PER_DECADE - 1,
                        max(0, math.floor(math.log10(v) * SEEK_PER_DECADE)))
        cols[j] += 100.0 * c / n
    return cols


def host_device_name(run: Run, host: int, device: str) -> str:
    return device if len(run.hosts) == 1 else f"{run.hosts[host].name}:{device}"


__all__ = ["series", "phase_entries", "phase_hists", "tail", "seek_shares", "Series",
           "DeviceSeries", "ThreadSeries", "PhaseEntry", "PhaseHists"]
