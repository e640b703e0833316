#!/usr/bin/python3
"""Does this kernel run every BPF program on block_rq_complete for every completion?

An empty tp_btf program on block_rq_complete (build/iopulse-bench-floor, no iopulse
involved) and a perf counter of the same tracepoint (the kernel's own event count, no BPF);
fio runs 32 psync threads of 4k random IO on a loop device for a few seconds per window;
each window prints the tracepoint's hits, the program's runs and its recursion misses. A
window with more hits than runs and no misses is a completion the kernel ran no BPF
program for: iopulse can count such an IO (completion_unseen) but cannot time it.

    python3 tests/bench/kernel_delivery.py                  # 5 windows of 3 s
    python3 tests/bench/kernel_delivery.py --windows 20 --seconds 5
    ../shared/busy-node.sh 600 & python3 tests/bench/kernel_delivery.py   # beside a load

As root, after a build (ninja -C build).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kernel_truth import CompletionDelivery  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--windows", type=int, default=5, help="windows to measure (default 5)")
    ap.add_argument("--seconds", type=int, default=3, help="fio's run per window (default 3)")
    ap.add_argument("--floor", default=os.path.join(ROOT, "build", "iopulse-bench-floor"),
                    help="the empty-program loader (default build/iopulse-bench-floor)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("kernel_delivery.py: run as root (perf counters, BPF, loop devices)")
    if not os.access(a.floor, os.X_OK):
        sys.exit(f"kernel_delivery.py: {a.floor} not found: build first (ninja -C build)")
    fd, img = tempfile.mkstemp(prefix="iopulse-delivery-", suffix=".img", dir="/dev/shm")
    os.close(fd)
    lo = floor = None
    total_hits = total_not_run = bad = 0
    try:
        os.truncate(img, 1 << 30)
        lo = subprocess.run(["losetup", "--direct-io=on", "-f", "--show", img], check=True,
                            capture_output=True, text=True).stdout.strip()
        floor = subprocess.Popen([a.floor, "block"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(2)
        if floor.poll() is not None:
            sys.exit(f"kernel_delivery.py: {a.floor} exited ({floor.returncode})")
        print(f"{lo}: 32 psync threads, 4k randrw, {a.seconds} s per window", flush=True)
        for w in range(1, a.windows + 1):
            with CompletionDelivery(floor.pid, ("floor_rq_compl",)) as cd:
                subprocess.run(["fio", "--name=delivery", f"--filename={lo}", "--direct=1",
                                "--size=1G", "--randrepeat=0", "--rw=randrw", "--bs=4k",
                                "--ioengine=psync", "--numjobs=32", "--time_based",
                                f"--runtime={a.seconds}s", "--output-format=terse"],
                               stdout=subprocess.DEVNULL, check=True)
            r = cd.result
            assert r is not None
            total_hits += r.hits
            total_not_run += r.not_run
            bad += r.not_run > 0
            print(f"window {w}/{a.windows}: {r.hits} completions, {r.not_run} ran no program "
                  f"({r.misses} recursion misses)", flush=True)
        print(f"in all: {total_not_run} of {total_hits} completions ran no program "
              f"({100 * total_not_run / max(total_hits, 1):.4f}%), in {bad} of "
              f"{a.windows} windows")
    finally:
        if floor is not None:
            floor.terminate()
            floor.wait()
        if lo:
            subprocess.run(["losetup", "-d", lo], check=False)
        os.unlink(img)
    return 0


if __name__ == "__main__":
    sys.exit(main())
