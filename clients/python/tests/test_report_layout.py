"""The report's tables: every column at 80, 120 and 180 columns of a real terminal, names
never read as markup, reads and writes apart, units in every header, each host's device
settings; the HTML page within 1400 px in a real browser."""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys

import pytest
import reportrun
import screen
from browser import browser_dom
from test_cli import SRC

from iopulse.display import DEVICE_SPECS, FIO_SPECS, OP_SPECS, THREAD_SPECS
from iopulse.record import load
from iopulse.analysis.metrics import phase_rows
from iopulse.report.tables import SETTINGS, csv_report, markdown_report

WIDTHS = (80, 120, 180)


def headers(specs) -> list[str]:
    return [s.header.format(unit="µs") for s in specs]


PHASE_HEADERS = ["#", "phase", "s", "labels"]
OP_HEADERS = ["host", "device", "op"] + headers(OP_SPECS)
DEVICE_HEADERS = ["host", "device"] + headers(DEVICE_SPECS)
SETTINGS_HEADERS = ["host", "device"] + [h for _, h, _ in SETTINGS]
THREAD_HEADERS = ["host", "thread", "pid/tid"] + headers(THREAD_SPECS)
FIO_HEADERS = ["host", "device", "op"] + headers(FIO_SPECS)
ALL = (PHASE_HEADERS, OP_HEADERS, DEVICE_HEADERS, SETTINGS_HEADERS, THREAD_HEADERS, FIO_HEADERS)
# why fio's figures and the device's differ, as the report says it
PREFLUSH = ("6 randread-16k-qd1, write on loop12345: 10 more writes than fio's: empty writes "
            "carrying a preflush of fio's 10 fsync/fdatasync calls (10 requests with a "
            "preflush on loop12345), counted as writes as in /proc/diskstats")
CLIENT = ("5 write-4k-qd64, read on nvme0n1: fio's clat is 170.1 µs (p50) and 470.1 µs "
          "(p99) above the device's total latency: client-side time, from the device "
          "completing an IO to fio reaping it")


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("layout") / "hard.iopulse")
    reportrun.write_run(path)
    return path


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(SRC), TERM="xterm-256color")


def _tables_with(text: str, header: str) -> list[screen.Table]:
    """The parts of the op table (or another table with header)."""
    return [t for t in screen.tables(text) if header in t.headers and
            (header != "op" or t.title.startswith("per phase, device and op"))]


@pytest.mark.parametrize("cols", WIDTHS)
def test_report_on_a_terminal_shows_every_column_whole(hard, cols):
    text, rc = screen.on_pty([sys.executable, "-m", "iopulse", "report", hard], cols, _env())
    assert rc == 0 and "Traceback" not in text, text[-2000:]
    assert "…" not in text and screen.widest(text) <= cols, \
        [x for x in text.split("\n") if len(x.rstrip()) > cols][:3]
    heads = screen.all_headers(text)
    for want in ALL:
        assert [h for h in want if h not in heads] == [], (sorted(heads), text[:3000])
    flat = " ".join(text.split())
    assert PREFLUSH in flat and CLIENT in flat, flat[-2000:]
    # names whole and verbatim, brackets and all (Rich would read [bold] as markup)
    (legend,) = [t for t in screen.tables(text) if t.title == "phases"]
    rows = "\n".join(legend.rows)
    for name in (reportrun.BRACKETED, reportrun.MARKUP, "randwrite-128k-qd4"):
        assert name in rows, (name, rows)
    for name in ("nvme0n1 (osd.3 block)", "loop12345", reportrun.THREAD,
                 "storage-node-17.rack4.example.org", "Samsung SSD 990 PRO 2TB",
                 "prio_aging_expire=10000"):
        assert name in text, name
    # every phase in every part of the op table; reads, writes and all apart, whole numbers
    for t in _tables_with(text, "op"):
        keys = [r.split()[0] for r in t.rows if r[:4].strip()]
        assert len(keys) == 31, keys
        if "IOPS" in t.headers:
            lines = [r.split() for r in t.rows]
            first = next(x for x in lines if x and x[0] == "4")     # 30 reads a second
            assert "read" in first and first[first.index("read") + 1] == "30.0", first
            assert any(x[:2] == ["all", "130"] for x in lines), lines[:10]


