/* thread_fold.c - bounds the thread entries of the daemon-life snapshot */
#include "thread_fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef Iopulse__V1__ThreadSync thread_pb;

/* The folded entries of an Update, found by name (named) or by device (other). */
struct targets {
	thread_pb **named, **other;
	size_t nnamed, nother;
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
	g->nnamed = g->nother = 0;
	if (!g->named || !g->other)
		return -ENOMEM;
	for (i = 0; i < u->n_threads; i++) {
		thread_pb *t = u->threads[i];

		if (is_other(t))
			g->other[g->nother++] = t;
		else if (t->threads_folded)
			g->named[g->nnamed++] = t;
	}
	return 0;
}

static void targets_release(struct targets *g)
{
	free(g->named);
	free(g->other);
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

/* The entry of list (n long) that t folds into by match, or NULL. */
static thread_pb *find(thread_pb **list, size_t n, const thread_pb *t,
		       bool (*match)(const thread_pb *, const thread_pb *))
{
	size_t j;

	for (j = 0; j < n; j++)
		if (match(list[j], t))
			return list[j];
	return NULL;
}

/*
 * Folds entry i of u: into its name's totals when named (and there is room for the name),
 * else into its device's other threads. The slot is set to NULL when t was absorbed.
 */
static int fold_one(pb_update *u, size_t i, struct targets *g, bool named)
{
	thread_pb *t = u->threads[i], *into = NULL;

	if (named) {
		into = find(g->named, g->nnamed, t, same_name);
		if (!into && g->nnamed < THREAD_FOLD_NAMES_MAX) {
			g->named[g->nnamed++] = t;
			return become_folded(t, true);
		}
	}
	into = into ?: find(g->other, g->nother, t, same_dev);
	if (into) {
		u->threads[i] = NULL;
		return absorb(into, t);
	}
	g->other[g->nother++] = t;
	return become_folded(t, false);
}

static void compact(pb_update *u)
{
	size_t i, n = 0;

	for (i = 0; i < u->n_threads; i++)
		if (u->threads[i])
			u->threads[n++] = u->threads[i];
	u->n_threads = n;
}

int thread_fold_exited(pb_update *u, thread_alive_fn alive)
{
	struct targets g;
	size_t i;
	int r = targets_init(&g, u), n = 0;

	for (i = 0; !r && i < u->n_threads; i++) {
		thread_pb *t = u->threads[i];

		if (t->threads_folded || alive(t->pid, t->tid))
			continue;
		r = fold_one(u, i, &g, true);
		n++;
	}
	compact(u);
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
			compact(u);
			targets_release(&g);
		}
	}
	free(pick);
	if (r)
		return r;
	return protobuf_c_message_get_packed_size(&u->base) <= max_bytes ? 0 : -EMSGSIZE;
}
