/* sync_watch.h - the thread and process names whose sync calls get the table's reserved room */
#ifndef IOPULSE_SYNC_WATCH_H
#define IOPULSE_SYNC_WATCH_H

#include <stdbool.h>

#include "config.h"

/*
 * Watched: a thread whose name matches a glob of metrics.threads or sync.threads.include,
 * or any thread of a process named ceph-osd.
 */
#define SYNC_WATCH_PROCESS "ceph-osd"

struct sync_watch;

int sync_watch_new(struct sync_watch **out);
struct sync_watch *sync_watch_free(struct sync_watch *w);

/* Whether a thread named comm of a process named process is watched under c. */
bool sync_watch_match(const struct iop_config *c, const char *comm, const char *process);

/*
 * Brings the kernel's sync_watch map (fd) to c: its globs without wildcards as thread names,
 * SYNC_WATCH_PROCESS, and the names seen that match a wildcard glob; names c no longer
 * watches leave. 0 or -errno.
 */
int sync_watch_refresh(struct sync_watch *w, int fd, const struct iop_config *c);

/*
 * A thread name seen in the sync table: when it matches a wildcard glob of c, the kernel
 * learns it (a glob cannot be matched there). 0 or -errno.
 */
int sync_watch_seen(struct sync_watch *w, int fd, const struct iop_config *c, const char *comm);

#endif
