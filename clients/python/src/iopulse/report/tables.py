"""The report as a terminal table (rich), Markdown, CSV or JSON.

Every format shows the same tables (grids()): the phases (numbered as in the plots, with their
labels), per phase x host x device a line for each op (read, write, discard, and all of them
when a device did more than one), per phase x host x device what belongs to the device
(seeks, flushes, preflush and FUA writes, requeues), each host's device settings when the
recording began, and the busiest sync threads. The figures are the metrics layer's; the
terminal table is folded to the terminal's width (iopulse.textfit)."""
from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from ..analysis.labels import OSD, LabelColumns
from ..analysis.metrics import Row, ThreadRow
from ..display import DEVICE_SPECS, FIO_SPECS, OP_SPECS, THREAD_SPECS, columns, fmt_ns, \
    shown_ops
from ..phases.model import Phase
from ..record.reader import Run
from ..textfit import Col, Fit, Grid
from .fio_side import FioSide, fio_sides

THREADS_PER_PHASE = 5

LEGEND = ("qwait: queue wait (the block layer took the IO -> dispatched to the driver); "
          "svc: service (dispatched -> completed); total: both. all: reads, writes and "
          "discards together. MB/s: 10^6 bytes/s, MiB/s: 2^20 (fio's unit). Rates are a "
          "phase's counts over its seconds, percentiles those of its IOs.")


def fmt(kind: str, v: Optional[float]) -> str:
    """A figure with its unit in the cell (what compare shows): kind ns, rate, rate1, rate2,
    pct, bytes or sectors."""
    if v is None:
        return "-"
    if kind == "ns":
        return fmt_ns(v)
    if kind == "rate":
        return f"{v:.0f}"
    if kind == "rate1":
        return f"{v:.1f}"
    if kind == "rate2":
        return f"{v:.2f}"
    if kind == "pct":
        return f"{v:.0f}"
    if kind == "bytes":
        return f"{v / 1024:.0f}k" if v >= 1024 else f"{v:.0f}"
    return f"{v:.0f}"


def plain(s: str) -> str:
    """A name as one line of text: control characters escaped (\\n, \\x1b)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)


def phase_note(p: Phase) -> str:
    notes = []
    if not p.exact:
        notes.append(f"imported, edges +-{p.accuracy_s:g} s")
        if p.trimmed_s:
            notes.append(f"trimmed {p.trimmed_s:g} s")
    if p.abandoned:
        notes.append("abandoned")
    if p.end_inferred:
        notes.append(f"no end mark: ended when {plain(p.end_inferred)}")
    return ", ".join(notes)


def no_figures(run: Run, p: Phase) -> str:
    """Why a phase of the report has no row: no interval of the daemons lies (mostly) inside
    it, or none of its devices did IO."""
    if any(p.updates(h.index, h.windows) for h in run.hosts):
        return "no IO on its devices (--idle lists them)"
    return (f"no figures: no interval of the daemon lies {'' if p.exact else 'mostly '}"
            f"inside its {p.duration_s:.3g} s")


def phase_title(r: Any) -> str:
    p = r.phase
    lab = p.label_text()
    note = phase_note(p)
    return ("  " * p.depth) + p.name + (f" [{lab}]" if lab else "") + \
        (f" ({note})" if note else "")


def run_summary(run: Run) -> list[str]:
    h = run.header
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(
        h.get("created_realtime_ns", 0) / 1e9)) if h else "?"
    alias = host_aliases(run) if len(run.hosts) > 1 else {}
    hosts = ", ".join(f"{alias[x.name] + ' ' if alias else ''}{x.name} (iopulsed "
                      f"{x.info.version if x.info else '?'}"
                      f"{', kernel ' + x.info.kernel if x.info and x.info.kernel else ''})"
                      for x in run.hosts)
    lines = [f"run {run.path}: started {when}, hosts {hosts}"]
    if h.get("command"):
        lines.append("command: " + " ".join(h["command"]))
    if run.end:
        lines.append(f"ended: {run.end.get('status')}, exit code {run.end.get('exit_code')}")
    if run.damage:
        lines.append(f"incomplete: {run.damage}; the report covers what was written")
    errors = [e for e in run.events if e.get("type") in ("host_error", "mark_error")]
    if errors:
        lines.append(f"{len(errors)} host or mark error(s) during the run, first: "
                     f"{errors[0].get('error')}")
    return lines


def recorded_devices(run: Run, rows: list[Row]) -> dict[str, set[str]]:
    """Per host (its name), the devices the run recorded: those its daemon watched (Info)
    and those with rows."""
    out: dict[str, set[str]] = {}
    for h in run.hosts:
        out[h.name] = {d.name for d in h.info.devices} if h.info is not None else set()
    for r in rows:
        out.setdefault(r.host, set()).add(r.device)
    return out


def _in_run(t: ThreadRow, recorded: dict[str, set[str]]) -> bool:
    """Whether a sync thread's calls went to a device the run recorded (or one of the disks
    beneath it; a thread of unknown device is given the benefit): a daemon's thread table
    is not scoped by --devices, so another tenant's syncs elsewhere show up."""
    have = recorded.get(t.host, set())
    th = t.thread
    return not th.device or th.device in have or any(d in have for d in th.disks)


