"""iopulse snapshot: everything since the daemon started, merged."""
from __future__ import annotations

import argparse

from ..client import Client
from ..errors import IopulseError
from ..render import render
from .common import EXIT_OK, EXIT_SERVER, console, print_json

HELP = 'everything since the daemon started, merged'
EXAMPLES = """examples:
  iopulse snapshot                         table of everything since the daemon started
  iopulse snapshot --json --device nvme0n1 sda
  iopulse snapshot --json --thread 'bstore_kv*'
  iopulse snapshot --targets-file osd-nodes.txt   one table across every node, merged row

With several targets: JSON lines, each with "target" and "host" (or "error"), or one table
across hosts; a daemon that cannot be reached is listed and the exit status is 1."""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--json", action="store_true", help="one JSON object (an Update)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="NAME",
                   help="only these devices (exact names)")
    s.add_argument("--thread", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only threads whose name matches")


def run_fleet(args: argparse.Namespace) -> int:
    """Several daemons: a snapshot of each (one failing does not stop the others); JSON
    lines with target and host, or one table across hosts. Exit 1 if any failed."""
    from ..fleet import Fleet, render_fleet

    fleet = Fleet(args.targets)            # not started: filled here, one call per daemon
    for s in fleet.states:
        try:
            with Client(s.target, timeout=args.timeout or None,
                        connect_deadline=args.connect_timeout) as c:
                s.host = c.info().hostname or s.target
                s.update, s.up = c.snapshot(devices=args.device, threads=args.thread), True
        except IopulseError as e:
            s.error = str(e)
    names = fleet.host_names()
    if args.json:
        for s in fleet.states:
            print_json({"target": s.target, "host": names[s.target], "error": s.error}
                       if s.update is None else
                       {"target": s.target, "host": names[s.target], **s.update.to_dict()})
    else:
        console().print(render_fleet(fleet, "iopulse snapshot (rates: average since start)",
                                     nthreads=20, merge=True, live=False))
    return EXIT_SERVER if any(s.error for s in fleet.states) else EXIT_OK


def run(c: Client, args: argparse.Namespace) -> int:
    if len(args.targets) > 1:
        return run_fleet(args)
    u = c.snapshot(devices=args.device, threads=args.thread)
    if args.json:
        print_json(u.to_dict())
        return EXIT_OK
    console().print(render(u, f"iopulse snapshot {c.target} (rates: average since start)",
                            nthreads=20))
    return EXIT_OK
