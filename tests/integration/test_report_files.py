"""The report extra on a real recording: the HTML page in a real headless browser, plots that
are not blank, iopulse.load() DataFrames against the report, export to CSV, JSON lines and
Parquet, one set of numbers in report, compare, export and load()."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys

import pytest

from grpc_testlib import CLIENT_ENV, iopulse, iopulse_cmd
from iopulse_testlib import REPO, wait_idle

sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))
from browser import browser_dom  # noqa: E402  (the client's test helper: headless chromium)


JOBS = """[global]
filename={dev}
direct=1
size=100M
time_based=1
runtime=2
ioengine=psync

[fill-seq]
rw=write
bs=128k

[rand-read]
stonewall
rw=randread
bs=4k
"""


def run_ok(argv: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, env=CLIENT_ENV, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{argv}: {p.stderr}"
    return p


def sync_calls(path: str) -> int:
    """fsync/fdatasync/sync_file_range calls in a recording."""
    from iopulse.record import load

    return sum(t.fsync + t.fdatasync + t.sync_file_range
               for _, u in load(path).iter_updates() for t in u.threads)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, daemon_bin, default_config, require_root):
    """One recording of two fio phases on a loop device, shared by the tests here."""
    from conftest import DaemonFactory, LoopFactory

    tmp = tmp_path_factory.mktemp("report")
    loops, daemons = LoopFactory(), DaemonFactory(daemon_bin, tmp, default_config)
    try:
        lo = loops("128M", fill=True)
        # only fio's threads in the sync table's report: other processes on the machine that
        # call fsync meanwhile (a journal, a package manager, a build) would add a plot
        d = daemons("-i", "1s", "--devices", lo.name, "--threads", "fio*")
        job = tmp / "two.fio"
        job.write_text(JOBS.format(dev=lo.path))
        out = str(tmp / "run.iopulse")
        wait_idle(lo.name)
        run_ok(iopulse_cmd("record", "-o", out, "--target", f"unix:{d.socket}", "--", "fio",
                           "--output-format=json", f"--output={tmp / 'fio.json'}", str(job)))
        assert d.stop(signal.SIGTERM) == 0, d.describe()
        yield out, lo.name, tmp
    finally:
        daemons.cleanup()
        errors = loops.cleanup()
        assert not errors, errors


def test_html_report_in_a_real_browser(recorded):
    out, dev, tmp = recorded
    page = str(tmp / "report.html")
    run_ok(iopulse_cmd("report", out, "--format", "html", "-o", page))
    dom = browser_dom(page)
    for name in ("fill-seq", "rand-read", dev):
        assert name in dom, f"{name} not on the page"
    import re
    m = re.search(r'<body[^>]*data-images="(\w+) (\d+)"', dom)
    assert m, "the page's load check did not run"
    # throughput, the device's heatmap, latency percentiles and seek distance per phase, and
    # the thread plot if the run has sync calls (the fio jobs make none; the daemon reports
    # only fio's threads)
    want = 4 + (1 if sync_calls(out) else 0)
    assert m.group(1) == "loaded" and int(m.group(2)) == want, (m.group(0), want)
    # every table within the 1400 px page: the page measures itself once loaded
    fit = re.search(r'<body[^>]*data-fit="([^"]*)"', dom)
    assert fit and fit.group(1).startswith("fits "), fit.group(0) if fit else dom[:500]
    for head in ("IOPS", "MiB/s", "total p99.9 (µs)", "seek p50 (sectors)", "fio clat p99 (µs)"):
        assert f">{head}</th>" in dom, head


def test_terminal_report_at_80_columns(recorded):
    """In a real 80-column terminal every column of every table is on screen (the tables
    fold), and no name or number is cut."""
    import fcntl
    import struct
    import termios

    from grpc_testlib import read_pty_until

    out, dev, _ = recorded
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    env = {k: v for k, v in CLIENT_ENV.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.Popen(iopulse_cmd("report", out), stdin=slave, stdout=slave, stderr=slave,
                         env=dict(env, TERM="xterm-256color"), close_fds=True)
    os.close(slave)
    try:
        text = read_pty_until(master, lambda t: False, 120) if p.wait(120) == 0 else ""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
    import re
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")
    assert p.returncode == 0 and "Traceback" not in text, text[-2000:]
    assert max(len(x.rstrip()) for x in text.split("\n")) <= 80
    assert "…" not in text
    words = set(text.split())
    for w in ("IOPS", "MiB/s", "p99.9", "mean", "max", "(sectors)", "preflush", "fill-seq",
              "rand-read", dev):
        assert w in words, (w, text[:3000])


def test_report_puts_fio_beside_the_block_layer(recorded):
    """record kept fio's JSON report: the report's fio table has fio's own counts and clat
    beside the device's requests and total latency in the same phase."""
    out, dev, tmp = recorded
    fio = {j["jobname"]: j for j in json.loads((tmp / "fio.json").read_text())["jobs"]}
    doc = json.loads(run_ok(iopulse_cmd("report", out, "--format", "json")).stdout)
    got = {(x["job"], x["op"]): x for x in doc["fio"]}
    for name, op in (("fill-seq", "write"), ("rand-read", "read")):
        x = got[(name, op)]
        print(f"{name} {op}: fio {x['fio_ios']} IOs, clat p50 {x['fio_clat_p50_ns']} p99 "
              f"{x['fio_clat_p99_ns']}; {dev} {x['block_ios']} requests, total p50 "
              f"{x['block_total_p50_ns']} p99 {x['block_total_p99_ns']}; {x['notes']}")
        assert (x["device"], x["device_from"]) == (dev, "filename")
        assert x["fio_ios"] == fio[name][op]["total_ios"]
        assert abs(x["block_ios"] - x["fio_ios"]) <= 0.01 * x["fio_ios"]
        # psync: fio's clat is the whole pwrite/pread, which holds the device's total time
        # (bucket midpoints are within 3.2%)
        assert x["fio_clat_p50_ns"] >= 0.96 * x["block_total_p50_ns"], x
        assert any("client-side time" in n for n in x["notes"])


