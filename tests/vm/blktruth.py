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
# In a cell of a few hundred IOs per op these are its slowest one or two IOs, the very ones
# a host stall between two stamps of one event moves: held with STALL_NS beyond the truth's
# slowest IO (they catch a stale stamp, seconds off, not a stall's milliseconds).
TAIL = (99.9, 100.0)
# Under TCG the two tracers' stamps of one event lie tens of us apart (an interrupt served
# between the handlers: up to 62 us seen), and a host preemption of the vCPU between them
# moves an IO by milliseconds (up to 1.2% of a cell's IOs on a loaded host):
# tests/vm/README.md.
SLACK_NS = 75000
# ... and so may DISPLACED_MIN IOs of a small cell: 3 of 65 writes on one LVM stripe member
# on 5.10 beside a second guest, p90 860 us where the truth's ranks gave 432-547 us. From 7.0
# a tracepoint's handlers run preemptible (srcu_fast_notrace in include/linux/tracepoint.h),
# so the submitting task may be preempted between blktrace's probe and ours: 7.2 beside
# busy-node.sh moved up to 3% of a cell's IOs (virtio-scsi, virtio-blk, a merge cell).
DISPLACED_PPM, DISPLACED_MIN = 30000, 3
UNEXPLAINED_PER_MILLE, UNEXPLAINED_MIN = 1, 2      # unexplained_allowed()
# how far a moved IO may lie beyond the truth's slowest (or fastest) one: a host stall
# between two stamps of one event, measured up to 16 ms
STALL_NS = 100_000_000
# ... or longer, where the guest saw a longer stall in the window (stallwatch.py's period)
STALLWATCH_PERIOD_NS = 100_000_000
UNBOUNDED = -1          # window(): no upper bound
METRICS = {"queue": "queue_wait_ns", "service": "service_ns", "total": "total_ns"}
# the truth's span each of iopulsed's modes (guest.py MODE_FLAGS) is held to, per metric:
# the full mode times from the bio's submission (Q); --queue-from request and the
# completion-only mode from the request's set-up, the kernel's start_time_ns (G)
SPANS = {"full": {"queue": "Q2D", "service": "D2C", "total": "Q2C"},
         "request": {"queue": "G2D", "service": "D2C", "total": "G2C"},
         "completion": {"queue": "G2D", "service": "D2C", "total": "G2C"}}
# The completion-only mode has a queue wait and a service time only where the kernel
# stamped the dispatch apart from the set-up (blk-stat users; kernels from 6.9 rarely do):
# a subset of the IOs the truth cannot pick out. Held where it timed them all.
SUBSET = {"completion": ("queue", "service")}
# Where an IO counted in no_queue_ts has no sample: the modes that time from a stamp of their
# own at submission (a bio or request set-up the programs saw), queue wait and total
DECLARED = {"full": ("queue", "total"), "request": ("queue", "total")}
# The spans from the set-up (G2D, G2C) are counted, and their quantiles shown beside the
# truth's, not held: the kernel's stamp is not modelled well enough yet (tests/vm/README.md)
SETUP_HELD = False

# struct blk_io_trace (include/uapi/linux/blktrace_api.h), little-endian on x86
TRACE = struct.Struct("<IIQQIIIIIHH")
MAGIC = 0x65617400
# action: the low 16 bits an __BLK_TA_* (bit 8, __BLK_TA_CGROUP: the PDU starts with a
# cgroup id), the high 16 bits BLK_TC_* categories
TA_QUEUE, TA_BACKMERGE, TA_FRONTMERGE, TA_GETRQ, TA_REQUEUE, TA_ISSUE, TA_COMPLETE = \
    1, 2, 3, 4, 6, 7, 8
TA_UNPLUG_IO, TA_UNPLUG_TIMER, TA_SPLIT = 10, 11, 13   # U, UT, X
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
    btt_dc: tuple[int, int] | None = None    # btt's D and C of its Q, where they differ
    end: int = 0       # the end of its flush sequence, else its completion
    g: int | None = None     # its set-up (G, the kernel's start_time_ns) (None: unseen)
    g0: int | None = None    # the first Q or G of its G's task since that task's last U
    # (the kernel's start_time_ns lies in g0 .. g: a plug clock, 6.9+, reads it once a plug)

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
    # submissions (Q) of empty PREFLUSH writes: an fsync's or fdatasync's, or the file
    # system's own (ext4's fsync without a journal commit, blkdev_issue_flush)
    empty_preflush: list[int] = field(default_factory=list)


