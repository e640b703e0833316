#!/usr/bin/env python3
"""The configuration reference (docs/config.md, from which iopulse.yaml(5) is made) and the
installed example config (etc/iopulse.yaml) name the same keys with the same defaults."""
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def flatten(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def documented():
    keys = {}
    for ln in (ROOT / "docs" / "config.md").read_text().splitlines():
        m = re.match(r"\|\s*`([a-z_.]+)`\s*\|[^|]*\|\s*(.*?)\s*\|", ln)
        if m:
            keys[m.group(1)] = m.group(2)
    return keys


def same(doc_default: str, value) -> bool:
    d = doc_default.strip("`")
    if isinstance(value, bool):
        return d == ("true" if value else "false")
    if isinstance(value, list):
        return yaml.safe_load(d) == value
    return d.strip('"') == str(value)


def main() -> int:
    example = dict(flatten(yaml.safe_load((ROOT / "etc" / "iopulse.yaml").read_text())))
    doc = documented()
    errors = [f"etc/iopulse.yaml has '{k}', docs/config.md does not" for k in example
              if k not in doc]
    errors += [f"docs/config.md has '{k}', etc/iopulse.yaml does not" for k in doc
               if k not in example]
    errors += [f"'{k}': docs/config.md says default {doc[k]}, etc/iopulse.yaml has {v!r}"
               for k, v in example.items() if k in doc and not same(doc[k], v)]
    for e in errors:
        print(e)
    print(f"{len(example)} keys in etc/iopulse.yaml, {len(doc)} in docs/config.md, "
          f"{len(errors)} differences")
    return 1 if errors or len(doc) < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
