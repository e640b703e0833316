"""iopulse compare: two configurations, each one or more repeated runs."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

from ..analysis.compare import (BETTER, CHANCE, NOISE, SMALL, VERDICTS, WORSE, Change,
                                Comparison,
                       PhaseComparison, SameRun, SettingChange, comparison)
from ..record.reader import load
from .common import EXIT_OK, EXIT_USAGE, console, printable

HELP = "compare runs: per phase, device and metric, each run's value, the change and a verdict"
EXAMPLES = """examples:
  iopulse compare base1.iopulse base2.iopulse -- tuned1.iopulse tuned2.iopulse
  iopulse compare qd1-*.iopulse -- qd16-*.iopulse --device loop0
  iopulse compare before.iopulse -- after.iopulse --format markdown -o compare.md
  iopulse compare a*.iopulse -- b*.iopulse --exclude 'dm-*' --all --min-change 5

Each run's value is the report's. With two or more runs on each side, a change is flagged
when Student's t-test on the logarithms of the per-run values gives p < 0.05 and the change
is at least --min-change percent (default 10; a queue-wait or service latency: percent of the
total latency), on a device under test. 'detectable' is the smallest change these runs could
tell from noise. The devices under test of a phase are those with at least half the busiest
device's IOs (a loop or dm device before the disk under it) and those with IO in it whose
settings differ between the sides, or those given with --device;
the others are listed after them and never flagged. With one run on a side nothing is judged:
record each configuration at least twice. Phases keep the runs' order and match by name and
order; labels and device settings that differ are shown. A recording given twice (the same
file, or a copy of it: the same recording session) is refused (exit 2): it would count as two
runs and make its own noise look like a change; alone on each side, it is noted."""
CONNECTS = False
OPTIONS_WITH_VALUE = ("--format", "--min-change", "-o", "--output", "--device", "--exclude",
                      "--target", "--timeout", "--connect-timeout")
INDENT = 4          # continuation lines of a folded row


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("runs", nargs="+", metavar="RUN",
                   help="BASE runs, then --, then the OTHER runs")
    # the OTHER runs (after --) are split off before argparse sees them: args.other
    s.add_argument("--format", choices=("table", "markdown", "json", "html"), default="table",
                   help="table (terminal, default; rows fold to fit its width), markdown, "
                        "json (every value of every run), or html (flagged changes coloured)")
    s.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="write here instead of standard output (markdown, json, html)")
    s.add_argument("--min-change", type=float, default=10.0, metavar="PCT",
                   help="smallest change in percent that is flagged (default 10)")
    s.add_argument("--device", action="append", metavar="NAME",
                   help="compare only these devices (a name or a shell pattern, 'loop*'; "
                        "repeatable); all of them are devices under test")
    s.add_argument("--exclude", action="append", metavar="NAME",
                   help="leave out these devices (a name or a shell pattern; repeatable)")
    s.add_argument("--match", choices=("host", "device", "osd"), default="host",
                   help="how rows of the two sides match: host (default: by host and device; "
                        "runs of one host by device alone), device (by device name whatever "
                        "the host: a name's rows of every host merged exactly, so a one-host "
                        "baseline meets a two-host run), osd (by Ceph OSD: every device of "
                        "osd.N, on whatever host, one row)")
    s.add_argument("--all", action="store_true",
                   help="every metric of every device and op (default: every metric of the "
                        "devices under test, IOPS and total p99 of the others)")


# ---- values as text ----------------------------------------------------------------------

def _unit(c: Change) -> tuple[str, float]:
    """The unit a row's values are shown in, and its size in the metric's own unit."""
    if c.spec.unit != "ns":
        return c.spec.unit, 1.0
    # the unit of the smaller side's mean: 0.11-1.2 ms reads 110 .. 1,200 us, three digits
    means = [m for m in (c.base_mean, c.other_mean) if m]
    low = min(means) if means else 0.0
    for name, size in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if low >= size:
            return name, size
    return "ns", 1.0


def _num(v: Optional[float], sign: bool = False, whole: bool = False) -> str:
    if v is None:
        return "-"
    a, s = abs(v), "+" if sign else ""
    if whole or a >= 100 or a == 0:
        return f"{v:{s},.0f}"
    return f"{v:{s}.1f}" if a >= 10 else f"{v:{s}.2f}"


def _pct(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return f"{v:+.0f}%" if abs(v) >= 100 else f"{v:+.1f}%"


def _metric_name(c: Change) -> str:
    unit, _ = _unit(c)
    return c.spec.header if c.spec.unit != "ns" else f"{c.spec.header} {unit}"


def _cells(c: Change, runs: bool, hosts: bool) -> list[str]:
    unit, size = _unit(c)
    whole = c.spec.unit == "IOPS"

    def val(v: Optional[float], sign: bool = False) -> str:
        return _num(None if v is None else v / size, sign, whole)

    def each(xs: list[float]) -> str:
        return " ".join(val(x) for x in xs) if xs else "-"
    if c.judged_on != c.stat and c.judged_pct is not None:
        change = f"{_pct(c.judged_pct)} of total"
    else:
        change = _pct(c.change_pct)
    d = c.detectable_pct
    det = "-" if d is None else (">999%" if d > 999 else f"±{d:.0f}%" if d >= 10 else
                                 f"±{d:.1f}%" if d >= 1 else f"±{d:.2g}%")
    p = "-" if c.p is None else ("<0.001" if c.p < 0.001 else f"{c.p:.3f}")
    out = ([printable(c.host)] if hosts else []) + [printable(c.device), c.op, _metric_name(c),
                                                    val(c.base_mean)]
    out += [each(c.base)] if runs else []
    out += [val(c.other_mean)] + ([each(c.other)] if runs else [])
    return out + [val(c.delta, True), change, det, p, c.verdict]


def _heads(runs: bool, hosts: bool) -> tuple[list[str], int]:
    """The column headers, and how many of them are left-aligned labels."""
    lead = (["host"] if hosts else []) + ["device", "op", "metric"]
    heads = lead + ["base"] + (["base runs"] if runs else []) + ["other"] + \
        (["other runs"] if runs else []) + ["change", "change %", "detectable", "p", "verdict"]
    return heads, len(lead)


def _left(heads: list[str], lead: int) -> set[int]:
    return set(range(lead)) | {i for i, h in enumerate(heads) if h in ("base runs",
                                                                         "other runs", "verdict")}


def _shown(c: Change, everything: bool) -> bool:
    if everything:
        return True
    if c.op == "all":
        return False            # read and write apart: "all" is in --all and the JSON
    if c.under_test and not c.only:
        return True
    return c.spec.context and (c.under_test or c.op != "discard")


def phase_heading(p: PhaseComparison, cmp: Comparison, folded: int = 0) -> str:
    name = p.name + (f" #{p.occurrence + 1}" if p.occurrence else "")
    parts = [("  " * p.depth) + "phase " + name]
    if p.labels_changed:
        parts.append(", ".join(f"{k} {a or '(none)'} -> {b or '(none)'}"
                               for k, (a, b) in p.labels_changed.items()))
    if p.only:
        n, of = (p.base_runs, len(cmp.base)) if p.only == "base" else \
            (p.other_runs, len(cmp.other))
        parts.append(f"only in the {p.only} runs ({n} of {of})")
    else:
        lo, hi = (f"{f(p.base_seconds + p.other_seconds):.1f}" for f in (min, max))
        parts.append(f"runs {p.base_runs} + {p.other_runs}, {lo if lo == hi else lo + '-' + hi} s")
    dut = ", ".join(f"{h}:{d}" if h else d for h, d in p.under_test)
    parts.append(f"under test: {dut}" if dut else "no IO")
    if folded:
        parts.append(f"{folded} row{'s' * (folded != 1)} as in an earlier phase, shown there")
    return "; ".join(parts)


def settings_lines(changes: list[SettingChange]) -> list[str]:
    """One line per setting that differs, a changed scheduler first with the tunables of
    each side's scheduler together on the line after it."""
    sched = {(s.host, s.key[:-len(".scheduler")]): s for s in changes
             if s.key.endswith(".scheduler")}
    tunables: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    rest = []
    for s in changes:
        dev, sep, name = s.key.partition(".iosched.")
        if sep and (s.host, dev) in sched:
            tunables.setdefault((s.host, dev), []).append((name, s.base, s.other))
        elif not s.key.endswith(".scheduler"):
            rest.append(str(s))
    # devices whose scheduler and tunables changed alike share one line: four OSD disks
    # retuned the same way are one change, not four copies of it
    alike: dict[tuple, list[str]] = {}
    for (host, dev), s in sched.items():
        kv = tuple(" ".join(f"{n}={v[i]}" for n, *v in tunables.get((host, dev), []) if v[i])
                   or "(none)" for i in (0, 1)) if (host, dev) in tunables else None
        alike.setdefault((host, s.base, s.other, kv), []).append(dev)
    out = []
    for (host, base, other, kv), devs in alike.items():
        if len(devs) == 1:
            out.append(str(SettingChange(host, f"{devs[0]}.scheduler", base, other)))
        else:
            out.append(f"{host + ': ' if host else ''}scheduler {base or '(none)'} -> "
                       f"{other or '(none)'} on {len(devs)} devices: {', '.join(devs)}")
        if kv is not None:
            out.append(f"  {'its' if len(devs) == 1 else 'their'} tunables: {kv[0]} -> {kv[1]}")
    return out + rest


