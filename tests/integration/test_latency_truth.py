"""Latency held to an independent per-IO truth (latency_truth.py: a reference bpftrace script of
classic block tracepoints, keyed by device and sector) on IO shapes that move stamps around:
split IOs (4 MiB writes on a device that takes 64 KiB), merged sequential writes under
mq-deadline, tag waits of many synchronous readers, and split writes over sectors where
merged writes left records behind (a part never takes a record another bio left under its
key). (A file system's journal writes are not among them yet: where the disk emulates FUA
with a post-flush, iopulse's total runs to the end of the flush sequence, the truth's to the
data part's completion.)

For every cell: iopulse's counts equal /proc/diskstats; the truth saw every completion but the
runs the kernel skipped of its programs (counted); iopulse's queue wait (bio mode), service
time and total latency histograms agree with the truth's per-IO values at p50, p90 and p99,
each within one histogram bucket or 5 us (p99.9 and max shown). In the request mode the queue
wait starts at the request's set-up, so it is bounded by the truth's Q2D, and its service time
is held to the truth; in the completion-only mode the total, from the kernel's set-up stamp, is
held to the truth's G2C. A split part never waits longer than the whole IO fio timed.
"""
from __future__ import annotations

import time

import pytest

from iopulse_testlib import run_fio, wait_idle
from latency_truth import SHOWN, Histogram, Tracer, bucket_index, compare

MIN_TRUTH_IOS = 1000
# Completions the reference script did not print beyond the skipped runs the kernel counted:
# none in the earlier runs of this test; beside ../shared/busy-node.sh 69 of 65,815 reads
# (tagwait, completion-only daemon; 586 counted skips) and 196 of 87,017 (tagwait, bio; 819),
# no events lost by bpftrace, iopulse's counts equal to diskstats'. The cause is not
# established (a classic tracepoint's event dropped before its program runs, as perf's
# recursion guard does without a count, would look like this). At most 0.5%.
TRUTH_UNCOUNTED_PPM = 5000


def _kdev(majmin: str) -> int:
    major, minor = (int(x) for x in majmin.split(":"))
    return (major << 20) | minor


def _merged(ivs: list[dict], name: str, op: str, metric: str) -> Histogram | None:
    h = None
    for iv in ivs:
        for d in iv.get("devices", []):
            if d["name"] != name:
                continue
            m = d["ops"][op].get(metric)
            if not m or not m.get("buckets"):
                continue
            hh = Histogram(iv["histogram"]["precision"], [b[0] for b in m["buckets"]],
                           [b[1] for b in m["buckets"]])
            h = hh if h is None else h + hh
    return h


def _sum(ivs: list[dict], name: str, op: str, key: str) -> int:
    return sum(d["ops"][op][key] for iv in ivs for d in iv.get("devices", [])
               if d["name"] == name)


def _split(lo, path):
    lo.set_max_sectors_kb(64)
    res = [run_fio(name="split4m", filename=path, rw="write", bs="4M", direct=1,
                   ioengine="libaio", iodepth=4, size="384M")]
    res.append(run_fio(name="rand4k", filename=path, rw="randwrite", bs="4k", direct=1,
                       ioengine="libaio", iodepth=16, time_based=True, runtime="2s"))
    return res


def _merge(lo, path):
    lo.set_scheduler("mq-deadline")
    return [run_fio(name="seq4k", filename=path, rw="write", bs="4k", direct=1,
                    ioengine="libaio", iodepth=32, iodepth_batch_submit=16, size="96M")]


