"""iopulse record against real daemons, real fio and real files: phases from fio's jobs with
fio's own per-job counts as ground truth, several daemons in one run, kill -9 mid-run, reports."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

from grpc_testlib import CLIENT_ENV, iopulse, iopulse_cmd, wait_for
from iopulse_testlib import wait_idle

from iopulse.record import load
from iopulse.analysis.metrics import phase_rows


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


def running_children(pid: int) -> list[int]:
    """PIDs of the process's children that have exec'd (their name is not the parent's)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
        with open(f"/proc/{pid}/comm") as f:
            parent = f.read().strip()
    except OSError:
        return []
    out = []
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() != parent:
                    out.append(k)
        except OSError:
            pass
    return out


def wait_recording(rec: subprocess.Popen, path: str, updates: int, timeout: float = 60) -> int:
    """Wait until `iopulse record` runs its command and the file holds that many Updates;
    returns how many it holds."""
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        assert rec.poll() is None, f"iopulse record exited {rec.returncode}"
        if running_children(rec.pid) and os.path.exists(path):
            try:
                run = load(path)
                n = len(run.hosts[0].windows) if run.hosts else 0
            except Exception:   # noqa: BLE001 - the header may not be written yet
                n = 0
            if n >= updates:
                return n
        assert time.monotonic() < deadline, \
            f"iopulse record: command not running or only {n} Updates after {timeout} s"
        time.sleep(0.2)


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
    # fio's own threads on the device under test (another fio on the machine, busy-node.sh's
    # on the root disk, syncs its own files at the same time)
    syncs = sum(t.values["fdatasync"] for t in trows
                if t.phase.name == "syncwrite" and t.thread.device == lo.name)
    print(f"syncwrite: iopulse fdatasync {syncs:.0f}, fio {sw['sync']['lat_ns']['N']}")
    assert syncs == sw["sync"]["lat_ns"]["N"]
    # fio's calls on the device under test belong to syncwrite alone (whatever else on the
    # machine syncs its own files meanwhile is other threads' business)
    stray = [(t.phase.name, t.thread.comm, t.thread.pid, t.thread.tid, t.thread.device,
              t.values["fdatasync"]) for t in trows
             if t.phase.name not in ("syncwrite", "fio") and t.values["fdatasync"]]
    print(f"fdatasync outside syncwrite: {stray}")
    assert not [x for x in stray if x[4] == lo.name], stray
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
    # the importer states (fio 3.33 has no job_start: walked back from the report's time by
    # each group's job_runtime, 0.5 s per group for what fio does between and after them)
    imp = subprocess.run(iopulse_cmd("phases", "import", out, str(fio_json)), env=CLIENT_ENV,
                         capture_output=True, text=True, timeout=60)
    assert imp.returncode == 0, imp.stderr
    again = load(out)
    assert again.complete
    exact = {p.name: p for p in again.phases() if p.exact}
    imported = [p for p in again.phases() if not p.exact]
    assert sorted(p.name for p in imported) == ["randwrite", "seqwrite", "syncwrite"]
    imported.sort(key=lambda p: exact[p.name].start_real_ns)
    # What fio spends outside its jobs' run time (its hooks, which mark through the recorder,
    # and its own work between groups and before the report) is not in its JSON; the importer
    # allows 0.5 s per group for it, measured on a quiet machine. On a loaded one fio takes
    # longer, and the marked edges show by how much: an imported edge is off by at most the
    # time fio spent outside its jobs from that job on (job_runtime lies inside the marked
    # phase: fio's clock starts after exec_prerun and stops before exec_postrun).
    fio_end = exact["fio"].end_real_ns
    for i, p in enumerate(imported):
        e = exact[p.name]
        outside = (fio_end - exact[imported[-1].name].end_real_ns) / 1e9
        for j in range(i, len(imported)):
            ej = exact[imported[j].name]
            outside += ej.duration_s - imported[j].duration_s
            if j > i:
                outside += (ej.start_real_ns - exact[imported[j - 1].name].end_real_ns) / 1e9
        bound = max(p.accuracy_s, outside + 0.01)
        ds, de = (p.start_real_ns - e.start_real_ns) / 1e9, (p.end_real_ns - e.end_real_ns) / 1e9
        print(f"imported {p.name}: start {ds:+.3f} s, end {de:+.3f} s from the marked edges "
              f"(stated accuracy {p.accuracy_s:g} s; fio spent {outside:.3f} s outside its "
              f"jobs from this one on)")
        assert abs(ds) <= bound and abs(de) <= bound, \
            f"{p.name}: imported edges {ds:+.3f} s / {de:+.3f} s off, bound {bound:.3f} s"
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
        # kill -9 once the command runs and a few Updates are in the file (not after a fixed
        # time: the recorder's start-up takes longer on a loaded machine)
        seen = wait_recording(rec, out2, updates=3)
        children = running_children(rec.pid)
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
    assert n >= seen >= 3, f"{seen} Updates readable before kill -9, {n} after"
    # the daemon ended the dead recorder's phase, flagged abandoned
    with iopulse.Client(target) as c:
        deadline = time.monotonic() + 30
        while c.info().open_phases and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not c.info().open_phases
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_duration_replay_and_interrupt(daemon, tmp_path):
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    with iopulse.Client(target) as c:   # history for --replay: more than 2 s of intervals
        wait_for(lambda: c.info().last_seq >= 4, 60, "four intervals")
    out = str(tmp_path / "dur.iopulse")
    t0 = time.monotonic()
    p = subprocess.run(iopulse_cmd("record", "-o", out, "--target", target, "--duration", "3s",
                                   "--replay", "2"), env=CLIENT_ENV, capture_output=True, text=True,
                       timeout=60)
    wall = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    run = load(out)
    assert run.complete and run.end["status"] == "duration" and run.end["exit_code"] is None
    w = run.hosts[0].windows
    (ph,) = run.phases()
    begin = next(m for m in run.hosts[0].marks if m.name == "record" and not m.end)
    end = next(m for m in run.hosts[0].marks if m.name == "record" and m.end)
    print(f"\n{len(w)} windows; the phase {ph.duration_s:.2f} s; record ran {wall:.2f} s")
    # every interval from the replayed ones on, none missing, none twice
    assert all(b.start_monotonic_ns == a.end_monotonic_ns for a, b in zip(w, w[1:])), \
        [(x.start_monotonic_ns, x.end_monotonic_ns) for x in w]
    # the recorder subscribed before its first mark, and the daemon replayed from the first
    # interval that ended within 2 s before the subscription (whenever the recorder started)
    assert w[0].start_monotonic_ns <= begin.monotonic_ns - 2_000_000_000, \
        "--replay 2 did not reach 2 s back before the recording began"
    assert w[-1].end_monotonic_ns >= end.monotonic_ns, "the Update with the end mark is missing"
    # --duration 3s from the begin mark on; the phase lies within the recorder's lifetime
    assert ph.name == "record" and 2.5 < ph.duration_s <= wall + 0.05

    # SIGINT to iopulse record alone (no terminal) is passed on to the command
    out2 = str(tmp_path / "int.iopulse")
    rec = subprocess.Popen(iopulse_cmd("record", "-o", out2, "--target", target, "--", "sleep",
                                       "60"), env=CLIENT_ENV, stderr=subprocess.PIPE, text=True)
    try:
        # once the command runs (the recorder passes SIGINT on from then), not after a fixed
        # time: a SIGINT during a slow start-up would stop the recorder itself; one more
        # Update after that, so that the recorder is surely past starting the command
        n = wait_recording(rec, out2, updates=2)
        wait_recording(rec, out2, updates=n + 1)
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


def test_replay_keeps_the_daemons_intervals(loopdev, daemon, tmp_path):
    """--replay: the history comes interval by interval as the daemon made it (it came merged
    into one Update up to the first phase edge: 111 s windows after a 600 s replay), and
    holds every write diskstats counted meanwhile."""
    lo = loopdev("64M")
    d = daemon("-i", "250ms", "--devices", lo.name)
    target = f"unix:{d.socket}"
    before = wait_idle(lo.name)
    t0 = time.monotonic()
    for i in range(8):      # 8 x 8 direct 4 KiB writes over 2 s of history
        subprocess.run(["dd", "if=/dev/zero", f"of={lo.path}", "bs=4k", "count=8",
                        "oflag=direct", f"seek={8 * i}", "status=none"], check=True, timeout=30)
        time.sleep(0.25)
    after = wait_idle(lo.name)
    history = time.monotonic() - t0
    out = str(tmp_path / "replay.iopulse")
    p = subprocess.run(iopulse_cmd("record", "-o", out, "--target", target, "--duration", "1s",
                                   "--replay", "60"), env=CLIENT_ENV, capture_output=True,
                       text=True, timeout=60)
    print(p.stderr)
    assert p.returncode == 0, p.stderr
    assert "each one daemon interval (0.25 s)" in p.stderr
    run = load(out)
    begin = next(m for m in run.hosts[0].marks if m.name == "record" and not m.end)
    (rp,) = run.end["replay"].values()
    # the replay: the intervals the daemon had published when the recorder asked (seq up to
    # last_seq); those published between the subscription and the begin mark are live, and
    # a recorder slow to read them (a busy machine) gets them merged, as any live subscriber
    before_begin = [u for u in run.hosts[0].updates if u.end_monotonic_ns <= begin.monotonic_ns]
    replayed = [u for u in before_begin if u.seq <= rp["last_seq"]]
    lengths = [(u.end_monotonic_ns - u.start_monotonic_ns) / 1e9 for u in replayed]
    print(f"{len(replayed)} replayed Updates over {history:.2f} s of writes; windows "
          f"{min(lengths):.3f}-{max(lengths):.3f} s")
    assert all(u.merged == 1 for u in replayed), [u.merged for u in replayed]
    assert len(replayed) >= 0.8 * history / 0.25
    assert max(lengths) < 0.5
    writes = sum(u.devices[lo.name].ops["write"].ios for u in replayed if lo.name in u.devices)
    assert writes == after.writes - before.writes == 64
    assert rp["max_merged"] == 1 and rp["updates"] == len(replayed)
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def _sysfs(dev: str, rel: str) -> str:
    try:
        with open(f"/sys/class/block/{dev}/{rel}") as f:
            return f.read().strip()
    except OSError:
        return ""


def test_record_keeps_the_device_settings_at_the_start(loopdev, daemon, tmp_path):
    """Each host's device settings as sysfs shows them when the recording starts, read back
    typed from the run; a scheduler changed between two runs is a difference between them."""
    from iopulse.record import settings_changes

    lo = loopdev("64M", scheduler="mq-deadline")
    with open(f"/sys/block/{lo.name}/queue/iosched/fifo_batch", "w") as f:
        f.write("7")
    with open(f"/sys/block/{lo.name}/queue/read_ahead_kb", "w") as f:
        f.write("64")
    d = daemon("-i", "1s", "--devices", lo.name)
    target = f"unix:{d.socket}"
    with iopulse.Client(target) as c:     # the Info every client gets does not read them
        assert all(x.settings is None for x in c.info().devices)
    runs = []
    for sched in ("mq-deadline", "none"):
        lo.set_scheduler(sched)
        # ground truth: sysfs, read here
        want = {"scheduler": _sysfs(lo.name, "queue/scheduler"),
                "iosched": {n: _sysfs(lo.name, f"queue/iosched/{n}") for n in sorted(
                    os.listdir(f"/sys/block/{lo.name}/queue/iosched"))}
                if os.path.isdir(f"/sys/block/{lo.name}/queue/iosched") else {},
                "nr_requests": int(_sysfs(lo.name, "queue/nr_requests")),
                "read_ahead_kb": int(_sysfs(lo.name, "queue/read_ahead_kb")),
                "write_cache": _sysfs(lo.name, "queue/write_cache") or None,
                "rotational": _sysfs(lo.name, "queue/rotational") == "1",
                "max_sectors_kb": int(_sysfs(lo.name, "queue/max_sectors_kb")),
                "backing": _sysfs(lo.name, "loop/backing_file")}
        out = str(tmp_path / f"{sched}.iopulse")
        p = subprocess.run(iopulse_cmd("record", "-o", out, "--target", target, "--", "true"),
                           env=CLIENT_ENV, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert "does not report device settings" not in p.stderr
        run = load(out)
        (hs,) = run.settings.values()
        assert hs.kernel == os.uname().release
        s = hs.devices[lo.name]
        print(f"{sched}: {s}")
        assert f"[{s.scheduler}]" in want["scheduler"] or want["scheduler"] == s.scheduler
        assert s.scheduler == sched and s.schedulers == want["scheduler"].replace(
            "[", "").replace("]", "").split()
        assert s.iosched == want["iosched"]
        assert (s.nr_requests, s.read_ahead_kb, s.write_cache, s.rotational,
                s.max_sectors_kb, s.model) == \
            (want["nr_requests"], 64, want["write_cache"], want["rotational"],
             want["max_sectors_kb"], want["backing"])
        assert s.queue_depth is None and s.firmware is None     # a loop device has neither
        if sched == "mq-deadline":
            assert s.iosched["fifo_batch"] == "7"
        wbt = _sysfs(lo.name, "queue/wbt_lat_usec")
        assert s.wbt_lat_usec == (int(wbt) if wbt else None)
        runs.append(hs)
    changes = settings_changes(runs[0], runs[1], devices=[lo.name])
    print(changes)
    assert (f"{lo.name}.scheduler", "mq-deadline", "none") in changes
    assert (f"{lo.name}.iosched.fifo_batch", "7", "") in changes
    assert all(k.startswith(f"{lo.name}.scheduler") or k.startswith(f"{lo.name}.iosched.")
               or k == f"{lo.name}.nr_requests" for k, _, _ in changes), changes
    assert d.stop(signal.SIGTERM) == 0, d.describe()


TWO_JOBS = """[global]
filename={dev}
direct=1
size=64M
time_based=1
runtime=1
ioengine=psync

[seqwrite]
rw=write
bs=64k

[randread]
stonewall
rw=randread
bs=4k
"""


def _issued(text: str) -> dict[str, list[int]]:
    """Per job of fio's normal report, its 'issued rwts: total=R,W,T,S'."""
    out, job = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\S+): \(groupid=", line)
        if m:
            job = m.group(1)
        m = re.search(r"issued rwts: total=(\d+),(\d+),(\d+),(\d+)", line)
        if m and job:
            out[job] = [int(x) for x in m.groups()]
    return out


def test_fio_json_report_is_kept_and_the_output_is_as_asked(loopdev, daemon, tmp_path):
    """fio's JSON report in the run, while stdout (or --output) holds what fio was asked to
    print: no JSON where the user asked for none, their JSON where they asked for it."""
    lo = loopdev("128M")
    d = daemon("-i", "1s", "--devices", lo.name)
    target = f"unix:{d.socket}"
    job = tmp_path / "two.fio"
    job.write_text(TWO_JOBS.format(dev=lo.path))

    # the default format to stdout: the normal report, and json+ in the run
    out = str(tmp_path / "a.iopulse")
    p = record(out, [target], ["fio", str(job)])
    assert p.returncode == 0, p.stderr
    assert "fio: its JSON report (json+) is kept in the run" in p.stderr
    assert '"fio version"' not in p.stdout and "{" not in p.stdout
    assert "Run status group 1 (all jobs)" in p.stdout and "Starting 2 processes" in p.stdout
    issued = _issued(p.stdout)
    run = load(out)
    doc = run.fio_output
    assert [j["jobname"] for j in doc["jobs"]] == ["seqwrite", "randread"]
    for j in doc["jobs"]:       # the kept report is this run's: fio's counts in both agree
        assert [j["read"]["total_ios"], j["write"]["total_ios"]] == issued[j["jobname"]][:2]
    assert "bins" in doc["jobs"][1]["read"]["clat_ns"]            # json+
    assert run.tool_outputs[0]["format"] == "json+" and run.tool_outputs[0]["added"]
    # and fio's counts meet the block layer's in the marked phases
    (seq,) = [ph for ph in run.phases() if ph.name == "seqwrite"]
    writes = sum(u.devices[lo.name].ops["write"].ios
                 for u in seq.updates(0, run.hosts[0].updates) if lo.name in u.devices)
    want = doc["jobs"][0]["write"]["total_ios"]
    assert abs(writes - want) <= 0.01 * want, (writes, want)

    # JSON asked for, into a file: the file is fio's JSON, the same the run keeps
    out = str(tmp_path / "b.iopulse")
    fio_json = tmp_path / "fio.json"
    p = record(out, [target], ["fio", "--output-format=json", f"--output={fio_json}",
                               str(job)])
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert load(out).fio_output == json.loads(fio_json.read_text())
    assert load(out).tool_outputs[0]["format"] == "json"

    # the normal report into a file: no JSON in it
    out = str(tmp_path / "c.iopulse")
    txt = tmp_path / "fio.txt"
    txt.write_text("x" * 100000)        # fio truncates it: so does the copy
    p = record(out, [target], ["fio", "--output", str(txt), str(job)])
    assert p.returncode == 0, p.stderr
    text = txt.read_text()
    assert '"fio version"' not in text and "Run status group 1" in text
    assert _issued(text) and set(_issued(text)) == {"seqwrite", "randread"}
    assert load(out).fio_output["jobs"][0]["jobname"] == "seqwrite"
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_phases_import_refuses_other_runs_and_duplicates(loopdev, daemon, tmp_path):
    """fio's JSON of another run is refused (it was accepted and then left out of every
    report); importing twice is refused, --replace imports once; fio 3.33's edge error on
    2 s jobs is said, and --trim-edges trims the job it can."""
    lo = loopdev("128M")
    d = daemon("-i", "1s", "--devices", lo.name)
    target = f"unix:{d.socket}"
    job = tmp_path / "two.fio"
    job.write_text(TWO_JOBS.format(dev=lo.path).replace("runtime=1", "runtime=2"))
    runs = {}
    for name in ("a", "b"):
        out, js = str(tmp_path / f"{name}.iopulse"), tmp_path / f"{name}.json"
        p = record(out, [target], ["fio", "--output-format=json", f"--output={js}", str(job)])
        assert p.returncode == 0, p.stderr
        runs[name] = (out, js)

    def imp(*args: str) -> subprocess.CompletedProcess:
        p = subprocess.run(iopulse_cmd("phases", "import", *args), env=CLIENT_ENV,
                           capture_output=True, text=True, timeout=60)
        print(p.stderr)
        return p

    b, b_json = runs["b"]
    p = imp(b, str(runs["a"][1]))
    assert p.returncode == 2 and "a.json" in p.stderr and "before the recording" in p.stderr
    assert not [ph for ph in load(b).phases() if not ph.exact]
    p = imp(b, str(b_json))
    assert p.returncode == 0
    assert "marked live" in p.stderr            # record marked the jobs through their hooks
    fio = {j["jobname"]: j for j in json.loads(b_json.read_text())["jobs"]}
    if "job_start" not in fio["seqwrite"]:      # fio < 3.36: edges from the report's time
        # (fio's job_runtime may be a few ms over its runtime on a busy machine: 2.02 s)
        assert re.search(r"phase 'seqwrite' \(2\.0\d s\): each edge may be off by 1 s",
                         p.stderr)
        assert re.search(r"phase 'randread' \(2\.0\d s\): each edge may be off by 0\.5 s",
                         p.stderr)
    p = imp(b, str(b_json))
    assert p.returncode == 2 and "already in the run" in p.stderr
    p = imp(b, str(b_json), "--replace", "--trim-edges")
    assert p.returncode == 0 and "2 phase(s) imported before are replaced" in p.stderr
    got = {ph.name: ph for ph in load(b).phases() if not ph.exact}
    assert set(got) == {"seqwrite", "randread"}
    for name, ph in got.items():
        runtime = fio[name]["job_runtime"] / 1000
        # trimmed only where an interval (1 s) is left: seqwrite's 2.0x s with 1 s per edge
        # was trimmed to a few ms, which holds no interval
        if runtime - ph.accuracy_s * 2 >= 1.0:
            assert ph.trimmed_s == ph.accuracy_s
            assert abs(ph.duration_s - (runtime - 2 * ph.accuracy_s)) < 0.002
        else:
            assert ph.trimmed_s == 0 and abs(ph.duration_s - runtime) < 0.002
    assert d.stop(signal.SIGTERM) == 0, d.describe()
