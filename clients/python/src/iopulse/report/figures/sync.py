"""fsync, fdatasync and sync_file_range calls per second of the busiest threads over time,
under the phase strip."""
from __future__ import annotations

from typing import Any

from ...record.reader import Run
from .common import (LEGEND_CHARS, Sheet, draw_key, draw_strip, ellipsize, key_height,
                     legend_right, phase_edges, steps, strip_height, time_axis)
from .shape import PhaseEntry, ThreadSeries

WIDTH = 11.0


def figure(plt: Any, run: Run, threads: list[ThreadSeries], entries: list[PhaseEntry],
           end_s: float) -> Any:
    sh = Sheet(WIDTH, right=2.3)
    title = sh.row(0.3, 0.05)
    strip = sh.row(strip_height(entries), 0.05)
    main = sh.row(2.6, 0.55)
    key = sh.row(key_height(entries, WIDTH - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, title, "fsync, fdatasync and sync_file_range calls per thread")
    xlim = (0.0, max(end_s, 1e-3))
    ax = fig.add_axes(sh.rect(main))
    for t in threads:
        where = f" on {run.hosts[t.host].name}" if len(run.hosts) > 1 else ""
        ax.plot(*steps(t.start, t.end, t.rate), lw=1.1,
                label=ellipsize(f"{t.comm}/{t.tid}{where}", LEGEND_CHARS))
    ax.set_ylabel("sync calls/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    phase_edges(ax, entries)
    time_axis(ax, xlim)
    legend_right(ax, title="thread")
    draw_strip(fig, fig.add_axes(sh.rect(strip), sharex=ax), entries, xlim)
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, WIDTH - 0.6)
    return fig