def read_events(paths: list[str]) -> list[tuple]:
    """(time, cpu, seq, action, sector, bytes, pdu, record, pid) of every record in
    blktrace's per-CPU files, in time order (record: its bytes as blktrace wrote them)."""
    out = []
    for path in paths:
        with open(path, "rb") as f:
            b = f.read()
        off = 0
        while off + TRACE.size <= len(b):
            magic, seq, t, sector, nbytes, action, pid, _dev, cpu, _err, pdu_len = \
                TRACE.unpack_from(b, off)
            if magic & 0xffffff00 != MAGIC:
                raise ValueError(f"{path}: bad magic {magic:#x} at {off}")
            pdu = b[off + TRACE.size:off + TRACE.size + pdu_len]
            if action & TA_CGROUP:
                pdu = pdu[8:]
            out.append((t, cpu, seq, action, sector, nbytes, pdu,
                        b[off:off + TRACE.size + pdu_len], pid))
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
    g: int | None = None     # the G that set up a request for it
    g0: int | None = None    # see IO.g0


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
    # pid -> its first Q or G since its last explicit unplug (U: blk_finish_plug; not UT,
    # the flush of a task going to sleep, which keeps its plug)
    plug: dict[int, int] = {}
    for t, _cpu, _seq, action, sector, nbytes, pdu, _rec, pid in events:
        cat, ta = action >> 16, action & 0xff
        if ta == TA_UNPLUG_IO:
            plug.pop(pid, None)
            continue
        if ta == TA_UNPLUG_TIMER:
            continue
        if ta in (TA_QUEUE, TA_GETRQ) and not cat & (TC_NOTIFY | TC_PC):
            plug.setdefault(pid, t)
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
            if ta == TA_QUEUE and op == "write" and cat & TC_FLUSH:
                tr.empty_preflush.append(t)
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
                bio.g, bio.g0 = t, plug.get(pid, t)
                claimed.setdefault(key, []).append(bio)
        elif ta == TA_BACKMERGE:
            # a bio merged at a request's end, or a request merged into another (its
            # claimed bio goes)
            mine = queued.get(key, [])
            if not any(b.end == end for b in mine) and claimed.get(key):
                claimed[key].pop()
            else:
                _take(mine, end)
        elif ta == TA_FRONTMERGE:
            # a bio merged in front of a request: the request now starts here, its first
            # bio this one (whose Q it takes), its set-up still its own
            bio = _take(queued.get(key, []), end)
            rq = _take(claimed.get((end, op), []))
            if bio is not None:
                bio.g, bio.g0 = (rq.g, rq.g0) if rq is not None else (None, None)
                claimed.setdefault(key, []).append(bio)
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
                split=bool(bio and bio.split), nbytes=nbytes, size=nbytes, flush_seq=flush,
                g=bio.g if bio else None, g0=bio.g0 if bio else None))
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
    overlapped it while queued or in flight, or none); "no-q" (the trace has no Q of it,
    and btt pairs from a Q); or "other", which nothing here explains. splits: X event
    times, sorted; discards: (sector, sectors, Q or D, C).

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
        # btt pairs from a Q: a request the trace has no Q of (md's superblock writes on
        # 7.x: I, D, C) is in none of its pairs
        io.btt = "split" if io.split else "no-q" if io.q is None else None
    for sector, q, d, c in pairs:
        io = by_q.get((sector, q))
        if io is not None and not io.split:
            io.btt = "same" if (io.d, io.c) == (d, c) else "differ"
            io.btt_dc = (d, c)
    # every request in flight by (start, end, first sector, sectors): reads, writes, discards
    spans = sorted([(io.q if io.q is not None else io.d, io.last, io.sector, io.size // 512)
                    for io in ios] + [(d, c, sector, n) for sector, n, d, c in discards])
    starts = [sp[0] for sp in spans]
    longest = max((sp[1] - sp[0] for sp in spans), default=0)
    first = min((io.q if io.q is not None else io.d for io in ios), default=0)
    x = bisect.bisect_left(splits, first) if ios else len(splits)
    first_split = splits[x] if x < len(splits) else None     # the cell's first X event
    for io in ios:
        if io.btt in ("same", "split", "no-q"):
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
    span: str          # the truth's: Q2D, D2C, Q2C, G2D, G2C
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
        return (f"{self.op} {self.metric} {name} {self.span} {t} us, "
                f"iopulse {self.ours_ns / 1e3:.1f} us")


def displaced(n: int) -> int:
    """How many of n IOs may have moved anywhere (DISPLACED_PPM of them, at least
    DISPLACED_MIN)."""
    return max(DISPLACED_MIN, -(-n * DISPLACED_PPM // 1000000))


def window(truth_sorted: list[int], q: float, n: int, k: int = 0
           ) -> tuple[int, int, int, int]:
    """The truth's values that the value of rank(q, n) among n IOs can be when the truth
    holds n - m of them (latency_truth.py window(): ranks r - m .. r) and k IOs may have
    moved anywhere: ranks r - m - k .. r + k; (lo, hi, and how far beyond each a moved IO
    may lie: STALL_NS where the window reaches the truth's fastest or slowest IO, else 0;
    UNBOUNDED above where it reaches past the truth's slowest IO and the m IOs the truth
    has no value for, slower than all it has for all it knows, fill those ranks: 7.x's
    md superblock writes with FUA, 440 ms to the end of their flush sequences where the
    slowest write the truth timed took 46 ms)."""
    m = n - len(truth_sorted)
    r = rank(q, n)
    lo = max(r - m - k, 1)
    hi = min(r + k, len(truth_sorted))
    above = UNBOUNDED if m > 0 and r + k > len(truth_sorted) else \
        STALL_NS if r + k >= len(truth_sorted) else 0
    return (truth_sorted[lo - 1], truth_sorted[max(hi, lo) - 1],
            STALL_NS if r - m - k <= 1 else 0, above)


def agrees(lo_ns: int, hi_ns: int, hist, q: float, below: int = 0, above: int = 0
           ) -> tuple[int, bool]:
    """iopulse's value for q and whether it lies within SLACK_NS or one bucket of the
    truth's window widened by below and above (latency_truth.py agrees())."""
    k = hist.precision
    ours = hist.percentile(q)
    lo_ns = max(lo_ns - below, 0)
    if above == UNBOUNDED:
        return ours, ours >= lo_ns - SLACK_NS or bucket_index(lo_ns, k) - 1 <= \
            bucket_index(ours, k)
    hi_ns += above
    if lo_ns - SLACK_NS <= ours <= hi_ns + SLACK_NS:
        return ours, True
    mine = bucket_index(ours, k)
    return ours, bucket_index(lo_ns, k) - 1 <= mine <= bucket_index(hi_ns, k) + 1


def stall_margin(stalls: list[list[int]], t0: int, t1: int) -> int:
    """How far a moved IO of the window t0..t1 may lie beyond the truth's slowest or fastest
    one: STALL_NS, or the longest stall the guest's watchers saw inside the window
    (stallwatch.py: [end_ns, late_ns] each) with one watcher period more, if longer."""
    seen = max((late for end, late in stalls if end - late <= t1 and end >= t0), default=0)
    return max(STALL_NS, seen + STALLWATCH_PERIOD_NS) if seen else STALL_NS


def compare(values: list[int], hist, op: str, metric: str, span: str,
            qs: tuple[float, ...] = QUANTILES, stall_ns: int = 0,
            upper: list[int] | None = None, ceiling: list[int] | None = None
            ) -> list[Verdict]:
    """Each quantile of qs of hist against the truth's values; stall_ns: a moved IO may lie
    this far beyond the truth's fastest or slowest one. upper: each IO's largest value where
    the truth knows a range (values the smallest), in the same order: the window runs from
    the low end of values' to the high end of upper's. ceiling: a value each IO's own cannot
    exceed however far it moved (queue_ceiling()): where the window reaches the truth's
    slowest IO, its high end is the larger of the stall margin's and the ceiling's."""
    s = sorted(values)
    u = sorted(upper) if upper is not None else s
    c = sorted(ceiling) if ceiling is not None else None
    n = max(hist.count, len(s))
    out = []
    for q in qs:
        lo, _, below, _ = window(s, q, n, displaced(n))
        _, hi, _, above = window(u, q, n, displaced(n))
        # window() marks with STALL_NS an end that reaches the truth's fastest or slowest IO
        below = stall_ns if below else 0
        above = above if above == UNBOUNDED else stall_ns if above else 0
        if c and above not in (0, UNBOUNDED):
            _, chi, _, cabove = window(c, q, n, displaced(n))
            if cabove == UNBOUNDED:
                above = UNBOUNDED
            elif chi > hi + above:
                hi, above = chi, 0
        ours, ok = agrees(lo, hi, hist, q, below, above)
        out.append(Verdict(op, metric, span, q, lo, hi, ours, ok, hist.precision))
    return out


def queue_ceiling(ios: list[IO], op: str, span: str) -> list[int]:
    """Each of op's IOs' largest possible queue wait: from the span's start to the end of the
    IO (Q2C, G2C from the plug's start). blktrace's probe runs first at every tracepoint
    (guest.py Blktrace), so iopulse's submission stamp is never before the truth's, and
    iopulse stamps the dispatch before the driver hands the request to the device, so before
    its completion; however long the task was preempted between the two probes (7.0+ runs
    them preemptible; a host stall anywhere), the queue wait iopulse holds lies within it. A
    queue wait longer than the whole IO, the stale-stamp failure, lies beyond."""
    return truth_values(ios, op, span[0] + "2C", early=span[0] == "G")


def span_start(io: IO, span: str, early: bool = False) -> int | None:
    """Where span starts for io in the trace (None: the trace has no such event of it)."""
    return {"Q": io.q, "G": io.g0 if early else io.g, "D": io.d}[span[0]]


def truth_values(ios: list[IO], op: str, span: str, early: bool = False) -> list[int]:
    """The span (Q2D, D2C, Q2C, G2D, G2C) of each of op's IOs whose start is known; early:
    from the start of its task's plug (IO.g0) for G. iopulse times a PREFLUSH or FUA
    write's service to its data part's completion and its total to the end of its flush
    sequence: so does this."""
    out = []
    for io in ios:
        if io.op != op:
            continue
        start = span_start(io, span, early)
        if start is None:
            continue
        end = io.d if span[2] == "D" else io.c if span[0] == "D" else io.last
        out.append(end - start)
    return out


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


def unexplained_allowed(n: int) -> int:
    """How many of a disk's n IOs btt may pair otherwise with nothing here to explain it
    (UNEXPLAINED_PER_MILLE of them, at least UNEXPLAINED_MIN): a rare shape of btt's own
    (seen: 2 of 1,086 with bfq on virtio-scsi), shown in the figures (btt_other) with its
    first three IOs; a pairing of ours gone wrong moves far more."""
    return max(UNEXPLAINED_MIN, n * UNEXPLAINED_PER_MILLE // 1000)


def describe(io: IO) -> str:
    """One IO btt pairs otherwise, for the reason: where, its times from its Q, btt's."""
    a = io.q if io.q is not None else io.d
    mine = f"Q+{(io.d - a) / 1e3:.1f} D+{(io.c - a) / 1e3:.1f} C us"
    if io.btt_dc is None:
        theirs = "none of btt's pairs starts at its Q"
    else:
        theirs = (f"btt D+{(io.btt_dc[0] - a) / 1e3:.1f} C+{(io.btt_dc[1] - a) / 1e3:.1f}")
    return (f"{io.op} {io.sector}+{io.size // 512} ({mine}, {io.dispatches} dispatch(es)"
            f"{', flush sequence' if io.flush_seq else ''}): {theirs}")


def judge_disk(disk: str, ios: list[IO], lats: dict[str, dict], passthrough: dict[str, int],
               stall: int = STALL_NS) -> tuple[dict, list[str]]:
    """One disk of a cell: each mode's merged histograms (lats: mode -> the guest's
    buckets) against the truth's IOs completed in the cell's window, a moved IO up to stall
    beyond the truth's extremes (stall_margin()); (figures, reasons, a mode other than the
    first named in its reasons)."""
    fig: dict = {"stall_margin_ms": round(stall / 1e6, 1), "ios": len(ios),
                 "split_parts": sum(io.split for io in ios),
                 "redispatched": sum(io.dispatches > 1 for io in ios),
                 "no_setup": sum(io.g is None for io in ios),
                 "passthrough": passthrough, "modes": {}, "btt": {}}
    for io in ios:
        fig["btt"][io.btt or "-"] = fig["btt"].get(io.btt or "-", 0) + 1
    reasons = []
    for i, (mode, lat) in enumerate(lats.items()):
        tag = "" if i == 0 else f"[{mode}] "
        ops: dict = {}
        worst = None
        for op in ("read", "write"):
            for metric, span in SPANS[mode].items():
                hist = hist_of(lat, op, metric)
                values = truth_values(ios, op, span)
                # IOs iopulsed counted without a submission time (no_queue_ts: a bio
                # submission its programs did not see) are declared, not silently missing
                declared = lat.get("no_queue_ts", {}).get(op, 0) \
                    if metric in DECLARED.get(mode, ()) else 0
                # IOs whose start the trace lacks iopulsed may time; the truth cannot hold
                # them. blktrace on 7.x records no Q or G of a FUA bio, and no FUA flag on any
                # event (6.18 records both): ext4's journal commits, md's superblock writes
                unknown = sum(io.op == op and span_start(io, span) is None for io in ios)
                allowed = passthrough.get(op, 0) + unknown
                # dispatches and completions the kernel skipped every program of, in the
                # window on any of its devices: each IO's sample at most, declared
                lost = lat.get("lost", 0)
                row = {"span": span, "iopulse": hist.count, "truth": len(values),
                       "held": True, "declared": declared, "unknown": unknown, "lost": lost}
                ops.setdefault(op, {})[metric] = row
                if metric in SUBSET.get(mode, ()) and hist.count < len(values):
                    row["held"] = False     # timed where the kernel stamped the dispatch
                elif not -lost <= hist.count + declared - len(values) <= allowed:
                    why = [f"{n} {w}" for n, w in ((declared, "without a submission time"),
                                                  (passthrough.get(op, 0), "passthrough"),
                                                  (unknown, f"without {span[0]} in the trace"),
                                                  (lost, "lost in the window"))
                           if n]
                    reasons.append(f"{tag}{disk} {op} {metric}: iopulse {hist.count} "
                                   f"samples, {span} of {len(values)} IOs"
                                   + (f" ({', '.join(why)})" if why else ""))
                if not hist.count or not values:
                    continue
                if not row["held"]:
                    continue
                # the kernel's set-up stamp is read once per plug where it keeps a plug
                # clock (6.9+): G, or as early as its task's first Q or G in that plug.
                # Shown, not held (SETUP_HELD): the split cell's set-up stamps lie earlier
                # still on 6.18
                upper = truth_values(ios, op, span, early=True) if span[0] == "G" else None
                held = span[0] != "G" or SETUP_HELD
                row["held"] = held
                # a quantile whose rank window reaches the truth's slowest IO (p99 of a
                # hundred IOs is the slowest) is held as the tail is, with the stall margin
                ceiling = queue_ceiling(ios, op, span) if metric == "queue" else None
                for v in compare(values, hist, op, metric, span, stall_ns=stall, upper=upper,
                                 ceiling=ceiling) + \
                        compare(values, hist, op, metric, span, TAIL, stall_ns=stall,
                                upper=upper, ceiling=ceiling):
                    row["max" if v.q == 100.0 else f"p{v.q:g}"] = \
                        [v.truth_lo_ns, v.truth_hi_ns, v.ours_ns, v.ok] + \
                        ([] if held else ["shown"])
                    if not held:
                        continue
                    if v.q in QUANTILES or not v.ok:   # the closest call: tight rules
                        key = (not v.ok, *excess(v))
                        if worst is None or key > worst[0]:
                            worst = (key, v)
                    if not v.ok:
                        reasons.append(f"{tag}{disk} {v}")
        fig["modes"][mode] = {"ops": ops}
        if worst:
            fig["modes"][mode]["worst"] = {"verdict": str(worst[1]), "ok": worst[1].ok,
                                           "buckets": worst[0][1], "ns": worst[0][2]}
    other = [io for io in ios if io.btt == "other"]
    if other:
        fig["btt_other"] = [describe(io) for io in other[:3]]
    if len(other) > unexplained_allowed(len(ios)):
        reasons.append(f"{disk}: {len(other)} IOs btt pairs otherwise, not split, not "
                       f"overlapped: " + "; ".join(describe(io) for io in other[:3]))
    return fig, reasons


COVERAGE_GOAL = 0.9995     # guest.py's


def request_coverage(cell: dict, disk: str, several: bool, empties: int) -> None:
    """The request mode's latency coverage of disk again, with the untimed IOs it may have
    (the empty PREFLUSH writes: no bio records, never dispatched themselves) counted from the
    trace instead of fio's sync calls: a file system sends flushes of its own (ext4's fsync
    without a journal commit). A coverage reason the guest gave goes when the trace's count
    makes the goal; it stays, with the trace's count added, when it does not."""
    per = cell.get("modes", {}).get("request", {}).get("per_disk", {}).get(disk)
    if not per or not per.get("diskstats_ios"):
        return
    head = "[request] " + (f"{disk}: " if several else "") + "latency coverage"
    cov = (per["timed"] + min(per["untimed"], empties)) / per["diskstats_ios"]
    per["empty_preflush_truth"] = empties
    mine = [r for r in cell.get("reasons", []) if r.startswith(head)]
    if not mine:
        return
    rest = [r for r in cell["reasons"] if not r.startswith(head)]
    cell["reasons"] = rest if cov >= COVERAGE_GOAL else rest + [
        f"{r} ({empties} empty PREFLUSH writes in the trace)" for r in mine]


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
        by_mode = cell.get("latency_hist")
        if not by_mode:
            continue
        disks = list(next(iter(by_mode.values())))
        lat: dict = {"disks": {}}
        reasons = []
        if info.get("error"):
            reasons.append(f"blktrace: {info['error']}")
        for disk in disks:
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
            stall = stall_margin(info.get("stalls", []), t0, t1)
            ios = [io for io in tr.ios if t0 <= io.c <= t1]
            try:
                check_btt(ios, btt_pairs(events, t0, t1, tmp.name), tr.splits, tr.discards)
            except (OSError, RuntimeError) as e:
                reasons.append(f"{disk}: btt: {e}")
            pt: dict[str, int] = {}
            for t, op in tr.passthrough:
                if t0 <= t <= t1:
                    pt[op] = pt.get(op, 0) + 1
            fig, rs = judge_disk(disk, ios, {m: h[disk] for m, h in by_mode.items()}, pt,
                                 stall)
            lat["disks"][disk] = fig
            reasons += rs
            empties = sum(1 for t in tr.empty_preflush if t0 <= t <= t1)
            fig["empty_preflush"] = empties
            request_coverage(cell, disk, len(disks) > 1, empties)
        lat["status"] = "OFF" if reasons else "ok"
        lat["modes"] = {}
        modes = list(by_mode)
        tags = tuple(f"[{m}] " for m in modes[1:])
        for mode in modes:
            worst = [dict(f["modes"][mode]["worst"], disk=disk)
                     for disk, f in lat["disks"].items() if "worst" in f["modes"][mode]]
            mine = [r for r in reasons if r.startswith(f"[{mode}] ")] if mode != modes[0] \
                else [r for r in reasons if not r.startswith(tags)]
            lat["modes"][mode] = {"status": "OFF" if mine else "ok"}
            if worst:
                lat["modes"][mode]["worst"] = max(
                    worst, key=lambda w: (not w["ok"], w["buckets"], w["ns"]))
        cell["latency"] = lat
        cell["reasons"] += [f"latency: {r}" for r in reasons]
    tmp.cleanup()
    return {disk: {"requests": len(got[0].ios), "splits": len(got[0].splits),
                   "split_without_q": got[0].split_unknown, "c_without_d": got[0].no_d,
                   "partial_c": got[0].partial, "flush_seq_ends": got[0].seq_ends,
                   "same_sector_in_flight": got[0].same_sector}
            for disk, got in traces.items() if not isinstance(got, str)}
