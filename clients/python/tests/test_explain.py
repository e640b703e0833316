"""iopulse explain: the slow device of an OSD, where its time went, kv_sync's fdatasync and the
OSD's slow ops matched to the intervals they overlapped; from a run file, from a daemon's
replay (a fake one here; the real one in tests/integration/test_explain.py) and the admin
socket's protocol."""
from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from fakes import FakeTelemetry, hist, serve

from iopulse import ceph
from iopulse._pb.iopulse.v1 import iopulse_pb2 as pb
from iopulse.cli import main
from iopulse.record import RunWriter

K = 5
SEC = 1_000_000_000
T0 = 1_795_000_000 * SEC            # the first interval's start (wall clock)
SLOW_AT = 3                          # the interval (1-based) in which sdb is slow
SLOW_N = 20                          # its writes over 100 ms there


def _update(seq: int, t0: int = T0) -> Any:
    u = pb.Update(seq=seq, first_seq=seq, merged=1, precision=K,
                  start_realtime_ns=t0 + (seq - 1) * SEC, end_realtime_ns=t0 + seq * SEC,
                  start_monotonic_ns=(seq - 1) * SEC + 5, end_monotonic_ns=seq * SEC + 5)
    slow = seq == SLOW_AT
    for name, role in (("dm-0", "block"), ("sdb", "block"), ("nvme0n1", "block.db")):
        d = u.devices.add(name=name, major=8, minor=len(u.devices), osd_id=0, osd_role=role)
        n = 100
        svc = [200_000] * n + ([300_000_000] * SLOW_N if slow and name != "nvme0n1" else [])
        q = [10_000] * n + ([5_000_000] * SLOW_N if slow and name != "nvme0n1" else [])
        d.write.ios, d.write.bytes = len(svc), len(svc) * 4096
        d.write.service_ns.CopyFrom(hist(svc))
        d.write.queue_wait_ns.CopyFrom(hist(q))
        d.write.total_ns.CopyFrom(hist([a + b for a, b in zip(svc, q)]))
        if name == "nvme0n1":           # counted without a dispatch record or a queue stamp
            d.write.ios += 3
            d.write.untimed, d.write.no_queue_ts = 1, 2
        if name == "sdb":
            d.flush.ios = 10
            d.flush.service_ns.CopyFrom(hist([900_000_000 if slow else 1_000_000] * 10))
            d.preflush = 10
            d.preflush_latency_ns.CopyFrom(hist([2_000_000] * 10))
    d = u.devices.add(name="sdz", major=8, minor=99, osd_id=-1)      # not the OSD's
    d.write.ios = 50
    d.write.total_ns.CopyFrom(hist([900_000_000] * 50))
    t = u.threads.add(pid=100, tid=101, comm="bstore_kv_sync", process="ceph-osd", osd_id=0,
                      device="dm-0", fdatasync=40)
    t.latency_ns.CopyFrom(hist([3_000_000] * 40))
    t.fdatasync_latency.histogram_ns.CopyFrom(hist([3_000_000] * 40))
    return u


def _info() -> bytes:
    i = pb.Info(version="0.9", kernel="6.12", hostname="node1")
    i.devices.add(name="dm-0", major=253, minor=0, dm_name="ceph--a-osd--block",
                  slaves=["sdb"], disks=["sdb"], osd_id=0, osd_role="block", present=True)
    i.devices.add(name="sdb", major=8, minor=16, holders=["dm-0"], osd_id=0, osd_role="block",
                  present=True)
    i.devices.add(name="nvme0n1", major=259, minor=0, osd_id=0, osd_role="block.db",
                  present=True)
    i.devices.add(name="sdz", major=8, minor=99, osd_id=-1, present=True)
    return i.SerializeToString()


def _run(path: str, intervals: int = 6) -> str:
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                      "command": ["rados", "bench"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/iopulse.sock"})
        w.write_info(0, _info())
        for seq in range(1, intervals + 1):
            w.write_update(0, _update(seq).SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})
    return path


