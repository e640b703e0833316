"""What a row is labelled with, as columns: a phase's labels (bs=128k iodepth=16) parsed into
typed columns of their own, and a device's class in the block stack."""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..model import DeviceInfo

_INT = re.compile(r"[+-]?[0-9]+\Z")
# a size as fio writes it: 4k, 128K, 1m, 4KiB, 1.5M; fio's default kb_base=1024 makes every
# prefix a power of 1024
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kmgtp])(?:i?b)?\Z", re.IGNORECASE)
_POWER = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(text: str) -> Optional[int]:
    """Bytes of a size as fio writes it ('4k' 4096, '1M' 1048576, '512' 512); None when the
    text is not one size (a range '4k-64k', a list '4k,8k')."""
    t = text.strip()
    if _INT.match(t):
        return int(t)
    m = _SIZE.match(t)
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** _POWER[m.group(2).lower()])


class LabelColumns:
    """The columns the labels of some phases make, the same set for every row.

    A label becomes a column of its name (or label_NAME when that name is already a column of
    the table). Its values are ints when every phase that has it gives an integer (so
    groupby('iodepth') groups 1 < 4 < 16), else text; a label any phase gives as a size with
    a unit (bs=128k) also gets NAME_bytes, the size in bytes (1024-based, as fio reads it). A
    phase without the label has None there."""

    def __init__(self, labels: Iterable[Mapping[str, str]], taken: Sequence[str]) -> None:
        values: dict[str, list[str]] = {}
        for lab in labels:
            for k, v in lab.items():
                values.setdefault(k, []).append(v)
        used = set(taken)
        self.names: dict[str, str] = {}
        self.ints: set[str] = set()
        self.sizes: dict[str, str] = {}
        for k in sorted(values):
            col = k if k not in used else "label_" + k
            while col in used:
                col = "label_" + col
            used.add(col)
            self.names[k] = col
            vs = values[k]
            if all(_INT.match(v.strip()) for v in vs):
                self.ints.add(k)
            elif any(_SIZE.match(v.strip()) for v in vs):
                b = col + "_bytes"
                while b in used:
                    b = "label_" + b
                used.add(b)
                self.sizes[k] = b

    @property
    def columns(self) -> list[str]:
        out = []
        for k, col in self.names.items():
            out.append(col)
            if k in self.sizes:
                out.append(self.sizes[k])
        return out

    def row(self, labels: Mapping[str, str]) -> dict[str, Any]:
        """One phase's values for every column (None for labels it does not have)."""
        out: dict[str, Any] = {}
        for k, col in self.names.items():
            v = labels.get(k)
            out[col] = None if v is None else (int(v) if k in self.ints else v)
            if k in self.sizes:
                out[self.sizes[k]] = None if v is None else parse_size(v)
        return out


# device classes: where a device sits in the block stack
STACKED = "stacked"     # a dm/md device (LVM, RAID): bio-based, its IO is counted on its disks
MEMBER = "member"       # a disk a dm/md device sits on: also carries that device's IO
LOOP = "loop"           # a loop device: its IO also reaches the disk that holds its file
PARTITION = "partition"
DISK = "disk"
OSD = "osd"             # the rows merging one Ceph OSD's devices


def device_class(name: str, info: Optional[DeviceInfo]) -> str:
    """The class of a device from what its agent said at the start of the run: stacked,
    member, loop, partition or disk; '' when the agent did not list it. Adding up devices
    of different classes counts an IO twice (a loop device and the disk under its file, an LV
    and its disks)."""
    if info is None:
        if name.startswith(("dm-", "md")):
            return STACKED
        return LOOP if name.startswith("loop") else ""
    if info.slaves or info.disks or info.dm_name or name.startswith(("dm-", "md")):
        return STACKED
    if info.holders:
        return MEMBER
    if name.startswith("loop"):
        return LOOP
    if info.partition:
        return PARTITION
    return DISK
