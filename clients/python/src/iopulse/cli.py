"""The iopulse command: info, snapshot, top, watch, mark."""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from typing import Optional

from .client import DEFAULT_TARGET, Client
from .errors import IopulseError
from .model import Update

EXAMPLES = {
    None: """examples:
  iopulse top                                  live per-device table from the local daemon
  iopulse --target 10.0.0.5:7073 top --sort qwait
  iopulse watch --json --count 60 > run.jsonl  one JSON line per Update, 60 of them
  iopulse mark fill --label run=3              mark a benchmark phase (then: mark fill --end)
  iopulse snapshot --json --device sda         everything since the daemon started
  iopulse info                                 version, kernel, devices, config in effect""",
    "info": "examples:\n  iopulse info\n  iopulse info --json | jq .devices",
    "snapshot": "examples:\n  iopulse snapshot\n  iopulse snapshot --json --device nvme0n1",
    "top": """examples:
  iopulse top                       refresh every interval, busiest devices first
  iopulse top --device 'sd*' --sort svc
  iopulse top --interval-multiple 10 --threads 20
  iopulse top --once                print one table and exit""",
    "watch": """examples:
  iopulse watch --json
  iopulse watch --json --device sda --count 10
  iopulse watch --json --replay 300 > last5min.jsonl""",
    "mark": """examples:
  iopulse mark fill --label run=3 --label bs=4k
  iopulse mark fill --end""",
}


