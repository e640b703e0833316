"""Generated protobuf/gRPC stubs of proto/iopulse/v1/iopulse.proto (see gen_stubs.py).

The modules live under the proto's package path, iopulse/v1/; they are re-exported here so
callers write `from iopulse._pb import iopulse_pb2`. GENERATOR names the pinned generator that
wrote them (gen_stubs.GENERATOR; the freshness test checks the two agree).
"""
from .iopulse.v1 import iopulse_pb2, iopulse_pb2_grpc

GENERATOR = "grpcio-tools==1.51.3"

__all__ = ["iopulse_pb2", "iopulse_pb2_grpc", "GENERATOR"]
