"""compare on recordings built IO by IO, whose figures are known: queue depth 1 against 16,
two runs a side, on a loop device over a disk that another tenant also uses. And the t
distribution the verdicts rely on."""
from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from iopulse._pb import iopulse_pb2 as pb
from iopulse.cli import main
from iopulse.analysis.compare import (BASE_ONLY, BETTER, NOISE, NOT_DUT, TOO_FEW, OTHER_ONLY, SMALL, WORSE,
                             SameRun, comparison, compare)
from iopulse.histogram import Histogram
from iopulse.record import RunWriter, load
from iopulse.analysis.metrics import phase_rows
from iopulse.analysis.stats import student, t_quantile, t_two_sided_p, welch

K = 5
T0_REAL = 1_763_800_000_000_000_000
T0_MONO = 500_000_000_000
DEVICES = ("loop0", "vda", "sdc")


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


# ---- recordings built IO by IO ---------------------------------------------------------------

@dataclass
class Load:
    """One device's IOs in one phase of one run: (queue wait, service) ns each."""
    read: list[tuple[int, int]] = field(default_factory=list)
    write: list[tuple[int, int]] = field(default_factory=list)
    size: int = 4096


@dataclass
class PhaseLoad:
    name: str
    labels: dict[str, str]
    seconds: float
    devices: dict[str, Load]


def _lat(rnd: random.Random, n: int, qwait: int, svc: int, sigma: float = 0.12
         ) -> list[tuple[int, int]]:
    return [(int(rnd.uniform(0.8, 1.1) * qwait), int(rnd.lognormvariate(math.log(svc), sigma)))
            for _ in range(n)]


def _hist(values: list[int]) -> Any:
    return Histogram.from_values(K, values).to_pb()


def write_run(path: str, phases: list[PhaseLoad], scheduler: str = "none",
              session: str = "") -> str:
    """The phases one after the other, each two intervals long (its IOs split between them),
    between an idle interval before and after, as iopulsed would have sent them."""
    info = pb.Info(version="t", hostname="node1", kernel="6.12.0")
    info.histogram.precision = K
    for n, name in enumerate(DEVICES):
        d = info.devices.add(name=name, major=7 if name == "loop0" else 8, minor=n, present=True,
                             osd_id=-1, model="/srv/disk.img" if name == "loop0" else "QEMU")
        d.settings.CopyFrom(pb.DeviceSettings(
            scheduler=scheduler if name == "loop0" else "mq-deadline",
            iosched={"fifo_batch": "16", "read_expire": "500"}
            if name != "loop0" or scheduler == "mq-deadline" else {}, nr_requests=128,
            queue_depth=-1, read_ahead_kb=128, wbt_lat_usec=-1, max_sectors_kb=1280,
            nomerges=0, rotational=0))
    intervals: list[tuple[float, dict[str, Load], list[dict[str, Any]]]] = \
        [(1.0, {}, [{"name": phases[0].name, "id": 1, "labels": phases[0].labels}])]
    for i, ph in enumerate(phases):
        for half in (0, 1):
            loads = {d: Load(x.read[half::2], x.write[half::2], x.size)
                     for d, x in ph.devices.items()}
            marks = []
            if half:
                marks.append({"name": ph.name, "id": 2 * i + 2, "end": True,
                              "begin_id": 2 * i + 1})
                if i + 1 < len(phases):
                    nxt = phases[i + 1]
                    marks.append({"name": nxt.name, "id": 2 * i + 3, "labels": nxt.labels})
            intervals.append((ph.seconds / 2, loads, marks))
    intervals.append((1.0, {}, []))
    real, mono = T0_REAL, T0_MONO
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "command": ["fio", "jobs.fio"],
                      **({"session": session} if session else {})})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, info.SerializeToString())
        for seq, (secs, loads, marks) in enumerate(intervals, 1):
            ns = int(secs * 1e9)
            u = pb.Update(seq=seq, first_seq=seq, merged=1, precision=K,
                          start_realtime_ns=real, end_realtime_ns=real + ns,
                          start_monotonic_ns=mono, end_monotonic_ns=mono + ns)
            real, mono = real + ns, mono + ns
            for n, dev in enumerate(DEVICES):
                d = u.devices.add(name=dev, major=8, minor=n, osd_id=-1)
                x = loads.get(dev)
                for op in ("read", "write"):
                    lat = getattr(x, op) if x else []
                    if not lat:
                        continue
                    s = getattr(d, op)
                    s.ios, s.bytes = len(lat), len(lat) * x.size
                    s.queue_wait_ns.CopyFrom(_hist([q for q, _ in lat]))
                    s.service_ns.CopyFrom(_hist([v for _, v in lat]))
                    s.total_ns.CopyFrom(_hist([q + v for q, v in lat]))
                    s.size_bytes.CopyFrom(_hist([x.size] * len(lat)))
            for m in marks:
                u.phases.add(name=m["name"], id=m["id"], end=m.get("end", False),
                             begin_id=m.get("begin_id", 0), labels=m.get("labels", {}),
                             realtime_ns=u.end_realtime_ns, monotonic_ns=u.end_monotonic_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})
    return path


