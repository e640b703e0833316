"""iopulse record -- fio with job names a shell would read as commands: nothing runs that
plain fio would not run, nothing is left in the working directory, every job becomes the phase
fio names, and a job whose phase could not be marked makes record say so and fail."""
from __future__ import annotations

import json
import os
import subprocess

from grpc_testlib import CLIENT_ENV, iopulse_cmd
from iopulse_testlib import wait_idle

from iopulse.record import load
from iopulse.analysis.metrics import phase_rows

# one job per stonewall group, so each phase holds exactly its job's IO
HOSTILE = """[global]
filename={dev}
direct=1
size=16M
bs=4k
rw=randread
ioengine=psync
stonewall
number_ios={n}

[x$(touch PWNED)]
[y`touch PWNED2`]
[z|touch PWNED3]
[wv;touch PWNED4]
[sp ace]
[sub/dir]
[q'uote"s]
[job#1]
[own]
exec_prerun=echo user-prerun-ran
"""


def _record(tmp_path, sock: str, cmd: list[str], cwd) -> subprocess.CompletedProcess:
    argv = iopulse_cmd("record", "-o", str(tmp_path / "run.iopulse"), "--target",
                       f"unix:{sock}", "--", *cmd)
    print("+ " + " ".join(argv), flush=True)
    p = subprocess.run(argv, env=CLIENT_ENV, capture_output=True, text=True, timeout=180,
                       cwd=str(cwd))
    print(p.stderr, flush=True)
    return p


def test_job_names_never_reach_a_shell(loopdev, daemon, tmp_path):
    lo = loopdev("64M")
    d = daemon("-i", "1s", "--devices", lo.name)
    wd = tmp_path / "wd"
    wd.mkdir()
    job = tmp_path / "hostile.fio"
    job.write_text(HOSTILE.format(dev=lo.path, n=300))
    fio_json = tmp_path / "fio.json"
    wait_idle(lo.name)
    p = _record(tmp_path, d.socket, ["fio", "--output-format=json", f"--output={fio_json}",
                                     str(job)], wd)
    assert p.returncode == 0, p.stderr
    # nothing ran: no PWNED file anywhere fio or the shell could have made one
    for where in (wd, tmp_path, "/"):
        made = [f for f in os.listdir(where) if f.startswith("PWNED")]
        assert not made, f"a job name ran a command: {made} in {where}"
    # only the user's own hook made a file, as plain fio makes it (JOB.prerun.txt)
    assert sorted(os.listdir(wd)) == ["own.prerun.txt"], sorted(os.listdir(wd))
    assert (wd / "own.prerun.txt").read_text().strip() == "user-prerun-ran"

    fio = {j["jobname"]: j for j in json.loads(fio_json.read_text())["jobs"]}
    run = load(str(tmp_path / "run.iopulse"))
    assert run.complete, run.damage
    phases = {ph.name: ph for ph in run.phases() if ph.name != "fio"}
    print(f"fio's job names: {sorted(fio)}\nphases: {sorted(phases)}")
    # fio's own names: 'wv;touch PWNED4' is job 'w' and 'job#1' is job 'jo' (fio cuts a line
    # at ';' and '#', then drops the header's last character)
    assert "jo" in fio and "w" in fio
    assert set(phases) == set(fio)
    assert "not marked" not in p.stderr and "mark failed" not in p.stderr, p.stderr
    rows, _ = phase_rows(run)
    reads = {r.phase.name: r.values["reads"] for r in rows if r.device == lo.name}
    # docs/metrics.md (Completions the kernel does not report): a read whose completion
    # reached no program is counted, untimed, in the interval its record is found in, which
    # may be the next job's: a job's count may be off by those, the whole command's is exact
    unseen = sum(d.read.completion_unseen for _, u in run.iter_updates() for d in u.devices
                 if d.name == lo.name)
    print(f"reads per phase: {reads}; completions the kernel did not report: {unseen}")
    assert reads.get("fio") == sum(j["read"]["total_ios"] for j in fio.values())
    for name, j in fio.items():
        assert j["read"]["total_ios"] == 300, (name, j["read"]["total_ios"])
        assert abs(reads.get(name, 0) - 300) <= unseen, (name, reads.get(name), unseen)
    assert d.stop() == 0, d.describe()


def test_unmarkable_phase_fails_the_recording(loopdev, daemon, tmp_path):
    """A job name the daemon refuses as a phase (a control character) is not silently left
    out: record names the job, with the character escaped, and exits non-zero."""
    lo = loopdev("64M")
    d = daemon("-i", "1s", "--devices", lo.name)
    job = tmp_path / "ctl.fio"
    job.write_text(HOSTILE.split("\n[x$")[0].format(dev=lo.path, n=50)
                   + "\n[fine]\n[bell\x07\x1b[31mred]\n")
    p = _record(tmp_path, d.socket, ["fio", "--output-format=json",
                                     f"--output={tmp_path / 'fio.json'}", str(job)], tmp_path)
    assert p.returncode != 0, p.stderr
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr, "raw control characters"
    assert "bell\\x07\\x1b[31mred" in p.stderr, p.stderr
    run = load(str(tmp_path / "run.iopulse"))
    assert "fine" in {ph.name for ph in run.phases()}
    assert d.stop() == 0, d.describe()


