"""The shared histogram vectors (tests/vectors/hist_vectors.txt), every line, and merging."""
from __future__ import annotations

import pathlib
import random

import pytest

from iopulse import Histogram
from iopulse.histogram import (K_MAX, K_MIN, bucket_index, bucket_lower, bucket_mid,
                               bucket_upper, nbuckets, rank)

VECTORS = pathlib.Path(__file__).resolve().parent / ".." / ".." / ".." / "tests" / "vectors" \
    / "hist_vectors.txt"


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
        where = f"{VECTORS.name}:{n}"
        if kind == "index":
            assert len(f) == 7, f"{where}: malformed"
            k, v, b, lo, hi, mid = map(int, f[1:])
            assert bucket_index(v, k) == b, f"{where}: bucket_index({v}, {k})"
            assert Histogram.bucket_index(v, k) == b, where
            got = (bucket_lower(b, k), bucket_upper(b, k), bucket_mid(b, k))
            assert got == (lo, hi, mid), f"{where}: bounds of bucket {b} at k={k}"
            assert (Histogram.bucket_lower(b, k), Histogram.bucket_upper(b, k),
                    Histogram.bucket_mid(b, k)) == (lo, hi, mid), where
            assert lo <= min(v, hi) and b < Histogram.nbuckets(k), where
        elif kind == "samples":
            hist = Histogram.from_values(int(f[1]), (int(x) for x in f[2:]))
            assert hist.count == len(f) - 2, where
        elif kind == "percentile":
            assert len(f) == 4, f"{where}: malformed"
            k, q, want = int(f[1]), float(f[2]), int(f[3])
            assert hist is not None and hist.precision == k, f"{where}: no sample set of k={k}"
            assert hist.percentile(q) == want, f"{where}: p{f[2]} of {hist}"
            # several at once, in one pass, give the same (in any order, repeated)
            assert hist.percentiles([100.0, q, 0.5, q]) == \
                [hist.percentile(100.0), want, hist.percentile(0.5), want], where
        else:
            pytest.fail(f"{where}: unknown line kind {kind!r}")
        checked[kind] += 1
    assert all(checked.values()), checked
    assert checked["index"] > 1000 and checked["percentile"] > 50, checked


def test_rank_rule():
    assert rank(99.9, 1000) == 999          # 999.0000000000001 is taken as 999
    assert rank(99.9, 1001) == 1000         # ceil(999.999)
    assert rank(50, 1) == 1 and rank(0.001, 10) == 1 and rank(100, 7) == 7
    assert rank(33.3, 3) == 1               # 0.999: not within 8 ulps of 1, ceil -> 1


@pytest.mark.parametrize("k", [K_MIN, 5, K_MAX])
def test_merge_equals_recording_everything(k):
    rnd = random.Random(k)
    a_vals = [rnd.randrange(0, 1 << 36) for _ in range(3000)]
    b_vals = [int(rnd.expovariate(1e-5)) for _ in range(2000)]
    a, b = Histogram.from_values(k, a_vals), Histogram.from_values(k, b_vals)
    both = Histogram.from_values(k, a_vals + b_vals)
    assert a + b == both and a.count == 3000      # + leaves its operands alone
    assert a.merge(b) is a and a == both and a.count == 5000
    vals = sorted(a_vals + b_vals)
    for q in (1, 50, 90, 99, 99.9, 100):
        exact = vals[rank(q, len(vals)) - 1]
        assert abs(both.percentile(q) - exact) <= exact * 2 ** -(k + 1) + 1, q


def test_merge_of_wire_histograms_is_exact():
    a = Histogram(5, [3, 40, 100], [1, 2, 3])
    b = Histogram(5, [40, 101], [5, 1])
    a.merge(b)
    assert list(a.buckets()) == [(3, 1), (40, 7), (100, 3), (101, 1)]
    assert a.merge(Histogram(5)) == a


def test_merge_rejects_other_precision():
    with pytest.raises(ValueError, match="precision"):
        Histogram(5).merge(Histogram(4))
    with pytest.raises(ValueError, match="precision"):
        Histogram(5) + Histogram(6)


def test_added_buckets_equal_the_wire_form():
    # the report adds a phase's Updates bucket by bucket: the same as building it at once
    h = Histogram(5).add_buckets(5, [3, 40, 100], [1, 2, 0]).add_buckets(5, [40], [5])
    assert h == Histogram(5, [3, 40], [1, 7]) and list(h.buckets()) == [(3, 1), (40, 7)]
    with pytest.raises(ValueError, match="out of range"):
        Histogram(5).add_buckets(5, [nbuckets(5)], [1])
    with pytest.raises(ValueError, match="negative"):
        Histogram(5).add_buckets(5, [1], [-1])
    wire = Histogram(5, [3, 40], [1, 2]).to_pb()
    assert Histogram(5).add_pb(wire, 5).add_pb(wire, 5) == Histogram(5, [3, 40], [2, 4])
    wire.ClearField("precision")                    # none named: the Update's
    assert Histogram(4).add_pb(wire, 4) == Histogram(4, [3, 40], [1, 2])
    wire.index.append(nbuckets(4))
    wire.count.append(1)
    with pytest.raises(ValueError, match="out of range"):
        Histogram(4).add_pb(wire, 4)


