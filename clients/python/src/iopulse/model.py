"""Typed, decoded forms of the wire messages (proto/iopulse/v1/iopulse.proto)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .histogram import Histogram

OPS = ("read", "write", "flush", "discard")


def _hist_dict(h: Histogram) -> dict:
    d = h.summary()
    d["precision"] = h.precision
    d["buckets"] = [[i, c] for i, c in h.buckets()]
    return d


@dataclass
class OpStats:
    ios: int
    bytes: int
    errors: int
    untimed: int
    no_queue_ts: int
    completion_unseen: int
    queue_wait_ns: Histogram
    service_ns: Histogram
    total_ns: Histogram
    size_bytes: Histogram

    @classmethod
    def from_pb(cls, pb, k: int) -> "OpStats":
        return cls(pb.ios, pb.bytes, pb.errors, pb.untimed, pb.no_queue_ts,
                   pb.completion_unseen,
                   *(Histogram.from_pb(getattr(pb, n) if pb.HasField(n) else None, k)
                     for n in ("queue_wait_ns", "service_ns", "total_ns", "size_bytes")))

    def to_dict(self) -> dict:
        d = {n: getattr(self, n) for n in ("ios", "bytes", "errors", "untimed", "no_queue_ts",
                                            "completion_unseen")}
        for n in ("queue_wait_ns", "service_ns", "total_ns", "size_bytes"):
            d[n] = _hist_dict(getattr(self, n))
        return d


@dataclass
class DeviceStats:
    name: str
    major: int
    minor: int
    ops: dict[str, OpStats]
    seek_sequential: int
    seek_forward: int
    seek_backward: int
    seek_distance_sectors: Histogram
    preflush: int
    fua: int
    preflush_latency_ns: Histogram
    fua_latency_ns: Histogram
    requeues: int
    osd_id: Optional[int]
    osd_role: Optional[str]

    @property
    def sequential_pct(self) -> Optional[float]:
        n = self.seek_sequential + self.seek_forward + self.seek_backward
        return 100.0 * self.seek_sequential / n if n else None

    @classmethod
    def from_pb(cls, pb, k: int) -> "DeviceStats":
        def h(n):
            return Histogram.from_pb(getattr(pb, n) if pb.HasField(n) else None, k)

        ops = {op: OpStats.from_pb(getattr(pb, op), k) for op in OPS}
        return cls(pb.name, pb.major, pb.minor, ops, pb.seek_sequential, pb.seek_forward,
                   pb.seek_backward, h("seek_distance_sectors"), pb.preflush, pb.fua,
                   h("preflush_latency_ns"), h("fua_latency_ns"), pb.requeues,
                   pb.osd_id if pb.osd_id >= 0 else None,
                   pb.osd_role if pb.osd_id >= 0 else None)

    def to_dict(self) -> dict:
        return {"name": self.name, "dev": f"{self.major}:{self.minor}",
                "osd_id": self.osd_id, "osd_role": self.osd_role,
                "ops": {op: s.to_dict() for op, s in self.ops.items()},
                "seek": {"sequential": self.seek_sequential, "forward": self.seek_forward,
                         "backward": self.seek_backward, "sequential_pct": self.sequential_pct,
                         "distance_sectors": _hist_dict(self.seek_distance_sectors)},
                "flush": {"requests": self.ops["flush"].ios, "preflush": self.preflush,
                          "fua": self.fua,
                          "preflush_latency_ns": _hist_dict(self.preflush_latency_ns),
                          "fua_latency_ns": _hist_dict(self.fua_latency_ns)},
                "requeues": self.requeues}


@dataclass
class ThreadSync:
    pid: int
    tid: int
    comm: str
    process: str
    osd_id: Optional[int]
    dev_major: int
    dev_minor: int
    device: str
    fsync: int
    fdatasync: int
    sync_file_range: int
    flush_bios: int
    latency_sum_ns: int
    latency_ns: Histogram

    @property
    def calls(self) -> int:
        return self.fsync + self.fdatasync + self.sync_file_range

    @classmethod
    def from_pb(cls, pb, k: int) -> "ThreadSync":
        return cls(pb.pid, pb.tid, pb.comm, pb.process, pb.osd_id if pb.osd_id >= 0 else None,
                   pb.dev_major, pb.dev_minor, pb.device, pb.fsync, pb.fdatasync,
                   pb.sync_file_range, pb.flush_bios, pb.latency_sum_ns,
                   Histogram.from_pb(pb.latency_ns if pb.HasField("latency_ns") else None, k))

    def to_dict(self) -> dict:
        d = {n: getattr(self, n) for n in ("pid", "tid", "comm", "process", "osd_id", "device",
                                            "fsync", "fdatasync", "sync_file_range",
                                            "flush_bios", "latency_sum_ns")}
        d["dev"] = f"{self.dev_major}:{self.dev_minor}"
        d["calls"] = self.calls
        d["latency_ns"] = _hist_dict(self.latency_ns)
        return d


@dataclass
class PhaseMark:
    name: str
    labels: dict[str, str]
    end: bool
    realtime_ns: int
    monotonic_ns: int
    id: int

    @classmethod
    def from_pb(cls, pb) -> "PhaseMark":
        return cls(pb.name, dict(pb.labels), pb.end, pb.realtime_ns, pb.monotonic_ns, pb.id)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Update:
    """One interval, or several merged (merged > 1), as the daemon sent it."""
    seq: int
    first_seq: int
    merged: int
    start_realtime_ns: int
    end_realtime_ns: int
    start_monotonic_ns: int
    end_monotonic_ns: int
    precision: int
    devices: dict[str, DeviceStats]
    threads: list[ThreadSync]
    phases: list[PhaseMark]
    drops: dict[str, int] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return (self.end_monotonic_ns - self.start_monotonic_ns) / 1e9

    @property
    def start(self) -> float:
        return self.start_realtime_ns / 1e9

    @property
    def end(self) -> float:
        return self.end_realtime_ns / 1e9

    @classmethod
    def from_pb(cls, pb) -> "Update":
        k = pb.precision or 5
        drops = {}
        if pb.HasField("drops"):
            drops = {f.name: getattr(pb.drops, f.name) for f in pb.drops.DESCRIPTOR.fields}
        return cls(pb.seq, pb.first_seq, pb.merged, pb.start_realtime_ns, pb.end_realtime_ns,
                   pb.start_monotonic_ns, pb.end_monotonic_ns, k,
                   {d.name: DeviceStats.from_pb(d, k) for d in pb.devices},
                   [ThreadSync.from_pb(t, k) for t in pb.threads],
                   [PhaseMark.from_pb(m) for m in pb.phases], drops)

    def to_dict(self) -> dict:
        return {"seq": self.seq, "first_seq": self.first_seq, "merged": self.merged,
                "start_realtime_ns": self.start_realtime_ns,
                "end_realtime_ns": self.end_realtime_ns,
                "start_monotonic_ns": self.start_monotonic_ns,
                "end_monotonic_ns": self.end_monotonic_ns, "interval_s": self.seconds,
                "precision": self.precision,
                "devices": [d.to_dict() for d in self.devices.values()],
                "threads": [t.to_dict() for t in self.threads],
                "phases": [m.to_dict() for m in self.phases], "drops": self.drops}


@dataclass
class HistogramLayout:
    precision: int
    range_bits: int
    buckets: int
    max_relative_error: float


@dataclass
class DeviceInfo:
    name: str
    major: int
    minor: int
    model: str
    rotational: bool
    dm_name: str
    slaves: list[str]
    osd_id: Optional[int]
    osd_role: Optional[str]
    partition: bool
    present: bool


@dataclass
class AgentCost:
    bpf_run_time_ns: int
    bpf_run_count: int
    bpf_stats: bool
    cpu_user_s: float
    cpu_system_s: float
    rss_bytes: int


@dataclass
class Info:
    version: str
    kernel: str
    attach_mode: str
    btf: bool
    histogram: HistogramLayout
    devices: list[DeviceInfo]
    config: dict[str, str]
    cost: AgentCost
    interval_ns: int
    ring_seconds: int
    started_realtime_ns: int
    last_seq: int
    subscribers: int
    fanout_ns: int = 0
    fanout_streams: int = 0

    @classmethod
    def from_pb(cls, pb) -> "Info":
        h, c = pb.histogram, pb.cost
        devs = [DeviceInfo(d.name, d.major, d.minor, d.model, d.rotational, d.dm_name,
                           list(d.slaves), d.osd_id if d.osd_id >= 0 else None,
                           d.osd_role if d.osd_id >= 0 else None, d.partition, d.present)
                for d in pb.devices]
        return cls(pb.version, pb.kernel, pb.attach_mode, pb.btf,
                   HistogramLayout(h.precision, h.range_bits, h.buckets, h.max_relative_error),
                   devs, dict(pb.config),
                   AgentCost(c.bpf_run_time_ns, c.bpf_run_count, c.bpf_stats, c.cpu_user_s,
                             c.cpu_system_s, c.rss_bytes),
                   pb.interval_ns, pb.ring_seconds, pb.started_realtime_ns, pb.last_seq,
                   pb.subscribers, pb.fanout_ns, pb.fanout_streams)

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)
