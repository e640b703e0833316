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

static uint64_t counts[IOP_HIST_NBUCKETS_MAX];

static void fill(const uint64_t *v, size_t n, unsigned int k, struct iop_hist_view *h)
{
	size_t i;

	memset(counts, 0, sizeof(counts));
	for (i = 0; i < n; i++)
		counts[iop_hist_index(v[i], k)]++;
	*h = (struct iop_hist_view){ .k = k, .nbuckets = IOP_HIST_NBUCKETS(k), .counts = counts };
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Percentiles as exact fractions num/den, so that the ground truth needs no floating point. */
struct pct {
	double q;
	uint64_t num, den;
};

static const struct pct pcts[] = {
	{ 0.1, 1, 10 }, { 1, 1, 1 }, { 10, 10, 1 }, { 25, 25, 1 }, { 33.3, 333, 10 },
	{ 50, 50, 1 }, { 75, 75, 1 }, { 90, 90, 1 }, { 99, 99, 1 }, { 99.9, 999, 10 },
	{ 99.99, 9999, 100 }, { 100, 100, 1 },
};

/* The ceil(q/100 * n)-th smallest sample (at least the first), in integers. */
static uint64_t exact(const uint64_t *sorted, uint64_t n, const struct pct *p)
{
	uint64_t d = 100 * p->den, r = (p->num * n + d - 1) / d;

	return sorted[(r ? r : 1) - 1];
}

static void check_set_k(uint64_t *v, size_t n, unsigned int k)
{
	double bound = ldexp(1.0, -(int)k - 1), sum = 0, mean;
	struct iop_hist_view h;
	struct iop_hist_summary s;
	uint64_t got;
	size_t i;

	fill(v, n, k, &h);
	qsort(v, n, sizeof(*v), cmp);
	for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		uint64_t want = exact(v, n, &pcts[i]);

		ck_assert_int_eq(hist_percentile(&h, pcts[i].q, &got), 0);
		/* the midpoint of the exact value's own bucket, hence within the bound */
		ck_assert_msg(got == hist_bucket_mid(iop_hist_index(want, k), k),
			      "k=%u n=%zu q=%g got %llu, exact %llu", k, n, pcts[i].q,
			      (unsigned long long)got, (unsigned long long)want);
		ck_assert(fabs((double)got - (double)want) <= bound * (double)want);
	}
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	mean = sum / (double)n;
	hist_summarize(&h, &s);
	ck_assert_uint_eq(s.count, n);
	ck_assert_uint_eq(s.min, iop_hist_lower(iop_hist_index(v[0], k), k));
	ck_assert_uint_eq(s.max, iop_hist_upper(iop_hist_index(v[n - 1], k), k));
	ck_assert_msg(fabs(s.mean - mean) <= bound * mean * (1 + 1e-12),
		      "k=%u mean %g, exact %g", k, s.mean, mean);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), 0);
	ck_assert_uint_eq(s.p50, got);
	ck_assert_int_eq(hist_percentile(&h, 90, &got), 0);
	ck_assert_uint_eq(s.p90, got);
	ck_assert_int_eq(hist_percentile(&h, 99, &got), 0);
	ck_assert_uint_eq(s.p99, got);
	ck_assert_int_eq(hist_percentile(&h, 99.9, &got), 0);
	ck_assert_uint_eq(s.p999, got);
	ck_assert(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p999 &&
		  s.p999 <= s.max);
}

static void check_set(uint64_t *v, size_t n)
{
	unsigned int k;

	for (k = IOP_HIST_K_MIN; k <= IOP_HIST_K_MAX; k++)
		check_set_k(v, n, k);
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

START_TEST(test_two_point_split)
{
	uint64_t v[4] = { 10, 10, 5000000, 5000000 };
	struct iop_hist_view h;
	uint64_t got;

	fill(v, 4, K, &h);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), 0);    /* rank 2: the low point */
	ck_assert_uint_eq(got, 10);
	ck_assert_int_eq(hist_percentile(&h, 50.1, &got), 0);  /* rank 3: the high point */
	ck_assert_uint_eq(got, hist_bucket_mid(iop_hist_index(5000000, K), K));
}
END_TEST

