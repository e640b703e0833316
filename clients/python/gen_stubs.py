#!/usr/bin/env python3
"""Generate the protobuf and gRPC stubs of the iopulse package from ../../proto.

    python3 gen_stubs.py            # (re)write src/iopulse/_pb/iopulse/v1/iopulse_pb2{,_grpc}.py
    python3 gen_stubs.py OUTDIR     # write them under OUTDIR instead (the freshness test does)

Runs `python3 -m grpc_tools.protoc -I proto` (Debian 12: python3-grpc-tools), so the stubs
land in _pb/ under the proto's own package path, iopulse/v1/. protoc writes the gRPC module's
import of its messages as the absolute `from iopulse.v1 import iopulse_pb2`; that line is
rewritten to a relative import so the stubs work inside the iopulse package without touching
sys.path. The generated files are kept in the tree; tests/test_stubs_fresh.py fails when they
differ from what this script makes now.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"
PROTO = "iopulse/v1/iopulse.proto"
OUT = HERE / "src" / "iopulse" / "_pb"
STUBS = ("iopulse/v1/iopulse_pb2.py", "iopulse/v1/iopulse_pb2_grpc.py")
ABS_IMPORT = "from iopulse.v1 import iopulse_pb2 as "
REL_IMPORT = "from . import iopulse_pb2 as "


def _relative_imports(name: str, text: str) -> str:
    """The gRPC module's absolute import of its messages, made relative (exactly once)."""
    if not name.endswith("_grpc.py"):
        return text
    if text.count(ABS_IMPORT) != 1:
        raise RuntimeError(f"{name}: expected one line starting {ABS_IMPORT!r}; "
                           "the code generator changed, update gen_stubs.py")
    return text.replace(ABS_IMPORT, REL_IMPORT)


def generate(out: pathlib.Path = OUT) -> list[pathlib.Path]:
    """Write the stubs under out (out/iopulse/v1/...) and return their paths."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}",
               f"--python_out={tmp}", f"--grpc_python_out={tmp}", PROTO]
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()} "
                               "(Debian: apt-get install python3-grpc-tools)")
        written = []
        for rel in STUBS:
            text = _relative_imports(rel, (pathlib.Path(tmp) / rel).read_text())
            dest = out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            written.append(dest)
        return written


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print(f"usage: {pathlib.Path(argv[0]).name} [OUTDIR]", file=sys.stderr)
        return 2
    for path in generate(pathlib.Path(argv[0]) if argv else OUT):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
