#!/usr/bin/env python3
"""Size of a run file: one hour at 1 s of a busy storage node (36 devices doing reads and
writes, 200 sync threads), written through the real RunWriter, then read back.

The Updates are built like the daemon's: sparse log-linear histograms at precision 5 whose
occupied buckets and counts vary every second (queue wait, service, total and size per op,
seek distance, flush latency per device; a latency histogram per thread). Prints the file
size, bytes per Update and the compression ratio; nothing is asserted.

usage: python3 tests/bench/runfile_size.py [--seconds 3600] [--devices 36] [--threads 200]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python", "src"))

from iopulse._pb import iopulse_pb2 as pb  # noqa: E402
from iopulse.histogram import bucket_index  # noqa: E402
from iopulse.record import RunWriter, load  # noqa: E402
from iopulse.analysis.metrics import phase_rows  # noqa: E402

K = 5


def hist(rnd: random.Random, center: float, spread: float, n: int) -> pb.Histogram:
    """n samples from a log-normal around center, as a sparse histogram."""
    counts: dict[int, int] = {}
    # sample a few hundred values and scale the counts: the shape, not every sample
    m = min(n, 400)
    for _ in range(m):
        v = max(1, int(rnd.lognormvariate(0, spread) * center))
        i = bucket_index(v, K)
        counts[i] = counts.get(i, 0) + 1
    scale = n / m
    h = pb.Histogram(precision=K)
    for i in sorted(counts):
        h.index.append(i)
        h.count.append(max(1, int(counts[i] * scale)))
    return h


def update(rnd: random.Random, seq: int, ndev: int, nthr: int) -> pb.Update:
    t0r, t0m = 1_763_800_000_000_000_000, 50_000_000_000
    u = pb.Update(seq=seq, first_seq=seq, merged=1, precision=K,
                  start_realtime_ns=t0r + (seq - 1) * 10**9, end_realtime_ns=t0r + seq * 10**9,
                  start_monotonic_ns=t0m + (seq - 1) * 10**9, end_monotonic_ns=t0m + seq * 10**9)
    for d in range(ndev):
        ds = u.devices.add(name=f"sd{chr(97 + d % 26)}{'' if d < 26 else chr(97 + d // 26)}",
                           major=8, minor=16 * d, osd_id=d, osd_role="block")
        load = rnd.uniform(0.5, 1.5)
        for op, ios, size in (("read", int(800 * load), 16384), ("write", int(1200 * load), 65536)):
            s = getattr(ds, op)
            s.ios, s.bytes = ios, ios * size
            s.queue_wait_ns.CopyFrom(hist(rnd, 200_000 * load, 1.2, ios))
            s.service_ns.CopyFrom(hist(rnd, 2_000_000 * load, 0.8, ios))
            s.total_ns.CopyFrom(hist(rnd, 2_400_000 * load, 0.9, ios))
            s.size_bytes.CopyFrom(hist(rnd, size, 0.6, ios))
        ds.flush.ios = int(30 * load)
        ds.flush.service_ns.CopyFrom(hist(rnd, 500_000, 0.5, ds.flush.ios))
        ds.seek_sequential, ds.seek_forward, ds.seek_backward = 300, 900, 800
        ds.seek_distance_sectors.CopyFrom(hist(rnd, 2_000_000, 2.0, 2000))
        ds.preflush = ds.flush.ios
        ds.preflush_latency_ns.CopyFrom(hist(rnd, 800_000, 0.6, ds.preflush))
    for t in range(nthr):
        calls = rnd.randint(5, 200)
        th = u.threads.add(pid=1000 + t // 8, tid=2000 + t, comm=f"bstore_kv_sync{t % 8}",
                           process="ceph-osd", osd_id=t // 8, dev_major=8,
                           dev_minor=16 * (t % ndev), device="sdb", fdatasync=calls,
                           flush_bios=calls, latency_sum_ns=calls * 900_000)
        th.latency_ns.CopyFrom(hist(rnd, 900_000, 0.7, calls))
    return u


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=3600)
    ap.add_argument("--devices", type=int, default=36)
    ap.add_argument("--threads", type=int, default=200)
    a = ap.parse_args()
    rnd = random.Random(1)
    # building Updates is the slow part: a pool of 60 distinct ones, reused in order
    pool = [update(rnd, i + 1, a.devices, a.threads) for i in range(60)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hour.iopulse")
        w = RunWriter(path)
        t0 = time.monotonic()
        raw = 0
        for s in range(1, a.seconds + 1):
            u = pool[(s - 1) % len(pool)]
            u.seq = u.first_seq = s
            u.start_monotonic_ns = 50_000_000_000 + (s - 1) * 10**9
            u.end_monotonic_ns = u.start_monotonic_ns + 10**9
            del u.phases[:]
            if s in (1, a.seconds):        # one phase over the whole run
                u.phases.add(name="all", id=1 if s == 1 else 2, end=s != 1,
                             begin_id=1 if s != 1 else 0, monotonic_ns=u.end_monotonic_ns,
                             realtime_ns=u.end_realtime_ns)
            data = u.SerializeToString()
            raw += len(data)
            w.write_update(0, data)
            if s % 600 == 0:
                print(f"  {s} s written, {w.file_bytes / 2**20:.1f} MiB", file=sys.stderr)
        w.close()
        wt = time.monotonic() - t0
        size = os.path.getsize(path)
        t0 = time.monotonic()
        run = load(path)
        rt = time.monotonic() - t0
        assert len(run.hosts[0].windows) == a.seconds
        t0 = time.monotonic()
        rows, trows = phase_rows(run)
        pt = time.monotonic() - t0
        assert len(rows) == a.devices, len(rows)
    print(f"run file for {a.seconds} s at 1 s, {a.devices} busy devices, {a.threads} sync "
          f"threads: {size / 2**20:.1f} MiB ({size / a.seconds / 1024:.1f} KiB per Update; "
          f"packed Updates {raw / 2**20:.1f} MiB, gzip ratio {raw / size:.2f}); written in "
          f"{wt:.1f} s, loaded in {rt:.1f} s, one report over the whole run in {pt:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
