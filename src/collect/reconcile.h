/* reconcile.h - the completion-only mode's count of completions the kernel made and the
 * completion tracepoint did not report: per-op gaps to /proc/diskstats while a device is idle */
#ifndef IOPULSE_RECONCILE_H
#define IOPULSE_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iopulse.h"
#include "diskstats.h"

/*
 * The gaps of one device (/proc/diskstats minus our counts: IOs and bytes per op) at its
 * previous idle moments. Our counts only run ahead of the kernel's for a moment (a flush we
 * counted and the kernel had not yet) or while the kernel does not count (iostats off).
 */
struct reconcile_gap {
	bool known;
	int64_t ref[2 * IOP_OP_MAX];      /* the reference gap: ios by op, then bytes by op */
	int64_t lower[2 * IOP_OP_MAX];    /* a smaller gap seen at the last idle moment */
	bool lower_seen[2 * IOP_OP_MAX];
};

/*
 * One idle moment with gaps gap[] (ios by op, then bytes by op): add[] gets what to count
 * now. A gap grown beyond the reference is completions the kernel counted and we did not
 * see: add[i] = the growth (after which the gap is back at the reference). A smaller gap
 * becomes the reference only when the same value is seen at two idle moments in a row (a
 * flush counted here a moment before the kernel counts it must not count twice later). The
 * first idle moment sets the reference and adds nothing.
 */
void reconcile_step(struct reconcile_gap *g, const int64_t gap[2 * IOP_OP_MAX],
		    uint64_t add[2 * IOP_OP_MAX]);

struct reconcile;

/*
 * count: add what the gaps show (the completion-only mode); false keeps the references only,
 * following the gaps (the full mode, whose in-flight sweep counts what the tracepoint missed),
 * for a successor.
 */
int reconcile_new(struct reconcile **out, bool count);
struct reconcile *reconcile_free(struct reconcile *r);

/*
 * Once per interval, with the interval's stamp of the devices (diskstats_stamp): the held
 * devices are kept (those not held are forgotten, and start over when held again); at each
 * one's idle moment, what reconcile_step finds is added to its slot's ios, bytes and unseen
 * counters. Returns the number of IOs added, or -ENOMEM.
 */
int reconcile_run(struct reconcile *r, const struct diskstats_dev *devs, size_t n);

/*
 * A reload: the reference gaps (ios by op, then bytes by op) of device kdev, true when known;
 * and setting one in the successor, whose counters stood at theirs when the predecessor's
 * stood at mine (its reference: the predecessor's + mine - theirs). The successor then
 * counts what the tracepoint misses while the probes change hands, at its next idle moment.
 */
bool reconcile_ref(const struct reconcile *r, uint32_t kdev, int64_t ref[2 * IOP_OP_MAX]);
int reconcile_set_ref(struct reconcile *r, uint32_t kdev, const int64_t ref[2 * IOP_OP_MAX]);

/* One device at a reload's cut: the predecessor's counts minus the successor's (ios by op,
 * then bytes by op). */
struct reconcile_shift {
	uint32_t kdev;
	int64_t d[2 * IOP_OP_MAX];
};

/* Every known reference of from, shifted by its device's entry in shifts (unshifted without
 * one), set in to. 0 or -ENOMEM. */
int reconcile_carry(const struct reconcile *from, struct reconcile *to,
		    const struct reconcile_shift *shifts, size_t n);

#endif
