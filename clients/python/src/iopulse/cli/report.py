"""iopulse report: per phase x host x device numbers of a recorded run."""
from __future__ import annotations

import argparse
import os
import sys

from ..analysis.metrics import phase_rows
from ..record.reader import load
from ..report.tables import csv_report, json_report, markdown_report, rich_report
from .common import EXIT_OK, console, printable

HELP = "per phase, host, device and op: IOPS, MB/s, latency percentiles, seeks, flushes"
EXAMPLES = """examples:
  iopulse report run1.iopulse
  iopulse report run1.iopulse --format markdown > run1.md
  iopulse report run1.iopulse --format csv --phase 'rand*'
  iopulse report run1.iopulse --format html -o run1.html

The phases, numbered as in the plots, with their length and labels; per phase x host x
device a line for each op (read, write, discard, and all of them when the device did more
than one): IOPS, MB/s and MiB/s, request size p50, queue wait p50/p99/p99.9, service
p50/p99, total p50/mean/p99/p99.9/max; per phase x host x device its own figures
(sequential %, seek distance p50/p99 in sectors, flush requests/s and their service p99,
writes carrying a preflush and their p99, FUA writes, errors, requeues); each host's device
settings when the recording began (scheduler and its tunables, nr_requests, queue_depth,
read_ahead, write cache, ...); per phase the busiest sync threads; and when record kept
fio's report, per fio job fio's IOs, IOPS and clat p50/p99/p99.9 beside the device's, with
what makes them differ (empty preflush writes counted as writes, client-side time). Every
column names its unit. Rates are the phase's counts over its seconds, percentiles those of
its IOs (its intervals' buckets merged). In a terminal the tables fit its width (folded into
several, each with the phase, host, device and op columns, when narrow); nothing is cut.
Phases from marks are exact (their edges are interval edges); imported ones say how far
their edges may be off."""
CONNECTS = False
FORMATS = ("table", "markdown", "csv", "json", "html")


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("run", metavar="RUN", help="a run file written by iopulse record")
    s.add_argument("--format", choices=FORMATS, default="table",
                   help="table (terminal, default), markdown, csv, json, or html (one "
                        "self-contained page with the plots; needs iopulse[report])")
    s.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="write here instead of standard output")
    s.add_argument("--phase", action="append", default=[], metavar="GLOB",
                   help="only phases whose name matches (repeatable)")
    s.add_argument("--idle", action="store_true", help="also devices without IO in a phase")
    s.add_argument("--every-device", action="store_true",
                   help="in a fio job's phase, every device's rows too (default: the job's own "
                        "devices, those its filename= is on; its group has every device)")


def run(args: argparse.Namespace) -> int:
    import fnmatch

    r = load(args.run)
    phases = r.phases()
    if args.phase:
        phases = [p for p in phases if any(fnmatch.fnmatchcase(p.name, g) for g in args.phase)]
    rows, trows = phase_rows(r, phases, idle=args.idle, every_device=args.every_device)
    if r.damage:        # whatever the format (a CSV has no room for it), the reader is told
        print(f"iopulse report: {printable(args.run)}: incomplete: {printable(r.damage)}; the "
              "report covers what was written before it", file=sys.stderr)
    if args.format == "table":
        from rich.console import Console

        con = console()
        if args.output != "-":
            with open(args.output, "w") as f:
                Console(file=f, width=240).print(rich_report(r, rows, trows, phases))
        else:
            if not con.is_terminal and "COLUMNS" not in os.environ:
                con.width = 240
            con.print(rich_report(r, rows, trows, phases))
        return EXIT_OK
    if args.format == "html":
        from ..data import require
        from ..report.html import html_report

        require("matplotlib", "--format html")
        text = html_report(r, rows, trows, phases=phases)
    elif args.format == "markdown":
        text = markdown_report(r, rows, trows, phases)
    elif args.format == "csv":
        text = csv_report(rows)
    else:
        text = json_report(r, rows, trows, phases)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return EXIT_OK
