/* sync_evict.c - which idle sync-table entries give way when unwatched threads fill the table */
#include "sync_evict.h"

#include <errno.h>
#include <stdlib.h>

/* One uid's entries: held in all, and those that may go (positions in order, oldest first). */
struct group {
	uint32_t uid;
	size_t held, may_go, first;   /* first: index of its first entry that may go in order */
	size_t take;
};

static int by_uid_then_age(const void *a, const void *b, void *ctx)
{
	const struct sync_evict_entry *e = ctx, *x = &e[*(const size_t *)a], *y = &e[*(const size_t *)b];

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->keep != y->keep)
		return x->keep ? 1 : -1;           /* those that may go first */
	if (x->last_ns != y->last_ns)
		return x->last_ns < y->last_ns ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int by_held(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->held != y->held)
		return x->held > y->held ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* Entries that leave every group at most level entries (those that may go, only). */
static size_t removable(const struct group *g, size_t ng, size_t level)
{
	size_t i, sum = 0;

	for (i = 0; i < ng; i++) {
		size_t over = g[i].held > level ? g[i].held - level : 0;

		sum += over < g[i].may_go ? over : g[i].may_go;
	}
	return sum;
}

long sync_evict_pick(const struct sync_evict_entry *e, size_t n, size_t target, size_t *out)
{
	size_t need = n > target ? n - target : 0, *order, ng = 0, i, lo, hi, got = 0;
	struct group *g;

	if (!need)
		return 0;
	order = malloc(n * sizeof(*order));
	g = malloc(n * sizeof(*g));
	if (!order || !g) {
		free(order);
		free(g);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_uid_then_age, (void *)e);
	for (i = 0; i < n; i++) {
		const struct sync_evict_entry *x = &e[order[i]];

		if (!ng || g[ng - 1].uid != x->uid)
			g[ng++] = (struct group){ .uid = x->uid, .first = i };
		g[ng - 1].held++;
		g[ng - 1].may_go += !x->keep;
	}
	/* the highest level every group can be brought down to that frees need entries */
	lo = 0;
	hi = n;
	if (removable(g, ng, 0) < need) {
		hi = 0;
	} else {
		while (lo < hi) {          /* removable(lo) >= need, removable(hi + 1) < need */
			size_t mid = lo + (hi - lo + 1) / 2;

			if (removable(g, ng, mid) >= need)
				lo = mid;
			else
				hi = mid - 1;
		}
	}
	/* down to level hi + 1 from every group, then one more from the largest until done */
	qsort(g, ng, sizeof(*g), by_held);
	for (i = 0; i < ng; i++) {
		size_t over = g[i].held > hi + 1 ? g[i].held - (hi + 1) : 0;

		g[i].take = over < g[i].may_go ? over : g[i].may_go;
		got += g[i].take;
	}
	for (i = 0; i < ng && got < need; i++)
		if (g[i].held > hi && g[i].take < g[i].may_go && g[i].held - g[i].take > hi) {
			g[i].take++;
			got++;
		}
	got = 0;
	for (i = 0; i < ng; i++)
		for (size_t k = 0; k < g[i].take; k++)
			out[got++] = order[g[i].first + k];
	free(order);
	free(g);
	return (long)got;
}
