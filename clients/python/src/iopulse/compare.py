"""Two configurations compared honestly: per phase, device and metric, the change in percent
and whether it stands out from the spread between repeated runs.

The rule (README, "Comparing runs"): with at least two runs on each side, Welch's t-test on
the per-run values; a change is flagged when p < alpha (0.05) and it is at least min_change
(10%). With a single run on a side there is no run-to-run spread to measure and nothing is
flagged: the change is shown, with the within-run spread of the phase's intervals (p from
Welch's test on per-interval values) for orientation only. Either way a run's value is the
report's (report/metrics.py: the phase's counts over its seconds, percentiles of its merged
buckets), never an average of interval values. Measured on this machine, two
single repeats of one fio job differed by 26% in IOPS at an interval p of 0.002: intervals
of one run say nothing about the next run.

Phases match by name and order of appearance (the n-th 'randwrite' with the n-th); labels
that differ between the sides are shown, not matched on (iodepth=1 against iodepth=32 is the
point of the comparison). Rows match by host and device; runs of a single host each match by
device alone, so that two machines can be compared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .phases.model import Phase
from .record.reader import Run
from .report.aggregate import ALL, PhaseAgg
from .report.metrics import op_figures, phase_rows
from .stats import mean, welch

# (key, header, True when higher is better)
METRICS = [("iops", "IOPS", True), ("mbps", "MB/s", True), ("qwait_p99", "qwait p99", False),
           ("svc_p50", "svc p50", False), ("svc_p99", "svc p99", False),
           ("total_p99", "total p99", False)]
# each metric's figure in report/metrics.py
FIGURE = {"iops": "ios_per_s", "mbps": "mb_per_s", "qwait_p99": "qwait_p99_ns",
          "svc_p50": "svc_p50_ns", "svc_p99": "svc_p99_ns", "total_p99": "total_p99_ns"}
MIN_INTERVAL_IOS = 20


@dataclass
class Change:
    phase: str
    occurrence: int
    host: str
    device: str
    metric: str
    base: list[float]               # the value of each run, as its report gives it
    other: list[float]
    basis: str                      # "runs", or "intervals" (one run a side: never flagged)
    p: Optional[float] = None
    flagged: bool = False
    labels_changed: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def base_mean(self) -> Optional[float]:
        return mean(self.base) if self.base else None

    @property
    def other_mean(self) -> Optional[float]:
        return mean(self.other) if self.other else None

    @property
    def change_pct(self) -> Optional[float]:
        b, o = self.base_mean, self.other_mean
        if b is None or o is None or b == 0:
            return None
        return 100.0 * (o - b) / b

    @property
    def better(self) -> Optional[bool]:
        c = self.change_pct
        if c is None or not self.flagged:
            return None
        higher = dict((k, h) for k, _, h in METRICS)[self.metric]
        return (c > 0) == higher

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "occurrence": self.occurrence, "host": self.host,
                "device": self.device, "metric": self.metric, "basis": self.basis,
                "base": self.base, "other": self.other, "base_mean": self.base_mean,
                "other_mean": self.other_mean, "change_pct": self.change_pct, "p": self.p,
                "flagged": self.flagged, "better": self.better,
                "labels_changed": {k: list(v) for k, v in self.labels_changed.items()}}


Key = tuple[str, int, str, str]


def _keyed_phases(run: Run) -> list[tuple[tuple[str, int], Phase]]:
    seen: dict[str, int] = {}
    out = []
    for p in run.phases():
        n = seen.get(p.name, 0)
        seen[p.name] = n + 1
        out.append(((p.name, n), p))
    return out


def _host_key(run: Run, host: str) -> str:
    return "" if len(run.hosts) == 1 else host


def _per_run(run: Run) -> dict[Key, dict[str, Optional[float]]]:
    """Each metric of each phase x host x device as the run's report gives it."""
    phases = _keyed_phases(run)
    pos = {id(p): k for k, p in phases}
    rows, _ = phase_rows(run, [p for _, p in phases])
    return {(*pos[id(r.phase)], _host_key(run, r.host), r.device):
            {m: r.values[FIGURE[m]] for m, _, _ in METRICS} for r in rows}


