"""One set of numbers: the report (table rows, JSON, CSV), compare (a run's value), export (CSV,
JSON lines) and iopulse.load() give every figure of a phase as the workload that made the
recording defines it: its IO count over its seconds, percentiles of all its IOs, reads and
writes apart and together."""
from __future__ import annotations

import csv
import importlib.util
import json

import pytest
from workload import K, exact_percentile, truth, workload, write_run

from iopulse.cli import main
from iopulse.analysis.compare import compare
from iopulse.data import MissingExtra, interval_records, load, phase_records
from iopulse.histogram import Histogram
from iopulse.record import load as load_run
from iopulse.analysis.metrics import phase_rows

ERR = 2.0 ** -(K + 1)          # the layout's relative error for a bucket's midpoint


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    wl = workload()
    path = str(tmp_path_factory.mktemp("figures") / "run.iopulse")
    return write_run(path, wl), truth(wl)


def p99(values: list[int]) -> int:
    """p99 of every IO of the phase, from their buckets merged; within the layout's error of
    the exact p99 of the values put in."""
    got = Histogram.from_values(K, values).percentile(99)
    exact = exact_percentile(values, 99)
    assert abs(got - exact) <= ERR * exact + 1
    return got


def test_phase_figures_are_counts_over_seconds_and_merged_percentiles(recorded):
    path, want = recorded
    rows, _ = phase_rows(load_run(path))
    by = {(r.phase.name, r.device): r for r in rows}
    assert set(by) == {(p, d) for p in ("randrw", "seqread") for d in ("sdb", "vda", "loop0")
                       if want[(p, d, "all")].ios or want[(p, d, "flush")].ios}
    for (phase, dev), r in by.items():
        for op in ("read", "write", "discard", "flush", "all"):
            t = want[(phase, dev, op)]
            f = r.ops[op]
            assert r.seconds == pytest.approx(t.seconds)
            assert type(f["ios"]) is int and f["ios"] == t.ios, (phase, dev, op)
            assert f["ios_per_s"] == pytest.approx(t.ios / t.seconds)
            if op == "flush":
                continue
            assert type(f["bytes"]) is int and f["bytes"] == t.bytes
            assert f["mb_per_s"] == pytest.approx(t.bytes / 1e6 / t.seconds)
            assert f["mib_per_s"] == pytest.approx(t.bytes / 2**20 / t.seconds)
            if t.ios:
                assert f["total_p99_ns"] == p99(t.total)
                assert f["qwait_p99_ns"] == p99(t.qwait)
                assert f["svc_p50_ns"] == Histogram.from_values(K, t.svc).percentile(50)
                assert f["total_p999_ns"] == Histogram.from_values(K, t.total).percentile(99.9)
                assert f["total_mean_ns"] == pytest.approx(sum(t.total) / t.ios, rel=ERR)
                assert f["total_max_ns"] >= max(t.total) >= f["total_p999_ns"] / (1 + ERR)
            else:
                assert f["total_p99_ns"] is None and f["total_mean_ns"] is None
        # the device's one-line form: all ops together, reads and writes apart
        v = r.values
        assert v["ios_per_s"] == r.ops["all"]["ios_per_s"]
        assert v["read_ios_per_s"] == r.ops["read"]["ios_per_s"]
        assert v["write_total_p99_ns"] == r.ops["write"]["total_p99_ns"]
        assert (v["reads"], v["writes"]) == (want[(phase, dev, "read")].ios,
                                             want[(phase, dev, "write")].ios)
        assert (v["read_bytes"], v["write_bytes"]) == (want[(phase, dev, "read")].bytes,
                                                       want[(phase, dev, "write")].bytes)
        assert type(v["flushes"]) is int and v["flushes"] == want[(phase, dev, "flush")].ios
        assert v["flushes_per_s"] == pytest.approx(v["flushes"] / r.seconds)
    # the workload was made so that averaging intervals would be far off: the test can tell
    t = want[("randrw", "sdb", "all")]
    assert sum(t.interval_rates) / len(t.interval_rates) > 1.3 * t.iops()
    assert abs(sum(t.interval_p99) / len(t.interval_p99) - p99(t.total)) > 0.15 * p99(t.total)
    sdb = by[("randrw", "sdb")].values
    assert sdb["seq_pct"] == pytest.approx(100 * (100 + 120 + 200) / (1300 + 2100 + 2100))
    assert sdb["seek_p50_sectors"] == Histogram.from_values(K, [2048]).percentile(50)
    assert sdb["preflush_p99_ns"] == Histogram.from_values(K, [700_000]).percentile(99)


