"""A storage benchmarker's session, end to end, on a real daemon, real fio and a loop device
whose file lies on a real disk: a fio job file of four stonewalled jobs recorded with
`iopulse record`; two configurations (no scheduler and queue depth 1, mq-deadline and queue
depth 16), each recorded twice, interleaved, and compared; the report in a terminal at 80,
120 and 180 columns and in headless chromium; the plots of a 30-phase recording; `top` at 80
columns while fio runs. Ground truth: fio's own JSON report and /proc/diskstats."""
from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys

import pytest

from grpc_testlib import CLIENT_ENV, iopulse_cmd
from iopulse_testlib import REPO, wait_idle
from test_report_files import browser_dom, run_ok

sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))
import screen  # noqa: E402  (reading tables back from a terminal: the client's test helper)

# The two configurations. The base runs' random read (QD1) is held to a rate that a busy
# machine reaches (flat out it read 3,800 IOPS beside every CPU 60% busy and 3,000 IOPS of
# other IO on the disk, rarely under 500 when other tests' IO was added), so that the base
# runs are alike whatever the disk's latency does. The other runs' random read (QD16) runs
# flat out, as every other job does, and for 3 s: the phase's IO on the disk under the loop
# device must be mostly the loop device's own, or compare rightly takes the disk for the
# device under test (see disturbed()); rates, not counts, are compared. The last job
# differs: fdatasync at QD1 in the base runs, a mixed random job in the other runs (each a
# phase of one side only).
CONFIGS = {
    "qd1": dict(scheduler="none", ioengine="psync", iodepth=1,
                randread="rate_iops=200\n",
                last="[fdatasync[bs=4k]]\nstonewall\nrw=write\nbs=4k\nfdatasync=1\n"),
    "qd16": dict(scheduler="mq-deadline", ioengine="libaio", iodepth=16,
                 randread="runtime=3\n",
                 last="[randrw[bs=4k]]\nstonewall\nrw=randrw\nrwmixread=70\nbs=4k\n"),
}
CHANGE = 4          # QD16's random read at least this many times QD1's (fio's figures)
SPREAD = 2          # the QD16 runs' random reads within this factor of each other (fio's)
TOP_RATE = 100      # fio's read rate while top runs: steady on a busy machine
JOBS = """[global]
filename={dev}
direct=1
size=96M
time_based=1
runtime=1
ioengine={ioengine}
iodepth={iodepth}

[seqwrite[bs=128k]]
rw=write
bs=128k

[randread[bs=4k]]
stonewall
rw=randread
bs=4k
{randread}
[randwrite[bs=4k]]
stonewall
rw=randwrite
bs=4k

{last}"""
SHARED = ["fio", "seqwrite[bs=128k]", "randread[bs=4k]", "randwrite[bs=4k]"]
# interleaved, so that whatever else the machine does falls on both sides alike: a pair is
# one run of each configuration, back to back
PAIRS = (("qd1-a", "qd16-a"), ("qd1-b", "qd16-b"))
ORDER = tuple(n for pair in PAIRS for n in pair)
RWS = ("randread", "randwrite", "read", "write")
MANY = 30                                           # jobs of ~0.3 s in the plotted run
ATTEMPTS = 3                                        # recordings of a pair at most
WIDTHS = (80, 120, 180)


def backing_disk(path: str) -> str:
    """The whole disk a file's blocks end up on (through a partition, dm or md)."""
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "-T", path], capture_output=True,
                         text=True, timeout=30).stdout.strip().split("[")[0]
    if not src.startswith("/dev/"):
        pytest.fail(f"{path} is on {src or 'no device'}, not a block device: the backing "
                    "disk's rows cannot be checked", pytrace=False)
    name = os.path.basename(os.path.realpath(src))
    while True:
        sys_dir = f"/sys/class/block/{name}"
        if os.path.exists(f"{sys_dir}/partition"):
            name = os.path.basename(os.path.dirname(os.path.realpath(sys_dir)))
            continue
        slaves = sorted(os.listdir(f"{sys_dir}/slaves")) if os.path.isdir(
            f"{sys_dir}/slaves") else []
        if not slaves:
            return name
        name = slaves[0]


