"""Two configurations compared so that a reviewer can check every verdict: per phase, device,
op and metric, each run's value, the change absolute and relative, the smallest change these
runs could tell from noise, and a verdict on the devices under test.

The rule (docs/benchmarking.md, "How a verdict is reached"):
- A run's value is the report's (analysis/metrics.py: the phase's counts over its seconds,
  percentiles of its merged buckets), never an average of interval values.
- With at least two runs on each side: Student's two-sample t-test (variances pooled,
  n_base + n_other - 2 degrees of freedom) on the logarithms of the per-run values, that is
  on their ratio (on the values themselves when one is 0: a device without IO in a run).
  The smallest detectable change is the one at which p would reach alpha: t(1 - alpha/2, df)
  standard errors of the difference, given as a percentage. A percentile comes from
  histogram buckets (up to 2^-precision of the value wide, 3.1% at precision 5), so its
  spread is taken as no less than that of values spread evenly over one bucket (sd =
  width / sqrt(12)): two runs that land in the same bucket do not make every change
  significant.
- A change is flagged when p < alpha (0.05), it is at least min_change (10%), it is on a
  device under test, and p is at most the Benjamini-Hochberg threshold over all the
  comparison's tests on the devices under test (false discoveries held to alpha; else
  'chance'). A part of the latency (queue wait, service) is judged by its change
  as a share of the total latency at the same percentile: 2 -> 13 us of queue wait inside a
  400 us total is 3% of it, however large its own ratio.
- With one run on a side the run-to-run spread is unknown: changes are shown, not judged.
- The devices under test of a phase: those that carried at least half the IOs of the busiest
  device in it (all runs of both sides together), of those the loop and dm/md devices if any
  (their IO reaches the disks under them again), and every device with IO in it whose
  settings differ between the sides; or the devices selected (devices=...).
  The others are shown after them and never flagged: their load is not the workload's alone.

A phase's sync threads are compared too (op 'sync', their name in the device column): each
name (and Ceph OSD) merged per run, matched across runs by it, calls/s and latency p50/p99
judged by the same rule, always under test.

Phases match by name and order of appearance (the n-th 'randwrite' with the n-th) and keep
the runs' order; a phase or device with data on one side only is listed as such. Labels that
differ between the sides are shown, not matched on (iodepth=1 against iodepth=16 is the point
of the comparison). Rows match by host and device; runs of a single host each match by device
alone, so that two machines can be compared; match='device' matches by device name (a
name's rows of every host merged exactly), match='osd' by Ceph OSD (its devices on every
host merged).
"""
from __future__ import annotations

import fnmatch
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..model import ALL, DATA_OPS, DEFAULT_PRECISION
from ..phases.model import Phase
from .aggregate import RunLike, ThreadAgg
from .labels import LOOP, OSD, STACKED
from .metrics import (MATCHES, OSD_DATA, Number, Row, ThreadRow, merged_rows, phase_rows,
                      thread_values)
from .settings import settings_changes
from .stats import mean, sd, student, t_quantile

ALPHA = 0.05
MIN_CHANGE = 10.0
OPS = DATA_OPS + (ALL,)          # ALL: the data ops together, as the report's row

# verdicts
BETTER, WORSE = "better", "worse"           # flagged
NOISE = "within noise"                      # p >= alpha: not told from the runs' spread
SMALL = "small"                             # p < alpha, but under min_change
CHANCE = "chance"                           # p < alpha, not past the false-discovery control
TOO_FEW = "too few"                         # fewer than two runs on a side: not judged
NOT_DUT = "not DUT"                         # not a device under test: shown, never judged
BASE_ONLY, OTHER_ONLY = "base only", "other only"
VERDICTS = {
    BETTER: "flagged: p < alpha and at least the minimum change, for the better",
    WORSE: "flagged: p < alpha and at least the minimum change, for the worse",
    NOISE: "p >= alpha: the change is inside what the runs' spread produces (below "
           "'detectable')",
    SMALL: "p < alpha, but below the minimum change (a latency part: of the total latency)",
    CHANCE: "p < alpha and at least the minimum change, but not below the comparison's "
            "false-discovery threshold (Benjamini-Hochberg over all its tests): as likely "
            "one of the tests that pass by chance",
    TOO_FEW: "fewer than two runs with a value on a side: the run-to-run spread is unknown, "
             "not judged",
    NOT_DUT: "not a device under test (a backing disk, another tenant's device): shown, "
             "never flagged",
    BASE_ONLY: "IO of this kind in the base runs only",
    OTHER_ONLY: "IO of this kind in the other runs only",
}


