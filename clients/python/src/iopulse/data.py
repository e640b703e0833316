"""A run as tidy tables: one record per phase x host x device x op, per interval x host x
device x op, per phase x host x sync thread; phase labels and the device's class as columns of
their own. The numbers are analysis/metrics.py's, the same as the report's and compare's.
interval_records() and phase_records() need nothing beyond the base install (they feed
`iopulse export --format csv|jsonl`); load() returns pandas DataFrames and needs the report
extra (`pip install iopulse[report]`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

from .analysis.aggregate import ROW_OPS, DeviceAgg, PhaseAgg, phase_histogram
from .analysis.labels import LabelColumns, device_class
from .analysis.metrics import DEVICE_KEYS, OP_KEYS, THREAD_KEYS, device_figures, is_float_key, \
    op_figures, phase_rows
from .histogram import Histogram
from .model import ALL, DATA_OPS
from .phases.model import Phase
from .record.reader import Run
from .record.reader import load as load_run

EXTRA_HINT = ("needs the report extra: pip install 'iopulse[report]' (or Debian's "
              "python3-pandas and python3-matplotlib)")

# the columns before the figures; the phase's label columns follow "labels"
PHASE_HEAD = ["phase", "phase_index", "parent", "depth"]
DEVICE_HEAD = ["host", "device", "device_class", "osd", "op", "labels", "start_ns", "end_ns",
               "seconds"]
INTERVAL_HEAD = ["host", "seq", "device", "device_class", "osd_id", "op", "labels",
                 "start_ns", "end_ns", "seconds"]
THREAD_HEAD = ["host", "thread", "process", "pid", "tid", "osd_id", "device", "disks",
               "labels", "seconds"]
FIGURE_KEYS = frozenset(OP_KEYS + DEVICE_KEYS + THREAD_KEYS)


class MissingExtra(ImportError):
    pass


# Debian 12 packages no pyarrow, and pyarrow from PyPI needs NumPy 2 from 26 on (Debian 12 has
# 1.24; pyarrow 16-25 import and write Parquet beside Debian's python3-pandas)
DEBIAN_PYARROW = "pyarrow<26"
PYARROW_HINT = ("needs pyarrow: pip install 'iopulse[report]' in a venv, or beside Debian 12's "
                f"python3-pandas and python3-numpy pip install '{DEBIAN_PYARROW}' (pyarrow 26 "
                "and later need NumPy 2)")


def require(module: str, what: str) -> Any:
    """Import module, or explain which extra provides it (for pyarrow, which one imports
    beside Debian's NumPy); one installed that does not import is named with its error."""
    import importlib
    import importlib.util

    hint = PYARROW_HINT if module == "pyarrow" else EXTRA_HINT
    try:
        return importlib.import_module(module)
    except ImportError as e:
        try:
            installed = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            installed = False
        if not installed:
            raise MissingExtra(f"{what} {hint}; '{module}' is not installed") from None
        raise MissingExtra(f"{what} {hint}; '{module}' is installed but does not import: "
                           f"{e}") from None


def _label_columns(phases: list[Phase], head: list[str]) -> LabelColumns:
    taken = PHASE_HEAD + head + ["start", "end"] + OP_KEYS + DEVICE_KEYS + THREAD_KEYS
    return LabelColumns([p.labels for p in phases], taken)


def _phase_cols(p: Optional[Phase], index: Optional[int]) -> dict[str, Any]:
    if p is None:
        return {"phase": "", "phase_index": None, "parent": None, "depth": None}
    return {"phase": p.name, "phase_index": index, "parent": p.parent, "depth": p.depth}


def _label_cols(p: Optional[Phase], lc: LabelColumns) -> dict[str, Any]:
    """The labels as text ('bs=128k iodepth=16') and as columns of their own."""
    if p is None:
        return {"labels": "", **lc.row({})}
    return {"labels": p.label_text(), **lc.row(p.labels)}


def _op_records(a: DeviceAgg, seconds: float, ops: tuple[str, ...]
                ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(op, figures) of each op; the device's own figures on the 'all' record only."""
    dev = device_figures(a, seconds)
    none = dict.fromkeys(DEVICE_KEYS)
    for op in ops:
        yield op, {**op_figures(a.op(op), seconds), **(dev if op == ALL else none)}


def phase_records(run: Run, phases: Optional[list[Phase]] = None, idle: bool = False,
                  every_device: bool = False
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(per phase x host x device x op, per phase x host x thread) records, every record with
    the same keys. Ops: read, write, discard, flush and all (the data ops together: the
    report's row); seeks, flushes, preflushes and the like belong to the device and are on
    its 'all' record (None on the others). A fio job's phase has the records of the job's
    own devices (its 'devices' label), the group around it every device's, unless
    every_device."""
    phases = run.phases() if phases is None else phases
    index = {id(p): n for n, p in enumerate(phases)}
    rows, trows = phase_rows(run, phases, idle=idle, every_device=every_device)
    lc = _label_columns(phases, DEVICE_HEAD + THREAD_HEAD)
    dev: list[dict[str, Any]] = []
    none = dict.fromkeys(DEVICE_KEYS)
    for r in rows:
        head = {**_phase_cols(r.phase, index[id(r.phase)]), "host": r.host,
                "device": r.device, "device_class": r.device_class, "osd": r.osd}
        labels = _label_cols(r.phase, lc)
        for op in ROW_OPS:
            dev.append({**head, "op": op, **labels, "start_ns": r.phase.start_real_ns,
                        "end_ns": r.phase.end_real_ns, "seconds": r.seconds, **r.ops[op],
                        **(r.device_only if op == ALL else none)})
    thr: list[dict[str, Any]] = []
    for t in trows:
        th = t.thread
        thr.append({**_phase_cols(t.phase, index[id(t.phase)]), "host": t.host,
                    "thread": th.comm, "process": th.process, "pid": th.pid, "tid": th.tid,
                    "osd_id": th.osd_id, "device": th.device, "disks": ",".join(th.disks),
                    **_label_cols(t.phase, lc), "seconds": t.seconds, **t.values})
    return dev, thr


def interval_records(run: Run) -> Iterator[dict[str, Any]]:
    """One record per interval x host x device x op with IO (flushes too), and the device's
    'all' record (its data ops together, and its own figures); phase: the innermost phase
    holding the interval. Rates are per second of that interval."""
    phases = run.phases()
    index = {id(p): n for n, p in enumerate(phases)}
    lc = _label_columns(phases, INTERVAL_HEAD)
    infos = {h.index: {d.name: d for d in h.info.devices} if h.info is not None else {}
             for h in run.hosts}
    for host, u in run.iter_updates():
        inside = [p for p in phases if p.contains(host, u)]
        phase = max(inside, key=lambda p: p.depth) if inside else None
        pcols = _phase_cols(phase, index[id(phase)] if phase is not None else None)
        labels = _label_cols(phase, lc)
        one = PhaseAgg()
        one.add(u)
        for d in u.devices:
            a = one.devices[d.name]
            ops = tuple(op for op in ROW_OPS if op != ALL and a.ops[op].ios)
            if not ops:
                continue
            if any(a.ops[op].ios for op in DATA_OPS):
                ops += (ALL,)
            head = {**pcols, "host": run.hosts[host].name, "seq": u.seq, "device": d.name,
                    "device_class": device_class(d.name, infos.get(host, {}).get(d.name)),
                    "osd_id": d.osd_id if d.osd_id >= 0 else None}
            times = {"start_ns": u.start_realtime_ns, "end_ns": u.end_realtime_ns,
                     "seconds": one.seconds}
            for op, figures in _op_records(a, one.seconds, ops):
                yield {**head, "op": op, **labels, **times, **figures}


@dataclass
class Frames:
    """A run as pandas DataFrames (see load())."""
    intervals: Any
    phases: Any
    threads: Any
    run: Run

    def histogram(self, phase: Union[str, Phase], host: Optional[str], device: str,
                  op: str = ALL, metric: str = "total_ns") -> Histogram:
        """The merged histogram of a phase (a name only one phase has, or one of
        run.phases()) on a host (None: every host) of device, op (read, write, discard,
        flush, or all: the data ops) and metric (queue_wait_ns, service_ns, total_ns,
        size_bytes; with op 'all' also seek_distance_sectors, preflush_latency_ns,
        fua_latency_ns). Percentiles of it are those of the report: h.percentile(99.9)."""
        return phase_histogram(self.run, phase, host, device, op, metric)


def dataframe(records: list[dict[str, Any]]) -> Any:
    """Records of this module as a pandas DataFrame whose columns keep their types: rates and
    means float64 even when all None; counts, percentiles and integer labels int64, or
    pandas' Int64 where some are missing (a label some phases lack, a device figure on the
    'all' rows only). Needs pandas."""
    pd = require("pandas", "a DataFrame")
    df = pd.DataFrame.from_records(records)
    for col in df.columns:
        if col in FIGURE_KEYS and is_float_key(col):
            df[col] = df[col].astype("float64")
            continue
        vals = [r[col] for r in records if r.get(col) is not None]
        if col in FIGURE_KEYS or col == "seconds":
            ints = not is_float_key(col) and col != "seconds"
        else:
            ints = bool(vals) and all(isinstance(v, int) and not isinstance(v, bool)
                                      for v in vals)
        if ints:
            df[col] = df[col].astype("int64" if len(vals) == len(records) else "Int64")
        elif col == "seconds":
            df[col] = df[col].astype("float64")
    return df


def load(path: str, every_device: bool = False) -> Frames:
    """The run file at path as DataFrames (the records of phase_records() and
    interval_records()): phases (phase x host x device x op: the numbers of iopulse report;
    a fio job's phase has its own devices' rows, every device's with every_device),
    intervals (interval x host x device x op), threads (phase x host x sync thread). Times
    are also pandas Timestamps (UTC) in 'start'/'end'."""
    pd = require("pandas", "iopulse.load()")
    run = load_run(path)
    dev, thr = phase_records(run, every_device=every_device)
    iv = dataframe(list(interval_records(run)))
    ph = dataframe(dev)
    th = dataframe(thr)
    for df in (iv, ph):
        if len(df):
            df["start"] = pd.to_datetime(df["start_ns"], unit="ns", utc=True)
            df["end"] = pd.to_datetime(df["end_ns"], unit="ns", utc=True)
    return Frames(iv, ph, th, run)
