"""Total latency per leaf phase of one device as a log-tail percentile plot: x the
percentile in nines (p50, p90, p99, p99.9, p99.99: one step per nine), y the latency on a
log scale. Up to MAX_LINES phases share one axes; more get one small panel each (the
others faint behind), in phase order. Parents are left out: their IOs are their
children's."""
from __future__ import annotations

import math
from typing import Any, Optional

from ...record.reader import Run
from .common import (FONT, LEGEND_CHARS, Sheet, draw_key, ellipsize, key_height, latency_axis,
                     leaf_colour, legend_right)
from .shape import MAX_LINES, NINES_MAX, NINES_MIN, PhaseEntry, PhaseHists, host_device_name, \
    tail

NINES = [(NINES_MIN, "p50"), (1.0, "p90"), (2.0, "p99"), (3.0, "p99.9"), (4.0, "p99.99")]
COLUMNS = 6
MAX_PANELS = 48         # more phases: those with the most IOs
XLABEL = "percentile (one step per nine)"
YLABEL = "total latency (reads and writes)"


def nines_axis(ax: Any, labels: bool = True) -> None:
    ax.set_xlim(NINES_MIN - 0.05, NINES_MAX + 0.05)
    ax.set_xticks([x for x, _ in NINES])
    ax.set_xticklabels([s for _, s in NINES] if labels else [])
    ax.grid(alpha=0.3, which="major")


def figure(plt: Any, run: Run, host: int, device: str, hists: list[PhaseHists],
           entries: list[PhaseEntry]) -> Optional[Any]:
    curves = [(ph.entry, tail(ph.total)) for ph in hists if ph.total is not None]
    curves = [(e, c) for e, c in curves if c]
    if not curves:
        return None
    ys = [y for _, c in curves for _, y in c]
    lo, hi = min(ys) / 1.3, max(ys) * 1.3
    name = host_device_name(run, host, device)
    title = f"{name}: total latency percentiles per phase (a curve ends where the phase " \
            "has too few IOs for more nines)"
    if len(curves) > MAX_PANELS:
        ios = {ph.entry.number: ph.total.count for ph in hists if ph.total is not None}
        keep = sorted(curves, key=lambda ec: -ios[ec[0].number])[:MAX_PANELS]
        curves = [ec for ec in curves if ec in keep]
        title = f"{name}: total latency percentiles of the {MAX_PANELS} phases with the " \
                f"most IOs of {len(ios)}"
    if len(curves) <= MAX_LINES:
        return _one(plt, title, curves, lo, hi, entries)
    return _panels(plt, title, curves, lo, hi, entries)


def _one(plt: Any, title: str, curves: list[tuple[PhaseEntry, list[tuple[float, float]]]],
         lo: float, hi: float, entries: list[PhaseEntry]) -> Any:
    width = 11.0
    sh = Sheet(width, right=2.6)
    t = sh.row(0.3, 0.1)
    main = sh.row(3.8, 0.55)
    key = sh.row(key_height(entries, width - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, t, title)
    ax = fig.add_axes(sh.rect(main))
    for e, c in curves:
        xs, ys = zip(*c)
        ax.plot(xs, ys, lw=1.4, color=leaf_colour(e),
                label=ellipsize(f"{e.number} {e.phase.name}", LEGEND_CHARS))
        ax.plot(xs[-1:], ys[-1:], "o", ms=3, color=leaf_colour(e))
    nines_axis(ax)
    latency_axis(ax.yaxis, lo, hi, sh.rows[main][0])
    ax.set_xlabel(XLABEL)
    ax.set_ylabel(YLABEL)
    legend_right(ax, title="phase")
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, width - 0.6)
    return fig


def _panels(plt: Any, title: str, curves: list[tuple[PhaseEntry, list[tuple[float, float]]]],
            lo: float, hi: float, entries: list[PhaseEntry]) -> Any:
    width, panel_h, gap = 11.0, 1.45, 0.34
    rows = math.ceil(len(curves) / COLUMNS)
    sh = Sheet(width, left=1.0, right=0.3)
    t = sh.row(0.3, 0.2)
    grid = [sh.row(panel_h, 0.28) for _ in range(rows)]
    sh.rows[grid[-1]] = (panel_h, 0.55)
    key = sh.row(key_height(entries, width - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, t, title)
    renderer = fig.canvas.get_renderer()
    axes = []
    for n, (e, c) in enumerate(curves):
        r, col = divmod(n, COLUMNS)
        rect = sh.cells(grid[r], COLUMNS, gap)[col]
        ax = fig.add_axes(rect, sharey=axes[0] if axes else None)
        for e2, c2 in curves:
            if e2 is not e:
                ax.plot(*zip(*c2), lw=0.6, color="0.8")
        xs, ys = zip(*c)
        ax.plot(xs, ys, lw=1.5, color="C0")
        ax.plot(xs[-1:], ys[-1:], "o", ms=2.5, color="C0")
        nines_axis(ax, labels=n + COLUMNS >= len(curves))
        ax.tick_params(labelsize=FONT - 1.5)
        latency_axis(ax.yaxis, lo, hi, panel_h, minor=False)
        if col:
            ax.tick_params(labelleft=False)
        label = f"{e.number} {e.phase.name}"
        width_px = rect[2] * fig.bbox.width
        for k in range(len(label), 1, -1):
            tt = ax.set_title(ellipsize(label, k), loc="left", fontsize=FONT, pad=2)
            if tt.get_window_extent(renderer).width <= width_px:
                break
        axes.append(ax)
    x, y, w, _ = sh.rect(grid[-1])
    fig.text(x + w / 2, y - 0.42 / sh.height, XLABEL, ha="center", va="center")
    gx, gy, _, gh = sh.rect(grid[0])
    top = gy + gh
    fig.text(0.2 / width, (top + y) / 2, YLABEL, rotation=90, ha="center", va="center")
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, width - 0.6)
    return fig
