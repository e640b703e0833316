/* unseen.c - completions the kernel made and the programs did not see, found at the devices'
 * idle moments in /proc/diskstats: by the record sweep or by count, as the mode has it */
#include "unseen.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "inflight.h"
#include "reconcile.h"

/* What the two modes do with the interval's devices (unseen_run). */
struct unseen_strategy {
	int (*run)(struct unseen *u, struct diskstats_dev *devs, size_t n,
		   const uint32_t *slot_kdev, enum unseen_edge edge);
};

struct unseen {
	const struct unseen_strategy *s;
	struct diskstats *stats;       /* the one reader of /proc/diskstats */
	struct reconcile *refs;        /* each device's gaps: counted, or kept for a successor */
	struct inflight *sweep;        /* the full mode's records */
};

/*
 * The full mode: the records the previous stamp proved complete are retired first, then the
 * stamp is taken, for the sweep's next run and the references. A mark's interval and the last
 * look once more, after a pause, when the stamp proves some record complete: a device idle at
 * this stamp whose records are still open after it (a completion seen by BPF takes
 * microseconds) completed unseen, and is counted before the phase or the daemon ends.
 */
static int sweep_run(struct unseen *u, struct diskstats_dev *devs, size_t n,
		     const uint32_t *slot_kdev, enum unseen_edge edge)
{
	uint64_t at;
	int r, more;

	r = inflight_retire(u->sweep, slot_kdev);
	if (r < 0)
		return r;
	more = diskstats_stamp(u->stats, devs, n, &at);
	if (more)
		return more;
	inflight_note(u->sweep, devs, n, at);
	more = reconcile_run(u->refs, devs, n);     /* references only */
	if (more < 0)
		return more;
	if (edge != UNSEEN_TICK && inflight_proven(u->sweep, slot_kdev) > 0) {
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
		more = inflight_retire(u->sweep, slot_kdev);
		if (more < 0)
			return more;
		r += more;
	}
	return r;
}

/* The completion-only mode: no records; what the gaps to /proc/diskstats show is counted. */
static int count_run(struct unseen *u, struct diskstats_dev *devs, size_t n,
		     const uint32_t *slot_kdev, enum unseen_edge edge)
{
	uint64_t at;
	int r;

	r = diskstats_stamp(u->stats, devs, n, &at);
	return r ? r : reconcile_run(u->refs, devs, n);
}

static const struct unseen_strategy sweep = { .run = sweep_run };
static const struct unseen_strategy count = { .run = count_run };

int unseen_new(struct unseen **out, struct probes *p, uint32_t nslots, const char *diskstats)
{
	struct unseen *u = calloc(1, sizeof(*u));
	bool counting = probes_completion_only(p);
	int r;

	if (!u)
		return -ENOMEM;
	u->s = counting ? &count : &sweep;
	r = diskstats_new(&u->stats, diskstats) ?: reconcile_new(&u->refs, counting);
	if (!r && !counting)
		r = inflight_new(&u->sweep, p, nslots);
	if (r) {
		unseen_free(u);
		return r;
	}
	*out = u;
	return 0;
}

struct unseen *unseen_free(struct unseen *u)
{
	if (!u)
		return NULL;
	diskstats_free(u->stats);
	reconcile_free(u->refs);
	inflight_free(u->sweep);
	free(u);
	return NULL;
}

int unseen_run(struct unseen *u, struct diskstats_dev *devs, size_t n,
	       const uint32_t *slot_kdev, enum unseen_edge edge)
{
	return u->s->run(u, devs, n, slot_kdev, edge);
}

struct reconcile *unseen_refs(struct unseen *u)
{
	return u->refs;
}

uint64_t unseen_reads(const struct unseen *u)
{
	return diskstats_reads(u->stats);
}
