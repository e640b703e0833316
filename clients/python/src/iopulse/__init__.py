"""iopulse: the Python client of iopulsed, per-device block IO telemetry over gRPC.

    import iopulse
    with iopulse.Client() as c:                       # unix:/run/iopulse/iopulse.sock
        with c.mark_phase("fill", run="3"):
            ...
        for update in c.subscribe(devices=["sda"]):
            print(update.devices["sda"].ops["write"].service_ns.percentile(99))
"""
from .client import DEFAULT_TARGET, Client, Phase, RetryPolicy, Subscription, parse_target
from .errors import (Cancelled, DeadlineExceeded, InvalidArgument, IopulseError, NotFound,
                     PermissionDenied, ResourceExhausted, Unavailable)
from .tls import TlsError, TlsFiles
from .data import Frames, load
from .histogram import Histogram
from .model import (AgentCost, DeviceInfo, DeviceStats, Drops, HistogramLayout, Info, OpStats,
                    PhaseMark, ServerLimits, SyncLatency, ThreadSync, Update)

from ._version import __version__

__all__ = ["Client", "Subscription", "Phase", "RetryPolicy", "DEFAULT_TARGET", "parse_target",
           "Histogram", "Update", "DeviceStats", "OpStats", "ThreadSync", "SyncLatency", "PhaseMark", "Drops",
           "Info", "ServerLimits", "DeviceInfo", "HistogramLayout", "AgentCost", "IopulseError", "Unavailable",
           "InvalidArgument", "NotFound", "PermissionDenied", "TlsFiles", "TlsError", "load", "Frames", "ResourceExhausted", "DeadlineExceeded", "Cancelled",
           "__version__"]
