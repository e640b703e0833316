"""record's copy of fio's JSON report: the command line it gives fio, the filter that takes the
report out of what the user sees (in any chunking), the relay through a pipe and a FIFO, and
the run file's accessor."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from iopulse.record import RunWriter, fio_output, load
from iopulse.record.fio_output import JsonTap, Relay, plan


def test_plan_adds_json_plus_where_the_formats_stand():
    p = plan(["fio", "jobs.fio"])
    assert p.argv == ["fio", "--output-format=json+,normal", "jobs.fio"] and p.added
    assert p.format == "json+" and p.output_file is None
    # the last --output-format / --minimal sets the formats, --append-terse adds terse: ours
    # goes right after the last of them, so nothing later changes it
    p = plan(["fio", "--minimal", "--name=a", "--append-terse", "--rw=read"])
    assert p.argv == ["fio", "--minimal", "--name=a", "--append-terse",
                      "--output-format=json+,terse", "--rw=read"]
    p = plan(["fio", "--output-format", "terse,normal", "x.fio"])
    assert p.argv[3] == "--output-format=json+,normal,terse"
    p = plan(["fio", "-output-format=normal", "--minimal", "x.fio"])
    assert p.argv[3] == "--output-format=json+,terse"


def test_plan_keeps_a_json_the_user_asked_for():
    for argv in (["fio", "--output-format=json", "x.fio"], ["fio", "--output-format", "json+"],
                 ["fio", "-output-format=normal,json", "x.fio"]):
        p = plan(argv)
        assert p.argv == argv and not p.added and p.format == "json"


def test_plan_finds_the_output_file():
    for argv, at in ((["fio", "--output=o.txt", "x.fio"], 1), (["fio", "--output", "o.txt"], 2),
                     (["fio", "-output", "o.txt", "--output=p.txt"], 3)):
        p = plan(argv)
        want = "p.txt" if "--output=p.txt" in argv else "o.txt"
        assert p.output_file == want
        assert p.argv[p.output_index].endswith(want), (p.argv, p.output_index)
    assert plan(["fio", "--client=node1", "x.fio"]) is None
    assert plan(["fio", "--server"]) is None


def _report(n: int, name: str = "a") -> bytes:
    doc = {"fio version": "fio-3.33", "timestamp": 1700000000 + n,
           "jobs": [{"jobname": name, "note": "a } and a {\n in a string", "write": {"iops": n}}]}
    return (json.dumps(doc, indent=2).replace('": ', '" : ') + "\n").encode()


TEXT = [b"a: (g=0): rw=write, bs=(R) 4096B-4096B\nfio-3.33\nStarting 1 process\n",
        b"\na: (groupid=0, jobs=1): err= 0\n  write: IOPS=3, BW=12KiB/s\n",
        b"\nRun status group 0 (all jobs):\n  WRITE: bw=12KiB/s\n{not a report}\n"]


def _stream() -> tuple[bytes, bytes]:
    """fio's output with two reports (--status-interval) and what the user sees without."""
    plain = b"".join(TEXT)
    full = TEXT[0] + _report(1) + TEXT[1] + _report(2) + TEXT[2]
    return full, plain


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 16, 64, 1 << 20])
def test_tap_takes_the_reports_out_in_any_chunking(chunk):
    full, plain = _stream()
    for strip, want in ((True, plain), (False, full)):
        tap = JsonTap(strip)
        out = b"".join(tap.feed(full[i:i + chunk]) for i in range(0, len(full), chunk))
        out += tap.finish()
        assert out == want
        assert tap.reports == 2
        assert json.loads(tap.last)["jobs"][0]["write"]["iops"] == 2


def test_a_report_cut_short_is_dropped_only_if_it_was_ours():
    cut = TEXT[0] + _report(1)[:40]
    tap = JsonTap(True)
    assert tap.feed(cut) + tap.finish() == TEXT[0] and tap.last is None
    tap = JsonTap(False)
    assert tap.feed(cut) + tap.finish() == cut and tap.last is None


FAKE_FIO = r"""
import os, sys
args = sys.argv[1:]
out = sys.stdout.buffer
for i, a in enumerate(args):
    if a.startswith("--output="):
        out = open(a.split("=", 1)[1], "wb")
    elif a == "--output":
        out = open(args[i + 1], "wb")
fmt = [a.split("=", 1)[1] for a in args if a.startswith("--output-format=")]
text, report = sys.stdin.buffer.read().split(b"\0")
out.write(text[:20]); out.flush()
if fmt and "json" in fmt[-1]:
    out.write(report)
out.write(text[20:]); out.flush()
"""


