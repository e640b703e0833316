/* btf_compat.c - kernel differences detected from the running kernel's BTF */
#include "btf_compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/bpf.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/*
 * block_rq_issue(struct request_queue *q, struct request *rq) became block_rq_issue(struct
 * request *rq) in 5.11 (a54895fa057c). The tracepoint's BTF typedef btf_trace_block_rq_issue
 * is a pointer to a function whose first parameter is the tracepoint's void *data; count the
 * parameters after it.
 */
static int tp_args(const struct btf *btf, const char *typedef_name)
{
	const struct btf_type *t;
	int id = btf__find_by_name_kind(btf, typedef_name, BTF_KIND_TYPEDEF);

	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	t = btf__type_by_id(btf, t->type);          /* pointer */
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = btf__type_by_id(btf, t->type);          /* func proto */
	if (!t || !btf_is_func_proto(t))
		return -EINVAL;
	return btf_vlen(t) - 1;
}

static bool enum_has(const struct btf *btf, const char *enum_name, const char *value)
{
	int id = btf__find_by_name_kind(btf, enum_name, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;
	int i;

	if (id < 0)
		return false;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), value))
			return true;
	return false;
}

long long btf_compat_enumerator(const struct btf *btf, const char *name)
{
	unsigned int id, n = btf__type_cnt(btf);
	int i;

	for (id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (btf_is_enum(t)) {
			const struct btf_enum *e = btf_enum(t);

			for (i = 0; i < btf_vlen(t); i++)
				if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
					return e[i].val < 0 ? -ERANGE : e[i].val;
		} else if (btf_is_enum64(t)) {
			const struct btf_enum64 *e = btf_enum64(t);

			for (i = 0; i < btf_vlen(t); i++)
				if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
					return (long long)btf_enum64_value(e + i);
		}
	}
	return -ENOENT;
}

bool btf_compat_has_member(const struct btf *btf, const char *struct_name, const char *member)
{
	int id = btf__find_by_name_kind(btf, struct_name, BTF_KIND_STRUCT);
	const struct btf_member *m;
	const struct btf_type *t;
	int i;

	if (id < 0)
		return false;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), member))
			return true;
	return false;
}

bool btf_compat_tp_preemptible(const struct btf *btf)
{
	return btf_compat_has_member(btf, "tp_transition_snapshot", "srcu_gp");
}

/* 1 << the bit called name, fallback where no enum has it, 0 for a bit out of range */
static unsigned int enum_bit(const struct btf *btf, const char *name, unsigned int fallback)
{
	long long bit = btf_compat_enumerator(btf, name);

	if (bit < 0)
		return fallback;
	return bit < 32 ? 1U << bit : 0;
}

/*
 * Whether the verifier takes an atomic fetch-add (BPF_ATOMIC | BPF_FETCH, 5.12): a socket
 * filter adds to a stack slot and keeps the old value. Before 5.12 the instruction's imm was
 * reserved and the load fails with EINVAL.
 */
static bool probe_atomics(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1,
		  .off = -8, .imm = BPF_ADD | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "iop_atomics", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Applies BTF_COMPAT_FORCE_ENV; an unknown name is an error naming it. */
static int force_features(struct btf_compat *c, char *err, unsigned long errlen)
{
	const char *v = getenv(BTF_COMPAT_FORCE_ENV), *p;
	size_t len;

	for (p = v; p && *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		if (len == 14 && !strncmp(p, "tp_preemptible", len))
			c->tp_preemptible = true;
		else if (len) {
			snprintf(err, errlen, "%s: unknown feature '%.*s' (known: tp_preemptible)",
				 BTF_COMPAT_FORCE_ENV, (int)len, p);
			return -EINVAL;
		}
	}
	return 0;
}

/* Applies BTF_COMPAT_HIDE_ENV; an unknown name is an error naming it. */
static int hide_features(struct btf_compat *c, char *err, unsigned long errlen)
{
	const char *v = getenv(BTF_COMPAT_HIDE_ENV), *p;
	size_t len;

	for (p = v; p && *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		if (len == 6 && !strncmp(p, "tp_btf", len))
			c->have_block_tps = false;
		else if (len == 12 && !strncmp(p, "task_storage", len))
			c->have_task_storage = false;
		else if (len == 11 && !strncmp(p, "rdonly_cast", len))
			c->have_rdonly_cast = false;
		else if (len == 7 && !strncmp(p, "atomics", len))
			c->have_atomics = false;
		else if (len == 14 && !strncmp(p, "tp_preemptible", len))
			c->tp_preemptible = false;
		else if (len == 7 && !strncmp(p, "io_done", len))
			c->have_io_done = false;
		else if (len) {
			snprintf(err, errlen, "%s: unknown feature '%.*s' (known: tp_btf, "
				 "task_storage, rdonly_cast, atomics, tp_preemptible, io_done)",
				 BTF_COMPAT_HIDE_ENV, (int)len, p);
			return -EINVAL;
		}
	}
	return 0;
}

int btf_compat_detect(struct btf_compat *c, char *err, unsigned long errlen)
{
	struct btf *btf;
	int n;

	memset(c, 0, sizeof(*c));
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux: %s); "
			 "iopulse needs CONFIG_DEBUG_INFO_BTF=y", strerror(errno));
		return -ENOENT;
	}
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		n = -errno;
		snprintf(err, errlen, "cannot load kernel BTF: %s", strerror(-n));
		return n;
	}
	c->have_btf = true;
	n = tp_args(btf, "btf_trace_block_rq_issue");
	if (n >= 1) {
		c->have_block_tps = true;
		c->rq_issue_arg = n >= 2 ? 1 : 0;
	}
	/* block_bio_queue(struct request_queue *q, struct bio *bio) before 5.11 (e8a676d61c07) */
	n = tp_args(btf, "btf_trace_block_bio_queue");
	c->bio_queue_arg = n >= 2 ? 1 : 0;
	/* block_split(struct request_queue *q, struct bio *bio, unsigned int new_sector) before 5.11 */
	n = tp_args(btf, "btf_trace_block_split");
	c->split_arg = n >= 3 ? 1 : 0;
	c->have_task_storage = enum_has(btf, "bpf_map_type", "BPF_MAP_TYPE_TASK_STORAGE") &&
			       enum_has(btf, "bpf_func_id", "BPF_FUNC_get_current_task_btf");
	c->have_rdonly_cast = btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	c->rqf_flush_seq = enum_bit(btf, "__RQF_FLUSH_SEQ", BTF_COMPAT_RQF_FLUSH_SEQ_OLD);
	c->rqf_io_stat = enum_bit(btf, "__RQF_IO_STAT", 0);
	c->plug_clock = btf_compat_has_member(btf, "blk_plug", "cur_ktime");
	c->tp_preemptible = btf_compat_tp_preemptible(btf);
	c->have_io_done = tp_args(btf, "btf_trace_block_io_done") >= 1;
	c->have_atomics = probe_atomics();
	btf__free(btf);
	return btf_compat_env(c, err, errlen);
}

int btf_compat_env(struct btf_compat *c, char *err, unsigned long errlen)
{
	return force_features(c, err, errlen) ?: hide_features(c, err, errlen);
}