@dataclass(frozen=True)
class Metric:
    name: str               # compare's name: iops, mibps, total_p99, ...
    figure: str             # its key in analysis/metrics.op_figures (the unit in its name)
    header: str
    unit: str               # "IOPS", "MiB/s" or "ns"
    higher_better: bool
    part_of: str = ""       # a part of the latency is judged against this total
    context: bool = False   # shown for every device, not only the devices under test

    @property
    def percentile(self) -> bool:
        """Whether the figure is a percentile of merged buckets (known to one bucket)."""
        return self.unit == "ns" and "_mean" not in self.figure


# in the order a reviewer reads them: throughput, the total latency, then its parts
METRICS = (
    Metric("iops", "ios_per_s", "IOPS", "IOPS", True, context=True),
    Metric("mibps", "mib_per_s", "MiB/s", "MiB/s", True),
    Metric("total_p50", "total_p50_ns", "total p50", "ns", False),
    Metric("total_mean", "total_mean_ns", "total mean", "ns", False),
    Metric("total_p99", "total_p99_ns", "total p99", "ns", False, context=True),
    Metric("total_p999", "total_p999_ns", "total p99.9", "ns", False),
    Metric("qwait_p99", "qwait_p99_ns", "qwait p99", "ns", False, part_of="total_p99"),
    Metric("svc_p50", "svc_p50_ns", "svc p50", "ns", False, part_of="total_p50"),
    Metric("svc_p99", "svc_p99_ns", "svc p99", "ns", False, part_of="total_p99"),
)
# a sync thread's (its changes' op is SYNC, their device the thread's name): BlueStore's
# kv_sync fdatasync rate and latency are what a Ceph tuning turns on
SYNC = "sync"
SYNC_METRICS = (
    Metric("calls_per_s", "calls_per_s", "calls/s", "calls/s", True, context=True),
    Metric("p50", "latency_p50_ns", "sync p50", "ns", False),
    Metric("p99", "latency_p99_ns", "sync p99", "ns", False, context=True),
)
SYNC_CLASS = "sync thread"
BY_NAME = {m.name: m for m in METRICS + SYNC_METRICS}