def _threads_by_phase(trows: list[ThreadRow]) -> dict[int, list[ThreadRow]]:
    out: dict[int, list[ThreadRow]] = {}
    for t in trows:
        lst = out.setdefault(id(t.phase), [])
        if len(lst) < THREADS_PER_PHASE:
            lst.append(t)
    return out


@dataclass
class Grids:
    """The report's tables as grids of plain text. ops, devices and threads are each a tuple
    of the same table with different key columns, most telling first: the phase's number
    and name, its number only, and with several hosts the host's short name (h1, h2, as the
    summary lists them); a terminal takes the one that folds least (textfit.Fit)."""
    phases: Grid
    ops: tuple[Grid, ...]
    devices: tuple[Grid, ...]
    settings: tuple[Grid, ...]
    threads: tuple[Grid, ...]
    notes: list[str] = field(default_factory=list)
    fio: tuple[Grid, ...] = ()
    fio_notes: list[str] = field(default_factory=list)     # why fio and the device differ


def phase_numbers(run: Run) -> dict[tuple[Any, int], int]:
    """A phase's number: its place in run.phases() from 1, as in every plot of the run."""
    return {(p.key, p.start_real_ns): n for n, p in enumerate(run.phases(), 1)}


def host_aliases(run: Run) -> dict[str, str]:
    """Each host's short name in the tables of a report of several hosts: h1, h2, ..."""
    return {h.name: f"h{n}" for n, h in enumerate(run.hosts, 1)}


def _blank_repeats(keys: list[str], last: list[str]) -> list[str]:
    """Key cells with those equal to the line above left blank (up to the first that
    differs)."""
    out, same = [], bool(last)
    for i, k in enumerate(keys):
        same = same and i < len(last) and k == last[i]
        out.append("" if same else k)
    return out


def _device_name(r: Row) -> str:
    return plain(r.device + (f" ({r.osd})" if r.osd and r.osd != r.device else ""))


@dataclass
class _Line:
    phase: Phase
    host: str
    repeat: list[str]       # key cells left blank where the line above has them
    fixed: list[str]        # key cells always shown (op, thread, pid/tid)
    cells: list[str]


def _variants(title: str, keys: list[Col], lines: list[_Line], values: list[Col],
              num: dict[int, int], aliases: Optional[dict[str, str]],
              phases: bool = True) -> tuple[Grid, ...]:
    """The grid with each kind of phase and host key (see Grids)."""
    kinds = ["named", "number"] if phases else ["number"]
    if aliases is not None:
        kinds.append("alias")
    out = []
    for kind in kinds:
        pk = ([Col("phase" if kind == "named" else "#", left=kind == "named")]
              if phases else [])
        hk = [Col("host", left=True)] if aliases is not None else []
        g = Grid(title, pk + hk + keys, values)
        last: list[str] = []
        for n, x in enumerate(lines):
            host = [] if aliases is None else [aliases.get(x.host, x.host) if kind == "alias"
                                               else plain(x.host)]
            nb = str(num.get(id(x.phase), ""))
            key = ([nb] if phases else []) + host + x.repeat
            shown = _blank_repeats(key, last)
            last = key
            if phases and kind == "named" and shown[0]:
                shown[0] = f"{nb} {plain(x.phase.name)}"
            g.add(shown + x.fixed + x.cells)
            if phases and (n + 1 == len(lines) or lines[n + 1].phase is not x.phase):
                g.end_section()
        out.append(g)
    return tuple(out)


