"""Import direction between the client's packages: iopulse.record reads runs and uses
iopulse.phases; iopulse.phases never imports iopulse.record (not even for type checking)."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

PKG = pathlib.Path(__file__).resolve().parents[1] / "src" / "iopulse"


def _imported_modules(path: pathlib.Path) -> list[str]:
    """Absolute names of the iopulse modules a file imports, wherever the import stands."""
    package = ["iopulse"] + list(path.relative_to(PKG).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.append(mod)
            out += [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m == "iopulse" or m.startswith("iopulse.")]


def test_phases_never_import_record():
    for path in sorted((PKG / "phases").glob("*.py")):
        bad = [m for m in _imported_modules(path) if m.startswith("iopulse.record")]
        assert not bad, f"{path.name} imports {bad}: iopulse.record imports iopulse.phases"


def test_record_reader_imports_phases_directly():
    # the reader's import of the phase model is a plain module-level one (no deferred import
    # to dodge a cycle), and each side imports on its own in a fresh interpreter
    mods = _imported_modules(PKG / "record" / "reader.py")
    assert "iopulse.phases.model" in mods
    src = str(PKG.parent)
    for first in ("iopulse.phases.model", "iopulse.record.reader"):
        r = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True,
                           text=True, env={"PYTHONPATH": src}, check=False)
        assert r.returncode == 0, r.stderr
