"""Why a unix socket cannot be reached: missing, not permitted (and which group to join), refused.

gRPC reports all of these as UNAVAILABLE with the system's words. The client asks here once a
call on a unix socket failed, to tell a permanent problem (no socket, no permission: fail at
once, with a hint) from a transient one (refused: iopulsed is starting or restarting; retry).
"""
from __future__ import annotations

import errno
import getpass
import grp
import os
import pwd
import socket
import stat
from dataclasses import dataclass
from typing import Optional

MISSING, DENIED, REFUSED, OTHER = "missing", "denied", "refused", "other"


@dataclass(frozen=True)
class Problem:
    """kind: MISSING, DENIED, REFUSED or OTHER; message: one line for a person;
    permanent: retrying cannot help (a missing socket is transient only while a daemon
    that was reached before is restarting: the caller decides that)."""
    kind: str
    message: str
    permanent: bool


def _owner(st: os.stat_result) -> tuple[str, str]:
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return user, group


def _me() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.geteuid())


def _denied(path: str, blocker: str, need: int) -> Problem:
    """Permission problem on blocker (path itself or one of its directories); need is the
    group permission bit that would let a member through (S_IWGRP or S_IXGRP)."""
    what = f"permission denied: {path}"
    try:
        st = os.stat(blocker)
    except OSError:
        return Problem(DENIED, f"{what}: run as root or as a member of the socket's group", True)
    user, group = _owner(st)
    where = "" if blocker == path else f" (directory {blocker})"
    mode = stat.filemode(st.st_mode)
    if st.st_mode & need:
        hint = (f"add yourself to group {group} (usermod -aG {group} {_me()}, then log in "
                "again)")
    else:
        hint = (f"only {user} may use it; set server.socket_group and server.socket_mode in "
                "iopulsed's config to let a group in")
    return Problem(DENIED, f"{what}{where} is {mode} {user}:{group}: {hint}", True)


def _first_blocker(path: str) -> tuple[str, int]:
    """The first directory on the way to path that we may not search, else path itself."""
    d = "/"
    for part in os.path.dirname(path).strip("/").split("/"):
        if not part:
            continue
        d = os.path.join(d, part)
        if os.path.isdir(d) and not os.access(d, os.X_OK):
            return d, stat.S_IXGRP
    return path, stat.S_IWGRP


def check(path: str, timeout: float = 1.0) -> Optional[Problem]:
    """Connect to the unix socket at path once; None if that works, else what is wrong."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        d = os.path.dirname(path) or "/"
        extra = "" if os.path.isdir(d) else f" (no directory {d})"
        return Problem(MISSING, f"no such socket: {path}{extra}: is iopulsed running?", True)
    except PermissionError:
        blocker, need = _first_blocker(path)
        return _denied(path, blocker, need)
    except OSError as e:
        return Problem(OTHER, f"{path}: {e.strerror}", True)
    if not stat.S_ISSOCK(st.st_mode):
        return Problem(OTHER, f"{path} is not a socket ({stat.filemode(st.st_mode)}): is "
                       "that the right --target?", True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        return None
    except PermissionError:
        blocker, need = _first_blocker(path)
        return _denied(path, blocker, need)
    except ConnectionRefusedError:
        return Problem(REFUSED, f"connection refused: {path} (nothing listens on it: "
                       "iopulsed is starting, restarting or has died)", False)
    except FileNotFoundError:
        return Problem(MISSING, f"no such socket: {path}: is iopulsed running?", True)
    except OSError as e:
        transient = e.errno in (errno.EAGAIN, errno.ETIMEDOUT) or isinstance(e, socket.timeout)
        return Problem(OTHER, f"{path}: {e.strerror or e}", not transient)
    finally:
        s.close()
