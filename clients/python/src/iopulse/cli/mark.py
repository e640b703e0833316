"""iopulse mark: mark the begin or end of a named phase."""
from __future__ import annotations

import argparse
import time

from ..client import Client
from .common import EXIT_OK, int_at_least, label

HELP = 'mark the begin (or --end) of a named phase, e.g. a benchmark step'
EXAMPLES = """examples:
  iopulse mark fill --label run=3 --label bs=4k
  iopulse mark fill --end --label run=3
  iopulse mark --end --id 42

The daemon closes its current interval at the mark, so the phase edge is an interval edge:
IO started after this command returns is counted after the mark. Prints the daemon's
timestamp and the mark's id. Phases may nest; an end closes the latest open phase of that
name in this session ($IOPULSE_SESSION, set by iopulse record), or the one with --id. At
most server.mark_rate marks per second (default 20)."""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("name", metavar="NAME", nargs="?", default="",
                   help="the phase's name, e.g. randwrite-4k; end it with the same name and "
                        "--end (or with --end --id ID)")
    s.add_argument("--end", action="store_true", help="the phase ends (default: it begins)")
    s.add_argument("--id", type=int_at_least(1), default=0, metavar="ID",
                   help="with --end: the id of the begin mark to close (printed by the begin); "
                        "default: the latest open phase named NAME in this session")
    s.add_argument("--label", action="append", type=label, default=[], metavar="KEY=VALUE",
                   help="a label of the mark (repeatable)")


def run(c: Client, args: argparse.Namespace) -> int:
    m = c.mark_phase(args.name, end=args.end, phase_id=args.id, **dict(args.label)).mark
    secs, ns = divmod(m.realtime_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"
    labels = "".join(f" {k}={v}" for k, v in sorted(m.labels.items()))
    print(f"{'end' if m.end else 'begin'} {m.name}{labels}: {stamp} (realtime_ns "
          f"{m.realtime_ns}, monotonic_ns {m.monotonic_ns}, id {m.id})")
    return EXIT_OK
