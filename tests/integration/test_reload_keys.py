"""Every config key, changed alone through SIGHUP, does what docs/config.md's "Reloading (SIGHUP)"
promises for it: applied (GetInfo reports the new value), applied by loading the probes again
(the probes attach once more), or kept at its running value with a warning that names the key
and says it needs a restart. Nothing is dropped without a word. One daemon, one SIGHUP per
key, a 200 ms interval."""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from grpc_testlib import iopulse, wait_for
from iopulse_testlib import REPO, Daemon

DOC = REPO / "docs" / "config.md"

# What each key is changed to: a valid value other than the one the daemon runs with. A key
# missing here fails the test (test_every_key_has_a_change).
NEW = {
    "interval": "200ms",
    "histogram.precision": 4,
    "histogram.mode": "completion",
    "histogram.queue_from_bio": False,
    "devices.include": ["loop*", "sd*", "vd*", "nvme*"],
    "devices.exclude": ["ram*", "zram*", "fd*"],
    "devices.rollup_partitions": False,
    "sync.enabled": False,
    "sync.threads.include": ["fio*"],
    "sync.threads.exclude": ["kworker*"],
    "limits.devices": 128,
    "limits.threads": 2048,
    "limits.threads_reserved": 64,
    "limits.inflight": 131072,
    "ceph.osd_dir": "{tmp}/osd",
    "log.level": "debug",
    "bpf_stats": True,
    "server.enabled": False,
    "server.socket": "{sockdir}/other.sock",
    "server.socket_mode": "0600",
    "server.socket_group": "root",
    "server.mark_group": "root",
    "server.tcp": "127.0.0.1:0",
    "server.tls_cert": "{tmp}/pki/server2.pem",
    "server.tls_key": "{tmp}/pki/server2.key",
    "server.tls_client_ca": "{tmp}/pki/ca2.pem",
    "server.insecure": True,
    "server.mark_clients": ["bench-*"],
    "server.ring": "5m",
    "server.mark_rate": 10,
    "server.ring_mib": 128,
    "server.mark_bytes": 8192,
    "server.mark_labels": 16,
    "server.open_phases": 512,
    "server.subscribers": 128,
    "server.request_bytes": 32768,
    "metrics.listen": "127.0.0.1:0",
    "metrics.precision": 3,
    "metrics.threads": ["fio*"],
    "metrics.max_threads": 50,
}

LABELS = {"applied": "live", "probes loaded again": "probes", "needs a restart": "restart"}


def documented_keys() -> list[str]:
    """The keys of docs/config.md's tables, in order."""
    keys = []
    for ln in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`([a-z_.]+)`\s*\|", ln)
        if m:
            keys.append(m.group(1))
    return keys


def promises(keys: list[str]) -> dict[str, str]:
    """key -> live | probes | restart, from the list under "## Reloading (SIGHUP)": each item's
    first sentence names its keys (`server.*`: every key of the section, "but `KEY`" leaves
    one out)."""
    text = DOC.read_text().split("## Reloading (SIGHUP)", 1)[1].split("\n## ", 1)[0]
    out: dict[str, str] = {}
    for label, body in re.findall(r"^- \*\*([^*]+)\*\*: (.*?)(?=^- |\Z)", text, re.M | re.S):
        first = re.split(r"\.(?:\s|$)", body, maxsplit=1)[0]
        but = set(re.findall(r"\bbut `([a-z_.]+)`", first))
        for name in re.findall(r"(?<!but )`([a-z_.*]+)`", first):
            matched = [k for k in keys if (k == name or
                       (name.endswith(".*") and k.startswith(name[:-1]))) and k not in but]
            assert matched, f"'{name}' under {label!r} is no key of docs/config.md"
            for k in matched:
                assert k not in out, f"{k} is promised twice"
                out[k] = LABELS[label]
    return out


def nested(flat: dict) -> dict:
    d: dict = {}
    for k, v in flat.items():
        *parents, last = k.split(".")
        cur = d
        for p in parents:
            cur = cur.setdefault(p, {})
        cur[last] = v
    return d


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """Two CAs and two server certificates; the daemon starts with the first of each."""
    d.mkdir()
    for n in ("1", "2"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-days", "2", "-subj", f"/CN=ca{n}", "-keyout", f"ca{n}.key", "-out",
                f"ca{n}.pem", cwd=d)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-subj", "/CN=localhost", "-keyout", f"server{n}.key", "-out", f"server{n}.csr",
                cwd=d)
        openssl("x509", "-req", "-in", f"server{n}.csr", "-CA", f"ca{n}.pem", "-CAkey",
                f"ca{n}.key", "-CAcreateserial", "-days", "2", "-out", f"server{n}.pem", cwd=d)


