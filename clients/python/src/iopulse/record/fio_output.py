"""A copy of fio's JSON report for the run file, with what the user sees left as fio prints it.

fio prints every format it is given (--output-format=normal,json: the text report and the JSON
report) to one place: stdout, or the file of --output. record adds json+ to the formats the
user chose (unless they chose json or json+: then that is what is kept) and passes fio's output
through a filter on its way to where the user asked for it: the JSON report (fio writes it as
'{\\n  "fio version" ...' up to a '}' that starts a line, then a newline) is taken out if record
added it and copied either way; every other byte goes through unchanged and when fio writes it.

- fio's stdout is a pseudo-terminal when record's is a terminal (fio shows its progress line
  only on a terminal), else a pipe; record copies from it to its own stdout.
- With --output=FILE, fio writes to a FIFO in record's private directory instead, and record
  creates or truncates FILE as fio would and copies into it.
- With --status-interval fio prints a JSON report every interval: each is taken out (if
  added); the last one is kept.

The formats are read from --output-format, --minimal and --append-terse as fio reads them (the
last --output-format or --minimal sets them, --append-terse adds terse), in the forms
--name=value, --name value, -name=value and -name value; fio also takes abbreviations of its
options, which are not recognised here. fio's client/server mode (--client, --server) is left
alone.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import stat
import termios
import threading
import tty
from dataclasses import dataclass, field
from typing import Any, Optional

START = b'{\n  "fio version"'
END = b"\n}\n"
_FORMAT_OPTS = ("output-format", "minimal", "append-terse")
_REMOTE = ("client", "server", "daemonize")


@dataclass
class Plan:
    """What record does to fio's command line for the copy."""
    argv: list[str]
    added: bool = False             # json+ was added: its report is taken out of the output
    output_file: Optional[str] = None   # the user's --output (None: stdout)
    output_index: int = -1          # where argv holds its value
    notes: list[str] = field(default_factory=list)

    @property
    def format(self) -> str:
        return "json+" if self.added else "json"


def _option(arg: str) -> tuple[str, Optional[str]]:
    """('output', 'x') for --output=x / -output=x; ('output', None) for --output; ('', None)
    for what is not an option."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return "", None
    name, eq, value = arg.lstrip("-").partition("=")
    return name, value if eq else None


def plan(argv: list[str]) -> Optional[Plan]:
    """The command line that makes fio print its JSON report too; None (and nothing changed)
    for fio's client/server modes."""
    formats = {"normal"}
    last_format = 0                 # argv index after which the formats stand
    out_at, out_value = -1, ""      # the last --output: where its value is, the value
    i = 1
    while i < len(argv):
        name, value = _option(argv[i])
        takes = name in ("output", "output-format")
        if takes and value is None and i + 1 < len(argv):
            value, i = argv[i + 1], i + 1
        if name in _REMOTE:
            return None
        if name == "output" and value is not None:
            out_at, out_value = i, value
        elif name == "output-format" and value is not None:
            formats = {f.strip() for f in value.split(",")}
            last_format = i
        elif name == "minimal":
            formats, last_format = {"terse"}, i
        elif name == "append-terse":
            formats.add("terse")
            last_format = i
        i += 1
    p = Plan(list(argv))
    if out_at >= 0:
        p.output_file, p.output_index = out_value, out_at
    if not formats & {"json", "json+"}:
        new = ",".join(sorted(formats | {"json+"}))
        p.argv.insert(last_format + 1, f"--output-format={new}")
        if p.output_index > last_format:
            p.output_index += 1
        p.added = True
    return p


class JsonTap:
    """Passes bytes through, taking out (strip) or copying fio's JSON reports."""

    def __init__(self, strip: bool) -> None:
        self.strip = strip
        self.reports = 0
        self.last: Optional[bytes] = None
        self._buf = b""
        self._doc = b""             # the report so far, when it is passed on as it comes
        self._in_json = False

    def feed(self, data: bytes) -> bytes:
        """The bytes to pass on now (a possible start or end of a report is held back)."""
        buf = self._buf + data
        out = bytearray()
        while True:
            if not self._in_json:
                at = buf.find(START)
                if at < 0:
                    keep = _partial(buf, START)
                    out += buf[:len(buf) - keep]
                    buf = buf[len(buf) - keep:]
                    break
                out += buf[:at]
                buf = buf[at:]
                self._in_json = True
            at = buf.find(END)
            if at < 0:
                if not self.strip:      # pass what cannot hold the end yet
                    keep = _partial(buf, END)
                    self._doc += buf[:len(buf) - keep]
                    out += buf[:len(buf) - keep]
                    buf = buf[len(buf) - keep:]
                break
            doc, self._doc = self._doc + buf[:at + 2], b""
            self.last, self.reports = doc, self.reports + 1
            if not self.strip:
                out += buf[:at + len(END)]
            buf = buf[at + len(END):]
            self._in_json = False
        self._buf = buf
        return bytes(out)

    def finish(self) -> bytes:
        """What is held back, once fio's output ended; a report cut short that record added
        is dropped."""
        buf, self._buf = self._buf, b""
        if self._in_json and self.strip:
            return b""
        return buf


