/* aggregator.c - turns the kernel's cumulative maps into per-interval deltas */
#include "aggregator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "clock.h"
#include "handover.h"
#include "log.h"
#include "sparse.h"
#include "stamps.h"
#include "unseen.h"

/*
 * What the previous collect saw of one device slot. Histograms get their buffers the first
 * time the kernel has a count in them: a device that only reads and writes never pays for
 * its flush, discard and FUA histograms.
 */
struct slot_state {
	bool used;
	uint32_t kdev;
	dev_t dev;
	uint64_t cnt_prev[IOP_C_MAX];     /* cumulative values at the previous collect */
	uint64_t cnt_delta[IOP_C_MAX];
	uint32_t *hprev[IOP_H_MAX];       /* low 32 bits; NULL until the histogram has a count */
	size_t hstart[IOP_H_MAX];         /* this interval's pairs in the arena */
	unsigned int hn[IOP_H_MAX];
	bool active;             /* completed IO in this interval */
	bool seen;               /* still assigned in the kernel */
};

struct aggregator {
	struct probes *probes;
	struct devices *devices;
	struct threads *threads;
	size_t u64s;
	unsigned int k, nb;
	uint32_t nslots;
	struct slot_state *slots;
	uint32_t *slot_kdev;          /* kernel dev of each assigned slot, 0 if none */
	uint64_t **slot_data;         /* each slot's counters */
	struct stamps *stamps;        /* completion-only mode: the devices' stamp states */
	struct unseen *unseen;        /* completions the programs did not see (unseen.c) */
	struct diskstats_dev *watch;  /* ... the devices it watches in /proc/diskstats */
	size_t watch_cap;
	struct sparse_arena arena;
	struct iop_dev_interval *devs;
	size_t devs_cap;
	struct iop_device *unknown;   /* names for devices sysfs does not know */
	size_t unknown_cap;
	uint64_t global_prev[IOP_G_MAX];
	struct iop_bpf_prog_stat progs[32], progs_prev[32];
	uint64_t seq;
	uint64_t last_mono, last_real;
	struct aggregator *successor;     /* takes over after the next collect's reads */
	const struct iop_config *successor_cfg;
	const uint64_t *cnt_snap;         /* counters to use instead of the maps' (hand-over) */
};

int aggregator_new(struct aggregator **out, struct probes *p, struct devices *d,
		   struct threads *t)
{
	struct aggregator *a = calloc(1, sizeof(*a));
	uint32_t s;

	if (!a)
		return -ENOMEM;
	a->probes = p;
	a->devices = d;
	a->threads = t;
	a->u64s = probes_slot_u64s(p);
	a->k = probes_hist_k(p);
	a->nb = probes_hist_nb(p);
	a->nslots = probes_max_devices(p);
	a->slots = calloc(a->nslots, sizeof(*a->slots));
	a->slot_kdev = calloc(a->nslots, sizeof(*a->slot_kdev));
	a->slot_data = calloc(a->nslots, sizeof(*a->slot_data));
	if (!a->slots || !a->slot_kdev || !a->slot_data ||
	    unseen_new(&a->unseen, p, a->nslots, NULL) ||
	    (probes_completion_only(p) && stamps_new(&a->stamps, a->nslots))) {
		aggregator_free(a);
		return -ENOMEM;
	}
	for (s = 0; s < a->nslots; s++)
		a->slot_data[s] = probes_slot_data(p, s);
	a->last_mono = iop_clock_ns(CLOCK_MONOTONIC);
	a->last_real = iop_clock_ns(CLOCK_REALTIME);
	*out = a;
	return 0;
}

struct aggregator *aggregator_free(struct aggregator *a)
{
	uint32_t i;

	if (!a)
		return NULL;
	for (i = 0; a->slots && i < a->nslots; i++) {
		unsigned int h;

		for (h = 0; h < IOP_H_MAX; h++)
			free(a->slots[i].hprev[h]);
	}
	free(a->slots);
	free(a->slot_kdev);
	free(a->slot_data);
	stamps_free(a->stamps);
	unseen_free(a->unseen);
	free(a->watch);
	sparse_release(&a->arena);
	free(a->devs);
	free(a->unknown);
	free(a);
	return NULL;
}

