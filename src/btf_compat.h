/* btf_compat.h - kernel differences detected from the running kernel's BTF */
#ifndef IOPULSE_BTF_COMPAT_H
#define IOPULSE_BTF_COMPAT_H

#include <stdbool.h>

struct btf_compat {
	bool have_btf;            /* /sys/kernel/btf/vmlinux loaded */
	bool have_block_tps;      /* btf_trace_block_rq_issue etc. exist (tp_btf possible) */
	unsigned int rq_issue_arg; /* index of struct request * in block_rq_issue's arguments */
};

/*
 * Inspect vmlinux BTF. Returns 0, or -ENOENT when the kernel has no BTF (with a message in
 * err), or another -errno.
 */
int btf_compat_detect(struct btf_compat *c, char *err, unsigned long errlen);

#endif
