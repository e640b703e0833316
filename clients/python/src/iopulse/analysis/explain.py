"""Why a Ceph OSD (or a device) was slow in a window of time: which of its devices had slow IOs,
whether their time went to the queue, the device or flushes, the OSD's kv_sync thread's
fdatasync latency over the same window, and which of the OSD's slow ops a slow device IO
overlapped. Figures only: the command line (cli/explain.py) turns them into the verdict.

Everything comes from one host's Updates in the window, added up as the report adds a phase
(aggregate.PhaseAgg): percentiles from merged buckets, counts exact. "Slow" is a total
latency (bio queued -> completed) over a threshold, counted from the merged buckets
(Histogram.count_above: off by at most the count of the one bucket that holds the threshold).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..ceph import SlowOp
from ..histogram import Histogram
from ..model import ALL, DeviceInfo
from .aggregate import DeviceAgg, PhaseAgg, ThreadAgg
from .metrics import device_figures, op_figures

KV_SYNC = "bstore_kv_sync"      # BlueStore's thread that commits RocksDB: its fdatasync calls


def _pct(h: Optional[Histogram], q: float) -> Optional[int]:
    return h.percentile(q) if h is not None and h.count else None


def _max(h: Optional[Histogram]) -> Optional[int]:
    return h.max if h is not None and h.count else None


def _above(h: Optional[Histogram], ns: int) -> int:
    return h.count_above(ns) if h is not None and h.count else 0


@dataclass
class DeviceFinding:
    """One device over the window (its data IOs: reads, writes and discards together)."""
    name: str
    role: Optional[str]             # block, block.db, block.wal (None: not labelled)
    over: list[str]                 # the selected devices stacked on it (dm-0 over sdb)
    ios: int
    slow_ios: int                   # total latency over the threshold
    untimed: int                    # IOs counted without a total latency: no dispatch record
                                    # or no submission time (the daemon's untimed and
                                    # no_queue_ts; an empty PREFLUSH write is timed as a
                                    # preflush, not here)
    total_p50_ns: Optional[int]
    total_p99_ns: Optional[int]
    total_max_ns: Optional[int]
    service_p99_ns: Optional[int]   # in the device: dispatched -> completed
    service_max_ns: Optional[int]
    queue_p99_ns: Optional[int]     # in the block layer: queued -> dispatched
    queue_max_ns: Optional[int]
    device_share_pct: Optional[float]   # of the IOs' summed time, the part in the device
    flushes: int                    # flush requests
    flush_p99_ns: Optional[int]     # their service time
    preflush_writes: int            # writes that asked for a flush before them
    preflush_p99_ns: Optional[int]  # their latency as the submitter saw it

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SyncFinding:
    """An OSD's kv_sync thread(s) over the window."""
    threads: int
    calls: int
    fdatasync: int
    p50_ns: Optional[int]
    p99_ns: Optional[int]
    max_ns: Optional[int]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class OpFinding:
    """One slow op of the OSD and the device IO of the intervals it overlapped."""
    op: SlowOp
    intervals: int                  # Updates overlapping the op (0: none of the data)
    ios: int                        # IOs of the selected devices completed in them
    slow_ios: int
    slowest_device: Optional[str]
    slowest_total_ns: Optional[int]
    slowest_service_ns: Optional[int]

    @property
    def device_slow(self) -> bool:
        return self.slow_ios > 0

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "op"}
        d["op"] = self.op.to_dict()
        d["device_slow"] = self.device_slow
        return d


@dataclass
class Explanation:
    osd: Optional[int]
    devices: list[DeviceFinding]    # slowest first (most slow IOs, then total p99, then the
                                    # disk under a stack before the stack)
    start_real_ns: int
    end_real_ns: int
    seconds: float
    updates: int
    slow_ns: int
    kv_sync: Optional[SyncFinding] = None
    ops: list[OpFinding] = field(default_factory=list)

    @property
    def culprit(self) -> Optional[DeviceFinding]:
        """The device with the most slow IOs (then the highest total p99), if any had IO."""
        return self.devices[0] if self.devices and self.devices[0].ios else None

    def to_dict(self) -> dict[str, Any]:
        return {"osd": self.osd, "start_real_ns": self.start_real_ns,
                "end_real_ns": self.end_real_ns, "seconds": self.seconds,
                "updates": self.updates, "slow_ns": self.slow_ns,
                "culprit": self.culprit.name if self.culprit else None,
                "devices": [d.to_dict() for d in self.devices],
                "kv_sync": self.kv_sync.to_dict() if self.kv_sync else None,
                "ops": [o.to_dict() for o in self.ops]}


def osd_devices(infos: Mapping[str, DeviceInfo], seen: Iterable[DeviceAgg], osd: int) -> list[str]:
    """The devices labelled with the OSD, by the host's Info or by the Updates: its block,
    block.db and block.wal devices, their LVs and the disks under them."""
    names = {n for n, i in infos.items() if i.osd_id == osd}
    names |= {a.name for a in seen if a.osd_id == osd}
    return sorted(names)


