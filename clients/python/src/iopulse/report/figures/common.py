"""What the figures share: matplotlib set up for files (no display, names drawn as text),
latency ticks in ns/µs/ms/s, a layout in inches (no layout engine: every position is known
before drawing, so labels can be measured), the phase strip above a time axis and the
numbered phase key below a figure."""
from __future__ import annotations

import math
from typing import Any, Optional

from ...data import require
from .shape import PhaseEntry, lane_count

FONT = 8
KEY_FONT = 7.5
MONO = "DejaVu Sans Mono"       # bundled with matplotlib; its advance is 0.602 em
MONO_ADVANCE = 0.602
LANE_IN = 0.2                   # height of one phase strip row
KEY_CHARS = 72                  # longest key line
LEGEND_CHARS = 28
PARENT_GREY = "0.82"
EDGE_GREY = "0.55"


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or MissingExtra naming the report extra."""
    mpl = require("matplotlib", "plots")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def rc(plt: Any) -> dict[str, Any]:
    """Phase, device and thread names are text: '$' never starts mathtext, nothing goes to
    TeX."""
    out: dict[str, Any] = {"text.usetex": False, "font.size": FONT}
    if "text.parse_math" in plt.rcParams:       # matplotlib >= 3.5
        out["text.parse_math"] = False
    return out


def fmt_ns(v: float) -> str:
    """A latency as people write it: 850 ns, 20 µs, 1.5 ms, 2 s."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if v >= scale * 0.9995:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.3g} ns"


def latency_axis(axis: Any, lo: float, hi: float, length: float, minor: bool = True) -> None:
    """A log axis in ns from lo to hi, length inches long, with ticks labelled in
    ns/µs/ms/s: 1, 2 and 5 per decade, or 1 and 3, or only the decades, as many as the
    length holds without crowding; minor ticks unlabelled (none if not minor)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    if axis.axis_name == "y":
        axis.axes.set_yscale("log")
        axis.axes.set_ylim(lo, hi)
    else:
        axis.axes.set_xscale("log")
        axis.axes.set_xlim(lo, hi)
    decades = max(math.log10(hi / lo), 0.1)
    room = max(2, int(length * 72 / (FONT * 2.4)))
    for subs in ((1.0, 2.0, 5.0), (1.0, 3.0), (1.0,)):
        if decades * len(subs) <= room:
            break
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=room + 1))
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt_ns(v)))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=99)
                           if minor else NullLocator())
    axis.set_minor_formatter(NullFormatter())


def fmt_count(v: float) -> str:
    """A rate or count on a log colour bar: 0.1, 5, 20, 1k, 50k, 2M (never mathtext)."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale * 0.9995:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


def log_colourbar(cb: Any, length: float) -> None:
    """Ticks of a colour bar length inches long on a LogNorm, labelled as plain numbers: 1,
    2 and 5 per decade, or only the decades, as many as it holds without crowding."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    decades = max(math.log10(cb.norm.vmax / cb.norm.vmin), 0.1)
    room = max(2, int(length * 72 / (FONT * 2.4)))
    subs = (1.0, 2.0, 5.0) if decades * 3 <= room else (1.0,)
    cb.ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=room + 1))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_count(v)))
    cb.ax.yaxis.set_minor_formatter(NullFormatter())


def leaf_colour(e: PhaseEntry) -> Any:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return cmap(e.leaf_index % 10)


def ellipsize(s: str, n: int) -> str:
    """s on one line, cut to n characters with an ellipsis."""
    s = "".join(" " if c.isspace() else c for c in s)
    return s if len(s) <= n else s[:max(1, n - 1)] + "…"


class Sheet:
    """A figure laid out in inches from the top: rows of fixed height across the width
    between the margins."""

    def __init__(self, width: float, left: float = 0.9, right: float = 0.3,
                 top: float = 0.15, bottom: float = 0.15) -> None:
        self.width, self.left, self.right, self.top, self.bottom = width, left, right, top, bottom
        self.rows: list[tuple[float, float]] = []     # (height, gap after)

    def row(self, height: float, gap: float = 0.0) -> int:
        self.rows.append((height, gap))
        return len(self.rows) - 1

    @property
    def height(self) -> float:
        return self.top + self.bottom + sum(h + g for h, g in self.rows)

    def figure(self, plt: Any) -> Any:
        return plt.figure(figsize=(self.width, self.height))

    def rect(self, i: int, left: Optional[float] = None, right: Optional[float] = None
             ) -> list[float]:
        """[x, y, w, h] in figure fractions of row i, between the margins (in inches)."""
        left = self.left if left is None else left
        right = self.right if right is None else right
        y = self.top + sum(h + g for h, g in self.rows[:i])
        h = self.rows[i][0]
        H = self.height
        return [left / self.width, 1 - (y + h) / H, (self.width - left - right) / self.width,
                h / H]

    def cells(self, i: int, n: int, gap: float) -> list[list[float]]:
        """Row i split into n cells gap inches apart."""
        x, y, w, h = self.rect(i)
        g = gap / self.width
        cw = (w - (n - 1) * g) / n
        return [[x + j * (cw + g), y, cw, h] for j in range(n)]

    def text_row(self, fig: Any, i: int, text: str, size: float = 10) -> Any:
        """A title: text at the row's left edge, vertically centred."""
        x, y, _, h = self.rect(i, left=0.15)
        return fig.text(x, y + h / 2, text, ha="left", va="center", fontsize=size,
                        fontweight="bold")


def strip_height(entries: list[PhaseEntry]) -> float:
    return max(1, lane_count(entries)) * LANE_IN


