"""iopulse plot: a run's plots as PNG or SVG files."""
from __future__ import annotations

import argparse
import sys
import textwrap

from ..record.reader import load
from ..report.plots import FILES, FILES_NOTE, MAX_DEVICES
from .common import EXIT_OK

HELP = "plots of a run: latency heatmaps, per-phase latency percentiles and seeks, sync " \
       "threads, IOPS"


def _files() -> str:
    width = max(len(stem) for stem, _ in FILES) + len(".png") + 2
    out = []
    for stem, what in FILES:
        lines = textwrap.wrap(what, 88 - 2 - width)
        out.append(f"  {stem + '.png':<{width}}{lines[0]}")
        out += [" " * (2 + width) + s for s in lines[1:]]
    return "\n".join(out)


EXAMPLES = f"""examples:
  iopulse plot run1.iopulse -o run1-plots/
      writes run1-plots/throughput.png, run1-plots/heatmap-0-nvme0n1.png,
      run1-plots/latency-0-nvme0n1.png, run1-plots/seek-0-nvme0n1.png, ... and prints
      each path
  iopulse plot run1.iopulse -o run1-plots/ --format svg
      the same as run1-plots/throughput.svg, ...

files (.svg instead of .png with --format svg; heatmap, latency and seek for each of the
{MAX_DEVICES} busiest devices, sync-threads when threads called fsync/fdatasync/sync_file_range):
{_files()}

{textwrap.fill(FILES_NOTE, 88)}

Needs iopulse[report] (matplotlib)."""
CONNECTS = False


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("run", metavar="RUN", help="a run file written by iopulse record")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory for the files (made if missing)")
    s.add_argument("--format", choices=("png", "svg"), default="png",
                   help="png (default: raster, any viewer) or svg (vector: scales, edits, "
                        "larger files)")


def run(args: argparse.Namespace) -> int:
    from ..report.plots import plot_all

    paths = plot_all(load(args.run), args.output, args.format)
    for p in paths:
        print(p)
    if not paths:
        print("iopulse plot: the run holds no IO to plot", file=sys.stderr)
    return EXIT_OK