static int note_slot(void *ctx, uint32_t kdev, uint32_t slot)
{
	struct aggregator *a = ctx;
	struct slot_state *s;

	if (slot >= a->nslots)
		return 0;
	s = &a->slots[slot];
	if (!s->used || s->kdev != kdev) {
		unsigned int h;

		memset(s->cnt_prev, 0, sizeof(s->cnt_prev));
		for (h = 0; h < IOP_H_MAX; h++)
			if (s->hprev[h])
				memset(s->hprev[h], 0, a->nb * sizeof(uint32_t));
		s->used = true;
		s->kdev = kdev;
		s->dev = devices_from_kdev(kdev);
	}
	s->seen = true;
	return 0;
}

static bool all_zero(const uint64_t *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

static int slot_delta(struct aggregator *a, uint32_t i)
{
	struct slot_state *s = &a->slots[i];
	const uint64_t *cur = probes_slot_data(a->probes, i);
	const uint64_t *cnt = a->cnt_snap ? a->cnt_snap + (size_t)i * IOP_C_MAX : cur;
	uint64_t ios = 0;
	unsigned int h;
	size_t j;

	for (j = 0; j < IOP_C_MAX; j++) {
		uint64_t v = cnt[j];

		s->cnt_delta[j] = v - s->cnt_prev[j];
		s->cnt_prev[j] = v;
	}
	s->cnt_delta[IOP_C_PREV_END] = 0;
	for (h = 0; h < IOP_H_MAX; h++) {
		const uint64_t *c = cur + IOP_C_MAX + (size_t)h * a->nb;
		int r;

		s->hn[h] = 0;
		if (!s->hprev[h]) {
			if (all_zero(c, a->nb))
				continue;
			s->hprev[h] = calloc(a->nb, sizeof(uint32_t));
			if (!s->hprev[h])
				return -ENOMEM;
		}
		r = sparse_diff(&a->arena, s->hprev[h], c, a->nb, &s->hstart[h], &s->hn[h]);
		if (r)
			return r;
	}
	for (j = 0; j < IOP_OP_MAX; j++)
		ios += s->cnt_delta[IOP_C_IOS + j] + s->cnt_delta[IOP_C_BYTES + j];
	s->active = ios != 0;
	return 0;
}

/* Whether partitions of the disk dev are present. */
static bool has_partitions(const struct aggregator *a, dev_t dev)
{
	size_t i;

	for (i = 0; i < devices_count(a->devices); i++) {
		const struct iop_device *d = devices_at(a->devices, i);

		if (d->is_partition && d->present && d->disk == dev)
			return true;
	}
	return false;
}

/*
 * Completions the kernel made and the programs did not see (unseen.c), against
 * /proc/diskstats. Every present device is held to its own line, from before its first IO (no
 * slot yet: nothing counted): whole disks, which count their partitions' IO; with partitions
 * reported apart (rollup_partitions false) the partitions and the disks without any, as a
 * disk's line then holds IO that its slot does not. A slot of any other device is watched
 * too, for its idle moments.
 */
static int find_unseen(struct aggregator *a, const struct iop_config *c, enum unseen_edge edge)
{
	const struct iop_device *d;
	size_t i, j, n = 0, cap = devices_count(a->devices) + a->nslots;
	uint32_t kdev, s;

	if (cap > a->watch_cap) {
		struct diskstats_dev *v = realloc(a->watch, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->watch = v;
		a->watch_cap = cap;
	}
	for (i = 0; i < devices_count(a->devices); i++) {
		d = devices_at(a->devices, i);
		if (!d->present || (c->rollup_partitions ? d->is_partition :
				    !d->is_partition && has_partitions(a, d->dev)))
			continue;
		kdev = devices_to_kdev(d->dev);
		a->watch[n] = (struct diskstats_dev){ .kdev = kdev, .held = true };
		for (s = 0; s < a->nslots; s++) {
			if (a->slot_kdev[s] == kdev) {
				a->watch[n].slot = s + 1;
				a->watch[n].data = a->slot_data[s];
			}
		}
		n++;
	}
	for (s = 0; s < a->nslots; s++) {
		if (!a->slot_kdev[s])
			continue;
		for (j = 0; j < n && a->watch[j].kdev != a->slot_kdev[s]; j++)
			;
		if (j == n)
			a->watch[n++] = (struct diskstats_dev){ .kdev = a->slot_kdev[s],
								.slot = s + 1,
								.data = a->slot_data[s] };
	}
	return unseen_run(a->unseen, a->watch, n, a->slot_kdev, edge);
}

/* This interval's count in histogram h of a slot. */
static uint64_t hist_count(const struct aggregator *a, const struct slot_state *st, unsigned int h)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < st->hn[h]; i++)
		n += a->arena.cnt[st->hstart[h] + i];
	return n;
}

