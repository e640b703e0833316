"""Loop devices attached and detached while the daemon runs: no restart needed."""
import os
import signal
import time

from iopulse_testlib import run_fio, wait_idle


def _listed(iv, name, backing=None):
    """Entries for device name; with backing, only while it is our loop device (another
    user may attach the same node after we detach it: then it is rightly listed)."""
    return [d for d in iv["devices"]
            if d["name"] == name and (backing is None or d["model"] == backing)]


def test_loop_attach_detach(loopdev, daemon):
    d = daemon("--json", "-i", "1s", "--devices", "loop*")
    d.next_interval(timeout=5)

    lo = loopdev("64M")
    run_fio(name="iop-hotplug", filename=lo.path, rw="randread", bs="4k", ioengine="psync",
            direct=1, size="64M", number_ios=256)
    iv = d.wait_for(lambda iv: any(x["ops"]["read"]["ios"] > 0 for x in _listed(iv, lo.name)),
                    timeout=8, what=f"{lo.name} with reads")
    dev = _listed(iv, lo.name)[0]
    assert dev["model"] == lo.backing, f"model {dev['model']!r}, backing file {lo.backing}"
    print(f"\n{lo.name} ({lo.majmin}) appeared in interval {iv['seq']}: dev {dev['dev']}, "
          f"model {dev['model']!r}, reads {dev['ops']['read']['ios']}")
    assert dev["dev"] == lo.majmin, f"dev {dev['dev']} != sysfs {lo.majmin}"

    d.drain()
    lo.detach()
    after = [d.next_interval(timeout=5) for _ in range(5)]
    present = [(x["seq"], bool(_listed(x, lo.name, lo.backing))) for x in after]
    other = [(x["seq"], d["model"]) for x in after for d in _listed(x, lo.name)
             if d["model"] != lo.backing]
    print(f"  after detach (seq, listed with our backing file): {present}")
    if other:
        print(f"  {lo.name} re-attached by someone else meanwhile: {other}")
    assert not any(p for _, p in present[2:]), \
        f"{lo.name} ({lo.backing}) still listed 3+ intervals after detach: {present}"
    assert d.running(), f"daemon died after the detach: {d.describe()}"
    time.sleep(0.5)
    assert d.running(), f"daemon died after the detach: {d.describe()}"
    rc = d.stop(signal.SIGTERM)
    assert rc == 0, f"iopulsed exit code {rc} on SIGTERM: {d.describe()}"


def test_released_slot_serves_the_next_device(loopdev, daemon):
    """One device slot more than the devices present now (any of them may do IO and hold a
    slot): the loop device made next takes the last one; the one made after it gets a slot
    only when the first is detached and its slot handed back, and must count from zero."""
    slots = 1 + sum(1 for n in os.listdir("/sys/block")
                    if int(open(f"/sys/block/{n}/size").read()) > 0)
    d = daemon("--json", "-i", "1s", "--devices", "loop*", "--max-devices", str(slots))
    d.next_interval(timeout=5)
    a = loopdev("64M")
    run_fio(name="iop-slot-a", filename=a.path, rw="randread", bs="4k", ioengine="psync",
            direct=1, size="64M", number_ios=3000)
    d.wait_for(lambda iv: any(x["ops"]["read"]["ios"] > 0 for x in _listed(iv, a.name)),
               timeout=8, what=f"{a.name} with reads")
    b = loopdev("64M")         # another device number, idle so far
    a.detach()
    for _ in range(4):         # released, then recycled an interval later
        d.next_interval(timeout=5)
    before = wait_idle(b.name)
    run_fio(name="iop-slot-b", filename=b.path, rw="randread", bs="4k", ioengine="psync",
            direct=1, size="64M", number_ios=500)
    truth = wait_idle(b.name) - before
    time.sleep(2.5)
    rc = d.stop(signal.SIGTERM)
    assert rc == 0, f"iopulsed exit code {rc} on SIGTERM: {d.describe()}"
    ivs = d.all_intervals()
    seen = sum(x["ops"]["read"]["ios"] for iv in ivs for x in _listed(iv, b.name, b.backing))
    no_slot = sum(iv.get("drops", {}).get("no_slot", 0) for iv in ivs)
    print(f"\n{b.name} after {a.name}'s slot was released: reads {seen}, diskstats "
          f"{truth.reads}, drops.no_slot {no_slot}")
    assert truth.reads >= 500
    assert seen == truth.reads, f"{b.name}: {seen} reads reported, diskstats {truth.reads}"
