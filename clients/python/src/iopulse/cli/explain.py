"""iopulse explain: why an OSD or a device was slow in a window, in one sentence and a table."""
from __future__ import annotations

import argparse
import fnmatch
import math
import sys
import time
from datetime import datetime
from typing import Any, Optional

from .. import ceph
from .._pb.iopulse.v1 import iopulse_pb2 as pb
from ..analysis.explain import Explanation, explain
from ..client import Client
from ..display import fmt_ns
from ..record.reader import Run, load
from .common import EXIT_OK, EXIT_SERVER, EXIT_USAGE, console, duration, print_json, printable

HELP = "why an OSD or a device was slow: which device, queue or device or flush, kv_sync, slow ops"
EXAMPLES = """examples:
  iopulse explain --osd 3                      the last 10 minutes of the local daemon's history
  iopulse explain --osd 3 --last 2m --ceph     ... and osd.3's slow ops from its admin socket
  iopulse explain --device sdc --since 03:10 --until 03:15 run1.iopulse
  iopulse explain run1.iopulse --osd 0 --phase write --slow-ops osd0-slow-ops.json --json

Which of the OSD's devices (block, block.db, block.wal, the LV and the disks under it) had IOs
slower than --slow (total latency: queued in the block layer -> completed), where their time
went (queue wait in the block layer, service in the device, flush requests), and the OSD's
bstore_kv_sync thread's fdatasync latency over the same window; then a verdict in one
sentence. With --ceph (the OSD's admin socket, --ceph-socket, or `ceph tell` where this
node has no socket of it) or --slow-ops (the JSON of
`ceph daemon osd.N dump_historic_slow_ops` saved to a file), each slow op of the OSD with the
device IO of the intervals it overlapped: a slow op without a slow device IO then was not
this node's disks (a replica, the network, or the OSD itself).

Without RUN, the window is the last --last of the daemon's history (at most its
server.ring); with RUN, the whole run, or --last before its end, --phase, --since/--until.
Times are this machine's local time: HH:MM[:SS] (the day of the data's end) or
YYYY-MM-DD HH:MM[:SS]. Figures come from whole intervals that overlap the window."""
CONNECTS = False
DEFAULT_LAST = 600.0


class Usage(ValueError):
    """What was asked cannot be answered from what was given (named in the message)."""


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("run", metavar="RUN", nargs="?",
                   help="a run file written by iopulse record (default: the live daemon)")
    who = s.add_mutually_exclusive_group(required=True)
    who.add_argument("--osd", type=int, metavar="ID", help="the Ceph OSD id (osd.ID)")
    who.add_argument("--device", action="append", metavar="NAME",
                     help="a device (its kernel name, as in iopulse info; repeatable)")
    s.add_argument("--last", type=duration, metavar="DURATION",
                   help="the window: this long before now (live; default 10m) or before the "
                        "run's end")
    s.add_argument("--since", metavar="TIME", help="the window's start (local time)")
    s.add_argument("--until", metavar="TIME", help="the window's end (local time)")
    s.add_argument("--phase", metavar="GLOB", help="a run's phase: its window (one phase)")
    s.add_argument("--host", metavar="NAME", help="a run's host (when it has several)")
    s.add_argument("--slow", type=duration, default=0.1, metavar="DURATION",
                   help="an IO is slow above this total latency (default 100ms)")
    s.add_argument("--ceph", action="store_true",
                   help="read the OSD's slow ops from its admin socket, or with `ceph tell` "
                        "where this node has no socket of it (needs --osd)")
    s.add_argument("--ceph-socket", metavar="PATH",
                   help=f"the admin socket (default {ceph.DEFAULT_SOCKET.format(osd='ID')})")
    s.add_argument("--slow-ops", metavar="FILE",
                   help="the OSD's slow ops from a file: dump_historic_slow_ops' JSON")
    s.add_argument("--json", action="store_true", help="one JSON object")


def parse_when(text: str, day_of_ns: int) -> int:
    """A local time (HH:MM[:SS] on the day of day_of_ns, or YYYY-MM-DD HH:MM[:SS], also with
    a T) as ns since the epoch."""
    t = text.strip().replace("T", " ")
    day = datetime.fromtimestamp(day_of_ns / 1e9).strftime("%Y-%m-%d")
    for fmt, prefix in (("%Y-%m-%d %H:%M:%S", ""), ("%Y-%m-%d %H:%M", ""),
                        ("%Y-%m-%d %H:%M:%S", day + " "), ("%Y-%m-%d %H:%M", day + " ")):
        try:
            return int(datetime.strptime(prefix + t, fmt).timestamp() * 1e9)
        except ValueError:
            continue
    raise Usage(f"{text!r} is not a time: HH:MM[:SS] or YYYY-MM-DD HH:MM[:SS]")


def _window(args: argparse.Namespace, first_ns: int, last_ns: int) -> tuple[int, int]:
    start, end = first_ns, last_ns
    if args.until:
        end = parse_when(args.until, last_ns)
    if args.since:
        start = parse_when(args.since, last_ns)
    elif args.last:
        start = end - int(args.last * 1e9)
    if start >= end:
        raise Usage(f"the window is empty ({args.since or ''} .. {args.until or ''})")
    return start, end


