/* diskstats.c - /proc/diskstats as the daemon reads it: one line, and the interval's stamp of
 * which devices were idle */
#include "diskstats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "devices.h"

int diskstats_parse_line(const char *line, struct diskstats_line *out)
{
	unsigned long long v[17] = { 0 };
	char name[64];
	int n;

	n = sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu %llu %llu %llu", &out->major, &out->minor, name, &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12],
		   &v[13], &v[14], &v[15], &v[16]);
	if (n < 14)
		return -EINVAL;
	out->in_flight = v[8];
	out->ios[IOP_OP_READ] = v[0];
	out->ios[IOP_OP_WRITE] = v[4];
	out->ios[IOP_OP_DISCARD] = v[11];
	out->ios[IOP_OP_FLUSH] = v[15];
	out->sectors[IOP_OP_READ] = v[2];
	out->sectors[IOP_OP_WRITE] = v[6];
	out->sectors[IOP_OP_DISCARD] = v[13];
	out->sectors[IOP_OP_FLUSH] = 0;
	out->completed = v[0] + v[4] + v[11] + v[15];
	return 0;
}

struct diskstats {
	const char *path;
	uint64_t reads;
	bool *seen;                    /* the first read found device i idle ... */
	struct diskstats_line *first;  /* ... with these counts */
	size_t cap;
	char line[512];
};

int diskstats_new(struct diskstats **out, const char *path)
{
	struct diskstats *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->path = path ? path : "/proc/diskstats";
	*out = d;
	return 0;
}

struct diskstats *diskstats_free(struct diskstats *d)
{
	if (!d)
		return NULL;
	free(d->seen);
	free(d->first);
	free(d);
	return NULL;
}

uint64_t diskstats_reads(const struct diskstats *d)
{
	return d->reads;
}

static bool same_counts(const struct diskstats_line *a, const struct diskstats_line *b)
{
	return !memcmp(a->ios, b->ios, sizeof(a->ios)) &&
	       !memcmp(a->sectors, b->sectors, sizeof(a->sectors));
}

/* One read: the first notes the idle devices and their counts, the second confirms them. */
static int read_once(struct diskstats *d, struct diskstats_dev *devs, size_t n, bool second)
{
	struct diskstats_line l;
	uint32_t kdev;
	size_t i;
	FILE *in = fopen(d->path, "re");

	if (!in)
		return -errno;
	d->reads++;
	while (fgets(d->line, sizeof(d->line), in)) {
		if (diskstats_parse_line(d->line, &l) || l.in_flight)
			continue;
		kdev = devices_to_kdev(makedev(l.major, l.minor));
		for (i = 0; kdev && i < n; i++) {
			if (devs[i].kdev != kdev)
				continue;
			if (!second) {
				d->seen[i] = true;
				d->first[i] = l;
			} else if (d->seen[i] && same_counts(&d->first[i], &l)) {
				devs[i].idle = true;
				devs[i].line = l;
			}
		}
	}
	fclose(in);
	return 0;
}

int diskstats_stamp(struct diskstats *d, struct diskstats_dev *devs, size_t n, uint64_t *at)
{
	size_t i;
	int op, r;

	if (n > d->cap) {
		bool *s = realloc(d->seen, n * sizeof(*s));
		struct diskstats_line *f = s ? realloc(d->first, n * sizeof(*f)) : NULL;

		if (s)
			d->seen = s;
		if (!f)
			return -ENOMEM;
		d->first = f;
		d->cap = n;
	}
	for (i = 0; i < n; i++) {
		d->seen[i] = false;
		devs[i].idle = false;
	}
	*at = iop_clock_ns(CLOCK_MONOTONIC);
	r = read_once(d, devs, n, false);
	if (r)
		return r;
	for (i = 0; i < n; i++) {
		const uint64_t *base = devs[i].data;

		for (op = 0; op < IOP_OP_MAX; op++) {
			devs[i].ours[op] = base ?
				__atomic_load_n(&base[IOP_C_IOS + op], __ATOMIC_RELAXED) : 0;
			devs[i].ours[IOP_OP_MAX + op] = base ?
				__atomic_load_n(&base[IOP_C_BYTES + op], __ATOMIC_RELAXED) : 0;
		}
	}
	return read_once(d, devs, n, true);
}
