"""Reads a run file, also one cut short by a crash: everything up to the damage is kept and
the damage is reported, never raised.

load() makes one streaming pass that keeps only what is small: the header, each agent's Info,
events, and per Update its window and phase marks. The Updates themselves (an hour of a busy
node is hundreds of MiB unpacked) are read again on demand: Run.iter_updates() streams them as
protobuf messages, Host.updates decodes one host's into iopulse.Update objects.

Whatever a file says, a pass is bounded by the file's size: it inflates at most PIECE bytes at
a time and holds at most one record (MAX_RECORD) and one piece; records of kinds it does not
know are passed, not held. A record longer than the rest of the file can hold (deflate writes
at most DEFLATE_RATIO bytes per compressed byte), more records and marks than compressed bytes
(ITEM_SLACK aside: a writer's records each take several), an inflater that neither takes input
nor gives output, and JSON records, marks and Infos kept past MAX_KEPT bytes are damage.
"""
from __future__ import annotations

import json
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Optional

from .._pb import iopulse_pb2 as pb
from ..analysis.aggregate import phase_histogram
from ..analysis.settings import HostSettings
from ..histogram import Histogram
from ..model import Info, PhaseMark, Update
from ..phases.model import Phase, phases_of_run
from .runfile import (KIND_INFO, KIND_JSON, KIND_SCHEMA, KIND_UPDATE, MAGIC, MAX_HOSTS,
                      MAX_RECORD, read_varint, split_host)

READ = 1 << 16             # compressed bytes inflated at a time
PIECE = 1 << 20            # the most one inflate step writes
DEFLATE_RATIO = 1032       # the most deflate writes per compressed byte (258 bytes in 2 bits)
ITEM_SLACK = 1 << 16       # records and marks allowed beyond one per compressed byte
MAX_KEPT = 2 * MAX_RECORD  # bytes of JSON records, marks and Infos load() keeps in all


_KINDS = frozenset(k[0] for k in (KIND_INFO, KIND_JSON, KIND_SCHEMA, KIND_UPDATE))


class _OverBound(ValueError):
    """What a file would make load() keep goes over a bound (the message says which)."""


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
        for the hosts whose daemon reported them (see iopulse.analysis.settings)."""
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
        queue_wait_ns, service_ns, size_bytes (analysis.aggregate.phase_histogram).

            run.histogram("randread", None, "nvme0n1", "read").percentile(99.9)
        """
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


class _Progress:
    """How far a pass over the file has come: the compressed bytes inflated, the records read
    and what load() kept of them. Bounds the pass by the file's size: see _records."""

    def __init__(self) -> None:
        self.f: Optional[BinaryIO] = None
        self.consumed = 0       # compressed bytes inflated so far
        self.unpacked = 0       # decompressed bytes before the reader's buffer
        self.items = 0          # records read, and marks kept (by load)
        self.kept = 0           # bytes of JSON records, marks and Infos kept (by load)

    def can_hold(self) -> int:
        """The most the rest of the file can still decompress to."""
        assert self.f is not None
        left = os.fstat(self.f.fileno()).st_size - self.consumed
        return max(0, left) * DEFLATE_RATIO + PIECE      # a piece inflate may hold back

    def over(self) -> str:
        """Why the pass must stop, or "" while items stay within one per compressed byte."""
        if self.items > self.consumed + ITEM_SLACK:
            return (f"{self.items:,} records and marks from {self.consumed:,} compressed "
                    "bytes: more than one per byte, which no writer's records take (the "
                    "stream repeats itself without making progress through the file)")
        return ""


def _pieces(prog: _Progress, damage: list[str]) -> Iterator[bytes]:
    """The decompressed stream of prog.f, gzip members one after the other, in pieces of at
    most PIECE bytes (inflated READ compressed bytes at a time, never all of a bomb at once)."""
    d = zlib.decompressobj(31)
    fed = False                     # the current member has begun
    data = b""
    full = False                    # the last piece was PIECE long: inflate may hold more
    while True:
        if not data and not full:
            assert prog.f is not None
            data = prog.f.read(READ)
            if not data:
                break
        try:
            out = d.decompress(data, PIECE)
        except zlib.error as e:
            damage[0] = damage[0] or (f"compressed data damaged at compressed byte "
                                      f"{prog.consumed:,} ({e})")
            return
        rest = d.unused_data if d.eof else d.unconsumed_tail
        used = len(data) - len(rest)
        if data and not out and not used and not d.eof:
            damage[0] = damage[0] or (f"the compressed stream makes no progress at compressed "
                                      f"byte {prog.consumed:,}")
            return
        fed = fed or bool(data)
        prog.consumed += used
        full = len(out) == PIECE
        if out:
            yield out
        data = rest
        if d.eof:                      # a member ends: another may follow
            d = zlib.decompressobj(31)
            fed = full = False
    if fed:
        damage[0] = damage[0] or "the file ends early (the recorder was stopped or crashed)"


