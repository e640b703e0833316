"""Records every Update from every target into a run file while a benchmark runs.

One Subscribe stream per daemon, holding the recording's session (the daemon ends the
session's phases if the recorder dies). Updates are stored as they came over the wire. A
daemon that goes away is recorded as a host_error event and subscribed to again with enough
replay to fill the gap (intervals already stored are skipped by sequence number).
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Optional

from .._version import __version__
from .._pb import iopulse_pb2 as pb
from ..client import Client
from ..errors import IopulseError
from ..model import Info, PhaseMark
from .writer import RunWriter

RECONNECT_PAUSE_S = 1.0
WAIT_STEP_S = 0.2


def _now_ns() -> int:
    return time.time_ns()


def _never() -> bool:
    return False


def _wait_in_steps(wait: Callable[[float], bool], timeout: float,
                   stop: Callable[[], bool]) -> bool:
    """Call wait(step) (it waits up to step seconds and says whether what it waits for
    happened) until it happens, timeout seconds pass or stop() is true; returns whether it
    happened.

    In steps of WAIT_STEP_S: Python runs a signal's handler in the main thread only, and the
    kernel may hand the process's signal to another thread (grpc's), which does not interrupt
    a main thread blocked on a lock; between steps the handler runs and stop() sees it."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if wait(max(0.0, min(WAIT_STEP_S, left))):
            return True
        if left <= WAIT_STEP_S or stop():
            return False


class Replay:
    """What a daemon sent of its history (the Updates up to last_seq, its last interval when
    the recording began): how many, how far back, and whether it merged intervals (earlier
    builds of iopulsed merged a replay into as few Updates as phase edges allow; now it sends
    it interval by interval)."""

    def __init__(self, last_seq: int) -> None:
        self.last_seq = last_seq
        self.updates = 0
        self.start_realtime_ns = 0
        self.end_realtime_ns = 0
        self.longest_ns = 0
        self.max_merged = 0

    def add(self, u: Any) -> None:
        if not self.updates or u.start_realtime_ns < self.start_realtime_ns:
            self.start_realtime_ns = u.start_realtime_ns
        self.end_realtime_ns = max(self.end_realtime_ns, u.end_realtime_ns)
        self.longest_ns = max(self.longest_ns, u.end_realtime_ns - u.start_realtime_ns)
        self.max_merged = max(self.max_merged, u.merged)
        self.updates += 1

    def to_dict(self) -> dict[str, Any]:
        return {"last_seq": self.last_seq, "updates": self.updates,
                "start_realtime_ns": self.start_realtime_ns,
                "end_realtime_ns": self.end_realtime_ns, "longest_window_ns": self.longest_ns,
                "max_merged": self.max_merged}

    def describe(self, interval_ns: int) -> str:
        if not self.updates:
            return "the daemon had nothing from before the recording"
        span = (self.end_realtime_ns - self.start_realtime_ns) / 1e9
        what = f"{span:.1f} s before the recording in {self.updates} Update(s)"
        if self.max_merged <= 1:
            return f"{what}, each one daemon interval ({interval_ns / 1e9:g} s)"
        return (f"{what}, MERGED by the daemon: up to {self.max_merged} intervals "
                f"({self.longest_ns / 1e9:.1f} s) in one Update; there the run's resolution "
                f"is that of the Updates, not the daemon's {interval_ns / 1e9:g} s interval "
                "(this iopulsed is an earlier build, which merges a replay)")


