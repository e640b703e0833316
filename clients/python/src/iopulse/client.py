"""iopulse.Client: the daemon's gRPC API (service iopulse.v1.Telemetry) as typed Python calls."""
from __future__ import annotations

import os
import random
import threading
import time
import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator, Optional, Type, TypeVar

import grpc

from . import errors, unix_socket
from ._pb import iopulse_pb2 as pb
from ._pb import iopulse_pb2_grpc as pb_grpc
from .model import Info, PhaseMark, Update
from .tls import TlsFiles

DEFAULT_TARGET = "unix:/run/iopulse/iopulse.sock"

# gRPC's own reconnect backoff (1 s, growing 1.6x to 120 s) makes retries fail fast without
# trying to connect: a daemon that came up 16 s into a wait was seen 11 s late. Keep the
# channel on our 0.1 s .. 2 s schedule (then: one retry late at most). Not
# grpc.min_reconnect_backoff_ms: that is the minimum connect timeout, which remote TCP needs.
RECONNECT_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                     ("grpc.max_reconnect_backoff_ms", 2000)]
# Subscriptions keep their HTTP/2 receive window small: a subscriber that stops reading makes
# the daemon's sends wait after ~1 Update, so what it missed arrives merged into one fresh
# Update instead of sitting in a multi-megabyte window (the default) as a backlog of old ones.
STREAM_OPTIONS = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]

T = TypeVar("T")
_OTHER_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix-abstract:", "vsock:")


class BadTarget(ValueError):
    """A string that is not a daemon address; reason says why (without the target)."""

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(f"target {target!r}: {reason}")
        self.target = target
        self.reason = reason


