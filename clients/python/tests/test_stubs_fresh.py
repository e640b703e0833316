"""The committed protobuf/gRPC stubs are exactly what gen_stubs.py makes from proto/ now."""
from __future__ import annotations

import importlib.util
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
GEN = HERE.parent / "gen_stubs.py"


def _gen_stubs():
    spec = importlib.util.spec_from_file_location("gen_stubs", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_stubs_are_fresh(tmp_path):
    gen = _gen_stubs()
    made = gen.generate(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in made] == list(gen.STUBS)
    for p in made:
        committed = gen.OUT / p.relative_to(tmp_path)
        assert committed.exists(), f"{committed} is missing: run python3 {GEN}"
        assert committed.read_text() == p.read_text(), \
            f"{committed} is stale (proto/ or the generator changed): run python3 {GEN}"


def test_stubs_import_inside_the_package():
    from iopulse._pb import iopulse_pb2, iopulse_pb2_grpc
    from iopulse._pb.iopulse.v1 import iopulse_pb2 as direct

    assert iopulse_pb2 is direct
    assert iopulse_pb2.DESCRIPTOR.package == "iopulse.v1"
    assert hasattr(iopulse_pb2_grpc, "TelemetryStub")
    svc = iopulse_pb2.DESCRIPTOR.services_by_name["Telemetry"]
    assert [m.name for m in svc.methods] == ["Subscribe", "GetSnapshot", "GetInfo", "MarkPhase"]
