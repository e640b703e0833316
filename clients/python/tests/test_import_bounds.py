"""phases import in linear time, with names and labels held to what a mark may carry, and the
CBT reader bounded, whatever the files say."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_phases_import import SECONDS, T0_MS, imported, put, write_run

from iopulse.cli import main
from iopulse.phases import cbt, importing
from iopulse.phases.model import LABELS_MAX, NAME_MAX, VALUE_MAX, Phase, bounded_text
from iopulse.record import load

JOBS = 5000


def fio(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"fio version": "fio-3.37", "timestamp": T0_MS // 1000 + SECONDS, "jobs": jobs}


def counted(monkeypatch: pytest.MonkeyPatch, name: str, limit: int) -> list[int]:
    """Counts the calls of importing.<name>; past limit the import is quadratic: fail at once
    rather than run for minutes (5,000 jobs took 88 s before)."""
    calls = [0]
    real = getattr(importing, name)

    def wrapper(*a: Any) -> Any:
        calls[0] += 1
        assert calls[0] <= limit, f"{name} called more than {limit:,} times for {JOBS:,} jobs"
        return real(*a)
    monkeypatch.setattr(importing, name, wrapper)
    return calls


def test_many_jobs_import_in_linear_time(tmp_path: Path, capsys: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 jobs of distinct names (before: every pair compared), then 5,000 of one name and
    labels one after another, imported, then imported again with --replace over the first."""
    run = str(tmp_path / "r.iopulse")
    write_run(run)
    keys = counted(monkeypatch, "_key", 2 * JOBS)
    shares = counted(monkeypatch, "_overlap_share", 4 * JOBS)
    distinct = put(tmp_path, "distinct.json", fio([
        {"jobname": f"job{i}", "groupid": i, "job_start": T0_MS + 1000 + i % 50 * 1000,
         "job_runtime": 500, "job options": {"rw": "write"}} for i in range(JOBS)]))
    assert main(["phases", "import", run, distinct]) == 0, capsys.readouterr().err
    keys[0] = shares[0] = 0
    same = put(tmp_path, "same.json", fio([
        {"jobname": "job", "groupid": 0, "job_start": T0_MS + 1000 + 10 * i, "job_runtime": 5}
        for i in range(JOBS)]))
    assert main(["phases", "import", run, same]) == 0, capsys.readouterr().err
    keys[0] = shares[0] = 0
    assert main(["phases", "import", run, same, "--replace"]) == 0, capsys.readouterr().err
    assert f"{JOBS} phase(s) imported before are replaced" in capsys.readouterr().err
    assert len(imported(run)) == 2 * JOBS


def test_overlaps_are_found_by_the_sweep() -> None:
    """The sweep finds what comparing every pair found: a duplicate inside an import whatever
    its order, one of the run's phases overlapping by more than half, and not one by less."""
    ev = [{"type": "phase", "name": "a", "labels": {}, "start_realtime_ns": s * 10**9,
           "end_realtime_ns": t * 10**9} for s, t in ((10, 20), (30, 31), (14, 19))]
    with pytest.raises(importing.ImportRefused, match=r"'a' .* is given twice"):
        importing.check(ev, [], 0, 100 * 10**9)
    old = [Phase("a", exact=False, start_real_ns=18 * 10**9, end_real_ns=25 * 10**9,
                 source="x"),
           Phase("a", exact=False, start_real_ns=29 * 10**9, end_real_ns=31 * 10**9,
                 source="y")]
    with pytest.raises(importing.ImportRefused, match=r"already in the run \(imported from y"):
        importing.check(ev[:2], old, 0, 100 * 10**9)
    res = importing.check(ev[:2], old, 0, 100 * 10**9, replace=True)
    assert [w["start_realtime_ns"] for w in res.withdraw] == [29 * 10**9]


def test_the_sweep_finds_every_pair_comparing_all_finds() -> None:
    import random

    rnd = random.Random(5)
    for _ in range(200):
        spans = [(s, s + rnd.choice((0, 1, 2, 5, 20))) for s in
                 (rnd.randrange(50) for _ in range(rnd.randrange(1, 12)))]
        olds = [(s, s + rnd.choice((0, 1, 3, 10))) for s in
                (rnd.randrange(50) for _ in range(rnd.randrange(0, 6)))]
        ev = [{"start_realtime_ns": s, "end_realtime_ns": t} for s, t in spans]
        old = [Phase("a", exact=False, start_real_ns=s, end_real_ns=t) for s, t in olds]
        got = {(i, id(p)) for i, p in importing._overlaps(ev, list(range(len(ev))), old,
                                                          twice=False)}
        want = {(i, id(p)) for i, (s, t) in enumerate(spans) for p in old
                if importing._overlap_share(s, t, p.start_real_ns, p.end_real_ns) > 0.5}
        assert got == want, (spans, olds)
        # with twice: an event is a duplicate exactly when it overlaps an earlier kept one
        dup = {i for i, p in importing._overlaps(ev, list(range(len(ev))), [], twice=True)}
        assert bool(dup) == any(importing._overlap_share(*a, *b) > 0.5
                                for n, a in enumerate(spans) for b in spans[:n]), spans


