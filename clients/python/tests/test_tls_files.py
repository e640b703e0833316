"""TlsFiles: pairs, file errors naming the file, the environment, and the CLI's flags."""
from __future__ import annotations

import pytest

from iopulse import TlsError, TlsFiles
from iopulse.cli import parse_args


def test_certificate_and_key_go_together():
    with pytest.raises(TlsError, match="go together"):
        TlsFiles(cert="/c.pem")
    with pytest.raises(TlsError, match="go together"):
        TlsFiles(ca="/ca.pem", key="/k.pem")


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(TlsError, match=r"CA bundle /nonexistent.pem: No such file"):
        TlsFiles(ca="/nonexistent.pem").credentials()
    txt = tmp_path / "notpem.txt"
    txt.write_text("hello\n")
    with pytest.raises(TlsError, match=rf"CA bundle {txt}: not a PEM file"):
        TlsFiles(ca=str(txt)).credentials()


def test_environment(monkeypatch):
    for v in ("IOPULSE_TLS_CA", "IOPULSE_TLS_CERT", "IOPULSE_TLS_KEY"):
        monkeypatch.delenv(v, raising=False)
    assert TlsFiles.from_env() is None
    monkeypatch.setenv("IOPULSE_TLS_CA", "/ca.pem")
    assert TlsFiles.from_env() == TlsFiles(ca="/ca.pem")
    assert TlsFiles.from_env().to_env() == {"IOPULSE_TLS_CA": "/ca.pem"}


def test_flags_reach_the_environment(monkeypatch):
    for v in ("IOPULSE_TLS_CA", "IOPULSE_TLS_CERT", "IOPULSE_TLS_KEY"):
        monkeypatch.delenv(v, raising=False)
    parse_args(["--target", "h:7073", "info", "--tls-ca", "/a.pem", "--tls-cert", "/c.pem",
                "--tls-key", "/k.pem"])
    assert TlsFiles.from_env() == TlsFiles("/a.pem", "/c.pem", "/k.pem")


def test_a_certificate_without_key_is_a_usage_error(monkeypatch, capsys):
    for v in ("IOPULSE_TLS_CA", "IOPULSE_TLS_CERT", "IOPULSE_TLS_KEY"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(SystemExit) as ei:
        parse_args(["info", "--tls-cert", "/c.pem"])
    assert ei.value.code == 2
    assert "go together" in capsys.readouterr().err
