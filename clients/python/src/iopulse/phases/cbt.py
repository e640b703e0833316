"""CBT (the Ceph Benchmarking Tool, github.com/ceph/cbt): one phase per benchmark run of an
archive.

The layout is CBT's (benchmark/benchmark.py, benchmarkfactory.py, common.py): `cbt.py -a
ARCHIVE` runs each benchmark of its YAML once per parameter combination and iteration, each
run in ARCHIVE/results/<iteration, 8 digits>/id-<first 8 hex digits of the SHA-1 of its
parameters>/ ("id<python hash>" before 2019). When a run starts CBT writes its parameters
there as benchmark_config.yaml ("cbt_config.yaml" before 2017; today results/cbt_config.yaml
is the whole configuration, not a run): {"cluster": {parameters..., "benchmark": type,
"iteration": n}}. The outputs are copied below that directory from the hosts, with the host
name appended:
- fio based benchmarks (librbdfio, fio, rbdfio, rawfio, kvmrbdfio): output.<n>.<host>,
  fio's --output-format=json,normal output (the JSON first, after a few job lines), beside
  fio's logs (output.<n>_bw.1.log.<host>, ...), possibly in subdirectories;
- radosbench: <mode>/output.<proc>.<host> (mode write, seq, rand or prefill), rados bench's
  text output, beside json_output.<proc>.<host> (its summary) and objecter logs;
- all: ceph_settings.out, historic_ops.out, monitoring output.

Edges, per run directory, from the first of:
- fio's JSON outputs, through phases.fio: the first job's start to the last job's end;
  accurate to 1 ms with fio >= 3.36, else about 0.5 s per stonewall group;
- rados bench outputs, through phases.rados with the file's modification time as the end of
  a run without a dated line: about 1 s (dated lines, runs of 20 s or more) or 5 s, plus
  the time CBT took to copy the file when the modification time is used;
- the modification times of the run directory's files, earliest to latest (benchmark_config
  .yaml is written as the run starts, the outputs are copied after it): accuracy_s 60, a
  minute at best and said so.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Optional

from . import fio, rados
from .model import NAME_MAX, VALUE_MAX, bounded_text
from .tool_output import read_output

CONFIG = "benchmark_config.yaml"
OLD_CONFIG = "cbt_config.yaml"
MAX_LABELS = 30                 # with run_dir; a mark may carry LABELS_MAX
MAX_KEY, MAX_VALUE = NAME_MAX, VALUE_MAX
MAX_CONFIG = 1 << 20            # a run's benchmark_config.yaml: a few KiB
_PEEK = 64 * 1024
_FIO_START = re.compile(r'^\{\s*"fio version"', re.MULTILINE)
_SHORT_LIST = 8


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError("reading a CBT archive needs PyYAML (CBT writes YAML): install "
                         "python3-yaml (Debian, Ubuntu) or `pip install PyYAML`") from None
    return yaml


def _config(path: str, yaml: Any) -> Optional[dict[str, Any]]:
    """A run's parameters from its config file; None for CBT's whole configuration. A file
    over MAX_CONFIG bytes is refused by name (YAML is parsed at a few MB/s)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_CONFIG + 1)
        if len(text) > MAX_CONFIG:
            raise ValueError(f"{path}: more than {MAX_CONFIG >> 10} KiB: not a CBT benchmark "
                             "config this importer reads")
        doc = yaml.safe_load(text)
    except (OSError, yaml.YAMLError, RecursionError) as e:
        raise ValueError(f"{path}: not a readable CBT benchmark config: "
                         f"{type(e).__name__ if isinstance(e, RecursionError) else e}") from None
    if not isinstance(doc, dict) or "benchmarks" in doc:
        return None
    cfg = doc.get("cluster", doc)
    return cfg if isinstance(cfg, dict) else None


def _labels(cfg: dict[str, Any], run_dir: str) -> dict[str, str]:
    """Scalar parameters as strings, short lists of scalars joined with ','; no dicts."""
    out: dict[str, str] = {}
    for k in sorted(cfg, key=str):
        if len(out) >= MAX_LABELS - 1:
            break
        v = cfg[k]
        if isinstance(v, bool):
            text = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            text = str(v)
        elif isinstance(v, list) and len(v) <= _SHORT_LIST and all(
                isinstance(x, (int, float, str)) for x in v):
            text = ",".join(str(x) for x in v)
        else:
            continue
        if str(k):
            out[bounded_text(str(k), MAX_KEY)] = bounded_text(text, MAX_VALUE)
    out["run_dir"] = bounded_text(run_dir, MAX_VALUE)
    return out


