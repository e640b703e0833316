/* metrics_text.h - the cumulative telemetry as Prometheus / OpenMetrics text */
#ifndef IOPULSE_METRICS_TEXT_H
#define IOPULSE_METRICS_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "iopulse.pb-c.h"

struct metrics_opts {
	unsigned int precision;              /* 2^precision buckets per power of two (<= k) */
	const struct iop_strlist *threads;   /* thread-name globs exported */
	unsigned int max_threads;            /* thread series sets at most */
	bool openmetrics;                    /* OpenMetrics 1.0 (else Prometheus text 0.0.4) */
	const char *host;                    /* the host label */
};

struct metrics_health {
	double last_scrape_s;                /* how long the previous scrape took */
	uint64_t scrapes;                    /* scrapes answered before this one */
};

/*
 * Writes every metric of snap (the daemon's cumulative Update since start) and of info (its
 * cost and subscribers; may be NULL) to f. Histogram buckets are ours, merged to
 * o->precision: each le is the largest value its bucket holds (values are whole ns, bytes
 * or sectors), so "<= le" is exact. *omitted: threads matching the globs left out by
 * max_threads. Returns 0 or -errno.
 */
int metrics_render(FILE *f, const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		   const struct metrics_opts *o, const struct metrics_health *h,
		   unsigned int *omitted);

/* Number of le edges (+Inf included) of a family's histogram at precision p (for docs). */
unsigned int metrics_bucket_count(unsigned int lo_bits, unsigned int hi_bits, unsigned int p);

#endif
