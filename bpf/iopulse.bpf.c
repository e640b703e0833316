// SPDX-License-Identifier: GPL-2.0
/* iopulse.bpf.c - in-kernel aggregation of block IO latency, seek, size, flush and sync */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "iopulse.h"
#include "hist_math.h"
#include "compat.bpf.h"
#include "rq_logic.h"
#include "stamp_logic.h"

/* ---- load-time settings (written by src/collect/probes.c before load) ---- */
const volatile unsigned int hist_k = IOP_HIST_K_DEFAULT;
const volatile unsigned int hist_nb = IOP_HIST_NBUCKETS(IOP_HIST_K_DEFAULT);
const volatile unsigned int slot_u64s = IOP_C_MAX + IOP_H_MAX * IOP_HIST_NBUCKETS(IOP_HIST_K_DEFAULT);
const volatile unsigned int sync_u64s = sizeof(struct iop_sync_val) / 8 +
					 IOP_SYNC_MAX * IOP_HIST_NBUCKETS(IOP_HIST_K_DEFAULT);
const volatile bool rollup_partitions = true;
const volatile unsigned int rq_issue_arg = 0;  /* index of struct request * (see compat.bpf.h) */
const volatile unsigned int bio_queue_arg = 0; /* index of struct bio * (see compat.bpf.h) */
const volatile unsigned int split_arg = 0;     /* the same for block_split */
const volatile unsigned int rec_set_mask = IOP_MAX_INFLIGHT_DEFAULT / IOP_WAYS - 1;
/*
 * Queue wait from each bio's submission (block_bio_queue: exact, tag and plug waits included),
 * or, false, from the request's set-up (the kernel's start_time_ns): no clock read or record
 * per bio, the bio program then only counts flush bios inside sync calls.
 */
const volatile bool bio_records = true;
/* Sync tracking loaded (its maps exist): the bio program counts flush bios inside sync calls. */
const volatile bool sync_on = true;
/* Request records kept (false in the completion-only mode: its one program keeps none). */
const volatile bool rq_records = true;
/*
 * Spare programs after the first on block_rq_issue, and on block_bio_queue and block_split,
 * where tracepoint programs run preemptible (compat.bpf.h 10): 0 (none), 1 or 2 each. The
 * bio chains keep marks in task storage (spare_marks), so they have spares only where the
 * kernel has it.
 */
const volatile unsigned int rq_spares = 0;
const volatile unsigned int bio_spares = 0;
/*
 * Tests only (IOPULSE_TEST_SKIP_COMPLETIONS, probes.c): the full mode's tp_btf completion
 * programs return at once for about one whole completion in this many, the same one in each
 * (chosen from the request's set-up time), as if the tracepoint had reached none of them;
 * 0: never.
 */
const volatile unsigned int test_skip_completions = 0;

/* ---- maps ---- */

/* One value per device slot: IOP_C_MAX counters then IOP_H_MAX histograms; sized at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(u32));
	__uint(value_size, 8);
	__uint(max_entries, IOP_MAX_DEVICES_DEFAULT);
} dev_data SEC(".maps");

/* Kernel dev_t -> slot. Slots come from free_slots; the daemon returns retired ones. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u32);
	__type(value, u32);
	__uint(max_entries, IOP_MAX_DEVICES_DEFAULT);
} dev_slots SEC(".maps");

/* Direct-mapped cache in front of dev_slots (an array lookup is inlined, a hash lookup is not). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct iop_dev_cache);
	__uint(max_entries, IOP_DEV_CACHE);
} dev_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(value_size, sizeof(u32));
	__uint(max_entries, IOP_MAX_DEVICES_DEFAULT);
} free_slots SEC(".maps");

/*
 * In-flight records (iopulse.h): sets of IOP_WAYS, count set by the loader (power of two).
 * Mappable maps are page-aligned, so each set is whole cache lines (an array's values start
 * 312 bytes into its header on 6.18: a set there spans one line more).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, u32);
	__type(value, struct iop_bio_set);
	__uint(max_entries, IOP_MAX_INFLIGHT_DEFAULT / IOP_WAYS);
} bio_recs SEC(".maps");

/* Mappable: the daemon retires records whose completion the kernel never reported. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, u32);
	__type(value, struct iop_rq_set);
	__uint(max_entries, IOP_MAX_INFLIGHT_DEFAULT / IOP_WAYS);
} rq_recs SEC(".maps");

/* A sync call in progress, in the calling thread's task storage (ts 0: none). */
struct sync_start {
	u64 ts;
	u64 flush_bios;
	u32 dev;
	u32 kind;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sync_start);
} sync_start SEC(".maps");

/*
 * The bio event a program of the block_bio_queue chain, and of the block_split chain, last
 * handled in this task (bio keys, 0: none; rq_logic.h iop_mark_done). Created only with
 * bio_spares.
 */
struct spare_mark {
	u64 bio;
	u64 split;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct spare_mark);
} spare_marks SEC(".maps");

/*
 * Per (tgid, tid, dev): struct iop_sync_val then the latency buckets; value size set at load.
 * A plain hash, not an LRU: the kernel never recycles an entry under a thread that is adding
 * to it (elements are freed after an RCU grace period), and the daemon removes the entries of
 * threads that have exited, and idle entries of live threads when the unwatched share is full
 * (src/collect/threads.c, under the thread's stripe: iopulse.h iop_sync_ctl). A full table is
 * counted, never silently dropped.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct iop_sync_key));
	__uint(value_size, 8);
	__uint(max_entries, IOP_MAX_THREADS_DEFAULT);
} sync_table SEC(".maps");

/* Names whose threads may take the sync table's reserved room (iopulse.h iop_watch_key). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct iop_watch_key);
	__type(value, u32);
	__uint(max_entries, IOP_SYNC_WATCH_MAX);
} sync_watch SEC(".maps");

/* All-zero template for new sync_table values (never written). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, 8);
	__uint(max_entries, 1);
} sync_zero SEC(".maps");

__u64 globals[IOP_G_MAX] = {};
/* The sync table's room, shared with the daemon (iopulse.h). */
struct iop_sync_ctl sync_ctl = {};

/* ---- helpers ---- */

static __always_inline void global_inc(unsigned int id)
{
	if (id < IOP_G_MAX)
		__sync_fetch_and_add(&globals[id], 1);
}

static __always_inline u32 *dev_slot_slow(u32 kdev)
{
	u32 *slot = bpf_map_lookup_elem(&dev_slots, &kdev);
	u32 fresh;

	if (slot)
		return slot;
	if (bpf_map_pop_elem(&free_slots, &fresh)) {
		global_inc(IOP_G_NO_SLOT);
		return 0;
	}
	if (bpf_map_update_elem(&dev_slots, &kdev, &fresh, BPF_NOEXIST))
		bpf_map_push_elem(&free_slots, &fresh, 0);
	return bpf_map_lookup_elem(&dev_slots, &kdev);
}

/* Slot of a device, or -1: cache hit, else the hash map (assigning a slot on first sight). */
static __always_inline int dev_slot(u32 kdev)
{
	u32 idx = (kdev * 2654435761U >> 16) & (IOP_DEV_CACHE - 1);
	struct iop_dev_cache *c = bpf_map_lookup_elem(&dev_cache, &idx);
	u32 *slot, s1;
	u64 w;

	if (c) {
		w = *(volatile u64 *)&c->word;
		s1 = IOP_DEV_CACHE_SLOT1(w);
		if (IOP_DEV_CACHE_KDEV(w) == kdev && s1)
			return (int)(s1 - 1);
	}
	slot = dev_slot_slow(kdev);
	if (!slot)
		return -1;
	s1 = *slot + 1;
	if (c)
		*(volatile u64 *)&c->word = (u64)s1 << 32 | kdev;
	return (int)(s1 - 1);
}

