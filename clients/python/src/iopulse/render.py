"""Tables for `iopulse top` and `iopulse snapshot`: per-device rows, busiest sync threads, units."""
from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .histogram import Histogram
from .model import DeviceStats, PhaseMark, ThreadSync, Update

SORT_KEYS = ("iops", "mbps", "qwait", "svc", "name")
DATA_OPS = ("read", "write", "discard")   # counted in IOPS and MB/s
LATENCY_OPS = ("read", "write")           # merged for the latency columns


def fmt_ns(v: Optional[float]) -> str:
    """A duration in ns with a unit: 850ns, 12.3us, 456us, 7.8ms, 1.25s; '-' for None."""
    if v is None:
        return "-"
    if v < 1e3:
        return f"{v:.0f}ns"
    if v < 1e6:
        return f"{v / 1e3:.1f}us" if v < 1e4 else f"{v / 1e3:.0f}us"
    if v < 1e9:
        return f"{v / 1e6:.1f}ms" if v < 1e8 else f"{v / 1e6:.0f}ms"
    return f"{v / 1e9:.2f}s"


def fmt_num(v: Optional[float], digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _merged(d: DeviceStats, ops: Sequence[str], hist: str, k: int) -> Histogram:
    h = Histogram(k)
    for op in ops:
        h.merge(getattr(d.ops[op], hist))
    return h


@dataclass
class DeviceRow:
    """One line of the device table; rates per second of the Update's window."""
    name: str
    iops: Optional[float]
    mbps: Optional[float]
    qwait_p50: Optional[int]
    qwait_p99: Optional[int]
    svc_p50: Optional[int]
    svc_p99: Optional[int]
    seq_pct: Optional[float]
    flushes: Optional[float]
    flush_p99: Optional[int]

    @classmethod
    def of(cls, u: Update, d: DeviceStats) -> "DeviceRow":
        q = _merged(d, LATENCY_OPS, "queue_wait_ns", u.precision)
        s = _merged(d, LATENCY_OPS, "service_ns", u.precision)
        label = d.name
        if d.osd_id is not None:
            label += f" (osd.{d.osd_id}{' ' + d.osd_role if d.osd_role else ''})"
        mbytes = sum(d.ops[op].bytes for op in DATA_OPS) / 1e6
        return cls(label, u.rate(sum(d.ops[op].ios for op in DATA_OPS)), u.rate(mbytes),
                   q.percentile(50) if q.count else None, q.percentile(99) if q.count else None,
                   s.percentile(50) if s.count else None, s.percentile(99) if s.count else None,
                   d.sequential_pct, u.rate(d.ops["flush"].ios),
                   d.preflush_latency_ns.percentile(99) if d.preflush_latency_ns.count else None)


def device_rows(u: Update, globs: Sequence[str] = (), sort: str = "iops") -> list[DeviceRow]:
    """Rows of the devices whose name matches one of globs (all if none), sorted by sort:
    iops, mbps (highest first), qwait, svc (highest p99 first) or name."""
    rows = [DeviceRow.of(u, d) for name, d in u.devices.items()
            if not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)]
    keys = {"iops": lambda r: (-(r.iops or 0), r.name), "mbps": lambda r: (-(r.mbps or 0), r.name),
            "qwait": lambda r: (-(r.qwait_p99 or 0), r.name),
            "svc": lambda r: (-(r.svc_p99 or 0), r.name), "name": lambda r: (r.name,)}
    return sorted(rows, key=keys[sort])


def busiest_threads(u: Update, n: int) -> list[ThreadSync]:
    """The n threads with the most sync calls in the window (none without calls)."""
    ts = [t for t in u.threads if t.calls]
    return sorted(ts, key=lambda t: (-t.calls, t.pid, t.tid))[:n]


def title(u: Update, what: str) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(u.end_realtime_s)) if u.end_realtime_ns \
        else "-"
    extra = f", {u.merged} intervals merged" if u.merged > 1 else ""
    return f"{what}  seq {u.seq}  {when}  window {u.duration_s:.2f}s{extra}"


def open_phases_line(u: Update, open_now: Sequence[PhaseMark]) -> str:
    """'phase now: run > randwrite [bs=4k] for 12.3 s' (innermost last); '' for none."""
    if not open_now:
        return ""
    parts = []
    for m in open_now:
        lab = " ".join(f"{k}={v}" for k, v in sorted(m.labels.items()) if k != "command")
        parts.append(m.name + (f" [{lab}]" if lab else ""))
    since = (u.end_realtime_ns - open_now[-1].realtime_ns) / 1e9 if u.end_realtime_ns else 0
    return f"phase now: {' > '.join(parts)} for {max(0.0, since):.1f} s"


def render(u: Update, what: str, globs: Sequence[str] = (), sort: str = "iops",
           nthreads: int = 10, open_now: Sequence[PhaseMark] = ()) -> Any:
    """A rich renderable: the phase open now, the device table, the busiest sync threads,
    phase marks, drops."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    dev = Table(title=title(u, what), title_justify="left", expand=False)
    for col in ("device", "IOPS", "MB/s", "qwait p50", "qwait p99", "svc p50", "svc p99",
                "seq %", "flush/s", "flush p99"):
        dev.add_column(col, justify="left" if col == "device" else "right", no_wrap=True)
    for r in device_rows(u, globs, sort):
        dev.add_row(r.name, fmt_num(r.iops), fmt_num(r.mbps, 2), fmt_ns(r.qwait_p50),
                    fmt_ns(r.qwait_p99), fmt_ns(r.svc_p50), fmt_ns(r.svc_p99),
                    fmt_num(r.seq_pct), fmt_num(r.flushes, 1), fmt_ns(r.flush_p99))
    parts: list[Any] = [dev]
    line = open_phases_line(u, open_now)
    if line:
        parts.insert(0, Text(line, style="bold"))
    if nthreads > 0:
        thr = Table(title="busiest sync threads", title_justify="left", expand=False)
        for col in ("thread", "process", "pid/tid", "OSD", "device", "calls/s", "p99"):
            thr.add_column(col, justify="left" if col in ("thread", "process", "device")
                           else "right", no_wrap=True)
        for t in busiest_threads(u, nthreads):
            p99 = t.latency_ns.percentile(99) if t.latency_ns.count else None
            thr.add_row(t.comm, t.process, t.who,
                        "-" if t.osd_id is None else str(t.osd_id), t.where,
                        fmt_num(u.rate(t.calls), 1), fmt_ns(p99))
        parts.append(thr)
    if u.phases:
        parts.append(Text("phases: " + ", ".join(
            f"{'end' if m.end else 'begin'} {m.name}" for m in u.phases)))
    drops = {k: v for k, v in u.drops.to_dict().items() if v}
    if drops:
        parts.append(Text("drops: " + ", ".join(f"{k} {v}" for k, v in drops.items())))
    return Group(*parts)
