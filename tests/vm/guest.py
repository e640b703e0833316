#!/usr/bin/python3
"""Runs inside a virtme-ng guest (the host's root file system, shared read-only): loads the
disk drivers, finds the test disks by the driver chain above them, starts one `iopulsed
--json` over all of them, and for every disk x scheduler runs short fio jobs and compares what
iopulsed counted with the guest's /proc/diskstats. Writes OUT/result.json (read by
tests/vm/matrix.py on the host); never exits without writing it when it can write at all.

Each cell's IO is measured between two idle points of its disk: diskstats before, the fio
jobs, then the disk idle for three of the daemon's intervals (so the daemon has swept
completions the kernel did not report) and diskstats after; the daemon's interval deltas of
that disk from the first interval ending after `before` to the one holding `after` are summed.
Only one disk is busy at a time, so the intervals at either edge hold no other cell's IO.
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

DRIVERS = ["nvme", "megaraid_sas", "ahci", "sd_mod", "virtio_scsi", "virtio_blk",
           "dm_mod", "raid1", "bfq"]
# controller name -> the driver that binds somewhere above its disk in sysfs
CONTROLLER_DRIVER = {
    "nvme": "nvme",
    "megaraid_sas": "megaraid_sas",
    "ahci": "ahci",
    "virtio-scsi": "virtio_scsi",
    "virtio-blk": "virtio_blk",
}
OPS = ("read", "write", "discard", "flush")
COVERAGE_GOAL = 0.9995


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
    def __init__(self, argv, out_dir):
        self.jsonl = open(os.path.join(out_dir, "iopulsed.jsonl"), "w")
        self.err_path = os.path.join(out_dir, "iopulsed.stderr")
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
                                       numjobs=8, group_reporting=1)),
        ("fdatasync-4k", dict(rw="randwrite", bs="4k", ioengine="psync", fdatasync=1)),
        ("seqwrite-1m", dict(rw="write", bs="1M", ioengine="libaio", iodepth=4)),
    ]
    if discard_supported(disk):
        w.append(("trim-64k", dict(rw="randtrim", bs="64k", ioengine="psync")))
    return [(n, {**common, **o}) for n, o in w]


def run_fio(name, opts):
    argv = ["fio", "--output-format=json", f"--name={name}"]
    argv += [f"--{k}={v}" for k, v in opts.items()]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"fio {name} exit {r.returncode}: {r.stderr.strip()[-300:]}")
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


def measure_cell(daemon, kernel, ctl, disk, sched, feats):
    cell = {"kernel": kernel, "controller": ctl, "disk": disk, "scheduler": sched,
            "features": feats, "jobs": {}, "reasons": []}
    set_scheduler(disk, sched)
    before = wait_idle(disk)
    t0 = time.monotonic_ns()
    fio_sync = 0
    for name, opts in workloads(disk, ARGS.seconds, ARGS.fio_size):
        res = run_fio(name, opts)
        calls = fio_sync_calls(res)
        fio_sync += calls
        cell["jobs"][name] = {
            "read": sum(j["read"]["total_ios"] for j in res["jobs"]),
            "write": sum(j["write"]["total_ios"] for j in res["jobs"]),
            "trim": sum(j.get("trim", {}).get("total_ios", 0) for j in res["jobs"]),
            "sync": calls}
    wait_idle(disk)
    t_idle = time.monotonic_ns()
    iv_ns = int(ARGS.interval * 1e9)
    # three whole intervals with the disk idle: the daemon has swept what it would sweep
    if not daemon.wait_interval(lambda iv: iv["start_mono_ns"] >= t_idle + 2 * iv_ns, 30):
        raise RuntimeError("iopulsed gave no interval for 30 s after the jobs "
                           f"(exit {daemon.proc.poll()})")
    after = wait_idle(disk)
    t1 = time.monotonic_ns()
    if not daemon.wait_interval(lambda iv: iv["end_mono_ns"] >= t1, 30):
        raise RuntimeError("iopulsed gave no interval for 30 s after the second snapshot")
    ivs = daemon.between(t0, t1)

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
    # REQ_PREFLUSH writes fdatasync sends (counted as writes, their sample is
    # preflush_latency_ns; the raw-device jobs here put PREFLUSH on no data write)
    service = sum(d["ops"][op]["service_ns"]["count"] for d in ents for op in OPS)
    preflush = sum(d["flush"]["preflush"] for d in ents)
    timed = service + preflush
    ios_truth = sum(truth.values())
    ios_got = sum(got.values())
    threads = [t for iv in ivs for t in iv.get("threads", [])
               if t.get("device") == disk and t.get("comm", "").startswith("fio")]
    io_sync = sum(t["fsync"] + t["fdatasync"] for t in threads)
    cell.update({
        "diskstats": truth, "diskstats_bytes": truth_bytes, "diskstats_ios": ios_truth,
        "iopulse": got, "iopulse_bytes": got_bytes, "iopulse_ios": ios_got,
        "timed": timed, "service_samples": service, "preflush": preflush,
        "completion_unseen": unseen, "untimed": untimed,
        "coverage": (timed / ios_truth) if ios_truth else None,
        "fio_sync": fio_sync, "iopulse_sync": io_sync,
        "intervals": len(ivs),
        "missed_events": sum(iv["drops"]["missed_events"] for iv in ivs),
    })
    r = cell["reasons"]
    if ios_truth < 100:
        r.append(f"workload too small: {ios_truth} IOs in diskstats")
    for op in OPS:
        if got[op] != truth[op]:
            r.append(f"{op} ios {got[op]} != diskstats {truth[op]}")
    for op in ("read", "write", "discard"):
        if got_bytes[op] != truth_bytes[op]:
            r.append(f"{op} bytes {got_bytes[op]} != diskstats {truth_bytes[op]}")
    if timed + unseen + untimed != ios_got:
        r.append(f"IOs not accounted for: {timed} timed + {unseen} unseen + {untimed} "
                 f"untimed != {ios_got}")
    if ios_truth and timed / ios_truth < COVERAGE_GOAL:
        hint = ""
        if untimed and untimed == fio_sync:
            hint = ("; untimed = the fdatasync calls: the empty PREFLUSH writes they send "
                    "have no latency sample")
        r.append(f"latency coverage {100 * timed / ios_truth:.2f}% < "
                 f"{100 * COVERAGE_GOAL:.2f}% ({unseen} unseen, {untimed} untimed{hint})")
    if fio_sync == 0:
        r.append("fio made no fdatasync call")
    # Sync tracking that iopulsed itself said is off (a kernel without what it needs, one
    # warning line: README, kernel requirements) is shown as off, not compared; sync
    # tracking that is on must count every call.
    cell["sync_off"] = feats.get("sync") == "off"
    if io_sync != fio_sync and not cell["sync_off"]:
        r.append(f"sync calls {io_sync} != fio {fio_sync}")
    return cell


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
    save()

    argv = [ARGS.iopulsed, "--json", "--no-server", "-i", f"{int(ARGS.interval * 1000)}ms",
            "--devices", ",".join(disks.values()) or "none-found"]
    log("starting " + " ".join(argv))
    t = time.monotonic()
    try:
        daemon = Daemon(argv, ARGS.out)
    except OSError as e:
        daemon = None
        err = f"iopulsed did not start: {e}"
        feats = daemon_features("")
    else:
        err = daemon.wait_ready(ARGS.ready_timeout)
        feats = daemon_features(daemon.stderr_text())
    result["daemon"] = {"argv": argv, "ready_s": round(time.monotonic() - t, 1),
                        "error": err, "features": feats}
    log(f"iopulsed: {err or 'ready'} after {time.monotonic() - t:.1f}s; {feats}")
    save()

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
            if daemon is None or daemon.proc.poll() is not None:
                result["cells"].append(failed_cell(
                    ARGS.kernel, ctl, disk, sched, feats,
                    f"iopulsed exited {daemon.proc.returncode} during the run: "
                    + " | ".join(daemon.stderr_text().strip().splitlines()[-2:])))
                continue
            t = time.monotonic()
            try:
                cell = measure_cell(daemon, ARGS.kernel, ctl, disk, sched, feats)
            except Exception as e:      # the cell fails, the matrix goes on
                traceback.print_exc()
                cell = failed_cell(ARGS.kernel, ctl, disk, sched, feats,
                                   f"{type(e).__name__}: {e}")
            cell["seconds"] = round(time.monotonic() - t, 1)
            result["cells"].append(cell)
            log(f"{ctl} {disk} {sched}: {'PASS' if not cell['reasons'] else 'FAIL'} "
                f"{cell.get('diskstats_ios')} / {cell.get('iopulse_ios')} "
                f"cov {cell.get('coverage')} sync {cell.get('fio_sync')}/"
                f"{cell.get('iopulse_sync')} {cell['reasons']}")
            save()

    if daemon is None:
        result["done"] = True
        save()
        log("done (no daemon)")
        return
    rc = daemon.stop()
    feats = daemon_features(daemon.stderr_text())
    result["daemon"].update({"exit": rc, "bad_lines": daemon.bad_lines,
                             "features": feats,
                             "stderr_tail": daemon.stderr_text().strip().splitlines()[-20:]})
    if not err and rc != 0:
        result["errors"].append(f"iopulsed exit code {rc} on SIGTERM")
    if daemon.bad_lines:
        result["errors"].append(f"{daemon.bad_lines} non-JSON lines on iopulsed's stdout")
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
    ap.add_argument("--ready-timeout", type=float, default=180)
    ARGS = ap.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    try:
        main()
    except Exception:
        log("guest failed: " + traceback.format_exc())
        sys.exit(1)
