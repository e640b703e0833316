#!/usr/bin/python3
"""Runs inside a virtme-ng guest (the host's root file system, shared read-only): loads the
disk drivers, finds the test disks by the driver chain above them, starts one `iopulsed
--json` over all of them, and for every disk x scheduler runs short fio jobs and compares what
iopulsed counted with the guest's /proc/diskstats. Writes OUT/result.json (read by
tests/vm/matrix.py on the host); never exits without writing it when it can write at all.

Each cell's IO is measured between two idle points of its disk: diskstats before, the fio
jobs, then the disk idle for three of the daemon's intervals (so the daemon has swept
completions the kernel did not report) and diskstats after; the daemon's interval deltas of
that disk from the first interval ending after `before` to the one holding `after` are summed,
each of those edge intervals idle but for the window's own IO (open_edge, close_edge).
The controllers' disks under one scheduler share a window (a round: every disk's jobs run at
once, each disk's numbers its own); otherwise one disk is busy at a time, so the intervals at
either edge hold no other cell's IO of that disk.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

import passthrough

DRIVERS = ["nvme", "megaraid_sas", "ahci", "sd_mod", "virtio_scsi", "virtio_blk", "sym53c8xx",
           "dm_mod", "raid1", "bfq", "ext4"]
# controller name -> the driver that binds somewhere above its disk in sysfs
CONTROLLER_DRIVER = {
    "nvme": "nvme",
    "megaraid_sas": "megaraid_sas",
    "ahci": "ahci",
    "virtio-scsi": "virtio_scsi",
    "virtio-blk": "virtio_blk",
    "lsi53c895a": "sym53c8xx",
}
OPS = ("read", "write", "discard", "flush")
LAT_OPS = ("read", "write")          # held to blktrace (matrix.py, blktruth.py)
LAT_METRICS = ("queue_wait_ns", "service_ns", "total_ns")
COVERAGE_GOAL = 0.9995
PASSTHROUGH_N = 5     # passthrough commands sent in each controller cell


def log(msg):
    print(f"[guest {time.monotonic():8.1f}] {msg}", flush=True)
    with open(os.path.join(ARGS.out, "guest.log"), "a") as f:
        f.write(f"[{time.monotonic():8.1f}] {msg}\n")


def sh(*argv, check=False, timeout=60):
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=check, timeout=timeout)


# ------------------------------------------------------------------------- diskstats --

def diskstats(name):
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if len(p) >= 14 and p[2] == name:
                v = [int(x) for x in p[3:]] + [0] * 17
                return {"read": v[0], "read_bytes": v[2] * 512,
                        "write": v[4], "write_bytes": v[6] * 512,
                        "in_flight": v[8],
                        "discard": v[11], "discard_bytes": v[13] * 512,
                        "flush": v[15], "fields": len(p) - 3}
    raise LookupError(f"{name} not in /proc/diskstats")


def wait_idle(name, timeout=30.0):
    """Nothing in flight and counters unchanged for 200 ms; returns that snapshot."""
    deadline = time.monotonic() + timeout
    prev = None
    while True:
        cur = diskstats(name)
        with open(f"/sys/block/{name}/inflight") as f:
            infl = sum(int(x) for x in f.read().split())
        if cur["in_flight"] == 0 and infl == 0 and cur == prev:
            return cur
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} not idle after {timeout}s: {cur}")
        prev = cur if cur["in_flight"] == 0 and infl == 0 else None
        time.sleep(0.2)


# ----------------------------------------------------------------------------- disks --

def driver_chain(name):
    """Names of the drivers bound to the devices above /sys/block/NAME, nearest first."""
    path = os.path.realpath(f"/sys/block/{name}/device")
    out = []
    while path and path != "/sys/devices" and path != "/":
        drv = os.path.join(path, "driver")
        if os.path.islink(drv):
            out.append(os.path.basename(os.readlink(drv)))
        path = os.path.dirname(path)
    return out


def find_disks(want, size_bytes, timeout):
    """{controller: disk name} for every wanted controller, waiting for slow probes."""
    deadline = time.monotonic() + timeout
    found = {}
    while True:
        for name in sorted(os.listdir("/sys/block")):
            if not re.match(r"^(sd[a-z]+|vd[a-z]+|nvme\d+n\d+)$", name):
                continue
            try:
                with open(f"/sys/block/{name}/size") as f:
                    size = int(f.read()) * 512
            except OSError:
                continue
            if size != size_bytes:
                continue    # not one of ours: never touched
            chain = driver_chain(name)
            for ctl in want:
                if ctl not in found and CONTROLLER_DRIVER[ctl] in chain:
                    found[ctl] = name
        if len(found) == len(want) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def schedulers(name):
    with open(f"/sys/block/{name}/queue/scheduler") as f:
        return [s.strip("[]") for s in f.read().split()]


def set_scheduler(name, sched):
    with open(f"/sys/block/{name}/queue/scheduler", "w") as f:
        f.write(sched)
    cur = [s for s in open(f"/sys/block/{name}/queue/scheduler").read().split()
           if s.startswith("[")]
    if cur != [f"[{sched}]"]:
        raise RuntimeError(f"scheduler of {name} is {cur}, wanted {sched}")


def discard_supported(name):
    try:
        with open(f"/sys/block/{name}/queue/discard_max_bytes") as f:
            return int(f.read()) > 0
    except OSError:
        return False


# ---------------------------------------------------------------------------- daemon --

class Daemon:
    def __init__(self, argv, out_dir, name="iopulsed"):
        self.jsonl = open(os.path.join(out_dir, f"{name}.jsonl"), "w")
        self.err_path = os.path.join(out_dir, f"{name}.stderr")
        self.err = open(self.err_path, "w")
        self.intervals = []
        self.bad_lines = 0
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err,
                                     stdin=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.jsonl.write(line)
            self.jsonl.flush()
            try:
                iv = json.loads(line)
            except ValueError:
                self.bad_lines += 1
                continue
            if iv.get("type") != "interval":
                continue
            with self.cv:
                self.intervals.append(iv)
                self.cv.notify_all()

    def stderr_text(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(r"\bready\b", self.stderr_text()):
                return None
            if self.proc.poll() is not None:
                tail = self.stderr_text().strip().splitlines()[-3:]
                return f"iopulsed exited {self.proc.returncode} before ready: " + " | ".join(tail)
            time.sleep(0.2)
        return f"no 'ready' from iopulsed within {timeout:.0f}s"

    def wait_interval(self, pred, timeout):
        """Waits for an interval matching pred; True if one came."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                if any(pred(iv) for iv in self.intervals):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return False
                self.cv.wait(min(left, 0.5))

    def between(self, t0_ns, t1_ns):
        with self.cv:
            return [iv for iv in self.intervals
                    if iv["end_mono_ns"] > t0_ns and iv["start_mono_ns"] < t1_ns]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(10)
        return self.proc.returncode


# iopulsed's flags of each mode the guest can run (--modes)
MODE_FLAGS = {"full": ["--mode", "full"],
              "request": ["--mode", "full", "--queue-from", "request"],
              "completion": ["--mode", "completion"]}


class Daemons:
    """One iopulsed per mode of --modes, all at once over the same disks; the first mode's
    is the cell's own (its row, its sync counts), the others' counts and histograms of the
    same window are held to the same truths (window())."""

    def __init__(self, daemons):
        self.all = daemons                  # mode -> Daemon, the first the cell's own
        self.first = next(iter(daemons.values()))

    def wait_interval(self, pred, timeout):
        """Waits until every daemon gave an interval matching pred; True if all did."""
        deadline = time.monotonic() + timeout
        return all(d.wait_interval(pred, max(deadline - time.monotonic(), 0))
                   for d in self.all.values())

    def between(self, t0_ns, t1_ns):
        return {mode: d.between(t0_ns, t1_ns) for mode, d in self.all.items()}

    def exited(self):
        """Why a daemon is gone ("iopulsed (mode) exited N during the run: ..."), or None."""
        for mode, d in self.all.items():
            if d.proc.poll() is not None:
                return (f"iopulsed ({mode}) exited {d.proc.returncode} during the run: "
                        + " | ".join(d.stderr_text().strip().splitlines()[-2:]))
        return None


