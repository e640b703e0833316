"""compare judges the sync threads too: calls/s and latency p50/p99 of each thread name (and
OSD), matched across runs whatever their tids, each run's threads of one name merged."""
from __future__ import annotations

import pathlib

from fakes import hist, make_update, write_phase_run

from iopulse.analysis.compare import SYNC, comparison
from iopulse.record import load


def _write(path: str, n: int, slow: bool) -> None:
    """Three intervals in phase 'kv': kv_sync of osd.3 (a new tid each run) and two fio
    threads; the other side's kv_sync calls take 3x as long."""
    updates = []
    for seq in range(1, 5):
        u = make_update(seq)
        t = u.threads[0]
        t.tid = 5000 + 100 * n           # tids differ per run
        t.latency_ns.CopyFrom(hist([(1_500_000 if slow else 500_000) + 1000 * n] * 41 +
                                   [4_000_000]))
        for k in range(2):
            f = u.threads.add(pid=7000 + k, tid=7000 + k + 10 * n, comm="fio",
                              process="fio", osd_id=-1, device="sdb", fdatasync=10)
            f.latency_ns.CopyFrom(hist([200_000 + 500 * n] * 10))
        updates.append(u)
    write_phase_run(path, [updates], "kv", ("rados", "bench"))


def test_sync_threads_matched_by_name_and_judged(tmp_path: pathlib.Path) -> None:
    runs = []
    for n in range(6):
        p = str(tmp_path / f"r{n}.iopulse")
        _write(p, n, slow=n >= 3)
        runs.append(load(p))
    cmp = comparison(runs[:3], runs[3:])
    sync = {(c.device, c.stat): c for c in cmp.changes if c.op == SYNC}
    assert set(sync) == {("bstore_kv_sync osd.3", s) for s in ("calls_per_s", "p50", "p99")} | \
        {("fio", s) for s in ("calls_per_s", "p50", "p99")}, sorted(sync)
    kv = sync[("bstore_kv_sync osd.3", "p50")]
    assert not kv.only and len(kv.base) == 3 and len(kv.other) == 3, kv
    assert kv.flagged and kv.better is False, (kv.verdict, kv.base, kv.other)
    assert kv.metric == "sync_p50"
    # the same rate on both sides: matched (not "base only"/"other only"), not flagged
    calls = sync[("bstore_kv_sync osd.3", "calls_per_s")]
    assert not calls.only and not calls.flagged, calls.verdict
    # the two fio threads of a run are one 'fio': 20 calls per interval
    fio = sync[("fio", "calls_per_s")]
    assert abs(fio.base[0] / calls.base[0] - 20 / 42) < 1e-9, (fio.base, calls.base)
    assert not fio.flagged
    f = sync[("fio", "p50")]
    assert not f.flagged, (f.verdict, f.base, f.other)
