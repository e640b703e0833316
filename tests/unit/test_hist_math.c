/* test_hist_math.c - bucket math: round trips, contiguity, clamping and the error bound */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "hist_math.h"
#include "histogram.h"

START_TEST(test_exact_below_2k)
{
	unsigned int k = (unsigned int)_i;
	unsigned long long v;

	for (v = 0; v < (1ULL << k); v++) {
		ck_assert_uint_eq(iop_hist_index(v, k), v);
		ck_assert_uint_eq(iop_hist_lower((unsigned int)v, k), v);
		ck_assert_uint_eq(iop_hist_upper((unsigned int)v, k), v);
	}
}
END_TEST

START_TEST(test_buckets_contiguous)
{
	unsigned int k = (unsigned int)_i, nb = IOP_HIST_NBUCKETS(k), i;

	ck_assert_uint_eq(iop_hist_lower(0, k), 0);
	for (i = 1; i < nb; i++) {
		ck_assert_uint_eq(iop_hist_lower(i, k), iop_hist_upper(i - 1, k) + 1);
		ck_assert_uint_eq(iop_hist_index(iop_hist_lower(i, k), k), i);
		ck_assert_uint_eq(iop_hist_index(iop_hist_upper(i, k), k), i);
	}
	ck_assert_uint_eq(iop_hist_upper(nb - 1, k), (1ULL << IOP_HIST_RANGE_BITS) - 1);
}
END_TEST

START_TEST(test_clamp)
{
	unsigned int k = (unsigned int)_i, nb = IOP_HIST_NBUCKETS(k);

	ck_assert_uint_eq(iop_hist_index(1ULL << IOP_HIST_RANGE_BITS, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index(~0ULL, k), nb - 1);
	ck_assert_uint_eq(iop_hist_index((1ULL << IOP_HIST_RANGE_BITS) - 1, k), nb - 1);
}
END_TEST

/* xorshift64*: deterministic values spread log-uniformly over [1, 2^40) */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;

static unsigned long long rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static double worst_error(unsigned int k, long n)
{
	double worst = 0, bound = ldexp(1.0, -(int)k - 1);
	long i;

	for (i = 0; i < n + 3 * IOP_HIST_RANGE_BITS; i++) {
		unsigned long long v;
		unsigned int idx;
		double err;

		if (i < n) {
			unsigned int bits = 1 + (unsigned int)(rng() % IOP_HIST_RANGE_BITS);

			v = rng() >> (64 - bits);
		} else {                 /* powers of two and their neighbours */
			unsigned int p = (unsigned int)((i - n) / 3);

			v = (1ULL << p) + (unsigned long long)((i - n) % 3) - 1;
		}
		if (v == 0 || v >= (1ULL << IOP_HIST_RANGE_BITS))
			continue;
		idx = iop_hist_index(v, k);
		ck_assert(iop_hist_lower(idx, k) <= v && v <= iop_hist_upper(idx, k));
		err = fabs((double)hist_bucket_mid(idx, k) - (double)v) / (double)v;
		if (v < (1ULL << k))
			ck_assert(err == 0.0);
		ck_assert_msg(err <= bound, "k=%u v=%llu err=%g > %g", k, v, err, bound);
		if (err > worst)
			worst = err;
	}
	return worst;
}

START_TEST(test_error_bound)
{
	unsigned int k;

	for (k = IOP_HIST_K_MIN; k <= IOP_HIST_K_MAX; k++) {
		double w = worst_error(k, 1000000);

		printf("hist_math: k=%u buckets=%u bound=%.4f%% worst observed=%.4f%% (1e6 values)\n",
		       k, IOP_HIST_NBUCKETS(k), 100 * ldexp(1.0, -(int)k - 1), 100 * w);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hist_math");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_exact_below_2k, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_loop_test(tc, test_buckets_contiguous, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_loop_test(tc, test_clamp, IOP_HIST_K_MIN, IOP_HIST_K_MAX + 1);
	tcase_add_test(tc, test_error_bound);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
