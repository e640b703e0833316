"""Plots of a run (matplotlib, the report extra), one file per figure (see FILES); the
figures themselves are in report.figures, one module per kind."""
from __future__ import annotations

import os
import re
from typing import Any, Iterator

from ..record.reader import Run
from .figures.shape import MAX_LINES

MAX_DEVICES = 8                  # busiest devices plotted
MAX_THREADS = 8
DPI = 90

# (file name without the format's suffix, what it shows): `iopulse plot --help` prints these
FILES = [
    ("throughput", "IOPS and MB/s of the busiest devices over time, under a strip of the "
                   "phases"),
    ("heatmap-H-DEV", "queue wait and service time over time: x the intervals, y latency "
                      "(µs/ms, log), colour IOs per second on a log scale"),
    ("latency-H-DEV", "total latency percentiles p50 .. p99.99 per phase (x in nines, y "
                      f"log); one panel per phase when there are more than {MAX_LINES}"),
    ("seek-H-DEV", "seek distance per phase: one row per phase, colour the share of its "
                   "dispatches"),
    ("sync-threads", "fsync/fdatasync/sync_file_range calls per second of the busiest "
                     "threads"),
]
FILES_NOTE = ("H is the host's number in the run (0: the first or only agent); DEV the "
              "device name, characters other than letters, digits and . _ + - written as _. "
              "Phases are numbered in start order, the same numbers in every figure, and "
              "listed below each; a phase that holds others (a fio command around its jobs) "
              "is drawn above them in the strip, never over them.")


def file_stem(kind: str, host: int, device: str) -> str:
    """heatmap, 0, sdb -> heatmap-0-sdb: the device name made safe for a file name."""
    safe = re.sub(r"[^A-Za-z0-9._+-]", "_", device)
    if safe.startswith(".") or not safe:
        safe = "_" + safe
    return f"{kind}-{host}-{safe}"


def figures(run: Run) -> Iterator[tuple[str, Any]]:
    """(file stem, matplotlib Figure) of every plot of the run, in FILES order per device;
    the caller closes each figure."""
    from .figures import heatmap, seek, shape, sync, tail, throughput
    from .figures.common import pyplot, rc

    plt = pyplot()

    def draw(module: Any, *args: Any) -> Any:
        with plt.rc_context(rc(plt)):
            return module.figure(plt, run, *args)

    s = shape.series(run)
    entries = shape.phase_entries(run.phases(), s.t0_ns)
    devices = s.busiest(MAX_DEVICES)
    if devices:
        yield "throughput", draw(throughput, devices, entries, s.end_s)
    per_phase = entries or shape.whole_run(s)
    hists = shape.phase_hists(run, per_phase) if devices else {}
    stems: set[str] = set()
    for d in devices:
        stem = file_stem("heatmap", d.host, d.device)
        if stem in stems:           # two names that differ only in unsafe characters
            stem += f"_{len(stems)}"
        stems.add(stem)
        suffix = stem[len("heatmap"):]
        yield stem, draw(heatmap, d, entries, s.end_s)
        ph = hists.get((d.host, d.device), [])
        fig = draw(tail, d.host, d.device, ph, per_phase)
        if fig is not None:
            yield "latency" + suffix, fig
        fig = draw(seek, d.host, d.device, ph, per_phase)
        if fig is not None:
            yield "seek" + suffix, fig
    threads = s.busiest_threads(MAX_THREADS)
    if threads:
        yield "sync-threads", draw(sync, threads, entries, s.end_s)


def plot_all(run: Run, out_dir: str, fmt: str = "png") -> list[str]:
    """Write every plot into out_dir as fmt (png or svg); returns the paths. Names (phases,
    devices, threads) are drawn as text: '$' never starts mathtext, nothing goes to TeX."""
    from .figures.common import pyplot, rc

    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    paths: list[str] = []
    with plt.rc_context(rc(plt)):       # tick labels are made when a figure is drawn
        for stem, fig in figures(run):
            p = os.path.join(out_dir, f"{stem}.{fmt}")
            try:
                fig.savefig(p, dpi=DPI)
            finally:
                plt.close(fig)
            paths.append(p)
    return paths


__all__ = ["plot_all", "figures", "file_stem", "FILES", "FILES_NOTE"]
