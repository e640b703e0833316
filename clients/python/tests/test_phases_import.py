"""iopulse phases import: times outside the recording, duplicates and --replace, the edge
error's share of a phase and --trim-edges; the run file keeps what was withdrawn."""
from __future__ import annotations

import json

import pytest
from fakes import INTERVAL_NS, T0_REAL, make_update

from iopulse._pb import iopulse_pb2 as pb
from iopulse.cli import main
from iopulse.phases.importing import CLOCK_SLACK_S, ImportRefused, check, when
from iopulse.phases.model import Phase, imported_events
from iopulse.record import RunWriter, load

SECONDS = 60
MS = 1_000_000
T0_MS = T0_REAL // MS


def write_run(path: str, marked: str = "") -> None:
    """A 60 s recording of one host, 1 s intervals from T0_REAL; marked: a phase of that name
    marked live from 10 s to 20 s."""
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                      "created_realtime_ns": T0_REAL})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, pb.Info(version="t", hostname="node0").SerializeToString())
        for seq in range(1, SECONDS + 1):
            u = make_update(seq)
            if marked and seq in (10, 20):
                u.phases.add(name=marked, id=1 if seq == 10 else 2, end=seq == 20,
                             begin_id=1 if seq == 20 else 0, realtime_ns=u.end_realtime_ns,
                             monotonic_ns=u.end_monotonic_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end", "status": "ok", "realtime_ns": T0_REAL + SECONDS * INTERVAL_NS})


def fio_new(jobs: list[tuple[str, int, int]]) -> dict:
    """fio >= 3.36 JSON: (name, start ms after T0, run time ms) per job (1 ms accuracy)."""
    return {"fio version": "fio-3.37", "timestamp": T0_MS // 1000 + SECONDS,
            "jobs": [{"jobname": n, "groupid": i, "job_start": T0_MS + s, "job_runtime": d,
                      "job options": {"rw": "write"}} for i, (n, s, d) in enumerate(jobs)]}


def fio_old(end_ms: int, jobs: list[tuple[str, int]]) -> dict:
    """fio 3.33 JSON: the report's time and each stonewall group's run time (0.5 s accuracy for
    the last group, 0.5 s more per group after one)."""
    return {"fio version": "fio-3.33", "timestamp_ms": T0_MS + end_ms,
            "timestamp": (T0_MS + end_ms) // 1000,
            "jobs": [{"jobname": n, "groupid": i, "job_runtime": d, "elapsed": 1,
                      "job options": {"rw": "write"}} for i, (n, d) in enumerate(jobs)]}


@pytest.fixture
def run_path(tmp_path):
    path = str(tmp_path / "r.iopulse")
    write_run(path)
    return path


def put(tmp_path, name: str, doc: dict) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def imported(path: str) -> list[Phase]:
    return [p for p in load(path).phases() if not p.exact]


def test_another_runs_output_is_refused_naming_the_file_and_times(run_path, tmp_path, capsys):
    other = put(tmp_path, "other-run.json", fio_new([("seqwrite", -3_600_000, 20_000)]))
    assert main(["phases", "import", run_path, other]) == 2
    err = capsys.readouterr().err
    assert "other-run.json" in err and "seqwrite" in err and "before the recording" in err
    # the phase's and the recording's times, as dates a person reads
    assert when(T0_REAL - 3600 * 10**9) in err and when(T0_REAL) in err
    assert when(T0_REAL + SECONDS * INTERVAL_NS) in err
    assert imported(run_path) == []
    # partly outside: its counts would be partly missing
    late = put(tmp_path, "late.json", fio_new([("tail", 50_000, 20_000)]))
    assert main(["phases", "import", run_path, late]) == 2
    assert "partly outside" in capsys.readouterr().err
    assert imported(run_path) == []


def test_edges_within_the_accuracy_of_the_recording_are_taken(run_path, tmp_path):
    # fio >= 3.36: 1 ms accuracy, plus the clock slack between hosts
    slack_ms = int(CLOCK_SLACK_S * 1000)
    ok = put(tmp_path, "edge.json", fio_new([("first", -slack_ms, 5_000),
                                             ("last", SECONDS * 1000 - 5_000, 5_000 + slack_ms)]))
    assert main(["phases", "import", run_path, ok]) == 0
    assert sorted(p.name for p in imported(run_path)) == ["first", "last"]
    beyond = put(tmp_path, "beyond.json", fio_new([("early", -slack_ms - 10, 5_000)]))
    assert main(["phases", "import", run_path, beyond]) == 2


def test_importing_twice_is_refused_and_replace_imports_once(run_path, tmp_path, capsys):
    src = put(tmp_path, "fio.json", fio_new([("seqwrite", 5_000, 10_000),
                                             ("randwrite", 20_000, 10_000)]))
    assert main(["phases", "import", run_path, src]) == 0
    assert main(["phases", "import", run_path, src]) == 2
    err = capsys.readouterr().err
    assert "fio.json" in err and "already in the run" in err and "--replace" in err
    assert sorted(p.name for p in imported(run_path)) == ["randwrite", "seqwrite"]
    # a copy of the file is the same phases too
    copy = put(tmp_path, "copy.json", fio_new([("seqwrite", 5_100, 9_900)]))
    assert main(["phases", "import", run_path, copy]) == 2
    # --replace: the earlier import is withdrawn, this one added; each phase once
    assert main(["phases", "import", run_path, src, "--replace"]) == 0
    assert "2 phase(s) imported before are replaced" in capsys.readouterr().err
    got = imported(run_path)
    assert sorted(p.name for p in got) == ["randwrite", "seqwrite"]
    run = load(run_path)
    assert run.complete
    (w,) = [e for e in run.events if e["type"] == "withdraw"]
    assert sorted(x["name"] for x in w["phases"]) == ["randwrite", "seqwrite"]
    # the same phase with other labels, or at another time, is another phase
    other = fio_new([("seqwrite", 40_000, 10_000)])
    assert main(["phases", "import", run_path, put(tmp_path, "later.json", other)]) == 0
    assert sorted(p.name for p in imported(run_path)) == ["randwrite", "seqwrite", "seqwrite"]


def test_the_same_file_twice_in_one_import_is_refused(run_path, tmp_path, capsys):
    src = put(tmp_path, "fio.json", fio_new([("seqwrite", 5_000, 10_000)]))
    assert main(["phases", "import", run_path, src, src]) == 2
    assert "given twice" in capsys.readouterr().err
    assert imported(run_path) == []


def test_a_phase_marked_live_is_noted_not_refused(tmp_path, capsys):
    path = str(tmp_path / "m.iopulse")
    write_run(path, marked="seqwrite")
    src = put(tmp_path, "fio.json", fio_new([("seqwrite", 10_000, 10_000)]))
    assert main(["phases", "import", path, src]) == 0
    assert "marked live" in capsys.readouterr().err
    assert [(p.name, p.exact) for p in load(path).phases()] == [("seqwrite", True),
                                                                ("seqwrite", False)]


def test_edge_error_warned_and_trimmed(run_path, tmp_path, capsys):
    # fio 3.33: three stonewall groups of 3 s ending 40 s in: accuracy 1.5, 1.0, 0.5 s
    doc = fio_old(40_000, [("a", 3_000), ("b", 3_000), ("c", 3_000)])
    src = put(tmp_path, "old.json", doc)
    assert main(["phases", "import", run_path, src]) == 0
    err = capsys.readouterr().err
    for name, acc, share in (("a", 1.5, "100%"), ("b", 1, "67%"), ("c", 0.5, "33%")):
        assert f"phase '{name}' (3.00 s): each edge may be off by {acc:g} s, {share}" in err, err
    assert "--trim-edges" in err
    before = {p.name: p for p in imported(run_path)}
    assert main(["phases", "import", run_path, src, "--replace", "--trim-edges"]) == 0
    err = capsys.readouterr().err
    after = {p.name: p for p in imported(run_path)}
    assert set(after) == {"a", "b", "c"}
    # a: 3 s is not longer than twice 1.5 s: kept as it was, and said
    assert "'a' (3.000 s): trimming both edges by its edge error (1.5 s) would leave " \
        "0.000 s, less than the daemons' interval (1 s): kept whole" in err
    assert (after["a"].start_real_ns, after["a"].end_real_ns, after["a"].trimmed_s) == \
        (before["a"].start_real_ns, before["a"].end_real_ns, 0.0)
    for name, acc in (("b", 1.0), ("c", 0.5)):
        b, a = before[name], after[name]
        assert a.start_real_ns == b.start_real_ns + int(acc * 1e9)
        assert a.end_real_ns == b.end_real_ns - int(acc * 1e9)
        assert a.trimmed_s == acc and a.accuracy_s == acc
    assert main(["phases", "list", run_path]) == 0
    assert "trimmed 0.5s" in capsys.readouterr().out
    # a long phase with the same accuracy: nothing to say
    long = fio_old(59_000, [("long", 30_000)])
    assert main(["phases", "import", run_path, put(tmp_path, "long.json", long)]) == 0
    assert "long" not in capsys.readouterr().err.replace("long.json", "")


def test_trimming_never_leaves_a_phase_without_an_interval(run_path, tmp_path, capsys):
    """A 3.001 s phase with 1.5 s of error per edge was trimmed to 1 ms, which holds no
    interval: the report then left it out without a word. It is kept whole, and said."""
    doc = fio_old(40_000, [("a", 3_001), ("b", 3_000), ("c", 3_000)])
    src = put(tmp_path, "old.json", doc)
    before = {p.name: p for p in load(run_path).phases()}
    assert main(["phases", "import", run_path, src, "--trim-edges"]) == 0
    err = capsys.readouterr().err
    assert "'a' (3.001 s): trimming both edges by its edge error (1.5 s) would leave " \
        "0.001 s, less than the daemons' interval (1 s): kept whole, untrimmed" in err, err
    after = {p.name: p for p in imported(run_path)}
    assert after["a"].trimmed_s == 0.0 and after["a"].duration_s == pytest.approx(3.001)
    assert after["b"].trimmed_s == 1.0 and after["b"].duration_s == pytest.approx(1.0)
    assert not before
    assert main(["report", run_path, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    shown = {p["name"]: p for p in doc["phases"]}
    assert set(shown) == {"a", "b", "c"}
    assert not any("no_figures" in p for p in shown.values())
    assert {r["phase"] for r in doc["devices"]} >= {"a", "b", "c"}


def test_a_phase_without_an_interval_is_listed_with_why(run_path, tmp_path, capsys):
    """Imported phases shorter than an interval (and a trim from older iopulse, 1 ms): the
    report lists each with why it has no figures, in every format."""
    src = put(tmp_path, "new.json", fio_new([("short", 10_100, 300), ("long", 20_000, 5_000)]))
    assert main(["phases", "import", run_path, src]) == 0
    capsys.readouterr()
    assert main(["report", run_path, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    shown = {p["name"]: p for p in doc["phases"]}
    assert shown["short"]["no_figures"] == \
        "no figures: no interval of the daemon lies mostly inside its 0.3 s"
    assert "no_figures" not in shown["long"]
    assert main(["report", run_path, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "no figures: no interval of the daemon lies mostly inside its 0.3 s" in md
    assert main(["report", run_path, "--phase", "long", "--format", "markdown"]) == 0
    assert "short" not in capsys.readouterr().out


def test_phases_run_alone_lists_them(run_path, tmp_path, capsys):
    """`iopulse phases RUN` was a usage error (no action): it lists, as `phases list RUN`."""
    src = put(tmp_path, "new.json", fio_new([("seqwrite", 10_000, 5_000)]))
    assert main(["phases", "import", run_path, src]) == 0
    capsys.readouterr()
    assert main(["phases", "list", run_path]) == 0
    listed = capsys.readouterr().out
    assert "seqwrite" in listed
    assert main(["phases", run_path]) == 0
    assert capsys.readouterr().out == listed
    assert main(["phases", run_path, src]) == 2
    assert "is not an action: list or import" in capsys.readouterr().err
    assert main(["phases", "import"]) == 2
    assert "name the RUN" in capsys.readouterr().err


def test_withdrawals_apply_to_what_came_before_them():
    ph = {"type": "phase", "name": "x", "labels": {"a": "1"}, "start_realtime_ns": 1,
          "end_realtime_ns": 2}
    w = {"type": "withdraw", "phases": [{"name": "x", "labels": {"a": "1"},
                                         "start_realtime_ns": 1, "end_realtime_ns": 2}]}
    assert imported_events([ph, w]) == []
    assert imported_events([ph, w, dict(ph)]) == [ph]
    other = dict(ph, labels={"a": "2"})
    assert imported_events([ph, other, w]) == [other]


def test_check_is_plain_data():
    ev = {"name": "x", "labels": {}, "accuracy_s": 0.001, "start_realtime_ns": 10 * 10**9,
          "end_realtime_ns": 20 * 10**9}
    assert check([ev], [], 0, 30 * 10**9).events == [ev]
    with pytest.raises(ImportRefused, match="after the recording"):
        check([dict(ev, start_realtime_ns=40 * 10**9, end_realtime_ns=50 * 10**9)], [], 0,
              30 * 10**9)
