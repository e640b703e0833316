"""TLS on the TCP listener, mutual TLS, who may mark (by certificate name over TCP, by group
over the unix socket), certificate reload on SIGHUP, and the refusal to serve clear text
beyond loopback unless server.insecure says so. Certificates are
made here with openssl."""
from __future__ import annotations

import grp
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from grpc_testlib import CLIENT_ENV, iopulse, iopulse_cmd, tcp_port, wait_for
from iopulse_testlib import REPO


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> None:
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "2", "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out",
            f"{name}.pem", cwd=d)


def make_cert(d: Path, ca: str, name: str, san: str) -> None:
    """name.pem / name.key signed by ca, with subjectAltName san (e.g. "DNS:x,IP:1.2.3.4")."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem",
            cwd=d)


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    d.mkdir()
    make_ca(d, "ca")
    make_ca(d, "otherca")
    make_cert(d, "ca", "server", "DNS:localhost,IP:127.0.0.1")
    make_cert(d, "ca", "bench-runner", "DNS:bench-runner")
    make_cert(d, "ca", "reader", "DNS:reader")
    make_cert(d, "otherca", "intruder", "DNS:bench-intruder")
    make_cert(d, "otherca", "server2", "DNS:localhost,IP:127.0.0.1")
    return d


def tls(d: Path, client: str | None = None, ca: str = "ca") -> "iopulse.TlsFiles":
    return iopulse.TlsFiles(ca=str(d / f"{ca}.pem"),
                            cert=str(d / f"{client}.pem") if client else None,
                            key=str(d / f"{client}.key") if client else None)


def refused(target: str, files) -> str:
    with pytest.raises(iopulse.IopulseError) as ei:
        with iopulse.Client(target, tls=files, connect_deadline=2, timeout=5) as c:
            c.info()
    return str(ei.value)


def test_mutual_tls_and_mark_rights(daemon, pki, tmp_path):
    cfg = tmp_path / "tls.yaml"
    server_pem, server_key = tmp_path / "served.pem", tmp_path / "served.key"
    server_pem.write_bytes((pki / "server.pem").read_bytes())
    server_key.write_bytes((pki / "server.key").read_bytes())
    cfg.write_text(f"""interval: 1s
server:
  tcp: "127.0.0.1:0"
  tls_cert: {server_pem}
  tls_key: {server_key}
  tls_client_ca: {pki / "ca.pem"}
  mark_clients: ["bench-*"]
