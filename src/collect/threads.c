/* threads.c - per-thread fsync/fdatasync/sync_file_range deltas from the kernel sync table */
#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "log.h"
#include "sparse.h"
#include "sync_evict.h"
#include "sync_watch.h"

/* What we saw of one kernel entry last time, to compute deltas. */
struct prev {
	struct iop_sync_key key;
	uint64_t gen;            /* 0: free slot (never used, or a tombstone) */
	bool tomb;               /* was used: lookups probe past it */
	uint64_t kgen;           /* the kernel entry's creation number these values came from */
	bool idle;               /* no calls in the latest interval */
	bool watched;            /* a watched thread's (sync_watch.h): never removed while it lives */
	uint32_t uid;
	uint64_t last_ns;        /* its latest call */
	uint64_t calls[IOP_SYNC_MAX];
	uint64_t flush_bios;
	uint64_t lat_sum[IOP_SYNC_MAX];
	uint32_t *hist;          /* low 32 bits of the cumulative buckets (see sparse.h): all
	                          * kinds, then each kind (NVIEWS histograms of nb) */
};

/* Slots of the previous-values table at least (a power of two). */
#define THREADS_CAP_MIN 1024

/* Histograms per thread: all kinds together, then one per enum iop_sync_kind. */
#define NVIEWS (1 + IOP_SYNC_MAX)


struct threads {
	struct probes *probes;
	struct devices *devices;
	struct sync_watch *watch;
	struct iop_sync_ctl *ctl;
	unsigned int nb, k;
	size_t cap;              /* hash capacity, power of two */
	size_t used, tombs;      /* entries held, and removed ones still probed past */
	struct prev *tab;
	uint64_t gen;
	uint32_t capacity;       /* kernel table entries */
	uint8_t *vals;           /* BATCH kernel values */
	uint64_t *merged;        /* nb: one entry's kinds added up */
	struct iop_sync_key keys[64];
	size_t vsize;
	struct iop_thread_interval *out;
	size_t (*out_start)[NVIEWS];  /* each out entry's pairs in the arena, per view */
	size_t out_cap;
	struct sparse_arena arena;
};

