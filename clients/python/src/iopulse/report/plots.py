"""Plots of a run (matplotlib, the report extra): latency heatmaps over time with phase bands,
per-phase latency CDFs, seek distance per phase, sync calls per thread, IOPS and MB/s."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ..data import require
from ..histogram import Histogram, bucket_mid
from ..phases.model import Phase
from ..record.reader import Run
from .metrics import ALL_OPS, DATA_OPS, LATENCY_OPS, PhaseAgg, aggregate

HEAT_ROWS = 54                   # log-spaced latency rows, 100 ns .. 100 s (6 per decade),
HEAT_LO, HEAT_HI = 1e2, 1e11     # cropped to the rows a device used
MAX_DEVICES = 8                  # busiest devices plotted
MAX_THREADS = 8


@dataclass
class Series:
    """What the plots need, gathered in one pass over the run."""
    t0: int = 0
    times: dict[tuple[int, str], list[float]] = field(default_factory=dict)   # (host, dev)
    iops: dict[tuple[int, str], list[float]] = field(default_factory=dict)
    mbps: dict[tuple[int, str], list[float]] = field(default_factory=dict)
    heat: dict[tuple[int, str, str], list[list[int]]] = field(default_factory=dict)
    ios: dict[tuple[int, str], int] = field(default_factory=dict)
    thread_t: dict[tuple[int, str, int], list[float]] = field(default_factory=dict)
    thread_rate: dict[tuple[int, str, int], list[float]] = field(default_factory=dict)
    thread_calls: dict[tuple[int, str, int], int] = field(default_factory=dict)


def _row(ns: float) -> int:
    r = int((math.log10(max(ns, HEAT_LO)) - math.log10(HEAT_LO)) /
            (math.log10(HEAT_HI) - math.log10(HEAT_LO)) * HEAT_ROWS)
    return min(HEAT_ROWS - 1, max(0, r))


def gather(run: Run) -> Series:
    s = Series()
    starts = [h.windows[0].start_realtime_ns for h in run.hosts if h.windows]
    s.t0 = min(starts) if starts else 0
    for host, u in run.iter_updates():
        secs = (u.end_monotonic_ns - u.start_monotonic_ns) / 1e9 or 1.0
        t = (u.end_realtime_ns - s.t0) / 1e9
        k = u.precision
        for d in u.devices:
            key = (host, d.name)
            ios = sum(getattr(d, op).ios for op in DATA_OPS)
            s.times.setdefault(key, []).append(t)
            s.iops.setdefault(key, []).append(ios / secs)
            s.mbps.setdefault(key, []).append(sum(getattr(d, op).bytes for op in DATA_OPS)
                                              / 1e6 / secs)
            s.ios[key] = s.ios.get(key, 0) + ios
            for what, attr in (("queue wait", "queue_wait_ns"), ("service", "service_ns")):
                col = [0] * HEAT_ROWS
                for op in LATENCY_OPS:
                    h = getattr(getattr(d, op), attr)
                    for i, c in zip(h.index, h.count):
                        col[_row(bucket_mid(i, h.precision or k))] += c
                s.heat.setdefault((host, d.name, what), []).append(col)
        for th in u.threads:
            calls = th.fsync + th.fdatasync + th.sync_file_range
            key2 = (host, th.comm, th.tid)
            s.thread_t.setdefault(key2, []).append(t)
            s.thread_rate.setdefault(key2, []).append(calls / secs)
            s.thread_calls[key2] = s.thread_calls.get(key2, 0) + calls
    return s


def _plt() -> Any:
    mpl = require("matplotlib", "plots")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bands(ax: Any, run: Run, phases: list[Phase], t0: int, label: bool = True) -> None:
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    leaves = [p for p in phases if p.depth == max((q.depth for q in phases), default=0)] \
        or phases
    for n, p in enumerate(leaves):
        a, b = (p.start_real_ns - t0) / 1e9, (p.end_real_ns - t0) / 1e9
        ax.axvspan(a, b, color=colours[n % len(colours)], alpha=0.12, lw=0)
        if label:
            ax.text((a + b) / 2, 1.0, p.name, transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, clip_on=False)


def _busiest(s: Series, n: int) -> list[tuple[int, str]]:
    return [k for k, v in sorted(s.ios.items(), key=lambda kv: -kv[1]) if v][:n]


def _name(run: Run, host: int, dev: str) -> str:
    return dev if len(run.hosts) == 1 else f"{run.hosts[host].name}:{dev}"


def plot_all(run: Run, out_dir: str, fmt: str = "png") -> list[str]:
    """Write every plot into out_dir as fmt (png or svg); returns the paths. Names (phases,
    devices, threads) are drawn as text: '$' never starts mathtext, nothing goes to TeX."""
    plt = _plt()
    rc = {"text.usetex": False}
    if "text.parse_math" in plt.rcParams:       # matplotlib >= 3.5
        rc["text.parse_math"] = False
    with plt.rc_context(rc):
        return _plot_all(plt, run, out_dir, fmt)


def _plot_all(plt: Any, run: Run, out_dir: str, fmt: str) -> list[str]:
    np = require("numpy", "plots")
    phases = run.phases()
    s = gather(run)
    devs = _busiest(s, MAX_DEVICES)
    os.makedirs(out_dir, exist_ok=True)
    paths: list[str] = []

    def save(fig: Any, name: str) -> None:
        p = os.path.join(out_dir, f"{name}.{fmt}")
        fig.savefig(p, dpi=90, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)

    # IOPS and MB/s over time
    if devs:
        fig, axes = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
        for key in devs:
            axes[0].plot(s.times[key], s.iops[key], label=_name(run, *key), lw=1.2)
            axes[1].plot(s.times[key], s.mbps[key], lw=1.2)
        axes[0].set_ylabel("IOPS")
        axes[1].set_ylabel("MB/s")
        axes[1].set_xlabel("seconds since the run started")
        axes[0].legend(fontsize=8, loc="upper right")
        for ax in axes:
            _bands(ax, run, phases, s.t0, label=ax is axes[0])
            ax.grid(alpha=0.3)
        axes[0].set_title("IOPS and MB/s over time", pad=16)
        save(fig, "throughput")
    # latency heatmaps
    edges = np.logspace(math.log10(HEAT_LO), math.log10(HEAT_HI), HEAT_ROWS + 1)
    for key in devs:
        host, dev = key
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
        used: list[int] = []
        for ax, what in zip(axes, ("queue wait", "service")):
            cols = s.heat.get((host, dev, what), [])
            t = s.times[key]
            if not cols:
                continue
            z = np.array(cols, dtype=float).T
            z[z == 0] = np.nan
            xs = np.array([0.0] + t) if len(t) else np.array([0.0, 1.0])
            xs[0] = t[0] - (t[1] - t[0] if len(t) > 1 else 1.0)
            m = ax.pcolormesh(xs, edges, z, shading="flat", cmap="viridis")
            ax.set_yscale("log")
            used += [r for col in cols for r, c in enumerate(col) if c]
            ax.set_title(f"{_name(run, host, dev)}: {what}", pad=16)
            ax.set_xlabel("seconds since the run started")
            _bands(ax, run, phases, s.t0)
            fig.colorbar(m, ax=ax, label="IOs per interval")
        if used:        # the latencies this device saw, not 100 ns .. 100 s
            axes[0].set_ylim(edges[max(0, min(used) - 1)], edges[min(HEAT_ROWS, max(used) + 2)])
        axes[0].set_ylabel("latency (ns, log)")
        save(fig, f"heatmap-{host}-{dev}")
    # per-phase latency CDFs and seek distance per phase, per device
    aggs = aggregate(run, phases)
    for key in devs:
        host, dev = key
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
        for n, p in enumerate(phases):
            pa: Optional[PhaseAgg] = aggs.get((n, host))
            a = pa.devices.get(dev) if pa else None
            if a is None:
                continue
            tot: Optional[Histogram] = a.hist("total")
            if tot is not None:
                pts = tot.cdf()
                axes[0].plot([v for v, _ in pts], [c for _, c in pts], label=p.name, lw=1.2)
            seek = a.hist("seek")
            if seek is not None:
                xs = [max(1, bucket_mid(i, seek.precision)) for i, _ in seek.buckets()]
                axes[1].hist(xs, bins=np.logspace(0, 12, 49),
                             weights=[c for _, c in seek.buckets()], histtype="step",
                             label=p.name, lw=1.2)
        axes[0].set_xscale("log")
        axes[0].set_xlabel("total latency (ns, log)")
        axes[0].set_ylabel("fraction of IOs")
        axes[0].set_title(f"{_name(run, host, dev)}: latency CDF per phase")
        axes[1].set_xscale("log")
        axes[1].set_xlabel("seek distance (sectors, log; 0 counted as 1)")
        axes[1].set_ylabel("dispatches")
        axes[1].set_title(f"{_name(run, host, dev)}: seek distance per phase")
        for ax in axes:
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        save(fig, f"phases-{host}-{dev}")
    # sync calls per thread over time
    thr = [k for k, v in sorted(s.thread_calls.items(), key=lambda kv: -kv[1]) if v]
    if thr:
        fig, ax = plt.subplots(figsize=(10, 3.8))
        for key in thr[:MAX_THREADS]:
            host, comm, tid = key
            ax.plot(s.thread_t[key], s.thread_rate[key], lw=1.2,
                    label=f"{comm}/{tid}" + (f" on {run.hosts[host].name}"
                                             if len(run.hosts) > 1 else ""))
        ax.set_ylabel("sync calls/s")
        ax.set_xlabel("seconds since the run started")
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(alpha=0.3)
        _bands(ax, run, phases, s.t0)
        ax.set_title("fsync/fdatasync/sync_file_range per thread", pad=16)
        save(fig, "sync-threads")
    return paths


__all__ = ["plot_all", "gather", "ALL_OPS"]