def _order(rows: list[Row], trows: list[ThreadRow], phases: Optional[list[Phase]]
           ) -> list[Phase]:
    """The phases of the rows, in the order of phases when given (then also those without a
    row: a report never leaves out a phase it was asked for)."""
    order: list[Phase] = []
    for x in list(rows) + list(trows):
        if all(x.phase is not p for p in order):
            order.append(x.phase)
    if phases is None:
        return order
    return [p for p in phases] + [p for p in order if all(p is not q for q in phases)]


def grids(run: Run, rows: list[Row], trows: list[ThreadRow],
          phases: Optional[list[Phase]] = None) -> Grids:
    """phases: the phases asked for (all those of the rows when None); one without a row is
    listed with why."""
    numbers = phase_numbers(run)
    order = _order(rows, trows, phases)
    have = {id(x.phase) for x in list(rows) + list(trows)}
    num = {id(p): numbers.get((p.key, p.start_real_ns), 0) for p in order}
    hosts = sorted({r.host for r in rows} | {t.host for t in trows})
    aliases = host_aliases(run) if len(hosts) > 1 else None
    where = "" if aliases else f" on {plain(hosts[0])}" if hosts else ""

    # the phases
    notes = [", ".join(x for x in (phase_note(p), "" if id(p) in have else
                                   no_figures(run, p)) if x) for p in order]
    pcols = [Col("phase", left=True, wrap=True), Col("s"),
             Col("labels", left=True, wrap=True)]
    if any(notes):
        pcols.append(Col("note", left=True, wrap=True))
    pg = Grid("phases", [Col("#")], pcols)
    for p, note in zip(order, notes):
        cells = [str(num[id(p)]), "  " * p.depth + plain(p.name), f"{p.duration_s:.1f}",
                 plain(p.label_text())]
        pg.add(cells + ([note] if any(notes) else []))

    # per phase x host x device x op
    pairs = [(r, op) for r in rows for op in shown_ops(r.ops)]
    ocols, ocells = columns(OP_SPECS, [r.ops[op] for r, op in pairs])
    og = _variants(f"per phase, device and op{where}",
                   [Col("device", left=True), Col("op", left=True)],
                   [_Line(r.phase, r.host, [_device_name(r)], [op], c)
                    for (r, op), c in zip(pairs, ocells)], ocols, num, aliases)

    # per phase x host x device: the device's own figures
    dvals = [dict(r.device_only, device_class=r.device_class,
                  flush_svc_p99_ns=r.ops["flush"]["svc_p99_ns"], errors=r.values["errors"])
             for r in rows]
    dcols, dcells = columns(DEVICE_SPECS, dvals)
    dg = _variants(f"per phase and device{where}", [Col("device", left=True)],
                   [_Line(r.phase, r.host, [_device_name(r)], [], c)
                    for r, c in zip(rows, dcells)], dcols, num, aliases)

    sg, snotes = settings_grids(run, rows, aliases, where)

    tg: tuple[Grid, ...] = ()
    if trows:
        tl = [t for lst in _threads_by_phase(trows).values() for t in lst]
        recorded = recorded_devices(run, rows)
        tvals = [dict(t.values, process=plain(t.thread.process),
                      osd="-" if t.thread.osd_id is None else str(t.thread.osd_id),
                      where=plain(t.thread.where) + (
                          "" if _in_run(t, recorded) else " (not in the run)"))
                 for t in tl]
        tcols, tcells = columns(THREAD_SPECS, tvals)
        tg = _variants(f"busiest sync threads per phase{where}",
                       [Col("thread", left=True), Col("pid/tid")],
                       [_Line(t.phase, t.host, [],
                              [plain(t.thread.comm), f"{t.thread.pid}/{t.thread.tid}"], c)
                        for t, c in zip(tl, tcells)], tcols, num, aliases)
    sides = sorted(fio_sides(run, rows), key=lambda x: num.get(id(x.phase), 0))
    fg = fio_grids(sides, num, aliases)
    fnotes = [f"{num.get(id(x.phase), '?')} {plain(x.job)}, {x.op} on {plain(x.device)}: "
              f"{n}" for x in sides for n in x.notes]
    return Grids(pg, og, dg, sg, tg, snotes, fg, fnotes)


FIO_NOTE = ("fio's IOs and the device's requests, fio's completion latency (clat: until fio "
            "reaped the IO) and the device's total latency (until the block layer completed "
            "it), in the phase of each fio job (the device fio's filename= names, else the "
            "busiest); why they differ:")


