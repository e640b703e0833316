#!/usr/bin/env python3
"""Generate the protobuf and gRPC stubs of the iopulse package from ../../proto.

    python3 gen_stubs.py            # (re)write src/iopulse/_pb/iopulse/v1/iopulse_pb2{,_grpc}.py{,i}
    python3 gen_stubs.py OUTDIR     # write them under OUTDIR instead

The generator is pinned (GENERATOR): grpcio-tools 1.51.3 from PyPI. Its code imports on every
protobuf runtime from 3.20 to 7.x and every grpcio from 1.51 on; older generators (Debian 12's
python3-grpc-tools 1.14) make code that protobuf >= 4.21 refuses, and the newest ones embed a
runtime check that demands a protobuf at least as new as themselves. When this interpreter has
not got exactly that version, the script makes a venv for it under build/stubgen (next to this
file) and installs it there from PyPI, once.

protoc writes the gRPC module's import of its messages as the absolute
`from iopulse.v1 import iopulse_pb2`; that line is rewritten to a relative import so the stubs
work inside the iopulse package without touching sys.path. The generated files are kept in the
tree (see the README); tests/test_stubs_fresh.py compares the descriptor they embed with what
`protoc --descriptor_set_out` makes from proto/ now, whatever generator is installed.
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
GENERATOR = "grpcio-tools==1.51.3"
STUBS = ("iopulse/v1/iopulse_pb2.py", "iopulse/v1/iopulse_pb2.pyi",
         "iopulse/v1/iopulse_pb2_grpc.py")
ABS_IMPORT = "from iopulse.v1 import iopulse_pb2 as "
REL_IMPORT = "from . import iopulse_pb2 as "
VENV = HERE / "build" / "stubgen"


def _relative_imports(name: str, text: str) -> str:
    """The gRPC module's absolute import of its messages, made relative (exactly once)."""
    if not name.endswith("_grpc.py"):
        return text
    if text.count(ABS_IMPORT) != 1:
        raise RuntimeError(f"{name}: expected one line starting {ABS_IMPORT!r}; "
                           "the code generator changed, update gen_stubs.py")
    return text.replace(ABS_IMPORT, REL_IMPORT)


def _has_generator(python: str) -> bool:
    want = GENERATOR.split("==")[1]
    code = ("import importlib.metadata as m, sys; "
            f"sys.exit(0 if m.version('grpcio-tools') == {want!r} else 1)")
    return subprocess.run([python, "-c", code], capture_output=True, check=False).returncode == 0


def generator_python() -> str:
    """An interpreter with exactly GENERATOR installed: this one, else the build/stubgen venv
    (made and filled from PyPI on first use)."""
    if _has_generator(sys.executable):
        return sys.executable
    py = VENV / "bin" / "python"
    if not py.exists() or not _has_generator(str(py)):
        print(f"gen_stubs: installing {GENERATOR} into {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        GENERATOR], check=True)
    return str(py)


def generate(out: pathlib.Path = OUT, python: str | None = None) -> list[pathlib.Path]:
    """Write the stubs under out (out/iopulse/v1/...) and return their paths."""
    py = python or generator_python()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [py, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}",
               f"--pyi_out={tmp}", f"--grpc_python_out={tmp}", PROTO]
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
        written = []
        for rel in STUBS:
            text = _relative_imports(rel, (pathlib.Path(tmp) / rel).read_text())
            dest = out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            written.append(dest)
        return written


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(f"usage: {pathlib.Path(sys.argv[0]).name} [OUTDIR]\n{__doc__}", file=sys.stderr)
        return 2
    for path in generate(pathlib.Path(argv[0]) if argv else OUT):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
