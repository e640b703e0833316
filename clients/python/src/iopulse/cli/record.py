"""iopulse record: record every Update of one or more daemons into a run file while a
command runs (or for a duration), with the command's phases marked."""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

from ..record.broker import Broker
from ..record.recorder import Recorder, hook_script_path
from .common import EXIT_OK, EXIT_SERVER, EXIT_USAGE, duration, label, printable

HELP = "record a run: every Update of every target while a command runs, with its phases"
EXAMPLES = """examples:
  iopulse record -o run1.iopulse -- fio jobs.fio
  iopulse record -o run1.iopulse -- fio --exec_prerun='sync; echo 3 > /proc/sys/vm/drop_caches' jobs.fio
  iopulse record -o run1.iopulse --target osd1:7073 --target osd2:7073 -- rados bench -p rbd 60 write
  iopulse record -o idle.iopulse --duration 10m
  iopulse record -o run2.iopulse --replay 60 --label config=B -- ./bench.sh

The command's lifetime is a phase (named after the command; for rados bench
rados-bench-MODE with its pool, threads, object size and seconds). fio's jobs become phases of
their own, marked by hooks fio runs right before each job's first IO and after its last
(labels rw, bs, iodepth, numjobs, ioengine); a stonewall group of several jobs gets a phase
around them. A job's own exec_prerun (from its job file, or from fio's command line before
the job file) runs before the job's begin mark, so a preparation's IO stays out of the
job's phase; its exec_postrun runs after the end mark. A CBT run's benchmark runs are read from its --archive when it ends (edges from
their outputs, accuracy stated). When the command is fio, the run also keeps fio's JSON
report (json+ added to the formats you chose and taken out again on its way to your terminal
or --output file; with json or json+ chosen, that one is copied), and each target's device
settings at the start are kept for any command. Commands run under the recording see
$IOPULSE_SESSION, $IOPULSE_RECORD (the hook socket: `iopulse mark` run by the command marks
on every target through it) and $IOPULSE_TARGET. Ctrl-C and SIGTERM are passed on to the
command; iopulse record waits for it and exits with its exit status. One that comes before the
command started ends the recording without starting it (exit status 130 for Ctrl-C, 143 for
SIGTERM; the run's end says so). Then: iopulse report RUN."""
CONNECTS = False

def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("-o", "--output", required=True, metavar="RUN",
                   help="the run file to write (refused if it exists, unless --force)")
    s.add_argument("--force", action="store_true", help="overwrite RUN if it exists")
    s.add_argument("--duration", type=duration, default=None, metavar="D",
                   help="stop after D (e.g. 90s, 10m); without a command: record until then "
                        "(or Ctrl-C)")
    s.add_argument("--replay", type=int, default=0, metavar="S",
                   help="also record the last S seconds each daemon kept from before the start")
    s.add_argument("--name", default=None,
                   help="name of the phase around the whole recording (default: the "
                        "command's name, or 'record')")
    s.add_argument("--label", action="append", type=label, default=[], metavar="KEY=VALUE",
                   help="a label of that phase, e.g. config=B (repeatable)")
    s.add_argument("--no-detect", action="store_true",
                   help="do not add phases for the command's own steps (fio jobs)")
    s.add_argument("--no-fio-json", action="store_true",
                   help="do not keep a copy of fio's JSON report in the run (fio's output is "
                        "then not passed through record at all)")
    s.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command to run and record")


class _Stopped(BaseException):
    """A signal before the run file was opened: the recording stops with nothing written."""

    def __init__(self, sig: int) -> None:
        super().__init__(sig)
        self.sig = sig


def _from_terminal() -> bool:
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):     # no stdin, or not a terminal
        return False


