"""The package version: the project's VERSION file (one source for the daemon, this package
and the deb/rpm packages)."""
from __future__ import annotations

import pathlib
from importlib import metadata


def _version() -> str:
    # a source tree (clients/python/src/iopulse/ -> clients/python/VERSION) wins over an
    # installed copy's metadata, so tests of the tree never see another version
    src = pathlib.Path(__file__).resolve().parents[2] / "VERSION"
    if (src.parent / "pyproject.toml").is_file() and src.is_file():
        return src.read_text().strip()
    try:
        return metadata.version("iopulse")
    except metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = _version()
