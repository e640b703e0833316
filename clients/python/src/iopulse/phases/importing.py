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
  said, and trim moves both edges inward by accuracy_s. A phase that trimming would cut
  shorter than the daemons' interval (a 3.001 s phase with 1.5 s of error per edge: to
  1 ms) is kept whole, and said so: what is left must hold an interval, or the phase has no
  figures at all.
- Names and labels: held to what a mark may carry (1..128 printable characters for a name or
  a label key, 1,024 for a value, 32 labels): cut, or control characters written as escapes,
  with a notice naming the phase (bound_names).

Each phase is compared only with the phases of its name that it overlaps (a sweep in start
order), so an import of many jobs takes time in proportion to their number.

Plain data in and out (phase events as in the run file, Phase objects of the run), so the
command line and tests share it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from .model import LABELS_MAX, NAME_MAX, VALUE_MAX, Phase, bounded_text

CLOCK_SLACK_S = 0.1       # clocks of NTP-synchronised hosts: milliseconds apart
EDGE_SHARE = 0.10         # 2 x accuracy_s above this share of a phase: said (and trimmable)
KEEP_S = 1.0              # trimmed only if this much is left (the daemon's default interval)


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


def _change(what: str, old: str, limit: int) -> str:
    if len(old) > limit:
        return f"{what} of {len(old):,} characters cut to {limit}"
    return f"control characters in {what} written as escapes"


def bound_names(events: list[dict[str, Any]], shown: int = 5) -> list[str]:
    """Holds each event's name and labels (in place) to what a mark may carry: a name or
    label key of 1..NAME_MAX printable characters, a value of at most VALUE_MAX, at most
    LABELS_MAX labels (the first in key order). Longer ones are cut (ending in '\u2026'),
    control characters written as escapes, an empty name made 'unnamed', labels past the
    limit or with an empty key left out. Returns a notice for each phase changed (the first
    shown of them, then how many more), naming it by its place in the import and its name."""
    notes: list[str] = []
    for n, e in enumerate(events, 1):
        name = str(e.get("name", ""))
        what = []
        new = bounded_text(name, NAME_MAX) or "unnamed"
        if not name:
            what.append("its empty name made 'unnamed'")
        elif new != name:
            what.append(_change("its name", name, NAME_MAX))
        labels = dict(e.get("labels", {}))
        kept: dict[str, str] = {}
        for k in sorted(labels, key=str):
            key, value = str(k), str(labels[k])
            shown_key = bounded_text(key, 40)
            if not key:
                what.append("a label with an empty key left out")
                continue
            if len(kept) == LABELS_MAX:
                what.append(f"{len(labels) - LABELS_MAX} label(s) past {LABELS_MAX} left out "
                            f"(from '{shown_key}' on, in key order)")
                break
            k2, v2 = bounded_text(key, NAME_MAX), bounded_text(value, VALUE_MAX)
            if k2 != key:
                what.append(_change(f"label '{shown_key}': its key", key, NAME_MAX))
            if v2 != value:
                what.append(_change(f"label '{shown_key}': its value", value, VALUE_MAX))
            kept[k2] = v2
        if what:
            e["name"], e["labels"] = new, kept
            notes.append(f"phase {n} of this import ({e.get('source', 'import')} "
                         f"'{bounded_text(name, 60)}'): " + "; ".join(what[:3])
                         + (f"; and {len(what) - 3} more" if len(what) > 3 else ""))
    if len(notes) > shown:
        notes[shown:] = [f"and {len(notes) - shown:,} more phase(s) whose names or labels were "
                         "cut to what a mark may carry"]
    return notes


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
          *, replace: bool = False, trim: bool = False, keep_s: float = KEEP_S) -> Checked:
    """The events to append (and the earlier imports they replace), or ImportRefused. Names
    and labels are first held to what a mark may carry (bound_names). Time and memory grow
    with the number of phases, never with its square: each phase is compared only with those
    of its name that it overlaps. keep_s: the least a trimmed phase keeps (the longest
    interval of the run's daemons)."""
    bad = outside(events, start_ns, end_ns)
    if bad:
        raise ImportRefused(_some(bad) + ": not this recording's output (or a clock far off)")
    res = Checked([dict(e) for e in events])
    res.notes.extend(bound_names(res.events))
    keys = [_key(e) for e in res.events]
    dups: list[str] = []            # already in the run
    twice: list[str] = []           # twice in this import
    by_key: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        by_key.setdefault(k, []).append(i)
    imported: dict[Any, list[Phase]] = {}
    exact: dict[str, list[Phase]] = {}
    for p in existing:
        if p.exact:
            exact.setdefault(p.name, []).append(p)
        elif p.key in by_key:
            imported.setdefault(p.key, []).append(p)
    withdrawn: set[int] = set()
    for k, idx in by_key.items():
        for i, p in _overlaps(res.events, idx, imported.get(k, []), twice=True):
            e = res.events[i]
            s, t = int(e["start_realtime_ns"]), int(e["end_realtime_ns"])
            if p is None:
                twice.append(f"phase {_name(e)} {span_text(s, t)} is given twice in this "
                             "import")
            elif replace:
                if id(p) not in withdrawn:
                    withdrawn.add(id(p))
                    res.withdraw.append({"name": p.name, "labels": dict(p.labels),
                                         "start_realtime_ns": p.start_real_ns,
                                         "end_realtime_ns": p.end_real_ns})
            else:
                dups.append(f"phase {_name(e)} {span_text(s, t)} is already in the run "
                            f"(imported from {p.source}, "
                            f"{span_text(p.start_real_ns, p.end_real_ns)})")
    by_name: dict[str, list[int]] = {}
    for i, e in enumerate(res.events):
        if e["name"] in exact:
            by_name.setdefault(e["name"], []).append(i)
    noted: set[int] = set()
    for name, idx in by_name.items():
        for i, _ in _overlaps(res.events, idx, exact[name], twice=False):
            if i in noted:
                continue
            noted.add(i)
            e = res.events[i]
            res.notes.append(f"phase {_name(e)}: a phase of that name is marked live in this "
                             "run (exact edges); the import adds a copy with wall-clock "
                             f"edges (+-{float(e.get('accuracy_s', 0)):g} s)")
    if twice:
        raise ImportRefused(_some(twice))
    if dups:
        raise ImportRefused(_some(dups) + ": --replace imports it again in place of the "
                            "earlier import")
    for e in res.events:
        _edges(e, trim, res.notes, keep_s)
    return res


