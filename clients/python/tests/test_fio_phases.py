"""fio: hooks added to job files and command-line jobs; phases from fio's JSON output."""
from __future__ import annotations

import os

import pytest

from iopulse.phases import fio

JOBS = """; a comment
[global]
direct=1
bs=8k
ioengine=libaio
include extra.fio

[seq]
rw=write
iodepth=8   ; trailing comment

[rand]
stonewall
readwrite=randwrite
numjobs=4
exec_postrun=echo done

[also-rand]
rw=randread
blocksize=64k
"""


def hook(kind: str, key: str) -> str:
    return f"/usr/bin/python3 -I -S /h.py /s.sock {kind} {key}"


def test_job_file_gets_hooks_groups_and_labels(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "jobs.fio").write_text(JOBS)
    (src / "extra.fio").write_text("size=1m\n")
    out = tmp_path / "out"
    out.mkdir()
    old = os.getcwd()
    os.chdir(tmp_path)          # extra.fio is not in the working directory
    try:
        p = fio.plan(["fio", "--output-format=json", "--output", "x.json",
                      str(src / "jobs.fio")], hook, str(out))
    finally:
        os.chdir(old)
    assert p.argv[:4] == ["fio", "--output-format=json", "--output", "x.json"]
    new = p.argv[4]
    assert os.path.dirname(new) == str(out)
    assert [(j.name, j.group) for j in p.jobs] == [("seq", 0), ("rand", 1), ("also-rand", 1)]
    assert p.jobs[0].labels == {"rw": "write", "bs": "8k", "iodepth": "8", "numjobs": "1",
                                "ioengine": "libaio"}
    assert p.jobs[1].labels["rw"] == "randwrite" and p.jobs[1].labels["numjobs"] == "4"
    assert p.jobs[2].labels["bs"] == "64k" and p.jobs[2].labels["iodepth"] == "1"
    text = open(new).read().splitlines()
    assert f"include {src / 'extra.fio'}" in text, "include resolved as fio would"
    i = text.index("[seq]")
    # our hook ends in a shell comment (fio substitutes ${IOPULSE_FIO_COMMENT} = '#'), so the
    # job name fio appends never reaches the shell
    assert text[i + 1] == f"exec_prerun={hook('enter', 'job0')} >/dev/null ${{IOPULSE_FIO_COMMENT}}"
    assert text[i + 2] == f"exec_postrun={hook('leave', 'job0')} >/dev/null ${{IOPULSE_FIO_COMMENT}}"
    # a job's own hook follows ours and gets fio's redirection, as under plain fio
    assert f"exec_postrun={hook('leave', 'job1')} >/dev/null && echo done" in text
    assert "; exec_postrun=echo done" in text, "the user's hook is chained, not run twice"
    # a group of one job is the job; a group of several gets a phase around them
    assert [x[1] for x in p.phases_of("job0")] == ["seq"]
    assert [x[1] for x in p.phases_of("job1")] == ["group2", "rand"]
    assert p.phases_of("job2")[0][0] == p.phases_of("job1")[0][0]
    # the group's phase and its jobs' carry the group's number (the DataFrame's group column)
    assert p.phases_of("job1")[0][2]["group"] == p.phases_of("job1")[1][2]["group"] == "2"


def test_command_line_jobs(tmp_path):
    p = fio.plan(["fio", "--direct=1", "--name=a", "--rw=write", "--bs=1m", "--name=b",
                  "--stonewall", "--rw=randread", "--iodepth=32"], hook, str(tmp_path))
    assert [(j.name, j.group, j.labels["rw"], j.labels["bs"]) for j in p.jobs] == \
        [("a", 0, "write", "1m"), ("b", 1, "randread", "4k")]
    assert p.jobs[1].labels["iodepth"] == "32"
    i = p.argv.index("--name=b")
    assert p.argv[i - 2] == f"--exec_prerun={hook('enter', 'job0')} >/dev/null #"
    assert p.argv[-1] == f"--exec_postrun={hook('leave', 'job1')} >/dev/null #"


def test_no_jobs_is_a_note(tmp_path):
    p = fio.plan(["fio", "--version"], hook, str(tmp_path))
    assert p.argv == ["fio", "--version"] and not p.jobs and p.notes