int threads_new(struct threads **out, struct probes *p, struct devices *d)
{
	struct threads *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->probes = p;
	t->devices = d;
	t->k = probes_hist_k(p);
	t->nb = probes_hist_nb(p);
	t->cap = THREADS_CAP_MIN;   /* power of two; grows when more threads are live */
	t->tab = calloc(t->cap, sizeof(*t->tab));
	t->vsize = probes_sync_value_size(p);
	t->capacity = probes_sync_capacity(p);
	t->vals = malloc(64 * t->vsize);
	t->merged = malloc(t->nb * sizeof(uint64_t));
	t->ctl = probes_sync_ctl(p);
	if (!t->tab || !t->vals || !t->merged || sync_watch_new(&t->watch)) {
		threads_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

struct threads *threads_free(struct threads *t)
{
	size_t i;

	if (!t)
		return NULL;
	for (i = 0; t->tab && i < t->cap; i++)
		free(t->tab[i].hist);
	free(t->tab);
	free(t->vals);
	free(t->merged);
	sync_watch_free(t->watch);
	free(t->out);
	free(t->out_start);
	sparse_release(&t->arena);
	free(t);
	return NULL;
}

static size_t key_hash(const struct iop_sync_key *k)
{
	uint64_t h = ((uint64_t)k->tgid << 32 | k->pid) * 0x9E3779B97F4A7C15ull;

	return (size_t)((h ^ (h >> 29) ^ k->dev * 0xff51afd7ed558ccdull) >> 7);
}

static int rebuild(struct threads *t, size_t cap);

/* The entry of key k, a new zeroed one if there is none; NULL on ENOMEM. */
static struct prev *prev_get(struct threads *t, const struct iop_sync_key *k)
{
	size_t i, mask = t->cap - 1;
	struct prev *free_slot = NULL;

	for (i = key_hash(k) & mask; ; i = (i + 1) & mask) {
		struct prev *e = &t->tab[i];

		if (!e->gen && !e->tomb) {
			free_slot = free_slot ?: e;
			break;
		}
		if (e->gen && !memcmp(&e->key, k, sizeof(*k)))
			return e;
		if (!e->gen && !free_slot)
			free_slot = e;
	}
	/* at most half full, tombstones included: probes stay short and always end */
	if ((t->used + t->tombs + 1) * 2 > t->cap) {
		if (rebuild(t, (t->used + 1) * 4 > t->cap ? t->cap * 2 : t->cap))
			return NULL;
		return prev_get(t, k);
	}
	free_slot->hist = calloc(NVIEWS * t->nb, sizeof(uint32_t));
	if (!free_slot->hist)
		return NULL;
	if (free_slot->tomb)
		t->tombs--;
	free_slot->tomb = false;
	memset(free_slot->calls, 0, sizeof(free_slot->calls));
	memset(free_slot->lat_sum, 0, sizeof(free_slot->lat_sum));
	free_slot->flush_bios = 0;
	free_slot->kgen = 0;
	free_slot->idle = false;
	free_slot->key = *k;
	free_slot->gen = t->gen;
	t->used++;
	return free_slot;
}

/* Forgets entry p: its memory goes back now, its slot stays a tombstone until a rebuild. */
static void prev_remove(struct threads *t, struct prev *p)
{
	free(p->hist);
	p->hist = NULL;
	p->gen = 0;
	p->tomb = true;
	t->used--;
	t->tombs++;
}

/* Moves the entries into a table of cap slots (a power of two), leaving the tombstones. */
static int rebuild(struct threads *t, size_t cap)
{
	struct prev *old = t->tab;
	size_t oldcap = t->cap, i;

	t->tab = calloc(cap, sizeof(*t->tab));
	if (!t->tab) {
		t->tab = old;
		return -ENOMEM;
	}
	t->cap = cap;
	t->tombs = 0;
	for (i = 0; i < oldcap; i++) {
		size_t j, mask = cap - 1;

		if (!old[i].gen)
			continue;
		for (j = key_hash(&old[i].key) & mask; t->tab[j].gen; j = (j + 1) & mask)
			;
		t->tab[j] = old[i];
	}
	free(old);
	return 0;
}

static bool thread_selected(const struct iop_config *c, const char *comm)
{
	size_t i;
	bool in = c->thread_include.n == 0;

	for (i = 0; !in && i < c->thread_include.n; i++)
		in = fnmatch(c->thread_include.v[i], comm, 0) == 0;
	for (i = 0; in && i < c->thread_exclude.n; i++)
		in = fnmatch(c->thread_exclude.v[i], comm, 0) != 0;
	return in;
}

static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

void threads_process_info(int tgid, char *name, size_t namelen, int *osd_id)
{
	char path[64], buf[4096], *arg, *end;
	ssize_t n;
	long id;

	*osd_id = -1;
	snprintf(path, sizeof(path), "/proc/%d/comm", tgid);
	if (read_small(path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(name, namelen, "%s", buf);
	} else {
		snprintf(name, namelen, "?");
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", tgid);
	n = read_small(path, buf, sizeof(buf));
	if (n <= 0 || !strstr(buf, "ceph-osd"))
		return;
	/* arguments are NUL-separated: look for "--id N", "-i N" or "--id=N" */
	for (arg = buf; arg < buf + n; arg += strlen(arg) + 1) {
		const char *val = NULL;

		if (!strcmp(arg, "--id") || !strcmp(arg, "-i"))
			val = arg + strlen(arg) + 1 < buf + n ? arg + strlen(arg) + 1 : NULL;
		else if (!strncmp(arg, "--id=", 5))
			val = arg + 5;
		if (!val)
			continue;
		errno = 0;
		id = strtol(val, &end, 10);
		if (end != val && *end == '\0' && errno == 0 && id >= 0 && id < 1000000)
			*osd_id = (int)id;
		return;
	}
}

static int ensure_out(struct threads *t, size_t n)
{
	struct iop_thread_interval *o;
	size_t (*h)[NVIEWS];

	if (n <= t->out_cap)
		return 0;
	n = n < 64 ? 64 : n * 2;
	o = realloc(t->out, n * sizeof(*o));
	if (!o)
		return -ENOMEM;
	t->out = o;
	h = realloc(t->out_start, n * sizeof(*h));
	if (!h)
		return -ENOMEM;
	t->out_start = h;
	t->out_cap = n;
	return 0;
}

/* Sets one output view of nb buckets: the differences cur - prev, and prev = cur. */
static int diff_view(struct threads *t, size_t count, unsigned int view, uint32_t *prev,
		     const uint64_t *cur, struct iop_hist_view *out)
{
	out->k = t->k;
	out->nbuckets = t->nb;
	return sparse_diff(&t->arena, prev, cur, t->nb, &t->out_start[count][view], &out->nsparse);
}

/* Fold one kernel entry into the deltas; appends to t->out when the thread made calls. */
static int take_entry(struct threads *t, const struct iop_config *c, const struct iop_sync_key *key,
		      const uint8_t *raw, size_t *count, int *last_tgid, char *last_name, int *last_osd)
{
	const struct iop_sync_val *v = (const void *)raw;
	const uint64_t *buckets = (const uint64_t *)raw + sizeof(struct iop_sync_val) / 8;
	struct iop_thread_interval *o;
	uint64_t dcalls = 0;
	struct prev *p;
	unsigned int nb = t->nb, kd;
	bool reset;
	size_t i, j;

	if (!v->gen)
		return 0;     /* being created by its thread: read it next time */
	p = prev_get(t, key);
	if (!p)
		return -ENOMEM;
	/* new to us, or re-created in the kernel since we last read it: it restarted at zero */
	reset = (p->gen != t->gen - 1 && p->gen != t->gen) || p->kgen != v->gen;
	if (reset) {
		memset(p->calls, 0, sizeof(p->calls));
		memset(p->lat_sum, 0, sizeof(p->lat_sum));
		p->flush_bios = 0;
		memset(p->hist, 0, NVIEWS * nb * sizeof(uint32_t));
	}
	p->gen = t->gen;
	p->kgen = v->gen;
	for (i = 0; i < IOP_SYNC_MAX; i++)
		dcalls += v->calls[i] - p->calls[i];
	p->idle = dcalls == 0;
	p->uid = v->uid;
	p->last_ns = v->last_ns;
	if (reset) {
		char comm[16], process[16];

		snprintf(comm, sizeof(comm), "%.15s", v->comm);
		snprintf(process, sizeof(process), "%.15s", v->process);
		p->watched = v->watched || sync_watch_match(c, comm, process);
		/* a name a wildcard glob watches: new threads of that name get the reserved room */
		if (p->watched && !v->watched)
			sync_watch_seen(t->watch, probes_sync_watch_fd(t->probes), c, comm);
	}
	/* an entry without calls since the last read has the buckets we keep already */
	if (dcalls || reset) {
		for (j = 0; j < nb; j++) {
			t->merged[j] = 0;
			for (kd = 0; kd < IOP_SYNC_MAX; kd++)
				t->merged[j] += buckets[kd * nb + j];
		}
	}
	if (dcalls && thread_selected(c, v->comm)) {
		if (ensure_out(t, *count + 1))
			return -ENOMEM;
		o = &t->out[*count];
		memset(o, 0, sizeof(*o));
		o->tgid = key->tgid;
		o->tid = key->pid;
		memcpy(o->comm, v->comm, sizeof(o->comm));
		o->comm[sizeof(o->comm) - 1] = '\0';
		if ((int)key->tgid != *last_tgid) {
			*last_tgid = (int)key->tgid;
			threads_process_info(*last_tgid, last_name, 16, last_osd);
		}
		/* the name the kernel recorded survives the process; /proc is only a fallback */
		if (v->process[0])
			snprintf(o->process, sizeof(o->process), "%.15s", v->process);
		else
			memcpy(o->process, last_name, sizeof(o->process));
		o->osd_id = *last_osd;
		o->dev = devices_from_kdev(key->dev);
		if (c->rollup_partitions)
			o->dev = devices_rollup(t->devices, o->dev);
		o->device = devices_get(t->devices, o->dev);
		for (i = 0; i < IOP_SYNC_MAX; i++) {
			o->calls[i] = v->calls[i] - p->calls[i];
			o->kind_lat_sum_ns[i] = v->lat_sum_ns[i] - p->lat_sum[i];
			o->lat_sum_ns += o->kind_lat_sum_ns[i];
		}
		o->flush_bios = v->flush_bios - p->flush_bios;
		o->lat_max_ns = v->lat_max_ns;
		if (diff_view(t, *count, 0, p->hist, t->merged, &o->lat))
			return -ENOMEM;
		for (kd = 0; kd < IOP_SYNC_MAX; kd++)
			if (diff_view(t, *count, 1 + kd, p->hist + (1 + kd) * nb, buckets + kd * nb,
				      &o->kind_lat[kd]))
				return -ENOMEM;
		(*count)++;
	} else if (dcalls || reset) {
		for (j = 0; j < nb; j++)
			p->hist[j] = (uint32_t)t->merged[j];
		for (j = 0; j < IOP_SYNC_MAX * nb; j++)
			p->hist[nb + j] = (uint32_t)buckets[j];
	}
	memcpy(p->calls, v->calls, sizeof(p->calls));
	memcpy(p->lat_sum, v->lat_sum_ns, sizeof(p->lat_sum));
	p->flush_bios = v->flush_bios;
	return 0;
}

bool threads_alive(uint32_t tgid, uint32_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/task/%u", tgid, tid);
	return access(path, F_OK) == 0 || errno != ENOENT;
}

/*
 * Removes the kernel entries of threads that have exited (their last calls were reported
 * already; a thread that is gone cannot add to its entry again). Checked every 16th interval,
 * or every interval once the table is half full. Returns the number removed.
 */
static uint64_t remove_exited(struct threads *t, int fd, size_t live)
{
	uint64_t removed = 0;
	size_t i;

	if (live * 2 < t->capacity && t->gen % 16)
		return 0;
	for (i = 0; i < t->cap; i++) {
		struct prev *p = &t->tab[i];

		if (p->gen != t->gen || !p->idle || threads_alive(p->key.tgid, p->key.pid))
			continue;
		if (bpf_map_delete_elem(fd, &p->key) == 0)
			removed++;
		prev_remove(t, p);
	}
	return removed;
}

/* The entries kept for watched threads: limits.threads_reserved, at most half the table. */
static uint32_t threads_reserved(const struct iop_config *c, uint32_t capacity)
{
	return c->threads_reserved < capacity / 2 ? c->threads_reserved : capacity / 2;
}

/*
 * Removes the entry of key k of a live thread with its thread's stripe taken (iopulse.h
 * iop_sync_ctl), its last values read into val: 1, 0 when a call of that stripe is at work
 * (tried again next interval), or -errno.
 */
static int remove_live(struct threads *t, int fd, const struct iop_sync_key *k, void *val)
{
	unsigned int *busy = &t->ctl->busy[IOP_SYNC_STRIPE(k->pid)], idle = 0;
	int r = 1;

	if (!__atomic_compare_exchange_n(busy, &idle, IOP_SYNC_LOCKED, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return 0;
	if (bpf_map_lookup_elem(fd, k, val))
		r = errno == ENOENT ? 0 : -errno;
	else if (bpf_map_delete_elem(fd, k))
		r = -errno;
	__atomic_fetch_sub(busy, IOP_SYNC_LOCKED, __ATOMIC_SEQ_CST);
	return r;
}

/*
 * When the entries held reach the unwatched share less a sixteenth of it, removes idle
 * entries of live threads (not watched ones) down to there, the uid holding the most first
 * (sync_evict_pick()), so that one user's threads cannot keep others' out. Their last calls
 * are reported with this interval: nothing counted is lost, and a thread that calls again
 * gets a new entry counted from zero (its new creation number). Returns the number removed,
 * or -errno.
 */
static long evict_idle(struct threads *t, const struct iop_config *c, int fd, size_t held,
		       size_t *count, int *last_tgid, char *last_name, int *last_osd)
{
	size_t limit = t->ctl->unwatched_max, target = limit - (limit / 16 ?: 1), n = 0, i, extra;
	struct sync_evict_entry *cand;
	struct iop_sync_key *keys;
	size_t *pick;
	long got, removed = 0, r = 0;

	if (!limit || held <= target)
		return 0;
	cand = calloc(t->used ?: 1, sizeof(*cand));
	keys = calloc(t->used ?: 1, sizeof(*keys));
	pick = calloc(t->used ?: 1, sizeof(*pick));
	if (!cand || !keys || !pick) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < t->cap; i++) {
		const struct prev *p = &t->tab[i];

		if (p->gen != t->gen)
			continue;
		cand[n] = (struct sync_evict_entry){ .uid = p->uid, .keep = p->watched || !p->idle,
						     .last_ns = p->last_ns };
		keys[n++] = p->key;
	}
	/* entries still being made by their threads are held but not read yet */
	extra = held > n ? held - n : 0;
	got = sync_evict_pick(cand, n, target > extra ? target - extra : 0, pick);
	for (i = 0; got > 0 && i < (size_t)got && !r; i++) {
		const struct iop_sync_key *k = &keys[pick[i]];
		int e = remove_live(t, fd, k, t->vals);

		if (e <= 0) {
			r = e;
			continue;
		}
		removed++;
		r = take_entry(t, c, k, t->vals, count, last_tgid, last_name, last_osd);
		if (!r)
			prev_remove(t, prev_get(t, k));
	}
	r = got < 0 ? got : r;
out:
	free(cand);
	free(keys);
	free(pick);
	return r < 0 ? r : removed;
}

int threads_collect(struct threads *t, const struct iop_config *c,
		    struct iop_thread_interval **out, size_t *n, uint64_t *evicted)
{
	int fd = probes_sync_fd(t->probes), last_tgid = -1, last_osd = -1, r = 0;
	uint64_t batch = 0;
	size_t count = 0, live = 0, i;
	char last_name[16] = "";
	bool first = true, done = false;

	t->gen++;
	sparse_reset(&t->arena);
	t->ctl->unwatched_max = t->capacity - threads_reserved(c, t->capacity);
	r = sync_watch_refresh(t->watch, probes_sync_watch_fd(t->probes), c);
	if (r)
		return r;
	/* batched reads: a few syscalls for the whole table instead of two per entry */
	while (!done) {
		uint32_t got = 64;
		int e;

		e = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, t->keys, t->vals, &got,
					 NULL);
		if (e && errno != ENOENT)
			return -errno;
		done = e != 0;
		first = false;
		for (i = 0; i < got; i++) {
			live++;
			r = take_entry(t, c, &t->keys[i], t->vals + i * t->vsize, &count, &last_tgid,
				       last_name, &last_osd);
			if (r)
				return r;
		}
	}
	*evicted = remove_exited(t, fd, live);
	r = evict_idle(t, c, fd, live - *evicted, &count, &last_tgid, last_name, &last_osd);
	if (r < 0)
		return r;
	*evicted += (uint64_t)r;
	/* the entries the programs count as held (iopulse.h iop_sync_ctl) */
	__atomic_store_n(&t->ctl->removed, t->ctl->removed + *evicted, __ATOMIC_RELEASE);
	r = 0;
	/* the arena may have moved while growing: set the pointers at the end */
	for (i = 0; i < count; i++) {
		struct iop_thread_interval *o = &t->out[i];
		unsigned int kd;

		o->lat.idx = t->arena.idx + t->out_start[i][0];
		o->lat.cnt = t->arena.cnt + t->out_start[i][0];
		for (kd = 0; kd < IOP_SYNC_MAX; kd++) {
			o->kind_lat[kd].idx = t->arena.idx + t->out_start[i][1 + kd];
			o->kind_lat[kd].cnt = t->arena.cnt + t->out_start[i][1 + kd];
		}
	}
	/* forget entries the kernel no longer has */
	for (i = 0; i < t->cap; i++)
		if (t->tab[i].gen && t->tab[i].gen != t->gen)
			prev_remove(t, &t->tab[i]);
	/* after a burst of threads, give the table's memory back */
	if (t->cap > THREADS_CAP_MIN && t->used * 8 < t->cap) {
		r = rebuild(t, t->cap / 2);
		malloc_trim(0);   /* the freed histograms are scattered through the heap */
	} else if (t->tombs * 4 > t->cap)
		r = rebuild(t, t->cap);
	if (r)
		return r;
	*out = t->out;
	*n = count;
	return 0;
}
