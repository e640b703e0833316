"""A fio job's phase carries the devices its files are on (label `devices`), and report,
compare and load() show those devices' rows for it; the group around it keeps every device."""
from __future__ import annotations

import os
import pathlib

from fakes import make_update, write_phase_run

from iopulse.analysis.aggregate import aggregate
from iopulse.analysis.metrics import phase_rows
from iopulse.phases import fio
from iopulse.phases.fio_devices import job_devices, split_filenames
from iopulse.record import RunWriter, load as load_run

DEVICES = ("loop1", "loop2", "loop3", "loop4")


def test_filenames_split_at_unescaped_colons() -> None:
    assert split_filenames("/dev/loop1:/dev/loop2") == ["/dev/loop1", "/dev/loop2"]
    assert split_filenames(r"/mnt/a\:b:/dev/sdc") == ["/mnt/a:b", "/dev/sdc"]
    assert split_filenames("") == []


def _fake_sysfs(root: pathlib.Path, number: int, name: str, partition_of: str = "",
                slaves: tuple[str, ...] = ()) -> pathlib.Path:
    """root/M:m -> a device directory as /sys/dev/block has it."""
    block = root / "devices"
    if partition_of:
        dev = block / partition_of / name
        dev.mkdir(parents=True)
        (dev / "partition").write_text("1\n")
    else:
        dev = block / name
        dev.mkdir(parents=True)
    if slaves:
        (dev / "slaves").mkdir()
        for s in slaves:
            (block / s).mkdir(parents=True, exist_ok=True)
            (dev / "slaves" / s).symlink_to(block / s)
    (root / f"{os.major(number)}:{os.minor(number)}").symlink_to(dev)
    return dev


