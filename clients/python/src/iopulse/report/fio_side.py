"""fio's own figures beside the block layer's, for a run whose command was fio (record keeps
fio's JSON report: Run.fio_output), with what makes them differ named.

They measure different things, and the differences have known causes:
- IO counts: the block layer counts requests. A write with fsync/fdatasync also sends an empty
  write carrying REQ_PREFLUSH to a device that has a volatile cache (or a loop device),
  which /proc/diskstats and iopulse count as a write; fio counts its own IOs. Requests merged
  in the block layer count once, IOs split to the device's max_sectors_kb several times.
- Latency: fio's completion latency (clat) ends when fio reaps the IO; the device's total
  latency when the block layer completes it. The difference is client-side time: the
  completion interrupt, the completion path, the wake-up of fio's thread and its reaping.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from ..analysis.metrics import Row
from ..phases.model import Phase
from ..record.reader import Run

FIO_OPS = (("read", "read"), ("write", "write"), ("trim", "discard"))
QS = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))
SPLIT_MIN = 1.5         # requests per fio IO from which fio's IOs count as split


@dataclass
class FioSide:
    """One fio job's op in its phase, beside the device it ran on."""
    phase: Phase
    job: str
    op: str                         # read, write, discard
    host: str
    device: str
    device_from: str                # 'filename' (fio's filename=) or 'busiest' (most IOs)
    fio_ios: int
    fio_iops: Optional[float]       # fio's: its IOs over its runtime
    fio_clat_ns: dict[str, Optional[float]]     # p50, p99, p999
    fio_sync_calls: int             # fsync/fdatasync calls of the job
    block_ios: int
    block_iops: Optional[float]     # the phase's requests over its seconds
    block_total_ns: dict[str, Optional[float]]
    preflushes: int                 # the device's requests carrying a preflush in the phase
    seconds: float = 0.0            # the phase's, on the device's host
    fio_runtime_s: Optional[float] = None       # fio's runtime of the job (the longest)
    notes: list[str] = field(default_factory=list)
    fio_bytes: int = 0              # fio's io_bytes of the op
    block_bytes: int = 0            # the device's bytes of the op in the phase

    @property
    def data_requests(self) -> int:
        """The device's requests that carried data: for writes, without the empty writes
        carrying a preflush that fio's fsync/fdatasync calls added (as many as the requests
        beyond fio's IOs, at most one per request with a preflush)."""
        if self.op != "write":
            return self.block_ios
        return self.block_ios - min(self.preflushes, max(0, self.block_ios - self.fio_ios))

    @property
    def pieces(self) -> Optional[float]:
        """Requests per fio IO where the device took fio's IOs split (fio's IO size over the
        device's data request size, at least SPLIT_MIN, and the count of data requests
        agreeing within a tenth); None where they went whole (or the sizes are unknown)."""
        data = self.data_requests
        if not (self.fio_ios and data and self.fio_bytes and self.block_bytes):
            return None
        n = (self.fio_bytes / self.fio_ios) / (self.block_bytes / data)
        if n < SPLIT_MIN or abs(data / self.fio_ios / n - 1) > 0.1:
            return None
        return n

    @property
    def client_ns(self) -> dict[str, Optional[float]]:
        """fio's clat minus the device's total latency at each percentile (client side); None
        where fio's IOs were split: a request's latency is then a piece's, not the IO's."""
        split = self.pieces is not None
        return {k: (None if split or self.fio_clat_ns[k] is None or
                    self.block_total_ns[k] is None
                    else self.fio_clat_ns[k] - self.block_total_ns[k])  # type: ignore[operator]
                for k, _ in QS}

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("job", "op", "host", "device", "device_from",
                                           "fio_ios", "fio_iops", "fio_sync_calls",
                                           "block_ios", "block_iops", "preflushes",
                                           "seconds", "fio_runtime_s", "fio_bytes",
                                           "block_bytes", "pieces", "notes")}
        d["phase"] = self.phase.name
        for k, _ in QS:
            d[f"fio_clat_{k}_ns"] = self.fio_clat_ns[k]
            d[f"block_total_{k}_ns"] = self.block_total_ns[k]
            d[f"client_{k}_ns"] = self.client_ns[k]
        return d


