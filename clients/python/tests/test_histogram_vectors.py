"""The shared histogram vectors (tests/vectors/hist_vectors.txt), line by line, and merging."""
from __future__ import annotations

import pathlib
import random

import pytest

from iopulse.histogram import (Histogram, bucket_index, bucket_lower, bucket_mid, bucket_upper,
                               nbuckets)

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "vectors" / "hist_vectors.txt"


def vector_lines():
    for n, line in enumerate(VECTORS.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            yield n, line.split(" ")


def test_every_vector_line():
    checked = {"index": 0, "samples": 0, "percentile": 0}
    hist = None
    for n, f in vector_lines():
        kind = f[0]
        if kind == "index":
            k, v, b, lo, hi, mid = map(int, f[1:])
            assert bucket_index(v, k) == b, f"line {n}: index({v}, {k})"
            assert (bucket_lower(b, k), bucket_upper(b, k), bucket_mid(b, k)) == (lo, hi, mid), \
                f"line {n}: bounds of bucket {b} at k={k}"
        elif kind == "samples":
            hist = Histogram.from_values(int(f[1]), (int(x) for x in f[2:]))
        elif kind == "percentile":
            k, q, want = int(f[1]), float(f[2]), int(f[3])
            assert hist is not None and hist.precision == k, f"line {n}: no sample set"
            assert hist.percentile(q) == want, f"line {n}: p{f[2]} of {hist}"
        else:
            pytest.fail(f"{VECTORS}:{n}: unknown line kind {kind!r}")
        checked[kind] += 1
    print(f"\nvectors checked: {checked}")
    assert all(checked.values()), checked


@pytest.mark.parametrize("k", [2, 5, 7])
def test_merge_equals_recording_everything(k):
    rnd = random.Random(k)
    a_vals = [rnd.randrange(0, 1 << 36) for _ in range(3000)]
    b_vals = [int(rnd.expovariate(1e-5)) for _ in range(2000)]
    a, b = Histogram.from_values(k, a_vals), Histogram.from_values(k, b_vals)
    both = Histogram.from_values(k, a_vals + b_vals)
    assert a + b == both
    assert a.merge(b) == both and a.count == 5000
    for q in (50, 90, 99, 99.9, 100):
        assert both.percentile(q) is not None
    vals = sorted(a_vals + b_vals)
    p99 = vals[int(0.99 * len(vals)) - 1]
    assert abs(both.percentile(99) - p99) <= p99 * 2 ** -(k + 1) + 1


def test_merge_rejects_other_precision():
    with pytest.raises(ValueError, match="precision"):
        Histogram(5).merge(Histogram(4))


def test_summary_values():
    h = Histogram(5, [bucket_index(100, 5), bucket_index(5000, 5)], [3, 1])
    assert h.count == 4
    assert h.min == bucket_lower(bucket_index(100, 5), 5)
    assert h.max == bucket_upper(bucket_index(5000, 5), 5)
    assert h.percentile(50) == bucket_mid(bucket_index(100, 5), 5)
    assert h.cdf()[-1][1] == 1.0
    assert Histogram(5).percentile(50) is None and Histogram(5).mean is None
    with pytest.raises(ValueError):
        Histogram(5, [nbuckets(5)], [1])