def parse_target(target: str) -> str:
    """The gRPC target for an iopulse address.

    'unix:/path', 'unix:///path' and a bare absolute '/path' name a unix socket (returned as
    'unix:/path'); 'host:port' (also '[v6addr]:port') is TCP; other gRPC URIs ('dns:///h:p',
    'ipv4:...', 'unix-abstract:...') pass through. Raises BadTarget (a ValueError) for
    anything else.
    """
    t = target.strip()
    if t.startswith("unix:"):
        path = t[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
            if not path.startswith("/"):
                raise BadTarget(target, "unix://HOST/PATH is not supported; use unix:/PATH "
                                "or unix:///PATH")
        if not path:
            raise BadTarget(target, "no socket path")
        return "unix:" + path
    if t.startswith("/"):
        return "unix:" + t
    if t.startswith(_OTHER_SCHEMES):
        return t
    host, sep, port = t.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadTarget(target, "expected unix:/PATH, unix:///PATH, /PATH or HOST:PORT")
    return t


@dataclass(frozen=True)
class RetryPolicy:
    """Which failures are retried and how long to wait between attempts.

    Attempts are retried while the status code is in codes and the client's connect_deadline
    has not passed; the waits start at initial_backoff_s and grow by multiplier up to
    max_backoff_s, each scaled by a random factor in [1 - jitter, 1 + jitter].
    """
    codes: frozenset = frozenset({grpc.StatusCode.UNAVAILABLE})
    initial_backoff_s: float = 0.1
    multiplier: float = 2.0
    max_backoff_s: float = 2.0
    jitter: float = 0.1

    def delays(self) -> Iterator[float]:
        """The wait before each retry, endlessly."""
        d = self.initial_backoff_s
        while True:
            yield d * random.uniform(1.0 - self.jitter, 1.0 + self.jitter)
            d = min(d * self.multiplier, self.max_backoff_s)

    def retryable(self, e: grpc.RpcError) -> bool:
        return hasattr(e, "code") and e.code() in self.codes


class Phase:
    """A phase mark sent to the daemon (mark: the PhaseMark it returned).

    Used as a context manager, the phase ends on exit: `with client.mark_phase("fill"):`
    sends the begin mark when called and the end mark (same name and labels) when the block
    is left, also when it raises. Used as a plain call, it sent that one mark and nothing else.
    """

    def __init__(self, client: "Client", mark: PhaseMark) -> None:
        self.client = client
        self.mark = mark
        self.end_mark: Optional[PhaseMark] = None

    @property
    def name(self) -> str:
        return self.mark.name

    @property
    def labels(self) -> dict[str, str]:
        return self.mark.labels

    def finish(self) -> PhaseMark:
        """Send the end mark of a begun phase (once); returns it. For an end mark, a no-op
        returning that mark."""
        if self.mark.end:
            return self.mark
        if self.end_mark is None:
            self.end_mark = self.client._mark(self.name, True, self.labels, self.mark.id)
        return self.end_mark

    def __enter__(self) -> "Phase":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if exc_type is None:
            self.finish()
            return
        try:
            self.finish()
        except errors.IopulseError:
            pass  # the block's own exception is the one worth seeing

    def __repr__(self) -> str:
        return f"Phase({self.mark!r}, end_mark={self.end_mark!r})"


class Subscription:
    """An iterator of Updates from one Subscribe stream (of the packed Update messages as
    they came over the wire, bytes, for Client.subscribe_raw).

    cancel() (from any thread), leaving a with block, closing the Client or dropping the last
    reference ends the stream; iteration then stops without an error. Stream failures raise
    iopulse exceptions (Unavailable when the daemon shuts down).
    """

    def __init__(self, client: "Client", call: Any, raw: bool = False) -> None:
        self._client = client   # keeps the channel alive for `for u in Client().subscribe()`
        self._call = call
        self._raw = raw
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._cancelled:
            raise StopIteration
        try:
            msg = next(self._call)
        except grpc.RpcError as e:
            if self._cancelled:
                raise StopIteration from None
            raise errors.from_rpc_error(e, self._client.target, "Subscribe") from None
        if self._raw:
            return msg
        try:
            return Update.from_pb(msg)
        except Exception as e:  # noqa: BLE001 - any decoding failure is a malformed reply
            self.cancel()
            raise errors.malformed(self._client.target, "Subscribe", e) from None

    def cancel(self) -> None:
        """End the stream; the daemon drops this subscriber."""
        self._cancelled = True
        self._call.cancel()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()

    def __del__(self) -> None:
        try:
            self.cancel()
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing left to cancel
            pass


SESSION_ENV = "IOPULSE_SESSION"
# How gRPC core words a host name that does not resolve (c-ares up to ~1.60, the event
# engine resolver after): permanent, not worth retrying.
_NAME_NOT_FOUND = ("DNS resolution failed", "Domain name not found", "errors resolving")


class Client:
    """A connection to one iopulsed.

    >>> with Client("unix:/run/iopulse/iopulse.sock") as c:
    ...     for u in c.subscribe(devices=["sda"]):
    ...         print(u.seq, u.devices["sda"].ops["write"].ios)

    target: see parse_target(). timeout: seconds each unary call may take. connect_deadline:
    how long unary calls and the start of a subscription keep retrying while the daemon is
    transiently unavailable (backoff per retry, default 0.1 s doubling to 2 s): refused or
    reset connections, a daemon restarting. What retrying cannot mend fails at once: a unix
    socket that does not exist (unless this client reached the daemon before: then it is
    restarting) or that we may not use (the message names the group to join), a host name
    that does not resolve. on_retry(error, seconds_left) is called before each wait, e.g.
    to show progress. session: the name this client's phase marks carry (default
    $IOPULSE_SESSION, set by `iopulse record` for the command it runs); a subscription with
    hold_session=True keeps the session's phases open while it lives. Failures raise
    iopulse.errors exceptions naming the target. The client is thread-safe.
    """

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: Optional[float] = 10.0,
                 connect_deadline: float = 10.0, retry: RetryPolicy = RetryPolicy(),
                 on_retry: Optional[Callable[[errors.IopulseError, float], None]] = None,
                 session: Optional[str] = None, tls: Optional[TlsFiles] = None) -> None:
        self.target = parse_target(target)
        self.session = os.environ.get(SESSION_ENV, "") if session is None else session
        self.timeout = timeout
        self.connect_deadline = connect_deadline
        self.retry = retry
        self.on_retry = on_retry
        self._unix_path = self.target[len("unix:"):] if self.target.startswith("unix:") else None
        self._reached = False   # a call got through once: a missing socket means a restart
        # the socket file was there once (refused): its vanishing is a daemon replacing it
        self._seen_socket = False
        self._lock = threading.Lock()
        self._closed = False
        # TLS for a TCP target when files are given (tls, else $IOPULSE_TLS_*)
        self.tls = None if self._unix_path else (tls or TlsFiles.from_env())
        self._creds = self.tls.credentials() if self.tls else None
        self._channel = self._new_channel(RECONNECT_OPTIONS)
        self._stub = pb_grpc.TelemetryStub(self._channel)
        self._stream_channel: Optional[grpc.Channel] = None
        self._subs: "weakref.WeakSet[Subscription]" = weakref.WeakSet()

    def _new_channel(self, options: list[tuple[str, Any]]) -> grpc.Channel:
        if self._creds is not None:
            return grpc.secure_channel(self.target, self._creds, options=options)
        return grpc.insecure_channel(self.target, options=options)

    def __repr__(self) -> str:
        return f"Client({self.target!r})"

    # -- lifetime --
    def close(self) -> None:
        """Cancel every subscription and close the connection (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            subs = list(self._subs)
        for s in subs:
            s.cancel()
        self._channel.close()
        if self._stream_channel is not None:
            self._stream_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check_open(self, method: str) -> None:
        if self._closed:
            raise errors.IopulseError(f"{method} at {self.target}: the client is closed",
                                      self.target)

    def _unreachable(self, e: grpc.RpcError, method: str) -> tuple[errors.IopulseError, bool]:
        """The exception for a failed attempt, and whether another attempt may succeed."""
        err = errors.from_rpc_error(e, self.target, method)
        if not self.retry.retryable(e):
            return err, False
        if self._unix_path is not None:
            p = unix_socket.check(self._unix_path)
            if p is None or p.kind != unix_socket.MISSING:
                self._seen_socket = True
            if p is not None:
                again = not p.permanent or (p.kind == unix_socket.MISSING and
                                            (self._reached or self._seen_socket))
                return errors.Unavailable(f"cannot reach iopulsed at {self.target}: "
                                          f"{p.message}", self.target, err.code,
                                          err.details), again
        elif any(m in err.details for m in _NAME_NOT_FOUND):
            return errors.Unavailable(f"cannot reach iopulsed at {self.target}: {err.details}",
                                      self.target, err.code, err.details), False
        return err, True

    def _with_retry(self, method: str, attempt: Callable[[], T]) -> T:
        self._check_open(method)
        deadline = time.monotonic() + self.connect_deadline
        for delay in self.retry.delays():
            try:
                result = attempt()
                self._reached = True
                return result
            except grpc.RpcError as e:
                err, again = self._unreachable(e, method)
                remaining = deadline - time.monotonic()
                if not again or remaining <= 0 or self._closed:
                    raise err from None
                if self.on_retry is not None:
                    self.on_retry(err, remaining)
                time.sleep(min(delay, remaining))
        raise AssertionError("unreachable: delays() is endless")

    def _request(self, method: str, make: Callable[[], T]) -> T:
        """A request message; bad field values (negative, wrong type) are InvalidArgument."""
        try:
            return make()
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgument(f"{method} at {self.target}: bad request: {e}",
                                         self.target, "INVALID_ARGUMENT", str(e)) from None

    def _decode(self, method: str, decode: Callable[[], T]) -> T:
        try:
            return decode()
        except Exception as e:  # noqa: BLE001 - any decoding failure is a malformed reply
            raise errors.malformed(self.target, method, e) from None

    # -- calls --
    def info(self, device_settings: bool = False) -> Info:
        """The daemon's version, kernel, histogram layout, devices, config and cost; with
        device_settings, also each device's queue settings as sysfs shows them now
        (DeviceInfo.settings: None from a daemon that does not read them)."""
        reply = self._with_retry("GetInfo", lambda: self._stub.GetInfo(
            pb.InfoRequest(device_settings=device_settings), timeout=self.timeout))
        return self._decode("GetInfo", lambda: Info.from_pb(reply))

    def snapshot(self, devices: Iterable[str] = (), threads: Iterable[str] = ()) -> Update:
        """Everything since the daemon started, merged into one Update, for the named devices
        and thread-name globs (empty: all)."""
        req = self._request("GetSnapshot", lambda: pb.SnapshotRequest(
            devices=list(devices), threads=list(threads)))
        reply = self._with_retry("GetSnapshot", lambda: self._stub.GetSnapshot(
            req, timeout=self.timeout))
        return self._decode("GetSnapshot", lambda: Update.from_pb(reply))

    def _mark(self, name: str, end: bool, labels: dict[str, str], phase_id: int = 0,
              parent_id: int = 0) -> PhaseMark:
        req = self._request("MarkPhase", lambda: pb.MarkPhaseRequest(
            name=name, end=end, labels={str(k): str(v) for k, v in labels.items()},
            phase_id=phase_id, session=self.session, parent_id=parent_id))
        reply = self._with_retry("MarkPhase", lambda: self._stub.MarkPhase(
            req, timeout=self.timeout))
        return self._decode("MarkPhase", lambda: PhaseMark.from_pb(reply))

    def mark_phase(self, name: str, end: bool = False, phase_id: int = 0,
                   parent_id: int = 0, **labels: Any) -> Phase:
        """Mark a phase's begin (end=True: its end). The daemon closes its current interval
        at the mark, so the phase edge is an interval edge: IO started after this returns is
        counted after the mark. An end closes the begin with id phase_id, or (0) the latest
        open phase of this name in this client's session. A begin nests in the open phase
        of this session with id parent_id (phases running at once are siblings under it), or
        (0) in the session's innermost open phase. Label values are sent as strings.

        The returned Phase is also a context manager that ends the phase on exit:
        `with client.mark_phase("fill", run="3"): ...`.
        """
        return Phase(self, self._mark(name, end, labels, phase_id, parent_id))

    def subscribe(self, interval_multiple: int = 1, devices: Iterable[str] = (),
                  threads: Iterable[str] = (), replay_seconds: int = 0,
                  timeout: Optional[float] = None, hold_session: bool = False) -> Subscription:
        """Updates as the daemon produces them (one per interval_multiple intervals), for the
        named devices and thread-name globs (empty: all), starting with the last
        replay_seconds of history. Connecting is retried like a unary call; once the stream
        runs, its failures end the iteration with an exception. With timeout, the stream
        ends with DeadlineExceeded that many seconds after this call. hold_session: the
        stream holds this client's session; when it ends (the process died, say), the daemon
        ends the session's open phases, flagged abandoned."""
        return self._subscribe(False, interval_multiple, devices, threads, replay_seconds,
                               timeout, hold_session)

    def subscribe_raw(self, interval_multiple: int = 1, devices: Iterable[str] = (),
                      threads: Iterable[str] = (), replay_seconds: int = 0,
                      timeout: Optional[float] = None,
                      hold_session: bool = False) -> Subscription:
        """Like subscribe(), but yields each Update as the packed bytes that came over the
        wire, undecoded (what `iopulse record` stores)."""
        return self._subscribe(True, interval_multiple, devices, threads, replay_seconds,
                               timeout, hold_session)

    def info_raw(self, device_settings: bool = False) -> bytes:
        """GetInfo's reply as packed bytes (decode with Info.from_pb(pb.Info.FromString(b)));
        device_settings as for info()."""
        call = self._channel.unary_unary("/iopulse.v1.Telemetry/GetInfo",
                                         request_serializer=pb.InfoRequest.SerializeToString,
                                         response_deserializer=None)
        return self._with_retry("GetInfo", lambda: call(
            pb.InfoRequest(device_settings=device_settings), timeout=self.timeout))

    def _subscribe(self, raw: bool, interval_multiple: int, devices: Iterable[str],
                   threads: Iterable[str], replay_seconds: int, timeout: Optional[float],
                   hold_session: bool) -> Subscription:
        ends_at = None if timeout is None else time.monotonic() + timeout
        session = self.session if hold_session else ""
        req = self._request("Subscribe", lambda: pb.SubscribeRequest(
            interval_multiple=interval_multiple, devices=list(devices), threads=list(threads),
            replay_seconds=replay_seconds, session=session))
        self._check_open("Subscribe")
        with self._lock:
            if self._stream_channel is None:
                self._stream_channel = self._new_channel(RECONNECT_OPTIONS + STREAM_OPTIONS)
            method = self._stream_channel.unary_stream(
                "/iopulse.v1.Telemetry/Subscribe",
                request_serializer=pb.SubscribeRequest.SerializeToString,
                response_deserializer=None if raw else pb.Update.FromString)

        def start() -> Any:
            left = None if ends_at is None else max(0.0, ends_at - time.monotonic())
            call = method(req, timeout=left)
            # The daemon answers with headers at once; a refused connection or a rejected
            # request shows here, before the first Update.
            call.initial_metadata()
            if call.done() and call.code() != grpc.StatusCode.OK:
                raise call
            return call

        sub = Subscription(self, self._with_retry("Subscribe", start), raw)
        with self._lock:
            self._subs.add(sub)
            closed = self._closed
        if closed:
            sub.cancel()
        return sub