static __always_inline u64 *slot_data(u32 slot)
{
	return bpf_map_lookup_elem(&dev_data, &slot);
}

static __always_inline void cnt_add(u64 *base, unsigned int id, u64 v)
{
	if (id < IOP_C_MAX)
		__sync_fetch_and_add(&base[id], v);
}

static __always_inline void hist_add(u64 *base, unsigned int h, u64 v)
{
	u64 off = IOP_C_MAX + (u64)h * hist_nb + iop_hist_index(v, hist_k);

	if (off < slot_u64s)
		__sync_fetch_and_add(&base[off], 1);
}

/* Fields of a request read once per event. */
struct rq_view {
	u64 rq;
	u64 bio;
	u64 sector;
	u64 start_ns;
	u32 kdev;
	u32 cmd_flags;
	u32 rq_flags;
	u32 data_len;
	u32 pt_accounted;   /* a passthrough request the kernel's iostats count */
	u64 io_start_ns;    /* completion-only mode: the kernel's dispatch stamp (rq_read_*_stamps) */
	u32 bio_opf;        /* completion-only mode, writes: the first bio's flags */
	u32 never_started;  /* at completion: blk_mq_start_request never ran for this IO */
};

/* diskstats group of a request (rq_logic.h), -1 for passthrough the kernel does not count */
static __always_inline int op_group(const struct rq_view *v)
{
	return iop_op_group(v->cmd_flags & IOP_REQ_OP_MASK, v->pt_accounted);
}

/*
 * Whether the kernel's iostats count a passthrough request: it set rq->part when it started
 * accounting it (blk_account_io_start; cleared when the request is set up), which it does for
 * passthrough only where it counts passthrough (5.5-5.17; 6.13+ per disk). From 6.11 the
 * request also carries RQF_IO_STAT only when counted.
 */
static __always_inline u32 pt_accounted(u32 rq_flags, const void *part)
{
	unsigned int io_stat = iop_rqf_io_stat();

	if (!part)
		return 0;
	return !io_stat || (rq_flags & io_stat);
}

/* tp_btf: the request is a trusted BTF pointer, so plain loads (CO-RE relocated) are enough. */
static __always_inline void rq_read_btf(struct request *rq, u64 rq_addr, struct rq_view *v)
{
	struct request___pre517 *old = (void *)rq;
	struct gendisk *disk;
	struct block_device *part;

	if (bpf_core_field_exists(old->rq_disk))
		disk = old->rq_disk;
	else
		disk = rq->q->disk;
	v->rq = rq_addr;
	v->bio = (u64)rq->bio;
	v->sector = rq->__sector;
	v->start_ns = rq->start_time_ns;
	v->cmd_flags = rq->cmd_flags;
	v->rq_flags = rq->rq_flags;
	v->data_len = rq->__data_len;
	v->kdev = 0;
	v->pt_accounted = 0;
	if (iop_op_passthrough(v->cmd_flags & IOP_REQ_OP_MASK))
		v->pt_accounted = pt_accounted(v->rq_flags, rq->part);
	if (!rollup_partitions) {
		/* rq->part is only set when the disk keeps iostats; the bio knows its partition */
		part = rq->part;
		if (!part && rq->bio && bpf_core_field_exists(rq->bio->bi_bdev))
			part = rq->bio->bi_bdev;
		if (part)
			v->kdev = part->bd_dev;
	}
	if (!v->kdev && disk)
		v->kdev = ((u32)disk->major << IOP_KDEV_MINORBITS) | (u32)disk->first_minor;
}

/* raw_tp: untrusted pointers, read through bpf_probe_read_kernel. */
static __always_inline void rq_read_core(struct request *rq, struct rq_view *v)
{
	struct gendisk *disk = iop_rq_disk(rq);
	struct block_device *part;

	v->rq = (u64)rq;
	v->bio = (u64)BPF_CORE_READ(rq, bio);
	v->sector = BPF_CORE_READ(rq, __sector);
	v->start_ns = BPF_CORE_READ(rq, start_time_ns);
	v->cmd_flags = BPF_CORE_READ(rq, cmd_flags);
	v->rq_flags = BPF_CORE_READ(rq, rq_flags);
	v->data_len = BPF_CORE_READ(rq, __data_len);
	v->kdev = 0;
	v->pt_accounted = 0;
	if (iop_op_passthrough(v->cmd_flags & IOP_REQ_OP_MASK))
		v->pt_accounted = pt_accounted(v->rq_flags, BPF_CORE_READ(rq, part));
	if (!rollup_partitions) {
		part = BPF_CORE_READ(rq, part);
		if (!part && bpf_core_field_exists(rq->bio->bi_bdev))
			part = BPF_CORE_READ(rq, bio, bi_bdev);
		if (part)
			v->kdev = BPF_CORE_READ(part, bd_dev);
	}
	if (!v->kdev && disk)
		v->kdev = ((u32)BPF_CORE_READ(disk, major) << IOP_KDEV_MINORBITS) |
			  (u32)BPF_CORE_READ(disk, first_minor);
}

/*
 * The request's set-up time as the kernel's iostats keep it (start_time_ns), 0 where it is not
 * kept for this request (iostats off: RQF_IO_STAT unset) or not yet in the past.
 */
static __always_inline u64 rq_start_ns(const struct rq_view *v, u64 now)
{
	unsigned int io_stat = iop_rqf_io_stat();

	if (io_stat && !(v->rq_flags & io_stat))
		return 0;
	return v->start_ns <= now ? v->start_ns : 0;
}

/*
 * The low 32 bits of a kernel pointer as a number: a 32-bit move, written in asm so that the
 * compiler cannot fold it into a shift of the pointer itself (the verifier refuses arithmetic
 * on a trusted pointer).
 */
static __always_inline u32 ptr_lo(u64 ptr)
{
	u32 lo;

	asm volatile("%0 = %1" : "=w"(lo) : "w"((u32)ptr));
	return lo;
}

/* Key of bio's record, starting at sector (rq_logic.h). */
static __always_inline u64 bio_key(u64 bio, u64 sector)
{
	return iop_bio_key(ptr_lo(bio), sector);
}

/* Set index from the low 32 bits of an address (a 32-bit copy of a pointer is a number). */
static __always_inline u32 rec_set(u64 ptr)
{
	return iop_rec_set(ptr_lo(ptr), rec_set_mask);
}

/*
 * Argument 0 or 1 of a tracepoint (its layout differs between kernels: compat.bpf.h 1). Each
 * read has its own constant offset, in its own branch, which the verifier drops where the
 * load-time setting rules it out: it refuses a context pointer moved by a computed offset
 * (5.10: "dereference of modified ctx ptr"), and a raw_tp program that reads past the
 * tracepoint's arguments does not attach. The loads are written in asm: the compiler would
 * otherwise make them one load from a selected address.
 */
static __always_inline u64 tp_arg01(u64 *args, bool second)
{
	u64 v;

	if (second)
		asm volatile("%0 = *(u64 *)(%1 + 8)" : "=r"(v) : "r"(args));
	else
		asm volatile("%0 = *(u64 *)(%1 + 0)" : "=r"(v) : "r"(args));
	return v;
}

