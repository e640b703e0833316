"""The iopulse command: one module per command (info, snapshot, top, watch, mark, ...).

Exit status: 0 ok (also when the reader of our output goes away), 1 the daemon failed or
cannot be reached, 2 usage error (including a request the daemon rejected as invalid, e.g. an
unknown device name), 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from types import ModuleType
from typing import Optional

from .._version import __version__
from ..client import DEFAULT_TARGET, BadTarget, Client, parse_target
from ..errors import InvalidArgument, IopulseError
from .. import tls
from ..phases.fio import FioJobFileError
from ..record.reader import RunFileError
from ..data import MissingExtra
from . import (compare, explain, export, info, mark, phases, plot, record, report, snapshot,
               top, watch)
from .common import (ENV_TARGET, EXIT_INTERRUPTED, EXIT_OK, EXIT_SERVER, EXIT_USAGE, printable,
                     seconds, target)

COMMANDS: dict[str, ModuleType] = {m.__name__.rsplit(".", 1)[1]: m
                                   for m in (info, snapshot, top, watch, mark, record, report, compare,
                                             phases, export, plot, explain)}
MULTI_TARGET = {"record", "top", "watch", "snapshot"}   # take --target more than once

EXAMPLES = """examples:
  iopulse top                                  live per-device table from the local daemon
  iopulse top --sort qwait --target 10.0.0.5:7073
  iopulse watch --count 60 > run.jsonl         one JSON line per Update, 60 of them
  iopulse mark fill --label run=3              mark a benchmark phase (then: mark fill --end)
  iopulse snapshot --json --device sda         everything since the daemon started
  iopulse info                                 version, kernel, devices, config in effect
  iopulse record -o run1.iopulse -- fio jobs.fio   record a benchmark, its fio jobs as phases
  iopulse report run1.iopulse                  per phase, host and device (--format html|...)
  iopulse compare a1.iopulse a2.iopulse -- b1.iopulse b2.iopulse
  iopulse explain --osd 3 --last 5m --ceph     why osd.3 was slow: device, queue, flush, kv_sync

The daemon is at --target, else $IOPULSE_TARGET, else %s.
Options before the command (--target, --timeout, --connect-timeout) may also follow it.
Tables (top, snapshot, report, compare) fold to the terminal's width, or $COLUMNS; to a pipe
or file 160 columns (report 240) unless $COLUMNS is set.
Exit status: 0 ok, 1 the daemon failed or cannot be reached, 2 usage error, 130 Ctrl-C.""" % DEFAULT_TARGET


GLOBAL_DEFAULTS = {"target": None, "targets_file": None, "connect_timeout": 10.0,
                   "timeout": 10.0, "tls_ca": None, "tls_cert": None, "tls_key": None}


def _global_options() -> argparse.ArgumentParser:
    """The options every command takes, before or after its name. Their defaults are
    SUPPRESS here (a command's parser would otherwise overwrite what was given before the
    command) and filled in by parse_args()."""
    g = argparse.ArgumentParser(add_help=False)
    o = g.add_argument_group("connection (before or after the command)")
    o.add_argument("--target", type=target, action="append", default=argparse.SUPPRESS,
                   help="daemon address: unix:/PATH, unix:///PATH, /PATH or HOST:PORT "
                        f"(default: ${ENV_TARGET}, else {DEFAULT_TARGET}); record takes "
                        "several (and a comma-separated list in the variable)")
    o.add_argument("--targets-file", default=argparse.SUPPRESS, metavar="FILE",
                   help="more targets, one per line (# comments); top, watch, snapshot and "
                        "record take several")
    o.add_argument("--connect-timeout", type=seconds, default=argparse.SUPPRESS, metavar="S",
                   help="keep retrying a daemon that is starting or restarting this long "
                        "(default 10); a missing or forbidden socket fails at once")
    o.add_argument("--timeout", type=seconds, default=argparse.SUPPRESS, metavar="S",
                   help="time limit of each info, snapshot or mark call (default 10, 0: none)")
    o.add_argument("--tls-ca", default=argparse.SUPPRESS, metavar="PEM",
                   help=f"TLS to a HOST:PORT target: the CA bundle that signed the daemon's "
                        f"certificate (default ${tls.ENV_CA}; the system's CAs when only "
                        f"--tls-cert is given)")
    o.add_argument("--tls-cert", default=argparse.SUPPRESS, metavar="PEM",
                   help=f"this client's certificate, for a daemon that asks for one "
                        f"(default ${tls.ENV_CERT})")
    o.add_argument("--tls-key", default=argparse.SUPPRESS, metavar="PEM",
                   help=f"the key of --tls-cert (default ${tls.ENV_KEY})")
    return g


def parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    common = _global_options()
    p = argparse.ArgumentParser(prog="iopulse", formatter_class=fmt, epilog=EXAMPLES,
                                description="Per-device block IO telemetry from iopulsed.",
                                parents=[common])
    p.add_argument("--version", action="version", version=f"iopulse {__version__}")
    sp = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, mod in COMMANDS.items():
        s = sp.add_parser(name, help=mod.HELP, description=mod.HELP[0].upper() + mod.HELP[1:]
                          + ".", epilog=mod.EXAMPLES, formatter_class=fmt, parents=[common])
        mod.add_arguments(s)
    return p


def _command_of(argv: list[str]) -> Optional[str]:
    """The command word of argv (global options and their values skipped)."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        takes_value = argv[i] in ("--target", "--targets-file", "--connect-timeout", "--timeout")
        i += 2 if takes_value else 1
    return argv[i] if i < len(argv) else None


