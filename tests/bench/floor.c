/* floor.c - loads floor.bpf.c's empty programs until SIGINT/SIGTERM (benchmark baseline) */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct floor_bpf *skel;
	int sync = argc > 1 && !strcmp(argv[1], "sync");

	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: open failed: %s\n", strerror(errno));
		return 1;
	}
	bpf_program__set_autoload(skel->progs.floor_bio_queue, !sync);
	bpf_program__set_autoload(skel->progs.floor_rq_insert, !sync);
	bpf_program__set_autoload(skel->progs.floor_rq_issue, !sync);
	bpf_program__set_autoload(skel->progs.floor_rq_complete, !sync);
	bpf_program__set_autoload(skel->progs.floor_enter_fdatasync, sync);
	bpf_program__set_autoload(skel->progs.floor_exit_fdatasync, sync);
	if (floor_bpf__load(skel) || floor_bpf__attach(skel)) {
		fprintf(stderr, "floor: load/attach failed: %s\n", strerror(errno));
		floor_bpf__destroy(skel);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "floor: ready (%s)\n", sync ? "sync" : "block");
	while (!stop)
		pause();
	floor_bpf__destroy(skel);
	return 0;
}