def fio_grids(sides: list[FioSide], num: dict[int, int], aliases: Optional[dict[str, str]]
              ) -> tuple[Grid, ...]:
    """fio's figures beside the block layer's, when the run kept fio's report."""
    if not sides:
        return ()
    vals = [{"fio_ios": s.fio_ios, "block_ios": s.block_ios, "fio_iops": s.fio_iops,
             "block_iops": s.block_iops,
             **{f"fio_{k}": v for k, v in s.fio_clat_ns.items()},
             **{f"block_{k}": v for k, v in s.block_total_ns.items()}} for s in sides]
    cols, cells = columns(FIO_SPECS, vals)
    return _variants("fio beside the block layer", [Col("device", left=True),
                                                    Col("op", left=True)],
                     [_Line(s.phase, s.host, [plain(s.device) + (" (busiest)" if
                                                               s.device_from == "busiest"
                                                               else "")], [s.op], c)
                      for s, c in zip(sides, cells)], cols, num, aliases)


# the device settings shown: (key, header, how), how "int", "text", "kib", "bool"
SETTINGS = [("model", "model", "text"), ("firmware", "firmware", "text"),
            ("rotational", "rotational", "bool"), ("scheduler", "scheduler", "text"),
            ("iosched", "scheduler tunables", "iosched"), ("nr_requests", "nr_requests", "int"),
            ("queue_depth", "queue_depth", "int"),
            ("read_ahead_kb", "read_ahead (KiB)", "int"),
            ("max_sectors_kb", "max_sectors (KiB)", "int"), ("nomerges", "nomerges", "int"),
            ("write_cache", "write cache", "text"), ("wbt_lat_usec", "wbt_lat (µs)", "int")]


def settings_grids(run: Run, rows: list[Row], aliases: Optional[dict[str, str]],
                   where: str) -> tuple[tuple[Grid, ...], list[str]]:
    """Each host's settings of the devices in the rows when the recording began (as
    _variants), and notes on hosts whose daemon did not report them."""
    settings = run.settings
    notes = []
    want: dict[str, list[str]] = {}
    for r in rows:
        if r.device_class != OSD and r.device not in want.setdefault(r.host, []):
            want[r.host].append(r.device)
    lines = []
    for host in sorted(want):
        hs = settings.get(host)
        if hs is None:
            notes.append(f"{plain(host)}: no device settings in the run (its daemon did not "
                         "report them)")
            continue
        for dev in sorted(want[host]):
            s = hs.devices.get(dev)
            if s is None:
                continue
            cells = []
            for key, _, how in SETTINGS:
                v = getattr(s, key)
                if how == "iosched":
                    cells.append(plain(" ".join(f"{k}={x}" for k, x in v.items())) or "-")
                elif v is None:
                    cells.append("-")
                elif how == "bool":
                    cells.append("yes" if v else "no")
                else:
                    cells.append(plain(str(v)))
            lines.append(_Line(rows[0].phase, host, [plain(dev)], [], cells))
    if not lines:
        return (), notes
    cols = [Col(h, left=how in ("text", "iosched"), wrap=how == "iosched")
            for _, h, how in SETTINGS]
    return _variants(f"device settings when the recording began{where}",
                     [Col("device", left=True)], lines, cols, {}, aliases, phases=False), notes


