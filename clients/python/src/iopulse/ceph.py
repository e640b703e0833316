"""A Ceph OSD's slow ops, as its admin socket tells them (`dump_historic_slow_ops`): read from
the socket itself (no ceph CLI needed), from `ceph tell` / `ceph daemon` output saved to a
file, or from that JSON as text.

The admin socket protocol (src/common/admin_socket.cc): the client writes a JSON command
ended by a NUL byte; the OSD answers with the length of its reply (32 bits, network order)
and the reply. The reply of dump_historic_slow_ops (src/common/TrackedOp.cc) is an object
with "num to keep", "threshold to keep" and "Ops", each op with "description",
"initiated_at" (the OSD's wall clock: "2026-11-28T12:00:00.123456+0000", or without the
zone and with a space in releases before Octopus), "age" and "duration" in seconds and
"type_data" (Pacific: "flag_point", "events").
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

DEFAULT_SOCKET = "/var/run/ceph/ceph-osd.{osd}.asok"
REPLY_MAX = 64 << 20            # bytes of a reply read at most
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(\.\d{1,9})?([+-]\d\d:?\d\d|Z)?$")


class CephError(ValueError):
    """The OSD's slow ops could not be read: the socket, the reply or the file, named."""


@dataclass
class SlowOp:
    """One op of dump_historic_slow_ops."""
    description: str
    initiated_ns: int           # wall clock, ns since the epoch
    duration_ns: int
    flag_point: str             # where it was when dumped ("commit sent; apply or cleanup")

    @property
    def end_ns(self) -> int:
        return self.initiated_ns + self.duration_ns

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "initiated_ns": self.initiated_ns,
                "duration_ns": self.duration_ns, "flag_point": self.flag_point}


def parse_time(text: str) -> int:
    """An OSD's initiated_at as ns since the epoch; a time without a zone is this machine's
    local time (the OSD's, when read on its node)."""
    m = _TIME.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a time like 2026-11-28T12:00:00.123456+0000")
    day, clock, frac, zone = m.groups()
    whole = datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S")
    if zone:
        z = zone.replace(":", "")
        sign = 1 if z[0] == "+" else -1
        off = 0 if z == "Z" else sign * (int(z[1:3]) * 3600 + int(z[3:5]) * 60)
        secs = int(whole.replace(tzinfo=timezone.utc).timestamp()) - off
    else:
        secs = int(whole.timestamp())
    ns = int((frac or ".0")[1:].ljust(9, "0")[:9])
    return secs * 1_000_000_000 + ns


def parse_slow_ops(obj: Any, where: str) -> list[SlowOp]:
    """The ops of a dump_historic_slow_ops reply (its JSON, parsed), oldest first; where
    names the reply's source in errors."""
    if not isinstance(obj, dict) or not isinstance(obj.get("Ops"), list):
        raise CephError(f"{where}: not a dump_historic_slow_ops reply (no \"Ops\" list)")
    out = []
    for n, op in enumerate(obj["Ops"]):
        try:
            dur = float(op["duration"])
            if not dur >= 0 or dur == float("inf"):
                raise ValueError(f"duration {dur}")
            td = op.get("type_data") or {}
            out.append(SlowOp(str(op.get("description", "")), parse_time(op["initiated_at"]),
                              int(round(dur * 1e9)),
                              str(td.get("flag_point", "")) if isinstance(td, dict) else ""))
        except (KeyError, TypeError, ValueError) as e:
            raise CephError(f"{where}: op {n}: {e.__class__.__name__}: {e}") from None
    return sorted(out, key=lambda o: o.initiated_ns)


def read_file(path: str) -> list[SlowOp]:
    """Slow ops saved from `ceph daemon osd.N dump_historic_slow_ops` (or `ceph tell`)."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except json.JSONDecodeError as e:
        raise CephError(f"{path}: line {e.lineno}: not JSON: {e.msg}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CephError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    return parse_slow_ops(obj, path)


def ask(path: str, prefix: str, timeout: float = 10.0) -> Any:
    """One admin-socket command's JSON reply."""
    cmd = json.dumps({"prefix": prefix, "format": "json"}).encode() + b"\0"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(cmd)
            head = _read(s, 4)
            (n,) = struct.unpack("!I", head)
            if n > REPLY_MAX:
                raise CephError(f"{path}: a reply of {n} bytes (more than {REPLY_MAX})")
            body = _read(s, n)
    except socket.timeout:
        raise CephError(f"{path}: no reply to {prefix} within {timeout:g} s") from None
    except OSError as e:
        raise CephError(f"{path}: {e.strerror or e}") from None
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body[:200].decode("utf-8", "replace")
        raise CephError(f"{path}: {prefix}: the OSD answered {text!r}") from None


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        got = s.recv(min(n - len(buf), 1 << 20))
        if not got:
            raise CephError(f"the OSD closed its admin socket after {len(buf)} of {n} bytes")
        buf += got
    return buf


def read_socket(path: str, timeout: float = 10.0) -> list[SlowOp]:
    """The slow ops the OSD behind an admin socket keeps now."""
    return parse_slow_ops(ask(path, "dump_historic_slow_ops", timeout), path)


def socket_of(osd: int, template: Optional[str] = None) -> str:
    return (template or DEFAULT_SOCKET).format(osd=osd)


def read_tell(osd: int, timeout: float = 30.0) -> list[SlowOp]:
    """The slow ops of osd.N through the cluster (`ceph tell osd.N dump_historic_slow_ops`),
    for a node that is not the OSD's; the ceph CLI's own configuration and keyring apply."""
    exe = shutil.which("ceph")
    where = f"ceph tell osd.{osd}"
    if exe is None:
        raise CephError(f"{where}: no ceph command on PATH")
    try:
        p = subprocess.run([exe, "tell", f"osd.{osd}", "dump_historic_slow_ops", "--format",
                            "json"], capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CephError(f"{where}: no answer within {timeout:g} s") from None
    if p.returncode:
        raise CephError(f"{where}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    try:
        obj = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise CephError(f"{where}: not JSON: {e.msg}") from None
    return parse_slow_ops(obj, where)


def read_osd(osd: int, socket_path: Optional[str] = None, timeout: float = 10.0
             ) -> list[SlowOp]:
    """osd.N's slow ops from its admin socket (socket_path, default DEFAULT_SOCKET) where
    this node has it, else through the cluster with the ceph CLI."""
    path = socket_of(osd, socket_path)
    if socket_path is None and not os.path.exists(path) and shutil.which("ceph"):
        return read_tell(osd)
    return read_socket(path, timeout)
