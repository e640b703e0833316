"""A run's Updates added up per phase x host x device (and sync thread): counts add, histogram
buckets add, window lengths add. Nothing here divides: every figure is computed from these
sums in metrics.py, once, for the report, compare, export and iopulse.load() alike."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Optional, Protocol, Sequence, Union

from ..histogram import Histogram
from ..model import (ALL, DATA_OPS, DEFAULT_PRECISION, DEVICE_HISTOGRAMS, OP_COUNTERS,
                     OP_HISTOGRAMS, OPS, SYNC_CALLS, DeviceInfo, device_where)
from ..phases.model import Phase

ROW_OPS = DATA_OPS + ("flush", ALL)         # the op rows of a device, in this order


class RunLike(Protocol):
    """What the sums read of a run (iopulse.record.Run is one): its path, header and hosts
    (each with index, name and info), its phases, and its Updates as iopulse.v1.Update
    messages, (host index, message) in file order."""
    path: str
    header: dict[str, Any]
    hosts: Sequence[Any]

    def phases(self) -> list[Phase]: ...

    def iter_updates(self) -> Iterator[tuple[int, Any]]: ...


def add_pb(hists: dict[str, Histogram], name: str, msg: Any, k: int) -> None:
    """Add the buckets of a wire histogram (precision k when it names none) to hists[name],
    which its first buckets make: an entry holds buckets, an absent one had none."""
    if len(msg.index):
        h = hists.get(name)
        if h is None:
            h = hists[name] = Histogram(msg.precision or k)
        h.add_pb(msg, k)


def merge_into(hists: dict[str, Histogram], other: dict[str, Histogram]) -> None:
    """Add other's histograms to hists by name (copies: hists never shares one)."""
    for name, h in other.items():
        mine = hists.get(name)
        if mine is None:
            hists[name] = h.copy()
        else:
            mine.absorb(h)


@dataclass
class OpAgg:
    """One op of one device: counters added up, histograms (by their wire names) merged."""
    ios: int = 0
    bytes: int = 0
    errors: int = 0
    untimed: int = 0
    no_queue_ts: int = 0
    completion_unseen: int = 0
    hists: dict[str, Histogram] = field(default_factory=dict)     # those with buckets

    def add(self, s: Any, k: int) -> None:
        """Add one iopulse.v1.OpStats message."""
        self.ios += s.ios
        self.bytes += s.bytes
        self.errors += s.errors
        self.untimed += s.untimed
        self.no_queue_ts += s.no_queue_ts
        self.completion_unseen += s.completion_unseen
        for name in OP_HISTOGRAMS:
            add_pb(self.hists, name, getattr(s, name), k)

    def merge(self, other: "OpAgg") -> None:
        for name in OP_COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        merge_into(self.hists, other.hists)

    def histogram(self, metric: str) -> Optional[Histogram]:
        """A copy of one histogram's sums; None when nothing was recorded."""
        h = self.hists.get(metric)
        return h.copy() if h is not None else None


# the short names plots.py and earlier callers use for DeviceAgg.hist()
_LEGACY = {"qwait": "queue_wait_ns", "svc": "service_ns", "total": "total_ns",
           "size": "size_bytes", "seek": "seek_distance_sectors",
           "preflush": "preflush_latency_ns", "fua": "fua_latency_ns"}


