"""The completion-only mode (histogram.mode: completion, --mode completion): one program at
block_rq_complete, latencies from the kernel's own time stamps.

Ground truth: /proc/diskstats for the counts and bytes, and for the total latency too: the
kernel adds each request's set-up -> completion time (the same start_time_ns this mode reads)
to the device's read, write and flush time. fio's own clat bounds each IO's total from above
(a psync read's clat holds the request from set-up to completion). On kernels that cache their
clock in plugs (6.9+, this machine) a request set up and dispatched under one plug carries one
time twice: it has no queue wait or service sample, which the README states.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from grpc_testlib import iopulse
from iopulse.histogram import Histogram
from iopulse_testlib import dev_entries, diskstats, run_fio, sum_op, wait_idle
from kernel_truth import CompletionDelivery

OPS = ("read", "write", "flush", "discard")
MODE = ("--mode", "completion")


def _times_ms(name: str) -> dict[str, int]:
    """/proc/diskstats' time fields (ms): the kernel's sum of set-up -> completion per op."""
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if len(p) >= 14 and p[2] == name:
                v = [int(x) for x in p[3:]] + [0] * 17
                return {"read": v[3], "write": v[7], "discard": v[14], "flush": v[16]}
    raise LookupError(f"{name} not in /proc/diskstats")


def _ms_delta_ns(after: int, before: int) -> int:
    """A time field's growth in ns (the kernel prints it as 32 bits of ms on some kernels)."""
    return ((after - before) % (1 << 32)) * 1_000_000


def _merged(ivs: list[dict], name: str, *path: str) -> Histogram:
    """One histogram over the whole run from every interval's buckets (--json-buckets); path
    leads to it in a device entry, e.g. ("ops", "read", "total_ns")."""
    h = Histogram(ivs[0]["histogram"]["precision"] if ivs else 5)
    for _, d in dev_entries(ivs, name):
        for key in path:
            d = d[key]
        b = d.get("buckets", [])
        h.merge(Histogram(h.precision, [i for i, _ in b], [n for _, n in b]))
    return h


def _flush_sum(ivs: list[dict], name: str, key: str) -> int:
    return sum(d["flush"][key] for _, d in dev_entries(ivs, name))


def _programs(ivs: list[dict]) -> set[str]:
    return {p["name"] for iv in ivs for p in iv["bpf"]["programs"]}


def _discard_supported(name: str) -> bool:
    with open(f"/sys/block/{name}/queue/discard_max_bytes") as f:
        return int(f.read()) > 0