@pytest.mark.parametrize("fine,coarse", [(K_MAX, K_MIN), (6, 5), (5, 4)])
def test_buckets_of_another_precision_meet_in_the_coarser(fine, coarse):
    # every bucket of a finer layout lies in one of a coarser: values recorded at either
    # precision and added give the histogram of all of them at the coarser precision
    rnd = random.Random(fine * 10 + coarse)
    a_vals = [rnd.randrange(0, 1 << 42) for _ in range(500)] + list(range(300))
    b_vals = [int(rnd.expovariate(1e-6)) for _ in range(500)]
    want = Histogram.from_values(coarse, a_vals + b_vals)
    a, b = Histogram.from_values(fine, a_vals), Histogram.from_values(coarse, b_vals)
    assert a.copy().absorb(b) == want and b.copy().absorb(a) == want
    assert a.precision == fine and b.precision == coarse    # operands left alone


def test_summary_values():
    lo_b, hi_b = bucket_index(100, 5), bucket_index(5000, 5)
    h = Histogram(5, [lo_b, hi_b], [3, 1])
    assert h.count == 4
    assert h.min == bucket_lower(lo_b, 5) and h.max == bucket_upper(hi_b, 5)
    assert h.sum == 3 * bucket_mid(lo_b, 5) + bucket_mid(hi_b, 5)
    assert h.mean == h.sum / 4
    assert h.percentile(50) == h.percentile(75) == bucket_mid(lo_b, 5)
    assert h.percentile(76) == bucket_mid(hi_b, 5)
    assert h.cdf() == [(bucket_upper(lo_b, 5), 0.75), (bucket_upper(hi_b, 5), 1.0)]
    d = h.to_dict()
    assert d["buckets"] == [[lo_b, 3], [hi_b, 1]] and d["precision"] == 5 and d["count"] == 4
    assert d["p50"] == bucket_mid(lo_b, 5) and d["max"] == h.max


def test_percentiles_of_an_empty_histogram_and_bad_q():
    assert Histogram(5).percentiles([50, 99]) == [None, None]
    with pytest.raises(ValueError):
        Histogram.from_values(5, [1, 2]).percentiles([50, 0])


def test_count_and_fraction_above():
    """How many IOs took over x: exact below 2**k, off by at most the count of the bucket
    holding x above it, and the bucket's values fall where percentile() puts them."""
    k = 3
    values = [1, 2, 5, 7, 100, 1_000, 10_000, 10**9 + 10**8, 2 * 10**9]
    h = Histogram.from_values(k, values)
    assert h.count_above(-1) == 9 and h.fraction_above(-1) == 1.0
    assert h.count_above(5) == 6            # exact: 7 and up
    assert h.count_above(7) == 5
    assert h.count_above(10**9) == 2 and h.fraction_above(10**9) == 2 / 9
    assert h.count_above(2**40) == 0 and h.fraction_above(2**40) == 0.0
    for x in (50, 99, 150, 999, 5_000, 9_000):
        want = sum(v > x for v in values)
        i = bucket_index(int(x), k)
        slack = sum(1 for v in values if bucket_index(v, k) == i)
        assert abs(h.count_above(x) - want) <= slack, x
    # in agreement with the percentiles: p50's value is not above the median
    assert h.count_above(h.percentile(50)) <= 9 // 2
    assert Histogram(k).fraction_above(1) is None and Histogram(k).count_above(1) == 0


def test_empty_histogram():
    e = Histogram(5)
    assert e.count == 0 and e.sum == 0 and e.cdf() == []
    assert e.percentile(50) is None and e.mean is None and e.min is None and e.max is None
    assert e.to_dict() == {"precision": 5, "count": 0, "mean": None, "min": None, "p50": None,
                           "p90": None, "p99": None, "p999": None, "max": None, "buckets": []}


def test_bad_input_is_rejected():
    with pytest.raises(ValueError):
        Histogram(5, [nbuckets(5)], [1])            # index past the last bucket
    with pytest.raises(ValueError):
        Histogram(5, [1, 2], [1])                   # lengths differ
    with pytest.raises(ValueError):
        Histogram(K_MAX + 1)
    with pytest.raises(ValueError):
        bucket_index(-1, 5)
    for q in (0, -1, 100.5, float("nan")):
        with pytest.raises(ValueError):
            Histogram(5, [1], [1]).percentile(q)


def test_wire_round_trip():
    h = Histogram.from_values(5, [1, 1000, 10**6, 2**45])
    assert Histogram.from_pb(h.to_pb(), 4) == h
    assert Histogram.from_pb(None, 4) == Histogram(4)
    assert list(h.buckets())[-1] == (nbuckets(5) - 1, 1)   # clamped into the last bucket
