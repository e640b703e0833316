/* rq_logic.h - decisions about one request, shared by the BPF programs and the unit tests
 * (pure functions of plain numbers: no kernel types, no maps) */
#ifndef IOPULSE_RQ_LOGIC_H
#define IOPULSE_RQ_LOGIC_H

#include "iopulse.h"

/*
 * REQ_OP_* numbers these decisions rely on. WRITE (1), FLUSH (2) and DISCARD (3) have not
 * moved since 4.10; every passthrough op (SCSI_IN/OUT 32/33 before 5.18, DRV_IN/OUT 34/35) is >= 32,
 * while the zone ops moved below 32 over time (include/linux/blk_types.h).
 */
#define IOP_REQ_OP_WRITE 1u
#define IOP_REQ_OP_FLUSH 2u
#define IOP_REQ_OP_DISCARD 3u
#define IOP_REQ_OP_FIRST_PASSTHROUGH 32u

static inline int iop_op_passthrough(unsigned int op)
{
	return op >= IOP_REQ_OP_FIRST_PASSTHROUGH;
}

/*
 * The /proc/diskstats group of an op (block/blk-core.c op_stat_group): only DISCARD is a
 * discard; SECURE_ERASE, WRITE_ZEROES and the zone ops are writes (odd ops write); FLUSH is
 * its own group. A passthrough request (SCSI commands the sd driver or SG_IO sends,
 * virtio-blk's ID request, NVMe passthrough on a namespace) is IO in diskstats only where
 * the kernel accounts it, a read or a write by the op's direction: from 5.5 to 5.17 every
 * one it issues with iostats on, from 6.13 those of a disk with iostats_passthrough set;
 * pt_accounted says whether this one was (the caller knows: the kernel set its rq->part).
 * Otherwise -1: not IO in diskstats.
 */
static inline int iop_op_group(unsigned int op, int pt_accounted)
{
	if (iop_op_passthrough(op))
		return pt_accounted ? ((op & 1) ? IOP_OP_WRITE : IOP_OP_READ) : -1;
	if (op == IOP_REQ_OP_FLUSH)
		return IOP_OP_FLUSH;
	if (op == IOP_REQ_OP_DISCARD)
		return IOP_OP_DISCARD;
	return (op & 1) ? IOP_OP_WRITE : IOP_OP_READ;
}

/* Bytes /proc/diskstats adds for one completion of nr_bytes: whole sectors (bytes >> 9). */
static inline unsigned int iop_stat_bytes(unsigned int nr_bytes)
{
	return nr_bytes & ~511u;
}

/*
 * What identifies one IO across its dispatches: the time its request was set up (kept across
 * requeue and re-dispatch, never re-stamped) and its start sector (moved only by a partial
 * completion, which is followed by a requeue event). A request structure that is dispatched
 * again with another fingerprint carries a new IO.
 */
static inline unsigned long long iop_rq_fingerprint(unsigned long long start_ns,
						    unsigned long long sector)
{
	return start_ns ^ (sector * 0x9E3779B97F4A7C15ull);
}

/*
 * A bio record's second word: the submission time (ns since boot: 62 bits last 146 years) and
 * the two flags of the submitter's bio that matter later, REQ_PREFLUSH and REQ_FUA (their bits
 * move between kernels, so the caller passes its own).
 */
#define IOP_BIO_PREFLUSH (1ull << 63)
#define IOP_BIO_FUA (1ull << 62)
#define IOP_BIO_NS_MASK (IOP_BIO_FUA - 1)

static inline unsigned long long iop_bio_pack(unsigned long long now, unsigned int opf,
					      unsigned int preflush, unsigned int fua)
{
	return (now & IOP_BIO_NS_MASK) | ((opf & preflush) ? IOP_BIO_PREFLUSH : 0) |
	       ((opf & fua) ? IOP_BIO_FUA : 0);
}

/* The submission time of a packed word (0: none) and, in *opf, the flags as the kernel's bits. */
static inline unsigned long long iop_bio_unpack(unsigned long long w, unsigned int *opf,
						unsigned int preflush, unsigned int fua)
{
	*opf = ((w & IOP_BIO_PREFLUSH) ? preflush : 0) | ((w & IOP_BIO_FUA) ? fua : 0);
	return w & IOP_BIO_NS_MASK;
}

/*
 * Key of a bio record: the low 32 bits of the bio's address (a 32-bit copy of a pointer is a
 * number to the verifier) above 32 bits of a hash of the sector the bio starts at. A bio
 * structure is reused as soon as its IO ends, and some bios never take their record (one
 * merged behind another, a stacked device's own): a record left behind must never pass for a
 * later bio at the same address, which starts elsewhere. A split moves its parent's start,
 * and the split's record carries the parent's time (iopulse.bpf.c on_bio_split). Never 0
 * (a free record).
 */
