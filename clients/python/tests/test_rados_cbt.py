"""rados bench output and CBT archives as phases, from samples made the way obj_bencher.cc
and CBT's benchmark.py write them."""
from __future__ import annotations

import importlib.util
import json
import os
from datetime import datetime

import pytest

from iopulse.phases import cbt, rados

HEADER = ("  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)")


def status(sec: int) -> str:
    return (f"{sec:5d} {16:7d} {28 + 12 * sec:9d} {12 * sec:9d} {47.99:9.6g} {48:9d} "
            f"{0.887546:11.6g} {0.636271:11.6g}")


def write_run(seconds: int, dated: str = "") -> list[str]:
    out = ["hints = 1",
           f"Maintaining 16 concurrent writes of 4194304 bytes to objects of size 4194304 "
           f"for up to {seconds} seconds or 0 objects",
           "Object prefix: benchmark_data_node1_12345", HEADER]
    for i in range(seconds):
        if i and i % 20 == 0:
            out.append(f"{dated} min lat: 0.11 max lat: 1.2 avg lat: 0.63")
            out.append(HEADER)
        out.append(status(i))
    out += [f"Total time run:         {seconds + 0.2:g}", "Total writes made:      600",
            "Write size:             4194304", "Object size:            4194304",
            "Bandwidth (MB/sec):     95.1", "Stddev Bandwidth:       10.2",
            "Max bandwidth (MB/sec): 120", "Min bandwidth (MB/sec): 60",
            "Average IOPS:           23", "Stddev IOPS:            2.5",
            "Max IOPS:               30", "Min IOPS:               15",
            "Average Latency(s):     0.65", "Stddev Latency(s):      0.2",
            "Max latency(s):         1.2", "Min latency(s):         0.11"]
    return out


def seq_run(seconds: float) -> list[str]:
    out = [HEADER] + [status(i) for i in range(int(seconds))]
    out += [f"Total time run:       {seconds:g}", "Total reads made:     500",
            "Read size:            4194304", "Object size:          4194304",
            "Bandwidth (MB/sec):   200", "Average IOPS:         50", "Stddev IOPS:          3",
            "Max IOPS:             55", "Min IOPS:             45",
            "Average Latency(s):   0.3", "Max latency(s):       0.9", "Min latency(s):       0.05"]
    return out


def ns(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp).timestamp() * 1e9)


def test_write_run_with_a_dated_line_then_a_short_seq_run():
    text = "\n".join(write_run(25, dated="2026-11-23T10:00:20.000000+0000") + seq_run(8))
    ph = rados.phases_from_output(text, end_realtime_ns=ns("2026-11-23T10:05:00+00:00"),
                                  argv=["rados", "-p", "rbd", "bench", "25", "seq"])
    w, s = ph
    # the dated line opens second 20: the run began 20 s before it
    assert w["start_realtime_ns"] == ns("2026-11-23T10:00:00+00:00")
    assert w["end_realtime_ns"] == w["start_realtime_ns"] + int(25.2e9)
    assert w["name"] == "rados-bench-write" and w["accuracy_s"] == 1.0
    assert w["labels"] == {"mode": "write", "threads": "16", "op_size": "4194304",
                           "object_size": "4194304", "seconds": "25", "pool": "rbd"}
    # no dated line: back to back before the given end
    assert s["name"] == "rados-bench-seq" and s["accuracy_s"] == 5.0
    assert s["end_realtime_ns"] == ns("2026-11-23T10:05:00+00:00")
    assert s["end_realtime_ns"] - s["start_realtime_ns"] == 8 * 10**9


def test_legacy_dates_are_local_time_and_show_time_prefixes():
    text = "\n".join(write_run(21, dated="2019-04-25 14:35:48.000000"))
    (w,) = rados.phases_from_output(text)
    assert w["start_realtime_ns"] == int(datetime(2019, 4, 25, 14, 35, 28).timestamp() * 1e9)
    prefixed = "\n".join(("2019-04-25 14:35:28.500000 " + x) if x.startswith(" ") and
                         "min lat" not in x else x
                         for x in write_run(21, dated="2019-04-25 14:35:48.000000"))
    (p,) = rados.phases_from_output(prefixed)
    assert p["start_realtime_ns"] == w["start_realtime_ns"]


def test_rados_errors():
    with pytest.raises(ValueError, match="not rados bench output"):
        rados.phases_from_output("hello\nworld")
    with pytest.raises(ValueError, match="--end-time"):
        rados.phases_from_output("\n".join(seq_run(5)))


def test_labels_from_argv():
    assert rados.labels_from_argv(["rados", "bench", "-p", "rbd", "60", "write", "-t", "32",
                                   "-b", "64K", "--no-cleanup"]) == \
        {"pool": "rbd", "seconds": "60", "mode": "write", "threads": "32",
         "op_size": "65536", "object_size": "65536"}
    assert rados.labels_from_argv(["rados", "--pool=data", "bench", "30", "rand"]) == \
        {"pool": "data", "seconds": "30", "mode": "rand", "threads": "16"}


def test_cbt_archive_needs_pyyaml_and_says_so(tmp_path):
    if importlib.util.find_spec("yaml") is not None:
        return test_cbt_archive(tmp_path)
    with pytest.raises(ValueError, match="needs PyYAML"):
        cbt.phases_from_archive(str(tmp_path))


def test_cbt_archive(tmp_path):
    if importlib.util.find_spec("yaml") is None:
        return test_cbt_archive_needs_pyyaml_and_says_so(tmp_path)
    import yaml

    root = tmp_path / "archive"
    fio_run = root / "results" / "00000000" / "id-1a2b3c4d"
    rb_run = root / "results" / "00000000" / "id-5e6f7a8b"
    for d, cfg in ((fio_run, {"iodepth": 32, "op_size": 4096, "mode": "randwrite",
                              "iteration": 0, "volumes": [1, 2]}),
                   (rb_run, {"op_size": 4194304, "concurrent_ops": 16, "readmode": "seq",
                             "time": 25, "iteration": 0})):
        d.mkdir(parents=True)
        (d / "benchmark_config.yaml").write_text(yaml.dump({"cluster": cfg}))
    (fio_run / "output.0.client1").write_text(json.dumps({
        "fio version": "fio-3.37", "timestamp": 1700000100, "timestamp_ms": 1700000100000,
        "jobs": [{"jobname": "librbdfio", "groupid": 0, "job_start": 1700000010000,
                  "job_runtime": 60000, "elapsed": 61, "job options": {"rw": "randwrite"}}]}))
    out = rb_run / "write" / "output.0.client1"
    out.parent.mkdir()
    out.write_text("\n".join(write_run(25, dated="2023-11-14T22:15:00.000000+0000")))
    os.utime(out, (1700000500, 1700000500))
    ph = cbt.phases_from_archive(str(root))
    assert [p["name"] for p in ph] == ["cbt-fio", "cbt-radosbench"]
    f, r = ph
    assert f["start_realtime_ns"] == 1700000010000 * 10**6
    assert f["end_realtime_ns"] == 1700000070000 * 10**6 and f["accuracy_s"] == 0.001
    assert f["labels"]["iodepth"] == "32" and f["labels"]["volumes"] == "1,2"
    assert f["labels"]["run_dir"] == "results/00000000/id-1a2b3c4d"
    assert r["start_realtime_ns"] == ns("2023-11-14T22:14:40+00:00")
    assert r["labels"]["readmode"] == "seq"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no CBT run found"):
        cbt.phases_from_archive(str(empty))
