// SPDX-License-Identifier: GPL-2.0
/*
 * bound.bpf.c - the least work that yields iopulse's per-IO figures, as a cost bound.
 *
 * One device, no checks, no device lookup, no ownership, no lost-completion accounting, and the
 * kernel's own stamps taken at face value (io_start_time_ns even where a plug cached it). No
 * design that keeps the same histograms can do less per IO on the same tracepoints, so the
 * benchmark sets these beside the targets: a target below its bound cannot be met on the machine.
 *   request: issue (dispatch-order seek) + completion (queue from start_time_ns, service from
 *            io_start_time_ns, total, size, counts)
 *   bio:     the same plus a bio program that stamps each bio in a direct-mapped table (no CAS)
 *   sync:    fdatasync entry (clock, file's device) and exit (latency into a per-thread entry)
 *   complete: the completion-only mode's figures from one completion program: the request's
 *            stamps (queue, service, total), size, counts, and seek in completion order
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "iopulse.h"
#include "hist_math.h"

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

#define NB IOP_HIST_NBUCKETS(IOP_HIST_K_DEFAULT)
#define BIO_TABLE 4096

struct bound_data {
	u64 cnt[IOP_C_MAX];
	u64 hist[IOP_H_MAX][NB];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bound_data);
	__uint(max_entries, 1);
} bound_dev SEC(".maps");

struct bio_stamp {
	u64 bio;
	u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bio_stamp);
	__uint(max_entries, BIO_TABLE);
} bound_bios SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u64[2]);
} bound_sync_start SEC(".maps");

struct sync_entry {
	u64 calls;
	u64 sum;
	u64 hist[NB];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);
	__type(value, struct sync_entry);
	__uint(max_entries, 1024);
} bound_sync SEC(".maps");

const volatile bool from_bio = false;

static __always_inline struct bound_data *dev(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&bound_dev, &zero);
}

static __always_inline void hadd(struct bound_data *d, unsigned int h, u64 v)
{
	unsigned int i = iop_hist_index(v, IOP_HIST_K_DEFAULT);

	if (h < IOP_H_MAX && i < NB)
		__sync_fetch_and_add(&d->hist[h][i], 1);
}

/* A completed request's counts, and its queue, service, total and size histograms. */
static __always_inline void done_add(struct bound_data *d, unsigned int grp, unsigned int bytes,
				     u64 q, u64 disp, u64 now)
{
	__sync_fetch_and_add(&d->cnt[IOP_C_IOS + grp], 1);
	__sync_fetch_and_add(&d->cnt[IOP_C_BYTES + grp], bytes);
	hadd(d, IOP_H_QUEUE + grp, disp - q);
	hadd(d, IOP_H_SERVICE + grp, now - disp);
	hadd(d, IOP_H_TOTAL + grp, now - q);
	hadd(d, IOP_H_SIZE + grp, bytes);
}

/* Seek of a request from the end of the one before it on the device, and its class. */
static __always_inline void seek_add(struct bound_data *d, u64 start, u64 end)
{
	u64 prev = __sync_lock_test_and_set(&d->cnt[IOP_C_PREV_END], end);

	if (start == prev) {
		__sync_fetch_and_add(&d->cnt[IOP_C_SEQ], 1);
		hadd(d, IOP_H_SEEK, 0);
	} else {
		__sync_fetch_and_add(&d->cnt[start > prev ? IOP_C_FWD : IOP_C_BWD], 1);
		hadd(d, IOP_H_SEEK, start > prev ? start - prev : prev - start);
	}
}

static __always_inline u32 bio_idx(u64 bio)
{
	return ((u32)bio >> 4) * 2654435761U >> 20 & (BIO_TABLE - 1);
}

SEC("tp_btf/block_bio_queue")
int bound_bio_queue(u64 *ctx)
{
	u64 bio = ctx[0];
	u32 i = bio_idx(bio);
	struct bio_stamp *s = bpf_map_lookup_elem(&bound_bios, &i);

	if (s) {
		s->bio = bio;
		s->ns = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("tp_btf/block_rq_issue")
int bound_rq_issue(u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct bound_data *d = dev();
	u64 start = rq->__sector, end = start + (rq->__data_len >> 9);

	if (!d)
		return 0;
	seek_add(d, start, end);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int bound_rq_complete(u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct bound_data *d = dev();
	u64 now = bpf_ktime_get_ns(), q = rq->start_time_ns, disp = rq->io_start_time_ns;
	unsigned int grp = rq->cmd_flags & 1, bytes = rq->__data_len;
	struct bio_stamp *s;
	u64 bio = (u64)rq->bio;
	u32 i;

	if (!d)
		return 0;
	if (from_bio) {
		i = bio_idx(bio);
		s = bpf_map_lookup_elem(&bound_bios, &i);
		if (s && s->bio == bio)
			q = s->ns;
	}
	done_add(d, grp, bytes, q, disp, now);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int bound_compl(u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct bound_data *d = dev();
	u64 now = bpf_ktime_get_ns(), q = rq->start_time_ns, disp = rq->io_start_time_ns;
	unsigned int grp = rq->cmd_flags & 1, bytes = rq->__data_len;
	u64 start = rq->__sector, end = start + (bytes >> 9);

	if (!d)
		return 0;
	done_add(d, grp, bytes, q, disp, now);
	seek_add(d, start, end);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int bound_enter_fdatasync(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file = 0;
	long fd = ctx->args[0];
	u64 *s;

	s = bpf_task_storage_get(&bound_sync_start, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s || fd < 0 || fd >= fdt->max_fds)
		return 0;
	bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]);
	if (file) {
		file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
		s[1] = file->f_inode->i_sb->s_dev;
	}
	s[0] = bpf_ktime_get_ns();
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int bound_exit_fdatasync(void *ctx)
{
	u64 *s = bpf_task_storage_get(&bound_sync_start, bpf_get_current_task_btf(), 0, 0);
	u64 key = bpf_get_current_pid_tgid(), lat;
	static const struct sync_entry zero;
	struct sync_entry *e;
	unsigned int i;

	if (!s || !s[0])
		return 0;
	lat = bpf_ktime_get_ns() - s[0];
	key ^= s[1] << 32;
	e = bpf_map_lookup_elem(&bound_sync, &key);
	if (!e) {
		bpf_map_update_elem(&bound_sync, &key, &zero, BPF_NOEXIST);
		e = bpf_map_lookup_elem(&bound_sync, &key);
		if (!e)
			return 0;
	}
	e->calls++;
	e->sum += lat;
	i = iop_hist_index(lat, IOP_HIST_K_DEFAULT);
	if (i < NB)
		e->hist[i]++;
	s[0] = 0;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
