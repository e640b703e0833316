"""Typed, decoded forms of the wire messages (proto/iopulse/v1/iopulse.proto).

Every class has from_pb(message) (classes holding histograms also take the Update's
precision, used for histograms the daemon left unset) and to_dict() for JSON. Counts are
deltas over the Update's window (the whole run for a snapshot). osd_id -1 and empty names on
the wire become None here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .histogram import Histogram

# The names the wire gives a device's ops, their counters and histograms, and the sync calls:
# the one place they are spelled (the report, compare, export and top take them from here).
OPS = ("read", "write", "flush", "discard")           # a device's ops, in the message's order
DATA_OPS = ("read", "write", "discard")               # what ALL adds up (diskstats' IOs)
LATENCY_OPS = ("read", "write")                       # the ops shown apart in a flat record
ALL = "all"                                           # the name of the data ops together
OP_COUNTERS = ("ios", "bytes", "errors", "untimed", "no_queue_ts", "completion_unseen")
OP_HISTOGRAMS = ("queue_wait_ns", "service_ns", "total_ns", "size_bytes")
DEVICE_HISTOGRAMS = ("seek_distance_sectors", "preflush_latency_ns", "fua_latency_ns")
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range")
DEFAULT_PRECISION = 5


def _rate(n: float, seconds: Optional[float]) -> Optional[float]:
    return n / seconds if seconds else None


def _hist(msg: Any, name: str, k: int) -> Histogram:
    return Histogram.from_pb(getattr(msg, name) if msg.HasField(name) else None, k)


def _osd(osd_id: int, role: str) -> tuple[Optional[int], Optional[str]]:
    return (None, None) if osd_id < 0 else (osd_id, role or None)


@dataclass
class OpStats:
    """One op type (read, write, flush or discard) of one device."""
    ios: int                    # requests completed
    bytes: int
    errors: int
    untimed: int                # completions whose dispatch was not seen
    no_queue_ts: int            # completions without a submission time
    completion_unseen: int      # completions the kernel never reported: counted, untimed
    queue_wait_ns: Histogram    # bio submitted -> dispatched to the driver
    service_ns: Histogram       # dispatched -> completed
    total_ns: Histogram         # submitted -> completed
    size_bytes: Histogram

    HISTOGRAMS = OP_HISTOGRAMS

    @classmethod
    def from_pb(cls, msg: Any, precision: int = DEFAULT_PRECISION) -> "OpStats":
        return cls(msg.ios, msg.bytes, msg.errors, msg.untimed, msg.no_queue_ts,
                   msg.completion_unseen,
                   *(_hist(msg, n, precision) for n in cls.HISTOGRAMS))

    def to_dict(self, seconds: Optional[float] = None) -> dict[str, Any]:
        """With seconds (the window length), also iops and bytes_per_s (None without)."""
        d: dict[str, Any] = {"ios": self.ios, "bytes": self.bytes,
                             "iops": _rate(self.ios, seconds),
                             "bytes_per_s": _rate(self.bytes, seconds),
                             "errors": self.errors, "untimed": self.untimed,
                             "no_queue_ts": self.no_queue_ts,
                             "completion_unseen": self.completion_unseen}
        for n in self.HISTOGRAMS:
            d[n] = getattr(self, n).to_dict()
        return d


@dataclass
class DeviceStats:
    """One block device over the window: ops by type, seeks, flush/FUA, requeues."""
    name: str
    major: int
    minor: int
    ops: dict[str, OpStats]     # 'read', 'write', 'flush', 'discard'
    seek_sequential: int        # dispatches starting where the previous one ended
    seek_forward: int
    seek_backward: int
    seek_distance_sectors: Histogram
    preflush: int               # requests carrying REQ_PREFLUSH
    fua: int                    # requests carrying REQ_FUA
    preflush_latency_ns: Histogram
    fua_latency_ns: Histogram
    requeues: int
    osd_id: Optional[int]       # None: not an OSD device
    osd_role: Optional[str]     # block, block.db, block.wal
    holders: list[str] = field(default_factory=list)   # dm/md devices stacked on it

    @property
    def dev(self) -> str:
        """'MAJOR:MINOR'."""
        return f"{self.major}:{self.minor}"

    @property
    def seeks(self) -> int:
        return self.seek_sequential + self.seek_forward + self.seek_backward

    @property
    def sequential_pct(self) -> Optional[float]:
        """Share of dispatches that were sequential, in percent; None when there were none."""
        n = self.seeks
        return 100.0 * self.seek_sequential / n if n else None

    @classmethod
    def from_pb(cls, msg: Any, precision: int = DEFAULT_PRECISION) -> "DeviceStats":
        ops = {op: OpStats.from_pb(getattr(msg, op), precision) for op in OPS}
        return cls(msg.name, msg.major, msg.minor, ops, msg.seek_sequential, msg.seek_forward,
                   msg.seek_backward, _hist(msg, "seek_distance_sectors", precision),
                   msg.preflush, msg.fua, _hist(msg, "preflush_latency_ns", precision),
                   _hist(msg, "fua_latency_ns", precision), msg.requeues,
                   *_osd(msg.osd_id, msg.osd_role), list(msg.holders))

    def to_dict(self, seconds: Optional[float] = None) -> dict[str, Any]:
        """The daemon's --json device layout (docs/json-output.md), histograms in full."""
        return {"name": self.name, "dev": self.dev, "osd_id": self.osd_id,
                "osd_role": self.osd_role, "holders": list(self.holders),
                "ops": {op: s.to_dict(seconds) for op, s in self.ops.items()},
                "seek": {"sequential": self.seek_sequential, "forward": self.seek_forward,
                         "backward": self.seek_backward, "sequential_pct": self.sequential_pct,
                         "distance_sectors": self.seek_distance_sectors.to_dict()},
                "flush": {"requests": self.ops["flush"].ios, "preflush": self.preflush,
                          "fua": self.fua,
                          "preflush_latency_ns": self.preflush_latency_ns.to_dict(),
                          "fua_latency_ns": self.fua_latency_ns.to_dict()},
                "requeues": self.requeues}


