// SPDX-License-Identifier: GPL-2.0
/* floor.bpf.c - empty programs on the tracepoints iopulse uses: the cost floor of attaching */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("tp_btf/block_bio_queue")
int floor_bio_queue(u64 *ctx) { return 0; }

SEC("tp_btf/block_rq_insert")
int floor_rq_insert(u64 *ctx) { return 0; }

SEC("tp_btf/block_rq_issue")
int floor_rq_issue(u64 *ctx) { return 0; }

SEC("tp_btf/block_rq_complete")
int floor_rq_complete(u64 *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_enter_fdatasync")
int floor_enter_fdatasync(void *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_exit_fdatasync")
int floor_exit_fdatasync(void *ctx) { return 0; }

char LICENSE[] SEC("license") = "GPL";
