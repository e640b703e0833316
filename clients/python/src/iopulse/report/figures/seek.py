"""Seek distance per leaf phase of one device: one row per phase, columns the distance
between a dispatch and the one before it (0: sequential, then 1 .. 10^12 sectors, two
columns per decade), colour the share of the phase's dispatches on a log scale."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter

from ...record.reader import Run
from .common import FONT, Sheet, draw_key, ellipsize, fmt_count, key_height, log_colourbar
from .shape import PhaseEntry, PhaseHists, host_device_name, seek_edges, seek_shares

WIDTH = 11.0
LEFT = 2.0              # the phase names
ROW_IN = 0.19
ZERO_IN = 0.45          # the column of distance 0
NAME_CHARS = 30
MAX_ROWS = 96           # more phases: those with the most dispatches


def figure(plt: Any, run: Run, host: int, device: str, hists: list[PhaseHists],
           entries: list[PhaseEntry]) -> Optional[Any]:
    rows = [(ph.entry, seek_shares(ph.seek)) for ph in hists
            if ph.seek is not None and ph.seek.count]
    if not rows:
        return None
    what = "per phase"
    if len(rows) > MAX_ROWS:
        counts = {ph.entry.number: ph.seek.count for ph in hists if ph.seek is not None}
        keep = {e.number for e, _ in sorted(rows, key=lambda r: -counts[r[0].number])[:MAX_ROWS]}
        what = f"of the {MAX_ROWS} phases with the most dispatches of {len(rows)}"
        rows = [r for r in rows if r[0].number in keep]
    sh = Sheet(WIDTH, left=LEFT, right=1.4)
    t = sh.row(0.3, 0.1)
    main = sh.row(max(1.2, ROW_IN * len(rows)), 0.55)
    key = sh.row(key_height(entries, WIDTH - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, t, f"{host_device_name(run, host, device)}: seek distance {what} "
                        "(share of the phase's dispatches)")
    z = np.array([r for _, r in rows], dtype=float)
    z[z <= 0] = np.nan
    norm = LogNorm(vmin=max(0.01, min(1.0, float(np.nanmin(z)))), vmax=100.0)
    x, y, w, h = sh.rect(main)
    zero_w = ZERO_IN / WIDTH
    gap = 0.12 / WIDTH
    ax0 = fig.add_axes([x, y, zero_w, h])
    ax = fig.add_axes([x + zero_w + gap, y, w - zero_w - gap, h], sharey=ax0)
    ys = np.arange(len(rows) + 1)
    ax0.pcolormesh([0, 1], ys, z[:, :1], cmap="viridis", norm=norm, shading="flat")
    m = ax.pcolormesh(seek_edges(), ys, z[:, 1:], cmap="viridis", norm=norm, shading="flat")
    ax.set_xscale("log")
    used = np.flatnonzero(np.isfinite(z[:, 1:]).any(axis=0))
    top = seek_edges()[min(len(seek_edges()) - 1, int(used.max()) + 2)] if used.size else 1e3
    ax.set_xlim(1, max(top, 1e3))
    ax.set_xlabel("seek distance (512-byte sectors)")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_count(v)))
    ax0.set_xticks([0.5])
    ax0.set_xticklabels(["0"])
    ax0.set_ylim(len(rows), 0)
    ax0.set_yticks(ys[:-1] + 0.5)
    ax0.set_yticklabels([ellipsize(f"{e.number} {e.phase.name}", NAME_CHARS) for e, _ in rows],
                        fontsize=FONT - 0.5 if len(rows) > 12 else FONT)
    ax.tick_params(labelleft=False)
    cax = fig.add_axes([x + w + 0.15 / WIDTH, y, 0.14 / WIDTH, h])
    cb = fig.colorbar(m, cax=cax)
    log_colourbar(cb, sh.rows[main][0])
    cb.set_label("% of dispatches")
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, WIDTH - 0.6)
    return fig