def draw_strip(fig: Any, ax: Any, entries: list[PhaseEntry], xlim: tuple[float, float]) -> None:
    """The phases as bars in rows over the time axis: parents (a fio command around its
    jobs) in rows above their children, each bar labelled with its number (a parent also
    with its name) where the label fits without touching another."""
    from matplotlib.patches import Rectangle

    lanes = max(1, lane_count(entries))
    ax.set_xlim(*xlim)
    ax.set_ylim(lanes, 0)
    ax.set_axis_off()
    renderer = fig.canvas.get_renderer()
    right_edge: dict[int, float] = {}
    for e in sorted(entries, key=lambda e: (e.lane, e.start_s)):
        a, b = max(e.start_s, xlim[0]), min(e.end_s, xlim[1])
        if b <= a:
            continue
        colour = PARENT_GREY if not e.leaf else leaf_colour(e)
        ax.add_patch(Rectangle((a, e.lane + 0.08), b - a, 0.84, facecolor=colour,
                               edgecolor="white", lw=0.6, alpha=1.0 if not e.leaf else 0.45))
        x0 = ax.transData.transform((a, 0))[0]
        x1 = ax.transData.transform((b, 0))[0]
        short = str(e.number)
        cands = [short]
        if not e.leaf:
            full = f"{short} {e.phase.name}"
            step = max(1, len(full) // 8)
            cands = [ellipsize(full, n) for n in range(len(full), len(short) + 2, -step)] + cands
        for i, text in enumerate(cands):
            t = ax.text((a + b) / 2, e.lane + 0.5, text, ha="center", va="center",
                        fontsize=7, clip_on=False)
            bb = t.get_window_extent(renderer)
            fits = x0 - 1 <= bb.x0 and bb.x1 <= x1 + 1
            if bb.x0 > right_edge.get(e.lane, -math.inf) + 2 and bb.x0 >= 0 and \
                    bb.x1 <= fig.bbox.x1 and (fits or i == len(cands) - 1):
                right_edge[e.lane] = bb.x1
                break
            t.remove()


def phase_edges(ax: Any, entries: list[PhaseEntry]) -> None:
    """Thin lines at the leaf phases' edges (the strip above says which phase is which)."""
    xs = sorted({x for e in entries if e.leaf for x in (e.start_s, e.end_s)})
    for x in xs:
        ax.axvline(x, color=EDGE_GREY, lw=0.5, ls=(0, (3, 3)), zorder=3)


def _key_lines(entries: list[PhaseEntry]) -> list[str]:
    w = len(str(max((e.number for e in entries), default=1)))
    out = []
    for e in entries:
        p = e.phase
        line = f"{e.number:>{w}} {p.name}  {e.start_s:.1f}-{e.end_s:.1f} s"
        if p.end_inferred:      # its tool never marked the end (a fio job that died)
            line += " (end inferred)"
        if e.children:
            kids = sorted(e.children)
            span = f"{kids[0]}-{kids[-1]}" if kids == list(range(kids[0], kids[-1] + 1)) \
                else ",".join(map(str, kids))
            line += f"  holds {span}"
        if p.labels:
            line += "  " + p.label_text()
        out.append(line)
    return out


def key_layout(entries: list[PhaseEntry], width: float) -> tuple[int, int, int]:
    """(columns, rows, characters per column) of the key across width inches."""
    if not entries:
        return 0, 0, 0
    chars = int(width * 72 / (MONO_ADVANCE * KEY_FONT))
    longest = min(KEY_CHARS, max(len(s) for s in _key_lines(entries)))
    cols = max(1, min(len(entries), chars // (longest + 3)))
    rows = math.ceil(len(entries) / cols)
    return cols, rows, chars // cols - 3


def key_height(entries: list[PhaseEntry], width: float) -> float:
    _, rows, _ = key_layout(entries, width)
    return 0.0 if not rows else (rows + 1) * KEY_FONT * 1.3 / 72


def draw_key(fig: Any, ax: Any, entries: list[PhaseEntry], width: float) -> None:
    """Every phase of the run, numbered as in the strip and the panels: name, start and end
    (seconds since the run started), the phases a parent holds, labels; in columns that
    are read downwards."""
    ax.set_axis_off()
    cols, rows, chars = key_layout(entries, width)
    if not rows:
        return
    lines = _key_lines(entries)
    line_h = 1.0 / (rows + 1)
    ax.text(0, 1, "phases", ha="left", va="top", fontsize=KEY_FONT, fontweight="bold",
            transform=ax.transAxes)
    for i, line in enumerate(lines):
        c, r = divmod(i, rows)
        ax.text(c / cols, 1 - (r + 1) * line_h, ellipsize(line, chars), ha="left", va="top",
                fontsize=KEY_FONT, family=MONO, transform=ax.transAxes)


def legend_right(ax: Any, **kw: Any) -> Any:
    """A legend in the right margin, beside the axes' top."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                     fontsize=7.5, frameon=False, **kw)


def time_axis(ax: Any, xlim: tuple[float, float]) -> None:
    ax.set_xlim(*xlim)
    ax.set_xlabel("seconds since the run started")


def steps(start: list[float], end: list[float], values: list[float]) -> tuple[list[float],
                                                                             list[float]]:
    """x, y of a step line: each value held over its interval, broken where the intervals
    leave a gap."""
    xs: list[float] = []
    ys: list[float] = []
    for a, b, v in zip(start, end, values):
        if xs and a > xs[-1] + 1e-6:
            xs.append(math.nan)
            ys.append(math.nan)
        xs += [a, b]
        ys += [v, v]
    return xs, ys
