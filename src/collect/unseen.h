/* unseen.h - completions the kernel made and the programs did not see, found at the devices'
 * idle moments in /proc/diskstats: by the record sweep or by count, as the mode has it */
#ifndef IOPULSE_UNSEEN_H
#define IOPULSE_UNSEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diskstats.h"
#include "probes.h"

struct unseen;

/* The edge an interval ends at, which decides when what its stamp proves complete is counted. */
enum unseen_edge {
	UNSEEN_TICK,    /* a timer's edge: at the next interval's run */
	UNSEEN_MARK,    /* a phase mark's: now, after a short pause, so the phase it closes holds it */
	UNSEEN_FINAL,   /* the last interval before the probes go: now, likewise */
};

/*
 * The strategy is chosen here, once, from the probes loaded: the full mode sweeps its request
 * records (inflight.c) and keeps each device's gap to /proc/diskstats for a successor; the
 * completion-only mode, which keeps no records, counts what the gaps show (reconcile.c).
 * nslots: the probes' device slots. diskstats: path of /proc/diskstats (NULL: the default).
 */
int unseen_new(struct unseen **out, struct probes *p, uint32_t nslots, const char *diskstats);
struct unseen *unseen_free(struct unseen *u);

/*
 * Once per interval before the counters are read (and once right after the probes attach,
 * which only takes references): one stamp of /proc/diskstats (two reads, diskstats_stamp) for
 * the devices devs, and what it shows counted in their slots' ios, bytes and unseen counters.
 * slot_kdev[s]: the kernel dev_t of slot s, 0 if unused; every used slot is among devs.
 * edge: at a mark or the last interval, a record this stamp proves complete (its device idle,
 * the record older than the stamp and still open after a pause of 20 ms, which is taken only
 * when there is such a record) is counted in this interval. Returns the IOs counted, or -errno.
 */
int unseen_run(struct unseen *u, struct diskstats_dev *devs, size_t n,
	       const uint32_t *slot_kdev, enum unseen_edge edge);

/* The devices' reference gaps to /proc/diskstats, which a reload carries over (handover.c). */
struct reconcile *unseen_refs(struct unseen *u);

/* How many times /proc/diskstats was read so far. */
uint64_t unseen_reads(const struct unseen *u);

#endif
