"""The VM matrix's per-IO latency truth: blktrace's records of the guest's test disks, paired
into requests, held to iopulsed's merged histograms of each cell (matrix.py calls judge()).

blktrace, the kernel's relay tracer, shares nothing with iopulse's programs; the guest copies
its per-CPU files out and they are read here, on the host. Its times are CLOCK_MONOTONIC ns,
the clock of iopulsed and of the guest's cell windows, so a cell's IOs are the requests
completed inside its window.

pair() pairs a request as btt does: its Q is the submission of the bio that starts where it is
dispatched (D), its C the completion at that sector, and a request dispatched again keeps its
Q and takes its last D. It pairs two shapes btt gets wrong: a split part takes its parent's Q
from the X event (btt ignores X events), and a request is found by its start sector and
direction, not by btt's sector ranges. check_btt() runs btt's per-IO dump on each cell's
records and explains every request btt pairs otherwise.

compare() is the rule of tests/integration/latency_truth.py compare() (p50, p90 and p99 within
one bucket or a slack of the truth's values of ranks r-m..r, m the IOs the truth has fewer),
widened for TCG: a slack of 75 us, and k IOs that may have moved anywhere (tests/vm/README.md,
latency against blktrace).
"""
from __future__ import annotations

import bisect
import glob
import importlib.util
import os
import struct
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _load_histogram():
    """clients/python/src/iopulse/histogram.py by path: the daemon's bucket math without the
    package's gRPC and pandas imports (it imports nothing of the package at load time)."""
    path = os.path.join(REPO, "clients", "python", "src", "iopulse", "histogram.py")
    spec = importlib.util.spec_from_file_location("iopulse_histogram", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_hist = _load_histogram()
Histogram, bucket_index, rank = _hist.Histogram, _hist.bucket_index, _hist.rank

QUANTILES = (50.0, 90.0, 99.0)
# shown in results.json beside the truth's, not held: in a cell of a few hundred IOs per op
# they are its slowest one or two IOs, the very ones a host stall between two stamps moves
SHOWN = (99.9, 100.0)
# Under TCG the two tracers' stamps of one event lie tens of us apart (an interrupt served
# between the handlers: up to 62 us seen), and a host preemption of the vCPU between them
# moves an IO by milliseconds (up to 1.2% of a cell's IOs on a loaded host):
# tests/vm/README.md.
SLACK_NS = 75000
DISPLACED_PPM = 20000
METRICS = {"queue": "queue_wait_ns", "service": "service_ns", "total": "total_ns"}
TRUTH_NAME = {"queue": "Q2D", "service": "D2C", "total": "Q2C"}

# struct blk_io_trace (include/uapi/linux/blktrace_api.h), little-endian on x86
TRACE = struct.Struct("<IIQQIIIIIHH")
MAGIC = 0x65617400
# action: the low 16 bits an __BLK_TA_* (bit 8, __BLK_TA_CGROUP: the PDU starts with a
# cgroup id), the high 16 bits BLK_TC_* categories
TA_QUEUE, TA_BACKMERGE, TA_FRONTMERGE, TA_GETRQ, TA_REQUEUE, TA_ISSUE, TA_COMPLETE = \
    1, 2, 3, 4, 6, 7, 8
TA_SPLIT = 13
TA_CGROUP = 1 << 8
TC_READ, TC_WRITE, TC_FLUSH, TC_PC, TC_NOTIFY, TC_DISCARD, TC_FUA = (
    1 << 0, 1 << 1, 1 << 2, 1 << 9, 1 << 10, 1 << 13, 1 << 15)


@dataclass
class IO:
    op: str            # "read" or "write"
    sector: int
    q: int | None      # submission of the bio starting at the dispatched sector (None: unseen)
    d: int             # last dispatch
    c: int             # completion
    split: bool        # a split part, its Q its parent's
    nbytes: int        # bytes not completed yet
    flush_seq: bool    # PREFLUSH or FUA: the request ends again when its flush sequence does
    size: int = 0      # bytes
    dispatches: int = 1
    btt: str | None = None   # what btt made of it (check_btt())
    end: int = 0       # the end of its flush sequence, else its completion

    @property
    def last(self) -> int:
        return self.end or self.c


@dataclass
class Trace:
    """One disk's paired requests, in completion order, and what could not be paired."""
    ios: list[IO] = field(default_factory=list)
    splits: list[int] = field(default_factory=list)   # X event times
    split_unknown: int = 0       # X events of a bio whose Q was not seen
    no_d: int = 0                # data completions whose dispatch was not seen
    partial: int = 0             # completions of part of a request
    seq_ends: int = 0            # second completions that end a flush sequence
    passthrough: list[tuple[int, str]] = field(default_factory=list)   # (C time, direction)
    # discards: (sector, sectors, Q or else D, C), for the requests btt may pair with them
    discards: list[tuple[int, int, int, int]] = field(default_factory=list)
    same_sector: int = 0         # requests dispatched while another was in flight there


def read_events(paths: list[str]) -> list[tuple]:
    """(time, cpu, seq, action, sector, bytes, pdu, record) of every record in blktrace's
    per-CPU files, in time order (record: its bytes as blktrace wrote them)."""
    out = []
    for path in paths:
        with open(path, "rb") as f:
            b = f.read()
        off = 0
        while off + TRACE.size <= len(b):
            magic, seq, t, sector, nbytes, action, _pid, _dev, cpu, _err, pdu_len = \
                TRACE.unpack_from(b, off)
            if magic & 0xffffff00 != MAGIC:
                raise ValueError(f"{path}: bad magic {magic:#x} at {off}")
            pdu = b[off + TRACE.size:off + TRACE.size + pdu_len]
            if action & TA_CGROUP:
                pdu = pdu[8:]
            out.append((t, cpu, seq, action, sector, nbytes, pdu,
                        b[off:off + TRACE.size + pdu_len]))
            off += TRACE.size + pdu_len
        if off != len(b):
            raise ValueError(f"{path}: {len(b) - off} bytes left after the last record")
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return out


def _op(action: int) -> str | None:
    cat = action >> 16
    if cat & (TC_DISCARD | TC_PC):
        return None
    if cat & TC_WRITE:
        return "write"
    if cat & TC_FLUSH:         # REQ_OP_FLUSH: no data, READ direction
        return None
    return "read" if cat & TC_READ else None


@dataclass
class Bio:
    """A bio queued and not yet dispatched as the start of a request."""
    q: int             # its submission (a split part's: its parent's)
    end: int           # the sector after it
    split: bool
    flush_seq: bool    # PREFLUSH or FUA


def _take(bios: list[Bio], end: int | None = None) -> Bio | None:
    """Removes and returns the newest of bios that ends at end (any end: None), else the
    newest of all; None when there is none. The newest: a bio left behind at a sector (one
    merged into a request without a trace of it) never takes the place of a later one."""
    if not bios:
        return None
    for i in range(len(bios) - 1, -1, -1):
        if end is None or bios[i].end == end:
            return bios.pop(i)
    return bios.pop()


def pair(events: list[tuple]) -> Trace:
    """The disk's data requests, each with its Q, last D and C (see the module's note).

    Everything is keyed by start sector and direction, and a key may hold several bios and
    requests at once: a 4k write fio sends to the sector where the rest of a split 1 MiB
    write waits, two random reads of one sector in flight together. A G (the bio that sets
    up a request) claims the queued bio of its size; a D takes the newest claimed bio, else
    the queued one of its size; an R (requeue) marks the request its next D dispatches
    again; a C completes the request in flight at its sector that has its size left, else
    the oldest there (two of one size at one sector cannot be told apart: the truth gives
    them their completions in dispatch order)."""
    tr = Trace()
    queued: dict[tuple[int, str], list[Bio]] = {}
    claimed: dict[tuple[int, str], list[Bio]] = {}   # a G set up a request for them
    inflight: dict[tuple[int, str], list[IO]] = {}
    requeued: dict[tuple[int, str], list[IO]] = {}
    in_seq: dict[tuple[int, str], list[IO]] = {}     # data done, flush sequence not yet
    discards: dict[int, tuple[int, int]] = {}        # sector -> (sectors, Q or else D)
    for t, _cpu, _seq, action, sector, nbytes, pdu, _rec in events:
        cat, ta = action >> 16, action & 0xff
        if cat & TC_PC and ta == TA_COMPLETE:
            tr.passthrough.append((t, "write" if cat & TC_WRITE else "read"))
        if cat & (TC_NOTIFY | TC_PC):
            continue
        if cat & TC_DISCARD and nbytes:
            if ta == TA_QUEUE or (ta == TA_ISSUE and sector not in discards):
                discards[sector] = (nbytes // 512, t)
            elif ta == TA_COMPLETE and sector in discards:
                n, d = discards.pop(sector)
                tr.discards.append((sector, n, d, t))
            continue
        op = _op(action)
        if op is None:
            continue
        key = (sector, op)
        if nbytes == 0:
            # the end of a flush sequence completes the request again, its data done: no
            # bytes left. Any other event without data is an empty PREFLUSH bio's, whose
            # sector is not a request's.
            if ta == TA_COMPLETE and in_seq.get(key):
                io = in_seq[key].pop(0)
                io.end = t
                tr.seq_ends += 1
            continue
        end = sector + nbytes // 512
        if ta == TA_QUEUE:
            queued.setdefault(key, []).append(
                Bio(q=t, end=end, split=False, flush_seq=bool(cat & (TC_FLUSH | TC_FUA))))
        elif ta == TA_GETRQ:
            bio = _take(queued.get(key, []), end)
            if bio is not None:
                claimed.setdefault(key, []).append(bio)
        elif ta in (TA_BACKMERGE, TA_FRONTMERGE):
            # a bio merged into a request (a front merge makes it the request's first bio,
            # whose Q the request's D takes: it stays), or a request merged into another
            # (its claimed bio goes)
            if ta == TA_BACKMERGE:
                mine = queued.get(key, [])
                if not any(b.end == end for b in mine) and claimed.get(key):
                    claimed[key].pop()
                else:
                    _take(mine, end)
        elif ta == TA_SPLIT:
            tr.splits.append(t)
            (new,) = struct.unpack(">Q", pdu[:8])
            mine = queued.get(key, [])
            parents = [i for i, b in enumerate(mine) if b.end > new]
            if not parents:
                tr.split_unknown += 1
                continue
            parent = mine.pop(parents[-1])
            mine.append(Bio(parent.q, new, True, parent.flush_seq))
            queued.setdefault((new, op), []).append(
                Bio(parent.q, parent.end, True, parent.flush_seq))
        elif ta == TA_REQUEUE:
            if inflight.get(key):
                requeued.setdefault(key, []).append(inflight[key].pop(0))
        elif ta == TA_ISSUE:
            if requeued.get(key):           # the same request dispatched again
                io = requeued[key].pop(0)
                io.d = t
                io.dispatches += 1
                inflight.setdefault(key, []).append(io)
                continue
            bio = _take(claimed.get(key, [])) or _take(queued.get(key, []), end)
            if inflight.get(key):
                tr.same_sector += 1
            flush = bool(bio and bio.flush_seq) or bool(cat & (TC_FLUSH | TC_FUA))
            inflight.setdefault(key, []).append(IO(
                op=op, sector=sector, q=bio.q if bio else None, d=t, c=0,
                split=bool(bio and bio.split), nbytes=nbytes, size=nbytes, flush_seq=flush))
        elif ta == TA_COMPLETE:
            if not inflight.get(key):
                tr.no_d += 1
                continue
            mine = inflight[key]
            io = mine.pop(next((i for i, x in enumerate(mine) if x.nbytes == nbytes), 0))
            if nbytes < io.nbytes:      # a part of the request: the rest completes later
                tr.partial += 1
                io.nbytes -= nbytes
                inflight.setdefault((sector + nbytes // 512, op), []).insert(0, io)
                continue
            io.c = t
            tr.ios.append(io)
            if io.flush_seq:
                in_seq.setdefault(key, []).append(io)
    return tr


def read_trace(paths: list[str]) -> tuple[Trace, list[tuple]]:
    events = read_events(paths)
    return pair(events), events


# ------------------------------------------------------------------------------ btt --

def btt_pairs(events: list[tuple], t0: int, t1: int, tmp: str
              ) -> list[tuple[int, int, int, int]]:
    """btt's per-IO dump (-p) of the records between t0 and t1 (CLOCK_MONOTONIC ns) alone,
    so that what it left unpaired before stays out: (sector, Q, D, C) of every bio it paired
    whole, times as btt prints them (see check_btt()). Its input is what blkparse -d
    writes: the records in time order."""
    times = [e[0] for e in events]
    recs = [e for e in events[bisect.bisect_left(times, t0):bisect.bisect_right(times, t1)]
            if not (e[3] >> 16) & TC_NOTIFY]
    if not recs:
        return []
    binf, per = os.path.join(tmp, "cell.bin"), os.path.join(tmp, "cell.per")
    with open(binf, "wb") as f:
        f.write(b"".join(e[7] for e in recs))
    r = subprocess.run(["btt", "-i", binf, "-p", per, "-o", os.path.join(tmp, "btt")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp)
    if not os.path.exists(per):
        raise RuntimeError(f"btt exit {r.returncode}, no per-IO dump: "
                           + r.stdout.strip()[-200:])
    out = []
    cur: dict[str, tuple[int, int]] = {}

    def done():
        if "Q" in cur and "D" in cur and "C" in cur:
            out.append((cur["Q"][1], cur["Q"][0], cur["D"][0], cur["C"][0]))
        cur.clear()

    # "259,0  :     1.762910028 Q      79488+128", then G, I, D, C lines, a blank line
    with open(per) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[-2] in ("Q", "G", "I", "M", "D", "C") and "." in p[-3]:
                if p[-2] == "Q":
                    done()
                sec, _, ns = p[-3].partition(".")
                cur[p[-2]] = (int(sec) * 10**9 + int(ns), int(p[-1].split("+")[0]))
            else:
                done()
        done()
    os.unlink(per)
    return out


def check_btt(ios: list[IO], pairs: list[tuple[int, int, int, int]], splits: list[int],
              discards: list[tuple[int, int, int, int]]) -> None:
    """Marks each IO of a cell with what btt, run on the cell's records alone (pairs), made
    of it (io.btt): "same" (it paired the IO's Q with the same D and C); "split" (a split
    part: btt ignores X events, so no part contains its parent's Q); "after-split" (a split
    bio's Q stays in btt's tree for good, and its walk of that tree, which assumes no Q
    overlaps another, then passes over later bios); "overlap" (btt pairs by sector ranges,
    not by request: it gave the IO the D or C of a request, a discard included, that
    overlapped it while queued or in flight, or none); or "other", which nothing here
    explains. splits: X event times, sorted; discards: (sector, sectors, Q or D, C).

    btt prints times from a zero of its own choosing (a record's time, or none): it is the
    offset most of its bios share with ours at the same sector."""
    q_at: dict[int, list[int]] = {}
    for io in ios:
        if io.q is not None:
            q_at.setdefault(io.sector, []).append(io.q)
    offsets = Counter(q0 - q for sector, q, _, _ in pairs for q0 in q_at.get(sector, ()))
    zero = offsets.most_common(1)[0][0] if offsets else 0
    pairs = [(sector, q + zero, d + zero, c + zero) for sector, q, d, c in pairs]
    by_q = {(io.sector, io.q): io for io in ios if io.q is not None}
    for io in ios:
        io.btt = "split" if io.split else None
    for sector, q, d, c in pairs:
        io = by_q.get((sector, q))
        if io is not None and not io.split:
            io.btt = "same" if (io.d, io.c) == (d, c) else "differ"
    # every request in flight by (start, end, first sector, sectors): reads, writes, discards
    spans = sorted([(io.q if io.q is not None else io.d, io.last, io.sector, io.size // 512)
                    for io in ios] + [(d, c, sector, n) for sector, n, d, c in discards])
    starts = [sp[0] for sp in spans]
    longest = max((sp[1] - sp[0] for sp in spans), default=0)
    first = min((io.q if io.q is not None else io.d for io in ios), default=0)
    x = bisect.bisect_left(splits, first) if ios else len(splits)
    first_split = splits[x] if x < len(splits) else None     # the cell's first X event
    for io in ios:
        if io.btt in ("same", "split"):
            continue
        a = io.q if io.q is not None else io.d
        if first_split is not None and first_split < io.d:
            io.btt = "after-split"
            continue
        io.btt = "other"
        end, mine = io.sector + io.size // 512, (a, io.last, io.sector, io.size // 512)
        for sp in spans[bisect.bisect_left(starts, a - longest):
                        bisect.bisect_right(starts, io.last)]:
            if sp != mine and sp[1] >= a and sp[2] < end and io.sector < sp[2] + sp[3]:
                io.btt = "overlap"
                break


# -------------------------------------------------------------------------- compare --

@dataclass
class Verdict:
    op: str
    metric: str
    q: float
    truth_lo_ns: int
    truth_hi_ns: int
    ours_ns: int
    ok: bool
    precision: int

    def __str__(self) -> str:
        t = (f"{self.truth_hi_ns / 1e3:.1f}" if self.truth_lo_ns == self.truth_hi_ns else
             f"{self.truth_lo_ns / 1e3:.1f}-{self.truth_hi_ns / 1e3:.1f}")
        name = "max" if self.q == 100.0 else f"p{self.q:g}"
        return (f"{self.op} {self.metric} {name} {TRUTH_NAME[self.metric]} {t} us, "
                f"iopulse {self.ours_ns / 1e3:.1f} us")


def displaced(n: int) -> int:
    """How many of n IOs may have moved anywhere (DISPLACED_PPM of them, at least one)."""
    return max(1, -(-n * DISPLACED_PPM // 1000000))


def window(truth_sorted: list[int], q: float, n: int, k: int = 0) -> tuple[int, int]:
    """The truth's values that the value of rank(q, n) among n IOs can be when the truth
    holds n - m of them (latency_truth.py window(): ranks r - m .. r) and k IOs may have
    moved anywhere: ranks r - m - k .. r + k."""
    m = n - len(truth_sorted)
    r = rank(q, n)
    lo = max(r - m - k, 1)
    hi = min(r + k, len(truth_sorted))
    return truth_sorted[lo - 1], truth_sorted[max(hi, lo) - 1]


def agrees(lo_ns: int, hi_ns: int, hist, q: float) -> tuple[int, bool]:
    """iopulse's value for q and whether it lies within SLACK_NS or one bucket of the
    truth's window (latency_truth.py agrees())."""
    k = hist.precision
    ours = hist.percentile(q)
    if lo_ns - SLACK_NS <= ours <= hi_ns + SLACK_NS:
        return ours, True
    mine = bucket_index(ours, k)
    return ours, bucket_index(lo_ns, k) - 1 <= mine <= bucket_index(hi_ns, k) + 1


def compare(values: list[int], hist, op: str, metric: str,
            qs: tuple[float, ...] = QUANTILES) -> list[Verdict]:
    s = sorted(values)
    n = max(hist.count, len(s))
    out = []
    for q in qs:
        lo, hi = window(s, q, n, displaced(n))
        ours, ok = agrees(lo, hi, hist, q)
        out.append(Verdict(op, metric, q, lo, hi, ours, ok, hist.precision))
    return out


def truth_values(ios: list[IO], op: str, metric: str) -> list[int]:
    """Q2D, D2C or Q2C of op's IOs. iopulse times a PREFLUSH or FUA write's service to its
    data part's completion and its total to the end of its flush sequence: so does this."""
    if metric == "service":
        return [io.c - io.d for io in ios if io.op == op]
    if metric == "queue":
        return [io.d - io.q for io in ios if io.op == op and io.q is not None]
    return [io.last - io.q for io in ios if io.op == op and io.q is not None]


def hist_of(lat: dict, op: str, metric: str):
    """The cell's merged histogram of op's metric as the guest saved it (buckets); empty
    when no interval of the window named the disk."""
    if lat["precision"] is None:
        return Histogram(_hist.K_MIN)
    return Histogram(lat["precision"], [b[0] for b in lat["ops"][op][METRICS[metric]]],
                     [b[1] for b in lat["ops"][op][METRICS[metric]]])


def excess(v: Verdict) -> tuple[int, int]:
    """How far iopulse's value lies outside the truth's window: (buckets, ns), 0 inside."""
    if v.truth_lo_ns <= v.ours_ns <= v.truth_hi_ns:
        return 0, 0
    k = v.precision
    ns = v.truth_lo_ns - v.ours_ns if v.ours_ns < v.truth_lo_ns else v.ours_ns - v.truth_hi_ns
    mine = bucket_index(v.ours_ns, k)
    b = bucket_index(v.truth_lo_ns, k) - mine if v.ours_ns < v.truth_lo_ns else \
        mine - bucket_index(v.truth_hi_ns, k)
    return max(b, 0), ns


def judge_disk(disk: str, ios: list[IO], lat: dict, passthrough: dict[str, int]
               ) -> tuple[dict, list[str]]:
    """One disk of a cell: iopulse's merged histograms (lat) against the truth's IOs
    completed in the cell's window; (figures, reasons)."""
    fig: dict = {"ios": len(ios), "split_parts": sum(io.split for io in ios),
                 "redispatched": sum(io.dispatches > 1 for io in ios),
                 "passthrough": passthrough, "ops": {}, "btt": {}}
    for io in ios:
        fig["btt"][io.btt or "-"] = fig["btt"].get(io.btt or "-", 0) + 1
    reasons, worst = [], None
    for op in ("read", "write"):
        for metric in ("queue", "service", "total"):
            hist = hist_of(lat, op, metric)
            values = truth_values(ios, op, metric)
            allowed = passthrough.get(op, 0)
            row = {"iopulse": hist.count, "truth": len(values)}
            fig["ops"].setdefault(op, {})[metric] = row
            if not 0 <= hist.count - len(values) <= allowed:
                reasons.append(f"{disk} {op} {metric}: iopulse {hist.count} samples, "
                               f"{TRUTH_NAME[metric]} of {len(values)} IOs"
                               + (f" ({allowed} passthrough)" if allowed else ""))
            if not hist.count or not values:
                continue
            for v in compare(values, hist, op, metric):
                row[f"p{v.q:g}"] = [v.truth_lo_ns, v.truth_hi_ns, v.ours_ns, v.ok]
                key = (not v.ok, *excess(v))
                if worst is None or key > worst[0]:
                    worst = (key, v)
                if not v.ok:
                    reasons.append(f"{disk} {v}")
            for v in compare(values, hist, op, metric, SHOWN):
                row["max" if v.q == 100.0 else f"p{v.q:g}"] = \
                    [v.truth_lo_ns, v.truth_hi_ns, v.ours_ns, v.ok, "shown"]
    if worst:
        fig["worst"] = {"verdict": str(worst[1]), "ok": worst[1].ok,
                        "buckets": worst[0][1], "ns": worst[0][2]}
    other = fig["btt"].get("other", 0)
    if other:
        reasons.append(f"{disk}: {other} IOs btt pairs otherwise, not split, not overlapped")
    return fig, reasons


def judge(cells: list[dict], trace_dir: str, info: dict) -> dict:
    """Holds every cell that carries iopulsed's merged histograms (guest.py merged_latency())
    to the traces of its disks: cell["latency"] gets the figures and "ok"/"OFF", and each
    disagreement is a reason of the cell ("latency: ..."). Returns per disk what the pairing
    of its whole trace left over (X events without a Q, completions without a dispatch, ...)."""
    traces: dict[str, tuple[Trace, list[tuple]] | str] = {}
    tmp = tempfile.TemporaryDirectory(prefix="iop-btt-")

    def trace(disk: str) -> tuple[Trace, list[tuple]] | str:
        if disk not in traces:
            files = sorted(glob.glob(os.path.join(trace_dir, f"{disk}.blktrace.*")))
            try:
                if not files:
                    raise ValueError(f"no blktrace files of {disk}")
                traces[disk] = read_trace(files)
            except (OSError, ValueError) as e:
                traces[disk] = f"{type(e).__name__}: {e}"
        return traces[disk]

    for cell in cells:
        hists = cell.get("latency_hist")
        if not hists:
            continue
        lat: dict = {"disks": {}}
        reasons = []
        if info.get("error"):
            reasons.append(f"blktrace: {info['error']}")
        for disk, h in hists.items():
            if info.get("error"):
                break
            if info.get("dropped", {}).get(disk):
                reasons.append(f"blktrace dropped {info['dropped'][disk]} events of {disk}")
            got = trace(disk)
            if isinstance(got, str):
                reasons.append(f"{disk}: {got}")
                continue
            tr, events = got
            t0, t1 = cell["window_ns"]
            ios = [io for io in tr.ios if t0 <= io.c <= t1]
            try:
                check_btt(ios, btt_pairs(events, t0, t1, tmp.name), tr.splits, tr.discards)
            except (OSError, RuntimeError) as e:
                reasons.append(f"{disk}: btt: {e}")
            pt: dict[str, int] = {}
            for t, op in tr.passthrough:
                if t0 <= t <= t1:
                    pt[op] = pt.get(op, 0) + 1
            fig, rs = judge_disk(disk, ios, h, pt)
            lat["disks"][disk] = fig
            reasons += rs
        lat["status"] = "OFF" if reasons else "ok"
        worst = [f["worst"] for f in lat["disks"].values() if "worst" in f]
        if worst:
            lat["worst"] = max(worst, key=lambda w: (not w["ok"], w["buckets"], w["ns"]))
        cell["latency"] = lat
        cell["reasons"] += [f"latency: {r}" for r in reasons]
    tmp.cleanup()
    return {disk: {"requests": len(got[0].ios), "splits": len(got[0].splits),
                   "split_without_q": got[0].split_unknown, "c_without_d": got[0].no_d,
                   "partial_c": got[0].partial, "flush_seq_ends": got[0].seq_ends,
                   "same_sector_in_flight": got[0].same_sector}
            for disk, got in traces.items() if not isinstance(got, str)}