class Blktrace:
    """blktrace over the test disks for the whole run, started before iopulsed (so its probe
    runs first at every tracepoint, as with the host's truth). Its relay files are mmapped,
    which the 9p output directory refuses: they go to the guest's /tmp and are copied out
    at the end, one file per disk and CPU (DISK.blktrace.N), for matrix.py to read."""

    DIR = "/tmp/iop-blktrace"

    def __init__(self, disks, timeout=60):
        self.disks = disks
        self.watchers = []
        if not os.path.isdir("/sys/kernel/debug/block"):
            sh("mount", "-t", "debugfs", "debugfs", "/sys/kernel/debug")
        os.makedirs(self.DIR, exist_ok=True)
        self.log_path = os.path.join(ARGS.out, "blktrace.log")
        # 8 MiB of relay buffers per disk and CPU, in 8 parts: its reader wakes every 0.5 s
        # and gets little CPU while five disks' jobs run at once (2 MiB, blktrace's
        # default, dropped 3,583 events of one disk in a round of five). Its readers run
        # at SCHED_FIFO, below the stall watchers: at the default policy they still fell
        # behind three daemons and five disks' jobs (6.18, 7.3: 826 to 11,891 events of one disk
        # dropped in a round of three modes). Timings under TCG mean nothing; the records do.
        argv = ["chrt", "-f", "40", "blktrace", "-b", "1024", "-n", "8", "-D", self.DIR]
        for d in disks:
            argv += ["-d", f"/dev/{d}"]
        self.proc = subprocess.Popen(argv, stdout=open(self.log_path, "w"),
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not all(self._enabled(d) for d in disks):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"blktrace did not start (exit {self.proc.poll()}): "
                                   + self._log_tail())
            time.sleep(0.1)
        # one stall watcher per CPU: the longest stall a cell's window holds widens the
        # margin of its moved IOs (blktruth.py stall_margin())
        for cpu in sorted(os.sched_getaffinity(0)):
            path = os.path.join(self.DIR, f"stalls.{cpu}")
            self.watchers.append((path, subprocess.Popen(
                [sys.executable, os.path.join(os.path.dirname(__file__), "stallwatch.py"),
                 str(cpu), path], stdin=subprocess.DEVNULL)))

    def stop_watchers(self):
        """The watchers' stalls, [[end_ns, late_ns], ...] by end."""
        stalls = []
        for path, proc in self.watchers:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            try:
                with open(path) as f:
                    stalls += [[int(w) for w in ln.split()] for ln in f
                               if re.fullmatch(r"\d+ \d+\n?", ln)]
                os.unlink(path)
            except OSError as e:
                log(f"stall watcher {path}: {e}")
        self.watchers = []
        return sorted(stalls)

    @staticmethod
    def _enabled(disk):
        try:
            with open(f"/sys/block/{disk}/trace/enable") as f:
                return f.read().strip() == "1"
        except OSError:
            return False

    def _log_tail(self):
        with open(self.log_path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-3:])

    def stop(self):
        """Stops tracing, copies the files out; {"dropped": {disk: n}, "events": {...},
        "files": [...], "error": ...}."""
        info = {"disks": self.disks, "dropped": {}, "events": {}, "files": [], "error": None,
                "stalls": self.stop_watchers()}
        t = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                info["error"] = "blktrace did not stop within 120 s"
        info["stop_s"] = round(time.monotonic() - t, 1)
        with open(self.log_path, errors="replace") as f:
            text = f.read()
        # "=== sda ===" ... "Total: 18029 events (dropped 0), 846 KiB data"
        for name, body in re.findall(r"=== (\S+) ===\n(.*?)(?=\n===|\Z)", text, re.S):
            m = re.search(r"Total:\s+(\d+) events \(dropped (\d+)\)", body)
            if m:
                info["events"][name] = int(m.group(1))
                info["dropped"][name] = int(m.group(2))
        if not info["error"] and set(info["dropped"]) != set(self.disks):
            info["error"] = "blktrace's summary names no drop count for " + ", ".join(
                sorted(set(self.disks) - set(info["dropped"]))) + ": " + self._log_tail()
        t = time.monotonic()
        dest = os.path.join(ARGS.out, "blktrace")
        os.makedirs(dest, exist_ok=True)
        for name in sorted(os.listdir(self.DIR)):
            with open(os.path.join(self.DIR, name), "rb") as src, \
                    open(os.path.join(dest, name), "wb") as dst:
                while True:
                    buf = src.read(1 << 20)
                    if not buf:
                        break
                    dst.write(buf)
            info["files"].append(name)
        info["copy_s"] = round(time.monotonic() - t, 1)
        return info


def daemon_features(text):
    """What iopulsed said it enabled or turned off, from its log."""
    feats = {"attach": None, "sync": "on", "warnings": [], "probes": None}
    m = re.search(r"probes attached \(([^)]*)\)", text)
    if m:
        feats["probes"] = m.group(1)
        feats["attach"] = m.group(1).split(",")[0].strip()
    m = re.search(r"attach mode (\S+)", text)
    if m:
        feats["attach"] = m.group(1)
    for line in text.splitlines():
        if re.search(r"\b(warning|error)\b", line):
            feats["warnings"].append(line.strip())
        m = re.search(r"sync tracking \([^)]*\) is off: ([^;(]*)", line)
        if m:
            feats["sync"] = "off"
            feats["sync_off_reason"] = m.group(1).strip()
    return feats


# ------------------------------------------------------------------------------- fio --

def workloads(disk, secs, size):
    common = dict(filename=f"/dev/{disk}", direct=1, size=size, randrepeat=0,
                  time_based=1, runtime=f"{int(secs * 1000)}ms")
    w = [
        ("libaio-qd16-randrw-4k", dict(rw="randrw", rwmixread=50, bs="4k", ioengine="libaio",
                                       iodepth=16)),
        ("psync-8jobs-randrw-4k", dict(rw="randrw", rwmixread=50, bs="4k", ioengine="psync",
                                       numjobs=8)),
        ("fdatasync-4k", dict(rw="randwrite", bs="4k", ioengine="psync", fdatasync=1)),
        ("seqwrite-1m", dict(rw="write", bs="1M", ioengine="libaio", iodepth=4)),
    ]
    if discard_supported(disk):
        w.append(("trim-64k", dict(rw="randtrim", bs="64k", ioengine="psync")))
    return [(n, {**common, **o}) for n, o in w]


def run_fio(jobs):
    """One fio process running jobs [(name, options)] at the same time (one fio start under
    TCG costs about a second); its JSON output."""
    argv = ["fio", "--output-format=json"]
    for name, opts in jobs:
        argv.append(f"--name={name}")
        argv += [f"--{k}={v}" for k, v in opts.items()]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"fio {' '.join(n for n, _ in jobs)} exit {r.returncode}: "
                           f"{r.stderr.strip()[-300:]}")
    out = r.stdout
    res = json.loads(out[out.index("{"):])     # fio may print notes before the JSON
    return res


def fio_sync_calls(res):
    """fsync/fdatasync calls fio made, summed over its jobs (fio 3.33 counts them as
    samples of sync.lat_ns and leaves sync.total_ios 0: whichever is set)."""
    n = 0
    for job in res["jobs"]:
        s = job.get("sync", {})
        n += max(int(s.get("total_ios", 0)), int(s.get("lat_ns", {}).get("N", 0)))
    return n


# ------------------------------------------------------------------------------ cell --

def dev_entries(ivs, name):
    for iv in ivs:
        for d in iv["devices"]:
            if d["name"] == name:
                yield iv, d


def wait_idle_all(disks):
    return {d: wait_idle(d) for d in disks}


def run_jobs(cell, jobs):
    """Runs the fio jobs at the same time; their counts go into cell["jobs"]; returns the
    fdatasync calls fio made."""
    res = run_fio(jobs)
    fio_sync = 0
    for name, _ in jobs:
        mine = {"jobs": [j for j in res["jobs"] if j["jobname"] == name]}
        if not mine["jobs"]:
            raise RuntimeError(f"fio reported nothing for job {name}")
        calls = fio_sync_calls(mine)
        fio_sync += calls
        cell["jobs"][name] = {
            "read": sum(j["read"]["total_ios"] for j in mine["jobs"]),
            "write": sum(j["write"]["total_ios"] for j in mine["jobs"]),
            "trim": sum(j.get("trim", {}).get("total_ios", 0) for j in mine["jobs"]),
            "sync": calls}
    return fio_sync


