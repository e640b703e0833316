/* handover.c - a reload's cut from the outgoing probes to the incoming ones, attached beside
 * them: open request records, counters at one instant, reference gaps */
#include "handover.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rq_logic.h"
#include "log.h"

/* The key of a record handover_records is filling: no request has this address. */
#define FILLING 1ull

/* Reads of the counters after the grace period (handover_counters). */
#define SAMPLES 8

/* A free way of the set for key, claimed as FILLING; NULL if key is there already or none is. */
static struct iop_rq_rec *claim(struct iop_rq_rec *set, uint64_t key)
{
	uint64_t zero;
	int i;

	for (i = 0; i < IOP_WAYS; i++)
		if (__atomic_load_n(&set[i].key, __ATOMIC_ACQUIRE) == key)
			return NULL;
	for (i = 0; i < IOP_WAYS; i++) {
		zero = 0;
		if (__atomic_compare_exchange_n(&set[i].key, &zero, FILLING, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return &set[i];
	}
	return NULL;
}

/* Slot + 1 of device kdev on side h, 0 if it has none. */
static unsigned short slot_of(const struct handover_side *h, uint32_t kdev)
{
	uint32_t s;

	for (s = 0; s < h->nslots; s++)
		if (h->slot_kdev[s] == kdev)
			return (unsigned short)(s + 1);
	return 0;
}

/* Copies o into to; the copy, or NULL when none was made, or *withdrawn when one was taken
 * back (its way kept as a tombstone: key set, no dispatch time). */
static struct iop_rq_rec *copy_one(const struct iop_rq_rec *o, struct iop_rq_rec *to,
				   size_t nto, const struct handover_side *side, bool *withdrawn)
{
	uint64_t key = __atomic_load_n(&o->key, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&o->d_ns, __ATOMIC_ACQUIRE);
	struct iop_rq_rec *w;

	*withdrawn = false;
	if (!key || key == FILLING || !d)
		return NULL;
	w = claim(&to[(size_t)iop_rec_set(key, (unsigned int)(nto / IOP_WAYS - 1)) * IOP_WAYS], key);
	if (!w)
		return NULL;
	w->q_ns = o->q_ns;
	w->seek = o->seek;
	w->bytes = o->bytes;
	w->opf = o->opf;
	w->slot = slot_of(side, o->kdev);
	w->seek_class = o->seek_class;
	w->timed = o->timed;
	w->grp = o->grp;
	w->requeued = o->requeued;
	w->flush_seq = o->flush_seq;
	w->kdev = o->kdev;
	w->fp = o->fp;
	w->start_lo = o->start_lo;
	__atomic_store_n(&w->d_ns, d, __ATOMIC_RELAXED);
	/* shown whole; a full barrier before the original is looked at again (x86 would let the
	 * load pass the store): a completion that ends the original after that look finds the copy */
	__atomic_store_n(&w->key, key, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&o->d_ns, __ATOMIC_SEQ_CST) == d &&
	    __atomic_load_n(&o->key, __ATOMIC_SEQ_CST) == key)
		return w;
	/* the original ended meanwhile: to's program has run for the IO or is about to, and may
	 * have found the copy by its key; the key stays until such a run is over */
	__atomic_compare_exchange_n(&w->d_ns, &d, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	*withdrawn = true;
	return w;
}

int handover_records(const struct iop_rq_rec *from, size_t nfrom, struct iop_rq_rec *to,
		     size_t nto, const struct handover_side *to_side, void (*grace)(void))
{
	struct iop_rq_rec **tomb = NULL, **t, *w;
	size_t i, ntomb = 0, cap = 0;
	uint64_t key;
	bool withdrawn;
	int copied = 0;

	if (nto < IOP_WAYS)
		return 0;
	for (i = 0; i < nfrom; i++) {
		w = copy_one(&from[i], to, nto, to_side, &withdrawn);
		copied += w && !withdrawn;
		if (!withdrawn)
			continue;
		if (ntomb == cap) {
			cap = cap ? 2 * cap : 16;
			t = realloc(tomb, cap * sizeof(*t));
			if (!t) {
				copied = -ENOMEM;   /* the tombstones stay until reused */
				break;
			}
			tomb = t;
		}
		tomb[ntomb++] = w;
	}
	/* they go once every program run that may have found one is over: a way freed at once
	 * could be filled for another request before such a run takes its dispatch time */
	if (ntomb)
		grace();
	for (i = 0; i < ntomb; i++) {
		key = __atomic_load_n(&tomb[i]->key, __ATOMIC_ACQUIRE);
		/* unless a dispatch of the same request took the way meanwhile */
		if (key != FILLING && !__atomic_load_n(&tomb[i]->d_ns, __ATOMIC_ACQUIRE))
			__atomic_compare_exchange_n(&tomb[i]->key, &key, 0, false, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
	}
	free(tomb);
	return copied;
}

/*
 * The counters of every slot, into out (nslots x IOP_C_MAX; dispatch state 0), whether or not
 * a device held it when the side was described: a device's first IO while the cut is made
 * takes its slot then (a slot not yet taken holds zeros).
 */
static void copy_counters(const struct handover_side *h, uint64_t *out)
{
	uint32_t s;
	size_t j;

	for (s = 0; s < h->nslots; s++) {
		const volatile uint64_t *cur = h->slot_data[s];

		for (j = 0; j < IOP_C_MAX; j++)
			out[(size_t)s * IOP_C_MAX + j] = cur && j != IOP_C_PREV_END ? cur[j] : 0;
	}
}

/* Adds to theirs the completions from counted before the copies and to after (see .h). */
static int straddlers(const struct handover_side *from, const struct handover_side *to,
		      const uint64_t *mine, uint64_t *theirs, void (*grace)(void))
{
	int64_t most[IOP_C_UNTIMED], v;
	uint32_t s, t;
	int k, found = 0;
	size_t j;

	grace();
	for (t = 0; t < to->nslots; t++) {
		const volatile uint64_t *tc = to->slot_data[t], *fc;
		uint64_t *th = theirs + (size_t)t * IOP_C_MAX;
		const uint64_t *mi;

		if (!to->slot_kdev[t] || !tc)
			continue;
		for (s = 0; s < from->nslots && from->slot_kdev[s] != to->slot_kdev[t]; s++)
			;
		if (s == from->nslots || !from->slot_data[s])
			continue;
		fc = from->slot_data[s];
		mi = mine + (size_t)s * IOP_C_MAX;
		/* growth since the cut, to's less from's: the straddlers, less any completion
		 * between the two programs at that read; the largest of a few reads */
		for (j = 0; j < IOP_C_UNTIMED; j++)
			most[j] = 0;
		for (k = 0; k < SAMPLES; k++) {
			for (j = 0; j < IOP_C_UNTIMED; j++) {
				v = (int64_t)(tc[j] - th[j]);
				v -= (int64_t)(fc[j] - mi[j]);
				if (v > most[j])
					most[j] = v;
			}
		}
		for (j = 0; j < IOP_C_UNTIMED; j++)
			th[j] += (uint64_t)most[j];
		for (j = IOP_C_IOS; j < IOP_C_IOS + IOP_OP_MAX; j++)
			found += (int)most[j];
	}
	return found;
}

int handover_counters(const struct handover_side *from, const struct handover_side *to,
		      uint64_t *mine, uint64_t *theirs, void (*grace)(void), bool *paused)
{
	size_t n = (size_t)from->nslots * IOP_C_MAX, m = (size_t)to->nslots * IOP_C_MAX;
	uint64_t *mine2 = malloc(n * 8), *theirs2 = malloc(m * 8);
	bool same = false;
	int tries;

	if (!mine2 || !theirs2) {
		free(mine2);
		free(theirs2);
		return -ENOMEM;
	}
	for (tries = 0; tries < 10000 && !same; tries++) {
		copy_counters(from, mine);
		copy_counters(to, theirs);
		copy_counters(from, mine2);
		copy_counters(to, theirs2);
		same = !memcmp(mine, mine2, n * 8) && !memcmp(theirs, theirs2, m * 8);
	}
	free(mine2);
	free(theirs2);
	*paused = same;
	return grace ? straddlers(from, to, mine, theirs, grace) : 0;
}

/*
 * Waits until every BPF program run under way has ended: they run with preemption off (in a
 * tracepoint's RCU read side), and MEMBARRIER_CMD_GLOBAL waits for an RCU grace period. Where
 * it is not offered (nohz_full), a pause far longer than a program's run.
 */
static void grace_period(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
}

/* Records of from copied into to's (both keep records); the number copied, or -errno. */
static int copy_records(const struct handover_side *from, const struct handover_side *to)
{
	struct iop_rq_rec *old, *nw = NULL;
	size_t n_old = 0, n_new = 0;
	int r;

	if (probes_completion_only(from->probes) || probes_completion_only(to->probes))
		return 0;
	old = probes_rq_recs_map(from->probes, &n_old);
	if (old)
		nw = probes_rq_recs_map(to->probes, &n_new);
	r = old && nw ? handover_records(old, n_old, nw, n_new, to, grace_period) : -errno;
	probes_rq_recs_unmap(from->probes);
	probes_rq_recs_unmap(to->probes);
	return r;
}

int handover_cut(const struct handover_side *from, const struct handover_side *to,
		 uint64_t *mine, uint64_t *theirs)
{
	struct reconcile_shift *sh;
	bool paused;
	size_t n = 0;
	uint32_t s, t;
	int r, op;

	r = copy_records(from, to);
	if (r < 0)
		log_warn("reload: the open request records could not be handed over (%s): IOs in "
			 "flight now are counted untimed", strerror(-r));
	else
		log_debug("reload: %d open request record(s) handed over", r);
	/* the completions between the programs are found by counts that both sets change at the
	 * same events: not across a change of mode (a dispatch of the full mode counts a
	 * completion the tracepoint lost, the completion-only mode's reconciliation later) */
	r = handover_counters(from, to, mine, theirs,
			      probes_completion_only(from->probes) ==
			      probes_completion_only(to->probes) ? grace_period : NULL, &paused);
	if (r < 0)
		return r;
	if (!paused)
		log_warn("reload: IO never paused while the counters were copied; a completion "
			 "or two may be counted on both sides or neither");
	if (r)
		log_debug("reload: %d completion(s) were between the two sets' programs at the "
			  "cut: counted before it", r);
	sh = calloc(from->nslots + to->nslots, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	/* each device's shift: from's counts at the cut less to's */
	for (s = 0; s < from->nslots + to->nslots; s++) {
		const struct handover_side *h = s < from->nslots ? from : to;
		const uint64_t *c = s < from->nslots ? mine : theirs;
		uint32_t i = s < from->nslots ? s : s - from->nslots, kdev = h->slot_kdev[i];
		int sign = h == from ? 1 : -1;

		if (!kdev)
			continue;
		for (t = 0; t < n && sh[t].kdev != kdev; t++)
			;
		if (t == n)
			sh[n++].kdev = kdev;
		c += (size_t)i * IOP_C_MAX;
		for (op = 0; op < IOP_OP_MAX; op++) {
			sh[t].d[op] += sign * (int64_t)c[IOP_C_IOS + op];
			sh[t].d[IOP_OP_MAX + op] += sign * (int64_t)c[IOP_C_BYTES + op];
		}
	}
	r = reconcile_carry(from->refs, to->refs, sh, n);
	free(sh);
	return r;
}
