"""iopulse record against real daemons, real fio and real files: phases from fio's jobs with
fio's own per-job counts as ground truth, several daemons in one run, kill -9 mid-run, reports."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time

from grpc_testlib import CLIENT_ENV, iopulse, iopulse_cmd
from iopulse_testlib import wait_idle

from iopulse.record import load
from iopulse.report.metrics import phase_rows


THREE_JOBS = """[global]
filename={dev}
direct=1
size=200M
time_based=1
runtime=3

[seqwrite]
rw=write
bs=64k
ioengine=libaio
iodepth=8

[randwrite]
stonewall
rw=randwrite
bs=4k
ioengine=libaio
iodepth=8

[syncwrite]
stonewall
rw=write
bs=4k
ioengine=psync
fdatasync=1
"""


def record(out: str, targets: list[str], cmd: list[str], timeout: float = 120,
           cwd: str = None) -> subprocess.CompletedProcess:
    argv = iopulse_cmd("record", "-o", out, *[x for t in targets for x in ("--target", t)],
                       "--", *cmd)
    print("+ " + " ".join(argv), flush=True)
    p = subprocess.run(argv, env=CLIENT_ENV, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    print(p.stderr, flush=True)
    return p


def test_fio_jobs_become_exact_phases(loopdev, daemon, tmp_path):
    lo = loopdev("256M")
    d = daemon("-i", "1s", "--devices", lo.name)
    job = tmp_path / "three.fio"
    job.write_text(THREE_JOBS.format(dev=lo.path))
    out = str(tmp_path / "run.iopulse")
    fio_json = tmp_path / "fio.json"
    wait_idle(lo.name)
    p = record(out, [f"unix:{d.socket}"], ["fio", "--output-format=json",
                                            f"--output={fio_json}", str(job)],
               cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "3 job(s) in 3 stonewall group(s)" in p.stderr
    assert not list(tmp_path.glob("*.prerun.txt")), "hook output files left behind"
    fio = {j["jobname"]: j for j in json.loads(fio_json.read_text())["jobs"]}
    run = load(out)
    assert run.complete, run.damage
    assert [h.target for h in run.hosts] == [f"unix:{d.socket}"]
    assert run.end["exit_code"] == 0
    phases = {p.name: p for p in run.phases()}
    assert set(phases) == {"fio", "seqwrite", "randwrite", "syncwrite"}
    for name in ("seqwrite", "randwrite", "syncwrite"):
        assert phases[name].parent == "fio" and phases[name].exact
    rows, trows = phase_rows(run)
    dev = {r.phase.name: r for r in rows if r.device == lo.name}
    for name in ("seqwrite", "randwrite"):
        got, want = dev[name].values["writes"], fio[name]["write"]["total_ios"]
        print(f"{name}: iopulse writes {got:.0f}, fio {want}")
        assert abs(got - want) <= 0.01 * want, f"{name}: {got} writes in the phase, fio {want}"
    # every fdatasync also sends an empty preflush write (diskstats counts it as a write too):
    # compare the data written, and the sync calls
    sw = fio["syncwrite"]
    got_b, want_b = dev["syncwrite"].values["write_bytes"], sw["write"]["io_bytes"]
    print(f"syncwrite: iopulse bytes {got_b:.0f}, fio {want_b}")
    assert abs(got_b - want_b) <= 0.01 * want_b
    syncs = sum(t.values["fdatasync"] for t in trows if t.phase.name == "syncwrite")
    print(f"syncwrite: iopulse fdatasync {syncs:.0f}, fio {sw['sync']['lat_ns']['N']}")
    assert syncs == sw["sync"]["lat_ns"]["N"]
    assert not any(t.values["fdatasync"] for t in trows if t.phase.name != "syncwrite"
                   and t.phase.name != "fio")
    assert dev["seqwrite"].values["seq_pct"] > 95
    assert dev["randwrite"].values["seq_pct"] < 5
    # the report in every format
    for fmt in ("table", "markdown", "csv", "json"):
        r = subprocess.run(iopulse_cmd("report", out, "--format", fmt), env=CLIENT_ENV,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "randwrite" in r.stdout, fmt
    md = subprocess.run(iopulse_cmd("report", out, "--format", "markdown"), env=CLIENT_ENV,
                        capture_output=True, text=True, timeout=60).stdout
    print(md)
    rows_csv = list(csv.DictReader(io.StringIO(subprocess.run(
        iopulse_cmd("report", out, "--format", "csv"), env=CLIENT_ENV, capture_output=True,
        text=True, timeout=60).stdout)))
    seq = [r for r in rows_csv if r["phase"] == "seqwrite" and r["device"] == lo.name]
    assert float(seq[0]["writes"]) == dev["seqwrite"].values["writes"]
    # the same phases imported after the fact from fio's JSON: edges within the accuracy
    # the importer states (fio 3.33 has no job_start: 1 s)
    imp = subprocess.run(iopulse_cmd("phases", "import", out, str(fio_json)), env=CLIENT_ENV,
                         capture_output=True, text=True, timeout=60)
    assert imp.returncode == 0, imp.stderr
    again = load(out)
    assert again.complete
    exact = {p.name: p for p in again.phases() if p.exact}
    imported = [p for p in again.phases() if not p.exact]
    assert sorted(p.name for p in imported) == ["randwrite", "seqwrite", "syncwrite"]
    for p in imported:
        e = exact[p.name]
        ds, de = (p.start_real_ns - e.start_real_ns) / 1e9, (p.end_real_ns - e.end_real_ns) / 1e9
        print(f"imported {p.name}: start {ds:+.3f} s, end {de:+.3f} s from the marked edges "
              f"(stated accuracy {p.accuracy_s:g} s)")
        assert abs(ds) <= p.accuracy_s and abs(de) <= p.accuracy_s
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_two_daemons_in_one_run(loopdev, daemon, tmp_path):
    """One agent per node: here two daemons, each watching its own device."""
    a, b = loopdev("128M"), loopdev("128M")
    da = daemon("-i", "1s", "--devices", a.name)
    db = daemon("-i", "1s", "--devices", b.name)
    script = tmp_path / "two.sh"
    mark = f"{sys.executable} -m iopulse mark"
    script.write_text("#!/bin/sh\nset -e\n"
                      f"dd if=/dev/zero of={a.path} bs=4k count=300 oflag=direct status=none\n"
                      f"{mark} fill-b --label step=2\n"
                      f"dd if=/dev/zero of={b.path} bs=4k count=500 oflag=direct status=none\n"
                      f"{mark} fill-b --end\n")
    script.chmod(0o755)
    out = str(tmp_path / "two.iopulse")
    wait_idle(a.name)
    wait_idle(b.name)
    p = record(out, [f"unix:{da.socket}", f"unix:{db.socket}"], [str(script)])
    assert p.returncode == 0, p.stderr
    run = load(out)
    assert run.complete
    assert [h.target for h in run.hosts] == [f"unix:{da.socket}", f"unix:{db.socket}"]
    assert len({h.name for h in run.hosts}) == 2, "two agents on one node are told apart"
    rows, _ = phase_rows(run)
    got = {(r.host, r.device): r.values["writes"] for r in rows if r.phase.name == "two.sh"}
    assert got == {(run.hosts[0].name, a.name): 300, (run.hosts[1].name, b.name): 500}, got
    # `iopulse mark` run by the command went through the recorder to both daemons
    (step,) = [p for p in run.phases() if p.name == "fill-b"]
    assert sorted(step.hosts) == [0, 1] and step.labels == {"step": "2"}
    assert step.parent == "two.sh"
    got = {(r.host, r.device): r.values["writes"] for r in rows if r.phase.name == "fill-b"}
    assert got == {(run.hosts[1].name, b.name): 500}, got
    for dd in (da, db):
        assert dd.stop(signal.SIGTERM) == 0, dd.describe()


def test_exit_code_and_kill9_leaves_a_readable_file(daemon, tmp_path):
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    out1 = str(tmp_path / "fail.iopulse")
    p = record(out1, [target], ["sh", "-c", "sleep 1; exit 7"])
    assert p.returncode == 7
    assert load(out1).end["exit_code"] == 7
    again = record(out1, [target], ["true"])
    assert again.returncode == 2 and "exists" in again.stderr, "an existing run is not replaced"

    out2 = str(tmp_path / "killed.iopulse")
    argv = iopulse_cmd("record", "-o", out2, "--target", target, "--", "sleep", "60")
    rec = subprocess.Popen(argv, env=CLIENT_ENV, stderr=subprocess.DEVNULL)
    children: list[int] = []
    try:
        time.sleep(4.5)
        with open(f"/proc/{rec.pid}/task/{rec.pid}/children") as f:
            children = [int(x) for x in f.read().split()]
        rec.kill()
        rec.wait(10)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait(10)
        for pid in children:            # the recorded command outlives a killed recorder
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert children, "the recorded command was not running"
    run = load(out2)
    assert not run.complete and run.damage
    n = len(run.hosts[0].updates)
    assert n >= 2, f"only {n} Updates readable after kill -9 at 4.5 s"
    # the daemon ended the dead recorder's phase, flagged abandoned
    with iopulse.Client(target) as c:
        deadline = time.monotonic() + 10
        while c.info().open_phases and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not c.info().open_phases
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_duration_replay_and_interrupt(daemon, tmp_path):
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    time.sleep(3)                       # history for --replay
    out = str(tmp_path / "dur.iopulse")
    t0 = time.time_ns()
    p = subprocess.run(iopulse_cmd("record", "-o", out, "--target", target, "--duration", "3s",
                                   "--replay", "2"), env=CLIENT_ENV, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    run = load(out)
    assert run.complete and run.end["status"] == "duration" and run.end["exit_code"] is None
    w = run.hosts[0].windows
    assert w[0].start_realtime_ns < t0 - 1_000_000_000, "--replay 2 reached back before start"
    assert 4 <= len(w) <= 8, len(w)
    (ph,) = run.phases()
    assert ph.name == "record" and 2.5 < ph.duration_s < 5

    # SIGINT to iopulse record alone (no terminal) is passed on to the command
    out2 = str(tmp_path / "int.iopulse")
    rec = subprocess.Popen(iopulse_cmd("record", "-o", out2, "--target", target, "--", "sleep",
                                       "60"), env=CLIENT_ENV, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        rec.send_signal(signal.SIGINT)
        rc = rec.wait(30)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait(10)
    assert rc == 130, (rc, rec.stderr.read())
    run = load(out2)
    assert run.complete and run.end["status"] == "interrupted" and run.end["exit_code"] == 130
    assert d.stop(signal.SIGTERM) == 0, d.describe()
