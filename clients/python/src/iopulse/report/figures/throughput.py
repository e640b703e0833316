"""IOPS and MB/s of the busiest devices over time, each interval's rate held over its own
length, under the phase strip."""
from __future__ import annotations

from typing import Any

from ...record.reader import Run
from .common import (LEGEND_CHARS, Sheet, draw_key, draw_strip, ellipsize, key_height,
                     legend_right, phase_edges, steps, strip_height, time_axis)
from .shape import DeviceSeries, PhaseEntry, host_device_name

WIDTH = 11.0
RIGHT = 2.3             # the device legend


def figure(plt: Any, run: Run, devices: list[DeviceSeries], entries: list[PhaseEntry],
           end_s: float) -> Any:
    sh = Sheet(WIDTH, right=RIGHT)
    title = sh.row(0.3, 0.05)
    strip = sh.row(strip_height(entries), 0.05)
    top = sh.row(2.2, 0.12)
    bottom = sh.row(2.2, 0.55)
    key = sh.row(key_height(entries, WIDTH - 0.6))
    fig = sh.figure(plt)
    sh.text_row(fig, title, "IOPS and MB/s over time (each interval's rate over its length)")
    xlim = (0.0, max(end_s, 1e-3))
    ax_iops = fig.add_axes(sh.rect(top))
    ax_mbps = fig.add_axes(sh.rect(bottom), sharex=ax_iops)
    for d in devices:
        label = ellipsize(host_device_name(run, d.host, d.device), LEGEND_CHARS)
        ax_iops.plot(*steps(d.start, d.end, d.iops), lw=1.1, label=label)
        ax_mbps.plot(*steps(d.start, d.end, d.mbps), lw=1.1)
    ax_iops.set_ylabel("IOPS")
    ax_mbps.set_ylabel("MB/s")
    for ax in (ax_iops, ax_mbps):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        phase_edges(ax, entries)
    ax_iops.tick_params(labelbottom=False)
    time_axis(ax_mbps, xlim)
    legend_right(ax_iops, title="device")
    draw_strip(fig, fig.add_axes(sh.rect(strip), sharex=ax_iops), entries, xlim)
    draw_key(fig, fig.add_axes(sh.rect(key, left=0.3, right=0.3)), entries, WIDTH - 0.6)
    return fig
