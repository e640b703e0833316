"""What every iopulse command shares: exit codes, argument types, output helpers."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Optional

from ..client import BadTarget, parse_target

EXIT_OK, EXIT_SERVER, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ENV_TARGET = "IOPULSE_TARGET"


def int_at_least(lo: int) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not a whole number") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} is less than {lo}")
        return v
    return parse


DURATION_UNITS = {"us": 1e-6, "ms": 0.001, "s": 1, "m": 60, "h": 3600}


def duration(s: str) -> float:
    t = s.strip()
    for unit in ("us", "ms", "s", "m", "h"):
        if t.endswith(unit):
            try:
                v = float(t[:-len(unit)]) * DURATION_UNITS[unit]
            except ValueError:
                break
            if v > 0:
                return v
            break
    else:
        try:
            v = float(t)
            if v > 0:
                return v
        except ValueError:
            pass
    raise argparse.ArgumentTypeError(f"{s!r} is not a duration such as 90s, 10m or 1h")


def seconds(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number of seconds") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{s} is not a finite number of seconds >= 0")
    return v


def label(s: str) -> tuple[str, str]:
    k, sep, v = s.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError(f"{s!r}: expected KEY=VALUE")
    return k, v


def target(s: str) -> str:
    try:
        return parse_target(s)
    except BadTarget as e:
        raise argparse.ArgumentTypeError(e.reason) from None


def print_json(obj: Any, indent: Optional[int] = None) -> None:
    sys.stdout.write(json.dumps(obj, indent=indent, separators=None if indent else (",", ":"))
                     + "\n")
    sys.stdout.flush()


def console() -> Any:
    from rich.console import Console

    c = Console()
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c.width = 160   # not 80: keep the ten columns of a pipe or log file readable
    return c


def printable(s: str) -> str:
    """s with control and other unprintable characters escaped (\\n, \\x1b), for messages
    that quote names a user or a file chose."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)
