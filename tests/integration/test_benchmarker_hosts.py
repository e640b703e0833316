"""A Ceph benchmarker's multi-device session on real daemons, real fio and four loop devices,
one fast (its file in /dev/shm) and three slow (files on the root disk), each the data device
of an OSD (a Ceph OSD tree of symlinks, as ceph-volume leaves them): a fio job file of two
stonewalled groups with one job per device in each, recorded by one daemon watching all four
(one host) and by two daemons watching two each (two hosts), then compared one host against
two. Ground truth: fio's own JSON report, per job."""
from __future__ import annotations

import json
import os

import pytest

from grpc_testlib import iopulse_cmd
from iopulse_testlib import wait_idle
from test_report_files import run_ok

DEVICES = 4
GROUPS = ("rw4k", "seq128k")
JOB = {"rw4k": "rw=randwrite\nbs=4k\nioengine=psync\n",
       "seq128k": "rw=write\nbs=128k\nioengine=libaio\niodepth=4\n"}
RUNS = {"one": ("one-a", "one-b"), "two": ("two-a", "two-b")}
OSD_DATA = "osd.*"


# the slow devices' 4k writes held to this rate, so that the fast one (memory-backed, not
# held) carries several times their IOs whatever else the machine does: on a busy node the
# disk-backed ones alone were not slow enough (8,548 against 4,728 in a second)
SLOW_IOPS = 1000


def job_file(loops: list) -> str:
    text = "[global]\ndirect=1\nsize=24M\ntime_based=1\nruntime=1\n"
    for g, group in enumerate(GROUPS):
        for n, lo in enumerate(loops):
            text += (f"\n[{group}-{lo.name}]\nfilename={lo.path}\n" + JOB[group] +
                     ("stonewall\n" if g and not n else "") +
                     (f"rate_iops={SLOW_IOPS}\n" if group == "rw4k" and n else ""))
    return text


def osd_tree(root, loops: list, ids: range) -> str:
    """A Ceph OSD directory: ceph-N/block -> the loop device of osd.N."""
    for i in ids:
        os.makedirs(root / f"ceph-{i}")
        os.symlink(loops[i].path, root / f"ceph-{i}" / "block")
    return str(root)


def report_json(run: str) -> dict:
    return json.loads(run_ok(iopulse_cmd("report", run, "--format", "json")).stdout)


def compare_json(*args: str) -> dict:
    return json.loads(run_ok(iopulse_cmd("compare", "--format", "json", *args)).stdout)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory, daemon_bin, default_config, require_root):
    """Two recordings by one daemon watching the four devices (osd.0-3 on one host), and two
    by two daemons watching two each (osd.0-1 on one, osd.2-3 on the other)."""
    from conftest import DaemonFactory, LoopFactory

    tmp = tmp_path_factory.mktemp("hosts")
    loops, daemons = LoopFactory(), DaemonFactory(daemon_bin, tmp, default_config)
    try:
        los = [loops("64M", backing_dir="/dev/shm" if n == 0 else "/var/tmp", fill=True)
               for n in range(DEVICES)]
        names = [lo.name for lo in los]

        def daemon(tree: str, ids: range):
            return daemons("-i", "1s", "--devices", ",".join(names[i] for i in ids),
                           "--threads", "fio*",
                           "--ceph-osd-dir", osd_tree(tmp / tree, los, ids))

        targets = {"one": [daemon("osd-one", range(DEVICES))],
                   "two": [daemon("osd-h1", range(2)), daemon("osd-h2", range(2, DEVICES))]}
        job = tmp / "jobs.fio"
        job.write_text(job_file(los))
        runs, fio = {}, {}
        for pair in zip(*RUNS.values()):       # interleaved: one host, two hosts, ...
            for name in pair:
                side = name.split("-")[0]
                runs[name] = str(tmp / f"{name}.iopulse")
                for lo in los:
                    wait_idle(lo.name)
                argv = ["record", "--force", "-o", runs[name]]
                for d in targets[side]:
                    argv += ["--target", f"unix:{d.socket}"]
                run_ok(iopulse_cmd(*argv, "--", "fio", "--output-format=json",
                                   f"--output={tmp / name}.json", str(job)))
                fio[name] = {j["jobname"]: j for j in
                             json.loads((tmp / f"{name}.json").read_text())["jobs"]}
        yield dict(los=los, names=names, runs=runs, fio=fio,
                   reports={n: report_json(p) for n, p in runs.items()})
    finally:
        daemons.cleanup()
        errors = loops.cleanup()
        assert not errors, errors


