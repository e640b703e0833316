// SPDX-License-Identifier: GPL-2.0
/*
 * jit_lines.c - where each source line of a loaded BPF program starts in its JIT image.
 *
 * Usage: iopulse-bench-jit-lines PROG_ID
 * Prints one line per line-info record: offset into the JIT image (hex), source line number,
 * source text. tests/bench/profile.py maps perf samples (symbol + offset) through it; bpftool
 * and perf do the same only when built with libbfd, which Debian's are not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

static int info_of(int fd, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);

	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	struct bpf_line_info *li;
	struct btf *btf;
	__u64 *jli, ksym = 0;
	__u32 nl, njl, i;
	int fd, err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROG_ID\n", argv[0]);
		return 2;
	}
	fd = bpf_prog_get_fd_by_id(atoi(argv[1]));
	if (fd < 0 || (err = info_of(fd, &info))) {
		fprintf(stderr, "jit-lines: program %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	nl = info.nr_line_info;
	njl = info.nr_jited_line_info;
	if (!nl || !njl || info.line_info_rec_size < sizeof(*li)) {
		fprintf(stderr, "jit-lines: program %s has no line info (built without -g?)\n",
			argv[1]);
		return 1;
	}
	li = calloc(nl, info.line_info_rec_size);
	jli = calloc(njl, sizeof(*jli));
	if (!li || !jli)
		return 1;
	{
		struct bpf_prog_info want = {
			.nr_line_info = nl, .line_info_rec_size = info.line_info_rec_size,
			.line_info = (__u64)(unsigned long)li,
			.nr_jited_line_info = njl, .jited_line_info_rec_size = sizeof(*jli),
			.jited_line_info = (__u64)(unsigned long)jli,
			.nr_jited_ksyms = 1, .jited_ksyms = (__u64)(unsigned long)&ksym,
		};
		__u32 btf_id = info.btf_id;

		info = want;
		if ((err = info_of(fd, &info))) {
			fprintf(stderr, "jit-lines: program %s: %s\n", argv[1], strerror(-err));
			return 1;
		}
		btf = btf__load_from_kernel_by_id(btf_id);
	}
	for (i = 0; i < nl && i < njl; i++) {
		struct bpf_line_info *l = (void *)((char *)li + i * info.line_info_rec_size);
		const char *src = btf ? btf__name_by_offset(btf, l->line_off) : NULL;

		printf("%llx\t%u\t%s\n", (unsigned long long)(jli[i] - ksym),
		       BPF_LINE_INFO_LINE_NUM(l->line_col), src ? src : "");
	}
	return 0;
}
