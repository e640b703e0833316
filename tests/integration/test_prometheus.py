"""A real Prometheus (Debian's package) scrapes a real iopulsed every second while fio runs on a
loop device: the read counter it stored moves by exactly the /proc/diskstats delta, and the
p99 it computes from the exported buckets lands in the same exported bucket as the daemon's
own p99 for the same IOs. The text itself passes promtool and both of prometheus_client's
parsers."""
from __future__ import annotations

import json
import re
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from grpc_testlib import iopulse, logged_port
from iopulse_testlib import TIMED_GOAL, run_fio, wait_idle
from kernel_truth import CompletionDelivery, assert_timed

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, accept: str = "") -> tuple[str, str]:
    """Content type and body (binary bodies decoded with replacement: only text is read)."""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers.get("Content-Type", ""), r.read().decode(errors="replace")


def _metrics_port(d) -> int:
    return logged_port(d, r"serving Prometheus metrics on \S+ \(port (\d+)\)", 10)


class Prometheus:
    def __init__(self, target: str, workdir: str, native: bool, interval: str = "1s"):
        self.port = _free_port()
        cfg = os.path.join(workdir, "prometheus.yml")
        timeout = "900ms" if interval == "1s" else "10s"
        with open(cfg, "w") as f:
            f.write(f"global: {{scrape_interval: {interval}, scrape_timeout: {timeout}}}\n"
                    "scrape_configs:\n  - job_name: iopulse\n"
                    f"    static_configs: [{{targets: ['{target}']}}]\n")
        self.log = open(os.path.join(workdir, "prometheus.log"), "wb")
        argv = [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={workdir}/data",
                f"--web.listen-address=127.0.0.1:{self.port}"]
        if native:      # then it asks for the protobuf exposition and keeps native histograms
            argv.append("--enable-feature=native-histograms")
        print("+ " + " ".join(argv))
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                if "Ready" in _get(f"http://127.0.0.1:{self.port}/-/ready")[1]:
                    break
            except OSError:
                pass
            assert self.proc.poll() is None, "prometheus exited"
            assert time.monotonic() < deadline, "prometheus not ready in 60 s"
            time.sleep(0.2)

    def query(self, q: str, at: float) -> list[dict]:
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": q, "time": f"{at:.3f}"}))
        body = json.loads(_get(url)[1])
        assert body["status"] == "success", body
        return body["data"]["result"]

    def scraped_after(self, t: float) -> bool:
        """A successful scrape (up == 1) stamped after t."""
        r = self.query('timestamp(up{job="iopulse"} == 1)', time.time())
        return bool(r) and float(r[0]["value"][1]) > t

    def wait_scrape_after(self, t: float, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not self.scraped_after(t):
            assert time.monotonic() < deadline, "no successful scrape"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def prometheus():
    started = []
    work = tempfile.mkdtemp(prefix="iopulse-prom-")

    def start(target: str, native: bool = False) -> Prometheus:
        p = Prometheus(target, tempfile.mkdtemp(dir=work), native)
        started.append(p)
        return p
    try:
        yield start
    finally:
        for p in started:
            p.stop()
        shutil.rmtree(work, ignore_errors=True)


def _bucket_of(v: float, p: int) -> tuple[float, float]:
    """The exported bucket (lower, upper] in seconds that holds v seconds at precision p."""
    ns = int(round(v * 1e9))
    i = iopulse.Histogram.bucket_index(ns, p)
    return (iopulse.Histogram.bucket_lower(i, p) - 1) / 1e9, iopulse.Histogram.bucket_upper(i, p) / 1e9


def _snapshot_caught_up(d, dev: str, reads: int, timeout: float = 20):
    """The daemon's snapshot once its read count since start has reached `reads` (diskstats'
    delta over the same span) and one more interval has closed. A completion the kernel never
    reported is counted once the device has been idle for an interval (README), so the count
    may trail diskstats by that long; on a loaded machine, by longer."""
    deadline = time.monotonic() + timeout
    with iopulse.Client(f"unix:{d.socket}") as c:
        while True:
            time.sleep(1.2)
            snap = c.snapshot(devices=[dev])
            got = snap.devices[dev].ops["read"].ios if dev in snap.devices else 0
            if got >= reads or time.monotonic() > deadline:
                return snap


def test_prometheus_scrapes_exact_counts_and_buckets(loopdev, daemon, prometheus):
    lo = loopdev("256M")
    start = wait_idle(lo.name)
    d = daemon("-i", "1s", "--devices", lo.name, "--metrics", "127.0.0.1:0")
    port = _metrics_port(d)
    # warm-up IO: the device's series exist before the measured window
    run_fio(name="iop-warm", filename=lo.path, rw="randread", bs="4k", size="4M", direct=1,
            ioengine="psync", number_ios=64)
    time.sleep(1.5)
    prom = prometheus(f"127.0.0.1:{port}")
    p = 2       # metrics.precision default

    before = wait_idle(lo.name)
    # every warm-up read counted (and its interval closed) before the first scrape
    snap0 = _snapshot_caught_up(d, lo.name, before.reads - start.reads)
    t0 = time.time()
    prom.wait_scrape_after(t0 + 0.1)
    t1 = time.time()
    # the sample a query at t1 finds may come from a scrape that began just before t1; the
    # daemon may answer it later (seen under ASan on a busy machine, with IO of the run in
    # it). Scrapes of one target run one after another, so once one stamped after t1 has
    # succeeded, every scrape stamped before t1 was answered while the device was idle.
    prom.wait_scrape_after(t1 + 0.1)
    with CompletionDelivery(d.pid) as kd:
        run_fio(name="iop-prom", filename=lo.path, rw="randread", bs="4k", size="256M",
                direct=1, ioengine="libaio", iodepth=8, runtime="6s", time_based=True)
        after = wait_idle(lo.name)
    truth = after.reads - before.reads
    snap1 = _snapshot_caught_up(d, lo.name, after.reads - start.reads)
    t2 = time.time()
    prom.wait_scrape_after(t2 + 0.1)
    t3 = time.time()

    sel = f'device="{lo.name}",op="read"'
    v1 = prom.query(f"iopulse_device_ios_total{{{sel}}}", t1)
    v3 = prom.query(f"iopulse_device_ios_total{{{sel}}}", t3)
    assert v1 and v3, (v1, v3)
    got = int(float(v3[0]["value"][1])) - int(float(v1[0]["value"][1]))
    inc = prom.query(f"increase(iopulse_device_ios_total{{{sel}}}[{int(t3 - t1) + 1}s])", t3)
    print(f"\n{lo.name}: Prometheus read counter moved {got}; /proc/diskstats {truth}; "
          f"increase() over the window {inc[0]['value'][1] if inc else None} (extrapolated)")
    assert got == truth > 1000

    # p99 of service time: Prometheus from the bucket deltas, the daemon from its own buckets
    # the two scrapes the counter came from (@ pins each selector to one instant)
    q = (f"histogram_quantile(0.99, sum by (le) (iopulse_device_service_seconds_bucket{{{sel}}}"
         f" @ {t3:.3f} - iopulse_device_service_seconds_bucket{{{sel}}} @ {t1:.3f}))")
    prom_p99 = float(prom.query(q, t3)[0]["value"][1])
    h0 = snap0.devices[lo.name].ops["read"].service_ns
    h1 = snap1.devices[lo.name].ops["read"].service_ns
    delta = iopulse.Histogram(h1.precision, [i for i, _ in h1.buckets()],
                              [c - dict(h0.buckets()).get(i, 0) for i, c in h1.buckets()])
    own_p99 = delta.percentile(99) / 1e9
    lo_edge, hi_edge = _bucket_of(own_p99, p)
    o0, o1 = snap0.devices[lo.name].ops["read"], snap1.devices[lo.name].ops["read"]
    ios, unseen, untimed = (o1.ios - o0.ios, o1.completion_unseen - o0.completion_unseen,
                            o1.untimed - o0.untimed)
    print(f"service p99: Prometheus {prom_p99 * 1e6:.1f} us, iopulsed {own_p99 * 1e6:.1f} us "
          f"({delta.count} timed of {truth} reads, {unseen} unseen, {untimed} untimed); "
          f"exported bucket ({lo_edge * 1e6:.3f}, {hi_edge * 1e6:.3f}] us")
    # what the README promises: every read counted, each one timed or counted as unseen (at
    # most as many as the kernel ran no completion program for) or untimed, and at least
    # 99.95% of those whose completion reached the programs timed
    print(f"kernel: {kd.result.describe()}")
    assert ios == truth, f"snapshot reads {ios} != diskstats {truth}"
    assert delta.count + unseen + untimed == truth, \
        f"{delta.count} timed + {unseen} unseen + {untimed} untimed != {truth} reads"
    assert_timed(delta.count, truth, unseen, kd.result, TIMED_GOAL, "reads")
    # both lie in the exported bucket holding the true p99: Prometheus interpolates inside it,
    # the daemon's finer bucket is nested in it
    assert lo_edge <= prom_p99 <= hi_edge

    # the text passes promtool's lint and both parsers
    ctype, text = _get(f"http://127.0.0.1:{port}/metrics")
    assert ctype.startswith("text/plain; version=0.0.4")
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)
    assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), \
        lint.stdout + lint.stderr
    # every named cause of an IO without a latency sample is exported, the kernel's skips too
    for kind in ("inflight_full", "no_bio_ts", "program_skips", "completed_at_accounting"):
        assert re.search(r'^iopulse_drops_total\{[^}]*kind="%s"\} \d+' % kind, text, re.M), kind
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
    from prometheus_client.parser import text_string_to_metric_families as prom_parse
    fams = {f.name: f for f in prom_parse(text)}
    ctype, om = _get(f"http://127.0.0.1:{port}/metrics",
                     "application/openmetrics-text; version=1.0.0")
    assert ctype.startswith("application/openmetrics-text; version=1.0.0")
    om_fams = {f.name: f for f in om_parse(om)}
    print(f"{len(fams)} families, {sum(len(f.samples) for f in fams.values())} samples (text); "
          f"{len(om_fams)} families (OpenMetrics)")
    assert "iopulse_device_service_seconds" in fams and "iopulse_device_ios" in om_fams
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_native_histograms_over_protobuf(loopdev, daemon, prometheus):
    """Prometheus with native histograms asks for the protobuf exposition and gets native
    buckets (schema 4): the sample count equals the daemon's, and the p99 it computes is
    within the stated bound of the daemon's own: one native bucket of interpolation and one of
    reassignment (2^(2/16) - 1 = 9.05%) plus the daemon's 2^-6 (1.56%)."""
    lo = loopdev("256M")
    wait_idle(lo.name)
    d = daemon("-i", "1s", "--devices", lo.name, "--metrics", "127.0.0.1:0")
    port = _metrics_port(d)
    ctype, body = _get(f"http://127.0.0.1:{port}/metrics",
                       "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                       "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3")
    assert ctype.startswith("application/vnd.google.protobuf; proto=io.prometheus.client."
                            "MetricFamily; encoding=delimited"), ctype
    prom = prometheus(f"127.0.0.1:{port}", native=True)
    run_fio(name="iop-native", filename=lo.path, rw="randread", bs="4k", size="256M", direct=1,
            ioengine="libaio", iodepth=4, runtime="4s", time_based=True)
    wait_idle(lo.name)
    time.sleep(1.2)
    with iopulse.Client(f"unix:{d.socket}") as c:
        snap = c.snapshot(devices=[lo.name])
    sel = f'device="{lo.name}",op="read"'
    h = snap.devices[lo.name].ops["read"].service_ns

    def scraped_count() -> tuple[float, list[dict]]:
        t = time.time()
        prom.wait_scrape_after(t + 0.1)
        at = time.time()
        return at, prom.query(f"histogram_count(iopulse_device_service_seconds{{{sel}}})", at)

    at, count = scraped_count()
    if count and int(float(count[0]["value"][1])) != h.count:
        # once in a busy run of the suite (Prometheus 2.42) a query after a later scrape
        # found 1,423 fewer than the snapshot taken before it: shown, and asked once more
        # after the next scrape, with the daemon's count again, before the count is held
        with iopulse.Client(f"unix:{d.socket}") as c:
            again = c.snapshot(devices=[lo.name]).devices[lo.name].ops["read"].service_ns
        print(f"\nPrometheus count {count[0]['value'][1]} at {at:.3f}, daemon {h.count} "
              f"before and {again.count} now; asking after the next scrape")
        at, count = scraped_count()
    q = prom.query(f"histogram_quantile(0.99, iopulse_device_service_seconds{{{sel}}})", at)
    classic = prom.query(f"count(iopulse_device_service_seconds_bucket{{{sel}}})", at)
    own = h.percentile(99) / 1e9
    got = float(q[0]["value"][1])
    bound = 2 ** (2 / 16) - 1 + 2 ** -6
    print(f"\nnative: count {count[0]['value'][1]} (daemon {h.count}); p99 Prometheus "
          f"{got * 1e6:.2f} us, iopulsed {own * 1e6:.2f} us, off {abs(got / own - 1) * 100:.2f}% "
          f"(bound {bound * 100:.2f}%); classic bucket series stored: {classic}")
    assert int(float(count[0]["value"][1])) == h.count > 1000
    assert abs(got / own - 1) <= bound
    assert d.stop(signal.SIGTERM) == 0, d.describe()
