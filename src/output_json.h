/* output_json.h - one JSON object per interval (--json) */
#ifndef IOPULSE_OUTPUT_JSON_H
#define IOPULSE_OUTPUT_JSON_H

#include <stdio.h>

#include "interval.h"

/* Writes one line (object + '\n') and flushes. Returns 0 or -errno. */
int output_json_write(FILE *f, const struct iop_interval *iv);

#endif
