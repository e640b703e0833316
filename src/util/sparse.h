/* sparse.h - an arena of (bucket index, count) pairs for one interval's histogram deltas */
#ifndef IOPULSE_SPARSE_H
#define IOPULSE_SPARSE_H

#include <stddef.h>
#include <stdint.h>

struct sparse_arena {
	uint32_t *idx;
	uint64_t *cnt;
	size_t n, cap;
};

/* Forget the pairs of the previous interval (keeps the memory). */
void sparse_reset(struct sparse_arena *a);
void sparse_release(struct sparse_arena *a);

/*
 * Appends the non-zero differences cur - prev of nb buckets and sets prev = cur. prev keeps
 * the low 32 bits of the cumulative counts: the difference is taken modulo 2^32, exact as long
 * as one bucket gains fewer than 2^32 counts in one interval. *start and *n locate the pairs.
 */
int sparse_diff(struct sparse_arena *a, uint32_t *prev, const uint64_t *cur, unsigned int nb,
		size_t *start, unsigned int *n);

#endif
