"""The block devices a fio job drives: its filename= (and directory=) resolved to the kernel's
device names, as iopulsed names them (loop3, nvme0n1, dm-2, md0).

A path under /dev names its device (/dev/mapper/vg-lv is followed to its dm-N); any other
path is a file, and the device is the one holding it (or, for a file fio is still to make,
its directory). A partition adds the disk it is on, a dm or md device the devices below it,
a loop device the device its backing file is on (their rows carry the job's IO too). What
cannot be resolved here (a file on another host, a network file system) adds nothing: a job
phase without a `devices` label keeps every device's rows.
"""
from __future__ import annotations

import os
import stat
from typing import Optional

SYS_DEV_BLOCK = "/sys/dev/block"


def split_filenames(value: str) -> list[str]:
    """fio's filename=: several names joined by ':', a literal ':' written as '\\:'."""
    out, cur, i = [], "", 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value) and value[i + 1] == ":":
            cur += ":"
            i += 2
            continue
        if c == ":":
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    out.append(cur)
    return [x for x in out if x]


def _dev_number(path: str) -> Optional[int]:
    """st_rdev of a block device, st_dev of a file (or of its directory, for a file not made
    yet); None when neither can be read."""
    for p in (path, os.path.dirname(os.path.abspath(path)) or "/"):
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            return st.st_rdev
        return st.st_dev
    return None


def _name_of(number: int, sysfs: str) -> Optional[str]:
    real = os.path.realpath(os.path.join(sysfs, f"{os.major(number)}:{os.minor(number)}"))
    return os.path.basename(real) if os.path.exists(real) else None


def _with_stack(name: str, real: str, seen: set[str], sysfs: str) -> None:
    """name, the disk a partition is on, every device below a dm/md device, and the device
    holding a loop device's backing file."""
    if name in seen:
        return
    seen.add(name)
    if os.path.exists(os.path.join(real, "partition")):
        parent = os.path.dirname(real)
        _with_stack(os.path.basename(parent), parent, seen, sysfs)
    try:
        with open(os.path.join(real, "loop", "backing_file"), encoding="utf-8",
                  errors="replace") as f:
            backing = f.read().strip()
    except OSError:
        backing = ""
    if backing:
        _add(backing, seen, sysfs)
    slaves = os.path.join(real, "slaves")
    try:
        below = sorted(os.listdir(slaves))
    except OSError:
        return
    for b in below:
        _with_stack(b, os.path.realpath(os.path.join(slaves, b)), seen, sysfs)


def _add(path: str, seen: set[str], sysfs: str) -> None:
    """The device path is on (see the module), with its stack, into seen."""
    num = _dev_number(path)
    if num is None:
        return
    name = _name_of(num, sysfs)
    if name:
        _with_stack(name, os.path.realpath(os.path.join(
            sysfs, f"{os.major(num)}:{os.minor(num)}")), seen, sysfs)


def job_devices(opts: dict[str, str], sysfs: str = SYS_DEV_BLOCK) -> list[str]:
    """The kernel names of the devices a fio job's files are on (see the module), sorted."""
    names = split_filenames(opts.get("filename", ""))
    directory = opts.get("directory", "")
    if not names and directory:
        names = [os.path.join(directory.split(":")[0], ".")]
    seen: set[str] = set()
    for n in names:
        if "$" in n or "%" in n:
            continue            # fio expands it per job or file: not known here
        _add(n if os.path.isabs(n) or not directory else os.path.join(directory, n), seen,
             sysfs)
    return sorted(seen)
