"""iopulse: the Python client of iopulsed, per-device block IO telemetry over gRPC.

    import iopulse
    with iopulse.Client() as c:                       # unix:/run/iopulse/iopulse.sock
        with c.mark_phase("fill", run="3"):
            ...
        for update in c.subscribe(devices=["sda"]):
            print(update.devices["sda"].ops["write"].service_ns.percentile(99))
"""
from .client import DEFAULT_TARGET, Client, Phase, Subscription
from .errors import Cancelled, DeadlineExceeded, InvalidArgument, IopulseError, Unavailable
from .histogram import Histogram
from .model import (AgentCost, DeviceInfo, DeviceStats, HistogramLayout, Info, OpStats,
                    PhaseMark, ThreadSync, Update)

__version__ = "0.1.0"

__all__ = ["Client", "Subscription", "Phase", "DEFAULT_TARGET", "Histogram", "Update",
           "DeviceStats", "OpStats", "ThreadSync", "PhaseMark", "Info", "DeviceInfo",
           "HistogramLayout", "AgentCost", "IopulseError", "Unavailable", "InvalidArgument",
           "DeadlineExceeded", "Cancelled"]
