/* test_hist_math.c - bucket math: round trips, contiguity, clamping and the error bound */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "hist_math.h"
#include "histogram.h"

#define RANGE (1ULL << IOP_HIST_RANGE_BITS)
#define NRANDOM 1000000

START_TEST(test_msb)
{
	unsigned int b;

	for (b = 0; b < 64; b++) {
		ck_assert_uint_eq(iop_msb64(1ULL << b), b);
		ck_assert_uint_eq(iop_msb64((1ULL << b) | 1), b);
		ck_assert_uint_eq(iop_msb64(b == 63 ? ~0ULL : (2ULL << b) - 1), b);
	}
}
END_TEST

START_TEST(test_exact_below_2k)
{
	unsigned int k = (unsigned int)_i;
	unsigned long long v;

	for (v = 0; v < (1ULL << k); v++) {
		ck_assert_uint_eq(iop_hist_index(v, k), v);
		ck_assert_uint_eq(iop_hist_lower((unsigned int)v, k), v);
		ck_assert_uint_eq(iop_hist_upper((unsigned int)v, k), v);
		ck_assert_uint_eq(hist_bucket_mid((unsigned int)v, k), v);
	}
}
END_TEST

/* Buckets tile [0, 2^40) without gap or overlap, each bound maps back to its own bucket. */
START_TEST(test_buckets_contiguous)
{
	unsigned int k = (unsigned int)_i, nb = IOP_HIST_NBUCKETS(k), i;

	ck_assert_uint_eq(iop_hist_lower(0, k), 0);
	for (i = 0; i < nb; i++) {
		unsigned long long lo = iop_hist_lower(i, k), hi = iop_hist_upper(i, k);
		unsigned long long mid = hist_bucket_mid(i, k);

		ck_assert_uint_le(lo, hi);
		ck_assert(lo <= mid && mid <= hi);
		if (i)
			ck_assert_uint_eq(lo, iop_hist_upper(i - 1, k) + 1);
		ck_assert_uint_eq(iop_hist_index(lo, k), i);
		ck_assert_uint_eq(iop_hist_index(hi, k), i);
		if (lo)
			ck_assert_uint_eq(iop_hist_index(lo - 1, k), i - 1);
		if (i + 1 < nb)
			ck_assert_uint_eq(iop_hist_index(hi + 1, k), i + 1);
	}
	ck_assert_uint_eq(iop_hist_upper(nb - 1, k), RANGE - 1);
}
END_TEST

START_TEST(test_clamp)
{
	unsigned int k = (unsigned int)_i, nb = IOP_HIST_NBUCKETS(k);

	ck_assert_uint_eq(iop_hist_index(RANGE - 1, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index(RANGE, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index(RANGE + 1, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index(RANGE << 10, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index(~0ULL, k), nb - 1);
	ck_assert_uint_lt(iop_hist_index(RANGE - 1 - (RANGE >> (k + 1)), k), nb);
}
END_TEST

/* xorshift64*: a fixed sequence, so the figures printed below are reproducible */
static unsigned long long rng_state;

static unsigned long long rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/*
 * |mid - v| / v for v in [1, 2^40), checked against the bound; returns the error. Asserts
 * only on failure: a passing ck_assert costs a system call in Check's fork mode.
 */
static double check_value(unsigned long long v, unsigned int k)
{
	unsigned int idx = iop_hist_index(v, k);
	double err, bound = ldexp(1.0, -(int)k - 1);

	if (!(iop_hist_lower(idx, k) <= v && v <= iop_hist_upper(idx, k)))
		ck_abort_msg("k=%u v=%llu outside its bucket %u", k, v, idx);
	err = fabs((double)hist_bucket_mid(idx, k) - (double)v) / (double)v;
	if (v < (1ULL << k) && err != 0.0)
		ck_abort_msg("k=%u v=%llu not exact", k, v);
	if (!(err <= bound))
		ck_abort_msg("k=%u v=%llu err=%.12g > %.12g", k, v, err, bound);
	return err;
}

/* 10^6 values log-uniform over [1, 2^40) */
static double worst_random(unsigned int k)
{
	double worst = 0, err;
	long i;

	rng_state = 0x9E3779B97F4A7C15ULL;
	for (i = 0; i < NRANDOM; i++) {
		double u = (double)(rng() >> 11) / 9007199254740992.0;      /* [0, 1) */
		unsigned long long v = (unsigned long long)exp2(u * IOP_HIST_RANGE_BITS);

		if (v >= RANGE)
			v = RANGE - 1;
		err = check_value(v, k);
		if (err > worst)
			worst = err;
	}
	return worst;
}

/* powers of two and their neighbours */
static double worst_edges(unsigned int k)
{
	double worst = 0, err;
	unsigned int p;

	for (p = 0; p < IOP_HIST_RANGE_BITS; p++) {
		unsigned long long v = 1ULL << p;

		err = fmax(check_value(v, k), check_value(v + 1, k));
		if (v > 1)
			err = fmax(err, check_value(v - 1, k));
		if (err > worst)
			worst = err;
	}
	return worst;
}

/*
 * Within a bucket |mid - v| / v falls towards mid and rises after it, so its maximum is at
 * one of the two bounds: checking every bucket's bounds proves the bound for all v < 2^40.
 */
static double worst_exhaustive(unsigned int k)
{
	unsigned int i, nb = IOP_HIST_NBUCKETS(k);
	double worst = 0, err;

	for (i = 1; i < nb; i++) {
		err = fmax(check_value(iop_hist_lower(i, k), k), check_value(iop_hist_upper(i, k), k));
		if (err > worst)
			worst = err;
	}
	return worst;
}

START_TEST(test_error_bound)
{
	unsigned int k;

	for (k = IOP_HIST_K_MIN; k <= IOP_HIST_K_MAX; k++) {
		double bound = ldexp(1.0, -(int)k - 1);
		double wr = worst_random(k), we = worst_edges(k), wx = worst_exhaustive(k);

		ck_assert(wr <= wx && we <= wx);
		printf("hist_math: k=%u buckets=%u bound 2^-%u = %.6f%%; worst relative error: "
		       "%d log-uniform values %.6f%%, powers of two +-1 %.6f%%, "
		       "every bucket bound %.6f%% (bound - %.2g)\n",
		       k, IOP_HIST_NBUCKETS(k), k + 1, 100 * bound, NRANDOM, 100 * wr, 100 * we,
		       100 * wx, bound - wx);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hist_math");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_msb);
	tcase_add_loop_test(tc, test_exact_below_2k, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_loop_test(tc, test_buckets_contiguous, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_loop_test(tc, test_clamp, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_test(tc, test_error_bound);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