def test_counts_equal_diskstats_and_latency_is_the_kernels(loopdev, daemon):
    """Reads, writes, flushes and discards equal the /proc/diskstats deltas exactly; every
    histogram holds the count the README promises; the total latency's sum is the kernel's
    own (diskstats' time fields), and each percentile is bounded by fio's clat."""
    lo = loopdev("512M", backing_dir="/var/tmp")
    ref = loopdev("128M", backing_dir="/var/tmp", fill=True)   # reads reach the disk
    wait_idle(lo.name)
    wait_idle(ref.name)
    d = daemon("--json", "--json-buckets", "-i", "1s", "--devices", f"{lo.name},{ref.name}",
               *MODE, "--no-sync")
    before, ref_before = wait_idle(lo.name), wait_idle(ref.name)
    t0, ref_t0 = _times_ms(lo.name), _times_ms(ref.name)

    run_fio(name="iop-compl-mix", filename=lo.path, rw="randrw", rwmixread=50,
            bssplit="4k/50:64k/50", ioengine="libaio", iodepth=8, direct=1, size="512M",
            number_ios=6000, randrepeat=0)
    run_fio(name="iop-compl-sync", filename=lo.path, rw="write", bs="4k", ioengine="psync",
            fdatasync=8, direct=1, size="8M", offset="256M")
    trims = _discard_supported(lo.name)
    if trims:
        run_fio(name="iop-compl-trim", filename=lo.path, rw="randtrim", bs="64k", direct=1,
                size="128M", offset="384M", number_ios=200, randrepeat=0)
    res = run_fio(name="iop-compl-ref", filename=ref.path, rw="randread", bs="4k",
                  ioengine="psync", direct=1, size="128M", number_ios=3000, randrepeat=0)
    time.sleep(1.5)
    after, ref_after = wait_idle(lo.name), wait_idle(ref.name)
    t1, ref_t1 = _times_ms(lo.name), _times_ms(ref.name)
    time.sleep(1.2)     # an interval edge that finds both devices idle
    with iopulse.Client(f"unix:{d.socket}", connect_deadline=10) as c:
        info = c.info()
    assert d.stop(signal.SIGTERM) == 0, d.describe()
    assert wait_idle(lo.name) == after, "IO on the test device after the second snapshot"

    ivs = d.all_intervals()
    truth = after - before
    progs = _programs(ivs)
    print(f"\nprograms {sorted(progs)}; Info histogram mode {info.histogram.mode!r}, config "
          f"histogram.mode {info.config.get('histogram.mode')!r}")
    # one program at completion (the requeue program runs only when a driver requeues)
    assert "iop_compl" in progs, progs
    assert not progs & {"iop_rq_issue", "iop_rq_complete", "iop_bio_queue", "iop_bio_split"}, progs
    assert info.histogram.mode == "completion"
    assert info.config["histogram.mode"] == "completion"
    assert {iv["histogram"]["mode"] for iv in ivs} == {"completion"}

    c = {op: {k: sum_op(ivs, lo.name, op, k) for k in ("ios", "bytes", "untimed",
                                                       "no_queue_ts", "completion_unseen")}
         for op in OPS}
    want = {"read": (truth.reads, truth.read_bytes), "write": (truth.writes, truth.write_bytes),
            "flush": (truth.flushes, 0), "discard": (truth.discards, truth.discard_sectors * 512)}
    for op in OPS:
        print(f"  {op:7}: iopulsed ios={c[op]['ios']} bytes={c[op]['bytes']} untimed="
              f"{c[op]['untimed']} no_queue_ts={c[op]['no_queue_ts']} unseen="
              f"{c[op]['completion_unseen']} | diskstats ios={want[op][0]} bytes={want[op][1]}")
    assert truth.reads > 2000 and truth.writes > 2000 and truth.flushes >= 200, truth
    assert not trims or truth.discards >= 200, truth
    for op in OPS:
        assert (c[op]["ios"], c[op]["bytes"]) == want[op], f"{op} (ios, bytes) != diskstats"
    assert _flush_sum(ivs, lo.name, "requests") == truth.flushes
    # the bulk counted by the program; unreported completions are few (README)
    unseen = sum(c[op]["completion_unseen"] for op in OPS)
    total_ios = sum(c[op]["ios"] for op in OPS)
    assert unseen <= max(5, total_ios // 200), f"{unseen} of {total_ios} counted from diskstats"

    # The counts the README promises: a total sample per IO with a set-up stamp (iostats
    # on: all), the empty PREFLUSH writes of fdatasync in preflush_latency_ns instead; a
    # queue wait and a service sample where the dispatch was stamped apart from the set-up.
    preflush = _flush_sum(ivs, lo.name, "preflush")
    pf_lat = _merged(ivs, lo.name, "flush", "preflush_latency_ns")
    assert preflush > 0 and pf_lat.count == preflush, (preflush, pf_lat.count)
    for op in OPS:
        empty = preflush if op == "write" else 0
        own = c[op]["ios"] - c[op]["untimed"] - c[op]["completion_unseen"]
        tot, qw, svc, size = (_merged(ivs, lo.name, "ops", op, h) for h in
                              ("total_ns", "queue_wait_ns", "service_ns", "size_bytes"))
        print(f"  {op:7}: total {tot.count}, queue {qw.count}, service {svc.count}, size "
              f"{size.count}; p50/p99 total {tot.percentile(50)}/{tot.percentile(99)} ns")
        assert c[op]["untimed"] == 0, f"{op}: untimed with iostats on"
        assert tot.count == own - empty, f"{op}: {tot.count} total samples, {own - empty} due"
        assert qw.count == svc.count == own - empty - c[op]["no_queue_ts"], \
            f"{op}: queue {qw.count}, service {svc.count}"
        assert size.count == c[op]["ios"] - c[op]["completion_unseen"] - empty, op

    # The kernel's own sum of set-up -> completion per op (diskstats' ms fields) against the
    # sums of the buckets' midpoints (each within 2^-(k+1)). The kernel takes its end after the
    # request's bios are completed (block_rq_complete fires before them): its sum is the
    # larger by that work, a few microseconds per IO.
    k = ivs[-1]["histogram"]["precision"]
    err = 2.0 ** -(k + 1)
    for op, extra in (("read", None), ("write", pf_lat), ("flush", None)):
        ours = _merged(ivs, lo.name, "ops", op, "total_ns").sum + (extra.sum if extra else 0)
        kernel = _ms_delta_ns(t1[op], t0[op])
        n = want[op][0]
        after_us = (kernel - ours) / max(n, 1) / 1000
        print(f"  {op:7}: total latency sum iopulsed {ours / 1e6:.1f} ms, kernel "
              f"{kernel / 1e6:.0f} ms over {n} IOs: {after_us:.1f} us per IO after the event")
        # the kernel's field is whole ms (1 ms per read of it); an unseen IO's time is in its
        # sum only
        slack = 2_000_000 + c[op]["completion_unseen"] * (kernel / max(n, 1)) * 2
        assert ours <= kernel * (1 + err) + slack, \
            f"{op}: total latency sum {ours} ns > the kernel's {kernel} ns"
        assert kernel - ours <= err * kernel + slack + n * 20_000, \
            f"{op}: total latency sum {ours} ns, the kernel's {kernel} ns"

    # fio's clat of each psync read holds the request from set-up to completion: every
    # percentile of the total is at most fio's (within the bucket error), and so is the max.
    rtruth = ref_after - ref_before
    rtot = _merged(ivs, ref.name, "ops", "read", "total_ns")
    clat = res["jobs"][0]["read"]["clat_ns"]
    kernel = _ms_delta_ns(ref_t1["read"], ref_t0["read"])
    print(f"  {ref.name} psync reads: iopulsed {sum_op(ivs, ref.name, 'read', 'ios')}, "
          f"diskstats {rtruth.reads}, fio {res['jobs'][0]['read']['total_ios']}; mean total "
          f"{rtot.mean:.0f} ns (kernel {kernel / max(rtruth.reads, 1):.0f}), fio clat mean "
          f"{clat['mean']:.0f}")
    assert sum_op(ivs, ref.name, "read", "ios") == rtruth.reads == 3000
    assert rtot.count + sum_op(ivs, ref.name, "read", "completion_unseen") == 3000
    for q in (50, 90, 99):
        ours, theirs = rtot.percentile(q), clat["percentile"][f"{q}.000000"]
        print(f"    p{q}: total {ours} ns, fio clat {theirs} ns ({ours / theirs:.2f}x)")
        assert ours <= theirs * (1 + err) + 1000, f"p{q} total {ours} > fio clat {theirs}"
    assert rtot.percentile(100) <= clat["max"] * (1 + err) + 1000, (rtot.max, clat["max"])


def test_iostats_off_counts_without_latency_and_says_so_once(loopdev, daemon):
    """A disk with iostats off: its requests carry no set-up time; one log line says so,
    and the IOs are counted (against fio: the kernel does not count them then) untimed."""
    lo = loopdev("256M", backing_dir="/var/tmp")
    iostats = f"/sys/block/{lo.name}/queue/iostats"
    wait_idle(lo.name)
    Path(iostats).write_text("0\n")
    try:
        d = daemon("--json", "-i", "1s", "--devices", lo.name, *MODE, "--no-sync")
        before = diskstats(lo.name)
        with CompletionDelivery(d.pid) as kd:
            res = run_fio(name="iop-compl-nostats", filename=lo.path, rw="randrw",
                          rwmixread=50, bs="4k", ioengine="psync", numjobs=2,
                          group_reporting=True, direct=1, size="256M", number_ios=1500,
                          randrepeat=0)
            time.sleep(1.5)
        after = diskstats(lo.name)
        assert d.stop(signal.SIGTERM) == 0, d.describe()
    finally:
        Path(iostats).write_text("1\n")
    ivs = d.all_intervals()
    job = res["jobs"][0]
    lines = [ln for ln in d.stderr_text().splitlines() if lo.name in ln and "set-up time" in ln]
    print(f"\n{lo.name} iostats off: " + "; ".join(
        f"{op} ios {sum_op(ivs, lo.name, op, 'ios')} (fio {job[op]['total_ios']}) untimed "
        f"{sum_op(ivs, lo.name, op, 'untimed')}" for op in ("read", "write"))
        + f"; diskstats moved {(after - before).reads} reads, {(after - before).writes} "
        f"writes\n  log: {lines}")
    assert len(lines) == 1, f"expected one line about {lo.name}'s stamps: {lines}"
    assert "counted, without latency" in lines[0]
    assert (after - before).reads == (after - before).writes == 0, "the kernel counted IO"
    # With iostats off the kernel counts nothing to reconcile with: an IO is counted where its
    # completion runs the program; a run the kernel skipped for recursion (the program
    # already running on that CPU) is named in drops.missed_events, and a completion the
    # kernel ran no program for is bounded by perf's count of block_rq_complete against the
    # programs' run counts (README: the completion-only mode with iostats off).
    skips = sum(iv["drops"]["missed_events"] for iv in ivs)
    print(f"  program runs the kernel skipped: {skips}; kernel: {kd.result.describe()}")
    lost = 0
    for op in ("read", "write"):
        ios, want = sum_op(ivs, lo.name, op, "ios"), job[op]["total_ios"]
        assert want > 1000 and ios <= want, f"{op}: {ios} of fio's {want}"
        lost += want - ios
        assert sum_op(ivs, lo.name, op, "untimed") == ios
        if ios == want:
            assert sum_op(ivs, lo.name, op, "bytes") == job[op]["io_bytes"]
        for h in ("total_ns", "queue_wait_ns", "service_ns"):
            n = sum(dv["ops"][op][h]["count"] for _, dv in dev_entries(ivs, lo.name))
            assert n == 0, f"{op} {h}: {n} samples without a set-up stamp"
    assert lost <= skips + kd.result.not_run, \
        f"{lost} IOs not counted, {skips} program runs skipped, {kd.result.not_run} " \
        f"completions no program ran for"


def test_reload_into_completion_mode_and_bad_mode(loopdev, daemon, daemon_bin, tmp_path):
    """SIGHUP from full to completion mode under IO: counts stay exact across the swap, and
    the new mode shows in Info and --json; a bad mode is refused by --check-config and by a
    reload (the running mode kept), naming file, line, column and key."""
    lo = loopdev("256M", backing_dir="/var/tmp")
    cfg = tmp_path / "iopulse.yaml"
    cfg.write_text("histogram:\n  mode: full\nsync:\n  enabled: false\n")
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name, config=str(cfg))
    before = wait_idle(lo.name)
    load = threading.Thread(target=run_fio, kwargs=dict(
        name="iop-compl-reload", filename=lo.path, rw="randrw", bs="4k", ioengine="psync",
        numjobs=2, group_reporting=True, direct=1, size="256M", time_based=True,
        runtime="6s", randrepeat=0))
    load.start()
    time.sleep(2)
    cfg.write_text("histogram:\n  mode: completion\nsync:\n  enabled: false\n")
    d.send_signal(signal.SIGHUP)
    load.join(timeout=60)
    time.sleep(1.5)
    after = wait_idle(lo.name)
    time.sleep(1.2)

    bad = tmp_path / "bad.yaml"
    bad.write_text("histogram:\n  mode: fastest\n")
    chk = subprocess.run([daemon_bin, "--check-config", str(bad)], capture_output=True,
                         text=True, timeout=30)
    cfg.write_text(bad.read_text())
    d.send_signal(signal.SIGHUP)
    time.sleep(1.5)
    with iopulse.Client(f"unix:{d.socket}", connect_deadline=10) as c:
        info = c.info()
    assert d.stop(signal.SIGTERM) == 0, d.describe()

    ivs = d.all_intervals()
    modes = [iv["histogram"]["mode"] for iv in ivs]
    truth = after - before
    got = {op: sum_op(ivs, lo.name, op, "ios") for op in ("read", "write")}
    err = d.stderr_text()
    unseen = sum(sum_op(ivs, lo.name, op, "completion_unseen") for op in ("read", "write"))
    print(f"\nmodes by interval {modes}\nreads {got['read']} (diskstats {truth.reads}), writes "
          f"{got['write']} (diskstats {truth.writes}), {unseen} of them unreported and counted "
          f"by the sweep or from diskstats; check-config exit {chk.returncode}: "
          f"{chk.stderr.strip()}")
    where = f"{cfg}:2:9: key 'histogram.mode': 'fastest' is not a histogram mode"
    assert chk.returncode == 2 and f"{bad}:2:9: key 'histogram.mode'" in chk.stderr
    assert "reload rejected" in err and where in err, err[-2000:]
    assert modes[0] == "full" and modes[-1] == "completion", modes
    assert modes.index("completion") == len(modes) - modes[::-1].index("full"), modes
    assert info.histogram.mode == "completion" and info.config["histogram.mode"] == "completion"
    assert truth.reads > 1000 and truth.writes > 1000, truth
    assert got == {"read": truth.reads, "write": truth.writes}, "counts across the reload"
    assert os.path.exists(lo.path)