def test_bad_job_file(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_text("rw=write\n[x]\n")
    with pytest.raises(fio.FioJobFileError, match=r"bad.fio:1: option before any \[section\]"):
        fio.plan(["fio", str(f)], hook, str(tmp_path))


def test_json_import_with_job_start():
    """fio >= 3.36: job_start (ms since the epoch) and job_runtime (ms) give the edges."""
    doc = {"fio version": "fio-3.37", "timestamp": 1700000100, "timestamp_ms": 1700000100000,
           "global options": {"bs": "4k", "direct": "1"},
           "jobs": [{"jobname": "w", "groupid": 0, "job_start": 1700000000000,
                     "job_runtime": 3000, "elapsed": 4, "job options": {"rw": "write"}},
                    {"jobname": "r", "groupid": 1, "job_start": 1700000003500,
                     "job_runtime": 2000, "elapsed": 3,
                     "job options": {"rw": "randread", "iodepth": "16"}}]}
    ph = fio.phases_from_json(doc)
    assert [(p["name"], p["start_realtime_ns"], p["end_realtime_ns"], p["accuracy_s"])
            for p in ph] == [("w", 1700000000000 * 10**6, 1700000003000 * 10**6, 0.001),
                             ("r", 1700000003500 * 10**6, 1700000005500 * 10**6, 0.001)]
    assert ph[1]["labels"] == {"rw": "randread", "bs": "4k", "iodepth": "16", "numjobs": "1",
                               "ioengine": "psync", "group": "2"}


def test_json_import_old_fio_walks_back_from_the_report_time():
    doc = {"fio version": "fio-3.33", "timestamp": 1700000010, "timestamp_ms": 1700000010000,
           "jobs": [{"jobname": "a", "groupid": 0, "elapsed": 4, "job_runtime": 3000,
                     "job options": {}},
                    {"jobname": "b", "groupid": 1, "elapsed": 5, "job_runtime": 5000,
                     "job options": {}}]}
    ph = fio.phases_from_json(doc)
    assert [(p["name"], p["start_realtime_ns"] // 10**9, p["accuracy_s"]) for p in ph] == \
        [("a", 1700000002, 1.0), ("b", 1700000005, 0.5)]


def test_json_import_rejects_other_json():
    with pytest.raises(ValueError, match="not fio --output-format=json"):
        fio.phases_from_json({"hello": 1})


def test_command_line_prerun_reaches_the_first_job_file_in_every_form(tmp_path):
    (tmp_path / "j.fio").write_text("[global]\nrw=read\n[a]\n[b]\nexec_prerun=echo own\n")
    for form in (["--exec_prerun=echo x; sync"], ["--exec_prerun", "echo x; sync"],
                 ["-exec_prerun=echo x; sync"], ["-exec_prerun", "echo x; sync"]):
        out = tmp_path / f"out{len(os.listdir(tmp_path))}"
        out.mkdir()
        p = fio.plan(["fio", *form, str(tmp_path / "j.fio"), str(tmp_path / "j.fio")], hook,
                     str(out))
        assert p.argv[0] == "fio" and len(p.argv) == 3, p.argv     # not passed on to fio
        # through a variable (a ';' would end the job-file line), the user's first
        assert p.env == {"IOPULSE_FIO_PRERUN": "echo x; sync"}
        first = open(p.argv[1]).read().splitlines()
        assert (f"exec_prerun=( ${{IOPULSE_FIO_PRERUN}} ) >a.prerun.txt 2>&1 && "
                f"{hook('enter', 'job0')} >/dev/null ${{IOPULSE_FIO_COMMENT}}") in first
        # a job's own prerun wins over the command line's, as in fio
        assert any(line.startswith("exec_prerun=( echo own ) >b.prerun.txt") for line in first)
        # fio resets the command line's options for a later job file
        second = open(p.argv[2]).read()
        assert "IOPULSE_FIO_PRERUN" not in second and [j.name for j in p.jobs][2:] == ["a", "b"]


def test_command_line_job_names_in_every_form(tmp_path):
    p = fio.plan(["fio", "--name", "a", "--exec_prerun", "echo p", "-name=b"], hook,
                 str(tmp_path))
    assert [j.name for j in p.jobs] == ["a", "b"]
    assert f"--exec_prerun=( echo p ) >a.prerun.txt 2>&1 && {hook('enter', 'job0')} " \
        ">/dev/null #" in p.argv


def test_a_hook_after_a_job_file_is_refused(tmp_path):
    (tmp_path / "j.fio").write_text("[a]\nrw=read\n")
    with pytest.raises(fio.FioJobFileError, match="applies to its last job only"):
        fio.plan(["fio", str(tmp_path / "j.fio"), "--exec_postrun=echo x"], hook,
                 str(tmp_path))
    # a command-line job after the file takes it, as in fio
    p = fio.plan(["fio", str(tmp_path / "j.fio"), "--name=c", "--exec_postrun=echo x"], hook,
                 str(tmp_path))
    assert p.argv[-1] == f"--exec_postrun={hook('leave', 'job1')} >/dev/null && echo x"
