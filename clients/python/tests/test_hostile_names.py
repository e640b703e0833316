"""Names chosen by whoever ran the benchmark are text in every report format: no formula in a
spreadsheet, no tag or markdown syntax in markdown, no mathtext or TeX in plots."""
from __future__ import annotations

import csv
import io

import pytest
from fakes import make_update

from iopulse._pb import iopulse_pb2 as pb
from iopulse.record import RunWriter, load
from iopulse.analysis.metrics import phase_rows
from iopulse.report.tables import csv_cell, csv_report, markdown_report

NAMES = ["x$\\frac{$y", "a $x$ b", "=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)",
         "<img src=x onerror=alert(1)>", "</script>", "<svg/onload=alert(1)>", "[a](javascript:x)"]


def _run(path: str) -> None:
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, pb.Info(version="t", hostname="node0").SerializeToString())
        seq = 0
        for i, name in enumerate(NAMES):
            for end in (False, True):
                seq += 1
                u = make_update(seq, devices=("sdb",))
                u.phases.add(name=name, id=2 * i + 1 + end, end=end,
                             begin_id=2 * i + 1 if end else 0, realtime_ns=u.end_realtime_ns,
                             monotonic_ns=u.end_monotonic_ns)
                w.write_update(0, u.SerializeToString())
            seq += 1
            w.write_update(0, make_update(seq, devices=("sdb",)).SerializeToString())
        w.close({"type": "end", "status": "ok"})


def test_csv_cells_never_start_a_formula(tmp_path):
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("@x") == "'@x" and csv_cell("-2") == "'-2"
    assert csv_cell(-2.5) == -2.5 and csv_cell("fill") == "fill"
    path = str(tmp_path / "r.iopulse")
    _run(path)
    run = load(path)
    rows, _ = phase_rows(run, idle=True)
    assert {r.phase.name for r in rows} >= set(NAMES)
    for rec in csv.reader(io.StringIO(csv_report(rows))):
        for cell in rec:
            assert cell[:1] not in ("=", "+", "@"), rec
            assert not (cell[:1] == "-" and not cell[1:2].isdigit()), rec


def test_markdown_carries_no_markup(tmp_path):
    path = str(tmp_path / "r.iopulse")
    _run(path)
    run = load(path)
    rows, trows = phase_rows(run, idle=True)
    md = markdown_report(run, rows, trows)
    for bad in ("<img", "</script", "<svg", "](javascript"):
        assert bad not in md, bad
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in md


def test_plots_draw_names_as_text(tmp_path):
    """Without matplotlib (a base install) plots say what to install; never a skip."""
    import importlib.util

    from iopulse.data import MissingExtra
    from iopulse.report.plots import plot_all

    path = str(tmp_path / "r.iopulse")
    _run(path)
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(MissingExtra):
            plot_all(load(path), str(tmp_path / "plots"), "svg")
        return
    paths = plot_all(load(path), str(tmp_path / "plots"), "svg")
    assert paths
    # before: ValueError from mathtext for x$\\frac{$y, and "a $x$ b" drawn as math


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown", "table"])
def test_damaged_run_is_stated_in_every_format(tmp_path, capsys, fmt):
    from iopulse.cli import main

    path = tmp_path / "r.iopulse"
    _run(str(path))
    data = path.read_bytes()
    half = tmp_path / "half.iopulse"
    half.write_bytes(data[:len(data) // 2])
    junk = tmp_path / "junk.iopulse"
    junk.write_bytes(data[:10] + bytes(range(256)) * 8)
    for p in (half, junk):
        rc = main(["report", str(p), "--format", fmt])
        err = capsys.readouterr().err
        assert rc == 0 and "incomplete" in err, (p.name, rc, err)


def test_import_refuses_impossible_times_and_odd_shapes(tmp_path, capsys):
    import json

    from iopulse.cli import main

    path = tmp_path / "r.iopulse"
    _run(str(path))
    cases = {
        "start.json": {"jobs": [{"jobname": "a", "job_start": 10**23, "job_runtime": 1000}]},
        "globals.json": {"global options": [], "jobs": [{"jobname": "a"}],
                         "timestamp": 1700000000},
        "jobs.json": {"jobs": [["not", "a", "job"]], "timestamp": 1700000000},
    }
    for name, doc in cases.items():
        (tmp_path / name).write_text(json.dumps(doc))
    (tmp_path / "deep.json").write_text('{"jobs": ' + "[" * 100000 + "]" * 100000 + "}")
    (tmp_path / "rados.txt").write_text(
        "hints = 1\nMaintaining 16 concurrent writes of 4194304 bytes to objects of size "
        "4194304 for up to 10 seconds or 0 objects\nTotal time run: 1e299\n"
        "Total writes made: 10\n")
    for name in [*cases, "deep.json", "rados.txt"]:
        rc = main(["phases", "import", str(path), str(tmp_path / name)])
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err and name in err, (name, rc, err)
    assert main(["phases", "list", str(path)]) == 0


_BOUNDED_LOAD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
from iopulse.record import load
run = load(sys.argv[1])
print(run.damage)
"""


def test_hostile_run_files_load_in_bounded_memory(tmp_path):
    """A host index of 50 million and a record length of 2^62 followed by 512 MiB of zeros:
    both reported as damage, each within 1.5 GiB of address space (before: 3.9 GB and 3.2 GB,
    then MemoryError)."""
    import gzip
    import json
    import os
    import subprocess
    import sys

    from iopulse.record.runfile import MAGIC, frame, varint

    hosts = tmp_path / "hosts.iopulse"
    with gzip.open(hosts, "wb") as f:
        f.write(MAGIC + frame(b"J", json.dumps({"type": "agent", "host": 50_000_000}).encode()))
    length = tmp_path / "length.iopulse"
    with gzip.open(length, "wb", compresslevel=1) as f:
        f.write(MAGIC + varint(1 << 62))
        zeros = bytes(1 << 20)
        for _ in range(512):
            f.write(zeros)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for path, want in ((hosts, "host index 50000000"), (length, "record length")):
        p = subprocess.run([sys.executable, "-c", _BOUNDED_LOAD, str(path)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and want in p.stdout, (path.name, p.stdout, p.stderr[-500:])


def test_damaged_records_are_damage_not_tracebacks(tmp_path, capsys):
    """A 1-byte Update record, a mark event without 'end', a phase whose start is not an
    integer: each ends the readable part with a damage message; report and phases list work."""
    from iopulse.cli import main
    from iopulse.record.runfile import frame
    import json

    good = tmp_path / "good.iopulse"
    _run(str(good))
    cases = {
        "u1": frame(b"U", b"\x01"),
        "mark": frame(b"J", json.dumps({"type": "mark", "host": 0, "name": "x", "id": 1,
                                        "realtime_ns": 1, "monotonic_ns": 1}).encode()),
        "phase": frame(b"J", json.dumps({"type": "phase", "name": "x", "start_realtime_ns": "a",
                                         "end_realtime_ns": 2}).encode()),
    }
    for name, rec in cases.items():
        path = tmp_path / f"{name}.iopulse"
        with RunWriter(str(path)) as w:
            w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"]})
            w._put(rec)         # as a damaged or forged file would hold it
            w.close({"type": "end", "status": "ok"})
        run = load(str(path))
        assert run.damage, name
        for argv in (["report", str(path), "--format", "csv"], ["phases", "list", str(path)]):
            assert main(argv) == 0, (name, argv)
        capsys.readouterr()