def _iso(ns: int) -> str:
    d = datetime.fromtimestamp(ns // SEC, timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{(ns % SEC) // 1000:06d}+0000"


def _slow_ops_file(path: str) -> str:
    ops = [{"description": "osd_op(client.4100.0:7 2.1 2:8a1a:::obj1:head [write 0~4194304])",
            "initiated_at": _iso(T0 + (SLOW_AT - 1) * SEC + SEC // 4), "age": 40.0,
            "duration": 0.6, "type_data": {"flag_point": "commit sent; apply or cleanup"}},
           {"description": "osd_op(client.4100.0:9 2.3 2:9b:::obj2:head [write 0~4096])",
            "initiated_at": _iso(T0 + 4 * SEC + SEC // 2), "age": 38.0, "duration": 0.3,
            "type_data": {"flag_point": "waiting for sub ops"}}]
    with open(path, "w") as f:
        json.dump({"num to keep": 20, "threshold to keep": 10, "Ops": ops}, f)
    return path


def _json(capsys: Any, argv: list[str]) -> dict[str, Any]:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_osds_slow_disk_its_time_and_kv_sync(tmp_path: Any, capsys: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    out = _json(capsys, ["explain", run, "--osd", "0"])
    devs = {d["name"]: d for d in out["devices"]}
    assert set(devs) == {"dm-0", "sdb", "nvme0n1"}            # not sdz, another disk
    assert out["culprit"] == "sdb"                            # the disk under the LV
    assert [d["name"] for d in out["devices"]] == ["sdb", "dm-0", "nvme0n1"]
    sdb = devs["sdb"]
    assert sdb["over"] == ["dm-0"] and sdb["role"] == "block"
    assert sdb["ios"] == 6 * 100 + SLOW_N
    assert sdb["slow_ios"] == SLOW_N and devs["nvme0n1"]["slow_ios"] == 0
    assert sdb["untimed"] == 0 and devs["nvme0n1"]["untimed"] == 6 * 3
    assert sdb["flushes"] == 60 and sdb["preflush_writes"] == 60
    # the device's share of the summed time: service >> queue
    assert sdb["device_share_pct"] > 90
    assert 280e6 < sdb["service_max_ns"] < 320e6 and sdb["queue_p99_ns"] < 6e6
    assert out["kv_sync"] == {"threads": 1, "calls": 240, "fdatasync": 240,
                              "p50_ns": out["kv_sync"]["p50_ns"],
                              "p99_ns": out["kv_sync"]["p99_ns"],
                              "max_ns": out["kv_sync"]["max_ns"]}
    assert 2.9e6 < out["kv_sync"]["p99_ns"] < 3.1e6
    assert out["updates"] == 6 and out["seconds"] == pytest.approx(6.0)
    v = out["verdict"]
    assert "osd.0" in v and f"sdb (block; under dm-0) had {SLOW_N} of {6 * 100 + SLOW_N} IOs over 100ms" in v
    assert "98% of their time went to the device, and its 60 flush requests took longer " \
        "still (p99 898ms)" in v
    assert "bstore_kv_sync fdatasync p99 3.0ms over 240 calls" in v


def test_the_window_narrows_the_sums(tmp_path: Any, capsys: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    out = _json(capsys, ["explain", run, "--osd", "0", "--last", "2s"])
    assert out["updates"] == 2 and out["devices"][0]["slow_ios"] == 0
    assert "no IO over 100ms" in out["verdict"]
    until = datetime.fromtimestamp((T0 + SLOW_AT * SEC) / SEC).strftime("%H:%M:%S")
    since = datetime.fromtimestamp((T0 + (SLOW_AT - 1) * SEC) / SEC).strftime("%H:%M:%S")
    out = _json(capsys, ["explain", run, "--osd", "0", "--since", since, "--until", until])
    assert out["updates"] == 1 and out["culprit"] == "sdb"
    assert out["devices"][0]["slow_ios"] == SLOW_N
    out = _json(capsys, ["explain", run, "--device", "nvme0n1", "--slow", "150us"])
    assert out["osd"] is None and out["kv_sync"] is None
    assert [d["name"] for d in out["devices"]] == ["nvme0n1"]
    assert out["devices"][0]["slow_ios"] == 600          # 210 us each, all over 150 us
    assert out["devices"][0]["ios"] == 618 and out["devices"][0]["untimed"] == 18


def test_slow_ops_matched_to_the_intervals_they_overlapped(tmp_path: Any, capsys: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    ops = _slow_ops_file(str(tmp_path / "ops.json"))
    out = _json(capsys, ["explain", run, "--osd", "0", "--slow-ops", ops])
    first, second = out["ops"]
    assert first["intervals"] == 1 and first["device_slow"] and first["slow_ios"] == 2 * SLOW_N
    assert first["slowest_device"] in ("sdb", "dm-0")
    assert first["op"]["duration_ns"] == 600_000_000
    assert first["op"]["flag_point"] == "commit sent; apply or cleanup"
    assert second["intervals"] == 1 and not second["device_slow"] and second["slow_ios"] == 0
    assert "2 slow op(s) of the OSD, 1 overlapping a slow device IO, 1 not" in out["verdict"]
    assert main(["explain", run, "--osd", "0", "--slow-ops", ops]) == 0
    text = capsys.readouterr().out
    assert "waiting for sub ops" not in text and "obj2:head" in text
    assert "sdb (block; under dm-0)" in text and "bstore_kv_sync (1 thread(s))" in text


@pytest.mark.parametrize("argv, message", [
    (["--osd", "7"], "no device of osd.7 on this host; OSDs here: osd.0"),
    (["--device", "sdq"], "no device sdq on this host"),
    (["--osd", "0", "--since", "25:00"], "'25:00' is not a time"),
    (["--osd", "0", "--since", "10:00", "--last", "1m"], "--since and --last"),
    (["--device", "sdb", "--ceph"], "--ceph reads an OSD's slow ops: give --osd"),
    (["--osd", "0", "--phase", "nope"], "--phase 'nope' matches 0 phases"),
    (["--osd", "0", "--host", "other"], "no host 'other'"),
    (["--osd", "0", "--slow-ops", "/nonexistent/ops.json"], "/nonexistent/ops.json: No such file"),
])
def test_bad_requests_say_what_is_wrong(tmp_path: Any, capsys: Any, argv: list[str],
                                        message: str) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    assert main(["explain", run] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("iopulse explain: ")


def test_slow_ops_files_that_are_not_dumps(tmp_path: Any, capsys: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"Ops": [{"description": "x", "initiated_at": "yesterday", "duration": 1}]}')
    assert main(["explain", run, "--osd", "0", "--slow-ops", str(bad)]) == 2
    assert "bad.json: op 0: ValueError: 'yesterday' is not a time" in capsys.readouterr().err
    bad.write_text('{"ops": []}\n')
    assert main(["explain", run, "--osd", "0", "--slow-ops", str(bad)]) == 2
    assert "not a dump_historic_slow_ops reply" in capsys.readouterr().err
    bad.write_text('{\n"Ops": [\n')
    assert main(["explain", run, "--osd", "0", "--slow-ops", str(bad)]) == 2
    assert "bad.json: line 3: not JSON" in capsys.readouterr().err


def test_osd_times_in_every_form() -> None:
    base = ceph.parse_time("2026-11-28T12:00:00.123456+0000")
    assert base == int(datetime(2026, 11, 28, 12, tzinfo=timezone.utc).timestamp()) * SEC + 123_456_000
    assert ceph.parse_time("2026-11-28T13:00:00.123456+0100") == base
    assert ceph.parse_time("2026-11-28T07:30:00.123456-04:30") == base
    assert ceph.parse_time("2026-11-28T12:00:00.123456Z") == base
    local = ceph.parse_time("2026-11-28 12:00:00.123456")          # before Octopus: local
    assert local == int(datetime(2026, 11, 28, 12).timestamp()) * SEC + 123_456_000
    for bad in ("2026-11-28", "12:00:00", "2026-11-28T12:00:00+25", ""):
        with pytest.raises(ValueError):
            ceph.parse_time(bad)


class _AdminSocket(threading.Thread):
    """An OSD's admin socket as admin_socket.cc speaks it: a command up to a NUL or newline,
    then a 32-bit big-endian length and the reply."""

    def __init__(self, path: str, reply: bytes) -> None:
        super().__init__(daemon=True)
        self.reply, self.commands = reply, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(1)

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            cmd = b""
            while not cmd.endswith((b"\0", b"\n")):
                cmd += conn.recv(1)
            self.commands.append(json.loads(cmd[:-1]))
            conn.sendall(struct.pack("!I", len(self.reply)) + self.reply)


def test_the_admin_socket_protocol(tmp_path: Any, capsys: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    ops = json.load(open(_slow_ops_file(str(tmp_path / "ops.json"))))
    path = str(tmp_path / "ceph-osd.0.asok")
    srv = _AdminSocket(path, json.dumps(ops).encode())
    srv.start()
    out = _json(capsys, ["explain", run, "--osd", "0", "--ceph", "--ceph-socket", path])
    srv.join(5)
    assert srv.commands == [{"prefix": "dump_historic_slow_ops", "format": "json"}]
    assert [o["device_slow"] for o in out["ops"]] == [True, False]
    missing = str(tmp_path / "ceph-osd.9.asok")
    assert main(["explain", run, "--osd", "0", "--ceph", "--ceph-socket", missing]) == 1
    err = capsys.readouterr().err
    assert f"--ceph: {missing}: No such file or directory" in err and "--slow-ops" in err


class _Replaying(FakeTelemetry):
    """A daemon whose replay is the last intervals before now, then one live interval."""

    def Subscribe(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        context.send_initial_metadata(())
        now = time.time_ns()
        t0 = now - 5 * SEC - SEC // 5          # six intervals, the last one ends at +0.8 s
        for seq in range(1, 7):
            yield _update(seq, t0)
        while context.is_active():
            time.sleep(0.05)

    def GetInfo(self, request: Any, context: Any) -> Any:
        i = super().GetInfo(request, context)
        del i.devices[:]
        i.MergeFrom(pb.Info.FromString(_info()))
        return i


def test_a_live_daemons_replay(tmp_path: Any, capsys: Any) -> None:
    fake = _Replaying()
    target = f"unix:{tmp_path}/d.sock"
    server = serve(fake, target)
    try:
        out = _json(capsys, ["--target", target, "explain", "--osd", "0", "--last", "1m"])
    finally:
        server.stop(0)
    assert fake.requests[-1].replay_seconds == 60
    assert out["host"] == "node1" and out["updates"] == 6
    assert out["culprit"] == "sdb" and out["devices"][0]["slow_ios"] == SLOW_N
    assert "history reaches back 5 s" in out["note"]


def test_ceph_tell_where_the_node_has_no_socket(tmp_path: Any, capsys: Any,
                                                monkeypatch: Any) -> None:
    run = _run(str(tmp_path / "r.iopulse"))
    ops = _slow_ops_file(str(tmp_path / "ops.json"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ceph"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/argv\ncat {ops}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(ceph, "DEFAULT_SOCKET", str(tmp_path / "none-{osd}.asok"))
    out = _json(capsys, ["explain", run, "--osd", "0", "--ceph"])
    assert (tmp_path / "argv").read_text().split() == \
        ["tell", "osd.0", "dump_historic_slow_ops", "--format", "json"]
    assert [o["device_slow"] for o in out["ops"]] == [True, False]
    fake.write_text("#!/bin/sh\necho 'Error ENOENT: problem getting command descriptions' >&2\n"
                    "exit 2\n")
    assert main(["explain", run, "--osd", "0", "--ceph"]) == 1
    assert "ceph tell osd.0: exit 2: Error ENOENT" in capsys.readouterr().err


def test_a_live_window_from_since_reaches_back_that_far(tmp_path: Any, capsys: Any) -> None:
    fake = _Replaying()
    target = f"unix:{tmp_path}/d.sock"
    server = serve(fake, target)
    since = datetime.fromtimestamp(time.time() - 90).strftime("%H:%M:%S")
    try:
        out = _json(capsys, ["--target", target, "explain", "--osd", "0", "--since", since])
        assert main(["--target", target, "explain", "--osd", "0", "--since", since,
                     "--until", since]) == 2
    finally:
        server.stop(0)
    assert 90 <= fake.requests[-1].replay_seconds <= 93, fake.requests[-1]
    assert out["updates"] == 6
    assert "the window is empty" in capsys.readouterr().err