def _pct(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or a == 0:
        return None
    return 100.0 * (b - a) / abs(a)


@dataclass
class Change:
    """One phase x host x device x op x metric: each run's value on both sides, and what
    compare() concluded. base and other are in run order; a run without the phase adds no
    value, a run with the phase but without IO on the device adds 0 to a rate and nothing to
    a latency."""
    phase: str
    occurrence: int
    host: str
    device: str
    op: str                         # read, write, discard, or all (the data ops together)
    stat: str                       # a METRICS name
    base: list[float]
    other: list[float]
    device_class: str = ""
    under_test: bool = False
    only: str = ""                  # "base" or "other": the op has IO on that side only
    base_total: list[float] = field(default_factory=list)    # a part: the total it is judged
    other_total: list[float] = field(default_factory=list)   # against, run by run
    scale: str = ""                 # what the test compared: "log" or "linear"
    p: Optional[float] = None
    detectable_pct: Optional[float] = None   # on the judged scale
    flagged: bool = False
    verdict: str = ""
    labels_changed: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def metric(self) -> str:
        """The stat, prefixed with the op unless it is all of them: iops, read_total_p99."""
        return self.stat if self.op == "all" else f"{self.op}_{self.stat}"

    @property
    def spec(self) -> Metric:
        return BY_NAME[self.stat]

    @property
    def basis(self) -> str:
        """"runs" when tested on the per-run values, else "none"."""
        return "runs" if self.scale else "none"

    @property
    def base_mean(self) -> Optional[float]:
        return mean(self.base) if self.base else None

    @property
    def other_mean(self) -> Optional[float]:
        return mean(self.other) if self.other else None

    @property
    def delta(self) -> Optional[float]:
        b, o = self.base_mean, self.other_mean
        return None if b is None or o is None else o - b

    @property
    def change_pct(self) -> Optional[float]:
        """The change of the mean in percent of the base's."""
        return _pct(self.base_mean, self.other_mean)

    @property
    def judged_on(self) -> str:
        """The metric a change is judged relative to: itself, or for a part of the latency
        the total at the same percentile."""
        return self.spec.part_of if self.spec.part_of and self.base_total else self.stat

    @property
    def judged_pct(self) -> Optional[float]:
        """The change in percent of what it is judged on (change_pct, or for a latency part
        the change in percent of the base's total latency)."""
        if self.judged_on == self.stat:
            return self.change_pct
        d, t = self.delta, mean(self.base_total)
        return None if d is None or not t else 100.0 * d / t

    @property
    def better(self) -> Optional[bool]:
        """Whether a flagged change is for the better (None when not flagged)."""
        d = self.delta
        if not self.flagged or d is None:
            return None
        return (d > 0) == self.spec.higher_better

    def to_dict(self) -> dict[str, Any]:
        def spread(xs: list[float]) -> dict[str, Any]:
            return {"sd": sd(xs) if xs else None, "min": min(xs) if xs else None,
                    "max": max(xs) if xs else None}
        b, o = spread(self.base), spread(self.other)
        return {"phase": self.phase, "occurrence": self.occurrence, "host": self.host,
                "device": self.device, "device_class": self.device_class,
                "under_test": self.under_test, "op": self.op, "stat": self.stat,
                "metric": self.metric, "figure": self.spec.figure, "unit": self.spec.unit,
                "basis": self.basis, "scale": self.scale, "only": self.only,
                "base": self.base, "other": self.other,
                "base_mean": self.base_mean, "other_mean": self.other_mean,
                "base_sd": b["sd"], "other_sd": o["sd"], "base_min": b["min"],
                "base_max": b["max"], "other_min": o["min"], "other_max": o["max"],
                "delta": self.delta, "change_pct": self.change_pct,
                "judged_on": self.judged_on, "judged_pct": self.judged_pct,
                "detectable_pct": self.detectable_pct, "p": self.p,
                "flagged": self.flagged, "better": self.better, "verdict": self.verdict,
                "labels_changed": {k: list(v) for k, v in self.labels_changed.items()}}


@dataclass
class PhaseComparison:
    """One phase as compare() matched it."""
    name: str
    occurrence: int
    depth: int
    only: str                       # "base" or "other": the phase is in those runs only
    base_runs: int                  # runs on each side that have the phase
    other_runs: int
    base_seconds: list[float]
    other_seconds: list[float]
    labels_changed: dict[str, tuple[str, str]]
    labels: dict[str, str]          # the base's (the other's for a phase only there)
    under_test: list[tuple[str, str]]   # (host, device), busiest first
    why: str                        # how the devices under test were chosen

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.name, "occurrence": self.occurrence, "depth": self.depth,
                "only": self.only, "base_runs": self.base_runs,
                "other_runs": self.other_runs, "base_seconds": self.base_seconds,
                "other_seconds": self.other_seconds, "labels": self.labels,
                "labels_changed": {k: list(v) for k, v in self.labels_changed.items()},
                "under_test": [{"host": h, "device": d} for h, d in self.under_test],
                "under_test_why": self.why}


@dataclass
class SettingChange:
    """A device setting (or the kernel) that differs between the sides' first runs."""
    host: str
    key: str                        # as settings_changes() names it: loop0.scheduler
    base: str
    other: str

    def __str__(self) -> str:
        return (f"{self.host + ': ' if self.host else ''}{self.key} {self.base or '(none)'}"
                f" -> {self.other or '(none)'}")


@dataclass
class Comparison:
    base: list[str]                 # the runs' paths
    other: list[str]
    alpha: float
    min_change: float
    phases: list[PhaseComparison]
    changes: list[Change]
    settings: list[SettingChange]
    notes: list[str]                # what the reader should know (settings not recorded...)
    selected: bool = False          # devices were selected: all of them are under test
    tests: int = 0                  # the changes tested on the devices under test (FDR family)
    fdr_p: Optional[float] = None   # a flag stands at p <= this (None: no test passes)

    @property
    def tested(self) -> bool:
        """Whether every side has two runs or more (so changes are judged at all)."""
        return len(self.base) >= 2 and len(self.other) >= 2

    @property
    def df(self) -> int:
        return len(self.base) + len(self.other) - 2

    def rule(self) -> str:
        """The rule in one paragraph, with the numbers of this comparison."""
        if not self.tested:
            return ("one run on a side: the run-to-run spread is unknown, so no change is "
                    "judged (the values and changes are shown); record each configuration "
                    "at least twice")
        crit = t_quantile(self.alpha, self.df)
        return (f"{len(self.base)} and {len(self.other)} runs: Student's t-test on the "
                f"logarithms of the per-run values ({self.df} degrees of freedom, p < "
                f"{self.alpha:g} at |t| > {crit:.2f}); a change on a device under test is "
                f"flagged when p < {self.alpha:g} and it is at least {self.min_change:g}% "
                f"(a queue-wait or service latency: {self.min_change:g}% of the total latency "
                f"at that percentile) and p is at most the Benjamini-Hochberg threshold of "
                f"this comparison's {self.tests} tests (false discoveries held to "
                f"{100 * self.alpha:g}%: "
                + ("none passes" if self.fdr_p is None else f"p <= {self.fdr_p:.3g}")
                + "); 'detectable' is the smallest change these runs could tell from noise")

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "other": self.other, "alpha": self.alpha,
                "min_change_pct": self.min_change, "tested": self.tested,
                "tests": self.tests, "fdr_p": self.fdr_p,
                "rule": self.rule(), "selected_devices": self.selected,
                "settings": [{"host": s.host, "key": s.key, "base": s.base, "other": s.other}
                             for s in self.settings],
                "notes": self.notes, "phases": [p.to_dict() for p in self.phases],
                "changes": [c.to_dict() for c in self.changes]}


