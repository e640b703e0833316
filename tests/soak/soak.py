#!/usr/bin/env python3
"""Soak: iopulsed under an hour of churn, with its RSS, fds, CPU and counts checked.

Two loop devices carry fio load (random reads and writes, rate-limited) for the whole run; a
third is attached, written and detached over and over; subscribers (`iopulse watch`) connect
and are killed with SIGKILL; phases are marked; SIGHUP reloads switch the histogram precision
every 10 s, so the probes are swapped each time. Every report period it prints the daemon's
RSS, open fds, CPU (% of one core) and its read+write counts against /proc/diskstats. At the
end the load stops, the devices go idle and the daemon stops: its counts must equal
diskstats' exactly, and RSS and fds must not have grown past a bound since the reference
report (the first one after the replay ring, 10 minutes, has filled; else the first one). Verdict: PASS or FAIL
with the reasons; exit status 0 or 1.

Usage (root, after a build):
    tests/soak/soak.py                      # one hour, a report per minute
    tests/soak/soak.py --minutes 2 --report-every 20     # what CI runs
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "tests" / "bench"))
sys.path.insert(0, str(REPO / "clients" / "python" / "src"))

from iopulse_testlib import Daemon, diskstats, sum_op, wait_idle  # noqa: E402
from overhead import FILES, LOOPS, make_loop as attach  # noqa: E402

import iopulse  # noqa: E402

CHILDREN: list[subprocess.Popen] = []
RING_FULL_S = 660   # the default server.ring (10 min) and a minute's margin


def detach(dev: str) -> None:
    subprocess.run(["losetup", "-d", dev], capture_output=True)
    if dev in LOOPS:
        LOOPS.remove(dev)


def spawn(argv: list[str], **kw) -> subprocess.Popen:
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, **kw)
    CHILDREN.append(p)
    return p


def stop(p: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in CHILDREN:
        CHILDREN.remove(p)


def cleanup() -> None:
    for p in list(CHILDREN):
        stop(p, signal.SIGKILL)
    for dev in list(LOOPS):
        detach(dev)
    for f in FILES:
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


def proc_stats(pid: int) -> tuple[int, int, float]:
    """RSS bytes, open fds, CPU seconds (user + system) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, fds, cpu


def ios(dev_name: str) -> int:
    d = diskstats(dev_name)
    return d.reads + d.writes


def counted(d: Daemon, name: str) -> int:
    ivs = d.all_intervals()
    return sum_op(ivs, name, "read", "ios") + sum_op(ivs, name, "write", "ios")


def accounting(d: Daemon, name: str) -> str:
    """What the daemon says about a device's IO it did not time, and its drops."""
    ivs = d.all_intervals()
    parts = [f"{k} {sum(sum_op(ivs, name, op, k) for op in ('read', 'write'))}"
             for k in ("completion_unseen", "untimed")]
    drops: dict[str, int] = {}
    for iv in ivs:
        for k, v in iv.get("drops", {}).items():
            drops[k] = drops.get(k, 0) + v
    return f"{name}: " + ", ".join(parts) + "; drops " + ", ".join(
        f"{k} {v}" for k, v in sorted(drops.items()) if v) + "; daemon warnings: " + (
        " | ".join(l for l in d.stderr_text().splitlines() if "warn" in l.lower())[-600:] or "none")


def config(precision: int) -> str:
    # Sync calls of other processes on the machine (a package manager, another test run's
    # fio) would be kept in the snapshot for as long as the daemon runs, an entry per thread
    # ever seen (README: not bounded), and grow the RSS with the machine's churn, not the
    # daemon's: the report names no thread of theirs. (The soak's own load makes no sync
    # calls; the probes and the sync table still run.)
    return (f"interval: 1s\nhistogram:\n  precision: {precision}\n"
            "sync:\n  threads:\n    include: [\"iopulse-soak\"]\n")


