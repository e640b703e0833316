"""Log-linear histograms with the daemon's bucket math (src/hist_math.h, src/histogram.c).

Precision k: values below 2**k have a bucket each; every power-of-two range above is split
into 2**k buckets; values at or above 2**RANGE_BITS share the last bucket. A bucket stands for
its midpoint, which is off by at most 2**-(k+1) of any value in it.
"""
from __future__ import annotations

import math
import sys
from typing import Iterable, Iterator, Optional

RANGE_BITS = 40
_EPS = sys.float_info.epsilon


def nbuckets(k: int) -> int:
    return (RANGE_BITS - k + 1) << k


def bucket_index(v: int, k: int) -> int:
    """Bucket of value v at precision k."""
    if v >= 1 << RANGE_BITS:
        return nbuckets(k) - 1
    if v < 1 << k:
        return int(v)
    p = int(v).bit_length() - 1
    return ((p - k + 1) << k) + ((int(v) >> (p - k)) & ((1 << k) - 1))


def bucket_lower(i: int, k: int) -> int:
    """Smallest value in bucket i."""
    group, sub = i >> k, i & ((1 << k) - 1)
    if group == 0:
        return sub
    return ((1 << k) | sub) << (group - 1)


def bucket_upper(i: int, k: int) -> int:
    """Largest value in bucket i (the last bucket is open-ended above)."""
    group = i >> k
    if group == 0:
        return i
    return bucket_lower(i, k) + (1 << (group - 1)) - 1


def bucket_mid(i: int, k: int) -> int:
    """The value reported for bucket i: lower + (upper - lower) // 2."""
    lo, hi = bucket_lower(i, k), bucket_upper(i, k)
    return lo + (hi - lo) // 2


def rank(q: float, count: int) -> int:
    """ceil(q/100 * count), where a product within 8 ulps of a whole number is that number
    (99.9% of 1000 is rank 999, not 1000); clamped to 1..count."""
    r = q / 100.0 * count
    whole = float(round(r))
    if abs(r - whole) <= 8 * _EPS * max(1.0, r):
        r = whole
    else:
        r = float(math.ceil(r))
    return int(min(max(r, 1.0), float(count)))


class Histogram:
    """A sparse histogram: bucket index -> count, at one precision."""

    __slots__ = ("precision", "_counts")

    def __init__(self, precision: int, indexes: Iterable[int] = (),
                 counts: Iterable[int] = ()):
        self.precision = int(precision)
        self._counts: dict[int, int] = {}
        idx, cnt = list(indexes), list(counts)
        if len(idx) != len(cnt):
            raise ValueError(f"{len(idx)} bucket indexes but {len(cnt)} counts")
        limit = nbuckets(self.precision)
        for i, c in zip(idx, cnt):
            if not 0 <= i < limit:
                raise ValueError(f"bucket index {i} out of range 0..{limit - 1} at precision "
                                 f"{self.precision}")
            if c:
                self._counts[int(i)] = self._counts.get(int(i), 0) + int(c)

    @classmethod
    def from_values(cls, precision: int, values: Iterable[int]) -> "Histogram":
        h = cls(precision)
        for v in values:
            h.record(v)
        return h

    @classmethod
    def from_pb(cls, pb, precision: int) -> "Histogram":
        """From an iopulse.v1.Histogram (None or an unset field: empty)."""
        if pb is None or not len(pb.index):
            return cls(pb.precision if pb is not None and pb.precision else precision)
        return cls(pb.precision, pb.index, pb.count)

    def record(self, v: int, n: int = 1) -> None:
        i = bucket_index(v, self.precision)
        self._counts[i] = self._counts.get(i, 0) + n

    def buckets(self) -> Iterator[tuple[int, int]]:
        """(index, count) in rising index order."""
        for i in sorted(self._counts):
            yield i, self._counts[i]

    def merge(self, other: "Histogram") -> "Histogram":
        """Add other's counts into this histogram (exact); returns self."""
        if other.precision != self.precision:
            raise ValueError(f"cannot merge precision {other.precision} into {self.precision}")
        for i, c in other._counts.items():
            self._counts[i] = self._counts.get(i, 0) + c
        return self

    def __add__(self, other: "Histogram") -> "Histogram":
        return Histogram(self.precision).merge(self).merge(other)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Histogram) and other.precision == self.precision
                and other._counts == self._counts)

    def __repr__(self) -> str:
        return f"Histogram(precision={self.precision}, count={self.count})"

    @property
    def count(self) -> int:
        return sum(self._counts.values())

    @property
    def sum(self) -> float:
        """Approximate: each value taken as its bucket's midpoint."""
        return float(sum(bucket_mid(i, self.precision) * c for i, c in self._counts.items()))

    @property
    def mean(self) -> Optional[float]:
        n = self.count
        return self.sum / n if n else None

    @property
    def min(self) -> Optional[int]:
        """Lower bound of the lowest non-empty bucket (no value was smaller)."""
        return bucket_lower(min(self._counts), self.precision) if self._counts else None

    @property
    def max(self) -> Optional[int]:
        """Upper bound of the highest non-empty bucket (no value was larger)."""
        return bucket_upper(max(self._counts), self.precision) if self._counts else None

    def percentile(self, q: float) -> Optional[int]:
        """Midpoint of the bucket holding the value of rank ceil(q/100 * count); None if
        empty. q in (0, 100]."""
        if not 0.0 < q <= 100.0:
            raise ValueError(f"percentile {q} outside (0, 100]")
        n = self.count
        if not n:
            return None
        r, seen = rank(q, n), 0
        for i, c in self.buckets():
            seen += c
            if seen >= r:
                return bucket_mid(i, self.precision)
        return None  # not reached

    def cdf(self) -> list[tuple[int, float]]:
        """(bucket upper bound, fraction of values <= it) for each non-empty bucket."""
        n, seen, out = self.count, 0, []
        for i, c in self.buckets():
            seen += c
            out.append((bucket_upper(i, self.precision), seen / n))
        return out

    def summary(self) -> dict:
        return {"count": self.count, "p50": self.percentile(50) if self.count else None,
                "p90": self.percentile(90) if self.count else None,
                "p99": self.percentile(99) if self.count else None,
                "p999": self.percentile(99.9) if self.count else None, "max": self.max}