class SameRun(ValueError):
    """One recording given twice (the same file, or a copy of it): counted as two runs, it
    would show its own values twice and make noise look like a change."""


def _identities(run: RunLike) -> list[tuple[Any, ...]]:
    """What tells one recording from another: the recording session its header names
    (unique per `iopulse record`, kept by a copy of the file), and the file itself."""
    out: list[tuple[Any, ...]] = []
    try:
        st = os.stat(run.path)
        out.append(("file", st.st_dev, st.st_ino))
    except OSError:
        out.append(("file", os.path.realpath(run.path)))
    session = run.header.get("session")
    if isinstance(session, str) and session:
        out.append(("session", session, run.header.get("created_realtime_ns")))
    return out


def check_distinct(base: Sequence[RunLike], other: Sequence[RunLike]) -> list[str]:
    """Raises SameRun naming the first recording given twice on one side, or on both sides of
    a comparison that judges changes (two runs or more a side). The same recording alone on
    each side judges nothing (its values are the report's): that is returned as a note."""
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    notes: list[str] = []
    judged = len(base) >= 2 and len(other) >= 2
    for side, runs in (("base", base), ("other", other)):
        for n, r in enumerate(runs, 1):
            where = f"{r.path} ({side} run {n})"
            ids = _identities(r)
            for ident in ids:
                if ident not in seen:
                    continue
                how = (f"the same recording (session {ident[1]})" if ident[0] == "session"
                       else "the same file")
                first, first_side = seen[ident]
                if first_side != side and not judged:
                    notes.append(f"{first} and {where} are {how}: every change is 0")
                    break
                raise SameRun(f"{first} and {where} are {how}: a run given twice would "
                              "count twice and make its own noise look like a change; give "
                              "each run once")
            for ident in ids:
                seen.setdefault(ident, (where, side))
    return notes


PKey = tuple[str, int]              # phase name, occurrence
DKey = tuple[str, str]              # host ("" for runs of one host each), device


@dataclass
class _RunData:
    run: RunLike
    phases: dict[PKey, Phase]       # in the run's order
    rows: dict[tuple[PKey, DKey], Row]
    # a phase's sync threads of one name (and OSD) on a host, merged: thread_values()
    threads: dict[tuple[PKey, DKey], dict[str, Optional[Number]]] = field(default_factory=dict)
    # the row names of the devices each phase's workload drove (_named)
    named: dict[PKey, frozenset[str]] = field(default_factory=dict)


def _keyed_phases(run: RunLike) -> list[tuple[PKey, Phase]]:
    seen: dict[str, int] = {}
    out = []
    for p in run.phases():
        n = seen.get(p.name, 0)
        seen[p.name] = n + 1
        out.append(((p.name, n), p))
    return out


def _osd_of(runs: Sequence[RunLike]) -> dict[str, str]:
    """Device name -> the Ceph OSD it belongs to (osd.N), from the runs' agents' Info."""
    osd: dict[str, str] = {}
    for run in runs:
        for h in run.hosts:
            for d in (h.info.devices if h.info is not None else []):
                if d.osd_id is not None:
                    osd.setdefault(d.name, f"osd.{d.osd_id}")
    return osd


