/* interval.h - one interval's telemetry as the aggregator hands it to the output units */
#ifndef IOPULSE_INTERVAL_H
#define IOPULSE_INTERVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "iopulse.h"
#include "devices.h"

/*
 * A histogram delta for the bucket layout of precision k (hist_math.h), dense or sparse:
 * counts[nbuckets] when counts is set, else nsparse (idx[i], cnt[i]) pairs in rising idx order.
 * An interval touches a few dozen of a histogram's buckets, so the daemon hands out sparse ones.
 */
struct iop_hist_view {
	unsigned int k;
	unsigned int nbuckets;
	const uint64_t *counts;
	unsigned int nsparse;
	const uint32_t *idx;
	const uint64_t *cnt;
};

struct iop_dev_interval {
	const struct iop_device *info;   /* name, model, labels; never NULL */
	uint64_t cnt[IOP_C_MAX];         /* deltas over the interval (IOP_C_PREV_END is 0) */
	struct iop_hist_view hist[IOP_H_MAX];
};

struct iop_thread_interval {
	uint32_t tgid;
	uint32_t tid;
	char comm[16];                   /* thread name */
	char process[16];                /* name of the thread group leader */
	int osd_id;                      /* ceph-osd id of the process, -1 if none */
	dev_t dev;                       /* user-space dev_t of the synced file's device */
	const struct iop_device *device; /* NULL if the device is unknown to the device table */
	uint64_t calls[IOP_SYNC_MAX];    /* deltas, by enum iop_sync_kind */
	uint64_t flush_bios;
	uint64_t lat_sum_ns;             /* all kinds */
	uint64_t lat_max_ns;             /* max since the entry was created (not per interval) */
	struct iop_hist_view lat;        /* all kinds */
	uint64_t kind_lat_sum_ns[IOP_SYNC_MAX];
	struct iop_hist_view kind_lat[IOP_SYNC_MAX];
};

struct iop_bpf_prog_stat {
	char name[64];
	uint64_t run_cnt;                /* deltas over the interval */
	uint64_t run_time_ns;
	uint64_t missed;                 /* runs the kernel skipped (recursion on a CPU) */
};

struct iop_interval {
	uint64_t seq;
	unsigned int hist_k;              /* histogram precision of every histogram */
	bool completion_only;             /* histogram.mode: completion (README) */
	uint64_t start_realtime_ns, end_realtime_ns;
	uint64_t start_mono_ns, end_mono_ns;
	size_t ndevs;
	struct iop_dev_interval *devs;
	size_t nthreads;
	struct iop_thread_interval *threads;
	uint64_t global[IOP_G_MAX];      /* deltas */
	uint64_t sync_evictions;         /* sync-table entries evicted during the interval */
	bool bpf_stats;                  /* kernel.bpf_stats_enabled was on */
	size_t nprogs;
	struct iop_bpf_prog_stat *progs;
};

#endif