# The daemons' intervals that hold the window's edges hold time outside it too: IO there
# (udev's probes, under TCG in bursts seconds apart: 45 reads more than the diskstats
# delta on 5.10) would count for iopulsed and not for diskstats. Each edge is taken where
# the disks were idle through the whole interval that holds it.
EDGE_TRIES = 10


def idle_edge(daemons, disks, bound, where):
    """diskstats of the idle disks and the time they were taken, once the daemons' interval
    whose bound ("start_mono_ns" or "end_mono_ns") lies at or after that time is out, with
    nothing moved meanwhile: retaken up to EDGE_TRIES times. where: "before" or "after" the
    jobs, for the messages."""
    for _ in range(EDGE_TRIES):
        idle = wait_idle_all(disks)
        t = time.monotonic_ns()
        if not daemons.wait_interval(lambda iv: iv[bound] >= t, 30):
            raise RuntimeError(f"iopulsed gave no interval for 30 s {where} the jobs"
                               + (f" ({daemons.exited()})" if daemons.exited() else ""))
        if {d: diskstats(d) for d in disks} == idle:
            return idle, t
        log(f"{' '.join(disks)}: IO {where} the window; taking its edge again")
    raise RuntimeError(f"{' '.join(disks)}: never idle for an interval {where} the jobs")


def open_edge(daemons, disks):
    """The window's start: the interval that holds it holds no IO from before it."""
    return idle_edge(daemons, disks, "start_mono_ns", "before")[0]


def close_edge(daemons, disks):
    """The window's end and its time: no IO after them is in the daemons' intervals of the
    window."""
    return idle_edge(daemons, disks, "end_mono_ns", "after")


def window(daemons, disks, body, cell):
    """diskstats of disks idle before, body(), the disks idle for three intervals, diskstats
    after: (before, after, the first daemon's intervals inside the window). The window's
    bounds (CLOCK_MONOTONIC ns, blktrace's clock too) go into cell["window_ns"]; the other
    modes' daemons are held to the same diskstats here (cell["modes"], their reasons
    named by mode)."""
    before = open_edge(daemons, disks)
    t0 = time.monotonic_ns()
    body()
    wait_idle_all(disks)
    # udev probes a device fio wrote to once fio closes it (blkid, and the lvm and mdadm its
    # rules run on a stacked one): under TCG in bursts up to seconds apart, and a burst after
    # the closing snapshot would be counted by iopulsed and not in that diskstats delta
    # A round closes five disks at once: on 5.10 with three daemons beside busy-node.sh the
    # guest's udev took over 90 s to settle. It is waited for up to 10 minutes; what it still
    # does after that shows as IO the diskstats delta has and the cell fails on it.
    try:
        sh("udevadm", "settle", "--timeout=540", timeout=600)
    except subprocess.TimeoutExpired:
        log(f"{' '.join(disks)}: udev did not settle within 600 s")
    wait_idle_all(disks)
    t_idle = time.monotonic_ns()
    iv_ns = int(ARGS.interval * 1e9)
    # three whole intervals with the disk idle: the daemon has swept what it would sweep
    if not daemons.wait_interval(lambda iv: iv["start_mono_ns"] >= t_idle + 2 * iv_ns, 30):
        raise RuntimeError("iopulsed gave no interval for 30 s after the jobs"
                           + (f" ({daemons.exited()})" if daemons.exited() else ""))
    after, t1 = close_edge(daemons, disks)
    cell["window_ns"] = [t0, t1]
    by_mode = daemons.between(t0, t1)
    if ARGS.blktrace:
        cell["latency_hist"] = {mode: {d: merged_latency(ivs, d) for d in disks}
                                for mode, ivs in by_mode.items()}
    cell["modes"] = {}
    fio_sync = sum(j.get("sync", 0) for j in cell.get("jobs", {}).values())
    by_disk = cell.get("sync_by_disk")         # fio's calls per disk, where jobs had one each
    for mode in ARGS.modes[1:]:
        per = {}
        for d in disks:
            # --queue-from request keeps no bio records: the empty PREFLUSH write each fsync
            # or fdatasync sends, counted as a write and never dispatched itself, has no time
            # (a file system sends some of its own: the host counts them in the trace,
            # blktruth.request_coverage)
            untimeable = 0 if mode != "request" else by_disk.get(d, 0) if by_disk else fio_sync
            st, rs = disk_counts(by_mode[mode], d, before[d], after[d], mode, untimeable)
            per[d] = {k: st[k] for k in ("iopulse", "iopulse_ios", "timed", "completion_unseen",
                                         "untimed", "coverage", "diskstats_ios")}
            cell["reasons"] += [f"[{mode}] " + (f"{d}: " if len(disks) > 1 else "") + x
                                for x in rs]
        cell["modes"][mode] = {
            "iopulse_ios": sum(p["iopulse_ios"] for p in per.values()),
            "timed": sum(p["timed"] for p in per.values()), "per_disk": per}
    return before, after, by_mode[ARGS.modes[0]]


def merged_latency(ivs, disk):
    """disk's queue wait, service and total histograms of reads and writes over the window,
    each interval's buckets added up (--json-buckets), for matrix.py to hold to blktrace's
    per-IO times (tests/vm/blktruth.py)."""
    prec = None
    ops = {op: {m: {} for m in LAT_METRICS} for op in LAT_OPS}
    no_q = {op: 0 for op in LAT_OPS}
    for iv, d in dev_entries(ivs, disk):
        prec = iv["histogram"]["precision"]
        for op in LAT_OPS:
            no_q[op] += d["ops"][op]["no_queue_ts"]
            for m in LAT_METRICS:
                for i, c in (d["ops"][op][m] or {}).get("buckets", []):
                    ops[op][m][i] = ops[op][m].get(i, 0) + c
    # no_queue_ts: IOs counted without a submission time (no queue wait, no total; in the
    # completion mode no dispatch stamp): what the histograms hold fewer, declared
    # lost: dispatches and completions of the window's devices the kernel skipped every
    # program of (disk_counts): an IO each at most without a sample, declared
    return {"precision": prec, "no_queue_ts": no_q,
            "lost": chain_losses(ivs, DISPATCH_CHAIN + COMPLETION_CHAIN),
            "ops": {op: {m: sorted(b.items()) for m, b in ms.items()} for op, ms in ops.items()}}


# The first program of each chain of block programs: its `missed` counts the events the
# kernel skipped that no spare after it made good (docs/kernels.md: from 7.0 a task preempted
# inside every program of a chain on one CPU), for every device of the window
DISPATCH_CHAIN = ("iop_rq_issue", "iop_rq_issue_raw")
COMPLETION_CHAIN = ("iop_rq_complete", "iop_rq_complete_raw", "iop_compl", "iop_compl_raw")
# ... and of the submission chains: a bio submission or split skipped leaves its IO without a
# submission time (no_queue_ts), an empty PREFLUSH write (timed from its bio alone) untimed
BIO_CHAIN = ("iop_bio_queue", "iop_bio_queue_raw", "iop_bio_split", "iop_bio_split_raw")
# the bytes a lost completion may leave uncounted: the largest request of the jobs (1 MiB)
LOST_BYTES_MAX = 1 << 20


def missed_runs(ivs, keep):
    """The runs the kernel skipped over the window (`missed` in the intervals' bpf.programs)
    of the programs whose name keep() takes."""
    return sum(p.get("missed", 0) for iv in ivs for p in (iv.get("bpf") or {}).get("programs", [])
               if keep(p["name"]))


def chain_losses(ivs, names):
    return missed_runs(ivs, lambda n: n in names)