def _named(run: RunLike, keyed: list[tuple[PKey, Phase]], match: str
           ) -> dict[PKey, frozenset[str]]:
    """The devices each phase's workload drove, as its rows are named: a fio job's files'
    (Phase.devices), a phase without them (a stonewall group) its nested phases' (its jobs
    ran on all of them); matched by Ceph OSD, the OSDs (osd.N) those devices belong to."""
    osd = _osd_of([run])
    out: dict[PKey, frozenset[str]] = {}
    for n, (k, p) in enumerate(keyed):
        names = set(p.devices)
        if not names:
            for _, q in keyed[n + 1:]:
                if q.depth <= p.depth:
                    break
                names |= q.devices
        if match == "osd":
            names = {osd[x] for x in names if x in osd}
        out[k] = frozenset(names)
    return out


def _host_key(run: RunLike, host: str) -> str:
    return "" if len(run.hosts) == 1 else host


def thread_name(t: ThreadAgg) -> str:
    """What sync threads match by across runs: the name, and the OSD (tids differ per run)."""
    return t.comm + (f" osd.{t.osd_id}" if t.osd_id is not None else "")


def _threads(run: RunLike, trows: list[ThreadRow], pos: dict[int, PKey],
             keep: Callable[[str], bool], by_host: bool = True
             ) -> dict[tuple[PKey, DKey], dict[str, Optional[Number]]]:
    """The sync threads of each phase merged by name (fio's 32 jobs' threads are one
    'fio'): calls add, latency buckets merge; a thread syncing a device left out is left
    out."""
    merged: dict[tuple[PKey, DKey], tuple[ThreadAgg, float]] = {}
    for tr in trows:
        t = tr.thread
        if t.device and not keep(t.device):
            continue
        key = (pos[id(tr.phase)], (_host_key(run, tr.host) if by_host else "", thread_name(t)))
        if key not in merged:
            merged[key] = (ThreadAgg(t.comm, t.process, 0, 0, t.osd_id, t.device), tr.seconds)
        merged[key][0].merge(t)
    return {k: thread_values(m, s) for k, (m, s) in merged.items()}


def _read(run: RunLike, keep: Callable[[str], bool], every_device: bool,
          match: str = "host") -> _RunData:
    """match: host (rows by host and device; a run of one host by device alone), device (by
    device name, a name's rows of every host merged) or osd (by Ceph OSD, its devices on
    every host merged; sync threads by name and OSD whatever the host)."""
    keyed = _keyed_phases(run)
    pos = {id(p): k for k, p in keyed}
    phases = [p for _, p in keyed]
    rows, trows = phase_rows(run, phases, every_device=every_device)
    if match != "host":
        rows = merged_rows(run, phases, match, every_device)
    return _RunData(run, dict(keyed),
                    {(pos[id(r.phase)], (_host_key(run, r.host) if match == "host" else "",
                                         r.device)): r
                     for r in rows if keep(r.device)},
                    _threads(run, trows, pos, keep, match == "host"), _named(run, keyed, match))


def _order(lists: list[list[PKey]]) -> list[PKey]:
    """The phases of several runs in one order: the first run's, with a phase another run
    has after its predecessor there."""
    out: list[PKey] = []
    for lst in lists:
        at = 0
        for k in lst:
            if k in out:
                at = out.index(k) + 1
            else:
                out.insert(at, k)
                at += 1
    return out


def _under_test(weights: dict[DKey, float], classes: dict[DKey, str],
                changed: frozenset[str] = frozenset(), named: frozenset[str] = frozenset()
                ) -> tuple[list[DKey], str]:
    """The devices a phase's workload ran on, busiest first: those with IO in it that its
    fio jobs' files are on (named: row names; of them the loop or dm/md ones, as the disks
    beneath carry their IO again), or where the phase names none, those with at least half
    the busiest device's IOs (the loop or dm/md ones among them); then those whose settings
    differ between the sides (changed); and why."""
    busy = {k: w for k, w in weights.items() if w > 0 and classes.get(k) != OSD}
    cluster: list[DKey] = []
    if not busy:
        # matched by Ceph OSD: its rows are the devices, every OSD's data devices together
        # under test as well
        busy = {k: w for k, w in weights.items() if w > 0 and k[1] != OSD_DATA}
        cluster = [k for k, w in weights.items() if w > 0 and k[1] == OSD_DATA]
    if not busy:
        return [], "no IO"
    own = {k for k in busy if k[1] in named}
    upper = {k for k in own if classes.get(k) in (LOOP, STACKED)}
    if own:
        # the workload's own: a disk that other tenants keep busier is not what it ran on
        pick = {k: busy[k] for k in (upper or own)}
        why = ("the loop or dm/md device(s) the jobs' files are on" if upper and upper != own
               else "the device(s) the jobs' files are on")
    else:
        top = max(busy.values())
        near = {k: w for k, w in busy.items() if 2 * w >= top}
        upper = {k for k in near if classes.get(k) in (LOOP, STACKED)}
        pick = {k: near[k] for k in (upper or near)}
        why = ("the loop or dm/md device(s) among those with at least half the busiest "
               "device's IOs" if upper and len(upper) < len(near) else
               "the device(s) with at least half the busiest device's IOs")
    tuned = {k: w for k, w in busy.items() if k[1] in changed and k not in pick}
    if tuned:
        why += ", and those whose settings differ between the sides"
    if cluster:
        why += ", and every OSD's data devices together"
    return sorted(pick, key=lambda k: (-pick[k], k)) + \
        sorted(tuned, key=lambda k: (-tuned[k], k)) + cluster, why


