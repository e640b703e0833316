#!/usr/bin/env python3
"""Where iopulsed's BPF programs spend their time, by source line.

Runs iopulsed (with the arguments given after --) on a /dev/shm loop device under fio 4k
randwrite libaio QD32, samples every CPU with `perf record -e cpu-clock`, reads each program's
JIT line table while it is loaded (build/iopulse-bench-jit-lines), and prints for each program
the source lines that took the most samples. A sample is charged to the line whose code holds
the instruction before the sampled address (a timer interrupt lands after the instruction that
waited). Shares are of the program's own samples; the benchmark (overhead.py) gives its ns/IO.

Usage (root):  tests/bench/profile.py [--seconds 8] [--top 15] -- --queue-from request --no-sync
"""
import argparse
import bisect
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead  # noqa: E402  (loop devices, children and their cleanup)

JIT_LINES = os.path.join(overhead.BUILD, "iopulse-bench-jit-lines")


def iop_programs():
    out = json.loads(overhead.sh("bpftool", "prog", "show", "-j"))
    return {p["id"]: p["name"] for p in out if p.get("name", "").startswith("iop_")}


def line_table(prog_id):
    rows = []
    for line in overhead.sh(JIT_LINES, str(prog_id)).splitlines():
        off, num, src = line.split("\t", 2)
        rows.append((int(off, 16), int(num), src.strip()))
    rows.sort()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0, help="sampling time")
    ap.add_argument("--top", type=int, default=15, help="lines shown per program")
    ap.add_argument("daemon_args", nargs="*", help="iopulsed's arguments (after --)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("profile.py: run as root")
    for tool in ("perf", "fio", "bpftool"):
        if not overhead.shutil.which(tool):
            sys.exit(f"profile.py: {tool} not found (apt-get install linux-perf fio bpftool)")
    if not os.access(JIT_LINES, os.X_OK):
        sys.exit(f"profile.py: {JIT_LINES} missing: build first (ninja -C build)")
    signal.signal(signal.SIGINT, overhead.on_signal)
    signal.signal(signal.SIGTERM, overhead.on_signal)
    try:
        return run(a)
    finally:
        overhead.cleanup()


def run(a):
    dev = overhead.make_loop(2048)
    base = os.path.basename(dev)
    with open(f"/sys/block/{base}/queue/scheduler", "w") as f:
        f.write("none")
    overhead.sh("fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M",
                "--direct=1", "--output-format=json")
    before = set(iop_programs())
    tool = overhead.Tool("iopulsed", [overhead.IOPULSED, "--devices", base] + a.daemon_args,
                         ready=2)
    tool.start()
    progs = {i: n for i, n in iop_programs().items() if i not in before}
    tables = {n: line_table(i) for i, n in progs.items()}
    tmp = tempfile.mkdtemp(prefix="iopulse-profile-")
    data = os.path.join(tmp, "perf.data")
    fio = subprocess.Popen(["fio", "--name=p", f"--filename={dev}", "--rw=randwrite",
                            "--bs=4k", "--ioengine=libaio", "--iodepth=32", "--direct=1",
                            "--time_based", f"--runtime={int(a.seconds) + 4}",
                            "--output-format=json"], stdout=subprocess.DEVNULL)
    overhead.CHILDREN.append(fio)
    time.sleep(2)
    print(f"sampling {a.seconds:g} s: iopulsed {' '.join(a.daemon_args)}", file=sys.stderr)
    overhead.sh("perf", "record", "-e", "cpu-clock", "-F", "20000", "-a", "-o", data,
                "--", "sleep", str(a.seconds))
    fio.wait()
    tool.stop()
    script = overhead.sh("perf", "script", "-i", data, "-F", "ip,sym,symoff")
    samples = collections.Counter()
    for line in script.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith("bpf_prog_") and "+0x" in parts[1]:
            samples[parts[1]] += 1
    os.unlink(data)
    os.rmdir(tmp)
    for name, rows in sorted(tables.items()):
        offs = [r[0] for r in rows]
        by = collections.Counter()
        for sym, n in samples.items():
            fn, off = sym.rsplit("+", 1)
            if not fn.endswith("_" + name):
                continue
            i = bisect.bisect_right(offs, int(off, 16) - 1) - 1
            by[(rows[i][1], rows[i][2]) if i >= 0 else (0, "(entry)")] += n
        total = sum(by.values())
        if not total:
            continue
        print(f"\n{name}: {total} samples")
        for (num, src), n in by.most_common(a.top):
            print(f"  {100 * n / total:5.1f}%  {num:5d}  {src[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