def test_report_picks_the_keys_that_fold_least(hard):
    """A long host name gives way to h1/h2 (listed in the summary) at 80 columns; at 180
    the hosts' names and, where the table fits in one, the phases' names are shown."""
    narrow, _ = screen.on_pty([sys.executable, "-m", "iopulse", "report", hard], 80, _env())
    assert "hosts h1 node0 (iopulsed 0.9.1, kernel 6.12.48+deb13-amd64), h2 storage-node-17." \
        in narrow.replace("\n", " ").replace("  ", " ")
    ops = _tables_with(narrow, "op")
    assert all(len(t.rows[0]) <= 80 for t in ops)
    assert {r.split()[1] for t in ops for r in t.rows if r[:4].strip()} == {"h1"}
    wide, _ = screen.on_pty([sys.executable, "-m", "iopulse", "report", hard], 180, _env())
    (t,) = _tables_with(wide, "op")
    assert "storage-node-17.rack4.example.org" in "\n".join(t.rows)


def test_markdown_and_csv_have_every_column(hard):
    run = load(hard)
    rows, trows = phase_rows(run)
    md = markdown_report(run, rows, trows)
    heads = set()
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            heads.update(x.strip().replace("\\", "") for x in line.strip("|").split(" | "))
    for want in ALL:
        assert [h for h in want if h not in heads] == [], want
    assert "fill \\[bs=128k iodepth=16\\]" in md
    recs = list(csv.DictReader(io.StringIO(csv_report(rows))))
    assert {"iodepth", "bs", "bs_bytes", "rw", "read_ios_per_s", "write_total_p99_ns",
            "mib_per_s", "total_p999_ns", "seek_p50_sectors"} <= set(recs[0])
    rec = next(r for r in recs if r["phase"] == "read-128k-qd16")
    assert (rec["bs"], rec["bs_bytes"], rec["iodepth"]) == ("128k", "131072", "16")
    assert recs[0]["bs"] == "" and recs[0]["phase"] == "fio"      # the parent has no bs


