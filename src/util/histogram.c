/* histogram.c - percentiles and summaries over log-linear histogram buckets (user space) */
#include "histogram.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

bool hist_next(const struct iop_hist_view *h, unsigned int *pos, unsigned int *idx,
	       uint64_t *count)
{
	if (!h->counts) {
		while (*pos < h->nsparse) {
			unsigned int p = (*pos)++;

			if (h->cnt[p] && h->idx[p] < h->nbuckets) {
				*idx = h->idx[p];
				*count = h->cnt[p];
				return true;
			}
		}
		return false;
	}
	while (*pos < h->nbuckets) {
		unsigned int p = (*pos)++;

		if (h->counts[p]) {
			*idx = p;
			*count = h->counts[p];
			return true;
		}
	}
	return false;
}

uint64_t hist_count(const struct iop_hist_view *h)
{
	unsigned int pos = 0, idx;
	uint64_t n = 0, c;

	while (hist_next(h, &pos, &idx, &c))
		n += c;
	return n;
}

uint64_t hist_bucket_mid(unsigned int idx, unsigned int k)
{
	uint64_t lo = iop_hist_lower(idx, k), hi = iop_hist_upper(idx, k);

	return lo + (hi - lo) / 2;
}

/*
 * ceil(q/100 * count), at least 1. q/100 * count is a product of two inexact doubles: 99.9% of
 * 1000 comes out as 999.0000000000001, whose ceiling would be rank 1000. A product within a few
 * ulps (8 * DBL_EPSILON relative) of a whole number is taken as that number, so decimal
 * percentiles get the rank they name. Other implementations must apply the same rule
 * (tests/vectors/hist_vectors.txt has cases for it).
 */
static uint64_t rank_of(double q, uint64_t count)
{
	double r = q / 100.0 * (double)count, whole = nearbyint(r);

	if (fabs(r - whole) <= 8 * DBL_EPSILON * fmax(1.0, r))
		r = whole;
	else
		r = ceil(r);
	if (r < 1)
		r = 1;
	if (r > (double)count)
		r = (double)count;
	return (uint64_t)r;
}

int hist_percentile(const struct iop_hist_view *h, double q, uint64_t *out)
{
	uint64_t count, rank, seen = 0, c;
	unsigned int pos = 0, idx;

	if (!(q > 0.0 && q <= 100.0))
		return -EINVAL;
	count = hist_count(h);
	if (!count)
		return -ENODATA;
	rank = rank_of(q, count);
	while (hist_next(h, &pos, &idx, &c)) {
		seen += c;
		if (seen >= rank) {
			*out = hist_bucket_mid(idx, h->k);
			return 0;
		}
	}
	return -ENODATA;
}

void hist_summarize(const struct iop_hist_view *h, struct iop_hist_summary *s)
{
	static const double qs[4] = { 50.0, 90.0, 99.0, 99.9 };
	uint64_t *outs[4] = { &s->p50, &s->p90, &s->p99, &s->p999 };
	uint64_t ranks[4], seen = 0, c;
	double sum = 0;
	unsigned int i, next = 0, pos = 0, idx;
	bool first = true;

	memset(s, 0, sizeof(*s));
	s->count = hist_count(h);
	if (!s->count)
		return;
	for (i = 0; i < 4; i++)
		ranks[i] = rank_of(qs[i], s->count);
	while (hist_next(h, &pos, &idx, &c)) {
		if (first) {
			s->min = iop_hist_lower(idx, h->k);
			first = false;
		}
		s->max = iop_hist_upper(idx, h->k);
		sum += (double)c * (double)hist_bucket_mid(idx, h->k);
		seen += c;
		while (next < 4 && seen >= ranks[next])
			*outs[next++] = hist_bucket_mid(idx, h->k);
	}
	s->mean = sum / (double)s->count;
}
