"""Tables that fit: folding at any width, names never read as markup, top's merged lines."""
from __future__ import annotations

import io

import pytest
import screen
from fakes import make_update
from rich.console import Console

from iopulse.model import DeviceInfo, Update
from iopulse.render import device_rows, merge_rows, render
from iopulse.textfit import Col, Fit, Grid, fold, table_width

WIDTHS = (80, 120, 180)


def printed(renderable, width: int) -> str:
    c = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    c.print(renderable)
    return c.export_text()


def grid(n_values: int = 14, name: str = "fill [bs=128k iodepth=16]") -> Grid:
    g = Grid("per phase [x]", [Col("#"), Col("device", left=True)],
             [Col(f"metric{i} p99.9 (µs)", group=f"g{i // 3}") for i in range(n_values)])
    for r in range(4):
        g.add([str(r + 1), name if r == 0 else f"nvme{r}n1"] +
              [f"{123456.0 / (i + 1):.1f}" for i in range(n_values)])
    return g


@pytest.mark.parametrize("width", [30, 40, 60] + list(WIDTHS) + [240])
def test_every_column_once_at_every_width(width):
    g = grid()
    parts = fold(g, width)
    text = printed(Fit(g), width)
    assert "…" not in text and screen.widest(text) <= width, text
    if parts is None:                   # narrower than the keys: lines of 'column: value'
        assert width < table_width(g.widths()[:2] + [max(g.widths()[2:])])
        for c in g.values:
            assert f"{c.header}: " in text
        return
    assert sorted(i for p in parts for i in p) == list(range(len(g.values)))
    tables = screen.tables(text)
    assert len(tables) == len(parts)
    heads = [h for t in tables for h in t.headers]
    for c in g.values:
        assert heads.count(c.header) == 1, (c.header, heads)
    assert all(t.headers[:2] == ["#", "device"] for t in tables)
    for t in tables:                    # every cell whole, in every part
        assert "fill [bs=128k iodepth=16]" in t.rows[0]
        assert len(t.rows) == 4


def test_groups_stay_together_when_they_fit():
    g = grid(9)
    for width in (60, 80, 100):
        for p in fold(g, width) or []:
            groups = [g.values[i].group for i in p]
            for grp in set(groups):
                whole = [i for i, c in enumerate(g.values) if c.group == grp]
                w = g.widths()
                assert [i for i in p if g.values[i].group == grp] == whole or \
                    table_width(w[:2] + [w[2 + i] for i in whole]) > width


def test_names_are_never_markup():
    g = grid(3, name="[bold]x[/bold] [bs=128k] [link=http://e]y[/link]")
    g.title = "t [red]red[/red]"
    for width in WIDTHS:
        text = printed(Fit(g), width)
        assert "[bold]x[/bold] [bs=128k] [link=http://e]y[/link]" in text
        assert "t [red]red[/red]" in text


def test_a_choice_takes_the_first_grid_that_fits_in_one_table():
    narrow, wide = grid(3), grid(3)
    wide.keys[0] = Col("phase", left=True)
    wide.rows = [["1 a-long-phase-name-" + "x" * 60] + r[1:] for r in narrow.rows]
    assert "a-long-phase-name" in printed(Fit((wide, narrow)), 180)
    text = printed(Fit((wide, narrow)), 80)
    assert "a-long-phase-name" not in text and len(screen.tables(text)) == 1


def _update(reads: int = 0, devices=("sdb", "loop0", "dm-0", "nvme0n1")) -> Update:
    return Update.from_pb(make_update(3, devices=devices, reads=reads))


TOP_HEADERS = ["device", "op", "IOPS", "MB/s", "MiB/s", "qwait p50 (µs)", "qwait p99 (µs)",
               "svc p50 (µs)", "svc p99 (µs)", "total p99 (µs)", "seq %", "flushes/s",
               "preflush p99 (µs)"]


@pytest.mark.parametrize("width", WIDTHS)
def test_top_shows_every_column_and_whole_names(width):
    u = _update(reads=40, devices=("sdb", "loop0", "dm-0", "nvme0n1", "loop12345"))
    text = printed(render(u, "iopulse top unix:/run/iopulse.sock", merge=True), width)
    assert "…" not in text and screen.widest(text) <= width, text
    heads = screen.all_headers(text)
    for h in TOP_HEADERS + ["thread", "pid/tid", "process", "calls/s", "p99 (µs)"]:
        assert h in heads, (h, heads)
    for t in screen.tables(text):
        if "IOPS" in t.headers:
            names = [r.split()[0] for r in t.rows if r.strip() and not r.startswith("  ")]
            assert {"sdb", "loop0", "dm-0", "nvme0n1", "loop12345"} <= set(names), t.rows
            # reads and writes apart, and their sum: 40 reads + 100 writes
            lines = [r.split() for r in t.rows]
            first = next(x for x in lines if x[0] == "dm-0")
            i = t.headers.index("op")
            assert first[i] == "read" and first[i + 1] == "40.0", first
            assert any(x[:2] == ["all", "140"] for x in lines), lines


