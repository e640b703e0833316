#!/usr/bin/env python3
"""Writes iopulse.yaml(5) in scdoc syntax from docs/config.md, the one source of the
configuration reference (the man page and the Markdown page cannot drift apart).

    config-man.py docs/config.md VERSION > iopulse.yaml.5.scd

Handles what docs/config.md uses: headings, paragraphs, "- " lists, ``` blocks, `code`,
**bold** and key tables (| `key` | type | default | allowed | meaning |), which become one
entry per key.
"""
from __future__ import annotations

import re
import sys


def inline(text: str) -> str:
    """Markdown inline text to scdoc: `code` and **bold** in bold, the rest escaped."""
    out = []
    for part in re.split(r"(`[^`]*`|\*\*[^*]+\*\*)", text.replace("\\|", "|")):
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append("*" + escape(part[1:-1]) + "*")
        elif part.startswith("**") and part.endswith("**"):
            out.append("*" + escape(part[2:-2]) + "*")
        else:
            out.append(escape(part))
    return "".join(out)


def escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def cells(row: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", row.strip())
    return [c.strip() for c in parts[1:-1]]


def convert(md: str, version: str) -> str:
    out = [f'iopulse.yaml(5) "iopulse {version}"', "", "# NAME", "",
           "iopulse.yaml - configuration of the iopulsed block IO telemetry agent", ""]
    lines = md.splitlines()
    i = 0
    in_code = False
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            out.append("```")
            in_code = not in_code
        elif in_code:
            out.append(ln)
        elif ln.startswith("# "):
            out += ["# DESCRIPTION", ""]
        elif ln.startswith("## "):
            out += ["# " + ln[3:].strip().upper(), ""]
        elif ln.startswith("|"):
            head = [c.lower() for c in cells(ln)]
            i += 2                      # the header and the |---| line
            while i < len(lines) and lines[i].startswith("|"):
                c = dict(zip(head, cells(lines[i])))
                allowed = c.get("allowed values", c.get("accepted", ""))
                out += [inline(c["key"]), f"\tType: {inline(c['type'])}. Default: "
                        f"{inline(c['default'])}. Allowed: {inline(allowed)}.", "",
                        "\t" + inline(c["meaning"]), ""]
                i += 1
            continue
        else:
            out.append(inline(ln))
        i += 1
    out += ["# SEE ALSO", "", "*iopulsed*(8), *iopulse*(1)", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        md = f.read()
    with open(argv[2], encoding="utf-8") as f:
        version = f.read().strip()
    sys.stdout.write(convert(md, version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