def qd_run(path: str, qd: int, seed: int, session: str = "") -> tuple[str, list[PhaseLoad]]:
    """One run of the benchmark at queue depth 1 or 16 on loop0, whose file lies on vda.

    The phases: warmup (QD1 runs only), write-fill and seqread (the same at either depth),
    randread (iodepth=qd: at 16, 3x the IOPS and 4x the service time; queue wait 2 -> 13 us),
    verify (QD16 runs only). vda carries loop0's IO again, and during the QD1 runs another
    tenant's slow writes; sdc has IO in the randread of the QD16 runs only."""
    rnd = random.Random(seed)
    jitter = lambda: rnd.uniform(0.97, 1.03)    # noqa: E731 - run-to-run spread of the load
    out: list[PhaseLoad] = []

    def stacked(lat: list[tuple[int, int]], write: bool, size: int,
                tenant: list[tuple[int, int]]) -> dict[str, Load]:
        # on vda, a tenant's writes delay one in twenty of loop0's IOs by 3-5 ms
        under = [(q, int(s * 0.9) + (rnd.randint(3_000_000, 5_000_000)
                                     if tenant and rnd.random() < 0.05 else 0))
                 for q, s in lat]
        if write:
            return {"loop0": Load(write=lat, size=size), "vda": Load(write=under + tenant,
                                                                      size=size)}
        return {"loop0": Load(read=lat, size=size), "vda": Load(read=under, write=tenant,
                                                                 size=size)}

    def tenant() -> list[tuple[int, int]]:
        return _lat(rnd, int(300 * jitter()), 50_000, 5_000_000, 0.3) if qd == 1 else []

    if qd == 1:
        out.append(PhaseLoad("warmup", {"rw": "write"}, 1.0,
                             stacked(_lat(rnd, 200, 2000, 60_000), True, 4096, [])))
    fill = int(1000 * 2.0 * jitter())
    out.append(PhaseLoad("write-fill", {"rw": "write", "bs": "128k", "iodepth": "4"}, 2.0,
                         stacked(_lat(rnd, fill, 3000, 300_000, 0.1), True, 131072, tenant())))
    n = int((1000 if qd == 1 else 3000) * 2.0 * jitter())
    rr = _lat(rnd, n, 2000 if qd == 1 else 12_000, 150_000 if qd == 1 else 600_000)
    loads = stacked(rr, False, 4096, tenant())
    if qd == 16:
        loads["sdc"] = Load(write=_lat(rnd, 40, 1000, 80_000))
    out.append(PhaseLoad("randread", {"rw": "randread", "bs": "4k", "iodepth": str(qd)}, 2.0,
                         loads))
    seq = int(500 * 2.0 * jitter())
    out.append(PhaseLoad("seqread", {"rw": "read", "bs": "128k", "iodepth": "1"}, 2.0,
                         stacked(_lat(rnd, seq, 2000, 400_000, 0.1), False, 131072, tenant())))
    if qd == 16:
        out.append(PhaseLoad("verify", {"rw": "read"}, 1.0,
                             stacked(_lat(rnd, 300, 2000, 100_000), False, 4096, [])))
    write_run(path, out, scheduler="none" if qd == 1 else "mq-deadline", session=session)
    return path, out