def test_seek_in_completion_order(loopdev, daemon):
    """Seek is measured between completions (no dispatch program): one sequential writer at
    queue depth 1 completes in the order it dispatches, so its requests read as sequential;
    random 4k reads as random."""
    lo = loopdev("512M", backing_dir="/var/tmp")
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name, *MODE, "--no-sync")
    run_fio(name="iop-compl-seq", filename=lo.path, rw="write", bs="64k", ioengine="psync",
            direct=1, size="256M")
    time.sleep(1.2)
    seq_ivs = d.drain()
    run_fio(name="iop-compl-rand", filename=lo.path, rw="randread", bs="4k", ioengine="psync",
            direct=1, size="512M", number_ios=2000, randrepeat=0)
    time.sleep(1.2)
    assert d.stop(signal.SIGTERM) == 0, d.describe()
    rand_ivs = d.all_intervals()[len(seq_ivs):]
    seek = {}
    for what, ivs in (("sequential", seq_ivs), ("random", rand_ivs)):
        s = f = b = 0
        for _, dv in dev_entries(ivs, lo.name):
            s, f, b = (s + dv["seek"]["sequential"], f + dv["seek"]["forward"],
                       b + dv["seek"]["backward"])
        seek[what] = (s, f, b)
    print(f"\n{lo.name} seek (sequential, forward, backward): {seek}")
    s, f, b = seek["sequential"]
    assert s + f + b >= 4000 and s >= 0.99 * (s + f + b), seek
    s, f, b = seek["random"]
    assert s + f + b >= 1900 and s <= 0.01 * (s + f + b), seek
