/* btf_compat.h - kernel differences detected from the running kernel's BTF */
#ifndef IOPULSE_BTF_COMPAT_H
#define IOPULSE_BTF_COMPAT_H

#include <stdbool.h>

struct btf;

struct btf_compat {
	bool have_btf;            /* /sys/kernel/btf/vmlinux loaded */
	bool have_block_tps;      /* btf_trace_block_rq_issue etc. exist (tp_btf possible) */
	unsigned int rq_issue_arg; /* index of struct request * in block_rq_issue's arguments */
	unsigned int bio_queue_arg; /* index of struct bio * in block_bio_queue's arguments */
	unsigned int split_arg;   /* index of struct bio * in block_split's arguments */
	/* sync tracking: task-local storage and bpf_get_current_task_btf (5.11) */
	bool have_task_storage;
	bool have_rdonly_cast;    /* kfunc bpf_rdonly_cast (6.2); else the _read sync programs */
	/* BPF fetch-add, xchg, cmpxchg (5.12; probed by loading one instruction, as BTF has no
	 * trace of them); else the object built without them (compat.bpf.h 7) */
	bool have_atomics;
	/* request flag masks (compat.bpf.h 4): from BTF where the bits are an enum (6.11) */
	unsigned int rqf_flush_seq; /* RQF_FLUSH_SEQ */
	unsigned int rqf_io_stat;   /* RQF_IO_STAT, 0 where unknown (then not checked) */
	/* struct blk_plug caches the block layer's clock (cur_ktime, da4c8c3d0975, 6.9): set-up
	 * and dispatch in one plug carry one time (compat.bpf.h 9) */
	bool plug_clock;
	/* tracepoint programs run preemptible (a46023d5616e, 7.0): the spare dispatch program
	 * is attached (compat.bpf.h 10) */
	bool tp_preemptible;
	/* tracepoint block_io_done (5a80bd075f3b, 6.5), where /proc/diskstats counts an IO:
	 * the full mode closes there a record no completion program closed (tp_btf only) */
	bool have_io_done;
};

/* RQF_FLUSH_SEQ where the flags are #defines (before 6.11): include/linux/blk-mq.h */
#define BTF_COMPAT_RQF_FLUSH_SEQ_OLD (1U << 4)

/*
 * Value of the enumerator called name in any enum of btf, named or anonymous (CO-RE finds
 * only named enums: the request flags' enum was anonymous from 6.11 until e7112524e5e8 "block:
 * Name the RQF flags enum", 6.14). Returns the value (>= 0), or -ENOENT.
 */
long long btf_compat_enumerator(const struct btf *btf, const char *name);

/* Whether the struct called struct_name in btf has a member called member. */
bool btf_compat_has_member(const struct btf *btf, const char *struct_name, const char *member);

/*
 * Whether tracepoint callbacks run with preemption on (compat.bpf.h 10): the commit that made
 * them so gave struct tp_transition_snapshot (kernel/tracepoint.c) its srcu_gp member.
 */
bool btf_compat_tp_preemptible(const struct btf *btf);

/*
 * IOPULSE_HIDE_KERNEL_FEATURES (comma-separated: tp_btf, task_storage, rdonly_cast,
 * atomics, tp_preemptible, io_done) makes
 * btf_compat_detect report those as missing, to run the fallbacks on a kernel that has them.
 * IOPULSE_FORCE_KERNEL_FEATURES=tp_preemptible makes it report tracepoint programs as
 * preemptible where they are not, to run the spare programs (compat.bpf.h 10) on any kernel;
 * a feature named in both is hidden.
 */
#define BTF_COMPAT_HIDE_ENV "IOPULSE_HIDE_KERNEL_FEATURES"
#define BTF_COMPAT_FORCE_ENV "IOPULSE_FORCE_KERNEL_FEATURES"

/* Applies both variables to what was detected; an unknown name is an error naming it. */
int btf_compat_env(struct btf_compat *c, char *err, unsigned long errlen);

/*
 * Inspect vmlinux BTF. Returns 0, or -ENOENT when the kernel has no BTF (with a message in
 * err), or another -errno.
 */
int btf_compat_detect(struct btf_compat *c, char *err, unsigned long errlen);

#endif
