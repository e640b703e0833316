"""Import direction between the client's packages and modules: a layer order, bottom first.

A unit (a module directly under iopulse/, or a subpackage with everything in it) imports only
units of lower layers; units of one layer never import each other. Every import counts,
wherever it stands: at module level, inside a function, under `if TYPE_CHECKING:`. Nothing
imports a name from the package itself (iopulse/__init__.py), which exports from every layer
and sits above them all.

Read, shape, draw: the run reader (record) uses the shaping (analysis) for Run.histogram and
Run.settings; the report and the live view (render, fleet) draw what analysis computes, each
figure's text made by display."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "src" / "iopulse"

LAYERS: list[set[str]] = [
    {"_version", "_pb"},                                    # the version; generated stubs
    {"errors", "histogram", "textfit", "tls", "unix_socket"},
    {"model"},                                              # decoded wire messages
    {"client", "flood", "phases", "ceph"},                  # the daemon's API; phases; OSDs
    {"analysis"},                                           # sums, figures, compare
    {"record"},                                             # run files written and read
    {"data", "display"},                                    # DataFrames; a figure's text
    {"report", "render"},                                   # the report; top's tables
    {"fleet"},                                              # several daemons in one view
    {"cli"},
    {"__main__"},
]
LAYER = {unit: n for n, units in enumerate(LAYERS) for unit in units}


def _files() -> list[pathlib.Path]:
    """The package's source files, but the generated stubs (their own package, iopulse.v1)."""
    return sorted(p for p in PKG.rglob("*.py") if p.relative_to(PKG).parts[0] != "_pb")


def _where(path: pathlib.Path) -> tuple[str, list[str]]:
    """(unit, package) of a file: its first name under iopulse/ ('__init__' for the package's
    own), and the package its relative imports start from."""
    parts = path.relative_to(PKG).with_suffix("").parts
    return parts[0], ["iopulse"] + list(parts[:-1])


def imported(source: str, package: list[str]) -> list[str]:
    """Absolute names of the iopulse modules and names a source imports, wherever the import
    stands; `from X import a` gives X.a (a module or a name in X)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                out.append(mod)
            out += [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m == "iopulse" or m.startswith("iopulse.")]


def against_the_order(unit: str, names: list[str]) -> list[str]:
    """The imports of a file of unit that go up the layer order, sideways within a layer, or
    to the package itself."""
    if unit == "__init__":
        return []
    bad = []
    for name in names:
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else ""
        if target not in LAYER:
            bad.append(f"{name} (from the package itself)")
        elif target != unit and LAYER[target] >= LAYER[unit]:
            bad.append(f"{name} (layer {LAYER[target]}; {unit} is in layer {LAYER[unit]})")
    return bad


def test_every_unit_has_one_layer():
    units = {_where(p)[0] for p in _files()} - {"__init__"}
    assert sorted(units - set(LAYER)) == [], "units without a layer"
    assert sorted(set(LAYER) - units - {"_pb"}) == [], "layers naming no unit"
    assert sum(len(u) for u in LAYERS) == len(LAYER), "a unit in two layers"


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_follow_the_layer_order(path):
    unit, package = _where(path)
    bad = against_the_order(unit, imported(path.read_text(), package))
    assert not bad, f"{path.relative_to(PKG)} imports against the layer order: {bad}"


def test_the_order_is_checked_wherever_an_import_stands():
    # the reader once dodged a cycle with an import inside Run.histogram()
    src = ("from typing import TYPE_CHECKING\n"
           "from ..histogram import Histogram\n"
           "if TYPE_CHECKING:\n    from ..render import render\n"
           "def f():\n    from ..report import tables\n    import iopulse.data\n"
           "def g():\n    from .. import __version__\n    from . import reader\n")
    names = imported(src, ["iopulse", "record"])
    assert against_the_order("record", names) == [
        "iopulse.render (layer 7; record is in layer 5)",
        "iopulse.render.render (layer 7; record is in layer 5)",
        "iopulse.report (layer 7; record is in layer 5)",
        "iopulse.report.tables (layer 7; record is in layer 5)",
        "iopulse.data (layer 6; record is in layer 5)",
        "iopulse.__version__ (from the package itself)"]
    # sideways, within one layer
    assert against_the_order("report", ["iopulse.render"]) == [
        "iopulse.render (layer 7; report is in layer 7)"]


def test_phases_never_import_record():
    for path in sorted((PKG / "phases").glob("*.py")):
        bad = [m for m in imported(path.read_text(), ["iopulse", "phases"])
               if m.startswith("iopulse.record")]
        assert not bad, f"{path.name} imports {bad}: iopulse.record imports iopulse.phases"


@pytest.mark.parametrize("first", ["iopulse.analysis.aggregate", "iopulse.record.reader",
                                   "iopulse.phases.model", "iopulse.display",
                                   "iopulse.report.tables", "iopulse.render"])
def test_each_imports_first_in_a_fresh_interpreter(first):
    # no import cycle hides behind the order of the imports
    r = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True,
                       text=True, env={"PYTHONPATH": str(PKG.parent)}, check=False)
    assert r.returncode == 0, r.stderr