class HostStream(threading.Thread):
    def __init__(self, rec: "Recorder", index: int, client: Client, info: Info,
                 replay_s: int) -> None:
        super().__init__(name=f"iopulse-record-{index}", daemon=True)
        self.rec, self.index, self.client, self.info = rec, index, client, info
        self.replay_s = replay_s
        self.replay = Replay(info.last_seq if replay_s else 0)
        self.cond = threading.Condition()
        self.last_seq = 0
        self.last_end_mono = 0
        self.updates = 0
        self.sub: Any = None
        self.stopping = False
        self.error: Optional[str] = None
        self.ready = threading.Event()   # subscribed: later marks reach us in an Update

    def run(self) -> None:
        replay = self.replay_s
        while not self.stopping:
            try:
                self.sub = self.client.subscribe_raw(replay_seconds=replay, hold_session=True)
                self.ready.set()
                for data in self.sub:
                    self._keep(data)
                if self.stopping:
                    return
                raise IopulseError(f"the stream from {self.client.target} ended")
            except IopulseError as e:
                if self.stopping:
                    return
                self.error = str(e)
                self.ready.set()
                self.rec.event({"type": "host_error", "host": self.index, "error": str(e),
                                "realtime_ns": _now_ns()})
                self.rec.say(f"host {self.info.hostname or self.client.target}: {e}; "
                             "subscribing again")
                gap_start = time.monotonic()
                while not self.stopping:
                    time.sleep(RECONNECT_PAUSE_S)
                    try:
                        raw = self.client.info_raw()
                    except IopulseError:
                        continue
                    info = Info.from_pb(pb.Info.FromString(raw))
                    if info.started_realtime_ns != self.info.started_realtime_ns:
                        self.rec.writer.write_info(self.index, raw)   # a restarted daemon
                        self.info, self.last_seq = info, 0
                    replay = min(info.ring_seconds, int(time.monotonic() - gap_start) + 5)
                    break

    def _keep(self, data: bytes) -> None:
        u = pb.Update.FromString(data)
        if u.seq and u.seq <= self.last_seq:
            return              # already stored (a replay after a reconnect)
        self.rec.writer.write_update(self.index, data)
        if u.seq <= self.replay.last_seq:
            self.replay.add(u)
        with self.cond:
            self.last_seq = u.seq
            self.last_end_mono = u.end_monotonic_ns
            self.updates += 1
            self.cond.notify_all()

    def wait_past(self, mono_ns: int, timeout: float) -> bool:
        """Wait until an Update ending at or after mono_ns is stored."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.last_end_mono < mono_ns:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def stop(self) -> None:
        self.stopping = True
        if self.sub is not None:
            self.sub.cancel()


class Recorder:
    """Connect to every target, write the header and each agent's Info, start the streams.

    before_open() is called once every daemon answered, right before the run file is created:
    what it raises stops the recording with nothing written (the clients closed). stop() says
    whether to give up waiting for the streams to subscribe (a signal came: the caller ends
    the recording at once)."""

    def __init__(self, path: str, targets: list[str], *, argv: list[str],
                 command: Optional[list[str]] = None, replay_s: int = 0,
                 overwrite: bool = False, timeout: float = 10.0, connect_deadline: float = 10.0,
                 say: Callable[[str], None] = lambda s: print(f"iopulse record: {s}",
                                                             file=sys.stderr),
                 before_open: Callable[[], None] = lambda: None,
                 stop: Callable[[], bool] = _never) -> None:
        self.say = say
        self.mark_errors = 0        # marks a daemon refused or that failed
        self.session = f"record-{uuid.uuid4().hex[:12]}"
        self.clients = [Client(t, timeout=timeout, connect_deadline=connect_deadline,
                               session=self.session) for t in targets]
        infos = []
        try:
            for c in self.clients:
                raw = c.info_raw(device_settings=True)  # kept: the settings at the start
                infos.append((raw, Info.from_pb(pb.Info.FromString(raw))))
            before_open()
        except BaseException:
            for c in self.clients:
                c.close()
            raise
        self.writer = RunWriter(path, overwrite=overwrite)
        self.started_ns = _now_ns()
        self.writer.write_json({
            "type": "header", "format": 1, "iopulse_version": __version__,
            "created_realtime_ns": self.started_ns, "recorder_host": socket.gethostname(),
            "argv": argv, "command": command, "session": self.session,
            "targets": targets, "replay_seconds": replay_s})
        self.streams: list[HostStream] = []
        for i, (c, (raw, info)) in enumerate(zip(self.clients, infos)):
            self.writer.write_json({"type": "agent", "host": i, "target": c.target,
                                    "hostname": info.hostname})
            self.writer.write_info(i, raw)
            self.streams.append(HostStream(self, i, c, info, replay_s))
        self.writer.flush()
        for c, (_, info) in zip(self.clients, infos):
            if info.devices and not any(d.settings for d in info.devices):
                say(f"host {info.hostname or c.target}: its iopulsed "
                    f"({info.version}) does not report device settings (an earlier build): "
                    "the run has none for it")
        for s in self.streams:
            s.start()
        for s in self.streams:      # a mark made before a stream is up would be missed
            if not _wait_in_steps(s.ready.wait, connect_deadline + 5, stop) and not stop():
                say(f"host {s.info.hostname or s.client.target}: not subscribed after "
                    f"{connect_deadline + 5:g} s; recording anyway")
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.clients)))

    def event(self, obj: dict[str, Any]) -> None:
        self.writer.write_json(obj)

    def mark(self, name: str, labels: dict[str, str], end: bool = False,
             begin: Optional[dict[int, PhaseMark]] = None,
             parent: Optional[dict[int, PhaseMark]] = None,
             inferred: str = "") -> dict[int, PhaseMark]:
        """Mark on every daemon at once; returns each host's mark (hosts that failed are left
        out and reported). An end closes the given begins; a begin nests in the given parent
        begins (each host's own), else in the session's innermost open phase. inferred: an
        end made for a phase whose own end never came, and why (kept in the run file)."""
        asked = {i: m.id for i, m in (parent or {}).items()} if not end else {}

        def one(i: int) -> Optional[PhaseMark]:
            if end and (begin is None or i not in begin):
                return None
            try:
                return self.clients[i].mark_phase(name, end=end,
                                                  phase_id=begin[i].id if end and begin else 0,
                                                  parent_id=asked.get(i, 0),
                                                  **labels).mark
            except IopulseError as e:
                self.mark_errors += 1
                self.say(f"host {self.streams[i].info.hostname}: mark {name!r}: {e}")
                self.event({"type": "mark_error", "host": i, "name": name, "end": end,
                            "error": str(e), "realtime_ns": _now_ns()})
                return None
        got = list(self._pool.map(one, range(len(self.clients))))
        marks = {i: m for i, m in enumerate(got) if m is not None}
        for i, m in marks.items():   # the daemon's answer, in case its Update never arrives
            ev: dict[str, Any] = {"type": "mark", "host": i, **m.to_dict()}
            if i in asked:          # a daemon from before parent_id nests it elsewhere
                ev["parent_asked"] = asked[i]
            if end and inferred:
                ev["inferred"] = inferred
            self.event(ev)
        return marks

    def begin(self, name: str, labels: dict[str, str],
              parent: object = None) -> dict[int, PhaseMark]:
        """A begin on every daemon, nested in parent (what begin returned) when given."""
        return self.mark(name, labels, parent=parent)  # type: ignore[arg-type]

    def end(self, token: object, inferred: str = "") -> dict[int, PhaseMark]:
        begins: dict[int, PhaseMark] = token  # type: ignore[assignment]
        if not begins:
            return {}
        first = next(iter(begins.values()))
        return self.mark(first.name, {}, end=True, begin=begins, inferred=inferred)

    def wait_caught_up(self, marks: dict[int, PhaseMark], timeout: float = 15.0,
                       stop: Callable[[], bool] = _never) -> None:
        """Wait until every host's Update holding its mark is stored, or stop() is true."""
        for i, m in marks.items():
            s = self.streams[i]
            if _wait_in_steps(partial(s.wait_past, m.monotonic_ns), timeout, stop):
                continue
            if stop():
                self.say("not waiting for the Updates closing the run (stopped)")
                return
            self.say(f"host {s.info.hostname}: the Update closing the run did not arrive "
                     f"within {timeout:g} s")

    def progress(self) -> str:
        n = sum(s.updates for s in self.streams)
        return (f"{(_now_ns() - self.started_ns) / 1e9:.0f} s, {len(self.streams)} host(s), "
                f"{n} Updates, {self.writer.file_bytes / 2**20:.2f} MiB")

    def close(self, final: dict[str, Any]) -> None:
        for s in self.streams:
            s.stop()
        for s in self.streams:
            s.join(10)
        self._pool.shutdown(wait=True)
        final = dict(final, type="end", realtime_ns=_now_ns(),
                     updates={str(s.index): s.updates for s in self.streams})
        if any(s.replay_s for s in self.streams):
            final["replay"] = {str(s.index): s.replay.to_dict() for s in self.streams}
            for s in self.streams:
                self.say(f"replay from {s.info.hostname or s.client.target}: "
                         f"{s.replay.describe(s.info.interval_ns)}")
        self.writer.close(final)
        for c in self.clients:
            c.close()


def hook_script_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook.py")