/* ---- block layer ---- */

/* Frees the ways of set that hold key but keep (rq_logic.h iop_bio_dups). */
static __always_inline void drop_dups(struct iop_bio_set *set, u64 key, int keep)
{
	unsigned long long keys[IOP_WAYS];
	unsigned int dups;
	int i;

#pragma unroll
	for (i = 0; i < IOP_WAYS; i++)
		keys[i] = set->w[i].key;
	dups = iop_bio_dups(keys, key, keep);
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++)
		if (dups & (1u << i))
			iop_cmpxchg(&set->w[i].key, key, 0);
}

/*
 * Writes a bio record: key (iop_bio_key) in the set of bio's address, word its packed time and
 * flags; a full set gives up its oldest record. The key's record is the only one in its set
 * afterwards: one of an earlier bio with the same key is taken over, a second freed.
 */
static __always_inline void put_bio(u64 bio, u64 key, u64 word)
{
	struct iop_bio_set *set;
	struct iop_bio_rec *r = 0;
	u64 oldest = ~0ULL;
	u32 idx = rec_set(bio), victim = 0;
	int i, at = IOP_WAYS;

	set = bpf_map_lookup_elem(&bio_recs, &idx);
	if (!set)
		return;
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++) {
		u64 k = set->w[i].key;

		if ((k == 0 && iop_cmpxchg(&set->w[i].key, 0, key) == 0) || k == key) {
			r = &set->w[i];
			at = i;
			break;
		}
		if ((set->w[i].q_flags & IOP_BIO_NS_MASK) < oldest) {
			oldest = set->w[i].q_flags & IOP_BIO_NS_MASK;
			victim = i;
		}
	}
	if (!r) {
		global_inc(IOP_G_BIO_EVICT);
		at = victim & (IOP_WAYS - 1);
		r = &set->w[at];
		r->key = key;
	}
	r->q_flags = word;
	drop_dups(set, key, at);
}

static __always_inline int on_bio_queue(u64 bio, u32 opf, u64 sector)
{
	struct sync_start *s;

	if (bio_records)
		put_bio(bio, bio_key(bio, sector),
			iop_bio_pack(bpf_ktime_get_ns(), opf, iop_req_preflush(), iop_req_fua()));
	/* flushes sent to disks from inside a sync call (a stacked device's own bio is not) */
	if (sync_on && (opf & iop_req_preflush())) {
		s = bpf_task_storage_get(&sync_start, bpf_get_current_task_btf(), 0, 0);
		if (s && s->ts && iop_bio_to_disk((struct bio *)bio))
			s->flush_bios++;
	}
	return 0;
}

/* The bio record keyed key in the set of bio's address, or NULL. */
static __always_inline struct iop_bio_rec *find_bio(u64 bio, u64 key)
{
	struct iop_bio_set *set;
	u32 idx = rec_set(bio);
	int i;

	set = bpf_map_lookup_elem(&bio_recs, &idx);
	if (!set)
		return 0;
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++)
		if (set->w[i].key == key)
			return &set->w[i];
	return 0;
}

/*
 * A bio split in two (block/blk-merge.c): split, the front part, is a new bio that never
 * passes block_bio_queue, chained to parent (split->bi_private) before the tracepoint; parent
 * goes on with the rest and now starts at parent_sector. The part was submitted when its
 * parent was: it gets the parent's time and flags, and the parent's record moves to its new
 * start (a record an earlier bio left under that key is freed: rq_logic.h iop_bio_dups). A
 * parent with no record (not seen submitted, evicted, or a stacked driver's own split whose
 * bi_private is no bio) gives the part a record with no time, and its own new start one too
 * (iop_split_word): their queue wait is then unknown, counted as such at dispatch, never
 * taken from a record another bio left under the same key.
 */
static __always_inline int on_bio_split(u64 split, u64 split_sector, u64 parent,
					u64 parent_sector)
{
	struct iop_bio_set *set;
	u64 w = 0, key, moved;
	u32 idx;
	int i, at = IOP_WAYS;

	if (!bio_records || !parent)
		return 0;
	idx = rec_set(parent);
	set = bpf_map_lookup_elem(&bio_recs, &idx);
	if (!set)
		return 0;
	key = bio_key(parent, split_sector);
	moved = bio_key(parent, parent_sector);
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++)
		if (at == IOP_WAYS && set->w[i].key == key)
			at = i;
	if (at < IOP_WAYS) {
		w = iop_split_word(1, set->w[at & (IOP_WAYS - 1)].q_flags);
		set->w[at & (IOP_WAYS - 1)].key = moved;
		drop_dups(set, moved, at);
	} else {
		w = iop_split_word(0, 0);
		put_bio(parent, moved, w);
	}
	put_bio(split, bio_key(split, split_sector), w);
	return 0;
}

/*
 * The program at pos (0 the first, 1.. the spares) of a bio chain (compat.bpf.h 10): the
 * event's mark in this task (rq_logic.h iop_mark_done), or NULL where the chain has no spares
 * or the task has no storage (then every program handles the event).
 */
static __always_inline struct spare_mark *mark_of_task(const int pos)
{
	if (!bio_spares)
		return 0;
	return bpf_task_storage_get(&spare_marks, bpf_get_current_task_btf(), 0,
				    pos ? 0 : BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline int bio_queue_at(u64 bio, u32 opf, u64 sector, const int pos)
{
	struct spare_mark *m = mark_of_task(pos);
	u64 key = bio_key(bio, sector);
	bool done = iop_mark_done(pos, m != 0, m ? m->bio : 0, key);

	if (!done) {
		on_bio_queue(bio, opf, sector);
		if (pos)
			global_inc(IOP_G_SPARE_BIO);
	}
	if (m)
		m->bio = iop_mark_after(pos, bio_spares, key);
	return 0;
}

static __always_inline int bio_split_at(u64 split, u64 split_sector, u64 parent,
					u64 parent_sector, const int pos)
{
	struct spare_mark *m = mark_of_task(pos);
	u64 key = bio_key(split, split_sector);
	bool done = iop_mark_done(pos, m != 0, m ? m->split : 0, key);

	if (!done) {
		on_bio_split(split, split_sector, parent, parent_sector);
		if (pos)
			global_inc(IOP_G_SPARE_SPLIT);
	}
	if (m)
		m->split = iop_mark_after(pos, bio_spares, key);
	return 0;
}

/* Takes the submission record of bio starting at sector (0 q_ns if none). */
static __always_inline u64 take_bio(u64 bio, u64 sector, u32 *opf)
{
	struct iop_bio_rec *r = find_bio(bio, bio_key(bio, sector));
	u64 q;

	if (!r)
		return 0;
	q = iop_bio_unpack(r->q_flags, opf, iop_req_preflush(), iop_req_fua());
	r->key = 0;
	return q;
}

static __always_inline struct iop_rq_rec *find_rq(u64 rq)
{
	struct iop_rq_set *set;
	u32 idx = rec_set(rq);
	int i;

	set = bpf_map_lookup_elem(&rq_recs, &idx);
	if (!set)
		return 0;
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++)
		if (set->w[i].key == rq)
			return &set->w[i];
	return 0;
}

/* count_full: count a full set in IOP_G_INFLIGHT_FULL (not in a spare: on_rq_issue) */
static __always_inline struct iop_rq_rec *claim_rq(u64 rq, bool *reissue, const bool count_full)
{
	struct iop_rq_set *set;
	u32 idx = rec_set(rq);
	int i;

	*reissue = false;
	set = bpf_map_lookup_elem(&rq_recs, &idx);
	if (!set)
		return 0;
	/*
	 * The request's own record first, wherever it is in the set: a way before it freed since
	 * it was claimed must not take a second record of the same request. That happened on a
	 * requeue (a SATA disk deferring writes behind its flushes, 5.10 and 7.3 under qemu): the
	 * dispatch after it took a new record with no submission time, the first stayed open, and
	 * once the completion had closed the new one a spare found the first and counted the
	 * write again (one write more than /proc/diskstats in the full and request modes).
	 */
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++) {
		if (set->w[i].key == rq) {
			*reissue = true;
			return &set->w[i];
		}
	}
#pragma unroll
	for (i = 0; i < IOP_WAYS; i++) {
		if (set->w[i].key == 0 && iop_cmpxchg(&set->w[i].key, 0, rq) == 0)
			return &set->w[i];
	}
	/* full: what the set holds stays (the oldest are the slow IOs of the tail) */
	if (count_full)
		global_inc(IOP_G_INFLIGHT_FULL);
	return 0;
}

