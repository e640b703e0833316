"""A recording built from a workload given IO by IO, and that workload's own figures (the
ground truth the tests hold the client's numbers to): intervals of different lengths, reads
and writes of known latencies and sizes, flushes, two phases with fio-like labels, a device
under test (sdb, a member of dm-0) beside another disk (vda) and a loop device."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Optional

from iopulse._pb import iopulse_pb2 as pb
from iopulse.histogram import Histogram
from iopulse.record import RunWriter

K = 5
T0_REAL = 1_763_800_000_000_000_000
T0_MONO = 500_000_000_000
DEVICES = ("sdb", "vda", "loop0")


@dataclass
class OpLoad:
    """IOs of one op on one device in one interval: (queue wait, service) ns each."""
    lat: list[tuple[int, int]] = field(default_factory=list)
    size: int = 4096

    @property
    def ios(self) -> int:
        return len(self.lat)


@dataclass
class Interval:
    seconds: float
    ops: dict[tuple[str, str], OpLoad]          # (device, op) -> IOs
    flushes: dict[str, int] = field(default_factory=dict)
    seq: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # seq, fwd, back
    marks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Truth:
    """What was put in, per phase x device x op ('all': read, write and discard)."""
    ios: int = 0
    bytes: int = 0
    seconds: float = 0.0
    qwait: list[int] = field(default_factory=list)
    svc: list[int] = field(default_factory=list)
    interval_rates: list[float] = field(default_factory=list)
    interval_p99: list[int] = field(default_factory=list)

    @property
    def total(self) -> list[int]:
        return [q + s for q, s in zip(self.qwait, self.svc)]

    def iops(self) -> float:
        return self.ios / self.seconds


def exact_percentile(values: list[int], q: float) -> int:
    s = sorted(values)
    return s[max(1, math.ceil(q / 100 * len(s))) - 1]


def _hist(values: list[int]) -> Any:
    return Histogram.from_values(K, values).to_pb()


def _lat(rnd: random.Random, n: int, q_mu: float, s_mu: float) -> list[tuple[int, int]]:
    return [(int(rnd.expovariate(1 / q_mu)) + 1000, int(rnd.lognormvariate(math.log(s_mu), 0.6)))
            for _ in range(n)]


PHASES = {"randrw": {"rw": "randrw", "bs": "4k", "iodepth": "16"},
          "seqread": {"rw": "read", "bs": "128k", "iodepth": "1"}}


def workload(seed: int = 7) -> list[tuple[Optional[str], Interval]]:
    """(phase or None, interval) in time order. Interval lengths and loads differ, so that an
    average of per-interval rates or p99s is far from the phase's own figure."""
    rnd = random.Random(seed)
    out: list[tuple[Optional[str], Interval]] = []
    warm = Interval(1.0, {("sdb", "read"): OpLoad(_lat(rnd, 50, 5000, 80_000))})
    warm.marks.append({"name": "randrw", "id": 1})
    out.append((None, warm))
    for n, (secs, r, w, fl, sq) in enumerate([(0.5, 1000, 300, 5, 10_000),
                                              (1.0, 1200, 900, 0, 30_000),
                                              (2.5, 2000, 100, 7, 2_000)]):
        iv = Interval(secs, {
            ("sdb", "read"): OpLoad(_lat(rnd, r, sq, 90_000 * (n + 1))),
            ("sdb", "write"): OpLoad(_lat(rnd, w, 2 * sq, 40_000 * (3 - n))),
            ("vda", "write"): OpLoad(_lat(rnd, w // 3, 3000, 200_000), 65536),
            ("loop0", "read"): OpLoad(_lat(rnd, r // 2, 1000, 50_000))},
            flushes={"sdb": fl, "vda": fl}, seq={"sdb": (r // 10, r + w - r // 10 - 5, 5)})
        out.append(("randrw", iv))
    out[-1][1].marks += [{"name": "randrw", "id": 2, "end": True, "begin_id": 1},
                         {"name": "seqread", "id": 3}]
    for secs, r in ((1.0, 500), (1.0, 700)):
        iv = Interval(secs, {("sdb", "read"): OpLoad(_lat(rnd, r, 2000, 400_000), 131072)},
                      seq={"sdb": (r - 1, 1, 0)})
        out.append(("seqread", iv))
    out[-1][1].marks.append({"name": "seqread", "id": 4, "end": True, "begin_id": 3})
    tail = Interval(1.0, {("sdb", "write"): OpLoad(_lat(rnd, 30, 5000, 50_000))})
    out.append((None, tail))
    return out


def truth(wl: list[tuple[Optional[str], Interval]]) -> dict[tuple[str, str, str], Truth]:
    """(phase, device, op) -> what was put in; op 'all' adds the data ops, 'flush' counts
    flush requests."""
    out: dict[tuple[str, str, str], Truth] = {}
    for phase, iv in wl:
        if phase is None:
            continue
        for dev in DEVICES:
            for op in ("read", "write", "discard", "all", "flush"):
                t = out.setdefault((phase, dev, op), Truth())
                t.seconds += iv.seconds
                if op == "flush":
                    n = iv.flushes.get(dev, 0)
                    t.ios += n
                    t.interval_rates.append(n / iv.seconds)
                    continue
                loads = [v for (d, o), v in iv.ops.items()
                         if d == dev and (o == op or op == "all")]
                n = sum(x.ios for x in loads)
                t.ios += n
                t.bytes += sum(x.ios * x.size for x in loads)
                lat = [p for x in loads for p in x.lat]
                t.qwait += [q for q, _ in lat]
                t.svc += [s for _, s in lat]
                t.interval_rates.append(n / iv.seconds)
                if lat:
                    t.interval_p99.append(exact_percentile([q + s for q, s in lat], 99))
    return out


def write_run(path: str, wl: list[tuple[Optional[str], Interval]],
              hostname: str = "node1") -> str:
    """The workload as iopulsed would have sent it, recorded in a run file."""
    info = pb.Info(version="t", hostname=hostname)
    info.histogram.precision = K
    info.devices.add(name="sdb", major=8, minor=16, holders=["dm-0"], present=True, osd_id=-1)
    info.devices.add(name="dm-0", major=253, minor=0, dm_name="vg-lv", slaves=["sdb"],
                     disks=["sdb"], present=True, osd_id=-1)
    info.devices.add(name="vda", major=254, minor=0, present=True, osd_id=-1)
    info.devices.add(name="loop0", major=7, minor=0, present=True, osd_id=-1)
    real, mono = T0_REAL, T0_MONO
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "command": ["fio", "jobs.fio"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, info.SerializeToString())
        for seq, (_, iv) in enumerate(wl, 1):
            ns = int(iv.seconds * 1e9)
            u = pb.Update(seq=seq, first_seq=seq, merged=1, precision=K,
                          start_realtime_ns=real, end_realtime_ns=real + ns,
                          start_monotonic_ns=mono, end_monotonic_ns=mono + ns)
            real, mono = real + ns, mono + ns
            for dev in DEVICES:
                d = u.devices.add(name=dev, major=8, minor=DEVICES.index(dev), osd_id=-1)
                for (name, op), load in iv.ops.items():
                    if name != dev:
                        continue
                    s = getattr(d, op)
                    s.ios, s.bytes = load.ios, load.ios * load.size
                    s.queue_wait_ns.CopyFrom(_hist([q for q, _ in load.lat]))
                    s.service_ns.CopyFrom(_hist([v for _, v in load.lat]))
                    s.total_ns.CopyFrom(_hist([q + v for q, v in load.lat]))
                    s.size_bytes.CopyFrom(_hist([load.size] * load.ios))
                fl = iv.flushes.get(dev, 0)
                if fl:
                    d.flush.ios = fl
                    d.flush.service_ns.CopyFrom(_hist([300_000] * fl))
                    d.preflush = fl
                    d.preflush_latency_ns.CopyFrom(_hist([700_000] * fl))
                sq = iv.seq.get(dev)
                if sq:
                    d.seek_sequential, d.seek_forward, d.seek_backward = sq
                    d.seek_distance_sectors.CopyFrom(_hist([0] * sq[0] + [2048] * (sq[1] + sq[2])))
            if iv.ops.get(("sdb", "write")):
                t = u.threads.add(pid=100, tid=101, comm="fio", process="fio", osd_id=-1,
                                  dev_major=8, dev_minor=16, device="sdb", fdatasync=4,
                                  flush_bios=4, latency_sum_ns=4 * 250_000)
                t.latency_ns.CopyFrom(_hist([250_000] * 4))
                t.fdatasync_latency.sum_ns = 4 * 250_000
                t.fdatasync_latency.histogram_ns.CopyFrom(_hist([250_000] * 4))
            for m in iv.marks:
                u.phases.add(name=m["name"], id=m["id"], end=m.get("end", False),
                             begin_id=m.get("begin_id", 0),
                             labels={} if m.get("end") else PHASES[m["name"]],
                             realtime_ns=u.end_realtime_ns, monotonic_ns=u.end_monotonic_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})
    return path