def _values(runs: list[_RunData], pk: PKey, dk: DKey, op: str, m: Metric) -> list[float]:
    out = []
    for d in runs:
        r = d.rows.get((pk, dk))
        if r is None:
            if m.unit != "ns":
                out.append(0.0)         # the phase ran, the device had no IO in it
            continue
        v = r.ops[op][m.figure]
        if v is not None:
            out.append(float(v))
    return out


def _thread_values(runs: list[_RunData], pk: PKey, tk: DKey, m: Metric) -> list[float]:
    out = []
    for d in runs:
        v = d.threads.get((pk, tk))
        if v is None:
            if m.unit != "ns":
                out.append(0.0)         # the phase ran, the thread made no sync call in it
            continue
        x = v.get(m.figure)
        if x is not None:
            out.append(float(x))
    return out


def _sync_changes(bruns: list[_RunData], oruns: list[_RunData], pk: PKey,
                  diff: dict[str, tuple[str, str]]) -> list[Change]:
    """A phase's sync threads, matched by name and OSD: calls/s and latency p50/p99, each
    judged (a thread with calls is the workload's: under test)."""
    out = []
    keys = sorted({tk for d in bruns + oruns for (k, tk) in d.threads if k == pk})
    for tk in keys:
        inb, ino = (any((pk, tk) in d.threads for d in side) for side in (bruns, oruns))
        only = "" if inb and ino else ("base" if inb else "other")
        for m in SYNC_METRICS:
            b = _thread_values(bruns, pk, tk, m) if inb else []
            o = _thread_values(oruns, pk, tk, m) if ino else []
            if b or o:
                out.append(Change(pk[0], pk[1], tk[0], tk[1], SYNC, m.name, b, o, SYNC_CLASS,
                                  True, only, labels_changed=diff))
    return out


def _judge(c: Change, alpha: float, min_change: float, precision: int) -> None:
    """p, detectable_pct, flagged and verdict of a change (see the module's rule)."""
    if c.only:
        c.verdict = BASE_ONLY if c.only == "base" else OTHER_ONLY
        return
    if len(c.base) < 2 or len(c.other) < 2:
        c.verdict = TOO_FEW
        return
    log = all(x > 0 for x in c.base + c.other)
    xb, xo = ([math.log(x) for x in c.base], [math.log(x) for x in c.other]) if log else \
        (c.base, c.other)
    floor = 0.0
    if c.spec.percentile:
        # a percentile is known to one bucket: never less spread than values spread evenly
        # over one (up to 2^-precision of the value wide)
        w = math.log1p(2.0 ** -precision)
        floor = w * w / 12 if log else (w * mean(c.base + c.other)) ** 2 / 12
    res = student(xb, xo, floor)
    assert res is not None
    _, df, c.p, se = res
    c.scale = "log" if log else "linear"
    least = t_quantile(alpha, df) * se         # the smallest significant difference
    bm = c.base_mean or 0.0
    absolute = bm * math.expm1(least) if log else least    # in the metric's unit
    scale = mean(c.base_total) if c.judged_on != c.stat else bm
    if scale:
        c.detectable_pct = 100.0 * absolute / abs(scale)
    judged = c.judged_pct
    if not c.under_test:
        c.verdict = NOT_DUT
    elif c.p >= alpha:
        c.verdict = NOISE
    elif judged is None or abs(judged) < min_change:
        c.verdict = SMALL
    else:
        c.flagged = True
        c.verdict = BETTER if c.better else WORSE


