/* inflight.h - retires request records whose completion the kernel never reported */
#ifndef IOPULSE_INFLIGHT_H
#define IOPULSE_INFLIGHT_H

#include <stdint.h>

#include "probes.h"

struct inflight;

/* diskstats: path of /proc/diskstats (NULL for the default). */
int inflight_new(struct inflight **out, struct probes *p, uint32_t nslots, const char *diskstats);
struct inflight *inflight_free(struct inflight *f);

/*
 * Call once per interval, before the counters are read. slot_kdev[s] is the kernel dev_t of
 * device slot s, 0 if unused. A request record still present one interval after its device
 * was seen with nothing in flight (diskstats' in_flight 0) belongs to an IO that completed
 * without block_rq_complete reaching the BPF program: it is removed and its IO counted in the
 * slot's ios, bytes and unseen counters. The records are only scanned for a device whose
 * completion count in /proc/diskstats moved apart from ours since it was last idle.
 * Returns the number of records retired, or -errno.
 */
int inflight_sweep(struct inflight *f, const uint32_t *slot_kdev);

/*
 * A reload: the open request records of the outgoing probes (from), after their counters'
 * last read, are moved to the incoming ones (to), so that an IO dispatched before the cut is
 * timed by the new completion program and one whose completion the kernel never reported is
 * still found (by a dispatch that reuses its request, or by the sweep) and counted. Each move
 * takes the old record's ownership token; an IO that completes meanwhile is counted once, by
 * the new program. Nothing moves from or to the completion-only mode, which keeps no records.
 * Returns the number of records moved, or -errno.
 */
int inflight_adopt(struct probes *from, struct probes *to);

#endif