def disk_counts(ivs, disk, before, after, mode=None, untimeable=0):
    """What iopulsed (of mode, default the cell's own) counted on disk over the window next
    to the diskstats delta, and the reasons they differ; up to untimeable untimed IOs count
    as timed for the coverage goal. A dispatch or completion the kernel skipped every program
    of (chain_losses, declared by iopulsed) may leave an IO untimed or unseen, a completion
    (of a part, of a flush sequence's data, of an IO whose record went) the IO or its bytes
    uncounted: the window's declared losses bound those, never more."""
    truth = {op: after[op] - before[op] for op in OPS}
    truth_bytes = {op: after[op + "_bytes"] - before[op + "_bytes"]
                   for op in ("read", "write", "discard")}
    ents = [d for _, d in dev_entries(ivs, disk)]
    got = {op: sum(d["ops"][op]["ios"] for d in ents) for op in OPS}
    got_bytes = {op: sum(d["ops"][op]["bytes"] for d in ents)
                 for op in ("read", "write", "discard")}
    unseen = sum(d["ops"][op]["completion_unseen"] for d in ents for op in OPS)
    untimed = sum(d["ops"][op]["untimed"] for d in ents for op in OPS)
    # latency samples: the service time of every dispatched request, plus the empty
    # REQ_PREFLUSH writes fsync and fdatasync send (counted as writes, never dispatched
    # themselves: their sample is preflush_latency_ns), which the JSON does not tell apart
    # from PREFLUSH writes with data (below).
    # the completion-only mode times an IO from its set-up stamp: its total latency sample
    # (a service sample only where the dispatch was stamped apart from the set-up)
    sampled = "total_ns" if (mode or ARGS.modes[0]) == "completion" else "service_ns"
    service = sum(d["ops"][op][sampled]["count"] for d in ents for op in OPS)
    preflush = sum(d["flush"]["preflush"] for d in ents)
    fua = sum(d["flush"]["fua"] for d in ents)
    # flush.preflush counts the PREFLUSH writes with data too, flush.fua the FUA writes with
    # or without a PREFLUSH: the empty PREFLUSH writes (a preflush sample, no service one)
    # are preflush - fua where every FUA write carries a PREFLUSH and every PREFLUSH write
    # with data a FUA (md's superblocks, the journal's commits), up to preflush where FUA
    # writes carry none (a file system's own)
    lo, hi = service + preflush - min(fua, preflush), service + preflush
    ios_truth = sum(truth.values())
    ios_got = sum(got.values())
    timed = min(max(ios_got - unseen - untimed, lo), hi)
    st = {"diskstats": truth, "diskstats_bytes": truth_bytes, "diskstats_ios": ios_truth,
          "iopulse": got, "iopulse_bytes": got_bytes, "iopulse_ios": ios_got,
          "timed": timed, "service_samples": service, "preflush": preflush, "fua": fua,
          "completion_unseen": unseen, "untimed": untimed,
          "requeues": sum(d.get("requeues", 0) for d in ents),
          "coverage": (timed / ios_truth) if ios_truth else None}
    lost_d, lost_c = chain_losses(ivs, DISPATCH_CHAIN), chain_losses(ivs, COMPLETION_CHAIN)
    st.update({"dispatches_lost": lost_d, "completions_lost": lost_c})
    uncounted = sum(truth[op] - got[op] for op in OPS if got[op] < truth[op])
    short_bytes = sum(truth_bytes[op] - got_bytes[op] for op in truth_bytes
                      if got_bytes[op] < truth_bytes[op])
    lost = f" ({lost_d} dispatches, {lost_c} completions lost in the window)" \
        if lost_d or lost_c else ""
    r = []
    for op in OPS:
        if got[op] > truth[op] or (got[op] < truth[op] and uncounted > lost_c):
            r.append(f"{op} ios {got[op]} != diskstats {truth[op]}{lost}")
    for op in ("read", "write", "discard"):
        if got_bytes[op] > truth_bytes[op] or (got_bytes[op] < truth_bytes[op] and
                                               short_bytes > lost_c * LOST_BYTES_MAX):
            r.append(f"{op} bytes {got_bytes[op]} != diskstats {truth_bytes[op]}{lost}")
    if timed + unseen + untimed != ios_got:
        r.append(f"IOs not accounted for: {lo}-{hi} timed + {unseen} unseen + {untimed} "
                 f"untimed != {ios_got}")
    # a bio record evicted from a full set (drops.bio_evicted, declared) leaves an empty
    # PREFLUSH write that waits for the flush machinery untimed (7.3, bfq: 1 in 1,704)
    evicted = sum(iv["drops"].get("bio_evicted", 0) for iv in ivs)
    st["bio_evicted"] = evicted
    # IOs no completion program closed, closed and timed at block_io_done (6.5 and later)
    st["completed_at_accounting"] = sum(iv["drops"].get("completed_at_accounting", 0)
                                        for iv in ivs)
    lost_b = chain_losses(ivs, BIO_CHAIN)
    st["submissions_lost"] = lost_b
    declared = min(unseen + untimed - min(untimed, untimeable) + uncounted,
                   lost_d + lost_c + evicted + lost_b)
    if ios_truth and (timed + min(untimed, untimeable) + declared) / ios_truth < COVERAGE_GOAL:
        r.append(f"latency coverage {100 * timed / ios_truth:.2f}% < "
                 f"{100 * COVERAGE_GOAL:.2f}% ({unseen} unseen, {untimed} untimed"
                 + (f", {untimeable} of them allowed" if untimeable else "")
                 + (f", {declared} declared lost: the kernel's skips, evicted bio records"
                    if declared else "") + ")")
    return st, r


def measure_round(daemon, kernel, members, sched, feats):
    """The cells of members [(controller, disk)] under sched, measured at once: one window
    in which every disk gets its passthrough commands, then one fio runs every disk's jobs
    side by side (under TCG a window costs far more than its jobs). Each disk's counts,
    diskstats deltas, sync calls and blktrace IOs are its own; the window is shared."""
    disks = [d for _, d in members]
    cells = {d: {"kernel": kernel, "controller": c, "disk": d, "scheduler": sched,
                 "features": feats, "jobs": {}, "reasons": []} for c, d in members}
    for d in disks:
        set_scheduler(d, sched)
    shared: dict = {"jobs": {}, "reasons": [], "sync_by_disk": {}}

    def body():
        for c, d in members:
            cells[d]["passthrough"] = send_passthrough(d, c)
        # the jobs of n disks share the guest's CPUs: n times a cell's run time keeps each
        # disk's IOs and fdatasync calls near what a cell of its own gets
        secs = ARGS.seconds * len(disks)
        jobs = [(f"{d}-{n}", o) for d in disks for n, o in workloads(d, secs, ARGS.fio_size)]
        run_jobs(shared, jobs)
        for d in disks:
            mine = {k[len(d) + 1:]: v for k, v in shared["jobs"].items()
                    if k.startswith(d + "-")}
            cells[d]["jobs"] = mine
            shared["sync_by_disk"][d] = sum(v["sync"] for v in mine.values())

    before, after, ivs = window(daemon, disks, body, shared)
    out = []
    for d in disks:
        cell = cells[d]
        cell["window_ns"] = shared["window_ns"]
        if "latency_hist" in shared:
            cell["latency_hist"] = {m: {d: h[d]} for m, h in shared["latency_hist"].items()}
        cell["modes"] = {m: {"iopulse_ios": v["per_disk"][d]["iopulse_ios"],
                             "timed": v["per_disk"][d]["timed"],
                             "per_disk": {d: v["per_disk"][d]}}
                         for m, v in shared["modes"].items()}
        for r in shared["reasons"]:           # "[mode] disk: why" -> "[mode] why"
            tag, _, rest = r.partition(" ")
            if rest.startswith(d + ": "):
                cell["reasons"].append(f"{tag} {rest[len(d) + 2:]}")
            elif len(disks) == 1:
                cell["reasons"].append(r)
        out.append(finish_cell(cell, ivs, before[d], after[d],
                               round_sync=sum(shared["sync_by_disk"].values())))
    return out


