/* aggregator.h - turns the kernel's cumulative maps into per-interval deltas */
#ifndef IOPULSE_AGGREGATOR_H
#define IOPULSE_AGGREGATOR_H

#include "config.h"
#include "devices.h"
#include "interval.h"
#include "probes.h"
#include "threads.h"
#include "unseen.h"

struct aggregator;

int aggregator_new(struct aggregator **out, struct probes *p, struct devices *d,
		   struct threads *t);
struct aggregator *aggregator_free(struct aggregator *a);

/*
 * Close the interval that started at the previous call (or at aggregator_new) and fill iv.
 * The devices table is rescanned first; slots of devices that are gone and idle are handed
 * back to the BPF side. iv and everything it points to stay valid until the next call.
 * edge: a timer's, a phase mark's or the last; at the last two, IO whose completion was never
 * reported is looked for once more after a short pause (unseen_run), so that the phase or the
 * last interval it completed in holds it.
 */
int aggregator_collect(struct aggregator *a, const struct iop_config *c, struct iop_interval *iv,
		       enum unseen_edge edge);

/*
 * A reload: next (new probes, already attached beside a's) takes over at a's next collect,
 * which cuts between the two sets (handover.c): a reports its IO up to the cut and next from
 * it, and next's first interval starts there, reporting nothing.
 * next_cfg: next's configuration (its thread filters).
 */
void aggregator_hand_over(struct aggregator *a, struct aggregator *next,
			  const struct iop_config *next_cfg);

/*
 * Right after the probes attached: the devices idle now get their reference counts against
 * /proc/diskstats (unseen.c), so that completions the programs miss from here on are found at
 * their next idle moment. 0 or -errno.
 */
int aggregator_prime(struct aggregator *a, const struct iop_config *c);

/* Interval sequence numbers: a reload's new aggregator carries on from the old one's. */
uint64_t aggregator_seq(const struct aggregator *a);
void aggregator_set_seq(struct aggregator *a, uint64_t seq);

#endif
