/* stamp_logic.h - what a request's own time stamps and one completion event are worth in the
 * completion-only mode (histogram.mode: completion); shared by the BPF program and the unit
 * tests (pure functions of plain numbers: no kernel types, no maps) */
#ifndef IOPULSE_STAMP_LOGIC_H
#define IOPULSE_STAMP_LOGIC_H

#include "iopulse.h"

/*
 * The request's set-up time (rq->start_time_ns) where the kernel keeps it for this request,
 * else 0. The kernel stamps it for a request its iostats account, which then carries
 * RQF_IO_STAT (io_stat_mask, 0 where the bit is not in BTF: before 6.11, when the kernel
 * wrote 0 into requests it kept no time for, so the value alone tells). From 6.13 it writes
 * the time only into a request it accounts (block/blk-mq.c blk_account_io_start): without
 * the flag the field holds the previous IO's time. The flush machinery's own flush request
 * (flush_rq) is zeroed and stamped anew for every flush (block/blk-flush.c blk_kick_flush,
 * blk_rq_init) and never accounted: its value stands. A time after now is not one.
 */
static inline unsigned long long iop_start_stamp(unsigned long long start, unsigned long long now,
						 unsigned int rq_flags, unsigned int io_stat_mask,
						 int flush_rq)
{
	if (!flush_rq && io_stat_mask && !(rq_flags & io_stat_mask))
		return 0;
	return start <= now ? start : 0;
}

enum iop_dispatch_stamp {
	IOP_DS_OK = 0,        /* stamped between the set-up and now: queue wait and service */
	IOP_DS_NONE = 1,      /* not stamped: blk-stat is off on this queue (no wbt, iolatency, bfq) */
	IOP_DS_CACHED = 2,    /* not after the set-up: one plug's cached clock served both */
};

/*
 * The dispatch time (rq->io_start_time_ns, set by blk_mq_start_request where the queue keeps
 * blk-stat statistics, QUEUE_FLAG_STATS; zeroed when the request is set up) against the
 * set-up time start (nonzero). From 6.9 both come from blk_time_get_ns, which in a task
 * holding a plug returns the clock read first in that plug until the task sleeps (da4c8c3d0975
 * "block: cache current nsec time in struct blk_plug"): a request set up and dispatched in one
 * plug carries the same time twice, and the split between queue wait and service is unknown.
 * Two reads of the clock itself are never equal. A dispatch from another task's plug may
 * carry that plug's earlier time: before the set-up it is refused here, after it the error
 * is the time that task ran in its plug.
 */
static inline enum iop_dispatch_stamp iop_dispatch_stamp(unsigned long long start,
							 unsigned long long io_start,
							 unsigned long long now)
{
	if (!io_start)
		return IOP_DS_NONE;
	if (io_start <= start || io_start > now)
		return IOP_DS_CACHED;
	return IOP_DS_OK;
}

/* What one completion event (block_rq_complete) of a request ends. */
#define IOP_CE_DISPATCH 1u   /* the request's own dispatch: service, queue wait, size, seek */
#define IOP_CE_IO 2u         /* the IO: counted in ios (and errors), total latency */
#define IOP_CE_OWN_TIME 4u   /* its total latency goes to its op (else only to preflush/fua) */

/*
 * The parts of a request one completion of nr_bytes ends, with the rules /proc/diskstats
 * counts by (block/blk-mq.c blk_update_request, block/blk-flush.c):
 * - fewer bytes than the request holds: a partial completion, more follows (bytes only);
 * - a flush request: its dispatch and its IO at once;
 * - the data part of a PREFLUSH/FUA sequence (RQF_FLUSH_SEQ, flush_seq): its dispatch; the
 *   same request ends once more, with no bytes and the flag cleared, when the sequence is
 *   done, and is counted there;
 * - no bytes and the submitter asked for PREFLUSH/FUA (flush_flags): the flush machinery's
 *   end of the IO. The request was dispatched itself (dispatched: its state is not idle) when
 *   it had data, whose time up to here is its own; an empty PREFLUSH never was, and its time
 *   goes to the preflush latency only (as in the full mode);
 * - anything else (data, or a request without data such as a zone reset): all of it.
 */
static inline unsigned int iop_completion_parts(int grp, int flush_seq, unsigned int nr_bytes,
						unsigned int data_len, int flush_flags,
						int dispatched)
{
	if (nr_bytes < data_len)
		return 0;
	if (grp == IOP_OP_FLUSH)
		return IOP_CE_DISPATCH | IOP_CE_IO | IOP_CE_OWN_TIME;
	if (flush_seq)
		return IOP_CE_DISPATCH;
	if (nr_bytes || !flush_flags)
		return IOP_CE_DISPATCH | IOP_CE_IO | IOP_CE_OWN_TIME;
	return IOP_CE_IO | (dispatched ? IOP_CE_OWN_TIME : 0);
}

#endif