@dataclass
class SyncLatency:
    """The latencies of one kind of sync call of one thread over the window."""
    sum_ns: int                 # exact sum
    latency_ns: Histogram

    @classmethod
    def from_pb(cls, msg: Any, precision: int = DEFAULT_PRECISION) -> "SyncLatency":
        return cls(msg.sum_ns, _hist(msg, "histogram_ns", precision))


def device_where(device: Optional[str], disks: Sequence[str]) -> str:
    """A sync thread's device, with the disks beneath it when it is a dm/md device:
    'dm-0>sdb,sdc'; '?' when the device is unknown."""
    name = device or "?"
    return f"{name}>{','.join(disks)}" if disks else name


@dataclass
class ThreadSync:
    """fsync / fdatasync / sync_file_range calls of one thread on one device, or (folded > 0,
    GetSnapshot only) the totals of that many threads folded together: threads that exited,
    by comm, process and OSD (pid and tid 0), or, with comm and process empty, the device's
    other threads."""
    pid: int
    tid: int
    comm: str                   # thread name
    process: str                # thread group leader's name
    osd_id: Optional[int]       # None: not a ceph-osd thread
    dev_major: int              # device of the synced file
    dev_minor: int
    device: Optional[str]       # its name; None if unknown
    fsync: int
    fdatasync: int
    sync_file_range: int
    flush_bios: int             # REQ_PREFLUSH bios issued from inside the calls
    latency_sum_ns: int         # all kinds of call
    latency_ns: Histogram       # all kinds of call
    # each kind apart, by SYNC_CALLS name; None from a daemon that does not send them
    by_call: dict[str, Optional[SyncLatency]] = field(default_factory=dict)
    folded: int = 0             # 0: one live thread; N: N threads' totals (see above)
    # device is a dm/md device (an LVM volume): the disks at the bottom of its stack, where
    # the calls' writes and flushes go; empty for a disk
    disks: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return device_where(self.device, self.disks)

    @property
    def calls(self) -> int:
        return self.fsync + self.fdatasync + self.sync_file_range

    @property
    def who(self) -> str:
        """'pid/tid' of a thread; 'N exited' or 'N others' for folded totals."""
        if not self.folded:
            return f"{self.pid}/{self.tid}"
        return f"{self.folded} {'exited' if self.comm or self.process else 'others'}"

    def call_latency(self, call: str) -> Optional[SyncLatency]:
        """The latencies of one kind of call ('fsync', 'fdatasync', 'sync_file_range')."""
        if call not in SYNC_CALLS:
            raise ValueError(f"unknown sync call {call!r}; one of {', '.join(SYNC_CALLS)}")
        return self.by_call.get(call)

    @property
    def dev(self) -> str:
        return f"{self.dev_major}:{self.dev_minor}"

    @property
    def latency_mean_ns(self) -> Optional[float]:
        """Exact mean call latency (latency_sum_ns / calls); None without calls."""
        return self.latency_sum_ns / self.calls if self.calls else None

    @classmethod
    def from_pb(cls, msg: Any, precision: int = DEFAULT_PRECISION) -> "ThreadSync":
        return cls(msg.pid, msg.tid, msg.comm, msg.process,
                   msg.osd_id if msg.osd_id >= 0 else None, msg.dev_major, msg.dev_minor,
                   msg.device or None, msg.fsync, msg.fdatasync, msg.sync_file_range,
                   msg.flush_bios, msg.latency_sum_ns, _hist(msg, "latency_ns", precision),
                   {c: SyncLatency.from_pb(getattr(msg, c + "_latency"), precision)
                    if msg.HasField(c + "_latency") else None for c in SYNC_CALLS},
                   msg.threads_folded, list(msg.disks))

    def to_dict(self, seconds: Optional[float] = None) -> dict[str, Any]:
        return {"pid": self.pid, "tid": self.tid, "threads_folded": self.folded,
                "comm": self.comm, "process": self.process, "osd_id": self.osd_id, "dev": self.dev, "device": self.device,
                "disks": list(self.disks),
                "fsync": self.fsync, "fdatasync": self.fdatasync,
                "sync_file_range": self.sync_file_range, "calls": self.calls,
                "calls_per_s": _rate(self.calls, seconds), "flush_bios": self.flush_bios,
                "latency_sum_ns": self.latency_sum_ns, "latency_ns": self.latency_ns.to_dict(),
                "by_call": {c: None if lat is None else
                            {"calls": getattr(self, c), "latency_sum_ns": lat.sum_ns,
                             "latency_ns": lat.latency_ns.to_dict()}
                            for c, lat in ((c, self.by_call.get(c)) for c in SYNC_CALLS)}}


