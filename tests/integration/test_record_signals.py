"""iopulse record and signals: a SIGINT or SIGTERM at any moment ends the recording within
seconds, with a complete run file whose end says what happened; a command that a signal came
before is never started, one that runs gets the signal (every one of them) and its exit status
is kept. No timing is assumed: start-up is hit at random moments, and the moments of
connecting and of opening the run file are held still (a stopped daemon, a FIFO) to hit them
every time."""
from __future__ import annotations

import os
import random
import select
import signal
import stat
import subprocess
import time

from grpc_testlib import CLIENT_ENV, iopulse_cmd, wait_for
from test_record import wait_recording

from iopulse.record import load

# The command: it writes its PID (sleep's, after the exec) to the file named by $1 first, so
# a command that ran leaves that file behind.
RUNS = 'echo $$ > "$1"; exec sleep 60'
# The command for two SIGINTs: counts them in $1, ends with 42 after the second.
TWICE = ('n=0; trap \'n=$((n + 1)); echo $n > "$1"\' INT; echo 0 > "$1"; '
         'while [ "$n" -lt 2 ]; do sleep 0.1; done; exit 42')
ENDS_WITHIN_S = 10


def _start(out: str, target: str, script: str, marker: str, *opts: str) -> subprocess.Popen:
    argv = iopulse_cmd("record", "-o", out, "--target", target, *opts, "--", "sh", "-c",
                       script, "sh", marker)
    # stdin is not a terminal: a SIGINT is then one sent to record alone, which passes it on
    return subprocess.Popen(argv, env=CLIENT_ENV, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=open(out + ".stderr", "w"))


def _stderr(out: str) -> str:
    with open(out + ".stderr") as f:
        return f.read()