def _reuse(lo, path):
    """Split writes over sectors that merged writes of the same bio addresses wrote seconds
    before. A bio merged behind another leaves its record (address, start sector) behind;
    where one lay under a split parent's later start, in a lower way of its set than the
    parent's own, the parts from there on took its time: seconds of queue wait for parts of
    IOs that took milliseconds (6.18, its NVMe disk at max_sectors_kb 64 after the matrix's
    earlier cells). Returns the split job first."""
    lo.set_scheduler("mq-deadline")
    merged = run_fio(name="seq64k", filename=path, rw="write", bs="64k", direct=1,
                     ioengine="libaio", iodepth=32, iodepth_batch_submit=32,
                     iodepth_batch_complete_min=32, size="4M", loops=20)
    time.sleep(2)   # what a left-behind record would give is then beyond any IO's time
    lo.set_scheduler("none")
    lo.set_max_sectors_kb(64)
    split = run_fio(name="split1m", filename=path, rw="write", bs="1M", direct=1,
                    ioengine="libaio", iodepth=4, size="4M", loops=20)
    return [split, merged]


def _tagwait(lo, path):
    lo.set_nr_requests(4, 8, 16)
    return [run_fio(name="psync", filename=path, rw="randread", bs="16k", direct=1,
                    ioengine="psync", numjobs=16, time_based=True, runtime="4s",
                    group_reporting=1)]


WORKLOADS = {"split": _split, "merge": _merge, "tagwait": _tagwait, "reuse": _reuse}
CELLS = [("split", "bio"), ("split", "request"), ("split", "completion"), ("merge", "bio"),
         ("tagwait", "bio"), ("tagwait", "completion"), ("reuse", "bio")]