def _partial(buf: bytes, marker: bytes) -> int:
    """How many bytes at the end of buf could begin marker."""
    for n in range(min(len(marker) - 1, len(buf)), 0, -1):
        if marker.startswith(buf[-n:]):
            return n
    return 0


class Relay:
    """Carries fio's output (a pty, pipe or FIFO) through a JsonTap to where the user asked
    for it. child_stdout: the fd to give fio as its stdout (None: leave it); call started()
    once fio runs, then finish()."""

    def __init__(self, p: Plan, workdir: str) -> None:
        self.plan = p
        self.tap = JsonTap(p.added)
        self.child_stdout: Optional[int] = None
        self._keep: Optional[int] = None        # a writer of the FIFO, so it never ends early
        self._sink_fd = 1
        self._own_sink = False
        self.error: Optional[str] = None
        if p.output_file is not None:
            fifo = os.path.join(workdir, "fio-output")
            os.mkfifo(fifo, 0o600)
            # as fio's fopen(FILE, "w+") would: created or truncated now
            self._sink_fd = os.open(p.output_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            self._own_sink = True
            self._src = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(self._src, True)
            self._keep = os.open(fifo, os.O_WRONLY)
            opt, eq, _ = p.argv[p.output_index].partition("=")
            p.argv[p.output_index] = f"{opt}={fifo}" if eq and opt.startswith("-") else fifo
        elif _isatty(1):
            self._src, self.child_stdout = pty.openpty()
            tty.setraw(self.child_stdout)       # bytes as fio writes them (no \r\n)
            try:
                size = fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8)
                fcntl.ioctl(self.child_stdout, termios.TIOCSWINSZ, size)
            except OSError:
                pass
        else:
            self._src, self.child_stdout = os.pipe()
        self._thread = threading.Thread(target=self._copy, name="iopulse-fio-output",
                                        daemon=True)
        self._thread.start()

    def started(self) -> None:
        """fio has its stdout: record's copy of the pty's or pipe's writing end goes."""
        if self.child_stdout is not None:
            os.close(self.child_stdout)
            self.child_stdout = None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self._sink_fd >= 0:
            try:
                view = view[os.write(self._sink_fd, view):]
            except BrokenPipeError:     # the reader of our stdout went: keep draining fio
                self._sink_fd = -1
            except OSError as e:
                self.error = self.error or f"writing fio's output: {e.strerror or e}"
                self._sink_fd = -1

    def _copy(self) -> None:
        while True:
            try:
                data = os.read(self._src, 1 << 16)
            except OSError:         # EIO: the pty's last writer closed it
                data = b""
            if not data:
                break
            self._write(self.tap.feed(data))
        self._write(self.tap.finish())

    def finish(self, timeout: float = 10.0) -> Optional[dict[str, Any]]:
        """After fio exited: the rest of its output copied, and its last JSON report parsed
        (None, with error set, when there is none)."""
        self.started()
        if self._keep is not None:
            os.close(self._keep)
            self._keep = None
        self._thread.join(timeout)
        if self._thread.is_alive():     # something fio started still holds its output
            self.error = (f"fio's output was still open {timeout:g} s after fio exited (a "
                          "process it started holds it): what came later is not copied")
        else:
            os.close(self._src)
        if self._own_sink and self._sink_fd >= 0:
            os.close(self._sink_fd)
        if self.tap.last is None:
            self.error = self.error or "fio printed no JSON report"
            return None
        try:
            doc = json.loads(self.tap.last)
        except ValueError as e:
            self.error = f"fio's JSON report does not parse: {e}"
            return None
        return doc if isinstance(doc, dict) else None


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd) and stat.S_ISCHR(os.fstat(fd).st_mode)
    except OSError:
        return False


def record_event(doc: dict[str, Any], p: Plan, reports: int) -> dict[str, Any]:
    """The run file's 'tool_output' record of fio's report (docs/run-file.md)."""
    return {"type": "tool_output", "tool": "fio", "format": p.format, "added": p.added,
            "reports": reports, "output": doc}

