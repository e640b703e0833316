"""The run file format (docs/run-file.md): one gzip stream of length-prefixed records.

The writer flushes the compressor (Z_SYNC_FLUSH) at least every second, so any prefix of the
file, e.g. what a crash or kill -9 leaves, decompresses up to its last flush. After the magic
line, each record is a varint length, then that many bytes: a kind byte and its payload.
"""
from __future__ import annotations

import struct

MAGIC = b"iopulse-run 1\n"
FORMAT_VERSION = 1

KIND_JSON = b"J"       # a JSON object with "type": header, agent, phase, host_error, end
KIND_INFO = b"I"       # u16 host index, then a packed iopulse.v1.Info
KIND_UPDATE = b"U"     # u16 host index, then a packed iopulse.v1.Update as received
KIND_SCHEMA = b"D"     # a packed google.protobuf.FileDescriptorSet of iopulse.proto

_HOST = struct.Struct("<H")
# The longest record a reader accepts: 16 times the largest message gRPC lets the client
# receive (4 MiB), so a reader's buffer stays below it whatever a damaged file says.
MAX_RECORD = 64 << 20
MAX_HOSTS = 1 << 16       # host indexes are u16


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); raises IndexError when buf ends inside it."""
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


def frame(kind: bytes, payload: bytes) -> bytes:
    return varint(len(payload) + 1) + kind + payload


def host_payload(host: int, data: bytes) -> bytes:
    return _HOST.pack(host) + data


def split_host(payload: bytes) -> tuple[int, bytes]:
    return _HOST.unpack_from(payload)[0], payload[_HOST.size:]