def _csv(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _num(x: object) -> float:
    """A figure as a float: NaN for a missing one (None, an empty CSV cell, pandas' NA)."""
    if x is None or (isinstance(x, str) and not x):
        return float("nan")
    try:
        return float(x)  # type: ignore[arg-type]
    except TypeError:
        return float("nan")


KEYS = ("ios_per_s", "mb_per_s", "mib_per_s", "total_p99_ns", "qwait_p99_ns", "svc_p50_ns",
        "total_mean_ns")


def test_report_compare_export_and_load_agree(recorded, tmp_path, capsys):
    """The same figure of the same phase, device and op from every way out, equal to the
    workload's."""
    path, want = recorded
    run = load_run(path)
    rows, _ = phase_rows(run)
    report = {(r.phase.name, r.device): r for r in rows}

    def check(got: dict, phase: str, dev: str, op: str, where: str) -> None:
        t = want[(phase, dev, op)]
        assert _num(got["ios_per_s"]) == pytest.approx(t.iops()), where
        assert _num(got["mib_per_s"]) == pytest.approx(t.bytes / 2**20 / t.seconds), where
        assert int(_num(got["ios"])) == t.ios, where
        for k in KEYS:
            assert _num(got[k]) == pytest.approx(_num(report[(phase, dev)].ops[op][k]),
                                                 nan_ok=True), (where, k)

    combos = [(p, d, op) for (p, d) in report for op in ("read", "write", "all")]
    # the report: its rows, and its JSON and CSV
    assert main(["report", path, "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    assert main(["report", path, "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    rcsv = {(x["phase"], x["device"]): x for x in _csv(str(tmp_path / "r.csv"))}
    for d in doc["devices"]:
        key = (d["phase"], d["device"])
        check(d, *key, "all", "report json")
        for op in ("read", "write"):
            check({k[len(op) + 1:]: v for k, v in d.items() if k.startswith(op + "_")}
                  | {"ios": d[op + "s"]}, *key, op, f"report json {op}")
        assert _num(rcsv[key]["ios_per_s"]) == pytest.approx(want[(*key, "all")].iops())
        assert _num(rcsv[key]["total_p99_ns"]) == _num(d["total_p99_ns"])
    # compare: with one run a side, the value shown for a run is the report's
    for c in compare([run], [run]):
        if c.metric == "iops":
            assert c.base == c.other == [pytest.approx(want[(c.phase, c.device, "all")].iops())]
        if c.metric == "total_p99":
            assert c.base == [report[(c.phase, c.device)].values["total_p99_ns"]]
    # export, CSV and JSON lines: one record per phase x host x device x op
    for fmt in ("csv", "jsonl"):
        out = tmp_path / fmt
        assert main(["export", path, "--format", fmt, "-o", str(out)]) == 0
        if fmt == "csv":
            recs = _csv(str(out / "phases.csv"))
        else:
            recs = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
        by = {(x["phase"], x["device"], x["op"]): x for x in recs}
        assert len(by) == len(recs) == 5 * len(report)
        for p, d, op in combos:
            check(by[(p, d, op)], p, d, op, f"export {fmt}")
    capsys.readouterr()
    # iopulse.load()
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(MissingExtra):
            load(path)
        return
    f = load(path)
    ph = f.phases
    for p, d, op in combos:
        sel = ph[(ph.phase == p) & (ph.device == d) & (ph.op == op)]
        assert len(sel) == 1
        check(sel.iloc[0].to_dict(), p, d, op, "load()")


def test_intervals_add_up_to_the_phase(recorded):
    """The intervals table: each interval's rate is its own count over its own length; its
    counts add up to the phase's."""
    path, want = recorded
    run = load_run(path)
    ivs = list(interval_records(run))
    dev, _ = phase_records(run)
    for (phase, d, op), t in want.items():
        mine = [r for r in ivs if r["phase"] == phase and r["device"] == d and r["op"] == op]
        assert sum(r["ios"] for r in mine) == t.ios, (phase, d, op)
        for r in mine:
            assert r["ios_per_s"] == pytest.approx(r["ios"] / r["seconds"])
        if op != "flush":
            assert sum(r["bytes"] for r in mine) == t.bytes
    assert {r["phase"] for r in ivs} == {"", "randrw", "seqread"}
    # every record of a table has the same keys (CSV needs that)
    for table in (ivs, dev):
        assert len({tuple(r) for r in table}) == 1


def test_missing_or_broken_pyarrow_names_the_one_that_works_beside_debian(monkeypatch):
    """Parquet export without pyarrow says how to get one (pip's in a venv, pyarrow<26 beside
    Debian 12's NumPy 1.24); a pyarrow that is installed but does not import (a NumPy 2 build
    beside NumPy 1.24) is named with its error, not called missing."""
    import importlib
    import importlib.util

    from iopulse.data import require

    real_import, real_find = importlib.import_module, importlib.util.find_spec

    def pyarrow_fails(error: str, installed: bool) -> str:
        """require()'s message where importing pyarrow raises ImportError(error) and
        find_spec finds it (installed) or not."""
        def fake_import(name, *a, **kw):
            if name == "pyarrow":
                raise ImportError(error)
            return real_import(name, *a, **kw)

        monkeypatch.setattr(importlib, "import_module", fake_import)
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
            (object() if installed else None) if name == "pyarrow" else real_find(name, *a)))
        with pytest.raises(MissingExtra) as e:
            require("pyarrow", "--format parquet")
        return str(e.value)

    msg = pyarrow_fails("No module named 'pyarrow'", installed=False)
    assert msg.startswith("--format parquet needs pyarrow: pip install 'iopulse[report]'") \
        and "pip install 'pyarrow<26'" in msg and msg.endswith("'pyarrow' is not installed"), msg
    msg = pyarrow_fails("pyarrow requires NumPy 2.0 or newer, found 1.24.2", installed=True)
    assert msg.endswith("'pyarrow' is installed but does not import: pyarrow "
                        "requires NumPy 2.0 or newer, found 1.24.2"), msg