static inline unsigned long long iop_bio_key(unsigned int bio_lo, unsigned long long sector)
{
	unsigned long long k = ((unsigned long long)bio_lo << 32) |
			       ((sector * 0x9E3779B97F4A7C15ull) >> 32);

	return k ? k : 1;
}

/*
 * Ways of a bio record set (keys: each way's key, 0 free) other than way keep that hold key:
 * the ways to free (a bitmask), so that a key is in one way of its set at most. A lookup
 * takes the first way holding its key, while a write takes the first way free or holding it
 * and a split moves its parent's record to the parent's new start in the way it is in: a
 * record an earlier bio left under the same key (address and start sector) in a lower way
 * would be the one found, and a split part or a request would take its stale time (seconds,
 * minutes) and leave the fresh one behind, stale in turn. Writes and moves free the rest.
 */
static inline unsigned int iop_bio_dups(const unsigned long long keys[IOP_WAYS],
					unsigned long long key, int keep)
{
	unsigned int mask = 0;
	int i;

	for (i = 0; i < IOP_WAYS; i++)
		if (i != keep && keys[i] == key)
			mask |= 1u << i;
	return mask;
}

/*
 * The word a split part's record gets: its parent's (the submission time and flags) where
 * the parent's record was found, else 0, no time. The part's record is written either way:
 * a part never falls back to whatever record its key finds (one an earlier bio at this
 * address and sector left), its queue wait is then unknown and counted (drops.no_bio_ts).
 * The parent's new start gets the same word, for its later parts and its own dispatch.
 */
static inline unsigned long long iop_split_word(int parent_found, unsigned long long parent_word)
{
	return parent_found ? parent_word : 0;
}

/*
 * Set of an in-flight record: a hash of the low 32 bits of the kernel pointer that keys it
 * (a 32-bit copy of a pointer is a number); mask is the number of sets - 1 (a power of two).
 */
static inline unsigned int iop_rec_set(unsigned long long ptr, unsigned int mask)
{
	unsigned int lo = (unsigned int)ptr;

	return ((lo >> 4) * 2654435761U >> 8) & mask;
}

/*
 * Seek of a data request starting at sector from the end of the one before it on the device
 * (prev_end, 0 when there was none yet): 0 none, 1 sequential, 2 forward, 3 backward (the
 * IOP_C_SEQ + class - 1 counters); *dist the distance in sectors.
 */
static inline unsigned int iop_seek_class(unsigned long long sector, unsigned long long prev_end,
					  unsigned long long *dist)
{
	*dist = 0;
	if (!prev_end)
		return 0;
	if (sector == prev_end)
		return 1;
	if (sector > prev_end) {
		*dist = sector - prev_end;
		return 2;
	}
	*dist = prev_end - sector;
	return 3;
}

enum iop_redispatch {
	IOP_RD_SAME_IO = 0,   /* requeued, or a driver that started it and returned BUSY */
	IOP_RD_LOST = 1,      /* a new IO: the previous one completed without a completion event */
};

/*
 * A request structure dispatched while our record of its previous dispatch is still open.
 * A requeue event in between, or the same fingerprint, means the same IO goes out again
 * (block/blk-mq.c: a driver's queue_rq may call blk_mq_start_request and then return
 * BLK_STS_RESOURCE/DEV_RESOURCE, SCSI behind a busy HBA does). Only a different IO proves
 * that the previous one completed unseen.
 */
static inline enum iop_redispatch iop_redispatch_kind(int requeued, unsigned long long old_fp,
						      unsigned long long new_fp)
{
	if (requeued || old_fp == new_fp)
		return IOP_RD_SAME_IO;
	return IOP_RD_LOST;
}

/*
 * A completion that finds a record of another IO under its request: the request was set up
 * again since the record's IO (another set-up time), or it completes without ever having
 * been started (an empty PREFLUSH write, which the flush machinery ends undispatched) while
 * the record is not of a requeue (a requeued request is idle again until dispatched), and
 * that IO's completion reached no program. Seen with five disks busy at once under qemu: an
 * empty PREFLUSH write took the record a data write had left in its request a second before
 * as its own dispatch, a service time of a second. The record's IO is counted then
 * (completion_unseen) and the completing IO goes on as one without a record. The set-up time
 * stays the same over a requeue and the parts of a flush sequence; a request completed in
 * parts keeps it too, where its sector moves on (so the fingerprint is not compared here). It
 * is 0 or stale where the kernel stamps no set-up time (iostats off, no scheduler): the
 * never-started test still holds there.
 */
