"""What each host's devices were set to when a recording began (iopulse.record.Run.settings).

`iopulse record` asks every daemon for GetInfo with device_settings when it starts and stores
the answer as the host's Info record; the daemon reads each device's queue settings from sysfs
then (scheduler and its tunables, nr_requests, queue_depth, read_ahead_kb, rotational, write
cache, wbt_lat_usec, max_sectors_kb, nomerges, firmware; the model and the kernel release come
with the Info). A daemon that does not read them (an earlier build) answers without: the host
then has no settings in the run, which record says when it starts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..model import DeviceSettings, Info


@dataclass
class HostSettings:
    """One host's settings at the start of the recording."""
    host: str                       # the host's name in the run (Host.name)
    hostname: str
    kernel: str                     # uname release
    daemon_version: str
    devices: dict[str, DeviceSettings] = field(default_factory=dict)   # by kernel name

    @classmethod
    def from_info(cls, host: str, info: Info) -> Optional["HostSettings"]:
        """None when the Info holds no device settings."""
        devices = {d.name: d.settings for d in info.devices if d.settings is not None}
        if not devices:
            return None
        return cls(host, info.hostname, info.kernel, info.version, dict(sorted(devices.items())))

    def flat(self) -> dict[str, str]:
        """kernel, and DEVICE.KEY for every device's settings (DeviceSettings.flat)."""
        out = {"kernel": self.kernel}
        for name, s in self.devices.items():
            out.update({f"{name}.{k}": v for k, v in s.flat().items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "hostname": self.hostname, "kernel": self.kernel,
                "daemon_version": self.daemon_version,
                "devices": {n: s.to_dict() for n, s in self.devices.items()}}


def settings_changes(a: HostSettings, b: HostSettings,
                     devices: Optional[list[str]] = None) -> list[tuple[str, str, str]]:
    """(key, value in a, value in b) for every setting that differs, devices (if given) only;
    a setting one side lacks is "" there. Keys as in HostSettings.flat: kernel,
    loop3.scheduler, loop3.iosched.fifo_batch, ..."""
    fa, fb = a.flat(), b.flat()
    keep = None if devices is None else set(devices)
    out = []
    for k in sorted(set(fa) | set(fb)):
        if keep is not None and k != "kernel" and k.split(".", 1)[0] not in keep:
            continue
        if fa.get(k) != fb.get(k):
            out.append((k, fa.get(k, ""), fb.get(k, "")))
    return out
