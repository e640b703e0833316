"""The recorder's hook socket ($IOPULSE_RECORD for the recorded command): a tool's hooks
(record/hook.py) enter and leave keys, the first enter of a phase begins it on every daemon,
the last leave ends it; `iopulse mark` run by the command begins and ends named phases on
every daemon the same way. One JSON line each way.

A key's phases nest in each other as phases_of lists them (a fio job in its stonewall group):
each begin names the phase it nests in, so the keys that run at once are siblings under
their common phase, not nested in the one begun before. A phase whose last leave never came
(the tool's process died between its hooks) is ended when a key enters that runs only after
it (ends_before: fio starts a stonewall group once every job before it is done), or when the
command ends; such an end is marked as inferred in the run file."""
from __future__ import annotations

import json
import os
import socket
import threading
from typing import Callable, Optional

# (phase id, name, labels) of a key, outermost first
PhaseSpec = tuple[str, str, dict[str, str]]


# why a phase ended without its end mark, as the run file keeps it
ENDED_BY_NEXT = "the next stonewall group began"
ENDED_BY_COMMAND = "the command ended"


class Broker:
    def __init__(self, path: str, phases_of: Callable[[str], list[PhaseSpec]],
                 begin: Callable[[str, dict[str, str], object], object],
                 end: Callable[[object, str], object], hosts: int = 0,
                 ends_before: Optional[Callable[[str], list[str]]] = None) -> None:
        """begin(name, labels, parent) marks a begin on every daemon, nested in parent (a
        token, or None: the session's innermost open phase), and returns a token (each
        accepting daemon's mark by host); end(token, inferred) ends it (inferred: why, when
        its own end never came). ends_before(key): the phase ids that are over once key
        enters. With hosts, a named mark that fewer daemons accepted is an error to the
        caller."""
        self.hosts = hosts
        self.path = path
        self._phases_of = phases_of
        self._ends_before = ends_before or (lambda key: [])
        self._begin, self._end = begin, end
        self.inferred: list[str] = []     # phase ids ended without their last leave
        self._count: dict[str, int] = {}
        self._token: dict[str, object] = {}
        self._named: dict[str, list[object]] = {}     # iopulse mark NAME: begun, not ended
        self.entered: set[str] = set()        # hook keys that entered / left
        self.left: set[str] = set()
        self._lock = threading.Lock()     # marks happen one at a time, in order
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        os.chmod(path, 0o600)
        self._sock.listen(64)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, name="iopulse-record-hooks",
                                        daemon=True)
        self._thread.start()
        self.errors: list[str] = []

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            named = False
            try:
                conn.settimeout(30)
                data = read_line(conn)
                if not data:
                    return
                req = json.loads(data)
                named = req["op"] in ("begin", "end")
                if named:
                    reply = {"ok": True, "marks": self.mark(
                        str(req["name"]), {str(k): str(v) for k, v in
                                           req.get("labels", {}).items()}, req["op"] == "end")}
                else:
                    self.apply(str(req["op"]), str(req["key"]))
                    reply = {"ok": True}
            except Exception as e:  # noqa: BLE001 - told to the hook, which tells the user
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                if not named:       # a named mark's caller (iopulse mark) reports its own
                    self.errors.append(reply["error"])
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass

    def apply(self, op: str, key: str) -> None:
        specs = self._phases_of(key)
        with self._lock:
            if op == "enter":
                self.entered.add(key)
                for pid in self._ends_before(key):
                    if pid in self._token:
                        self._end(self._token.pop(pid), ENDED_BY_NEXT)
                        self._count.pop(pid, None)
                        self.inferred.append(pid)
                parent = None
                for pid, name, labels in specs:
                    n = self._count.get(pid, 0)
                    if n == 0:
                        self._token[pid] = self._begin(name, labels, parent)
                    self._count[pid] = n + 1
                    parent = self._token.get(pid)
            elif op == "leave":
                self.left.add(key)
                for pid, _, _ in reversed(specs):
                    n = self._count.get(pid, 0)
                    if n == 1:
                        self._end(self._token.pop(pid))
                    if n:
                        self._count[pid] = n - 1
            else:
                raise ValueError(f"unknown op {op!r}")

    def mark(self, name: str, labels: dict[str, str], end: bool) -> list[dict[str, object]]:
        """A named phase begun or ended on every daemon; the daemons' marks."""
        with self._lock:
            if not end:
                token = self._begin(name, labels, None)
                self._named.setdefault(name, []).append(token)
                marks = token
            else:
                stack = self._named.get(name)
                if not stack:
                    raise LookupError(f"no phase named '{name}' was begun in this recording")
                token = stack.pop()
                marks = self._end(token, "")
        got = len(marks or {})      # type: ignore[arg-type]
        if self.hosts and got < self.hosts:
            raise RuntimeError(f"{self.hosts - got} of {self.hosts} daemon(s) did not take the "
                               f"{'end' if end else 'begin'} of phase {name!r}")
        return [dict(m.to_dict(), host=h) for h, m in (marks or {}).items()]  # type: ignore

    def end_all(self) -> None:
        """End what is still open (the tool died between its hooks, or a named phase was
        never ended), innermost first, as inferred ends."""
        with self._lock:
            for pid in reversed(list(self._token)):
                self._end(self._token.pop(pid), ENDED_BY_COMMAND)
                self.inferred.append(pid)
            self._count.clear()
            for stack in self._named.values():
                while stack:
                    self._end(stack.pop(), ENDED_BY_COMMAND)

    def close(self) -> None:
        self._stop = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(5)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def request(path: str, req: dict[str, object], timeout: float = 60.0) -> dict[str, object]:
    """Send one request to a recorder's socket and return its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(json.dumps(req).encode() + b"\n")
        data = read_line(s)
    return json.loads(data or b"{}")


def read_line(s: socket.socket, limit: int = 1 << 20) -> bytes:
    """Bytes up to and including a newline (or what came before the peer closed)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
