"""Phases from rados bench output and CBT archives.

The samples are printed the way Ceph's src/common/obj_bencher.cc prints them (status_printer,
write_bench, seq_read_bench; rados.cc prints "hints = 1" first) and laid out the way CBT's
benchmark/benchmark.py, librbdfio.py and radosbench.py lay out an archive."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import pytest

from iopulse.phases import cbt, rados

S = 1_000_000_000
def needs_yaml(test: Any) -> Any:
    """Without PyYAML (a base install: it comes with iopulse[report]) the test checks instead
    that reading an archive says what to install; never a skip."""
    if importlib.util.find_spec("yaml") is not None:
        return test

    def instead(tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="needs PyYAML"):
            cbt.phases_from_archive(str(tmp_path))
    instead.__name__ = test.__name__
    return instead


def utc_ns(*args: int, us: int = 0) -> int:
    t = datetime(*args, tzinfo=timezone.utc)    # type: ignore[misc]
    return int(t.timestamp()) * S + us * 1000


# ------------------------------------------------------------- rados bench samples --

# header of status_printer: setw 5, 8, 10, 10, 10, 10, 12, 12 (10, 10 before 2017)
HEADER = f"{'sec':>5}{'Cur ops':>8}{'started':>10}{'finished':>10}{'avg MB/s':>10}" \
         f"{'cur MB/s':>10}{'last lat(s)':>12}{'avg lat(s)':>12}"
OLD_HEADER = f"{'sec':>5}{'Cur ops':>8}{'started':>10}{'finished':>10}{'avg MB/s':>10}" \
             f"{'cur MB/s':>10}{'last lat':>10}{'avg lat':>10}"


def status(i: int, threads: int = 16, old: bool = False) -> str:
    """A status line: setw(5) i, then ' ' setw(7), 9, 9, 9, 9, 11, 11 (9, 9 before 2017);
    doubles as an ostream prints them (6 significant digits)."""
    lat = 9 if old else 11
    finished = 12 * i
    if i == 0:              # nothing finished yet: '0' and '-'
        return f"{i:5d} {threads:7d} {threads:9d} {0:9d} {0:9g} {'0':>9} {'-':>{lat}} " \
               f"{0:{lat}g}"
    return (f"{i:5d} {threads:7d} {finished + threads:9d} {finished:9d} {48.0 - 1 / i:9g} "
            f"{48:9g} {0.884137:{lat}g} {1.30171 - 0.01 * i:{lat}g}")


def write_run(seconds: int, total: str, dated: list[str], threads: int = 16,
              show_time: Optional[list[str]] = None, old: bool = False) -> list[str]:
    """`rados bench SECONDS write -t THREADS`; dated[k] is the time of the (k+1)-th dated
    line, show_time[i] the --show-time prefix of second i."""
    def out(i: int, line: str) -> str:
        return f"{show_time[i]} {line}" if show_time else line

    lines = [] if old else ["hints = 1"]
    lines += [out(0, f"Maintaining {threads} concurrent writes of 4194304 bytes to objects "
                     f"of size 4194304 for up to {seconds} seconds or 0 objects"),
              out(0, "Object prefix: benchmark_data_client1_40213")]
    for i in range(seconds + 1):
        if i % 20 == 0:
            if i > 0:
                lines.append(f"{dated[i // 20 - 1]} min lat: 0.360146 max lat: 2.10211 "
                             "avg lat: 0.976331")
            lines.append(out(i, OLD_HEADER if old else HEADER))
        lines.append(out(i, status(i, threads, old)))
    lat = "" if old else "(s)"         # the summary's words are padded to 24 characters
    summary = [("Total time run:", total), ("Total writes made:", "412"),
               ("Write size:", "4194304"), ("Object size:", "4194304"),
               ("Bandwidth (MB/sec):", "65.3617"), ("Stddev Bandwidth:", "9.8273"),
               ("Max bandwidth (MB/sec):", "84"), ("Min bandwidth (MB/sec):", "44"),
               ("Average IOPS:", "16"), ("Stddev IOPS:", "2.45683"), ("Max IOPS:", "21"),
               ("Min IOPS:", "11"), (f"Average Latency{lat}:", "0.976331"),
               (f"Stddev Latency{lat}:", "0.284521"), (f"Max latency{lat}:", "2.10211"),
               (f"Min latency{lat}:", "0.360146")]
    lines.append(out(seconds, f"{summary[0][0]:<24}{summary[0][1]}"))
    lines += [f"{k:<24}{v}" for k, v in summary[1:]]
    return lines


def seq_run(seconds: int, total: str, threads: int = 16) -> list[str]:
    """`rados bench SECONDS seq` (rand prints the same)."""
    lines = ["hints = 1", HEADER] + [status(i, threads) for i in range(seconds + 1)]
    summary = [("Total time run:", total), ("Total reads made:", "520"),
               ("Read size:", "4194304"), ("Object size:", "4194304"),
               ("Bandwidth (MB/sec):", "259.868"), ("Average IOPS:", "64"),
               ("Stddev IOPS:", "4.6291"), ("Max IOPS:", "70"), ("Min IOPS:", "58"),
               ("Average Latency(s):", "0.244872"), ("Max latency(s):", "0.703386"),
               ("Min latency(s):", "0.0221853")]
    return lines + [f"{k:<22}{v}" for k, v in summary]


W_LABELS = {"mode": "write", "threads": "16", "op_size": "4194304",
            "object_size": "4194304", "seconds": "25"}


def test_write_with_a_dated_line_then_seq_without(tmp_path: Path) -> None:
    text = "\n".join(write_run(25, "25.2135", ["2026-11-23T10:00:20.004211+0000"]) +
                     seq_run(8, "8.00419")) + "\n"
    end = utc_ns(2026, 11, 23, 10, 1, 0)
    w, s = rados.phases_from_output(text, end_realtime_ns=end,
                                    argv=["rados", "-p", "rbd", "bench", "8", "seq"])
    # the dated line opens second 20 (after the status line of second 19)
    start = utc_ns(2026, 11, 23, 10, 0, 0, us=4211)
    assert w == {"type": "phase", "name": "rados-bench-write", "labels": dict(W_LABELS,
                 pool="rbd"), "source": "rados-bench", "accuracy_s": 1.0,
                 "start_realtime_ns": start, "end_realtime_ns": start + 25_213_500_000}
    # no dated line: it ended at the given time; the command line names its mode
    assert s == {"type": "phase", "name": "rados-bench-seq", "labels": {
        "mode": "seq", "pool": "rbd", "seconds": "8", "threads": "16", "op_size": "4194304",
        "object_size": "4194304"}, "source": "rados-bench", "accuracy_s": 5.0,
        "start_realtime_ns": end - 8_004_190_000, "end_realtime_ns": end}
    # without an end: right after the write run; without argv a read of unknown kind whose
    # threads are the ops in flight
    w2, s2 = rados.phases_from_output(text)
    assert w2["start_realtime_ns"] == start and "pool" not in w2["labels"]
    assert s2["start_realtime_ns"] == w["end_realtime_ns"]
    assert s2["end_realtime_ns"] == w["end_realtime_ns"] + 8_004_190_000
    assert s2["name"] == "rados-bench-read" and s2["accuracy_s"] == 5.0
    assert s2["labels"] == {"mode": "read", "threads": "16", "op_size": "4194304",
                            "object_size": "4194304"}


def test_time_zones_and_the_legacy_date_form() -> None:
    same = [rados.phases_from_output("\n".join(write_run(45, "45.0183", dated)))[0]
            for dated in (["2026-11-23T11:00:20.500000+0100", "2026-11-23T11:00:40.5+0100"],
                          ["2026-11-23T10:00:20.500000Z", "x"])]
    assert [p["start_realtime_ns"] for p in same] == [utc_ns(2026, 11, 23, 10, 0, 0,
                                                             us=500000)] * 2
    # before Octopus: "YYYY-MM-DD HH:MM:SS.ffffff", no offset: taken as UTC; the old header,
    # latency columns and summary words
    (p,) = rados.phases_from_output("\n".join(write_run(21, "21.3", ["2019-04-25 14:35:48."
                                                                     "562404"], old=True)))
    assert p["start_realtime_ns"] == utc_ns(2019, 4, 25, 14, 35, 28, us=562404)
    assert p["end_realtime_ns"] == p["start_realtime_ns"] + 21_300_000_000
    assert p["labels"] == dict(W_LABELS, seconds="21") and p["accuracy_s"] == 1.0


def test_show_time_prefixes_anchor_a_short_run() -> None:
    stamps = [f"2026-11-23T10:00:{i:02d}.250000+0000" for i in range(11)]
    (p,) = rados.phases_from_output("\n".join(write_run(10, "10.1", [], 8, show_time=stamps)))
    assert p["start_realtime_ns"] == utc_ns(2026, 11, 23, 10, 0, 0, us=250000)
    assert p["end_realtime_ns"] == p["start_realtime_ns"] + 10_100_000_000
    assert p["accuracy_s"] == 1.0 and p["labels"]["threads"] == "8"


def test_runs_back_to_back_before_the_end_and_command_lines_in_the_text() -> None:
    text = "\n".join(["$ rados bench -p data 10 write -t 8 -b 1M -O 1M --no-cleanup"] +
                     [x.replace("4194304", "1048576") for x in write_run(10, "10.05", [], 8)] +
                     ["$ rados -p data bench 6 rand -t 4"] + seq_run(6, "6.002", 4))
    end = utc_ns(2026, 11, 23, 12, 0, 0)
    w, r = rados.phases_from_output(text, end_realtime_ns=end)
    assert r["end_realtime_ns"] == end and r["start_realtime_ns"] == end - 6_002_000_000
    assert w["end_realtime_ns"] == r["start_realtime_ns"]
    assert w["start_realtime_ns"] == r["start_realtime_ns"] - 10_050_000_000
    assert w["accuracy_s"] == r["accuracy_s"] == 5.0
    assert w["labels"] == {"mode": "write", "pool": "data", "seconds": "10", "threads": "8",
                           "op_size": "1048576", "object_size": "1048576"}
    assert r["name"] == "rados-bench-rand"
    assert r["labels"] == {"mode": "rand", "pool": "data", "seconds": "6", "threads": "4",
                           "op_size": "4194304", "object_size": "4194304"}


def test_rados_errors() -> None:
    with pytest.raises(ValueError, match="not rados bench output"):
        rados.phases_from_output("fio-3.33\nStarting 1 process\n")
    with pytest.raises(ValueError, match="not rados bench output"):    # cut before the end
        rados.phases_from_output("\n".join(seq_run(8, "8.1")[:-12]))
    with pytest.raises(ValueError, match="no time anchor.*--end-time"):
        rados.phases_from_output("\n".join(seq_run(8, "8.00419")))
    with pytest.raises(ValueError, match="not a number of seconds"):
        rados.phases_from_output("\n".join(seq_run(8, "soon")), end_realtime_ns=S)


@pytest.mark.parametrize("argv, want", [
    ("rados bench -p rbd 60 write -t 16 -b 4M --no-cleanup",
     {"mode": "write", "seconds": "60", "pool": "rbd", "threads": "16",
      "op_size": "4194304", "object_size": "4194304"}),
    ("rados --pool=rbd bench 30 write -b 4194304 -t 32",
     {"mode": "write", "seconds": "30", "pool": "rbd", "threads": "32",
      "op_size": "4194304", "object_size": "4194304"}),
    ("/usr/bin/rados -p rbd bench 10 write",            # defaults: 16 threads, 4 MiB
     {"mode": "write", "seconds": "10", "pool": "rbd", "threads": "16",
      "op_size": "4194304", "object_size": "4194304"}),
    ("rados -p rbd bench 10 write -b 64K -O 1G --concurrent_ios=8",
     {"mode": "write", "seconds": "10", "pool": "rbd", "threads": "8",
      "op_size": "65536", "object_size": "1073741824"}),
    ("rados -p rbd bench 10 write -b 8M -O 1M",          # rados cuts the op to the object
     {"mode": "write", "seconds": "10", "pool": "rbd", "threads": "16",
      "op_size": "1048576", "object_size": "1048576"}),
    # how CBT's radosbench.py runs it
    ("rados -c /tmp/cbt/ceph.conf -p rados-bench-cbt bench -b 4194304 300 write "
     "--concurrent-ios 16 --run-name client1-0 --no-cleanup",
     {"mode": "write", "seconds": "300", "pool": "rados-bench-cbt", "threads": "16",
      "op_size": "4194304", "object_size": "4194304"}),
    ("rados bench 60 rand -p rbd -t 4", {"mode": "rand", "seconds": "60", "pool": "rbd",
                                         "threads": "4"}),
    ("rados -p rbd bench 60 seq", {"mode": "seq", "seconds": "60", "pool": "rbd",
                                   "threads": "16"}),
    ("rados bench 5 write -b lots", {"mode": "write", "seconds": "5", "threads": "16",
                                     "op_size": "lots", "object_size": "lots"}),
    ("rados -p rbd ls", {"pool": "rbd", "threads": "16"}),
])
def test_labels_from_argv(argv: str, want: dict[str, str]) -> None:
    assert rados.labels_from_argv(argv.split()) == want


# -------------------------------------------------------------------- CBT archive --

def fio_output(jobname: str, timestamp_ms: int, runtime_ms: int) -> str:
    """fio --output-format=json,normal as CBT's librbdfio runs it (fio 3.33: no job_start):
    the job line, the JSON, then the normal report."""
    doc = {"fio version": "fio-3.33", "timestamp": timestamp_ms // 1000,
           "timestamp_ms": timestamp_ms, "time": "Tue Nov 14 22:15:00 2023",
           "global options": {"ioengine": "rbd", "clientname": "admin", "pool":
                              "cbt-librbdfio", "invalidate": "0", "direct": "1"},
           "jobs": [{"jobname": jobname, "groupid": 0, "error": 0, "eta": 0,
                     "elapsed": runtime_ms // 1000 + 1, "job_runtime": runtime_ms,
                     "job options": {"rw": "randwrite", "bs": "4096B", "iodepth": "32",
                                     "runtime": "60", "numjobs": "1"},
                     "read": {"io_bytes": 0}, "write": {"io_bytes": 1073741824}}]}
    return (f"{jobname}: (g=0): rw=randwrite, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) "
            "4096B-4096B, ioengine=rbd, iodepth=32\nfio-3.33\nStarting 1 process\n\n"
            + json.dumps(doc, indent=2) + "\n"
            f"{jobname}: (groupid=0, jobs=1): err= 0: pid=40213: Tue Nov 14 22:15:00 2023\n"
            "  write: IOPS=4473, BW=17.5MiB/s (18.3MB/s)(1024MiB/60001msec); 0 zone resets\n")


def run_dir(root: Path, config: dict[str, Any]) -> Path:
    """results/<iteration, 8 digits>/id-<sha1 of the sorted parameters, 8 hex digits>/ with
    benchmark_config.yaml = {"cluster": parameters}, as Benchmark.__init__ and run() do."""
    import yaml

    digest = hashlib.sha1(json.dumps(sorted(config.items())).encode()).hexdigest()[:8]
    d = root / "results" / f"{config['iteration']:0>8}" / f"id-{digest}"
    d.mkdir(parents=True)
    (d / "benchmark_config.yaml").write_text(yaml.dump({"cluster": config},
                                                       default_flow_style=False))
    return d


def touch(path: Path, ns: int, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text)
    os.utime(path, ns=(ns, ns))


@needs_yaml
def test_cbt_archive(tmp_path: Path) -> None:
    import yaml

    root = tmp_path / "archive"
    (root / "results").mkdir(parents=True)      # CBT's whole configuration: not a run
    (root / "results" / "cbt_config.yaml").write_text(yaml.dump(
        {"cluster": {"user": "cbt", "iterations": 1}, "benchmarks": {"librbdfio": {}}}))
    # librbdfio: fio's outputs (two volumes) beside its logs and the cluster's dumps
    fio_cfg = {"benchmark": "librbdfio", "iteration": 0, "mode": "randwrite", "op_size": 4096,
               "iodepth": 32, "time": 60, "vol_size": 1024, "norandommap": True,
               "prefill": {"blocksize": "4M", "numjobs": 1}}
    f = run_dir(root, fio_cfg)
    (f / "output.0.client1").write_text(fio_output("cbt-librbdfio-client1-file-0",
                                                   1700000100123, 60000))
    (f / "output.1.client1").write_text(fio_output("cbt-librbdfio-client1-file-0",
                                                   1700000100400, 59900))
    (f / "output.0_bw.1.log.client1").write_text("1000, 17900, 1, 4096, 0\n")
    (f / "ceph_settings.out.osd1").write_text('{\n    "name": "osd.0",\n    "cluster": '
                                              '"ceph"\n}\n')
    # radosbench: write (25 s, a dated line) and seq (8 s: the file's time is its end)
    rb_cfg = {"benchmark": "radosbench", "iteration": 0, "op_size": 4194304,
              "concurrent_ops": 16, "time": 25, "readmode": "seq", "pool_profile": "replicated"}
    r = run_dir(root, rb_cfg)
    (r / "write").mkdir()
    (r / "write" / "output.0.client1").write_text("\n".join(write_run(
        25, "25.2135", ["2023-11-14T22:20:20.000000+0000"])) + "\n")
    (r / "write" / "json_output.0.client1").write_text(json.dumps(
        {"Total time run": "25.2135", "Total writes made": "412"}))
    seq_end = utc_ns(2023, 11, 14, 22, 21, 0)
    touch(r / "seq" / "output.0.client1", seq_end, "\n".join(seq_run(8, "8.00419")) + "\n")
    touch(r / "seq" / "objecter.0.log.client1", seq_end)
    # a run with no output CBT understands: its files' times
    n = run_dir(root, {"benchmark": "nullbench", "iteration": 0})
    t0 = utc_ns(2023, 11, 14, 23, 0, 0)
    os.utime(n / "benchmark_config.yaml", ns=(t0, t0))
    touch(n / "ceph_settings.out.osd1", t0 + 90 * S, "{}\n")

    ph = cbt.phases_from_archive(str(root))
    assert [p["name"] for p in ph] == ["cbt-librbdfio", "cbt-radosbench", "cbt-nullbench"]
    fp, rp, np_ = ph
    assert fp["start_realtime_ns"] == (1700000100123 - 60000) * 10**6    # fio < 3.36: from
    assert fp["end_realtime_ns"] == 1700000100400 * 10**6                # the report's time
    assert fp["accuracy_s"] == 0.5 and fp["type"] == "phase"
    assert fp["labels"] == {"benchmark": "librbdfio", "iteration": "0", "mode": "randwrite",
                            "op_size": "4096", "iodepth": "32", "time": "60",
                            "vol_size": "1024", "norandommap": "true",
                            "run_dir": os.path.relpath(f, root)}
    assert fp["labels"]["run_dir"].startswith("results/00000000/id-")
    assert rp["start_realtime_ns"] == utc_ns(2023, 11, 14, 22, 20, 0)
    assert rp["end_realtime_ns"] == seq_end and rp["accuracy_s"] == 5.0
    assert rp["labels"]["readmode"] == "seq" and rp["labels"]["concurrent_ops"] == "16"
    assert (np_["start_realtime_ns"], np_["end_realtime_ns"], np_["accuracy_s"]) == \
        (t0, t0 + 90 * S, 60.0)
    assert set(fp) == {"type", "name", "labels", "source", "accuracy_s", "start_realtime_ns",
                       "end_realtime_ns"}
    # one run directory given directly
    (one,) = cbt.phases_from_archive(str(f))
    assert one["labels"]["run_dir"] == "." and one["end_realtime_ns"] == fp["end_realtime_ns"]


def test_cbt_labels_are_capped() -> None:
    cfg: dict[str, Any] = {f"k{i:02d}": i for i in range(40)}
    cfg.update({"clients": ["c1", "c2"], "many": list(range(20)), "nested": {"a": 1},
                "none": None, "long" + "x" * 200: "y" * 2000})
    labels = cbt._labels(cfg, "results/00000000/id-1")
    assert len(labels) == cbt.MAX_LABELS and labels["run_dir"] == "results/00000000/id-1"
    assert labels["clients"] == "c1,c2" and "many" not in labels and "nested" not in labels
    assert "none" not in labels and labels["k00"] == "0"
    long = {k: v for k, v in cbt._labels({"long" + "x" * 200: "y" * 2000}, ".").items()
            if k != "run_dir"}
    assert [(len(k), len(v)) for k, v in long.items()] == [(128, 1024)]


@needs_yaml
def test_cbt_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"{tmp_path}: no CBT run found"):
        cbt.phases_from_archive(str(tmp_path))
    with pytest.raises(ValueError, match="not a directory"):
        cbt.phases_from_archive(str(tmp_path / "missing"))
    bad = tmp_path / "results" / "00000000" / "id-0badcafe"
    bad.mkdir(parents=True)
    (bad / "benchmark_config.yaml").write_text("cluster: [unclosed\n")
    with pytest.raises(ValueError, match="id-0badcafe/benchmark_config.yaml: not a readable"):
        cbt.phases_from_archive(str(tmp_path))


def test_cbt_says_pyyaml_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)      # import yaml raises ImportError
    with pytest.raises(ValueError, match="needs PyYAML.*python3-yaml"):
        cbt.phases_from_archive(str(tmp_path))


def test_dates_without_an_offset_are_local_time(monkeypatch):
    """rados printed them with localtime(): they are read in $TZ, not as UTC."""
    import time as _time
    from iopulse.phases.rados import _time_ns

    utc = _time_ns("2019-04-25", "14:35:48", "5", "+0000")
    monkeypatch.setenv("TZ", "Europe/Berlin")
    _time.tzset()
    try:
        assert _time_ns("2019-04-25", "16:35:48", "5", None) == utc     # CEST is UTC+2
    finally:
        monkeypatch.delenv("TZ")
        _time.tzset()


@needs_yaml
def test_cbt_reader_is_linear_and_bounded(tmp_path: Path, monkeypatch: Any) -> None:
    """A fio output of 300 nested unclosed objects per line (8 MB: 52 s before, every line
    that starts with '{' parsed to the end) is parsed only where fio's JSON begins; an output
    file of 3 GB (sparse, read whole before) is refused by name."""
    import json

    run = tmp_path / "archive" / "results" / "00000000" / "id1"
    run.mkdir(parents=True)
    (run / "benchmark_config.yaml").write_text("cluster:\n  iodepth: 4\n")
    line = '{"a":[' * 300 + "\n"
    (run / "output.0").write_text('"fio version"\n' + line * (8_000_000 // len(line)))
    parses = []
    real = json.JSONDecoder.raw_decode

    def counted(self: Any, s: str, idx: int = 0) -> Any:
        parses.append(idx)
        return real(self, s, idx)
    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    cbt.phases_from_archive(str(tmp_path / "archive"))
    assert parses == [], f"{len(parses)} JSON parses of a file with no fio JSON in it"
    with open(run / "output.0", "wb") as f:
        f.write(b'{\n  "fio version" : "fio-3.33",\n')
        f.truncate(3 << 30)
    with pytest.raises(ValueError, match="output.0: more than 64 MiB"):
        cbt.phases_from_archive(str(tmp_path / "archive"))