def test_command_line_job_name_with_a_line_break_is_refused(loopdev, daemon, tmp_path):
    lo = loopdev("64M")
    d = daemon("-i", "1s", "--devices", lo.name)
    p = _record(tmp_path, d.socket, ["fio", "--name=a\ntouch PWNED", f"--filename={lo.path}",
                                     "--size=1M", "--rw=read"], tmp_path)
    assert p.returncode == 2, p.stderr
    assert "line break" in p.stderr
    assert not (tmp_path / "PWNED").exists()
    assert d.stop() == 0, d.describe()


def test_refused_mark_fails_alike_inside_and_outside_record(loopdev, daemon, tmp_path):
    """`iopulse mark` with a name the daemon refuses exits with the same status under record
    as outside it; record reports the refusal with the name escaped and exits non-zero."""
    lo = loopdev("64M")
    d = daemon("-i", "1s", "--devices", lo.name)
    bad = "line\nbreak\x1b[2J"
    outside = subprocess.run(iopulse_cmd("mark", "--target", f"unix:{d.socket}", bad),
                             env=CLIENT_ENV, capture_output=True, text=True, timeout=60)
    print(f"outside record: exit {outside.returncode}: {outside.stderr!r}")
    assert outside.returncode != 0
    script = tmp_path / "marks.sh"
    script.write_text(f'{" ".join(iopulse_cmd("mark"))} "$1"\necho "mark exit $?" >&2\n')
    p = _record(tmp_path, d.socket, ["sh", str(script), bad], tmp_path)
    assert f"mark exit {outside.returncode}" in p.stderr
    assert p.returncode != 0
    for err in (outside.stderr, p.stderr):
        assert "\x1b" not in err and "line\nbreak" not in err, repr(err)
    assert d.stop() == 0, d.describe()


PREP_JOBS = """[global]
filename={dev}
direct=1
size=16M
bs=4k
rw=randread
ioengine=psync
stonewall
number_ios=200

[first]
[second]
"""


def test_the_users_own_prerun_still_runs_outside_the_phase(loopdev, daemon, tmp_path):
    """fio's --exec_prerun on record's command line (given in any form fio takes) runs for the
    jobs it runs for under plain fio, before record's begin mark: a preparation's IO (here 16
    direct writes) stays out of the job's phase. After a job file, where fio gives it to that
    file's last job only, it is refused with the reason."""
    lo = loopdev("64M")
    d = daemon("-i", "1s", "--devices", lo.name)
    job = tmp_path / "prep.fio"
    job.write_text(PREP_JOBS.format(dev=lo.path))
    marks = tmp_path / "marks"
    prep = (f"echo ran >> {marks}; dd if=/dev/zero of={lo.path} bs=4k count=16 oflag=direct "
            "status=none")
    for form in (["--exec_prerun=" + prep], ["--exec_prerun", prep], ["-exec_prerun=" + prep]):
        marks.unlink(missing_ok=True)
        wd = tmp_path / f"wd{len(form)}{form[0][:2]}"
        wd.mkdir()
        (tmp_path / "run.iopulse").unlink(missing_ok=True)
        wait_idle(lo.name)
        p = _record(tmp_path, d.socket, ["fio", *form, str(job)], wd)
        assert p.returncode == 0, p.stderr
        # plain fio runs a command-line prerun for each job of the first job file
        assert marks.read_text().split() == ["ran", "ran"], (form, marks.read_text())
        assert sorted(os.listdir(wd)) == ["first.prerun.txt", "second.prerun.txt"]
        run = load(str(tmp_path / "run.iopulse"))
        rows, _ = phase_rows(run)
        got = {r.phase.name: (r.values["reads"], r.values["writes"]) for r in rows
               if r.device == lo.name and r.phase.name in ("first", "second")}
        print(f"{form[0][:16]}: phases (reads, writes) {got}")
        # the job's own 200 reads, none of the preparation's writes
        assert got == {"first": (200, 0), "second": (200, 0)}, got
        whole = [r for r in rows if r.device == lo.name and r.phase.name == "fio"]
        assert whole and whole[0].values["writes"] == 32, [r.values for r in whole]
    # after the job file: fio would give it to 'second' only; record says so and stops
    (tmp_path / "run.iopulse").unlink(missing_ok=True)
    p = _record(tmp_path, d.socket, ["fio", str(job), "--exec_prerun=" + prep], tmp_path)
    assert p.returncode == 2 and "applies to its last job only" in p.stderr, p.stderr
    assert d.stop() == 0, d.describe()
