"""Phases of a run: from the daemons' marks (exact: their edges are interval edges) or
imported from a tool's output (edges on the wall clock, accurate to what the tool says).

This module reads a run through the small interface below (RunLike) and imports nothing from
iopulse.record: the run file's reader imports it (Run.phases), not the other way round.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence

from ..model import PhaseMark

# What a phase's name and labels may hold, as for a mark (iopulsed refuses a MarkPhase beyond
# them; 32 labels is server.mark_labels' default): imported phases are held to the same.
NAME_MAX = 128          # characters of a name or a label key (printable)
VALUE_MAX = 1024        # characters of a label value (printable)
LABELS_MAX = 32         # labels of one phase
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def bounded_text(text: str, limit: int) -> str:
    """text with control characters written as escapes (\\n, \\x1b), cut to limit characters
    (the last one then '\u2026'): what a mark's name, label key or value may be."""
    if len(text) <= limit and not _CONTROL.search(text):
        return text
    out = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text[:limit + 1])
    return out if len(out) <= limit else out[:limit - 1] + "\u2026"


class HostLike(Protocol):
    """What phases_of_run reads of a host (iopulse.record.Host)."""
    index: int
    marks: list[PhaseMark]
    windows: Sequence[Any]      # Windows or Updates: *_monotonic_ns, *_realtime_ns


class RunLike(Protocol):
    """What phases_of_run reads of a run (iopulse.record.Run)."""
    events: list[dict[str, Any]]
    hosts: Sequence[HostLike]


# A phase's label naming the devices its workload drove (a fio job's files: fio_devices.py),
# comma-separated kernel names: report, compare and load() show those devices' rows for it.
DEVICES_LABEL = "devices"


@dataclass
class Edges:
    """One host's view of a phase."""
    start_mono_ns: int = 0
    end_mono_ns: int = 0
    start_real_ns: int = 0
    end_real_ns: int = 0
    abandoned: bool = False     # the daemon ended it: the recorder went away or it stopped
    open: bool = False          # no end in the run
    inferred: str = ""          # its own end never came: the recorder ended it when this
                                # happened (the next stonewall group began, the command ended)


@dataclass
class Phase:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    source: str = "mark"        # mark, fio-json, rados-bench, cbt, ...
    exact: bool = True          # edges are interval edges
    accuracy_s: float = 0.0     # imported phases: how far an edge may be off
    trimmed_s: float = 0.0      # imported with --trim-edges: each edge moved this far inward
    parent: Optional[str] = None
    depth: int = 0
    hosts: dict[int, Edges] = field(default_factory=dict)
    start_real_ns: int = 0      # of the first host, or as imported
    end_real_ns: int = 0

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return self.name, tuple(sorted(self.labels.items()))

    @property
    def devices(self) -> frozenset[str]:
        """The devices its workload drove (DEVICES_LABEL), empty when not known."""
        return frozenset(x for x in self.labels.get(DEVICES_LABEL, "").split(",") if x)

    @property
    def duration_s(self) -> float:
        return max(0, self.end_real_ns - self.start_real_ns) / 1e9

    @property
    def abandoned(self) -> bool:
        return any(e.abandoned for e in self.hosts.values())

    @property
    def end_inferred(self) -> str:
        """Why the phase's end was inferred ("" when it was marked): its tool never said it
        ended (a fio job that died), so the recorder ended it when this happened."""
        return next((e.inferred for e in self.hosts.values() if e.inferred), "")

    def label_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(self.labels.items()))

    def contains(self, host: int, u: Any) -> bool:
        """Whether the Update (or Window) u of host belongs to the phase. Marked phases:
        exactly the intervals between the two edges. Imported ones: an interval whose window
        lies mostly inside the phase."""
        if self.exact:
            e = self.hosts.get(host)
            return e is not None and u.start_monotonic_ns >= e.start_mono_ns and \
                u.end_monotonic_ns <= e.end_mono_ns
        lo = max(u.start_realtime_ns, self.start_real_ns)
        hi = min(u.end_realtime_ns, self.end_real_ns)
        return 2 * (hi - lo) > (u.end_realtime_ns - u.start_realtime_ns)

    def updates(self, host: int, updates: list[Any]) -> list[Any]:
        """The host's Updates (or Windows) inside the phase, see contains()."""
        return [u for u in updates if self.contains(host, u)]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "labels": dict(self.labels), "source": self.source,
                "exact": self.exact, "accuracy_s": self.accuracy_s,
                "trimmed_s": self.trimmed_s, "parent": self.parent,
                "depth": self.depth, "start_realtime_ns": self.start_real_ns,
                "end_realtime_ns": self.end_real_ns, "duration_s": self.duration_s,
                "abandoned": self.abandoned, "end_inferred": self.end_inferred}


def _host_phases(marks: list[PhaseMark], windows: Sequence[Any], extra: list[PhaseMark]
                 ) -> list[tuple[Any, Optional[Any], Optional[Any]]]:
    """(begin mark, end mark or None, last window) in begin order for one host: the marks
    in its Updates, and those the recorder noted from the daemon's answers (extra)."""
    begins: dict[int, Any] = {}
    ends: dict[int, Any] = {}
    for m in marks + extra:
        if m.end:
            ends.setdefault(m.begin_id, m)
        else:
            begins.setdefault(m.id, m)
    last = windows[-1] if windows else None
    return [(begins[i], ends.get(i), last) for i in sorted(begins)]


