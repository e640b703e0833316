"""Generated protobuf/gRPC stubs of proto/iopulse/v1/iopulse.proto (see gen_stubs.py).

The modules live under the proto's package path, iopulse/v1/; they are re-exported here so
callers write `from iopulse._pb import iopulse_pb2`.
"""
from .iopulse.v1 import iopulse_pb2, iopulse_pb2_grpc

__all__ = ["iopulse_pb2", "iopulse_pb2_grpc"]
