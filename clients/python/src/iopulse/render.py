"""Tables for `iopulse top` and `iopulse snapshot`: per device a line per op (reads, writes
and, when a device did both, all of them), the busiest sync threads, merged rows.

The figures are the report's (iopulse.analysis.metrics) over the Update's window: the live
devices and threads are turned into the report's sums (analysis/live.py) first."""
from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from .analysis.aggregate import ROW_OPS, DeviceAgg
from .analysis.labels import DISK, LOOP, MEMBER, PARTITION, STACKED, device_class
from .analysis.live import device_agg, merged_figures, thread_agg
from .analysis.metrics import Number, device_figures, op_figures, thread_values
from .display import TOP_SPECS, TOP_THREAD_SPECS, columns, shown_ops
from .model import ALL, DeviceInfo, DeviceStats, PhaseMark, ThreadSync, Update
from .textfit import Col, Fit, Grid, plain

SORT_KEYS = ("iops", "mbps", "qwait", "svc", "name")
CLASSES = (DISK, PARTITION, LOOP, STACKED, MEMBER)
Figures = dict[str, Optional[Number]]


def live_class(d: DeviceStats, info: Optional[DeviceInfo]) -> str:
    """A live device's place in the block stack (analysis.labels.device_class), from its
    daemon's Info when it listed the device, else from the Update (holders: a member)."""
    if info is None and d.holders and not d.name.startswith(("dm-", "md")):
        return MEMBER
    return device_class(d.name, info) or DISK


@dataclass
class DeviceRow:
    """One device over an Update's window: op_figures() of each op, device_figures()."""
    name: str                       # as shown: 'sdb (osd.3 block)'
    device: str                     # the kernel's name
    dev: str                        # 'MAJOR:MINOR'
    device_class: str
    holders: list[str]
    agg: DeviceAgg
    seconds: float
    ops: dict[str, Figures] = field(default_factory=dict)
    device_only: Figures = field(default_factory=dict)
    precision: int = 0              # of the Update's histograms

    @classmethod
    def of(cls, u: Update, d: DeviceStats, info: Optional[DeviceInfo] = None) -> "DeviceRow":
        label = d.name
        if d.osd_id is not None:
            label += f" (osd.{d.osd_id}{' ' + d.osd_role if d.osd_role else ''})"
        a = device_agg(d)
        s = u.duration_s
        return cls(label, d.name, d.dev, live_class(d, info), list(d.holders), a, s,
                   {op: op_figures(a.op(op), s) for op in ROW_OPS}, device_figures(a, s),
                   u.precision)

    def figure(self, key: str) -> Optional[Number]:
        return self.ops[ALL].get(key)


def _sort_key(sort: str) -> Any:
    fig = {"iops": "ios_per_s", "mbps": "mb_per_s", "qwait": "qwait_p99_ns",
           "svc": "svc_p99_ns"}.get(sort)
    if fig is None:
        return lambda r: (r.name,)
    return lambda r: (-(r.figure(fig) or 0), r.name)


def device_rows(u: Update, globs: Sequence[str] = (), sort: str = "iops",
                infos: Optional[Mapping[str, DeviceInfo]] = None,
                classes: Sequence[str] = ()) -> list[DeviceRow]:
    """Rows of the devices whose name matches one of globs (all if none) and whose class is
    one of classes (all if none), sorted by sort: iops, mbps (highest first), qwait, svc
    (highest p99 first) or name. infos: the daemon's devices by name (for their class)."""
    rows = [DeviceRow.of(u, d, (infos or {}).get(name)) for name, d in u.devices.items()
            if not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)]
    if classes:
        rows = [r for r in rows if r.device_class in classes]
    return sorted(rows, key=_sort_key(sort))


@dataclass
class Merged:
    """The shown devices of one class merged: counts and buckets added (percentiles of all
    their IOs together), rates the sum of each device's rate."""
    device_class: str
    rows: list[tuple[str, DeviceRow]]       # (host, row) merged
    ops: dict[str, Figures]
    device_only: Figures

    @property
    def name(self) -> str:
        n = len(self.rows)
        what = {DISK: "disk", PARTITION: "partition", LOOP: "loop device",
                STACKED: "stacked device", MEMBER: "member disk"}.get(self.device_class,
                                                                       "device")
        return f"{n} {what}{'' if n == 1 else 's'}"


