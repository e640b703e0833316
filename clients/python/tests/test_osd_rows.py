"""The Ceph OSD rows of a report and a compare: an OSD's devices merged once each (the disk
under its LV or its partition, labelled with the OSD too, not added again), a host's OSD data
devices as one row, and every host's as the cluster's row."""
from __future__ import annotations

import pathlib

from fakes import make_update

from iopulse._pb.iopulse.v1 import iopulse_pb2 as pb
from iopulse.analysis.compare import comparison
from iopulse.analysis.metrics import CLUSTER, DATA_DEVICES, OSD_DATA, merged_rows, phase_rows
from iopulse.record import RunWriter, load
from iopulse.report.tables import markdown_report

# name: (osd offset on the host, role, writes per interval, what the daemon says of it)
DEVICES = {
    "dm-0": (0, "block", 100, {"dm_name": "ceph--a-osd--block", "slaves": ["sdb"],
                               "disks": ["sdb"]}),
    "sdb": (0, "block", 100, {"holders": ["dm-0"]}),
    "nvme0n1p1": (0, "block.db", 30, {"partition": True}),
    "nvme0n1": (0, "block.db", 30, {}),
    "sdc1": (1, "block", 50, {"partition": True}),
    "sdc": (1, "block", 50, {}),
}
INTERVALS = 3        # the phase's Updates on each host


def _info(host: str, first_osd: int) -> bytes:
    i = pb.Info(version="0.9.1", kernel="6.12.48+deb13-amd64", hostname=host)
    for n, (name, (off, role, _, more)) in enumerate(DEVICES.items()):
        i.devices.add(name=name, major=8, minor=n, model="", present=True,
                      osd_id=first_osd + off, osd_role=role, **more)
    return i.SerializeToString()


def _write(path: str, hosts: int, bump: int = 0) -> None:
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                      "command": ["rados", "bench"]})
        for h in range(hosts):
            w.write_json({"type": "agent", "host": h, "target": f"unix:/run/node{h}.sock"})
            w.write_info(h, _info(f"node{h}", 2 * h))
        for h in range(hosts):
            for seq in range(1, INTERVALS + 2):
                u = make_update(seq, devices=tuple(DEVICES), with_thread=False)
                for d in u.devices:
                    off, role, writes, _ = DEVICES[d.name]
                    d.osd_id, d.osd_role = 2 * h + off, role
                    d.write.ios, d.write.bytes = writes + bump, (writes + bump) * 4096
                edge = {"realtime_ns": u.end_realtime_ns, "monotonic_ns": u.end_monotonic_ns}
                if seq == 1:
                    u.phases.add(name="p", id=1, **edge)
                if seq == INTERVALS + 1:
                    u.phases.add(name="p", end=True, begin_id=1, id=2, **edge)
                w.write_update(h, u.SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})


def _writes(rows: list, host: str, device: str) -> int:
    (r,) = [r for r in rows if r.host == host and r.device == device]
    return int(r.ops["write"]["ios"])


def test_an_osd_row_adds_each_io_once(tmp_path: pathlib.Path) -> None:
    """osd.0 is dm-0 (its LV, over sdb) and nvme0n1p1 (its DB partition, on nvme0n1): the
    disks beneath carry the same IOs and are not added again; osd.1 has one device left
    (sdc1 over sdc), so no row of its own."""
    _write(str(tmp_path / "r.iopulse"), 1)
    rows, _ = phase_rows(load(str(tmp_path / "r.iopulse")))
    assert _writes(rows, "node0", "osd.0") == (100 + 30) * INTERVALS
    assert not [r for r in rows if r.device == "osd.1"]
    # the host's data devices: the block LV of osd.0 and the block partition of osd.1
    (data,) = [r for r in rows if r.device == OSD_DATA]
    assert (data.host, data.osd, data.device_class) == ("node0", DATA_DEVICES, "osd")
    assert data.ops["write"]["ios"] == (100 + 50) * INTERVALS
    assert not [r for r in rows if r.host == CLUSTER]      # one host: no cluster row


def test_the_cluster_row_merges_every_hosts_data_devices(tmp_path: pathlib.Path) -> None:
    _write(str(tmp_path / "r.iopulse"), 2)
    run = load(str(tmp_path / "r.iopulse"))
    rows, _ = phase_rows(run)
    for h in ("node0", "node1"):
        assert _writes(rows, h, OSD_DATA) == 150 * INTERVALS
    assert _writes(rows, CLUSTER, OSD_DATA) == 2 * 150 * INTERVALS
    # buckets merged exactly: the cluster's histogram holds every data write's sample
    (c,) = [r for r in rows if r.host == CLUSTER]
    assert c.values["write_svc_max_ns"] is not None
    by_osd = {r.device: r for r in merged_rows(run, by="osd")}
    assert sorted(by_osd) == ["osd.*", "osd.0", "osd.1", "osd.2", "osd.3"]
    assert by_osd["osd.0"].ops["write"]["ios"] == (100 + 30) * INTERVALS
    assert by_osd["osd.1"].ops["write"]["ios"] == 50 * INTERVALS
    assert by_osd[OSD_DATA].ops["write"]["ios"] == 2 * 150 * INTERVALS
    # the report's line of it: the cluster's host column, the merged row's name and label
    md = markdown_report(run, rows, [])
    line = [x for x in md.splitlines()
            if f"| {CLUSTER} |" in x and OSD_DATA.replace("*", "\\*") in x]
    assert line and DATA_DEVICES in line[0], md
    # merged rows have no settings of their own: the cluster is not a host without them
    assert f"{CLUSTER}: no device settings" not in md


def test_a_one_host_baseline_meets_the_cluster_row_by_osd(tmp_path: pathlib.Path) -> None:
    base, other = [], []
    for n in range(2):
        _write(str(tmp_path / f"b{n}.iopulse"), 1, n)
        _write(str(tmp_path / f"o{n}.iopulse"), 2, n)
        base.append(load(str(tmp_path / f"b{n}.iopulse")))
        other.append(load(str(tmp_path / f"o{n}.iopulse")))
    cmp = comparison(base, other, match="osd")
    iops = {(c.device, c.op): c for c in cmp.changes if c.stat == "iops"}
    w = iops[(OSD_DATA, "write")]
    assert not w.only and w.flagged and w.better, (w.verdict, w.base, w.other)
    assert abs(w.other_mean / w.base_mean - 2) < 0.02, (w.base, w.other)
    # osd.0 is on both sides, osd.2 and osd.3 only on the second host
    assert not iops[("osd.0", "write")].only
    assert iops[("osd.2", "write")].only == "other"
