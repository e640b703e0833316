"""A run as tables: per interval x host x device x op, per phase x host x device, per phase x
host x thread. interval_records() and friends need nothing beyond the base install (they
feed `iopulse export --format csv|jsonl`); load() returns pandas DataFrames and needs the
report extra (`pip install iopulse[report]`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .histogram import Histogram
from .record.reader import Run
from .record.reader import load as load_run
from .report.metrics import ALL_OPS, phase_rows

EXTRA_HINT = ("needs the report extra: pip install 'iopulse[report]' (or Debian's "
              "python3-pandas and python3-matplotlib)")


class MissingExtra(ImportError):
    pass


def require(module: str, what: str) -> Any:
    """Import module, or explain which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{what} {EXTRA_HINT}; '{module}' is not installed") from None


def _pct(idx: Any, cnt: Any, k: int, q: float) -> Optional[int]:
    if not len(idx):
        return None
    return Histogram(k, idx, cnt).percentile(q)


def interval_records(run: Run) -> Iterator[dict[str, Any]]:
    """One record per interval x host x device x op with IO (also flushes)."""
    phases = run.phases()
    for host, u in run.iter_updates():
        inside = [p for p in phases if p.contains(host, u)]
        phase = max(inside, key=lambda p: p.depth).name if inside else ""
        secs = (u.end_monotonic_ns - u.start_monotonic_ns) / 1e9
        k = u.precision
        for d in u.devices:
            for op in ALL_OPS:
                s = getattr(d, op)
                if not s.ios:
                    continue
                q, sv, t = s.queue_wait_ns, s.service_ns, s.total_ns
                yield {
                    "host": run.hosts[host].name, "seq": u.seq,
                    "start_ns": u.start_realtime_ns, "end_ns": u.end_realtime_ns,
                    "seconds": secs, "phase": phase, "device": d.name,
                    "osd_id": d.osd_id if d.osd_id >= 0 else None, "op": op,
                    "ios": s.ios, "bytes": s.bytes, "errors": s.errors,
                    "iops": s.ios / secs if secs else None,
                    "mbps": s.bytes / 1e6 / secs if secs else None,
                    "qwait_p50_ns": _pct(q.index, q.count, k, 50),
                    "qwait_p99_ns": _pct(q.index, q.count, k, 99),
                    "svc_p50_ns": _pct(sv.index, sv.count, k, 50),
                    "svc_p99_ns": _pct(sv.index, sv.count, k, 99),
                    "total_p99_ns": _pct(t.index, t.count, k, 99),
                }


def phase_records(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(per phase x host x device, per phase x host x thread) records."""
    rows, trows = phase_rows(run)
    dev = []
    for r in rows:
        d = r.to_dict()
        d["labels"] = r.phase.label_text()
        d["start_ns"], d["end_ns"] = r.phase.start_real_ns, r.phase.end_real_ns
        dev.append(d)
    thr = []
    for t in trows:
        d = t.to_dict()
        d["labels"] = t.phase.label_text()
        thr.append(d)
    return dev, thr


@dataclass
class Frames:
    """A run as pandas DataFrames (see the module docstring)."""
    intervals: Any
    phases: Any
    threads: Any
    run: Run


def load(path: str) -> Frames:
    """The run file at path as DataFrames: intervals (interval x host x device x op),
    phases (phase x host x device: the numbers of iopulse report), threads (phase x host x
    sync thread). Times are pandas Timestamps (UTC) in 'start'/'end'."""
    pd = require("pandas", "iopulse.load()")
    run = load_run(path)
    iv = pd.DataFrame.from_records(list(interval_records(run)))
    dev, thr = phase_records(run)
    ph = pd.DataFrame.from_records(dev)
    th = pd.DataFrame.from_records(thr)
    for df in (iv, ph):
        if len(df):
            df["start"] = pd.to_datetime(df["start_ns"], unit="ns", utc=True)
            df["end"] = pd.to_datetime(df["end_ns"], unit="ns", utc=True)
    return Frames(iv, ph, th, run)
