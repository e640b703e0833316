"""rados bench: phases from its command line (live) and from its saved text output.

The format is what Ceph's src/common/obj_bencher.cc prints (status_printer, write_bench,
seq_read_bench, rand_read_bench), read in its pre-2017 and current versions:

- a write run opens with "Maintaining T concurrent writes of B bytes to objects of size O for
  up to S seconds or M objects" (rados prints "hints = 1" before that in newer releases);
- a status thread prints a header ("  sec Cur ops   started  finished  avg MB/s  cur MB/s
  last lat(s)  avg lat(s)", "last lat  avg lat" before 2017) and then, once a second, a line
  "sec cur_ops started finished avg_MB/s cur_MB/s last_lat avg_lat";
- at the top of every 20th second (i = 20, 40, ...), before that second's status line, it
  prints the wall-clock time and the latencies so far: "<time> min lat: X max lat: Y avg
  lat: Z". The time is utime_t::localtime: "2019-04-25 14:35:48.562404" up to Nautilus,
  "2024-01-15T10:00:20.123456+0000" (ISO 8601 with strftime %z) since Octopus (ceph PR
  27799, 2019);
- with --show-time every status line and the first line of the summary are prefixed by that
  time and a space;
- the summary: "Total time run:" (seconds since the run's start), "Total writes made:" or
  "Total reads made:", "Write size:"/"Read size:" (op size), "Object size:", "Bandwidth
  (MB/sec):", ..., "Min latency(s):". Seq and rand reads print the same words.

Edges: the status thread starts with the run, so its i-th iteration happens about i seconds
after the start: start = time of the first dated line - (sec of the status line before it +
1), or without one, with --show-time, the time of the first status line - its sec; end =
start + "Total time run". Accurate to about 1 s (accuracy_s 1.0). A run with neither (shorter
than 20 s, no --show-time) is placed back to back before the next anchored run, or before the
time the caller says the last run ended (end_realtime_ns, e.g. the output file's modification
time), else after the previous anchored run: accurate to about 5 s (accuracy_s 5.0). Times
without an offset (the older form, the host's local time) are read in the local time of the
machine importing them: set TZ to the cluster's time zone if it differs.
"""
from __future__ import annotations

import calendar
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any, Optional

MODES = ("write", "seq", "rand")
DEFAULT_THREADS = "16"                  # rados: concurrent_ios = 16
DEFAULT_OP_SIZE = 4 << 20               # rados: default_op_size = 1 << 22
_UNITS = "KMGTPE"
# options whose value we keep, and other options of rados that take a value
_KEEP = {"-p": "pool", "--pool": "pool", "-t": "threads", "--concurrent-ios": "threads",
         "-b": "op_size", "--block-size": "op_size", "-O": "object_size",
         "--object-size": "object_size"}
_SKIP = {"-c", "--conf", "-k", "--keyring", "-n", "--name", "-i", "--id", "--cluster",
         "--run-name", "--max-objects", "-f", "--format", "-o", "--output", "-N",
         "--namespace", "--prefix", "--object-locator", "--target-pool", "--target-locator",
         "--target-nspace", "-s", "--snap", "-S", "--snapid", "--pgid", "--offset",
         "--input-file", "--obj-name-file", "--keyfile", "-m", "--mon-host"}

_TIME = (r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d+))?"
         r"(Z|[+-]\d\d:?\d\d)?")
_STAMPED = re.compile(r"^\s*" + _TIME + r"\s+(.*)$")
_STATUS = re.compile(r"^\s*(\d+)\s+(\d+)\s+\d+\s+\d+(?:\s+\S+){4}\s*$")
_MAINTAIN = re.compile(r"Maintaining (\d+) concurrent writes of (\d+) bytes"
                       r"(?: to objects of size (\d+))? for up to (\d+) seconds")
_SUMMARY = {"Total time run:": "total", "Total writes made:": "writes",
            "Total reads made:": "reads", "Write size:": "op_size", "Read size:": "op_size",
            "Object size:": "object_size"}


def _size(s: str) -> str:
    """Bytes of a size as rados reads it (strict_iecstrtoll: K, M, G... are powers of 1024),
    as a string; s itself when it is not a size."""
    m = re.fullmatch(r"(\d+)\s*(?:([KMGTPE])(?:i?B)?|B)?", s.strip(), re.IGNORECASE)
    if not m:
        return s
    unit = m.group(2)
    return str(int(m.group(1)) << (10 * (_UNITS.index(unit.upper()) + 1) if unit else 0))