def _run_fake(argv: list[str], tmp_path, text: bytes) -> tuple[Relay, dict]:
    p = plan(argv)
    relay = Relay(p, str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", FAKE_FIO, *p.argv[1:]],
                            stdin=subprocess.PIPE, stdout=relay.child_stdout)
    relay.started()
    proc.communicate(text + b"\0" + _report(5), timeout=30)
    doc = relay.finish()
    return relay, doc


def test_relay_through_a_pipe_to_stdout(tmp_path, capfd):
    text = b"".join(TEXT)
    relay, doc = _run_fake(["fio", "x.fio"], tmp_path, text)
    assert capfd.readouterr().out.encode() == text     # exactly what fio would have printed
    assert doc["jobs"][0]["write"]["iops"] == 5 and relay.error is None
    assert fio_output.record_event(doc, relay.plan, relay.tap.reports)["format"] == "json+"


def test_relay_through_a_fifo_to_the_output_file(tmp_path, capfd):
    text = b"".join(TEXT)
    dest = tmp_path / "fio.txt"
    dest.write_text("old content, longer than what fio writes " * 100)
    relay, doc = _run_fake(["fio", f"--output={dest}"], tmp_path, text)
    assert dest.read_bytes() == text and capfd.readouterr().out == ""
    assert doc["jobs"][0]["write"]["iops"] == 5
    # the user asked for JSON in the file: it stays there, and is copied
    dest2 = tmp_path / "fio.json"
    work = tmp_path / "second"
    work.mkdir()
    relay, doc = _run_fake(["fio", "--output-format=json", "--output", str(dest2)], work, text)
    assert dest2.read_bytes() == text[:20] + _report(5) + text[20:]
    assert doc["jobs"][0]["write"]["iops"] == 5 and not relay.plan.added


def test_no_report_is_said(tmp_path, capfd):
    p = plan(["fio", "--output-format=json", "x.fio"])
    relay = Relay(p, str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", "print('fio: no jobs')"],
                            stdout=relay.child_stdout)
    relay.started()
    proc.wait(30)
    assert relay.finish() is None and relay.error == "fio printed no JSON report"
    assert capfd.readouterr().out == "fio: no jobs\n"


def test_the_run_reads_it_back(tmp_path):
    doc = json.loads(_report(7))
    path = str(tmp_path / "r.iopulse")
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1})
        w.write_json(fio_output.record_event(doc, plan(["fio"]), 1))
        w.close({"type": "end", "status": "ok"})
    run = load(path)
    assert run.fio_output == doc
    assert run.events == [] and run.tool_outputs[0]["format"] == "json+"
    empty = str(tmp_path / "e.iopulse")
    with RunWriter(empty) as w:
        w.close({"type": "end", "status": "ok"})
    assert load(empty).fio_output is None


PTY_CHILD = r"""
import subprocess, sys, tempfile
from iopulse.record.fio_output import Relay, plan
fake = "import os, sys; sys.stdout.write('tty\\n' if os.isatty(1) else 'no tty\\n'); " \
       "sys.stdout.write(sys.argv[1]); sys.stdout.flush()"
with tempfile.TemporaryDirectory() as tmp:
    p = plan(["fio", "x.fio"])
    relay = Relay(p, tmp)
    report = '{\n  "fio version" : "fio-3.33",\n  "jobs" : []\n}\n'
    proc = subprocess.Popen([sys.executable, "-c", fake, "a\nb\r" + report + "end\n"],
                            stdout=relay.child_stdout)
    relay.started()
    proc.wait(30)
    doc = relay.finish()
    sys.stderr.write(f"kept {doc}\n")
"""


def test_on_a_terminal_fio_gets_one_too(tmp_path):
    """record's stdout a terminal: fio's is a pseudo-terminal (fio shows its progress line only
    on one), in raw mode (no \\r added), and the report is taken out."""
    import os
    import pty

    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", PTY_CHILD], stdout=slave,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    got = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        got += data
    err = proc.communicate(timeout=30)[1].decode()
    os.close(master)
    assert proc.returncode == 0, err
    assert "kept {'fio version': 'fio-3.33', 'jobs': []}" in err
    # the outer terminal adds \r to \n (as a real one does); the inner one adds nothing
    assert got.replace(b"\r\n", b"\n") == b"tty\na\nb\rend\n", got