def run(a: argparse.Namespace) -> int:
    workdir = tempfile.mkdtemp(prefix="iopulse-soak-")
    cfg = Path(workdir) / "soak.yaml"
    sock = str(Path(workdir) / "d.sock")
    cfg.write_text(config(5))
    load = [attach(256, "/dev/shm") for _ in range(2)]
    names = [os.path.basename(x) for x in load]
    for n in names:
        wait_idle(n)
    start = {n: ios(n) for n in names}
    d = Daemon([a.iopulsed, "-c", str(cfg), "--json", "--socket", sock],
               Path(workdir) / "iopulsed.stderr")
    CHILDREN.append(d.proc)
    d.wait_ready(30)
    seconds = int(a.minutes * 60)
    fios = [spawn(["fio", "--name=soak", f"--filename={dev}", "--rw=randrw", "--bs=4k",
                   "--direct=1", "--ioengine=libaio", "--iodepth=4", "--time_based",
                   f"--runtime={seconds}", f"--rate_iops={a.iops}", "--output-format=json"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for dev in load]
    # a mark waits for the main loop, which may be swapping the probes on a busy machine
    client = iopulse.Client(f"unix:{sock}", timeout=60)
    env = dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python" / "src"))
    rng = random.Random(7)
    t0 = time.monotonic()
    base = proc_stats(d.pid)
    first_minute = None
    last_cpu, last_t = base[2], t0
    next_report = t0 + a.report_every
    next_hup, next_mark, next_churn, next_sub = t0 + 10, t0 + 3, t0 + 5, t0 + 2
    precision, churn, subs, reloads, marks, churned, killed = 5, None, [], 0, 0, 0, 0
    ref_at = None
    problems: list[str] = []
    print(f"soak: {a.minutes:g} min, fio {a.iops} IOPS on {', '.join(names)}; daemon pid "
          f"{d.pid}; RSS {base[0] / 2**20:.1f} MiB, {base[1]} fds", flush=True)
    while time.monotonic() - t0 < seconds:
        now = time.monotonic()
        if not d.running():
            problems.append(f"iopulsed exited at {now - t0:.0f}s: {d.describe()}")
            break
        if now >= next_hup:                    # probe swap: another histogram precision
            precision = 9 - precision
            cfg.write_text(config(precision))
            d.send_signal(signal.SIGHUP)
            reloads += 1
            next_hup += 10
        if now >= next_mark:
            try:
                client.mark_phase("soak", end=marks % 2 == 1, step=str(marks))
                marks += 1
            except iopulse.IopulseError as e:
                problems.append(f"mark failed: {e}")
            next_mark = now + rng.uniform(1, 5)
        if now >= next_churn:                  # hotplug: attach, write, detach
            if churn is None:
                churn = attach(64, "/dev/shm")
                subprocess.run(["dd", "if=/dev/zero", f"of={churn}", "bs=64k", "count=100",
                                "oflag=direct"], capture_output=True)
            else:
                detach(churn)
                churn = None
                churned += 1
            next_churn = now + rng.uniform(2, 6)
        if now >= next_sub:                    # subscribers come, some are killed
            subs.append(spawn([sys.executable, "-m", "iopulse", "--target", f"unix:{sock}",
                               "watch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env))
            if len(subs) > 4:
                victim = subs.pop(rng.randrange(len(subs)))
                stop(victim, signal.SIGKILL)
                killed += 1
            next_sub = now + rng.uniform(1, 4)
        if now >= next_report:
            rss, fds, cpu = proc_stats(d.pid)
            # the reference: once the replay ring (server.ring, 10 min) has filled, if it does
            if first_minute is None or (ref_at is None and now - t0 >= RING_FULL_S):
                first_minute = (rss, fds)
                ref_at = now - t0 if now - t0 >= RING_FULL_S else None
            got = sum(counted(d, n) for n in names)
            want = sum(ios(n) - start[n] for n in names)
            print(f"{now - t0:6.0f}s  RSS {rss / 2**20:6.1f} MiB  fds {fds:3d}  CPU "
                  f"{100 * (cpu - last_cpu) / (now - last_t):5.2f}%  iopulse {got} vs "
                  f"diskstats {want} (the last interval still open)  reloads {reloads} marks "
                  f"{marks} hotplugs {churned} subscribers killed {killed}", flush=True)
            last_cpu, last_t = cpu, now
            next_report += a.report_every
        time.sleep(0.1)
    for p in fios + subs:
        stop(p, signal.SIGKILL if p in subs else signal.SIGTERM)
    if churn:
        detach(churn)
    client.close()
    for n in names:
        wait_idle(n, 30)
    # The killed subscribers' streams are cleaned up within an interval or so (later on a
    # loaded machine): measure once the fds are back within the bound, or after 30 s.
    ref = first_minute or base[:2]
    deadline = time.monotonic() + 30
    time.sleep(1.5)
    while d.running() and proc_stats(d.pid)[1] > ref[1] + 8 and time.monotonic() < deadline:
        time.sleep(0.5)
    rss, fds, cpu = proc_stats(d.pid) if d.running() else (0, 0, 0.0)
    rc = d.stop(signal.SIGTERM, timeout=20)
    if rc != 0:
        problems.append(f"iopulsed exited {rc} on SIGTERM")
    got = {n: counted(d, n) for n in names}
    want = {n: ios(n) - start[n] for n in names}
    for n in names:
        if got[n] != want[n]:
            problems.append(f"{n}: iopulse counted {got[n]} reads+writes, diskstats {want[n]} "
                            f"({accounting(d, n)})")
    if rss - ref[0] > a.rss_growth_mib << 20:
        problems.append(f"RSS grew {(rss - ref[0]) / 2**20:.1f} MiB after the reference report "
                        f"(bound {a.rss_growth_mib} MiB)")
    if fds > ref[1] + 8:
        problems.append(f"open fds grew from {ref[1]} to {fds}")
    print(f"end: RSS {base[0] / 2**20:.1f} -> {rss / 2**20:.1f} MiB (reference report "
          f"{ref[0] / 2**20:.1f}), fds {base[1]} -> {fds}, CPU {cpu - base[2]:.1f} s in "
          f"{time.monotonic() - t0:.0f} s; counts "
          + ", ".join(f"{n} {got[n]} = diskstats {want[n]}" if got[n] == want[n] else
                      f"{n} {got[n]} != diskstats {want[n]}" for n in names)
          + f"; {reloads} reloads, {marks} marks, {churned} hotplugs, {killed} subscribers "
          f"killed", flush=True)
    print("verdict: " + ("PASS" if not problems else "FAIL\n  " + "\n  ".join(problems)))
    return 0 if not problems else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--report-every", type=float, default=60, metavar="S")
    ap.add_argument("--iops", type=int, default=2000, help="fio rate per device")
    ap.add_argument("--rss-growth-mib", type=int, default=16,
                    help="most RSS growth allowed after the first report")
    ap.add_argument("--iopulsed", default=os.environ.get("IOPULSED",
                                                         str(REPO / "build" / "iopulsed")))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("soak: run as root (BPF, loop devices)", file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: (cleanup(), sys.exit(130)))
    try:
        return run(a)
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