def fmt_ns(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if v < 1e3:
        return f"{v:.0f}ns"
    if v < 1e6:
        return f"{v / 1e3:.0f}us" if v >= 1e4 else f"{v / 1e3:.1f}us"
    if v < 1e9:
        return f"{v / 1e6:.1f}ms"
    return f"{v / 1e9:.2f}s"


def device_rows(u: Update, globs: list[str], sort: str) -> list[dict]:
    secs = u.seconds or 1.0
    rows = []
    for name, d in u.devices.items():
        if globs and not any(fnmatch.fnmatch(name, g) for g in globs):
            continue
        rw = [d.ops["read"], d.ops["write"], d.ops["discard"]]
        ios = sum(o.ios for o in rw)
        q = rw[0].queue_wait_ns + rw[1].queue_wait_ns
        s = rw[0].service_ns + rw[1].service_ns
        rows.append({
            "name": name + (f" (osd.{d.osd_id} {d.osd_role})" if d.osd_id is not None else ""),
            "iops": ios / secs, "mbps": sum(o.bytes for o in rw) / secs / 1e6,
            "q50": q.percentile(50) if q.count else None,
            "q99": q.percentile(99) if q.count else None,
            "s50": s.percentile(50) if s.count else None,
            "s99": s.percentile(99) if s.count else None,
            "seq": d.sequential_pct,
            "flush": (d.ops["flush"].ios + d.preflush) / secs,
            "f99": d.preflush_latency_ns.percentile(99) if d.preflush_latency_ns.count else None,
        })
    key = {"iops": lambda r: -r["iops"], "mbps": lambda r: -r["mbps"],
           "qwait": lambda r: -(r["q99"] or 0), "svc": lambda r: -(r["s99"] or 0),
           "name": lambda r: r["name"]}[sort]
    return sorted(rows, key=key)


def thread_rows(u: Update, n: int) -> list[dict]:
    secs = u.seconds or 1.0
    rows = [{"name": t.comm, "id": f"{t.pid}/{t.tid}", "osd": t.osd_id, "device": t.device,
             "calls": t.calls / secs,
             "p99": t.latency_ns.percentile(99) if t.latency_ns.count else None}
            for t in u.threads if t.calls]
    return sorted(rows, key=lambda r: -r["calls"])[:n]


def render(u: Update, args):
    from rich.console import Group
    from rich.table import Table

    dev = Table(title=f"iopulse  seq {u.seq}  {u.seconds:.2f}s"
                      + (f"  ({u.merged} intervals merged)" if u.merged > 1 else ""),
                title_justify="left", expand=False)
    for col in ("device", "IOPS", "MB/s", "qwait p50", "qwait p99", "svc p50", "svc p99",
                "seq %", "flush/s", "flush p99"):
        dev.add_column(col, justify="left" if col == "device" else "right")
    for r in device_rows(u, args.device or [], args.sort):
        dev.add_row(r["name"], f"{r['iops']:.0f}", f"{r['mbps']:.2f}", fmt_ns(r["q50"]),
                    fmt_ns(r["q99"]), fmt_ns(r["s50"]), fmt_ns(r["s99"]),
                    "-" if r["seq"] is None else f"{r['seq']:.0f}", f"{r['flush']:.1f}",
                    fmt_ns(r["f99"]))
    thr = Table(title="busiest sync threads", title_justify="left")
    for col in ("thread", "pid/tid", "OSD", "device", "calls/s", "p99"):
        thr.add_column(col, justify="left" if col in ("thread", "device") else "right")
    for r in thread_rows(u, args.threads):
        thr.add_row(r["name"], r["id"], "-" if r["osd"] is None else str(r["osd"]),
                    r["device"] or "?", f"{r['calls']:.1f}", fmt_ns(r["p99"]))
    marks = [f"{'end' if m.end else 'begin'} {m.name}" for m in u.phases]
    parts = [dev, thr]
    if marks:
        parts.append("phases: " + ", ".join(marks))
    return Group(*parts)


def cmd_top(c: Client, args) -> int:
    from rich.console import Console
    from rich.live import Live

    console = Console()
    sub = c.subscribe(interval_multiple=args.interval_multiple)
    try:
        if args.once or not console.is_terminal:
            for i, u in enumerate(sub):
                console.print(render(u, args))
                if args.once:
                    break
            return 0
        with Live(console=console, auto_refresh=False, screen=False) as live:
            live.update("waiting for the first Update ...", refresh=True)
            for u in sub:
                live.update(render(u, args), refresh=True)
    finally:
        sub.cancel()
    return 0


def cmd_watch(c: Client, args) -> int:
    sub = c.subscribe(interval_multiple=args.interval_multiple, devices=args.device or [],
                      replay_seconds=args.replay)
    try:
        for n, u in enumerate(sub, 1):
            sys.stdout.write(json.dumps(u.to_dict(), separators=(",", ":")) + "\n")
            sys.stdout.flush()
            if args.count and n >= args.count:
                break
    finally:
        sub.cancel()
    return 0


def cmd_info(c: Client, args) -> int:
    i = c.info()
    if args.json:
        print(json.dumps(i.to_dict(), indent=2))
        return 0
    print(f"iopulsed {i.version} on kernel {i.kernel}, attach mode {i.attach_mode}, "
          f"BTF {'yes' if i.btf else 'no'}")
    print(f"interval {i.interval_ns / 1e9:g}s, replay ring {i.ring_seconds}s, "
          f"{i.subscribers} subscriber(s), last interval #{i.last_seq}")
    print(f"histograms: precision {i.histogram.precision}, {i.histogram.buckets} buckets, "
          f"max error {i.histogram.max_relative_error * 100:.2f}%")
    print(f"agent: RSS {i.cost.rss_bytes / 2**20:.1f} MiB, CPU user {i.cost.cpu_user_s:.2f}s "
          f"system {i.cost.cpu_system_s:.2f}s, BPF "
          + (f"{i.cost.bpf_run_time_ns / 1e9:.3f}s over {i.cost.bpf_run_count} runs"
             if i.cost.bpf_stats else "run time not measured (bpf_stats off)"))
    print("devices:")
    for d in i.devices:
        extra = [x for x in (d.model, d.dm_name and f"dm {d.dm_name}",
                             d.osd_id is not None and f"osd.{d.osd_id} {d.osd_role}",
                             "rotational" if d.rotational else "", "partition" if d.partition
                             else "") if x]
        print(f"  {d.name:12} {d.major}:{d.minor:<5} {', '.join(extra)}")
    print("config:")
    for k in sorted(i.config):
        print(f"  {k} = {i.config[k]}")
    return 0


def cmd_snapshot(c: Client, args) -> int:
    u = c.snapshot(devices=args.device or [])
    if args.json:
        print(json.dumps(u.to_dict(), separators=(",", ":")))
        return 0
    from rich.console import Console
    args.sort, args.threads = "iops", 20
    Console().print(render(u, args))
    return 0


def cmd_mark(c: Client, args) -> int:
    labels = {}
    for kv in args.label or []:
        if "=" not in kv:
            print(f"iopulse: --label {kv!r}: expected KEY=VALUE", file=sys.stderr)
            return 2
        k, v = kv.split("=", 1)
        labels[k] = v
    m = c.mark_phase(args.name, end=args.end, **labels).begin
    print(f"{'end' if m.end else 'begin'} {m.name} #{m.id} at {m.realtime_ns} "
          f"(monotonic {m.monotonic_ns})")
    return 0


def parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="iopulse", description="Per-device block IO telemetry "
                                "from iopulsed, live.", epilog=EXAMPLES[None], formatter_class=fmt)
    p.add_argument("--target", default=os.environ.get("IOPULSE_TARGET", DEFAULT_TARGET),
                   help="daemon address: unix:/path, /path or host:port "
                        f"(default $IOPULSE_TARGET or {DEFAULT_TARGET})")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="keep retrying an unreachable daemon this long (default 10)")
    sp = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sp.add_parser("info", help="version, kernel, devices, config", epilog=EXAMPLES["info"],
                      formatter_class=fmt)
    s.add_argument("--json", action="store_true")
    s = sp.add_parser("snapshot", help="everything since the daemon started",
                      epilog=EXAMPLES["snapshot"], formatter_class=fmt)
    s.add_argument("--json", action="store_true")
    s.add_argument("--device", action="append", metavar="NAME")
    s = sp.add_parser("top", help="live per-device table", epilog=EXAMPLES["top"],
                      formatter_class=fmt)
    s.add_argument("--interval-multiple", type=int, default=1, metavar="N")
    s.add_argument("--sort", choices=["iops", "mbps", "qwait", "svc", "name"], default="iops")
    s.add_argument("--device", action="append", metavar="GLOB")
    s.add_argument("--threads", type=int, default=10, metavar="N",
                   help="sync threads shown (default 10)")
    s.add_argument("--once", action="store_true", help="print one table and exit")
    s = sp.add_parser("watch", help="one JSON line per Update", epilog=EXAMPLES["watch"],
                      formatter_class=fmt)
    s.add_argument("--json", action="store_true", required=True)
    s.add_argument("--interval-multiple", type=int, default=1, metavar="N")
    s.add_argument("--device", action="append", metavar="NAME")
    s.add_argument("--replay", type=int, default=0, metavar="S",
                   help="start with the last S seconds kept by the daemon")
    s.add_argument("--count", type=int, default=0, metavar="N", help="stop after N Updates")
    s = sp.add_parser("mark", help="mark a benchmark phase", epilog=EXAMPLES["mark"],
                      formatter_class=fmt)
    s.add_argument("name")
    s.add_argument("--end", action="store_true", help="the phase ends (default: it begins)")
    s.add_argument("--label", action="append", metavar="KEY=VALUE")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    cmds = {"info": cmd_info, "snapshot": cmd_snapshot, "top": cmd_top, "watch": cmd_watch,
            "mark": cmd_mark}
    try:
        with Client(args.target, connect_deadline=args.connect_timeout) as c:
            return cmds[args.cmd](c, args)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return 0
    except IopulseError as e:
        print(f"iopulse: {e}", file=sys.stderr)
        return 1
