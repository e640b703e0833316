"""The iopulse command: info, snapshot, top, watch, mark.

Exit status: 0 ok (also when the reader of our output goes away), 1 the daemon failed or
cannot be reached, 2 usage error (including a request the daemon rejected as invalid, e.g. an
unknown device name), 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Optional

from . import __version__
from .client import DEFAULT_TARGET, BadTarget, Client, parse_target
from .errors import InvalidArgument, IopulseError
from .render import SORT_KEYS, render

EXIT_OK, EXIT_SERVER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ENV_TARGET = "IOPULSE_TARGET"

EXAMPLES = {
    None: """examples:
  iopulse top                                  live per-device table from the local daemon
  iopulse top --sort qwait --target 10.0.0.5:7073
  iopulse watch --count 60 > run.jsonl         one JSON line per Update, 60 of them
  iopulse mark fill --label run=3              mark a benchmark phase (then: mark fill --end)
  iopulse snapshot --json --device sda         everything since the daemon started
  iopulse info                                 version, kernel, devices, config in effect

The daemon is at --target, else $IOPULSE_TARGET, else %s.
Options before the command (--target, --timeout, --connect-timeout) may also follow it.
Exit status: 0 ok, 1 the daemon failed or cannot be reached, 2 usage error, 130 Ctrl-C.""" \
        % DEFAULT_TARGET,
    "info": """examples:
  iopulse info
  iopulse info --json | jq .devices
  iopulse --target /run/iopulse/iopulse.sock info""",
    "snapshot": """examples:
  iopulse snapshot                         table of everything since the daemon started
  iopulse snapshot --json --device nvme0n1 sda
  iopulse snapshot --json --thread 'bstore_kv*'""",
    "top": """examples:
  iopulse top                       refresh every interval, busiest devices first
  iopulse top --device 'sd*' --sort svc
  iopulse top --interval-multiple 10 --threads 20
  iopulse top --once                print one table and exit

IOPS and MB/s count reads, writes and discards; the queue wait and service columns merge
reads and writes; flush/s is flush requests sent to the device, flush p99 the latency of
requests carrying REQ_PREFLUSH (fsync barriers). Rates are per second of each Update's
window. Ctrl-C leaves; without a terminal one table is printed per Update.""",
    "watch": """examples:
  iopulse watch
  iopulse watch --device sda --count 10
  iopulse watch --replay 300 > last5min.jsonl
  iopulse watch --thread 'bstore_*' --interval-multiple 10 | jq .threads

Each line is one Update as a JSON object: its window, per-device counters and sparse
histograms, sync threads, phase marks and drops (the same fields as iopulse snapshot --json).""",
    "mark": """examples:
  iopulse mark fill --label run=3 --label bs=4k
  iopulse mark fill --end --label run=3
  iopulse mark --end --id 42