def _visible(cmp: Comparison, everything: bool
             ) -> tuple[list[Change], dict[tuple[str, int], int]]:
    """The changes the table shows (_shown), in the phases' order, and per phase how many
    were folded: without everything, a row identical to one an earlier phase shows (the same
    host, device, op, metric and per-run values: a fio job alone on its device in a group
    repeats the group's row) is shown once, where it came first."""
    seen: set[tuple[object, ...]] = set()
    out: list[Change] = []
    folded: dict[tuple[str, int], int] = {}
    for p in cmp.phases:
        for c in cmp.changes:
            if c.phase != p.name or c.occurrence != p.occurrence or not _shown(c, everything):
                continue
            sig = (c.host, c.device, c.op, c.stat, tuple(c.base), tuple(c.other))
            if not everything and sig in seen:
                folded[(p.name, p.occurrence)] = folded.get((p.name, p.occurrence), 0) + 1
                continue
            seen.add(sig)
            out.append(c)
    return out, folded


def header_lines(cmp: Comparison, everything: bool = False) -> list[str]:
    """The runs, the settings that differ, the rule, and the count of what the table shows
    (the changes it leaves out, such as read and write together, are counted apart)."""
    shown, folded = _visible(cmp, everything)
    judged = [c for c in shown if c.verdict in (BETTER, WORSE, NOISE, SMALL, CHANCE)]
    hidden = sum(c.flagged for c in cmp.changes) - sum(c.flagged for c in shown)
    lines = [f"base:  {len(cmp.base)} run{'s' * (len(cmp.base) != 1)}: {' '.join(cmp.base)}",
             f"other: {len(cmp.other)} run{'s' * (len(cmp.other) != 1)}: {' '.join(cmp.other)}"]
    if cmp.settings:
        lines.append("settings that differ (base -> other):")
        lines += ["  " + x for x in settings_lines(cmp.settings)]
    else:
        lines.append("settings that differ (base -> other): none, of the devices compared")
    lines.append("rule: " + cmp.rule())
    if cmp.tested:
        count = {v: sum(c.verdict == v for c in judged) for v in (NOISE, SMALL, CHANCE)}
        lines.append(f"flagged: {sum(c.flagged for c in shown)} of {len(judged)} changes "
                     f"judged on the devices under test ({count[NOISE]} within noise, "
                     f"{count[SMALL]} small"
                     + (f", {count[CHANCE]} chance" if count[CHANCE] else "") + ")"
                     + (f"; {hidden} more among the rows shown with --all (read and write "
                        "together, rows repeated in an inner phase)" if hidden else ""))
        if folded:
            lines.append(f"folded: {sum(folded.values())} rows identical to one an earlier "
                         "phase shows (a job alone on its device repeats an outer phase's), shown "
                         "there once (--all shows them)")
    else:
        lines.append(f"flagged: 0 of {len(cmp.changes)} changes (none judged: one run on a "
                     f"side)")
    lines += ["note: " + n for n in cmp.notes]
    return lines


