/* diskstats.h - /proc/diskstats as the daemon reads it: one line, and the interval's stamp of
 * which devices were idle (Documentation/admin-guide/iostats.rst) */
#ifndef IOPULSE_DISKSTATS_H
#define IOPULSE_DISKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iopulse.h"

struct diskstats_line {
	unsigned int major, minor;
	uint64_t in_flight;
	uint64_t completed;            /* reads + writes + discards + flushes completed */
	uint64_t ios[IOP_OP_MAX];      /* completed, by enum iop_op */
	uint64_t sectors[IOP_OP_MAX];  /* 512-byte sectors completed, by op (0 for flushes) */
};

/* Parse one line (kernels before 4.18 have no discard fields, before 5.5 no flush fields:
 * those read 0). 0, or -EINVAL. */
int diskstats_parse_line(const char *line, struct diskstats_line *out);

/* Our counts as a stamp copies them: IOs by op, then bytes by op. */
#define DISKSTATS_NCNT (2 * IOP_OP_MAX)

/* One device watched at the stamp, and what the stamp found. */
struct diskstats_dev {
	uint32_t kdev;                 /* kernel dev_t */
	uint32_t slot;                 /* its device slot + 1, 0 if it has none */
	uint64_t *data;                /* that slot's counters (the BPF map), NULL if none */
	bool held;                     /* its line counts exactly the IO its slot counts (a whole
	                                * disk with its partitions rolled up, a partition, or a
	                                * disk without partitions), so the two can be compared */
	bool idle;                     /* the stamp found nothing in flight */
	struct diskstats_line line;    /* ... and these counts */
	uint64_t ours[DISKSTATS_NCNT]; /* ... and our counts then (0 without a slot) */
};

struct diskstats;

/* path: /proc/diskstats or a stand-in (NULL for the default). */
int diskstats_new(struct diskstats **out, const char *path);
struct diskstats *diskstats_free(struct diskstats *d);

/*
 * The interval's stamp: which of the n devices were idle, with the kernel's counts and ours
 * at that moment; *at gets CLOCK_MONOTONIC ns taken before the first read (what was
 * dispatched before it and is not in flight at an idle stamp has completed). The file is read
 * twice: the kernel sums in_flight over CPUs without a lock, so an IO that started on a CPU
 * already summed and completed on one not yet summed makes the sum low, down to a false 0
 * while IOs are in flight (block/genhd.c bdev_count_inflight_rw clamps the negative sum). A
 * device is idle when both reads show nothing in flight and the same counts (a completion
 * that tore the sum would have moved them); our counts are copied between the two reads.
 * 0, or -errno.
 */
int diskstats_stamp(struct diskstats *d, struct diskstats_dev *devs, size_t n, uint64_t *at);

/* How many times the file was opened so far (two per stamp). */
uint64_t diskstats_reads(const struct diskstats *d);

#endif
