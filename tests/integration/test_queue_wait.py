"""Queue wait and service time against fio's completion latency.

How the first test differs from the obvious "one libaio job, 4k, iodepth 64", and why
(each measured on this kernel with bpftrace on block_bio_queue/rq_issue/rq_complete):
- libaio: when the 4 scheduler tags are gone, io_submit() itself sleeps for a tag while
  completed IOs wait in the AIO ring; fio stamps completion when it reaps, so its clat holds
  milliseconds the block layer never saw (bio->issue 74 us, issue->complete 278 us, fio
  clat p50 5.1 ms). A synchronous pread() is timed from the syscall to the wake-up, so psync
  threads (8 per tag) give a clat the block layer's Q->C can be compared with.
- p50s: the tag wait is bimodal. A thread whose IO just completed takes the freed tag before
  the woken sleepers run, so in some runs more than half of the IOs wait a few us and the rest
  0.1-2 ms (bpftrace, 4k: 53% waited < 50 us; the daemon showed p50(queue wait) 4 us with a
  1.3 ms mean at 64k in some intervals, ~900 us p50 in others). p50s do not add up then, and
  the median of per-interval p50s flips between runs. Means add up per IO, so the comparison
  with fio uses run means (count-weighted per-interval means); the p50s are printed.
- 4k: the VM's syscall + wake-up cost (50-180 us per IO, seen by fio, not by the block layer)
  is a large share of a 4k IO; 64k reads from a filled file on the root disk take ~300 us of
  service and ~1 ms of queue wait, and fio's clat mean came out within 7-11% of the daemon's
  on a quiet machine.
- Under load (a compile, a second fio: the suite runs on 2 vCPUs beside other work) fio's clat
  also holds the time a woken thread waits for a CPU, which the block layer never sees, so
  fio's clat only bounds the daemon's total from above. The bound from below is the kernel's
  own accounting: /proc/diskstats' read time is the sum over requests of set-up (after the
  tag) -> completion, part of every request's Q->C and holding its D->C. The ratio to fio's
  clat is printed, not asserted.
- Few tags, many threads: queue wait dominates only while the threads keep every tag busy.
  A woken thread that waits for a CPU is in neither queue, so on a loaded machine 16 threads
  for 4 tags (what was measured on a quiet one) may no longer fill them: 8 per tag are run.
"""
import json
import signal
import subprocess
import statistics
import time

import pytest

from kernel_truth import CompletionDelivery, Delivery, assert_timed, prog_ids_of
from iopulse_testlib import (TIMED_GOAL, dev_entries, run_fio, sum_hist_count,
                             sum_op, wait_idle)

MIN_IOS = 1000


def _read_time_ns(dev_name: str) -> int:
    """/proc/diskstats field 4: time spent reading, in ms (the kernel sums each request's
    set-up -> completion in ns and prints that sum in ms, as a 32-bit value), in ns."""
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if len(p) >= 14 and p[2] == dev_name:
                return int(p[6]) * 1_000_000
    raise LookupError(f"{dev_name} not in /proc/diskstats")


def _kernel_read_mean_ns(before_ns: int, after_ns: int, reads: int) -> float:
    """Mean set-up -> completion time of the reads between two _read_time_ns() values."""
    delta = (after_ns - before_ns) % ((1 << 32) * 1_000_000)
    return delta / reads if reads else float("nan")


def _per_interval_p50(ivs, name, hist):
    return [d["ops"]["read"][hist]["p50"] for _, d in dev_entries(ivs, name)
            if d["ops"]["read"]["ios"] > MIN_IOS]


def _run_mean(ivs, name, hist):
    """Mean over the whole run, from the per-interval means weighted by count."""
    n = tot = 0
    for _, d in dev_entries(ivs, name):
        h = d["ops"]["read"][hist]
        if h["count"]:
            n += h["count"]
            tot += h["mean"] * h["count"]
    return tot / n if n else float("nan")


def _stop_and_count(d, name):
    """Stops the daemon; returns its intervals and the run's read counters and histogram
    sample counts."""
    rc = d.stop(signal.SIGTERM)
    assert rc == 0, f"iopulsed exit code {rc} on SIGTERM: {d.describe()}"
    ivs = d.all_intervals()
    c = {k: sum_op(ivs, name, "read", k)
         for k in ("ios", "no_queue_ts", "untimed", "completion_unseen")}
    c.update({h: sum_hist_count(ivs, name, "read", h) for h in ("queue_wait_ns", "service_ns")})
    return ivs, c