""")
    d = daemon(config=str(cfg))
    port = tcp_port(d, timeout=30)
    target = f"127.0.0.1:{port}"
    assert "(TLS, client certificates required)" in d.stderr_text()

    with iopulse.Client(target, tls=tls(pki, "bench-runner")) as c:
        wait_for(lambda: c.info().last_seq >= 1, 30, "an interval over TLS")
        m = c.mark_phase("fill", run="1")
        assert m.mark.id > 0
    with iopulse.Client(target, tls=tls(pki, "reader")) as c:
        assert c.info().version
        with pytest.raises(iopulse.PermissionDenied) as ei:
            c.mark_phase("fill")
        print(f"\nreader's mark: {ei.value}")
        assert "server.mark_clients" in str(ei.value)
    # no client certificate, one from another CA, no TLS at all: the handshake fails
    for files in (tls(pki), tls(pki, "intruder"), None):
        msg = refused(target, files)
        print(f"{files}: {msg}")
        assert "cannot reach iopulsed" in msg
    # the unix socket: no TLS, marks allowed to whoever may connect
    with iopulse.Client(f"unix:{d.socket}") as c:
        assert c.mark_phase("unix-mark").mark.id > 0

    # the command line, with the files as flags and as environment variables
    base = iopulse_cmd("--target", target, "--tls-ca", str(pki / "ca.pem"))
    r = subprocess.run(base + ["--tls-cert", str(pki / "bench-runner.pem"), "--tls-key",
                               str(pki / "bench-runner.key"), "mark", "cli-phase"],
                       env=CLIENT_ENV, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    env = dict(CLIENT_ENV, IOPULSE_TLS_CA=str(pki / "ca.pem"),
               IOPULSE_TLS_CERT=str(pki / "reader.pem"), IOPULSE_TLS_KEY=str(pki / "reader.key"))
    r = subprocess.run(iopulse_cmd("--target", target, "mark", "x"), env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "PERMISSION_DENIED" in r.stderr, r.stderr
    r = subprocess.run(iopulse_cmd("--target", target, "info"), env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "limits:" in r.stdout, r.stderr

    # SIGHUP reloads the certificate: new connections get the one signed by the other CA
    server_pem.write_bytes((pki / "server2.pem").read_bytes())
    server_key.write_bytes((pki / "server2.key").read_bytes())
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: "TLS certificate, key and client CAs reloaded" in d.stderr_text(), 30,
             "the TLS reload")
    with iopulse.Client(target, tls=tls(pki, "bench-runner", ca="otherca")) as c:
        assert c.info().version
    assert "cannot reach iopulsed" in refused(target, tls(pki, "bench-runner"))

    # server.mark_clients applies on SIGHUP, to calls on connections made before it too
    with iopulse.Client(target, tls=tls(pki, "reader", ca="otherca")) as reader:
        with pytest.raises(iopulse.PermissionDenied):
            reader.mark_phase("before")
        cfg.write_text(cfg.read_text().replace('mark_clients: ["bench-*"]',
                                               'mark_clients: ["read*"]'))
        d.send_signal(signal.SIGHUP)
        wait_for(lambda: "server.mark_clients changed, applied" in d.stderr_text(), 30,
                 "the mark_clients reload")
        assert reader.mark_phase("after").mark.id > 0
    with iopulse.Client(target, tls=tls(pki, "bench-runner", ca="otherca")) as c:
        with pytest.raises(iopulse.PermissionDenied):
            c.mark_phase("no longer")
    assert d.stop(signal.SIGTERM) == 0, d.describe()


def test_clear_text_beyond_loopback_needs_insecure(daemon, daemon_bin, tmp_path):
    cfg = tmp_path / "open.yaml"
    cfg.write_text('server:\n  tcp: "0.0.0.0:0"\n')
    r = subprocess.run([daemon_bin, "-c", str(cfg), "--no-sync", "-d", "1s", "--socket",
                        str(tmp_path / "x.sock")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "server.tcp '0.0.0.0:0' is reachable beyond this host without TLS" in r.stderr
    assert "probes attached" not in r.stderr
    r = subprocess.run([daemon_bin, "--check-config", str(cfg)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "server.insecure: true" in r.stderr, r.stderr
    r = subprocess.run([daemon_bin, "-c", str(REPO / "etc" / "iopulse.yaml"), "--no-sync",
                        "-d", "1s", "--socket", str(tmp_path / "y.sock"), "--tcp", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "without TLS" in r.stderr, r.stderr
    cfg.write_text('server:\n  tcp: "0.0.0.0:0"\n  insecure: true\n')
    d = daemon(config=str(cfg))
    tcp_port(d, timeout=30)
    assert "server.insecure: gRPC on 0.0.0.0:0 is clear text" in d.stderr_text()
    assert d.stop(signal.SIGTERM) == 0


def test_unix_mark_group_separates_reading_from_marking(daemon, tmp_path):
    """server.mark_group: root and the group's members (primary or supplementary) may mark over
    the unix socket; another user who may connect still reads but may not mark."""
    gid = grp.getgrnam("users").gr_gid
    sockdir = tempfile.mkdtemp(prefix="iop-mg-", dir="/tmp")
    os.chmod(sockdir, 0o755)
    sock = os.path.join(sockdir, "d.sock")
    cfg = tmp_path / "mg.yaml"
    cfg.write_text('server:\n  socket_mode: "0666"\n  mark_group: users\n')
    try:
        d = daemon("--socket", sock, config=str(cfg))
        with iopulse.Client(f"unix:{sock}") as c:
            wait_for(lambda: c.info().last_seq >= 1, 30, "the first interval")
            assert c.mark_phase("as-root").mark.id > 0

        def as_nobody(groups: list[str], *args: str) -> subprocess.CompletedProcess:
            return subprocess.run(["setpriv", "--reuid=65534", *groups,
                                   *iopulse_cmd("--target", f"unix:{sock}", *args)],
                                  env=CLIENT_ENV, capture_output=True, text=True, timeout=60)

        outsider = ["--regid=65534", "--clear-groups"]
        r = as_nobody(outsider, "mark", "x")
        print(f"\noutsider's mark: {r.stderr.strip()}")
        assert r.returncode == 1 and "PERMISSION_DENIED" in r.stderr
        assert "server.mark_group" in r.stderr
        r = as_nobody(outsider, "info")
        assert r.returncode == 0, r.stderr
        for member in (["--regid=65534", f"--groups={gid}"], [f"--regid={gid}", "--clear-groups"]):
            r = as_nobody(member, "mark", "member")
            assert r.returncode == 0, (member, r.stderr)
        assert d.stop(signal.SIGTERM) == 0, d.describe()
        assert not os.path.exists(sock)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