def _device(a: DeviceAgg, info: Optional[DeviceInfo], chosen: Sequence[str],
            slow_ns: int) -> DeviceFinding:
    data = a.op(ALL)
    f, dev = op_figures(data, 0.0), device_figures(a, 0.0)
    svc, queue = data.hists.get("service_ns"), data.hists.get("queue_wait_ns")
    s_sum, q_sum = (svc.sum if svc is not None else 0), (queue.sum if queue is not None else 0)
    share = 100.0 * s_sum / (s_sum + q_sum) if s_sum + q_sum else None
    over = sorted(h for h in (info.holders if info else []) if h in chosen)
    return DeviceFinding(
        a.name, a.osd_role or (info.osd_role if info else None), over, data.ios,
        _above(data.hists.get("total_ns"), slow_ns), data.untimed + data.no_queue_ts,
        f["total_p50_ns"], f["total_p99_ns"], f["total_max_ns"], f["svc_p99_ns"],
        f["svc_max_ns"], f["qwait_p99_ns"], f["qwait_max_ns"], share, dev["flushes"],
        op_figures(a.ops["flush"], 0.0)["svc_p99_ns"], dev["preflushes"],
        dev["preflush_p99_ns"])


def _sum(updates: Iterable[Any]) -> PhaseAgg:
    agg = PhaseAgg()
    for u in updates:
        agg.add(u)
    return agg


def _kv_sync(agg: PhaseAgg, osd: int) -> Optional[SyncFinding]:
    ts = [t for t in agg.threads.values() if t.osd_id == osd and t.comm == KV_SYNC]
    if not ts:
        return None
    m = ThreadAgg(KV_SYNC, "", 0, 0, osd, "")
    for t in ts:
        m.merge(t)
    h = m.by_call.get("fdatasync") or m.hists.get("latency_ns")
    return SyncFinding(len(ts), m.calls, m.fdatasync, _pct(h, 50), _pct(h, 99), _max(h))


def _op(op: SlowOp, updates: Sequence[Any], chosen: Sequence[str], slow_ns: int) -> OpFinding:
    inside = [u for u in updates
              if u.start_realtime_ns < op.end_ns and u.end_realtime_ns > op.initiated_ns]
    agg = _sum(inside)
    ios = slow = 0
    best: Optional[tuple[int, str, Optional[int]]] = None
    for name in chosen:
        a = agg.devices.get(name)
        if a is None:
            continue
        data = a.op(ALL)
        total = data.hists.get("total_ns")
        ios += data.ios
        slow += _above(total, slow_ns)
        mx = _max(total)
        if mx is not None and (best is None or mx > best[0]):
            best = (mx, name, _max(data.hists.get("service_ns")))
    return OpFinding(op, len(inside), ios, slow, best[1] if best else None,
                     best[0] if best else None, best[2] if best else None)


def explain(updates: Sequence[Any], infos: Mapping[str, DeviceInfo], *,
            osd: Optional[int] = None, devices: Sequence[str] = (), slow_ns: int = 100_000_000,
            slow_ops: Sequence[SlowOp] = ()) -> Explanation:
    """What the Updates (iopulse.v1.Update messages of one host, the window's) say of an OSD's
    devices (osd) or of named devices; infos: the host's devices (Info) by name. slow_ops:
    the OSD's slow ops, each matched to the Updates it overlapped. A device named that the
    window and the Info do not know raises ValueError, as does an OSD none of whose devices
    they know."""
    if (osd is None) == (not devices):
        raise ValueError("give an OSD or devices: one of the two")
    updates = sorted(updates, key=lambda u: u.start_monotonic_ns)
    agg = _sum(updates)
    seen = list(agg.devices.values())
    if osd is not None:
        chosen = osd_devices(infos, seen, osd)
        if not chosen:
            known = sorted({i.osd_id for i in infos.values() if i.osd_id is not None} |
                           {a.osd_id for a in seen if a.osd_id is not None})
            raise ValueError(f"no device of osd.{osd} on this host; OSDs here: "
                             f"{', '.join(f'osd.{n}' for n in known) or 'none'}")
    else:
        chosen = list(dict.fromkeys(devices))
        unknown = [n for n in chosen if n not in agg.devices and n not in infos]
        if unknown:
            raise ValueError(f"no device {', '.join(unknown)} on this host; devices: "
                             f"{', '.join(sorted(set(infos) | set(agg.devices))) or 'none'}")
    found = []
    for name in chosen:
        a = agg.devices.get(name) or DeviceAgg(name)
        found.append(_device(a, infos.get(name), chosen, slow_ns))
    # ties (an LV and the disk under it see the same IOs) name the disk
    found.sort(key=lambda d: (-d.slow_ios, -(d.total_p99_ns or -1), not d.over, d.name))
    ex = Explanation(osd, found, updates[0].start_realtime_ns if updates else 0,
                     updates[-1].end_realtime_ns if updates else 0, agg.seconds, agg.updates,
                     slow_ns)
    if osd is not None:
        ex.kv_sync = _kv_sync(agg, osd)
    ex.ops = [_op(op, updates, chosen, slow_ns) for op in slow_ops]
    return ex
