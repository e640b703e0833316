"""Reads a run file, also one cut short by a crash: everything up to the damage is kept and
the damage is reported, never raised."""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Optional

from .._pb import iopulse_pb2 as pb
from ..model import Info, Update
from .runfile import (KIND_INFO, KIND_JSON, KIND_SCHEMA, KIND_UPDATE, MAGIC, read_varint,
                      split_host)


class RunFileError(ValueError):
    """Not a run file at all (the message names the file and what is wrong)."""


@dataclass
class Host:
    index: int
    target: str = ""
    hostname: str = ""
    info: Optional[Info] = None
    updates: list[Update] = field(default_factory=list)

    label: str = ""             # unique in the run: the host name, with the target if needed

    @property
    def name(self) -> str:
        return self.label or self.hostname or self.target or f"host{self.index}"


@dataclass
class Run:
    path: str
    header: dict[str, Any] = field(default_factory=dict)
    hosts: list[Host] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)   # JSON records but the header
    end: Optional[dict[str, Any]] = None
    schema: bytes = b""
    damage: str = ""            # why reading stopped early ("" for a complete file)
    records: int = 0

    @property
    def complete(self) -> bool:
        return not self.damage and self.end is not None

    def host(self, index: int) -> Host:
        while len(self.hosts) <= index:
            self.hosts.append(Host(len(self.hosts)))
        return self.hosts[index]

    def phases(self) -> list[Any]:
        """The run's phases (iopulse.phases.Phase), from its marks and imported phases."""
        from ..phases.model import phases_of_run

        return phases_of_run(self)


def _decompress(data: bytes) -> tuple[bytes, str]:
    d = zlib.decompressobj(31)
    try:
        out = d.decompress(data)
    except zlib.error as e:
        # what decompressed before the damage is lost with this API: retry in pieces
        out, pos, parts = b"", 0, []
        d = zlib.decompressobj(31)
        while pos < len(data):
            try:
                parts.append(d.decompress(data[pos:pos + 4096]))
            except zlib.error:
                break
            pos += 4096
        return b"".join(parts), f"compressed data damaged ({e})"
    if not d.eof:
        return out, "the file ends early (the recorder was stopped or crashed)"
    return out, ""


def load(path: str) -> Run:
    """The run in path. Raises RunFileError if it is not a run file, OSError if unreadable."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\x1f\x8b":
        raise RunFileError(f"{path}: not an iopulse run file (not gzip-compressed)")
    raw, damage = _decompress(data)
    run = Run(path)
    if not raw.startswith(MAGIC):
        if len(raw) < len(MAGIC) and MAGIC.startswith(raw):
            run.damage = damage or "the file ends before its first record"
            return run
        raise RunFileError(f"{path}: not an iopulse run file (no '{MAGIC.strip().decode()}' "
                           "line)")
    pos = len(MAGIC)
    while pos < len(raw):
        try:
            n, body = read_varint(raw, pos)
        except (IndexError, ValueError):
            damage = damage or "a record is cut short"
            break
        if n < 1 or body + n > len(raw):
            damage = damage or f"a record is cut short at byte {pos} of the decompressed data"
            break
        kind, payload = raw[body:body + 1], raw[body + 1:body + n]
        pos = body + n
        try:
            _add(run, kind, payload)
        except Exception as e:  # noqa: BLE001 - a damaged record ends the readable part
            damage = f"record {run.records + 1} ({kind!r}) does not decode: " \
                     f"{type(e).__name__}: {e}"
            break
        run.records += 1
    run.damage = damage
    names = [h.hostname or h.target for h in run.hosts]
    for h in run.hosts:
        if names.count(h.hostname or h.target) > 1 and h.hostname:
            h.label = f"{h.hostname} ({h.target})"     # two agents on one node
    return run


def _add(run: Run, kind: bytes, payload: bytes) -> None:
    if kind == KIND_UPDATE:
        host, data = split_host(payload)
        run.host(host).updates.append(Update.from_pb(pb.Update.FromString(data)))
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
        else:
            run.events.append(obj)
    elif kind == KIND_INFO:
        host, data = split_host(payload)
        h = run.host(host)
        h.info = Info.from_pb(pb.Info.FromString(data))
        h.hostname = h.info.hostname
    elif kind == KIND_SCHEMA:
        run.schema = payload
    # unknown kinds are skipped: newer writers may add some