def _read(path: str, limit: Optional[int] = None) -> str:
    """The first limit characters, or the whole text (read_output: a file too large is
    refused by name); "" if it cannot be read."""
    try:
        if not limit:
            return read_output(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""
    except ValueError as e:         # too large: refused, naming the file
        raise ValueError(f"{path}: {e}") from None


def _fio_events(path: str) -> list[dict[str, Any]]:
    """Phases of a fio output whose JSON may follow job lines and precede normal output."""
    text = _read(path)
    # only where fio's JSON begins ('{' then "fio version"), and never again inside text a
    # failed attempt has read: trying every line that starts with '{' made a file of unclosed
    # objects quadratic, and so did every such start inside one unclosed list
    decoder = json.JSONDecoder()
    read_to = 0
    for m in _FIO_START.finditer(text):
        if m.start() < read_to:
            continue
        try:
            doc, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as e:
            read_to = max(e.pos, m.end())
            continue
        except RecursionError:      # nested deeper than fio's JSON ever is
            return []
        return fio.phases_from_json(doc) if isinstance(doc, dict) else []
    return []


def _rados_events(path: str) -> list[dict[str, Any]]:
    text = _read(path)          # too large: refused, not skipped
    try:
        return rados.phases_from_output(text, end_realtime_ns=os.stat(path).st_mtime_ns)
    except (OSError, ValueError):
        return []


def _edges(files: list[str]) -> tuple[int, int, float, str, str]:
    """start, end, accuracy_s, source, the kind of output (fio, radosbench or '')."""
    found: dict[str, list[dict[str, Any]]] = {"fio": [], "radosbench": []}
    for path in files:
        head = _read(path, _PEEK)
        if '"fio version"' in head:
            found["fio"] += _fio_events(path)
        elif "sec Cur ops" in head or "Total time run:" in head:
            found["radosbench"] += _rados_events(path)
    for kind, source in (("fio", "fio-json"), ("radosbench", "rados-bench")):
        evs = found[kind]
        if evs:
            return (min(e["start_realtime_ns"] for e in evs),
                    max(e["end_realtime_ns"] for e in evs),
                    max(float(e["accuracy_s"]) for e in evs), source, kind)
    times = [os.stat(p).st_mtime_ns for p in files]
    return min(times), max(times), 60.0, "file times", ""


def _run_dirs(root: str, yaml: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for name in (CONFIG, OLD_CONFIG):
            if name in names and (name == CONFIG or os.path.basename(d).startswith("id")):
                cfg = _config(os.path.join(d, name), yaml)
                if cfg is not None:
                    out.append((d, cfg))
                    dirs[:] = []            # a run's outputs lie below it
                    break
    return out


def phases_from_archive(root: str) -> list[dict[str, Any]]:
    """Phase events (see phases/fio.py), one per CBT run directory below root (an archive,
    its results/ or one run), named cbt-<benchmark>, in start order. Edges and their accuracy:
    see the module's docstring."""
    if not os.path.isdir(root):
        raise ValueError(f"{root}: not a directory (a CBT archive is the directory given to "
                         "cbt.py -a/--archive)")
    yaml = _yaml()
    out: list[dict[str, Any]] = []
    for d, cfg in _run_dirs(root, yaml):
        files = sorted(os.path.join(dd, n) for dd, _, ns in os.walk(d) for n in ns
                       if os.path.isfile(os.path.join(dd, n)))
        start, end, acc, source, kind = _edges(files)
        benchmark = cfg.get("benchmark")
        name = benchmark if isinstance(benchmark, str) and benchmark else kind or "run"
        out.append({"type": "phase", "name": bounded_text(f"cbt-{name}", NAME_MAX),
                    "labels": _labels(cfg, os.path.relpath(d, root)),
                    "source": f"cbt ({source})", "accuracy_s": acc,
                    "start_realtime_ns": start, "end_realtime_ns": end})
    if not out:
        raise ValueError(f"{root}: no CBT run found (no results/<iteration>/id-<hash>/{CONFIG} "
                         "below it)")
    out.sort(key=lambda e: (e["start_realtime_ns"], e["labels"]["run_dir"]))
    return out
