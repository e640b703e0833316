"""A benchmark tool's saved output, read in bounded memory whatever the file holds."""
from __future__ import annotations

MAX_OUTPUT = 64 << 20       # the most of one output file read (fio's JSON is far smaller)


def read_output(path: str) -> str:
    """The file's text. A file over MAX_OUTPUT bytes (a sparse or runaway file) is refused
    with ValueError rather than read; OSError if it cannot be read."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(MAX_OUTPUT + 1)
    if len(text) > MAX_OUTPUT:
        raise ValueError(f"more than {MAX_OUTPUT >> 20} MiB: not a benchmark's output this "
                         "importer reads")
    return text
