"""The iopulse command without a daemon: help, usage errors, an unreachable daemon."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

import iopulse
from iopulse.cli import main, parse_args

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
    [], ["frobnicate"], ["top", "--sort", "nope"], ["top", "--interval-multiple", "0"],
    ["top", "--threads", "-1"], ["watch", "--json", "--count", "x"], ["mark"],
    ["mark", "x", "--label", "novalue"], ["mark", "x", "--label", "=v"],
    ["--target", "nonsense", "info"], ["--connect-timeout", "-1", "info"],
    ["--connect-timeout", "nan", "info"], ["info", "--bogus"], ["info", "--target", "nonsense"],
    ["top", "--connect-timeout", "-1"], ["mark", "x", "--timeout", "soon"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_parsing():
    a = parse_args(["--target", "/run/x.sock", "top", "--device", "sd*", "nvme*",
                    "--device", "vd?", "--sort", "qwait", "--threads", "0", "--once"])
    assert a.target == "unix:/run/x.sock" and a.device == ["sd*", "nvme*", "vd?"]
    assert (a.sort, a.threads, a.once, a.interval_multiple) == ("qwait", 0, True, 1)
    assert (a.timeout, a.connect_timeout) == (10.0, 10.0)
    a = parse_args(["watch", "--json", "--count", "3", "--replay", "60", "--thread", "bstore_*"])
    assert (a.count, a.replay, a.thread, a.device, a.json) == (3, 60, ["bstore_*"], [], True)
    assert parse_args(["watch"]).json is False
    a = parse_args(["mark", "fill", "--end", "--label", "run=3", "--label", "k=a=b"])
    assert (a.name, a.end, a.label) == ("fill", True, [("run", "3"), ("k", "a=b")])


@pytest.mark.parametrize("argv", [
    ["top", "--target", "h:1", "--timeout", "3", "--connect-timeout", "0.5"],
    ["--target", "h:1", "top", "--timeout", "3", "--connect-timeout", "0.5"],
    ["--target", "x:9", "--timeout", "9", "top", "--target", "h:1", "--timeout", "3",
     "--connect-timeout", "0.5"],
    ["--target", "h:1", "--timeout", "3", "--connect-timeout", "0.5", "top"],
])
def test_global_options_before_or_after_the_command(argv):
    a = parse_args(argv)
    assert (a.cmd, a.target, a.timeout, a.connect_timeout) == ("top", "h:1", 3.0, 0.5)


def test_target_default_and_env(monkeypatch):
    monkeypatch.delenv("IOPULSE_TARGET", raising=False)
    assert parse_args(["info"]).target == "unix:/run/iopulse/iopulse.sock"
    monkeypatch.setenv("IOPULSE_TARGET", "unix:///tmp/t.sock")
    assert parse_args(["info"]).target == "unix:/tmp/t.sock"
    assert parse_args(["--target", "h:1", "info"]).target == "h:1"
    assert parse_args(["info", "--target", "h:1"]).target == "h:1"


def test_bad_env_target_names_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("IOPULSE_TARGET", "nonsense")
    with pytest.raises(SystemExit) as e:
        main(["info"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "environment variable IOPULSE_TARGET='nonsense' is not a daemon address" in err
    assert "--target" not in err.splitlines()[-1]
    # --target wins over a bad variable
    assert parse_args(["info", "--target", "h:1"]).target == "h:1"
    with pytest.raises(SystemExit):
        main(["--target", "nonsense", "info"])
    assert "argument --target: expected unix:/PATH" in capsys.readouterr().err


def test_targets_file(tmp_path, capsys):
    f = tmp_path / "nodes.txt"
    f.write_text("# OSD nodes\nnode1:9000\n\nunix:///tmp/b.sock   # local\n")
    a = parse_args(["top", "--target", "node0:9000", "--targets-file", str(f)])
    assert a.targets == ["node0:9000", "node1:9000", "unix:/tmp/b.sock"]
    assert parse_args(["--targets-file", str(f), "snapshot"]).targets[0] == "node1:9000"
    with pytest.raises(SystemExit) as e:
        parse_args(["info", "--targets-file", str(f)])
    assert e.value.code == 2
    assert "info takes one --target (several: record, snapshot, top, watch)" in \
        capsys.readouterr().err
    f.write_text("node1:9000\nhttp://node2\n")
    with pytest.raises(SystemExit):
        parse_args(["top", "--targets-file", str(f)])
    assert f"{f}:2: 'http://node2' is not a daemon address" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["top", "--targets-file", str(tmp_path / "missing.txt")])
    assert "missing.txt: No such file or directory" in capsys.readouterr().err


def test_missing_socket_fails_at_once_with_a_hint(sockdir):
    sock = sockdir / "none.sock"
    for argv in (["info"], ["watch"], ["mark", "x"], ["top"]):
        t0 = time.monotonic()
        p = run_cli(*argv, "--target", f"unix:{sock}", "--connect-timeout", "20")
        took = time.monotonic() - t0
        assert p.returncode == 1, p
        assert p.stdout == ""
        line = p.stderr.strip()
        assert len(line.splitlines()) == 1, p.stderr
        assert line == f"iopulse: cannot reach iopulsed at unix:{sock}: no such socket: {sock}: " \
            "is iopulsed running?"
        assert took < 10, f"{argv}: {took:.1f} s: retried instead of failing at once"
    p = run_cli("info", "--target", f"unix:{sockdir}/nodir/x.sock")
    assert p.returncode == 1 and f"(no directory {sockdir}/nodir)" in p.stderr


def test_env_target_is_used(sockdir):
    p = run_cli("--connect-timeout", "0", "info",
                env={"IOPULSE_TARGET": str(sockdir / "env.sock")})
    assert p.returncode == 1 and f"unix:{sockdir}/env.sock" in p.stderr


def test_mark_name_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["mark", "--help"])
    out = capsys.readouterr().out
    assert "NAME" in out and "the phase's name" in out


@pytest.mark.parametrize("command, says", [
    ("plot", ["png (default", "svg (vector"]),
    ("export", ["csv (default", "parquet (typed", "jsonl (one JSON"]),
])
def test_format_options_have_help(command, says, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for s in says:
        assert s in out, (s, out)


def test_help_names_columns(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "$COLUMNS" in out and "160 columns" in out


def test_ctrl_c_inside_grpc_wait_is_an_interrupt(monkeypatch, tmp_path):
    """grpcio 1.51 can turn a Ctrl-C inside its Condition.wait into "cannot release
    un-acquired lock" raised while the KeyboardInterrupt is handled: exit 130, no traceback;
    any other RuntimeError still propagates."""
    from iopulse.cli import COMMANDS

    def interrupted(c, args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("cannot release un-acquired lock")

    def broken(c, args):
        raise RuntimeError("something else")
    target = ["--target", f"unix:{tmp_path}/none.sock", "info"]
    monkeypatch.setattr(COMMANDS["info"], "run", interrupted)
    assert main(target) == 130
    monkeypatch.setattr(COMMANDS["info"], "run", broken)
    with pytest.raises(RuntimeError, match="something else"):
        main(target)
