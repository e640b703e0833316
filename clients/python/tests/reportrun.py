"""A recording that is hard to lay out: two hosts (one with a long name), a fio command of 30
jobs with a long command line, phase names with brackets that Rich would read as markup,
devices of several classes with reads and writes, a sync thread with a long name, and each
host's device settings."""
from __future__ import annotations

from fakes import make_update

from iopulse._pb import iopulse_pb2 as pb
from iopulse.record import RunWriter

HOSTS = ("node0", "storage-node-17.rack4.example.org")
DEVICES = ("nvme0n1", "loop12345", "dm-0")
COMMAND = ("fio --output-format=json+ --output=/var/tmp/results/run-0001/fio.json "
           "--status-interval=1 jobs/thirty-jobs-of-every-kind.fio")
BRACKETED = "fill [bs=128k iodepth=16]"
MARKUP = "[bold]x[/bold]"
THREAD = "a-thread-named-x"     # 15 characters, as long as a comm gets


def job_names(n: int) -> list[str]:
    names = [BRACKETED, MARKUP]
    while len(names) < n:
        i = len(names)
        names.append(f"{('randread', 'randwrite', 'read', 'write')[i % 4]}-"
                     f"{('4k', '16k', '128k')[i % 3]}-qd{(1, 4, 16, 64)[i % 4]}")
    return names


def _info(host: str) -> bytes:
    i = pb.Info(version="0.9.1", kernel="6.12.48+deb13-amd64", hostname=host)
    i.devices.add(name="nvme0n1", major=259, minor=0, model="Samsung SSD 990 PRO 2TB",
                  osd_id=-1, present=True, holders=["dm-0"])
    i.devices.add(name="loop12345", major=7, minor=12345, model="/var/lib/images/disk.img",
                  osd_id=-1, present=True)
    i.devices.add(name="dm-0", major=253, minor=0, dm_name="vg0-lv_data", slaves=["nvme0n1"],
                  disks=["nvme0n1"], osd_id=-1, present=True)
    i.devices[0].settings.CopyFrom(pb.DeviceSettings(
        scheduler="mq-deadline", schedulers=["none", "mq-deadline", "kyber", "bfq"],
        iosched={"async_depth": "64", "fifo_batch": "16", "front_merges": "1",
                 "prio_aging_expire": "10000", "read_expire": "500", "write_expire": "5000",
                 "writes_starved": "2"},
        nr_requests=1023, queue_depth=-1, read_ahead_kb=128, write_cache="write back",
        wbt_lat_usec=2000, max_sectors_kb=128, nomerges=0, rotational=0,
        firmware="4B2QJXD7"))
    i.devices[1].settings.CopyFrom(pb.DeviceSettings(
        scheduler="none", schedulers=["none", "mq-deadline"], nr_requests=128, queue_depth=-1,
        read_ahead_kb=128, write_cache="write through", wbt_lat_usec=0, max_sectors_kb=1280,
        nomerges=0, rotational=1))
    return i.SerializeToString()


def fio_report(names: list[str]) -> dict:
    """fio's JSON report of two of the jobs: a write job with fdatasync (90 writes and their
    10 calls where the device saw 100 writes, 10 with a preflush) and a read job (40 reads,
    clat above the device's total latency)."""
    def lat(p50: int, p99: int) -> dict:
        return {"N": 40, "percentile": {"50.000000": p50, "99.000000": p99,
                                        "99.900000": p99 + 1000}}
    empty = {"total_ios": 0, "iops": 0.0}
    return {"fio version": "fio-3.33", "jobs": [
        {"jobname": names[4], "groupid": 0, "job options": {"filename": "/dev/loop12345"},
         "read": empty, "trim": empty,
         "write": {"total_ios": 90, "iops": 90.0, "clat_ns": lat(120_000, 450_000)},
         "sync": {"total_ios": 0, "lat_ns": {"N": 10}}},
        {"jobname": names[3], "groupid": 0, "job options": {"filename": "/dev/nvme0n1"},
         "write": empty, "trim": empty,
         "read": {"total_ios": 40, "iops": 40.0, "clat_ns": lat(2_300_000, 2_600_000)}}]}


def write_run(path: str, n_jobs: int = 30, fio: bool = True) -> list[str]:
    """Writes the run; returns the jobs' names."""
    names = job_names(n_jobs)
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record", "--",
                                                              *COMMAND.split()],
                      "command": COMMAND.split()})
        for h, host in enumerate(HOSTS):
            w.write_json({"type": "agent", "host": h, "target": f"unix:/run/h{h}.sock"})
            w.write_info(h, _info(host))
        for h in range(len(HOSTS)):
            ids = iter(range(1, 1000))
            parent = next(ids)
            begun = 0
            for j, name in enumerate(names + [None]):
                u = make_update(j + 1, devices=DEVICES, reads=10 * (j % 5))
                u.threads[0].comm = THREAD
                u.threads[0].process = "a-process-name"
                edge = {"realtime_ns": u.end_realtime_ns, "monotonic_ns": u.end_monotonic_ns}
                if j:
                    u.phases.add(name=names[j - 1], end=True, begin_id=begun, id=next(ids),
                                 **edge)
                if name is None:
                    u.phases.add(name="fio", end=True, begin_id=parent, id=next(ids), **edge)
                else:
                    if j == 0:
                        u.phases.add(name="fio", labels={"command": COMMAND}, id=parent,
                                     **edge)
                    begun = next(ids)
                    u.phases.add(name=name, id=begun, parent_id=parent, **edge, labels={
                        "rw": name.split("-")[0], "bs": ("4k", "16k", "128k")[j % 3],
                        "iodepth": str((1, 4, 16, 64)[j % 4])})
                w.write_update(h, u.SerializeToString())
            w.write_update(h, make_update(len(names) + 2, devices=DEVICES).SerializeToString())
        if fio:
            w.write_json({"type": "tool_output", "tool": "fio", "format": "json+",
                          "added": True, "reports": 1, "output": fio_report(names)})
        w.close({"type": "end", "status": "ok", "exit_code": 0})
    return names
