"""Log-linear histograms with the daemon's bucket math (bpf/hist_math.h, src/util/histogram.c).

Precision k: values below 2**k have a bucket each (exact); every power-of-two range above is
split into 2**k equal buckets; values at or above 2**RANGE_BITS share the last bucket. A bucket
stands for its midpoint, which is off by at most 2**-(k+1) of any value in it. Every function
here reproduces tests/vectors/hist_vectors.txt line by line, as the C code does.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Collection, Iterable, Iterator, Optional

RANGE_BITS = 40          # IOP_HIST_RANGE_BITS
K_MIN, K_MAX = 2, 7      # IOP_HIST_K_MIN, IOP_HIST_K_MAX
_RANK_TOLERANCE = 8 * sys.float_info.epsilon


def _check_precision(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not K_MIN <= k <= K_MAX:
        raise ValueError(f"histogram precision {k!r} is out of range ({K_MIN}..{K_MAX})")
    return k


def nbuckets(k: int) -> int:
    """How many buckets a histogram of precision k has: (RANGE_BITS - k + 1) << k."""
    return (RANGE_BITS - _check_precision(k) + 1) << k


_NBUCKETS = {k: (RANGE_BITS - k + 1) << k for k in range(K_MIN, K_MAX + 1)}


def bucket_index(v: int, k: int) -> int:
    """The bucket value v (an integer >= 0) falls into at precision k."""
    _check_precision(k)
    if v < 0:
        raise ValueError(f"histogram value {v} is negative")
    v = int(v)
    if v >= 1 << RANGE_BITS:
        return nbuckets(k) - 1
    if v < 1 << k:
        return v
    p = v.bit_length() - 1
    return ((p - k + 1) << k) + ((v >> (p - k)) & ((1 << k) - 1))


def _check_index(i: int, k: int) -> int:
    if not 0 <= i < nbuckets(k):
        raise ValueError(f"bucket index {i} is out of range 0..{nbuckets(k) - 1} at precision {k}")
    return int(i)


def _lower(i: int, k: int) -> int:
    group, sub = i >> k, i & ((1 << k) - 1)
    if group == 0:
        return sub
    return ((1 << k) | sub) << (group - 1)


def _upper(i: int, k: int) -> int:
    group = i >> k
    if group == 0:
        return i
    return _lower(i, k) + (1 << (group - 1)) - 1


def _mid(i: int, k: int) -> int:
    group = i >> k
    if group == 0:
        return i
    return _lower(i, k) + ((1 << (group - 1)) - 1) // 2


def _coarser(counts: dict[int, int], k: int, coarse: int) -> dict[int, int]:
    """Bucket counts of precision k moved into the buckets of precision coarse (<= k)."""
    out: dict[int, int] = {}
    for i, n in counts.items():
        j = bucket_index(_lower(i, k), coarse)
        out[j] = out.get(j, 0) + n
    return out


def bucket_lower(i: int, k: int) -> int:
    """Smallest value in bucket i at precision k."""
    return _lower(_check_index(i, k), k)


def bucket_upper(i: int, k: int) -> int:
    """Largest value in bucket i at precision k (the last bucket also holds every larger
    value; its upper bound here is 2**RANGE_BITS - 1, as in the C code)."""
    return _upper(_check_index(i, k), k)


def bucket_mid(i: int, k: int) -> int:
    """The value reported for bucket i: lower + (upper - lower) // 2."""
    return _mid(_check_index(i, k), k)


def rank(q: float, count: int) -> int:
    """The rank of percentile q among count values, as the daemon computes it.

    ceil(q / 100 * count) in IEEE doubles, except that a product within 8 * DBL_EPSILON
    (relative) of a whole number is taken as that number, so 99.9% of 1000 is rank 999
    (the product is 999.0000000000001). Clamped to 1..count. Python's round() rounds half to
    even, like C's nearbyint() in the default rounding mode.
    """
    r = q / 100.0 * float(count)
    whole = float(round(r))
    if abs(r - whole) <= _RANK_TOLERANCE * max(1.0, r):
        r = whole
    else:
        r = float(math.ceil(r))
    return int(min(max(r, 1.0), float(count)))


