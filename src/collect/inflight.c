/* inflight.c - retires request records whose completion the kernel never reported */
#include "inflight.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bpf/iopulse.h"
#include "../bpf/rq_logic.h"
#include "diskstats.h"

/*
 * Flush requests and the data part of a flush sequence are left out of the kernel's in_flight
 * count, so "device idle" says nothing about them: they are retired only when this old.
 */
#define FLUSH_SEQ_MAX_NS (30ull * 1000000000ull)

struct slot_watch {
	uint32_t kdev;        /* device the fields below belong to */
	uint64_t idle_at;     /* CLOCK_MONOTONIC ns of the last stamp that found it idle, 0 if busy */
	int64_t gap;          /* diskstats completions - ours, at that stamp */
	bool gap_known;
	bool suspect;         /* the gap moved, or records were left for later: scan */
	bool seen_idle;       /* the first of the stamp's two reads found it idle */
	uint64_t completed;   /* ... with this many completions */
};

struct inflight {
	struct probes *probes;
	const char *path;
	uint32_t nslots;
	struct slot_watch *w;
	char line[512];
};

int inflight_new(struct inflight **out, struct probes *p, uint32_t nslots, const char *diskstats)
{
	struct inflight *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->probes = p;
	f->path = diskstats ? diskstats : "/proc/diskstats";
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t our_completed(struct probes *p, uint32_t slot)
{
	const uint64_t *base = probes_slot_data(p, slot);
	uint64_t sum = 0;
	int op;

	for (op = 0; base && op < IOP_OP_MAX; op++)
		sum += __atomic_load_n(&base[IOP_C_IOS + op], __ATOMIC_RELAXED);
	return sum;
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

/* Scans the records of suspect slots; a slot stays suspect while some are left for later. */
static int retire(struct inflight *f)
{
	struct iop_rq_rec *recs;
	bool *later;
	size_t n, i;
	int retired = 0;
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
		if (r->flush_seq && t - d < FLUSH_SEQ_MAX_NS) {
			later[s - 1] = true;
			continue;
		}
		/* d_ns is the ownership token: the BPF side swaps it out too (take_ownership) */
		if (!__atomic_compare_exchange_n(&r->d_ns, &d, 0, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_compare_exchange_n(&r->key, &key, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		count(f->probes, s - 1, r);
		retired++;
	}
	probes_rq_recs_unmap(f->probes);
	for (s = 0; s < f->nslots; s++)
		if (f->w[s].idle_at)
			f->w[s].suspect = later[s];
	free(later);
	return retired;
}

/*
 * One read of /proc/diskstats. The kernel sums in_flight over CPUs without a lock, so an IO
 * that started on a CPU already summed and completed on one not yet summed makes the sum low,
 * down to a false 0 while IOs are in flight (block/genhd.c bdev_count_inflight_rw clamps the
 * negative sum). The first read (confirm false) notes idle devices and their completions; the
 * second (confirm true) takes a device as idle only if it reads idle again with no completion
 * in between: a completion that tore the in_flight sum would have moved the count.
 */
static int read_idle(struct inflight *f, bool confirm, uint64_t now)
{
	struct diskstats_line l;
	uint32_t s, kdev;
	int64_t gap;
	FILE *in;

	in = fopen(f->path, "re");
	if (!in)
		return -errno;
	while (fgets(f->line, sizeof(f->line), in)) {
		if (diskstats_parse_line(f->line, &l) || l.in_flight)
			continue;
		kdev = (l.major << IOP_KDEV_MINORBITS) | l.minor;
		for (s = 0; s < f->nslots; s++) {
			struct slot_watch *w = &f->w[s];

			if (!kdev || w->kdev != kdev)
				continue;
			if (!confirm) {
				w->seen_idle = true;
				w->completed = l.completed;
				continue;
			}
			if (!w->seen_idle || w->completed != l.completed)
				continue;
			gap = (int64_t)(l.completed - our_completed(f->probes, s));
			if (!w->gap_known || gap != w->gap)
				w->suspect = true;
			w->gap = gap;
			w->gap_known = true;
			w->idle_at = now;
		}
	}
	fclose(in);
	return 0;
}

/* Marks each slot idle or not, and suspect when its completion gap to diskstats moved. */
static int stamp(struct inflight *f)
{
	uint64_t now = mono_ns();
	uint32_t s;

	for (s = 0; s < f->nslots; s++) {
		f->w[s].idle_at = 0;
		f->w[s].seen_idle = false;
	}
	return read_idle(f, false, now) ?: read_idle(f, true, now);
}

struct slot_find {
	uint32_t kdev;
	uint32_t slot1;       /* slot + 1, 0 if the device has none */
};

static int find_slot(void *ctx, uint32_t kdev, uint32_t slot)
{
	struct slot_find *f = ctx;

	if (kdev == f->kdev)
		f->slot1 = slot + 1;
	return 0;
}

/* A free way of the set for key (none if key is there already); NULL if none. */
static struct iop_rq_rec *claim(struct iop_rq_rec *set, uint64_t key)
{
	uint64_t zero;
	int i;

	for (i = 0; i < IOP_WAYS; i++)
		if (__atomic_load_n(&set[i].key, __ATOMIC_ACQUIRE) == key)
			return NULL;
	for (i = 0; i < IOP_WAYS; i++) {
		zero = 0;
		if (__atomic_compare_exchange_n(&set[i].key, &zero, key, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return &set[i];
	}
	return NULL;
}

/* Moves one open record o into to's records (to_recs, to_n); true when it moved. */
static bool adopt_one(struct probes *to, struct iop_rq_rec *to_recs, size_t to_n,
		      struct iop_rq_rec *o, struct slot_find *sf)
{
	uint64_t key = __atomic_load_n(&o->key, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&o->d_ns, __ATOMIC_ACQUIRE), zero = 0, dd;
	struct iop_rq_rec *w;

	if (!key || !d)
		return false;
	w = claim(&to_recs[(size_t)iop_rec_set(key, to_n / IOP_WAYS - 1) * IOP_WAYS], key);
	if (!w)
		return false;
	if (sf->kdev != o->kdev) {
		sf->kdev = o->kdev;
		sf->slot1 = 0;
		probes_for_each_slot(to, find_slot, sf);
	}
	w->q_ns = o->q_ns;
	w->seek = o->seek;
	w->bytes = o->bytes;
	w->opf = o->opf;
	w->slot = (unsigned short)sf->slot1;
	w->seek_class = o->seek_class;
	w->timed = o->timed;
	w->grp = o->grp;
	w->requeued = o->requeued;
	w->flush_seq = o->flush_seq;
	w->kdev = o->kdev;
	w->fp = o->fp;
	/* publish, unless a dispatch of the same request took the record meanwhile */
	if (!__atomic_compare_exchange_n(&w->d_ns, &zero, d, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	dd = d;
	if (__atomic_compare_exchange_n(&o->d_ns, &dd, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		__atomic_compare_exchange_n(&o->key, &key, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		return true;
	}
	/* the IO completed meanwhile: the new program counted it; withdraw the copy unless
	 * that program used it */
	dd = d;
	if (__atomic_compare_exchange_n(&w->d_ns, &dd, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		__atomic_store_n(&w->key, 0, __ATOMIC_RELEASE);
	return false;
}

int inflight_adopt(struct probes *from, struct probes *to)
{
	struct slot_find sf = { 0 };
	struct iop_rq_rec *old, *nw;
	size_t n_old, n_new, i;
	int moved = 0;

	/* no records on the completion-only side: its one program needs none to count an IO */
	if (probes_completion_only(from) || probes_completion_only(to))
		return 0;
	old = probes_rq_recs_map(from, &n_old);
	nw = old ? probes_rq_recs_map(to, &n_new) : NULL;
	if (!old || !nw) {
		moved = -errno;
		goto out;
	}
	for (i = 0; i < n_old; i++)
		moved += adopt_one(to, nw, n_new, &old[i], &sf);
out:
	probes_rq_recs_unmap(from);
	probes_rq_recs_unmap(to);
	return moved;
}

int inflight_sweep(struct inflight *f, const uint32_t *slot_kdev)
{
	int retired = 0;
	uint32_t s;
	bool scan = false;

	for (s = 0; s < f->nslots; s++) {
		struct slot_watch *w = &f->w[s];

		if (w->kdev != slot_kdev[s]) {     /* slot handed to another device */
			memset(w, 0, sizeof(*w));
			w->kdev = slot_kdev[s];
		}
		scan = scan || (w->suspect && w->idle_at);
	}
	if (scan) {
		retired = retire(f);
		if (retired < 0)
			return retired;
	}
	return stamp(f) ?: retired;
}
