/* test_histogram.c - percentiles from buckets against exact percentiles of known samples */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "histogram.h"
#include "sparse.h"

#define K 5
#define NB IOP_HIST_NBUCKETS(K)

static uint64_t counts[NB];

static void fill(const uint64_t *v, size_t n, struct iop_hist_view *h)
{
	size_t i;

	memset(counts, 0, sizeof(counts));
	for (i = 0; i < n; i++)
		counts[iop_hist_index(v[i], K)]++;
	h->k = K;
	h->nbuckets = NB;
	h->counts = counts;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* exact percentile with the same rank rule: the ceil(q/100*n)-th smallest */
static uint64_t exact(uint64_t *sorted, size_t n, double q)
{
	size_t r = (size_t)ceil(q / 100.0 * (double)n);

	if (r < 1)
		r = 1;
	return sorted[r - 1];
}

static void check_set(uint64_t *v, size_t n)
{
	static const double qs[] = { 1, 10, 25, 50, 75, 90, 99, 99.9, 100 };
	struct iop_hist_view h;
	double bound = ldexp(1.0, -K - 1), sum = 0;
	struct iop_hist_summary s;
	size_t i;

	fill(v, n, &h);
	qsort(v, n, sizeof(*v), cmp);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t got, want = exact(v, n, qs[i]);

		ck_assert_int_eq(hist_percentile(&h, qs[i], &got), 0);
		ck_assert_msg(fabs((double)got - (double)want) <= bound * (double)want + 0.5,
			      "q=%g got %llu want %llu", qs[i], (unsigned long long)got,
			      (unsigned long long)want);
	}
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	hist_summarize(&h, &s);
	ck_assert_uint_eq(s.count, n);
	ck_assert(s.min <= v[0] && v[n - 1] <= s.max);
	ck_assert(fabs(s.mean - sum / (double)n) <= bound * sum / (double)n + 0.5);
	ck_assert(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p999);
}

static uint64_t lcg = 12345;

static uint64_t next(void)
{
	lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return lcg >> 11;
}

START_TEST(test_uniform)
{
	static uint64_t v[100000];
	size_t i;

	for (i = 0; i < 100000; i++)
		v[i] = 1000 + next() % 1000000;
	check_set(v, 100000);
}
END_TEST

START_TEST(test_exponential)
{
	static uint64_t v[100000];
	size_t i;

	for (i = 0; i < 100000; i++) {
		double u = (double)(next() % 1000000 + 1) / 1000001.0;

		v[i] = (uint64_t)(-log(u) * 250000.0) + 1;
	}
	check_set(v, 100000);
}
END_TEST

START_TEST(test_constant_single_twopoint)
{
	uint64_t c[50], one[1] = { 123456789 }, two[4] = { 10, 10, 5000000, 5000000 };
	size_t i;

	for (i = 0; i < 50; i++)
		c[i] = 777;
	check_set(c, 50);
	check_set(one, 1);
	check_set(two, 4);
}
END_TEST

START_TEST(test_small_exact)
{
	uint64_t v[] = { 0, 1, 2, 3, 7, 15, 31 };
	struct iop_hist_view h;
	uint64_t got;

	fill(v, 7, &h);
	ck_assert_int_eq(hist_percentile(&h, 100, &got), 0);
	ck_assert_uint_eq(got, 31);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), 0);
	ck_assert_uint_eq(got, 3);
}
END_TEST

START_TEST(test_empty_and_bad_q)
{
	struct iop_hist_view h;
	struct iop_hist_summary s;
	uint64_t got = 42;

	fill(NULL, 0, &h);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), -ENODATA);
	ck_assert_uint_eq(got, 42);
	hist_summarize(&h, &s);
	ck_assert_uint_eq(s.count, 0);
	ck_assert_int_eq(hist_percentile(&h, 0, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, 100.5, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, NAN, &got), -EINVAL);
}
END_TEST

