/*
 * floor.c - loads the benchmark's baseline programs until SIGINT/SIGTERM:
 *   block | sync                      floor.bpf.c's empty programs (the cost of attaching)
 *   complete                          the empty completion program alone (the completion-only
 *                                     mode's floor)
 *   bound-request | bound-bio | bound-sync | bound-complete
 *                                     bound.bpf.c's least-work programs (a cost bound)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "floor.skel.h"
#include "bound.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void wait_for_signal(const char *mode)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "floor: ready (%s)\n", mode);
	while (!stop)
		pause();
}

static int run_floor(const char *mode)
{
	int sync = !strcmp(mode, "sync"), block = !strcmp(mode, "block");
	struct floor_bpf *skel = floor_bpf__open();

	if (!skel)
		return -errno;
	bpf_program__set_autoload(skel->progs.floor_bio_queue, block);
	bpf_program__set_autoload(skel->progs.floor_rq_insert, block);
	bpf_program__set_autoload(skel->progs.floor_rq_issue, block);
	bpf_program__set_autoload(skel->progs.floor_rq_complete, !sync);
	bpf_program__set_autoload(skel->progs.floor_enter_fdatasync, sync);
	bpf_program__set_autoload(skel->progs.floor_exit_fdatasync, sync);
	if (floor_bpf__load(skel) || floor_bpf__attach(skel)) {
		floor_bpf__destroy(skel);
		return -errno;
	}
	wait_for_signal(mode);
	floor_bpf__destroy(skel);
	return 0;
}

static int run_bound(const char *mode)
{
	int sync = !strcmp(mode, "bound-sync"), bio = !strcmp(mode, "bound-bio");
	int compl = !strcmp(mode, "bound-complete");
	struct bound_bpf *skel = bound_bpf__open();

	if (!skel)
		return -errno;
	skel->rodata->from_bio = bio;
	bpf_program__set_autoload(skel->progs.bound_bio_queue, bio);
	bpf_program__set_autoload(skel->progs.bound_rq_issue, !sync && !compl);
	bpf_program__set_autoload(skel->progs.bound_rq_complete, !sync && !compl);
	bpf_program__set_autoload(skel->progs.bound_compl, compl);
	bpf_program__set_autoload(skel->progs.bound_enter_fdatasync, sync);
	bpf_program__set_autoload(skel->progs.bound_exit_fdatasync, sync);
	if (bound_bpf__load(skel) || bound_bpf__attach(skel)) {
		bound_bpf__destroy(skel);
		return -errno;
	}
	wait_for_signal(mode);
	bound_bpf__destroy(skel);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "block";
	int err;

	if (!strncmp(mode, "bound-", 6) && (!strcmp(mode, "bound-request") ||
					    !strcmp(mode, "bound-bio") || !strcmp(mode, "bound-sync") ||
					    !strcmp(mode, "bound-complete")))
		err = run_bound(mode);
	else if (!strcmp(mode, "block") || !strcmp(mode, "sync") || !strcmp(mode, "complete"))
		err = run_floor(mode);
	else {
		fprintf(stderr, "usage: %s block|sync|complete|bound-request|bound-bio|bound-sync|"
			"bound-complete\n",
			argv[0]);
		return 2;
	}
	if (err) {
		fprintf(stderr, "floor: %s: load/attach failed: %s\n", mode, strerror(-err));
		return 1;
	}
	return 0;
}
