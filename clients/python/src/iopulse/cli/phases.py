"""iopulse phases: list a run's phases, or import phases from a tool's saved output."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from ..phases.importing import KEEP_S, ImportRefused, check
from ..record.reader import load
from ..record.writer import append_json
from .common import EXIT_OK, EXIT_USAGE, printable

HELP = "list a run's phases, or import them from saved fio JSON, rados bench output, CBT"
EXAMPLES = """examples:
  iopulse phases run1.iopulse                  # the same as: iopulse phases list run1.iopulse
  iopulse phases list run1.iopulse
  iopulse phases import run1.iopulse fio-output.json
  iopulse phases import run1.iopulse rados-bench-write.txt --end-time 2026-11-23T10:15:00Z
  iopulse phases import run1.iopulse /srv/cbt/archive/
  iopulse phases import run1.iopulse fio-output.json --replace --trim-edges

For runs recorded without live marks (or a tool that ran elsewhere): the phases are added to
the run file and reports use them. Their edges are on the wall clock and as accurate as the
tool's output allows, which the report states per phase: fio >= 3.36 JSON (job_start) 1 ms;
older fio JSON 0.5 s for the last stonewall group, 0.5 s more per group before it; rados
bench output 1 s with its dated latency lines, else 5 s from the file's time; a CBT archive
from the outputs in each run directory.