def _ended(rec: subprocess.Popen, out: str, since: float) -> int:
    """record's return code; it must end within ENDS_WITHIN_S of since."""
    try:
        return rec.wait(max(0.1, since + ENDS_WITHIN_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        rec.kill()
        rec.wait(10)
        raise AssertionError(f"iopulse record still ran {ENDS_WITHIN_S} s after the signal:\n"
                             + _stderr(out)) from None


def _kill_command(marker: str) -> None:
    """Kill the command by the PID it wrote, if a test failed while it ran."""
    try:
        with open(marker) as f:
            pid = int(f.read().strip() or 0)
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() != "sleep":
                return
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")    # a zombie: not waited for
    except OSError:
        return True


def _check_end(path: str, sig: int, exit_code) -> dict:
    run = load(path)
    assert run.complete, run.damage
    end = run.end
    assert end["status"] == "interrupted" and end["signal"] == signal.Signals(sig).name, end
    assert end["exit_code"] == exit_code, end
    return end


def _wait_socket(rec: subprocess.Popen) -> None:
    """Until iopulse record has a socket: its first call to the daemon, made by its own code
    (Python has started and imported grpc)."""
    deadline = time.monotonic() + 120
    while not _has_socket(rec.pid) and rec.poll() is None:
        assert time.monotonic() < deadline, "iopulse record did not connect in 120 s"
        time.sleep(0.002)


def _time_to_start(out: str, target: str, marker: str) -> float:
    """Seconds from iopulse record's first socket to its command running; the recording is
    then ended with SIGINT (passed on: the command ends with 130, and so does record)."""
    rec = _start(out, target, RUNS, marker)
    try:
        _wait_socket(rec)
        t0 = time.monotonic()
        while not os.path.exists(marker) and rec.poll() is None:
            assert time.monotonic() < t0 + 120, "the command did not start in 120 s"
            time.sleep(0.002)
        took = time.monotonic() - t0
        assert rec.poll() is None, _stderr(out)
        sent = time.monotonic()
        rec.send_signal(signal.SIGINT)
        assert _ended(rec, out, sent) == 130, _stderr(out)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait(10)
        _kill_command(marker)
    _check_end(out, signal.SIGINT, 130)
    return took


def test_signal_at_random_moments_of_start_up(daemon, tmp_path):
    """From record's first call to the daemon to its command running (earlier, Python is
    still starting: its default handling, no run file)."""
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    took = max(_time_to_start(str(tmp_path / f"calibrate{i}.iopulse"), target,
                              str(tmp_path / f"calibrate{i}.ran")) for i in range(3))
    print(f"\ncommand running {took:.3f} s after iopulse record's first socket")
    rnd = random.Random(os.environ.get("IOPULSE_TEST_SEED"))
    seen = {"no run file": 0, "command not started": 0, "command interrupted": 0}
    for i in range(12):
        sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
        delay = rnd.uniform(0, max(0.1, 1.5 * took))
        out, ran = str(tmp_path / f"try{i}.iopulse"), str(tmp_path / f"try{i}.ran")
        rec = _start(out, target, RUNS, ran)
        try:
            _wait_socket(rec)
            time.sleep(delay)
            sent = time.monotonic()
            rec.send_signal(sig)
            rc = _ended(rec, out, sent)
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait(10)
            _kill_command(ran)
        err = _stderr(out)
        assert rc == 128 + sig and "Traceback" not in err, (rc, err)
        if not os.path.exists(out):     # while it connected: nothing written, nothing ran
            assert f"{signal.Signals(sig).name} before the recording began" in err, err
            assert not os.path.exists(ran), "the command ran, and the run has no file"
            what = "no run file"
        else:
            run = load(out)
            code = run.end["exit_code"] if run.end else "?"
            _check_end(out, sig, None if code is None else 128 + sig)
            if code is None:
                assert not os.path.exists(ran), "a command reported as not started ran"
                assert "is not started" in err, err
                what = "command not started"
            else:
                what = "command interrupted"
        seen[what] += 1
        print(f"try {i}: {signal.Signals(sig).name} {delay:.3f} s after the first socket: "
              f"{what}")
    print(seen)
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def _has_socket(pid: int) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_signal_while_connecting_writes_nothing(daemon, tmp_path):
    """A stopped daemon holds record in its first call; a signal then ends it at once, with
    no run file and no command."""
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    d.send_signal(signal.SIGSTOP)
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            name = signal.Signals(sig).name
            out, ran = str(tmp_path / f"{name}.iopulse"), str(tmp_path / f"{name}.ran")
            rec = _start(out, target, RUNS, ran, "--timeout", "60", "--connect-timeout", "60")
            try:
                _wait_socket(rec)
                assert rec.poll() is None, _stderr(out)
                sent = time.monotonic()
                rec.send_signal(sig)
                rc = _ended(rec, out, sent)
            finally:
                if rec.poll() is None:
                    rec.kill()
                    rec.wait(10)
                _kill_command(ran)
            err = _stderr(out)
            print(f"\n{name}: exit {rc}\n{err}")
            assert rc == 128 + sig, (rc, err)
            assert f"{name} before the recording began" in err and "Traceback" not in err, err
            assert not os.path.exists(out) and not os.path.exists(ran)
    finally:
        d.send_signal(signal.SIGCONT)
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def _blocked_opening(pid: int) -> bool:
    """The process's main thread waits in open() for a reader of a FIFO."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read().strip() in ("wait_for_partner", "fifo_open")
    except OSError:
        return False


def _read_fifo(path: str, rec: subprocess.Popen, out: str) -> bytes:
    """Everything the writer of the FIFO writes, until it closes it (it is waiting for us)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = bytearray()
    deadline = time.monotonic() + ENDS_WITHIN_S
    try:
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return bytes(data)
            data += chunk
    finally:
        os.close(fd)
    raise AssertionError(f"the run file was not closed within {ENDS_WITHIN_S} s:\n"
                         + _stderr(out))


def test_signal_while_the_run_file_opens_never_starts_the_command(daemon, tmp_path):
    """The run file is a FIFO: record, connected, waits in open() for its reader, and the
    command can only start after that; the signal is sent before the reader opens it."""
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    for sig in (signal.SIGINT, signal.SIGTERM):
        name = signal.Signals(sig).name
        fifo, ran = str(tmp_path / f"{name}.fifo"), str(tmp_path / f"{name}.ran")
        os.mkfifo(fifo)
        rec = _start(fifo, target, RUNS, ran, "--force")
        try:
            wait_for(lambda: _blocked_opening(rec.pid) or rec.poll() is not None, 120,
                     "iopulse record opening its run file")
            assert rec.poll() is None, _stderr(fifo)
            sent = time.monotonic()
            rec.send_signal(sig)
            time.sleep(0.5)             # let it reach the handler while open() still waits
            data = _read_fifo(fifo, rec, fifo)
            rc = _ended(rec, fifo, sent)
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait(10)
            _kill_command(ran)
        err = _stderr(fifo)
        print(f"\n{name}: exit {rc}, {len(data)} bytes\n{err}")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert rc == 128 + sig, (rc, err)
        assert not os.path.exists(ran), "the command ran after the signal"
        assert "is not started" in err and "Traceback" not in err, err
        path = str(tmp_path / f"{name}.iopulse")
        with open(path, "wb") as f:
            f.write(data)
        _check_end(path, sig, None)
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_sigterm_reaches_the_running_command(daemon, tmp_path):
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    out, ran = str(tmp_path / "term.iopulse"), str(tmp_path / "term.ran")
    rec = _start(out, target, RUNS, ran)
    try:
        wait_recording(rec, out, updates=2)
        wait_for(lambda: os.path.getsize(ran) > 0, 30, "the command's PID")
        with open(ran) as f:
            pid = int(f.read())
        sent = time.monotonic()
        rec.send_signal(signal.SIGTERM)
        rc = _ended(rec, out, sent)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait(10)
        _kill_command(ran)
    assert rc == 143, (rc, _stderr(out))
    assert _gone(pid), "the command outlived the recording"
    end = _check_end(out, signal.SIGTERM, 143)
    print(f"\n{end}")

    # --duration still stops the command itself (SIGTERM): not an interruption
    out2 = str(tmp_path / "duration.iopulse")
    p = subprocess.run(iopulse_cmd("record", "-o", out2, "--target", target, "--duration", "2s",
                                   "--", "sleep", "60"), env=CLIENT_ENV, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 143, p.stderr
    run = load(out2)
    assert run.complete and run.end["status"] == "duration" and run.end["exit_code"] == 143
    assert "signal" not in run.end, run.end
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_second_sigint_reaches_the_command_too(daemon, tmp_path):
    d = daemon("-i", "1s")
    target = f"unix:{d.socket}"
    out, count = str(tmp_path / "twice.iopulse"), str(tmp_path / "twice.count")

    def got() -> str:
        try:
            with open(count) as f:
                return f.read().strip()
        except OSError:
            return ""

    rec = _start(out, target, TWICE, count)
    try:
        wait_recording(rec, out, updates=2)
        wait_for(lambda: got() == "0", 30, "the command's trap")
        rec.send_signal(signal.SIGINT)
        wait_for(lambda: got() == "1" or rec.poll() is not None, ENDS_WITHIN_S,
                 "the command to get the first SIGINT")
        assert rec.poll() is None, _stderr(out)
        sent = time.monotonic()
        rec.send_signal(signal.SIGINT)
        rc = _ended(rec, out, sent)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait(10)
    assert got() == "2" and rc == 42, (got(), rc, _stderr(out))
    _check_end(out, signal.SIGINT, 42)
    assert d.stop(signal.SIGTERM) == 0, d.describe()