class _Signals:
    """The signals that stop iopulse record (SIGINT, SIGTERM, SIGHUP), caught from its first
    step to its last.

    Until the run file is about to be opened, the first one raises _Stopped: nothing is
    written yet. From then on they are kept, never raised, so that no write is cut short:
    start() does not start the command once one came, and while the command runs each one is
    passed on to it, but for a terminal's Ctrl-C: the terminal sent that to our process group,
    where the command runs too. Signals ignored when record started (nohup) stay ignored."""

    CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: list[int] = []
        self.child: Optional[subprocess.Popen[bytes]] = None
        self._raise = True
        self._unsent: list[int] = []    # came while no command ran: passed on once it runs
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in self.CAUGHT:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self._old[sig] = signal.signal(sig, self._handle)

    def _handle(self, sig: int, _frame: Any) -> None:
        self.received.append(sig)
        if self._raise:
            self._raise = False
            raise _Stopped(sig)
        child = self.child
        if child is None:
            self._unsent.append(sig)
        elif not (sig == signal.SIGINT and _from_terminal()):
            _send(child, sig)

    def keep(self) -> None:
        """From now on signals are kept, not raised: the run file is being opened."""
        self._raise = False

    def start(self, argv: list[str], env: dict[str, str],
              stdout: Optional[int]) -> Optional[subprocess.Popen[bytes]]:
        """Start the command, or return None if a signal came before it."""
        if self.received:
            return None
        proc = subprocess.Popen(argv, env=env, stdout=stdout)
        self.child = proc
        # A signal that came while Popen ran found no command to pass it to; the command
        # missed it (a terminal's Ctrl-C too, unless it came after the exec): send it now.
        # One that comes from here on is sent by _handle, and not queued here.
        while self._unsent:
            _send(proc, self._unsent.pop(0))
        return proc

    def wait(self, timeout: Optional[float]) -> Optional[int]:
        """The command's return code as Popen gives it, or None if it still runs after
        timeout seconds (None: no limit).

        Polls, never one blocking waitpid: Python runs a handler in the main thread only, and
        a signal the kernel hands to another thread (grpc's) does not interrupt a main thread
        blocked in waitpid: the handler would run, and pass the signal on, only once the
        command ended by itself."""
        assert self.child is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            try:
                return self.child.wait(step)       # polls (Popen.wait with a timeout)
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    return None

    def restore(self) -> None:
        for sig, h in self._old.items():
            signal.signal(sig, h)


def _send(proc: "subprocess.Popen[bytes]", sig: int) -> None:
    try:
        proc.send_signal(sig)           # nothing if it has been waited for
    except OSError:
        pass


def _signame(sig: int) -> str:
    return signal.Signals(sig).name


def _tool(cmd: list[str]) -> str:
    base = os.path.basename(cmd[0])
    if base == "fio":
        return "fio"
    if base == "rados" and "bench" in cmd[1:]:
        return "rados-bench"
    if base in ("cbt.py", "cbt"):
        return "cbt"
    return ""


def _import_cbt(cmd: list[str], rec: Recorder, say: Any) -> None:
    """CBT runs its benchmarks on other nodes: their phases come from its archive, the runs
    that started during this recording."""
    archive = None
    for i, a in enumerate(cmd):
        if a in ("-a", "--archive") and i + 1 < len(cmd):
            archive = cmd[i + 1]
        elif a.startswith("--archive="):
            archive = a.split("=", 1)[1]
    if not archive:
        say("cbt: no --archive on the command line; import its phases later with "
            "iopulse phases import RUN ARCHIVE")
        return
    from ..phases.cbt import phases_from_archive

    try:
        found = [p for p in phases_from_archive(archive)
                 if p["start_realtime_ns"] >= rec.started_ns - 5_000_000_000]
    except ValueError as e:
        say(f"cbt: {e}")
        return
    for p in found:
        p["imported_from"] = os.path.abspath(archive)
        rec.event(p)
    say(f"cbt: {len(found)} benchmark run(s) from {archive} become phases")


def _unmarked(plan: Any, broker: Broker, cmd: list[str], say: Any) -> int:
    """Says which fio jobs did not become phases (their hooks did not run, or a mark was
    refused) and returns how many; jobs fio was told to skip (--section) are not expected."""
    sections = {cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == "--section"}
    sections |= {a.split("=", 1)[1] for a in cmd if a.startswith("--section=")}
    lost = 0
    for j in plan.jobs:
        key = f"job{j.index}"
        if sections and j.name not in sections:
            continue
        missing = [w for w, seen in (("begin", broker.entered), ("end", broker.left))
                   if key not in seen]
        if missing:
            lost += 1
            ended = ("; its phase ends where the next stonewall group began, or fio ended, "
                     "an inferred end the report notes" if missing == ["end"] else "")
            say(f"fio job {j.name!r}: its phase {' and '.join(missing)} was not "
                f"marked (fio did not run its hook: did the job die?){ended}")
    for e in broker.errors:
        lost += 1
        say(f"a phase mark failed: {e}")
    return lost