@dataclass
class PhaseMark:
    """A named phase begin or end, stamped with the daemon's clocks."""
    name: str
    labels: dict[str, str]
    end: bool                   # False: the phase begins; True: it ends
    realtime_ns: int            # daemon's CLOCK_REALTIME: the interval edge the mark made
    monotonic_ns: int           # daemon's CLOCK_MONOTONIC (the clock of Update windows)
    id: int                     # rising, daemon-wide
    begin_id: int = 0           # end marks: the begin mark they close
    parent_id: int = 0          # begin marks: the phase it nests in (the one asked for, else
                                # the session's innermost open phase then), or 0
    session: str = ""
    abandoned: bool = False     # ended by the daemon: its session's client went away

    @property
    def realtime_s(self) -> float:
        return self.realtime_ns / 1e9

    @classmethod
    def from_pb(cls, msg: Any) -> "PhaseMark":
        return cls(msg.name, dict(msg.labels), msg.end, msg.realtime_ns, msg.monotonic_ns,
                   msg.id, msg.begin_id, msg.parent_id, msg.session, msg.abandoned)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "labels": dict(self.labels), "end": self.end,
                "realtime_ns": self.realtime_ns, "monotonic_ns": self.monotonic_ns,
                "id": self.id, "begin_id": self.begin_id, "parent_id": self.parent_id,
                "session": self.session, "abandoned": self.abandoned}


