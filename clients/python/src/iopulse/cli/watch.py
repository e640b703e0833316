"""iopulse watch: one JSON line per Update."""
from __future__ import annotations

import argparse
import queue
from typing import Any

from ..client import Client
from .common import EXIT_OK, int_at_least, print_json

HELP = 'one JSON line per Update'
EXAMPLES = """examples:
  iopulse watch
  iopulse watch --device sda --count 10
  iopulse watch --replay 300 > last5min.jsonl
  iopulse watch --thread 'bstore_*' --interval-multiple 10 | jq .threads

Each line is one Update as a JSON object: its window, per-device counters and sparse
histograms, sync threads, phase marks and drops (the same fields as iopulse snapshot --json).
With several --target, lines of all daemons interleave as they arrive, each with "target" and
"host"; a daemon that goes away gives {"target", "host", "down": reason} and is reconnected."""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--json", action="store_true",
                   help="JSON lines (the default and only format; accepted for scripts that "
                        "say it)")
    s.add_argument("--interval-multiple", type=int_at_least(1), default=1, metavar="N",
                   help="one Update per N daemon intervals (default 1)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="NAME",
                   help="only these devices (exact names)")
    s.add_argument("--thread", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only threads whose name matches")
    s.add_argument("--replay", type=int_at_least(0), default=0, metavar="S",
                   help="start with the last S seconds the daemon kept")
    s.add_argument("--count", type=int_at_least(1), default=None, metavar="N",
                   help="stop after N Updates")


def run_fleet(args: argparse.Namespace) -> int:
    """Several daemons: their Updates interleaved as they come, each with its target and host;
    a daemon that goes away gives one line {"target", "host", "down": reason} and is
    reconnected."""
    from ..fleet import Fleet

    events: "queue.Queue[Any]" = queue.Queue()
    fleet = Fleet(args.targets, args.interval_multiple, events=events, devices=args.device,
                  threads=args.thread, replay_seconds=args.replay).start()
    n = 0
    try:
        while True:
            s, u = events.get()
            names = fleet.host_names()
            if u is None:
                print_json({"target": s.target, "host": names[s.target], "down": s.error})
                continue
            print_json({"target": s.target, "host": names[s.target], **u.to_dict()})
            n += 1
            if args.count is not None and n >= args.count:
                return EXIT_OK
    finally:
        fleet.stop()


def run(c: Client, args: argparse.Namespace) -> int:
    if len(args.targets) > 1:
        return run_fleet(args)
    with c.subscribe(interval_multiple=args.interval_multiple, devices=args.device,
                     threads=args.thread, replay_seconds=args.replay) as sub:
        for n, u in enumerate(sub, 1):
            print_json(u.to_dict())
            if args.count is not None and n >= args.count:
                break
    return EXIT_OK