def test_plots_are_not_blank(recorded):
    out, dev, tmp = recorded
    import matplotlib.image as mpimg

    d = str(tmp / "plots")
    paths = run_ok(iopulse_cmd("plot", out, "-o", d)).stdout.split()
    names = {os.path.basename(p) for p in paths}
    assert {"throughput.png", f"heatmap-0-{dev}.png", f"latency-0-{dev}.png",
            f"seek-0-{dev}.png"} <= names, names
    for p in paths:
        img = mpimg.imread(p)[..., :3]
        inked = (img.min(axis=2) < 0.9).mean()
        assert inked > 0.03, f"{p}: only {inked:.1%} of the pixels are not white"
        assert img.std() > 0.05, f"{p}: no contrast"
    svg = run_ok(iopulse_cmd("plot", out, "-o", d + "-svg", "--format", "svg")).stdout.split()
    assert all(open(p).read(200).lstrip().startswith("<?xml") for p in svg)


def test_load_dataframes_agree_with_the_report(recorded):
    out, dev, _ = recorded
    f = iopulse.load(out)
    ph = f.phases
    assert {"fill-seq", "rand-read"} <= set(ph["phase"])
    for name, op in (("fill-seq", "write"), ("rand-read", "read")):
        (want,) = ph[(ph.phase == name) & (ph.device == dev) & (ph.op == op)]["ios"]
        iv = f.intervals
        got = int(iv[(iv.phase == name) & (iv.device == dev) & (iv.op == op)]["ios"].sum())
        assert got == want > 0, f"{name}: intervals {got}, phase {want}"
    assert str(f.intervals["start"].dt.tz) == "UTC"


