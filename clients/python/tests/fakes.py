"""A fake iopulsed for the client tests: the Telemetry service in-process, no BPF, no daemon."""
from __future__ import annotations

import threading
import time
from concurrent import futures
from typing import Any, Optional

import grpc

from iopulse._pb import iopulse_pb2 as pb
from iopulse._pb import iopulse_pb2_grpc as pb_grpc
from iopulse.histogram import Histogram

K = 5
INTERVAL_NS = 1_000_000_000
T0_REAL = 1_763_800_000_000_000_000
T0_MONO = 123_000_000_000


def hist(values: list[int], k: int = K) -> Any:
    return Histogram.from_values(k, values).to_pb()


def make_update(seq: int, first_seq: Optional[int] = None, devices: tuple[str, ...] = ("sdb",),
                with_thread: bool = True, reads: int = 0) -> Any:
    """An Update like the daemon's: per device 100 writes of 4 KiB with known latencies (and
    reads of 64 KiB, 2 ms each)."""
    first = seq if first_seq is None else first_seq
    u = pb.Update(seq=seq, first_seq=first, merged=seq - first + 1, precision=K,
                  start_realtime_ns=T0_REAL + (first - 1) * INTERVAL_NS,
                  end_realtime_ns=T0_REAL + seq * INTERVAL_NS,
                  start_monotonic_ns=T0_MONO + (first - 1) * INTERVAL_NS,
                  end_monotonic_ns=T0_MONO + seq * INTERVAL_NS)
    for n, name in enumerate(devices):
        d = u.devices.add(name=name, major=8, minor=16 * (n + 1), osd_id=3 if n == 0 else -1,
                          osd_role="block" if n == 0 else "", seek_sequential=75,
                          seek_forward=20, seek_backward=5, preflush=10, fua=2, requeues=1)
        d.write.ios, d.write.bytes = 100, 100 * 4096
        d.write.queue_wait_ns.CopyFrom(hist([20_000] * 50 + [40_000] * 49 + [5_000_000]))
        d.write.service_ns.CopyFrom(hist([100_000] * 99 + [2_000_000]))
        d.write.size_bytes.CopyFrom(hist([4096] * 100))
        if reads:
            d.read.ios, d.read.bytes = reads, reads * 65536
            d.read.service_ns.CopyFrom(hist([2_000_000] * reads))
            d.read.total_ns.CopyFrom(hist([2_100_000] * reads))
            d.read.size_bytes.CopyFrom(hist([65536] * reads))
        d.flush.ios = 10
        d.flush.service_ns.CopyFrom(hist([300_000] * 10))
        d.preflush_latency_ns.CopyFrom(hist([500_000] * 9 + [9_000_000]))
        d.seek_distance_sectors.CopyFrom(hist([0] * 75 + [1000] * 25))
    if with_thread:
        t = u.threads.add(pid=4242, tid=4250, comm="bstore_kv_sync", process="ceph-osd",
                          osd_id=3, dev_major=8, dev_minor=16, device="sdb", fdatasync=40,
                          fsync=2, flush_bios=42, latency_sum_ns=42 * 600_000)
        t.latency_ns.CopyFrom(hist([500_000] * 41 + [4_000_000]))
        t.fsync_latency.sum_ns = 500_000 + 4_000_000
        t.fsync_latency.histogram_ns.CopyFrom(hist([500_000, 4_000_000]))
        t.fdatasync_latency.sum_ns = 42 * 600_000 - t.fsync_latency.sum_ns
        t.fdatasync_latency.histogram_ns.CopyFrom(hist([500_000] * 40))
        t.sync_file_range_latency.sum_ns = 0
    u.drops.no_bio_ts = 0
    return u


