/* inflight.h - the full mode's sweep of request records whose completion the kernel never
 * reported */
#ifndef IOPULSE_INFLIGHT_H
#define IOPULSE_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "diskstats.h"
#include "probes.h"

struct inflight;

int inflight_new(struct inflight **out, struct probes *p, uint32_t nslots);
struct inflight *inflight_free(struct inflight *f);

/*
 * Retires what the previous stamp proved complete, before the counters are read. slot_kdev[s]
 * is the kernel dev_t of device slot s, 0 if unused. A request record still present after
 * its device was seen with nothing in flight (diskstats' in_flight 0) at a stamp taken after
 * its dispatch belongs to an IO that completed without block_rq_complete reaching the BPF
 * program: it is removed and its IO counted in the slot's ios, bytes and unseen counters. The
 * records are only scanned for a device whose completion count in /proc/diskstats moved apart
 * from ours at its idle moments. Returns the number of records retired, or -errno.
 */
int inflight_retire(struct inflight *f, const uint32_t *slot_kdev);

/* How many records inflight_retire would retire now (none is touched), or -errno. */
int inflight_proven(struct inflight *f, const uint32_t *slot_kdev);

/*
 * The interval's stamp (diskstats_stamp, taken at `at`, after inflight_retire): which slots
 * were idle, and whose completion gap to /proc/diskstats moved (their records are scanned at
 * the next inflight_retire).
 */
void inflight_note(struct inflight *f, const struct diskstats_dev *devs, size_t n, uint64_t at);

#endif
