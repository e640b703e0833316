#!/usr/bin/env python3
"""Every relative link in the documents resolves: its file exists, and its #anchor is a heading
of the target as GitHub names it (lower case, spaces to '-', other punctuation dropped, a
repeated heading numbered -1, -2...). Links inside code are not links; http(s) and mailto
links are not checked. With file arguments, checks those instead of the repository's."""
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+).*?\1")


def documents(root: pathlib.Path) -> list:
    files = [root / "README.md", root / "clients/python/README.md", root / "tests/vm/README.md"]
    files += sorted((root / "docs").rglob("*.md"))
    return [f for f in files if f.exists()]


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, ln in enumerate(text.splitlines(), 1):
        m = FENCE.match(ln)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, ln


def slug(heading: str) -> str:
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link in a heading: its text
    h = re.sub(r"<[^>]+>", "", h).strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path: pathlib.Path) -> set:
    seen, out = {}, set()
    for _, ln in prose_lines(path.read_text()):
        m = HEADING.match(ln)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def check(files: list) -> list:
    errors, cache = [], {}
    for doc in files:
        for n, ln in prose_lines(doc.read_text()):
            for m in LINK.finditer(CODE_SPAN.sub("", ln)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue
                path, _, anchor = target.partition("#")
                dest = (doc.parent / path).resolve() if path else doc.resolve()
                where = f"{doc}:{n}: {target}"
                if not dest.exists():
                    errors.append(f"{where}: no such file")
                    continue
                if not anchor:
                    continue
                if dest.is_dir() or dest.suffix != ".md":
                    errors.append(f"{where}: an anchor in a file that has no headings")
                    continue
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    errors.append(f"{where}: no heading '{anchor}' in {dest.name}")
    return errors


def self_test() -> list:
    """The checker itself finds a missing file and a missing anchor, and passes good links."""
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "docs").mkdir()
        (root / "docs/a.md").write_text("# A page\n\n## TLS and who may mark\n\n## vmlinux.h\n\n"
                                        "## Twice\n\n## Twice\n")
        (root / "README.md").write_text(
            "[ok](docs/a.md#tls-and-who-may-mark) [ok](docs/a.md#vmlinuxh) [ok](docs/a.md#twice-1)\n"
            "[ok](docs/) [ok](#x) `[not a link](nowhere.md)` [web](https://example.org/x)\n"
            "## x\n\n```\n[in code](nowhere.md)\n```\n"
            "[bad](docs/b.md) [bad](docs/a.md#no-such-heading) [bad](#nope)\n")
        errs = check(documents(root))
    want = ["docs/b.md: no such file", "no heading 'no-such-heading'", "no heading 'nope'"]
    bad = [w for w in want if not any(w in e for e in errs)]
    if bad or len(errs) != len(want):
        return [f"self-test: expected {want}, got {errs}"]
    return []


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    errors = self_test()
    files = [pathlib.Path(a) for a in args] if args else documents(ROOT)
    errors += check(files)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(files)} documents, {len(errors)} broken links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
