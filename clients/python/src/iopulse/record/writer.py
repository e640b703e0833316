"""Writes a run file: append-only, compressed, readable up to the last second after a crash."""
from __future__ import annotations

import errno
import json
import os
import threading
import time
import zlib
from typing import Any, Optional

from .runfile import (KIND_INFO, KIND_JSON, KIND_SCHEMA, KIND_UPDATE, MAGIC, MAX_RECORD, frame,
                      host_payload)

FLUSH_EVERY_S = 0.5


def schema_bytes() -> bytes:
    """iopulse.proto as a packed FileDescriptorSet, so the file explains itself to any
    protobuf reader."""
    from google.protobuf import descriptor_pb2

    from .._pb import iopulse_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    iopulse_pb2.DESCRIPTOR.CopyToProto(fds.file.add())
    return fds.SerializeToString()


def _fsync(fd: int) -> None:
    """fsync, except where there is nothing to sync: a pipe or FIFO (`-o /dev/stdout`) refuses
    it with EINVAL."""
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise


class RunWriter:
    """Thread-safe. Every record goes through one gzip stream; flush() (called at least every
    FLUSH_EVERY_S by the writes themselves, and by close) makes what was written readable."""

    def __init__(self, path: str, *, overwrite: bool = False, level: int = 6) -> None:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        self.path = path
        self._fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._z = zlib.compressobj(level, zlib.DEFLATED, 31)   # 31: gzip container
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._pending = False
        self.raw_bytes = 0          # uncompressed
        self.file_bytes = 0
        self.records = 0
        self._closed = False
        self._put(MAGIC)
        self.write(KIND_SCHEMA, schema_bytes())

    def _put(self, data: bytes) -> None:
        out = self._z.compress(data)
        self.raw_bytes += len(data)
        if out:
            self._write_fd(out)
        self._pending = True

    def _write_fd(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        self.file_bytes += len(data)

    def write(self, kind: bytes, payload: bytes) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: the run file is closed")
            if len(payload) + 1 > MAX_RECORD:       # a reader would take it for damage
                raise ValueError(f"{self.path}: a record of {len(payload):,} bytes; at most "
                                 f"{MAX_RECORD:,}")
            self._put(frame(kind, payload))
            self.records += 1
            if time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
                self._flush_locked()

    def write_json(self, obj: dict[str, Any]) -> None:
        self.write(KIND_JSON, json.dumps(obj, separators=(",", ":"), sort_keys=True).encode())

    def write_info(self, host: int, packed: bytes) -> None:
        self.write(KIND_INFO, host_payload(host, packed))

    def write_update(self, host: int, packed: bytes) -> None:
        self.write(KIND_UPDATE, host_payload(host, packed))

    def _flush_locked(self) -> None:
        if self._pending:
            self._write_fd(self._z.flush(zlib.Z_SYNC_FLUSH))
            self._pending = False
        self._last_flush = time.monotonic()

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self, final: Optional[dict[str, Any]] = None) -> None:
        """Write final (the 'end' record) if given, finish the gzip stream, close."""
        if final is not None:
            self.write_json(final)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._write_fd(self._z.flush(zlib.Z_FINISH))
                _fsync(self._fd)
            finally:
                os.close(self._fd)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def append_json(path: str, records: list[dict[str, Any]]) -> None:
    """Add JSON records to a finished run file, as one more gzip member (a gzip file may hold
    several; the reader reads them one after the other). The file is fsynced."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    out = bytearray()
    for r in records:
        out += z.compress(frame(KIND_JSON, json.dumps(r, separators=(",", ":"),
                                                      sort_keys=True).encode()))
    out += z.flush(zlib.Z_FINISH)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        view = memoryview(bytes(out))
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