def test_one_set_of_numbers(recorded):
    """Each phase's IOPS, MiB/s and total p99 on the device under test, read and write apart
    and together, are the same in the report (rows, JSON, CSV), compare (one run a side),
    export (CSV, JSON lines) and iopulse.load(): the phase's IOs (fio's own count) over its
    seconds, not an average of interval rates."""
    import csv
    import math

    from iopulse.analysis.compare import compare
    from iopulse.record import load
    from iopulse.analysis.metrics import phase_rows

    out, dev, tmp = recorded
    fio = {j["jobname"]: j for j in json.loads((tmp / "fio.json").read_text())["jobs"]}
    run = load(out)
    rows, _ = phase_rows(run)
    rep = {r.phase.name: r for r in rows if r.device == dev}
    doc = json.loads(run_ok(iopulse_cmd("report", out, "--format", "json")).stdout)
    rjson = {d["phase"]: d for d in doc["devices"] if d["device"] == dev}
    rcsv = {x["phase"]: x for x in csv.DictReader(io.StringIO(run_ok(iopulse_cmd(
        "report", out, "--format", "csv")).stdout)) if x["device"] == dev}
    d = str(tmp / "one-set")
    run_ok(iopulse_cmd("export", out, "--format", "jsonl", "-o", d))
    exported = {(x["phase"], x["op"]): x for x in map(json.loads, open(
        os.path.join(d, "phases.jsonl")).read().splitlines()) if x["device"] == dev}
    changes = {(c.phase, c.metric): c for c in compare([run], [run]) if c.device == dev}
    frame = iopulse.load(out).phases
    frame = frame[frame.device == dev]

    def num(a: object) -> float:
        try:
            return float(a)  # type: ignore[arg-type]
        except (TypeError, ValueError):     # None, an empty CSV cell, pandas' NA
            return math.nan

    def same(a: object, b: object) -> bool:
        x, y = num(a), num(b)
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9)

    for name, op in (("fill-seq", "write"), ("rand-read", "read")):
        r = rep[name]
        ios, want = r.ops[op]["ios"], fio[name][op]["total_ios"]
        print(f"{name}: {ios} {op}s in the phase, fio {want}; {r.seconds:.3f} s; "
              f"{r.ops[op]['ios_per_s']:.0f} IOPS (fio {fio[name][op]['iops']:.0f})")
        assert abs(ios - want) <= 0.01 * want, (name, ios, want)
        assert r.ops[op]["ios_per_s"] == ios / r.seconds
        for o in (op, "all"):
            f = r.ops[o]
            pre = "" if o == "all" else o + "_"
            sel = frame[(frame.phase == name) & (frame.op == o)]
            for key in ("ios_per_s", "mib_per_s", "total_p99_ns", "total_mean_ns"):
                got = {"report json": rjson[name][pre + key], "export": exported[(name, o)][key],
                       "load()": sel[key].iloc[0]}
                if o == "all" and key in ("ios_per_s", "total_p99_ns"):
                    got["report csv"] = rcsv[name][key]
                    got["compare"] = changes[(name, "iops" if key == "ios_per_s" else
                                              "total_p99")].base[0]
                for where, v in got.items():
                    assert same(v, f[key]), (name, o, key, where, v, f[key])


def test_export_formats(recorded):
    out, dev, tmp = recorded
    for fmt in ("csv", "jsonl"):
        d = str(tmp / f"export-{fmt}")
        run_ok(iopulse_cmd("export", out, "--format", fmt, "-o", d))
        for table in ("intervals", "phases", "threads"):
            assert os.path.exists(os.path.join(d, f"{table}.{fmt}"))
    lines = open(str(tmp / "export-jsonl" / "phases.jsonl")).read().splitlines()
    assert any(json.loads(x)["phase"] == "rand-read" for x in lines)
    d = str(tmp / "export-parquet")
    p = subprocess.run(iopulse_cmd("export", out, "--format", "parquet", "-o", d), env=CLIENT_ENV,
                       capture_output=True, text=True, timeout=180)
    if importlib.util.find_spec("pyarrow") is None:
        # Debian 12 has no pyarrow: the message says what to install, there and in a venv
        # (scripts/test-client-matrix.sh runs this beside Debian's pandas with pyarrow<26)
        assert p.returncode == 1 and "iopulse[report]" in p.stderr and \
            "pip install 'pyarrow<26'" in p.stderr, p.stderr
    else:
        assert p.returncode == 0, p.stderr
        import pandas as pd
        iv = pd.read_parquet(os.path.join(d, "intervals.parquet"))
        csv_rows = len(open(str(tmp / "export-csv" / "intervals.csv")).read().splitlines()) - 1
        assert len(iv) == csv_rows > 0


