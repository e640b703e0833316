#!/usr/bin/env python3
"""A week of short-lived syncing threads, simulated: the daemon's RSS and snapshot size.

A busy node starts a new syncing thread about once a second (about 600,000 in a week). This
starts that many threads as fast as they come, each named one of 8 names, each making one
fdatasync on a loop device and exiting, while iopulsed runs with a gRPC socket (250 ms
intervals and a kernel thread table of 4096, so that a week's threads fit in minutes without
dropping calls). Every --report threads it prints the
daemon's RSS (and how much of it the replay ring holds: server.ring of intervals, bounded
by age and size, not by threads), the GetSnapshot size and thread entries, and the fdatasync calls the snapshot
holds against those made. Ends with the same line and a verdict: every call kept (or counted
as dropped), the snapshot under 4 MiB.

Usage (root, after a build):  tests/bench/thread_churn.py [--threads 600000] [--report 50000]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "clients" / "python" / "src"))

from overhead import CHILDREN, cleanup, make_loop, on_signal  # noqa: E402

import grpc  # noqa: E402
from iopulse._pb import iopulse_pb2 as pb  # noqa: E402
from iopulse._pb import iopulse_pb2_grpc as pb_grpc  # noqa: E402

NAMES = [f"churn-{i}" for i in range(8)]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024


def churn(path: str, n: int, start: int) -> None:
    fd = os.open(path, os.O_WRONLY)

    def one(i: int) -> None:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
            f.write(NAMES[i % len(NAMES)])
        os.fdatasync(fd)

    try:
        for i in range(start, start + n):
            t = threading.Thread(target=one, args=(i,))
            t.start()
            t.join()
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=600_000)
    ap.add_argument("--report", type=int, default=50_000, metavar="N")
    ap.add_argument("--interval", default="250ms")
    ap.add_argument("--max-threads", default="4096")
    ap.add_argument("--ring", default="10m", help="server.ring (replay history)")
    ap.add_argument("--iopulsed", default=os.environ.get("IOPULSED",
                                                         str(REPO / "build" / "iopulsed")))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("thread_churn: run as root (BPF, loop devices)", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    work = tempfile.mkdtemp(prefix="iopulse-churn-")
    sock = os.path.join(work, "d.sock")
    dev = make_loop(64)
    err = open(os.path.join(work, "iopulsed.stderr"), "w+")
    cfg = os.path.join(work, "churn.yaml")
    with open(cfg, "w") as f:
        f.write(f"server:\n  ring: {a.ring}\n")
    d = subprocess.Popen([a.iopulsed, "-c", cfg, "-i", a.interval,
                          "--max-threads", a.max_threads, "--devices", os.path.basename(dev),
                          "--socket", sock], stdout=subprocess.DEVNULL, stderr=err)
    CHILDREN.append(d)
    ch = grpc.insecure_channel(f"unix:{sock}")
    stub = pb_grpc.TelemetryStub(ch)
    ok = False
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                stub.GetSnapshot(pb.SnapshotRequest(), timeout=5)
                break
            except grpc.RpcError:
                if d.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    print(f"iopulsed did not answer: {err.read()[-2000:]}", file=sys.stderr)
                    return 1
                time.sleep(0.2)
        t0 = time.monotonic()
        print(f"thread_churn: {a.threads} threads, one fdatasync each on {dev}; iopulsed pid "
              f"{d.pid}, RSS {rss_mib(d.pid):.1f} MiB", flush=True)
        done = 0
        snap = None
        while done < a.threads:
            step = min(a.report, a.threads - done)
            churn(dev, step, done)
            done += step
            time.sleep(2.5)   # the last threads' calls come with the next interval
            snap = stub.GetSnapshot(pb.SnapshotRequest(), timeout=30)
            kept = sum(t.fdatasync for t in snap.threads if t.comm in NAMES)
            ring = stub.GetInfo(pb.InfoRequest(), timeout=30).ring_bytes / 2**20
            print(f"{time.monotonic() - t0:7.0f}s  threads {done:7d}  RSS "
                  f"{rss_mib(d.pid):6.1f} MiB (replay ring {ring:5.1f})  snapshot {snap.ByteSize():8d} bytes, "
                  f"{len(snap.threads):5d} thread entries  fdatasync kept {kept} + dropped "
                  f"{snap.drops.sync_full} of {done}", flush=True)
        assert snap is not None
        # the fold runs every 16th interval: wait for the last one, then the final figures
        time.sleep(17)
        snap = stub.GetSnapshot(pb.SnapshotRequest(), timeout=30)
        kept = sum(t.fdatasync for t in snap.threads if t.comm in NAMES)
        entries = [t for t in snap.threads if t.comm in NAMES]
        print(f"end: {done} threads in {time.monotonic() - t0:.0f} s; RSS {rss_mib(d.pid):.1f} "
              f"MiB; snapshot {snap.ByteSize()} bytes, {len(snap.threads)} thread entries "
              f"({len(entries)} of the churn, {sum(t.threads_folded for t in entries)} threads "
              f"folded); fdatasync kept {kept} + dropped {snap.drops.sync_full} of {done}")
        ok = kept + snap.drops.sync_full == done and snap.ByteSize() < 4 << 20
        print("verdict: " + ("PASS" if ok else "FAIL"))
    finally:
        ch.close()
        cleanup()     # the daemon (SIGTERM), the loop device and its file
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
