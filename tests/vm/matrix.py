#!/usr/bin/python3
"""The kernel x controller x scheduler matrix: boots each Debian kernel of tests/vm/kernels.txt
once under qemu (TCG) with virtme-ng, every emulated controller attached to that one boot, and
runs tests/vm/guest.py inside, which holds build/iopulsed to the guest's /proc/diskstats.

Prints one line per cell, writes OUT/results.json (tests/vm/table.py makes the Markdown table
from it) and exits 1 if any cell failed or a kernel could not be booted; a cell is never
skipped silently: whatever kept it from running is its FAIL reason. Run as root:

    ./tests/vm/matrix.py                      every kernel of kernels.txt
    ./tests/vm/matrix.py --kernels 6.1,6.12   only these labels

Downloads and unpacked kernels are cached under /var/tmp/iopulse-vm (--cache); virtme-ng is
installed into build/vmenv (the version pinned in tests/vm/requirements.txt). Disk images
are sparse files under the cache, removed at the end; qemu is stopped by its process group.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import blktruth
from fetch import Apt, fetch_kernel, kernel_config, log, read_kernels, run

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
VMDIR = os.path.join(REPO, "tests", "vm")
DISK_MIB = 256
CONTROLLERS = ["nvme", "megaraid_sas", "ahci", "virtio-scsi", "virtio-blk", "lsi53c895a"]
# qemu's LSI 53C895A emulation stalls under TCG with deep concurrent queues (commands time out,
# the sym53c8xx driver aborts and resets the bus, fio waits for minutes): by name only.
DEFAULT_CONTROLLERS = [c for c in CONTROLLERS if c != "lsi53c895a"]
BASE_SCHEDULERS = ["none", "mq-deadline"]
# cells after the controller cells (guest.py EXTRA): cell -> its scheduler
EXTRA = {"lvm-linear": "none", "lvm-striped": "none", "md-raid1": "none", "scsi-qd1": "none",
         "nr_requests-4": "mq-deadline", "split-64k": "none", "merge-seq4k": "mq-deadline",
         "ext4": "mq-deadline"}
STACK_DISKS = {"lvm-linear": 1, "lvm-striped": 2, "md-raid1": 2}   # spare disks each
STACK_DISK_MIB = 160
MODES = ["full", "request", "completion"]   # guest.py MODE_FLAGS
GUEST_OUT = "/tmp/iopulse-vm-out"   # the guest's path of the kernel's output directory


# --------------------------------------------------------------------------- kernels --

def read_known(path):
    """kernel label -> reason prefixes of tests/vm/known-failures.txt"""
    known = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    label, prefix = line.split(None, 1)
                    known.setdefault(label, []).append(prefix)
    return known


def is_known(c, known):
    """A failed cell all of whose reasons are known for its kernel (a reason may name the
    disk first: "sdf: read ios ...")."""
    prefixes = known.get(c["kernel"], [])

    def listed(r):
        return any(r.startswith(p) or re.match(r"\w+: " + re.escape(p), r) for p in prefixes)

    return bool(c["reasons"]) and all(listed(r) for r in c["reasons"])


def feature_mismatch(expect, feats):
    """What iopulsed turned on or off unlike kernels.txt's expect column says, or []:
    attach (tp_btf, raw_tp), atomics (yes, no), sync (on, off), flush_seq (the mask)."""
    probes = feats.get("probes") or ""
    got = {"attach": feats.get("attach") or "-",
           "atomics": "no" if "without atomics" in probes else "yes",
           "sync": feats.get("sync") or "-"}
    m = re.search(r"flush_seq (0x[0-9a-f]+)", probes)
    got["flush_seq"] = m.group(1) if m else "-"
    bad = []
    for item in filter(None, expect.split(",")):
        key, _, want = item.partition(":")
        if got.get(key) != want:
            bad.append(f"{key} {got.get(key)} (expected {want})")
    return bad


# ---------------------------------------------------------------------------- virtme --

def ensure_vng(venv):
    want = open(os.path.join(VMDIR, "requirements.txt")).read().split()
    vng = os.path.join(venv, "bin", "vng")
    ok = False
    if os.path.exists(vng):
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "freeze"],
                           stdout=subprocess.PIPE, text=True)
        ok = all(w in r.stdout.split() for w in want)
    if not ok:
        log(f"installing {' '.join(want)} into {venv}")
        if not os.path.exists(os.path.join(venv, "bin", "pip")):
            run([sys.executable, "-m", "venv", venv])
        run([os.path.join(venv, "bin", "pip"), "install", "-q"] + want)
    return vng


def qemu_opts(images, stack_images=()):
    """One disk per controller, each on its own emulated controller; the stacks' disks
    (another size) on a virtio-scsi controller of their own."""
    o = []
    if stack_images:
        o.append("-device virtio-scsi-pci,id=vscsist")
    for i, img in enumerate(stack_images):
        o += [f"-drive file={img},if=none,id=d-st{i},format=raw,cache=unsafe,discard=unmap",
              f"-device scsi-hd,drive=d-st{i},bus=vscsist.0,serial=iopstack{i}"]
    for ctl, img in images.items():
        drv = f"-drive file={img},if=none,id=d-{ctl},format=raw,cache=unsafe,discard=unmap"
        ser = "iop" + ctl.replace("-", "").replace("_", "")[:12]
        if ctl == "nvme":
            o += [drv, f"-device nvme,drive=d-{ctl},serial={ser}"]
        elif ctl == "megaraid_sas":
            o += ["-device megasas,id=mega0", drv,
                  f"-device scsi-hd,drive=d-{ctl},bus=mega0.0,serial={ser}"]
        elif ctl == "ahci":
            o += ["-device ahci,id=ahci0", drv,
                  f"-device ide-hd,drive=d-{ctl},bus=ahci0.0,serial={ser}"]
        elif ctl == "virtio-scsi":
            o += ["-device virtio-scsi-pci,id=vscsi0", drv,
                  f"-device scsi-hd,drive=d-{ctl},bus=vscsi0.0,serial={ser}"]
        elif ctl == "virtio-blk":
            o += [drv, f"-device virtio-blk-pci,drive=d-{ctl},serial={ser}"]
        elif ctl == "lsi53c895a":
            o += ["-device lsi53c895a,id=lsi0", drv,
                  f"-device scsi-hd,drive=d-{ctl},bus=lsi0.0,serial={ser}"]
        else:
            raise ValueError(ctl)
    return " ".join(o)


class Guest:
    """One vng (and its qemu) in a process group of its own, stopped by that group's id."""

    def __init__(self, argv, console, env):
        self.console = open(console, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.console,
                                     stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                     start_new_session=True)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """Ends whatever is left of the group (qemu included)."""
        pgid = self.proc.pid
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            t = time.monotonic() + grace
            while time.monotonic() < t:
                try:
                    os.killpg(pgid, 0)
                except ProcessLookupError:
                    break
                self.proc.poll()
                time.sleep(0.2)
        self.proc.poll()
        self.console.close()


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip() for line in f.readlines()[-n:]]
    except OSError:
        return []