@dataclass
class Drops:
    """What the daemon could not measure in the window (see docs/json-output.md)."""
    no_slot: int = 0
    inflight_full: int = 0
    sync_full: int = 0
    sync_evicted: int = 0
    no_bio_ts: int = 0
    bio_evicted: int = 0
    program_skips: int = 0
    completed_at_accounting: int = 0

    @classmethod
    def from_pb(cls, msg: Any) -> "Drops":
        """From an iopulse.v1.Drops message; None (unset) is all zeros."""
        if msg is None:
            return cls()
        return cls(**{f.name: getattr(msg, f.name) for f in dataclasses.fields(cls)})

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass
class Update:
    """One interval, or several merged (merged > 1), as the daemon sent it."""
    seq: int                    # the last interval in it
    first_seq: int              # the first; seq - first_seq + 1 == merged
    merged: int
    start_realtime_ns: int
    end_realtime_ns: int
    start_monotonic_ns: int
    end_monotonic_ns: int
    precision: int              # of every histogram in it
    devices: dict[str, DeviceStats]
    threads: list[ThreadSync]
    phases: list[PhaseMark]
    drops: Drops = field(default_factory=Drops)
    # marks made in the window: len(phases), except in a snapshot, which lists only the begin
    # marks of the phases open when it was taken
    phase_marks: int = 0

    @property
    def duration_ns(self) -> int:
        """Length of the window (monotonic clock)."""
        return max(0, self.end_monotonic_ns - self.start_monotonic_ns)

    @property
    def duration_s(self) -> float:
        return self.duration_ns / 1e9

    @property
    def start_realtime_s(self) -> float:
        return self.start_realtime_ns / 1e9

    @property
    def end_realtime_s(self) -> float:
        return self.end_realtime_ns / 1e9

    @property
    def start_monotonic_s(self) -> float:
        return self.start_monotonic_ns / 1e9

    @property
    def end_monotonic_s(self) -> float:
        return self.end_monotonic_ns / 1e9

    def rate(self, n: float) -> Optional[float]:
        """n per second of the window; None for an empty window."""
        return _rate(n, self.duration_s)

    @classmethod
    def from_pb(cls, msg: Any) -> "Update":
        k = msg.precision or DEFAULT_PRECISION
        return cls(msg.seq, msg.first_seq, msg.merged, msg.start_realtime_ns,
                   msg.end_realtime_ns, msg.start_monotonic_ns, msg.end_monotonic_ns, k,
                   {d.name: DeviceStats.from_pb(d, k) for d in msg.devices},
                   [ThreadSync.from_pb(t, k) for t in msg.threads],
                   [PhaseMark.from_pb(m) for m in msg.phases],
                   Drops.from_pb(msg.drops if msg.HasField("drops") else None),
                   msg.phase_marks)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, laid out like the daemon's --json lines (docs/json-output.md) with the
        wire's field names; rates (iops, bytes_per_s, calls_per_s) are per second of the
        window, None when it is empty."""
        s = self.duration_s
        return {"seq": self.seq, "first_seq": self.first_seq, "merged": self.merged,
                "start_realtime_ns": self.start_realtime_ns,
                "end_realtime_ns": self.end_realtime_ns,
                "start_monotonic_ns": self.start_monotonic_ns,
                "end_monotonic_ns": self.end_monotonic_ns, "interval_s": s,
                "precision": self.precision,
                "devices": [d.to_dict(s) for d in self.devices.values()],
                "threads": [t.to_dict(s) for t in self.threads],
                "phases": [m.to_dict() for m in self.phases], "phase_marks": self.phase_marks,
                "drops": self.drops.to_dict()}


@dataclass
class HistogramLayout:
    """The daemon's histogram layout (see iopulse.histogram)."""
    precision: int
    range_bits: int
    buckets: int
    max_relative_error: float
    mode: str = ""              # histogram.mode: "full" or "completion" ("": a daemon without modes)

    @classmethod
    def from_pb(cls, msg: Any) -> "HistogramLayout":
        return cls(msg.precision, msg.range_bits, msg.buckets, msg.max_relative_error,
                   msg.mode)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _num(v: int) -> Optional[int]:
    return None if v < 0 else v


