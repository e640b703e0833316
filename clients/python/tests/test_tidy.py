"""Tidy data: phase labels as typed columns, the device's class in the block stack, integer
counts, one record per phase x host x device x op, a phase's merged histogram on request, and
a core that imports without pandas."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from workload import K, truth, workload, write_run

from iopulse.data import Frames, phase_records
from iopulse.histogram import Histogram
from iopulse.model import DeviceInfo
from iopulse.record import load as load_run
from iopulse.analysis.aggregate import phase_histogram
from iopulse.analysis.labels import LabelColumns, device_class, parse_size


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    wl = workload()
    path = str(tmp_path_factory.mktemp("tidy") / "run.iopulse")
    return write_run(path, wl), truth(wl), wl


@pytest.mark.parametrize("text, want", [("4k", 4096), ("128K", 131072), ("1m", 1 << 20),
                                        ("4KiB", 4096), ("1.5M", 1572864), ("512", 512),
                                        ("4k-64k", None), ("4k,8k", None), ("big", None)])
def test_sizes_as_fio_reads_them(text, want):
    assert parse_size(text) == want


def test_labels_become_typed_columns():
    lc = LabelColumns([{"bs": "128k", "iodepth": "16", "rw": "randread", "device": "x"},
                       {"bs": "4096", "iodepth": "1"}, {"command": "fio jobs.fio"}],
                      taken=["phase", "device", "bs_bytes"])
    # a label named like a column of the table keeps its own column; so does NAME_bytes
    assert lc.columns == ["bs", "label_bs_bytes", "command", "label_device", "iodepth", "rw"]
    bs_bytes = "label_bs_bytes"
    assert lc.row({"bs": "128k", "iodepth": "16", "rw": "randread", "device": "x"}) == {
        "bs": "128k", bs_bytes: 131072, "command": None, "iodepth": 16,
        "label_device": "x", "rw": "randread"}
    # a label whose values are all integers is an int column; one phase without it: None
    assert lc.row({"bs": "4096", "iodepth": "1"})["iodepth"] == 1
    assert lc.row({"bs": "4096"})[bs_bytes] == 4096
    assert lc.row({"command": "fio jobs.fio"})["iodepth"] is None


def test_device_classes():
    def info(name, **kw):
        return DeviceInfo(name, 8, 0, "", False, kw.pop("dm_name", None), kw.pop("slaves", []),
                          None, None, kw.pop("partition", False), True, **kw)
    assert device_class("dm-0", info("dm-0", dm_name="vg-lv", slaves=["sdb"])) == "stacked"
    assert device_class("md0", info("md0", disks=["sdb", "sdc"])) == "stacked"
    assert device_class("sdb", info("sdb", holders=["dm-0"])) == "member"
    assert device_class("loop0", info("loop0")) == "loop"
    assert device_class("sda1", info("sda1", partition=True)) == "partition"
    assert device_class("nvme0n1", info("nvme0n1")) == "disk"
    assert device_class("sdx", None) == ""


def test_one_record_per_phase_host_device_op(recorded):
    path, want, _ = recorded
    dev, thr = phase_records(load_run(path))
    keys = [(r["phase"], r["host"], r["device"], r["op"]) for r in dev]
    assert len(keys) == len(set(keys))
    assert {r["op"] for r in dev} == {"read", "write", "discard", "flush", "all"}
    for r in dev:
        t = want[(r["phase"], r["device"], r["op"])]
        assert r["ios"] == t.ios and type(r["ios"]) is int
        assert r["iodepth"] == int(dict(randrw=16, seqread=1)[r["phase"]])
        assert r["bs"] in ("4k", "128k") and r["bs_bytes"] in (4096, 131072)
        assert r["device_class"] == {"sdb": "member", "vda": "disk", "loop0": "loop"}[
            r["device"]]
        # the device's own figures are on its 'all' record only, counts as ints
        if r["op"] == "all":
            assert type(r["flushes"]) is int and type(r["seeks"]) is int
            assert r["flushes"] == want[(r["phase"], r["device"], "flush")].ios
        else:
            assert r["flushes"] is None and r["seq_pct"] is None
    assert thr and all(type(t["calls"]) is int and t["calls_per_s"] > 0 for t in thr)
    (fio,) = [t for t in thr if t["phase"] == "randrw"]
    assert (fio["fdatasync"], fio["calls"], fio["latency_mean_ns"]) == (12, 12, 250_000)
    assert fio["calls_per_s"] == pytest.approx(12 / 4.0)


def test_merged_histogram_of_a_phase(recorded):
    path, want, _ = recorded
    run = load_run(path)
    for op in ("read", "write", "all"):
        t = want[("randrw", "sdb", op)]
        h = phase_histogram(run, "randrw", None, "sdb", op, "total_ns")
        assert isinstance(h, Histogram)
        assert h == Histogram.from_values(K, t.total)
        assert h.percentile(99.9) == Histogram.from_values(K, t.total).percentile(99.9)
    q = phase_histogram(run, "randrw", "node1", "sdb", "read", "queue_wait_ns")
    assert q == Histogram.from_values(K, want[("randrw", "sdb", "read")].qwait)
    assert phase_histogram(run, "seqread", None, "sdb", "write").count == 0
    seek = phase_histogram(run, "seqread", None, "sdb", "all", "seek_distance_sectors")
    assert seek.count == 1200
    for bad, msg in ((("nope", None, "sdb"), "no phase named 'nope'"),
                     (("randrw", "other", "sdb"), "no host 'other'"),
                     (("randrw", None, "sdz"), "no device 'sdz'"),
                     (("randrw", None, "sdb", "trim"), "unknown op"),
                     (("randrw", None, "sdb", "read", "iops"), "unknown metric"),
                     (("randrw", None, "sdb", "read", "seek_distance_sectors"), "per device")):
        with pytest.raises(ValueError, match=msg):
            phase_histogram(run, *bad)
    # the Phase itself, for a name several phases share
    p = [x for x in run.phases() if x.name == "seqread"][0]
    assert phase_histogram(run, p, None, "sdb", "read").count == 1200
    assert Frames(None, None, None, run).histogram("seqread", None, "sdb", "read").count == 1200
    # the run's own accessor (the Run.histogram) is the same merge
    t = want[("randrw", "sdb", "read")]
    assert run.histogram("randrw", None, "sdb", "read") == Histogram.from_values(K, t.total)
    assert run.histogram("randrw", "node1", "sdb", "read", "queue_wait_ns") == \
        Histogram.from_values(K, t.qwait)


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                    reason="the DataFrame types need pandas; MissingExtra is tested elsewhere")
def test_dataframes_group_by_labels_with_integer_counts(recorded):
    import iopulse

    path, want, _ = recorded
    f = iopulse.load(path)
    ph = f.phases
    assert str(ph["ios"].dtype) == "int64" and str(ph["bytes"].dtype) == "int64"
    assert str(ph["flushes"].dtype) == "Int64"          # a count, on the 'all' rows only
    assert str(ph["iodepth"].dtype) == "int64" and str(ph["total_p99_ns"].dtype) == "Int64"
    assert str(ph["flushes_per_s"].dtype) == "float64"
    # the README's example: the device under test, reads and writes apart, per iodepth
    dut = ph[(ph.device == "sdb") & ph.op.isin(["read", "write"]) & ph.iodepth.notna()]
    t = dut.groupby(["iodepth", "op"])[["ios", "seconds"]].sum()
    t["iops"] = t.ios / t.seconds
    assert t.iops[(16, "read")] == pytest.approx(want[("randrw", "sdb", "read")].iops())
    assert t.iops[(16, "write")] == pytest.approx(want[("randrw", "sdb", "write")].iops())
    assert t.iops[(1, "read")] == pytest.approx(want[("seqread", "sdb", "read")].iops())
    assert list(ph.groupby("iodepth").groups) == [1, 16]
    h = f.histogram("randrw", None, "sdb", "read", "total_ns")
    assert h.count == want[("randrw", "sdb", "read")].ios
    assert str(f.intervals["ios"].dtype) == "int64"
    assert str(f.threads["calls"].dtype) == "int64"


def test_the_core_imports_without_pandas(recorded, tmp_path):
    """With pandas missing, the tables still come as records, and load() says what to
    install."""
    path = recorded[0]
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pandas", "numpy", "matplotlib"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import iopulse
from iopulse.data import phase_records, interval_records, MissingExtra
from iopulse.record import load
run = load({path!r})
dev, thr = phase_records(run)
assert dev and list(interval_records(run))
try:
    iopulse.load({path!r})
except MissingExtra as e:
    print("missing:", e)
assert "pandas" not in sys.modules
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "missing:" in p.stdout and "iopulse[report]" in p.stdout