def _records(path: str, damage: list[str], prog: Optional[_Progress] = None
             ) -> Iterator[tuple[bytes, bytes]]:
    """(kind, payload) of each record of a known kind in path, in bounded memory and time
    (see the module's docstring); damage is reported in damage[0]."""
    with open(path, "rb") as f:
        prog = prog or _Progress()
        prog.f = f
        yield from _framed(path, prog, damage)


def _framed(path: str, prog: _Progress, damage: list[str]) -> Iterator[tuple[bytes, bytes]]:
    buf = bytearray()
    magic_seen = False
    pos = 0
    skip = 0                # bytes still to pass of a record of a kind this reader skips
    for piece in _pieces(prog, damage):
        if skip:
            take = min(skip, len(piece))
            skip -= take
            prog.unpacked += take
            if take == len(piece):
                continue
            piece = piece[take:]
        if pos:
            del buf[:pos]
            prog.unpacked += pos
            pos = 0
        buf += piece
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
                damage[0] = damage[0] or (f"a record length is damaged at unpacked byte "
                                          f"{prog.unpacked + pos:,}")
                return
            if n < 1 or n > MAX_RECORD:
                damage[0] = damage[0] or (f"a record length is damaged at unpacked byte "
                                          f"{prog.unpacked + pos:,} ({n:,} bytes; at most "
                                          f"{MAX_RECORD:,})")
                return
            missing = body + n - len(buf)
            if missing > 0 and missing > prog.can_hold():
                damage[0] = damage[0] or (
                    f"a record length is damaged at unpacked byte {prog.unpacked + pos:,} "
                    f"({n:,} bytes: {missing:,} more than the rest of the file can hold)")
                return
            known = body < len(buf) and buf[body] in _KINDS
            if missing > 0 and (known or body >= len(buf)):
                break               # read on: a known kind is held whole
            prog.items += 1
            why = prog.over()
            if why:
                damage[0] = damage[0] or why
                return
            if not known:           # newer writers may add kinds: passed, never held
                if missing > 0:
                    skip, pos = missing, len(buf)
                    break
                pos = body + n
                continue
            with memoryview(buf) as view:
                kind, payload = bytes(view[body:body + 1]), bytes(view[body + 1:body + n])
            yield kind, payload
            pos = body + n
    if not magic_seen:
        if damage[0] or (buf and MAGIC.startswith(buf)) or not buf:
            damage[0] = damage[0] or "the file ends before its first record"
            return
        raise RunFileError(f"{path}: not an iopulse run file (no '{MAGIC.strip().decode()}' "
                           "line)")
    if skip or pos < len(buf):
        damage[0] = damage[0] or "the last record is cut short"


def load(path: str) -> Run:
    """The run in path. Raises RunFileError if it is not a run file, OSError if unreadable."""
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            raise RunFileError(f"{path}: not an iopulse run file (not gzip-compressed)")
    run = Run(path)
    damage = [""]
    prog = _Progress()
    for kind, payload in _records(path, damage, prog):
        try:
            _add(run, kind, payload, prog)
        except _OverBound as e:
            damage[0] = f"record {run.records + 1} ({kind!r}): {e}"
            break
        except Exception as e:  # noqa: BLE001 - a damaged record ends the readable part
            damage[0] = f"record {run.records + 1} ({kind!r}) does not decode: " \
                        f"{type(e).__name__}: {e}"
            break
        run.records += 1
    run.damage = damage[0]
    if not run.damage and run.end is None:
        run.damage = "the file ends early (no end record: the recorder was stopped or crashed)"
    names = Counter(h.hostname or h.target for h in run.hosts)
    for h in run.hosts:
        if names[h.hostname or h.target] > 1 and h.hostname:
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


def _keep(prog: _Progress, nbytes: int, what: str) -> None:
    prog.kept += nbytes
    if prog.kept > MAX_KEPT:
        raise _OverBound(f"{what} would take what the reader keeps of the file's JSON records, "
                         f"marks and Infos past {MAX_KEPT:,} bytes")


def _mark_bytes(m: Any) -> int:
    return len(m.name) + len(m.session) + sum(len(k) + len(v) for k, v in m.labels.items())


def _add(run: Run, kind: bytes, payload: bytes, prog: _Progress) -> None:
    if kind == KIND_UPDATE:
        host, data = split_host(payload)
        u = pb.Update.FromString(data)
        h = run.host(host)
        h.windows.append(Window(u.seq, u.start_monotonic_ns, u.end_monotonic_ns,
                                u.start_realtime_ns, u.end_realtime_ns))
        if u.phases:
            prog.items += len(u.phases)
            _keep(prog, sum(_mark_bytes(m) for m in u.phases), "its phase marks")
            h.marks.extend(PhaseMark.from_pb(m) for m in u.phases)
    elif kind == KIND_JSON:
        _keep(prog, len(payload), "it")
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
        _keep(prog, len(data), "it")
        h = run.host(host)
        h.info = Info.from_pb(pb.Info.FromString(data))
        h.hostname = h.info.hostname
        if h.first_info is None:
            h.first_info = h.info
    elif kind == KIND_SCHEMA:
        run.schema = payload
    # unknown kinds are skipped: newer writers may add some
