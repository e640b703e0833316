"""Slow clients cannot keep Prometheus out. Slowloris connections (a header line every 2 s,
opened again as soon as the server shuts them) held from the scraper's own address, 8 of them
(the per-address cap), and 520 from 70 other loopback addresses (beyond the 512 in all), while
a real Prometheus scrapes every 12 s (its keep-alive connection is closed after 10 s idle, so
every scrape comes on a new connection into a full server) and curl asks from the scraper's
address: every scrape and every curl gets through."""
from __future__ import annotations

import resource
import socket
import subprocess
import threading
import time

from test_prometheus import Prometheus, _metrics_port

INTERVAL_S = 12


def _slow_client(src: str, port: int, stop: threading.Event, counts: dict) -> None:
    """One slowloris connection from src, opened again whenever the server shuts it."""
    while not stop.is_set():
        try:
            with socket.socket() as s:
                s.settimeout(5)
                s.bind((src, 0))
                s.connect(("127.0.0.1", port))
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                counts["opened"] += 1
                n = 0
                while not stop.wait(2):
                    n += 1
                    s.sendall(f"X-Slow-{n}: {n}\r\n".encode())
        except OSError:
            counts["shut"] += 1
            stop.wait(0.5)


def test_scrapes_succeed_during_a_slowloris(daemon, tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    d = daemon("-i", "1s", "--metrics", "127.0.0.1:0")
    port = _metrics_port(d)
    stop = threading.Event()
    counts = {"opened": 0, "shut": 0}
    sources = ["127.0.0.1"] * 8 + [f"127.0.1.{1 + i % 70}" for i in range(520)]
    attackers = [threading.Thread(target=_slow_client, args=(src, port, stop, counts),
                                  daemon=True) for src in sources]
    prom = None
    curls = []
    try:
        for t in attackers:
            t.start()
        time.sleep(3)
        t0 = time.time()
        prom = Prometheus(f"127.0.0.1:{port}", str(tmp_path), native=False,
                          interval=f"{INTERVAL_S}s")
        deadline = time.monotonic() + 3 * INTERVAL_S + 10
        while time.monotonic() < deadline:
            r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                "--max-time", "5", f"http://127.0.0.1:{port}/metrics"],
                               capture_output=True, text=True)
            curls.append(r.stdout.strip() or r.stderr.strip())
            time.sleep(INTERVAL_S / 2)
        t1 = time.time()
        r = prom.query(f"count_over_time(up[{int(t1 - t0)}s])", t1)
        ok = prom.query(f"sum_over_time(up[{int(t1 - t0)}s])", t1)
        scrapes, good = int(float(r[0]["value"][1])), int(float(ok[0]["value"][1]))
        print(f"\n{len(attackers)} slowloris connections, opened {counts['opened']} times "
              f"(shut {counts['shut']} times); Prometheus every {INTERVAL_S} s: {good} of "
              f"{scrapes} scrapes succeeded; curl: {curls}")
        assert scrapes >= 3 and good == scrapes, f"{good} of {scrapes} scrapes succeeded"
        assert curls and all(c == "200" for c in curls), curls
        # the server did shut slowloris connections (not merely outlast them)
        assert counts["shut"] > 0
    finally:
        stop.set()
        for t in attackers:
            t.join(10)
        if prom is not None:
            prom.stop()
    assert "metrics.listen:" in d.stderr_text()
    assert d.stop() == 0, d.describe()