@pytest.mark.parametrize("workload,queue_from", CELLS, ids=[f"{w}-{q}" for w, q in CELLS])
def test_latency_equals_the_per_io_truth(loopdev, daemon, tmp_path, workload, queue_from):
    lo = loopdev("512M", backing_dir="/var/tmp", fill=workload == "tagwait")
    wait_idle(lo.name)
    mode = (["--mode", "completion"] if queue_from == "completion" else
            ["--queue-from", queue_from])
    d = daemon("--json", "--json-buckets", "-i", "1s", "--devices", lo.name, *mode,
               "--no-sync")
    # the daemon first: a tracepoint runs its programs in the order they were attached, so
    # iopulse's run before the script's at dispatch and at completion alike and neither
    # stamp waits for the script's handler (latency_truth.SLACK_NS)
    tracer = Tracer(_kdev(lo.majmin), str(tmp_path / "truth.txt"))
    try:
        before = wait_idle(lo.name)
        fio = WORKLOADS[workload](lo, lo.path)
        after = wait_idle(lo.name)
        d.next_interval(timeout=10)
    finally:
        truth = tracer.stop()
    assert d.stop() == 0, d.describe()
    ivs = d.all_intervals()
    ds = after - before
    print(f"\n{workload}, queue from {queue_from}: diskstats reads {ds.reads} writes "
          f"{ds.writes}; truth reads {truth.ios('read')} writes {truth.ios('write')}, "
          f"{truth.skipped} program runs skipped by the kernel, {truth.lost} events lost, "
          f"no Q seen {truth.no_q}, no D seen {truth.no_d}")
    drops = {k: sum(iv["drops"].get(k, 0) for iv in ivs)
             for k in ("missed_events", "completed_at_accounting", "no_bio_ts", "bio_evicted")}
    print(f"  iopulse's drops: {drops}")
    bad = []
    for op, want in (("read", ds.reads), ("write", ds.writes)):
        ios = _sum(ivs, lo.name, op, "ios")
        assert ios == want, f"{op}: iopulse {ios} != diskstats {want}"
        # the truth's script misses what the kernel did not run it for (counted, on every
        # device) and, beside other load, a few completions more (TRUTH_UNCOUNTED); the
        # comparison's rank windows take every IO it lacks into account
        uncounted = want - truth.skipped_completions() - truth.ios(op)
        assert truth.ios(op) <= want and uncounted <= want * TRUTH_UNCOUNTED_PPM // 1000000, \
            f"{op}: truth saw {truth.ios(op)} of {want} ({truth.skipped} runs skipped, " \
            f"{uncounted} more not seen)"
        if truth.ios(op) < MIN_TRUTH_IOS:
            continue
        noq = _sum(ivs, lo.name, op, "no_queue_ts")
        late = truth.late[op]
        svc = _merged(ivs, lo.name, op, "service_ns")
        if queue_from == "completion":
            # the kernel's stamps: total from the request's set-up (G) to C. Its service
            # samples are only the IOs whose dispatch stamp differs from the set-up's (6.9+
            # plug clock: a few dispatched outside the plug), a subset the truth cannot pick
            checks = [("total", truth.setup_total[op], _merged(ivs, lo.name, op, "total_ns"),
                       late["setup_total"])]
        else:
            assert svc is not None
            checks = [("service", truth.service[op], svc, late["service"])]
        if queue_from == "bio":
            checks += [("queue", truth.queue[op], _merged(ivs, lo.name, op, "queue_wait_ns"),
                        None),
                       ("total", truth.total[op], _merged(ivs, lo.name, op, "total_ns"),
                        late["total"])]
        after_c = sorted(e - c for e, c in zip(late["service"], truth.service[op]))
        print(f"  {op}: the script's completion handler ended {after_c[len(after_c) // 2]} ns "
              f"(p50), {after_c[len(after_c) * 99 // 100]} ns (p99) after its clock read")
        for name, values, hist, upper in checks:
            print(f"  {op} {name}: truth {len(values)} IOs, iopulse {hist.count} samples")
            for v in compare(values, hist, name, late=upper):
                print(f"    {v}")
                if not v.ok:
                    bad.append(f"{op} {v}")
            for v in compare(values, hist, name, SHOWN, late=upper):
                print(f"    {v} (shown)")
        qh = _merged(ivs, lo.name, op, "queue_wait_ns")
        print(f"  {op}: no_queue_ts {noq}, queue-wait samples {qh.count if qh else 0}")
        if queue_from == "bio":
            # every IO's submission is known to both (a split part's is its parent's), but
            # an empty PREFLUSH write's, which the flush machinery ends undispatched
            pre = sum(dv["flush"]["preflush"] for iv in ivs for dv in iv.get("devices", [])
                      if dv["name"] == lo.name) if op == "write" else 0
            rest = sum(_sum(ivs, lo.name, op, k) for k in ("untimed", "completion_unseen"))
            assert qh is not None and noq <= 0.001 * ios and \
                ios - pre <= qh.count + noq + rest <= ios, \
                f"{op}: {qh.count if qh else 0} queue waits + {noq} unknown + {rest} " \
                f"untimed/unseen, {pre} preflush of {ios} IOs"
        elif qh is not None:
            # from the request's set-up: never longer than from the bio's submission
            k = qh.precision
            tmax = max(truth.queue[op])
            assert bucket_index(qh.max - 1, k) <= bucket_index(tmax, k) + 1, \
                f"{op}: request-mode queue wait max {qh.max} ns > the truth's Q2D {tmax} ns"
    assert not bad, "latency off the truth by more than a bucket:\n" + "\n".join(bad)
    if workload in ("split", "reuse"):
        # a part cannot wait longer than the whole IO it belongs to took as fio timed it
        # (the slowest write of any job of the cell)
        clat = max(r["jobs"][0]["write"]["clat_ns"]["max"] for r in fio)
        qh = _merged(ivs, lo.name, "write", "queue_wait_ns")
        tq = max(truth.queue["write"])
        print(f"  split: slowest whole write {clat / 1e6:.1f} ms (fio), slowest part's "
              f"queue wait {tq / 1e6:.1f} ms (truth), histogram max "
              f"{qh.max / 1e6 if qh else 0:.1f} ms")
        assert tq <= clat
        if qh is not None:
            assert bucket_index(qh.max - 1, qh.precision) <= bucket_index(clat, qh.precision), \
                f"queue wait max {qh.max} ns beyond the slowest whole IO {clat} ns"
