/* fake_probes.h - the probes' maps in plain memory, for the units that read and write them */
#ifndef IOPULSE_FAKE_PROBES_H
#define IOPULSE_FAKE_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iopulse.h"
#include "probes.h"

struct probes {
	bool completion_only;
	struct iop_rq_rec *recs;   /* NULL: mapping the records fails (ENODEV) */
	size_t nrecs;
	uint64_t *data;            /* nslots x IOP_C_MAX counters */
	uint32_t nslots;
	unsigned int maps;         /* records mapped and not unmapped */
};

/* A fake with nslots slots and nsets sets of request records (0: none). */
struct probes *fake_probes_new(uint32_t nslots, size_t nsets, bool completion_only);
void fake_probes_free(struct probes *p);

/* The record set of key in p (what the BPF side's rec_set picks). */
struct iop_rq_rec *fake_probes_set(struct probes *p, uint64_t key);

#endif
