/* sparse.c - an arena of (bucket index, count) pairs for one interval's histogram deltas */
#include "sparse.h"

#include <errno.h>
#include <stdlib.h>

void sparse_reset(struct sparse_arena *a)
{
	a->n = 0;
}

void sparse_release(struct sparse_arena *a)
{
	free(a->idx);
	free(a->cnt);
	a->idx = NULL;
	a->cnt = NULL;
	a->n = a->cap = 0;
}

static int grow(struct sparse_arena *a)
{
	size_t cap = a->cap ? a->cap * 2 : 1024;
	uint32_t *idx = realloc(a->idx, cap * sizeof(*idx));
	uint64_t *cnt;

	if (!idx)
		return -ENOMEM;
	a->idx = idx;
	cnt = realloc(a->cnt, cap * sizeof(*cnt));
	if (!cnt)
		return -ENOMEM;
	a->cnt = cnt;
	a->cap = cap;
	return 0;
}

int sparse_diff(struct sparse_arena *a, uint32_t *prev, const uint64_t *cur, unsigned int nb,
		size_t *start, unsigned int *n)
{
	unsigned int j;

	*start = a->n;
	*n = 0;
	for (j = 0; j < nb; j++) {
		uint32_t c = (uint32_t)cur[j], d = c - prev[j];

		if (!d)
			continue;
		prev[j] = c;
		if (a->n == a->cap && grow(a))
			return -ENOMEM;
		a->idx[a->n] = j;
		a->cnt[a->n] = d;
		a->n++;
		(*n)++;
	}
	return 0;
}