/* 99.9/100*1000 is 999.0000000000001 in doubles; the rank is still 999, not the outlier. */
START_TEST(test_decimal_rank)
{
	static uint64_t v[2000];
	struct iop_hist_view h;
	uint64_t got;
	size_t i;

	for (i = 0; i < 999; i++)
		v[i] = 1000;
	v[999] = 1000000000;
	fill(v, 1000, K, &h);
	ck_assert_int_eq(hist_percentile(&h, 99.9, &got), 0);
	ck_assert_uint_eq(got, hist_bucket_mid(iop_hist_index(1000, K), K));
	ck_assert_int_eq(hist_percentile(&h, 99.91, &got), 0);  /* rank 1000 */
	ck_assert_uint_eq(got, hist_bucket_mid(iop_hist_index(1000000000, K), K));
	for (i = 0; i < 1000; i++)
		v[i] = 1 + i;
	check_set(v, 1000);
	for (i = 0; i < 2000; i++)
		v[i] = 1 + 1000 * i;
	check_set(v, 2000);
}
END_TEST

START_TEST(test_small_exact)
{
	uint64_t v[] = { 0, 1, 2, 3, 7, 15, 31 };
	struct iop_hist_view h;
	uint64_t got;

	fill(v, 7, K, &h);
	ck_assert_int_eq(hist_percentile(&h, 100, &got), 0);
	ck_assert_uint_eq(got, 31);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), 0);
	ck_assert_uint_eq(got, 3);
	ck_assert_int_eq(hist_percentile(&h, 0.001, &got), 0);  /* rank 1 */
	ck_assert_uint_eq(got, 0);
}
END_TEST

START_TEST(test_empty_and_bad_q)
{
	uint64_t one[1] = { 5 }, got = 42;
	struct iop_hist_view h;
	struct iop_hist_summary s;

	fill(NULL, 0, K, &h);
	ck_assert_int_eq(hist_percentile(&h, 50, &got), -ENODATA);
	ck_assert_uint_eq(got, 42);
	ck_assert_uint_eq(hist_count(&h), 0);
	memset(&s, 0xff, sizeof(s));
	hist_summarize(&h, &s);
	ck_assert_uint_eq(s.count, 0);
	ck_assert_uint_eq(s.min, 0);
	ck_assert_uint_eq(s.max, 0);
	ck_assert_uint_eq(s.p50, 0);
	ck_assert_uint_eq(s.p999, 0);
	ck_assert(s.mean == 0.0);
	fill(one, 1, K, &h);
	ck_assert_int_eq(hist_percentile(&h, 0, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, -0.0, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, -1, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, 100.5, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, NAN, &got), -EINVAL);
	ck_assert_int_eq(hist_percentile(&h, INFINITY, &got), -EINVAL);
	ck_assert_uint_eq(got, 42);
	ck_assert_int_eq(hist_percentile(&h, 100, &got), 0);
	ck_assert_uint_eq(got, 5);
}
END_TEST

/* A hand-made sparse view: zero counts and indexes past the end are not buckets. */
START_TEST(test_sparse_view)
{
	static const uint32_t idx[] = { 3, 40, 41, 500, NB + 5 };
	static const uint64_t cnt[] = { 2, 0, 1, 1, 9 };
	struct iop_hist_view h = { .k = K, .nbuckets = NB, .nsparse = 5, .idx = idx, .cnt = cnt };
	unsigned int pos = 0, i, n = 0;
	struct iop_hist_summary s;
	uint64_t c, got;

	while (hist_next(&h, &pos, &i, &c))
		n++;
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(hist_count(&h), 4);
	hist_summarize(&h, &s);
	ck_assert_uint_eq(s.min, 3);
	ck_assert_uint_eq(s.max, iop_hist_upper(500, K));
	ck_assert_uint_eq(s.p50, 3);
	ck_assert_int_eq(hist_percentile(&h, 75, &got), 0);
	ck_assert_uint_eq(got, hist_bucket_mid(41, K));
	ck_assert_uint_eq(s.p999, hist_bucket_mid(500, K));
}
END_TEST

