"""The phase tree of a recorded run from its marks and the recorder's notes on them: the parent
record asked for wins over the one a daemon from before MarkPhaseRequest.parent_id chose (the
innermost open phase), and an end the recorder inferred is shown as such."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iopulse.model import PhaseMark
from iopulse.phases.model import phases_of_run
from iopulse.record.broker import ENDED_BY_NEXT
from iopulse.report.html import grid_table
from iopulse.report.tables import markdown_grid, phase_note
from iopulse.textfit import Col, Grid

S = 1_000_000_000


@dataclass
class _Window:
    start_monotonic_ns: int
    end_monotonic_ns: int
    start_realtime_ns: int
    end_realtime_ns: int


@dataclass
class _Host:
    index: int
    marks: list[PhaseMark]
    windows: list[_Window]


@dataclass
class _Run:
    events: list[dict[str, Any]] = field(default_factory=list)
    hosts: list[_Host] = field(default_factory=list)


def _begin(name: str, t: int, i: int, parent: int) -> PhaseMark:
    return PhaseMark(name, {}, False, t * S, t * S, i, 0, parent, "rec")


def _end(name: str, t: int, i: int, begin: int) -> PhaseMark:
    return PhaseMark(name, {}, True, t * S, t * S, i, begin, 0, "rec")


def _run() -> _Run:
    """fio around group1 of jobs a and b, as a daemon without parent_id nests them (b in a),
    then job c; a died: its end came when c's group began."""
    marks = [_begin("fio", 1, 1, 0), _begin("group1", 2, 2, 1), _begin("a", 2, 3, 2),
             _begin("b", 2, 4, 3), _end("b", 5, 5, 4), _end("a", 6, 6, 3),
             _end("group1", 6, 7, 2), _begin("c", 6, 8, 1), _end("c", 9, 9, 8),
             _end("fio", 10, 10, 1)]
    windows = [_Window(t * S, (t + 1) * S, t * S, (t + 1) * S) for t in range(1, 10)]
    run = _Run(hosts=[_Host(0, marks, windows)])
    for m in marks:
        ev: dict[str, Any] = {"type": "mark", "host": 0, **m.to_dict()}
        if m.name in ("a", "b") and not m.end:
            ev["parent_asked"] = 2
        if m.name in ("a", "group1") and m.end:
            ev["inferred"] = ENDED_BY_NEXT
        run.events.append(ev)
    return run


def test_the_parent_record_asked_for_wins():
    by_name = {p.name: p for p in phases_of_run(_run())}
    assert by_name["a"].parent == "group1" and by_name["a"].depth == 2
    assert by_name["b"].parent == "group1" and by_name["b"].depth == 2
    assert by_name["c"].parent == "fio" and by_name["c"].depth == 1


def test_without_a_note_the_daemons_parent_stands():
    run = _run()
    for ev in run.events:
        ev.pop("parent_asked", None)
    by_name = {p.name: p for p in phases_of_run(run)}
    assert by_name["b"].parent == "a" and by_name["b"].depth == 3


def test_an_inferred_end_is_said():
    by_name = {p.name: p for p in phases_of_run(_run())}
    a = by_name["a"]
    assert a.end_inferred == ENDED_BY_NEXT and a.duration_s == 4
    assert a.to_dict()["end_inferred"] == ENDED_BY_NEXT
    assert "no end mark: ended when the next stonewall group began" in phase_note(a)
    assert by_name["b"].end_inferred == "" and phase_note(by_name["b"]) == ""


def test_a_forged_note_is_ignored_or_bounded():
    run = _run()
    for ev in run.events:
        if "parent_asked" in ev:
            ev["parent_asked"] = "2"
        if "inferred" in ev:
            ev["inferred"] = "\x1b[2J" + "x" * 5000
    by_name = {p.name: p for p in phases_of_run(run)}
    assert by_name["b"].parent == "a"
    why = by_name["a"].end_inferred
    assert "\x1b" not in why and len(why) <= 1024


def test_the_tree_survives_markdown_and_html():
    """The phases table indents a phase two spaces per level; rendered markdown and HTML drop
    leading spaces, so markdown says '› ' per level and HTML keeps no-break spaces."""
    g = Grid("phases", [Col("#")], [Col("phase", left=True), Col("s")])
    for row in (["1", "fio", "9.0"], ["2", "  group1", "3.0"], ["3", "    a", "3.0"]):
        g.add(row)
    md = markdown_grid(g, tree_col=1)
    assert "| 1 | fio | 9.0 |" in md and "| 2 | › group1 | 3.0 |" in md
    assert "| 3 | › › a | 3.0 |" in md
    page = grid_table(g, phase_rows=False)
    assert ">&nbsp;&nbsp;&nbsp;&nbsp;a<" in page and ">&nbsp;&nbsp;group1<" in page


def test_depths_follow_the_phases_begun_in_not_their_names():
    """A replay window that starts inside one recording (its fio and group1 begun before the
    window: their jobs have no parent in it), then a second recording with the same names:
    every job of the second is at depth 2, the first's orphans at 0 (before: the parent was
    looked up by name, so the second's jobs could take the first's group1 and sit at 1)."""
    marks = [_begin("x", 1, 10, 3),                      # a job of a group begun earlier
             _begin("group1", 1, 11, 2),                  # a group of a fio begun earlier
             _begin("y", 1, 12, 11),
             _end("x", 2, 13, 10), _end("y", 2, 14, 12), _end("group1", 2, 15, 11),
             _begin("fio", 3, 16, 0), _begin("group1", 3, 17, 16),
             _begin("a", 3, 18, 17), _begin("b", 3, 19, 17),
             _end("a", 4, 20, 18), _end("b", 4, 21, 19), _end("group1", 4, 22, 17),
             _end("fio", 5, 23, 16)]
    windows = [_Window(t * S, (t + 1) * S, t * S, (t + 1) * S) for t in range(1, 6)]
    run = _Run(hosts=[_Host(0, marks, windows)])
    run.events = [{"type": "mark", "host": 0, **m.to_dict()} for m in marks]
    got = {(p.name, p.start_real_ns // S): (p.parent, p.depth) for p in phases_of_run(run)}
    assert got[("x", 1)] == (None, 0)
    assert got[("group1", 1)] == (None, 0)
    assert got[("y", 1)] == ("group1", 1)
    assert got[("fio", 3)] == (None, 0)
    assert got[("group1", 3)] == ("fio", 1)
    assert got[("a", 3)] == ("group1", 2) and got[("b", 3)] == ("group1", 2), got
