/* metrics_text.h - the cumulative telemetry as Prometheus / OpenMetrics text */
#ifndef IOPULSE_METRICS_TEXT_H
#define IOPULSE_METRICS_TEXT_H

#include <stdio.h>

#include "metrics_walk.h"

/*
 * Writes every metric of snap (the daemon's cumulative Update since start) and of info (its
 * cost and subscribers; may be NULL) to f, as Prometheus text 0.0.4 or OpenMetrics 1.0
 * (o->openmetrics). Histogram buckets are the daemon's, merged to o->precision: each le is
 * the largest value its bucket holds (values are whole ns, bytes or sectors), so "<= le" is
 * exact. *omitted: threads matching the globs left out by max_threads. 0 or -errno.
 */
int metrics_render(FILE *f, const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		   const struct metrics_opts *o, const struct metrics_health *h,
		   unsigned int *omitted);

#endif
