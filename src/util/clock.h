/* clock.h - reading a clock as nanoseconds */
#ifndef IOPULSE_CLOCK_H
#define IOPULSE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The clock c (CLOCK_MONOTONIC, CLOCK_REALTIME) now, in ns. */
static inline uint64_t iop_clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