def merge_rows(rows: Sequence[tuple[str, str, DeviceRow]]) -> tuple[list[Merged], list[str]]:
    """(merged rows, notes) of the shown devices of every host, as (host name, host identity,
    row): one merged row per device class, so that no IO is counted twice (an LV and the
    disks under it, a loop device and the disk holding its file, a partition and its disk);
    within a class a device below another shown device of it (a dm device under another) is
    left out, and a device seen by two daemons of one host (the same host identity and
    MAJOR:MINOR) is counted once; devices whose daemons use different histogram precisions
    are not merged (their buckets differ). notes say what was left out."""
    notes: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    by_class: dict[str, list[tuple[str, str, DeviceRow]]] = {}
    for host, ident, r in rows:
        key = (ident, r.dev)
        if key in seen:
            notes.append(f"{r.device} of {host} is {seen[key]}'s {r.device}: counted once")
            continue
        seen[key] = host
        by_class.setdefault(r.device_class, []).append((host, ident, r))
    out = []
    for cls in sorted(by_class, key=lambda c: (CLASSES + (c,)).index(c)):
        members = by_class[cls]
        names = {(ident, r.device) for _, ident, r in members}
        keep = []
        for host, ident, r in members:
            over = [h for h in r.holders if (ident, h) in names]
            if over:
                notes.append(f"{r.device} of {host} is under {', '.join(over)}: left out")
            else:
                keep.append((host, r))
        if len({r.precision for _, r in keep}) > 1:
            notes.append(f"the {cls} devices are not merged: their daemons use different "
                         "histogram precisions")
        elif keep:
            ops, dev = merged_figures([(r.agg, r.seconds) for _, r in keep])
            out.append(Merged(cls, keep, ops, dev))
    return out, notes


def device_grid(title: str, entries: Sequence[tuple[list[str], Mapping[str, Figures],
                                                    Figures]], keys: list[Col]) -> Grid:
    """The device table: keys (host, device) on a device's first line, then an op column; a
    device's own figures (seq %, flushes/s, preflush p99: of all its IO, not of one op) on its
    `all` line where it has one, else on its one line, blank on the others."""
    lines: list[tuple[list[str], dict[str, Any], bool]] = []
    for key_cells, ops, dev in entries:
        shown = shown_ops(ops)
        own_at = shown.index("all") if "all" in shown else 0
        for n, op in enumerate(shown):
            lines.append(([c if n == 0 else "" for c in key_cells] + [op],
                          {**ops[op], **dev}, n == own_at))
    cols, cells = columns(TOP_SPECS, [v for _, v, _ in lines])
    own = {i for i, s in enumerate(TOP_SPECS) if s.group == "dev"}
    g = Grid(title, keys + [Col("op", left=True)], cols)
    for (k, _, first), row in zip(lines, cells):
        g.add(k + [c if first or i not in own else "" for i, c in enumerate(row)])
    return g


def thread_grid(title: str, entries: Sequence[tuple[list[str], ThreadSync, Figures]],
                keys: list[Col]) -> Grid:
    vals = [dict(v, process=t.process, osd="-" if t.osd_id is None else str(t.osd_id),
                 where=t.where) for _, t, v in entries]
    cols, cells = columns(TOP_THREAD_SPECS, vals)
    g = Grid(title, keys + [Col("thread", left=True), Col("pid/tid")], cols)
    for (k, t, _), row in zip(entries, cells):
        g.add(k + [t.comm, t.who] + row)
    return g


def busiest_threads(u: Update, n: int) -> list[ThreadSync]:
    """The n threads with the most sync calls in the window (none without calls)."""
    ts = [t for t in u.threads if t.calls]
    return sorted(ts, key=lambda t: (-t.calls, t.pid, t.tid))[:n]


def thread_figures(u: Update, t: ThreadSync) -> Figures:
    return thread_values(thread_agg(t), u.duration_s)


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


def merged_entries(merged: Sequence[Merged]) -> list[tuple[list[str], Mapping[str, Figures],
                                                          Figures]]:
    return [(["(merged)", m.name], m.ops, m.device_only) for m in merged]


def render(u: Update, what: str, globs: Sequence[str] = (), sort: str = "iops",
           nthreads: int = 10, open_now: Sequence[PhaseMark] = (),
           infos: Optional[Mapping[str, DeviceInfo]] = None, classes: Sequence[str] = (),
           merge: bool = False) -> Any:
    """A rich renderable laid out at the width it is printed at: the phase open now, the
    device table (and with merge a merged line per device class), the busiest sync threads,
    phase marks, drops."""
    from rich.text import Text

    rows = device_rows(u, globs, sort, infos, classes)
    entries = [([r.name], r.ops, r.device_only) for r in rows]
    keys = [Col("device", left=True)]
    notes: list[str] = []
    if merge:
        merged, notes = merge_rows([("", "", r) for r in rows])
        entries += [([f"(merged) {k[1]}"], o, d) for k, o, d in merged_entries(merged)]
    parts: list[Any] = []
    line = open_phases_line(u, open_now)
    if line:
        parts.append(Text(plain(line), style="bold"))
    parts.append(device_grid(title(u, what), entries, keys))
    parts += [Text(plain("merged: " + n)) for n in notes]
    if nthreads > 0:
        parts.append(thread_grid("busiest sync threads",
                                 [([], t, thread_figures(u, t))
                                  for t in busiest_threads(u, nthreads)], []))
    if u.phases:
        parts.append(Text(plain("phases: " + ", ".join(
            f"{'end' if m.end else 'begin'} {m.name}" for m in u.phases))))
    drops = {k: v for k, v in u.drops.to_dict().items() if v}
    if drops:
        parts.append(Text(plain("drops: " + ", ".join(f"{k} {v}" for k, v in drops.items()))))
    return Fit(*parts)
