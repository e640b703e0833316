"""CBT (the Ceph Benchmarking Tool): one phase per benchmark run of an archive.

CBT (benchmark/benchmark.py) keeps each run in ARCHIVE/results/<iteration, 8 digits>/
id-<first 8 hex digits of a hash of its parameters>/ and writes the run's parameters there as
benchmark_config.yaml ({"cluster": {...}}); the benchmark's outputs (fio's JSON for the fio
based benchmarks, rados bench's text for radosbench) lie below that directory.

Edges come from those outputs: fio JSON through phases.fio (1 ms with fio >= 3.36, else about
a second per stonewall group), rados bench output through phases.rados with the file's
modification time as the end when it has no dated line (about 5 s). A run with neither gets
the first and last modification times of its files: accurate to a minute at best, and said so
(accuracy_s 60).
"""
from __future__ import annotations

import json
import os
from typing import Any

from . import fio, rados

CONFIG = "benchmark_config.yaml"
MAX_LABELS = 30


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError("reading a CBT archive needs PyYAML: pip install 'iopulse[report]' "
                         "(Debian: python3-yaml)") from None
    return yaml


def _labels(cfg: dict[str, Any], run_dir: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for k in sorted(cfg):
        v = cfg[k]
        if isinstance(v, bool) or isinstance(v, (int, float, str)):
            out[str(k)[:128]] = str(v)[:1024]
        elif isinstance(v, list) and len(v) <= 8 and all(
                isinstance(x, (int, float, str)) for x in v):
            out[str(k)[:128]] = ",".join(str(x) for x in v)[:1024]
        if len(out) >= MAX_LABELS - 1:
            break
    out["run_dir"] = run_dir[:1024]
    return out


def _kind(cfg: dict[str, Any], files: list[str]) -> str:
    for key in ("benchmark", "benchmark_type", "type"):
        if isinstance(cfg.get(key), str):
            return cfg[key]
    if "readmode" in cfg or "op_size" in cfg and "iodepth" not in cfg:
        return "radosbench"
    if "iodepth" in cfg or "rwmixread" in cfg:
        return "fio"
    return "run"


def _edges(files: list[str]) -> tuple[int, int, float, str]:
    starts, ends, acc, source = [], [], 0.0, ""
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(8 << 20)
        except OSError:
            continue
        evs: list[dict[str, Any]] = []
        brace = text.find("{")
        if 0 <= brace < 4096 and '"jobs"' in text:
            try:
                evs = fio.phases_from_json(json.loads(text[brace:]))
                source = source or "fio-json"
            except ValueError:
                evs = []
        elif "Total time run:" in text:
            try:
                evs = rados.phases_from_output(
                    text, end_realtime_ns=int(os.stat(path).st_mtime * 1e9))
                source = source or "rados-bench"
            except ValueError:
                evs = []
        for e in evs:
            starts.append(e["start_realtime_ns"])
            ends.append(e["end_realtime_ns"])
            acc = max(acc, float(e["accuracy_s"]))
    if starts:
        return min(starts), max(ends), acc, source
    times = [int(os.stat(p).st_mtime * 1e9) for p in files if os.path.isfile(p)]
    if not times:
        return 0, 0, 0.0, ""
    return min(times), max(times), 60.0, "file times"


def phases_from_archive(root: str) -> list[dict[str, Any]]:
    """Phase events (see phases/fio.py), one per run directory below root."""
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a directory (a CBT archive is one)")
    yaml = _yaml()
    out: list[dict[str, Any]] = []
    for d, _, names in sorted(os.walk(root)):
        if CONFIG not in names:
            continue
        with open(os.path.join(d, CONFIG)) as f:
            doc = yaml.safe_load(f) or {}
        cfg = doc.get("cluster", doc) if isinstance(doc, dict) else {}
        files = sorted(os.path.join(dd, n) for dd, _, ns in os.walk(d) for n in ns
                       if n != CONFIG)
        start, end, acc, source = _edges(files)
        if not start:
            continue
        rel = os.path.relpath(d, root)
        out.append({"type": "phase", "name": f"cbt-{_kind(cfg, files)}",
                    "labels": _labels(cfg if isinstance(cfg, dict) else {}, rel),
                    "source": f"cbt ({source})", "accuracy_s": acc,
                    "start_realtime_ns": start, "end_realtime_ns": end})
    if not out:
        raise ValueError(f"{root}: no CBT run found (no results/*/id-*/{CONFIG} with outputs)")
    out.sort(key=lambda e: e["start_realtime_ns"])
    return out
