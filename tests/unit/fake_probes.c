/* fake_probes.c - the probes' maps in plain memory, for the units that read and write them */
#include "fake_probes.h"

#include <errno.h>
#include <stdlib.h>

#include "rq_logic.h"

struct probes *fake_probes_new(uint32_t nslots, size_t nsets, bool completion_only)
{
	struct probes *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->completion_only = completion_only;
	p->nslots = nslots;
	p->data = calloc((size_t)nslots * IOP_C_MAX, sizeof(uint64_t));
	p->nrecs = nsets * IOP_WAYS;
	p->recs = nsets ? calloc(p->nrecs, sizeof(*p->recs)) : NULL;
	if (!p->data || (nsets && !p->recs)) {
		fake_probes_free(p);
		return NULL;
	}
	return p;
}

void fake_probes_free(struct probes *p)
{
	if (!p)
		return;
	free(p->data);
	free(p->recs);
	free(p);
}

struct iop_rq_rec *fake_probes_set(struct probes *p, uint64_t key)
{
	return &p->recs[(size_t)iop_rec_set(key, (unsigned int)(p->nrecs / IOP_WAYS - 1)) *
			IOP_WAYS];
}

bool probes_completion_only(const struct probes *p)
{
	return p->completion_only;
}

uint64_t *probes_slot_data(struct probes *p, uint32_t slot)
{
	return slot < p->nslots ? p->data + (size_t)slot * IOP_C_MAX : NULL;
}

struct iop_rq_rec *probes_rq_recs_map(struct probes *p, size_t *n)
{
	if (!p->recs) {
		errno = ENODEV;
		return NULL;
	}
	p->maps++;
	*n = p->nrecs;
	return p->recs;
}

void probes_rq_recs_unmap(struct probes *p)
{
	if (p->maps)
		p->maps--;
}
