"""Shared fixtures: the package from this tree (when not installed) and a fake daemon."""
from __future__ import annotations

import pathlib
import shutil
import sys
import tempfile
from typing import Callable, Iterator

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
try:
    import iopulse  # noqa: F401  (installed, or on PYTHONPATH)
except ImportError:
    sys.path.insert(0, str(SRC))

from fakes import FakeTelemetry, serve  # noqa: E402


@pytest.fixture
def sockdir() -> Iterator[pathlib.Path]:
    """A short temporary directory for unix sockets (their paths are limited to 107 bytes)."""
    d = tempfile.mkdtemp(prefix="iop-", dir="/tmp")
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fake_daemon(sockdir: pathlib.Path) -> Iterator[Callable[..., tuple[str, FakeTelemetry]]]:
    """start(**fake_args) -> (target, fake): an in-process Telemetry server on a temp socket."""
    servers = []

    def start(**kwargs) -> tuple[str, FakeTelemetry]:
        fake = FakeTelemetry(**kwargs)
        path = sockdir / f"d{len(servers)}.sock"
        servers.append(serve(fake, f"unix:{path}"))
        return f"unix:{path}", fake

    yield start
    for s in servers:
        s.stop(None)
