/* reconcile.c - the completion-only mode's count of completions the kernel made and the
 * completion tracepoint did not report: per-op gaps to /proc/diskstats while a device is idle */
#include "reconcile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "diskstats.h"

#define NGAP (2 * IOP_OP_MAX)

void reconcile_step(struct reconcile_gap *g, const int64_t gap[NGAP], uint64_t add[NGAP])
{
	int i;

	memset(add, 0, NGAP * sizeof(add[0]));
	if (!g->known) {
		memcpy(g->ref, gap, sizeof(g->ref));
		memset(g->lower_seen, 0, sizeof(g->lower_seen));
		g->known = true;
		return;
	}
	for (i = 0; i < NGAP; i++) {
		if (gap[i] > g->ref[i]) {
			add[i] = (uint64_t)(gap[i] - g->ref[i]);
			g->lower_seen[i] = false;
		} else if (gap[i] == g->ref[i]) {
			g->lower_seen[i] = false;
		} else if (g->lower_seen[i] && g->lower[i] == gap[i]) {
			g->ref[i] = gap[i];
			g->lower_seen[i] = false;
		} else {
			g->lower[i] = gap[i];
			g->lower_seen[i] = true;
		}
	}
}

struct dev_rec {
	uint32_t kdev;
	bool listed;                   /* held in this run's stamp */
	struct reconcile_gap gap;
};

struct reconcile {
	bool count;                    /* add what the gaps show; else follow them */
	struct dev_rec *d;
	size_t n, cap;
};

int reconcile_new(struct reconcile **out, bool count)
{
	struct reconcile *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->count = count;
	*out = r;
	return 0;
}

struct reconcile *reconcile_free(struct reconcile *r)
{
	if (r)
		free(r->d);
	free(r);
	return NULL;
}

static struct dev_rec *find(struct reconcile *r, uint32_t kdev)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->d[i].kdev == kdev)
			return &r->d[i];
	return NULL;
}

/* The record of kdev, made (without a reference) if there is none; NULL on ENOMEM. */
static struct dev_rec *record(struct reconcile *r, uint32_t kdev)
{
	struct dev_rec *dr = find(r, kdev);

	if (dr)
		return dr;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct dev_rec *d = realloc(r->d, cap * sizeof(*d));

		if (!d)
			return NULL;
		r->d = d;
		r->cap = cap;
	}
	dr = &r->d[r->n++];
	memset(dr, 0, sizeof(*dr));
	dr->kdev = kdev;
	return dr;
}

/* Keeps the held devices' records (new ones start without a reference), drops the rest. */
static int list_devices(struct reconcile *r, const struct diskstats_dev *devs, size_t n)
{
	struct dev_rec *dr;
	size_t i, j;

	for (i = 0; i < r->n; i++)
		r->d[i].listed = false;
	for (i = 0; i < n; i++) {
		if (!devs[i].held)
			continue;
		dr = record(r, devs[i].kdev);
		if (!dr)
			return -ENOMEM;
		dr->listed = true;
	}
	for (i = j = 0; i < r->n; i++)
		if (r->d[i].listed)
			r->d[j++] = r->d[i];
	r->n = j;
	return 0;
}

/*
 * Adds what one idle moment found to the device's counters; returns the IOs added. Without
 * counting, the reference is the gap now.
 */
static int count(const struct reconcile *r, struct dev_rec *dr, const struct diskstats_dev *dv)
{
	const struct diskstats_line *l = &dv->line;
	int64_t gap[NGAP];
	uint64_t add[NGAP];
	struct reconcile_gap keep = dr->gap;
	uint64_t *base = dv->data;
	int added = 0, op;

	for (op = 0; op < IOP_OP_MAX; op++) {
		gap[op] = (int64_t)(l->ios[op] - dv->ours[op]);
		gap[IOP_OP_MAX + op] = (int64_t)(l->sectors[op] * 512 - dv->ours[IOP_OP_MAX + op]);
	}
	if (!r->count) {
		memcpy(dr->gap.ref, gap, sizeof(dr->gap.ref));
		memset(dr->gap.lower_seen, 0, sizeof(dr->gap.lower_seen));
		dr->gap.known = true;
		return 0;
	}
	reconcile_step(&dr->gap, gap, add);
	for (op = 0; op < NGAP; op++) {
		if (add[op] && !base) {
			/* a first event made its slot since the slots were listed: next time */
			dr->gap = keep;
			return 0;
		}
	}
	for (op = 0; base && op < IOP_OP_MAX; op++) {
		if (add[op]) {
			__atomic_fetch_add(&base[IOP_C_IOS + op], add[op], __ATOMIC_RELAXED);
			__atomic_fetch_add(&base[IOP_C_UNSEEN + op], add[op], __ATOMIC_RELAXED);
			added += (int)add[op];
		}
		if (add[IOP_OP_MAX + op])
			__atomic_fetch_add(&base[IOP_C_BYTES + op], add[IOP_OP_MAX + op],
					   __ATOMIC_RELAXED);
	}
	return added;
}

int reconcile_run(struct reconcile *r, const struct diskstats_dev *devs, size_t n)
{
	struct dev_rec *dr;
	int added = 0, e;
	size_t i;

	e = list_devices(r, devs, n);
	if (e)
		return e;
	for (i = 0; i < n; i++) {
		if (!devs[i].held || !devs[i].idle)
			continue;
		dr = find(r, devs[i].kdev);
		if (dr)
			added += count(r, dr, &devs[i]);
	}
	return added;
}

bool reconcile_ref(const struct reconcile *r, uint32_t kdev, int64_t ref[NGAP])
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (r->d[i].kdev == kdev && r->d[i].gap.known) {
			memcpy(ref, r->d[i].gap.ref, sizeof(r->d[i].gap.ref));
			return true;
		}
	}
	return false;
}

int reconcile_set_ref(struct reconcile *r, uint32_t kdev, const int64_t ref[NGAP])
{
	struct dev_rec *dr = record(r, kdev);

	if (!dr)
		return -ENOMEM;
	memcpy(dr->gap.ref, ref, sizeof(dr->gap.ref));
	memset(dr->gap.lower_seen, 0, sizeof(dr->gap.lower_seen));
	dr->gap.known = true;
	return 0;
}

int reconcile_carry(const struct reconcile *from, struct reconcile *to,
		    const struct reconcile_shift *shifts, size_t n)
{
	int64_t ref[NGAP];
	size_t i, j;
	int k, r;

	for (i = 0; i < from->n; i++) {
		if (!from->d[i].gap.known)
			continue;
		memcpy(ref, from->d[i].gap.ref, sizeof(ref));
		for (j = 0; j < n; j++)
			if (shifts[j].kdev == from->d[i].kdev)
				for (k = 0; k < NGAP; k++)
					ref[k] += shifts[j].d[k];
		r = reconcile_set_ref(to, from->d[i].kdev, ref);
		if (r)
			return r;
	}
	return 0;
}
