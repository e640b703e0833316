"""The iopulse command without a daemon: help, usage errors, an unreachable daemon."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

import iopulse
from iopulse.cli import main, parser

SRC = pathlib.Path(iopulse.__file__).resolve().parents[1]
COMMANDS = ["info", "snapshot", "top", "watch", "mark"]


def run_cli(*argv: str, env: dict | None = None,
            timeout: float = 30) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
    return subprocess.run([sys.executable, "-m", "iopulse", *argv], capture_output=True,
                          text=True, timeout=timeout, env=e)


@pytest.mark.parametrize("argv", [[]] + [[c] for c in COMMANDS])
def test_help_exits_0_with_examples(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "iopulse " + (argv[0] if argv else "top") in out


@pytest.mark.parametrize("argv", [
    [], ["frobnicate"], ["watch"], ["top", "--sort", "nope"], ["top", "--interval-multiple", "0"],
    ["top", "--threads", "-1"], ["watch", "--json", "--count", "x"], ["mark"],
    ["mark", "x", "--label", "novalue"], ["mark", "x", "--label", "=v"],
    ["--target", "nonsense", "info"], ["--connect-timeout", "-1", "info"],
    ["--connect-timeout", "nan", "info"], ["info", "--bogus"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_parsing():
    a = parser().parse_args(["--target", "/run/x.sock", "top", "--device", "sd*", "nvme*",
                             "--device", "vd?", "--sort", "qwait", "--threads", "0", "--once"])
    assert a.target == "unix:/run/x.sock" and a.device == ["sd*", "nvme*", "vd?"]
    assert (a.sort, a.threads, a.once, a.interval_multiple) == ("qwait", 0, True, 1)
    a = parser().parse_args(["watch", "--json", "--count", "3", "--replay", "60",
                             "--thread", "bstore_*"])
    assert (a.count, a.replay, a.thread, a.device) == (3, 60, ["bstore_*"], [])
    a = parser().parse_args(["mark", "fill", "--end", "--label", "run=3", "--label", "k=a=b"])
    assert (a.name, a.end, a.label) == ("fill", True, [("run", "3"), ("k", "a=b")])


def test_target_default_and_env(monkeypatch):
    monkeypatch.delenv("IOPULSE_TARGET", raising=False)
    assert parser().parse_args(["info"]).target == "unix:/run/iopulse/iopulse.sock"
    monkeypatch.setenv("IOPULSE_TARGET", "unix:///tmp/t.sock")
    assert parser().parse_args(["info"]).target == "unix:/tmp/t.sock"
    assert parser().parse_args(["--target", "h:1", "info"]).target == "h:1"


def test_unreachable_daemon_is_one_clear_line(sockdir):
    sock = sockdir / "none.sock"
    for argv in (["info"], ["watch", "--json"], ["mark", "x"]):
        t0 = time.monotonic()
        p = run_cli("--target", f"unix:{sock}", "--connect-timeout", "0.3", *argv)
        assert p.returncode == 1, p
        assert p.stdout == ""
        line = p.stderr.strip()
        assert len(line.splitlines()) == 1, p.stderr
        assert f"cannot reach iopulsed at unix:{sock}: " in line
        assert "No such file or directory" in line and line.endswith("(is iopulsed running?)")
        assert time.monotonic() - t0 < 15


def test_env_target_is_used(sockdir):
    p = run_cli("--connect-timeout", "0", "info",
                env={"IOPULSE_TARGET": str(sockdir / "env.sock")})
    assert p.returncode == 1 and f"unix:{sockdir}/env.sock" in p.stderr