def test_names_and_labels_are_held_to_a_marks(tmp_path: Path, capsys: Any) -> None:
    """A job name of 5 MB (before: imported whole, then report and plot ran for minutes), one
    with a line break and an escape, an empty one, a label value of 5,000 characters: cut
    or escaped with a notice naming the job; the file keeps what a mark may carry."""
    run = str(tmp_path / "r.iopulse")
    write_run(run)
    huge = "n" * 5_000_000
    src = put(tmp_path, "names.json", fio([
        {"jobname": huge, "groupid": 0, "job_start": T0_MS + 1000, "job_runtime": 9000,
         "job options": {"rw": "w" * 5000}},
        {"jobname": "a\nb\x1b[31m", "groupid": 1, "job_start": T0_MS + 11000,
         "job_runtime": 9000},
        {"jobname": "", "groupid": 2, "job_start": T0_MS + 21000, "job_runtime": 9000}]))
    assert main(["phases", "import", run, src]) == 0
    err = capsys.readouterr().err
    assert "phase 1 of this import (fio-json 'nnnn" in err
    assert "its name of 5,000,000 characters cut to 128" in err
    assert "label 'rw': its value of 5,000 characters cut to 1024" in err
    assert "phase 2 of this import (fio-json 'a\\nb\\x1b[31m'): control characters in its " \
           "name written as escapes" in err
    assert "phase 3 of this import (fio-json ''): its empty name made 'unnamed'" in err
    names = sorted(p.name for p in imported(run))
    assert names == ["a\\nb\\x1b[31m", "n" * 127 + "\u2026", "unnamed"]
    for p in imported(run):
        assert all(len(k) <= NAME_MAX and len(v) <= VALUE_MAX for k, v in p.labels.items())
    assert main(["report", run, "--format", "csv"]) == 0
    assert main(["phases", "import", run, src]) == 2        # the capped names match again
    assert "already in the run" in capsys.readouterr().err


def test_bound_names() -> None:
    events = [{"name": "x", "labels": {f"k{i:02d}": "v" for i in range(40)}},
              {"name": "ok", "labels": {"": "v", "a": "b"}}]
    notes = importing.bound_names(events)
    assert len(events[0]["labels"]) == LABELS_MAX and "k31" in events[0]["labels"]
    assert "8 label(s) past 32 left out (from 'k32' on, in key order)" in notes[0]
    assert events[1]["labels"] == {"a": "b"} and "empty key left out" in notes[1]
    many = [{"name": "y" * 200, "labels": {}} for _ in range(9)]
    notes = importing.bound_names(many)
    assert len(notes) == 6 and notes[-1].startswith("and 4 more phase(s)")
    assert bounded_text("ok", 5) == "ok" and bounded_text("abcdef", 5) == "abcd\u2026"
    assert bounded_text("a\tb", 128) == "a\\tb"


def _archive(tmp_path: Path, config: str) -> Path:
    run = tmp_path / "archive" / "results" / "00000000" / "id-1"
    run.mkdir(parents=True)
    (run / "benchmark_config.yaml").write_text(config)
    return run


def test_cbt_fio_search_is_linear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 MB of lines that each open fio's JSON and a list never closed (before: each line
    parsed to the end of the file, 27 s; 8 MB 116 s): one parse."""
    pytest.importorskip("yaml")
    run = _archive(tmp_path, "cluster:\n  benchmark: librbdfio\n")
    line = '{"fio version":[' + "0," * 4000 + "\n"      # 250 lines: 500 levels deep
    (run / "output.0.host").write_text(line * (2_000_000 // len(line)))
    parses = []
    real = json.JSONDecoder.raw_decode

    def count(self: Any, s: str, idx: int = 0) -> Any:
        parses.append(idx)
        return real(self, s, idx)
    monkeypatch.setattr(json.JSONDecoder, "raw_decode", count)
    (ph,) = cbt.phases_from_archive(str(tmp_path / "archive"))
    assert ph["source"] == "cbt (file times)" and len(parses) == 1, len(parses)
    # nested deeper than Python's recursion limit: no parse is tried after the first
    (run / "output.0.host").write_text('{"fio version":[\n' * 5000)
    parses.clear()
    cbt.phases_from_archive(str(tmp_path / "archive"))
    assert len(parses) == 1


def test_cbt_config_and_names_are_bounded(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    _archive(tmp_path, "cluster:\n  benchmark: " + "b" * 300 + "\n  op: \"a\\nb\"\n")
    (ph,) = cbt.phases_from_archive(str(tmp_path / "archive"))
    assert ph["name"] == "cbt-" + "b" * 123 + "\u2026" and ph["labels"]["op"] == "a\\nb"
    big = _archive(tmp_path / "2", "cluster:\n  x: [" + "1," * 600_000 + "1]\n")
    with pytest.raises(ValueError, match=f"{big}/benchmark_config.yaml: more than 1024 KiB"):
        cbt.phases_from_archive(str(tmp_path / "2" / "archive"))