/* A sparse view from sparse_diff must summarize exactly like the dense delta it encodes. */
START_TEST(test_sparse_equals_dense)
{
	static uint64_t cum0[NB], cum1[NB], dense[NB];
	static uint32_t prev[NB];
	struct sparse_arena ar = { 0 };
	struct iop_hist_view d = { .k = K, .nbuckets = NB, .counts = dense };
	struct iop_hist_view sp = { .k = K, .nbuckets = NB };
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

static unsigned int parse_k(const char *s)
{
	char *end;
	unsigned long k = strtoul(s, &end, 10);

	ck_assert_msg(end != s && k >= IOP_HIST_K_MIN && k <= IOP_HIST_K_MAX, "bad K: %s", s);
	return (unsigned int)k;
}

/* Every line of the shared vector file, which other implementations check too. */
START_TEST(test_shared_vectors)
{
	FILE *f = fopen(TEST_SRCDIR "/tests/vectors/hist_vectors.txt", "r");
	static uint64_t vcounts[IOP_HIST_NBUCKETS_MAX];
	struct iop_hist_view h = { 0 };
	unsigned int nidx = 0, npct = 0, nsets = 0, lineno = 0, sk = 0;
	char *line = NULL;
	size_t cap = 0;

	ck_assert_msg(f != NULL, "cannot open the vector file");
	while (getline(&line, &cap, f) > 0) {
		unsigned long long v, lo, hi, mid, want;
		unsigned int k, b;
		double q;
		int used = 0;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "index %u %llu %u %llu %llu %llu %n", &k, &v, &b, &lo, &hi, &mid,
			   &used) == 6 && !line[used]) {
			ck_assert_msg(iop_hist_index(v, k) == b, "line %u: index", lineno);
			ck_assert_msg(iop_hist_lower(b, k) == lo, "line %u: lower", lineno);
			ck_assert_msg(iop_hist_upper(b, k) == hi, "line %u: upper", lineno);
			ck_assert_msg(hist_bucket_mid(b, k) == mid, "line %u: mid", lineno);
			nidx++;
		} else if (!strncmp(line, "samples ", 8)) {
			char *p = line + 8, *end;

			sk = parse_k(p);
			strtoul(p, &end, 10);
			memset(vcounts, 0, sizeof(vcounts));
			h = (struct iop_hist_view){ .k = sk, .nbuckets = IOP_HIST_NBUCKETS(sk),
						    .counts = vcounts };
			for (p = end; *p && *p != '\n'; p = end) {
				v = strtoull(p, &end, 10);
				ck_assert_msg(end != p && (*end == ' ' || *end == '\n' || !*end),
					      "line %u: bad sample", lineno);
				vcounts[iop_hist_index(v, sk)]++;
			}
			ck_assert_msg(hist_count(&h) > 0, "line %u: no samples", lineno);
			nsets++;
		} else if (sscanf(line, "percentile %u %lf %llu %n", &k, &q, &want, &used) == 3 &&
			   !line[used]) {
			uint64_t got;

			ck_assert_msg(sk && k == sk, "line %u: K %u without its sample set", lineno, k);
			ck_assert_int_eq(hist_percentile(&h, q, &got), 0);
			ck_assert_msg(got == want, "line %u: q=%g got %llu want %llu", lineno, q,
				      (unsigned long long)got, want);
			npct++;
		} else {
			ck_abort_msg("line %u unparsed: %s", lineno, line);
		}
	}
	free(line);
	fclose(f);
	ck_assert_uint_gt(nidx, 500);
	ck_assert_uint_gt(nsets, 6 * (IOP_HIST_K_MAX - IOP_HIST_K_MIN + 1) - 1);
	ck_assert_uint_gt(npct, 500);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("histogram");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_uniform);
	tcase_add_test(tc, test_exponential);
	tcase_add_test(tc, test_constant_single_twopoint);
	tcase_add_test(tc, test_two_point_split);
	tcase_add_test(tc, test_decimal_rank);
	tcase_add_test(tc, test_small_exact);
	tcase_add_test(tc, test_empty_and_bad_q);
	tcase_add_test(tc, test_sparse_view);
	tcase_add_test(tc, test_sparse_equals_dense);
	tcase_add_test(tc, test_shared_vectors);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
