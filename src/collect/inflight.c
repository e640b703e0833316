/* inflight.c - the full mode's sweep of request records whose completion the kernel never
 * reported */
#include "inflight.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "iopulse.h"
#include "diskstats.h"

/*
 * Flush requests and the data part of a flush sequence are left out of the kernel's in_flight
 * count, and so is a requeued request waiting to be dispatched again (it is idle, not in
 * flight, until then): "device idle" says nothing about them, they are retired only when this
 * old. A requeued request retired early would be counted twice: once here, once when it
 * completes after its next dispatch (seen on a SATA disk with mq-deadline under qemu: one
 * 128 KiB write more than /proc/diskstats, its second dispatch with no submission time).
 */
#define NOT_IN_FLIGHT_MAX_NS (30ull * 1000000000ull)

struct slot_watch {
	uint32_t kdev;        /* device the fields below belong to */
	uint64_t idle_at;     /* CLOCK_MONOTONIC ns of the last stamp that found it idle, 0 if busy */
	int64_t gap;          /* diskstats completions - ours, at that stamp */
	bool gap_known;
	bool suspect;         /* the gap moved, or records were left for later: scan */
};

struct inflight {
	struct probes *probes;
	uint32_t nslots;
	struct slot_watch *w;
};

int inflight_new(struct inflight **out, struct probes *p, uint32_t nslots)
{
	struct inflight *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->probes = p;
	f->nslots = nslots;
	f->w = calloc(nslots, sizeof(*f->w));
	if (!f->w) {
		inflight_free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

struct inflight *inflight_free(struct inflight *f)
{
	if (!f)
		return NULL;
	free(f->w);
	free(f);
	return NULL;
}

static void count(struct probes *p, uint32_t slot, const struct iop_rq_rec *r)
{
	uint64_t *base = probes_slot_data(p, slot);
	unsigned int grp = r->grp;

	if (!base || grp >= IOP_OP_MAX)
		return;
	__atomic_fetch_add(&base[IOP_C_IOS + grp], 1, __ATOMIC_RELAXED);
	if (grp != IOP_OP_FLUSH)
		__atomic_fetch_add(&base[IOP_C_BYTES + grp], r->bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&base[IOP_C_UNSEEN + grp], 1, __ATOMIC_RELAXED);
}

/*
 * Scans the records of suspect slots. take: retire what the last stamp proves complete (a slot
 * stays suspect while some are left for later); otherwise only count them.
 */
static int scan(struct inflight *f, bool take)
{
	struct iop_rq_rec *recs;
	bool *later;
	size_t n, i;
	int found = 0;
	uint32_t s;

	later = calloc(f->nslots, sizeof(*later));
	if (!later)
		return -ENOMEM;
	recs = probes_rq_recs_map(f->probes, &n);
	if (!recs) {
		free(later);
		return -errno;
	}
	for (i = 0; i < n; i++) {
		struct iop_rq_rec *r = &recs[i];
		uint64_t key = __atomic_load_n(&r->key, __ATOMIC_ACQUIRE), d, t;

		s = r->slot;
		/* the slot must still serve the device the request went to */
		if (!key || !s || s > f->nslots || !f->w[s - 1].suspect ||
		    f->w[s - 1].kdev != r->kdev)
			continue;
		t = f->w[s - 1].idle_at;
		d = __atomic_load_n(&r->d_ns, __ATOMIC_ACQUIRE);
		if (!t || !d || d >= t)
			continue;
		if ((r->flush_seq || r->requeued) && t - d < NOT_IN_FLIGHT_MAX_NS) {
			later[s - 1] = true;
			continue;
		}
		if (!take) {
			found++;
			continue;
		}
		/* d_ns is the ownership token: the BPF side swaps it out too (take_ownership) */
		if (!__atomic_compare_exchange_n(&r->d_ns, &d, 0, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_compare_exchange_n(&r->key, &key, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		count(f->probes, s - 1, r);
		found++;
	}
	probes_rq_recs_unmap(f->probes);
	for (s = 0; take && s < f->nslots; s++)
		if (f->w[s].idle_at)
			f->w[s].suspect = later[s];
	free(later);
	return found;
}

void inflight_note(struct inflight *f, const struct diskstats_dev *devs, size_t n, uint64_t at)
{
	struct slot_watch *w;
	uint64_t ours;
	int64_t gap;
	size_t i;
	uint32_t s;
	int op;

	for (s = 0; s < f->nslots; s++)
		f->w[s].idle_at = 0;
	for (i = 0; i < n; i++) {
		s = devs[i].slot;
		if (!devs[i].idle || !s || s > f->nslots || f->w[s - 1].kdev != devs[i].kdev)
			continue;
		w = &f->w[s - 1];
		for (ours = 0, op = 0; op < IOP_OP_MAX; op++)
			ours += devs[i].ours[op];
		gap = (int64_t)(devs[i].line.completed - ours);
		if (!w->gap_known || gap != w->gap)
			w->suspect = true;
		w->gap = gap;
		w->gap_known = true;
		w->idle_at = at;
	}
}

/* Whether any slot is to be scanned; a slot handed to another device starts afresh. */
static bool scan_due(struct inflight *f, const uint32_t *slot_kdev)
{
	uint32_t s;
	bool due = false;

	for (s = 0; s < f->nslots; s++) {
		struct slot_watch *w = &f->w[s];

		if (w->kdev != slot_kdev[s]) {
			memset(w, 0, sizeof(*w));
			w->kdev = slot_kdev[s];
		}
		due = due || (w->suspect && w->idle_at);
	}
	return due;
}

int inflight_retire(struct inflight *f, const uint32_t *slot_kdev)
{
	return scan_due(f, slot_kdev) ? scan(f, true) : 0;
}

int inflight_proven(struct inflight *f, const uint32_t *slot_kdev)
{
	return scan_due(f, slot_kdev) ? scan(f, false) : 0;
}
