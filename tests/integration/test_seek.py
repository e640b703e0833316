"""Seek classification against the access pattern the test generated."""
import signal
import time

import pytest

from iopulse_testlib import dev_entries, run_fio, sum_op, sum_seek, wait_idle


def _run_and_collect(loopdev, daemon, dev_size, **fio):
    lo = loopdev(dev_size)
    wait_idle(lo.name)
    d = daemon("--json", "-i", "1s", "--devices", lo.name)
    res = run_fio(filename=lo.path, direct=1, **fio)
    time.sleep(1.2)
    wait_idle(lo.name)
    rc = d.stop(signal.SIGTERM)
    assert rc == 0, f"iopulsed exit code {rc} on SIGTERM: {d.describe()}"
    ivs = d.all_intervals()
    seq, fwd, bwd = sum_seek(ivs, lo.name)
    total = seq + fwd + bwd
    ios = sum_op(ivs, lo.name, "read", "ios") + sum_op(ivs, lo.name, "write", "ios")
    # Per-interval consistency: sequential_pct agrees with the interval's own counts.
    for iv, dev in dev_entries(ivs, lo.name):
        s = dev["seek"]
        n = s["sequential"] + s["forward"] + s["backward"]
        nio = sum(dev["ops"][op]["ios"] for op in ("read", "write", "discard"))
        if n and s["sequential_pct"] is not None:
            assert s["sequential_pct"] == pytest.approx(100.0 * s["sequential"] / n, abs=0.1), \
                f"interval {iv['seq']}: sequential_pct {s['sequential_pct']} vs {s}"
        if n == 0 and nio == 0:
            assert s["sequential_pct"] is None, \
                f"interval {iv['seq']}: no data request but sequential_pct {s['sequential_pct']}"
    return lo, res, seq, fwd, bwd, total, ios


def test_sequential_write_is_sequential(loopdev, daemon):
    lo, res, seq, fwd, bwd, total, ios = _run_and_collect(
        loopdev, daemon, "300M", name="iop-seqw", rw="write", bs="64k", size="256M",
        iodepth=1, ioengine="psync")
    pct = 100.0 * seq / total if total else float("nan")
    fio_ios = res["jobs"][0]["write"]["total_ios"]
    print(f"\n{lo.name} sequential write: seq={seq} fwd={fwd} bwd={bwd} -> {pct:.2f}% "
          f"sequential; data ios {ios}, fio writes {fio_ios}")
    assert total >= fio_ios * 0.9, f"only {total} classified dispatches for {fio_ios} writes"
    assert pct >= 95.0, f"sequential write classified {pct:.2f}% sequential"


def test_random_io_is_not_sequential(loopdev, daemon):
    lo, res, seq, fwd, bwd, total, ios = _run_and_collect(
        loopdev, daemon, "1G", name="iop-randrw", rw="randrw", bs="4k", size="1G",
        iodepth=16, ioengine="libaio", number_ios=20000, randrepeat=0)
    pct = 100.0 * seq / total if total else float("nan")
    print(f"\n{lo.name} random 4k: seq={seq} fwd={fwd} bwd={bwd} -> {pct:.2f}% sequential; "
          f"data ios {ios}")
    assert total >= 15000, f"only {total} classified dispatches for ~20000 random IOs"
    assert pct <= 5.0, f"random IO classified {pct:.2f}% sequential"
    # Random offsets go both ways: each direction should be a large share.
    assert fwd > total * 0.3 and bwd > total * 0.3, f"fwd={fwd} bwd={bwd} of {total}"
