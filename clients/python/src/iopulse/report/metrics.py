"""Per phase x host x device numbers from a run: counts add up and histograms merge exactly
over the phase's Updates, then rates divide by the summed windows."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..histogram import Histogram, bucket_index, bucket_lower
from ..model import device_where
from ..phases.model import Phase
from ..record.reader import Run

ALL_OPS = ("read", "write", "flush", "discard")
DATA_OPS = ("read", "write", "discard")
LATENCY_OPS = ("read", "write")

# (key, header, kind): kind "ns" a latency, "rate", "pct", "count", "bytes", "sectors"
DEVICE_COLUMNS = [
    ("iops", "IOPS", "rate"), ("mbps", "MB/s", "rate2"),
    ("qwait_p50", "qwait p50", "ns"), ("qwait_p99", "qwait p99", "ns"),
    ("qwait_p999", "qwait p99.9", "ns"),
    ("svc_p50", "svc p50", "ns"), ("svc_p99", "svc p99", "ns"),
    ("total_p99", "total p99", "ns"), ("total_max", "total max", "ns"),
    ("seq_pct", "seq %", "pct"), ("seek_p50", "seek p50", "sectors"),
    ("size_p50", "size p50", "bytes"), ("flushes", "flush/s", "rate1"),
    ("flush_p99", "flush p99", "ns"),
]
THREAD_COLUMNS = [("calls_s", "calls/s", "rate1"), ("p50", "p50", "ns"), ("p99", "p99", "ns"),
                  ("fsync_p99", "fsync p99", "ns"), ("fdatasync_p99", "fdatasync p99", "ns"),
                  ("sync_file_range_p99", "sync_file_range p99", "ns")]
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range")


class HistAcc:
    """Bucket counts added up from sparse protobuf histograms (index -> count)."""
    __slots__ = ("k", "c")

    def __init__(self) -> None:
        self.k = 0
        self.c: dict[int, int] = {}

    def add(self, h: Any, k: int) -> None:
        if not len(h.index):
            return
        self.k = h.precision or k
        c = self.c
        for i, n in zip(h.index, h.count):
            c[i] = c.get(i, 0) + n

    def histogram(self) -> Optional[Histogram]:
        return Histogram(self.k, self.c.keys(), self.c.values()) if self.c else None


@dataclass
class DeviceAgg:
    name: str
    osd_id: Optional[int] = None
    osd_role: Optional[str] = None
    ios: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    acc: dict[str, HistAcc] = field(default_factory=dict)
    seek_sequential: int = 0
    seek_other: int = 0

    def hist(self, key: str) -> Optional[Histogram]:
        a = self.acc.get(key)
        return a.histogram() if a else None


@dataclass
class ThreadAgg:
    comm: str
    process: str
    pid: int
    tid: int
    osd_id: Optional[int]
    device: str
    calls: int = 0
    fsync: int = 0
    fdatasync: int = 0
    sync_file_range: int = 0
    acc: HistAcc = field(default_factory=HistAcc)
    by_call: dict[str, HistAcc] = field(default_factory=dict)   # recorded by newer daemons
    disks: tuple[str, ...] = ()   # device is a dm/md device: the disks at the bottom of it

    @property
    def where(self) -> str:
        return device_where(self.device, self.disks)


@dataclass
class PhaseAgg:
    """Everything of one phase on one host."""
    seconds: float = 0.0
    updates: int = 0
    devices: dict[str, DeviceAgg] = field(default_factory=dict)
    threads: dict[tuple[int, int], ThreadAgg] = field(default_factory=dict)

    def add(self, u: Any) -> None:
        """Add one iopulse.v1.Update message."""
        k = u.precision
        self.seconds += (u.end_monotonic_ns - u.start_monotonic_ns) / 1e9
        self.updates += 1
        for d in u.devices:
            a = self.devices.get(d.name)
            if a is None:
                a = self.devices[d.name] = DeviceAgg(d.name)
            if d.osd_id >= 0:
                a.osd_id, a.osd_role = d.osd_id, d.osd_role or None
            acc = a.acc
            for op in ALL_OPS:
                s = getattr(d, op)
                a.ios[op] = a.ios.get(op, 0) + s.ios
                a.bytes[op] = a.bytes.get(op, 0) + s.bytes
                if op in LATENCY_OPS:
                    for key, h in (("qwait", s.queue_wait_ns), ("svc", s.service_ns),
                                   ("total", s.total_ns)):
                        if len(h.index):
                            acc.setdefault(key, HistAcc()).add(h, k)
                if op in DATA_OPS and len(s.size_bytes.index):
                    acc.setdefault("size", HistAcc()).add(s.size_bytes, k)
            for key, h in (("seek", d.seek_distance_sectors), ("preflush", d.preflush_latency_ns)):
                if len(h.index):
                    acc.setdefault(key, HistAcc()).add(h, k)
            a.seek_sequential += d.seek_sequential
            a.seek_other += d.seek_forward + d.seek_backward
        for t in u.threads:
            key2 = (t.pid, t.tid)
            ta = self.threads.get(key2)
            if ta is None:
                ta = self.threads[key2] = ThreadAgg(t.comm, t.process, t.pid, t.tid,
                                                    t.osd_id if t.osd_id >= 0 else None,
                                                    t.device, disks=tuple(t.disks))
            ta.fsync += t.fsync
            ta.fdatasync += t.fdatasync
            ta.sync_file_range += t.sync_file_range
            ta.calls += t.fsync + t.fdatasync + t.sync_file_range
            ta.acc.add(t.latency_ns, k)
            for c in SYNC_CALLS:
                if t.HasField(c + "_latency") and getattr(t, c):
                    ta.by_call.setdefault(c, HistAcc()).add(
                        getattr(t, c + "_latency").histogram_ns, k)


@dataclass
class Row:
    """One phase x host x device line; values by DEVICE_COLUMNS key (None: no data)."""
    phase: Phase
    host: str
    device: str
    osd: str
    seconds: float
    values: dict[str, Optional[float]]

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase.name, "labels": dict(self.phase.labels), "host": self.host,
                "device": self.device, "osd": self.osd, "seconds": self.seconds,
                **self.values}


@dataclass
class ThreadRow:
    phase: Phase
    host: str
    thread: ThreadAgg
    values: dict[str, Optional[float]]

    def to_dict(self) -> dict[str, Any]:
        t = self.thread
        return {"phase": self.phase.name, "labels": dict(self.phase.labels), "host": self.host,
                "thread": t.comm, "process": t.process, "pid": t.pid, "tid": t.tid,
                "osd_id": t.osd_id, "device": t.device, "disks": list(t.disks), **self.values}


def _pct(h: Optional[Histogram], q: float) -> Optional[float]:
    return None if h is None or not h.count else float(h.percentile(q))


def _size_pct(h: Optional[Histogram], q: float) -> Optional[float]:
    """Request sizes are round numbers (4 KiB, 64 KiB): the lower edge of the bucket, where
    they sit, rather than its midpoint."""
    if h is None or not h.count:
        return None
    v = h.percentile(q)
    return float(bucket_lower(bucket_index(v, h.precision), h.precision))


def device_values(a: DeviceAgg, seconds: float) -> dict[str, Optional[float]]:
    ios = sum(a.ios.get(op, 0) for op in DATA_OPS)
    nbytes = sum(a.bytes.get(op, 0) for op in DATA_OPS)
    seeks = a.seek_sequential + a.seek_other
    cache: dict[str, Optional[Histogram]] = {}

    def h(key: str) -> Optional[Histogram]:
        if key not in cache:
            cache[key] = a.hist(key)
        return cache[key]
    total = h("total")
    return {
        "iops": ios / seconds if seconds else None,
        "mbps": nbytes / 1e6 / seconds if seconds else None,
        "qwait_p50": _pct(h("qwait"), 50), "qwait_p99": _pct(h("qwait"), 99),
        "qwait_p999": _pct(h("qwait"), 99.9),
        "svc_p50": _pct(h("svc"), 50), "svc_p99": _pct(h("svc"), 99),
        "total_p99": _pct(total, 99),
        "total_max": float(total.max) if total is not None and total.max is not None else None,
        "seq_pct": 100.0 * a.seek_sequential / seeks if seeks else None,
        "seek_p50": _pct(h("seek"), 50), "size_p50": _size_pct(h("size"), 50),
        "flushes": a.ios.get("flush", 0) / seconds if seconds else None,
        "flush_p99": _pct(h("preflush"), 99),
        "ios": float(ios), "bytes": float(nbytes),
        "reads": float(a.ios.get("read", 0)), "writes": float(a.ios.get("write", 0)),
        "write_bytes": float(a.bytes.get("write", 0)),
    }


def _osd(a: DeviceAgg) -> str:
    if a.osd_id is None:
        return ""
    return f"osd.{a.osd_id}" + (f" {a.osd_role}" if a.osd_role else "")


def osd_totals(devs: Any) -> dict[int, DeviceAgg]:
    """Per Ceph OSD, its devices (block, block.db, block.wal) merged: counts add, histograms
    merge exactly. Only OSDs with more than one device get a row of their own."""
    by: dict[int, list[DeviceAgg]] = {}
    for a in devs:
        if a.osd_id is not None:
            by.setdefault(a.osd_id, []).append(a)
    out: dict[int, DeviceAgg] = {}
    for osd, parts in by.items():
        if len(parts) < 2:
            continue
        t = DeviceAgg(f"osd.{osd} (all devices)", osd, "all")
        for a in parts:
            for op, n in a.ios.items():
                t.ios[op] = t.ios.get(op, 0) + n
            for op, n in a.bytes.items():
                t.bytes[op] = t.bytes.get(op, 0) + n
            for key, acc in a.acc.items():
                m = t.acc.setdefault(key, HistAcc())
                m.k = acc.k
                for i, c in acc.c.items():
                    m.c[i] = m.c.get(i, 0) + c
            t.seek_sequential += a.seek_sequential
            t.seek_other += a.seek_other
        out[osd] = t
    return out


def aggregate(run: Run, phases: list[Phase]) -> dict[tuple[int, int], PhaseAgg]:
    """(phase position, host index) -> PhaseAgg, in one pass over the run's Updates."""
    out: dict[tuple[int, int], PhaseAgg] = {}
    for host, u in run.iter_updates():
        for n, p in enumerate(phases):
            if p.contains(host, u):
                a = out.get((n, host))
                if a is None:
                    a = out[(n, host)] = PhaseAgg()
                a.add(u)
    return out


