"""Reads a run file, also one cut short by a crash: everything up to the damage is kept and
the damage is reported, never raised.

load() makes one streaming pass that keeps only what is small: the header, each agent's Info,
events, and per Update its window and phase marks. The Updates themselves (an hour of a busy
node is hundreds of MiB unpacked) are read again on demand: Run.iter_updates() streams them as
protobuf messages, Host.updates decodes one host's into iopulse.Update objects.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from .._pb import iopulse_pb2 as pb
from ..histogram import Histogram
from ..model import Info, PhaseMark, Update
from ..phases.model import Phase, phases_of_run
from .settings import HostSettings
from .runfile import (KIND_INFO, KIND_JSON, KIND_SCHEMA, KIND_UPDATE, MAGIC, MAX_HOSTS,
                      MAX_RECORD, read_varint, split_host)

CHUNK = 1 << 20


class RunFileError(ValueError):
    """Not a run file at all (the message names the file and what is wrong)."""


@dataclass
class Window:
    """An Update's place in time (the attribute names are the Update's)."""
    seq: int
    start_monotonic_ns: int
    end_monotonic_ns: int
    start_realtime_ns: int
    end_realtime_ns: int


@dataclass
class Host:
    index: int
    target: str = ""
    hostname: str = ""
    info: Optional[Info] = None         # the latest Info (a restarted daemon sends another)
    first_info: Optional[Info] = None   # the Info at the start: the device settings then
    windows: list[Window] = field(default_factory=list)
    marks: list[PhaseMark] = field(default_factory=list)
    label: str = ""             # unique in the run: the host name, with the target if needed
    run: Optional["Run"] = field(default=None, repr=False)
    _updates: Optional[list[Update]] = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.label or self.hostname or self.target or f"host{self.index}"

    @property
    def settings(self) -> Optional[HostSettings]:
        """The host's device settings when the recording began; None if its daemon did not
        report them."""
        return HostSettings.from_info(self.name, self.first_info) if self.first_info else None

    @property
    def updates(self) -> list[Update]:
        """This host's Updates, decoded (read from the file on first use)."""
        if self._updates is None:
            assert self.run is not None
            self._updates = [Update.from_pb(u) for h, u in self.run.iter_updates()
                             if h == self.index]
        return self._updates


