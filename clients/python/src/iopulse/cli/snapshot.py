"""iopulse snapshot: everything since the daemon started, merged."""
from __future__ import annotations

import argparse

from ..client import Client
from ..render import render
from .common import EXIT_OK, console, print_json

HELP = 'everything since the daemon started, merged'
EXAMPLES = """examples:
  iopulse snapshot                         table of everything since the daemon started
  iopulse snapshot --json --device nvme0n1 sda
  iopulse snapshot --json --thread 'bstore_kv*'"""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--json", action="store_true", help="one JSON object (an Update)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="NAME",
                   help="only these devices (exact names)")
    s.add_argument("--thread", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only threads whose name matches")


def run(c: Client, args: argparse.Namespace) -> int:
    u = c.snapshot(devices=args.device, threads=args.thread)
    if args.json:
        print_json(u.to_dict())
        return EXIT_OK
    console().print(render(u, f"iopulse snapshot {c.target} (rates: average since start)",
                            nthreads=20))
    return EXIT_OK
