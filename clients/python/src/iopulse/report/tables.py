"""The report as a terminal table (rich), Markdown, CSV or JSON."""
from __future__ import annotations

import csv
import io
import json
import time
from typing import Any, Optional

from ..record.reader import Run
from ..render import fmt_ns
from .metrics import DEVICE_COLUMNS, THREAD_COLUMNS, Row, ThreadRow

THREADS_PER_PHASE = 5


def fmt(kind: str, v: Optional[float]) -> str:
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


def phase_title(r: Any) -> str:
    p = r.phase
    lab = p.label_text()
    extra = "" if p.exact else f" (imported, edges +-{p.accuracy_s:g}s)"
    if p.abandoned:
        extra += " (abandoned)"
    return ("  " * p.depth) + p.name + (f" [{lab}]" if lab else "") + extra


def run_summary(run: Run) -> list[str]:
    h = run.header
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(
        h.get("created_realtime_ns", 0) / 1e9)) if h else "?"
    hosts = ", ".join(f"{x.name} ({x.info.version if x.info else '?'})" for x in run.hosts)
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


def _threads_by_phase(trows: list[ThreadRow]) -> dict[int, list[ThreadRow]]:
    out: dict[int, list[ThreadRow]] = {}
    for t in trows:
        lst = out.setdefault(id(t.phase), [])
        if len(lst) < THREADS_PER_PHASE:
            lst.append(t)
    return out


def rich_report(run: Run, rows: list[Row], trows: list[ThreadRow]) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(line) for line in run_summary(run)]
    cells = []
    last = None
    for r in rows:
        name = phase_title(r) if r.phase is not last else ""
        last = r.phase
        cells.append([name, r.host, r.device + (f" ({r.osd})" if r.osd else ""),
                      f"{r.seconds:.1f}"] + [fmt(k, r.values[c]) for c, _, k in DEVICE_COLUMNS])
    t = Table(title="per phase, host and device", title_justify="left")
    for i, col in enumerate(["phase", "host", "device", "s"] + [c[1] for c in DEVICE_COLUMNS]):
        # cells are never cut: headers wrap instead
        t.add_column(col, justify="left" if i < 3 else "right",
                     min_width=max([len(c[i]) for c in cells] + [1]))
    for c in cells:
        t.add_row(*c)
    parts.append(t)
    if trows:
        tt = Table(title="busiest sync threads per phase", title_justify="left")
        for col in ["phase", "host", "thread", "process", "OSD", "device", "calls"] + \
                [c[1] for c in THREAD_COLUMNS]:
            tt.add_column(col, justify="left" if col in ("phase", "host", "thread", "process",
                                                         "device") else "right", no_wrap=True)
        for lst in _threads_by_phase(trows).values():
            for i, r in enumerate(lst):
                th = r.thread
                tt.add_row(phase_title(r) if i == 0 else "", r.host, th.comm, th.process,
                           "-" if th.osd_id is None else str(th.osd_id), th.where,
                           f"{th.calls}", *[fmt(k, r.values[c]) for c, _, k in THREAD_COLUMNS])
        parts.append(tt)
    return Group(*parts)


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


def markdown_report(run: Run, rows: list[Row], trows: list[ThreadRow]) -> str:
    out = io.StringIO()
    out.write(f"# iopulse report: {_md_escape(run.path)}\n\n")
    for line in run_summary(run):
        out.write(f"- {_md_escape(line)}\n")
    heads = ["phase", "host", "device", "s"] + [c[1] for c in DEVICE_COLUMNS]
    out.write("\n## Devices\n\n| " + " | ".join(heads) + " |\n")
    out.write("|" + "|".join("---" if i < 3 else "---:" for i in range(len(heads))) + "|\n")
    for r in rows:
        cells = [phase_title(r).strip(), r.host, r.device + (f" ({r.osd})" if r.osd else ""),
                 f"{r.seconds:.1f}"] + [fmt(k, r.values[c]) for c, _, k in DEVICE_COLUMNS]
        out.write("| " + " | ".join(_md_escape(c) for c in cells) + " |\n")
    if trows:
        heads = ["phase", "host", "thread", "process", "OSD", "device", "calls"] + \
            [c[1] for c in THREAD_COLUMNS]
        out.write("\n## Busiest sync threads\n\n| " + " | ".join(heads) + " |\n")
        out.write("|" + "|".join("---" if i < 6 else "---:" for i in range(len(heads))) + "|\n")
        for lst in _threads_by_phase(trows).values():
            for r in lst:
                th = r.thread
                cells = [phase_title(r).strip(), r.host, th.comm, th.process,
                         "-" if th.osd_id is None else str(th.osd_id), th.where,
                         str(th.calls)] + [fmt(k, r.values[c]) for c, _, k in THREAD_COLUMNS]
                out.write("| " + " | ".join(_md_escape(c) for c in cells) + " |\n")
    return out.getvalue()


def csv_report(rows: list[Row]) -> str:
    """One line per phase x host x device, raw numbers (ns, bytes, per second)."""
    out = io.StringIO()
    keys = ["phase", "labels", "host", "device", "osd", "seconds"] + \
        [c[0] for c in DEVICE_COLUMNS] + ["ios", "bytes", "reads", "writes"]
    w = csv.writer(out)
    w.writerow(keys)
    for r in rows:
        d = r.to_dict()
        d["labels"] = r.phase.label_text()
        w.writerow(["" if d.get(k) is None else csv_cell(d[k]) for k in keys])
    return out.getvalue()


def json_report(run: Run, rows: list[Row], trows: list[ThreadRow]) -> str:
    phases = []
    seen = set()
    for r in rows:
        if id(r.phase) not in seen:
            seen.add(id(r.phase))
            phases.append(r.phase.to_dict())
    doc = {"run": run.path, "header": run.header, "end": run.end, "damage": run.damage,
           "hosts": [{"index": h.index, "name": h.name, "target": h.target,
                      "updates": len(h.updates)} for h in run.hosts],
           "phases": phases, "devices": [r.to_dict() for r in rows],
           "threads": [t.to_dict() for t in trows]}
    return json.dumps(doc, indent=1)