/*
 * d_ns is the ownership token of a record's IO: the completion, a dispatch that finds the
 * record of a lost completion, and the daemon's sweep (src/collect/inflight.c) each swap it to 0
 * before they count, so exactly one of them counts the IO.
 */
static __always_inline u64 take_ownership(struct iop_rq_rec *r)
{
	u64 d = r->d_ns;

	if (!d || iop_cmpxchg(&r->d_ns, d, 0) != d)
		return 0;
	return d;
}

/*
 * The request structure carries a new IO while our record of its previous one is open: that
 * IO completed without the completion tracepoint reaching any program (measured on a virtio
 * disk under queue depth 32 with fsyncs: 3 to 10 per 10^4, identical for tp_btf and classic
 * tracepoint programs). Count it now, once, without a latency sample.
 */
static __always_inline void count_unseen(struct iop_rq_rec *r)
{
	unsigned int grp = r->grp;
	u64 *base;
	int slot;

	if (!take_ownership(r) || grp >= IOP_OP_MAX)
		return;
	slot = dev_slot(r->kdev);
	if (slot < 0)
		return;
	base = slot_data(slot);
	if (!base)
		return;
	cnt_add(base, IOP_C_IOS + grp, 1);
	if (grp != IOP_OP_FLUSH)
		cnt_add(base, IOP_C_BYTES + grp, r->bytes);
	cnt_add(base, IOP_C_UNSEEN + grp, 1);
}

/*
 * Whether a program before this spare recorded the dispatch of request rq, which holds the IO
 * set up at start_ns starting at sector (rq_logic.h iop_spare_dispatch_done). Asked before
 * the rest of the request is read: that is all a spare does for a dispatch already recorded.
 */
static __always_inline bool rq_spare_done(u64 rq, u64 start_ns, u64 sector)
{
	struct iop_rq_rec *r = find_rq(rq);

	return r && iop_spare_dispatch_done(1, *(volatile u64 *)&r->d_ns != 0, r->requeued,
					    r->fp, iop_rq_fingerprint(start_ns, sector));
}

/*
 * Whether a spare on block_rq_complete completes the request v holds (rq_logic.h
 * iop_spare_completes): its record of this IO, or the bio record of the empty PREFLUSH write
 * it is, is still open, the programs before it skipped.
 */
static __always_inline bool rq_spare_completes(struct rq_view *v, unsigned int nr_bytes)
{
	struct iop_rq_rec *r = find_rq(v->rq);
	int grp = op_group(v);
	bool bio_open = !r && bio_records && v->bio && !v->data_len &&
			find_bio(v->bio, bio_key(v->bio, v->sector));

	return iop_spare_completes(nr_bytes >= v->data_len,
				   (v->rq_flags & iop_rqf_flush_seq()) && grp != IOP_OP_FLUSH,
				   r != 0, r && iop_record_of_other_io(r->start_lo, v->start_ns,
								       v->never_started,
								       r->requeued),
				   r && *(volatile u64 *)&r->d_ns != 0, v->never_started, bio_open);
}

/*
 * pos: 0 the first program on the tracepoint, 1.. a spare after it (compat.bpf.h 10), called
 * only for the dispatches the ones before it did not record (rq_spare_done).
 */
static __always_inline int on_rq_issue(struct rq_view *v, const int pos)
{
	struct iop_rq_rec *r;
	u64 now = bpf_ktime_get_ns(), end, prev, q = 0;
	u32 opf = v->cmd_flags;
	u64 *base, fp;
	int grp, slot;
	bool reissue, bio_q;

	grp = op_group(v);
	if (grp < 0)
		return 0;     /* passthrough the kernel does not count: not IO in diskstats */
	fp = iop_rq_fingerprint(v->start_ns, v->sector);
	r = claim_rq(v->rq, &reissue, !pos);
	if (pos) {
		/*
		 * A full set: if the first program ran, it found it full too and counted it (and
		 * took the bio's record); if not, the chain lost the dispatch (iop_chain_lost).
		 */
		if (!r)
			return 0;
		global_inc(IOP_G_SPARE_RQ);   /* rq_spare_done found it not recorded */
	}
	bio_q = bio_records && v->bio && !v->pt_accounted;
	if (bio_q)
		q = take_bio(v->bio, v->sector, &opf);
	if (r && reissue) {
		if (iop_redispatch_kind(r->requeued, r->fp, fp) == IOP_RD_LOST)
			count_unseen(r);
		else if (!q && r->q_ns)
			q = r->q_ns;  /* the same IO again: keep its first submission time */
	}
	/*
	 * Queue wait from the bio's submission where it is kept; a data request whose bio has no
	 * record has no proven submission time (counted, no queue wait or total for it); a
	 * request with no bio (a flush) or the request mode uses the request's set-up.
	 */
	if (!q && bio_q)
		global_inc(IOP_G_NO_BIO_TS);
	else if (!q)
		q = rq_start_ns(v, now);
	slot = dev_slot(v->kdev);
	if (r) {
		r->q_ns = q;
		r->bytes = iop_stat_bytes(v->data_len);
		r->opf = opf;
		r->seek_class = 0;
		r->timed = 0;
		r->requeued = 0;
		r->grp = (u8)grp;
		r->flush_seq = grp == IOP_OP_FLUSH || (v->rq_flags & iop_rqf_flush_seq());
		r->kdev = v->kdev;
		r->fp = fp;
		r->start_lo = (u32)v->start_ns;
		r->slot = (u16)(slot + 1);
		iop_publish(&r->d_ns, now);   /* publishes the record to the sweep */
	}
	if (slot < 0 || !r)
		return 0;
	if ((grp != IOP_OP_READ && grp != IOP_OP_WRITE) || v->pt_accounted)
		return 0;   /* no position: a passthrough command's sector means nothing */
	base = slot_data(slot);
	if (!base)
		return 0;
	end = v->sector + (v->data_len >> 9);
	prev = iop_xchg(&base[IOP_C_PREV_END], end);
	if (!prev)
		return 0;   /* first dispatch seen on this device */
	if (v->sector == prev) {
		r->seek_class = 1;
		r->seek = 0;
	} else if (v->sector > prev) {
		r->seek_class = 2;
		r->seek = v->sector - prev;
	} else {
		r->seek_class = 3;
		r->seek = prev - v->sector;
	}
	return 0;
}

