#!/usr/bin/env python3
"""The C include graph has no circle.

Every quoted include in src/ and bpf/ names a bare file name, found through the include
directories of meson.build's src_inc, and each name lives in one place; what the BPF programs
include lives in bpf/ (they are built with -I bpf alone). Then:

- no header reaches itself through the headers it includes;
- no two units reach each other. A unit is a header and the files that implement it: x.c
  belongs to x.h beside it, and a .c file without a header of its own (config_server.c) to the
  longest name it starts with that has one (config.h); so does a header without a .c whose
  name starts with another header's (config_keys.h: the tables config.c and config_server.c
  define). Unit a depends on unit b when a file of a includes a header of b. A circle between
  units means each side calls into the other (a.c includes b.h and b.c includes a.h), so
  neither can be built, tested or read without the other. A header of its own without any .c
  (interval.h, iopulse.h) is a unit that implements nothing: it joins a circle only through
  the headers it includes.

Files under tests/ include the daemon's headers the same way, never with a "../". The checker
first proves on a made-up tree that it finds each kind of problem.
"""
import pathlib
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# made by the build (protoc-c, bpftool): not in the source tree
GENERATED = re.compile(r"(.*\.pb-c\.h|.*\.skel\.h|vmlinux\.h)$")


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def unit_of(path):
    """The header that names path's unit (a header is its own unless it has no .c and a
    shorter name has a header: config_keys.h is config's), or None for a lone .c file."""
    parts = path.stem.split("_")
    longest = len(parts)
    if path.suffix == ".h":
        if path.with_suffix(".c").is_file():
            return path
        longest -= 1
    for n in range(longest, 0, -1):
        h = path.with_name("_".join(parts[:n]) + ".h")
        if h.is_file():
            return h.resolve()
    return path if path.suffix == ".h" else None


class Tree:
    def __init__(self, root):
        self.root = root.resolve()
        self.errors = []
        text = (self.root / "meson.build").read_text()
        m = re.search(r"^src_inc\s*=\s*include_directories\(([^)]*)\)", text, re.M)
        if not m:
            raise SystemExit("meson.build: no src_inc = include_directories(...)")
        self.dirs = [self.root / d for d in re.findall(r"'([^']+)'", m.group(1))]
        self.bpf = self.root / "bpf"

    def rel(self, p):
        return str(p.relative_to(self.root))

    def resolve(self, name, where):
        """The file an include of name in where reaches: its own directory first, then the
        include directories (bpf/ alone for the BPF programs and bpf/'s headers)."""
        bpf = where.parent == self.bpf or where.name.endswith(".bpf.c")
        dirs = [where.parent] + ([self.bpf] if bpf else self.dirs)
        found = [d / name for d in dirs if (d / name).is_file()]
        if found:
            return found[0].resolve()
        if not GENERATED.fullmatch(name):
            self.errors.append(f'{self.rel(where)}: "{name}" is not in ' +
                               ("bpf/ (BPF programs see only it)" if bpf else
                                "its directory or src_inc"))
        return None

    def check(self):
        err = self.errors
        sources = sorted(p.resolve() for p in (self.root / "src").rglob("*.[ch]"))
        sources += sorted(p.resolve() for p in self.bpf.glob("*.[ch]"))
        tests = sorted(p.resolve() for p in (self.root / "tests").rglob("*.[ch]"))
        err += [f"src_inc names {self.rel(d)}, which is not a directory"
                for d in self.dirs if not d.is_dir()]
        seen = {}
        for d in self.dirs:
            for h in sorted(d.glob("*.h")):
                if h.name in seen:
                    err.append(f"{h.name} is in both {self.rel(seen[h.name])} and "
                               f"{self.rel(d)}")
                seen.setdefault(h.name, d)
        for f in sources:
            err += [f'{self.rel(f)}: "{n}": include the bare name, found through src_inc'
                    for n in includes(f) if "/" in n]
        for f in tests:
            err += [f'{self.rel(f)}: "{n}": no "../" includes' for n in includes(f)
                    if ".." in n]

        edges = {}   # file -> the files its quoted includes reach
        for f in sources + tests:
            edges[f] = {r for n in includes(f) if (r := self.resolve(n, f))}

        headers = {f: {t for t in e if t.suffix == ".h"} for f, e in edges.items()
                   if f.suffix == ".h"}
        for comp in cycles(headers):
            err.append("headers include each other: " + ", ".join(self.rel(h) for h in comp))

        units, why = {}, {}
        for f in sources:
            if f.name.endswith(".bpf.c"):
                continue
            u = unit_of(f)
            if u is None:   # main.c: nothing includes it, it can be in no circle
                continue
            units.setdefault(u, set())
            for h in edges[f]:
                t = unit_of(h) if h.suffix == ".h" else None
                if t is not None and t != u:
                    units[u].add(t)
                    why.setdefault((u, t), (f, h))
        for comp in cycles(units):
            inside = set(comp)
            ev = [f"{self.rel(why[(u, t)][0])} includes {why[(u, t)][1].name}"
                  for u in comp for t in sorted(units[u]) if t in inside]
            err.append("units reach each other: " + ", ".join(u.stem for u in comp) +
                       " (" + "; ".join(ev) + ")")
        self.counts = (len(sources), len(headers), len(units))
        return err


def selftest():
    """Each kind of problem, in a made-up tree, is found."""
    files = {
        "meson.build": "src_inc = include_directories('src', 'src/util', 'bpf')\n",
        "bpf/shared.h": "",
        "bpf/prog.bpf.c": '#include "vmlinux.h"\n#include "shared.h"\n#include "mathx.h"\n',
        "src/util/mathx.h": "",
        "src/util/alpha.h": '#include "shared.h"\n',
        "src/util/alpha.c": '#include "alpha.h"\n#include "beta.h"\n',
        "src/util/beta.h": "",
        "src/util/beta.c": '#include "beta.h"\n',
        "src/util/beta_part.c": '#include "alpha.h"\n',
        "src/util/x.h": '#include "y.h"\n',
        "src/util/y.h": '#include "x.h"\n',
        "src/util/old.c": '#include "../../bpf/shared.h"\n#include "nowhere.h"\n',
        "src/shared.h": "",
        "tests/t.c": '#include "../src/util/alpha.h"\n#include "alpha.h"\n',
    }
    want = [
        '"mathx.h" is not in bpf/',
        "shared.h is in both src and bpf",
        '"../../bpf/shared.h": include the bare name',
        '"nowhere.h" is not in its directory',
        'tests/t.c: "../src/util/alpha.h": no "../"',
        "headers include each other: src/util/x.h, src/util/y.h",
        "units reach each other: alpha, beta (src/util/alpha.c includes beta.h; "
        "src/util/beta_part.c includes alpha.h)",
        "units reach each other: x, y",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        errors = Tree(root).check()
    missed = [w for w in want if not any(w in e for e in errors)]
    for w in missed:
        print(f"self-test: the checker did not find: {w}")
    if len(errors) != len(want):
        print("self-test: found " + "; ".join(errors))
    return not missed and len(errors) == len(want)


def main() -> int:
    if not selftest():
        return 1
    tree = Tree(pathlib.Path(__file__).resolve().parents[2])
    errors = tree.check()
    for e in errors:
        print(e)
    n_sources, n_headers, n_units = tree.counts
    print(f"{n_sources} files in src/ and bpf/, {n_headers} headers, {n_units} units, "
          f"{len(errors)} problems")
    return 1 if errors or n_units < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
