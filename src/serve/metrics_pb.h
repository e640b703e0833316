/* metrics_pb.h - the cumulative telemetry in Prometheus's protobuf exposition, with native
 * histograms */
#ifndef IOPULSE_METRICS_PB_H
#define IOPULSE_METRICS_PB_H

#include <stddef.h>
#include <stdint.h>

#include "metrics_walk.h"

/*
 * Native histograms use schema METRICS_NATIVE_SCHEMA: 16 exponential buckets per power of two,
 * bucket i holding (2^((i-1)/16), 2^(i/16)]. Each of the daemon's (linear) buckets goes whole to
 * the native bucket holding its midpoint. A daemon bucket is at most 3.2% wide (2^-5 of its
 * octave's start), a native one 4.4%, so a daemon bucket contains at most one native edge:
 * exactly the values of such a bucket that lie on the other side of that edge from the
 * bucket's midpoint land one native bucket off. Zero (a 0 ns wait, a seek of 0 sectors) goes to
 * the zero bucket.
 */
#define METRICS_NATIVE_SCHEMA 4

#define METRICS_PB_CONTENT_TYPE \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

/*
 * Every metric of snap and info, as length-delimited io.prometheus.client.MetricFamily
 * messages in *out (malloc'd, *len bytes): counters, gauges, and histograms with both the
 * classic buckets of the text format and the native buckets. 0 or -errno.
 */
int metrics_render_pb(uint8_t **out, size_t *len, const Iopulse__V1__Update *snap,
		      const Iopulse__V1__Info *info, const struct metrics_opts *o,
		      const struct metrics_health *h, unsigned int *omitted);

/* The native bucket index (schema METRICS_NATIVE_SCHEMA) of a positive value. */
int metrics_native_index(double v);

#endif
