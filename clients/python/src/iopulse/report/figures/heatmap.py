"""Latency over time for one device: queue wait and service time, x the intervals (each as
wide as it lasted), y latency rows (6 per decade), colour the IOs per second that fell into
the row during the interval, on a log scale, so a quiet second and a busy one, or a short
interval and a long one, read the same way."""
from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.colors import LogNorm

from ...record.reader import Run
from .common import (Sheet, draw_key, draw_strip, key_height, latency_axis, log_colourbar,
                     phase_edges, strip_height, time_axis)
from .shape import HEAT_KINDS, HEAT_ROWS, DeviceSeries, PhaseEntry, heat_edges, \
    host_device_name

WIDTH = 11.0
RIGHT = 1.5             # the colour bars and their labels
COLOUR_LABEL = "IOs per second in the row (log)"


def columns(d: DeviceSeries, what: str) -> tuple[Any, Any]:
    """x edges (seconds) and rows x columns of IOs/s; a gap between two intervals is a column
    of NaN (drawn empty)."""
    xs: list[float] = []
    cols: list[list[float]] = []
    for a, b, col in zip(d.start, d.end, d.heat.get(what, [])):
        if xs and a > xs[-1] + 1e-6:
            cols.append([np.nan] * HEAT_ROWS)
            xs.append(a)
        elif not xs:
            xs.append(a)
        cols.append(col)
        xs.append(b)
    z = np.array(cols, dtype=float).T if cols else np.zeros((HEAT_ROWS, 0))
    z[z <= 0] = np.nan
    return np.array(xs), z


def figure(plt: Any, run: Run, d: DeviceSeries, entries: list[PhaseEntry], end_s: float
           ) -> Any:
    sh = Sheet(WIDTH, right=RIGHT)
    title = sh.row(0.3, 0.05)
    strip = sh.row(strip_height(entries), 0.05)
    panels = [sh.row(2.3, 0.12), sh.row(2.3, 0.55)]
    key = sh.row(key_height(entries, WIDTH - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, title, f"{host_device_name(run, d.host, d.device)}: latency over time, "
                            "reads and writes")
    xlim = (0.0, max(end_s, 1e-3))
    edges = np.array(heat_edges())
    data = {what: columns(d, what) for what, _ in HEAT_KINDS}
    zs = [z for _, z in data.values() if z.size and np.isfinite(z).any()]
    used = np.flatnonzero(np.any(np.isfinite(np.hstack(zs)), axis=1)) if zs else np.array([])
    lo = edges[max(0, int(used.min()) - 1)] if used.size else 1e4
    hi = edges[min(HEAT_ROWS, int(used.max()) + 2)] if used.size else 1e7
    vmax = max((float(np.nanmax(z)) for z in zs), default=1.0)
    vmin = min((float(np.nanmin(z)) for z in zs), default=vmax / 10)
    norm = LogNorm(vmin=min(vmin, vmax / 10), vmax=vmax)
    axes = []
    for i, ((what, _), row) in enumerate(zip(HEAT_KINDS, panels)):
        ax = fig.add_axes(sh.rect(row), sharex=axes[0] if axes else None)
        xs, z = data[what]
        if z.shape[1]:
            m = ax.pcolormesh(xs, edges, z, shading="flat", cmap="viridis", norm=norm)
            x, y, w, h = sh.rect(row)
            cax = fig.add_axes([x + w + 0.15 / WIDTH, y, 0.14 / WIDTH, h])
            log_colourbar(fig.colorbar(m, cax=cax, label=COLOUR_LABEL), sh.rows[row][0])
        latency_axis(ax.yaxis, lo, hi, sh.rows[row][0])
        ax.set_ylabel(what + (" time" if what == "service" else ""))
        ax.grid(alpha=0.25, which="major", color="white", lw=0.5)
        phase_edges(ax, entries)
        axes.append(ax)
    axes[0].tick_params(labelbottom=False)
    time_axis(axes[-1], xlim)
    draw_strip(fig, fig.add_axes(sh.rect(strip), sharex=axes[0]), entries, xlim)
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, WIDTH - 0.6)
    return fig
