/* histogram.h - percentiles and summaries over log-linear histogram buckets (user space) */
#ifndef IOPULSE_HISTOGRAM_H
#define IOPULSE_HISTOGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "hist_math.h"
#include "interval.h"

struct iop_hist_summary {
	uint64_t count;
	double mean;             /* from bucket midpoints */
	uint64_t min, max;       /* bucket bounds: lowest bucket's lower bound, highest's upper */
	uint64_t p50, p90, p99, p999;
};

/*
 * Walks the non-empty buckets of a dense or sparse view: start with *pos = 0; returns false
 * past the last one.
 */
bool hist_next(const struct iop_hist_view *h, unsigned int *pos, unsigned int *idx,
	       uint64_t *count);

uint64_t hist_count(const struct iop_hist_view *h);

/*
 * q-th percentile (0 < q <= 100): the midpoint of the bucket holding the value of rank
 * ceil(q/100 * count), where a product within 8 DBL_EPSILON (relative) of a whole number
 * counts as that number (so 99.9% of 1000 is rank 999, not 1000). Relative error at most 2^-(k+1) for values >= 2^k, exact below.
 * Returns 0 and *out, or -ENODATA for an empty histogram, -EINVAL for a bad q.
 */
int hist_percentile(const struct iop_hist_view *h, double q, uint64_t *out);

/* All of the above at once; an empty histogram gives count 0 and zeros elsewhere. */
void hist_summarize(const struct iop_hist_view *h, struct iop_hist_summary *s);

/* Midpoint of a bucket (the value reported for it). */
uint64_t hist_bucket_mid(unsigned int idx, unsigned int k);

#endif
