/* output_text.h - the live human table (--print) */
#ifndef IOPULSE_OUTPUT_TEXT_H
#define IOPULSE_OUTPUT_TEXT_H

#include <stdio.h>

#include "interval.h"

/* Writes one interval's table. Returns 0 or -errno. */
int output_text_write(FILE *f, const struct iop_interval *iv);

#endif