def shows(words: list[str], value: float) -> bool:
    """Whether one of a table line's words is value to the digits it shows (whole numbers
    from 100 on, one or two decimals below)."""
    for w in words:
        try:
            x = float(w)
        except ValueError:
            continue
        if abs(x - value) <= 0.5 * 10.0 ** -len(w.partition(".")[2]) + 1e-9:
            return True
    return False


def report_json(run: str) -> dict:
    return json.loads(run_ok(iopulse_cmd("report", run, "--format", "json")).stdout)


def on_pty(args: list[str], cols: int, **kw) -> str:
    text, rc = screen.on_pty(iopulse_cmd(*args), cols, dict(CLIENT_ENV, TERM="xterm-256color"),
                             timeout=kw.pop("timeout", 120), **kw)
    assert rc == (130 if kw.get("interrupt") else 0) and "Traceback" not in text, text[-3000:]
    return text


def rows(doc: dict) -> dict[tuple[str, str], dict]:
    return {(x["phase"], x["device"]): x for x in doc["devices"]}


def check_sync_change(c: dict, base: list[str], other: list[str], reports: dict) -> int:
    """A sync thread's change (op sync, device: the thread's name and OSD) against each run's
    report: its calls/s the sum over the report's threads of that name in the phase, its
    latency where one thread had that name. Returns how many values were checked."""
    checked = 0
    for side, names in (("base", base), ("other", other)):
        if c["only"] not in ("", side):
            continue
        want: list[float] = []
        single = True
        for n in names:
            doc = reports[n]
            if not any(x["phase"] == c["phase"] for x in doc["devices"]):
                continue                # the run has no such phase
            ts = [t for t in doc["threads"] if t["phase"] == c["phase"] and
                  t["thread"] + (f" osd.{t['osd_id']}" if t["osd_id"] is not None else "")
                  == c["device"]]
            single = single and len(ts) <= 1
            if c["stat"] == "calls_per_s":
                want.append(sum(t["calls_per_s"] or 0.0 for t in ts))
            elif len(ts) == 1 and ts[0][c["figure"]] is not None:
                want.append(ts[0][c["figure"]])
        if c["stat"] != "calls_per_s" and not single:
            continue                    # several threads merged: their percentile is new
        assert len(c[side]) == len(want) and all(
            math.isclose(a, b, rel_tol=1e-9) for a, b in zip(c[side], want)), \
            (c["phase"], c["device"], c["stat"], side, c[side], want)
        checked += len(want)
    return checked


def read_iops(jobs: dict) -> float:
    """fio's own IOPS of a run's random read."""
    return jobs["randread[bs=4k]"]["read"]["iops"]


def disturbed(pair: tuple[str, str], fio: dict, reports: dict, lo: str, disk: str,
               first: tuple[str, str] | None) -> str:
    """Why a pair of runs (QD1, then QD16, back to back) cannot stand for the comparison, ''
    if it can. Each run is held to another measured under the same load, never to what a
    quiet machine does: fio's random read at QD16 reached less than CHANGE times its rate at
    QD1 in the same pair; or it is more than SPREAD times off that of the first pair's QD16
    run (with two runs a side, compare's t-test needs each side's runs alike); or other IO on
    the disk under the loop device outweighed the loop device's own in that phase (compare
    weighs the devices so over all the runs, and would then rightly take the disk for the
    device under test). fio's own figures throughout."""
    base, other = pair
    got = read_iops(fio[other]) / read_iops(fio[base])
    if got < CHANGE:
        return (f"fio read {read_iops(fio[base]):.0f} IOPS at QD1 and "
                f"{read_iops(fio[other]):.0f} at QD16: {got:.2f} times, not {CHANGE}")
    if first:
        was = read_iops(fio[first[1]])
        if not 1 / SPREAD <= read_iops(fio[other]) / was <= SPREAD:
            return (f"fio read {read_iops(fio[other]):.0f} IOPS at QD16, {was:.0f} in "
                    f"{first[1]}")
    mine = theirs = 0
    for name in pair:
        got_rows = rows(reports[name])
        ios = got_rows[("randread[bs=4k]", lo)]["ios"]
        mine += ios
        theirs += got_rows.get(("randread[bs=4k]", disk), {}).get("ios", 0) - ios
    if theirs > mine:
        return f"{theirs} IOs on {disk} besides the loop device's {mine}"
    return ""