@pytest.fixture(scope="module")
def qd_runs(tmp_path_factory) -> dict[str, tuple[str, list[PhaseLoad]]]:
    d = tmp_path_factory.mktemp("qd")
    return {name: qd_run(str(d / f"{name}.iopulse"), qd, seed) for name, qd, seed in
            (("qd1-a", 1, 11), ("qd1-b", 1, 12), ("qd16-a", 16, 13), ("qd16-b", 16, 14))}


def _runs(qd_runs: dict, *names: str) -> list:
    return [load(qd_runs[n][0]) for n in names]


def _truth(ph: PhaseLoad, dev: str, op: str) -> dict[str, float]:
    """A phase's figures as put in: IOPS, and the total p99 from the exact values and from
    the daemon's buckets of them."""
    lat = getattr(ph.devices[dev], op)
    totals = [q + s for q, s in lat]
    exact = sorted(totals)[max(1, math.ceil(0.99 * len(totals))) - 1]
    return {"iops": len(lat) / ph.seconds, "p99_exact": exact,
            "p99": Histogram.from_values(K, totals).percentile(99)}


def _by(changes, phase: str, device: str, metric: str):
    (c,) = [c for c in changes if (c.phase, c.device, c.metric) == (phase, device, metric)]
    return c


def test_the_device_under_tests_change_is_flagged_and_first(qd_runs):
    cmp = comparison(_runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b"))
    rr = next(p for p in cmp.phases if p.name == "randread")
    # loop0 is under test although vda (its IO again, and the tenant's) carried more IOs
    assert rr.under_test == [("", "loop0")]
    assert rr.labels_changed == {"iodepth": ("1", "16")}
    ch = [c for c in cmp.changes if c.phase == "randread"]
    assert ch[0].device == "loop0" and ch[0].metric == "read_iops"
    assert [c.device for c in ch] == sorted((c.device for c in ch),
                                            key=["loop0", "vda", "sdc"].index)
    # each run's value is the phase's figure as put in, in run order
    p99 = _by(ch, "randread", "loop0", "read_total_p99")
    want = [_truth(next(p for p in qd_runs[n][1] if p.name == "randread"), "loop0", "read")
            for n in ("qd1-a", "qd1-b", "qd16-a", "qd16-b")]
    assert p99.base + p99.other == [w["p99"] for w in want]
    for got, w in zip(p99.base + p99.other, want):
        assert got == pytest.approx(w["p99_exact"], rel=0.04)    # one bucket of precision 5
    iops = _by(ch, "randread", "loop0", "read_iops")
    assert iops.base + iops.other == pytest.approx([w["iops"] for w in want], rel=1e-12)
    # 4x the total p99: flagged, worse; 3x the IOPS: flagged, better
    assert p99.change_pct == pytest.approx(300, abs=30) and p99.p < 0.05
    assert (p99.flagged, p99.verdict, p99.better) == (True, WORSE, False)
    assert (iops.flagged, iops.verdict) == (True, BETTER)
    assert p99.detectable_pct < p99.change_pct
    # the queue wait went 2 -> 13 us, 6x its own value but a few percent of the total p99:
    # the absolute change is shown, the verdict is judged on the total
    q = _by(ch, "randread", "loop0", "read_qwait_p99")
    assert q.change_pct > 400 and 5_000 < q.delta < 20_000
    assert q.judged_on == "total_p99" and 0 < q.judged_pct < 10
    assert not q.flagged and q.verdict == SMALL and q.p < 0.05
    # the backing disk: the tenant's writes made its p99 far higher in both QD1 runs, a
    # consistent difference (p < 0.05), but not the workload's: shown, never flagged
    v = _by(ch, "randread", "vda", "read_total_p99")
    assert v.change_pct < -50 and v.p < 0.05 and not v.flagged and v.verdict == NOT_DUT
    assert _by(ch, "randread", "vda", "write_iops").verdict == BASE_ONLY
    assert not [c for c in cmp.changes if c.flagged and c.device != "loop0"]
    # a device with IO on one side only is listed as such
    s = [c for c in ch if c.device == "sdc"]
    assert s and {c.verdict for c in s} == {OTHER_ONLY} and all(not c.base for c in s)


def test_repeats_of_one_configuration_are_not_flagged(qd_runs, tmp_path):
    """write-fill and seqread ran alike on both sides (within 3%); nothing there is flagged,
    and every change is smaller than what these runs could detect or below the minimum."""
    cmp = comparison(_runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b"))
    same = [c for c in cmp.changes if c.phase in ("write-fill", "seqread")
            and c.device == "loop0"]
    assert same and not [c for c in same if c.flagged]
    for c in same:
        assert c.verdict in (NOISE, SMALL), c
        if c.verdict == NOISE:
            assert abs(c.judged_pct) <= c.detectable_pct * 1.05, c
    # a, b against copies of a, b (files made without a recording session, so the copies
    # count as other runs): nothing flagged anywhere
    import shutil

    copies = [load(shutil.copy(qd_runs[n][0], str(tmp_path / f"{n}-copy.iopulse")))
              for n in ("qd1-a", "qd1-b")]
    again = compare(_runs(qd_runs, "qd1-a", "qd1-b"), copies)
    assert not [c for c in again if c.flagged]


def test_run_order_one_side_phases_and_settings(qd_runs):
    cmp = comparison(_runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b"))
    assert [(p.name, p.only) for p in cmp.phases] == [
        ("warmup", "base"), ("write-fill", ""), ("randread", ""), ("seqread", ""),
        ("verify", "other")]
    names = []
    for c in cmp.changes:
        if c.phase not in names:
            names.append(c.phase)
    assert names == ["warmup", "write-fill", "randread", "seqread", "verify"]
    assert {c.verdict for c in cmp.changes if c.phase == "verify"} == {OTHER_ONLY}
    assert [str(s) for s in cmp.settings] == ["loop0.iosched.fifo_batch (none) -> 16",
                                              "loop0.iosched.read_expire (none) -> 500",
                                              "loop0.scheduler none -> mq-deadline"]


def test_device_and_exclude(qd_runs):
    base, other = _runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b")
    only = comparison(base, other, devices=["vd*"])
    assert {c.device for c in only.changes} == {"vda"}
    # selected devices are the devices under test: the tenant's change is judged now
    v = _by(only.changes, "randread", "vda", "read_total_p99")
    assert v.under_test and v.flagged and v.verdict == BETTER
    rest = comparison(base, other, exclude=["loop0", "sdc"])
    assert {c.device for c in rest.changes} == {"vda"}
    assert [str(s) for s in rest.settings] == []          # loop0's scheduler left out too


def test_one_run_a_side_is_the_report_and_judges_nothing(qd_runs):
    a, b = _runs(qd_runs, "qd1-a", "qd16-a")
    cmp = comparison([a], [b])
    assert cmp.changes and not [c for c in cmp.changes if c.flagged or c.p is not None]
    assert {c.verdict for c in cmp.changes if not c.only} == {TOO_FEW}
    for run, side in ((a, "base"), (b, "other")):
        rows, _ = phase_rows(run)
        rep = {(r.phase.name, r.device): r for r in rows}
        n = 0
        for c in cmp.changes:
            vals = getattr(c, side)
            if not vals:
                continue
            got = rep[(c.phase, c.device)].ops[c.op][c.spec.figure]
            assert vals == [float(got)], (c.metric, side)
            n += 1
        assert n > 50


def _compare(qd_runs, capsys, *extra: str, base=("qd1-a", "qd1-b"),
             other=("qd16-a", "qd16-b")) -> str:
    argv = ["compare", *[qd_runs[n][0] for n in base], "--", *[qd_runs[n][0] for n in other],
            *extra]
    assert main(argv) == 0
    return capsys.readouterr().out


def test_table_lists_runs_spread_settings_and_verdicts(qd_runs, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = _compare(qd_runs, capsys)
    lines = out.splitlines()
    assert ("settings that differ (base -> other):\n  loop0.scheduler none -> mq-deadline\n"
            "    its tunables: (none) -> fifo_batch=16 read_expire=500\n") in out
    assert "Student's t-test" in out and "2 degrees of freedom" in out
    heads = [x for x in lines if x.startswith("device")]
    assert heads and re.split(r"\s{2,}", heads[0]) == [
        "device", "op", "metric", "base", "base runs", "other", "other runs", "change",
        "change %", "detectable", "p", "verdict"]
    phases = [x.split(";")[0].strip() for x in lines if x.startswith("phase ")]
    assert phases == ["phase warmup", "phase write-fill", "phase randread", "phase seqread",
                      "phase verify"]
    block = out[out.index("phase randread"):out.index("phase seqread")]
    assert "iodepth 1 -> 16" in block and "under test: loop0" in block
    rows = [x for x in block.splitlines() if x.startswith(("loop0", "vda", "sdc"))]
    assert rows[0].startswith("loop0") and "IOPS" in rows[0]
    p99 = next(x for x in rows if x.startswith("loop0") and "total p99 us" in x)
    cells = re.split(r"\s{2,}", p99)
    assert cells[-1] == "worse" and cells[8].startswith("+") and cells[8].endswith("%")
    assert len(cells[4].split()) == 2 and len(cells[6].split()) == 2   # each run's value
    qw = next(x for x in rows if x.startswith("loop0") and "qwait p99 us" in x)
    assert "of total" in qw and qw.rstrip().endswith("small")
    assert [x for x in rows if x.startswith("vda")] and \
        all(x.rstrip().endswith(("not DUT", "base only")) for x in rows if x.startswith("vda"))
    assert "only in the base runs (2 of 2)" in out and "only in the other runs (2 of 2)" in out
    assert "verdicts: " in out and "within noise:" in out


def test_json_markdown_and_html(qd_runs, capsys, tmp_path):
    doc = json.loads(_compare(qd_runs, capsys, "--format", "json"))
    assert doc["tested"] and doc["settings"][-1] == \
        {"host": "", "key": "loop0.scheduler", "base": "none", "other": "mq-deadline"}
    c = next(c for c in doc["changes"] if (c["phase"], c["device"], c["metric"]) ==
             ("randread", "loop0", "read_total_p99"))
    assert c["figure"] == "total_p99_ns" and c["unit"] == "ns" and c["verdict"] == "worse"
    assert len(c["base"]) == 2 and c["base_min"] <= c["base_mean"] <= c["base_max"]
    assert c["delta"] == pytest.approx(c["other_mean"] - c["base_mean"])
    assert [p["phase"] for p in doc["phases"]][:2] == ["warmup", "write-fill"]
    md = _compare(qd_runs, capsys, "--format", "markdown")
    assert "| device | op | metric | base | base runs |" in md and "**worse**" in md
    assert "\n  - loop0.scheduler none -> mq-deadline\n" in md      # nested under its heading
    page = tmp_path / "c.html"
    _compare(qd_runs, capsys, "--format", "html", "-o", str(page))
    text = page.read_text()
    assert "<th class=\"\">verdict</th>" in text and "class=\"worse\"" in text


def test_one_run_a_side_on_the_terminal(qd_runs, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = _compare(qd_runs, capsys, base=("qd1-a",), other=("qd16-a",))
    assert "flagged: 0 of " in out and "none judged: one run on a side" in out
    heads = next(x for x in out.splitlines() if x.startswith("device"))
    assert re.split(r"\s{2,}", heads) == ["device", "op", "metric", "base", "other", "change",
                                          "change %", "detectable", "p", "verdict"]
    row = next(x for x in out.splitlines() if x.startswith("loop0   read   IOPS"))
    assert row.rstrip().endswith("too few")


def test_device_option_that_matches_nothing_is_a_usage_error(qd_runs, capsys):
    argv = ["compare", qd_runs["qd1-a"][0], "--", qd_runs["qd16-a"][0], "--device", "nvme*"]
    assert main(argv) == 2
    assert "no device with IO matches --device nvme*" in capsys.readouterr().err


def test_a_run_given_twice_is_refused(qd_runs, capsys, tmp_path):
    """The same file twice, or a copy of one recording (the same session), counted as two
    runs made every change significant (12 of 12 flagged, p < 0.001): refused, exit 2."""
    import shutil

    a1, a2 = (qd_run(str(tmp_path / f"s{i}.iopulse"), 1, 20 + i, f"record-s{i}")[0]
              for i in (1, 2))
    copy = str(tmp_path / "copy-of-s1.iopulse")
    shutil.copy(a1, copy)
    b1, b2 = qd_runs["qd16-a"][0], qd_runs["qd16-b"][0]
    cases = [([a1, a1], [b1, b2], "the same file"),
             ([a1, copy], [b1, b2], "the same recording (session record-s1)"),
             ([a1, a2], [b1, b1], "the same file"),
             ([a1, a2], [a2, b1], "the same file")]
    for base, other, how in cases:
        assert main(["compare", *base, "--", *other]) == 2, (base, other)
        err = capsys.readouterr().err
        assert how in err and "give each run once" in err, err
    with pytest.raises(SameRun):
        comparison([load(a1), load(copy)], _runs(qd_runs, "qd16-a", "qd16-b"))
    # alone on each side nothing is judged (its values are the report's): said, not refused
    assert main(["compare", a1, "--", copy]) == 0
    out = capsys.readouterr().out
    assert "the same recording (session record-s1): every change is 0" in out, out
    # distinct recordings still compare
    assert main(["compare", a1, a2, "--", b1, b2]) == 0
    capsys.readouterr()


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _in_a_terminal(argv: list[str], columns: int) -> str:
    """What argv prints on a pseudo-terminal of that many columns, without colours."""
    import fcntl
    import os
    import select
    import struct
    import subprocess
    import sys
    import termios

    from test_cli import SRC

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PYTHONPATH=str(SRC), TERM="xterm-256color")
    p = subprocess.Popen([sys.executable, "-m", "iopulse", *argv], stdin=slave, stdout=slave,
                         stderr=slave, env=env, close_fds=True)
    os.close(slave)
    buf = b""
    try:
        while True:
            r, _, _ = select.select([master], [], [], 30)
            if not r:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:         # the other end closed: the command is done
                break
            if not chunk:
                break
            buf += chunk
        assert p.wait(30) == 0, buf.decode(errors="replace")[-2000:]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
    return ANSI.sub("", buf.decode()).replace("\r", "")


@pytest.mark.parametrize("columns", [80, 120, 180])
def test_every_column_shows_in_a_terminal(qd_runs, columns):
    argv = ["compare", qd_runs["qd1-a"][0], qd_runs["qd1-b"][0], "--", qd_runs["qd16-a"][0],
            qd_runs["qd16-b"][0]]
    text = _in_a_terminal(argv, columns)
    lines = text.splitlines()
    assert "Traceback" not in text and "…" not in text
    too_wide = [x for x in lines if len(x) > columns]
    assert not too_wide, too_wide
    # the header of the table, folded or not, names every column
    first = next(i for i, x in enumerate(lines) if x.startswith("device  op"))
    head = lines[first] + "  " + "  ".join(
        x.strip() for x in lines[first + 1:first + 3] if x.startswith(" "))
    cols = re.split(r"\s{2,}", head.strip())
    assert sorted(cols) == sorted(["device", "op", "metric", "base", "base runs", "other",
                                   "other runs", "change", "change %", "detectable", "p",
                                   "verdict"]), head
    assert (columns >= 180) == (not lines[first + 1].startswith("    ")), "folded or not"
    # every cell of a row is there: the DUT's total p99 in randread, each run's value
    cmp = comparison(_runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b"))
    c = _by(cmp.changes, "randread", "loop0", "read_total_p99")
    block = text[text.index("phase randread"):text.index("phase seqread")]
    at = block.index("loop0   read   total p99 us")
    record = block[at:].split("\nloop0")[0]
    for v in c.base + c.other:
        assert f"{v / 1000:.0f}" in record, (v, record)
    for cell in ("+300%", "<0.001", "worse", "±3.9%"):
        assert cell in record, (cell, record)


def test_settings_that_differ_within_a_side_are_noted(qd_runs):
    cmp = comparison(_runs(qd_runs, "qd16-a", "qd1-a"), _runs(qd_runs, "qd16-b"))
    assert cmp.settings == []           # the first runs of the sides were set alike
    (note,) = cmp.notes
    assert note.startswith("the base runs differ among themselves: ")
    assert note.endswith("loop0.scheduler mq-deadline -> none")


def test_the_flagged_count_is_of_the_rows_shown(qd_runs, capsys, monkeypatch):
    """'flagged: N of M' counts what the table shows; flagged rows it leaves out (read and
    write together, shown with --all) are counted apart, and --all shows them all."""
    monkeypatch.setenv("COLUMNS", "200")

    def flagged(*extra: str) -> tuple[int, int, int]:
        """(the header's count, the flagged rows shown, the count said to be left out)"""
        out = _compare(qd_runs, capsys, *extra)
        m = re.search(r"^flagged: (\d+) of \d+ changes judged", out, re.M)
        assert m, out
        rows = [x for x in out.splitlines() if x.rstrip().endswith((" better", " worse"))]
        more = re.search(r"; (\d+) more among the rows shown with --all", out)
        return int(m.group(1)), len(rows), int(more.group(1)) if more else 0

    shown, rows, hidden = flagged()
    assert shown == rows > 0, (shown, rows)
    total, rows_all, none = flagged("--all")
    assert total == rows_all == shown + hidden and none == 0, (total, rows_all, shown, hidden)


def test_devices_whose_settings_differ_are_under_test():
    """One fast device and three slow ones, all four retuned: the busiest alone is under test
    by its IOs, the three others too because their settings differ between the sides; a
    device with no IO in the phase or no change stays out."""
    from iopulse.analysis.compare import _under_test

    w = {("", "loop1"): 4000.0, ("", "loop2"): 1000.0, ("", "loop3"): 900.0,
         ("", "loop4"): 1100.0, ("", "vda"): 800.0, ("", "loop5"): 0.0}
    cls = {k: "loop" for k in w}
    cls[("", "vda")] = "disk"
    dut, why = _under_test(w, cls)
    assert dut == [("", "loop1")] and "settings" not in why
    dut, why = _under_test(w, cls, frozenset({"loop1", "loop2", "loop3", "loop4", "loop5"}))
    assert dut == [("", "loop1"), ("", "loop4"), ("", "loop2"), ("", "loop3")], dut
    assert why.endswith(", and those whose settings differ between the sides"), why


def test_the_retuned_device_is_under_test_in_the_runs(qd_runs, monkeypatch):
    """In the recorded runs loop0's scheduler differs between the sides (none ->
    mq-deadline): comparison() hands loop0, and only it, to every phase's choice of the
    devices under test as a device whose settings differ, and it is under test wherever it
    has IO."""
    from iopulse.analysis import compare as mod

    seen = []
    real = mod._under_test

    def spy(weights, classes, changed=frozenset(), named=frozenset()):
        seen.append(changed)
        return real(weights, classes, changed, named)

    monkeypatch.setattr(mod, "_under_test", spy)
    cmp = comparison(_runs(qd_runs, "qd1-a", "qd1-b"), _runs(qd_runs, "qd16-a", "qd16-b"))
    assert any(s.key == "loop0.scheduler" for s in cmp.settings), cmp.settings
    assert seen and all(c == frozenset({"loop0"}) for c in seen), seen
    for p in cmp.phases:
        if any(c.device == "loop0" and c.phase == p.name for c in cmp.changes):
            assert ("", "loop0") in p.under_test, (p.name, p.under_test, p.why)


def test_devices_retuned_alike_share_one_settings_line():
    """Four devices whose scheduler and tunables changed the same way are one line and one
    tunables line in compare's header; a device changed otherwise keeps its own."""
    from iopulse.analysis.compare import SettingChange
    from iopulse.cli.compare import settings_lines

    ch = []
    for dev in ("loop1", "loop2", "loop3", "loop4"):
        ch += [SettingChange("", f"{dev}.scheduler", "none", "mq-deadline"),
               SettingChange("", f"{dev}.iosched.fifo_batch", "", "16"),
               SettingChange("", f"{dev}.iosched.read_expire", "", "500")]
    ch += [SettingChange("", "sdb.scheduler", "mq-deadline", "bfq"),
           SettingChange("", "sdb.nr_requests", "64", "128")]
    assert settings_lines(ch) == [
        "scheduler none -> mq-deadline on 4 devices: loop1, loop2, loop3, loop4",
        "  their tunables: (none) -> fifo_batch=16 read_expire=500",
        "sdb.scheduler mq-deadline -> bfq",
        "sdb.nr_requests 64 -> 128"]


def test_false_discoveries_are_held_over_all_the_tests() -> None:
    """Benjamini-Hochberg over the changes tested on the devices under test: a lone p of
    0.03 among 20 tests is 'chance', not flagged; p 0.001 and 0.004 among them pass (0.004 <=
    2/20 x 0.05); the op 'all' rows (repeats of their ops) are not counted as tests."""
    from iopulse.analysis.compare import CHANCE, Change, _control_false_discoveries

    made = iter(range(1000))

    def change(p: float, flagged: bool, op: str = "write") -> Change:
        n = next(made)          # rows of other values: other tests
        c = Change("x", 0, "", "sdb", op, "iops", [1.0 + n, 1.1], [2.0, 2.1], under_test=True)
        c.p, c.flagged, c.verdict = p, flagged, "worse" if flagged else "within noise"
        return c

    lone = [change(0.03, True)] + [change(0.5, False) for _ in range(19)] + \
        [change(0.03, True, "all")]
    m, cut = _control_false_discoveries(lone, 0.05)
    assert (m, cut) == (20, None)
    assert [c.verdict for c in lone if c.p == 0.03] == [CHANCE, CHANCE]
    assert not any(c.flagged for c in lone)
    real = [change(0.001, True), change(0.004, True), change(0.03, True)] + \
        [change(0.5, False) for _ in range(17)]
    m, cut = _control_false_discoveries(real, 0.05)
    assert (m, cut) == (20, 0.004)
    assert [c.flagged for c in real[:3]] == [True, True, False]
    assert real[2].verdict == CHANCE
    # the same row in a group and in its job's phase (the same values) is one test
    twice = [change(0.001, True), change(0.004, True)]
    twice.append(Change("y", 0, "", "sdb", "write", "iops", list(twice[0].base),
                        list(twice[0].other), under_test=True))
    twice[-1].p, twice[-1].flagged = 0.001, True
    m, cut = _control_false_discoveries(twice, 0.05)
    assert (m, cut) == (2, 0.004)