def _control_false_discoveries(changes: list[Change], alpha: float
                               ) -> tuple[int, Optional[float]]:
    """Benjamini-Hochberg at alpha over every change tested on a device under test, each
    test once (the op 'all' rows repeat their ops, and a fio job alone on its device repeats
    its group's rows: the same values are one test): the threshold is the largest p_(k) with
    p_(k) <= k/m alpha; a flag with a larger p becomes CHANCE. Returns (m, the threshold,
    None when no test passes)."""
    tests = {(c.host, c.device, c.op, c.stat, tuple(c.base), tuple(c.other)): c.p
             for c in changes if c.under_test and c.p is not None and c.op != ALL}
    fam = sorted(p for p in tests.values() if p is not None)
    m = len(fam)
    cut = None
    for k, p in enumerate(fam, 1):
        if p <= k / m * alpha:
            cut = p
    for c in changes:
        if c.flagged and c.p is not None and (cut is None or c.p > cut):
            c.flagged = False
            c.verdict = CHANCE
    return m, cut


def _matcher(devices: Optional[Sequence[str]], exclude: Optional[Sequence[str]]
             ) -> Callable[[str], bool]:
    def keep(name: str) -> bool:
        if devices and not any(fnmatch.fnmatchcase(name, g) for g in devices):
            return False
        return not (exclude and any(fnmatch.fnmatchcase(name, g) for g in exclude))
    return keep


def _host_pairs(a: RunLike, b: RunLike) -> list[tuple[str, Any, Any]]:
    """(host label, settings in a, settings in b) for the hosts of two runs, matched as the
    rows are: the single host of each, or by name."""
    if len(a.hosts) == 1 and len(b.hosts) == 1:
        return [("", a.hosts[0].settings, b.hosts[0].settings)]
    sa, sb = a.settings, b.settings
    names = [h.name for h in a.hosts] + [h.name for h in b.hosts if h.name not in
                                         {x.name for x in a.hosts}]
    return [(n, sa.get(n), sb.get(n)) for n in names]


def _settings(base: list[RunLike], other: list[RunLike], devices: list[str]
              ) -> tuple[list[SettingChange], list[str]]:
    out: list[SettingChange] = []
    notes: list[str] = []
    missing: dict[str, list[str]] = {}
    absent: dict[str, list[str]] = {}
    for host, a, b in _host_pairs(base[0], other[0]):
        if a is None or b is None:
            for side, s, run in (("base", a, base[0]), ("other", b, other[0])):
                if s is None and host and host not in {h.name for h in run.hosts}:
                    absent.setdefault(side, []).append(host)
                elif s is None:
                    missing.setdefault(side, []).append(host or "its host")
            continue
        out += [SettingChange(host, k, x, y) for k, x, y in settings_changes(a, b, devices)]
    for side, hosts in missing.items():
        notes.append(f"device settings were not recorded in the first {side} run for "
                     f"{', '.join(hosts)} (a daemon that does not report them)")
    for side, hosts in absent.items():
        notes.append(f"not in the {side} runs: host {', '.join(hosts)}, whose settings are "
                     "compared with nothing (rows of different hosts match with --match "
                     "device or --match osd)")
    for side, runs in (("base", base), ("other", other)):
        for r in runs[1:]:
            diff = [str(SettingChange(host, k, x, y)) for host, a, b in
                    _host_pairs(runs[0], r) if a is not None and b is not None
                    for k, x, y in settings_changes(a, b, devices)]
            if diff:
                notes.append(f"the {side} runs differ among themselves: {runs[0].path} -> "
                             f"{r.path}: {'; '.join(diff)}")
    return out, notes


