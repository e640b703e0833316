"""The phase open now, as iopulse top shows it."""
from __future__ import annotations

from iopulse import PhaseMark, Update
from iopulse.phases.live import OpenPhases
from iopulse.render import open_phases_line


def mark(name: str, id: int, end: bool = False, begin_id: int = 0, t: int = 0,
         **labels: str) -> PhaseMark:
    return PhaseMark(name, dict(labels), end, t, t, id, begin_id)


def update(end_ns: int, *marks: PhaseMark) -> Update:
    return Update(1, 1, 1, end_ns - 10**9, end_ns, 0, 0, 5, {}, [], list(marks))


def test_open_phases_follow_the_marks():
    op = OpenPhases([mark("run", 1, t=10**9)])
    op.update(update(3 * 10**9, mark("job", 2, t=2 * 10**9, bs="4k")))
    assert [m.name for m in op.now()] == ["run", "job"]
    assert open_phases_line(update(5 * 10**9), op.now()) == \
        "phase now: run > job [bs=4k] for 3.0 s"
    op.update(update(6 * 10**9, mark("job", 3, end=True, begin_id=2)))
    assert [m.name for m in op.now()] == ["run"]
    op.update(update(7 * 10**9, mark("run", 4, end=True, begin_id=1)))
    assert op.now() == [] and open_phases_line(update(8 * 10**9), []) == ""
