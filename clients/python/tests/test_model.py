"""Decoding hand-built wire messages into the client's typed objects, and their JSON form."""
from __future__ import annotations

import json

import pytest

from fakes import INTERVAL_NS, T0_MONO, make_update
from iopulse import Histogram, Info, Update
from iopulse._pb import iopulse_pb2 as pb
from iopulse.histogram import bucket_index, bucket_lower, bucket_mid, bucket_upper


def mid(v: int, k: int = 5) -> int:
    return bucket_mid(bucket_index(v, k), k)


def decode(msg) -> Update:
    return Update.from_pb(pb.Update.FromString(msg.SerializeToString()))


def test_update_header_and_windows():
    u = decode(make_update(12, 10))
    assert (u.seq, u.first_seq, u.merged, u.precision) == (12, 10, 3, 5)
    assert u.start_monotonic_ns == T0_MONO + 9 * INTERVAL_NS
    assert u.duration_ns == 3 * INTERVAL_NS and u.duration_s == 3.0
    assert u.end_realtime_s == u.end_realtime_ns / 1e9
    assert u.rate(300) == 100.0
    assert u.drops.no_slot == 0 and u.drops.to_dict()["bio_evicted"] == 0


def test_device_decodes_with_percentiles():
    u = decode(make_update(1))
    assert list(u.devices) == ["sdb"]
    d = u.devices["sdb"]
    assert (d.name, d.dev, d.osd_id, d.osd_role) == ("sdb", "8:16", 3, "block")
    assert set(d.ops) == {"read", "write", "flush", "discard"}
    w = d.ops["write"]
    assert (w.ios, w.bytes, w.errors, w.untimed) == (100, 409600, 0, 0)
    assert w.queue_wait_ns.count == 100
    assert w.queue_wait_ns.percentile(50) == mid(20_000)
    assert w.queue_wait_ns.percentile(51) == mid(40_000)
    assert w.queue_wait_ns.percentile(99) == mid(40_000)
    assert w.queue_wait_ns.percentile(100) == mid(5_000_000)
    assert w.service_ns.percentile(99) == mid(100_000)
    assert w.size_bytes.percentile(50) == mid(4096) == 4159   # the bucket midpoint
    assert w.total_ns == Histogram(5)                      # not sent: empty, same precision
    assert d.ops["read"].ios == 0 and d.ops["read"].service_ns.percentile(99) is None
    assert d.ops["flush"].ios == 10
    assert (d.seek_sequential, d.seek_forward, d.seek_backward) == (75, 20, 5)
    assert d.sequential_pct == 75.0
    assert d.seek_distance_sectors.percentile(90) == mid(1000)
    assert (d.preflush, d.fua, d.requeues) == (10, 2, 1)
    assert d.preflush_latency_ns.percentile(99) == mid(9_000_000)
    assert d.preflush_latency_ns.max == bucket_upper(bucket_index(9_000_000, 5), 5)
    assert d.preflush_latency_ns.min == bucket_lower(bucket_index(500_000, 5), 5)


def test_no_seeks_and_no_osd_are_none():
    m = pb.Update(seq=1, first_seq=1, merged=1, precision=4)
    m.devices.add(name="loop0", major=7, minor=0, osd_id=-1, osd_role="")
    d = decode(m).devices["loop0"]
    assert d.sequential_pct is None and d.osd_id is None and d.osd_role is None
    assert d.ops["write"].service_ns.precision == 4          # the Update's precision


def test_threads_and_phases():
    m = make_update(3)
    m.phases.add(name="fill", labels={"run": "3"}, end=False, realtime_ns=5, monotonic_ns=6,
                 id=9)
    u = decode(m)
    t = u.threads[0]
    assert (t.pid, t.tid, t.comm, t.process, t.osd_id, t.dev, t.device) == \
        (4242, 4250, "bstore_kv_sync", "ceph-osd", 3, "8:16", "sdb")
    assert (t.fsync, t.fdatasync, t.sync_file_range, t.calls, t.flush_bios) == (2, 40, 0, 42, 42)
    assert t.latency_mean_ns == 600_000
    assert t.latency_ns.percentile(50) == mid(500_000)
    assert t.latency_ns.percentile(99) == mid(4_000_000)
    fs, fd, sfr = (t.call_latency(c) for c in ("fsync", "fdatasync", "sync_file_range"))
    assert fs is not None and fd is not None and sfr is not None
    assert fs.latency_ns.count == 2 and fs.latency_ns.percentile(99) == mid(4_000_000)
    assert fd.latency_ns.count == 40 and fd.latency_ns.percentile(99) == mid(500_000)
    assert sfr.latency_ns.count == 0 and sfr.sum_ns == 0
    assert fs.sum_ns + fd.sum_ns == t.latency_sum_ns
    d = t.to_dict()["by_call"]
    assert d["fdatasync"]["calls"] == 40 and d["fdatasync"]["latency_ns"]["count"] == 40
    with pytest.raises(ValueError, match="fsync, fdatasync, sync_file_range"):
        t.call_latency("sync")
    p = u.phases[0]
    assert (p.name, p.labels, p.end, p.realtime_ns, p.monotonic_ns, p.id) == \
        ("fill", {"run": "3"}, False, 5, 6, 9)


