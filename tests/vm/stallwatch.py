#!/usr/bin/env python3
"""How late one CPU of the guest wakes a real-time task: the stalls a tracepoint handler on it
may have sat through (qemu's vCPU thread preempted on the host, interrupts off in the guest).

    stallwatch.py CPU FILE      # until SIGTERM; FILE gets "END_NS LATE_NS" per late wake-up

Pinned to CPU at SCHED_FIFO (the guest's own tasks do not delay it), it sleeps PERIOD and
writes each wake-up later than REPORT_NS past it: the stall ended at END_NS (CLOCK_MONOTONIC,
blktrace's clock) and lasted about LATE_NS. guest.py runs one per CPU beside blktrace; blktruth
widens a cell's margin for a moved IO to the longest stall inside its window."""
import os
import signal
import sys
import time

PERIOD_NS = 100_000_000
REPORT_NS = 5_000_000


def main() -> None:
    cpu, path = int(sys.argv[1]), sys.argv[2]
    os.sched_setaffinity(0, {cpu})
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    except OSError as e:
        print(f"stallwatch {cpu}: SCHED_FIFO refused ({e}); wake-ups include the guest's "
              f"own scheduling", file=sys.stderr)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(path, "w", buffering=1) as f:
        prev = time.monotonic_ns()
        while not stop:
            time.sleep(PERIOD_NS / 1e9)
            now = time.monotonic_ns()
            late = now - prev - PERIOD_NS
            if late > REPORT_NS:
                f.write(f"{now} {late}\n")
            prev = now


if __name__ == "__main__":
    main()
