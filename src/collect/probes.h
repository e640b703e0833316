/* probes.h - loads, attaches and reads the BPF programs and maps */
#ifndef IOPULSE_PROBES_H
#define IOPULSE_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interval.h"

struct probes_opts {
	unsigned int hist_k;
	bool rollup_partitions;
	bool queue_from_bio;   /* queue wait from bio submission (a program and record per bio) */
	bool completion_only;  /* histogram.mode: completion: one program at completion, reading
	                        * the kernel's own stamps, no records (README) */
	bool sync_enabled;
	bool bpf_stats;
	uint32_t max_devices;
	uint32_t max_threads;
	uint32_t max_inflight;
};

struct probes;

/* The capabilities loading the programs takes (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN):
 * 0, or -EPERM with one line naming what is missing. */
int probes_check_caps(char *err, size_t errlen);

/* Open, load and attach. On error returns -errno and one line in err. */
int probes_new(struct probes **out, const struct probes_opts *o, char *err, size_t errlen);
struct probes *probes_free(struct probes *p);

const char *probes_attach_mode(const struct probes *p);   /* "tp_btf" or "raw_tp" */
/* The completion-only mode is loaded: no request records (nothing for the in-flight sweep). */
bool probes_completion_only(const struct probes *p);
/* Sync tracking loaded; when it was asked for but is off, the reason (else ""). */
bool probes_sync_on(const struct probes *p);
const char *probes_sync_off_reason(const struct probes *p);
unsigned int probes_hist_k(const struct probes *p);
unsigned int probes_hist_nb(const struct probes *p);
size_t probes_slot_u64s(const struct probes *p);
uint32_t probes_max_devices(const struct probes *p);

/* Cumulative counters then histograms of one device slot (mmap of the kernel map). */
uint64_t *probes_slot_data(struct probes *p, uint32_t slot);

/*
 * The in-flight request records (iopulse.h), shared with the BPF programs: n records, or NULL
 * with errno set. Mapped on demand (the mapping is resident while it exists), unmap after use.
 */
struct iop_rq_rec *probes_rq_recs_map(struct probes *p, size_t *n);
void probes_rq_recs_unmap(struct probes *p);

/* Calls fn for every (kernel dev, slot) pair the BPF side has assigned. */
int probes_for_each_slot(struct probes *p, int (*fn)(void *ctx, uint32_t kdev, uint32_t slot),
			 void *ctx);

/*
 * Unassign a slot in two steps, so that an event that looked the slot up just before the
 * release cannot leave counts in it for the next device: probes_release_slot forgets kdev
 * (new events for it get a fresh slot); probes_recycle_slots, called an interval later, zeroes
 * the slots released before its previous call and hands them back to the BPF side.
 */
int probes_release_slot(struct probes *p, uint32_t kdev, uint32_t slot);
int probes_recycle_slots(struct probes *p);

/* Cumulative global counters (enum iop_global_id). */
const volatile uint64_t *probes_globals(struct probes *p);

int probes_sync_fd(const struct probes *p);
int probes_sync_watch_fd(const struct probes *p);   /* names given reserved room (iopulse.h) */
/* The sync table's room, shared with the programs (iopulse.h iop_sync_ctl). */
struct iop_sync_ctl *probes_sync_ctl(struct probes *p);
size_t probes_sync_value_size(const struct probes *p);
uint32_t probes_sync_capacity(const struct probes *p);   /* sync-table entries */

/* Cumulative run count and run time of each attached program; returns count or -errno. */
int probes_prog_stats(struct probes *p, struct iop_bpf_prog_stat *out, size_t max);
bool probes_bpf_stats_on(const struct probes *p);

#endif