@pytest.fixture(scope="module")
def bench(tmp_path_factory, daemon_bin, default_config, require_root):
    """The recordings, made once: the four runs of the comparison and the 30-phase run, on
    one loop device (its file under /var/tmp) watched with its disk by one daemon, which
    stays up for top. A pair of runs that the machine's other load disturbed (see
    disturbed()) is recorded again, as a benchmarker would, up to ATTEMPTS times."""
    from conftest import DaemonFactory, LoopFactory

    tmp = tmp_path_factory.mktemp("bench")
    loops, daemons = LoopFactory(), DaemonFactory(daemon_bin, tmp, default_config)
    try:
        lo = loops("128M", backing_dir="/var/tmp", fill=True)
        disk = backing_disk(lo.backing)
        d = daemons("-i", "1s", "--devices", f"{lo.name},{disk}", "--threads", "fio*")
        target = f"unix:{d.socket}"
        runs, fio, counted, reports = {}, {}, {}, {}
        for i, pair in enumerate(PAIRS):
            for attempt in range(1, ATTEMPTS + 1):
                for name in pair:
                    cfg = CONFIGS[name.split("-")[0]]
                    lo.set_scheduler(cfg["scheduler"])
                    job = tmp / f"{name}.fio"
                    job.write_text(JOBS.format(dev=lo.path, **cfg))
                    runs[name] = str(tmp / f"{name}.iopulse")
                    before = wait_idle(lo.name)
                    run_ok(iopulse_cmd("record", "--force", "-o", runs[name], "--target",
                                       target, "--", "fio", "--output-format=json",
                                       f"--output={tmp / name}.json", str(job)))
                    counted[name] = wait_idle(lo.name) - before
                    fio[name] = {j["jobname"]: j for j in
                                 json.loads((tmp / f"{name}.json").read_text())["jobs"]}
                    reports[name] = report_json(runs[name])
                    print(f"{name}: fio read {read_iops(fio[name]):.0f} IOPS")
                why = disturbed(pair, fio, reports, lo.name, disk, PAIRS[0] if i else None)
                if not why:
                    break
                print(f"{'/'.join(pair)}, attempt {attempt} of {ATTEMPTS}: disturbed: {why}")
            else:
                pytest.fail(f"{'/'.join(pair)}: every pair of runs disturbed by the machine's "
                            f"other load ({why})", pytrace=False)
        lo.set_scheduler("none")
        many = tmp / "many.fio"
        many.write_text(f"[global]\nfilename={lo.path}\ndirect=1\nsize=96M\nbs=4k\n"
                        "time_based=1\nruntime=300ms\n\n" + "".join(
                            f"[{n + 1:02d}-{RWS[n % 4]}]\nstonewall\nrw={RWS[n % 4]}\n\n"
                            for n in range(MANY)))
        runs["many"] = str(tmp / "many.iopulse")
        wait_idle(lo.name)
        run_ok(iopulse_cmd("record", "-o", runs["many"], "--target", target, "--", "fio",
                           "--output=/dev/null", str(many)))
        yield dict(tmp=tmp, lo=lo, disk=disk, target=target, runs=runs, fio=fio,
                   counted=counted, reports=reports)
    finally:
        daemons.cleanup()
        errors = loops.cleanup()
        assert not errors, errors


