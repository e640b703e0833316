"""Target strings: unix sockets in three spellings, host:port, and what is refused."""
from __future__ import annotations

import pytest

from iopulse import Client, parse_target


@pytest.mark.parametrize("given,want", [
    ("unix:/run/iopulse/iopulse.sock", "unix:/run/iopulse/iopulse.sock"),
    ("unix:///run/iopulse/iopulse.sock", "unix:/run/iopulse/iopulse.sock"),
    ("/run/iopulse/iopulse.sock", "unix:/run/iopulse/iopulse.sock"),
    ("localhost:7073", "localhost:7073"),
    ("10.0.0.5:7073", "10.0.0.5:7073"),
    ("[::1]:7073", "[::1]:7073"),
    ("dns:///node1:7073", "dns:///node1:7073"),
    (" unix:/tmp/x.sock ", "unix:/tmp/x.sock"),
])
def test_accepted(given, want):
    assert parse_target(given) == want


@pytest.mark.parametrize("bad", ["", "unix:", "unix://host/x.sock", "localhost", "host:",
                                 "host:http", ":7073", "host:0", "host:70000",
                                 "relative/path.sock"])
def test_refused(bad):
    with pytest.raises(ValueError, match="target"):
        parse_target(bad)


def test_client_normalizes_its_target():
    with Client("/tmp/nowhere.sock", connect_deadline=0) as c:
        assert c.target == "unix:/tmp/nowhere.sock"
