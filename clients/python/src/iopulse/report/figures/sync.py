"""fsync, fdatasync and sync_file_range calls per second of the busiest threads over time,
and the p99 of their calls' latency in each interval, under the phase strip."""
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
    main = sh.row(2.6, 0.15)
    lat = sh.row(2.0, 0.55)
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
    legend_right(ax, title="thread")
    lx = fig.add_axes(sh.rect(lat), sharex=ax)
    for t in threads:       # the same colours in the same order as above
        lx.plot(*steps(t.start, t.end, t.p99_ms), lw=1.1, gid="sync-p99")
    lx.set_ylabel("call latency p99 (ms)")
    lx.set_ylim(bottom=0)
    lx.grid(alpha=0.3)
    phase_edges(lx, entries)
    time_axis(lx, xlim)
    ax.tick_params(labelbottom=False)
    draw_strip(fig, fig.add_axes(sh.rect(strip), sharex=ax), entries, xlim)
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, WIDTH - 0.6)
    return fig