Refused (exit 2, nothing added): a file with a phase outside the recorded time by more than
its accuracy (another run's output); a phase already imported into the run (same name and
labels, overlapping): --replace withdraws the earlier import and adds this one. Said on
stderr: a phase whose two edge errors are more than 10% of it (its neighbours' IO can be
counted in it; --trim-edges moves each edge inward by its error), a phase of the same name
already marked live."""
CONNECTS = False


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.usage = "iopulse phases [list] RUN [--json] | import RUN SOURCE... [options]"
    s.add_argument("action", metavar="ACTION",
                   help="list (the default: `iopulse phases RUN` lists) or import")
    s.add_argument("run", metavar="RUN", nargs="?", help="a run file written by iopulse record")
    s.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="import: fio JSON files, rados bench output files, CBT archive "
                        "directories")
    s.add_argument("--format", choices=("auto", "fio", "rados", "cbt"), default="auto",
                   help="what SOURCE is (default: told from its content)")
    s.add_argument("--end-time", default=None, metavar="TIME",
                   help="rados bench output without dated lines: when the last run ended "
                        "(ISO 8601, e.g. 2026-11-23T10:15:00Z; default: the file's time)")
    s.add_argument("--replace", action="store_true",
                   help="import: phases already imported into the run are withdrawn and "
                        "imported again from SOURCE (default: refused)")
    s.add_argument("--trim-edges", action="store_true",
                   help="import: move each edge of a phase inward by its stated accuracy, so "
                        "that IO of the phases beside it is not counted in it")
    s.add_argument("--json", action="store_true", help="list: one JSON object per phase")


def _parse_time(s: str) -> int:
    from datetime import datetime, timezone

    t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1e9)


def phases_from(path: str, fmt: str, end_time: Any) -> list[dict[str, Any]]:
    if fmt == "cbt" or (fmt == "auto" and os.path.isdir(path)):
        from ..phases.cbt import phases_from_archive

        return phases_from_archive(path)
    from ..phases.tool_output import read_output

    text = read_output(path)
    if fmt == "fio" or (fmt == "auto" and text.lstrip().startswith("{")):
        from ..phases.fio import phases_from_json

        start = text.find("{")
        try:
            doc = json.loads(text[start:])
        except ValueError as e:
            raise ValueError(f"{path}: not fio JSON output: {e}") from None
        return phases_from_json(doc)
    from ..phases.rados import phases_from_output

    end_ns = _parse_time(end_time) if end_time else int(os.stat(path).st_mtime * 1e9)
    return phases_from_output(text, end_realtime_ns=end_ns)


EARLIEST_NS = 946_684_800 * 10**9        # 2000-01-01: no recording is older
LATEST_SLACK_NS = 86_400 * 10**9         # a day past now: clocks that disagree a little


def check_events(events: list[dict[str, Any]], now_ns: int) -> None:
    """Refuses phases whose times no run can have (a start before 2000 or after tomorrow, an
    end before the start or after tomorrow): once appended they could not be removed."""
    for e in events:
        s, t = e.get("start_realtime_ns"), e.get("end_realtime_ns")
        name = str(e.get("name", "?"))[:80]
        if not isinstance(s, int) or not isinstance(t, int):
            raise ValueError(f"phase {name!r}: its start or end is not a time")
        if not EARLIEST_NS <= s <= t <= now_ns + LATEST_SLACK_NS:
            raise ValueError(f"phase {name!r}: start {s / 1e9:.6g} s, end {t / 1e9:.6g} s since "
                             "1970 is not a time a benchmark can have run (from 2000 to now)")


def _interval_s(r: Any) -> float:
    """The longest interval of the run's daemons (their Info's, else the longest window):
    what a trimmed phase must keep to hold one."""
    ns = max((h.info.interval_ns for h in r.hosts if h.info), default=0)
    if not ns:
        ns = max((w.end_monotonic_ns - w.start_monotonic_ns for h in r.hosts
                  for w in h.windows), default=0)
    return ns / 1e9 if ns else KEEP_S


def _action(args: argparse.Namespace) -> str:
    """'list' or 'import' with args.run set, or a usage message."""
    if args.action not in ("list", "import"):
        if args.run is not None:
            return (f"iopulse phases: {printable(args.action)!r} is not an action: list "
                    "or import (iopulse phases RUN lists the run's phases)")
        args.action, args.run = "list", args.action
    if args.run is None:
        return f"iopulse phases {args.action}: name the RUN (a run file)"
    return ""


def run(args: argparse.Namespace) -> int:
    bad = _action(args)
    if bad:
        print(bad, file=sys.stderr)
        return EXIT_USAGE
    r = load(args.run)
    if args.action == "list":
        for p in r.phases():
            if args.json:
                print(json.dumps(p.to_dict()))
                continue
            try:
                when = time.strftime("%H:%M:%S", time.localtime(p.start_real_ns / 1e9))
            except (OverflowError, OSError, ValueError):     # a time no clock can show
                when = "?"
            how = "exact" if p.exact else f"{p.source}, +-{p.accuracy_s:g}s" + (
                f", trimmed {p.trimmed_s:g}s" if p.trimmed_s else "")
            # names, labels and sources come from marks and imported files: their control
            # characters are escaped as report escapes them, never sent to the terminal
            print(printable(f"{'  ' * p.depth}{p.name:24} {when} {p.duration_s:8.1f}s  {how}"
                            f"{'  abandoned' if p.abandoned else ''}"
                            f"{'  end inferred' if p.end_inferred else ''}  {p.label_text()}"))
        return EXIT_OK
    if not args.sources:
        print("iopulse phases import: name at least one SOURCE", file=sys.stderr)
        return EXIT_USAGE
    if not r.complete:
        print(f"iopulse phases import: {args.run} is incomplete ({r.damage}); phases can "
              "only be added to a complete run", file=sys.stderr)
        return EXIT_USAGE
    events: list[dict[str, Any]] = []
    existing = r.phases()
    start, end = r.span_realtime_ns()
    for src in args.sources:
        try:
            got = phases_from(src, args.format, args.end_time)
            check_events(got, time.time_ns())
        except OSError as e:
            print(f"iopulse phases import: {printable(src)}: {e.strerror or e}",
                  file=sys.stderr)
            return EXIT_USAGE
        except ValueError as e:
            print(f"iopulse phases import: {printable(src)}: {printable(str(e))}",
                  file=sys.stderr)
            return EXIT_USAGE
        except (KeyError, TypeError, AttributeError, IndexError, OverflowError) as e:
            # a file shaped unlike the tool's output: say where, not a traceback
            what = "fio, rados bench or CBT" if args.format == "auto" else args.format
            print(f"iopulse phases import: {printable(src)}: not {what} output as "
                  f"expected ({type(e).__name__}: {printable(str(e))[:200]})", file=sys.stderr)
            return EXIT_USAGE
        except RecursionError:
            print(f"iopulse phases import: {printable(src)}: nested too deeply to be a tool's "
                  "output", file=sys.stderr)
            return EXIT_USAGE
        for e in got:
            e["imported_from"] = os.path.abspath(src)
        try:
            checked = check(events + got, existing, start, end, replace=args.replace,
                            trim=args.trim_edges, keep_s=_interval_s(r))
        except ImportRefused as e:
            print(f"iopulse phases import: {printable(src)}: {printable(str(e))}",
                  file=sys.stderr)
            return EXIT_USAGE
        events += got
        print(f"{printable(src)}: {len(got)} phase(s)", file=sys.stderr)
    for note in checked.notes:
        print(f"iopulse phases import: {printable(note)}", file=sys.stderr)
    records: list[dict[str, Any]] = []
    if checked.withdraw:
        records.append({"type": "withdraw", "phases": checked.withdraw,
                        "realtime_ns": time.time_ns(),
                        "reason": "imported again (phases import --replace)"})
        print(f"{len(checked.withdraw)} phase(s) imported before are replaced",
              file=sys.stderr)
    append_json(args.run, records + checked.events)
    return EXIT_OK