def _targets_from_file(p: argparse.ArgumentParser, path: str) -> list[str]:
    """Targets one per line; blank lines and # comments skipped; a bad line is a usage error
    naming the file and line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        p.error(f"--targets-file {path}: {e.strerror or e}")
    out = []
    for n, line in enumerate(lines, 1):
        t = line.split("#", 1)[0].strip()
        if not t:
            continue
        try:
            out.append(parse_target(t))
        except BadTarget as e:
            p.error(f"{path}:{n}: {t!r} is not a daemon address: {e.reason}")
    if not out:
        p.error(f"--targets-file {path}: no targets in it")
    return out


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """Parse argv; options left out take their defaults, --target from $IOPULSE_TARGET (a bad
    value there is a usage error naming the variable)."""
    p = parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    other = None
    if _command_of(argv) == "compare" and "--" in argv:
        i = argv.index("--")            # compare BASE... -- OTHER... [options]
        argv, rest = argv[:i], argv[i + 1:]
        other = []
        while rest:                     # options may follow the runs too
            a = rest.pop(0)
            if a.startswith("-") and a.split("=")[0] in compare.OPTIONS_WITH_VALUE \
                    and "=" not in a and rest:
                argv += [a, rest.pop(0)]
            elif a.startswith("-") and len(a) > 1:
                argv.append(a)
            else:
                other.append(a)
    args = p.parse_args(argv)
    if args.cmd == "compare":
        if not other:
            p.error("compare: give the base runs, then --, then the other runs")
        args.other = other
    for k, v in GLOBAL_DEFAULTS.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    if args.cmd == "mark" and not args.name and not (args.end and args.id):
        p.error("mark: give the phase's NAME (or --end --id ID)")
    if args.cmd == "mark" and args.id and not args.end:
        p.error("mark: --id names the begin that an --end closes; a begin gets its id from "
                "the daemon")
    targets = args.target
    if args.targets_file:
        targets = (targets or []) + _targets_from_file(p, args.targets_file)
    args.target_given = targets is not None
    if targets is None:
        env = os.environ.get(ENV_TARGET)
        targets = [DEFAULT_TARGET]
        if env:
            try:
                targets = [parse_target(t) for t in env.split(",") if t.strip()]
            except BadTarget as e:
                p.error(f"environment variable {ENV_TARGET}={env!r} is not a daemon address: "
                        f"{e.reason}")
    if len(targets) > 1 and args.cmd not in MULTI_TARGET:
        p.error(f"{args.cmd} takes one --target (several: {', '.join(sorted(MULTI_TARGET))})")
    if len(set(targets)) != len(targets):
        p.error("the same --target is given twice")
    args.targets = targets
    args.target = targets[0]
    # TLS files reach every client this process (and a command it runs) makes through the
    # environment, as if given there
    files = {tls.ENV_CA: args.tls_ca, tls.ENV_CERT: args.tls_cert, tls.ENV_KEY: args.tls_key}
    os.environ.update({k: v for k, v in files.items() if v})
    try:
        tls.TlsFiles.from_env()
    except tls.TlsError as e:
        p.error(str(e))
    return args


def main(argv: Optional[list[str]] = None) -> int:
    """Run the iopulse command with argv (default sys.argv[1:]); returns the exit status."""
    args = parse_args(argv)
    # Started in the background by a non-interactive shell, a process inherits SIGINT ignored
    # and Python keeps it so; `kill -INT` is still a request to stop (record passes it on).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    mod = COMMANDS[args.cmd]
    try:
        if not mod.CONNECTS:
            return int(mod.run(args))
        with Client(args.target, timeout=args.timeout or None,
                    connect_deadline=args.connect_timeout) as c:
            return int(mod.run(c, args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except RuntimeError as e:
        # Ctrl-C inside grpc's Condition.wait can surface as "cannot release un-acquired lock"
        # while the KeyboardInterrupt is handled (seen with grpcio 1.51): still an interrupt
        if isinstance(e.__context__, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        raise
    except BrokenPipeError:
        # The reader went away (iopulse watch --json | head): stop quietly, and keep Python
        # from complaining about the unflushable stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    except (InvalidArgument, RunFileError, FioJobFileError, tls.TlsError) as e:  # user input
        print(f"iopulse: {printable(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except FileExistsError as e:
        print(f"iopulse: {e.filename}: exists (--force overwrites it)", file=sys.stderr)
        return EXIT_USAGE
    except (IopulseError, MissingExtra) as e:       # the daemon, or what is installed
        print(f"iopulse: {printable(str(e))}", file=sys.stderr)
        return EXIT_SERVER
    except OSError as e:
        print(f"iopulse: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_SERVER