/* Completion-only mode: whether each device's requests carry the kernel's stamps (stamps.c). */
static void check_stamps(struct aggregator *a)
{
	const struct iop_device *info;
	char name[sizeof(info->name)];
	uint64_t split;
	unsigned int op;
	uint32_t s;

	for (s = 0; a->stamps && s < a->nslots; s++) {
		const struct slot_state *st = &a->slots[s];

		if (!st->used || !st->seen || !st->active)
			continue;
		for (split = 0, op = 0; op < IOP_OP_MAX; op++)
			split += hist_count(a, st, IOP_H_SERVICE + op);
		info = devices_get(a->devices, st->dev);
		if (info)
			snprintf(name, sizeof(name), "%s", info->name);
		else
			snprintf(name, sizeof(name), "dev%u:%u", major(st->dev), minor(st->dev));
		stamps_check(a->stamps, s, st->kdev, name, st->cnt_delta, split);
	}
}

static const struct iop_device *name_unknown(struct aggregator *a, dev_t dev, size_t *nunknown)
{
	struct iop_device *u;

	if (*nunknown >= a->unknown_cap) {
		size_t cap = a->unknown_cap ? a->unknown_cap * 2 : 8;

		u = realloc(a->unknown, cap * sizeof(*u));
		if (!u)
			return NULL;
		a->unknown = u;
		a->unknown_cap = cap;
	}
	u = &a->unknown[(*nunknown)++];
	memset(u, 0, sizeof(*u));
	u->dev = dev;
	u->disk = dev;
	u->osd_id = -1;
	snprintf(u->name, sizeof(u->name), "dev%u:%u", major(dev), minor(dev));
	return u;
}

static struct iop_dev_interval *add_dev(struct aggregator *a, size_t *n)
{
	struct iop_dev_interval *d;

	if (*n >= a->devs_cap) {
		size_t cap = a->devs_cap ? a->devs_cap * 2 : 16;

		d = realloc(a->devs, cap * sizeof(*d));
		if (!d)
			return NULL;
		a->devs = d;
		a->devs_cap = cap;
	}
	d = &a->devs[(*n)++];
	memset(d, 0, sizeof(*d));
	return d;
}

static void fill_hists(struct aggregator *a, struct iop_dev_interval *d,
		       const struct slot_state *st)
{
	unsigned int h;

	for (h = 0; h < IOP_H_MAX; h++) {
		struct iop_hist_view *v = &d->hist[h];

		memset(v, 0, sizeof(*v));
		v->k = a->k;
		v->nbuckets = a->nb;
		if (st && st->hn[h]) {
			v->nsparse = st->hn[h];
			v->idx = a->arena.idx + st->hstart[h];
			v->cnt = a->arena.cnt + st->hstart[h];
		}
	}
}

static bool selected(const struct iop_config *c, const char *name)
{
	return devices_name_selected(name, c->dev_include.v, c->dev_include.n,
				     c->dev_exclude.v, c->dev_exclude.n);
}

