"""Tables that fit a terminal: every column shown at any width, no cell ever cut.

A table is key columns (which row it is: phase, host, device, op) and value columns. When it
is wider than the terminal it is folded: several tables one below the other, each with the
key columns and as many of the value columns as fit, in order, a group of columns (qwait
p50/p99/p99.9) kept together where it fits. When the key columns and one value column do not
fit, each row becomes lines of 'column: value'. Headers wrap at their spaces ('qwait p99.9
(µs)' over three lines); cells never wrap, except in columns marked wrap (free text such as
phase labels), which fold onto more lines. Every cell and title is plain text: a name such as
'fill [bs=128k]' is never read as Rich markup, and control characters a daemon or a run file
put in a name (ESC, BEL) are escaped as report escapes them ('\\x1b'), never sent to the
terminal.
"""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass, field
from typing import Any, Optional

from rich.cells import cell_len

MIN_WRAP = 16       # a wrap column is never made narrower than this,
MAX_WORD = 30       # nor than its longest word up to this many characters


@dataclass(frozen=True)
class Col:
    header: str
    left: bool = False      # text, left-justified; numbers are right-justified
    group: str = ""         # value columns of one group are folded together when they fit
    wrap: bool = False      # free text that may fold onto several lines


def plain(s: str) -> str:
    """A name as one line of text: control and other unprintable characters escaped as
    Python writes them (\\n, \\x1b, \\x07), so no terminal ever reads them."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)


@dataclass
class Grid:
    """A table as plain text cells, before it is laid out for a width (cells and title
    escaped with plain())."""
    title: str
    keys: list[Col]
    values: list[Col]
    rows: list[list[str]] = field(default_factory=list)
    ends: list[bool] = field(default_factory=list)     # a rule below the row

    def __post_init__(self) -> None:
        self.title = plain(self.title)
        self.rows = [[plain(c) for c in r] for r in self.rows]

    @property
    def columns(self) -> list[Col]:
        return self.keys + self.values

    def add(self, cells: list[str], end: bool = False) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} "
                             "columns")
        self.rows.append([plain(c) for c in cells])
        self.ends.append(end)

    def end_section(self) -> None:
        if self.ends:
            self.ends[-1] = True

    def widths(self) -> list[int]:
        """Each column's width: its widest cell, and at least its header's longest word."""
        out = []
        for i, c in enumerate(self.columns):
            words = [cell_len(w) for w in c.header.split()] or [1]
            cells = [cell_len(r[i]) for r in self.rows]
            out.append(max(words + cells))
        return out


def table_width(widths: list[int]) -> int:
    """Characters a table of these column widths takes (see _table: one space of padding on
    each side of a column, collapsed between columns)."""
    return sum(widths) + 2 * len(widths)


def _floor(g: Grid, i: int) -> int:
    """How narrow a wrap column may become: MIN_WRAP, or its longest word up to MAX_WORD."""
    words = [cell_len(x) for r in g.rows for x in r[i].split()]
    return max(MIN_WRAP, min(max(words, default=0), MAX_WORD))


def _narrow(g: Grid, w: list[int], width: int) -> list[int]:
    """Widths with the wrap columns narrowed (see _floor) so that the table comes as close
    to width as they allow."""
    w = list(w)
    floor = {i: _floor(g, i) for i, c in enumerate(g.columns) if c.wrap}
    wrap = [i for i in floor if w[i] > floor[i]]
    over = table_width(w) - width
    while over > 0 and wrap:
        i = max(wrap, key=lambda j: w[j] - floor[j])
        cut = min(over, w[i] - floor[i])
        w[i] -= cut
        over -= cut
        wrap = [j for j in wrap if w[j] > floor[j]]
    return w


def fold(g: Grid, width: int) -> Optional[list[list[int]]]:
    """The value columns (indexes into g.values) of each table the grid folds into at width;
    None when not even the key columns and one value column fit (one record per row then)."""
    w = _narrow(g, g.widths(), width)
    nk = len(g.keys)
    kw, vw = w[:nk], w[nk:]
    if not g.values:
        return [[]] if table_width(kw) <= width else None
    if table_width(kw + [max(vw)]) > width:
        return None
    room = width - table_width(kw)

    def cost(cols: list[int]) -> int:
        return sum(vw[i] + 2 for i in cols)

    groups: list[list[int]] = []
    for i, c in enumerate(g.values):
        if groups and c.group and g.values[groups[-1][-1]].group == c.group:
            groups[-1].append(i)
        else:
            groups.append([i])
    parts: list[list[int]] = [[]]
    for grp in groups:
        if cost(parts[-1] + grp) <= room:
            parts[-1] += grp
            continue
        if parts[-1] and cost(grp) <= room:
            parts.append(list(grp))
            continue
        for i in grp:                   # a group wider than a table: column by column
            if parts[-1] and cost(parts[-1] + [i]) > room:
                parts.append([])
            parts[-1].append(i)
    return parts


def _new_table(title: str) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    return Table(title=Text(title) if title else None, title_justify="left",
                 box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True, expand=False)


@functools.lru_cache(maxsize=1)
def _first_width_extra() -> int:
    """What the first column's width must be given beyond its text: 0 where rich takes a
    column's width as its text's (rich 13), 1 where it counts the table's left edge padding
    in it (rich 15). Measured once on a one-character column."""
    from rich.console import Console
    from rich.text import Text

    t = _new_table("")
    t.add_column(Text("#"), width=1, no_wrap=False, overflow="fold")
    out = io.StringIO()
    Console(file=out, width=20, color_system=None, legacy_windows=False).print(t)
    return 0 if "#" in out.getvalue() else 1


def _table(g: Grid, cols: list[int], w: list[int], title: str) -> Any:
    from rich.text import Text

    t = _new_table(title)
    for n, i in enumerate(cols):
        c = g.columns[i]
        t.add_column(Text(c.header), justify="left" if c.left else "right",
                     width=w[i] + (_first_width_extra() if n == 0 else 0),
                     no_wrap=False, overflow="fold")
    for r, end in zip(g.rows, g.ends):
        t.add_row(*[Text(r[i]) for i in cols], end_section=end)
    return t


def _records(g: Grid, width: int) -> list[Any]:
    """One row per block of 'column: value' lines, for a terminal narrower than the keys."""
    from rich.text import Text

    out: list[Any] = [Text(g.title, overflow="fold")] if g.title else []
    nk = len(g.keys)
    keys: list[str] = [""] * nk
    for r in g.rows:
        keys = [r[i] or keys[i] for i in range(nk)]    # a blank key repeats the one above
        out.append(Text(" ".join(f"{c.header} {v}" for c, v in zip(g.keys, keys) if v),
                        style="bold", overflow="fold"))
        for c, v in zip(g.values, r[nk:]):
            out.append(Text(f"  {c.header}: {v}", overflow="fold"))
    return out


def _widen(g: Grid, cols: list[int], w: list[int], width: int) -> list[int]:
    """Widths with every header on one line when the room left allows it (else as they
    were: a table of headers on one line and headers on three is harder to read)."""
    wide = list(w)
    for i in cols:
        if not g.columns[i].wrap:
            wide[i] = max(w[i], cell_len(g.columns[i].header))
    return wide if table_width([wide[i] for i in cols]) <= width else w


def layout(g: Grid, width: int) -> list[Any]:
    """Rich renderables showing the whole grid within width columns."""
    parts = fold(g, width)
    if parts is None:
        return _records(g, width)
    narrow = _narrow(g, g.widths(), width)
    nk = len(g.keys)
    out = []
    for n, p in enumerate(parts, 1):
        title = g.title if len(parts) == 1 else f"{g.title} ({n}/{len(parts)})"
        cols = list(range(nk)) + [nk + i for i in p]
        if n > 1:
            from rich.text import Text
            out.append(Text(""))
        out.append(_table(g, cols, _widen(g, cols, narrow, width), title))
    return out


def render(g: Grid, width: int) -> Any:
    from rich.console import Group

    return Group(*layout(g, width))


class Fit:
    """A renderable that lays its grids out at the width it is given (the terminal's, or
    Live's on every refresh). Grids given as a tuple are a choice: the one folded into the
    fewest tables, the first of those (the most telling keys) on a tie."""

    def __init__(self, *items: Any) -> None:
        self.items = items

    def __rich_console__(self, console: Any, options: Any) -> Any:
        width = options.max_width
        for item in self.items:
            if isinstance(item, tuple):
                if not item:
                    continue

                def tables(x: Grid) -> float:
                    parts = fold(x, width)
                    return float("inf") if parts is None else len(parts)
                g = min(item, key=tables)
            else:
                g = item
            if isinstance(g, Grid):
                yield from layout(g, width)
            else:
                yield g
