/* thread_fold.c - bounds the thread entries of the daemon-life snapshot */
#include "thread_fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef Iopulse__V1__ThreadSync thread_pb;

/*
 * The folded entries of an Update, found by name (named) or by device (other). named is in
 * the order of last use, the least recently used first (compact() moves the entries a fold
 * used to the end of the Update); pos: each one's position in the Update, born: when this
 * fold made it, used: when it last added to it (both 0: not yet). A name gives way in that
 * order (lru: the next to look at, for an OSD's name and for others'), unless used again
 * after it took its place.
 */
struct targets {
	thread_pb **named, **other;
	size_t *pos;
	uint64_t *born, *used, uses;
	size_t nnamed, nother, names;   /* names: named entries not given up (NULL) */
	size_t lru[2];
};

static const char *str(const char *s)
{
	return s ? s : "";
}

static bool is_other(const thread_pb *t)
{
	return t->threads_folded && !*str(t->comm) && !*str(t->process);
}

static bool same_dev(const thread_pb *a, const thread_pb *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

static bool same_name(const thread_pb *a, const thread_pb *b)
{
	return same_dev(a, b) && a->osd_id == b->osd_id && !strcmp(str(a->comm), str(b->comm)) &&
	       !strcmp(str(a->process), str(b->process));
}

static uint64_t calls(const thread_pb *t)
{
	return t->fsync + t->fdatasync + t->sync_file_range;
}

static int targets_init(struct targets *g, const pb_update *u)
{
	size_t i, n = u->n_threads ? u->n_threads : 1;

	g->named = calloc(n, sizeof(*g->named));
	g->other = calloc(n, sizeof(*g->other));
	g->pos = calloc(n, sizeof(*g->pos));
	g->used = calloc(n, sizeof(*g->used));
	g->born = calloc(n, sizeof(*g->born));
	g->nnamed = g->nother = g->names = 0;
	g->uses = 0;
	g->lru[0] = g->lru[1] = 0;
	if (!g->named || !g->other || !g->pos || !g->used || !g->born)
		return -ENOMEM;
	for (i = 0; i < u->n_threads; i++) {
		thread_pb *t = u->threads[i];

		if (is_other(t)) {
			g->other[g->nother++] = t;
		} else if (t->threads_folded) {
			g->pos[g->nnamed] = i;
			g->named[g->nnamed++] = t;
		}
	}
	g->names = g->nnamed;
	return 0;
}

static void targets_release(struct targets *g)
{
	free(g->named);
	free(g->other);
	free(g->pos);
	free(g->used);
	free(g->born);
}

/* Turns t itself into a folded entry: of its name (named), or its device's other threads. */
static int become_folded(thread_pb *t, bool named)
{
	t->threads_folded = t->threads_folded ? t->threads_folded : 1;
	t->pid = 0;
	t->tid = 0;
	if (named)
		return 0;
	t->osd_id = -1;
	if (t->comm != protobuf_c_empty_string)
		free(t->comm);
	if (t->process != protobuf_c_empty_string)
		free(t->process);
	t->comm = strdup("");
	t->process = strdup("");
	return t->comm && t->process ? 0 : -ENOMEM;
}

/* Adds t into a into, then frees t. */
static int absorb(thread_pb *into, thread_pb *t)
{
	int32_t osd = into->osd_id;
	int r = update_thread_add(into, t);

	into->osd_id = osd;
	into->threads_folded += t->threads_folded ? t->threads_folded : 1;
	iopulse__v1__thread_sync__free_unpacked(t, NULL);
	return r;
}

/* The position in list (n long, NULLs skipped) of the entry t folds into by match, or n. */
static size_t find_at(thread_pb **list, size_t n, const thread_pb *t,
		      bool (*match)(const thread_pb *, const thread_pb *))
{
	size_t j;

	for (j = 0; j < n; j++)
		if (list[j] && match(list[j], t))
			return j;
	return n;
}

static thread_pb *find(thread_pb **list, size_t n, const thread_pb *t,
		       bool (*match)(const thread_pb *, const thread_pb *))
{
	size_t j = find_at(list, n, t, match);

	return j < n ? list[j] : NULL;
}

/* Folds entry at position i of u into its device's other threads (absorbed, or it becomes that). */
static int fold_other(pb_update *u, size_t i, struct targets *g)
{
	thread_pb *t = u->threads[i], *into = find(g->other, g->nother, t, same_dev);

	if (into) {
		u->threads[i] = NULL;
		return absorb(into, t);
	}
	g->other[g->nother++] = t;
	return become_folded(t, false);
}

/*
 * Frees a name for t: the least recently used name gives way, its totals folding into its
 * device's other threads. A Ceph OSD's name (osd_id set) gives way only to another OSD's.
 * 0 (g->names then has room), 1 when no name may go, or -ENOMEM.
 */
static int free_a_name(pb_update *u, struct targets *g, const thread_pb *t)
{
	bool osd = t->osd_id >= 0;
	size_t *j = &g->lru[osd];

	for (; *j < g->nnamed; (*j)++) {
		thread_pb *x = g->named[*j];

		if (!x || g->used[*j] != g->born[*j] || (x->osd_id >= 0 && !osd))
			continue;
		g->named[*j] = NULL;
		g->names--;
		return fold_other(u, g->pos[(*j)++], g);
	}
	return 1;
}

/*
 * Folds entry i of u: into its name's totals when named (and there is room for the name),
 * else into its device's other threads. The slot is set to NULL when t was absorbed.
 */
static int fold_one(pb_update *u, size_t i, struct targets *g, bool named)
{
	thread_pb *t = u->threads[i];
	size_t j;
	int r;

	if (!named)
		return fold_other(u, i, g);
	j = find_at(g->named, g->nnamed, t, same_name);
	if (j < g->nnamed) {
		g->used[j] = ++g->uses;
		u->threads[i] = NULL;
		return absorb(g->named[j], t);
	}
	r = g->names < THREAD_FOLD_NAMES_MAX ? 0 : free_a_name(u, g, t);
	if (r)
		return r < 0 ? r : fold_other(u, i, g);
	g->pos[g->nnamed] = i;
	g->used[g->nnamed] = g->born[g->nnamed] = ++g->uses;
	g->named[g->nnamed++] = t;
	g->names++;
	return become_folded(t, true);
}

static int by_use(const void *a, const void *b, void *ctx)
{
	const uint64_t *used = ctx;
	uint64_t x = used[*(const size_t *)a], y = used[*(const size_t *)b];

	return x < y ? -1 : x > y;
}

/*
 * Drops u's emptied slots. With g, the named entries this fold used move to the end in the
 * order of their use, so that the Update's named entries stay least recently used first.
 */
static int compact(pb_update *u, struct targets *g)
{
	size_t i, j, n = 0, k = 0, *last = NULL;

	if (g && g->uses) {
		last = calloc(g->nnamed, sizeof(*last));
		if (!last)
			return -ENOMEM;
		for (j = 0; j < g->nnamed; j++)
			if (g->named[j] && g->used[j]) {
				last[k++] = j;
				u->threads[g->pos[j]] = NULL;   /* put back below */
			}
		qsort_r(last, k, sizeof(*last), by_use, g->used);
	}
	for (i = 0; i < u->n_threads; i++)
		if (u->threads[i])
			u->threads[n++] = u->threads[i];
	for (j = 0; j < k; j++)
		u->threads[n++] = g->named[last[j]];
	u->n_threads = n;
	free(last);
	return 0;
}

int thread_fold_exited(pb_update *u, thread_alive_fn alive)
{
	struct targets g;
	size_t i;
	int r = targets_init(&g, u), n = 0;

	for (i = 0; !r && i < u->n_threads; i++) {
		thread_pb *t = u->threads[i];

		/* (a slot a name gave way from is empty) */
		if (!t || t->threads_folded || alive(t->pid, t->tid))
			continue;
		r = fold_one(u, i, &g, true);
		n++;
	}
	r = compact(u, r ? NULL : &g) ?: r;
	targets_release(&g);
	return r ? r : n;
}

/* Orders entry positions of the Update u by their thread's calls. */
static int by_calls(const void *a, const void *b, void *u)
{
	const pb_update *up = u;
	uint64_t cx = calls(up->threads[*(const size_t *)a]);
	uint64_t cy = calls(up->threads[*(const size_t *)b]);

	return cx < cy ? -1 : cx > cy;
}

/* Positions of u's live-thread entries (live) or per-name totals, least calls first. */
static size_t candidates(const pb_update *u, bool live, size_t *out)
{
	size_t i, n = 0;

	for (i = 0; i < u->n_threads; i++) {
		const thread_pb *t = u->threads[i];

		if (live ? !t->threads_folded : t->threads_folded && !is_other(t))
			out[n++] = i;
	}
	qsort_r(out, n, sizeof(*out), by_calls, (void *)u);
	return n;
}

int thread_fold_to_fit(pb_update *u, size_t max_bytes)
{
	struct targets g;
	size_t *pick;
	int r = 0, pass;

	if (protobuf_c_message_get_packed_size(&u->base) <= max_bytes)
		return 0;
	pick = calloc(u->n_threads ? u->n_threads : 1, sizeof(*pick));
	if (!pick)
		return -ENOMEM;
	/* pass 0: live threads, pass 1: per-name totals; half of what is left at a time */
	for (pass = 0; !r && pass < 2; pass++) {
		size_t n, k;

		while (!r && protobuf_c_message_get_packed_size(&u->base) > max_bytes &&
		       (n = candidates(u, pass == 0, pick)) > 0) {
			r = targets_init(&g, u);
			/* slots emptied by absorb keep the positions of the others */
			for (k = 0; !r && k < (n > 1 ? n / 2 : 1); k++)
				r = fold_one(u, pick[k], &g, false);
			compact(u, NULL);
			targets_release(&g);
		}
	}
	free(pick);
	if (r)
		return r;
	return protobuf_c_message_get_packed_size(&u->base) <= max_bytes ? 0 : -EMSGSIZE;
}
