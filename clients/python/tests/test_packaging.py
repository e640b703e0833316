"""Package metadata: SPDX license, dependency ranges whose lower ends CI really tests, extras in
use, build products kept out of git."""
from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
REPO = PKG.parent.parent
try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


@pytest.fixture(scope="module")
def project() -> dict:
    if tomllib is None:
        pytest.importorskip("tomli")
    return tomllib.loads((PKG / "pyproject.toml").read_text())["project"]


def _lower_bounds(deps: list[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for d in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*([^;]*)", d.strip())
        assert m, d
        lo = re.search(r">=\s*([0-9.]+)", m.group(2))
        assert lo, f"{d}: no lower bound"
        out[m.group(1).lower()] = tuple(int(x) for x in lo.group(1).split("."))
    return out


def test_oldest_constraints_are_the_lower_bounds(project):
    bounds = _lower_bounds(project["dependencies"])
    pins = {}
    for line in (PKG / "constraints-oldest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, ver = line.partition("==")
            pins[name.lower()] = tuple(int(x) for x in ver.split("."))
    assert set(pins) == set(bounds), (pins, bounds)
    for name, lo in bounds.items():
        pin = pins[name]
        # the first release at or above the bound, in the bound's own minor series
        assert pin >= lo and pin[:len(lo)] == lo, f"{name}: pinned {pin}, bound {lo}"


def test_dependency_ranges(project):
    deps = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0].lower(): d for d in project["dependencies"]}
    assert deps["protobuf"].replace(" ", "") in ("protobuf>=3.20,<8", "protobuf<8,>=3.20")
    assert deps["grpcio"].replace(" ", "") in ("grpcio>=1.51,<2", "grpcio<2,>=1.51")


def test_metadata(project):
    assert project["license"] == "GPL-2.0-only"           # an SPDX expression
    lic = (PKG / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in lic and "Version 2, June 1991" in lic
    assert "Typing :: Typed" in project["classifiers"]
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
    assert "pip install" in (PKG / "README.md").read_text()
    # every extra is used: the CI matrix installs [test], and [report] in the newest venv
    assert set(project["optional-dependencies"]) == {"test", "report"}
    assert "clients/python[test]" in (REPO / "scripts" / "test-client-matrix.sh").read_text()


def test_build_products_are_ignored_by_git():
    if not (REPO / ".git").exists():
        pytest.fail("not a git checkout: run the tests from the repository")
    for p in ("clients/python/build/x", "clients/python/dist/iopulse-0.1.0.tar.gz",
              "clients/python/src/iopulse.egg-info/PKG-INFO", "build/venv-newest/bin/python"):
        r = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", p])
        assert r.returncode == 0, f"{p} is not ignored by git"
