/* handover.h - a reload's cut from the outgoing probes to the incoming ones, attached beside
 * them: open request records, counters at one instant, reference gaps */
#ifndef IOPULSE_HANDOVER_H
#define IOPULSE_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iopulse.h"
#include "probes.h"
#include "reconcile.h"

/* One set of probes at the cut. */
struct handover_side {
	struct probes *probes;
	uint32_t nslots;
	const uint32_t *slot_kdev;     /* kernel dev_t of each slot in use, 0 if none */
	uint64_t *const *slot_data;    /* each slot's counters (probes_slot_data) */
	struct reconcile *refs;        /* its devices' reference gaps (unseen_refs) */
};

/*
 * The cut, at the outgoing set's last collect, after its in-flight sweep: from's open request
 * records are copied into to's (handover_records), then both sets' counters are copied at one
 * instant into mine and theirs (handover_counters), and from's reference gaps move to to,
 * shifted by the two (reconcile_carry). from reports up to the cut, to from it. Returns 0 or
 * -errno.
 */
int handover_cut(const struct handover_side *from, const struct handover_side *to,
		 uint64_t *mine, uint64_t *theirs);

/*
 * Copies the open records of from (nfrom of them) into to (nto), where to has none for the
 * request, with to's slot of the device; returns the number copied, or -ENOMEM.
 *
 * Before the cut, so that both sets hold a record of every IO dispatched before the incoming
 * programs came and count it at the same event whichever side of the cut it falls on: its
 * completion, a dispatch that reuses the request and finds it lost, or (to's alone, after the
 * cut) the sweep. A copy is filled under a key no request has and shown with its dispatch
 * time set, so a completion never finds it half made (one that finds a record without a
 * dispatch time takes the IO as counted already). A copy whose original ended meanwhile is
 * taken back unless to's program took it; its way is freed after grace() (every program run
 * under way has ended): one that found it by its key could otherwise take the dispatch time of
 * another request filled into it.
 */
int handover_records(const struct iop_rq_rec *from, size_t nfrom, struct iop_rq_rec *to,
		     size_t nto, const struct handover_side *to_side, void (*grace)(void));

/*
 * The counters of from and to at one instant, into mine and theirs (nslots x IOP_C_MAX each,
 * every slot's, also one no device held when the side was described: a device's first IO
 * while the cut is made takes a slot then): copies taken old, new, old, new until neither
 * side changed meanwhile. Every completion runs from's program and then to's, so counters
 * that stood still across the four copies count each IO on one side of the cut, but for a
 * completion whose CPU was held between the two programs (an interrupt, the hypervisor) all
 * through the copies: from counted it, to had not yet. After a grace period (grace(): every
 * program run under way has ended), such completions are found in the counters both sets
 * change at a completion (ios, bytes, errors by op) and moved to mine's side of theirs (grace
 * NULL: not looked for). Returns their number, or -ENOMEM; *paused false if IO never paused
 * while the counters were copied (the copies are then microseconds apart).
 */
int handover_counters(const struct handover_side *from, const struct handover_side *to,
		      uint64_t *mine, uint64_t *theirs, void (*grace)(void), bool *paused);

#endif