_Span = tuple[int, int, int]        # start, end, index


def _overlaps(events: list[dict[str, Any]], idx: list[int], old: list[Phase], *, twice: bool
              ) -> Iterator[tuple[int, Optional[Phase]]]:
    """The pairs that overlap by more than half of the shorter span among the events idx (of
    one name, or of one name and labels) and the phases old: (i, p) for an event and a phase;
    with twice, also (i, None) for an event overlapping an earlier one of idx, which is then
    left out of further comparisons. A sweep in start order: a span is compared only with the
    spans that reach its start, each pair once."""
    items: list[tuple[int, int, int, int]] = []      # start, kind (0 event, 1 phase), end, index
    for i in idx:
        items.append((int(events[i]["start_realtime_ns"]), 0,
                      int(events[i]["end_realtime_ns"]), i))
    for j, p in enumerate(old):
        items.append((p.start_real_ns, 1, p.end_real_ns, j))
    items.sort()
    new: list[_Span] = []           # spans that may reach a later start
    run: list[_Span] = []
    for s, kind, t, x in items:
        if kind == 0:
            if twice:
                new = [a for a in new if a[1] >= s]
                if any(_overlap_share(s, t, a, b) > 0.5 for a, b, _ in new):
                    yield x, None
                    continue
            run = [a for a in run if a[1] >= s]
            for a, b, j in run:
                if _overlap_share(s, t, a, b) > 0.5:
                    yield x, old[j]
            new.append((s, t, x))
        else:
            new = [a for a in new if a[1] >= s]
            for a, b, i in new:
                if _overlap_share(s, t, a, b) > 0.5:
                    yield i, old[x]
            run.append((s, t, x))


def _some(problems: list[str], n: int = 5) -> str:
    more = len(problems) - n
    return "; ".join(problems[:n]) + (f"; and {more} more" if more > 0 else "")


def _edges(e: dict[str, Any], trim: bool, notes: list[str], keep_s: float) -> None:
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
    elif dur - 2 * acc < max(keep_s, 1e-9):
        notes.append(f"phase {_name(e)} ({dur:.3f} s): trimming both edges by its edge error "
                     f"({acc:g} s) would leave {max(0.0, dur - 2 * acc):.3f} s, less than "
                     f"the daemons' interval ({keep_s:g} s): kept whole, untrimmed; its "
                     "counts may include its neighbours' IO")
    else:
        cut = int(acc * 1e9)
        e["start_realtime_ns"], e["end_realtime_ns"] = s + cut, t - cut
        e["trimmed_s"] = acc
        notes.append(f"phase {_name(e)}: edges moved {acc:g} s inward ({dur:.2f} s -> "
                     f"{dur - 2 * acc:.2f} s)")