class FakeTelemetry(pb_grpc.TelemetryServicer):
    """Answers like iopulsed: headers at once on Subscribe, INVALID_ARGUMENT naming the field,
    one Update per period. Records requests, marks and stream ends for the tests."""

    def __init__(self, period: float = 0.05, info_delay: float = 0.0,
                 scheduler: str = "mq-deadline", settings: bool = True,
                 devices: tuple[str, ...] = ("sdb",), reads: int = 0) -> None:
        self.period = period
        self.info_delay = info_delay
        self.scheduler = scheduler      # sdb's, in GetInfo with device_settings
        self.settings = settings        # False: answers like a daemon that reads none
        self.devices = devices          # in each Update unless the request names some
        self.reads = reads              # per device and Update
        self.requests: list[Any] = []
        self.marks: list[Any] = []
        self.streams_ended = threading.Semaphore(0)
        self.active_streams = 0
        self._lock = threading.Lock()

    def GetInfo(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        time.sleep(self.info_delay)
        i = pb.Info(version="0.1.0-test", kernel="6.1.0-test", attach_mode="tp_btf", btf=True,
                    interval_ns=INTERVAL_NS, ring_seconds=600, started_realtime_ns=T0_REAL,
                    last_seq=7, subscribers=self.active_streams, fanout_ns=800_000,
                    fanout_streams=1, config={"interval": "1s", "histogram.precision": "5"})
        i.histogram.CopyFrom(pb.HistogramLayout(precision=K, range_bits=40,
                                                buckets=(40 - K + 1) << K,
                                                max_relative_error=2.0 ** -(K + 1)))
        with self._lock:
            for n, m in enumerate(self.marks, 1):     # the begins no later end closed
                if not m.end and not any(e.end and e.name == m.name
                                         for e in self.marks[n:]):
                    i.open_phases.add(name=m.name, labels=m.labels, id=n, session="s1",
                                      realtime_ns=T0_REAL + n * 1000,
                                      monotonic_ns=T0_MONO + n * 1000)
        i.devices.add(name="sdb", major=8, minor=16, model="QEMU HARDDISK", rotational=True,
                      osd_id=3, osd_role="block", present=True)
        i.devices.add(name="dm-0", major=253, minor=0, dm_name="vg-lv", slaves=["sdb", "sdc"],
                      osd_id=-1, present=True)
        if request.device_settings and self.settings:
            i.devices[0].settings.CopyFrom(pb.DeviceSettings(
                scheduler=self.scheduler, schedulers=["none", "mq-deadline", "bfq"],
                iosched={"fifo_batch": "16", "read_expire": "500"}
                if self.scheduler == "mq-deadline" else {},
                nr_requests=64, queue_depth=32, read_ahead_kb=128, write_cache="write back",
                wbt_lat_usec=75000, max_sectors_kb=1280, nomerges=0, rotational=1,
                firmware="2.5+"))
            i.devices[1].settings.CopyFrom(pb.DeviceSettings(
                scheduler="none", schedulers=["none"], nr_requests=-1, queue_depth=-1,
                read_ahead_kb=-1, wbt_lat_usec=-1, max_sectors_kb=512, nomerges=-1,
                rotational=0))
        i.cost.CopyFrom(pb.AgentCost(bpf_stats=True, bpf_run_count=10, bpf_run_time_ns=4440,
                                     cpu_user_s=0.5, cpu_system_s=0.25, rss_bytes=25 << 20))
        return i

    def GetSnapshot(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        for name in request.devices:
            if name not in ("sdb", "sdc"):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"devices: no device named '{name}'")
        return make_update(7, 1, devices=tuple(request.devices) or ("sdb",))

    def MarkPhase(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        if not request.name:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "name: must not be empty")
        with self._lock:
            self.marks.append(request)
            n = len(self.marks)
        return pb.PhaseMark(name=request.name, labels=request.labels, end=request.end,
                            realtime_ns=T0_REAL + n * 1000, monotonic_ns=T0_MONO + n * 1000,
                            id=n)

    def Subscribe(self, request: Any, context: Any) -> Any:
        self.requests.append(request)
        if request.interval_multiple == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "interval_multiple: 0 is invalid (1 or more)")
        context.send_initial_metadata(())
        with self._lock:
            self.active_streams += 1

        def ended() -> None:
            with self._lock:
                self.active_streams -= 1
            self.streams_ended.release()

        context.add_callback(ended)
        seq, m = 0, request.interval_multiple
        while context.is_active():
            seq += m
            yield make_update(seq, seq - m + 1, devices=tuple(request.devices) or self.devices,
                              reads=self.reads)
            time.sleep(self.period)


def serve(fake: FakeTelemetry, target: str) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    pb_grpc.add_TelemetryServicer_to_server(fake, server)
    server.add_insecure_port(target)
    server.start()
    return server


def write_phase_run(path: str, hosts: list[list[Any]], phase: str = "p",
                    command: tuple[str, ...] = ("true",)) -> None:
    """A run file of one host per list of Updates (written in order), each host with one
    phase from the end of its first Update to the end of its last."""
    from iopulse.record import RunWriter
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"],
                      "command": list(command)})
        for h in range(len(hosts)):
            w.write_json({"type": "agent", "host": h, "target": f"unix:/run/h{h}.sock"})
        for h, updates in enumerate(hosts):
            for i, u in enumerate(updates):
                edge = {"realtime_ns": u.end_realtime_ns, "monotonic_ns": u.end_monotonic_ns}
                if i == 0:
                    u.phases.add(name=phase, id=1, **edge)
                if i == len(updates) - 1:
                    u.phases.add(name=phase, end=True, begin_id=1, id=2, **edge)
                w.write_update(h, u.SerializeToString())
        w.close({"type": "end", "status": "ok", "exit_code": 0})
