"""The run file: lossless round trip, readable after truncation at any byte, self-describing."""
from __future__ import annotations

import gzip
import random

import pytest
from fakes import make_update

from iopulse._pb import iopulse_pb2 as pb
from iopulse.record import RunFileError, RunWriter, load
from iopulse.record.runfile import read_varint, varint


def write_run(path: str, n: int = 40, hosts: int = 2) -> list[list[bytes]]:
    sent: list[list[bytes]] = [[] for _ in range(hosts)]
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"]})
        for h in range(hosts):
            w.write_json({"type": "agent", "host": h, "target": f"unix:/run/h{h}.sock"})
            w.write_info(h, pb.Info(version="t", hostname=f"node{h}").SerializeToString())
        for seq in range(1, n + 1):
            for h in range(hosts):
                u = make_update(seq, devices=("sdb", "sdc"))
                if seq == 5:
                    u.phases.add(name="fill", id=1, realtime_ns=u.end_realtime_ns,
                                 monotonic_ns=u.end_monotonic_ns)
                if seq == 30:
                    u.phases.add(name="fill", id=2, end=True, begin_id=1,
                                 realtime_ns=u.end_realtime_ns, monotonic_ns=u.end_monotonic_ns)
                data = u.SerializeToString()
                sent[h].append(data)
                w.write_update(h, data)
            w.flush()
        w.close({"type": "end", "status": "ok"})
    return sent


def test_varint_round_trip():
    for v in (0, 1, 127, 128, 300, 2**32 + 5, 2**63 - 1):
        b = varint(v)
        assert read_varint(b, 0) == (v, len(b))


def test_round_trip_is_lossless(tmp_path):
    path = str(tmp_path / "r.iopulse")
    sent = write_run(path)
    run = load(path)
    assert run.complete and not run.damage
    assert [h.name for h in run.hosts] == ["node0", "node1"]
    assert run.hosts[1].target == "unix:/run/h1.sock"
    for h, datas in enumerate(sent):
        got = run.hosts[h].updates
        assert len(got) == len(datas)
        for u, data in zip(got, datas):
            ref = pb.Update.FromString(data)
            assert u.seq == ref.seq
            assert dict(u.devices["sdb"].ops["write"].queue_wait_ns.buckets()) == \
                {i: c for i, c in zip(ref.devices[0].write.queue_wait_ns.index,
                                      ref.devices[0].write.queue_wait_ns.count)}
    (p,) = run.phases()
    assert p.name == "fill" and sorted(p.hosts) == [0, 1]
    assert len(p.updates(0, run.hosts[0].updates)) == 25       # seq 6..30
    # the embedded schema describes the file to any protobuf reader
    from google.protobuf import descriptor_pb2
    fds = descriptor_pb2.FileDescriptorSet.FromString(run.schema)
    assert fds.file[0].package == "iopulse.v1"
    # a plain gzip reader sees the magic line
    with gzip.open(path, "rb") as f:
        assert f.read(14) == b"iopulse-run 1\n"


def test_truncated_anywhere_still_loads(tmp_path):
    path = str(tmp_path / "r.iopulse")
    write_run(path, n=60)
    data = open(path, "rb").read()
    full = load(path)
    n_full = len(full.hosts[0].updates)
    rnd = random.Random(7)
    cuts = sorted({rnd.randrange(20, len(data)) for _ in range(60)} | {len(data) - 1, 25})
    seen = []
    for cut in cuts:
        p = str(tmp_path / f"cut{cut}")
        with open(p, "wb") as f:
            f.write(data[:cut])
        run = load(p)                       # never raises
        assert run.damage, f"cut at {cut} of {len(data)} not reported"
        assert not run.complete
        got = len(run.hosts[0].updates) if run.hosts else 0
        assert got <= n_full
        seen.append((cut, got))
    # every flush makes more readable: a longer prefix never holds fewer Updates, and one
    # missing only the gzip trailer holds all of them
    assert [g for _, g in seen] == sorted(g for _, g in seen)
    assert seen[-1] == (len(data) - 1, n_full)
    assert len({g for _, g in seen}) > 10


def test_not_a_run_file(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"hello")
    with pytest.raises(RunFileError, match="not gzip"):
        load(str(p))
    p.write_bytes(gzip.compress(b"something else entirely"))
    with pytest.raises(RunFileError, match="no 'iopulse-run 1' line"):
        load(str(p))


def test_writer_refuses_to_overwrite(tmp_path):
    p = tmp_path / "r.iopulse"
    p.write_bytes(b"keep me")
    with pytest.raises(FileExistsError):
        RunWriter(str(p))
    assert p.read_bytes() == b"keep me"