The daemon closes its current interval at the mark, so the phase edge is an interval edge:
IO started after this command returns is counted after the mark. Prints the daemon's
timestamp and the mark's id. Phases may nest; an end closes the latest open phase of that
name in this session ($IOPULSE_SESSION, set by iopulse record), or the one with --id. At
most server.mark_rate marks per second (default 20).""",
}


def _int_at_least(lo: int) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not a whole number") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} is less than {lo}")
        return v
    return parse


def _seconds(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number of seconds") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{s} is not a finite number of seconds >= 0")
    return v


def _label(s: str) -> tuple[str, str]:
    k, sep, v = s.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError(f"{s!r}: expected KEY=VALUE")
    return k, v


def _target(s: str) -> str:
    try:
        return parse_target(s)
    except BadTarget as e:
        raise argparse.ArgumentTypeError(e.reason) from None


GLOBAL_DEFAULTS = {"target": None, "connect_timeout": 10.0, "timeout": 10.0}


def _global_options() -> argparse.ArgumentParser:
    """The options every command takes, before or after its name. Their defaults are
    SUPPRESS here (a command's parser would otherwise overwrite what was given before the
    command) and filled in by parse_args()."""
    g = argparse.ArgumentParser(add_help=False)
    o = g.add_argument_group("connection (before or after the command)")
    o.add_argument("--target", type=_target, default=argparse.SUPPRESS,
                   help="daemon address: unix:/PATH, unix:///PATH, /PATH or HOST:PORT "
                        f"(default: ${ENV_TARGET}, else {DEFAULT_TARGET})")
    o.add_argument("--connect-timeout", type=_seconds, default=argparse.SUPPRESS, metavar="S",
                   help="keep retrying a daemon that is starting or restarting this long "
                        "(default 10); a missing or forbidden socket fails at once")
    o.add_argument("--timeout", type=_seconds, default=argparse.SUPPRESS, metavar="S",
                   help="time limit of each info, snapshot or mark call (default 10, 0: none)")
    return g


def parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    common = _global_options()
    p = argparse.ArgumentParser(prog="iopulse", formatter_class=fmt, epilog=EXAMPLES[None],
                                description="Per-device block IO telemetry from iopulsed.",
                                parents=[common])
    p.add_argument("--version", action="version", version=f"iopulse {__version__}")
    sp = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def sub(name: str, help: str) -> argparse.ArgumentParser:
        return sp.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                             epilog=EXAMPLES[name], formatter_class=fmt, parents=[common])

    s = sub("info", "version, kernel, histogram layout, devices, config, agent cost")
    s.add_argument("--json", action="store_true", help="one JSON object")

    s = sub("snapshot", "everything since the daemon started, merged")
    s.add_argument("--json", action="store_true", help="one JSON object (an Update)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="NAME",
                   help="only these devices (exact names)")
    s.add_argument("--thread", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only threads whose name matches")

    s = sub("top", "live per-device table and the busiest sync threads")
    s.add_argument("--interval-multiple", type=_int_at_least(1), default=1, metavar="N",
                   help="one refresh per N daemon intervals (default 1)")
    s.add_argument("--sort", choices=SORT_KEYS, default="iops",
                   help="row order (default iops; qwait and svc sort by p99)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only devices whose name matches (fnmatch)")
    s.add_argument("--threads", type=_int_at_least(0), default=10, metavar="N",
                   help="sync threads shown (default 10, 0: none)")
    s.add_argument("--once", action="store_true", help="print one table and exit")

    s = sub("watch", "one JSON line per Update")
    s.add_argument("--json", action="store_true",
                   help="JSON lines (the default and only format; accepted for scripts that "
                        "say it)")
    s.add_argument("--interval-multiple", type=_int_at_least(1), default=1, metavar="N",
                   help="one Update per N daemon intervals (default 1)")
    s.add_argument("--device", action="extend", nargs="+", default=[], metavar="NAME",
                   help="only these devices (exact names)")
    s.add_argument("--thread", action="extend", nargs="+", default=[], metavar="GLOB",
                   help="only threads whose name matches")
    s.add_argument("--replay", type=_int_at_least(0), default=0, metavar="S",
                   help="start with the last S seconds the daemon kept")
    s.add_argument("--count", type=_int_at_least(1), default=None, metavar="N",
                   help="stop after N Updates")

    s = sub("mark", "mark the begin (or --end) of a named phase, e.g. a benchmark step")
    s.add_argument("name", metavar="NAME", nargs="?", default="",
                   help="the phase's name, e.g. randwrite-4k; end it with the same name and "
                        "--end (or with --end --id ID)")
    s.add_argument("--end", action="store_true", help="the phase ends (default: it begins)")
    s.add_argument("--id", type=_int_at_least(1), default=0, metavar="ID",
                   help="with --end: the id of the begin mark to close (printed by the begin); "
                        "default: the latest open phase named NAME in this session")
    s.add_argument("--label", action="append", type=_label, default=[], metavar="KEY=VALUE",
                   help="a label of the mark (repeatable)")
    return p


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """Parse argv; options left out take their defaults, --target from $IOPULSE_TARGET (a bad
    value there is a usage error naming the variable)."""
    p = parser()
    args = p.parse_args(argv)
    for k, v in GLOBAL_DEFAULTS.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    if args.cmd == "mark" and not args.name and not (args.end and args.id):
        p.error("mark: give the phase's NAME (or --end --id ID)")
    if args.cmd == "mark" and args.id and not args.end:
        p.error("mark: --id names the begin that an --end closes; a begin gets its id from "
                "the daemon")
    if args.target is None:
        env = os.environ.get(ENV_TARGET)
        if env:
            try:
                args.target = parse_target(env)
            except BadTarget as e:
                p.error(f"environment variable {ENV_TARGET}={env!r} is not a daemon address: "
                        f"{e.reason}")
        else:
            args.target = DEFAULT_TARGET
    return args


def _print_json(obj: Any, indent: Optional[int] = None) -> None:
    sys.stdout.write(json.dumps(obj, indent=indent, separators=None if indent else (",", ":"))
                     + "\n")
    sys.stdout.flush()


def _console() -> Any:
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 160   # not 80: keep the ten columns of a pipe or log file readable
    return console


def cmd_info(c: Client, args: argparse.Namespace) -> int:
    i = c.info()
    if args.json:
        _print_json(i.to_dict(), indent=2)
        return EXIT_OK
    started = time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(i.started_realtime_ns / 1e9))
    print(f"iopulsed {i.version} on {i.hostname or '?'} at {c.target}, kernel {i.kernel}, "
          f"attach mode {i.attach_mode}, BTF {'yes' if i.btf else 'no'}, started {started}")
    print(f"interval {i.interval_s:g}s, last interval #{i.last_seq}, replay ring "
          f"{i.ring_seconds}s, {i.subscribers} subscriber(s); last fan-out "
          f"{i.fanout_ns / 1e6:.2f}ms to {i.fanout_streams} stream(s)")
    h = i.histogram
    print(f"histograms: precision {h.precision}, range 2^{h.range_bits}, {h.buckets} buckets, "
          f"max error {h.max_relative_error * 100:g}%")
    runs = i.cost.bpf_run_count
    bpf = (f"{i.cost.bpf_run_time_ns / 1e9:.3f}s over {runs} runs"
           + (f" ({i.cost.bpf_run_time_ns / runs:.0f}ns each)" if runs else "")
           if i.cost.bpf_stats else "run time not measured (bpf_stats off)")
    print(f"agent: RSS {i.cost.rss_bytes / 2**20:.1f} MiB, CPU user {i.cost.cpu_user_s:.2f}s "
          f"system {i.cost.cpu_system_s:.2f}s, BPF {bpf}")
    print(f"devices ({len(i.devices)}):")
    for d in i.devices:
        extra = [x for x in (d.model, d.dm_name and f"dm {d.dm_name}",
                             d.slaves and f"on {'+'.join(d.slaves)}",
                             d.osd_id is not None and f"osd.{d.osd_id} {d.osd_role or ''}".strip(),
                             "rotational" if d.rotational else "",
                             "partition" if d.partition else "",
                             "" if d.present else "gone") if x]
        print(f"  {d.name:14} {d.dev:8} {', '.join(extra)}")
    print("config:")
    for k in sorted(i.config):
        print(f"  {k} = {i.config[k]}")
    return EXIT_OK


def cmd_snapshot(c: Client, args: argparse.Namespace) -> int:
    u = c.snapshot(devices=args.device, threads=args.thread)
    if args.json:
        _print_json(u.to_dict())
        return EXIT_OK
    _console().print(render(u, f"iopulse snapshot {c.target} (rates: average since start)",
                            nthreads=20))
    return EXIT_OK


def cmd_top(c: Client, args: argparse.Namespace) -> int:
    from rich.live import Live
    from rich.text import Text

    console = _console()
    what = f"iopulse top {c.target}"

    def table(u: Any) -> Any:
        return render(u, what, args.device, args.sort, args.threads)

    if args.once or not console.is_terminal:
        with c.subscribe(interval_multiple=args.interval_multiple) as sub:
            for u in sub:
                console.print(table(u))
                if args.once:
                    break
        return EXIT_OK
    with Live(console=console, auto_refresh=False, screen=False) as live:
        live.update(Text(f"{what}: connecting to {c.target} ..."), refresh=True)

        def retrying(e: IopulseError, left: float) -> None:
            live.update(Text(f"{what}: connecting to {c.target} ...\n  {e}\n  retrying for "
                             f"{left:.0f} s more"), refresh=True)

        c.on_retry = retrying
        with c.subscribe(interval_multiple=args.interval_multiple) as sub:
            live.update(Text(f"{what}: connected, waiting for the first Update ..."),
                        refresh=True)
            for u in sub:
                live.update(table(u), refresh=True)
    return EXIT_OK


def cmd_watch(c: Client, args: argparse.Namespace) -> int:
    with c.subscribe(interval_multiple=args.interval_multiple, devices=args.device,
                     threads=args.thread, replay_seconds=args.replay) as sub:
        for n, u in enumerate(sub, 1):
            _print_json(u.to_dict())
            if args.count is not None and n >= args.count:
                break
    return EXIT_OK


def cmd_mark(c: Client, args: argparse.Namespace) -> int:
    m = c.mark_phase(args.name, end=args.end, phase_id=args.id, **dict(args.label)).mark
    secs, ns = divmod(m.realtime_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"
    labels = "".join(f" {k}={v}" for k, v in sorted(m.labels.items()))
    print(f"{'end' if m.end else 'begin'} {m.name}{labels}: {stamp} (realtime_ns "
          f"{m.realtime_ns}, monotonic_ns {m.monotonic_ns}, id {m.id})")
    return EXIT_OK


COMMANDS = {"info": cmd_info, "snapshot": cmd_snapshot, "top": cmd_top, "watch": cmd_watch,
            "mark": cmd_mark}


def main(argv: Optional[list[str]] = None) -> int:
    """Run the iopulse command with argv (default sys.argv[1:]); returns the exit status."""
    args = parse_args(argv)
    try:
        with Client(args.target, timeout=args.timeout or None,
                    connect_deadline=args.connect_timeout) as c:
            return COMMANDS[args.cmd](c, args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (iopulse watch --json | head): stop quietly, and keep Python
        # from complaining about the unflushable stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    except InvalidArgument as e:
        print(f"iopulse: {e}", file=sys.stderr)
        return EXIT_USAGE
    except IopulseError as e:
        print(f"iopulse: {e}", file=sys.stderr)
        return EXIT_SERVER