static inline int iop_record_of_other_io(unsigned int rec_start_lo, unsigned long long start_ns,
					 int never_started, int rec_requeued)
{
	return rec_start_lo != (unsigned int)start_ns || (never_started && !rec_requeued);
}

/*
 * Where a dispatch program may miss events (compat.bpf.h 10), spares run after it on the
 * same tracepoint and do the same work only for the dispatches the programs before them
 * missed. A program that recorded the dispatch leaves a published record of this IO (same
 * fingerprint, no requeue since): then a spare has nothing to do. Anything else (no record,
 * a record of another IO, or of this IO before a requeue) is a dispatch not yet recorded,
 * or one whose record set was full (a spare that finds it full too leaves it uncounted: the
 * first program counted it). The one case taken wrongly for done: the first misses the
 * re-dispatch of an IO whose requeue event was missed as well; that IO keeps its first
 * dispatch time (its service time then includes the wait).
 */
static inline int iop_spare_dispatch_done(int has_record, int published, int requeued,
					  unsigned long long old_fp, unsigned long long new_fp)
{
	return has_record && published && !requeued && old_fp == new_fp;
}

/*
 * A bio event (block_bio_queue, block_split) cannot be told handled from a record: one for the
 * same bio address and start sector may be left behind by an earlier bio (iop_bio_key), with
 * its time. The programs of such a chain (the first at pos 0, then spares 1..spares) keep a
 * mark in the submitting task's storage instead: the program that handles the event leaves
 * its bio key there, a spare that finds the key of its own event leaves the event alone, and
 * the last clears the mark (iop_mark_after). The programs of a chain run one after the other
 * in the task that fired the tracepoint, on one CPU, and other tasks keep marks of their own,
 * so only an interrupt that fires the same tracepoint between two of them comes in between:
 * its chain leaves the mark cleared or its own, and the rest of the interrupted chain
 * handles its event again (the record written twice, a moment apart). A mark left behind
 * (the last spare skipped) can pass only for the task's next event of the same bio address
 * and sector, and only if the first program skips that one too.
 */
static inline int iop_mark_done(int pos, int has_mark, unsigned long long mark,
				unsigned long long key)
{
	return pos > 0 && has_mark && mark == key;
}

/* The mark the program at pos leaves after handling, or finding handled, the event of key. */
static inline unsigned long long iop_mark_after(int pos, int spares, unsigned long long key)
{
	return pos >= spares ? 0 : key;
}

/*
 * block_rq_complete fires where the driver completes a request: in a hardirq, a softirq or a
 * task (a loop device's worker, a threaded interrupt, a polled queue). An interrupt that
 * completes another request on the CPU while the completion program runs there finds the
 * program busy, and the kernel skips it for that event (its recursion_misses), on every
 * kernel: with five disks busy at once under qemu, 61 completions in 3 minutes. Such an IO
 * was counted only when the in-flight sweep retired its record (completion_unseen). So two
 * spares follow the first completion program on every kernel (as the dispatch's do from 7.0,
 * compat.bpf.h 10). A spare completes only an IO the programs before it left whole: a
 * request completed whole (not a part, not the data part of a flush sequence, which end once
 * more) whose record is of this IO and still open (closing a record is a compare-and-swap of
 * its dispatch time, take_ownership, so no two programs count one IO), or an empty PREFLUSH
 * write, never dispatched and so without a record, whose bio's record is still there (the
 * program that completes it takes that record: seen lost once in 20,000 completions of five
 * disks at once under qemu before). A completion with neither that the first was skipped for
 * (a dispatch not recorded, a part, the request mode's PREFLUSH writes) stays lost, and
 * counted in missed_events.
 */
static inline int iop_spare_completes(int whole, int flush_seq_data, int has_record,
				      int other_io, int open, int never_started,
				      int preflush_bio_open)
{
	if (!has_record)
		return never_started && preflush_bio_open;
	return whole && !flush_seq_data && !other_io && open;
}

/*
 * Events of a chain that no program handled, cumulative. An event is lost when every program
 * of the chain was skipped; each one the first skipped is handled by one spare (counted in
 * IOP_G_SPARE_*) or lost, so lost = the first program's recursion_misses - made_good. Read
 * the misses first and made_good after: a miss whose spare is still to run at the first read
 * is then mostly made good by the second. Never below what was reported before (the daemon
 * reports deltas), so a miss caught between the two reads stays counted: an upper bound by
 * at most the events under way at a read.
 */
static inline unsigned long long iop_chain_lost(unsigned long long reported,
						unsigned long long first_missed,
						unsigned long long made_good)
{
	unsigned long long lost = first_missed > made_good ? first_missed - made_good : 0;

	return lost > reported ? lost : reported;
}

#endif