@dataclass
class DeviceAgg:
    """One device in one phase on one host."""
    name: str
    osd_id: Optional[int] = None
    osd_role: Optional[str] = None
    ops: dict[str, OpAgg] = field(default_factory=lambda: {op: OpAgg() for op in OPS})
    seek_sequential: int = 0
    seek_forward: int = 0
    seek_backward: int = 0
    preflush: int = 0
    fua: int = 0
    requeues: int = 0
    hists: dict[str, Histogram] = field(default_factory=dict)   # DEVICE_HISTOGRAMS

    def add(self, d: Any, k: int) -> None:
        """Add one iopulse.v1.DeviceStats message."""
        if d.osd_id >= 0:
            self.osd_id, self.osd_role = d.osd_id, d.osd_role or None
        for op in OPS:
            self.ops[op].add(getattr(d, op), k)
        self.seek_sequential += d.seek_sequential
        self.seek_forward += d.seek_forward
        self.seek_backward += d.seek_backward
        self.preflush += d.preflush
        self.fua += d.fua
        self.requeues += d.requeues
        for name in DEVICE_HISTOGRAMS:
            add_pb(self.hists, name, getattr(d, name), k)

    def merge(self, other: "DeviceAgg") -> None:
        for op, o in other.ops.items():
            self.ops[op].merge(o)
        for name in ("seek_sequential", "seek_forward", "seek_backward", "preflush", "fua",
                     "requeues"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        merge_into(self.hists, other.hists)

    def op(self, op: str) -> OpAgg:
        """One op's sums; ALL ('all'): the data ops (read, write, discard) added up."""
        if op in self.ops:
            return self.ops[op]
        if op != ALL:
            raise ValueError(f"unknown op {op!r}; one of {', '.join(ROW_OPS)}")
        t = OpAgg()
        for o in DATA_OPS:
            t.merge(self.ops[o])
        return t

    def histogram(self, op: str, metric: str) -> Optional[Histogram]:
        """The merged histogram of an op's metric (OP_HISTOGRAMS) or of a device-wide one
        (DEVICE_HISTOGRAMS, op 'all'); None when nothing was recorded."""
        if metric in DEVICE_HISTOGRAMS:
            if op != ALL:
                raise ValueError(f"{metric} is recorded per device, not per op: use op "
                                 f"'{ALL}'")
            h = self.hists.get(metric)
            return h.copy() if h is not None else None
        if metric not in OP_HISTOGRAMS:
            raise ValueError(f"unknown metric {metric!r}; one of "
                             f"{', '.join(OP_HISTOGRAMS + DEVICE_HISTOGRAMS)}")
        return self.op(op).histogram(metric)

    # earlier names, kept for plots.py
    @property
    def ios(self) -> dict[str, int]:
        return {op: o.ios for op, o in self.ops.items()}

    @property
    def bytes(self) -> dict[str, int]:
        return {op: o.bytes for op, o in self.ops.items()}

    @property
    def seek_other(self) -> int:
        return self.seek_forward + self.seek_backward

    def hist(self, key: str) -> Optional[Histogram]:
        """hist('total') etc.: the data ops' merged histogram by its short name."""
        name = _LEGACY.get(key, key)
        return self.histogram(ALL, name)


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
    flush_bios: int = 0
    latency_sum_ns: int = 0
    hists: dict[str, Histogram] = field(default_factory=dict)   # latency_ns: all calls
    by_call: dict[str, Histogram] = field(default_factory=dict)   # recorded by newer daemons
    disks: tuple[str, ...] = ()   # device is a dm/md device: the disks at the bottom of it

    @property
    def where(self) -> str:
        return device_where(self.device, self.disks)

    def add(self, t: Any, k: int) -> None:
        """Add one iopulse.v1.ThreadSync message."""
        self.fsync += t.fsync
        self.fdatasync += t.fdatasync
        self.sync_file_range += t.sync_file_range
        self.calls += t.fsync + t.fdatasync + t.sync_file_range
        self.flush_bios += t.flush_bios
        self.latency_sum_ns += t.latency_sum_ns
        add_pb(self.hists, "latency_ns", t.latency_ns, k)
        for c in SYNC_CALLS:
            if t.HasField(c + "_latency") and getattr(t, c):
                add_pb(self.by_call, c, getattr(t, c + "_latency").histogram_ns, k)

    def merge(self, other: "ThreadAgg") -> None:
        """Another thread's calls added to these (counts add, latency buckets merge)."""
        for name in ("calls", "fsync", "fdatasync", "sync_file_range", "flush_bios",
                     "latency_sum_ns"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        merge_into(self.hists, other.hists)
        merge_into(self.by_call, other.by_call)


@dataclass
class PhaseAgg:
    """Everything of one phase on one host: its Updates' windows, devices and threads."""
    seconds: float = 0.0
    updates: int = 0
    devices: dict[str, DeviceAgg] = field(default_factory=dict)
    threads: dict[tuple[int, int], ThreadAgg] = field(default_factory=dict)
    only: frozenset[str] = frozenset()     # the phase's own devices (Phase.devices), if any
    others: dict[str, DeviceAgg] = field(default_factory=dict)   # the rest, when only is set

    def add(self, u: Any) -> None:
        """Add one iopulse.v1.Update message."""
        k = u.precision or DEFAULT_PRECISION
        self.seconds += max(0, u.end_monotonic_ns - u.start_monotonic_ns) / 1e9
        self.updates += 1
        for d in u.devices:
            into = self.devices if not self.only or d.name in self.only else self.others
            a = into.get(d.name)
            if a is None:
                a = into[d.name] = DeviceAgg(d.name)
            a.add(d, k)
        for t in u.threads:
            key = (t.pid, t.tid)
            ta = self.threads.get(key)
            if ta is None:
                ta = self.threads[key] = ThreadAgg(t.comm, t.process, t.pid, t.tid,
                                                   t.osd_id if t.osd_id >= 0 else None,
                                                   t.device, disks=tuple(t.disks))
            ta.add(t, k)


def _under(names: set[str], a: DeviceAgg, info: Optional[DeviceInfo]) -> set[str]:
    """The names among names that device a sits on: a dm/md device's disks and slaves, a
    partition's disk (the longest other name its own begins with: sdb of sdb1, nvme0n1 of
    nvme0n1p2)."""
    if info is None:
        return set()
    out = {s for s in list(info.slaves) + list(info.disks) if s in names and s != a.name}
    if info.partition:
        disks = [n for n in names if n != a.name and a.name.startswith(n)]
        if disks:
            out.add(max(disks, key=len))
    return out


def osd_parts(devs: Iterable[DeviceAgg], infos: Optional[Mapping[str, DeviceInfo]] = None
              ) -> dict[int, list[DeviceAgg]]:
    """Per Ceph OSD, its devices of one host whose IO none of its other devices carries: the
    disk under its LV or its partition (labelled with the OSD as well) left out, so that
    adding them up counts each IO once. infos: the host's devices (Info) by name; without
    one a device is taken as standing alone."""
    by: dict[int, list[DeviceAgg]] = {}
    for a in devs:
        if a.osd_id is not None:
            by.setdefault(a.osd_id, []).append(a)
    out: dict[int, list[DeviceAgg]] = {}
    for osd, parts in by.items():
        names = {a.name for a in parts}
        below: set[str] = set()
        for a in parts:
            below |= _under(names, a, (infos or {}).get(a.name))
        out[osd] = [a for a in parts if a.name not in below]
    return out


def osd_totals(devs: Iterable[DeviceAgg], infos: Optional[Mapping[str, DeviceInfo]] = None
               ) -> dict[int, DeviceAgg]:
    """Per Ceph OSD, its devices (block, block.db, block.wal; osd_parts) merged: counts add,
    histograms merge exactly. Only OSDs with more than one device get a row of their own."""
    out: dict[int, DeviceAgg] = {}
    for osd, parts in osd_parts(devs, infos).items():
        if len(parts) < 2:
            continue
        t = DeviceAgg(f"osd.{osd}", osd, "all")
        for a in parts:
            t.merge(a)
        out[osd] = t
    return out


OSD_DATA = "osd.*"          # the row merging the OSDs' data (block) devices


def osd_data(devs: Iterable[DeviceAgg], infos: Optional[Mapping[str, DeviceInfo]] = None
             ) -> tuple[Optional[DeviceAgg], int]:
    """Every Ceph OSD's data device (role block; osd_parts) of one host merged, and how many
    there were: (None, 0) without any."""
    t, n = None, 0
    for _, parts in sorted(osd_parts(devs, infos).items()):
        for a in parts:
            if a.osd_role == "block":
                if t is None:
                    t = DeviceAgg(OSD_DATA, None, "block")
                t.merge(a)
                n += 1
    return t, n


def aggregate(run: RunLike, phases: list[Phase], every_device: bool = False
              ) -> dict[tuple[int, int], PhaseAgg]:
    """(phase position, host index) -> PhaseAgg, in one pass over the run's Updates. A phase
    that names its devices (a fio job's, Phase.devices) has only those, on the hosts that
    have them (none on the others), unless every_device or no host of the run has them (fio
    on a client writing to an RBD image, say: then every device, as for any other phase)."""
    out: dict[tuple[int, int], PhaseAgg] = {}
    for host, u in run.iter_updates():
        for n, p in enumerate(phases):
            if p.contains(host, u):
                a = out.get((n, host))
                if a is None:
                    a = out[(n, host)] = PhaseAgg(only=frozenset() if every_device
                                                  else p.devices)
                a.add(u)
    found = {n for (n, _), a in out.items() if a.devices}
    for (n, _), a in out.items():
        if a.only and not a.devices and n not in found:
            a.devices, a.others = a.others, {}
    return out


def find_phase(run: RunLike, phase: Union[str, Phase]) -> Phase:
    """The run's phase given as itself or by a name only one phase has."""
    phases = run.phases()
    if isinstance(phase, Phase):
        for p in phases:
            if p is phase or (p.key == phase.key and p.start_real_ns == phase.start_real_ns):
                return p
        raise ValueError(f"phase {phase.name!r} is not a phase of {run.path}")
    found = [p for p in phases if p.name == phase]
    if len(found) == 1:
        return found[0]
    if not found:
        names = sorted({p.name for p in phases})
        raise ValueError(f"no phase named {phase!r} in {run.path}; phases: "
                         f"{', '.join(names) or 'none'}")
    raise ValueError(f"{len(found)} phases are named {phase!r} in {run.path}: pass one of "
                     "run.phases() (their labels tell them apart)")


def phase_histogram(run: RunLike, phase: Union[str, Phase], host: Optional[str], device: str,
                    op: str = ALL, metric: str = "total_ns") -> Histogram:
    """The merged histogram of one metric over a phase: every bucket of every Update in it
    added up, on one host (its name, as in the report) or every host (None). op is read,
    write, discard, flush or 'all' (the data ops); metric one of OP_HISTOGRAMS, or of
    DEVICE_HISTOGRAMS with op 'all'. Empty (count 0) when the device had none."""
    if op not in ROW_OPS:
        raise ValueError(f"unknown op {op!r}; one of {', '.join(ROW_OPS)}")
    DeviceAgg("").histogram(op, metric)        # the same checks of op and metric
    p = find_phase(run, phase)
    names = {h.index: h.name for h in run.hosts}
    if host is not None and host not in names.values():
        raise ValueError(f"no host {host!r} in {run.path}; hosts: "
                         f"{', '.join(names.values()) or 'none'}")
    out: Optional[Histogram] = None
    seen: set[str] = set()
    for (_, h), pa in aggregate(run, [p], every_device=True).items():
        if host is not None and names[h] != host:
            continue
        seen.update(pa.devices)
        a = pa.devices.get(device)
        got = a.histogram(op, metric) if a is not None else None
        if got is not None:
            out = got if out is None else out.merge(got)
    if device not in seen:
        raise ValueError(f"no device {device!r} in phase {p.name!r}"
                         f"{'' if host is None else f' on {host}'}; devices: "
                         f"{', '.join(sorted(seen)) or 'none'}")
    if out is None:
        k = next((h.info.histogram.precision for h in run.hosts
                  if h.info is not None and h.info.histogram.precision), DEFAULT_PRECISION)
        out = Histogram(k)
    return out
