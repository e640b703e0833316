"""What a live view (top, watch over several targets) holds of one daemon, whatever it sends.

It holds one Update per target: the latest, decoded from the bytes that came over the wire,
which gRPC limits to 4 MiB a message (the client's default receive limit). Decoding and drawing
cost grows with the devices in an Update, so one that lists more devices than any iopulsed
tracks (limits.devices is at most 4,096) is not decoded: the target is refused as flooding,
by name, and the view goes on with the others. Before, `top --merge --once` against a daemon
sending 3.9 MiB Updates of 29,000 devices printed nothing in 25 s and grew to 1 GB.
"""
from __future__ import annotations

from ._pb import iopulse_pb2 as pb
from .errors import IopulseError, malformed
from .model import Update

MAX_DEVICES = 4096      # the most devices an iopulsed tracks (limits.devices, docs/config.md)


class Flooding(IopulseError):
    """A target sent an Update no daemon sends: it is dropped, not retried."""


def decode_bounded(target: str, raw: bytes, method: str = "Subscribe") -> Update:
    """The Update in raw (one Subscribe message as it came), or Flooding when it lists more
    devices than a daemon tracks (the message names the target, the size and the count)."""
    try:
        msg = pb.Update.FromString(raw)
    except Exception as e:  # noqa: BLE001 - any decoding failure is a malformed reply
        raise malformed(target, method, e) from None
    if len(msg.devices) > MAX_DEVICES:
        raise Flooding(f"{target} sent an Update of {len(raw):,} bytes listing "
                       f"{len(msg.devices):,} devices, more than an iopulsed tracks "
                       f"({MAX_DEVICES:,}): refused as flooding, not shown", target)
    try:
        return Update.from_pb(msg)
    except Exception as e:  # noqa: BLE001 - as Subscription decodes
        raise malformed(target, method, e) from None