def finish_cell(cell, ivs, before, after, round_sync=None):
    """A controller cell's counts next to diskstats and fio, and its reasons. round_sync: the
    fdatasync calls fio made on all of the round's disks."""
    disk, ctl = cell["disk"], cell["controller"]
    fio_sync = sum(j["sync"] for j in cell["jobs"].values())
    st, reasons = disk_counts(ivs, disk, before, after)
    st.pop("requeues")
    st.pop("fua")
    ios_truth = st["diskstats_ios"]
    threads = [t for iv in ivs for t in iv.get("threads", [])
               if t.get("device") == disk and t.get("comm", "").startswith("fio")]
    io_sync = sum(t["fsync"] + t["fdatasync"] for t in threads)
    cell.update(st)
    cell.update({"fio_sync": fio_sync, "iopulse_sync": io_sync, "intervals": len(ivs),
                 "missed_events": sum(iv["drops"]["missed_events"] for iv in ivs)})
    r = cell["reasons"]
    pt = cell["passthrough"]
    if ctl == "nvme" and pt.get("diskstats_iostats_passthrough") == 0:
        r.append("passthrough: the kernel counted none of the NVMe reads with "
                 "iostats_passthrough 1: that path of iopulsed went untested")
    if ios_truth < 100:
        r.append(f"workload too small: {ios_truth} IOs in diskstats")
    for x in reasons:
        if x.startswith("latency coverage") and st["untimed"] and st["untimed"] == fio_sync:
            x = x[:-1] + ("; untimed = the fdatasync calls: the empty PREFLUSH writes they "
                          "send have no latency sample)")
        r.append(x)
    # one disk's fdatasync job can starve among five disks' jobs under load (bfq, 6.12, beside
    # busy-node.sh: 0 calls in 7.5 s): the sync path goes untested only if all of them did
    if fio_sync == 0 and not round_sync:
        r.append("fio made no fdatasync call")
    elif fio_sync == 0:
        cell["note"] = "fio made no fdatasync call on this disk (others of its round did)"
    # Sync tracking that iopulsed itself said is off (a kernel without what it needs, one
    # warning line: docs/kernels.md) is shown as off, not compared; sync
    # tracking that is on must count every call.
    cell["sync_off"] = cell["features"].get("sync") == "off"
    if not cell["sync_off"] and not sync_held(cell, ivs, io_sync, fio_sync):
        r.append(f"sync calls {io_sync} != fio {fio_sync}" + sync_skips(cell))
    return cell


def sync_held(cell, ivs, io_sync, fio_sync):
    """iopulsed's sync calls against fio's. A call is lost, and named, when the kernel
    skipped a sync program (a classic tracepoint's program does not run while its CPU's
    bpf_prog_active is held: by a task preempted inside a tracing program, 7.0+, or inside
    a BPF map syscall); the skips count every device's, so a cell may fall short of fio by
    up to the window's skips, never more, and never above it."""
    missed = missed_runs(ivs, lambda n: n.startswith(("iop_enter_", "iop_exit_")))
    cell["sync_missed"] = missed
    return fio_sync - missed <= io_sync <= fio_sync


def sync_skips(cell):
    return f" ({cell['sync_missed']} skipped sync program runs)" if cell["sync_missed"] else ""


def send_passthrough(disk, ctl):
    """PASSTHROUGH_N passthrough commands on the idle disk (passthrough.py), and how many of
    them the kernel counted in /proc/diskstats (5.10 counts them, 6.1 and 6.12 do not)."""
    def sent():
        ds0 = wait_idle(disk)
        kind = passthrough.send(disk, ctl, PASSTHROUGH_N)
        ds1 = wait_idle(disk)
        return kind, sum(ds1[op] - ds0[op] for op in OPS)

    kind, counted = sent()
    log(f"{disk}: {PASSTHROUGH_N} x {kind}; diskstats counted {counted}")
    res = {"sent": PASSTHROUGH_N, "kind": kind, "diskstats": counted}
    # 6.13+: the disk's queue/iostats_passthrough makes diskstats count those that move whole
    # blocks through a bio with its disk set (NVMe's reads here)
    attr = f"/sys/block/{disk}/queue/iostats_passthrough"
    if os.path.exists(attr):
        with open(attr, "w") as f:
            f.write("1")
        try:
            kind, res["diskstats_iostats_passthrough"] = sent()
        finally:
            with open(attr, "w") as f:
                f.write("0")
        log(f"{disk}: with iostats_passthrough 1: diskstats counted "
            f"{res['diskstats_iostats_passthrough']}")
    return res


# ---------------------------------------------------------------------- extra cells --
# Stacked devices (LVM linear and striped, md raid1) on disks of their own, one SCSI disk
# whose queue_depth is 1, one queue of 4 tags. Built before iopulsed starts (no udev: LVM
# and mdadm are told so), measured after the controller cells.

EXTRA = ["lvm-linear", "lvm-striped", "md-raid1", "scsi-qd1", "nr_requests-4", "split-64k",
         "merge-seq4k", "ext4"]
EXTRA_SCHED = {"nr_requests-4": "mq-deadline", "merge-seq4k": "mq-deadline",
               "ext4": "mq-deadline"}
STACKS = {"lvm-linear": 1, "lvm-striped": 2, "md-raid1": 2}    # cell -> member disks
OSD_ID = 7
CEPH_DIR = "/tmp/iop-ceph-osd"
LVM_ENV = dict(os.environ, DM_DISABLE_UDEV="1", LVM_SUPPRESS_FD_WARNINGS="1")


def find_stack_disks(n, size_bytes, timeout):
    """n virtio-scsi disks of size_bytes (the stacks' own), by name."""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for name in os.listdir("/sys/block"):
            if not re.match(r"^sd[a-z]+$", name):
                continue
            try:
                with open(f"/sys/block/{name}/size") as f:
                    if int(f.read()) * 512 != size_bytes:
                        continue
            except OSError:
                continue
            if "virtio_scsi" in driver_chain(name):
                found.append(name)
        found.sort(key=lambda x: (len(x), x))
        if len(found) >= n or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def lvm(members, *argv):
    filt = ", ".join(f'"a|^/dev/{m}$|"' for m in members) + ', "r|.*|"'
    cfg = ("activation { udev_sync = 0 udev_rules = 0 monitoring = 0 } "
           "devices { obtain_device_list_from_udev = 0 hints = \"none\" "
           f"filter = [ {filt} ] }} "
           "global { locking_dir = \"/tmp/lvm-lock\" } backup { backup = 0 archive = 0 }")
    r = subprocess.run(["lvm", argv[0], "--config", cfg] + list(argv[1:]),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=LVM_ENV, stdin=subprocess.DEVNULL, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"lvm {' '.join(argv)} exit {r.returncode}: "
                           + r.stdout.strip()[-300:])
    return r.stdout


def dm_node(dm_name):
    for name in os.listdir("/sys/block"):
        try:
            with open(f"/sys/block/{name}/dm/name") as f:
                if f.read().strip() == dm_name:
                    return name
        except OSError:
            continue
    raise RuntimeError(f"no /sys/block/dm-*/dm/name {dm_name}")