def labels_from_argv(argv: list[str]) -> dict[str, str]:
    """Labels of `rados [-p POOL] bench SECONDS write|seq|rand [-t N] [-b SIZE] [-O SIZE] ...`:
    mode, seconds, pool (when given), threads (rados' default 16) and, for writes, op_size
    and object_size in bytes (default 4 MiB; the object size defaults to the op size, and an
    op size above the object size is cut to it, as rados does). Never raises."""
    opts: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, inline = a.partition("=")
        if name.startswith("--"):
            name = name.replace("_", "-")       # ceph_argparse: '_' and '-' are the same
        if name in _KEEP or name in _SKIP:
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if name in _KEEP:
                opts[_KEEP[name]] = value
            i += 1 if eq else 2
            continue
        if not a.startswith("-"):
            positional.append(a)
        i += 1
    out: dict[str, str] = {}
    if "bench" in positional:
        rest = positional[positional.index("bench") + 1:]
        if rest and rest[0].isdigit():
            out["seconds"] = rest.pop(0)
        if rest and rest[0] in MODES:
            out["mode"] = rest[0]
    if opts.get("pool"):
        out["pool"] = opts["pool"]
    out["threads"] = opts.get("threads") or DEFAULT_THREADS
    if out.get("mode") == "write":
        op = _size(opts["op_size"]) if opts.get("op_size") else str(DEFAULT_OP_SIZE)
        obj = _size(opts["object_size"]) if opts.get("object_size") else op
        if op.isdigit() and obj.isdigit() and int(obj) < int(op):
            op = obj
        out["op_size"], out["object_size"] = op, obj
    return out


def _time_ns(date: str, hms: str, frac: Optional[str], zone: Optional[str]) -> int:
    st = time.strptime(f"{date} {hms}", "%Y-%m-%d %H:%M:%S")
    if not zone:    # rados printed local time: the importing host's time zone ($TZ) decides
        return int(time.mktime(st)) * 1_000_000_000 + int(((frac or "") + "000000000")[:9])
    secs = calendar.timegm(st)
    if zone != "Z":
        z = zone.replace(":", "")
        secs -= (1 if z[0] == "+" else -1) * (int(z[1:3]) * 3600 + int(z[3:5]) * 60)
    return secs * 1_000_000_000 + int(((frac or "") + "000000000")[:9])


@dataclass
class _Run:
    header: dict[str, str] = field(default_factory=dict)     # from "Maintaining ..."
    command: dict[str, str] = field(default_factory=dict)    # a rados command line before it
    summary: dict[str, str] = field(default_factory=dict)
    last_sec: Optional[int] = None
    max_ops: int = 0
    dated: Optional[int] = None         # start (ns) from the first dated line
    shown: Optional[int] = None         # start (ns) from the first --show-time status line
    start: Optional[int] = None
    end: Optional[int] = None
    accuracy: float = 1.0

    @property
    def closed(self) -> bool:
        return "total" in self.summary

    @property
    def duration_ns(self) -> int:
        try:
            return int(round(float(self.summary["total"]) * 1e9))
        except (ValueError, OverflowError):
            raise ValueError(f"rados bench output: 'Total time run: {self.summary['total']}' "
                             "is not a number of seconds") from None


def _command(text: str) -> dict[str, str]:
    """Labels of a rados bench command line quoted in the output (a shell trace, a prompt)."""
    try:
        words = shlex.split(text)
    except ValueError:
        return {}
    for i, w in enumerate(words):
        if w.rsplit("/", 1)[-1] == "rados":
            found = labels_from_argv(words[i:])
            return found if "mode" in found else {}
    return {}


