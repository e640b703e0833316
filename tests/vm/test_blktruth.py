"""blktruth's verdicts on made-up cells: a queue wait moved past the truth's slowest by a long
stall is held to its IO's own end, a stale stamp is not; the guest's stalls widen the margin
only inside the window."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import blktruth  # noqa: E402
from blktruth import IO, STALL_NS, Histogram, bucket_index, compare, queue_ceiling, \
    stall_margin, truth_values, TAIL  # noqa: E402

K = 5
MS = 1_000_000


def hist_of(values: list[int]) -> Histogram:
    idx = [bucket_index(v, K) for v in values]
    return Histogram(K, idx, [1] * len(idx))


def reads(q2d_ms: list[float], d2c_ms: float) -> list[IO]:
    """Reads each queued q2d ms (Q at 0) and serviced d2c ms."""
    out = []
    for i, w in enumerate(q2d_ms):
        t = i * 1000 * MS
        d = t + int(w * MS)
        out.append(IO("read", i * 8, t, d, d + int(d2c_ms * MS), False, 0, False, 4096))
    return out


def verdicts(ios: list[IO], ours_ms: list[float], stall: int = STALL_NS):
    values = truth_values(ios, "read", "Q2D")
    return compare(values, hist_of([int(v * MS) for v in ours_ms]), "read", "queue", "Q2D",
                   TAIL, stall_ns=stall, ceiling=queue_ceiling(ios, "read", "Q2D"))


def test_moved_dispatch_held_to_the_ios_end():
    # 200 reads, the slowest queued 330 ms and serviced 300 ms; iopulse's dispatch stamp of
    # that one taken 160 ms late (its task preempted between blktrace's probe and ours)
    q = [1.0] * 199 + [330.0]
    ios = reads(q, 300.0)
    ours = [1.0] * 199 + [490.0]
    assert all(v.ok for v in verdicts(ios, ours))
    # without the ceiling the stall margin alone refuses it
    values = truth_values(ios, "read", "Q2D")
    assert not all(v.ok for v in compare(values, hist_of([int(v * MS) for v in ours]), "read",
                                         "queue", "Q2D", TAIL, stall_ns=STALL_NS))


def test_queue_wait_longer_than_the_io_fails():
    # a stale submission stamp: 2 s of queue wait for an IO that took 630 ms in all
    ios = reads([1.0] * 199 + [330.0], 300.0)
    assert not all(v.ok for v in verdicts(ios, [1.0] * 199 + [2000.0]))


def test_stalls_widen_the_margin_inside_the_window_only():
    t0, t1 = 10_000 * MS, 20_000 * MS
    inside = [[15_000 * MS, 180 * MS]]
    assert stall_margin(inside, t0, t1) == 180 * MS + blktruth.STALLWATCH_PERIOD_NS
    assert stall_margin([[9_000 * MS, 500 * MS], [25_000 * MS, 500 * MS]], t0, t1) == STALL_NS
    # a stall seen as 20 ms late may have been up to one watcher period longer
    assert stall_margin([[10_100 * MS, 20 * MS]], t0, t1) == \
        max(STALL_NS, 20 * MS + blktruth.STALLWATCH_PERIOD_NS)
    # a service max 174 ms past the truth's slowest passes with the stall seen, not without
    ios = reads([1.0] * 200, 1.0)
    ios[-1].c += 504 * MS
    values = truth_values(ios, "read", "D2C")
    ours = hist_of([1 * MS] * 199 + [679 * MS])
    assert not all(v.ok for v in compare(values, ours, "read", "service", "D2C", TAIL,
                                         stall_ns=STALL_NS))
    assert all(v.ok for v in compare(values, ours, "read", "service", "D2C", TAIL,
                                     stall_ns=stall_margin(inside, t0, t1)))
