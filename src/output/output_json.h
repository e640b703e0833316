/* output_json.h - one JSON object per interval (--json) */
#ifndef IOPULSE_OUTPUT_JSON_H
#define IOPULSE_OUTPUT_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "interval.h"

/* Also print every histogram's non-empty buckets as [[index, count], ...] (--json-buckets). */
void output_json_set_buckets(bool on);

/* Writes one line (object + '\n') and flushes. Returns 0 or -errno. */
int output_json_write(FILE *f, const struct iop_interval *iv);

#endif
