/* stamps.h - the completion-only mode's check, per device, of the kernel's time stamps its
 * latencies come from: one log line when a device's latency degrades or comes back */
#ifndef IOPULSE_STAMPS_H
#define IOPULSE_STAMPS_H

#include <stdint.h>

#include "iopulse.h"

enum stamp_state {
	STAMPS_UNKNOWN = 0,     /* nothing seen yet (or the interval told nothing) */
	STAMPS_FULL,            /* total latency, and queue/service where dispatches are stamped */
	STAMPS_TOTAL_ONLY,      /* set-up stamps, no dispatch stamps: no queue/service split */
	STAMPS_COUNTS_ONLY,     /* no set-up stamps on data requests: counts without latency */
};

/*
 * What one interval of one device says (cnt: its counter deltas, split: its service-time
 * samples): counts only when its data requests (read, write, discard) completed, none with a
 * set-up stamp; total only when requests with a set-up stamp completed, none with a dispatch
 * stamp, and some found the dispatch unstamped (a dispatch stamp equal to the set-up's is the
 * plug's cached clock, a property of the kernel said once at start, not of the device);
 * STAMPS_UNKNOWN when the interval completed nothing that tells; else full.
 */
enum stamp_state stamps_judge(const uint64_t cnt[IOP_C_MAX], uint64_t split);

struct stamps;

int stamps_new(struct stamps **out, uint32_t nslots);
struct stamps *stamps_free(struct stamps *s);

/*
 * One interval of device slot `slot` (kernel device kdev, called name): logs one line when
 * its state changes to a degraded one, or back to full from one. A slot handed to another
 * device starts over.
 */
void stamps_check(struct stamps *s, uint32_t slot, uint32_t kdev, const char *name,
		  const uint64_t cnt[IOP_C_MAX], uint64_t split);

#endif