def _rows(doc: dict, phase: str) -> list[dict]:
    return [r for r in doc["devices"] if r["phase"] == phase]


def test_each_job_has_its_own_device_with_fios_count_under_its_group(hosts):
    """Jobs that ran at once are siblings under their group; each job's phase has its own
    device's row only, with fio's count of its writes; the group has every device."""
    for name, doc in hosts["reports"].items():
        parents = {p["name"]: p["parent"] for p in doc["phases"]}
        for g, group in enumerate(GROUPS, 1):
            for n, dev in enumerate(hosts["names"]):
                job = f"{group}-{dev}"
                assert parents[job] == f"group{g}", (name, job, parents)
                rows = _rows(doc, job)
                assert [(r["device"], r["osd"]) for r in rows] == [(dev, f"osd.{n} block")], \
                    (name, job, rows)
                assert rows[0]["writes"] == hosts["fio"][name][job]["write"]["total_ios"], \
                    (name, job, rows[0]["writes"])
            devs = {r["device"] for r in _rows(doc, f"group{g}")
                    if r["device_class"] != "osd"}
            assert devs == set(hosts["names"]), (name, devs)


def test_the_data_devices_rows_of_each_host_and_the_cluster_are_fios_writes(hosts):
    """osd.* merges a host's OSD data devices; with two hosts the cluster's row (host all)
    merges both: each is the sum of fio's writes of the jobs on those devices, exactly."""
    for name, doc in hosts["reports"].items():
        fio = hosts["fio"][name]
        for g, group in enumerate(GROUPS, 1):
            want = [fio[f"{group}-{dev}"]["write"]["total_ios"] for dev in hosts["names"]]
            data = {r["host"]: r for r in _rows(doc, f"group{g}") if r["device"] == OSD_DATA}
            if name.startswith("one"):
                assert len(data) == 1, (name, data)
                (row,) = data.values()
                assert row["writes"] == sum(want), (name, group, row["writes"], want)
                continue
            h1, h2 = (h["name"] for h in doc["hosts"])
            assert data[h1]["writes"] == sum(want[:2]), (name, group, data, want)
            assert data[h2]["writes"] == sum(want[2:]), (name, group, data, want)
            assert data["all"]["writes"] == sum(want), (name, group, data, want)
            assert data["all"]["osd"] == "data devices"


def test_one_host_against_two_matches_by_osd_and_the_cluster(hosts):
    """By host nothing of a one-host run meets a two-host run (and a note names the host the
    base lacks); by OSD every OSD and the cluster's row are on both sides, and a group's
    four OSDs (one four times as fast as the others) are all under test with the cluster."""
    runs = hosts["runs"]
    args = [*(runs[n] for n in RUNS["one"]), "--", *(runs[n] for n in RUNS["two"])]
    by_host = compare_json(*args)
    assert all(c["only"] for c in by_host["changes"] if c["op"] != "sync"), \
        [c for c in by_host["changes"] if not c["only"]][:3]
    assert any(n.startswith("not in the base runs: host") for n in by_host["notes"]), \
        by_host["notes"]
    by_osd = compare_json("--match", "osd", *args)
    osds = [f"osd.{n}" for n in range(DEVICES)]
    # the fast device carried more than twice the IOs of any slow one (fio's counts): the
    # busiest-device rule alone would have left the slow ones out
    for name in RUNS["one"] + RUNS["two"]:
        ios = [hosts["fio"][name][f"rw4k-{dev}"]["write"]["total_ios"]
               for dev in hosts["names"]]
        print(f"{name}: rw4k writes per device {ios}")
        assert ios[0] > 2 * max(ios[1:]), (name, ios)
    for g, group in enumerate(GROUPS, 1):
        write = {c["device"]: c for c in by_osd["changes"]
                 if c["phase"] == f"group{g}" and c["op"] == "write" and c["stat"] == "iops"}
        assert set(write) == set(osds) | {OSD_DATA}, (group, sorted(write))
        assert not any(c["only"] for c in write.values()), write
        (ph,) = [p for p in by_osd["phases"] if p["phase"] == f"group{g}"]
        dut = [d["device"] for d in ph["under_test"]]
        assert sorted(dut) == sorted(osds + [OSD_DATA]), (group, dut, ph["under_test_why"])
    for dev in hosts["names"]:
        (ph,) = [p for p in by_osd["phases"] if p["phase"] == f"rw4k-{dev}"]
        n = hosts["names"].index(dev)
        assert [d["device"] for d in ph["under_test"]] == [f"osd.{n}"], ph