_Group = tuple[PhaseComparison, list[Change], int]   # a phase, its rows, how many folded


def _rows(cmp: Comparison, everything: bool) -> tuple[list[str], int, bool, list[_Group]]:
    runs = len(cmp.base) > 1 or len(cmp.other) > 1
    hosts = any(c.host for c in cmp.changes)
    heads, lead = _heads(runs, hosts)
    visible, folded = _visible(cmp, everything)
    groups = []
    for p in cmp.phases:
        cs = [c for c in visible if c.phase == p.name and c.occurrence == p.occurrence]
        groups.append((p, cs, folded.get((p.name, p.occurrence), 0)))
    return heads, lead, runs, groups


# ---- the terminal table --------------------------------------------------------------------

# a folded row: the summary first, then the verdict and its numbers, each run's value last;
# the columns of a group stay on one line
FOLD_GROUPS = (("base", "other"), ("change", "change %"), ("verdict",), ("p", "detectable"),
               ("base runs", "other runs"))


def fold(heads: list[str], widths: list[int], width: int, lead: int) -> list[list[int]]:
    """The columns of each line of a row: all of them on one line when they fit in width;
    else the lead columns, then the others by FOLD_GROUPS, each line as full as fits, the
    lines after the first indented by INDENT."""
    if sum(widths) + 2 * (len(widths) - 1) <= width:
        return [list(range(len(widths)))]
    lines: list[list[int]] = [list(range(lead))]
    used = sum(widths[:lead]) + 2 * (lead - 1)
    for group in FOLD_GROUPS:
        cols = [heads.index(h) for h in group if h in heads]
        need = sum(widths[i] + 2 for i in cols)
        # a group too wide for a line of its own (many runs) goes column by column
        for part in [cols] if INDENT - 2 + need <= width else [[i] for i in cols]:
            need = sum(widths[i] + 2 for i in part)
            if part and used + need > width:
                lines.append([])
                used = INDENT - 2
            lines[-1] += part
            used += need
    return lines