def test_op_lines_are_reads_writes_and_all_when_both():
    from iopulse.display import shown_ops

    def ops(r, w, d=0):
        return {"read": {"ios": r}, "write": {"ios": w}, "discard": {"ios": d}, "all": {}}
    assert shown_ops(ops(5, 0)) == ["read"]
    assert shown_ops(ops(0, 5)) == ["write"]
    assert shown_ops(ops(5, 5)) == ["read", "write", "all"]
    assert shown_ops(ops(0, 5, 1)) == ["write", "discard", "all"]
    assert shown_ops(ops(0, 0)) == ["all"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")
def test_html_tables_fit_a_1400_px_page(hard, tmp_path):
    from iopulse.report.html import html_report

    run = load(hard)
    rows, trows = phase_rows(run)
    page = tmp_path / "report.html"
    page.write_text(html_report(run, rows, trows, plots=False))
    dom = browser_dom(str(page))
    m = re.search(r'<body[^>]*data-fit="([^"]*)"', dom)
    assert m, "the page's fit check did not run"
    state, client, scroll, over = (m.group(1).split(" ", 3) + [""])[:4]
    assert state == "fits" and int(scroll) <= int(client) <= 1400, m.group(1)
    for name in ("fill [bs=128k iodepth=16]", "[bold]x[/bold]", "loop12345",
                 "storage-node-17.rack4.example.org", "prio_aging_expire=10000"):
        assert name in dom.replace("&amp;", "&"), name
    heads = set(re.findall(r"<th[^>]*>([^<]*)</th>", dom))
    for want in ALL:
        assert [h for h in want if h not in heads] == [], want
    flat = " ".join(dom.split())
    assert PREFLUSH in flat and CLIENT in flat


def test_fio_beside_the_block_layer(hard):
    """The numbers of the fio table: fio's IOs and clat from its report, the device's from
    the phase; the differences named; in the JSON report too."""
    import json

    from iopulse.report.fio_side import fio_sides
    from iopulse.report.tables import json_report

    run = load(hard)
    rows, trows = phase_rows(run)
    sides = {s.op: s for s in fio_sides(run, rows)}
    w, r = sides["write"], sides["read"]
    assert (w.device, w.device_from, w.fio_ios, w.block_ios, w.fio_sync_calls,
            w.preflushes) == ("loop12345", "filename", 90, 100, 10, 10)
    assert (r.device, r.fio_ios, r.block_ios, r.fio_clat_ns["p99"]) == \
        ("nvme0n1", 40, 40, 2_600_000)
    assert r.client_ns["p99"] == 2_600_000 - r.block_total_ns["p99"]
    assert len(r.notes) == 1            # the same IO count: only the client-side time
    doc = json.loads(json_report(run, rows, trows))
    assert {(x["job"], x["op"], x["fio_ios"], x["block_ios"]) for x in doc["fio"]} == \
        {(reportrun.job_names(5)[4], "write", 90, 100), (reportrun.job_names(5)[3], "read", 40,
                                                         40)}
    assert doc["hosts"][0]["settings"]["devices"]["nvme0n1"]["scheduler"] == "mq-deadline"
    # without fio's report, no such table
    assert fio_sides(run, rows, doc={}) == []
    # the same IOs over fio's runtime and over the phase's seconds
    fio = reportrun.fio_report(reportrun.job_names(5))
    fio["jobs"][1]["read"].update(runtime=1100, iops=40 / 1.1)
    (r,) = [x for x in fio_sides(run, rows, doc=fio) if x.op == "read"]
    assert r.notes[0] == ("the same IOs over different times: IOPS over the phase's 1.000 s "
                          "(interval edges) and fio's runtime of 1.100 s"), r.notes


def test_fio_beside_split_ios_and_clat_below(hard):
    """fio's IOs split on the device: the requests per IO are said from the sizes, and fio's
    clat (a whole IO's) is not set against a piece's latency; a clat below the device's
    latency is never printed as a negative time above it."""
    from iopulse.report.fio_side import fio_sides

    run = load(hard)
    rows, _ = phase_rows(run)
    (r,) = [x for x in fio_sides(run, rows) if x.op == "read"]
    assert r.pieces is None and r.block_bytes > 0, r
    fio = reportrun.fio_report(reportrun.job_names(5))
    # 5 IOs of 8 requests' bytes each: the device's 40 reads are their pieces
    fio["jobs"][1]["read"].update(total_ios=5, io_bytes=r.block_bytes)
    (s,) = [x for x in fio_sides(run, rows, doc=fio) if x.op == "read"]
    assert s.pieces == 8 and s.client_ns == {"p50": None, "p99": None, "p999": None}
    assert s.notes[0].startswith("35 more requests than fio's IOs: each of fio's ") and \
        "as about 8 requests of" in s.notes[0], s.notes
    assert s.notes[-1].startswith("fio's clat is a whole IO's") and "not compared" in \
        s.notes[-1], s.notes
    # whole IOs, fio's clat below the device's total latency: no "above", no negative time
    fio = reportrun.fio_report(reportrun.job_names(5))
    fio["jobs"][1]["read"]["clat_ns"]["percentile"].update({"50.000000": 1000,
                                                            "99.000000": 2000})
    (s,) = [x for x in fio_sides(run, rows, doc=fio) if x.op == "read"]
    assert s.pieces is None and s.client_ns["p50"] < 0
    assert len(s.notes) == 1 and s.notes[0].startswith("fio's clat lies below the device's "
                                                       "total latency at p50 ("), s.notes
    assert "above" not in s.notes[0] and "(-" not in s.notes[0], s.notes


def test_fio_beside_fdatasync_writes_are_not_taken_for_pieces(hard):
    """4 KiB writes each followed by an fdatasync on a raw device: the device counts twice
    fio's writes (each call's empty write carrying a preflush), half its bytes per request.
    Those are not pieces of split IOs: fio's clat is compared; a 4 MiB write split in 8 with
    its fdatasync is both."""
    import dataclasses

    from iopulse.report.fio_side import _notes, fio_sides

    run = load(hard)
    rows, _ = phase_rows(run)
    (r,) = [x for x in fio_sides(run, rows) if x.op == "write"]
    s = dataclasses.replace(r, fio_ios=1000, fio_bytes=1000 * 4096, fio_sync_calls=1000,
                            block_ios=2000, block_bytes=1000 * 4096, preflushes=1000,
                            notes=[])
    assert s.data_requests == 1000 and s.pieces is None, (s.data_requests, s.pieces)
    notes = _notes(s)
    assert notes[0].startswith("1000 more writes than fio's: empty writes carrying a "
                               "preflush of fio's 1000 fsync/fdatasync calls"), notes
    assert not any("whole IO's" in n or "pieces" in n for n in notes), notes
    split = dataclasses.replace(s, fio_bytes=100 * 4 << 20, fio_ios=100, fio_sync_calls=100,
                                block_ios=900, block_bytes=100 * 4 << 20, preflushes=100)
    assert split.data_requests == 800 and split.pieces == 8, split.pieces
    notes = _notes(split)
    assert notes[0].startswith("100 more writes than fio's: empty writes"), notes
    assert notes[1].startswith("700 more requests than fio's IOs: each of fio's 4 MiB IOs") \
        and "as about 8 requests of 512 KiB" in notes[1], notes