@dataclass
class Run:
    path: str
    header: dict[str, Any] = field(default_factory=dict)
    hosts: list[Host] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)   # JSON records but the header
    tool_outputs: list[dict[str, Any]] = field(default_factory=list)   # 'tool_output' records
    end: Optional[dict[str, Any]] = None
    schema: bytes = b""
    damage: str = ""            # why reading stopped early ("" for a complete file)
    records: int = 0

    @property
    def complete(self) -> bool:
        return not self.damage and self.end is not None

    @property
    def settings(self) -> dict[str, HostSettings]:
        """Each host's device settings when the recording began, by host name (Host.name),
        for the hosts whose daemon reported them (see iopulse.record.settings)."""
        out = {}
        for h in self.hosts:
            s = h.settings
            if s is not None:
                out[h.name] = s
        return out

    @property
    def fio_output(self) -> Optional[dict[str, Any]]:
        """fio's JSON report of the recorded command, parsed as fio wrote it (json+ when
        record added the format, else the json or json+ the command asked for); None when the
        command was not fio or no report was kept. fio's own numbers: jobs[i]["read"]["iops"],
        ["clat_ns"]["percentile"], ["sync"]["lat_ns"] ..."""
        for ev in self.tool_outputs:
            if ev.get("tool") == "fio" and isinstance(ev.get("output"), dict):
                return ev["output"]
        return None

    def histogram(self, phase: Any, host: Optional[str], device: str, op: str = "all",
                  metric: str = "total_ns") -> Histogram:
        """The merged histogram of one metric over a phase (its name or Phase), on one host
        (None: every host): every bucket of every Update in it added up, as the report
        computes its percentiles. op: read, write, discard, flush or all; metric: total_ns,
        queue_wait_ns, service_ns, size_bytes (report.aggregate.phase_histogram).

            run.histogram("randread", None, "nvme0n1", "read").percentile(99.9)
        """
        from ..report.aggregate import phase_histogram   # the report imports this module

        return phase_histogram(self, phase, host, device, op, metric)

    def span_realtime_ns(self) -> tuple[int, int]:
        """The wall-clock time the run holds data for: from the earliest Update's start to
        the latest Update's end over all hosts (replayed history included); without Updates,
        from the header's creation to the end record (0, 0 if neither is known)."""
        starts = [min(w.start_realtime_ns for w in h.windows) for h in self.hosts if h.windows]
        ends = [max(w.end_realtime_ns for w in h.windows) for h in self.hosts if h.windows]
        if starts:
            return min(starts), max(ends)
        s = int(self.header.get("created_realtime_ns") or 0)
        e = int((self.end or {}).get("realtime_ns") or 0)
        return s, max(s, e)

    def host(self, index: int) -> Host:
        """Host index, made if it is the next one; an index beyond that is damage (a file
        cannot make the reader allocate millions of hosts)."""
        if not 0 <= index <= len(self.hosts) or index >= MAX_HOSTS:
            raise ValueError(f"host index {index} beyond the {len(self.hosts)} host(s) so far")
        while len(self.hosts) <= index:
            self.hosts.append(Host(len(self.hosts), run=self))
        return self.hosts[index]

    def phases(self) -> list[Phase]:
        """The run's phases, from its marks and imported phases."""
        return phases_of_run(self)

    def iter_updates(self) -> Iterator[tuple[int, Any]]:
        """(host index, iopulse.v1.Update message) of every Update, in file order."""
        for kind, payload in _records(self.path, [""]):
            if kind == KIND_UPDATE:
                try:
                    host, data = split_host(payload)
                    u = pb.Update.FromString(data)
                except Exception:  # noqa: BLE001 - load() reported where the damage is
                    return
                yield host, u


def _chunks(path: str, damage: list[str]) -> Iterator[bytes]:
    """The decompressed stream of path, gzip members one after the other."""
    d = zlib.decompressobj(31)
    fed = False                     # the current member has begun
    with open(path, "rb") as f:
        while True:
            data = f.read(CHUNK)
            if not data:
                break
            while data:
                fed = True
                try:
                    out = d.decompress(data)
                except zlib.error as e:
                    damage[0] = damage[0] or f"compressed data damaged ({e})"
                    return
                if out:
                    yield out
                if d.eof:                      # a member ends: another may follow
                    data = d.unused_data
                    d = zlib.decompressobj(31)
                    fed = False
                else:
                    data = b""
    if fed:
        damage[0] = damage[0] or "the file ends early (the recorder was stopped or crashed)"


def _records(path: str, damage: list[str]) -> Iterator[tuple[bytes, bytes]]:
    buf = b""
    magic_seen = False
    pos = 0
    for chunk in _chunks(path, damage):
        buf = buf[pos:] + chunk
        pos = 0
        if not magic_seen:
            if len(buf) < len(MAGIC):
                continue
            if not buf.startswith(MAGIC):
                raise RunFileError(f"{path}: not an iopulse run file (no "
                                   f"'{MAGIC.strip().decode()}' line)")
            magic_seen, pos = True, len(MAGIC)
        while True:
            try:
                n, body = read_varint(buf, pos)
            except IndexError:
                break
            except ValueError:
                damage[0] = damage[0] or "a record length is damaged"
                return
            if n < 1 or n > MAX_RECORD:
                damage[0] = damage[0] or (f"a record length is damaged ({n:,} bytes; at most "
                                          f"{MAX_RECORD:,})")
                return
            if body + n > len(buf):
                break
            yield buf[body:body + 1], buf[body + 1:body + n]
            pos = body + n
    if not magic_seen:
        if damage[0] or (buf and MAGIC.startswith(buf)) or not buf:
            damage[0] = damage[0] or "the file ends before its first record"
            return
        raise RunFileError(f"{path}: not an iopulse run file (no '{MAGIC.strip().decode()}' "
                           "line)")
    if pos < len(buf):
        damage[0] = damage[0] or "the last record is cut short"