def test_update_to_dict_is_json():
    u = decode(make_update(2, 1, devices=("sdb", "sdc")))
    d = json.loads(json.dumps(u.to_dict()))
    assert d["interval_s"] == 2.0 and d["merged"] == 2
    assert [x["name"] for x in d["devices"]] == ["sdb", "sdc"]
    sdb, sdc = d["devices"]
    assert sdc["osd_id"] is None and sdc["osd_role"] is None
    w = sdb["ops"]["write"]
    assert w["iops"] == 50.0 and w["bytes_per_s"] == 100 * 4096 / 2
    qw = w["queue_wait_ns"]
    assert set(qw) == {"precision", "count", "mean", "min", "p50", "p90", "p99", "p999", "max",
                       "buckets"}
    assert qw["count"] == 100 and qw["p50"] == mid(20_000) and qw["p999"] == mid(5_000_000)
    assert qw["buckets"] == [[bucket_index(20_000, 5), 50], [bucket_index(40_000, 5), 49],
                             [bucket_index(5_000_000, 5), 1]]
    assert sdb["ops"]["read"]["service_ns"]["p99"] is None
    assert sdb["seek"]["sequential_pct"] == 75.0
    assert sdb["flush"] == {**sdb["flush"], "requests": 10, "preflush": 10, "fua": 2}
    assert d["threads"][0]["calls_per_s"] == 21.0
    assert d["drops"]["no_slot"] == 0
    # The buckets rebuild the histogram exactly.
    h = Histogram(qw["precision"], *zip(*qw["buckets"]))
    assert h == u.devices["sdb"].ops["write"].queue_wait_ns


def test_info_decodes():
    i = pb.Info(version="0.1.0", kernel="6.1", attach_mode="tp_btf", btf=True, subscribers=2,
                interval_ns=500_000_000, config={"interval": "500ms"})
    i.histogram.CopyFrom(pb.HistogramLayout(precision=5, range_bits=40, buckets=1152,
                                            max_relative_error=0.015625, mode="completion"))
    i.devices.add(name="sda", major=8, minor=0, osd_id=-1, present=True)
    i.devices.add(name="dm-1", major=253, minor=1, dm_name="vg-db", slaves=["sdb"], osd_id=0,
                  osd_role="block.db")
    i.cost.rss_bytes = 1 << 20
    got = Info.from_pb(pb.Info.FromString(i.SerializeToString()))
    assert got.devices[0].osd_id is None and got.devices[0].dm_name is None
    assert got.devices[1].dm_name == "vg-db" and got.devices[1].slaves == ["sdb"]
    assert (got.devices[1].osd_id, got.devices[1].osd_role) == (0, "block.db")
    assert got.config == {"interval": "500ms"} and got.subscribers == 2
    assert got.interval_s == 0.5 and got.histogram.buckets == 1152
    d = json.loads(json.dumps(got.to_dict()))
    assert d["cost"]["rss_bytes"] == 1 << 20 and d["devices"][1]["dev"] == "253:1"
    assert d["histogram"]["max_relative_error"] == 0.015625
    assert got.histogram.mode == "completion" and d["histogram"]["mode"] == "completion"


def test_thread_from_an_older_daemon_has_no_per_call_latencies():
    """A daemon that sends only the combined histogram: each kind is None, never zeros."""
    m = make_update(1)
    for c in ("fsync", "fdatasync", "sync_file_range"):
        m.threads[0].ClearField(c + "_latency")
    t = decode(m).threads[0]
    assert t.call_latency("fdatasync") is None and t.latency_ns.count == 42
    assert t.to_dict()["by_call"] == {"fsync": None, "fdatasync": None, "sync_file_range": None}


def test_stacked_devices_name_what_is_beneath_and_above():
    """An LV's sync thread names the disks beneath it; Info and Updates carry the stack."""
    m = make_update(1)
    m.threads[0].device = "dm-0"
    m.threads[0].disks.extend(["sdb", "sdc"])
    m.devices[0].holders.append("dm-0")
    u = decode(m)
    assert u.threads[0].disks == ["sdb", "sdc"] and u.threads[0].where == "dm-0>sdb,sdc"
    assert u.devices["sdb"].holders == ["dm-0"]
    d = json.loads(json.dumps(u.to_dict()))
    assert d["threads"][0]["disks"] == ["sdb", "sdc"] and d["devices"][0]["holders"] == ["dm-0"]
    plain = decode(make_update(2)).threads[0]
    assert plain.disks == [] and plain.where == plain.device
    i = pb.Info()
    i.devices.add(name="dm-0", major=253, minor=0, slaves=["md0"], disks=["sda", "sdb"])
    i.devices.add(name="sda", major=8, minor=0, holders=["md0"])
    got = Info.from_pb(pb.Info.FromString(i.SerializeToString()))
    assert got.devices[0].disks == ["sda", "sdb"] and got.devices[1].holders == ["md0"]
