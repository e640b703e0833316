/* pb_check.h - what the unit tests read out of iopulse.v1 messages */
#ifndef IOPULSE_PB_CHECK_H
#define IOPULSE_PB_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "iopulse.pb-c.h"

/* Samples in a sparse histogram (0 for none). */
static inline uint64_t hist_total(const Iopulse__V1__Histogram *h)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; h && i < h->n_count; i++)
		t += h->count[i];
	return t;
}

#endif
