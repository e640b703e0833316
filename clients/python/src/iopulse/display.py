"""The columns of the report, top and the HTML page, and the text of a figure in them.

Every figure comes from iopulse.analysis.metrics (a run's, or a live Update's turned into the
same sums); nothing here computes one, it picks the unit and the digits. Every column header
carries its unit: latencies in µs (so that a column compares down its lines: 35.3 beside
60293, not 0.04 ms), sizes in KiB; MB/s is 10^6 bytes per second and MiB/s 2^20 (fio's
headline unit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from .analysis.metrics import Number
from .model import ALL, DATA_OPS
from .textfit import Col

# kinds of figure: how a value is written, and the unit in its header
RATE = "rate"           # per second
NS = "ns"               # a latency, shown in µs or ms
KIB = "kib"             # bytes, shown in KiB
PCT = "pct"
COUNT = "count"         # an integer
SECTORS = "sectors"     # an integer number of 512-byte sectors
TEXT = "text"


@dataclass(frozen=True)
class Spec:
    """A column: the figure's key, its header ('{unit}' stands for a latency's unit), its kind
    and the group it folds with."""
    key: str
    header: str
    kind: str
    group: str = ""


# a device's op (read, write, discard, or all of them): throughput, size and latency
OP_SPECS = [
    Spec("ios_per_s", "IOPS", RATE, "rate"), Spec("mb_per_s", "MB/s", RATE, "rate"),
    Spec("mib_per_s", "MiB/s", RATE, "rate"), Spec("size_p50_bytes", "size p50 (KiB)", KIB),
    Spec("qwait_p50_ns", "qwait p50 ({unit})", NS, "qwait"),
    Spec("qwait_p99_ns", "qwait p99 ({unit})", NS, "qwait"),
    Spec("qwait_p999_ns", "qwait p99.9 ({unit})", NS, "qwait"),
    Spec("svc_p50_ns", "svc p50 ({unit})", NS, "svc"),
    Spec("svc_p99_ns", "svc p99 ({unit})", NS, "svc"),
    Spec("total_p50_ns", "total p50 ({unit})", NS, "total"),
    Spec("total_mean_ns", "total mean ({unit})", NS, "total"),
    Spec("total_p99_ns", "total p99 ({unit})", NS, "total"),
    Spec("total_p999_ns", "total p99.9 ({unit})", NS, "total"),
    Spec("total_max_ns", "total max ({unit})", NS, "total"),
]

# what belongs to the device rather than to one op (flush_svc_p99_ns: flush requests' service
# time, the only latency they have: the kernel gives them no queue time; preflush_p99_ns:
# requests carrying a preflush)
DEVICE_SPECS = [
    Spec("device_class", "class", TEXT), Spec("seq_pct", "seq %", PCT, "seek"),
    Spec("seek_p50_sectors", "seek p50 (sectors)", SECTORS, "seek"),
    Spec("seek_p99_sectors", "seek p99 (sectors)", SECTORS, "seek"),
    Spec("flushes_per_s", "flushes/s", RATE, "flush"),
    Spec("flush_svc_p99_ns", "flush svc p99 ({unit})", NS, "flush"),
    Spec("preflushes", "preflush writes", COUNT, "preflush"),
    Spec("preflush_p99_ns", "preflush p99 ({unit})", NS, "preflush"),
    Spec("fua_writes", "FUA writes", COUNT), Spec("errors", "errors", COUNT),
    Spec("requeues", "requeues", COUNT),
]

# a sync thread in a phase
THREAD_SPECS = [
    Spec("process", "process", TEXT), Spec("osd", "OSD", TEXT), Spec("where", "device", TEXT),
    Spec("calls", "calls", COUNT, "calls"), Spec("calls_per_s", "calls/s", RATE, "calls"),
    Spec("latency_p50_ns", "p50 ({unit})", NS, "lat"),
    Spec("latency_p99_ns", "p99 ({unit})", NS, "lat"),
    Spec("fsync_p99_ns", "fsync p99 ({unit})", NS, "by call"),
    Spec("fdatasync_p99_ns", "fdatasync p99 ({unit})", NS, "by call"),
    Spec("sync_file_range_p99_ns", "sync_file_range p99 ({unit})", NS, "by call"),
]

# fio's figures beside the block layer's (report/fio_side.py)
FIO_SPECS = [
    Spec("fio_ios", "fio IOs", COUNT, "ios"), Spec("block_ios", "device IOs", COUNT, "ios"),
    Spec("fio_iops", "fio IOPS", RATE, "iops"), Spec("block_iops", "device IOPS", RATE, "iops"),
    Spec("fio_p50", "fio clat p50 ({unit})", NS, "p50"),
    Spec("block_p50", "device total p50 ({unit})", NS, "p50"),
    Spec("fio_p99", "fio clat p99 ({unit})", NS, "p99"),
    Spec("block_p99", "device total p99 ({unit})", NS, "p99"),
    Spec("fio_p999", "fio clat p99.9 ({unit})", NS, "p999"),
    Spec("block_p999", "device total p99.9 ({unit})", NS, "p999"),
]

# top: a device's ops, then the device's own figures (on its first line)
TOP_SPECS = [
    Spec("ios_per_s", "IOPS", RATE, "rate"), Spec("mb_per_s", "MB/s", RATE, "rate"),
    Spec("mib_per_s", "MiB/s", RATE, "rate"),
    Spec("qwait_p50_ns", "qwait p50 ({unit})", NS, "qwait"),
    Spec("qwait_p99_ns", "qwait p99 ({unit})", NS, "qwait"),
    Spec("svc_p50_ns", "svc p50 ({unit})", NS, "svc"),
    Spec("svc_p99_ns", "svc p99 ({unit})", NS, "svc"),
    Spec("total_p99_ns", "total p99 ({unit})", NS),
    Spec("seq_pct", "seq %", PCT, "dev"), Spec("flushes_per_s", "flushes/s", RATE, "dev"),
    Spec("preflush_p99_ns", "preflush p99 ({unit})", NS, "dev"),
]
TOP_THREAD_SPECS = [
    Spec("process", "process", TEXT), Spec("osd", "OSD", TEXT), Spec("where", "device", TEXT),
    Spec("calls_per_s", "calls/s", RATE), Spec("latency_p99_ns", "p99 ({unit})", NS),
]


def fmt_ns(v: Optional[float]) -> str:
    """A duration in ns with a unit: 850ns, 12.3us, 456us, 7.8ms, 1.25s; '-' for None."""
    if v is None:
        return "-"
    if v < 1e3:
        return f"{v:.0f}ns"
    if v < 1e6:
        return f"{v / 1e3:.1f}us" if v < 1e4 else f"{v / 1e3:.0f}us"
    if v < 1e9:
        return f"{v / 1e6:.1f}ms" if v < 1e8 else f"{v / 1e6:.0f}ms"
    return f"{v / 1e9:.2f}s"


def number(v: Optional[Number]) -> str:
    """Three significant digits for small values, whole numbers from 100 on: 0.42, 8.45,
    12.3, 456, 48759; '-' for None."""
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    a = abs(v)
    if a >= 100 or v == 0:
        return f"{v:.0f}"
    return f"{v:.1f}" if a >= 10 else f"{v:.2f}"


def cell(kind: str, v: object, div: float = 1.0) -> str:
    if v is None:
        return "-"
    if kind == TEXT:
        return str(v)
    assert isinstance(v, (int, float))
    if kind == NS:
        return number(v / div)
    if kind == KIB:
        return number(v / 1024 if v % 1024 else v // 1024)
    if kind in (COUNT, SECTORS):
        return str(int(v))
    return number(float(v))


Values = Optional[Mapping[str, object]]


def columns(specs: Sequence[Spec], rows: Sequence[Values]) -> tuple[list[Col], list[list[str]]]:
    """The columns of specs and each row's cells; a row that is None has blank cells (a
    figure shown on another line)."""
    cols: list[Col] = []
    cells: list[list[str]] = [[] for _ in rows]
    for s in specs:
        unit, div = ("µs", 1e3) if s.kind == NS else ("", 1.0)
        cols.append(Col(s.header.format(unit=unit), left=s.kind == TEXT, group=s.group))
        for out, r in zip(cells, rows):
            out.append("" if r is None else cell(s.kind, r.get(s.key), div))
    return cols, cells


def shown_ops(ops: Mapping[str, Mapping[str, Optional[Number]]]) -> list[str]:
    """The op lines of a device: each data op it did (read, write, discard), and all of them
    together when it did more than one; 'all' alone when it did none."""
    did = [op for op in DATA_OPS if ops[op].get("ios")]
    return did + [ALL] if len(did) > 1 else (did or [ALL])
