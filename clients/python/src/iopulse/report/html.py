"""The report as one self-contained HTML page: the tables, and the plots inlined as PNG."""
from __future__ import annotations

import base64
import html
import os
import tempfile
from typing import Any, Optional

from ..record.reader import Run
from .metrics import DEVICE_COLUMNS, THREAD_COLUMNS, Row, ThreadRow
from .tables import _threads_by_phase, fmt, phase_title, run_summary

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; }
td.l, th.l { text-align: left; }
tr.phase td { border-top: 2px solid #888; }
.better { background: #d8f5d8; } .worse { background: #f8d8d8; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
.note { color: #666; font-size: 0.85em; }
"""

# The browser notes on the page whether every plot loaded (read by tests and humans alike).
CHECK_IMAGES = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.every(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute('data-images', (ok ? 'loaded' : 'broken') + ' ' + imgs.length);
});
"""


def page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
            f"<script>{CHECK_IMAGES}</script></head>\n<body>\n" + "\n".join(body) +
            "\n</body></html>\n")


def table(heads: list[str], rows: list[list[str]], left: int,
          row_class: Optional[list[str]] = None) -> str:
    out = ["<table><tr>" + "".join(
        f"<th class=\"{'l' if i < left else ''}\">{html.escape(h)}</th>"
        for i, h in enumerate(heads)) + "</tr>"]
    for n, r in enumerate(rows):
        cls = f" class=\"{row_class[n]}\"" if row_class and row_class[n] else ""
        out.append(f"<tr{cls}>" + "".join(
            f"<td class=\"{'l' if i < left else ''}\">{html.escape(c)}</td>"
            for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _img(path: str, alt: str) -> str:
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return f"<img src=\"data:image/png;base64,{data}\" alt=\"{html.escape(alt)}\">"


def html_report(run: Run, rows: list[Row], trows: list[ThreadRow],
                plots: bool = True) -> str:
    body = [f"<h1>iopulse report: {html.escape(os.path.basename(run.path))}</h1>"]
    body += [f"<p class=\"note\">{html.escape(line)}</p>" for line in run_summary(run)]
    phases = []
    for r in rows:
        if r.phase not in phases:
            phases.append(r.phase)
    body.append("<h2>Phases</h2><ul>" + "".join(
        f"<li><b>{html.escape(p.name)}</b> {html.escape(p.label_text())} "
        f"({p.duration_s:.1f} s{'' if p.exact else f', imported, edges +-{p.accuracy_s:g} s'}"
        f"{', abandoned' if p.abandoned else ''})</li>" for p in phases) + "</ul>")
    heads = ["phase", "host", "device", "s"] + [c[1] for c in DEVICE_COLUMNS]
    cells, classes, last = [], [], None
    for r in rows:
        cells.append([phase_title(r).strip() if r.phase is not last else "", r.host,
                      r.device + (f" ({r.osd})" if r.osd else ""), f"{r.seconds:.1f}"] +
                     [fmt(k, r.values[c]) for c, _, k in DEVICE_COLUMNS])
        classes.append("phase" if r.phase is not last else "")
        last = r.phase
    body.append("<h2>Per phase, host and device</h2>" + table(heads, cells, 3, classes))
    if trows:
        heads = ["phase", "host", "thread", "process", "OSD", "device", "calls"] + \
            [c[1] for c in THREAD_COLUMNS]
        cells = []
        for lst in _threads_by_phase(trows).values():
            for i, r in enumerate(lst):
                th = r.thread
                cells.append([phase_title(r).strip() if i == 0 else "", r.host, th.comm,
                              th.process, "-" if th.osd_id is None else str(th.osd_id),
                              th.where, str(th.calls)] +
                             [fmt(k, r.values[c]) for c, _, k in THREAD_COLUMNS])
        body.append("<h2>Busiest sync threads</h2>" + table(heads, cells, 6))
    if plots:
        from .plots import plot_all

        with tempfile.TemporaryDirectory(prefix="iopulse-plots-") as tmp:
            paths = plot_all(run, tmp, "png")
            body.append("<h2>Plots</h2>")
            for p in paths:
                name = os.path.splitext(os.path.basename(p))[0]
                body.append(f"<h3>{html.escape(name)}</h3>" + _img(p, name))
    return page(f"iopulse report: {run.path}", body)


def compare_page(head: str, heads: list[str], rows: list[list[str]], classes: list[str]) -> Any:
    return page("iopulse compare", [f"<h1>iopulse compare</h1><pre>{html.escape(head)}</pre>",
                                    table(heads, rows, 4, classes)])
