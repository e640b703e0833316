#!/usr/bin/env python3
"""Makes the benchmark examples of README.md and docs/benchmarking.md again, from the code as
it is: a loop device on a file of the disk under /var/tmp, iopulsed watching it and that disk,
six recordings alternating QD1 with no scheduler and QD16 with mq-deadline (a fio file of four
stonewalled 3 s jobs), the first QD1 run's report at 120 columns, the comparison at 150 and
the plots of the first QD16 run. Run as root from the repository, after a build:

    tests/bench/examples.py /var/tmp/examples      # report.txt, compare.txt, plots/, runs

Prints each step as it goes (about three minutes); stops what it started and detaches the loop
device, also when a step fails."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
JOBS = """[global]
filename={dev}
direct=1
size=256M
time_based=1
runtime=3
ioengine={engine}
iodepth={depth}

[seqwrite]
rw=write
bs=128k

[randread]
stonewall
rw=randread
bs=4k

[randwrite]
stonewall
rw=randwrite
bs=4k

[fdatasync]
stonewall
rw=write
bs=4k
fdatasync=1
"""
CONFIGS = {"qd1": ("none", "psync", 1), "qd16": ("mq-deadline", "libaio", 16)}
RUNS = ("a", "b", "c")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode:
        raise SystemExit(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def disk_of(path: str) -> str:
    """The whole disk the file system holding path is on."""
    src = run(["findmnt", "-n", "-o", "SOURCE", "-T", path]).stdout.strip().split("[")[0]
    name = os.path.basename(os.path.realpath(src))
    while os.path.exists(f"/sys/class/block/{name}/partition"):
        name = os.path.basename(os.path.dirname(os.path.realpath(f"/sys/class/block/{name}")))
    return name


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python" / "src"))
    client = [sys.executable, "-m", "iopulse"]
    backing = out / "loop.img"
    run(["truncate", "-s", "512M", str(backing)])
    dev = run(["losetup", "--direct-io=on", "-f", "--show", str(backing)]).stdout.strip()
    name = os.path.basename(dev)
    daemon = None
    try:
        disk = disk_of(str(backing))
        say(f"{dev} on {backing} (disk {disk})")
        run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=256", "oflag=direct"])
        sock = out / "iopulsed.sock"
        err = open(out / "iopulsed.stderr", "w")
        daemon = subprocess.Popen([str(REPO / "build" / "iopulsed"), "-c",
                                   str(REPO / "etc" / "iopulse.yaml"), "-i", "1s", "--devices",
                                   f"{name},{disk}", "--threads", "fio*", "--socket",
                                   str(sock)], stderr=err)
        for _ in range(200):
            if "ready" in (out / "iopulsed.stderr").read_text():
                break
            if daemon.poll() is not None:
                raise SystemExit(f"iopulsed exited {daemon.returncode}: see "
                                 f"{out / 'iopulsed.stderr'}")
            time.sleep(0.1)
        else:
            raise SystemExit("iopulsed did not say ready in 20 s")
        for n in RUNS:
            for cfg, (sched, engine, depth) in CONFIGS.items():
                pathlib.Path(f"/sys/block/{name}/queue/scheduler").write_text(sched)
                job = out / f"{cfg}.fio"
                job.write_text(JOBS.format(dev=dev, engine=engine, depth=depth))
                say(f"recording {cfg}-{n} ({sched}, {engine} QD{depth})")
                run([*client, "record", "--force", "-o", f"{cfg}-{n}.iopulse", "--target",
                     f"unix:{sock}", "--", "fio", job.name], env=env, cwd=out)
        say("report, compare, plots")
        (out / "report.txt").write_text(run([*client, "report", "qd1-a.iopulse"], cwd=out,
                                            env=dict(env, COLUMNS="120")).stdout)
        (out / "compare.txt").write_text(run(
            [*client, "compare", *(f"qd1-{n}.iopulse" for n in RUNS), "--",
             *(f"qd16-{n}.iopulse" for n in RUNS)], cwd=out,
            env=dict(env, COLUMNS="150")).stdout)
        run([*client, "plot", "qd16-a.iopulse", "-o", "plots"], cwd=out, env=env)
        say(f"done: {out}/report.txt, compare.txt, plots/")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        subprocess.run(["losetup", "-d", dev])
        backing.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
