"""The committed stubs describe proto/ as it is now, whichever code generator is installed.

The message module embeds the proto's FileDescriptorProto; it must equal what the protobuf
compiler (`protoc --descriptor_set_out`, Debian: protobuf-compiler) makes from proto/ now. The
gRPC module must route every method of the service to its path with the right message types.
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from iopulse._pb import GENERATOR, iopulse_pb2, iopulse_pb2_grpc

HERE = pathlib.Path(__file__).resolve().parent
GEN = HERE.parent / "gen_stubs.py"
PROTO_ROOT = HERE.parent.parent.parent / "proto"
PROTO = "iopulse/v1/iopulse.proto"
STUB_DIR = pathlib.Path(iopulse_pb2.__file__).resolve().parent


def _gen_stubs() -> Any:
    spec = importlib.util.spec_from_file_location("gen_stubs", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _without_json_names(fdp: descriptor_pb2.FileDescriptorProto) -> bytes:
    """protoc fills json_name (derived from each field's name) into descriptor sets, the Python
    generator leaves it out; nothing else may differ."""
    for msg in fdp.message_type:
        stack = [msg]
        while stack:
            m = stack.pop()
            for f in list(m.field) + list(m.extension):
                f.ClearField("json_name")
            stack.extend(m.nested_type)
    return fdp.SerializeToString(deterministic=True)


def test_embedded_descriptor_equals_protoc_output(tmp_path):
    protoc = shutil.which("protoc")
    assert protoc, "protoc not found (Debian: apt-get install protobuf-compiler)"
    out = tmp_path / "set.pb"
    subprocess.run([protoc, f"-I{PROTO_ROOT}", f"--descriptor_set_out={out}", PROTO], check=True)
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    assert [f.name for f in fresh.file] == [PROTO]
    embedded = descriptor_pb2.FileDescriptorProto.FromString(iopulse_pb2.DESCRIPTOR.serialized_pb)
    assert _without_json_names(embedded) == _without_json_names(fresh.file[0]), \
        f"the stubs are stale (proto/ changed): run python3 {GEN}"


class _RecordingChannel:
    """Stands in for grpc.Channel: records what the generated stub asks it for."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[str, Any, Any]] = {}

    def _make(self, kind: str) -> Any:
        def make(path: str, request_serializer: Any = None, response_deserializer: Any = None,
                 **_: Any) -> str:
            self.calls[path] = (kind, request_serializer, response_deserializer)
            return path
        return make

    def __getattr__(self, kind: str) -> Any:
        if kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            return self._make(kind)
        raise AttributeError(kind)


def test_grpc_module_routes_every_method():
    svc = iopulse_pb2.DESCRIPTOR.services_by_name["Telemetry"]
    ch = _RecordingChannel()
    stub = iopulse_pb2_grpc.TelemetryStub(ch)
    assert len(ch.calls) == len(svc.methods) == 4
    for m in svc.methods:
        path = f"/{svc.full_name}/{m.name}"
        kind = ("stream" if m.client_streaming else "unary") + "_" + \
               ("stream" if m.server_streaming else "unary")
        assert getattr(stub, m.name) == path
        got_kind, ser, deser = ch.calls[path]
        assert got_kind == kind, m.name
        req = getattr(iopulse_pb2, m.input_type.name)
        resp = getattr(iopulse_pb2, m.output_type.name)
        assert ser == req.SerializeToString and deser == resp.FromString, m.name
        assert callable(getattr(iopulse_pb2_grpc.TelemetryServicer, m.name))


def test_stubs_come_from_the_pinned_generator():
    gen = _gen_stubs()
    assert GENERATOR == gen.GENERATOR
    for rel in gen.STUBS:
        assert (STUB_DIR.parents[1] / rel).exists(), f"{rel} missing: run python3 {GEN}"
    # Code from generators newer than the pin checks the runtime's version at import and
    # refuses older protobufs; the pinned one does not.
    text = (STUB_DIR / "iopulse_pb2.py").read_text()
    assert "runtime_version" not in text and "_builder" in text


def test_stubs_import_inside_the_package():
    from iopulse._pb.iopulse.v1 import iopulse_pb2 as direct

    assert iopulse_pb2 is direct
    assert iopulse_pb2.DESCRIPTOR.package == "iopulse.v1"
    svc = iopulse_pb2.DESCRIPTOR.services_by_name["Telemetry"]
    assert [m.name for m in svc.methods] == ["Subscribe", "GetSnapshot", "GetInfo", "MarkPhase"]


@pytest.mark.parametrize("labels", [{}, {"run": "3", "bs": "4k"}])
def test_map_fields_round_trip(labels):
    """Map fields (labels, config) broke with the old generator's code on upb runtimes."""
    m = iopulse_pb2.MarkPhaseRequest(name="fill", labels=labels)
    back = iopulse_pb2.MarkPhaseRequest.FromString(m.SerializeToString())
    assert dict(back.labels) == labels
    i = iopulse_pb2.Info(config={"interval": "1s"})
    assert dict(iopulse_pb2.Info.FromString(i.SerializeToString()).config) == {"interval": "1s"}
