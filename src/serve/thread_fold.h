/* thread_fold.h - bounds the thread entries of the daemon-life snapshot: exited threads fold
 * into totals per name, and a snapshot too large for a client's message limit folds more */
#ifndef IOPULSE_THREAD_FOLD_H
#define IOPULSE_THREAD_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "update_pb.h"

/* Whether thread tid of process pid still exists. */
typedef bool (*thread_alive_fn)(uint32_t pid, uint32_t tid);

/*
 * Totals per (comm, process, osd_id, device) kept. A name past these takes the place of the
 * least recently used one, whose totals fold into its device's entry for other threads (comm
 * and process empty): a name seen again lately keeps its totals, and the names of exited
 * threads do not hold their places for the daemon's life. An OSD's name (osd_id set) gives
 * way only to another OSD's.
 */
#define THREAD_FOLD_NAMES_MAX 1024

/*
 * Folds each live-thread entry of u whose thread is gone into the entry of its name, process,
 * OSD and device (pid and tid 0; threads_folded counts the threads in it). Counts, sums and
 * histograms add up: nothing is lost. Returns the number of entries folded, or -ENOMEM (u
 * stays consistent, possibly partly folded).
 */
int thread_fold_exited(pb_update *u, thread_alive_fn alive);

/*
 * Folds u's thread entries into each device's entry for other threads, the least active
 * live threads first, then the per-name totals, until u packs into max_bytes. 0, -EMSGSIZE
 * when even one entry per device is too large (u then holds those), or -ENOMEM.
 */
int thread_fold_to_fit(pb_update *u, size_t max_bytes);

#endif