def _fio_output(argv: list[str], tmp: str, say: Any) -> tuple[list[str], Any]:
    """fio's command line that also prints its JSON report, and the relay that copies it
    (None when fio's output is left alone)."""
    from ..record import fio_output

    p = fio_output.plan(argv)
    if p is None:
        say("fio: client/server mode: its JSON report is not kept")
        return argv, None
    try:
        relay = fio_output.Relay(p, tmp)
    except OSError as e:
        say(f"fio: its JSON report is not kept ({p.output_file or 'stdout'}: "
            f"{e.strerror or e})")
        return argv, None
    return p.argv, relay


def _keep_fio_output(relay: Any, rec: Recorder, say: Any) -> None:
    from ..record import fio_output

    doc = relay.finish()
    if doc is None:
        say(f"fio: {relay.error}: the run has no copy of its report")
        return
    if relay.error:
        say(f"fio: {relay.error}")
    try:
        rec.event(fio_output.record_event(doc, relay.plan, relay.tap.reports))
    except ValueError as e:         # larger than a record may be
        say(f"fio: its JSON report is not kept: {e}")
        return
    say(f"fio: its JSON report ({relay.plan.format}) is kept in the run")


def _no_keys(key: str) -> list[Any]:
    raise LookupError(f"no phases for hook key {key!r}")


