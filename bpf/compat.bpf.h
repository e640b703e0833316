/* compat.bpf.h - every kernel layout difference iopulse's BPF side depends on, in one place */
#ifndef IOPULSE_COMPAT_BPF_H
#define IOPULSE_COMPAT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/*
 * Tracepoint argument layouts are detected from BTF by the loader (src/collect/btf_compat.c) and
 * handed in as load-time constants; struct layouts are handled here with CO-RE.
 *
 * 1. block_rq_issue / block_rq_insert lost their request_queue argument in 5.11
 *    (a54895fa057c "block: remove the request_queue to argument request based tracepoints").
 *    Loader sets rq_issue_arg to the index of the struct request * argument. block_bio_queue
 *    lost its request_queue argument in the same release (e8a676d61c07 "block: simplify and
 *    extend the block_bio_merge tracepoint class"): bio_queue_arg. block_split lost its own in
 *    5.11 too ("block: remove the request_queue argument to the block_split tracepoint"):
 *    split_arg.
 * 2. struct request.rq_disk was removed in 5.17 (f3fa33acca9f "block: remove the ->rq_disk
 *    field in struct request"); the disk is rq->q->disk since 5.15 (d152c682f03c "block: add
 *    an explicit ->disk backpointer to the request_queue").
 * 3. Request flag bit numbers (__REQ_FUA, __REQ_PREFLUSH) moved over time; read them from the
 *    enum req_flag_bits in BTF. REQ_OP_BITS has been 8 since 4.10 (ef295ecf090d).
 * 4. rq_flags bits became an enum (__RQF_FLUSH_SEQ) in 6.11 (5f89154e8e9e "block: Use enum to
 *    define RQF_x bit indexes", 6.11), anonymous until 6.14; before 6.11 RQF_FLUSH_SEQ was
 *    (1 << 4). Passed in by the loader (below).
 * 5. A filesystem that is not one block device reports an anonymous s_dev (major 0): btrfs
 *    keeps its devices in struct btrfs_fs_info (present in BTF only where btrfs is built in or
 *    its module BTF is loaded); others with sb->s_bdev set use that. btrfs_fs_devices had
 *    latest_bdev before latest_dev (d24fa5c1e720 "btrfs: convert latest_bdev type to
 *    btrfs_device and rename", 5.16).
 * 6. The kfunc bpf_rdonly_cast (6.2) turns a pointer read from memory into one the program
 *    may dereference directly. Where the loader finds it missing in BTF it loads the sync
 *    programs built on bpf_probe_read_kernel instead (the _read variants): same result, a few
 *    helper calls more per sync call. Declared weak so that libbpf loads the object without it.
 * 7. BPF atomics beyond a plain add (fetch-add whose result is used, xchg, cmpxchg) came in 5.12
 *    (5ffa25502b5a "bpf: Add instructions for atomic_[cmp]xchg", 5ca419f2864a "bpf: Add
 *    BPF_FETCH field / create atomic_fetch_add instruction"). The loader probes for them and,
 *    where they are missing, loads a second object built from this source with IOP_NO_ATOMICS:
 *    plain loads and stores instead. What that loses (README, kernel support): two CPUs that
 *    claim the same free record at once keep one record, so the other IO is counted untimed;
 *    two dispatches to one device at the same moment may both measure their seek from the same
 *    previous request. Counts stay exact: an IO is counted where its completion is seen, and
 *    the one place two parties could count it (the completion and the daemon's sweep) only
 *    meet on a record older than an idle interval.
 * 8. A bio names its disk through bi_bdev since 5.12 (309dca309fc3 "block: store a
 *    block_device pointer in struct bio"), through bi_disk before.
 * 9. The kernel's own stamps the completion-only mode reads (stamp_logic.h decides per
 *    request, from the values and the flags, whether they stand):
 *    - rq->start_time_ns: before 6.13 written at set-up into every request (0 where nothing
 *      needed a time); from 6.13 ("block: move iostat check into blk_account_io_start()")
 *      only into requests the iostats account, which carry RQF_IO_STAT (4), so a request
 *      without the flag holds its previous IO's time.
 *    - rq->io_start_time_ns: written at dispatch only where the queue keeps blk-stat
 *      statistics (QUEUE_FLAG_STATS: wbt, blk-iolatency, bfq, iocost, hybrid polling), zeroed
 *      at set-up; passthrough requests are not stamped from 5.18.
 *    - From 6.9 both come from blk_time_get_ns, which inside a task's plug returns the time
 *      read first in it until the task sleeps (da4c8c3d0975 "block: cache current nsec time
 *      in struct blk_plug"; the loader finds blk_plug.cur_ktime in BTF and says so): a
 *      request set up and dispatched in one plug carries one time twice.
 * 10. From 7.0 a tracepoint runs its callbacks, tp_btf and raw_tp programs among them, with
 *    preemption on (a46023d5616e "tracing: Guard __DECLARE_TRACE() use of __DO_TRACE_CALL()
 *    with SRCU-fast"; kernel/trace/bpf_trace.c __bpf_trace_run now only keeps the task on
 *    its CPU). A program runs at most once at a time per CPU (its per-CPU recursion count,
 *    prog->active): while a task is preempted inside it, the same program's event of every
 *    other task on that CPU is skipped (counted in the program's recursion_misses). Before
 *    7.0 only an interrupt arriving inside a program could do that: the completion program,
 *    which runs wherever drivers complete requests, has spares on every kernel for it
 *    (rq_logic.h iop_spare_completes). block_rq_issue fires in the submitting task where no scheduler
 *    holds the request (blk_mq_try_issue_directly, the plug flush), so a dispatch missed
 *    this way left its IO without a record: counted at completion, not timed (1-3.6% of
 *    IOs with scheduler none on 7.2 and 7.3 in VMs); block_bio_queue and block_split fire
 *    in the submitting task too, and a bio missed there has no queue wait. The loader finds
 *    the commit's change to struct tp_transition_snapshot (srcu_gp) in BTF and attaches spare
 *    programs after the first, four on the dispatch and two on each of the others (probes.c
 *    PROBES_RQ_SPARES, PROBES_SPARES): an event is lost only when tasks are preempted inside
 *    all of its tracepoint's programs at once on that CPU. A spare
 *    does the work only where the programs before it did not: for a dispatch, no published
 *    record of this IO (rq_logic.h iop_spare_dispatch_done); for a bio, no mark of it in
 *    the task's storage (iop_mark_done), as a bio record may be a stale one of the same key.
 *    What a chain lost is the first program's recursion_misses less what its spares made
 *    good (IOP_G_SPARE_*; iop_chain_lost).
 */

struct request___pre517 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

#define IOP_REQ_OP_BITS 8
#define IOP_REQ_OP_MASK ((1U << IOP_REQ_OP_BITS) - 1)

static __always_inline struct gendisk *iop_rq_disk(struct request *rq)
{
	struct request___pre517 *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return BPF_CORE_READ(rq, q, disk);
}

static __always_inline unsigned int iop_req_fua(void)
{
	return 1U << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA);
}

static __always_inline unsigned int iop_req_preflush(void)
{
	return 1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH);
}

/*
 * 4 (cont.): the loader reads both bits from BTF by enumerator name (src/collect/btf_compat.c),
 * since from 6.11 until e7112524e5e8 ("block: Name the RQF flags enum", 6.14) the enum was
 * anonymous and CO-RE, which finds named types only, would fall back to 1 << 4: there that is
 * __RQF_SCHED_TAGS, set on every request of a queue with a scheduler.
 */
const volatile unsigned int rqf_flush_seq_mask = 1U << 4;
/* RQF_IO_STAT (start_time_ns is kept), 0 where the bit is not known (before 6.11) */
const volatile unsigned int rqf_io_stat_mask = 0;

static __always_inline unsigned int iop_rqf_flush_seq(void)
{
	return rqf_flush_seq_mask;
}

static __always_inline unsigned int iop_rqf_io_stat(void)
{
	return rqf_io_stat_mask;
}

#ifdef IOP_NO_ATOMICS
static __always_inline u64 iop_cmpxchg(u64 *p, u64 old, u64 new)
{
	u64 v = *p;

	if (v == old)
		*p = new;
	return v;
}

static __always_inline u64 iop_xchg(u64 *p, u64 new)
{
	u64 v = *p;

	asm volatile("" ::: "memory");   /* the stores before it stay before it (x86 keeps order) */
	*p = new;
	return v;
}

static __always_inline u64 iop_fetch_add(u64 *p, u64 add)
{
	u64 v = *p;

	*p = v + add;
	return v;
}
#else
static __always_inline u64 iop_cmpxchg(u64 *p, u64 old, u64 new)
{
	return __sync_val_compare_and_swap(p, old, new);
}

static __always_inline u64 iop_xchg(u64 *p, u64 new)
{
	return __sync_lock_test_and_set(p, new);
}

static __always_inline u64 iop_fetch_add(u64 *p, u64 add)
{
	return __sync_fetch_and_add(p, add);
}
#endif

/*
 * Stores v after every store before it, for a reader on another CPU (a record's fields, then
 * the word that publishes it). x86 keeps stores in order (the programs are built for x86:
 * meson.build), so a compiler barrier and a plain store do what a locked exchange did, for
 * less. No caller needs the old value.
 */
static __always_inline void iop_publish(u64 *p, u64 v)
{
	asm volatile("" ::: "memory");
	*(volatile u64 *)p = v;
}

struct bio___pre512 {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

/*
 * Whether a bio goes to a request-based (blk-mq) disk, not to a bio-based device (dm, md)
 * that passes it on as other bios: a flush sent to an LV is one flush bio to dm-0 and one to
 * each disk beneath; only the latter reach a disk.
 */
static __always_inline bool iop_bio_to_disk(struct bio *bio)
{
	struct bio___pre512 *old = (void *)bio;
	struct gendisk *disk;

	if (bpf_core_field_exists(old->bi_disk))
		disk = BPF_CORE_READ(old, bi_disk);
	else
		disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);
	return disk && BPF_CORE_READ(disk, queue, mq_ops);
}

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

struct btrfs_fs_devices___pre516 {
	struct block_device *latest_bdev;
} __attribute__((preserve_access_index));

#define IOP_BTRFS_SUPER_MAGIC 0x9123683EUL

/*
 * The disk behind a superblock: s_dev when it is a block device, else s_bdev, else for btrfs
 * the device it last wrote its super block to (latest_dev; one disk of a multi-device fs);
 * else the anonymous s_dev (overlayfs, tmpfs, NFS: no disk of this node to name).
 */
static __always_inline u32 iop_sb_disk(struct super_block *sb)
{
	struct btrfs_fs_info *fs;
	struct block_device *bdev;
	u32 dev = sb->s_dev;

	if (dev >> 20)
		return dev;
	bdev = sb->s_bdev;
	if (bdev)
		return bdev->bd_dev;
	if (!bpf_core_type_exists(struct btrfs_fs_info) || sb->s_magic != IOP_BTRFS_SUPER_MAGIC)
		return dev;
	fs = bpf_rdonly_cast(sb->s_fs_info, bpf_core_type_id_kernel(struct btrfs_fs_info));
	if (fs && fs->fs_devices && fs->fs_devices->latest_dev &&
	    fs->fs_devices->latest_dev->bdev)
		return fs->fs_devices->latest_dev->bdev->bd_dev;
	return dev;
}

/* iop_sb_disk without bpf_rdonly_cast: every pointer read with bpf_probe_read_kernel. */
static __always_inline u32 iop_sb_disk_read(struct super_block *sb)
{
	struct btrfs_fs_devices___pre516 *old;
	struct btrfs_fs_devices *devs;
	struct btrfs_fs_info *fs;
	struct block_device *bdev;
	u32 dev = BPF_CORE_READ(sb, s_dev);

	if (dev >> 20)
		return dev;
	bdev = BPF_CORE_READ(sb, s_bdev);
	if (bdev)
		return BPF_CORE_READ(bdev, bd_dev);
	if (!bpf_core_type_exists(struct btrfs_fs_info) ||
	    BPF_CORE_READ(sb, s_magic) != IOP_BTRFS_SUPER_MAGIC)
		return dev;
	fs = BPF_CORE_READ(sb, s_fs_info);
	devs = BPF_CORE_READ(fs, fs_devices);
	if (!devs)
		return dev;
	old = (void *)devs;
	if (bpf_core_field_exists(old->latest_bdev))
		bdev = BPF_CORE_READ(old, latest_bdev);
	else
		bdev = BPF_CORE_READ(devs, latest_dev, bdev);
	return bdev ? BPF_CORE_READ(bdev, bd_dev) : dev;
}

#endif
