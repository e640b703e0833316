"""Partitions reported apart (--no-rollup), also when the disk keeps no iostats (rq->part is
then unset and the partition comes from the bio). Ground truth: fio's own IO counts."""
import os
import shutil
import signal
import subprocess
import time

from iopulse_testlib import dev_entries, run_fio, sum_op, wait_idle


def _partition(lo):
    """Two partitions of 64 MiB each, added with partx (no partition scan flag needed)."""
    table = "label: dos\nstart=2048, size=131072, type=83\nstart=133120, size=131072, type=83\n"
    subprocess.run(["sfdisk", "--quiet", lo.path], input=table, text=True, check=True,
                   capture_output=True)
    subprocess.run(["partx", "-a", lo.path], check=False, capture_output=True)
    parts = [f"{lo.path}p1", f"{lo.path}p2"]
    deadline = time.monotonic() + 60
    while not all(os.path.exists(p) for p in parts):
        assert time.monotonic() < deadline, f"{parts} did not appear"
        time.sleep(0.1)
    # udev probes the new partitions (blkid reads them): let it finish before the daemon
    # starts, or its reads land on the partitions, late on a loaded machine
    if shutil.which("udevadm"):
        subprocess.run(["udevadm", "settle", "--timeout=60"], check=False,
                       capture_output=True, timeout=90)
    return parts


def _set_iostats(name, on):
    with open(f"/sys/block/{name}/queue/iostats", "w") as f:
        f.write("1" if on else "0")


def test_partitions_apart_with_iostats_off(loopdev, daemon):
    lo = loopdev("256M")
    p1, p2 = _partition(lo)
    wait_idle(lo.name)       # with iostats on: with them off, diskstats stands still
    _set_iostats(lo.name, False)
    try:
        d = daemon("--json", "-i", "1s", "--no-rollup", "--devices", f"{lo.name}*")
        r1 = run_fio(name="iop-p1", filename=p1, rw="randwrite", bs="4k", ioengine="psync",
                     direct=1, size="64M", number_ios=700, randrepeat=0)
        r2 = run_fio(name="iop-p2", filename=p2, rw="randread", bs="4k", ioengine="psync",
                     direct=1, size="64M", number_ios=300, randrepeat=0)
        time.sleep(1.5)
        rc = d.stop(signal.SIGTERM)
    finally:
        _set_iostats(lo.name, True)
    assert rc == 0, f"iopulsed exit code {rc} on SIGTERM: {d.describe()}"
    ivs = d.all_intervals()
    n1, n2 = os.path.basename(p1), os.path.basename(p2)
    got = {n: (sum_op(ivs, n, "write", "ios"), sum_op(ivs, n, "read", "ios"))
           for n in (n1, n2, lo.name)}
    print(f"\n{lo.name} iostats off, --no-rollup: iopulsed (writes, reads) {got}; fio writes "
          f"{r1['jobs'][0]['write']['total_ios']} on {n1}, reads "
          f"{r2['jobs'][0]['read']['total_ios']} on {n2}")
    assert r1["jobs"][0]["write"]["total_ios"] == 700
    assert r2["jobs"][0]["read"]["total_ios"] == 300
    # fio is the ground truth here (diskstats stand still with iostats off), and fio is not
    # the only reader of p1: udev watches loop devices and re-probes a partition closed after
    # writing (blkid reads a few blocks) while the daemon still runs. Only those may be added;
    # p2 is only read, so nothing comes after fio there.
    assert got[n1][0] == 700, f"{n1}: {got[n1]}"
    assert got[n1][1] < 50, f"{n1}: {got[n1][1]} reads, fio made none (udev's probe: a few)"
    assert got[n2] == (0, 300), f"{n2}: {got[n2]}"
    # the whole disk shows only what was not sent through a partition (partition-table reads)
    assert sum(got[lo.name]) < 50, f"{lo.name}: {got[lo.name]}"
    assert list(dev_entries(ivs, n1)), f"{n1} never listed"