def _identity(ev: dict[str, Any]) -> tuple[Any, ...]:
    return (str(ev.get("name")), tuple(sorted((str(k), str(v)) for k, v in
                                              dict(ev.get("labels", {})).items())),
            ev.get("start_realtime_ns"), ev.get("end_realtime_ns"))


def imported_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The 'phase' events in file order, without those a later 'withdraw' event names (an
    import with --replace withdraws the earlier import of the same phases)."""
    out: list[dict[str, Any]] = []
    for ev in events:
        if ev.get("type") == "phase":
            out.append(ev)
        elif ev.get("type") == "withdraw":
            gone = {_identity(w) for w in ev.get("phases", []) if isinstance(w, dict)}
            out = [e for e in out if _identity(e) not in gone]
    return out


def phases_of_run(run: RunLike) -> list[Phase]:
    """Marked phases matched across hosts (same name and labels, n-th occurrence), then the
    imported ones, in start order."""
    merged: dict[tuple[Any, int], Phase] = {}
    order: list[tuple[Any, int]] = []
    by_id: dict[tuple[int, int], Phase] = {}    # (host, begin id): its phase
    parent_of: dict[int, Phase] = {}            # id(phase): the phase it was begun in
    noted: dict[int, list[PhaseMark]] = {}
    asked: dict[tuple[int, int], int] = {}      # (host, begin id): the parent record asked for
    inferred: dict[tuple[int, int], str] = {}   # (host, begin id): why its end was inferred
    for ev in run.events:
        if ev.get("type") == "mark":
            host = int(ev["host"])
            want = ev.get("parent_asked")
            if isinstance(want, int) and not isinstance(want, bool) and not ev["end"]:
                asked[(host, int(ev["id"]))] = want
            why = ev.get("inferred")
            if isinstance(why, str) and why and ev["end"]:
                inferred[(host, int(ev.get("begin_id", 0)))] = bounded_text(why, VALUE_MAX)
            noted.setdefault(int(ev["host"]), []).append(PhaseMark(
                ev["name"], dict(ev.get("labels", {})), bool(ev["end"]), int(ev["realtime_ns"]),
                int(ev["monotonic_ns"]), int(ev["id"]), int(ev.get("begin_id", 0)),
                int(ev.get("parent_id", 0)), ev.get("session", ""),
                bool(ev.get("abandoned", False))))
    for h in run.hosts:
        seen: dict[Any, int] = {}
        for begin, end, last in _host_phases(h.marks, h.windows, noted.get(h.index, [])):
            k = (begin.name, tuple(sorted(begin.labels.items())))
            n = seen.get(k, 0)
            seen[k] = n + 1
            key = (k, n)
            p = merged.get(key)
            if p is None:
                # the parent by identity (its begin's id on this host), not by name: names
                # repeat (every fio command's 'group1'), and a window that starts inside a
                # recording holds its phases without the ones they were begun in
                up = by_id.get((h.index, asked.get((h.index, begin.id), begin.parent_id)))
                p = Phase(begin.name, dict(begin.labels),
                          parent=up.name if up is not None else None)
                if up is not None:
                    parent_of[id(p)] = up
                merged[key] = p
                order.append(key)
            by_id[(h.index, begin.id)] = p
            e = Edges(begin.monotonic_ns, 0, begin.realtime_ns, 0)
            if end is not None:
                e.end_mono_ns, e.end_real_ns, e.abandoned = \
                    end.monotonic_ns, end.realtime_ns, end.abandoned
                e.inferred = inferred.get((h.index, begin.id), "")
            elif last is not None:
                e.open = True
                e.end_mono_ns, e.end_real_ns = last.end_monotonic_ns, last.end_realtime_ns
            p.hosts[h.index] = e
    out = [merged[k] for k in order]
    for p in out:
        first = next(iter(p.hosts.values()))
        p.start_real_ns, p.end_real_ns = first.start_real_ns, first.end_real_ns
    for ev in imported_events(run.events):
        out.append(Phase(ev["name"], dict(ev.get("labels", {})), ev.get("source", "import"),
                         exact=False, accuracy_s=float(ev.get("accuracy_s", 0.0)),
                         trimmed_s=float(ev.get("trimmed_s", 0.0)),
                         parent=ev.get("parent"), start_real_ns=int(ev["start_realtime_ns"]),
                         end_real_ns=int(ev["end_realtime_ns"])))
    # an imported phase may name its parent (a run file's 'parent'): found by name
    by_name = {p.name: p for p in out}
    for p in out:
        if not p.exact and p.parent in by_name and by_name[p.parent] is not p:
            parent_of[id(p)] = by_name[p.parent]
    for p in out:
        d, q = 0, p
        while id(q) in parent_of and d < 16:
            d, q = d + 1, parent_of[id(q)]
        p.depth = d
    out.sort(key=lambda p: (p.start_real_ns, p.depth))
    return out
