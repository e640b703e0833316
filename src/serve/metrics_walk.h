/* metrics_walk.h - the exported metrics of a cumulative Update, for any exposition format */
#ifndef IOPULSE_METRICS_WALK_H
#define IOPULSE_METRICS_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "iopulse.pb-c.h"

struct metrics_opts {
	unsigned int precision;              /* 2^precision classic buckets per power of two (<= k) */
	const struct iop_strlist *threads;   /* thread-name globs exported */
	unsigned int max_threads;            /* thread series sets at most */
	bool openmetrics;                    /* text: OpenMetrics 1.0 (else Prometheus 0.0.4) */
	const char *host;                    /* the host label */
};

struct metrics_health {
	double last_scrape_s;                /* how long the previous scrape took */
	uint64_t scrapes;                    /* scrapes answered before this one */
};

/* Value range of a histogram family's classic buckets: [2^lo_bits, 2^hi_bits) in its unit;
 * below and above fold into the first bucket and +Inf. scale: unit to exported (ns -> s). */
struct metrics_range {
	unsigned int lo_bits, hi_bits;
	double scale;
};

enum metrics_type { MT_COUNTER, MT_GAUGE, MT_HISTOGRAM, MT_INFO };

struct metrics_label {
	const char *name, *value;
};

/* What a format does with the walk. name: the family's name (counters without _total). */
struct metrics_sink {
	void *ctx;
	void (*family)(void *ctx, const char *name, enum metrics_type type, const char *help);
	void (*number)(void *ctx, const char *name, const struct metrics_label *l, size_t nl,
		       double v);
	/* h: the daemon's sparse buckets at precision k (NULL: empty); sum: exact, or NULL */
	void (*histogram)(void *ctx, const char *name, const struct metrics_label *l, size_t nl,
			  const Iopulse__V1__Histogram *h, unsigned int k,
			  const struct metrics_range *r, const uint64_t *sum);
};

/* Every metric of snap and info (may be NULL) into sink; *omitted: threads left out. */
int metrics_walk(const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		 const struct metrics_opts *o, const struct metrics_health *h,
		 const struct metrics_sink *sink, unsigned int *omitted);

/* Number of classic le edges (+Inf included) of a range at precision p (for docs). */
unsigned int metrics_bucket_count(unsigned int lo_bits, unsigned int hi_bits, unsigned int p);

#endif