def test_a_file_resolves_to_its_device_and_the_stack_below(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "data.img"
    f.write_bytes(b"x")
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    _fake_sysfs(sysfs, os.stat(f).st_dev, "dm-3", slaves=("sdb", "sdc"))
    assert job_devices({"filename": str(f)}, str(sysfs)) == ["dm-3", "sdb", "sdc"]
    # a file fio is still to make: the device of its directory; relative to directory=
    assert job_devices({"filename": "new.dat", "directory": str(tmp_path)}, str(sysfs)) == \
        ["dm-3", "sdb", "sdc"]
    assert job_devices({"directory": str(tmp_path)}, str(sysfs)) == ["dm-3", "sdb", "sdc"]
    # names fio expands per job, and paths that do not resolve, add nothing
    assert job_devices({"filename": "$jobname.dat", "directory": str(tmp_path)},
                       str(sysfs)) == []
    assert job_devices({"filename": str(f)}, str(tmp_path / "nosys")) == []


def test_a_partition_adds_its_disk(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "data.img"
    f.write_bytes(b"x")
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    _fake_sysfs(sysfs, os.stat(f).st_dev, "nvme0n1p2", partition_of="nvme0n1")
    assert job_devices({"filename": str(f)}, str(sysfs)) == ["nvme0n1", "nvme0n1p2"]


def test_record_labels_each_job_with_its_devices(tmp_path: pathlib.Path) -> None:
    """On this machine: a job on a file gets the device of the file's file system, the
    device /sys/dev/block names for it."""
    f = tmp_path / "data.img"
    f.write_bytes(b"x")
    st = os.stat(f)
    want = os.path.basename(os.path.realpath(
        f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"))
    if not os.path.exists(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"):
        want = ""       # a file system without a block device (tmpfs): no label
    job = tmp_path / "two.fio"
    job.write_text(f"[global]\nrw=write\n[a]\nfilename={f}\n[b]\nfilename=$jobname\n")
    p = fio.plan(["fio", str(job)], lambda kind, key: f"true {kind} {key}", str(tmp_path))
    a, b = p.jobs
    got = a.labels.get("devices", "")
    assert (want in got.split(",")) if want else got == ""
    assert "devices" not in b.labels
    group = p.phases_of("job0")
    assert len(group) == 2 and "devices" not in group[0][2], group


def _write_run(path: str, bump: int = 0, vda: int = 100) -> None:
    """A group of four jobs, one per device, run at once; loop1 (fast) does 4x the IOs; vda
    (the disk under the loop devices' files, which other tenants use too) vda writes, and
    when it has more than the default, each job names it too (as its loop device's backing
    disk: fio_devices)."""
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                      "command": ["fio", "jobs.fio"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        ids = iter(range(1, 100))
        group = next(ids)
        jobs = {d: next(ids) for d in DEVICES}
        for seq in range(1, 5):
            u = make_update(seq, devices=DEVICES + ("vda",))
            for d in u.devices:
                d.write.ios = (400 if d.name == "loop1" else vda if d.name == "vda"
                               else 100) + bump
            edge = {"realtime_ns": u.end_realtime_ns, "monotonic_ns": u.end_monotonic_ns}
            if seq == 1:
                u.phases.add(name="group1", id=group, labels={"group": "1"}, **edge)
                for d, i in jobs.items():
                    u.phases.add(name=f"w-{d}", id=i, parent_id=group, **edge,
                                 labels={"group": "1",
                                         "devices": d + (",vda" if vda > 100 else "")})
            if seq == 4:
                for d, i in jobs.items():
                    u.phases.add(name=f"w-{d}", end=True, begin_id=i, id=next(ids), **edge)
                u.phases.add(name="group1", end=True, begin_id=group, id=next(ids), **edge)
            w.write_update(0, u.SerializeToString())
        w.write_update(0, make_update(5, devices=DEVICES).SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})


def test_a_job_phase_has_its_devices_rows_and_its_group_every_device(
        tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "run.iopulse")
    _write_run(path)
    run = load_run(path)
    phases = run.phases()
    byname = {p.name: p for p in phases}
    assert byname["w-loop3"].devices == frozenset({"loop3"})
    rows, _ = phase_rows(run, phases)
    devs: dict[str, set[str]] = {}
    for r in rows:
        devs.setdefault(r.phase.name, set()).add(r.device)
    assert devs["group1"] == set(DEVICES) | {"vda"}, devs
    for d in DEVICES:
        assert devs[f"w-{d}"] == {d}, devs
    # the IO counted once per job: the jobs' rows add up to the group's loop rows
    ios = {(r.phase.name, r.device): r.ops["write"]["ios"] for r in rows}
    assert sum(ios[(f"w-{d}", d)] for d in DEVICES) == \
        sum(ios[("group1", d)] for d in DEVICES)
    every, _ = phase_rows(run, phases, every_device=True)
    assert {r.device for r in every if r.phase.name == "w-loop3"} == set(DEVICES) | {"vda"}


def test_a_job_whose_devices_are_not_in_the_run_keeps_every_device(
        tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "run.iopulse")
    _write_run(path)
    run = load_run(path)
    p = next(p for p in run.phases() if p.name == "w-loop2")
    p.labels["devices"] = "sdz"       # recorded on another host, say
    (agg,) = aggregate(run, [p]).values()
    assert set(agg.devices) == set(DEVICES) | {"vda"}


def test_compare_puts_every_jobs_device_under_test(tmp_path: pathlib.Path) -> None:
    """loop1 does 4x the IOs of loop2-4: every loop device's own job phase judges its own
    device, not loop1, and the group judges the four its jobs' files are on."""
    from iopulse.analysis.compare import comparison
    paths = []
    for n in range(4):
        paths.append(str(tmp_path / f"r{n}.iopulse"))
        _write_run(paths[-1], bump=n)    # four recordings, not one given four times
    runs = [load_run(p) for p in paths]
    cmp = comparison(runs[:2], runs[2:])
    by = {p.name: p for p in cmp.phases}
    assert [dk[1] for dk in by["w-loop3"].under_test] == ["loop3"], by["w-loop3"]
    # the group's jobs ran on all four: all four are its test, the busiest first
    assert [dk[1] for dk in by["group1"].under_test] == list(DEVICES), by["group1"]


def test_compare_folds_a_jobs_rows_that_repeat_its_groups(tmp_path: pathlib.Path) -> None:
    """Each job alone on its device: its phase's rows equal the group's rows of that device,
    shown once (in the group, which comes first), counted apart; --all shows them all."""
    from iopulse.analysis.compare import comparison
    from iopulse.cli.compare import _rows, header_lines
    paths = []
    for n in range(4):
        paths.append(str(tmp_path / f"r{n}.iopulse"))
        _write_run(paths[-1], bump=n)
    runs = [load_run(p) for p in paths]
    cmp = comparison(runs[:2], runs[2:])
    _, _, _, groups = _rows(cmp, False)
    by = {p.name: (cs, nfold) for p, cs, nfold in groups}
    group_rows = {(c.device, c.op, c.stat) for c in by["group1"][0]}
    for d in DEVICES:
        cs, nfold = by[f"w-{d}"]
        assert nfold > 0, (d, nfold)
        assert not {(c.device, c.op, c.stat) for c in cs if c.device == d} & group_rows, d
    lines = header_lines(cmp)
    assert any(x.startswith("folded: ") for x in lines), lines
    _, _, _, every = _rows(cmp, True)
    assert all(nfold == 0 for _, _, nfold in every)
    assert sum(len(cs) for _, cs, _ in every) > sum(len(cs) for _, cs, _ in groups)


def test_report_marks_sync_threads_on_devices_outside_the_run(tmp_path: pathlib.Path) -> None:
    """A daemon's thread table is not scoped by --devices: a thread whose syncs went to a
    device the run did not record is marked in the report (and in_run false in JSON)."""
    import json as _json

    from iopulse.report.tables import grids, json_report
    path = str(tmp_path / "run.iopulse")
    updates = []
    for seq in range(1, 4):
        u = make_update(seq, devices=("loop3",))
        t = u.threads.add(pid=9, tid=9, comm="stranger", process="fio", osd_id=-1,
                          device="loop0", fdatasync=5)
        t.latency_ns.CopyFrom(u.threads[0].latency_ns)
        u.threads[0].device = "loop3"
        updates.append(u)
    write_phase_run(path, [updates])
    run = load_run(path)
    rows, trows = phase_rows(run)
    g = grids(run, rows, trows)
    text = "\n".join(" ".join(r) for r in g.threads[0].rows)
    assert "loop0 (not in the run)" in text, text
    assert "loop3 (not in the run)" not in text and "loop3" in text, text
    doc = _json.loads(json_report(run, rows, trows))
    assert {t["thread"]: t["in_run"] for t in doc["threads"]} == \
        {"stranger": False, "bstore_kv_sync": True}


def test_a_loop_device_adds_the_device_of_its_backing_file(tmp_path: pathlib.Path) -> None:
    from iopulse.phases.fio_devices import _with_stack
    backing = tmp_path / "disk.img"
    backing.write_bytes(b"x")
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    _fake_sysfs(sysfs, os.stat(backing).st_dev, "vdz")
    loop = tmp_path / "devices" / "loop9"
    (loop / "loop").mkdir(parents=True)
    (loop / "loop" / "backing_file").write_text(f"{backing}\n")
    seen: set[str] = set()
    _with_stack("loop9", str(loop), seen, str(sysfs))
    assert seen == {"loop9", "vdz"}


def test_a_jobs_devices_on_one_host_leave_the_other_hosts_without_rows(
        tmp_path: pathlib.Path) -> None:
    """A job whose device one host of the run has: that host shows it, the other host none
    of its devices (they carried other jobs' IO); a job whose devices no host has (fio on a
    client writing to an RBD image) has every device of every host."""
    path = str(tmp_path / "run.iopulse")
    write_phase_run(path, [[make_update(s, devices=("sdb", "sdc")) for s in range(1, 4)],
                           [make_update(s, devices=("sdd", "sde")) for s in range(1, 4)]])
    run = load_run(path)
    (p,) = run.phases()
    p.labels["devices"] = "sdb"
    rows, _ = phase_rows(run, [p])
    assert [(r.host, r.device) for r in rows if r.device_class != "osd"] == \
        [(run.hosts[0].name, "sdb")], rows
    p.labels["devices"] = "rbd0"
    rows, _ = phase_rows(run, [p])
    assert {r.device for r in rows if r.device_class != "osd"} == {"sdb", "sdc", "sdd", "sde"}


def test_compare_never_puts_the_disk_other_tenants_keep_busy_under_test(
        tmp_path: pathlib.Path) -> None:
    """The disk under the loop devices' files carries three times loop1's writes (other
    tenants': busy-node.sh's fdatasync writes on the root disk): the jobs' loop devices are
    under test, the disk in no phase."""
    from iopulse.analysis.compare import comparison
    paths = []
    for n in range(4):
        paths.append(str(tmp_path / f"r{n}.iopulse"))
        _write_run(paths[-1], bump=n, vda=1200)
    runs = [load_run(p) for p in paths]
    cmp = comparison(runs[:2], runs[2:])
    by = {p.name: p for p in cmp.phases}
    for d in DEVICES:
        assert [dk[1] for dk in by[f"w-{d}"].under_test] == [d], by[f"w-{d}"]
    assert [dk[1] for dk in by["group1"].under_test] == list(DEVICES), by["group1"]