def rich_report(run: Run, rows: list[Row], trows: list[ThreadRow],
                phases: Optional[list[Phase]] = None) -> Any:
    """The report for a terminal: laid out at the width it is printed at; nothing cut.
    phases: as for grids()."""
    from rich.text import Text

    g = grids(run, rows, trows, phases)
    parts: list[Any] = [Text(plain(line)) for line in run_summary(run)]
    parts += [Text(""), g.phases, Text(""), g.ops, Text(LEGEND, style="dim"), Text(""),
              g.devices]
    if g.settings or g.notes:
        parts.append(Text(""))
    if g.settings:
        parts.append(g.settings)
    parts += [Text(n) for n in g.notes]
    if g.threads:
        parts += [Text(""), g.threads]
    if g.fio:
        parts += [Text(""), g.fio, Text(FIO_NOTE)] + [Text("- " + n) for n in g.fio_notes]
    return Fit(*parts)


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _md_escape(s: str) -> str:
    """Text for a markdown table cell: HTML becomes entities (a renderer shows `<img ...>` as
    text, never as a tag), markdown's own syntax is backslash-escaped, line breaks are spaces."""
    out = []
    for ch in s:
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in "\\`*_[]|#!{}()":
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def csv_cell(v: Any) -> Any:
    """A CSV value a spreadsheet takes as text: a string that starts like a formula (=, +, -,
    @, tab, CR) gets a leading apostrophe; numbers stay numbers."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def _md_depth(cell: str) -> str:
    """A phase name indented two spaces per level as '› ' per level: a markdown renderer
    drops leading spaces, and with them the phase tree."""
    name = cell.lstrip(" ")
    return "› " * ((len(cell) - len(name)) // 2) + name


def markdown_grid(g: Grid, tree_col: int = -1) -> str:
    """tree_col: the column of indented phase names (the phases table's)."""
    out = [f"## {_md_escape(g.title[:1].upper() + g.title[1:])}", "",
           "| " + " | ".join(_md_escape(c.header) for c in g.columns) + " |",
           "|" + "|".join("---" if c.left else "---:" for c in g.columns) + "|"]
    out += ["| " + " | ".join(_md_escape(_md_depth(x) if i == tree_col else x)
                              for i, x in enumerate(r)) + " |" for r in g.rows]
    return "\n".join(out) + "\n"


def markdown_report(run: Run, rows: list[Row], trows: list[ThreadRow],
                    phases: Optional[list[Phase]] = None) -> str:
    g = grids(run, rows, trows, phases)
    out = io.StringIO()
    out.write(f"# iopulse report: {_md_escape(run.path)}\n\n")
    for line in run_summary(run):
        out.write(f"- {_md_escape(line)}\n")
    out.write("\n" + markdown_grid(g.phases, tree_col=1))
    out.write("\n" + markdown_grid(g.ops[0]))
    out.write(f"\n{_md_escape(LEGEND)}\n")
    for y in (g.devices, g.settings, g.threads):
        if y:
            out.write("\n" + markdown_grid(y[0]))
    for n in g.notes:
        out.write(f"\n{_md_escape(n)}\n")
    if g.fio:
        out.write("\n" + markdown_grid(g.fio[0]) + f"\n{_md_escape(FIO_NOTE)}\n\n")
        out.write("".join(f"- {_md_escape(n)}\n" for n in g.fio_notes))
    return out.getvalue()


def csv_report(rows: list[Row]) -> str:
    """One line per phase x host x device, raw numbers: every figure of the metrics layer
    (unit in the name: _ns, _bytes, _per_s, _pct; reads and writes as read_*, write_*), the
    phase's labels as columns of their own."""
    out = io.StringIO()
    labels = LabelColumns([r.phase.labels for r in rows],
                          ["phase", "labels", "host", "device", "device_class", "osd",
                           "seconds"] + (list(rows[0].values) if rows else []))
    figures = list(rows[0].values) if rows else []
    keys = ["phase", "labels"] + labels.columns + ["host", "device", "device_class", "osd",
                                                   "seconds"] + figures
    w = csv.writer(out)
    w.writerow(keys)
    for r in rows:
        d = r.to_dict()
        d["labels"] = r.phase.label_text()
        d.update(labels.row(r.phase.labels))
        w.writerow(["" if d.get(k) is None else csv_cell(d[k]) for k in keys])
    return out.getvalue()


def json_report(run: Run, rows: list[Row], trows: list[ThreadRow],
                asked: Optional[list[Phase]] = None) -> str:
    """asked: as grids()' phases; a phase without a row has no_figures, why."""
    numbers = phase_numbers(run)
    have = {id(x.phase) for x in list(rows) + list(trows)}
    phases = []
    for p in _order(rows, trows, asked):
        phases.append({"number": numbers.get((p.key, p.start_real_ns)), **p.to_dict()})
        if id(p) not in have:
            phases[-1]["no_figures"] = no_figures(run, p)
    recorded = recorded_devices(run, rows)
    settings = run.settings
    doc = {"run": run.path, "header": run.header, "end": run.end, "damage": run.damage,
           "hosts": [{"index": h.index, "name": h.name, "target": h.target,
                      "updates": len(h.updates),
                      "settings": settings[h.name].to_dict() if h.name in settings else None}
                     for h in run.hosts],
           "phases": phases, "devices": [r.to_dict() for r in rows],
           "threads": [dict(t.to_dict(), in_run=_in_run(t, recorded)) for t in trows],
           "fio": [s.to_dict() for s in fio_sides(run, rows)]}
    return json.dumps(doc, indent=1)
