"""A live Update's devices and threads as the report's sums (DeviceAgg, ThreadAgg), so that
top computes every figure with the report's functions (metrics.op_figures, device_figures,
thread_values): rates over the Update's window, percentiles from its buckets, several
devices merged bucket by bucket."""
from __future__ import annotations

from typing import Optional, Sequence

from ..histogram import Histogram
from ..model import (DEVICE_HISTOGRAMS, OP_COUNTERS, OP_HISTOGRAMS, OPS, SYNC_CALLS,
                     DeviceStats, ThreadSync)
from .aggregate import ROW_OPS, DeviceAgg, OpAgg, ThreadAgg
from .metrics import Number, device_figures, op_figures


def _held(h: Histogram) -> Optional[Histogram]:
    """A live histogram as the sums hold it: a copy (sums are added to), None when empty."""
    return h.copy() if h.count else None


def device_agg(d: DeviceStats) -> DeviceAgg:
    """One device of a live Update as the sums of a phase."""
    a = DeviceAgg(d.name, d.osd_id, d.osd_role)
    for op in OPS:
        s, o = d.ops[op], OpAgg()
        for name in OP_COUNTERS:
            setattr(o, name, getattr(s, name))
        for name in OP_HISTOGRAMS:
            h = _held(getattr(s, name))
            if h is not None:
                o.hists[name] = h
        a.ops[op] = o
    a.seek_sequential, a.seek_forward = d.seek_sequential, d.seek_forward
    a.seek_backward, a.preflush, a.fua, a.requeues = (d.seek_backward, d.preflush, d.fua,
                                                       d.requeues)
    for name in DEVICE_HISTOGRAMS:
        h = _held(getattr(d, name))
        if h is not None:
            a.hists[name] = h
    return a


def thread_agg(t: ThreadSync) -> ThreadAgg:
    """One sync thread of a live Update as the sums of a phase."""
    a = ThreadAgg(t.comm, t.process, t.pid, t.tid, t.osd_id, t.device or "",
                  disks=tuple(t.disks))
    a.fsync, a.fdatasync, a.sync_file_range = t.fsync, t.fdatasync, t.sync_file_range
    a.calls, a.flush_bios, a.latency_sum_ns = t.calls, t.flush_bios, t.latency_sum_ns
    h = _held(t.latency_ns)
    if h is not None:
        a.hists["latency_ns"] = h
    for c in SYNC_CALLS:
        lat = t.by_call.get(c)
        if lat is not None and getattr(t, c):
            h = _held(lat.latency_ns)
            if h is not None:
                a.by_call[c] = h
    return a


def merged_figures(parts: Sequence[tuple[DeviceAgg, float]]
                   ) -> tuple[dict[str, dict[str, Optional[Number]]], dict[str, Optional[Number]]]:
    """(op_figures of each op, device_figures) of devices merged, each (sums, seconds of its
    window): counts and histogram buckets added, so percentiles are those of all their IOs;
    every rate (*_per_s) the sum of each device's own rate, since their windows (different
    hosts' Updates) need not be the same length."""
    total = DeviceAgg("merged")
    for a, _ in parts:
        total.merge(a)
    seconds = max((s for _, s in parts), default=0.0)
    ops = {op: op_figures(total.op(op), seconds) for op in ROW_OPS}
    dev = device_figures(total, seconds)

    def rates(figs: dict[str, Optional[Number]], each: list[dict[str, Optional[Number]]]
              ) -> None:
        for k in figs:
            if k.endswith("_per_s"):
                got = [f[k] for f in each if f[k] is not None]
                figs[k] = sum(got) if got else None

    for op in ROW_OPS:
        rates(ops[op], [op_figures(a.op(op), s) for a, s in parts])
    rates(dev, [device_figures(a, s) for a, s in parts])
    return ops, dev
