"""iopulse compare on real recordings: queue depth 1 against 32 is flagged, repeats of one
job are not, a single run a side judges nothing; the table shows every column."""
from __future__ import annotations

import json
import signal
import subprocess

from grpc_testlib import CLIENT_ENV, iopulse_cmd
from iopulse_testlib import wait_idle


JOB = """[rand]
filename={dev}
direct=1
rw=randread
bs=4k
ioengine=libaio
iodepth={qd}
rate_iops={rate}
size=128M
time_based=1
runtime=3
"""


def test_compare_flags_queue_depth_not_repeats(loopdev, daemon, tmp_path):
    lo = loopdev("128M", fill=True)
    d = daemon("-i", "1s", "--devices", lo.name)
    runs: dict[str, str] = {}
    # interleaved, so that whatever else the machine does falls on both sides alike; fio's
    # rate limit sets IOPS (QD1: 1,500/s, QD32: 6,000/s, both far below what the loop device
    # does even on a busy machine), so the change compared is the one the test made: unlimited,
    # two runs a side of QD1 measured 39,385 and 27,940 IOPS under load and Welch's p for
    # a 3.3x change was 0.15
    for name, qd, rate in (("a1", 1, 1500), ("b1", 32, 6000), ("a2", 1, 1500), ("b2", 32, 6000),
                           ("a3", 1, 1500), ("a4", 1, 1500)):
        job = tmp_path / f"{name}.fio"
        job.write_text(JOB.format(dev=lo.path, qd=qd, rate=rate))
        out = str(tmp_path / f"{name}.iopulse")
        wait_idle(lo.name)
        p = subprocess.run(iopulse_cmd("record", "-o", out, "--target", f"unix:{d.socket}",
                                       "--", "fio", "--output=/dev/null", str(job)),
                           env=CLIENT_ENV, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        runs[name] = out
    assert d.stop(signal.SIGTERM) == 0, d.describe()

    def compare(base: list[str], other: list[str]) -> list[dict]:
        argv = iopulse_cmd("compare", *[runs[x] for x in base], "--",
                           *[runs[x] for x in other])
        table = subprocess.run(argv, env=CLIENT_ENV, capture_output=True, text=True, timeout=120)
        print(table.stdout, table.stderr)
        assert table.returncode == 0, table.stderr
        p = subprocess.run(argv + ["--format", "json"], env=CLIENT_ENV, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return [c for c in json.loads(p.stdout)["changes"] if c["device"] == lo.name]

    # a deliberate change, two runs a side: IOPS up, flagged, labels say why
    ch = compare(["a1", "a2"], ["b1", "b2"])
    iops = [c for c in ch if c["phase"] == "rand" and c["metric"] == "iops"]
    assert len(iops) == 1 and iops[0]["basis"] == "runs"
    assert iops[0]["flagged"] and iops[0]["change_pct"] > 50 and iops[0]["better"], iops
    assert iops[0]["labels_changed"] == {"iodepth": ["1", "32"]}
    assert iops[0]["under_test"] and iops[0]["verdict"] == "better"
    assert len(iops[0]["base"]) == len(iops[0]["other"]) == 2
    # the table at 80 columns: every column there (folded), no line wider
    narrow = subprocess.run(iopulse_cmd("compare", runs["a1"], runs["a2"], "--", runs["b1"],
                                        runs["b2"]), env=dict(CLIENT_ENV, COLUMNS="80"),
                            capture_output=True, text=True, timeout=120)
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert not [x for x in lines if len(x) > 80], narrow.stdout
    for head in ("device", "metric", "base runs", "other runs", "change %", "detectable",
                 "verdict"):
        assert head in narrow.stdout, (head, narrow.stdout)
    # a single run a side: the change is shown, nothing is judged (no run-to-run spread)
    ch = compare(["a1"], ["b1"])
    iops = [c for c in ch if c["phase"] == "rand" and c["metric"] == "iops"]
    assert iops[0]["basis"] == "none" and not iops[0]["flagged"], iops
    assert iops[0]["verdict"] == "too few" and iops[0]["p"] is None
    assert iops[0]["change_pct"] > 50
    # repeats of one configuration, two a side, interleaved in time: what the job sets (fio's
    # rate sets IOPS and MB/s) is not flagged. (Split by time instead, a1+a2 against a3+a4, a
    # change in the machine's other load between the halves is a real change, and compare
    # rightly flagged one when a second fio ran.) The latency metrics are the machine's: a
    # compile or a second fio during a2 and a4 but not a1 and a3 changes them for real, and
    # compare is right to flag that, so they are shown, not asserted on.
    controlled = ("iops", "mibps", "read_iops", "read_mibps")
    for base, other in ((["a1", "a3"], ["a2", "a4"]),):
        ch = compare(base, other)
        assert {c["metric"] for c in ch if c["phase"] == "rand"} >= set(controlled), \
            f"{base} vs {other}: IOPS or MB/s not compared: {ch}"
        flagged = [(c["phase"], c["metric"], round(c["change_pct"] or 0, 1), c["p"])
                   for c in ch if c["flagged"]]
        print(f"{base} vs {other}: flagged {flagged}")
        wrong = [f for f in flagged if f[1] in controlled]
        assert not wrong, f"{base} vs {other}: repeats flagged: {wrong}"
