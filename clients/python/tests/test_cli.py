"""The CLI without a daemon: help, usage errors, targets, and an unreachable daemon."""
import subprocess
import sys
import time

import pytest

from iopulse.cli import main, parser
from iopulse.client import normalize_target


@pytest.mark.parametrize("argv", [["--help"], ["top", "--help"], ["watch", "--help"],
                                  ["mark", "--help"], ["info", "--help"],
                                  ["snapshot", "--help"]])
def test_help_has_examples(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    assert "examples:" in capsys.readouterr().out


def test_usage_errors_exit_2(capsys):
    for argv in (["top", "--sort", "nope"], ["frobnicate"], ["watch"], []):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2


def test_targets():
    assert normalize_target("unix:///run/x.sock") == "unix:/run/x.sock"
    assert normalize_target("unix:/run/x.sock") == "unix:/run/x.sock"
    assert normalize_target("/run/x.sock") == "unix:/run/x.sock"
    assert normalize_target("10.0.0.1:7073") == "10.0.0.1:7073"
    assert parser().parse_args(["--target", "h:1", "info"]).target == "h:1"


def test_unreachable_daemon_is_one_clear_line(tmp_path):
    sock = tmp_path / "none.sock"
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "iopulse", "--target", f"unix:{sock}",
                        "--connect-timeout", "0.5", "info"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 1
    assert f"cannot reach iopulsed at unix:{sock}" in p.stderr
    assert "is iopulsed running?" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert time.monotonic() - t0 < 15