def _check_timed(c, reads, kernel: Delivery, exact=True, goal=TIMED_GOAL):
    """The README's promise for latency samples: every completed read is timed, or counted in
    completion_unseen (no sample: the kernel ran no completion program for it, at most as
    many as perf counted block_rq_complete more often than the programs ran) or untimed; and
    of the reads whose completion reached the programs at least `goal` are timed. exact:
    also the read count against /proc/diskstats (the tests that have always checked it)."""
    timed = c["service_ns"]
    print(f"  kernel: {kernel.describe()}")
    if exact:
        assert c["ios"] == reads, f"read ios {c['ios']} != /proc/diskstats {reads}"
    assert timed + c["completion_unseen"] + c["untimed"] == c["ios"], \
        f"reads not accounted for: {timed} timed + {c['completion_unseen']} unseen + " \
        f"{c['untimed']} untimed != {c['ios']}"
    assert_timed(timed, reads, c["completion_unseen"], kernel, goal, "reads")
    return timed


def test_queue_wait_dominates_with_few_tags(loopdev, daemon):
    # Filled backing file on the root disk: reads reach the disk, so the CPU is not the
    # bottleneck and fio's wake-up latency stays small beside the device's.
    lo = loopdev("256M", backing_dir="/var/tmp", fill=True)
    lo.set_scheduler("mq-deadline")
    nr = lo.set_nr_requests(4, 8, 16)
    jobs = 8 * nr
    print(f"\n{lo.name}: mq-deadline, nr_requests {nr}, {jobs} psync threads")
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name)
    before = wait_idle(lo.name)
    t_before = _read_time_ns(lo.name)
    with CompletionDelivery(d.pid) as kd:
        res = run_fio(name="iop-qwait", filename=lo.path, rw="randread", bs="64k",
                      ioengine="psync", numjobs=jobs, thread=True, group_reporting=True,
                      direct=1, size="256M", time_based=True, runtime="8s", randrepeat=0)
        after = wait_idle(lo.name)
    t_after = _read_time_ns(lo.name)
    ivs, c = _stop_and_count(d, lo.name)
    reads = (after - before).reads
    kernel_mean = _kernel_read_mean_ns(t_before, t_after, reads)
    qw = _per_interval_p50(ivs, lo.name, "queue_wait_ns")
    svc = _per_interval_p50(ivs, lo.name, "service_ns")
    tot = _per_interval_p50(ivs, lo.name, "total_ns")
    clat = res["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"]
    clat_mean = res["jobs"][0]["read"]["clat_ns"]["mean"]
    means = {h: _run_mean(ivs, lo.name, h) for h in ("queue_wait_ns", "service_ns", "total_ns")}
    print(f"  intervals with > {MIN_IOS} reads: {len(qw)}")
    print(f"  per-interval p50 queue_wait_ns {qw}")
    print(f"  per-interval p50 service_ns    {svc}")
    print(f"  per-interval p50 total_ns      {tot}")
    print(f"  reads {reads} (diskstats), timed {c['service_ns']}, unseen "
          f"{c['completion_unseen']}, untimed {c['untimed']}")
    # how many reads the workload does is the machine's business; it needs enough for means
    assert reads >= 2000, f"only {reads} reads in 8 s"
    # mq-deadline with 4 tags and 8 threads per tag lost the most completions to the kernel
    # (0.13% of the reads, 0.27% with a second fio loading the machine: docs/metrics.md);
    # each of those is bounded by the perf count, the rest held to the goal
    _check_timed(c, reads, kd.result, exact=False)
    assert None not in qw and None not in svc, "null p50 in an interval with IOs"
    if qw:
        mq, ms = statistics.median(qw), statistics.median(svc)
        print(f"  median of p50s: queue_wait {mq:.0f} ns, service {ms:.0f} ns, sum "
              f"{mq + ms:.0f} ns; fio clat p50 {clat} ns; ratio {(mq + ms) / clat:.3f} "
              f"(printed, not asserted)")
    mean_ratio = means["total_ns"] / clat_mean
    print(f"  run means: " + ", ".join(f"{h} {v:.0f}" for h, v in means.items())
          + f"; fio clat mean {clat_mean:.0f} ns; total/clat = {mean_ratio:.3f} (printed, "
          f"not asserted); kernel's set-up -> completion mean {kernel_mean:.0f} ns; "
          f"qw/svc = {means['queue_wait_ns'] / means['service_ns']:.2f}")
    assert means["queue_wait_ns"] > means["service_ns"], \
        f"queue wait mean {means['queue_wait_ns']:.0f} ns does not dominate service " \
        f"{means['service_ns']:.0f} ns"
    # The block layer's Q->C is part of what the pread() syscall waited for ...
    assert means["total_ns"] <= clat_mean * 1.02, \
        f"mean total_ns {means['total_ns']:.0f} > fio clat mean {clat_mean:.0f}"
    # ... and holds the kernel's own set-up -> completion, which holds D->C (bucket
    # midpoints: 1.6%; the kernel's sum is in whole ms over all reads).
    assert means["total_ns"] >= kernel_mean * 0.97, \
        f"mean total_ns {means['total_ns']:.0f} < the kernel's set-up -> completion " \
        f"mean {kernel_mean:.0f} (/proc/diskstats)"
    assert means["service_ns"] <= kernel_mean * 1.03, \
        f"mean service_ns {means['service_ns']:.0f} > the kernel's set-up -> completion " \
        f"mean {kernel_mean:.0f} (/proc/diskstats)"
    assert means["queue_wait_ns"] + means["service_ns"] == \
        pytest.approx(means["total_ns"], rel=0.03), f"means do not add up: {means}"


