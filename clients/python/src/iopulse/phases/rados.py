"""rados bench: phases from its command line (live) and from its saved text output.

The output format is Ceph's src/common/obj_bencher.cc: a "Maintaining N concurrent writes of
B bytes to objects of size O for up to S seconds" line (writes), a status line per second
under a "sec Cur ops started finished ..." header, every 20 seconds a line starting with the
wall-clock time ("2019-04-25 14:35:48.562404" in older releases, "2024-01-15T10:00:20.123456
+0000" in newer ones) followed by "min lat: ... max lat: ... avg lat: ...", and a summary
("Total time run:", "Total writes made:" or "Total reads made:", "Write size:"/"Read size:",
"Object size:", ...).

Edges: the status printer writes a dated line at the top of every 20th second, after the
status line of the second before, so start = its time minus that second + 1, and end = start +
"Total time run": accurate to about 1 s. Without a dated line
(runs shorter than 20 s), the caller gives the time the last run ended (e.g. the output file's
modification time) and runs are taken as back to back before it: accurate to about 5 s. Times
without an offset are local time, as rados prints them.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Optional

SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2,
              "G": 1024**3, "GB": 1024**3}
_DATED = re.compile(r"^\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d{4})?\s+min lat:")
_STAMP = re.compile(r"^\s*\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d{4})?\s+")
_STATUS = re.compile(r"^\s*(\d+)\s+\d+\s+\d+\s+\d+\s+\S+")
_MAINTAIN = re.compile(r"Maintaining (\d+) concurrent writes of (\d+) bytes to objects of size "
                       r"(\d+) for up to (\d+) seconds")


def _size(s: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([KMG]?B?)", s.strip().upper())
    if not m:
        raise ValueError(f"{s!r} is not a size such as 4096, 64K or 4M")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def labels_from_argv(argv: list[str]) -> dict[str, str]:
    """Labels of `rados [-p POOL] bench SECONDS MODE [-t N] [-b SIZE] [-O SIZE] ...`."""
    out: dict[str, str] = {}
    args = argv[1:]
    i = 0
    positional: list[str] = []
    while i < len(args):
        a = args[i]
        val = args[i + 1] if i + 1 < len(args) else ""
        key = a.split("=", 1)[0]
        inline = a.split("=", 1)[1] if "=" in a else None
        if key in ("-p", "--pool", "-t", "--concurrent-ios", "-b", "--block-size", "-O",
                   "--object-size"):
            v = inline if inline is not None else val
            i += 1 if inline is not None else 2
            if key in ("-p", "--pool"):
                out["pool"] = v
            elif key in ("-t", "--concurrent-ios"):
                out["threads"] = v
            elif key in ("-b", "--block-size"):
                out["op_size"] = str(_size(v))
            else:
                out["object_size"] = str(_size(v))
            continue
        if not a.startswith("-"):
            positional.append(a)
        i += 1
    if "bench" in positional:
        rest = positional[positional.index("bench") + 1:]
        if rest and rest[0].isdigit():
            out["seconds"] = rest[0]
            rest = rest[1:]
        if rest:
            out["mode"] = rest[0]
    out.setdefault("threads", "16")
    if out.get("mode") == "write":
        out.setdefault("op_size", out.get("object_size", str(4 << 20)))
        out.setdefault("object_size", out["op_size"])
    return out


def _parse_time(stamp: str, offset: Optional[str]) -> int:
    t = datetime.fromisoformat(stamp.replace(" ", "T"))
    if offset:
        t = datetime.fromisoformat(t.isoformat() + offset[:3] + ":" + offset[3:])
    return int(t.timestamp() * 1e9)      # naive: local time, as rados printed it


def _split_runs(lines: list[str]) -> list[list[str]]:
    """One list of lines per run; a run ends with its summary block."""
    runs: list[list[str]] = [[]]
    for line in lines:
        runs[-1].append(line)
        if line.lstrip().startswith(("Min latency(s):", "Min latency:")):
            runs.append([])
    return [r for r in runs if any("Total time run:" in x for x in r)]


def _summary(run: list[str], key: str) -> Optional[str]:
    for line in run:
        s = line.strip()
        if s.startswith(key):
            return s[len(key):].strip().lstrip(":").strip()
    return None


def phases_from_output(text: str, *, end_realtime_ns: Optional[int] = None,
                       argv: Optional[list[str]] = None) -> list[dict[str, Any]]:
    """Phase events (see phases/fio.py) for each rados bench run in text."""
    runs = _split_runs(text.splitlines())
    if not runs:
        raise ValueError("not rados bench output (no 'Total time run:' summary)")
    base = labels_from_argv(argv) if argv else {}
    events: list[dict[str, Any]] = []
    undated: list[tuple[int, dict[str, Any], int]] = []   # position, event, duration
    for n, run in enumerate(runs):
        total = _summary(run, "Total time run:")
        dur = int(float(total or 0) * 1e9)
        writes = _summary(run, "Total writes made:") is not None
        mode = "write" if writes else (base.get("mode") if base.get("mode") in ("seq", "rand")
                                       else "read")
        labels = {k: v for k, v in base.items() if k in ("pool", "seconds")}
        labels["mode"] = mode
        size = _summary(run, "Object size:")
        op = _summary(run, "Write size:") or _summary(run, "Read size:")
        if size:
            labels["object_size"] = size
        if op:
            labels["op_size"] = op
        for line in run:
            m = _MAINTAIN.search(line)
            if m:
                labels["threads"], labels["op_size"] = m.group(1), m.group(2)
                labels["object_size"], labels["seconds"] = m.group(3), m.group(4)
        labels.setdefault("threads", base.get("threads", "16"))
        ev = {"type": "phase", "name": f"rados-bench-{mode}", "labels": labels,
              "source": "rados-bench", "accuracy_s": 1.0}
        anchor = None
        last_sec = None
        for line in run:
            d = _DATED.match(line)
            if d and last_sec is not None:
                # printed at the top of second last_sec + 1 (every 20th), before its status
                anchor = _parse_time(d.group(1), d.group(2)) - (last_sec + 1) * 1_000_000_000
                break
            s = _STATUS.match(_STAMP.sub("", line))     # --show-time prefixes every line
            if s:
                last_sec = int(s.group(1))
        if anchor is not None:
            ev["start_realtime_ns"], ev["end_realtime_ns"] = anchor, anchor + dur
            events.append(ev)
        else:
            undated.append((n, ev, dur))
    if undated:
        if end_realtime_ns is None:
            raise ValueError("rados bench output without a dated latency line (runs under "
                             "20 s): give the time the last run ended (iopulse phases import "
                             "--end-time, or keep the output file's modification time)")
        t = end_realtime_ns
        for _, ev, dur in sorted(undated, key=lambda x: -x[0]):
            ev["start_realtime_ns"], ev["end_realtime_ns"] = t - dur, t
            ev["accuracy_s"] = 5.0
            t -= dur
            events.append(ev)
    events.sort(key=lambda e: e["start_realtime_ns"])
    return events
