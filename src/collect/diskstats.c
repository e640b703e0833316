/* diskstats.c - one line of /proc/diskstats, as the in-flight sweep and the reconciliation
 * read it */
#include "diskstats.h"

#include <errno.h>
#include <stdio.h>

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