def _from_run(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any], str]:
    r: Run = load(args.run)
    hosts = [h for h in r.hosts if h.windows]
    if args.host:
        hosts = [h for h in hosts if h.name == args.host]
        if not hosts:
            raise Usage(f"{args.run}: no host {args.host!r}; hosts: "
                        f"{', '.join(h.name for h in r.hosts) or 'none'}")
    if len(hosts) > 1 and args.osd is not None:
        hosts = [h for h in hosts if h.info and any(d.osd_id == args.osd for d in h.info.devices)]
    if len(hosts) > 1:
        raise Usage(f"{args.run}: {len(hosts)} hosts; name one with --host: "
                    f"{', '.join(h.name for h in hosts)}")
    if not hosts:
        raise Usage(f"{args.run}: no host's data holds "
                    f"{'osd.%d' % args.osd if args.osd is not None else 'them'}")
    h = hosts[0]
    if args.phase:
        ps = [p for p in r.phases() if fnmatch.fnmatchcase(p.name, args.phase)]
        if len(ps) != 1:
            raise Usage(f"{args.run}: --phase {args.phase!r} matches {len(ps)} "
                        f"phases; phases: "
                        f"{', '.join(sorted({p.name for p in r.phases()})) or 'none'}")
        ups = [u for hi, u in r.iter_updates() if hi == h.index and ps[0].contains(hi, u)]
    else:
        ups = [u for hi, u in r.iter_updates() if hi == h.index]
        if ups:
            s, e = _window(args, ups[0].start_realtime_ns, max(u.end_realtime_ns for u in ups))
            ups = [u for u in ups if u.end_realtime_ns > s and u.start_realtime_ns < e]
    infos = {d.name: d for d in (h.info.devices if h.info else [])}
    return ups, infos, h.name


def _from_daemon(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any], str, str]:
    """The window's Updates from the daemon's replay (and the interval under way, waited
    for), its devices, host name and a note when its history is shorter than asked."""
    now = time.time_ns()
    end = min(now, parse_when(args.until, now)) if args.until else now
    start = (parse_when(args.since, now) if args.since else
             end - int((args.last or DEFAULT_LAST) * 1e9))
    if start >= end:
        raise Usage(f"the window is empty ({args.since or ''} .. {args.until or ''})")
    reach = (now - start) / 1e9
    with Client(args.target, timeout=args.timeout or None,
                connect_deadline=args.connect_timeout) as c:
        info = c.info()
        ups = []
        with c.subscribe_raw(replay_seconds=max(1, math.ceil(reach)),
                             timeout=reach + 2 * info.interval_s + 30) as sub:
            for raw in sub:
                u = pb.Update.FromString(raw)
                ups.append(u)
                if u.end_realtime_ns >= end:
                    break
    note = ""
    if ups and ups[0].start_realtime_ns > start + int(info.interval_ns):
        note = (f"the daemon's history reaches back {(now - ups[0].start_realtime_ns) / 1e9:.0f}"
                f" s (server.ring {info.ring_seconds} s), not {reach:.0f} s")
    ups = [u for u in ups if u.end_realtime_ns > start and u.start_realtime_ns < end]
    return ups, {d.name: d for d in info.devices}, info.hostname, note


def _slow_ops(args: argparse.Namespace) -> list[ceph.SlowOp]:
    if args.slow_ops:
        return ceph.read_file(args.slow_ops)
    if args.ceph:
        try:
            return ceph.read_osd(args.osd, args.ceph_socket)
        except ceph.CephError as e:
            raise ceph.CephError(f"--ceph: {e} (run as a user that may use the OSD's admin "
                                 f"socket, or save dump_historic_slow_ops and give "
                                 f"--slow-ops)") from None
    return []