def build_stacks(cells, disks):
    """{cell: {"dev", "members"} or {"error"}} for the stack cells asked for, on the given
    spare disks."""
    out = {}
    free = list(disks)
    for cell, n in STACKS.items():
        if cell not in cells:
            continue
        members, free = free[:n], free[n:]
        if len(members) < n:
            out[cell] = {"error": f"{n} spare disks needed, {len(members)} left "
                                  f"(found {disks})"}
            continue
        try:
            if cell == "md-raid1":
                r = sh("mdadm", "--create", "/dev/md0", "--run", "--force", "--level=1",
                       "--raid-devices=2", "--metadata=1.2", "--assume-clean",
                       "--bitmap=none", *[f"/dev/{m}" for m in members], timeout=120)
                if r.returncode != 0 or not os.path.isdir("/sys/block/md0/md"):
                    raise RuntimeError(f"mdadm --create exit {r.returncode}: "
                                       + r.stdout.strip()[-300:])
                dev = "md0"
            else:
                vg = "iopvg" + ("l" if cell == "lvm-linear" else "s")
                lvm(members, "vgcreate", "-y", vg, *[f"/dev/{m}" for m in members])
                extra = ["-i", "2", "-I", "64k"] if n == 2 else []
                lvm(members, "lvcreate", "-y", "-Zn", "-Wn", "-L", "128M", *extra,
                    "-n", "lv", vg)
                dev = dm_node(f"{vg}-lv")
            if not os.path.exists(f"/dev/{dev}"):
                raise RuntimeError(f"no /dev/{dev} node")
            out[cell] = {"dev": dev, "members": members}
            log(f"{cell}: /dev/{dev} over {members}")
        except Exception as e:
            out[cell] = {"error": f"building {cell} on {members} failed: {e}"}
            log(out[cell]["error"])
    lin = out.get("lvm-linear", {})
    if "dev" in lin:
        d = os.path.join(CEPH_DIR, f"ceph-{OSD_ID}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "whoami"), "w") as f:
            f.write(f"{OSD_ID}\n")
        os.symlink(f"/dev/{lin['dev']}", os.path.join(d, "block"))
    return out


def stack_jobs(dev, secs):
    common = dict(filename=f"/dev/{dev}", direct=1, size="96M", randrepeat=0,
                  time_based=1, runtime=f"{int(secs * 1000)}ms")
    w = [("libaio-qd16-randrw-4k", dict(rw="randrw", rwmixread=50, bs="4k",
                                        ioengine="libaio", iodepth=16)),
         ("fdatasync-4k", dict(rw="randwrite", bs="4k", ioengine="psync", fdatasync=1))]
    return [(n, {**common, **o}) for n, o in w]


def short_dev(d):
    """A device object without its op histograms, for a FAIL reason."""
    return {k: d.get(k) for k in ("name", "dev", "dm_name", "slaves", "holders", "osd_id",
                                  "osd_role", "requeues")}


def short_thread(t):
    return {k: t.get(k) for k in ("tid", "comm", "dev", "device", "disks", "fsync",
                                  "fdatasync", "calls", "flush_bios")}


def combine(cell, per_disk, reasons):
    """Sums the members' counts into the cell's row; reasons named by disk."""
    cell["per_disk"] = per_disk
    for k in ("diskstats_ios", "iopulse_ios", "timed", "service_samples", "preflush", "fua",
              "completion_unseen", "untimed", "requeues"):
        cell[k] = sum(st[k] for st in per_disk.values())
    for k in ("diskstats", "iopulse"):
        cell[k] = {op: sum(st[k][op] for st in per_disk.values()) for op in OPS}
    cell["coverage"] = (cell["timed"] / cell["diskstats_ios"]) if cell["diskstats_ios"] \
        else None
    for disk, st in per_disk.items():
        if st["diskstats_ios"] < 50:
            cell["reasons"].append(f"{disk}: workload too small: {st['diskstats_ios']} IOs "
                                   "in diskstats")
        cell["reasons"] += [f"{disk}: {x}" for x in reasons[disk]]


def measure_stack(daemon, kernel, ctl, stack, feats):
    dev, members = stack["dev"], stack["members"]
    cell = {"kernel": kernel, "controller": ctl, "scheduler": "none",
            "disk": f"{dev}>{','.join(members)}", "features": feats, "jobs": {},
            "reasons": []}
    for m in members:
        set_scheduler(m, "none")
    sync = {}
    before, after, ivs = window(daemon, members, lambda: sync.update(
        n=run_jobs(cell, stack_jobs(dev, ARGS.stack_seconds))), cell)
    fio_sync = sync["n"]
    per, rs = {}, {}
    for m in members:
        per[m], rs[m] = disk_counts(ivs, m, before[m], after[m])
    combine(cell, per, rs)
    r = cell["reasons"]
    # holders and the OSD label, in every device object of the members in the window
    for m in members:
        ents = [d for _, d in dev_entries(ivs, m)]
        if not ents:
            r.append(f"{m}: no device object in the window")
            continue
        bad = [d for d in ents if dev not in (d.get("holders") or [])]
        if bad:
            r.append(f"{m}: holders do not name {dev} in {len(bad)}/{len(ents)} intervals: "
                     + json.dumps(short_dev(bad[0])))
        if ctl == "lvm-linear":
            bad = [d for d in ents if d.get("osd_id") != OSD_ID or d.get("osd_role") != "block"]
            if bad:
                r.append(f"{m}: not labelled osd {OSD_ID} block in {len(bad)}/{len(ents)} "
                         "intervals: " + json.dumps(short_dev(bad[0])))
    if ctl == "lvm-linear":
        top = [d for _, d in dev_entries(ivs, dev)]
        bad = [d for d in top if d.get("osd_id") != OSD_ID or d.get("osd_role") != "block"]
        if not top:
            r.append(f"{dev}: no device object in the window")
        elif bad:
            r.append(f"{dev}: not labelled osd {OSD_ID} block in {len(bad)}/{len(top)} "
                     "intervals: " + json.dumps(short_dev(bad[0])))
    # fio's sync thread rows: on the stacked device, its bottom disks beneath
    fio_rows = [t for iv in ivs for t in iv.get("threads", [])
                if t.get("comm", "").startswith("fio")]
    rows = [t for t in fio_rows if t.get("device") == dev]
    io_sync = sum(t["fsync"] + t["fdatasync"] for t in rows)
    cell.update({"fio_sync": fio_sync, "iopulse_sync": io_sync, "intervals": len(ivs),
                 "missed_events": sum(iv["drops"]["missed_events"] for iv in ivs),
                 "thread_rows": [short_thread(t) for t in fio_rows[:4]]})
    cell["sync_off"] = feats.get("sync") == "off"
    if fio_sync == 0:
        r.append("fio made no fdatasync call")
    if not cell["sync_off"]:
        if not sync_held(cell, ivs, io_sync, fio_sync):
            others = [t for t in fio_rows if t.get("device") != dev]
            r.append(f"sync calls on {dev} {io_sync} != fio {fio_sync}" + sync_skips(cell)
                     + (f"; fio rows elsewhere: {json.dumps(short_thread(others[0]))}"
                        if others else ""))
        bad = [t for t in rows if sorted(t.get("disks") or []) != sorted(members)]
        if bad:
            r.append(f"thread rows on {dev} with disks != {sorted(members)} "
                     f"({len(bad)}/{len(rows)}): " + json.dumps(short_thread(bad[0])))
    return cell


def measure_tuned(daemon, kernel, ctl, disk, sched, attr, value, feats, jobs=None):
    """fio jobs (default libaio QD16 and 8 psync threads) on disk with sysfs attr set to
    value (restored after)."""
    cell = {"kernel": kernel, "controller": ctl, "disk": disk, "scheduler": sched,
            "features": feats, "jobs": {}, "reasons": [], "sync_off": False}
    set_scheduler(disk, sched)
    path = f"/sys/block/{disk}/{attr}"
    with open(path) as f:
        old = f.read().strip()
    cell["tuned"] = {attr: value, "was": old}
    try:
        if str(value) != old:
            with open(path, "w") as f:
                f.write(str(value))
        with open(path) as f:
            now = f.read().strip()
        if now != str(value):
            raise RuntimeError(f"{path} is {now} after writing {value}")
        if jobs is None:
            jobs = [(n, o) for n, o in workloads(disk, ARGS.stack_seconds, ARGS.fio_size)
                    if n.startswith(("libaio-qd16", "psync-8jobs"))]
        before, after, ivs = window(daemon, [disk], lambda: run_jobs(cell, jobs), cell)
    finally:
        with open(path) as f:
            if f.read().strip() != old:
                with open(path, "w") as f:
                    f.write(old)
    st, rs = disk_counts(ivs, disk, before[disk], after[disk])
    combine(cell, {disk: st}, {disk: rs})
    cell["intervals"] = len(ivs)
    cell["missed_events"] = sum(iv["drops"]["missed_events"] for iv in ivs)
    if ctl == "scsi-qd1" and not st["requeues"]:
        cell["notes"] = ["no requeue reported with queue_depth 1"]
        log(f"{ctl} {disk}: iopulsed reported no requeue")
    return cell


def split_jobs(disk, secs):
    """4 MiB writes that a 64 KiB max_sectors_kb splits into 64 parts each, with 4k reads
    beside them."""
    common = dict(filename=f"/dev/{disk}", direct=1, size="96M", randrepeat=0,
                  time_based=1, runtime=f"{int(secs * 1000)}ms")
    return [("split-4m-write", {**common, "rw": "write", "bs": "4M", "ioengine": "libaio",
                                "iodepth": 4}),
            ("psync-randread-4k", {**common, "rw": "randread", "bs": "4k",
                                   "ioengine": "psync"})]


def merge_jobs(disk, secs):
    """Sequential 4k writes submitted 32 at a time (one io_submit under one plug, so each
    batch merges into few requests), with 4k reads beside them."""
    common = dict(filename=f"/dev/{disk}", direct=1, size="96M", randrepeat=0,
                  time_based=1, runtime=f"{int(secs * 1000)}ms")
    return [("merge-seqwrite-4k", {**common, "rw": "write", "bs": "4k", "ioengine": "libaio",
                                   "iodepth": 32, "iodepth_batch_submit": 32,
                                   "iodepth_batch_complete_min": 32}),
            ("psync-randread-4k", {**common, "rw": "randread", "bs": "4k",
                                   "ioengine": "psync"})]


FS_DIR = "/tmp/iop-ext4"


def fs_jobs(secs):
    """Direct 4k random reads and writes of one file, and buffered 4k writes of another with
    an fsync every 8 (the journal's commits, the writeback of the page cache)."""
    common = dict(directory=FS_DIR, randrepeat=0, time_based=1,
                  runtime=f"{int(secs * 1000)}ms")
    return [("ext4-direct-randrw-4k", {**common, "filename": "direct.dat", "size": "48M",
                                       "direct": 1, "rw": "randrw", "bs": "4k",
                                       "ioengine": "libaio", "iodepth": 8}),
            ("ext4-buffered-fsync-4k", {**common, "filename": "buffered.dat", "size": "16M",
                                        "direct": 0, "rw": "randwrite", "bs": "4k",
                                        "ioengine": "psync", "fsync": 8})]


def measure_fs(daemon, kernel, ctl, disk, feats):
    """An ext4 file system made on disk (nothing lazy left for later), the files laid out
    before the window; in it, fs_jobs() and the unmount, which writes back what is dirty
    and the journal: every IO of the file system falls inside the window."""
    cell = {"kernel": kernel, "controller": ctl, "disk": disk, "scheduler": "mq-deadline",
            "features": feats, "jobs": {}, "reasons": []}
    set_scheduler(disk, "mq-deadline")
    r = sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
           f"/dev/{disk}", timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"mkfs.ext4 exit {r.returncode}: {r.stdout.strip()[-300:]}")
    os.makedirs(FS_DIR, exist_ok=True)
    r = sh("mount", "-t", "ext4", f"/dev/{disk}", FS_DIR)
    if r.returncode != 0:
        raise RuntimeError(f"mount exit {r.returncode}: {r.stdout.strip()[-300:]}")
    mounted = [True]

    def umount():
        r = sh("umount", FS_DIR, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"umount exit {r.returncode}: {r.stdout.strip()[-300:]}")
        mounted[0] = False

    sync = {}

    def body():
        sync.update(n=run_jobs(cell, fs_jobs(ARGS.stack_seconds)))
        umount()

    try:
        run_fio([(n, {**o, "create_only": 1}) for n, o in fs_jobs(ARGS.stack_seconds)])
        sh("sync")
        # the window's first interval must hold no IO from before it: one that begins with
        # the disk idle
        wait_idle(disk)
        t = time.monotonic_ns()
        if not daemon.wait_interval(lambda iv: iv["start_mono_ns"] >= t, 30):
            raise RuntimeError("iopulsed gave no interval for 30 s after the layout")
        before, after, ivs = window(daemon, [disk], body, cell)
    finally:
        if mounted[0]:
            sh("umount", FS_DIR, timeout=120)
    st, rs = disk_counts(ivs, disk, before[disk], after[disk])
    combine(cell, {disk: st}, {disk: rs})
    fio_sync = sync["n"]
    rows = [t for iv in ivs for t in iv.get("threads", [])
            if t.get("comm", "").startswith("fio")]
    io_sync = sum(t["fsync"] + t["fdatasync"] for t in rows if t.get("device") == disk)
    cell.update({"fio_sync": fio_sync, "iopulse_sync": io_sync, "intervals": len(ivs),
                 "missed_events": sum(iv["drops"]["missed_events"] for iv in ivs),
                 "thread_rows": [short_thread(t) for t in rows[:4]]})
    cell["sync_off"] = feats.get("sync") == "off"
    if fio_sync == 0:
        cell["reasons"].append("fio made no fsync call")
    if not cell["sync_off"] and not sync_held(cell, ivs, io_sync, fio_sync):
        cell["reasons"].append(f"sync calls on {disk} {io_sync} != fio {fio_sync}"
                               + sync_skips(cell))
    return cell