@dataclass
class DeviceSettings:
    """A device's queue settings as sysfs showed them when the daemon answered GetInfo with
    device_settings (a partition's are its disk's). None: the device has no such file (another
    kind of device, another kernel) or its content did not parse."""
    scheduler: Optional[str]        # in use: none, mq-deadline, bfq, kyber
    schedulers: list[str]           # offered
    iosched: dict[str, str]         # the scheduler's tunables (queue/iosched/*), as printed
    nr_requests: Optional[int]
    queue_depth: Optional[int]      # device/queue_depth (SCSI, SATA)
    read_ahead_kb: Optional[int]
    write_cache: Optional[str]      # "write back" or "write through"
    wbt_lat_usec: Optional[int]     # 0: writeback throttling off
    max_sectors_kb: Optional[int]
    nomerges: Optional[int]
    rotational: Optional[bool]
    firmware: Optional[str]         # device/firmware_rev (NVMe), device/rev (SCSI, SATA)
    model: Optional[str] = None     # DeviceInfo.model: device/model, or a loop device's file

    KEYS = ("scheduler", "nr_requests", "queue_depth", "read_ahead_kb", "write_cache",
            "wbt_lat_usec", "max_sectors_kb", "nomerges", "rotational", "firmware", "model")

    @classmethod
    def from_pb(cls, msg: Any, model: str = "") -> "DeviceSettings":
        return cls(msg.scheduler or None, list(msg.schedulers), dict(sorted(msg.iosched.items())),
                   _num(msg.nr_requests), _num(msg.queue_depth), _num(msg.read_ahead_kb),
                   msg.write_cache or None, _num(msg.wbt_lat_usec), _num(msg.max_sectors_kb),
                   _num(msg.nomerges), None if msg.rotational < 0 else bool(msg.rotational),
                   msg.firmware or None, model or None)

    def flat(self) -> dict[str, str]:
        """Every setting the device has, as text, the tunables as iosched.NAME: what two
        recordings' settings are compared by."""
        out = {}
        for k in self.KEYS:
            v = getattr(self, k)
            if v is not None:
                out[k] = str(int(v)) if isinstance(v, bool) else str(v)
        out.update({f"iosched.{k}": v for k, v in self.iosched.items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class DeviceInfo:
    """A block device the daemon knows, with its labels."""
    name: str
    major: int
    minor: int
    model: str
    rotational: bool
    dm_name: Optional[str]      # device-mapper / LVM name
    slaves: list[str]           # underlying disks of a dm device
    osd_id: Optional[int]
    osd_role: Optional[str]
    partition: bool
    present: bool
    holders: list[str] = field(default_factory=list)   # dm/md devices stacked on it
    disks: list[str] = field(default_factory=list)     # dm/md: disks at the bottom of its stack
    settings: Optional[DeviceSettings] = None   # only when GetInfo was asked for them

    @property
    def dev(self) -> str:
        return f"{self.major}:{self.minor}"

    @classmethod
    def from_pb(cls, msg: Any) -> "DeviceInfo":
        return cls(msg.name, msg.major, msg.minor, msg.model, msg.rotational,
                   msg.dm_name or None, list(msg.slaves), *_osd(msg.osd_id, msg.osd_role),
                   msg.partition, msg.present, list(msg.holders), list(msg.disks),
                   DeviceSettings.from_pb(msg.settings, msg.model)
                   if msg.HasField("settings") else None)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["dev"] = self.dev
        if self.settings is None:
            del d["settings"]
        return d


@dataclass
class AgentCost:
    """What the daemon has cost since it started."""
    bpf_run_time_ns: int        # all programs (0 unless bpf_stats is on)
    bpf_run_count: int
    bpf_stats: bool
    cpu_user_s: float
    cpu_system_s: float
    rss_bytes: int

    @classmethod
    def from_pb(cls, msg: Any) -> "AgentCost":
        return cls(msg.bpf_run_time_ns, msg.bpf_run_count, msg.bpf_stats, msg.cpu_user_s,
                   msg.cpu_system_s, msg.rss_bytes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ServerLimits:
    """What clients may make the daemon hold (its server.* settings); a request over one is
    refused with ResourceExhausted naming the setting."""
    mark_rate: int = 0          # phase marks per second, bursts of twice that
    mark_bytes: int = 0         # largest mark request
    mark_labels: int = 0        # labels on one mark
    open_phases: int = 0        # phases open at once
    subscribers: int = 0        # Subscribe streams at once
    request_bytes: int = 0      # largest request of any kind
    ring_seconds: int = 0       # history kept for replay
    ring_mib: int = 0           # memory the replay ring holds at most

    @classmethod
    def from_pb(cls, msg: Any) -> "ServerLimits":
        return cls(msg.mark_rate, msg.mark_bytes, msg.mark_labels, msg.open_phases,
                   msg.subscribers, msg.request_bytes, msg.ring_seconds, msg.ring_mib)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Info:
    """GetInfo: the daemon, its kernel, layout, devices, config and cost."""
    version: str
    kernel: str
    attach_mode: str            # tp_btf or raw_tp
    btf: bool
    histogram: HistogramLayout
    devices: list[DeviceInfo]
    config: dict[str, str]      # settings in effect
    cost: AgentCost
    interval_ns: int
    ring_seconds: int           # how far back Subscribe can replay
    started_realtime_ns: int
    last_seq: int
    subscribers: int
    fanout_ns: int              # last interval: time to hand it to every stream
    fanout_streams: int
    open_phases: list[PhaseMark] = dataclasses.field(default_factory=list)  # begin marks
    hostname: str = ""
    limits: Optional[ServerLimits] = None   # None from a daemon too old to report them
    ring_bytes: int = 0         # packed Updates the replay ring holds now

    @property
    def interval_s(self) -> float:
        return self.interval_ns / 1e9

    @classmethod
    def from_pb(cls, msg: Any) -> "Info":
        return cls(msg.version, msg.kernel, msg.attach_mode, msg.btf,
                   HistogramLayout.from_pb(msg.histogram),
                   [DeviceInfo.from_pb(d) for d in msg.devices], dict(msg.config),
                   AgentCost.from_pb(msg.cost), msg.interval_ns, msg.ring_seconds,
                   msg.started_realtime_ns, msg.last_seq, msg.subscribers, msg.fanout_ns,
                   msg.fanout_streams, [PhaseMark.from_pb(m) for m in msg.open_phases],
                   msg.hostname,
                   ServerLimits.from_pb(msg.limits) if msg.HasField("limits") else None,
                   msg.ring_bytes)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["histogram"] = self.histogram.to_dict()
        d["devices"] = [x.to_dict() for x in self.devices]
        d["config"] = dict(self.config)
        d["cost"] = self.cost.to_dict()
        d["open_phases"] = [m.to_dict() for m in self.open_phases]
        d["limits"] = self.limits.to_dict() if self.limits else None
        d["interval_s"] = self.interval_s
        return d