# ------------------------------------------------------------------------------ main --

def expected_cells(label, cfg):
    scheds = list(BASE_SCHEDULERS)
    if cfg.get("CONFIG_IOSCHED_BFQ") in ("y", "m"):
        scheds.append("bfq")
    return scheds


def expected(controllers, scheds, extra):
    return [(c, s) for c in controllers for s in scheds] + [(c, EXTRA[c]) for c in extra]


def fail_cell(label, ctl, sched, reason):
    return {"kernel": label, "controller": ctl, "scheduler": sched, "disk": None,
            "features": None, "reasons": [reason]}


def died_before_script(console_text):
    """The kernel's own line when the guest kernel died before the guest script printed
    anything (seen once: 7.2 under TCG, "Oops: int3" in sched_clock_cpu 2.8 s into the boot,
    a static key being switched), else ''. Such a boot says nothing of iopulse."""
    if "[guest " in console_text:
        return ""
    m = re.search(r"(Oops: [^\n]*|Kernel panic - [^\n]*)", console_text)
    return m.group(1).strip() if m else ""


def run_kernel(k, args, vng, apt, out_root, current, fetch_error=None):
    label = k["label"]
    out = os.path.join(out_root, label)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    info = {"label": label, "package": k["package"], "version": k["version"],
            "suite": k["suite"], "errors": []}
    controllers = args.controllers.split(",")
    try:
        if fetch_error:
            raise RuntimeError(fetch_error)
        unpacked, kimg, config, release = fetch_kernel(k, args.cache, apt)
    except Exception as e:
        info["errors"].append(f"kernel not available: {e}")
        return info, [fail_cell(label, c, s, info["errors"][0])
                      for c, s in expected(controllers, BASE_SCHEDULERS, args.extra)]
    info["release"] = release
    modes = args.modes if args.all_modes_on is None or label in args.all_modes_on else \
        args.modes[:1]
    info["modes"] = modes
    scheds = expected_cells(label, kernel_config(config))
    if args.bfq_on is not None and label not in args.bfq_on:
        scheds = [x for x in scheds if x != "bfq"]
    imgdir = tempfile.mkdtemp(prefix="disks-", dir=args.cache)
    current["imgdir"] = imgdir
    guest = None
    t0 = time.monotonic()
    try:
        images = {}
        for c in controllers:
            images[c] = os.path.join(imgdir, f"{c}.img")
            with open(images[c], "wb") as f:
                f.truncate(DISK_MIB << 20)          # sparse
        stack_images = []
        for i in range(sum(STACK_DISKS.get(c, 0) for c in args.extra)):
            stack_images.append(os.path.join(imgdir, f"stack{i}.img"))
            with open(stack_images[-1], "wb") as f:
                f.truncate(STACK_DISK_MIB << 20)
        guest_cmd = (f"python3 {VMDIR}/guest.py --out {GUEST_OUT} --kernel {label} "
                     f"--iopulsed {args.iopulsed} --controllers {','.join(controllers)} "
                     f"--schedulers {','.join(scheds)} --disk-size {DISK_MIB << 20} "
                     f"--seconds {args.seconds} --extra {','.join(args.extra) or 'none'} "
                     f"--stack-disk-size {STACK_DISK_MIB << 20} --modes {','.join(modes)}"
                     + (" --blktrace" if args.latency else ""))
        argv = [vng, "--verbose", "--run", kimg, "--disable-kvm", "--disable-microvm",
                "--cpus", str(args.cpus), "--memory", args.memory,
                f"--rodir={os.path.dirname(unpacked)}"]
        # /var/tmp and /tmp are not the host's inside: a checkout or a daemon there is shared
        # in (read-only). virtme-ng mounts every --rwdir before every --rodir, so an output
        # directory inside the checkout would be hidden by it: the output directory is
        # mounted at a guest path of its own instead (GUEST_OUT, in the guest's /tmp overlay)
        argv.append(f"--rodir={REPO}")
        bindir = os.path.dirname(os.path.realpath(args.iopulsed))
        if not bindir.startswith(REPO + "/"):
            argv.append(f"--rodir={bindir}")
        argv += [f"--rwdir={GUEST_OUT}={out}", "--cwd", REPO]
        argv += [f"--qemu-opts={qemu_opts(images, stack_images)}", "--exec", guest_cmd]
        env = dict(os.environ, PATH=os.path.dirname(vng) + ":" + os.environ.get("PATH", ""))
        console = os.path.join(out, "console.log")
        log(f"{label}: booting {release} (TCG) with {', '.join(controllers)}; "
            f"schedulers {', '.join(scheds)}; then {', '.join(args.extra) or 'no extra cells'}"
            f" ({len(stack_images)} stack disks); console {console}")
        for attempt in (1, 2):
            guest = Guest(argv, console, env)
            current["guest"] = guest
            rc = guest.wait(args.timeout)
            died = ""
            if rc is not None:
                with open(console, errors="replace") as f:
                    died = died_before_script(f.read())
            if not died or attempt == 2:
                break
            # the guest kernel died before the guest script ran: nothing of iopulse was
            # tested; booted once more, and said so
            guest.stop()
            os.replace(console, os.path.join(out, "console-boot1.log"))
            info["boot_retry"] = died
            log(f"{label}: the guest kernel died while booting ({died}); booting again")
        if rc is None:
            info["errors"].append(f"the guest did not finish within {args.timeout} s "
                                  "(stopped)")
        else:
            # Under TCG virtme-ng-init looks for its virtio-serial ports before the guest
            # has set them up, so vng cannot learn the script's exit status (it exits 255)
            # and the init prints it on the console instead: that one counts.
            with open(console, errors="replace") as f:
                m = re.findall(r"script exited with code (-?\d+)", f.read())
            code = int(m[-1]) if m else rc
            if code != 0:
                info["errors"].append(f"the guest script exited {code} (vng {rc}): "
                                      + " | ".join(tail(console, 4)))
    finally:
        if guest:
            guest.stop()
            current["guest"] = None
        shutil.rmtree(imgdir, ignore_errors=True)
        current["imgdir"] = None
    info["seconds"] = round(time.monotonic() - t0, 1)

    res = None
    try:
        with open(os.path.join(out, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        info["errors"].append(f"no result from the guest ({e}); console: "
                              + " | ".join(tail(os.path.join(out, "console.log"))))
    cells = []
    if res:
        info["guest_release"] = res.get("release")
        info["daemon"] = res.get("daemon")
        bad = feature_mismatch(k.get("expect", ""), (res.get("daemon") or {}).get("features")
                               or {})
        if bad:
            info["errors"].append("iopulsed turned on or off what kernels.txt does not expect: "
                                  + ", ".join(bad))
        info["modprobe"] = res.get("modprobe")
        info["disks"] = res.get("disks")
        info["errors"] += res.get("errors", [])
        if not res.get("done"):
            info["errors"].append("the guest stopped before it finished: "
                                  + " | ".join(tail(os.path.join(out, "guest.log"), 3)))
        cells = res.get("cells", [])
        if args.latency:
            t = time.monotonic()
            info["blktrace"] = {k: v for k, v in (res.get("blktrace") or {}).items()
                                if k != "files"}
            try:
                info["blktrace"]["pairing"] = blktruth.judge(
                    cells, os.path.join(out, "blktrace"),
                    res.get("blktrace") or {"error": "the guest recorded no blktrace"})
            except Exception as e:      # the kernel's cells fail, the matrix goes on
                info["errors"].append(f"the latency check failed: {type(e).__name__}: {e}")
            info["latency_s"] = round(time.monotonic() - t, 1)
    have = {(c["controller"], c["scheduler"]) for c in cells}
    why = "; ".join(info["errors"]) or "the guest reported nothing for this cell"
    want = expected(controllers, scheds, args.extra)
    for c, s in want:
        if (c, s) not in have:
            cells.append(fail_cell(label, c, s, why))
    order = {cs: i for i, cs in enumerate(want)}
    cells.sort(key=lambda x: order.get((x["controller"], x["scheduler"]), 1 << 30))
    return info, cells


def features_short(f):
    if not f:
        return "-"
    s = f"{f.get('attach') or '?'}, sync {f.get('sync')}"
    if f.get("sync_off_reason"):
        s += f" ({f['sync_off_reason']})"
    if f.get("warnings"):
        s += f", {len(f['warnings'])} warning(s)"
    return s


def cell_line(c):
    cov = c.get("coverage")
    cov = f"{100 * cov:7.3f}%" if cov is not None else "      -"
    status = "PASS" if not c["reasons"] else \
        ("KNOWN: " if c.get("known") else "FAIL: ") + "; ".join(c["reasons"])
    if c["controller"] in EXTRA:
        status = f"({c.get('disk') or '-'}, requeues {c.get('requeues', '-')}) " + status
    io_sync = "off" if c.get("sync_off") else c.get("iopulse_sync", "-")
    lat = (c.get("latency") or {}).get("status", "-")
    return (f"{c['kernel']:5} {c['controller']:13} {c['scheduler']:11} "
            f"diskstats {c.get('diskstats_ios', '-')!s:>6} iopulse "
            f"{c.get('iopulse_ios', '-')!s:>6} timed {cov} lat {lat:3} sync fio "
            f"{c.get('fio_sync', '-')!s:>5} iopulse {io_sync!s:>5} "
            f"[{features_short(c.get('features'))}] {status}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", help="comma-separated labels of kernels.txt (default: all)")
    ap.add_argument("--controllers", default=",".join(DEFAULT_CONTROLLERS))
    ap.add_argument("--extra", default=",".join(EXTRA),
                    help="cells after the controller cells: stacked devices (LVM, md, a "
                         "Ceph OSD label) and tuned queues; 'none' for none")
    ap.add_argument("--kernels-file", default=os.path.join(VMDIR, "kernels.txt"))
    ap.add_argument("--cache", default="/var/tmp/iopulse-vm")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "vm-matrix"))
    ap.add_argument("--iopulsed", default=os.path.join(REPO, "build", "iopulsed"))
    ap.add_argument("--venv", default=os.path.join(REPO, "build", "vmenv"))
    ap.add_argument("--seconds", type=float, default=1.5, help="each fio job's run time")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--memory", default="2G")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per kernel boot")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="iopulsed's modes, one daemon each, all at once in every guest: "
                         "full, request (--queue-from request), completion (README: "
                         "completion-only mode); the first is each row's own")
    ap.add_argument("--all-modes-on", metavar="LABELS", default=None,
                    help="comma-separated kernel labels that run every mode of --modes; the "
                         "others run its first only (default: every kernel runs them all)")
    ap.add_argument("--bfq-on", metavar="LABELS", default=None,
                    help="comma-separated kernel labels with a bfq column; the others run "
                         "none and mq-deadline only (default: every kernel that has bfq)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="kernels booted at once (default: 2, 1 on a single CPU); a TCG "
                         "guest keeps about one CPU busy")
    ap.add_argument("--mode", choices=MODES,
                    help="one mode only (--modes MODE)")
    ap.add_argument("--no-latency", dest="latency", action="store_false",
                    help="do not hold latency to blktrace")
    args = ap.parse_args()
    args.modes = [args.mode] if args.mode else [m for m in args.modes.split(",") if m]
    if args.all_modes_on is not None:
        args.all_modes_on = {x for x in args.all_modes_on.split(",") if x}
    if args.bfq_on is not None:
        args.bfq_on = {x for x in args.bfq_on.split(",") if x}
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m} (known: {', '.join(MODES)})")
    args.iopulsed = os.path.realpath(args.iopulsed)
    args.out = os.path.realpath(args.out)
    for c in args.controllers.split(","):
        if c not in CONTROLLERS:
            ap.error(f"unknown controller {c} (known: {', '.join(CONTROLLERS)})")
    args.extra = [c for c in args.extra.split(",") if c and c != "none"]
    for c in args.extra:
        if c not in EXTRA:
            ap.error(f"unknown extra cell {c} (known: {', '.join(EXTRA)})")

    kernels = read_kernels(args.kernels_file)
    if args.kernels:
        want = args.kernels.split(",")
        unknown = set(want) - {k["label"] for k in kernels}
        if unknown:
            ap.error(f"not in {args.kernels_file}: {', '.join(sorted(unknown))}")
        kernels = [k for k in kernels if k["label"] in want]

    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.cache, exist_ok=True)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "host_kernel": os.uname().release, "iopulsed": args.iopulsed,
               "fio_seconds": args.seconds, "modes": args.modes, "kernels": [], "cells": [],
               "errors": []}
    t0 = time.monotonic()
    running: dict[str, dict] = {}     # label -> its guest and disk images while it runs
    lock = threading.RLock()          # the signal handler takes it in the main thread too
    stopping = threading.Event()      # a signal came: no kernel boots any more

    def on_signal(sig, _frame):
        stopping.set()
        with lock:
            curs = list(running.values())
        for cur in curs:
            if cur.get("guest"):
                cur["guest"].stop()
            if cur.get("imgdir"):
                shutil.rmtree(cur["imgdir"], ignore_errors=True)
        os._exit(128 + sig)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    problems = []
    if os.geteuid() != 0:
        problems.append("not root (the guest shares this machine's root file system as root)")
    tools = ["qemu-system-x86_64", "depmod", "busybox", "file", "fio", "apt-get", "dpkg-deb"]
    if any(c.startswith("lvm-") for c in args.extra):
        tools.append("lvm")
    if "md-raid1" in args.extra:
        tools.append("mdadm")
    if "ext4" in args.extra:
        tools.append("mkfs.ext4")
    if args.latency:
        tools += ["blktrace", "blkparse", "btt"]
    for tool in tools:
        if not shutil.which(tool):
            problems.append(f"{tool} not found (scripts/install-deps.sh installs it)")
    if not os.access(args.iopulsed, os.X_OK):
        problems.append(f"no {args.iopulsed}: build first (ninja -C build)")
    vng = None
    if not problems:
        try:
            vng = ensure_vng(args.venv)
        except Exception as e:
            problems.append(f"virtme-ng could not be installed: {e}")
    if not problems:
        r = subprocess.run(["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg",
                            "-display", "none", "-nodefaults", "-S", "-no-reboot",
                            "-monitor", "none", "-serial", "none", "-version"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            problems.append(f"qemu-system-x86_64 cannot run: {r.stdout.strip()[-200:]}")
    apt = Apt(os.path.join(args.cache, "apt"), [k["suite"] for k in kernels])

    # downloads one at a time (one apt state), then the boots side by side: a TCG guest
    # keeps about one CPU busy, so args.jobs guests take about 1/jobs of the time
    fetched: dict[str, str] = {}
    if not problems:
        for k in kernels:
            try:
                fetch_kernel(k, args.cache, apt)
            except Exception as e:
                fetched[k["label"]] = str(e)

    def one(k):
        if problems:
            info = {"label": k["label"], "package": k["package"], "version": k["version"],
                    "suite": k["suite"], "errors": list(problems)}
            return info, [fail_cell(k["label"], c, s, "; ".join(problems))
                          for c, s in expected(args.controllers.split(","), BASE_SCHEDULERS,
                                               args.extra)]
        cur: dict = {}
        with lock:
            if stopping.is_set():
                return ({"label": k["label"], "package": k["package"], "version": k["version"],
                         "suite": k["suite"], "errors": ["stopped by a signal"]}, [])
            running[k["label"]] = cur
        try:
            return run_kernel(k, args, vng, apt, args.out, cur, fetched.get(k["label"]))
        finally:
            with lock:
                running.pop(k["label"], None)

    def record(k, info, cells):
        with lock:
            results["kernels"].append(info)
            results["cells"] += cells
            for c in cells:
                print(cell_line(c), flush=True)
            for e in info["errors"]:
                log(f"{k['label']}: ERROR {e}")
            if "seconds" in info:
                log(f"{k['label']}: {info['seconds']} s")
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump(results, f, indent=1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(one, k): k for k in kernels}
        for fut in concurrent.futures.as_completed(futs):
            record(futs[fut], *fut.result())
    order = {k["label"]: i for i, k in enumerate(kernels)}
    results["kernels"].sort(key=lambda i: order[i["label"]])
    results["cells"].sort(key=lambda c: order.get(c["kernel"], 1 << 30))   # stable

    results["seconds"] = round(time.monotonic() - t0, 1)
    known = read_known(os.path.join(VMDIR, "known-failures.txt"))
    for c in results["cells"]:
        c["known"] = is_known(c, known)
    failed = [c for c in results["cells"] if c["reasons"] and not c["known"]]
    results["known"] = sum(1 for c in results["cells"] if c["known"])
    kernel_errors = [e for k in results["kernels"] for e in k["errors"]]
    results["passed"] = len(results["cells"]) - len(failed) - results["known"]
    results["failed"] = len(failed)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)

    print()
    print("== VM matrix (kernel, controller, scheduler)")
    for c in results["cells"]:
        print(cell_line(c))
    for k in results["kernels"]:
        d = (k.get("daemon") or {})
        print(f"{k['label']}: {k['package']} {k['version']} ({k['suite']}), "
              f"iopulsed: {d.get('error') or 'ready'}; "
              f"{(d.get('features') or {}).get('probes') or '-'}")
        for w in (d.get("features") or {}).get("warnings", []):
            print(f"    {w}")
        held = [c for c in results["cells"] if c["kernel"] == k["label"] and c.get("latency")]
        for mode in args.modes:
            mine = [(c, c["latency"]["modes"][mode]) for c in held
                    if mode in c["latency"].get("modes", {})]
            if not mine:
                continue
            worst = max((cm for cm in mine if cm[1].get("worst")),
                        key=lambda cm: (not cm[1]["worst"]["ok"], cm[1]["worst"]["buckets"],
                                        cm[1]["worst"]["ns"]), default=None)
            print(f"    {mode}: latency held to blktrace in {len(mine)} cells: "
                  f"{sum(m['status'] == 'ok' for _, m in mine)} ok"
                  + (f"; closest call {worst[0]['controller']} {worst[0]['scheduler']} "
                     f"{worst[1]['worst']['disk']}: {worst[1]['worst']['verdict']}"
                     if worst else ""))
    print(f"results: {os.path.join(args.out, 'results.json')} "
          f"(tests/vm/table.py {os.path.join(args.out, 'results.json')}); "
          f"{results['seconds']:.0f} s")
    if results["known"]:
        print(f"vm: {results['known']} cell(s) failed as tests/vm/known-failures.txt expects")
    print(f"vm: {results['passed']} passed, {results['failed']} failed")
    return 1 if failed or kernel_errors else 0


if __name__ == "__main__":
    sys.exit(main())