def phase_rows(run: Run, phases: Optional[list[Phase]] = None, idle: bool = False
               ) -> tuple[list[Row], list[ThreadRow]]:
    """Device rows (devices without IO in the phase left out unless idle) and every sync
    thread with calls, per phase x host."""
    phases = run.phases() if phases is None else phases
    aggs = aggregate(run, phases)
    rows: list[Row] = []
    trows: list[ThreadRow] = []
    for n, p in enumerate(phases):
        for h in run.hosts:
            pa = aggs.get((n, h.index))
            if pa is None:
                continue
            seconds = pa.seconds
            for name in sorted(pa.devices):
                a = pa.devices[name]
                v = device_values(a, seconds)
                if not idle and not v["ios"] and not a.ios.get("flush"):
                    continue
                rows.append(Row(p, h.name, name, _osd(a), seconds, v))
            for osd, a in sorted(osd_totals(pa.devices.values()).items()):
                v = device_values(a, seconds)
                if idle or v["ios"] or a.ios.get("flush"):
                    rows.append(Row(p, h.name, a.name, f"osd.{osd}", seconds, v))
            for t in sorted(pa.threads.values(), key=lambda t: (-t.calls, t.pid, t.tid)):
                if not t.calls:
                    continue
                lat = t.acc.histogram()
                trows.append(ThreadRow(p, h.name, t, {
                    "calls_s": t.calls / seconds if seconds else None,
                    "calls": float(t.calls), "fsync": float(t.fsync),
                    "fdatasync": float(t.fdatasync),
                    "sync_file_range": float(t.sync_file_range),
                    "p50": _pct(lat, 50), "p99": _pct(lat, 99),
                    **{c + "_p99": _pct(t.by_call[c].histogram(), 99) if c in t.by_call
                       else None for c in SYNC_CALLS}}))
    return rows, trows