def render_lines(cells: list[str], widths: list[int], layout: list[list[int]],
                 left: set[int]) -> list[str]:
    out = []
    for n, cols in enumerate(layout):
        text = "  ".join(cells[i].ljust(widths[i]) if i in left else cells[i].rjust(widths[i])
                         for i in cols)
        out.append(((" " * INDENT) if n else "") + text.rstrip())
    return out


def _table(cmp: Comparison, everything: bool) -> int:
    from rich.text import Text

    con = console()
    heads, lead, runs, groups = _rows(cmp, everything)
    hosts = "host" in heads
    cells = [(c, _cells(c, runs, hosts)) for _, cs, _ in groups for c in cs]
    widths = [max([len(h)] + [len(r[i]) for _, r in cells]) for i, h in enumerate(heads)]
    layout = fold(heads, widths, con.width, lead)
    left = _left(heads, lead)
    for line in header_lines(cmp, everything):
        con.print(Text(printable(line)))
    by = {id(c): r for c, r in cells}
    for p, cs, nfold in groups:
        con.print()
        con.print(Text(printable(phase_heading(p, cmp, nfold)), style="bold"))
        if not cs:
            continue
        for line in render_lines(heads, widths, layout, left):
            con.print(Text(line, style="bold"), soft_wrap=True)
        for c in cs:
            style = "" if not c.flagged else ("green" if c.better else "red")
            for line in render_lines(by[id(c)], widths, layout, left):
                con.print(Text(line, style=style), soft_wrap=True)
    used = {c.verdict for c, _ in cells}
    con.print()
    con.print(Text("verdicts: " + "; ".join(f"{v}: {VERDICTS[v]}" for v in VERDICTS
                                            if v in used)))
    return EXIT_OK