static int build_devices(struct aggregator *a, const struct iop_config *c, size_t *ndevs)
{
	size_t n = 0, nunknown = 0, i;
	uint32_t s;

	/* devices with IO in this interval, then present idle ones */
	for (s = 0; s < a->nslots; s++) {
		struct slot_state *st = &a->slots[s];
		const struct iop_device *info;
		struct iop_dev_interval *d;

		if (!st->used)
			continue;
		info = devices_get(a->devices, st->dev);
		if (!st->active && (!info || !info->present))
			continue;
		if (!info)
			info = name_unknown(a, st->dev, &nunknown);
		if (!info || !selected(c, info->name))
			continue;
		d = add_dev(a, &n);
		if (!d)
			return -ENOMEM;
		d->info = info;
		memcpy(d->cnt, st->cnt_delta, sizeof(d->cnt));
		fill_hists(a, d, st);
	}
	for (i = 0; i < devices_count(a->devices); i++) {
		const struct iop_device *info = devices_at(a->devices, i);
		struct iop_dev_interval *d;
		bool have = false;

		if (!info->present || (info->is_partition && c->rollup_partitions) ||
		    !selected(c, info->name))
			continue;
		for (s = 0; s < a->nslots && !have; s++)
			have = a->slots[s].used && a->slots[s].dev == info->dev &&
			       (a->slots[s].active || info->present);
		if (have)
			continue;
		d = add_dev(a, &n);
		if (!d)
			return -ENOMEM;
		d->info = info;
		fill_hists(a, d, NULL);
	}
	*ndevs = n;
	return 0;
}

static void retire_slots(struct aggregator *a)
{
	uint32_t s;
	int r0 = probes_recycle_slots(a->probes);

	if (r0)
		log_warn("cannot hand released device slots back: %s", strerror(-r0));

	for (s = 0; s < a->nslots; s++) {
		struct slot_state *st = &a->slots[s];
		const struct iop_device *info;
		int r;

		if (!st->used)
			continue;
		if (!st->seen) {          /* released already (should not happen) */
			st->used = false;
			continue;
		}
		info = devices_get(a->devices, st->dev);
		if (st->active || (info && info->present))
			continue;
		r = probes_release_slot(a->probes, st->kdev, s);
		if (r)
			log_warn("cannot release device slot %u: %s", s, strerror(-r));
		st->used = false;
	}
}

static void prog_stats(struct aggregator *a, struct iop_interval *iv)
{
	int n = probes_prog_stats(a->probes, a->progs, 32), i;

	iv->bpf_stats = probes_bpf_stats_on(a->probes);
	if (n < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		struct iop_bpf_prog_stat cur = a->progs[i];

		a->progs[i].run_cnt = cur.run_cnt - a->progs_prev[i].run_cnt;
		a->progs[i].run_time_ns = cur.run_time_ns - a->progs_prev[i].run_time_ns;
		a->progs[i].missed = cur.missed - a->progs_prev[i].missed;
		a->progs_prev[i] = cur;
	}
	iv->nprogs = (size_t)n;
	iv->progs = a->progs;
}

/* Which slots the kernel has assigned now (seen), to which devices. */
static int mark_slots(struct aggregator *a)
{
	uint32_t s;

	for (s = 0; s < a->nslots; s++)
		a->slots[s].seen = false;
	return probes_for_each_slot(a->probes, note_slot, a);
}

/* Every assigned slot's counters and histograms: deltas, and the new previous values. */
static int delta_slots(struct aggregator *a)
{
	uint32_t s;
	int r;

	for (s = 0; s < a->nslots; s++) {
		if (a->slots[s].used && a->slots[s].seen) {
			r = slot_delta(a, s);
			if (r)
				return r;
		}
	}
	return 0;
}

/* Starts the next interval at the maps as they are now, reporting nothing. */
static int baseline(struct aggregator *a, const struct iop_config *c)
{
	struct iop_thread_interval *threads;
	const volatile uint64_t *g;
	struct iop_interval iv;
	uint64_t evicted;
	size_t nthreads;
	int r, i;

	sparse_reset(&a->arena);
	r = delta_slots(a);    /* note_slots ran in hand_over */
	a->last_mono = iop_clock_ns(CLOCK_MONOTONIC);
	a->last_real = iop_clock_ns(CLOCK_REALTIME);
	g = probes_globals(a->probes);
	for (i = 0; i < IOP_G_MAX; i++)
		a->global_prev[i] = g[i];
	if (!r && a->threads && c->sync_enabled)
		r = threads_collect(a->threads, c, &threads, &nthreads, &evicted);
	prog_stats(a, &iv);
	return r;
}

/* The slots in use now (mark_slots) and their devices. */
static int note_slots(struct aggregator *a)
{
	uint32_t s;
	int r = mark_slots(a);

	for (s = 0; s < a->nslots; s++)
		a->slot_kdev[s] = a->slots[s].used && a->slots[s].seen ? a->slots[s].kdev : 0;
	return r;
}