def _exit_status(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def run(args: argparse.Namespace) -> int:
    sigs = _Signals()
    try:
        sigs.install()          # first: no moment of the recording without them
        return _record(args, sigs)
    except _Stopped as e:
        return _stopped_early(e.sig)
    except RuntimeError as e:
        # raised inside grpc's Condition.wait, it can surface as "cannot release un-acquired
        # lock" while it is handled (as a KeyboardInterrupt can: see iopulse.cli.main)
        if isinstance(e.__context__, _Stopped):
            return _stopped_early(e.__context__.sig)
        raise
    finally:
        sigs.restore()


def _stopped_early(sig: int) -> int:
    _sayer()(f"{_signame(sig)} before the recording began: no run file written")
    return 128 + sig


def _record(args: argparse.Namespace, sigs: _Signals) -> int:
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.replay < 0:
        print("iopulse record: --replay must be >= 0", file=sys.stderr)
        return EXIT_USAGE
    targets = args.targets
    say = _sayer()
    rec = Recorder(args.output, targets, argv=sys.argv, command=cmd or None,
                   replay_s=args.replay, overwrite=args.force,
                   timeout=args.timeout or 10.0, connect_deadline=args.connect_timeout,
                   say=say, before_open=sigs.keep, stop=lambda: bool(sigs.received))
    with tempfile.TemporaryDirectory(prefix="iopulse-record-") as tmp:
        say(f"recording {len(targets)} host(s) into {args.output}: "
            + ", ".join(f"{s.info.hostname or '?'} ({s.client.target})" for s in rec.streams))
        status, rc = "ok", EXIT_OK
        exit_code: Optional[int] = None     # the command's; None: it did not run
        tool = _tool(cmd) if cmd and not args.no_detect else ""
        outer_name = args.name or (os.path.basename(cmd[0]) if cmd else "record")
        labels = dict(args.label)
        if tool == "rados-bench":
            # one rados bench run is the command: its lifetime is the phase (edges include
            # connecting to the cluster and, for writes, the cleanup: about a second)
            from ..phases.rados import labels_from_argv

            found = labels_from_argv(cmd)
            if not args.name:
                outer_name = f"rados-bench-{found.get('mode', 'unknown')}"
            labels = {**found, **labels}
        if cmd:
            labels.setdefault("command", printable(shlex.join(cmd))[:1024])
        broker: Optional[Broker] = None
        outer = rec.begin(outer_name, labels)
        try:
            if cmd:
                sock = os.path.join(tmp, "hooks.sock")
                env = dict(os.environ, IOPULSE_SESSION=rec.session,
                           IOPULSE_TARGET=rec.clients[0].target, IOPULSE_RECORD=sock)
                argv: list[str] = cmd
                phases_of: Any = _no_keys
                ends_before: Any = None
                plan = None
                if not args.no_detect and os.path.basename(cmd[0]) == "fio":
                    from ..phases import fio

                    plan = fio.plan(cmd, fio.hook_command(sys.executable, hook_script_path(),
                                                          sock), tmp)
                    env[fio.FIO_COMMENT_VAR] = "#"
                    env.update(plan.env)
                    for note in plan.notes:
                        say(note)
                    if plan.jobs:
                        argv, phases_of = plan.argv, plan.phases_of
                        ends_before = plan.ends_before
                        say(f"fio: {len(plan.jobs)} job(s) in "
                            f"{len({j.group for j in plan.jobs})} stonewall group(s) become "
                            "phases")
                # hooks, and `iopulse mark` run by the command, mark through us on every host
                broker = Broker(sock, phases_of, rec.begin, rec.end, hosts=len(rec.clients),
                                ends_before=ends_before)
                relay = None
                if not args.no_fio_json and os.path.basename(cmd[0]) == "fio":
                    argv, relay = _fio_output(argv, tmp, say)
                try:
                    exit_code, status = _run_command(argv, env, args.duration, say, sigs, relay)
                finally:
                    if relay is not None and sigs.child is not None:
                        _keep_fio_output(relay, rec, say)
                    elif relay is not None:
                        relay.finish()          # fio never ran: nothing to keep
                if exit_code is None:           # a signal came first
                    rc = 128 + sigs.received[0]
                else:
                    rc = exit_code
                    lost = rec.mark_errors
                    if plan is not None and plan.jobs and status == "ok":
                        lost += _unmarked(plan, broker, cmd, say)
                    if lost and rc == 0:
                        say(f"phases could not be marked (above): exit status {EXIT_SERVER}")
                        rc = EXIT_SERVER
                    if tool == "cbt":
                        _import_cbt(cmd, rec, say)
            else:
                status = _wait(args.duration, rec, say, sigs)
        finally:
            # a signal that comes from here on ends the wait for the last Updates
            seen = len(sigs.received)
            if broker is not None:
                broker.end_all()
                broker.close()
            end = rec.mark(outer_name, {}, end=True, begin=outer)
            rec.wait_caught_up(end, stop=lambda: len(sigs.received) > seen)
            final: dict[str, Any] = {"status": status, "exit_code": exit_code}
            if status == "interrupted" and sigs.received:
                final["signal"] = _signame(sigs.received[0])
            rec.close(final)
        empty = [st for st in rec.streams if not st.updates]
        for st in empty:
            say(f"host {st.info.hostname or st.client.target} delivered no Update"
                + (f" ({st.error})" if st.error else ""))
        if empty and rc == EXIT_OK:
            say(f"{len(empty)} of {len(rec.streams)} host(s) recorded nothing: exit status "
                f"{EXIT_SERVER}")
            rc = EXIT_SERVER
        if not cmd:
            ran = ""
        elif exit_code is None:
            ran = "; the command was not started"
        else:
            ran = f"; command exited {exit_code}"
        say(f"{args.output}: {rec.progress()}, {rec.writer.file_bytes:,} bytes{ran}")
        return rc


def _run_command(argv: list[str], env: dict[str, str], limit: Optional[float],
                 say: Any, sigs: _Signals, relay: Any = None) -> tuple[Optional[int], str]:
    """Run the command unless a signal came first; returns its exit status (None when it was
    not started because of a signal) and how the recording ended (ok, interrupted, duration,
    not started)."""
    try:
        child = sigs.start(argv, env, relay.child_stdout if relay is not None else None)
    except OSError as e:
        say(f"cannot run {argv[0]}: {e.strerror}")
        return 127 if isinstance(e, FileNotFoundError) else 126, "not started"
    if child is None:
        say(f"{_signame(sigs.received[0])}: {argv[0]} is not started")
        return None, "interrupted"
    if relay is not None:
        relay.started()
    rc = sigs.wait(limit)
    if rc is None:
        say(f"--duration reached: stopping {argv[0]} (SIGTERM)")
        child.terminate()
        rc = sigs.wait(30)
        if rc is None:
            child.kill()
            rc = sigs.wait(None)
        return _exit_status(rc), "duration"
    return _exit_status(rc), "interrupted" if sigs.received else "ok"


def _wait(limit: Optional[float], rec: Recorder, say: Any, sigs: _Signals) -> str:
    t0 = time.monotonic()
    last = t0
    while not sigs.received:
        if limit is not None and time.monotonic() - t0 >= limit:
            return "duration"
        time.sleep(0.2)
        if time.monotonic() - last >= 10:
            say(f"recording: {rec.progress()}")
            last = time.monotonic()
    return "interrupted"


def _sayer() -> Any:
    def say(msg: str) -> None:      # names and errors may hold control characters
        print(f"iopulse record: {printable(msg)}", file=sys.stderr, flush=True)
    return say

