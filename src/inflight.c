/* inflight.c - retires request records whose completion the kernel never reported */
#include "inflight.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bpf/iopulse.h"
#include "log.h"

/*
 * Flush requests and the data part of a flush sequence are left out of the kernel's in_flight
 * count, so "device idle" says nothing about them: they are retired only when this old.
 */
#define FLUSH_SEQ_MAX_NS (30ull * 1000000000ull)

struct inflight {
	struct probes *probes;
	const char *path;
	uint32_t nslots;
	uint32_t *kdev;        /* slot's device when idle_at was taken */
	uint64_t *idle_at;     /* CLOCK_MONOTONIC ns when the slot's device had nothing in flight */
	char line[512];
};

int inflight_new(struct inflight **out, struct probes *p, uint32_t nslots, const char *diskstats)
{
	struct inflight *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->probes = p;
	f->path = diskstats ? diskstats : "/proc/diskstats";
	f->nslots = nslots;
	f->kdev = calloc(nslots, sizeof(*f->kdev));
	f->idle_at = calloc(nslots, sizeof(*f->idle_at));
	if (!f->kdev || !f->idle_at) {
		inflight_free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

struct inflight *inflight_free(struct inflight *f)
{
	if (!f)
		return NULL;
	free(f->kdev);
	free(f->idle_at);
	free(f);
	return NULL;
}

int inflight_parse_line(const char *line, unsigned int *maj, unsigned int *min,
			uint64_t *in_flight)
{
	unsigned long long v[9];
	char name[64];
	int n;

	n = sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu", maj, min,
		   name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]);
	if (n != 12)
		return -EINVAL;
	*in_flight = v[8];
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count(struct probes *p, uint32_t slot, const struct iop_rq_rec *r)
{
	uint64_t *base = probes_slot_data(p, slot);
	unsigned int grp = r->grp;

	if (!base || grp >= IOP_OP_MAX)
		return;
	__atomic_fetch_add(&base[IOP_C_IOS + grp], 1, __ATOMIC_RELAXED);
	if (grp != IOP_OP_FLUSH)
		__atomic_fetch_add(&base[IOP_C_BYTES + grp], r->bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&base[IOP_C_UNSEEN + grp], 1, __ATOMIC_RELAXED);
}

static int retire(struct inflight *f)
{
	size_t n, i;
	struct iop_rq_rec *recs = probes_rq_recs(f->probes, &n);
	int retired = 0;

	for (i = 0; i < n; i++) {
		struct iop_rq_rec *r = &recs[i];
		uint64_t key = __atomic_load_n(&r->key, __ATOMIC_ACQUIRE), d, t;
		uint32_t s = r->slot;

		if (!key || !s || s > f->nslots)
			continue;
		t = f->idle_at[s - 1];
		d = __atomic_load_n(&r->d_ns, __ATOMIC_ACQUIRE);
		if (!t || !d || d >= t)
			continue;
		if (r->flush_seq && t - d < FLUSH_SEQ_MAX_NS)
			continue;
		/* d_ns is the ownership token: the BPF side swaps it out too (count_unseen) */
		if (!__atomic_compare_exchange_n(&r->d_ns, &d, 0, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_compare_exchange_n(&r->key, &key, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
		count(f->probes, s - 1, r);
		retired++;
	}
	return retired;
}

static int stamp_idle(struct inflight *f, const uint32_t *slot_kdev)
{
	uint64_t now = mono_ns(), busy;
	unsigned int maj, min;
	uint32_t s, kdev;
	FILE *in;

	for (s = 0; s < f->nslots; s++) {
		f->idle_at[s] = 0;
		f->kdev[s] = slot_kdev[s];
	}
	in = fopen(f->path, "re");
	if (!in)
		return -errno;
	while (fgets(f->line, sizeof(f->line), in)) {
		if (inflight_parse_line(f->line, &maj, &min, &busy) || busy)
			continue;
		kdev = (maj << IOP_KDEV_MINORBITS) | min;
		for (s = 0; s < f->nslots; s++)
			if (kdev && f->kdev[s] == kdev)
				f->idle_at[s] = now;
	}
	fclose(in);
	return 0;
}

int inflight_sweep(struct inflight *f, const uint32_t *slot_kdev)
{
	int retired = 0, r;
	uint32_t s;
	bool any = false;

	for (s = 0; s < f->nslots; s++) {
		if (f->kdev[s] != slot_kdev[s])
			f->idle_at[s] = 0;     /* slot handed to another device since */
		any = any || f->idle_at[s];
	}
	if (any)
		retired = retire(f);
	r = stamp_idle(f, slot_kdev);
	if (r)
		return r;
	return retired;
}
