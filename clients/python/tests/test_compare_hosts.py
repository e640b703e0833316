"""compare --match: a one-host baseline against a two-host run matches by device name (each
name's rows of every host merged exactly) or by Ceph OSD; by host (the default) it cannot."""
from __future__ import annotations

import pathlib

from fakes import make_update, write_phase_run

from iopulse.analysis.compare import comparison
from iopulse.analysis.metrics import merged_rows
from iopulse.record import RunWriter, load

HOSTS = ("node0", "node1")


def _write(path: str, hosts: int, bump: int) -> None:
    """Phase 'p' of three intervals on each host; sdb (osd.3 block) and sdc on every host."""
    per_host = []
    for _ in range(hosts):
        updates = [make_update(seq, devices=("sdb", "sdc")) for seq in range(1, 5)]
        for u in updates:
            for d in u.devices:
                d.write.ios += bump
        per_host.append(updates)
    write_phase_run(path, per_host, "p", ("rados", "bench"))


def _runs(tmp_path: pathlib.Path) -> tuple[list, list]:
    base, other = [], []
    for n in range(2):
        _write(str(tmp_path / f"b{n}.iopulse"), 1, n)
        _write(str(tmp_path / f"o{n}.iopulse"), 2, n)
        base.append(load(str(tmp_path / f"b{n}.iopulse")))
        other.append(load(str(tmp_path / f"o{n}.iopulse")))
    return base, other


def test_by_host_a_one_host_baseline_meets_nothing_of_a_two_host_run(tmp_path) -> None:
    base, other = _runs(tmp_path)
    cmp = comparison(base, other)
    assert cmp.changes and all(c.only for c in cmp.changes if c.op != "sync")


def test_by_device_the_hosts_rows_of_a_name_are_merged_and_matched(tmp_path) -> None:
    base, other = _runs(tmp_path)
    rows = {r.device: r for r in merged_rows(other[0], by="device")}
    single = {r.device: r for r in merged_rows(base[0], by="device")}
    assert rows["sdb"].ops["write"]["ios"] == 2 * single["sdb"].ops["write"]["ios"]
    cmp = comparison(base, other, match="device")
    iops = {(c.device, c.op): c for c in cmp.changes if c.stat == "iops"}
    w = iops[("sdb", "write")]
    assert not w.only and w.flagged and w.better, (w.verdict, w.base, w.other)
    assert abs(w.other_mean / w.base_mean - 2) < 0.02, (w.base, w.other)


def test_by_osd_an_osds_devices_on_any_host_are_one_row(tmp_path) -> None:
    base, other = _runs(tmp_path)
    rows = merged_rows(other[0], by="osd")
    assert [(r.device, r.osd) for r in rows] == [("osd.3", "all devices"),
                                                 ("osd.*", "data devices")], rows
    # one host has one data device: no row of them all
    assert [r.device for r in merged_rows(base[0], by="osd")] == ["osd.3"]
    cmp = comparison(base, other, match="osd")
    only = {c.device: c.only for c in cmp.changes if c.op != "sync"}
    assert only == {"osd.3": "", "osd.*": "other"}, only


def test_a_host_missing_on_one_side_is_not_called_unrecorded(tmp_path) -> None:
    """The runs' daemons report settings (Info with device settings): a host of the other
    side that the base lacks is said to be absent, not 'settings not recorded'."""
    from reportrun import _info
    paths = {}
    for side, hosts in (("b", ("node0",)), ("o", ("node0", "node1"))):
        p = str(tmp_path / f"{side}.iopulse")
        with RunWriter(p) as w:
            w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                          "command": ["true"]})
            for h, name in enumerate(hosts):
                w.write_json({"type": "agent", "host": h, "target": f"unix:/run/{name}"})
                w.write_info(h, _info(name))
            for h in range(len(hosts)):
                w.write_update(h, make_update(1, devices=("nvme0n1",)).SerializeToString())
            w.close({"type": "end", "status": "ok", "exit_code": 0})
        paths[side] = p
    cmp = comparison([load(paths["b"])], [load(paths["o"])], match="device")
    assert not any("not recorded" in n for n in cmp.notes), cmp.notes
    assert any(n.startswith("not in the base runs: host node1") for n in cmp.notes), cmp.notes
