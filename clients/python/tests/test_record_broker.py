"""The recorder's hook broker with fio's plan, against a daemon's nesting rule: the jobs of one
stonewall group are siblings under their group, and a job that died (its exec_postrun never
ran) is ended, as an inferred end, when the next group begins or the command ends."""
from __future__ import annotations

from typing import Any, Optional

from iopulse.phases import fio
from iopulse.record.broker import ENDED_BY_COMMAND, ENDED_BY_NEXT, Broker


class FakeDaemon:
    """Marks as iopulsed makes them: a begin nests in the parent it names, else in the
    innermost open phase."""

    def __init__(self) -> None:
        self.next_id = 0
        self.open: list[int] = []
        self.names: dict[int, str] = {}
        self.parent: dict[int, int] = {}
        self.log: list[tuple[str, str, str]] = []     # (begin|end, name, inferred)

    def begin(self, name: str, labels: dict[str, str], parent: Optional[object] = None) -> Any:
        self.next_id += 1
        i = self.next_id
        self.names[i] = name
        self.parent[i] = parent if parent is not None else (self.open[-1] if self.open else 0)
        self.open.append(i)
        self.log.append(("begin", name, ""))
        return i

    def end(self, token: Any, inferred: str = "") -> Any:
        self.open.remove(token)
        self.log.append(("end", self.names[token], inferred))
        return token

    def parent_of(self, name: str) -> str:
        i = next(k for k, v in self.names.items() if v == name)
        return self.names.get(self.parent[i], "")


def _plan(tmp_path: Any, text: str) -> fio.Plan:
    job = tmp_path / "jobs.fio"
    job.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    return fio.plan(["fio", str(job)], fio.hook_command("python3", "hook.py", "s"), str(out))


FOUR_DEVICES = """
[global]
rw=randwrite
[qd1-loop1]
filename=/dev/loop1
[qd1-loop2]
filename=/dev/loop2
[qd1-loop3]
filename=/dev/loop3
[seq-loop1]
stonewall
filename=/dev/loop1
"""


def _broker(tmp_path: Any, plan: fio.Plan, d: FakeDaemon) -> Broker:
    return Broker(str(tmp_path / "hooks.sock"), plan.phases_of, d.begin, d.end,
                  ends_before=plan.ends_before)


def test_jobs_of_one_group_are_siblings_under_it(tmp_path):
    plan = _plan(tmp_path, FOUR_DEVICES)
    d = FakeDaemon()
    fio_phase = d.begin("fio", {})
    b = _broker(tmp_path, plan, d)
    try:
        for k in ("job1", "job0", "job2"):       # fio starts them in any order
            b.apply("enter", k)
        assert d.parent_of("group1") == "fio"
        for name in ("qd1-loop1", "qd1-loop2", "qd1-loop3"):
            assert d.parent_of(name) == "group1", (name, d.parent_of(name))
        for k in ("job0", "job2", "job1"):
            b.apply("leave", k)
        b.apply("enter", "job3")
        assert d.parent_of("seq-loop1") == "fio"
        b.apply("leave", "job3")
        assert d.open == [fio_phase]
        assert not b.inferred and all(x[2] == "" for x in d.log)
    finally:
        b.close()


def test_a_job_that_died_ends_when_the_next_group_begins(tmp_path):
    plan = _plan(tmp_path, FOUR_DEVICES)
    d = FakeDaemon()
    d.begin("fio", {})
    b = _broker(tmp_path, plan, d)
    try:
        for k in ("job0", "job1", "job2"):
            b.apply("enter", k)
        b.apply("leave", "job0")
        b.apply("leave", "job2")        # job1 died: its exec_postrun never ran
        b.apply("enter", "job3")
        ends = [x for x in d.log if x[0] == "end"]
        assert ends[-2:] == [("end", "qd1-loop2", ENDED_BY_NEXT),
                             ("end", "group1", ENDED_BY_NEXT)]
        # ended before the next group's begin, which nests in fio, not in the dead job
        assert d.log[-1] == ("begin", "seq-loop1", "")
        assert d.parent_of("seq-loop1") == "fio"
        assert b.inferred == ["job1", "group0"]
        # a late leave of the dead job changes nothing
        b.apply("leave", "job1")
        assert [x[1] for x in d.log if x[0] == "end"].count("qd1-loop2") == 1
    finally:
        b.close()


def test_a_job_of_the_last_group_that_died_ends_with_the_command(tmp_path):
    plan = _plan(tmp_path, FOUR_DEVICES)
    d = FakeDaemon()
    d.begin("fio", {})
    b = _broker(tmp_path, plan, d)
    try:
        b.apply("enter", "job3")
        b.end_all()
        assert d.log[-1] == ("end", "seq-loop1", ENDED_BY_COMMAND)
        assert b.inferred == ["job3"]
    finally:
        b.close()


def test_ends_before_names_every_earlier_group_innermost_first(tmp_path):
    plan = _plan(tmp_path, FOUR_DEVICES)
    assert plan.ends_before("job0") == []
    assert plan.ends_before("job3") == ["job0", "job1", "job2", "group0"]
