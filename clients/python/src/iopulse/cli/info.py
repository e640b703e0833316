"""iopulse info: version, kernel, histogram layout, devices, config and cost of a daemon."""
from __future__ import annotations

import argparse
import time

from ..client import Client
from .common import EXIT_OK, print_json

HELP = 'version, kernel, histogram layout, devices, config, agent cost'
EXAMPLES = """examples:
  iopulse info
  iopulse info --json | jq .devices
  iopulse --target /run/iopulse/iopulse.sock info"""
CONNECTS = True


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--json", action="store_true", help="one JSON object")


def run(c: Client, args: argparse.Namespace) -> int:
    i = c.info()
    if args.json:
        print_json(i.to_dict(), indent=2)
        return EXIT_OK
    started = time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(i.started_realtime_ns / 1e9))
    print(f"iopulsed {i.version} on {i.hostname or '?'} at {c.target}, kernel {i.kernel}, "
          f"attach mode {i.attach_mode}, BTF {'yes' if i.btf else 'no'}, started {started}")
    print(f"interval {i.interval_s:g}s, last interval #{i.last_seq}, replay ring "
          f"{i.ring_seconds}s ({i.ring_bytes / 2**20:.1f} MiB held), {i.subscribers} "
          f"subscriber(s); last fan-out "
          f"{i.fanout_ns / 1e6:.2f}ms to {i.fanout_streams} stream(s)")
    if i.limits:
        lm = i.limits
        print(f"limits: ring {lm.ring_mib} MiB, {lm.subscribers} subscribers, marks {lm.mark_rate}/s of at most "
              f"{lm.mark_bytes} bytes and {lm.mark_labels} labels, {lm.open_phases} open "
              f"phases, requests of at most {lm.request_bytes} bytes")
    h = i.histogram
    print(f"histograms: mode {h.mode or 'full'}, precision {h.precision}, range 2^{h.range_bits}, "
          f"{h.buckets} buckets, max error {h.max_relative_error * 100:g}%")
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
    print(f"open phases ({len(i.open_phases)}):" if i.open_phases else "open phases: none")
    for m in i.open_phases:
        since = time.strftime("%H:%M:%S", time.localtime(m.realtime_ns / 1e9))
        labels = " ".join(f"{k}={v}" for k, v in sorted(m.labels.items()))
        print(f"  #{m.id} {m.name}" + (f" (in #{m.parent_id})" if m.parent_id else "")
              + f" since {since}" + (f", session {m.session}" if m.session else "")
              + (f", {labels}" if labels else ""))
    print("config:")
    for k in sorted(i.config):
        print(f"  {k} = {i.config[k]}")
    return EXIT_OK
