/* btf_compat.c - kernel differences detected from the running kernel's BTF */
#include "btf_compat.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	btf__free(btf);
	return 0;
}