def _runs(text: str) -> list[_Run]:
    runs: list[_Run] = []
    pending: dict[str, str] = {}

    def current(new: bool) -> _Run:
        nonlocal pending
        if new or not runs or runs[-1].closed:
            runs.append(_Run(command=pending))
            pending = {}
        return runs[-1]

    for line in text.splitlines():
        stamp: Optional[int] = None
        rest = line.strip()
        m = _STAMPED.match(line)
        if m:
            try:
                stamp, rest = _time_ns(*m.group(1, 2, 3, 4)), m.group(5).strip()
            except ValueError:          # not a date after all (month 13...)
                pass
        if rest.startswith("min lat:"):
            run = runs[-1] if runs and not runs[-1].closed else None
            if stamp is not None and run and run.last_sec is not None and run.dated is None:
                run.dated = stamp - (run.last_sec + 1) * 1_000_000_000
            continue
        s = _STATUS.match(rest)
        if s:
            sec = int(s.group(1))
            last = runs[-1].last_sec if runs else None
            run = current(last is not None and sec <= last)    # a cut run, then another
            run.last_sec, run.max_ops = sec, max(run.max_ops, int(s.group(2)))
            if stamp is not None and run.shown is None:
                run.shown = stamp - sec * 1_000_000_000
            continue
        h = _MAINTAIN.search(rest)
        if h:
            run = current(bool(runs) and (runs[-1].header != {} or
                                          runs[-1].last_sec is not None))
            run.header = {"threads": h.group(1), "op_size": h.group(2),
                          "object_size": h.group(3) or h.group(2), "seconds": h.group(4)}
            continue
        if rest.startswith("hints =") or "sec Cur ops" in rest:
            current(False)
            continue
        for key, what in _SUMMARY.items():
            if rest.startswith(key):
                if what == "total" or runs:
                    run = current(False) if what == "total" else runs[-1]
                    run.summary[what] = rest[len(key):].strip()
                break
        else:
            if "bench" in rest and "rados" in rest:
                found = _command(rest)
                if found:
                    pending = found
    return [r for r in runs if r.closed]


def _labels(run: _Run, given: dict[str, str]) -> dict[str, str]:
    write = "writes" in run.summary or bool(run.header)
    cmd = run.command or given
    same = cmd.get("mode") in MODES and (cmd.get("mode") == "write") == write
    mode = "write" if write else (cmd["mode"] if same else "read")
    labels = {"mode": mode}
    pool = cmd.get("pool") or given.get("pool")
    if pool:
        labels["pool"] = pool
    if same:            # the command line of this run: its requested seconds and -t
        labels.update({k: cmd[k] for k in ("seconds", "threads") if cmd.get(k)})
    labels.update(run.header)
    if "threads" not in labels and run.max_ops:
        labels["threads"] = str(run.max_ops)            # ops in flight: -t in steady state
    for k in ("op_size", "object_size"):
        if run.summary.get(k, "").isdigit():
            labels[k] = run.summary[k]
    return labels


def phases_from_output(text: str, *, end_realtime_ns: Optional[int] = None,
                       argv: Optional[list[str]] = None) -> list[dict[str, Any]]:
    """Phase events (see phases/fio.py) for each rados bench run in text, in start order.
    argv: the command that made the output, for the pool and a read run's mode (seq/rand).
    end_realtime_ns: when the last run ended, for runs without a dated line."""
    runs = _runs(text)
    if not runs:
        raise ValueError("not rados bench output: no run with a 'Total time run:' summary")
    for r in runs:
        r.start = r.dated if r.dated is not None else r.shown
    anchored = [r.start is not None for r in runs]
    for r, a in zip(runs, anchored):
        if a:
            r.end = (r.start or 0) + r.duration_ns
    # the others back to back before the next anchored run (or the given end of the last
    # one), then after the previous one
    t = end_realtime_ns
    for r, a in zip(reversed(runs), reversed(anchored)):
        if a:
            t = r.start
        elif t is not None:
            r.start, r.end, r.accuracy = t - r.duration_ns, t, 5.0
            t = r.start
    t = None
    for r in runs:
        if r.end is not None:
            t = r.end
        elif t is not None:
            r.start, r.end, r.accuracy = t, t + r.duration_ns, 5.0
            t = r.end
    if any(r.start is None for r in runs):
        raise ValueError(
            "rados bench output has no time anchor: no dated 'min lat:' line (rados prints one "
            "every 20 s, so shorter runs have none) and no --show-time timestamps; give the "
            "time the last run ended (end_realtime_ns; iopulse phases import --end-time "
            "2026-11-23T10:15:00Z, or keep the output file's modification time)")
    given = labels_from_argv(argv) if argv else {}
    events = [{"type": "phase", "name": f"rados-bench-{lab['mode']}", "labels": lab,
               "source": "rados-bench", "accuracy_s": r.accuracy,
               "start_realtime_ns": int(r.start or 0), "end_realtime_ns": int(r.end or 0)}
              for r in runs for lab in [_labels(r, given)]]
    events.sort(key=lambda e: e["start_realtime_ns"])
    return events
