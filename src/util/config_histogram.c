/* config_histogram.c - the histogram.* keys: bucket precision, where queue wait starts */
#include "config_loader.h"

#include <stdint.h>

#include "hist_math.h"

_Static_assert(sizeof(unsigned int) == sizeof(uint32_t), "hist_precision is written as uint32_t");

const struct key config_histogram_keys[] = {
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(hist_precision),
	  .min = IOP_HIST_K_MIN, .max = IOP_HIST_K_MAX },
	{ .name = "queue_from_bio", .type = KEY_BOOL, .offset = FIELD(queue_from_bio) },
	{ .name = NULL },
};
