/* diskstats.h - one line of /proc/diskstats, as the in-flight sweep and the reconciliation
 * read it (Documentation/admin-guide/iostats.rst) */
#ifndef IOPULSE_DISKSTATS_H
#define IOPULSE_DISKSTATS_H

#include <stdint.h>

#include "../bpf/iopulse.h"

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

#endif
