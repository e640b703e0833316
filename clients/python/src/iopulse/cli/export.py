"""iopulse export: a run's tables as files for DuckDB, polars, pandas or a spreadsheet."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Any, Iterable

from ..data import dataframe, interval_records, phase_records, require
from ..record.reader import load
from ..report.tables import csv_cell
from .common import EXIT_OK

HELP = "write a run's tables (intervals, phases, threads) as Parquet, CSV or JSON lines"
EXAMPLES = """examples:
  iopulse export run1.iopulse --format csv -o run1/
  iopulse export run1.iopulse --format parquet -o run1/   (needs iopulse[report])
  duckdb -c "select phase, iodepth, op, sum(ios) / sum(seconds) as iops
             from 'run1/phases.parquet' where device = 'nvme0n1' and op in ('read', 'write')
             group by all"

Writes into the directory -o phases.EXT (phase x host x device x op, op read, write,
discard, flush and all, the data ops together: the numbers of iopulse report), intervals.EXT
(interval x host x device x op, with the innermost phase) and threads.EXT (phase x host x
sync thread). Each phase label is a column (iodepth, bs and bs_bytes, ...); device_class
says where a device sits in the block stack. Every key carries its unit (_ns, _bytes,
_sectors, _per_s, _pct; mb_per_s is 10^6 bytes/s, mib_per_s 2^20); counts are integers.
A rate over several rows is their summed counts over their summed seconds."""
CONNECTS = False


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("run", metavar="RUN")
    s.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="csv",
                   help="csv (default: any spreadsheet or tool), parquet (typed columns, "
                        "compressed; needs pyarrow, iopulse[report]) or jsonl (one JSON "
                        "object per line)")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory to write into (made if missing)")


def _write_csv(path: str, records: Iterable[dict[str, Any]]) -> int:
    n = 0
    with open(path, "w", newline="") as f:
        w = None
        for r in records:
            if w is None:
                w = csv.DictWriter(f, fieldnames=list(r))
                w.writeheader()
            w.writerow({k: "" if v is None else csv_cell(v) for k, v in r.items()})
            n += 1
    return n


def _write_jsonl(path: str, records: Iterable[dict[str, Any]]) -> int:
    n = 0
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
            n += 1
    return n


def run(args: argparse.Namespace) -> int:
    pd = require("pandas", "--format parquet") if args.format == "parquet" else None
    if pd is not None:
        require("pyarrow", "--format parquet")
    r = load(args.run)
    os.makedirs(args.output, exist_ok=True)
    dev, thr = phase_records(r)
    tables = {"intervals": interval_records(r), "phases": iter(dev), "threads": iter(thr)}
    for name, recs in tables.items():
        path = os.path.join(args.output, f"{name}.{args.format}")
        if args.format == "csv":
            n = _write_csv(path, recs)
        elif args.format == "jsonl":
            n = _write_jsonl(path, recs)
        else:
            df = dataframe(list(recs))
            df.to_parquet(path, index=False)
            n = len(df)
        print(f"{path}: {n} rows", file=sys.stderr)
    return EXIT_OK
