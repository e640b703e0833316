"""Names a daemon or a run file chose never reach the terminal as control sequences: `phases
list`, `top` over one or several targets and `compare` escape them as `report` does ('\\x1b'),
so an ESC or an OSC sequence (which rich would leave open, dropping its BEL) is text."""
from __future__ import annotations

from fakes import FakeTelemetry, make_update, serve

from iopulse._pb import iopulse_pb2 as pb
from iopulse.cli import main
from iopulse.record import RunWriter

# an OSC title change ended by BEL, a screen clear and a colour
EVIL = "x\x1b]0;owned\x07y\x1b[2J\x1b[31mz"
ESCAPED = "x\\x1b]0;owned\\x07y\\x1b[2J\\x1b[31mz"


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text)


def _run(path: str, name: str) -> None:
    with RunWriter(path) as w:
        w.write_json({"type": "header", "format": 1, "argv": ["iopulse", "record"]})
        w.write_json({"type": "agent", "host": 0, "target": "unix:/run/h0.sock"})
        w.write_info(0, pb.Info(version="t", hostname="node0").SerializeToString())
        for seq in (1, 2, 3):
            u = make_update(seq, devices=("sdb",))
            if seq < 3:
                u.phases.add(name=name, id=1 + (seq == 2), end=seq == 2,
                             begin_id=1 if seq == 2 else 0, labels={"k": EVIL},
                             realtime_ns=u.start_realtime_ns,
                             monotonic_ns=u.start_monotonic_ns)
            w.write_update(0, u.SerializeToString())
        w.close({"type": "end", "status": "ok"})


def test_phases_list_escapes_names_and_labels(tmp_path, capsys):
    path = str(tmp_path / "r.iopulse")
    _run(path, EVIL)
    assert main(["phases", "list", path]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert ESCAPED in out and f"k={ESCAPED}" in out, out


class HostileNames(FakeTelemetry):
    """A daemon whose host name, device names and phase marks hold escapes."""

    def GetInfo(self, request, context):
        i = super().GetInfo(request, context)
        i.hostname = "host" + EVIL
        return i

    def Subscribe(self, request, context):
        for u in super().Subscribe(request, context):
            u.phases.add(name="mark" + EVIL, id=1, realtime_ns=u.end_realtime_ns,
                         monotonic_ns=u.end_monotonic_ns)
            yield u


def test_top_escapes_a_daemons_names(sockdir, capsys):
    servers = []
    targets = []
    for n, fake in enumerate((HostileNames(devices=("sd" + EVIL,)), FakeTelemetry())):
        path = sockdir / f"h{n}.sock"
        servers.append(serve(fake, f"unix:{path}"))
        targets.append(f"unix:{path}")
    try:
        # several targets: the host column, the host lines, the merged line's notes
        argv = [x for t in targets for x in ("--target", t)]
        assert main(argv + ["top", "--once", "--merge"]) == 0
        out = capsys.readouterr().out
        _clean(out)
        assert "host" + ESCAPED[:8] in out and "sd" + ESCAPED[:8] in out, out
        # one target: the device table and the phase marks
        assert main(["--target", targets[0], "top", "--once", "--merge"]) == 0
        out = capsys.readouterr().out
        _clean(out)
        assert "sd" + ESCAPED[:8] in out and "mark" + ESCAPED[:8] in out, out
    finally:
        for s in servers:
            s.stop(None)
