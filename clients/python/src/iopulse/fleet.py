"""Many agents in one view: one subscriber thread per daemon, the latest Update of each, and
one table across hosts. A host that goes away is shown as down and reconnected in the
background; it never holds up the others."""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .client import Client
from .errors import IopulseError
from .histogram import Histogram
from .model import Update
from .render import (DATA_OPS, LATENCY_OPS, DeviceRow, busiest_threads, device_rows, fmt_ns,
                     fmt_num)


@dataclass
class HostState:
    """What one target last said."""
    target: str
    host: str = ""                  # the daemon's hostname once connected
    update: Optional[Update] = None
    up: bool = False
    error: str = ""                 # why it is down
    down_since: Optional[float] = None
    updates: int = 0


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
                    s.host = c.info().hostname or s.target
                    with c.subscribe(interval_multiple=self._multiple, **self._subscribe) as sub:
                        for u in sub:
                            s.update, s.up, s.error, s.down_since = u, True, "", None
                            s.updates += 1
                            if self.events is not None:
                                self.events.put((s, u))
                            self._note()
                            if self._stop.is_set():
                                return
                raise IopulseError("the daemon ended the stream")
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


def fleet_rows(fleet: Fleet, globs: Sequence[str] = (), sort: str = "iops") -> list[FleetRow]:
    """Device rows of every host that is up, sorted cluster-wide."""
    names = fleet.host_names()
    rows = [FleetRow(names[s.target], r) for s in fleet.states if s.up and s.update
            for r in device_rows(s.update, globs, "name")]
    keys = {"iops": lambda x: (-(x.row.iops or 0), x.host, x.row.name),
            "mbps": lambda x: (-(x.row.mbps or 0), x.host, x.row.name),
            "qwait": lambda x: (-(x.row.qwait_p99 or 0), x.host, x.row.name),
            "svc": lambda x: (-(x.row.svc_p99 or 0), x.host, x.row.name),
            "name": lambda x: (x.host, x.row.name)}
    return sorted(rows, key=keys[sort])


def merged_row(fleet: Fleet, globs: Sequence[str] = ()) -> Optional[DeviceRow]:
    """Every shown device of every host that is up as one row: rates added, queue-wait and
    service histograms merged bucket by bucket (exact), so its p99 is the p99 of all their
    IOs. None when nothing is shown or precisions differ."""
    import fnmatch
    q = s_ = None
    iops = mbps = 0.0
    n = 0
    for st in fleet.states:
        u = st.update
        if not st.up or u is None:
            continue
        for name, d in u.devices.items():
            if globs and not any(fnmatch.fnmatchcase(name, g) for g in globs):
                continue
            if q is None:
                q, s_ = Histogram(u.precision), Histogram(u.precision)
            elif q.precision != u.precision:
                return None
            for op in LATENCY_OPS:
                q.merge(d.ops[op].queue_wait_ns)
                s_.merge(d.ops[op].service_ns)
            iops += u.rate(sum(d.ops[op].ios for op in DATA_OPS)) or 0.0
            mbps += u.rate(sum(d.ops[op].bytes for op in DATA_OPS) / 1e6) or 0.0
            n += 1
    if q is None or s_ is None:
        return None
    return DeviceRow(f"all {n} devices", iops, mbps,
                     q.percentile(50) if q.count else None, q.percentile(99) if q.count else None,
                     s_.percentile(50) if s_.count else None,
                     s_.percentile(99) if s_.count else None, None, None, None)


def render_fleet(fleet: Fleet, what: str, globs: Sequence[str] = (), sort: str = "iops",
                 nthreads: int = 10, merge: bool = False, live: bool = True) -> Any:
    """The hosts' states, one device table across hosts (and the merged row), the busiest
    sync threads of all hosts."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    names = fleet.host_names()
    now = time.time()
    lines = []
    for s in fleet.states:
        if s.up and s.update:
            lines.append(f"{names[s.target]}: up, seq {s.update.seq}, window "
                         f"{s.update.duration_s:.2f}s")
        elif s.error and not live:
            lines.append(f"{names[s.target]}: DOWN ({s.error})")
        elif s.error:
            since = time.strftime("%H:%M:%S", time.localtime(s.down_since or now))
            lines.append(f"{names[s.target]}: DOWN since {since} ({s.error}); retrying")
        else:
            lines.append(f"{names[s.target]}: connecting")
    dev = Table(title=f"{what}  {time.strftime('%H:%M:%S')}  {len(fleet.states)} hosts",
                title_justify="left", expand=False)
    for col in ("host", "device", "IOPS", "MB/s", "qwait p50", "qwait p99", "svc p50",
                "svc p99", "seq %", "flush/s", "flush p99"):
        dev.add_column(col, justify="left" if col in ("host", "device") else "right",
                       no_wrap=True)
    for fr in fleet_rows(fleet, globs, sort):
        r = fr.row
        dev.add_row(fr.host, r.name, fmt_num(r.iops), fmt_num(r.mbps, 2), fmt_ns(r.qwait_p50),
                    fmt_ns(r.qwait_p99), fmt_ns(r.svc_p50), fmt_ns(r.svc_p99),
                    fmt_num(r.seq_pct), fmt_num(r.flushes, 1), fmt_ns(r.flush_p99))
    if merge:
        m = merged_row(fleet, globs)
        if m is not None:
            dev.add_row("(merged)", m.name, fmt_num(m.iops), fmt_num(m.mbps, 2),
                        fmt_ns(m.qwait_p50), fmt_ns(m.qwait_p99), fmt_ns(m.svc_p50),
                        fmt_ns(m.svc_p99), "-", "-", "-", style="bold")
    parts: list[Any] = [Text("\n".join(lines)), dev]
    if nthreads > 0:
        thr = Table(title="busiest sync threads", title_justify="left", expand=False)
        for col in ("host", "thread", "process", "pid/tid", "device", "calls/s", "p99"):
            thr.add_column(col, justify="left" if col in ("host", "thread", "process", "device")
                           else "right", no_wrap=True)
        rows = [(names[s.target], s.update, t) for s in fleet.states if s.up and s.update
                for t in busiest_threads(s.update, nthreads)]
        rows.sort(key=lambda x: -(x[1].rate(x[2].calls) or 0))
        for host, u, t in rows[:nthreads]:
            p99 = t.latency_ns.percentile(99) if t.latency_ns.count else None
            thr.add_row(host, t.comm, t.process, t.who, t.where,
                        fmt_num(u.rate(t.calls), 1), fmt_ns(p99))
        parts.append(thr)
    return Group(*parts)