def test_every_key_has_a_change():
    keys = documented_keys()
    assert len(keys) >= 40
    assert sorted(NEW) == sorted(keys), \
        f"keys without a change here: {sorted(set(keys) - set(NEW))}; " \
        f"changes of keys docs/config.md does not have: {sorted(set(NEW) - set(keys))}"
    p = promises(keys)
    assert sorted(p) == sorted(keys), \
        f"keys docs/config.md's Reloading (SIGHUP) says nothing about: {sorted(set(keys) - set(p))}"


def test_each_key_through_sighup(daemon_bin, tmp_path):
    keys = documented_keys()
    promise = promises(keys)
    # log.level goes last: debug lines would bury the others
    order = [k for k in keys if k != "log.level"] + ["log.level"]
    sockdir = tempfile.mkdtemp(prefix="iop-", dir="/tmp")
    make_pki(tmp_path / "pki")
    (tmp_path / "osd").mkdir()
    fill = {"tmp": str(tmp_path), "sockdir": sockdir}
    sock = f"{sockdir}/d.sock"
    baseline = {
        "interval": "300ms",
        "server.socket": sock,
        # TLS set from the start (no TCP listener): its paths can change alone
        "server.tls_cert": f"{tmp_path}/pki/server1.pem",
        "server.tls_key": f"{tmp_path}/pki/server1.key",
        "server.tls_client_ca": f"{tmp_path}/pki/ca1.pem",
    }
    applied: dict = {}
    cfg = tmp_path / "reload.yaml"
    cfg.write_text(yaml.safe_dump(nested(baseline)))
    d = Daemon([daemon_bin, "-c", str(cfg)], tmp_path / "iopulsed.stderr")
    d.socket = sock
    outcome = []
    try:
        d.wait_ready(30)
        with iopulse.Client(f"unix:{sock}", timeout=10) as c:
            wait_for(lambda: c.info().last_seq >= 1, 30, "the first interval")

            def settled_info():
                """Info built from an interval that began after the last reload."""
                seq = c.info().last_seq
                wait_for(lambda: c.info().last_seq >= seq + 2, 30, "two more intervals")
                return c.info().config

            for key in order:
                before = settled_info()
                value = NEW[key]
                if isinstance(value, str):
                    value = value.format(**fill)
                cfg.write_text(yaml.safe_dump(nested({**baseline, **applied, key: value})))
                text = d.stderr_text()
                reloads = text.count("configuration reloaded")
                attached = text.count("probes attached")
                t0 = time.monotonic()
                d.send_signal(signal.SIGHUP)
                deadline = time.monotonic() + 60
                while d.stderr_text().count("configuration reloaded") == reloads:
                    new = d.stderr_text()[len(text):]
                    assert "reload rejected" not in new, f"{key}: {new}"
                    assert d.running() and time.monotonic() < deadline, \
                        f"{key}: no reload within 60 s: {d.describe()}"
                    time.sleep(0.05)
                new = d.stderr_text()[len(text):]
                said = re.findall(r"reload: (\S+) changed, ([^\n]*)", new)
                assert [k for k, _ in said] == [key], f"{key}: the reload said {said}"
                line = said[0][1]
                want = promise[key]
                if want == "live":
                    assert line.startswith("applied") and "probes" not in line, (key, line)
                elif want == "probes":
                    assert line.startswith("applied by loading the probes again"), (key, line)
                else:
                    assert re.search(rf"warning: reload: {re.escape(key)} changed, which needs "
                                     r"a restart", new), (key, new)
                after = settled_info()
                assert d.stderr_text().count("probes attached") == \
                    attached + (want == "probes"), f"{key}: probes attached again or not"
                for k in keys:
                    if k not in before:      # not in Info: the log line is the word
                        continue
                    if k == key and want != "restart":
                        assert after[k] != before[k], f"{key}: Info still says {before[k]!r}"
                    else:
                        assert after[k] == before[k], \
                            f"{key} changed {k} in Info: {before[k]!r} -> {after[k]!r}"
                if want != "restart":
                    applied[key] = value
                outcome.append(f"{key}: {want} ({time.monotonic() - t0:.1f} s)")
        print("\n" + "\n".join(outcome))
        assert d.running()
        assert d.stop(signal.SIGTERM) == 0, d.describe()
    finally:
        d.stop(signal.SIGTERM)
        shutil.rmtree(sockdir, ignore_errors=True)
