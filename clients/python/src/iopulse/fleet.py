"""Many agents in one view: one subscriber thread per daemon, the latest Update of each, and
one table across hosts. A host that goes away is shown as down and reconnected in the
background; it never holds up the others. One that floods (iopulse.flood) is refused by name
and not reconnected."""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .client import Client
from .errors import IopulseError
from .flood import Flooding, decode_bounded
from .model import DeviceInfo, Info, Update
from .render import (DeviceRow, Merged, busiest_threads, device_grid, device_rows, merge_rows,
                     merged_entries, thread_figures, thread_grid)
from .textfit import Col, Fit, plain


@dataclass
class HostState:
    """What one target last said."""
    target: str
    host: str = ""                  # the daemon's hostname once connected
    info: Optional[Info] = None     # its GetInfo answer when it connected
    update: Optional[Update] = None
    up: bool = False
    error: str = ""                 # why it is down
    down_since: Optional[float] = None
    updates: int = 0
    refused: bool = False           # it flooded (iopulse.flood): dropped, not reconnected


class Fleet:
    """Subscribes to every target in a thread of its own; reconnects after failures."""

    def __init__(self, targets: Sequence[str], interval_multiple: int = 1,
                 connect_deadline: float = 2.0, retry_s: float = 1.0,
                 events: Optional["queue.Queue[tuple[HostState, Optional[Update]]]"] = None,
                 **subscribe: Any) -> None:
        """events: where every Update goes as (state, update), and (state, None) when a host
        goes down; subscribe: more Subscribe arguments (devices, threads, replay_seconds)."""
        self.states = [HostState(t) for t in targets]
        self.changed = threading.Condition()
        self.events = events
        self._subscribe = subscribe
        self._stop = threading.Event()
        self._multiple = interval_multiple
        self._deadline = connect_deadline
        self._retry_s = retry_s
        self._threads = [threading.Thread(target=self._follow, args=(s,), daemon=True,
                                          name=f"iopulse-fleet-{s.target}")
                         for s in self.states]

    def start(self) -> "Fleet":
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _note(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def _follow(self, s: HostState) -> None:
        while not self._stop.is_set():
            try:
                with Client(s.target, connect_deadline=self._deadline) as c:
                    s.info = c.info()
                    s.host = s.info.hostname or s.target
                    with c.subscribe_raw(interval_multiple=self._multiple,
                                         **self._subscribe) as sub:
                        for raw in sub:
                            u = decode_bounded(s.target, raw)
                            s.update, s.up, s.error, s.down_since = u, True, "", None
                            s.updates += 1
                            if self.events is not None:
                                self.events.put((s, u))
                            self._note()
                            if self._stop.is_set():
                                return
                raise IopulseError("the daemon ended the stream")
            except Flooding as e:
                # what it sent before is not shown either: one bound for the whole target
                s.update, s.up, s.error, s.refused = None, False, str(e), True
                s.down_since = s.down_since or time.time()
                if self.events is not None:
                    self.events.put((s, None))
                self._note()
                return
            except IopulseError as e:
                was_up = s.up or s.down_since is None
                if was_up:
                    s.down_since = time.time()
                s.up, s.error = False, str(e)
                if was_up and self.events is not None:
                    self.events.put((s, None))
                self._note()
            self._stop.wait(self._retry_s)

    def wait(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)

    def settled(self) -> bool:
        """Every target has either sent an Update or failed once."""
        return all(s.update is not None or s.error for s in self.states)

    def host_names(self) -> dict[str, str]:
        """target -> the name shown: the hostname, or the target where two share one."""
        names = [s.host or s.target for s in self.states]
        return {s.target: (s.host if s.host and names.count(s.host) == 1 else s.target)
                for s in self.states}


@dataclass
class FleetRow:
    host: str
    row: DeviceRow


def _infos(s: HostState) -> dict[str, DeviceInfo]:
    return {d.name: d for d in s.info.devices} if s.info is not None else {}


def host_identity(s: HostState) -> str:
    """What tells two daemons on one host from daemons on two hosts: the hostname they
    report (the wire carries no other host id), else the target."""
    return s.info.hostname if s.info is not None and s.info.hostname else (s.host or s.target)


def fleet_rows(fleet: Fleet, globs: Sequence[str] = (), sort: str = "iops",
               classes: Sequence[str] = ()) -> list[FleetRow]:
    """Device rows of every host that is up, sorted cluster-wide."""
    names = fleet.host_names()
    rows = [FleetRow(names[s.target], r) for s in fleet.states if s.up and s.update
            for r in device_rows(s.update, globs, "name", _infos(s), classes)]
    fig = {"iops": "ios_per_s", "mbps": "mb_per_s", "qwait": "qwait_p99_ns",
           "svc": "svc_p99_ns"}.get(sort)
    if fig is None:
        return sorted(rows, key=lambda x: (x.host, x.row.name))
    return sorted(rows, key=lambda x: (-(x.row.figure(fig) or 0), x.host, x.row.name))


def merged_rows(fleet: Fleet, globs: Sequence[str] = (), classes: Sequence[str] = ()
                ) -> tuple[list[Merged], list[str]]:
    """The shown devices of every host that is up, merged per device class (see
    render.merge_rows: never a device with one stacked on it, never one device twice)."""
    names = fleet.host_names()
    return merge_rows([(names[s.target], host_identity(s), r) for s in fleet.states
                       if s.up and s.update
                       for r in device_rows(s.update, globs, "name", _infos(s), classes)])


def render_fleet(fleet: Fleet, what: str, globs: Sequence[str] = (), sort: str = "iops",
                 nthreads: int = 10, merge: bool = False, live: bool = True,
                 classes: Sequence[str] = ()) -> Any:
    """The hosts' states, one device table across hosts (and with merge a merged line per
    device class), the busiest sync threads of all hosts; laid out at the width it is
    printed at."""
    from rich.text import Text

    names = fleet.host_names()
    now = time.time()
    lines = []
    for s in fleet.states:
        if s.up and s.update:
            lines.append(f"{names[s.target]}: up, seq {s.update.seq}, window "
                         f"{s.update.duration_s:.2f}s")
        elif s.refused:
            lines.append(f"{names[s.target]}: REFUSED ({s.error})")
        elif s.error and not live:
            lines.append(f"{names[s.target]}: DOWN ({s.error})")
        elif s.error:
            since = time.strftime("%H:%M:%S", time.localtime(s.down_since or now))
            lines.append(f"{names[s.target]}: DOWN since {since} ({s.error}); retrying")
        else:
            lines.append(f"{names[s.target]}: connecting")
    entries = [([fr.host, fr.row.name], fr.row.ops, fr.row.device_only)
               for fr in fleet_rows(fleet, globs, sort, classes)]
    notes: list[str] = []
    if merge:
        merged, notes = merged_rows(fleet, globs, classes)
        entries += merged_entries(merged)
    keys = [Col("host", left=True), Col("device", left=True)]
    parts: list[Any] = [Text("\n".join(plain(x) for x in lines)), device_grid(
        f"{what}  {time.strftime('%H:%M:%S')}  {len(fleet.states)} hosts", entries, keys)]
    parts += [Text(plain("merged: " + n)) for n in notes]
    if nthreads > 0:
        rows = [([names[s.target]], t, thread_figures(s.update, t)) for s in fleet.states
                if s.up and s.update for t in busiest_threads(s.update, nthreads)]
        rows.sort(key=lambda x: -(x[2]["calls_per_s"] or 0))
        parts.append(thread_grid("busiest sync threads", rows[:nthreads],
                                 [Col("host", left=True)]))
    return Fit(*parts)
