"""Reading tables back from what a terminal shows: the column headers of every table (wrapped
over several lines or not), its rows, the widest line."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]")
RULE = re.compile(r"^\s*─+\s*$")


def plain(raw: bytes | str) -> str:
    """Terminal output as text: escape sequences and carriage returns gone."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    return ANSI.sub("", text).replace("\r", "")


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[str] = field(default_factory=list)


def _chunks(line: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of the pieces of a line that two or more spaces separate."""
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", line)]


def headers(lines: list[str]) -> list[str]:
    """Column headers from a table's header lines: the pieces of different lines that lie
    over each other belong to one column (columns do not overlap), read top to bottom."""
    cols: list[list[tuple[int, int, int, str]]] = []     # (line, start, end, text)
    for n, line in enumerate(lines):
        for a, b, t in _chunks(line):
            hit = [c for c in cols if any(a < e and s < b for _, s, e, _ in c)]
            merged = [(n, a, b, t)] + [x for c in hit for x in c]
            cols = [c for c in cols if c not in hit] + [merged]
    out = []
    for c in sorted(cols, key=lambda c: min(s for _, s, _, _ in c)):
        out.append(" ".join(t for _, _, _, t in sorted(c)))
    return out


def tables(text: str) -> list[Table]:
    """Every table of a screen: a title line (or two) at column 0, header lines, a rule,
    rows; a table's lines (but its title) begin with a space."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if not RULE.match(line):
            continue
        j = i
        while j > 0 and lines[j - 1].startswith(" ") and lines[j - 1].strip():
            j -= 1
        k = j
        while k > 0 and lines[k - 1].strip() and not lines[k - 1].startswith(" "):
            k -= 1
        t = Table(" ".join(x.strip() for x in lines[k:j]), headers(lines[j:i]))
        for row in lines[i + 1:]:
            if not row.startswith(" ") or RULE.match(row):
                break
            t.rows.append(row)
        out.append(t)
    return out


def all_headers(text: str) -> set[str]:
    return {h for t in tables(text) for h in t.headers}


def widest(text: str) -> int:
    return max((len(x.rstrip()) for x in text.split("\n")), default=0)


def read_until(fd: int, want: Optional[bytes], count: int, timeout: float) -> bytes:
    """What fd gives until want was seen count times (want None: until it ends), or timeout."""
    buf, deadline = b"", time.monotonic() + timeout
    while (want is None or buf.count(want) < count) and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:         # EIO: the other side of the terminal is closed
                break
            if not chunk:
                break
            buf += chunk
    return buf


def on_pty(argv: list[str], cols: int, env: dict[str, str], until: Optional[bytes] = None,
           count: int = 1, rows: int = 60, interrupt: bool = False,
           timeout: float = 60) -> tuple[str, int]:
    """Runs argv on a pseudo-terminal of cols x rows (its size set on the terminal, as a
    terminal emulator does, not through $COLUMNS) until it ends, or until it showed until
    count times and then (interrupt) Ctrl-C; (what it showed as text, exit status)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                         close_fds=True)
    os.close(slave)
    try:
        out = read_until(master, until, count, timeout)
        if interrupt:
            p.send_signal(signal.SIGINT)
        rc = p.wait(10)
        out += read_until(master, None, 1, timeout=0.5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        os.close(master)
    return plain(out), rc