def comparison(base: list[RunLike], other: list[RunLike], *, min_change: float = MIN_CHANGE,
               alpha: float = ALPHA, devices: Optional[Sequence[str]] = None,
               exclude: Optional[Sequence[str]] = None, match: str = "host") -> Comparison:
    """Every metric of every phase x host x device x op of two sets of runs, judged by the
    module's rule. devices and exclude are shell patterns of device names (sdb, 'loop*'):
    with devices, only those are compared and all of them are under test. A recording
    given twice (the same file or a copy) raises SameRun (see check_distinct)."""
    if not base or not other:
        raise ValueError("compare: both sides need at least one run")
    if match not in MATCHES:
        raise ValueError(f"compare: match {match!r}, not one of {', '.join(MATCHES)}")
    same = check_distinct(base, other)
    keep = _matcher(devices, exclude)
    # a fio job's phase: its own devices' rows, or those asked for wherever they had IO
    bd = [_read(r, keep, bool(devices), match) for r in base]
    od = [_read(r, keep, bool(devices), match) for r in other]
    order = _order([list(d.phases) for d in bd + od])
    precision = min((h.info.histogram.precision for r in base + other for h in r.hosts
                     if h.info is not None and h.info.histogram.precision),
                    default=DEFAULT_PRECISION)
    phases: list[PhaseComparison] = []
    changes: list[Change] = []
    seen_devices: set[str] = set()
    # a device whose settings differ between the sides is under test wherever it has IO
    # (four OSD disks retuned, one of them four times as busy: all four are the test)
    names = sorted({dk[1] for d in bd + od for (_, dk) in d.rows})
    osd = _osd_of(base + other) if match == "osd" else {}
    changed = frozenset(x.key.split(".", 1)[0] for x in
                        _settings(base, other, sorted(osd) if osd else names)[0]
                        if x.key != "kernel")
    if osd:
        changed = frozenset(osd[x] for x in changed if x in osd)
    for pk in order:
        bruns = [d for d in bd if pk in d.phases]
        oruns = [d for d in od if pk in d.phases]
        ph = (bruns or oruns)[0].phases[pk]
        lb = dict(bruns[0].phases[pk].labels) if bruns else {}
        lo = dict(oruns[0].phases[pk].labels) if oruns else {}
        diff = {k: (lb.get(k, ""), lo.get(k, "")) for k in sorted(set(lb) | set(lo))
                if bruns and oruns and lb.get(k) != lo.get(k) and k != "command"}
        runs = bruns + oruns
        weights: dict[DKey, float] = {}
        classes: dict[DKey, str] = {}
        for d in runs:
            for (k, dk), r in d.rows.items():
                if k == pk:
                    weights[dk] = weights.get(dk, 0.0) + float(r.ops["all"]["ios"] or 0)
                    classes.setdefault(dk, r.device_class)
        if devices:
            dut = sorted((k for k, w in weights.items() if w > 0),
                         key=lambda k: (-weights[k], k))
            why = "the devices selected"
        else:
            named = frozenset().union(*(d.named.get(pk, frozenset()) for d in runs))
            dut, why = _under_test(weights, classes, changed, named)
        rest = sorted((k for k in weights if k not in dut), key=lambda k: (-weights[k], k))
        phases.append(PhaseComparison(
            pk[0], pk[1], ph.depth, "" if bruns and oruns else ("base" if bruns else "other"),
            len(bruns), len(oruns), [d.phases[pk].duration_s for d in bruns],
            [d.phases[pk].duration_s for d in oruns], diff, lb or lo, dut, why))
        for dk in dut + rest:
            seen_devices.add(dk[1])
            for op in OPS:
                inb, ino = (any(d.rows[(pk, dk)].ops[op]["ios"] for d in side
                                if (pk, dk) in d.rows) for side in (bruns, oruns))
                if not inb and not ino:
                    continue
                only = "" if inb and ino else ("base" if inb else "other")
                for m in METRICS:
                    b = _values(bruns, pk, dk, op, m) if inb else []
                    o = _values(oruns, pk, dk, op, m) if ino else []
                    if not b and not o:
                        continue
                    c = Change(pk[0], pk[1], dk[0], dk[1], op, m.name, b, o,
                               classes.get(dk, ""), dk in dut, only, labels_changed=diff)
                    if m.part_of:
                        total = BY_NAME[m.part_of]
                        c.base_total = _values(bruns, pk, dk, op, total) if inb else []
                        c.other_total = _values(oruns, pk, dk, op, total) if ino else []
                    _judge(c, alpha, min_change, precision)
                    changes.append(c)
        for c in _sync_changes(bruns, oruns, pk, diff):
            _judge(c, alpha, min_change, precision)
            changes.append(c)
    settings, notes = _settings(base, other, sorted(osd) if osd else sorted(seen_devices))
    tests, fdr_p = _control_false_discoveries(changes, alpha)
    return Comparison([r.path for r in base], [r.path for r in other], alpha, min_change,
                      phases, changes, settings, same + notes, bool(devices), tests, fdr_p)


def compare(base: list[RunLike], other: list[RunLike], *, min_change: float = MIN_CHANGE,
            alpha: float = ALPHA, devices: Optional[Sequence[str]] = None,
            exclude: Optional[Sequence[str]] = None, match: str = "host") -> list[Change]:
    """The changes of comparison(): in the runs' phase order, the devices under test first."""
    return comparison(base, other, min_change=min_change, alpha=alpha, devices=devices,
                      exclude=exclude, match=match).changes
