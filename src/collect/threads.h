/* threads.h - per-thread fsync/fdatasync/sync_file_range deltas from the kernel sync table */
#ifndef IOPULSE_THREADS_H
#define IOPULSE_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "devices.h"
#include "interval.h"
#include "probes.h"

struct threads;

int threads_new(struct threads **out, struct probes *p, struct devices *d);
struct threads *threads_free(struct threads *t);

/*
 * Read the kernel table and return the threads that made sync calls since the previous
 * call, filtered by the config's thread globs. *out stays valid until the next call.
 * *evicted: entries of exited threads removed from the kernel table by this call (after
 * their last calls were reported: nothing is lost).
 */
int threads_collect(struct threads *t, const struct iop_config *c,
		    struct iop_thread_interval **out, size_t *n, uint64_t *evicted);

/* Whether thread tid of process tgid exists (true when /proc cannot say). */
bool threads_alive(uint32_t tgid, uint32_t tid);

/* Process name and ceph-osd id of a process (osd_id -1 when it is not a ceph-osd). */
void threads_process_info(int tgid, char *name, size_t namelen, int *osd_id);

#endif
