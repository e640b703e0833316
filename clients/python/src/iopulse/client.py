"""iopulse.Client: the daemon's gRPC API as typed Python calls."""
from __future__ import annotations

import time
from typing import Iterable, Iterator, Optional

import grpc

from . import errors
from ._pb import iopulse_pb2 as pb
from ._pb import iopulse_pb2_grpc as pb_grpc
from .model import Info, PhaseMark, Update

DEFAULT_TARGET = "unix:/run/iopulse/iopulse.sock"

# Subscriptions keep their HTTP/2 receive window small: a subscriber that stops reading makes
# the daemon's sends wait after ~1 Update, so what it missed arrives merged into one fresh
# Update instead of sitting in a multi-megabyte window (the default) as a backlog of old ones.
STREAM_OPTIONS = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]


def normalize_target(target: str) -> str:
    """'unix:/p', 'unix:///p', '/p' (a socket path) or 'host:port' -> a gRPC target."""
    if target.startswith("unix:"):
        path = target[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        return "unix:" + path
    if target.startswith("/"):
        return "unix:" + target
    return target


class Phase:
    """A phase mark sent to the daemon; as a context manager, the phase ends on exit."""

    def __init__(self, client: "Client", begin: PhaseMark, labels: dict[str, str]):
        self.client = client
        self.begin = begin
        self.labels = labels
        self.end: Optional[PhaseMark] = None

    @property
    def name(self) -> str:
        return self.begin.name

    def __enter__(self) -> "Phase":
        return self

    def __exit__(self, *exc) -> None:
        self.end = self.client.mark_phase(self.name, end=True, **self.labels).begin


class Subscription:
    """An iterator of Updates; cancel() (or leaving a with block) ends the stream."""

    def __init__(self, client: "Client", call):
        self._client = client
        self._call = call

    def __iter__(self) -> Iterator[Update]:
        return self

    def __next__(self) -> Update:
        try:
            return Update.from_pb(next(self._call))
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e, self._client.target, "Subscribe") from None

    def cancel(self) -> None:
        self._call.cancel()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()

    def __del__(self):
        try:
            self._call.cancel()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class Client:
    """A connection to one iopulsed.

    >>> with Client("unix:/run/iopulse/iopulse.sock") as c:
    ...     for u in c.subscribe(devices=["sda"]):
    ...         print(u.seq, u.devices["sda"].ops["write"].ios)

    Unary calls and the start of a subscription retry while the daemon is UNAVAILABLE, with
    backoff (0.1 s doubling to 2 s), for up to connect_deadline seconds.
    """

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: float = 10.0,
                 connect_deadline: float = 10.0):
        self.target = normalize_target(target)
        self.timeout = timeout
        self.connect_deadline = connect_deadline
        self._channel = grpc.insecure_channel(self.target)
        self._stub = pb_grpc.TelemetryStub(self._channel)
        self._stream_channel: Optional[grpc.Channel] = None

    # -- plumbing --
    def close(self) -> None:
        self._channel.close()
        if self._stream_channel is not None:
            self._stream_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _retry(self, what: str, fn):
        deadline = time.monotonic() + self.connect_deadline
        delay = 0.1
        while True:
            try:
                return fn()
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() + delay > deadline \
                        or "shutting down" in (e.details() or ""):
                    raise errors.from_rpc_error(e, self.target, what) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    # -- calls --
    def info(self) -> Info:
        return Info.from_pb(self._retry("GetInfo", lambda: self._stub.GetInfo(
            pb.InfoRequest(), timeout=self.timeout, wait_for_ready=False)))

    def snapshot(self, devices: Iterable[str] = (), threads: Iterable[str] = ()) -> Update:
        req = pb.SnapshotRequest(devices=list(devices), threads=list(threads))
        return Update.from_pb(self._retry("GetSnapshot", lambda: self._stub.GetSnapshot(
            req, timeout=self.timeout)))

    def mark_phase(self, name: str, end: bool = False, **labels: str) -> Phase:
        """Mark a phase begin (or end=True: its end) at the daemon's clock. The returned Phase
        is a context manager: `with c.mark_phase("fill", run="3"): ...` ends it on exit."""
        req = pb.MarkPhaseRequest(name=name, end=end, labels={k: str(v) for k, v in
                                                              labels.items()})
        mark = PhaseMark.from_pb(self._retry("MarkPhase", lambda: self._stub.MarkPhase(
            req, timeout=self.timeout)))
        return Phase(self, mark, dict(req.labels))

    def subscribe(self, interval_multiple: int = 1, devices: Iterable[str] = (),
                  threads: Iterable[str] = (), replay_seconds: int = 0,
                  timeout: Optional[float] = None) -> Subscription:
        """Updates as the daemon produces them (every interval_multiple intervals), for the
        named devices and thread-name globs (empty: all), starting replay_seconds back. With
        timeout, the stream ends with DeadlineExceeded after that many seconds."""
        if self._stream_channel is None:
            self._stream_channel = grpc.insecure_channel(self.target, options=STREAM_OPTIONS)
        stub = pb_grpc.TelemetryStub(self._stream_channel)
        req = pb.SubscribeRequest(interval_multiple=interval_multiple, devices=list(devices),
                                  threads=list(threads), replay_seconds=replay_seconds)
        deadline = time.monotonic() + self.connect_deadline
        delay = 0.1
        while True:
            call = stub.Subscribe(req, timeout=timeout)
            # Wait for the response headers: a refused connection or a bad request shows now.
            try:
                call.initial_metadata()
                if call.done() and call.code() is not grpc.StatusCode.OK:
                    raise call
                return Subscription(self, call)
            except grpc.RpcError as e:
                code = e.code()
                if code != grpc.StatusCode.UNAVAILABLE or time.monotonic() + delay > deadline \
                        or "shutting down" in (e.details() or ""):
                    raise errors.from_rpc_error(e, self.target, "Subscribe") from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