def run_extra(result, daemon, err, feats, disks, stacks):
    for ctl in ARGS.extra:
        t = time.monotonic()
        cell = None
        try:
            if err or daemon is None:
                raise RuntimeError(err or "no daemon")
            if daemon.exited():
                raise RuntimeError(daemon.exited())
            if ctl in STACKS:
                st = stacks.get(ctl) or {"error": "not built"}
                if "error" in st:
                    raise RuntimeError(st["error"])
                cell = measure_stack(daemon, ARGS.kernel, ctl, st, feats)
            elif ctl == "scsi-qd1":
                disk = disks.get("virtio-scsi") or disks.get("megaraid_sas")
                if not disk:
                    raise RuntimeError("needs the virtio-scsi or megaraid_sas disk")
                cell = measure_tuned(daemon, ARGS.kernel, ctl, disk, "none",
                                     "device/queue_depth", 1, feats)
            elif ctl == "nr_requests-4":
                disk = disks.get("virtio-blk") or next(iter(disks.values()), None)
                if not disk:
                    raise RuntimeError("no test disk")
                cell = measure_tuned(daemon, ARGS.kernel, ctl, disk, "mq-deadline",
                                     "queue/nr_requests", 4, feats)
            elif ctl == "split-64k":
                disk = disks.get("nvme") or next(iter(disks.values()), None)
                if not disk:
                    raise RuntimeError("no test disk")
                cell = measure_tuned(daemon, ARGS.kernel, ctl, disk, "none",
                                     "queue/max_sectors_kb", 64, feats,
                                     split_jobs(disk, ARGS.stack_seconds))
            elif ctl == "merge-seq4k":
                disk = disks.get("virtio-blk") or next(iter(disks.values()), None)
                if not disk:
                    raise RuntimeError("no test disk")
                cell = measure_tuned(daemon, ARGS.kernel, ctl, disk, "mq-deadline",
                                     "queue/nomerges", 0, feats,
                                     merge_jobs(disk, ARGS.stack_seconds))
            elif ctl == "ext4":
                disk = (disks.get("virtio-scsi") or disks.get("megaraid_sas")
                        or next(iter(disks.values()), None))
                if not disk:
                    raise RuntimeError("no test disk")
                cell = measure_fs(daemon, ARGS.kernel, ctl, disk, feats)
            else:
                raise RuntimeError(f"unknown cell {ctl}")
        except Exception as e:
            traceback.print_exc()
            cell = failed_cell(ARGS.kernel, ctl, (cell or {}).get("disk"),
                               EXTRA_SCHED.get(ctl, "none"), feats,
                               f"{type(e).__name__}: {e}")
        cell["seconds"] = round(time.monotonic() - t, 1)
        result["cells"].append(cell)
        log(f"{ctl} {cell.get('disk')}: {'PASS' if not cell['reasons'] else 'FAIL'} "
            f"{cell.get('diskstats_ios')} / {cell.get('iopulse_ios')} "
            f"cov {cell.get('coverage')} sync {cell.get('fio_sync')}/"
            f"{cell.get('iopulse_sync')} requeues {cell.get('requeues')} {cell['reasons']}")


def failed_cell(kernel, ctl, disk, sched, feats, reason):
    return {"kernel": kernel, "controller": ctl, "disk": disk, "scheduler": sched,
            "features": feats, "reasons": [reason]}


# ------------------------------------------------------------------------------ main --