def load(path: str) -> Run:
    """The run in path. Raises RunFileError if it is not a run file, OSError if unreadable."""
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            raise RunFileError(f"{path}: not an iopulse run file (not gzip-compressed)")
    run = Run(path)
    damage = [""]
    for kind, payload in _records(path, damage):
        try:
            _add(run, kind, payload)
        except Exception as e:  # noqa: BLE001 - a damaged record ends the readable part
            damage[0] = f"record {run.records + 1} ({kind!r}) does not decode: " \
                        f"{type(e).__name__}: {e}"
            break
        run.records += 1
    run.damage = damage[0]
    if not run.damage and run.end is None:
        run.damage = "the file ends early (no end record: the recorder was stopped or crashed)"
    names = [h.hostname or h.target for h in run.hosts]
    for h in run.hosts:
        if names.count(h.hostname or h.target) > 1 and h.hostname:
            h.label = f"{h.hostname} ({h.target})"     # two agents on one node
    return run


_EVENT_FIELDS = {      # what the analysis reads of an event, and its type
    "mark": {"host": int, "name": str, "end": bool, "realtime_ns": int, "monotonic_ns": int,
             "id": int},
    "phase": {"name": str, "start_realtime_ns": int, "end_realtime_ns": int},
}


def _check_event(obj: Any) -> None:
    """A mark or phase event with every field the analysis reads, of its type (a damaged or
    forged one is damage at load, not a traceback later)."""
    if not isinstance(obj, dict):
        raise ValueError("a JSON record that is not an object")
    for key, typ in _EVENT_FIELDS.get(obj.get("type"), {}).items():
        v = obj.get(key)
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise ValueError(f"{obj.get('type')} event: '{key}' is {type(v).__name__}, not "
                             f"{typ.__name__}")
    if not isinstance(obj.get("labels", {}), dict):
        raise ValueError(f"{obj.get('type')} event: 'labels' is not an object")
    if obj.get("type") == "withdraw":
        phases = obj.get("phases")
        if not isinstance(phases, list):
            raise ValueError("withdraw event: 'phases' is not a list")
        for p in phases:
            _check_event(dict(p, type="phase") if isinstance(p, dict) else p)


def _add(run: Run, kind: bytes, payload: bytes) -> None:
    if kind == KIND_UPDATE:
        host, data = split_host(payload)
        u = pb.Update.FromString(data)
        h = run.host(host)
        h.windows.append(Window(u.seq, u.start_monotonic_ns, u.end_monotonic_ns,
                                u.start_realtime_ns, u.end_realtime_ns))
        h.marks.extend(PhaseMark.from_pb(m) for m in u.phases)
    elif kind == KIND_JSON:
        obj = json.loads(payload)
        t = obj.get("type")
        if t == "header":
            run.header = obj
        elif t == "agent":
            h = run.host(int(obj["host"]))
            h.target = obj.get("target", "")
        elif t == "end":
            run.end = obj
        elif t == "tool_output":
            run.tool_outputs.append(obj)
        else:
            _check_event(obj)
            run.events.append(obj)
    elif kind == KIND_INFO:
        host, data = split_host(payload)
        h = run.host(host)
        h.info = Info.from_pb(pb.Info.FromString(data))
        h.hostname = h.info.hostname
        if h.first_info is None:
            h.first_info = h.info
    elif kind == KIND_SCHEMA:
        run.schema = payload
    # unknown kinds are skipped: newer writers may add some
