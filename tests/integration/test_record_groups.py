"""iopulse record with a stonewall group of concurrent fio jobs, one per device, against a real
daemon: the jobs are siblings under their group (not nested in each other), and a job whose
process dies (its exec_postrun never runs) is ended when the next group begins, an end the
report marks as inferred."""
from __future__ import annotations

import subprocess

from grpc_testlib import CLIENT_ENV, iopulse_cmd
from iopulse_testlib import wait_idle
from test_record import record

from iopulse.analysis.metrics import phase_rows
from iopulse.record import load

# a job's own exec_prerun: kill -9 its fio job process a second into the job (as a job that
# dies of an assertion: fio goes on with the next group, and the job's exec_postrun never runs)
KILLER = """#!/bin/sh
p=$$
while [ "$p" -gt 1 ]; do
  p=$(awk '{print $4}' /proc/$p/stat)
  [ "$(cat /proc/$p/comm)" = fio ] && break
done
( sleep 1; kill -9 "$p" ) >/dev/null 2>&1 &
"""

JOBS = """[global]
direct=1
ioengine=psync
rw=randwrite
bs=4k
size=48M
time_based=1
runtime=3

[qd1-{a}]
filename=/dev/{a}
[qd1-{b}]
filename=/dev/{b}
exec_prerun={killer}
[qd1-{c}]
filename=/dev/{c}

[seq-{a}]
stonewall
rw=write
bs=128k
runtime=1
filename=/dev/{a}
"""


def test_group_jobs_are_siblings_and_a_dead_job_ends_at_the_next_group(loopdev, daemon,
                                                                         tmp_path):
    devs = [loopdev("64M") for _ in range(3)]
    a, b, c = (lo.name for lo in devs)
    d = daemon("-i", "1s", "--devices", ",".join((a, b, c)))
    killer = tmp_path / "killer.sh"
    killer.write_text(KILLER)
    killer.chmod(0o755)
    job = tmp_path / "group.fio"
    job.write_text(JOBS.format(a=a, b=b, c=c, killer=killer))
    out = str(tmp_path / "run.iopulse")
    fio_json = tmp_path / "fio.json"
    for lo in devs:
        wait_idle(lo.name)
    p = record(out, [f"unix:{d.socket}"], ["fio", "--output-format=json",
                                            f"--output={fio_json}", str(job)],
               cwd=str(tmp_path))
    assert "4 job(s) in 2 stonewall group(s)" in p.stderr
    assert f"fio job 'qd1-{b}': its phase end was not marked" in p.stderr
    assert "inferred end" in p.stderr
    run = load(out)
    assert run.complete, run.damage
    phases = {x.name: x for x in run.phases()}
    assert set(phases) == {"fio", "group1", f"qd1-{a}", f"qd1-{b}", f"qd1-{c}", f"seq-{a}"}
    # siblings under their group (before: each nested in the one begun before it)
    assert phases["group1"].parent == "fio"
    for n in (a, b, c):
        assert phases[f"qd1-{n}"].parent == "group1", (n, phases[f"qd1-{n}"].parent)
        assert phases[f"qd1-{n}"].depth == 2
    seq = phases[f"seq-{a}"]
    assert seq.parent == "fio" and seq.depth == 1
    # the dead job and its group end where the next group begins (before: at fio's end,
    # with the next group nested inside), marked as inferred; the others' ends are marked
    dead, group = phases[f"qd1-{b}"], phases["group1"]
    for x in (dead, group):
        assert x.end_inferred == "the next stonewall group began", x.name
        assert 0 <= seq.start_real_ns - x.end_real_ns < 0.5e9, x.name   # marks just before
    assert dead.duration_s < 5, dead.duration_s
    for x in (phases[f"qd1-{a}"], phases[f"qd1-{c}"], seq, phases["fio"]):
        assert x.end_inferred == "", x.name
    # the jobs that lived: fio's writes on their own device in their phase
    # (fio's --output holds its error lines around the JSON; the run keeps the JSON alone)
    fio = {j["jobname"]: j for j in run.fio_output["jobs"]}
    rows, _ = phase_rows(run)
    for n in (a, c):
        got = next(r for r in rows if r.phase.name == f"qd1-{n}" and r.device == n)
        want = fio[f"qd1-{n}"]["write"]["total_ios"]
        assert abs(got.values["writes"] - want) <= 0.01 * want, (n, got.values["writes"], want)
    # each job's phase has its own device's rows (its filename=), the group every device's
    for n in (a, b, c):
        # its loop device, and the disk its backing file is on (not watched here)
        got = phases[f"qd1-{n}"].devices
        assert n in got and not got & ({a, b, c} - {n}), phases[f"qd1-{n}"].labels
        assert {r.device for r in rows if r.phase.name == f"qd1-{n}"} == {n}
    assert "devices" not in phases["group1"].labels
    assert {r.device for r in rows if r.phase.name == "group1"} == {a, b, c}
    every, _ = phase_rows(run, every_device=True)
    assert {r.device for r in every if r.phase.name == f"qd1-{a}"} == {a, b, c}
    # the report says which end was inferred, and shows the tree
    rep = subprocess.run(iopulse_cmd("report", out, "--format", "json"), env=CLIENT_ENV,
                         capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    text = subprocess.run(iopulse_cmd("report", out), env=dict(CLIENT_ENV, COLUMNS="200"),
                          capture_output=True, text=True, timeout=120).stdout
    assert "no end mark: ended when the next stonewall group began" in text
    print(text[:3000])
