"""Device settings at the start of a recording: asked of every daemon, kept in the run,
read back typed (Run.settings), compared between runs or hosts."""
from __future__ import annotations

from fakes import make_update

from iopulse._pb import iopulse_pb2 as pb
from iopulse.cli import main
from iopulse.model import DeviceSettings, Info
from iopulse.record import HostSettings, RunWriter, load, settings_changes


def test_absent_settings_are_none_and_flat_text():
    msg = pb.DeviceSettings(scheduler="bfq", schedulers=["none", "bfq"],
                            iosched={"slice_idle": "8", "low_latency": "1"}, nr_requests=64,
                            queue_depth=-1, read_ahead_kb=0, write_cache="", wbt_lat_usec=-1,
                            max_sectors_kb=1280, nomerges=2, rotational=1, firmware="")
    s = DeviceSettings.from_pb(msg, "QEMU HARDDISK")
    assert (s.scheduler, s.nr_requests, s.queue_depth, s.read_ahead_kb, s.write_cache,
            s.wbt_lat_usec, s.rotational, s.firmware, s.model) == \
        ("bfq", 64, None, 0, None, None, True, None, "QEMU HARDDISK")
    assert list(s.iosched) == ["low_latency", "slice_idle"]
    assert s.flat() == {"scheduler": "bfq", "nr_requests": "64", "read_ahead_kb": "0",
                        "max_sectors_kb": "1280", "nomerges": "2", "rotational": "1",
                        "model": "QEMU HARDDISK", "iosched.low_latency": "1",
                        "iosched.slice_idle": "8"}


def test_record_keeps_every_hosts_settings_at_the_start(fake_daemon, tmp_path, capsys):
    t1, f1 = fake_daemon(scheduler="none")
    t2, f2 = fake_daemon(scheduler="mq-deadline")
    out = str(tmp_path / "run.iopulse")
    assert main(["--target", t1, "--target", t2, "record", "-o", out, "--duration",
                 "0.3s"]) == 0
    assert "does not report device settings" not in capsys.readouterr().err
    assert f1.requests[0].device_settings and f2.requests[0].device_settings
    run = load(out)
    assert list(run.settings) == [t1, t2]       # hosts by name (the fakes have no host name)
    a, b = run.settings[t1], run.settings[t2]
    assert (a.kernel, a.daemon_version) == ("6.1.0-test", "0.1.0-test")
    sdb = b.devices["sdb"]
    assert (sdb.scheduler, sdb.iosched, sdb.nr_requests, sdb.queue_depth, sdb.read_ahead_kb,
            sdb.write_cache, sdb.wbt_lat_usec, sdb.rotational, sdb.firmware, sdb.model) == \
        ("mq-deadline", {"fifo_batch": "16", "read_expire": "500"}, 64, 32, 128, "write back",
         75000, True, "2.5+", "QEMU HARDDISK")
    dm = b.devices["dm-0"]
    assert (dm.scheduler, dm.nr_requests, dm.rotational) == ("none", None, False)
    assert run.hosts[1].settings == b
    # what changed from one host (or run) to the other, in keys a person reads
    assert settings_changes(a, b) == [("sdb.iosched.fifo_batch", "", "16"),
                                      ("sdb.iosched.read_expire", "", "500"),
                                      ("sdb.scheduler", "none", "mq-deadline")]
    assert settings_changes(a, b, devices=["dm-0"]) == []
    assert b.to_dict()["devices"]["sdb"]["scheduler"] == "mq-deadline"


def test_a_daemon_without_settings_is_said_and_left_out(fake_daemon, tmp_path, capsys):
    target, _ = fake_daemon(settings=False)
    out = str(tmp_path / "old.iopulse")
    assert main(["--target", target, "record", "-o", out, "--duration", "0.2s"]) == 0
    err = capsys.readouterr().err
    assert "iopulsed (0.1.0-test) does not report device settings" in err
    run = load(out)
    assert run.settings == {} and run.hosts[0].settings is None


def test_the_settings_are_those_of_the_start(tmp_path):
    """A daemon restarted during the run sends a new Info (without settings): the run keeps
    the first one's."""
    info = pb.Info(version="t", kernel="6.12.0", hostname="node0")
    d = info.devices.add(name="sdb", model="M")
    d.settings.CopyFrom(pb.DeviceSettings(scheduler="bfq", nr_requests=-1, queue_depth=-1,
                                          read_ahead_kb=-1, wbt_lat_usec=-1, max_sectors_kb=-1,
                                          nomerges=-1, rotational=-1))
    later = pb.Info(version="t", kernel="6.12.0", hostname="node0")
    later.devices.add(name="sdb", model="M")
    path = str(tmp_path / "r.iopulse")
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1})
        w.write_info(0, info.SerializeToString())
        w.write_update(0, make_update(1).SerializeToString())
        w.write_info(0, later.SerializeToString())
        w.close({"type": "end", "status": "ok"})
    run = load(path)
    (s,) = run.settings.values()
    assert isinstance(s, HostSettings) and s.host == "node0" and s.kernel == "6.12.0"
    assert s.devices["sdb"].scheduler == "bfq" and s.devices["sdb"].rotational is None
    assert run.hosts[0].info is not None and run.hosts[0].info.devices[0].settings is None
    assert HostSettings.from_info("x", Info.from_pb(later)) is None
