"""compare on synthetic runs, and the t distribution it relies on."""
from __future__ import annotations

import random

import pytest
from fakes import make_update

from iopulse.compare import compare
from iopulse.record import RunWriter, load
from iopulse.stats import student, t_quantile, t_two_sided_p, welch
from iopulse._pb import iopulse_pb2 as pb


@pytest.mark.parametrize("t, df, p", [(2.0, 10, 0.073388), (4.303, 2, 0.05), (1.96, 1e6, 0.05),
                                      (0.0, 5, 1.0), (12.706, 1, 0.05)])
def test_t_distribution(t, df, p):
    assert t_two_sided_p(t, df) == pytest.approx(p, abs=2e-4)


@pytest.mark.parametrize("df, t", [(1, 12.7062), (2, 4.3027), (6, 2.4469), (1e6, 1.9600)])
def test_t_quantile_is_the_inverse(df, t):
    assert t_quantile(0.05, df) == pytest.approx(t, abs=1e-4)
    assert t_two_sided_p(t_quantile(0.01, df), df) == pytest.approx(0.01, rel=1e-9)


def test_student_and_welch_match_the_textbook():
    # scipy.stats.ttest_ind(a, b) and ttest_ind(a, b, equal_var=False)
    t, df, p, se = student([1, 2, 3, 4], [2, 3, 4, 5, 9])
    assert (t, df, p) == pytest.approx((1.416280, 7, 0.199619), abs=1e-5)
    assert se == pytest.approx(2.1 / t, rel=1e-9)
    t, df, p = welch([1, 2, 3, 4], [2, 3, 4, 5, 9])
    assert (t, df, p) == pytest.approx((1.5329, 5.9615, 0.17650), abs=1e-4)
    assert welch([1], [2, 3]) is None and student([1], [2, 3]) is None
    assert student([5, 5], [5, 5])[2] == 1.0 and student([5, 5], [6, 6])[2] == 0.0
    # a floor for the pooled variance: identical runs still leave the values' resolution
    assert student([5, 5], [6, 6], min_var=0.25)[2] == pytest.approx(0.1835, abs=1e-4)


def make_run(path: str, iops: float, rnd: random.Random, seconds: int = 8) -> str:
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/x"})
        w.write_info(0, pb.Info(hostname="node").SerializeToString())
        for s in range(1, seconds + 1):
            u = make_update(s, with_thread=False)
            n = max(1, int(rnd.gauss(iops, iops * 0.03)))
            u.devices[0].write.ios = n
            if s == 1:
                u.phases.add(name="job", id=1, labels={"iodepth": str(int(iops))},
                             monotonic_ns=u.end_monotonic_ns, realtime_ns=u.end_realtime_ns)
            if s == seconds:
                u.phases.add(name="job", id=2, end=True, begin_id=1,
                             monotonic_ns=u.end_monotonic_ns, realtime_ns=u.end_realtime_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end"})
    return path


def test_flags_a_change_and_not_repeats(tmp_path):
    rnd = random.Random(3)
    a = [load(make_run(str(tmp_path / f"a{i}"), 1000, rnd)) for i in range(3)]
    b = [load(make_run(str(tmp_path / f"b{i}"), 1500, rnd)) for i in range(2)]
    ch = {c.metric: c for c in compare(a[:2], b)}
    assert ch["iops"].basis == "runs" and ch["iops"].flagged and ch["iops"].better
    assert ch["iops"].change_pct == pytest.approx(50, abs=5)
    assert ch["iops"].labels_changed == {"iodepth": ("1000", "1500")}
    assert not [c for c in compare(a[:2], a[1:]) if c.flagged]
    one = {c.metric: c for c in compare(a[:1], b[:1])}
    assert one["iops"].basis == "intervals" and not one["iops"].flagged
    assert one["iops"].p < 0.001 and one["iops"].change_pct > 40   # shown, not flagged


def test_report_rows_per_osd(tmp_path):
    """An OSD with a data and a DB device gets a row merging both, exactly."""
    from iopulse.report.metrics import phase_rows

    p = str(tmp_path / "osd")
    with RunWriter(p) as w:
        w.write_json({"type": "header", "format": 1})
        w.write_info(0, pb.Info(hostname="node").SerializeToString())
        for s in (1, 2):
            u = make_update(s, devices=("sdb", "nvme0n1"), with_thread=False)
            u.devices[1].osd_id, u.devices[1].osd_role = 3, "block.db"
            u.phases.add(name="fill", id=s, end=s == 2, begin_id=1 if s == 2 else 0,
                         monotonic_ns=u.end_monotonic_ns - (10**9 if s == 1 else 0),
                         realtime_ns=u.end_realtime_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end"})
    rows, _ = phase_rows(load(p))
    by = {r.device: r for r in rows}
    assert set(by) == {"sdb", "nvme0n1", "osd.3 (all devices)"}
    assert by["osd.3 (all devices)"].values["writes"] == by["sdb"].values["writes"] + \
        by["nvme0n1"].values["writes"] == 400
    assert by["nvme0n1"].osd == "osd.3 block.db"
