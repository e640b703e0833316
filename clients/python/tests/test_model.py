"""Decoding wire messages into the client's objects."""
from iopulse._pb import iopulse_pb2 as pb
from iopulse.histogram import bucket_index, bucket_mid
from iopulse.model import Info, Update


def test_update_decodes():
    u = pb.Update(seq=12, first_seq=10, merged=3, precision=5, start_realtime_ns=1,
                  end_realtime_ns=3_000_000_001, start_monotonic_ns=5,
                  end_monotonic_ns=3_000_000_005)
    d = u.devices.add(name="sdb", major=8, minor=16, osd_id=3, osd_role="block",
                      seek_sequential=1, seek_forward=2, seek_backward=1)
    d.write.ios = 4
    d.write.bytes = 16384
    d.write.service_ns.precision = 5
    d.write.service_ns.index.extend([bucket_index(1000, 5), bucket_index(9000, 5)])
    d.write.service_ns.count.extend([3, 1])
    d.read.ios = 0
    t = u.threads.add(pid=7, tid=8, comm="bstore_kv_sync", process="ceph-osd", osd_id=3,
                      fdatasync=5, device="sdb")
    t.latency_ns.precision = 5
    t.latency_ns.index.append(bucket_index(2_000_000, 5))
    t.latency_ns.count.append(5)
    u.phases.add(name="fill", labels={"run": "1"}, id=4)
    got = Update.from_pb(pb.Update.FromString(u.SerializeToString()))
    assert (got.seq, got.first_seq, got.merged) == (12, 10, 3)
    assert got.seconds == 3.0
    dev = got.devices["sdb"]
    assert dev.osd_id == 3 and dev.osd_role == "block"
    assert dev.sequential_pct == 25.0
    assert dev.ops["write"].ios == 4
    assert dev.ops["write"].service_ns.percentile(50) == bucket_mid(bucket_index(1000, 5), 5)
    assert dev.ops["read"].service_ns.count == 0
    assert got.threads[0].calls == 5 and got.threads[0].osd_id == 3
    assert got.threads[0].latency_ns.percentile(99) == bucket_mid(bucket_index(2_000_000, 5), 5)
    assert got.phases[0].labels == {"run": "1"}
    d2 = got.to_dict()
    assert d2["devices"][0]["ops"]["write"]["service_ns"]["count"] == 4


def test_info_decodes():
    i = pb.Info(version="0.1.0", kernel="6.1", attach_mode="tp_btf", btf=True, subscribers=2,
                config={"interval": "1000ms"})
    i.histogram.precision = 5
    i.devices.add(name="sda", major=8, minor=0, osd_id=-1)
    got = Info.from_pb(pb.Info.FromString(i.SerializeToString()))
    assert got.devices[0].osd_id is None
    assert got.config == {"interval": "1000ms"} and got.subscribers == 2