def test_queue_wait_counted_without_scheduler(loopdev, daemon):
    lo = loopdev("1G")
    lo.set_scheduler("none")
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name)
    before = wait_idle(lo.name)
    with CompletionDelivery(d.pid) as kd:
        res = run_fio(name="iop-qwait-none", filename=lo.path, rw="randread", bs="4k",
                      ioengine="libaio", iodepth=64, direct=1, size="1G", time_based=True,
                      runtime="4s", randrepeat=0)
        after = wait_idle(lo.name)
    ivs, c = _stop_and_count(d, lo.name)
    ios, qcount, scount = c["ios"], c["queue_wait_ns"], c["service_ns"]
    no_qts, untimed, unseen = c["no_queue_ts"], c["untimed"], c["completion_unseen"]
    print(f"\n{lo.name} scheduler none: read ios {ios} (diskstats {(after - before).reads}, "
          f"fio {res['jobs'][0]['read']['total_ios']}); queue_wait count {qcount}, "
          f"service count {scount}, no_queue_ts {no_qts}, untimed {untimed}, "
          f"completion_unseen {unseen}")
    # IO whose completion event the kernel never delivered is counted but has no latency.
    timed = _check_timed(c, (after - before).reads, kd.result)
    # without a scheduler the queue wait is still measured: one sample per timed read
    assert no_qts == 0, f"{no_qts} timed reads without a submission time"
    assert qcount == timed, f"queue_wait_ns count {qcount} != timed reads {timed}"
    for iv, dev in dev_entries(ivs, lo.name):
        h = dev["ops"]["read"]["queue_wait_ns"]
        if h["count"] > 0:
            assert h["p50"] is not None, f"interval {iv['seq']}: count {h['count']}, p50 null"
        else:
            assert h["p50"] is None, f"interval {iv['seq']}: count 0 but p50 {h['p50']}"



def _loaded_prog_names(pid: int) -> list[str]:
    """Names of the BPF programs the process holds (from its fds), not every program on the
    machine: another agent may run here too."""
    ids = prog_ids_of(pid)
    out = subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True,
                         text=True).stdout
    return [p.get("name", "") for p in json.loads(out) if p.get("id") in ids]


def test_queue_wait_from_request_setup(loopdev, daemon):
    """--queue-from request: no bio probe, queue wait from the kernel's start_time_ns."""
    lo = loopdev("1G")
    lo.set_scheduler("none")
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name, "--queue-from", "request",
               "--no-sync")
    names = _loaded_prog_names(d.pid)
    assert "iop_rq_issue" in names and "iop_rq_complete" in names, names
    assert not any(n.startswith(("iop_bio_queue", "iop_bio_split")) for n in names), \
        f"bio probe loaded with --queue-from request --no-sync: {names}"
    before = wait_idle(lo.name)
    with CompletionDelivery(d.pid) as kd:
        res = run_fio(name="iop-qwait-req", filename=lo.path, rw="randread", bs="4k",
                      ioengine="psync", numjobs=4, thread=True, group_reporting=True,
                      direct=1, size="1G", time_based=True, runtime="4s", randrepeat=0)
        after = wait_idle(lo.name)
    ivs, c = _stop_and_count(d, lo.name)
    ios, qcount, scount = c["ios"], c["queue_wait_ns"], c["service_ns"]
    no_qts, unseen = c["no_queue_ts"], c["completion_unseen"]
    means = {h: _run_mean(ivs, lo.name, h) for h in ("queue_wait_ns", "service_ns", "total_ns")}
    clat_mean = res["jobs"][0]["read"]["clat_ns"]["mean"]
    print(f"\n{lo.name} --queue-from request: read ios {ios} (diskstats "
          f"{(after - before).reads}); queue_wait count {qcount}, service count {scount}, "
          f"no_queue_ts {no_qts}, completion_unseen {unseen}; run means "
          + ", ".join(f"{h} {v:.0f}" for h, v in means.items())
          + f"; fio clat mean {clat_mean:.0f}")
    timed = _check_timed(c, (after - before).reads, kd.result)
    # iostats are on: every request carries the kernel's set-up time
    assert no_qts == 0, f"{no_qts} reads without a set-up time"
    assert qcount == timed, f"queue {qcount} samples for {timed} timed reads"
    assert means["queue_wait_ns"] + means["service_ns"] == \
        pytest.approx(means["total_ns"], rel=0.03), f"means do not add up: {means}"
    assert means["total_ns"] <= clat_mean * 1.02, \
        f"mean total_ns {means['total_ns']:.0f} > fio clat mean {clat_mean:.0f}"