class Histogram:
    """A sparse log-linear histogram: bucket index -> count, at one precision.

    Built from the wire form (precision, indexes, counts), or empty. Merging two histograms
    of the same precision adds their counts and is exact. Values derived from the buckets
    (sum, mean, percentiles) carry the layout's error bound of 2**-(k+1).
    """

    __slots__ = ("precision", "_counts")

    def __init__(self, precision: int, indexes: Iterable[int] = (),
                 counts: Iterable[int] = ()) -> None:
        self.precision = _check_precision(int(precision))
        self._counts: dict[int, int] = {}
        idx, cnt = list(indexes), list(counts)
        if len(idx) != len(cnt):
            raise ValueError(f"histogram has {len(idx)} bucket indexes but {len(cnt)} counts")
        top = nbuckets(self.precision)
        for i, c in zip(idx, cnt):
            if not 0 <= i < top:
                _check_index(i, self.precision)      # raises, naming the range
            if c < 0:
                raise ValueError(f"bucket {i} has a negative count {c}")
            if c:
                self._counts[int(i)] = self._counts.get(int(i), 0) + int(c)

    # The bucket math, also reachable as Histogram.bucket_index(v, k) etc.
    bucket_index = staticmethod(bucket_index)
    bucket_lower = staticmethod(bucket_lower)
    bucket_upper = staticmethod(bucket_upper)
    bucket_mid = staticmethod(bucket_mid)
    nbuckets = staticmethod(nbuckets)

    @classmethod
    def from_values(cls, precision: int, values: Iterable[int]) -> "Histogram":
        """A histogram with each value recorded once."""
        h = cls(precision)
        for v in values:
            h.record(v)
        return h

    @classmethod
    def from_pb(cls, msg: Any, precision: int) -> "Histogram":
        """From an iopulse.v1.Histogram message. An absent message (None) or one without a
        precision (an unset field) is an empty histogram of the given precision."""
        if msg is None or not msg.precision:
            if msg is not None and len(msg.index):
                raise ValueError("histogram has buckets but no precision")
            return cls(precision)
        return cls(msg.precision, msg.index, msg.count)

    def to_pb(self) -> Any:
        """The iopulse.v1.Histogram message of this histogram."""
        from ._pb import iopulse_pb2

        items = list(self.buckets())
        return iopulse_pb2.Histogram(precision=self.precision, index=[i for i, _ in items],
                                     count=[c for _, c in items])

    def add_buckets(self, precision: int, indexes: Collection[int],
                    counts: Collection[int]) -> "Histogram":
        """Add counts at bucket indexes of a histogram of precision (the pairs zip makes of
        them; zero counts skipped) and return this histogram, as the report adds up a phase's
        Updates. Buckets of another precision meet in the coarser of the two layouts: every
        bucket of a finer precision lies within one bucket of a coarser one, so the counts
        move exactly and this histogram may become coarser (a daemon restarted with another
        precision in the middle of a recording)."""
        k = precision
        if k != self.precision:
            k = _check_precision(k)
            if k < self.precision:
                self._counts = _coarser(self._counts, self.precision, k)
                self.precision = k
        if not len(indexes):
            return self
        if max(indexes) >= _NBUCKETS[k] or min(indexes) < 0:
            bad = max(indexes) if max(indexes) >= _NBUCKETS[k] else min(indexes)
            _check_index(bad, k)                # raises, naming the range
        if len(counts) and min(counts) < 0:
            raise ValueError(f"a bucket has a negative count {min(counts)}")
        c, mine = self._counts, self.precision
        if k == mine:
            for i, n in zip(indexes, counts):
                if n:
                    c[i] = c.get(i, 0) + n
        else:
            for i, n in zip(indexes, counts):
                if n:
                    j = bucket_index(_lower(i, k), mine)
                    c[j] = c.get(j, 0) + n
        return self

    def add_pb(self, msg: Any, precision: int) -> "Histogram":
        """Add the buckets of an iopulse.v1.Histogram message (of precision when it names
        none) as add_buckets() does, and return this histogram. The wire's counts are
        unsigned, so only an index new to this histogram is checked: a phase's thousands of
        Updates add up at the cost of a dict update per bucket."""
        k = msg.precision or precision
        if k != self.precision:
            return self.add_buckets(k, msg.index, msg.count)
        c, top = self._counts, _NBUCKETS[k]
        for i, n in zip(msg.index, msg.count):
            v = c.get(i)
            if v is not None:
                c[i] = v + n
            elif n:
                if i >= top:
                    _check_index(i, k)          # raises, naming the range
                c[i] = n
        return self

    def absorb(self, other: "Histogram") -> "Histogram":
        """merge(), except that a histogram of another precision is added as add_buckets()
        adds it (in the coarser layout) instead of refused."""
        return self.add_buckets(other.precision, other._counts.keys(), other._counts.values())

    def record(self, v: int, n: int = 1) -> None:
        """Count value v n times."""
        if n < 0:
            raise ValueError(f"cannot record a value {n} times")
        i = bucket_index(v, self.precision)
        self._counts[i] = self._counts.get(i, 0) + n

    def buckets(self) -> Iterator[tuple[int, int]]:
        """(bucket index, count) of each non-empty bucket, in rising index order."""
        for i in sorted(self._counts):
            yield i, self._counts[i]

    def merge(self, other: "Histogram") -> "Histogram":
        """Add other's counts into this histogram (exact) and return this histogram.
        Raises ValueError when the precisions differ."""
        if other.precision != self.precision:
            raise ValueError(f"cannot merge a histogram of precision {other.precision} into "
                             f"one of precision {self.precision}")
        for i, c in other._counts.items():
            self._counts[i] = self._counts.get(i, 0) + c
        return self

    def copy(self) -> "Histogram":
        return Histogram(self.precision).merge(self)

    def __add__(self, other: "Histogram") -> "Histogram":
        return self.copy().merge(other)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Histogram) and other.precision == self.precision
                and other._counts == self._counts)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Histogram(precision={self.precision}, count={self.count})"

    @property
    def count(self) -> int:
        """How many values were recorded."""
        return sum(self._counts.values())

    @property
    def sum(self) -> int:
        """Approximate sum: each bucket's midpoint times its count (the true sum is within
        2**-(k+1) of it, relative, for values >= 2**k; exact below)."""
        k = self.precision      # the indexes were checked on the way in
        return sum(_mid(i, k) * c for i, c in self._counts.items())

    @property
    def mean(self) -> Optional[float]:
        """Approximate mean, sum / count (see sum); None when empty."""
        n = self.count
        return self.sum / n if n else None

    @property
    def min(self) -> Optional[int]:
        """Lower bound of the lowest non-empty bucket: no recorded value was smaller.
        None when empty."""
        return _lower(min(self._counts), self.precision) if self._counts else None

    @property
    def max(self) -> Optional[int]:
        """Upper bound of the highest non-empty bucket: no recorded value was larger (except
        in the open-ended last bucket). None when empty."""
        return _upper(max(self._counts), self.precision) if self._counts else None

    def percentile(self, q: float) -> Optional[int]:
        """The midpoint of the bucket holding the value of rank(q, count) (see rank()), as
        the daemon reports it; None when empty. q must be in (0, 100]."""
        if not 0.0 < q <= 100.0:
            raise ValueError(f"percentile {q} is outside (0, 100]")
        n = self.count
        if not n:
            return None
        r, seen = rank(q, n), 0
        for i, c in self.buckets():
            seen += c
            if seen >= r:
                return _mid(i, self.precision)
        raise AssertionError("unreachable: rank exceeds count")

    def percentiles(self, qs: Iterable[float]) -> list[Optional[int]]:
        """percentile(q) of each q, in one pass over the buckets; Nones when empty."""
        qs = list(qs)
        for q in qs:
            if not 0.0 < q <= 100.0:
                raise ValueError(f"percentile {q} is outside (0, 100]")
        n = self.count
        if not n:
            return [None] * len(qs)
        want = sorted((rank(q, n), j) for j, q in enumerate(qs))
        out: list[Optional[int]] = [None] * len(qs)
        w, seen = 0, 0
        for i, c in self.buckets():
            seen += c
            while w < len(want) and seen >= want[w][0]:
                out[want[w][1]] = _mid(i, self.precision)
                w += 1
            if w == len(want):
                break
        return out

    def count_above(self, x: float) -> int:
        """How many recorded values were above x (e.g. IOs slower than 1 s:
        h.count_above(1e9)). A bucket wholly above x counts, one wholly at or below it does
        not; the one bucket that holds x counts when its midpoint (the value percentile()
        reports for it) is above x, so the answer is off by at most that bucket's count, and
        exact below 2**precision."""
        k = self.precision
        return sum(c for i, c in self._counts.items() if _mid(i, k) > x)

    def fraction_above(self, x: float) -> Optional[float]:
        """count_above(x) as a fraction of count (0.0 to 1.0); None when empty."""
        n = self.count
        return self.count_above(x) / n if n else None

    def cdf(self) -> list[tuple[int, float]]:
        """(bucket upper bound, fraction of values <= it) for each non-empty bucket, rising;
        the last fraction is 1.0. Empty list when empty."""
        n, seen, out = self.count, 0, []
        for i, c in self.buckets():
            seen += c
            out.append((_upper(i, self.precision), seen / n))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON form: precision, count, mean, min, p50, p90, p99, p999, max (None when
        empty) and the non-empty buckets as [[index, count], ...]."""
        empty = not self._counts
        return {"precision": self.precision, "count": self.count, "mean": self.mean,
                "min": self.min,
                "p50": None if empty else self.percentile(50),
                "p90": None if empty else self.percentile(90),
                "p99": None if empty else self.percentile(99),
                "p999": None if empty else self.percentile(99.9),
                "max": self.max,
                "buckets": [[i, c] for i, c in self.buckets()]}
