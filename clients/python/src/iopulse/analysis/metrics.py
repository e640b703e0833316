"""Every figure of a run, computed in one place: from a phase's sums (aggregate.py), counts over
the phase's seconds (never an average of per-interval rates) and percentiles from its merged
histogram buckets. The report, compare, export and iopulse.load() all take their numbers from
here.

Keys carry their unit: _ns, _bytes, _sectors, _per_s, _pct; mb_per_s is 10^6 bytes per
second, mib_per_s 2^20 (fio's MiB/s). Counts (ios, bytes, reads, flushes, calls, ...) are
ints. A figure without data (no IO, no seconds) is None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ..histogram import Histogram, bucket_index, bucket_lower
from ..phases.model import Phase
from ..model import ALL, LATENCY_OPS, OPS, SYNC_CALLS
from .aggregate import (OSD_DATA, ROW_OPS, DeviceAgg, OpAgg, PhaseAgg, RunLike, ThreadAgg,
                        aggregate, osd_data, osd_parts, osd_totals)
from .labels import OSD, device_class

__all__ = ["ROW_OPS", "DEVICE_COLUMNS", "THREAD_COLUMNS", "Number", "DeviceAgg", "OpAgg",
           "PhaseAgg", "ThreadAgg", "aggregate", "osd_totals", "op_figures", "device_figures",
           "device_values", "thread_values", "Row", "ThreadRow", "phase_rows", "merged_rows",
           "OSD_DATA", "DATA_DEVICES", "CLUSTER", "OP_KEYS",
           "DEVICE_KEYS", "THREAD_KEYS", "is_float_key"]

Number = Union[int, float]

# the latency histograms of an op, by the short name their keys begin with
LATENCIES = (("qwait", "queue_wait_ns"), ("svc", "service_ns"), ("total", "total_ns"))
# the statistics of each latency: p50, mean, p99, p99.9, max
LATENCY_STATS = ("p50", "mean", "p99", "p999", "max")
_QS = (50.0, 99.0, 99.9)

# op_figures()' keys, in order
OP_KEYS = (["ios", "bytes", "errors", "untimed", "no_queue_ts", "completion_unseen",
            "ios_per_s", "bytes_per_s", "mb_per_s", "mib_per_s"] +
           [f"{s}_{st}_ns" for s, _ in LATENCIES for st in LATENCY_STATS] +
           ["size_p50_bytes", "size_mean_bytes"])
# device_figures()' keys: what belongs to the device, not to one op
DEVICE_KEYS = ["seeks", "seq_pct", "seek_p50_sectors", "seek_p99_sectors", "flushes",
               "flushes_per_s", "preflushes", "preflush_p50_ns", "preflush_p99_ns",
               "fua_writes", "fua_p99_ns", "requeues"]



def is_float_key(key: str) -> bool:
    """Whether a figure is a float (a rate, a mean, a share); the others are ints."""
    return key.endswith(("_per_s", "_pct")) or "_mean_" in key


# (key, header, kind) of the report's device table: kind "ns" a latency, "rate", "rate1",
# "rate2" (decimals), "pct", "bytes", "sectors"
DEVICE_COLUMNS = [
    ("ios_per_s", "IOPS", "rate"), ("mb_per_s", "MB/s", "rate2"),
    ("qwait_p50_ns", "qwait p50", "ns"), ("qwait_p99_ns", "qwait p99", "ns"),
    ("qwait_p999_ns", "qwait p99.9", "ns"),
    ("svc_p50_ns", "svc p50", "ns"), ("svc_p99_ns", "svc p99", "ns"),
    ("total_p99_ns", "total p99", "ns"), ("total_max_ns", "total max", "ns"),
    ("seq_pct", "seq %", "pct"), ("seek_p50_sectors", "seek p50", "sectors"),
    ("size_p50_bytes", "size p50", "bytes"), ("flushes_per_s", "flush/s", "rate1"),
    ("preflush_p99_ns", "flush p99", "ns"),
]
THREAD_COLUMNS = [("calls_per_s", "calls/s", "rate1"), ("latency_p50_ns", "p50", "ns"),
                  ("latency_p99_ns", "p99", "ns"), ("fsync_p99_ns", "fsync p99", "ns"),
                  ("fdatasync_p99_ns", "fdatasync p99", "ns"),
                  ("sync_file_range_p99_ns", "sync_file_range p99", "ns")]
# thread_values()' keys
THREAD_KEYS = (["calls", "fsync", "fdatasync", "sync_file_range", "flush_bios", "calls_per_s",
                "flush_bios_per_s"] + [f"latency_{st}_ns" for st in LATENCY_STATS] +
               [c + "_p99_ns" for c in SYNC_CALLS])


def _rate(n: Number, seconds: float) -> Optional[float]:
    return n / seconds if seconds > 0 else None


def _stats(h: Optional[Histogram]) -> tuple[Optional[Number], ...]:
    """(p50, mean, p99, p99.9, max) of merged buckets; Nones when empty."""
    if h is None or not h.count:
        return (None,) * 5
    p50, p99, p999 = h.percentiles(_QS)
    return p50, h.mean, p99, p999, h.max


def _pcts(h: Optional[Histogram], qs: tuple[float, ...]) -> list[Optional[int]]:
    return [None] * len(qs) if h is None else h.percentiles(qs)


def _size_p50(h: Optional[Histogram]) -> Optional[int]:
    """Request sizes are round numbers (4 KiB, 64 KiB): the lower edge of the bucket, where
    they sit, rather than its midpoint."""
    if h is None or not h.count:
        return None
    v = h.percentile(50)
    assert v is not None
    return bucket_lower(bucket_index(v, h.precision), h.precision)


def op_figures(o: OpAgg, seconds: float) -> dict[str, Optional[Number]]:
    """One op's figures over seconds (OP_KEYS): its counts, their rates, qwait / svc / total
    latency p50, mean, p99, p99.9 and max, request size p50 and mean (bytes / ios)."""
    d: dict[str, Optional[Number]] = {
        "ios": o.ios, "bytes": o.bytes, "errors": o.errors, "untimed": o.untimed,
        "no_queue_ts": o.no_queue_ts, "completion_unseen": o.completion_unseen,
        "ios_per_s": _rate(o.ios, seconds), "bytes_per_s": _rate(o.bytes, seconds),
        "mb_per_s": _rate(o.bytes / 1e6, seconds),
        "mib_per_s": _rate(o.bytes / 1048576, seconds)}
    for short, metric in LATENCIES:
        for st, v in zip(LATENCY_STATS, _stats(o.hists.get(metric))):
            d[f"{short}_{st}_ns"] = v
    d["size_p50_bytes"] = _size_p50(o.hists.get("size_bytes"))
    d["size_mean_bytes"] = o.bytes / o.ios if o.ios else None
    return d


def device_figures(a: DeviceAgg, seconds: float) -> dict[str, Optional[Number]]:
    """What belongs to the device over seconds rather than to one op (DEVICE_KEYS): seeks
    (data requests in dispatch order) and their distance in sectors, flush requests, requests
    carrying a preflush or FUA and their latency, requeues."""
    seeks = a.seek_sequential + a.seek_forward + a.seek_backward
    s50, s99 = _pcts(a.hists.get("seek_distance_sectors"), (50.0, 99.0))
    p50, p99 = _pcts(a.hists.get("preflush_latency_ns"), (50.0, 99.0))
    (f99,) = _pcts(a.hists.get("fua_latency_ns"), (99.0,))
    flushes = a.ops["flush"].ios
    return {"seeks": seeks, "seq_pct": 100.0 * a.seek_sequential / seeks if seeks else None,
            "seek_p50_sectors": s50, "seek_p99_sectors": s99,
            "flushes": flushes, "flushes_per_s": _rate(flushes, seconds),
            "preflushes": a.preflush, "preflush_p50_ns": p50, "preflush_p99_ns": p99,
            "fua_writes": a.fua, "fua_p99_ns": f99, "requeues": a.requeues}


def device_values(a: DeviceAgg, seconds: float) -> dict[str, Optional[Number]]:
    """One device as one flat record: the figures of its data ops together ('all',
    unprefixed), the device's own figures, reads and writes apart (read_*, write_*), and the
    counts reads, writes, discards, read_bytes, write_bytes, discard_bytes."""
    ops = {op: op_figures(a.op(op), seconds) for op in (ALL,) + LATENCY_OPS}
    return _flat(a, ops, device_figures(a, seconds))


def _flat(a: DeviceAgg, ops: dict[str, dict[str, Optional[Number]]],
          dev: dict[str, Optional[Number]]) -> dict[str, Optional[Number]]:
    v = dict(ops[ALL])
    v.update(dev)
    for op in LATENCY_OPS:
        for k, x in ops[op].items():
            if k != "ios":
                v[f"{op}_{k}"] = x
    v["reads"], v["writes"] = a.ops["read"].ios, a.ops["write"].ios
    v["discards"], v["discard_bytes"] = a.ops["discard"].ios, a.ops["discard"].bytes
    return v


def thread_values(t: ThreadAgg, seconds: float) -> dict[str, Optional[Number]]:
    """A sync thread's figures over seconds (THREAD_KEYS): calls by kind, their rate, the
    latency of all its calls (mean exact, from the daemon's sums) and each kind's p99."""
    lat = t.hists.get("latency_ns")
    p50, _, p99, p999, mx = _stats(lat)
    d: dict[str, Optional[Number]] = {
        "calls": t.calls, "fsync": t.fsync, "fdatasync": t.fdatasync,
        "sync_file_range": t.sync_file_range, "flush_bios": t.flush_bios,
        "calls_per_s": _rate(t.calls, seconds), "flush_bios_per_s": _rate(t.flush_bios, seconds),
        "latency_p50_ns": p50,
        "latency_mean_ns": t.latency_sum_ns / t.calls if t.calls and t.latency_sum_ns else None,
        "latency_p99_ns": p99, "latency_p999_ns": p999, "latency_max_ns": mx}
    if d["latency_mean_ns"] is None and t.calls:      # a daemon that sent no sums
        d["latency_mean_ns"] = lat.mean if lat is not None else None
    for c in SYNC_CALLS:
        (d[c + "_p99_ns"],) = _pcts(t.by_call.get(c), (99.0,))
    return d


@dataclass
class Row:
    """One phase x host x device: values is device_values() (the report's columns), ops the
    op_figures() of each of ROW_OPS, device the device_figures()."""
    phase: Phase
    host: str
    device: str
    osd: str
    seconds: float
    values: dict[str, Optional[Number]]
    device_class: str = ""
    ops: dict[str, dict[str, Optional[Number]]] = field(default_factory=dict)
    device_only: dict[str, Optional[Number]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase.name, "labels": dict(self.phase.labels), "host": self.host,
                "device": self.device, "device_class": self.device_class, "osd": self.osd,
                "seconds": self.seconds, **self.values}


@dataclass
class ThreadRow:
    phase: Phase
    host: str
    thread: ThreadAgg
    values: dict[str, Optional[Number]]
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        t = self.thread
        return {"phase": self.phase.name, "labels": dict(self.phase.labels), "host": self.host,
                "thread": t.comm, "process": t.process, "pid": t.pid, "tid": t.tid,
                "osd_id": t.osd_id, "device": t.device, "disks": list(t.disks), **self.values}


def _osd(a: DeviceAgg) -> str:
    if a.osd_id is None:
        return ""
    return f"osd.{a.osd_id}" + (f" {a.osd_role}" if a.osd_role else "")


def _row(p: Phase, host: str, a: DeviceAgg, osd: str, seconds: float, cls: str) -> Row:
    ops = {op: op_figures(a.op(op), seconds) for op in ROW_OPS}
    dev = device_figures(a, seconds)
    return Row(p, host, a.name, osd, seconds, _flat(a, ops, dev), cls, ops, dev)


def _busy(a: DeviceAgg) -> bool:
    return any(a.ops[op].ios for op in OPS)


MATCHES = ("host", "device", "osd")
# the OSD data devices' rows: every OSD's block device of a host (more than one), and of every
# host (several) on the cluster's row
DATA_DEVICES = "data devices"
CLUSTER = "all"


def _infos(h: Any) -> dict[str, Any]:
    """A host's devices (its agent's Info) by name; {} when it sent none."""
    return {d.name: d for d in h.info.devices} if h.info is not None else {}


def merged_rows(run: RunLike, phases: Optional[list[Phase]] = None, by: str = "device",
                every_device: bool = False) -> list[Row]:
    """Rows per phase merged across hosts, exactly (counts add, buckets merge), host "": by
    device name (sdb of every host is one row), or by Ceph OSD (every device of osd.N, on
    whatever host, one row named osd.N, the disk under its LV or partition not added again;
    devices of no OSD left out; and the data devices of every OSD one row, osd.*, where there
    are several). A phase's seconds are its longest on a host."""
    if by not in MATCHES[1:]:
        raise ValueError(f"merged_rows: by {by!r}, not one of {', '.join(MATCHES[1:])}")
    phases = run.phases() if phases is None else phases
    aggs = aggregate(run, phases, every_device)
    infos: dict[str, Any] = {}
    for h in run.hosts:
        for name, d in _infos(h).items():
            infos.setdefault(name, d)
    rows: list[Row] = []
    for n, p in enumerate(phases):
        merged: dict[str, DeviceAgg] = {}
        seconds = 0.0
        data_devices = 0
        for h in run.hosts:
            pa = aggs.get((n, h.index))
            if pa is None:
                continue
            seconds = max(seconds, pa.seconds)
            if by == "device":
                parts = list(pa.devices.values())
            else:
                hi = _infos(h)
                parts = [a for ps in osd_parts(pa.devices.values(), hi).values() for a in ps]
                data, k = osd_data(pa.devices.values(), hi)
                if data is not None:
                    parts.append(data)
                    data_devices += k
            for a in parts:
                key = a.name if by == "device" or a.name == OSD_DATA else f"osd.{a.osd_id}"
                m = merged.get(key)
                if m is None:
                    m = merged[key] = DeviceAgg(key, a.osd_id, a.osd_role if by == "device"
                                                else "all")
                m.merge(a)
        if data_devices < 2:
            merged.pop(OSD_DATA, None)      # one OSD's data device: its own row says it all
        for key in sorted(merged, key=lambda k: (k == OSD_DATA, k)):
            a = merged[key]
            if _busy(a):
                osd = _osd(a) if by == "device" else \
                    DATA_DEVICES if key == OSD_DATA else "all devices"
                rows.append(_row(p, "", a, osd, seconds, OSD if by == "osd" else
                                 device_class(key, infos.get(key))))
    return rows


def phase_rows(run: RunLike, phases: Optional[list[Phase]] = None, idle: bool = False,
               every_device: bool = False) -> tuple[list[Row], list[ThreadRow]]:
    """Device rows per phase x host (devices without IO in the phase left out unless idle;
    a fio job's phase only the job's devices unless every_device, see aggregate(); Ceph OSDs
    of several devices also as one merged row (osd.N, "all devices"); a host's OSD data
    devices, where it has several, as one row (osd.*, "data devices"), and every host's as
    the cluster's row, host "all", where several hosts have them) and every sync thread with
    calls, busiest first."""
    phases = run.phases() if phases is None else phases
    aggs = aggregate(run, phases, every_device)
    rows: list[Row] = []
    trows: list[ThreadRow] = []
    for n, p in enumerate(phases):
        data_hosts: list[tuple[DeviceAgg, float]] = []
        for h in run.hosts:
            pa = aggs.get((n, h.index))
            if pa is None:
                continue
            seconds = pa.seconds
            info = _infos(h)
            for name in sorted(pa.devices):
                a = pa.devices[name]
                if idle or _busy(a):
                    rows.append(_row(p, h.name, a, _osd(a), seconds,
                                     device_class(name, info.get(name))))
            for osd, a in sorted(osd_totals(pa.devices.values(), info).items()):
                if idle or _busy(a):
                    rows.append(_row(p, h.name, a, "all devices", seconds, OSD))
            data, k = osd_data(pa.devices.values(), info)
            if data is not None:
                if k > 1 and (idle or _busy(data)):
                    rows.append(_row(p, h.name, data, DATA_DEVICES, seconds, OSD))
                data_hosts.append((data, seconds))
            for t in sorted(pa.threads.values(), key=lambda t: (-t.calls, t.pid, t.tid)):
                if t.calls:
                    trows.append(ThreadRow(p, h.name, t, thread_values(t, seconds), seconds))
        if len(data_hosts) > 1:
            # the cluster: every host's OSD data devices, one row
            a = DeviceAgg(OSD_DATA, None, "block")
            for d, _ in data_hosts:
                a.merge(d)
            if idle or _busy(a):
                rows.append(_row(p, CLUSTER, a, DATA_DEVICES, max(s for _, s in data_hosts),
                                 OSD))
    return rows, trows
