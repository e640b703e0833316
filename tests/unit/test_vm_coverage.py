#!/usr/bin/env python3
"""The VM matrix's request-mode coverage: the empty PREFLUSH writes a trace holds (an fsync's,
or a file system's own) are counted from blktrace's Q events (tests/vm/blktruth.py pair()),
and a coverage reason the guest gave with fio's sync calls as the allowance goes when the
trace's count makes the goal, stays (with the count) when it does not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
import blktruth  # noqa: E402

W, FL = blktruth.TC_WRITE, blktruth.TC_FLUSH
Q, C = blktruth.TA_QUEUE, blktruth.TA_COMPLETE


def ev(t, cat, ta, sector=0, nbytes=0):
    return (t, 0, 0, (cat << 16) | ta, sector, nbytes, b"", None, 1)


def cell(untimed, timed, ios):
    return {"reasons": ["[request] latency coverage 98.13% < 99.95% (0 unseen, 9 untimed, "
                        "8 of them allowed)", "something else"],
            "modes": {"request": {"per_disk": {"sdf": {"timed": timed, "untimed": untimed,
                                                       "diskstats_ios": ios}}}}}


def main() -> int:
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    # two empty PREFLUSH writes (no data), one PREFLUSH write with data, a data write
    tr = blktruth.pair([ev(10, W | FL, Q), ev(20, W | FL, Q), ev(30, W | FL, Q, 800, 4096),
                        ev(40, W, Q, 900, 4096), ev(50, W | FL, C)])
    check("empty PREFLUSH writes found", tr.empty_preflush, [10, 20])
    c = cell(untimed=9, timed=473, ios=482)
    blktruth.request_coverage(c, "sdf", False, 9)
    check("9 untimed, 9 empty PREFLUSH writes: the reason goes", c["reasons"],
          ["something else"])
    check("the count kept", c["modes"]["request"]["per_disk"]["sdf"]["empty_preflush_truth"],
          9)
    c = cell(untimed=9, timed=473, ios=482)
    blktruth.request_coverage(c, "sdf", False, 8)
    check("one untimed IO more than the trace's empty writes: the reason stays",
          [r for r in c["reasons"] if r.startswith("[request]")],
          ["[request] latency coverage 98.13% < 99.95% (0 unseen, 9 untimed, 8 of them "
           "allowed) (8 empty PREFLUSH writes in the trace)"])
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