def main():
    result = {"kernel": ARGS.kernel, "release": os.uname().release, "cells": [],
              "errors": [], "modprobe": {}, "disks": {}, "daemon": None}
    out_json = os.path.join(ARGS.out, "result.json")

    def save():
        tmp = out_json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, out_json)

    save()
    log(f"kernel {os.uname().release}; loading drivers")
    for m in DRIVERS:
        r = sh("modprobe", m)
        result["modprobe"][m] = "ok" if r.returncode == 0 else r.stdout.strip()
    want = ARGS.controllers.split(",")
    disks = find_disks(want, ARGS.disk_size, 60)
    result["disks"] = {c: {"disk": d, "chain": driver_chain(d),
                           "schedulers": schedulers(d)} for c, d in disks.items()}
    log(f"disks: {disks}")
    for c in want:
        if c not in disks:
            result["errors"].append(f"{c}: no disk of {ARGS.disk_size} bytes behind driver "
                                    f"{CONTROLLER_DRIVER[c]} (modprobe: "
                                    f"{result['modprobe'].get(CONTROLLER_DRIVER[c])})")
    wanted_scheds = ARGS.schedulers.split(",")
    stacks, spare = {}, []
    if any(c in STACKS for c in ARGS.extra):
        n = sum(STACKS[c] for c in ARGS.extra if c in STACKS)
        spare = find_stack_disks(n, ARGS.stack_disk_size, 60)
        log(f"stack disks: {spare}")
        stacks = build_stacks(ARGS.extra, spare)
        result["stacks"] = stacks
    save()

    tracer = None
    if ARGS.blktrace:
        t = time.monotonic()
        try:
            tracer = Blktrace(list(disks.values()) + spare)
            result["blktrace"] = {"start_s": round(time.monotonic() - t, 1)}
        except Exception as e:
            result["blktrace"] = {"error": f"{type(e).__name__}: {e}"}
        log(f"blktrace: {result['blktrace']}")

    devs = list(disks.values()) + spare + (["dm-*", "md*"] if spare else [])
    base = [ARGS.iopulsed, "--json", "--no-server", "-i", f"{int(ARGS.interval * 1000)}ms",
            "--devices", ",".join(devs) or "none-found", "--ceph-osd-dir", CEPH_DIR] + \
        (["--json-buckets"] if ARGS.blktrace else [])
    # all started at once: each loads and verifies its programs (a minute or more under TCG
    # on 5.10), and the loads share the guest's CPUs
    started, err, feats, errors = {}, None, daemon_features(""), {}
    result["daemons"] = {}
    t = time.monotonic()
    for mode in ARGS.modes:
        argv = base + MODE_FLAGS[mode]
        result["daemons"][mode] = {"argv": argv}
        log("starting " + " ".join(argv))
        try:
            started[mode] = Daemon(argv, ARGS.out,
                                   "iopulsed" if mode == ARGS.modes[0] else f"iopulsed-{mode}")
        except OSError as e:
            errors[mode] = f"iopulsed did not start: {e}"
    for mode in ARGS.modes:
        e_mode = errors.get(mode) or started[mode].wait_ready(
            max(ARGS.ready_timeout - (time.monotonic() - t), 1))
        f_mode = daemon_features(started[mode].stderr_text() if mode in started else "")
        result["daemons"][mode].update({"ready_s": round(time.monotonic() - t, 1),
                                        "error": e_mode, "features": f_mode})
        log(f"iopulsed ({mode}): {e_mode or 'ready'} after {time.monotonic() - t:.1f}s; "
            f"{f_mode}")
        if mode == ARGS.modes[0]:
            feats = f_mode
        if e_mode and not err:
            err = e_mode if mode == ARGS.modes[0] else f"{mode}: {e_mode}"
    daemon = Daemons(started) if len(started) == len(ARGS.modes) else None
    result["daemon"] = dict(result["daemons"][ARGS.modes[0]], error=err)
    save()

    rounds: dict[str, list] = {}
    for ctl in want:
        disk = disks.get(ctl)
        for sched in wanted_scheds:
            if disk is None:
                result["cells"].append(failed_cell(ARGS.kernel, ctl, None, sched, feats,
                                                   f"no {ctl} disk found in the guest"))
                continue
            if sched not in schedulers(disk):
                result["cells"].append(failed_cell(
                    ARGS.kernel, ctl, disk, sched, feats,
                    f"scheduler {sched} not offered by {disk}: {schedulers(disk)}"))
                continue
            if err:
                result["cells"].append(failed_cell(ARGS.kernel, ctl, disk, sched, feats, err))
                continue
            if daemon is None or daemon.exited():
                result["cells"].append(failed_cell(
                    ARGS.kernel, ctl, disk, sched, feats,
                    daemon.exited() if daemon else "no daemon"))
                continue
            rounds.setdefault(sched, []).append((ctl, disk))

    # one round per scheduler: its disks measured at once (measure_round)
    for sched in wanted_scheds:
        members = rounds.get(sched, [])
        if not members:
            continue
        t = time.monotonic()
        try:
            if daemon.exited():     # a daemon that died in an earlier round
                raise RuntimeError(daemon.exited())
            cells = measure_round(daemon, ARGS.kernel, members, sched, feats)
        except Exception as e:      # the round's cells fail, the matrix goes on
            traceback.print_exc()
            cells = [failed_cell(ARGS.kernel, c, d, sched, feats, f"{type(e).__name__}: {e}")
                     for c, d in members]
        for cell in cells:
            cell["seconds"] = round(time.monotonic() - t, 1)
            result["cells"].append(cell)
            log(f"{cell['controller']} {cell['disk']} {sched}: "
                f"{'PASS' if not cell['reasons'] else 'FAIL'} "
                f"{cell.get('diskstats_ios')} / {cell.get('iopulse_ios')} "
                f"cov {cell.get('coverage')} sync {cell.get('fio_sync')}/"
                f"{cell.get('iopulse_sync')} {cell['reasons']}")
        save()
    result["cells"].sort(key=lambda c: (want.index(c["controller"])
                                        if c["controller"] in want else len(want),
                                        wanted_scheds.index(c["scheduler"])
                                        if c["scheduler"] in wanted_scheds else 0))

    run_extra(result, daemon, err, feats, disks, stacks)
    if tracer:
        result["blktrace"].update(tracer.stop())
        log(f"blktrace: {result['blktrace']}")
    save()

    for mode, d in started.items():
        rc = d.stop()
        info = result["daemons"][mode]
        info.update({"exit": rc, "bad_lines": d.bad_lines,
                     "features": daemon_features(d.stderr_text()),
                     "stderr_tail": d.stderr_text().strip().splitlines()[-20:]})
        if not info["error"] and rc != 0:
            result["errors"].append(f"iopulsed ({mode}) exit code {rc} on SIGTERM")
        if d.bad_lines:
            result["errors"].append(f"{d.bad_lines} non-JSON lines on iopulsed's ({mode}) "
                                    "stdout")
    if started.get(ARGS.modes[0]):
        result["daemon"].update({k: result["daemons"][ARGS.modes[0]][k] for k in
                                 ("exit", "bad_lines", "features", "stderr_tail")})
    result["done"] = True
    save()
    log("done")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--iopulsed", required=True)
    ap.add_argument("--controllers", required=True)
    ap.add_argument("--schedulers", default="none,mq-deadline,bfq")
    ap.add_argument("--disk-size", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--fio-size", default="128M")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--extra", default=",".join(EXTRA),
                    help="stacked and tuned-queue cells after the controller cells (none: no)")
    ap.add_argument("--stack-disk-size", type=int, default=160 << 20)
    ap.add_argument("--stack-seconds", type=float, default=1.0)
    ap.add_argument("--ready-timeout", type=float, default=180)
    ap.add_argument("--modes", default="full",
                    help="iopulsed's modes, one daemon each, all at once: full, request "
                         "(--queue-from request), completion; the first is each row's own")
    ap.add_argument("--blktrace", action="store_true",
                    help="record the test disks with blktrace and keep iopulsed's buckets, "
                         "for matrix.py's latency check")
    ARGS = ap.parse_args()
    ARGS.extra = [c for c in ARGS.extra.split(",") if c and c != "none"]
    ARGS.modes = [m for m in ARGS.modes.split(",") if m]
    for m in ARGS.modes:
        if m not in MODE_FLAGS:
            ap.error(f"unknown mode {m} (known: {', '.join(MODE_FLAGS)})")
    os.makedirs(ARGS.out, exist_ok=True)
    try:
        main()
    except Exception:
        log("guest failed: " + traceback.format_exc())
        sys.exit(1)