def _per_interval(run: Run) -> dict[Key, dict[str, list[float]]]:
    phases = _keyed_phases(run)
    names = {h.index: _host_key(run, h.name) for h in run.hosts}
    out: dict[Key, dict[str, list[float]]] = {}
    for host, u in run.iter_updates():
        inside = [k for k, p in phases if p.contains(host, u)]
        if not inside:
            continue
        one = PhaseAgg()
        one.add(u)
        for dname, a in one.devices.items():
            v = op_figures(a.op(ALL), one.seconds)
            if (v["ios"] or 0) < MIN_INTERVAL_IOS:
                continue
            for k in inside:
                d = out.setdefault((*k, names[host], dname), {})
                for m, _, _ in METRICS:
                    x = v[FIGURE[m]]
                    if x is not None:
                        d.setdefault(m, []).append(float(x))
    return out


def _labels(runs: list[Run]) -> dict[tuple[str, int], dict[str, str]]:
    out: dict[tuple[str, int], dict[str, str]] = {}
    for r in runs:
        for k, p in _keyed_phases(r):
            out.setdefault(k, dict(p.labels))
    return out


def compare(base: list[Run], other: list[Run], *, min_change: float = 10.0,
            alpha: float = 0.05) -> list[Change]:
    """Every metric of every phase x host x device present on both sides: each run's value,
    and with one run on a side, p from the phases' intervals (shown, never flagged)."""
    by_runs = len(base) >= 2 and len(other) >= 2
    bv = [_per_run(r) for r in base]
    ov = [_per_run(r) for r in other]

    def side(vals: list[dict[Key, dict[str, Optional[float]]]], key: Key,
             m: str) -> list[float]:
        return [float(x) for v in vals if key in v for x in (v[key][m],) if x is not None]
    keys = sorted(set().union(*bv) & set().union(*ov))
    bget = lambda k, m: side(bv, k, m)  # noqa: E731
    oget = lambda k, m: side(ov, k, m)  # noqa: E731
    if by_runs:
        bp, op_ = bget, oget
        a, need = alpha, min_change
    else:
        bi = _merge_intervals([_per_interval(r) for r in base])
        oi = _merge_intervals([_per_interval(r) for r in other])
        bp = lambda k, m: bi.get(k, {}).get(m, [])  # noqa: E731
        op_ = lambda k, m: oi.get(k, {}).get(m, [])  # noqa: E731
        a, need = -1.0, min_change     # p is shown, never flagged
    bl, ol = _labels(base), _labels(other)
    out: list[Change] = []
    for key in keys:
        lb, lo = bl.get(key[:2], {}), ol.get(key[:2], {})
        diff = {k: (lb.get(k, ""), lo.get(k, "")) for k in set(lb) | set(lo)
                if lb.get(k) != lo.get(k) and k != "command"}
        for m, _, _ in METRICS:
            b, o = bget(key, m), oget(key, m)
            if not b or not o:
                continue
            c = Change(key[0], key[1], key[2], key[3], m, b, o,
                       "runs" if by_runs else "intervals", labels_changed=diff)
            w = welch(bp(key, m), op_(key, m))
            if w is not None:
                c.p = w[2]
                pct = c.change_pct
                c.flagged = c.p < a and pct is not None and abs(pct) >= need
            out.append(c)
    return out


def _merge_intervals(parts: list[dict[Key, dict[str, list[float]]]]
                     ) -> dict[Key, dict[str, list[float]]]:
    out: dict[Key, dict[str, list[float]]] = {}
    for p in parts:
        for k, d in p.items():
            t = out.setdefault(k, {})
            for m, xs in d.items():
                t.setdefault(m, []).extend(xs)
    return out
