#!/usr/bin/env python3
"""Generate the protobuf and gRPC stubs of the iopulse package from ../../proto.

    python3 gen_stubs.py            # write src/iopulse/_pb/iopulse_pb2{,_grpc}.py
    python3 gen_stubs.py OUTDIR     # write them into OUTDIR instead (the freshness test)

Needs grpc_tools (Debian: python3-grpc-tools). The generated files are kept in the tree;
tests/test_stubs_fresh.py fails when they differ from what this script makes.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"
PROTO = "iopulse/v1/iopulse.proto"
OUT = HERE / "src" / "iopulse" / "_pb"
ABS_IMPORT = "from iopulse.v1 import iopulse_pb2 as"
REL_IMPORT = "from . import iopulse_pb2 as"


def generate(out: pathlib.Path) -> list[pathlib.Path]:
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}",
                          f"--grpc_python_out={tmp}", str(PROTO_ROOT / PROTO)])
        if rc != 0:
            raise SystemExit(f"protoc failed ({rc}) on {PROTO_ROOT / PROTO}")
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name in ("iopulse_pb2.py", "iopulse_pb2_grpc.py"):
            text = (pathlib.Path(tmp) / "iopulse" / "v1" / name).read_text()
            text = text.replace(ABS_IMPORT, REL_IMPORT)   # importable inside the package
            (out / name).write_text(text)
            written.append(out / name)
        return written


if __name__ == "__main__":
    for p in generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p)