static __always_inline void record_timing(u64 *base, struct iop_rq_rec *r, unsigned int grp,
					  u64 d, u64 now)
{
	if (r->q_ns && r->q_ns <= d)
		hist_add(base, IOP_H_QUEUE + grp, d - r->q_ns);
	else
		cnt_add(base, IOP_C_NOQUEUE + grp, 1);
	if (d <= now)
		hist_add(base, IOP_H_SERVICE + grp, now - d);
	hist_add(base, IOP_H_SIZE + grp, r->bytes);
	if (r->seek_class) {
		cnt_add(base, IOP_C_SEQ + r->seek_class - 1, 1);
		hist_add(base, IOP_H_SEEK, r->seek);
	}
	r->timed = 1;
}

static __always_inline void record_flags(u64 *base, u32 opf, u64 q, u64 now)
{
	if (opf & iop_req_preflush()) {
		cnt_add(base, IOP_C_PREFLUSH, 1);
		hist_add(base, IOP_H_PREFLUSH_LAT, now - q);
	}
	if (opf & iop_req_fua()) {
		cnt_add(base, IOP_C_FUA, 1);
		hist_add(base, IOP_H_FUA_LAT, now - q);
	}
}

/*
 * A whole completion at now of the IO record r holds, its dispatch time d taken
 * (take_ownership): counted, timed if not yet, its total and flags, the record closed.
 */
static __always_inline void close_record(u64 *base, struct iop_rq_rec *r, int grp, u64 d,
					 u64 now)
{
	if (!r->timed)
		record_timing(base, r, grp, d, now);
	cnt_add(base, IOP_C_IOS + grp, 1);
	if (r->q_ns && r->q_ns <= now) {
		if (grp != IOP_OP_FLUSH)
			record_flags(base, r->opf, r->q_ns, now);
		hist_add(base, IOP_H_TOTAL + grp, now - r->q_ns);
	}
	r->key = 0;
}

static __always_inline int on_rq_complete(struct rq_view *v, int error, unsigned int nr_bytes)
{
	struct iop_rq_rec *r;
	u64 now = bpf_ktime_get_ns(), *base, q, d;
	u32 opf = v->cmd_flags;
	int slot, grp = op_group(v);

	if (grp < 0)
		return 0;     /* passthrough the kernel does not count: not IO in diskstats */
	/* the device's slot now, not the one at dispatch: a released slot may serve another disk */
	slot = dev_slot(v->kdev);
	if (slot < 0)
		return 0;
	base = slot_data(slot);
	if (!base)
		return 0;
	if (nr_bytes < v->data_len) {
		/* partial completion: more of this request follows */
		if (grp != IOP_OP_FLUSH)
			cnt_add(base, IOP_C_BYTES + grp, iop_stat_bytes(nr_bytes));
		return 0;
	}
	r = find_rq(v->rq);
	if (r && iop_record_of_other_io(r->start_lo, v->start_ns, v->never_started,
					 r->requeued)) {
		count_unseen(r);   /* the request's previous IO, its completion unseen */
		r->key = 0;
		r = 0;
	}
	/* The data part of a PREFLUSH/FUA sequence ends once more when the sequence is done. */
	if ((v->rq_flags & iop_rqf_flush_seq()) && grp != IOP_OP_FLUSH) {
		cnt_add(base, IOP_C_BYTES + grp, iop_stat_bytes(nr_bytes));
		if (r && !r->timed && r->d_ns)
			record_timing(base, r, grp, r->d_ns, now);
		return 0;
	}
	d = 0;
	if (r) {
		d = take_ownership(r);
		if (!d)
			return 0; /* the sweep or a later dispatch already counted this IO */
	}
	if (grp != IOP_OP_FLUSH)
		cnt_add(base, IOP_C_BYTES + grp, iop_stat_bytes(nr_bytes));
	if (error)
		cnt_add(base, IOP_C_ERRORS + grp, 1);
	if (r) {
		close_record(base, r, grp, d, now);
		return 0;
	}
	cnt_add(base, IOP_C_IOS + grp, 1);
	/* never dispatched itself: a PREFLUSH with no data waits for the flush machinery */
	q = bio_records ? (v->bio ? take_bio(v->bio, v->sector, &opf) : 0) : rq_start_ns(v, now);
	if (q && q <= now && (opf & iop_req_preflush()))
		record_flags(base, opf, q, now);
	else
		cnt_add(base, IOP_C_UNTIMED + grp, 1);
	return 0;
}

/*
 * block_io_done fires in blk_account_io_done, where /proc/diskstats counts the IO, after
 * block_rq_complete (6.5, 5a80bd075f3b; compat: have_io_done). A request whose record is
 * still open there was completed whole without any completion program closing its record:
 * closed here, timed to this moment, once (take_ownership), and counted in
 * IOP_G_AT_ACCOUNTING: the first completion program and its spares all skipped (the
 * kernel's recursion guard; preemptible programs from 7.0). Where no tracepoint of the
 * completion path reaches any program (seen on a 6.18 virtual machine: 14 to 32 of ~170,000
 * IOs in 5 of 45 runs, no recursion miss, this program not run for them either) nothing can
 * time the IO: it is counted when its request comes back (completion_unseen). The data part
 * of a flush sequence ends once more when the sequence is done; its record stays.
 */
static __always_inline int on_io_done(struct rq_view *v)
{
	struct iop_rq_rec *r = find_rq(v->rq);
	int slot, grp;
	u64 *base, d, now;

	if (!r || !*(volatile u64 *)&r->d_ns)
		return 0;     /* closed by a completion program: what nearly always happens */
	grp = op_group(v);
	if (grp < 0 || ((v->rq_flags & iop_rqf_flush_seq()) && grp != IOP_OP_FLUSH) ||
	    iop_record_of_other_io(r->start_lo, v->start_ns, v->never_started, r->requeued))
		return 0;
	slot = dev_slot(v->kdev);
	if (slot < 0)
		return 0;
	base = slot_data(slot);
	if (!base)
		return 0;
	now = bpf_ktime_get_ns();
	d = take_ownership(r);
	if (!d)
		return 0;
	if (grp != IOP_OP_FLUSH)
		cnt_add(base, IOP_C_BYTES + grp, r->bytes);
	close_record(base, r, grp, d, now);
	global_inc(IOP_G_AT_ACCOUNTING);
	return 0;
}

static __always_inline int on_rq_requeue(struct rq_view *v)
{
	struct iop_rq_rec *r;
	int slot;
	u64 *base;

	if (op_group(v) < 0)
		return 0;
	r = rq_records ? find_rq(v->rq) : 0;
	if (r)
		r->requeued = 1;
	slot = dev_slot(v->kdev);

	if (slot < 0)
		return 0;
	base = slot_data(slot);
	if (base)
		cnt_add(base, IOP_C_REQUEUE, 1);
	return 0;
}

/* ---- completion-only mode (histogram.mode: completion) ---- */

/*
 * The kernel's own dispatch stamp, and for a write the flags its submitter asked for: the
 * flush machinery strips REQ_PREFLUSH (and REQ_FUA where the device has none) from the
 * request, not from its bio (block/blk-flush.c blk_insert_flush). A request holding such a
 * bio holds only it (those flags forbid merging).
 */
