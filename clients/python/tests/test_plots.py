"""The plots of a 34-phase run (a fio command phase holding 32 jobs, then a phase of its own)
and of a 6-phase one: file names as `iopulse plot --help` states them, every text inside its
figure and clear of every other, latency axes in ns/µs/ms, heatmap colour in IOs per second
on a log scale, percentiles as nines, a parent phase never drawn as one of its children.
Without matplotlib (a base install) the plots say what to install; never a skip."""
from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys

import pytest
from plotrun import BUSY, QUIET, write_run

from iopulse.histogram import Histogram, bucket_index, bucket_mid
from iopulse.record import load
from iopulse.report import plots
from iopulse.report.figures import shape

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
UNIT_TICK = re.compile(r"^\d+(\.\d+)? (ns|µs|ms|s)$")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{jobs: (run, layout, run file)} for 32 jobs and for 4."""
    d = tmp_path_factory.mktemp("plots")
    out = {}
    for n in (32, 4):
        path = str(d / f"jobs{n}.iopulse")
        layout = write_run(path, n)
        out[n] = (load(path), layout, path)
    return out


@pytest.fixture(scope="module")
def figs(runs):
    """{jobs: {file stem: Figure}}, drawn once (the tests only read them)."""
    if not HAVE_MPL:
        yield None
        return
    import matplotlib.pyplot as plt

    from iopulse.report.figures.common import rc

    out = {}
    with plt.rc_context(rc(plt)):
        for n, (run, _, _) in runs.items():
            out[n] = dict(plots.figures(run))
            for fig in out[n].values():
                fig.canvas.draw()
        yield out
    for d in out.values():
        for fig in d.values():
            plt.close(fig)


def help_text(capsys) -> str:
    from iopulse.cli import main

    with pytest.raises(SystemExit) as e:
        main(["plot", "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def help_patterns(text: str) -> dict[str, re.Pattern]:
    """The file names the help lists, as patterns (H a number, DEV a safe device name)."""
    stems = re.findall(r"^  ([a-z]+(?:-[a-z]+)*(?:-H-DEV)?)\.png ", text, re.M)
    return {s: re.compile("^" + re.escape(s).replace("H\\-DEV", r"\d+-[A-Za-z0-9._+-]+")
                          + r"\.(png|svg)$") for s in stems}


def test_help_lists_the_files_with_examples(capsys):
    text = help_text(capsys)
    assert set(help_patterns(text)) == {stem for stem, _ in plots.FILES}
    examples = text[text.index("examples:"):]
    assert "iopulse plot run1.iopulse -o run1-plots/" in examples
    assert "run1-plots/heatmap-0-nvme0n1.png" in examples
    assert "--format svg" in examples


def test_files_are_named_as_help_says(runs, tmp_path, capsys):
    patterns = help_patterns(help_text(capsys))
    from iopulse.cli import main

    _, _, path = runs[32]
    if not HAVE_MPL:
        from iopulse.data import MissingExtra

        with pytest.raises(MissingExtra):
            plots.plot_all(load(path), str(tmp_path / "p"))
        return
    for fmt in ("png", "svg"):
        out = tmp_path / fmt
        assert main(["plot", path, "-o", str(out), "--format", fmt]) == 0
        printed = capsys.readouterr().out.split()
        names = sorted(os.listdir(out))
        assert sorted(os.path.basename(p) for p in printed) == names
        for name in names:
            hits = [s for s, p in patterns.items() if p.match(name)]
            assert len(hits) == 1 and name.endswith("." + fmt), (name, hits)
        kinds = {s for s, p in patterns.items() for n in names if p.match(n)}
        assert kinds == set(patterns), kinds
        for dev in (BUSY, QUIET):
            for kind in ("heatmap", "latency", "seek"):
                assert f"{kind}-0-{dev}.{fmt}" in names


def test_file_names_stay_in_the_directory():
    for dev in ("../../etc/x", "a b", ".hidden", "", "dm-0", "nvme0n1"):
        stem = plots.file_stem("heatmap", 2, dev)
        assert "/" not in stem and " " not in stem and stem.startswith("heatmap-2-")
        assert not stem[len("heatmap-2-"):].startswith(".")
    assert plots.file_stem("seek", 0, "dm-0") == "seek-0-dm-0"


def _texts(fig):
    """(Text, its extent) of every text drawn: tick labels only of ticks in view."""
    from matplotlib.text import Text

    r = fig.canvas.get_renderer()
    skip, out = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            skip.add(id(axis.label))
            if ax.axison and axis.label.get_text():
                out.append(axis.label)
            lo, hi = sorted(axis.get_view_interval())
            pad = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for lab in (tick.label1, tick.label2):
                    skip.add(id(lab))
                    if ax.axison and lab.get_visible() and lab.get_text() and \
                            lo - pad <= tick.get_loc() <= hi + pad:
                        out.append(lab)
    for t in fig.findobj(Text):
        if id(t) not in skip and t.get_visible() and t.get_text().strip():
            out.append(t)
    return [(t, t.get_window_extent(r)) for t in out]


def _overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


@pytest.mark.parametrize("jobs", [32, 4])
def test_every_text_is_inside_its_figure_and_clear_of_the_others(figs, jobs):
    """Legends, the phase key, strip numbers, panel titles, tick labels: nothing spills off
    the figure, nothing is written over anything else."""
    if figs is None:
        return
    for stem, fig in figs[jobs].items():
        box = fig.bbox
        texts = _texts(fig)
        assert len(texts) > 20, stem
        for t, bb in texts:
            assert bb.x0 >= box.x0 - 1 and bb.x1 <= box.x1 + 1 and \
                bb.y0 >= box.y0 - 1 and bb.y1 <= box.y1 + 1, (stem, t.get_text(), bb, box)
        for i, (t, a) in enumerate(texts):
            for u, b in texts[i + 1:]:
                assert _overlap(a, b) < 2.0, (stem, t.get_text(), u.get_text())


def _axes_by_ylabel(fig, label):
    return [ax for ax in fig.axes if ax.get_ylabel() == label]


def _tick_labels(axis):
    """The tick labels shown on an axis."""
    if not axis.axes.axison:
        return []
    lo, hi = sorted(axis.get_view_interval())
    return [t.label1.get_text() for t in axis.get_major_ticks()
            if lo <= t.get_loc() <= hi and t.label1.get_visible() and t.label1.get_text()]


@pytest.mark.parametrize("jobs", [32, 4])
def test_latency_axes_are_in_time_units(figs, jobs):
    if figs is None:
        return
    f = figs[jobs]
    heat = f[f"heatmap-0-{BUSY}"]
    for label in ("queue wait", "service time"):
        (ax,) = _axes_by_ylabel(heat, label)
        ticks = _tick_labels(ax.yaxis)
        assert len(ticks) >= 3 and all(UNIT_TICK.match(t) for t in ticks), ticks
        assert {"µs", "ms"} & {t.split()[1] for t in ticks}
    lat = f[f"latency-0-{BUSY}"]
    ys = [t for ax in lat.axes for t in _tick_labels(ax.yaxis)]
    assert ys and all(UNIT_TICK.match(t) for t in ys), ys
    xs = {tuple(_tick_labels(ax.xaxis)) for ax in lat.axes if _tick_labels(ax.xaxis)}
    assert xs == {("p50", "p90", "p99", "p99.9", "p99.99")}, xs
    assert [ax.get_xticks()[1:].tolist() for ax in lat.axes][0] == [1.0, 2.0, 3.0, 4.0]


def test_heatmap_colour_is_ios_per_second_on_a_log_scale(runs, figs):
    """A 2.5 s window shows its IOs divided by 2.5, as a 1 s interval shows its own."""
    run, layout, _ = runs[32]
    s = shape.series(run)
    d = s.devices[(0, BUSY)]
    col = d.heat["queue wait"]
    row10 = shape.heat_row(bucket_mid(bucket_index(10_000, 5), 5))
    for seq, (start, secs, _) in enumerate(layout.intervals, 1):
        if seq in layout.qwait_row_rate:
            i = d.start.index(start)
            assert col[i][row10] == pytest.approx(layout.qwait_row_rate[seq]), seq
    long = [i for i, (a, b) in enumerate(zip(d.start, d.end)) if b - a == 2.5]
    assert long
    # per second x length gives the IOs back
    total = sum(sum(c) * (b - a) for c, a, b in zip(col, d.start, d.end))
    assert total == pytest.approx(layout.ios[BUSY])
    if figs is None:
        return
    from matplotlib.collections import QuadMesh
    from matplotlib.colors import LogNorm

    from iopulse.report.figures import heatmap

    fig = figs[32][f"heatmap-0-{BUSY}"]
    (ax,) = _axes_by_ylabel(fig, "queue wait")
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert isinstance(mesh.norm, LogNorm)
    xs, z = heatmap.columns(d, "queue wait")
    assert xs[long[0] + 1] - xs[long[0]] == 2.5
    arr = mesh.get_array().reshape(z.shape)
    assert float(arr[row10, long[0]]) == pytest.approx(col[long[0]][row10])
    labels = [a.get_ylabel() for a in fig.axes]
    assert labels.count(heatmap.COLOUR_LABEL) == 2 and "second" in heatmap.COLOUR_LABEL


def test_tail_runs_in_nines():
    h = Histogram(5)
    h.record(100_000, 9_900)
    h.record(1_000_000, 90)
    h.record(10_000_000, 10)
    t = dict(shape.tail(h))
    mid = {v: bucket_mid(bucket_index(v, 5), 5) for v in (100_000, 1_000_000, 10_000_000)}
    assert t[shape.NINES_MIN] == mid[100_000]
    assert t[max(t)] == mid[10_000_000] and max(t) == 4.0
    near = {round(x, 6): y for x, y in t.items()}
    assert near[2.0] == mid[100_000] and near[3.0] == mid[1_000_000]
    small = Histogram(5)
    small.record(50_000, 100)
    assert max(x for x, _ in shape.tail(small)) == pytest.approx(2.0)   # 100 IOs: to p99
    assert shape.tail(Histogram(5)) == []


def test_parent_is_above_its_children_and_not_a_phase_of_its_own(runs, figs):
    run, layout, _ = runs[32]
    es = shape.phase_entries(run.phases(), shape.run_start_ns(run))
    parent = es[0]
    assert parent.phase.name == "fio" and parent.children == list(range(2, 34))
    leaves = [e for e in es if e.leaf]
    assert [e.number for e in leaves] == list(range(2, 35))
    assert all(e.lane > parent.lane for e in es[1:33])
    hists = shape.phase_hists(run, es)[(0, BUSY)]
    assert [h.entry.number for h in hists] == list(range(2, 35))
    if figs is None:
        return
    f = figs[32]
    titles = {ax.get_title(loc="left") for ax in f[f"latency-0-{BUSY}"].axes}
    assert not any(t.startswith("1 ") for t in titles) and "2 job0" in titles
    assert len([t for t in titles if t]) == 33
    seek_rows = [t for ax in f[f"seek-0-{BUSY}"].axes for t in _tick_labels(ax.yaxis)]
    assert len(seek_rows) == 33 and not any(r.startswith("1 ") for r in seek_rows)
    # in the strip the parent's bar shares no row with a child's
    from matplotlib.patches import Rectangle

    for stem in ("throughput", f"heatmap-0-{BUSY}", "sync-threads"):
        strip = [ax for ax in f[stem].axes if not ax.axison and ax.patches]
        assert len(strip) == 1, stem
        bars = [p for p in strip[0].patches if isinstance(p, Rectangle)]
        rows = {}
        for b in bars:
            rows.setdefault(round(b.get_y()), []).append(b)
        assert len(rows[0]) == 1 and len(bars) == 34, stem       # the parent alone on top


def test_phases_stay_findable_at_34(figs):
    """Every phase in the key of every figure; the strip numbers most of them (a label that
    would touch another is left out, the key gives its times)."""
    if figs is None:
        return
    for stem, fig in figs[32].items():
        words = {t.get_text().split()[0] for t, _ in _texts(fig) if t.get_text().split()}
        key = [t.get_text() for t, _ in _texts(fig)
               if re.match(r"^ ?\d+ \S+ +\d+\.\d-\d+\.\d s", t.get_text())]
        assert sorted(int(k.split()[0]) for k in key) == list(range(1, 35)), stem
        if stem in ("throughput", "sync-threads") or stem.startswith("heatmap"):
            numbered = {str(n) for n in range(2, 35)} & words
            assert len(numbered) >= 30, (stem, sorted(numbered, key=int))


def test_few_phases_share_one_axes_with_a_legend(figs):
    if figs is None:
        return
    fig = figs[4][f"latency-0-{BUSY}"]
    (ax,) = [a for a in fig.axes if a.get_legend() is not None]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["2 job0", "3 randwrite-4k-qd1", "4 read-4k-qd4", "5 write-4k-qd4",
                      "6 cooldown"]


_NO_MPL = """
import sys
sys.modules["matplotlib"] = None            # as if not installed
import iopulse.report.plots as plots
from iopulse.cli import main
from iopulse.data import MissingExtra
from iopulse.record import load
try:
    main(["plot", "--help"])
