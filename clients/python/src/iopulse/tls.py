"""TLS to a daemon's TCP listener: the CA that signed its certificate and, for mutual TLS,
this client's certificate and key, as files (or the IOPULSE_TLS_* environment variables)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import grpc

ENV_CA = "IOPULSE_TLS_CA"
ENV_CERT = "IOPULSE_TLS_CERT"
ENV_KEY = "IOPULSE_TLS_KEY"


class TlsError(ValueError):
    """A TLS file that is missing, unreadable or not PEM, or a certificate without its key."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files. ca: the CA bundle that signed the daemon's certificate (None: the system's
    CAs); cert and key: this client's certificate chain and private key, for a daemon that
    asks for one (server.tls_client_ca). The daemon's certificate must name the host of the
    target (a SAN such as DNS:node1 or IP:10.0.0.5)."""
    ca: Optional[str] = None
    cert: Optional[str] = None
    key: Optional[str] = None

    def __post_init__(self) -> None:
        if bool(self.cert) != bool(self.key):
            raise TlsError("a client certificate and its key go together: give both "
                           "(--tls-cert and --tls-key)")

    @classmethod
    def from_env(cls) -> Optional["TlsFiles"]:
        """From $IOPULSE_TLS_CA, $IOPULSE_TLS_CERT and $IOPULSE_TLS_KEY; None if none is set."""
        ca, cert, key = (os.environ.get(v) or None for v in (ENV_CA, ENV_CERT, ENV_KEY))
        return cls(ca, cert, key) if ca or cert or key else None

    def to_env(self) -> dict[str, str]:
        """The environment variables that give these files to a child process."""
        return {k: v for k, v in ((ENV_CA, self.ca), (ENV_CERT, self.cert),
                                  (ENV_KEY, self.key)) if v}

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials holding the files' contents."""
        return grpc.ssl_channel_credentials(root_certificates=_read(self.ca, "CA bundle"),
                                            private_key=_read(self.key, "client key"),
                                            certificate_chain=_read(self.cert,
                                                                    "client certificate"))


def _read(path: Optional[str], what: str) -> Optional[bytes]:
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except OSError as e:
        raise TlsError(f"{what} {path}: {e.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsError(f"{what} {path}: not a PEM file")
    return data