static __always_inline void rq_read_btf_stamps(struct request *rq, struct rq_view *v)
{
	bool write = (v->cmd_flags & IOP_REQ_OP_MASK) == IOP_REQ_OP_WRITE;
	struct bio *bio = rq->bio;

	v->io_start_ns = rq->io_start_time_ns;
	v->bio_opf = write && bio ? bio->bi_opf : 0;
}

static __always_inline void rq_read_core_stamps(struct request *rq, struct rq_view *v)
{
	bool write = (v->cmd_flags & IOP_REQ_OP_MASK) == IOP_REQ_OP_WRITE;

	v->io_start_ns = BPF_CORE_READ(rq, io_start_time_ns);
	v->bio_opf = write ? BPF_CORE_READ(rq, bio, bi_opf) : 0;
}

/* Whether blk_mq_start_request ever dispatched the request (its state is not MQ_RQ_IDLE). */
static __always_inline bool rq_dispatched(struct request *rq, const bool btf)
{
	if (btf)
		return rq->state != MQ_RQ_IDLE;
	return BPF_CORE_READ(rq, state) != MQ_RQ_IDLE;
}

/* Size, queue wait and service from the kernel's stamps, and seek in completion order. */
static __always_inline void compl_dispatch(u64 *base, const struct rq_view *v, unsigned int grp,
					   u64 start, u64 now)
{
	enum iop_dispatch_stamp ds;
	u64 end, prev, dist;
	unsigned int cls;

	hist_add(base, IOP_H_SIZE + grp, iop_stat_bytes(v->data_len));
	if (start) {
		ds = iop_dispatch_stamp(start, v->io_start_ns, now);
		if (ds == IOP_DS_OK) {
			hist_add(base, IOP_H_QUEUE + grp, v->io_start_ns - start);
			hist_add(base, IOP_H_SERVICE + grp, now - v->io_start_ns);
		} else {
			cnt_add(base, IOP_C_NOQUEUE + grp, 1);
			if (ds == IOP_DS_NONE)
				cnt_add(base, IOP_C_NO_DISPATCH_TS, 1);
		}
	}
	if ((grp != IOP_OP_READ && grp != IOP_OP_WRITE) || v->pt_accounted)
		return;   /* no position: a passthrough command's sector means nothing */
	end = v->sector + (v->data_len >> 9);
	prev = iop_xchg(&base[IOP_C_PREV_END], end);
	cls = iop_seek_class(v->sector, prev, &dist);
	if (cls) {
		cnt_add(base, IOP_C_SEQ + cls - 1, 1);
		hist_add(base, IOP_H_SEEK, dist);
	}
}

/*
 * One program, no records: everything from the request as it completes. Counts follow
 * on_rq_complete's rules for /proc/diskstats; latencies come from the kernel's stamps
 * (stamp_logic.h) where they stand, and are left out (untimed, no_queue_ts) where not.
 */
static __always_inline int on_rq_complete_only(struct request *rq, struct rq_view *v, int error,
					       unsigned int nr_bytes, const bool btf)
{
	u64 now = bpf_ktime_get_ns(), *base, start;
	unsigned int parts, flush_flags, opf;
	int slot, grp = op_group(v);
	bool seq;

	if (grp < 0)
		return 0;     /* passthrough the kernel does not count: not IO in diskstats */
	slot = dev_slot(v->kdev);
	if (slot < 0)
		return 0;
	base = slot_data(slot);
	if (!base)
		return 0;
	if (grp != IOP_OP_FLUSH)
		cnt_add(base, IOP_C_BYTES + grp, iop_stat_bytes(nr_bytes));
	if (nr_bytes < v->data_len)
		return 0;     /* partial completion: more of this request follows */
	opf = v->cmd_flags | v->bio_opf;
	flush_flags = opf & (iop_req_preflush() | iop_req_fua());
	seq = grp != IOP_OP_FLUSH && (v->rq_flags & iop_rqf_flush_seq());
	parts = iop_completion_parts(grp, seq, nr_bytes, v->data_len, flush_flags,
				     nr_bytes || !flush_flags || seq || rq_dispatched(rq, btf));
	start = iop_start_stamp(v->start_ns, now, v->rq_flags, iop_rqf_io_stat(),
				grp == IOP_OP_FLUSH);
	if (parts & IOP_CE_DISPATCH)
		compl_dispatch(base, v, grp, start, now);
	if (!(parts & IOP_CE_IO))
		return 0;
	if (error)
		cnt_add(base, IOP_C_ERRORS + grp, 1);
	cnt_add(base, IOP_C_IOS + grp, 1);
	if (grp != IOP_OP_FLUSH && (opf & iop_req_preflush()))
		cnt_add(base, IOP_C_PREFLUSH, 1);
	if (grp != IOP_OP_FLUSH && (opf & iop_req_fua()))
		cnt_add(base, IOP_C_FUA, 1);
	if (!start) {
		cnt_add(base, IOP_C_UNTIMED + grp, 1);
		return 0;
	}
	if (grp != IOP_OP_FLUSH && (opf & iop_req_preflush()))
		hist_add(base, IOP_H_PREFLUSH_LAT, now - start);
	if (grp != IOP_OP_FLUSH && (opf & iop_req_fua()))
		hist_add(base, IOP_H_FUA_LAT, now - start);
	if (parts & IOP_CE_OWN_TIME)
		hist_add(base, IOP_H_TOTAL + grp, now - start);
	return 0;
}

/* tp_btf entry points: ctx holds the tracepoint arguments as trusted pointers. */
static __always_inline int bio_queue_btf(u64 *ctx, const int pos)
{
	struct bio *bio = (struct bio *)tp_arg01(ctx, bio_queue_arg);

	return bio_queue_at((u64)bio, bio->bi_opf, bio->bi_iter.bi_sector, pos);
}

SEC("tp_btf/block_bio_queue")
int iop_bio_queue(u64 *ctx)
{
	return bio_queue_btf(ctx, 0);
}

/*
 * Spares, attached after the first program where tracepoint programs run preemptible
 * (compat.bpf.h 10), in the order declared (probes.c attach_in_order).
 */
SEC("tp_btf/block_bio_queue")
int iop_bio_queue_spare(u64 *ctx)
{
	return bio_queue_btf(ctx, 1);
}

SEC("tp_btf/block_bio_queue")
int iop_bio_queue_spare2(u64 *ctx)
{
	return bio_queue_btf(ctx, 2);
}

/* The parent is read through bpf_probe_read_kernel: bi_private is a plain pointer. */
static __always_inline int bio_split_btf(u64 *ctx, const int pos)
{
	struct bio *split = (struct bio *)tp_arg01(ctx, split_arg);
	struct bio *parent = split->bi_private;

	return bio_split_at((u64)split, split->bi_iter.bi_sector, (u64)parent,
			    BPF_CORE_READ(parent, bi_iter.bi_sector), pos);
}

SEC("tp_btf/block_split")
int iop_bio_split(u64 *ctx)
{
	return bio_split_btf(ctx, 0);
}

SEC("tp_btf/block_split")
int iop_bio_split_spare(u64 *ctx)
{
	return bio_split_btf(ctx, 1);
}

SEC("tp_btf/block_split")
int iop_bio_split_spare2(u64 *ctx)
{
	return bio_split_btf(ctx, 2);
}

