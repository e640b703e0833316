"""The report as one self-contained HTML page: the tables, and the plots inlined as PNG."""
from __future__ import annotations

import base64
import html
import os
import tempfile
from typing import Any, Optional

from ..analysis.metrics import Row, ThreadRow
from ..phases.model import Phase
from ..record.reader import Run
from ..textfit import Grid
from .tables import FIO_NOTE, LEGEND, grids, run_summary

# Headers wrap at their spaces, numbers and names never; free text (labels, tunables) wraps
# anywhere in a column of bounded width: every table fits a page of 1400 px.
STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.8em; }
th, td { border: 1px solid #ccc; padding: 0.15em 0.4em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; white-space: normal; vertical-align: bottom; }
td.l, th.l { text-align: left; }
td.w { white-space: normal; overflow-wrap: anywhere; min-width: 8em; max-width: 30em; }
td.n { white-space: normal; overflow-wrap: anywhere; min-width: 8em; max-width: 14em; }
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
  var page = document.documentElement.clientWidth;
  var over = Array.prototype.slice.call(document.querySelectorAll('table')).filter(
    function (t) { return t.getBoundingClientRect().right > page + 0.5; });
  var wide = document.documentElement.scrollWidth > page;
  document.body.setAttribute('data-fit', (over.length || wide ? 'overflow' : 'fits') + ' ' +
    page + ' ' + document.documentElement.scrollWidth + ' ' +
    over.map(function (t) { return t.getAttribute('data-name'); }).join(','));
});
"""


def page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style>"
            f"<script>{CHECK_IMAGES}</script></head>\n<body>\n" + "\n".join(body) +
            "\n</body></html>\n")


def table(heads: list[str], rows: list[list[str]], left: int,
          row_class: Optional[list[str]] = None, name: str = "") -> str:
    out = [f"<table data-name=\"{html.escape(name)}\"><tr>" + "".join(
        f"<th class=\"{'l' if i < left else ''}\">{html.escape(h)}</th>"
        for i, h in enumerate(heads)) + "</tr>"]
    for n, r in enumerate(rows):
        cls = f" class=\"{row_class[n]}\"" if row_class and row_class[n] else ""
        out.append(f"<tr{cls}>" + "".join(
            f"<td class=\"{'l' if i < left else ''}\">{html.escape(c)}</td>"
            for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _cell(c: str) -> str:
    """A cell's text as HTML; leading spaces (a phase's depth in the tree) kept as no-break
    spaces, which HTML does not collapse."""
    name = c.lstrip(" ")
    return "&nbsp;" * (len(c) - len(name)) + html.escape(name)


def _img(path: str, alt: str) -> str:
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return f"<img src=\"data:image/png;base64,{data}\" alt=\"{html.escape(alt)}\">"


def grid_table(g: Grid, phase_rows: bool = True) -> str:
    """A grid as an HTML table: a line that begins a phase (its first key cell set) gets a
    rule above it; wrap columns (labels, tunables) wrap anywhere, the phase's name, the host's
    and a device's model at their spaces and in a long word; other names and numbers
    never."""
    cls = [("w" if c.wrap else "n" if c.header in ("phase", "host", "model") else "") +
           (" l" if c.left else "") for i, c in enumerate(g.columns)]
    out = [f"<table data-name=\"{html.escape(g.title)}\"><tr>" + "".join(
        f"<th class=\"{'l' if c.left else ''}\">{html.escape(c.header)}</th>"
        for c in g.columns) + "</tr>"]
    for n, r in enumerate(g.rows):
        rc = " class=\"phase\"" if phase_rows and n and r[0] else ""
        out.append(f"<tr{rc}>" + "".join(
            f"<td class=\"{cls[i].strip()}\">{_cell(c)}</td>" for i, c in enumerate(r))
            + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _cell(c: str) -> str:
    """A cell's text as HTML; leading spaces (a phase's depth in the tree) kept as no-break
    spaces, which HTML does not collapse."""
    name = c.lstrip(" ")
    return "&nbsp;" * (len(c) - len(name)) + html.escape(name)


def html_report(run: Run, rows: list[Row], trows: list[ThreadRow],
                plots: bool = True, phases: Optional[list[Phase]] = None) -> str:
    """phases: as for tables.grids()."""
    g = grids(run, rows, trows, phases)
    body = [f"<h1>iopulse report: {html.escape(os.path.basename(run.path))}</h1>"]
    body += [f"<p class=\"note\">{html.escape(line)}</p>" for line in run_summary(run)]
    body.append("<h2>Phases</h2>" + grid_table(g.phases, phase_rows=False))
    body.append(f"<h2>Per phase, device and op</h2><p class=\"note\">{html.escape(LEGEND)}"
                f"</p>" + grid_table(g.ops[0]))
    body.append("<h2>Per phase and device</h2>" + grid_table(g.devices[0]))
    if g.settings:
        body.append("<h2>Device settings when the recording began</h2>" +
                    grid_table(g.settings[0], phase_rows=False))
    body += [f"<p class=\"note\">{html.escape(n)}</p>" for n in g.notes]
    if g.threads:
        body.append("<h2>Busiest sync threads</h2>" + grid_table(g.threads[0]))
    if g.fio:
        body.append("<h2>fio beside the block layer</h2>" + grid_table(g.fio[0]) +
                    f"<p>{html.escape(FIO_NOTE)}</p><ul>" +
                    "".join(f"<li>{html.escape(n)}</li>" for n in g.fio_notes) + "</ul>")
    if plots:
        from .plots import plot_all

        with tempfile.TemporaryDirectory(prefix="iopulse-plots-") as tmp:
            paths = plot_all(run, tmp, "png")
            body.append("<h2>Plots</h2>")
            for p in paths:
                name = os.path.splitext(os.path.basename(p))[0]
                body.append(f"<h3>{html.escape(name)}</h3>" + _img(p, name))
    return page(f"iopulse report: {run.path}", body)

