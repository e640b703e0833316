"""iopulse top: a live per-device table and the busiest sync threads."""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, Iterator, Optional

from ..client import Client
from ..errors import IopulseError
from ..flood import Flooding, decode_bounded
from ..model import Update
from ..phases.live import OpenPhases
from ..render import CLASSES, SORT_KEYS, render
from .common import EXIT_OK, EXIT_SERVER, console, int_at_least, printable

HELP = 'live per-device table and the busiest sync threads'
EXAMPLES = """examples:
  iopulse top                       refresh every interval, busiest devices first
  iopulse top --device 'sd*' --sort svc
  iopulse top --interval-multiple 10 --threads 20
  iopulse top --once                print one table and exit
  iopulse top --class loop --merge   the loop devices, and one line of them all merged
  iopulse top --target node1:7073 --target node2:7073 --device 'nvme*' --merge
                                    one table across hosts, and their NVMe disks merged

Per device a line for each op it did (read, write, discard) and, when it did more than one,
a line of all of them together; the columns name their unit (µs, or ms where a column holds
100 ms or more). MB/s is 10^6 bytes per second, MiB/s 2^20. seq %, flushes/s (flush requests
sent to the device) and preflush p99 (requests carrying REQ_PREFLUSH: fsync barriers) are the
device's, on its first line. Rates are per second of each Update's window; the figures are
computed as in iopulse report. A terminal too narrow for every column gets the table folded
into several, each with the device column; nothing is cut.

With several --target (or a comma-separated $IOPULSE_TARGET) the table has a host column and
is sorted cluster-wide. --merge adds a line per device class shown (disk, partition, loop,
stacked, member) whose percentiles are those of all their IOs together (buckets merge
exactly): devices of different classes are never added up (a loop device's IO also reaches
the disk holding its file, an LV's its disks), a device under another shown device of its
class is left out, and a device seen by two daemons of one host (same hostname and
MAJOR:MINOR) counts once; what was left out is said below the table. A host that goes away
is shown as DOWN and reconnected in the background; the others keep updating.
Ctrl-C leaves; without a terminal one table is printed per Update.

top holds one Update per target (at most 4 MiB, gRPC's limit). A target whose Update lists
more devices than an iopulsed tracks (4,096) is refused as flooding: named and dropped (shown
as REFUSED among several targets; alone, top exits 1)."""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--interval-multiple", type=int_at_least(1), default=1, metavar="N",
                   help="one refresh per N daemon intervals (default 1)")
    s.add_argument("--sort", choices=SORT_KEYS, default="iops",
                   help="row order (default iops; qwait and svc sort by p99)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only devices whose name matches (fnmatch)")
    s.add_argument("--threads", type=int_at_least(0), default=10, metavar="N",
                   help="sync threads shown (default 10, 0: none)")
    s.add_argument("--once", action="store_true", help="print one table and exit")
    s.add_argument("--class", dest="classes", action="append", choices=CLASSES, default=[],
                   help="only devices of this class (repeatable)")
    s.add_argument("--merge", action="store_true",
                   help="a line per device class merging the shown devices")


def run_fleet(args: argparse.Namespace) -> int:
    """top over several daemons."""
    from rich.live import Live

    from ..fleet import Fleet, render_fleet

    con = console()
    what = "iopulse top"
    fleet = Fleet(args.targets, args.interval_multiple).start()
    try:
        def view() -> Any:
            return render_fleet(fleet, what, args.device, args.sort, args.threads, args.merge,
                                classes=args.classes)
        if args.once or not con.is_terminal:
            deadline = time.monotonic() + max(5.0, args.connect_timeout)
            while not fleet.settled() and time.monotonic() < deadline:
                fleet.wait(0.2)
            con.print(view())
            if args.once:
                return EXIT_SERVER if any(s.refused for s in fleet.states) else EXIT_OK
            seen = sum(s.updates for s in fleet.states)
            while True:
                fleet.wait(1.0)
                now = sum(s.updates for s in fleet.states)
                if now != seen:
                    seen = now
                    con.print(view())
        with Live(console=con, auto_refresh=False, screen=False) as live:
            while True:
                live.update(view(), refresh=True)
                fleet.wait(1.0)
    finally:
        fleet.stop()


def run(c: Client, args: argparse.Namespace) -> int:
    if len(args.targets) > 1:
        return run_fleet(args)
    con = console()
    what = f"iopulse top {c.target}"
    phases: Optional[OpenPhases] = None
    infos: dict[str, Any] = {}

    def table(u: Any) -> Any:
        nonlocal phases
        if phases is None:      # the phases open when we connected, then the marks we see
            info = c.info()
            phases = OpenPhases(info.open_phases)
            infos.update({d.name: d for d in info.devices})
        phases.update(u)
        return render(u, what, args.device, args.sort, args.threads, phases.now(), infos,
                      args.classes, args.merge)

    try:
        return _follow(c, args, con, what, table)
    except Flooding as e:
        print(f"iopulse top: {printable(str(e))}", file=sys.stderr)
        return EXIT_SERVER


def _updates(c: Client, sub: Any) -> Iterator[Update]:
    """The stream's Updates, each decoded within iopulse.flood's bound (Flooding if not)."""
    for raw in sub:
        yield decode_bounded(c.target, raw)


def _follow(c: Client, args: argparse.Namespace, con: Any, what: str,
            table: Callable[[Update], Any]) -> int:
    from rich.live import Live
    from rich.text import Text

    if args.once or not con.is_terminal:
        with c.subscribe_raw(interval_multiple=args.interval_multiple) as sub:
            for u in _updates(c, sub):
                con.print(table(u))
                if args.once:
                    break
        return EXIT_OK
    with Live(console=con, auto_refresh=False, screen=False) as live:
        live.update(Text(f"{what}: connecting to {c.target} ..."), refresh=True)

        def retrying(e: IopulseError, left: float) -> None:
            live.update(Text(f"{what}: connecting to {c.target} ...\n  {printable(str(e))}\n"
                             f"  retrying for {left:.0f} s more"), refresh=True)

        c.on_retry = retrying
        with c.subscribe_raw(interval_multiple=args.interval_multiple) as sub:
            live.update(Text(f"{what}: connected, waiting for the first Update ..."),
                        refresh=True)
            for u in _updates(c, sub):
                live.update(table(u), refresh=True)
    return EXIT_OK