# ---- markdown, html, json --------------------------------------------------------------------

def _md(s: str) -> str:
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(cmp: Comparison, everything: bool) -> str:
    heads, lead, runs, groups = _rows(cmp, everything)
    hosts = "host" in heads
    out = ["# iopulse compare", ""] + [" " * (len(x) - len(x.lstrip())) + f"- {_md(x.strip())}"
                                       for x in header_lines(cmp, everything)]
    for p, cs, nfold in groups:
        out += ["", f"## {_md(phase_heading(p, cmp, nfold).strip())}", ""]
        if not cs:
            continue
        out.append("| " + " | ".join(heads) + " |")
        out.append("|" + "|".join("---" if i in _left(heads, lead) else "---:"
                                  for i in range(len(heads))) + "|")
        for c in cs:
            r = _cells(c, runs, hosts)
            if c.flagged:
                r[-1] = f"**{r[-1]}**"
            out.append("| " + " | ".join(_md(x) for x in r) + " |")
    used = {c.verdict for _, cs, _ in groups for c in cs}
    out += ["", "Verdicts:", ""] + [f"- **{v}**: {_md(VERDICTS[v])}" for v in VERDICTS
                                    if v in used]
    return "\n".join(out) + "\n"


def html_page(cmp: Comparison, everything: bool) -> str:
    import html

    from ..report.html import page, table

    heads, lead, runs, groups = _rows(cmp, everything)
    hosts = "host" in heads
    body = ["<h1>iopulse compare</h1>"] + [f"<p class=\"note\">{html.escape(x)}</p>"
                                           for x in header_lines(cmp, everything)]
    for p, cs, nfold in groups:
        body.append(f"<h2>{html.escape(phase_heading(p, cmp, nfold).strip())}</h2>")
        if cs:
            body.append(table(heads, [_cells(c, runs, hosts) for c in cs], lead,
                              [c.verdict if c.flagged else "" for c in cs]))
    used = {c.verdict for _, cs, _ in groups for c in cs}
    body.append("<ul class=\"note\">" + "".join(
        f"<li><b>{html.escape(v)}</b>: {html.escape(VERDICTS[v])}</li>" for v in VERDICTS
        if v in used) + "</ul>")
    return page("iopulse compare", body)


def _emit(path: str, text: str) -> int:
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    bpaths, opaths = list(args.runs), list(args.other)
    if not bpaths or not opaths:
        print("iopulse compare: both sides need at least one run", file=sys.stderr)
        return EXIT_USAGE
    base = [load(p) for p in bpaths]
    other = [load(p) for p in opaths]
    try:
        cmp = comparison(base, other, min_change=args.min_change, devices=args.device,
                         exclude=args.exclude, match=args.match)
    except SameRun as e:
        print(f"iopulse compare: {printable(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    if args.device and not cmp.changes:
        print(f"iopulse compare: no device with IO matches --device "
              f"{' '.join(args.device)}", file=sys.stderr)
        return EXIT_USAGE
    if args.format == "json":
        return _emit(args.output, json.dumps(cmp.to_dict(), indent=1) + "\n")
    if args.format == "markdown":
        return _emit(args.output, markdown(cmp, args.all))
    if args.format == "html":
        return _emit(args.output, html_page(cmp, args.all))
    return _table(cmp, args.all)

