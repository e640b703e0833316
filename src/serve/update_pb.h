/* update_pb.h - builds, filters and merges iopulse.v1.Update messages (protobuf-c) */
#ifndef IOPULSE_UPDATE_PB_H
#define IOPULSE_UPDATE_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interval.h"
#include "iopulse.pb-c.h"

typedef Iopulse__V1__Update pb_update;

/* What a subscriber asked to see: exact device names and thread-name globs; none = all. */
struct update_filter {
	char **devices;
	size_t ndevices;
	char **threads;
	size_t nthreads;
	bool marks_counted;   /* phase marks add to phase_marks only, never listed */
};

bool update_filter_empty(const struct update_filter *f);

/*
 * A new Update holding one interval, everything in it (merged = 1). Every part is allocated
 * separately with malloc, so update_free (protobuf-c's free_unpacked) releases it.
 */
pb_update *update_from_interval(const struct iop_interval *iv);

/* A deep copy of m through filter f (NULL: everything). */
pb_update *update_copy(const pb_update *m, const struct update_filter *f);

/*
 * Add src (the intervals right after acc's, or any later ones) into acc through f: counts
 * and histograms add up, the window grows to src's end, phase marks are appended in order
 * (or only counted, f->marks_counted).
 * Returns 0, -EXDEV when the two use different histogram precisions (nothing merged), or
 * -ENOMEM (acc stays consistent, possibly partly merged).
 */
int update_merge_into(pb_update *acc, const pb_update *src, const struct update_filter *f);

/* Adds s's calls, sums and histograms into a (one thread's totals). 0 or -ENOMEM. */
int update_thread_add(Iopulse__V1__ThreadSync *a, const Iopulse__V1__ThreadSync *s);

void update_free(pb_update *u);

/*
 * A comma list ("sdb,sdc") as a repeated string field: a malloc'd array of *n malloc'd
 * strings, NULL with *n 0 for an empty list (or when memory runs out).
 */
char **pb_split_list(const char *s, size_t *n);

/* Any protobuf-c message, packed into a new malloc'd buffer; NULL on ENOMEM. */
uint8_t *pb_pack_alloc(const ProtobufCMessage *m, size_t *len);

#endif
