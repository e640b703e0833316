"""Checks on phases imported from a tool's output, before they are added to a run.

- Outside the recording: a phase whose edges lie beyond the recorded time by more than its
  stated accuracy plus CLOCK_SLACK_S is refused (another run's output, or a clock far off);
  its counts would be missing or taken from the wrong run.
- Duplicates: an imported phase already in the run (same name and labels, spans overlapping
  by more than half of the shorter one: the same file imported twice, or a copy of it) is
  refused, or withdrawn and imported again when asked (replace). A phase already marked live
  with the same name is only noted: the marked one has exact edges.
- Edge error: an edge may be off by the phase's accuracy_s, so IO of the phases beside it
  can be counted in it. Where 2 x accuracy_s is more than EDGE_SHARE of the phase this is
  said, and trim moves both edges inward by accuracy_s (a phase too short for that is kept
  as it is, and said so).

Plain data in and out (phase events as in the run file, Phase objects of the run), so the
command line and tests share it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from .model import Phase

CLOCK_SLACK_S = 0.1       # clocks of NTP-synchronised hosts: milliseconds apart
EDGE_SHARE = 0.10         # 2 x accuracy_s above this share of a phase: said (and trimmable)


class ImportRefused(ValueError):
    """The phases cannot be added as they are (the message says which and why)."""


@dataclass
class Checked:
    events: list[dict[str, Any]]                    # to append, trimmed when asked
    withdraw: list[dict[str, Any]] = field(default_factory=list)   # replaced phase events
    notes: list[str] = field(default_factory=list)


def when(ns: int) -> str:
    """A wall-clock time with its date, milliseconds and offset, in local time."""
    try:
        t = time.localtime(ns / 1e9)
    except (OverflowError, OSError, ValueError):
        return f"{ns} ns since 1970"
    return (time.strftime("%Y-%m-%d %H:%M:%S", t) + f".{ns // 1_000_000 % 1000:03d}"
            + time.strftime(" %z", t))


def span_text(start_ns: int, end_ns: int) -> str:
    return f"{when(start_ns)} to {when(end_ns)} ({max(0, end_ns - start_ns) / 1e9:.3f} s)"


def _name(e: dict[str, Any]) -> str:
    return repr(str(e.get("name", "?"))[:80])


def _key(e: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return str(e["name"]), tuple(sorted((str(k), str(v))
                                        for k, v in dict(e.get("labels", {})).items()))


def _overlap_share(a0: int, a1: int, b0: int, b1: int) -> float:
    """Overlap of two spans as a share of the shorter one (1.0 for two equal instants)."""
    shorter = min(a1 - a0, b1 - b0)
    inter = min(a1, b1) - max(a0, b0)
    if shorter <= 0:
        return 1.0 if inter >= 0 else 0.0
    return max(0, inter) / shorter


def outside(events: Iterable[dict[str, Any]], start_ns: int, end_ns: int) -> list[str]:
    """What lies outside the recording [start_ns, end_ns] by more than the accuracy."""
    out = []
    for e in events:
        tol = int((float(e.get("accuracy_s", 0.0)) + CLOCK_SLACK_S) * 1e9)
        s, t = int(e["start_realtime_ns"]), int(e["end_realtime_ns"])
        if s < start_ns - tol or t > end_ns + tol:
            where = ("before" if t < start_ns else "after" if s > end_ns else
                     "partly outside")
            out.append(f"phase {_name(e)} {span_text(s, t)} lies {where} the recording "
                       f"{span_text(start_ns, end_ns)}")
    return out


def check(events: list[dict[str, Any]], existing: list[Phase], start_ns: int, end_ns: int,
          *, replace: bool = False, trim: bool = False) -> Checked:
    """The events to append (and the earlier imports they replace), or ImportRefused."""
    bad = outside(events, start_ns, end_ns)
    if bad:
        raise ImportRefused(_some(bad) + ": not this recording's output (or a clock far off)")
    res = Checked([dict(e) for e in events])
    seen: list[dict[str, Any]] = []
    dups: list[str] = []            # already in the run
    twice: list[str] = []           # twice in this import
    for e in res.events:
        s, t = int(e["start_realtime_ns"]), int(e["end_realtime_ns"])
        for other in seen:
            if _key(other) == _key(e) and _overlap_share(
                    s, t, other["start_realtime_ns"], other["end_realtime_ns"]) > 0.5:
                twice.append(f"phase {_name(e)} {span_text(s, t)} is given twice in this "
                             "import")
                break
        seen.append(e)
        for p in existing:
            if p.name != e["name"] or _overlap_share(s, t, p.start_real_ns, p.end_real_ns) <= 0.5:
                continue
            if p.exact:
                res.notes.append(f"phase {_name(e)}: a phase of that name is marked live in this "
                                 "run (exact edges); the import adds a copy with wall-clock "
                                 f"edges (+-{float(e.get('accuracy_s', 0)):g} s)")
            elif p.key == _key(e):
                if replace:
                    res.withdraw.append({"name": p.name, "labels": dict(p.labels),
                                         "start_realtime_ns": p.start_real_ns,
                                         "end_realtime_ns": p.end_real_ns})
                else:
                    dups.append(f"phase {_name(e)} {span_text(s, t)} is already in the run "
                                f"(imported from {p.source}, {span_text(p.start_real_ns, p.end_real_ns)})")
    if twice:
        raise ImportRefused(_some(twice))
    if dups:
        raise ImportRefused(_some(dups) + ": --replace imports it again in place of the "
                            "earlier import")
    for e in res.events:
        _edges(e, trim, res.notes)
    return res


def _some(problems: list[str], n: int = 5) -> str:
    more = len(problems) - n
    return "; ".join(problems[:n]) + (f"; and {more} more" if more > 0 else "")


def _edges(e: dict[str, Any], trim: bool, notes: list[str]) -> None:
    acc = float(e.get("accuracy_s", 0.0))
    s, t = int(e["start_realtime_ns"]), int(e["end_realtime_ns"])
    dur = (t - s) / 1e9
    if acc <= 0 or 2 * acc <= EDGE_SHARE * dur:
        return
    share = f"{200 * acc / dur:.0f}%" if dur > 0 else "all"
    if not trim:
        notes.append(f"phase {_name(e)} ({dur:.2f} s): each edge may be off by {acc:g} s, "
                     f"{share} of the phase in all: IO of the phases beside it can be counted "
                     f"in it (--trim-edges moves both edges {acc:g} s inward)")
    elif dur <= 2 * acc:
        notes.append(f"phase {_name(e)} ({dur:.2f} s) is not longer than twice its edge error "
                     f"({acc:g} s): imported untrimmed, its counts may include its "
                     "neighbours' IO")
    else:
        cut = int(acc * 1e9)
        e["start_realtime_ns"], e["end_realtime_ns"] = s + cut, t - cut
        e["trimmed_s"] = acc
        notes.append(f"phase {_name(e)}: edges moved {acc:g} s inward ({dur:.2f} s -> "
                     f"{dur - 2 * acc:.2f} s)")