def test_compare_html(recorded):
    out, _, tmp = recorded
    page = str(tmp / "compare.html")
    run_ok(iopulse_cmd("compare", out, "--", out, "--format", "html", "-o", page))
    dom = browser_dom(page)
    assert "fill-seq" in dom and "0 of " in dom and "flagged" in dom


def test_phases_import_rados_and_cbt(recorded):
    """Saved rados bench output and a CBT-style archive, imported into a real recording."""
    import shutil
    import time as _t

    out, _, tmp = recorded
    run = str(tmp / "imported.iopulse")
    shutil.copy(out, run)
    from iopulse.record import load
    first = load(run).hosts[0].windows[0]
    t0 = first.start_realtime_ns
    # a 3 s run with --show-time stamps, inside the recording (an import outside it is
    # refused)
    header = "  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)"
    lines = ["Maintaining 16 concurrent writes of 4194304 bytes to objects of size 4194304 "
             "for up to 3 seconds or 0 objects", header]
    for i in range(3):
        stamp = _t.strftime("%Y-%m-%dT%H:%M:%S.000000+0000", _t.gmtime(t0 // 10**9 + i))
        lines.append(f"{stamp} {i:5d} {16:7d} {40 + i:9d} {24 + i:9d} {50.5:9.6g} {48:9d} "
                     f"{0.8:11.6g} {0.6:11.6g}")
    lines += ["Total time run:         3.0", "Total writes made:      400",
              "Write size:             4194304", "Object size:            4194304",
              "Min latency(s):         0.1"]
    rados_out = tmp / "rados-write.txt"
    rados_out.write_text("\n".join(lines) + "\n")
    archive = tmp / "cbt" / "results" / "00000001" / "id-0badcafe"
    archive.mkdir(parents=True)
    (archive / "benchmark_config.yaml").write_text(
        "cluster:\n  iodepth: 16\n  mode: randread\n  iteration: 1\n")
    (archive / "output.0.client1").write_text(json.dumps({
        "fio version": "fio-3.37", "timestamp": t0 // 10**9 + 9, "jobs": [
            {"jobname": "librbdfio", "groupid": 0, "job_start": t0 // 10**6 + 1000,
             "job_runtime": 2000, "elapsed": 3, "job options": {"rw": "randread"}}]}))
    p = subprocess.run(iopulse_cmd("phases", "import", run, str(rados_out),
                                   str(tmp / "cbt")), env=CLIENT_ENV, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    listed = [json.loads(x) for x in run_ok(iopulse_cmd("phases", "list", run, "--json"))
              .stdout.splitlines()]
    got = {x["name"]: x for x in listed if not x["exact"]}
    assert set(got) == {"rados-bench-write", "cbt-fio"}, listed
    assert got["rados-bench-write"]["start_realtime_ns"] == t0 // 10**9 * 10**9
    assert got["rados-bench-write"]["accuracy_s"] == 1.0
    assert got["cbt-fio"]["start_realtime_ns"] == (t0 // 10**6 + 1000) * 10**6
    assert got["cbt-fio"]["labels"]["iodepth"] == "16"
    # an incomplete run is refused with the reason
    cut = str(tmp / "cut.iopulse")
    with open(out, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:-40])
    p = subprocess.run(iopulse_cmd("phases", "import", cut, str(rados_out)), env=CLIENT_ENV,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "incomplete" in p.stderr, p.stderr
