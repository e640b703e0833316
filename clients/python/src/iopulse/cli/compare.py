"""iopulse compare: two configurations, each one or more repeated runs."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..compare import METRICS, Change, compare
from ..record.reader import load
from ..report.tables import fmt
from .common import EXIT_OK, EXIT_USAGE, console

HELP = "compare runs: change per phase, device and metric, flagged when it stands out"
EXAMPLES = """examples:
  iopulse compare base1.iopulse base2.iopulse -- tuned1.iopulse tuned2.iopulse
  iopulse compare before.iopulse -- after.iopulse --format markdown
  iopulse compare a*.iopulse -- b*.iopulse --all --min-change 5

With two or more runs on each side, a change is flagged when Welch's t-test on the per-run
values gives p < 0.05 and the change is at least --min-change percent (default 10). With one
run on a side nothing is flagged (the run-to-run spread is unknown; p then comes from the
phase's intervals, for orientation): record each configuration at least twice. Phases match
by name and order; labels that differ are shown. Flagged changes are green when better (more
IOPS, less latency), red when worse."""
CONNECTS = False
KIND = {"iops": "rate", "mbps": "rate2"}
OPTIONS_WITH_VALUE = ("--format", "--min-change", "-o", "--output", "--target", "--timeout",
                      "--connect-timeout")


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("runs", nargs="+", metavar="RUN",
                   help="BASE runs, then --, then the OTHER runs")
    # the OTHER runs (after --) are split off before argparse sees them: args.other
    s.add_argument("--format", choices=("table", "markdown", "json", "html"), default="table",
                   help="table (terminal, default), markdown, json, or html (flagged changes "
                        "coloured)")
    s.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="write here instead of standard output (markdown, json, html)")
    s.add_argument("--min-change", type=float, default=10.0, metavar="PCT",
                   help="smallest change in percent that is flagged (default 10)")
    s.add_argument("--all", action="store_true",
                   help="every metric (default: flagged changes and IOPS of every row)")


def _value(c: Change, v: Any) -> str:
    return fmt(KIND.get(c.metric, "ns"), v)


def _shown(changes: list[Change], everything: bool) -> list[Change]:
    return [c for c in changes if everything or c.flagged or c.metric == "iops"]


def _emit(path: str, text: str) -> int:
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    bpaths, opaths = list(args.runs), list(args.other)
    if not bpaths or not opaths:
        print("iopulse compare: both sides need at least one run", file=sys.stderr)
        return EXIT_USAGE
    base = [load(p) for p in bpaths]
    other = [load(p) for p in opaths]
    changes = compare(base, other, min_change=args.min_change)
    shown = _shown(changes, args.all)
    names = dict((k, h) for k, h, _ in METRICS)
    head = (f"base: {', '.join(bpaths)}\nother: {', '.join(opaths)}\n"
            f"{sum(c.flagged for c in changes)} of {len(changes)} comparisons flagged "
            f"(basis: {changes[0].basis if changes else '-'})")
    if changes and changes[0].basis == "intervals":
        head += ("\none run on a side: the run-to-run spread is unknown, nothing is flagged "
                 "(p from the phase's intervals, for orientation); record each side twice")
    if args.format == "json":
        return _emit(args.output, json.dumps(
            {"base": bpaths, "other": opaths, "changes": [c.to_dict() for c in changes]},
            indent=1) + "\n")
    cols = ["phase", "host", "device", "metric", "base", "other", "change", "p", "", "labels"]
    rows = []
    for c in shown:
        pct = c.change_pct
        mark = "" if not c.flagged else ("better" if c.better else "worse")
        rows.append((c, [c.phase + (f" #{c.occurrence + 1}" if c.occurrence else ""), c.host,
                         c.device, names[c.metric], _value(c, c.base_mean),
                         _value(c, c.other_mean), "-" if pct is None else f"{pct:+.1f}%",
                         "-" if c.p is None else f"{c.p:.3f}", mark,
                         " ".join(f"{k}={a}->{b}" for k, (a, b) in sorted(
                             c.labels_changed.items()))]))
    if args.format == "html":
        from ..report.html import compare_page

        return _emit(args.output, compare_page(
            head, cols, [r for _, r in rows],
            ["" if not c.flagged else ("better" if c.better else "worse") for c, _ in rows]))
    if args.format == "markdown":
        out = [f"# iopulse compare\n\n```\n{head}\n```\n", "| " + " | ".join(cols) + " |",
               "|" + "|".join("---" for _ in cols) + "|"]
        for c, r in rows:
            if c.flagged:
                r[8] = f"**{r[8]}**"
            out.append("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
        return _emit(args.output, "\n".join(out) + "\n")
    from rich.table import Table

    con = console()
    con.print(head)
    t = Table(title_justify="left")
    for i, col in enumerate(cols):
        t.add_column(col, justify="right" if 4 <= i <= 7 else "left",
                     min_width=max([len(r[i]) for _, r in rows] + [1]))
    for c, r in rows:
        style = None if not c.flagged else ("green" if c.better else "red")
        t.add_row(*r, style=style)
    con.print(t)
    return EXIT_OK