def _clock(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def _who(ex: Explanation) -> str:
    return f"osd.{ex.osd}" if ex.osd is not None else ", ".join(d.name for d in ex.devices)


def _label(d: Any) -> str:
    extra = [x for x in (d.role, f"under {', '.join(d.over)}" if d.over else "") if x]
    return f"{d.name} ({'; '.join(extra)})" if extra else d.name


def verdict(ex: Explanation) -> str:
    """The finding in one sentence."""
    span = f"{_who(ex)}, {_clock(ex.start_real_ns)} to {_clock(ex.end_real_ns)[11:]}"
    d = ex.culprit
    if d is None:
        out = f"{span}: no IO on {'its devices' if ex.osd is not None else 'them'}"
    elif not d.slow_ios:
        out = (f"{span}: no IO over {fmt_ns(ex.slow_ns)}; the slowest device {_label(d)} "
               f"total p99 {fmt_ns(d.total_p99_ns)}, max {fmt_ns(d.total_max_ns)}")
    else:
        where = ("the device" if (d.device_share_pct or 0) >= 50 else "the block layer's queue")
        out = (f"{span}: {_label(d)} had {d.slow_ios:,} of {d.ios:,} IOs over "
               f"{fmt_ns(ex.slow_ns)}, total p99 {fmt_ns(d.total_p99_ns)} (device p99 "
               f"{fmt_ns(d.service_p99_ns)}, queue p99 {fmt_ns(d.queue_p99_ns)}); "
               f"{d.device_share_pct or 0:.0f}% of their time went to {where}")
        if d.flushes and d.flush_p99_ns and d.service_p99_ns and \
                d.flush_p99_ns > d.service_p99_ns:
            out += (f", and its {d.flushes:,} flush requests took longer still (p99 "
                    f"{fmt_ns(d.flush_p99_ns)})")
    k = ex.kv_sync
    if k is not None and k.calls:
        # the p99 is of the fdatasync calls where there were any (analysis/explain.py _kv_sync)
        what, n = ("fdatasync", k.fdatasync) if k.fdatasync else ("sync call", k.calls)
        out += f"; bstore_kv_sync {what} p99 {fmt_ns(k.p99_ns)} over {n:,} calls"
    elif ex.osd is not None:
        out += "; no bstore_kv_sync sync calls seen"
    if ex.ops:
        slow = sum(1 for o in ex.ops if o.device_slow)
        out += (f"; {len(ex.ops)} slow op(s) of the OSD, {slow} overlapping a slow device IO"
                + ("" if slow == len(ex.ops) else
                   f", {len(ex.ops) - slow} not (a replica, the network or the OSD itself)"))
    return out + "."


def _print(ex: Explanation, host: str, note: str) -> None:
    from rich.table import Table

    con = console()
    con.print(f"iopulse explain {printable(host)}: {_who(ex)}, "
              f"{_clock(ex.start_real_ns)} .. {_clock(ex.end_real_ns)} "
              f"({ex.seconds:.0f} s, {ex.updates} intervals)", markup=False, highlight=False)
    if note:
        con.print(f"note: {note}", markup=False, highlight=False)
    t = Table(box=None)
    for h in ("device", "IOs", f"over {fmt_ns(ex.slow_ns)}", "untimed", "total p50",
              "total p99", "total max", "device p99", "queue p99", "in device %", "flushes",
              "flush p99", "preflush p99"):
        t.add_column(h, justify="left" if h == "device" else "right")
    for d in ex.devices:
        t.add_row(printable(_label(d)), f"{d.ios:,}", f"{d.slow_ios:,}", f"{d.untimed:,}",
                  fmt_ns(d.total_p50_ns), fmt_ns(d.total_p99_ns), fmt_ns(d.total_max_ns),
                  fmt_ns(d.service_p99_ns), fmt_ns(d.queue_p99_ns),
                  "-" if d.device_share_pct is None else f"{d.device_share_pct:.0f}",
                  f"{d.flushes:,}", fmt_ns(d.flush_p99_ns), fmt_ns(d.preflush_p99_ns))
    con.print(t)
    if ex.kv_sync is not None:
        k = ex.kv_sync
        con.print(f"bstore_kv_sync ({k.threads} thread(s)): {k.calls:,} sync calls, fdatasync "
                  f"{k.fdatasync:,}; p50 {fmt_ns(k.p50_ns)}, p99 {fmt_ns(k.p99_ns)}, max "
                  f"{fmt_ns(k.max_ns)}", markup=False, highlight=False)
    for o in ex.ops:
        what = ("no data for its time" if not o.intervals else
                f"{o.slow_ios:,} of {o.ios:,} device IOs over {fmt_ns(ex.slow_ns)} in the "
                f"{o.intervals} interval(s) it overlapped, slowest {fmt_ns(o.slowest_total_ns)}"
                f"{' on ' + o.slowest_device if o.slowest_device else ''}")
        con.print(f"slow op {_clock(o.op.initiated_ns)} {fmt_ns(o.op.duration_ns)}: {what}; "
                  f"{printable(o.op.description[:120])}", markup=False, highlight=False)
    con.print(verdict(ex), markup=False, highlight=False)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (Usage, ceph.CephError) as e:
        print(f"iopulse explain: {printable(str(e))}", file=sys.stderr)
        return EXIT_SERVER if isinstance(e, ceph.CephError) and args.slow_ops is None \
            else EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    if (args.ceph or args.ceph_socket) and args.osd is None:
        raise Usage("--ceph reads an OSD's slow ops: give --osd")
    if args.run is None and (args.phase or args.host):
        raise Usage("--phase and --host choose within a run file: give RUN")
    if args.since and args.last:
        raise Usage("--since and --last both set the window's start: give one")
    note = ""
    if args.run is not None:
        ups, infos, host = _from_run(args)
    else:
        ups, infos, host, note = _from_daemon(args)
    if not ups:
        raise Usage(f"{args.run or 'the daemon'}: no data in the window")
    ops = _slow_ops(args)
    try:
        ex = explain(ups, infos, osd=args.osd, devices=args.device or (),
                     slow_ns=int(args.slow * 1e9), slow_ops=ops)
    except ValueError as e:
        raise Usage(str(e)) from None
    if args.json:
        print_json({"host": host, "note": note, "verdict": verdict(ex), **ex.to_dict()})
    else:
        _print(ex, host, note)
    return EXIT_OK