/* A sparse view from sparse_diff must summarize exactly like the dense delta it encodes. */
START_TEST(test_sparse_equals_dense)
{
	static uint64_t cum0[NB], cum1[NB], dense[NB];
	static uint32_t prev[NB];
	struct sparse_arena ar = { 0 };
	struct iop_hist_view d = { K, NB, dense, 0, NULL, NULL }, sp = { K, NB, NULL, 0, NULL, NULL };
	struct iop_hist_summary a, b;
	size_t start, i;
	unsigned int n;
	uint64_t pa, pb;

	for (i = 0; i < NB; i += 7)
		cum0[i] = (1ULL << 32) - 3 + i;        /* near the 32-bit wrap */
	ck_assert_int_eq(sparse_diff(&ar, prev, cum0, NB, &start, &n), 0);
	sparse_reset(&ar);
	for (i = 0; i < NB; i++) {
		cum1[i] = cum0[i] + ((i % 5 == 0) ? i + 1 : 0);
		dense[i] = cum1[i] - cum0[i];
	}
	ck_assert_int_eq(sparse_diff(&ar, prev, cum1, NB, &start, &n), 0);
	ck_assert_uint_eq(start, 0);
	ck_assert_uint_eq(n, (NB + 4) / 5);
	sp.nsparse = n;
	sp.idx = ar.idx;
	sp.cnt = ar.cnt;
	hist_summarize(&d, &a);
	hist_summarize(&sp, &b);
	ck_assert_uint_eq(a.count, b.count);
	ck_assert_uint_eq(a.p50, b.p50);
	ck_assert_uint_eq(a.p999, b.p999);
	ck_assert_uint_eq(a.min, b.min);
	ck_assert_uint_eq(a.max, b.max);
	ck_assert(a.mean == b.mean);
	ck_assert_int_eq(hist_percentile(&d, 37, &pa), 0);
	ck_assert_int_eq(hist_percentile(&sp, 37, &pb), 0);
	ck_assert_uint_eq(pa, pb);
	sparse_release(&ar);
}
END_TEST

/* Every line of the shared vector file, which other implementations check too. */
START_TEST(test_shared_vectors)
{
	FILE *f = fopen(TEST_SRCDIR "/tests/vectors/hist_vectors.txt", "r");
	static uint64_t vcounts[IOP_HIST_NBUCKETS_MAX];
	struct iop_hist_view h = { 0 };
	char line[65536];
	unsigned int nidx = 0, npct = 0;

	ck_assert_msg(f != NULL, "cannot open the vector file");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v, lo, hi, mid, want;
		unsigned int k, b;
		double q;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "index %u %llu %u %llu %llu %llu", &k, &v, &b, &lo, &hi, &mid) == 6) {
			ck_assert_uint_eq(iop_hist_index(v, k), b);
			ck_assert_uint_eq(iop_hist_lower(b, k), lo);
			ck_assert_uint_eq(iop_hist_upper(b, k), hi);
			ck_assert_uint_eq(hist_bucket_mid(b, k), mid);
			nidx++;
		} else if (!strncmp(line, "samples ", 8)) {
			char *p = line + 8, *end;

			k = (unsigned int)strtoul(p, &end, 10);
			memset(vcounts, 0, sizeof(vcounts));
			h = (struct iop_hist_view){ k, IOP_HIST_NBUCKETS(k), vcounts, 0, NULL, NULL };
			for (p = end; *p && *p != '\n'; p = end) {
				v = strtoull(p, &end, 10);
				if (end == p)
					break;
				vcounts[iop_hist_index(v, k)]++;
			}
		} else if (sscanf(line, "percentile %lf %llu", &q, &want) == 2) {
			uint64_t got;

			ck_assert_int_eq(hist_percentile(&h, q, &got), 0);
			ck_assert_msg(got == want, "q=%g got %llu want %llu", q, (unsigned long long)got, want);
			npct++;
		} else {
			ck_abort_msg("unparsed vector line: %s", line);
		}
	}
	fclose(f);
	ck_assert_uint_gt(nidx, 500);
	ck_assert_uint_gt(npct, 40);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("histogram");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_uniform);
	tcase_add_test(tc, test_exponential);
	tcase_add_test(tc, test_constant_single_twopoint);
	tcase_add_test(tc, test_small_exact);
	tcase_add_test(tc, test_empty_and_bad_q);
	tcase_add_test(tc, test_sparse_equals_dense);
	tcase_add_test(tc, test_shared_vectors);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
