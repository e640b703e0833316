/* sync_evict.h - which idle sync-table entries give way when unwatched threads fill the table */
#ifndef IOPULSE_SYNC_EVICT_H
#define IOPULSE_SYNC_EVICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One entry of the kernel's sync table, as the daemon last read it. */
struct sync_evict_entry {
	uint32_t uid;        /* the thread's uid */
	bool keep;           /* never picked: a watched thread's, or one that made calls lately */
	uint64_t last_ns;    /* its latest call */
};

/*
 * Picks entries to remove from the n held so that at most target remain: entries not kept,
 * from the uid holding the most entries first, down to the next uid's count and then evenly
 * (so one uid's flood gives way before anyone else's threads), each uid's least recently
 * active first. Writes their positions to out (n long); returns how many (fewer when too few
 * may go), or -ENOMEM.
 */
long sync_evict_pick(const struct sync_evict_entry *e, size_t n, size_t target, size_t *out);

#endif