def test_every_job_is_a_phase_with_fios_counts_and_the_run_is_diskstats(bench):
    """Each job's IOs on the loop device are fio's (the fdatasync job's writes also the empty
    preflush writes of its calls, as diskstats counts them), and the whole command's reads,
    writes, bytes and flushes are what /proc/diskstats counted on the device."""
    lo = bench["lo"].name
    for name in ORDER:
        got, jobs = rows(bench["reports"][name]), bench["fio"][name]
        all_syncs = 0
        for job, j in jobs.items():
            r = got[(job, lo)]
            want_r, want_w = j["read"]["total_ios"], j["write"]["total_ios"]
            syncs = max(int(j["sync"].get("total_ios", 0)),
                        int(j["sync"].get("lat_ns", {}).get("N", 0)))
            all_syncs += syncs
            print(f"{name} {job}: reads {r['reads']} (fio {want_r}), writes {r['writes']} "
                  f"(fio {want_w} + {syncs} sync calls)")
            assert abs(r["reads"] - want_r) <= 0.01 * want_r, (name, job)
            assert abs(r["writes"] - want_w - syncs) <= 0.01 * (want_w + syncs), (name, job)
        whole, ds = got[("fio", lo)], bench["counted"][name]
        keys = ("reads", "read_bytes", "write_bytes", "flushes")
        assert [whole[k] for k in keys] == [getattr(ds, k) for k in keys], \
            (name, keys, [whole[k] for k in keys], ds)
        # docs/metrics.md (Completions the kernel does not report): an empty PREFLUSH write
        # (one per fdatasync call here) has no record, and one whose completion reached no
        # program is not counted: at most 0.1% of them, at least 1 allowed (as test_sync).
        # Its bytes are 0, so write_bytes above stays exact: every data write is counted.
        missed = ds.writes - whole["writes"]
        assert 0 <= missed <= (max(1, all_syncs // 1000) if all_syncs else 0), \
            (name, f"writes {whole['writes']}, diskstats {ds.writes}: {missed} of {all_syncs} "
                   f"empty PREFLUSH writes not counted")


def test_report_fits_80_120_and_180_columns(bench):
    """Every column the report has (the HTML page's headers) is on screen at each width,
    phase names with brackets are shown as written, fio's IOPS beside the device's; no line
    is wider than the terminal and nothing is cut."""
    tmp, lo, run = bench["tmp"], bench["lo"].name, bench["runs"]["qd1-a"]
    page = str(tmp / "qd1-a.html")
    run_ok(iopulse_cmd("report", run, "--format", "html", "-o", page))
    html = open(page).read()
    every = set(re.findall(r"<th[^>]*>([^<]+)</th>", html))
    assert {"IOPS", "MiB/s", "total p99.9 (µs)", "seek p50 (sectors)", "fio IOPS",
            "device IOPS", "scheduler"} <= every, every
    fio = bench["fio"]["qd1-a"]
    doc = {x["job"]: x for x in bench["reports"]["qd1-a"]["fio"]}
    for cols in WIDTHS:
        text = on_pty(["report", run], cols)
        heads = screen.all_headers(text)
        print(f"{cols} columns: {len(text.splitlines())} lines, widest {screen.widest(text)}, "
              f"{len(heads)} headers")
        assert every <= heads, (cols, sorted(every - heads))
        assert screen.widest(text) <= cols and "…" not in text, cols
        words = set(text.split())
        for job in fio:
            assert job in words, (cols, job)
        # fio's table: per job fio's IOs and IOPS beside the device's, on the phase's line
        (table,) = [t for t in screen.tables(text) if "fio IOPS" in t.headers]
        for job, j in fio.items():
            op = "read" if j["read"]["total_ios"] else "write"
            x = doc[job]
            assert x["fio_ios"] == j[op]["total_ios"] and x["device"] == lo
            assert math.isclose(x["fio_iops"], j[op]["iops"], rel_tol=1e-6)
            want = [str(x["fio_ios"]), str(x["block_ios"])]
            line = [r.split() for r in table.rows if lo in r.split() and op in r.split() and
                    all(w in r.split() for w in want)]
            assert line and shows(line[0], x["fio_iops"]) and shows(line[0], x["block_iops"]), \
                (cols, job, want, x["fio_iops"], x["block_iops"], table.rows)


def test_compare_agrees_with_the_report_and_flags_the_device_under_test(bench):
    """Two runs a side: each run's value is its report's, phases in the runs' order and
    those of one side listed, the random read's IOPS (QD16's at least fourfold QD1's)
    flagged on the loop device (the device under test, listed first) by the change fio
    counted in the same runs, and not on the disk under it, the scheduler change in the
    header; the same in an 80-column terminal."""
    runs, lo, disk = bench["runs"], bench["lo"].name, bench["disk"]
    base, other = ["qd1-a", "qd1-b"], ["qd16-a", "qd16-b"]
    argv = ["compare", *[runs[n] for n in base], "--", *[runs[n] for n in other]]
    cmp = json.loads(run_ok(iopulse_cmd(*argv, "--format", "json")).stdout)
    # phases in the runs' order; those of one side listed as such
    names = [p["phase"] for p in cmp["phases"]]
    assert [n for n in names if n in SHARED] == SHARED, names
    only = {p["phase"]: p["only"] for p in cmp["phases"] if p["only"]}
    assert only == {"fdatasync[bs=4k]": "base", "randrw[bs=4k]": "other"}, only
    # each run's value is that run's report's
    reps = {n: rows(bench["reports"][n]) for n in base + other}
    checked = synced = 0
    for c in cmp["changes"]:
        if c["op"] == "discard":
            continue                    # the report's JSON has no discard rates (a disk's)
        if c["op"] == "sync":
            synced += check_sync_change(c, base, other, bench["reports"])
            continue
        key = c["figure"] if c["op"] == "all" else f"{c['op']}_{c['figure']}"
        for side, names_ in (("base", base), ("other", other)):
            want = []
            for n in names_ if c["only"] in ("", side) else ():
                if not any(p == c["phase"] for p, _ in reps[n]):
                    continue            # the run has no such phase
                r = reps[n].get((c["phase"], c["device"]))
                v = None if r is None else r[key]
                if v is None and c["unit"] != "ns":
                    v = 0.0             # the phase ran, the device had no IO in it
                if v is not None:
                    want.append(v)
            assert len(c[side]) == len(want) and all(
                math.isclose(a, b, rel_tol=1e-9) for a, b in zip(c[side], want)), \
                (c["phase"], c["device"], c["metric"], side, c[side], want)
            checked += len(want)
    assert checked > 100, checked
    assert synced >= 4, f"no sync thread compared ({synced} values checked)"
    # the random read's rate changed at least fourfold (fio's figures: see disturbed()):
    # flagged on the loop device, the device under test; the disk under it carried the same
    # IOs (and whatever else the machine did) and is shown, never flagged
    (rr,) = [p for p in cmp["phases"] if p["phase"] == "randread[bs=4k]"]
    assert [u["device"] for u in rr["under_test"]] == [lo], rr
    assert rr["labels_changed"]["iodepth"] == ["1", "16"]
    iops = {c["device"]: c for c in cmp["changes"]
            if c["phase"] == "randread[bs=4k]" and c["metric"] == "read_iops"}
    for dev in (lo, disk):
        c = iops[dev]
        print(f"randread IOPS on {dev}: {[round(x) for x in c['base']]} -> "
              f"{[round(x) for x in c['other']]}: {c['verdict']}, p {c['p']:.2g}")
    assert iops[lo]["flagged"] and iops[lo]["verdict"] == "better", iops[lo]
    # each run's rate is fio's own count of the job's reads over the phase's seconds (which
    # also hold the job's start and end: fio's IOPS, over its runtime alone, are higher)
    for side, names_ in (("base", base), ("other", other)):
        for n, v in zip(names_, iops[lo][side]):
            want = bench["fio"][n]["randread[bs=4k]"]["read"]["total_ios"]
            secs = reps[n][("randread[bs=4k]", lo)]["seconds"]
            assert abs(v * secs - want) <= 0.01 * want, (n, v, secs, want)
    fio_change = (sum(read_iops(bench["fio"][n]) for n in other) /
                  sum(read_iops(bench["fio"][n]) for n in base))
    print(f"randread IOPS on {lo}: {sum(iops[lo]['other']) / sum(iops[lo]['base']):.1f} "
          f"times; fio's {fio_change:.1f} times")
    assert iops[disk]["verdict"] == "not DUT" and not iops[disk]["flagged"], iops[disk]
    # every phase's jobs wrote to the loop device: it is under test wherever it has IO, the
    # disk under it never (however busy other tenants kept that disk) and never flagged
    for p in cmp["phases"]:
        dut = [u["device"] for u in p["under_test"]]
        if any(c["phase"] == p["phase"] and c["device"] == lo for c in cmp["changes"]):
            assert lo in dut, p
        assert disk not in dut, p
        assert not [c for c in cmp["changes"] if c["phase"] == p["phase"]
                    and c["device"] == disk and c["flagged"]], p["phase"]
    # the settings that differ, the scheduler first
    sched = [s for s in cmp["settings"] if s["key"] == f"{lo}.scheduler"]
    assert sched and (sched[0]["base"], sched[0]["other"]) == ("none", "mq-deadline")
    # the same in a terminal of 80 columns
    text = on_pty(argv, 80)
    lines = text.splitlines()
    assert screen.widest(text) <= 80 and "…" not in text, screen.widest(text)
    assert f"  {lo}.scheduler none -> mq-deadline" in lines, text[:2000]
    # each phase's block: its heading (wrapped to the terminal), the column headers, its rows
    starts = [i for i, x in enumerate(lines) if x.lstrip().startswith("phase ")]
    blocks = {}
    for i, j in zip(starts, starts[1:] + [len(lines)]):
        cols = next((k for k in range(i, j) if lines[k].startswith("device ")), j)
        blocks[lines[i].split()[1].rstrip(";")] = (" ".join(lines[i:cols]), lines[cols + 1:j])
    assert "only in the base runs (2 of 2)" in blocks["fdatasync[bs=4k]"][0]
    assert "only in the other runs (2 of 2)" in blocks["randrw[bs=4k]"][0]
    head, block = blocks["randread[bs=4k]"]
    assert "iodepth 1 -> 16" in head and f"under test: {lo}" in head, head
    first = [x.split()[0] for x in block if x.strip() and not x.startswith(" ")]
    assert first == sorted(first, key=lambda d: d != lo) and first[0] == lo and disk in first
    at = next(i for i, x in enumerate(block) if x.split()[:3] == [lo, "read", "IOPS"])
    row = [block[at]] + list(itertools.takewhile(lambda x: x.startswith(" "),
                                                  block[at + 1:]))
    assert "better" in " ".join(row).split(), row


def test_html_report_in_chromium(bench):
    """The page of a run in a real browser: every table within a 1400 px window, every plot
    loaded, the phase names as written, fio's columns and the device settings there."""
    tmp = bench["tmp"]
    page = str(tmp / "browser" / "qd1-a.html")
    os.makedirs(os.path.dirname(page))
    run_ok(iopulse_cmd("report", bench["runs"]["qd1-a"], "--format", "html", "-o", page))
    imgs = open(page).read().count("<img")
    dom = browser_dom(page)
    m = re.search(r'<body[^>]*data-images="(\w+) (\d+)"', dom)
    assert m and m.group(1) == "loaded" and int(m.group(2)) == imgs >= 4, (m and m.group(0),
                                                                           imgs)
    fit = re.search(r'<body[^>]*data-fit="([^"]*)"', dom)
    assert fit and fit.group(1).startswith("fits "), fit.group(0) if fit else dom[:500]
    for job in bench["fio"]["qd1-a"]:
        assert f">{job}<" in dom or f" {job}<" in dom, job
    for head in ("fio IOPS", "device IOPS", "scheduler", "total p99.9 (µs)"):
        assert f">{head}</th>" in dom, head


def test_plots_of_30_phases(bench):
    """The plots of a run of 30 jobs: files named as `iopulse plot --help` lists them, every
    job in the key of every figure, every text inside its figure and clear of the others."""
    tmp, lo, run = bench["tmp"], bench["lo"].name, bench["runs"]["many"]
    helptext = run_ok(iopulse_cmd("plot", "--help")).stdout
    stems = re.findall(r"^  ([a-z]+(?:-[a-z]+)*(?:-H-DEV)?)\.png ", helptext, re.M)
    assert {"throughput", "heatmap-H-DEV", "latency-H-DEV", "seek-H-DEV"} <= set(stems), stems
    patterns = {s: re.compile("^" + re.escape(s).replace(r"H\-DEV", r"\d+-[A-Za-z0-9._+-]+")
                              + r"\.png$") for s in stems}
    paths = run_ok(iopulse_cmd("plot", run, "-o", str(tmp / "plots"))).stdout.split()
    names = sorted(os.path.basename(p) for p in paths)
    print(f"plots: {names}")
    assert names == sorted(os.listdir(tmp / "plots"))
    for n in names:
        assert sum(1 for p in patterns.values() if p.match(n)) == 1, n
    for kind in ("heatmap", "latency", "seek"):
        assert f"{kind}-0-{lo}.png" in names
    assert "throughput.png" in names

    import matplotlib.pyplot as plt
    from test_plots import _overlap, _texts

    from iopulse.record import load
    from iopulse.report import plots
    from iopulse.report.figures.common import rc

    jobs = [f"{n + 1:02d}-{RWS[n % 4]}" for n in range(MANY)]
    with plt.rc_context(rc(plt)):
        for stem, fig in plots.figures(load(run)):
            try:
                fig.canvas.draw()
                texts = _texts(fig)
                box = fig.bbox
                for t, bb in texts:
                    assert bb.x0 >= box.x0 - 1 and bb.x1 <= box.x1 + 1 and \
                        bb.y0 >= box.y0 - 1 and bb.y1 <= box.y1 + 1, (stem, t.get_text())
                for i, (t, a) in enumerate(texts):
                    for u, b in texts[i + 1:]:
                        assert _overlap(a, b) < 2.0, (stem, t.get_text(), u.get_text())
                words = {w for t, _ in texts for w in t.get_text().split()}
                assert set(jobs) <= words, (stem, sorted(set(jobs) - words))
            finally:
                plt.close(fig)


def test_top_at_80_columns(bench):
    """top in an 80-column terminal while fio reads at a fixed rate: the device names whole,
    the loop device's IOPS a number near fio's, no line wider than the terminal. fio reads
    until top has shown its frames (however long top takes to start on a busy machine), and
    its IOPS are over the time it ran."""
    lo, disk, tmp = bench["lo"], bench["disk"], bench["tmp"]
    wait_idle(lo.name)
    out = tmp / "top-fio.json"
    fio = subprocess.Popen(["fio", "--name=top", f"--filename={lo.path}", "--direct=1",
                            "--rw=randread", "--bs=4k", f"--rate_iops={TOP_RATE}",
                            "--time_based", "--runtime=90", "--output-format=json",
                            f"--output={out}"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        text = on_pty(["top", "--target", bench["target"], "--threads", "0"], 80,
                      until=f" {lo.name} ".encode(), count=8, interrupt=True, timeout=60)
    finally:
        fio.send_signal(signal.SIGINT)
        try:
            rc = fio.wait(60)
        except subprocess.TimeoutExpired:
            fio.kill()
            fio.wait(10)
            raise
    assert rc in (0, 128), f"fio exited {rc}"     # 128: ended by the signal, as asked
    doc = out.read_text()                           # after fio's line about the signal
    want = json.loads(doc[doc.index("{"):])["jobs"][0]["read"]["iops"]
    assert "…" not in text
    frames = [f for f in re.split(r"(?=iopulse top )", text) if f.startswith("iopulse top ")]
    seen = []
    for f in frames[:-1]:               # the last one may be cut by Ctrl-C
        assert screen.widest(f) <= 80, f
        for t in screen.tables(f):
            if {"device", "op", "IOPS"} <= set(t.headers):
                cells = {r.split()[0]: r.split() for r in t.rows if r.split()}
                if lo.name in cells and cells[lo.name][1] == "read":
                    assert re.fullmatch(r"\d+(\.\d+)?", cells[lo.name][2]), cells[lo.name]
                    seen.append(float(cells[lo.name][2]))
                assert all(n in (lo.name, disk) for n in cells
                           if not n.startswith(("read", "write", "all", "discard"))), cells
    print(f"top: {len(frames)} frames, {lo.name} read IOPS {seen}; fio {want:.0f}")
    assert seen and any(abs(v - want) <= 0.2 * want for v in seen), (seen, want)