static __always_inline int rq_issue_btf(u64 *ctx, const int pos)
{
	u64 rq = tp_arg01(ctx, rq_issue_arg);
	struct request *req = (struct request *)rq;
	struct rq_view v;

	if (pos && rq_spare_done(rq, req->start_time_ns, req->__sector))
		return 0;
	rq_read_btf(req, rq, &v);
	return on_rq_issue(&v, pos);
}

SEC("tp_btf/block_rq_issue")
int iop_rq_issue(u64 *ctx)
{
	return rq_issue_btf(ctx, 0);
}

SEC("tp_btf/block_rq_issue")
int iop_rq_issue_spare(u64 *ctx)
{
	return rq_issue_btf(ctx, 1);
}

SEC("tp_btf/block_rq_issue")
int iop_rq_issue_spare2(u64 *ctx)
{
	return rq_issue_btf(ctx, 2);
}

SEC("tp_btf/block_rq_issue")
int iop_rq_issue_spare3(u64 *ctx)
{
	return rq_issue_btf(ctx, 3);
}

SEC("tp_btf/block_rq_issue")
int iop_rq_issue_spare4(u64 *ctx)
{
	return rq_issue_btf(ctx, 4);
}

static __always_inline int rq_complete_btf(u64 *ctx, const int pos)
{
	struct rq_view v;

	if (test_skip_completions && ((struct request *)ctx[0])->__data_len &&
	    (((struct request *)ctx[0])->start_time_ns >> 10) % test_skip_completions == 0)
		return 0;

	/* what a spare mostly finds: the first program closed the record (an empty request may
	 * have none: an undispatched PREFLUSH write) */
	if (pos && !find_rq(ctx[0]) && ((struct request *)ctx[0])->__data_len)
		return 0;
	rq_read_btf((struct request *)ctx[0], ctx[0], &v);
	v.never_started = !rq_dispatched((struct request *)ctx[0], true);
	if (pos && !rq_spare_completes(&v, (unsigned int)ctx[2]))
		return 0;
	if (pos)
		global_inc(IOP_G_SPARE_COMPLETE);
	return on_rq_complete(&v, (int)ctx[1], (unsigned int)ctx[2]);
}

SEC("tp_btf/block_rq_complete")
int iop_rq_complete(u64 *ctx)
{
	return rq_complete_btf(ctx, 0);
}

SEC("tp_btf/block_rq_requeue")
int iop_rq_requeue(u64 *ctx)
{
	u64 rq = tp_arg01(ctx, rq_issue_arg);
	struct rq_view v;

	rq_read_btf((struct request *)rq, rq, &v);
	return on_rq_requeue(&v);
}

SEC("tp_btf/block_rq_complete")
int iop_compl(u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct rq_view v;

	rq_read_btf(rq, ctx[0], &v);
	rq_read_btf_stamps(rq, &v);
	return on_rq_complete_only(rq, &v, (int)ctx[1], (unsigned int)ctx[2], true);
}

/* The last chance of a completion no completion program closed (on_io_done). */
SEC("tp_btf/block_io_done")
int iop_io_done(u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct rq_view v;

	if (!find_rq(ctx[0]))
		return 0;
	rq_read_btf(rq, ctx[0], &v);
	v.never_started = !rq_dispatched(rq, true);
	return on_io_done(&v);
}

/* The spares of the completion program: after it, so attached after it. */
SEC("tp_btf/block_rq_complete")
int iop_rq_complete_spare(u64 *ctx)
{
	return rq_complete_btf(ctx, 1);
}

SEC("tp_btf/block_rq_complete")
int iop_rq_complete_spare2(u64 *ctx)
{
	return rq_complete_btf(ctx, 2);
}

/* raw_tp fallbacks with the same bodies, for kernels without tp_btf. */
static __always_inline int bio_queue_core(struct bpf_raw_tracepoint_args *ctx, const int pos)
{
	struct bio *bio = (struct bio *)tp_arg01(ctx->args, bio_queue_arg);

	return bio_queue_at((u64)bio, BPF_CORE_READ(bio, bi_opf),
			    BPF_CORE_READ(bio, bi_iter.bi_sector), pos);
}

SEC("raw_tp/block_bio_queue")
int iop_bio_queue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_queue_core(ctx, 0);
}

SEC("raw_tp/block_bio_queue")
int iop_bio_queue_spare_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_queue_core(ctx, 1);
}

SEC("raw_tp/block_bio_queue")
int iop_bio_queue_spare2_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_queue_core(ctx, 2);
}

static __always_inline int bio_split_core(struct bpf_raw_tracepoint_args *ctx, const int pos)
{
	struct bio *split = (struct bio *)tp_arg01(ctx->args, split_arg);
	struct bio *parent = BPF_CORE_READ(split, bi_private);

	return bio_split_at((u64)split, BPF_CORE_READ(split, bi_iter.bi_sector), (u64)parent,
			    BPF_CORE_READ(parent, bi_iter.bi_sector), pos);
}

SEC("raw_tp/block_split")
int iop_bio_split_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_split_core(ctx, 0);
}

SEC("raw_tp/block_split")
int iop_bio_split_spare_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_split_core(ctx, 1);
}

SEC("raw_tp/block_split")
int iop_bio_split_spare2_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return bio_split_core(ctx, 2);
}

static __always_inline int rq_issue_core(struct bpf_raw_tracepoint_args *ctx, const int pos)
{
	struct request *req = (struct request *)tp_arg01(ctx->args, rq_issue_arg);
	struct rq_view v;

	if (pos && rq_spare_done((u64)req, BPF_CORE_READ(req, start_time_ns),
				 BPF_CORE_READ(req, __sector)))
		return 0;
	rq_read_core(req, &v);
	return on_rq_issue(&v, pos);
}

SEC("raw_tp/block_rq_issue")
int iop_rq_issue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_issue_core(ctx, 0);
}

SEC("raw_tp/block_rq_issue")
int iop_rq_issue_spare_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_issue_core(ctx, 1);
}

SEC("raw_tp/block_rq_issue")
int iop_rq_issue_spare2_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_issue_core(ctx, 2);
}

SEC("raw_tp/block_rq_issue")
int iop_rq_issue_spare3_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_issue_core(ctx, 3);
}

SEC("raw_tp/block_rq_issue")
int iop_rq_issue_spare4_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_issue_core(ctx, 4);
}

static __always_inline int rq_complete_core(struct bpf_raw_tracepoint_args *ctx, const int pos)
{
	struct rq_view v;

	if (pos && !find_rq(ctx->args[0]) &&
	    BPF_CORE_READ((struct request *)ctx->args[0], __data_len))
		return 0;   /* as rq_complete_btf */
	rq_read_core((struct request *)ctx->args[0], &v);
	v.never_started = !rq_dispatched((struct request *)ctx->args[0], false);
	if (pos && !rq_spare_completes(&v, (unsigned int)ctx->args[2]))
		return 0;
	if (pos)
		global_inc(IOP_G_SPARE_COMPLETE);
	return on_rq_complete(&v, (int)ctx->args[1], (unsigned int)ctx->args[2]);
}

SEC("raw_tp/block_rq_complete")
int iop_rq_complete_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_complete_core(ctx, 0);
}

SEC("raw_tp/block_rq_complete")
int iop_compl_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct request *rq = (struct request *)ctx->args[0];
	struct rq_view v;

	rq_read_core(rq, &v);
	rq_read_core_stamps(rq, &v);
	return on_rq_complete_only(rq, &v, (int)ctx->args[1], (unsigned int)ctx->args[2], false);
}

