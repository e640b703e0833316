"""iopulse plot: a run's plots as PNG or SVG files."""
from __future__ import annotations

import argparse
import sys

from ..record.reader import load
from .common import EXIT_OK

HELP = "plots of a run: latency heatmaps, per-phase CDFs and seeks, sync threads, IOPS"
EXAMPLES = """examples:
  iopulse plot run1.iopulse -o run1-plots/
  iopulse plot run1.iopulse -o run1-plots/ --format svg

Writes throughput (IOPS and MB/s over time with the phases as bands), heatmap-HOST-DEV
(queue wait and service time over time: x time, y latency on a log scale, colour the IO
count), phases-HOST-DEV (total latency CDF and seek distance histogram per phase) and
sync-threads (calls/s of the busiest sync threads). Needs iopulse[report] (matplotlib)."""
CONNECTS = False


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("run", metavar="RUN")
    s.add_argument("-o", "--output", required=True, metavar="DIR")
    s.add_argument("--format", choices=("png", "svg"), default="png")


def run(args: argparse.Namespace) -> int:
    from ..report.plots import plot_all

    paths = plot_all(load(args.run), args.output, args.format)
    for p in paths:
        print(p)
    if not paths:
        print("iopulse plot: the run holds no IO to plot", file=sys.stderr)
    return EXIT_OK