def _pct(d: dict[str, Any], q: float) -> Optional[float]:
    for k, v in d.items():
        try:
            if abs(float(k) - q) < 1e-6:
                return float(v)
        except (TypeError, ValueError):
            continue
    return None


def _clat(entries: list[dict[str, Any]]) -> dict[str, Optional[float]]:
    """Percentiles of one job's clat (as fio reported them), or of several jobs of one name
    from their merged json+ bins (None where a job has no bins)."""
    lats = [e.get("clat_ns") or {} for e in entries]
    if len(lats) == 1:
        pct = lats[0].get("percentile") or {}
        return {k: _pct(pct, q) for k, q in QS}
    bins: dict[int, int] = {}
    for lat in lats:
        b = lat.get("bins")
        if not isinstance(b, dict):
            return {k: None for k, _ in QS}
        for v, n in b.items():
            bins[int(v)] = bins.get(int(v), 0) + int(n)
    total = sum(bins.values())
    out: dict[str, Optional[float]] = {}
    for k, q in QS:
        want, seen, got = max(1, math.ceil(q / 100 * total)), 0, None
        for v in sorted(bins):
            seen += bins[v]
            if seen >= want:
                got = float(v)
                break
        out[k] = got if total else None
    return out


def _filename(job: dict[str, Any], doc: dict[str, Any]) -> str:
    opts = job.get("job options") or {}
    name = opts.get("filename") or (doc.get("global options") or {}).get("filename") or ""
    return str(name).split(":")[0]


def _device_of(path: str, host_dm: dict[str, str]) -> Optional[str]:
    """The kernel name of the block device fio's filename= names: /dev/loop3 is loop3,
    /dev/mapper/vg-lv the dm device of that name; None for a file."""
    if not path.startswith("/dev/"):
        return None
    rest = path[len("/dev/"):]
    if rest.startswith("mapper/"):
        return host_dm.get(rest[len("mapper/"):])
    return rest if "/" not in rest else None


def _match(phases: list[Phase], name: str, group: int, used: set[int]) -> Optional[Phase]:
    """The phase record made of a fio job: its name, and its stonewall group (label group,
    from 1) where the phase has one; the first not yet taken."""
    for p in phases:
        if id(p) in used or p.name != name:
            continue
        g = p.labels.get("group")
        if g is None or g == str(group + 1):
            return p
    return None


def _notes(s: FioSide) -> list[str]:
    out = []
    extra = s.block_ios - s.fio_ios
    empty = s.block_ios - s.data_requests
    if empty:
        calls = f" of fio's {s.fio_sync_calls} fsync/fdatasync calls" if s.fio_sync_calls \
            else ""
        out.append(f"{empty} more writes than fio's: empty writes carrying a preflush"
                   f"{calls} ({s.preflushes} requests with a preflush on {s.device}), counted "
                   "as writes as in /proc/diskstats")
    if s.pieces is not None:
        out.append(f"{extra - empty} more requests than fio's IOs: each of fio's "
                   f"{_size(s.fio_bytes / s.fio_ios)} IOs went to {s.device} as about "
                   f"{s.pieces:.0f} requests of {_size(s.block_bytes / s.data_requests)} "
                   "(split to its max_sectors_kb or max_segments)")
    elif extra - empty > 0:
        out.append(f"{extra - empty} more requests than fio's IOs: IOs split "
                   f"(max_sectors_kb), or other IO on {s.device}")
    elif extra < 0:
        out.append(f"{-extra} fewer requests than fio's IOs: IOs merged in the block layer"
                   " (or fio's IOs went to a cache)")
    if s.fio_iops and s.block_iops and s.fio_runtime_s and \
            abs(s.block_iops / s.fio_iops - 1) > 0.005 and abs(extra) <= 0.005 * s.fio_ios:
        out.append(f"the same IOs over different times: IOPS over the phase's {s.seconds:.3f} s "
                   f"(interval edges) and fio's runtime of {s.fio_runtime_s:.3f} s")
    c = s.client_ns
    if s.pieces is not None:
        out.append(f"fio's clat is a whole IO's, the device's total latency one of its about "
                   f"{s.pieces:.0f} requests': not compared (an IO ends with its last piece)")
    elif c["p50"] is not None and c["p99"] is not None and min(c["p50"], c["p99"]) >= 0:
        out.append(f"fio's clat is {c['p50'] / 1e3:.1f} µs (p50) and {c['p99'] / 1e3:.1f} µs "
                   "(p99) above the device's total latency: client-side time, from the device "
                   "completing an IO to fio reaping it")
    elif c["p50"] is not None and c["p99"] is not None:
        out.append("fio's clat lies below the device's total latency at "
                   + " and ".join(f"{k} ({-c[k] / 1e3:.1f} µs)" for k in ("p50", "p99")
                                  if c[k] < 0)
                   + f": the requests on {s.device} are not only fio's IOs (other IO on it, "
                   "or IOs split or merged), so no client-side time is shown")
    return out