except SystemExit as e:
    assert e.code == 0
try:
    plots.plot_all(load(sys.argv[1]), sys.argv[2])
except MissingExtra as e:
    print("missing:", e)
"""


def test_core_and_help_work_without_matplotlib(runs, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-c", _NO_MPL, runs[4][2], str(tmp_path / "p")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "latency-H-DEV.png" in p.stdout and "missing: plots needs the report extra" in p.stdout


def test_one_second_intervals_hold_whole_phases(runs):
    """The data the figures draw: every interval's length is its own (no 1 s assumed)."""
    run, layout, _ = runs[32]
    s = shape.series(run)
    d = s.devices[(0, BUSY)]
    lengths = sorted({round(b - a, 6) for a, b in zip(d.start, d.end)})
    assert lengths == [0.25, 0.5, 1.0, 2.5]
    assert s.end_s == pytest.approx(sum(x for _, x, _ in layout.intervals))
    assert math.isclose(sum(r * (b - a) for r, a, b in zip(d.iops, d.start, d.end)),
                        layout.ios[BUSY])


def test_a_run_without_phases_is_one_phase_in_the_per_phase_figures(tmp_path):
    from fakes import make_update

    from iopulse._pb import iopulse_pb2 as pb
    from iopulse.record import RunWriter

    path = str(tmp_path / "r.iopulse")
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, pb.Info(version="t", hostname="node0").SerializeToString())
        for seq in range(1, 4):
            w.write_update(0, make_update(seq, devices=("sdb",)).SerializeToString())
        w.close({"type": "end", "status": "ok"})
    run = load(path)
    s = shape.series(run)
    (e,) = shape.whole_run(s)
    (ph,) = shape.phase_hists(run, [e])[(0, "sdb")]
    assert ph.seek is not None and ph.seek.count == 3 * 100
    if not HAVE_MPL:
        return
    names = sorted(os.path.basename(p) for p in plots.plot_all(run, str(tmp_path / "p")))
    assert names == ["heatmap-0-sdb.png", "seek-0-sdb.png", "sync-threads.png",
                     "throughput.png"]


@pytest.mark.parametrize("jobs", [32, 4])
def test_sync_plot_shows_each_threads_call_latency(figs, jobs):
    """Below the calls/s: each interval's p99 of the thread's calls, in ms (the run's fio
    thread: every call 300 us), nothing drawn where it made no call."""
    if figs is None:
        return
    fig = figs[jobs]["sync-threads"]
    (ax,) = _axes_by_ylabel(fig, "call latency p99 (ms)")
    lines = [line for line in ax.get_lines() if line.get_gid() == "sync-p99"]
    assert len(lines) == 1, lines           # the run's one syncing thread
    ys = [float(y) for y in lines[0].get_ydata()]
    drawn = [y for y in ys if not math.isnan(y)]
    assert drawn and all(abs(y - 0.3) <= 0.3 * 2 ** -4 for y in drawn), sorted(set(drawn))
    (rate,) = _axes_by_ylabel(fig, "sync calls/s")
    calls = [float(y) for y in rate.get_lines()[0].get_ydata()]
    assert len(calls) == len(ys)
    assert all(math.isnan(y) == (c == 0 or math.isnan(c)) for c, y in zip(calls, ys)), \
        list(zip(calls, ys))