def _infos() -> dict[str, DeviceInfo]:
    def info(name, minor, **kw):
        base = dict(name=name, major=8, minor=minor, model="", rotational=False, dm_name=None,
                    slaves=[], osd_id=None, osd_role=None, partition=False, present=True)
        base.update(kw)
        return DeviceInfo(**base)
    return {"sdb": info("sdb", 16, holders=["dm-0"]), "sdc": info("sdc", 32, holders=["dm-0"]),
            "dm-0": info("dm-0", 0, major=253, dm_name="vg-lv", slaves=["sdb", "sdc"],
                         disks=["sdb", "sdc"]),
            "loop0": info("loop0", 0, major=7), "nvme0n1": info("nvme0n1", 0, major=259)}


def test_merge_never_adds_a_stack_or_a_loop_to_its_disk():
    u = _update(devices=("sdb", "sdc", "dm-0", "loop0", "nvme0n1"))
    rows = device_rows(u, infos=_infos())
    merged, notes = merge_rows([("node0", "node0", r) for r in rows])
    got = {m.device_class: sorted(r.device for _, r in m.rows) for m in merged}
    assert got == {"disk": ["nvme0n1"], "loop": ["loop0"], "stacked": ["dm-0"],
                   "member": ["sdb", "sdc"]}, got
    assert not notes
    for m in merged:        # 100 writes per device per 1 s window
        assert m.ops["all"]["ios_per_s"] == pytest.approx(100.0 * len(m.rows))
    # --device 'sd*' 'dm-*' and one class shown: still never added up across classes
    rows = device_rows(u, globs=["sd*", "dm-*"], infos=_infos())
    merged, _ = merge_rows([("node0", "node0", r) for r in rows])
    assert sorted(m.device_class for m in merged) == ["member", "stacked"]


def test_merge_counts_a_device_seen_by_two_daemons_of_one_host_once():
    u = _update(devices=("sdb", "nvme0n1"))
    a = device_rows(u, infos=_infos())
    b = device_rows(u, infos=_infos())
    other = device_rows(u, infos=_infos())
    merged, notes = merge_rows([("node0 (a)", "node0", r) for r in a] +
                               [("node0 (b)", "node0", r) for r in b] +
                               [("node1", "node1", r) for r in other])
    by = {m.device_class: m for m in merged}
    assert len(by["disk"].rows) == 2 and len(by["member"].rows) == 2     # node0 once, node1
    assert by["disk"].ops["all"]["ios"] == 200
    assert sorted(notes) == ["nvme0n1 of node0 (b) is node0 (a)'s nvme0n1: counted once",
                             "sdb of node0 (b) is node0 (a)'s sdb: counted once"]


def test_merge_leaves_out_a_device_under_another_of_its_class():
    u = _update(devices=("dm-0", "dm-1"))
    u.devices["dm-0"].holders = ["dm-1"]
    rows = device_rows(u)
    merged, notes = merge_rows([("node0", "node0", r) for r in rows])
    assert [r.device for _, r in merged[0].rows] == ["dm-1"]
    assert notes == ["dm-0 of node0 is under dm-1: left out"]


def test_merged_percentiles_are_those_of_all_ios():
    from iopulse.histogram import Histogram

    u = _update(reads=10, devices=("sdb", "nvme0n1"))
    u.devices["nvme0n1"].ops["read"].total_ns = Histogram.from_values(5, [9_000_000] * 30)
    u.devices["nvme0n1"].ops["read"].ios = 30
    rows = device_rows(u)
    merged, _ = merge_rows([("h", "h", r) for r in rows])
    (m,) = merged
    want = Histogram.from_values(5, [2_100_000] * 10 + [9_000_000] * 30)
    assert m.ops["read"]["total_p50_ns"] == want.percentile(50)
    assert m.ops["read"]["ios"] == 40


def test_merge_refuses_buckets_of_different_precisions():
    a = device_rows(_update(devices=("nvme0n1",)))
    u = Update.from_pb(make_update(3, devices=("nvme1n1",)))
    u.precision = 6
    b = device_rows(u)
    merged, notes = merge_rows([("h1", "h1", a[0]), ("h2", "h2", b[0])])
    assert merged == [] and notes == ["the disk devices are not merged: their daemons use "
                                      "different histogram precisions"]


def test_a_devices_own_figures_sit_on_its_all_line():
    """seq %, flushes/s and preflush p99 are the device's, not one op's: on its `all` line
    where reads and writes are shown apart, blank on the read and write lines."""
    u = _update(reads=40, devices=("sdb",))
    text = printed(render(u, "iopulse top unix:/run/iopulse.sock", merge=True), 200)
    lines = text.split("\n")
    head = next(ln for ln in lines if "seq %" in ln and "flushes/s" in ln)
    rows = {}
    for ln in lines[lines.index(head) + 1:]:
        for op in ("read", "write", "all"):
            if f" {op} " in ln and op not in rows:
                rows[op] = ln
    assert set(rows) == {"read", "write", "all"}, text
    for h in ("seq %", "flushes/s"):
        a = head.index(h)
        b = a + len(h)
        assert rows["read"][a:b].strip() == rows["write"][a:b].strip() == "", (h, text)
        assert rows["all"][a:b].strip() != "", (h, text)
