"""iopulse mark: mark the begin or end of a named phase."""
from __future__ import annotations

import argparse
import os
import time

from ..client import Client
from ..errors import InvalidArgument, IopulseError
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
most server.mark_rate marks per second (default 20). Run by a command under iopulse record
(without --target), the mark goes through the recorder to every daemon it records."""
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


def _through_recorder(sock: str, args: argparse.Namespace) -> int:
    from ..record.broker import request

    if args.id:
        raise InvalidArgument("mark: --id is not available inside iopulse record (the phase "
                              "has an id on every daemon); end it by NAME", sock)
    try:
        r = request(sock, {"op": "end" if args.end else "begin", "name": args.name,
                           "labels": dict(args.label)})
    except OSError as e:
        raise IopulseError(f"mark: the recorder at $IOPULSE_RECORD={sock} is not reachable: "
                           f"{e}", sock) from None
    if not r.get("ok"):     # exit 2, as outside record when the daemon refuses a mark
        raise InvalidArgument(f"mark: {r.get('error')}", sock)
    for m in r.get("marks", []):
        print(f"{'end' if m['end'] else 'begin'} {m['name']} on host {m['host']}: realtime_ns "
              f"{m['realtime_ns']}, id {m['id']}")
    return EXIT_OK


def run(c: Client, args: argparse.Namespace) -> int:
    sock = os.environ.get("IOPULSE_RECORD")
    if sock and not getattr(args, "target_given", True):
        return _through_recorder(sock, args)
    m = c.mark_phase(args.name, end=args.end, phase_id=args.id, **dict(args.label)).mark
    secs, ns = divmod(m.realtime_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"
    labels = "".join(f" {k}={v}" for k, v in sorted(m.labels.items()))
    print(f"{'end' if m.end else 'begin'} {m.name}{labels}: {stamp} (realtime_ns "
          f"{m.realtime_ns}, monotonic_ns {m.monotonic_ns}, id {m.id})")
    return EXIT_OK
