"""Per phase x host x device numbers from a run: counts add up and histograms merge exactly
over the phase's Updates, then rates divide by the summed windows."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..histogram import Histogram
from ..model import Update
from ..phases.model import Phase
from ..record.reader import Run

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
THREAD_COLUMNS = [("calls_s", "calls/s", "rate1"), ("p50", "p50", "ns"), ("p99", "p99", "ns")]


@dataclass
class DeviceAgg:
    name: str
    osd_id: Optional[int] = None
    osd_role: Optional[str] = None
    ios: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    hist: dict[str, Histogram] = field(default_factory=dict)
    seek_sequential: int = 0
    seek_other: int = 0


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
    latency: Optional[Histogram] = None


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
                "osd_id": t.osd_id, "device": t.device, **self.values}


def _add(h: dict[str, Histogram], key: str, other: Histogram, k: int) -> None:
    if other.count:
        h.setdefault(key, Histogram(k)).merge(other)


def aggregate(updates: list[Update]) -> tuple[float, dict[str, DeviceAgg],
                                              dict[tuple[int, int], ThreadAgg]]:
    """(seconds covered, devices, threads) over updates."""
    seconds = sum(u.duration_s for u in updates)
    devs: dict[str, DeviceAgg] = {}
    threads: dict[tuple[int, int], ThreadAgg] = {}
    for u in updates:
        k = u.precision
        for name, d in u.devices.items():
            a = devs.setdefault(name, DeviceAgg(name))
            a.osd_id, a.osd_role = d.osd_id, d.osd_role
            for op, s in d.ops.items():
                a.ios[op] = a.ios.get(op, 0) + s.ios
                a.bytes[op] = a.bytes.get(op, 0) + s.bytes
                if op in LATENCY_OPS:
                    _add(a.hist, "qwait", s.queue_wait_ns, k)
                    _add(a.hist, "svc", s.service_ns, k)
                    _add(a.hist, "total", s.total_ns, k)
                if op in DATA_OPS:
                    _add(a.hist, "size", s.size_bytes, k)
            _add(a.hist, "seek", d.seek_distance_sectors, k)
            _add(a.hist, "preflush", d.preflush_latency_ns, k)
            a.seek_sequential += d.seek_sequential
            a.seek_other += d.seek_forward + d.seek_backward
        for t in u.threads:
            key = (t.pid, t.tid)
            ta = threads.get(key)
            if ta is None:
                ta = threads[key] = ThreadAgg(t.comm, t.process, t.pid, t.tid, t.osd_id,
                                              t.device)
            ta.calls += t.calls
            ta.fsync += t.fsync
            ta.fdatasync += t.fdatasync
            ta.sync_file_range += t.sync_file_range
            if t.latency_ns.count:
                if ta.latency is None:
                    ta.latency = Histogram(k)
                ta.latency.merge(t.latency_ns)
    return seconds, devs, threads


def _pct(h: Optional[Histogram], q: float) -> Optional[float]:
    return None if h is None or not h.count else float(h.percentile(q))


def device_values(a: DeviceAgg, seconds: float) -> dict[str, Optional[float]]:
    ios = sum(a.ios.get(op, 0) for op in DATA_OPS)
    nbytes = sum(a.bytes.get(op, 0) for op in DATA_OPS)
    seeks = a.seek_sequential + a.seek_other
    h = a.hist.get
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
        "seek_p50": _pct(h("seek"), 50), "size_p50": _pct(h("size"), 50),
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


def phase_rows(run: Run, phases: Optional[list[Phase]] = None, idle: bool = False
               ) -> tuple[list[Row], list[ThreadRow]]:
    """Device rows (devices without IO in the phase left out unless idle) and every sync
    thread with calls, per phase x host."""
    rows: list[Row] = []
    trows: list[ThreadRow] = []
    for p in phases if phases is not None else run.phases():
        for h in run.hosts:
            ups = p.updates(h.index, h.updates)
            if not ups:
                continue
            seconds, devs, threads = aggregate(ups)
            for name in sorted(devs):
                a = devs[name]
                v = device_values(a, seconds)
                if not idle and not v["ios"] and not a.ios.get("flush"):
                    continue
                rows.append(Row(p, h.name, name, _osd(a), seconds, v))
            for t in sorted(threads.values(), key=lambda t: (-t.calls, t.pid, t.tid)):
                if not t.calls:
                    continue
                trows.append(ThreadRow(p, h.name, t, {
                    "calls_s": t.calls / seconds if seconds else None,
                    "calls": float(t.calls), "fsync": float(t.fsync),
                    "fdatasync": float(t.fdatasync),
                    "sync_file_range": float(t.sync_file_range),
                    "p50": _pct(t.latency, 50), "p99": _pct(t.latency, 99)}))
    return rows, trows