/*
 * The cut between a and its successor (handover.c): a's last interval ends, and the
 * successor's first begins, at one instant of their counters (histograms are read right
 * after, so a sample or two may fall between them).
 */
static int hand_over(struct aggregator *a)
{
	struct aggregator *b = a->successor;
	uint64_t *mine = malloc((size_t)a->nslots * IOP_C_MAX * 8);
	uint64_t *theirs = malloc((size_t)b->nslots * IOP_C_MAX * 8);
	struct handover_side from = { a->probes, a->nslots, a->slot_kdev, a->slot_data,
				      unseen_refs(a->unseen) };
	struct handover_side to = { b->probes, b->nslots, b->slot_kdev, b->slot_data,
				    unseen_refs(b->unseen) };
	int r = mine && theirs ? note_slots(b) : -ENOMEM;

	r = r ?: handover_cut(&from, &to, mine, theirs);
	/* a device's first IO on either side while the cut was made took a slot: its counters
	 * were copied with the rest */
	r = r ?: note_slots(a) ?: note_slots(b);
	if (!r) {
		a->cnt_snap = mine;
		r = delta_slots(a);
		a->cnt_snap = NULL;
	}
	if (!r) {
		b->cnt_snap = theirs;
		r = baseline(b, a->successor_cfg);
		b->cnt_snap = NULL;
	}
	a->successor = NULL;
	free(mine);
	free(theirs);
	return r;
}

void aggregator_hand_over(struct aggregator *a, struct aggregator *next,
			  const struct iop_config *next_cfg)
{
	a->successor = next;
	a->successor_cfg = next_cfg;
}

int aggregator_collect(struct aggregator *a, const struct iop_config *c, struct iop_interval *iv,
		       enum unseen_edge edge)
{
	const volatile uint64_t *g;
	uint32_t s;
	int r, i;

	memset(iv, 0, sizeof(*iv));
	iv->start_mono_ns = a->last_mono;
	iv->start_realtime_ns = a->last_real;
	a->last_mono = iv->end_mono_ns = iop_clock_ns(CLOCK_MONOTONIC);
	a->last_real = iv->end_realtime_ns = iop_clock_ns(CLOCK_REALTIME);
	iv->seq = ++a->seq;
	iv->hist_k = a->k;
	iv->completion_only = probes_completion_only(a->probes);

	sparse_reset(&a->arena);
	for (s = 0; s < a->nslots; s++)
		memset(a->slots[s].hn, 0, sizeof(a->slots[s].hn));
	r = devices_scan(a->devices);
	if (r < 0)
		log_warn("device scan failed: %s", strerror(-r));
	r = note_slots(a);
	if (r)
		return r;
	/* with a successor, its probes see the completions from the cut on */
	r = find_unseen(a, c, a->successor ? UNSEEN_TICK : edge);
	if (r < 0)
		log_warn("cannot check the devices' in-flight counts: %s", strerror(-r));
	else if (r > 0)
		log_debug("%d request(s) completed without a completion event; counted now", r);
	if (a->successor) {
		r = hand_over(a);
		if (r)
			return r;
	} else {
		r = delta_slots(a);
		if (r)
			return r;
	}
	check_stamps(a);
	r = build_devices(a, c, &iv->ndevs);
	if (r)
		return r;
	iv->devs = a->devs;
	retire_slots(a);

	g = probes_globals(a->probes);
	for (i = 0; i < IOP_G_MAX; i++) {
		uint64_t v = g[i];

		iv->global[i] = v - a->global_prev[i];
		a->global_prev[i] = v;
	}
	if (a->threads && c->sync_enabled) {
		r = threads_collect(a->threads, c, &iv->threads, &iv->nthreads, &iv->sync_evictions);
		if (r)
			return r;
	}
	prog_stats(a, iv);
	return 0;
}

int aggregator_prime(struct aggregator *a, const struct iop_config *c)
{
	int r = note_slots(a) ?: find_unseen(a, c, UNSEEN_TICK);

	return r < 0 ? r : 0;
}

uint64_t aggregator_seq(const struct aggregator *a)
{
	return a->seq;
}

void aggregator_set_seq(struct aggregator *a, uint64_t seq)
{
	a->seq = seq;
}
