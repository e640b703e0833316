"""A peer without a certificate cannot take the gRPC TCP listener from clients with one: idle
connections beyond the descriptor limit (gRPC core 1.51 stops accepting on a port for good
after one accept4 fails with EMFILE), connections held from one address, and the daemon's own
work (the device scan) keeps its descriptors. The daemon runs under Debian's default soft
limit, made hard (prlimit --nofile=1024:1024), so that it cannot raise it."""
from __future__ import annotations

import os
import resource
import signal
import socket
import time

from grpc_testlib import iopulse, tcp_port
from test_tls import pki, tls  # noqa: F401 (a fixture)

ATTACK = 1100           # more than the daemon's 1,024 descriptors


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def info_ok(target: str, files, deadline: float = 10.0) -> float:
    """Seconds a client with a certificate took to get Info (raises if it could not)."""
    t = time.monotonic()
    with iopulse.Client(target, tls=files, connect_deadline=deadline, timeout=deadline) as c:
        assert c.info().version
    return time.monotonic() - t


def test_idle_connections_do_not_shut_the_tcp_listener(daemon, pki, tmp_path):  # noqa: F811
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    cfg = tmp_path / "tls.yaml"
    cfg.write_text(f"""interval: 1s
server:
  tcp: "127.0.0.1:0"
  tls_cert: {pki / "server.pem"}
  tls_key: {pki / "server.key"}
  tls_client_ca: {pki / "ca.pem"}
""")
    d = daemon(config=str(cfg), prefix=("prlimit", "--nofile=1024:1024"))
    port = tcp_port(d, timeout=30)
    target = f"127.0.0.1:{port}"
    files = tls(pki, "reader")
    info_ok(target, files)
    rss0 = rss_kib(d.pid)
    held: list[socket.socket] = []
    try:
        t0 = time.monotonic()
        for _ in range(ATTACK):         # plain TCP, nothing sent
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            held.append(s)
        opened = time.monotonic() - t0
        time.sleep(1)
        peak_fds = fds(d.pid)
        took = info_ok(target, files)
        print(f"\n{ATTACK} idle connections opened in {opened:.1f} s; the daemon holds "
              f"{peak_fds} descriptors of 1,024; Info with a certificate meanwhile in "
              f"{took:.2f} s")
        # the listener holds at most a quarter of the limit: the rest is the daemon's
        assert peak_fds < 1024 - 256, peak_fds
        # held past gRPC core's handshake deadline (10 s) and the device scans meanwhile
        time.sleep(12)
        took = info_ok(target, files)
        print(f"after 13 s of holding them: Info in {took:.2f} s, RSS {rss0} -> "
              f"{rss_kib(d.pid)} KiB")
        assert rss_kib(d.pid) - rss0 < 100 * 1024
    finally:
        for s in held:
            s.close()
    took = info_ok(target, files)
    print(f"after the peer left: Info in {took:.2f} s")
    err = d.stderr_text()
    assert "Too many open files" not in err and "Failed accept4" not in err, err[-2000:]
    assert "server.tcp:" in err and "shut to make room" in err, err[-2000:]
    assert d.stop(signal.SIGTERM) == 0, d.describe()