SEC("raw_tp/block_rq_complete")
int iop_rq_complete_spare_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_complete_core(ctx, 1);
}

SEC("raw_tp/block_rq_complete")
int iop_rq_complete_spare2_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return rq_complete_core(ctx, 2);
}

SEC("raw_tp/block_rq_requeue")
int iop_rq_requeue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct rq_view v;

	rq_read_core((struct request *)tp_arg01(ctx->args, rq_issue_arg), &v);
	return on_rq_requeue(&v);
}

/* ---- fsync / fdatasync / sync_file_range ---- */

/*
 * Device of the file behind fd: the block device itself for a device node, else its fs.
 * cast: with bpf_rdonly_cast (direct loads), else with bpf_probe_read_kernel (compat.bpf.h 6).
 */
static __always_inline u32 fd_kdev(long fd, const bool cast)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file = 0;
	struct inode *inode;
	umode_t mode;

	if (fd < 0 || fd >= fdt->max_fds)
		return 0;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]) || !file)
		return 0;
	if (!cast) {
		inode = BPF_CORE_READ(file, f_inode);
		if (!inode)
			return 0;
		mode = BPF_CORE_READ(inode, i_mode);
		if ((mode & 00170000) == 0060000)   /* S_ISBLK */
			return BPF_CORE_READ(inode, i_rdev);
		return iop_sb_disk_read(BPF_CORE_READ(inode, i_sb));
	}
	file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
	inode = file->f_inode;
	if (!inode)
		return 0;
	mode = inode->i_mode;
	if ((mode & 00170000) == 0060000)   /* S_ISBLK */
		return inode->i_rdev;
	return iop_sb_disk(inode->i_sb);
}

static __always_inline int sync_enter(long fd, unsigned int kind, const bool cast)
{
	struct sync_start *s;

	s = bpf_task_storage_get(&sync_start, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return 0;
	s->flush_bios = 0;
	s->kind = kind;
	s->dev = fd_kdev(fd, cast);
	s->ts = bpf_ktime_get_ns();
	return 0;
}

/* Whether the current thread's name or its process's name is watched (sync_watch). */
static __always_inline bool sync_watched(const char *comm, const char *process)
{
	struct iop_watch_key k = {};

	__builtin_memcpy(k.name, comm, sizeof(k.name));
	k.kind = IOP_WATCH_THREAD;
	if (bpf_map_lookup_elem(&sync_watch, &k))
		return true;
	__builtin_memcpy(k.name, process, sizeof(k.name));
	k.kind = IOP_WATCH_PROCESS;
	return bpf_map_lookup_elem(&sync_watch, &k) != 0;
}

/*
 * A new entry for key, or NULL when there is no room for it: the table is full, or the thread
 * is not watched and the unwatched share is (iopulse.h iop_sync_ctl).
 */
static __always_inline struct iop_sync_val *sync_new_entry(struct iop_sync_key *key)
{
	struct iop_sync_val *val;
	char comm[16], process[16] = {};
	bool watched;
	u32 zero = 0;
	void *tmpl;

	bpf_get_current_comm(comm, sizeof(comm));
	bpf_probe_read_kernel_str(process, sizeof(process),
				  bpf_get_current_task_btf()->group_leader->comm);
	watched = sync_watched(comm, process);
	if (!watched && sync_ctl.unwatched_max &&
	    globals[IOP_G_SYNC_NEW] - sync_ctl.removed >= sync_ctl.unwatched_max)
		return 0;
	tmpl = bpf_map_lookup_elem(&sync_zero, &zero);
	if (!tmpl)
		return 0;
	bpf_map_update_elem(&sync_table, key, tmpl, BPF_NOEXIST);
	val = bpf_map_lookup_elem(&sync_table, key);
	if (!val)
		return 0;
	__builtin_memcpy(val->comm, comm, sizeof(val->comm));
	__builtin_memcpy(val->process, process, sizeof(val->process));
	val->uid = (u32)bpf_get_current_uid_gid();
	val->watched = watched;
	/* only this thread writes its entry; the daemon skips it while gen is 0 */
	val->gen = iop_fetch_add(&globals[IOP_G_SYNC_NEW], 1) + 1;
	return val;
}

static __always_inline int sync_exit(void)
{
	u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), lat, off;
	struct iop_sync_key key = {};
	struct iop_sync_val *val;
	struct sync_start *s;
	unsigned int *busy;
	u32 kind;
	u64 *buckets;

	s = bpf_task_storage_get(&sync_start, bpf_get_current_task_btf(), 0, 0);
	if (!s || !s->ts)
		return 0;
	lat = now - s->ts;
	key.tgid = id >> 32;
	key.pid = (u32)id;
	key.dev = s->dev;
	/*
	 * Hold the thread's stripe while at its entry: the daemon removes an entry of a live
	 * thread only with the stripe taken, so a call lands in an entry it has still to read.
	 * (A locked add and then a load: in order on x86, and no fetch-add needed, Linux 5.12.)
	 */
	busy = &sync_ctl.busy[IOP_SYNC_STRIPE(key.pid)];
	__sync_fetch_and_add(busy, 1);
	if (*(volatile unsigned int *)busy >= IOP_SYNC_LOCKED) {
		global_inc(IOP_G_SYNC_FULL);
		goto release;
	}
	val = bpf_map_lookup_elem(&sync_table, &key);
	if (!val)
		val = sync_new_entry(&key);
	if (!val) {
		global_inc(IOP_G_SYNC_FULL);
		goto release;
	}
	/* Only this thread writes this entry: plain adds are enough. */
	kind = s->kind;
	if (kind >= IOP_SYNC_MAX)
		goto release;
	val->calls[kind]++;
	val->lat_sum_ns[kind] += lat;
	if (lat > val->lat_max_ns)
		val->lat_max_ns = lat;
	val->flush_bios += s->flush_bios;
	val->last_ns = now;
	buckets = (u64 *)val;
	off = sizeof(struct iop_sync_val) / 8 + kind * hist_nb + iop_hist_index(lat, hist_k);
	if (off < sync_u64s)
		buckets[off]++;
release:
	/* a locked add: the entry's stores above are visible before the stripe is let go */
	__sync_fetch_and_add(busy, -1);
	s->ts = 0;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fsync")
int iop_enter_fsync(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_FSYNC, true);
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int iop_enter_fdatasync(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_FDATASYNC, true);
}

SEC("tracepoint/syscalls/sys_enter_sync_file_range")
int iop_enter_sync_file_range(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_RANGE, true);
}

/* The same for kernels without bpf_rdonly_cast (compat.bpf.h 6). */
SEC("tracepoint/syscalls/sys_enter_fsync")
int iop_enter_fsync_read(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_FSYNC, false);
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int iop_enter_fdatasync_read(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_FDATASYNC, false);
}

SEC("tracepoint/syscalls/sys_enter_sync_file_range")
int iop_enter_sync_file_range_read(struct trace_event_raw_sys_enter *ctx)
{
	return sync_enter(ctx->args[0], IOP_SYNC_RANGE, false);
}

SEC("tracepoint/syscalls/sys_exit_fsync")
int iop_exit_fsync(void *ctx)
{
	return sync_exit();
}

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int iop_exit_fdatasync(void *ctx)
{
	return sync_exit();
}

SEC("tracepoint/syscalls/sys_exit_sync_file_range")
int iop_exit_sync_file_range(void *ctx)
{
	return sync_exit();
}

char LICENSE[] SEC("license") = "GPL";