def _size(n: float) -> str:
    """A request or IO size: 4 KiB, 512 KiB, 4 MiB (KiB below 1 MiB, one decimal where not
    whole)."""
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def fio_sides(run: Run, rows: list[Row], doc: Optional[dict[str, Any]] = None
              ) -> list[FioSide]:
    """For each fio job and op with IOs: fio's figures and the block layer's of the device it
    ran on in its phase. Empty when the run kept no fio report."""
    doc = run.fio_output if doc is None else doc
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        return []
    phases: list[Phase] = []
    for r in rows:
        if all(r.phase is not p for p in phases):
            phases.append(r.phase)
    dm = {d.dm_name: d.name for h in run.hosts if h.info is not None
          for d in h.info.devices if d.dm_name}
    by_job: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for j in doc["jobs"]:
        if isinstance(j, dict):
            by_job.setdefault((str(j.get("jobname", "")), int(j.get("groupid", 0))), []).append(j)
    used: set[int] = set()
    out = []
    for (name, group), jobs in by_job.items():
        p = _match(phases, name, group, used)
        if p is None:
            continue
        used.add(id(p))
        mine = [r for r in rows if r.phase is p and r.device_class != "osd"]
        dev = _device_of(_filename(jobs[0], doc), dm)
        sync = sum(int(((j.get("sync") or {}).get("lat_ns") or {}).get("N", 0) or
                       (j.get("sync") or {}).get("total_ios", 0) or 0) for j in jobs)
        for fop, op in FIO_OPS:
            entries = [j.get(fop) or {} for j in jobs]
            ios = sum(int(e.get("total_ios", 0) or 0) for e in entries)
            if not ios:
                continue
            cands = [r for r in mine if dev is not None and r.device == dev]
            how = "filename"
            if not cands:
                cands, how = mine, "busiest"
            if not cands:
                continue
            r = max(cands, key=lambda x: x.ops[op]["ios"] or 0)
            iops = [e.get("iops") for e in entries]
            s = FioSide(p, name, op, r.host, r.device, how, ios,
                        sum(float(x) for x in iops) if all(x is not None for x in iops)
                        else None, _clat(entries), sync, int(r.ops[op]["ios"] or 0),
                        r.ops[op]["ios_per_s"],
                        {k: r.ops[op][f"total_{k}_ns"] for k, _ in QS},
                        int(r.device_only.get("preflushes") or 0), r.seconds,
                        max((float(e["runtime"]) / 1e3 for e in entries
                             if isinstance(e.get("runtime"), (int, float))), default=None))
            s.fio_bytes = sum(int(e.get("io_bytes", 0) or 0) for e in entries)
            s.block_bytes = int(r.ops[op]["bytes"] or 0)
            s.notes = _notes(s)
            out.append(s)
    return out
