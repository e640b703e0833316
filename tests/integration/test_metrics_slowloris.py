"""Slow clients cannot keep Prometheus out: 40 connections from one address and 40 from 40
addresses each send one header line every 3 s (a slowloris), while a real Prometheus scrapes
every second; its scrapes keep succeeding."""
from __future__ import annotations

import socket
import threading
import time

from test_prometheus import Prometheus, _metrics_port


def _slow_client(src: str, port: int, stop: threading.Event, held: list) -> None:
    try:
        s = socket.socket()
        s.settimeout(5)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        held.append(s)
        n = 0
        while not stop.wait(3):
            n += 1
            s.sendall(f"X-Slow-{n}: {n}\r\n".encode())
    except OSError:
        pass        # refused or closed by the server: what it should do to a slowloris


def test_scrapes_succeed_during_a_slowloris(daemon, tmp_path):
    d = daemon("-i", "1s", "--metrics", "127.0.0.1:0")
    port = _metrics_port(d)
    stop = threading.Event()
    held: list = []
    attackers = [threading.Thread(target=_slow_client, args=(src, port, stop, held),
                                  daemon=True)
                 for src in ["127.0.0.2"] * 40 + [f"127.0.0.{10 + i}" for i in range(40)]]
    prom = None
    try:
        for t in attackers:         # the slow clients first: Prometheus keeps its connection
            t.start()
        time.sleep(2)
        t0 = time.time()
        prom = Prometheus(f"127.0.0.1:{port}", str(tmp_path), native=False)
        time.sleep(15)
        t1 = time.time()
        # each scrape in the window, 1 s apart: up is 1 for a successful one, 0 for a failed
        r = prom.query(f"count_over_time(up[{int(t1 - t0)}s])", t1)
        ok = prom.query(f"sum_over_time(up[{int(t1 - t0)}s])", t1)
        scrapes, good = int(float(r[0]["value"][1])), int(float(ok[0]["value"][1]))
        print(f"\n{len(held)} slow connections accepted of {len(attackers)}; scrapes in "
              f"{t1 - t0:.0f} s: {good} of {scrapes} succeeded")
        assert scrapes >= 5 and good >= scrapes - 1, f"{good} of {scrapes} scrapes succeeded"
    finally:
        stop.set()
        for s in held:
            s.close()
        for t in attackers:
            t.join(10)
        if prom is not None:
            prom.stop()
    assert d.stop() == 0, d.describe()
