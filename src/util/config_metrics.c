/* config_metrics.c - the metrics.* keys: the Prometheus endpoint and what it exports */
#include "config_loader.h"

#include "hist_math.h"

const struct key config_metrics_keys[] = {
	{ .name = "listen", .type = KEY_LISTEN, .offset = FIELD(metrics_listen) },
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(metrics_precision),
	  .min = 0, .max = IOP_HIST_K_MAX },
	{ .name = "threads", .type = KEY_GLOBS, .offset = FIELD(metrics_threads) },
	{ .name = "max_threads", .type = KEY_UINT, .offset = FIELD(metrics_max_threads),
	  .min = 0, .max = 100000 },
	{ .name = NULL },
};
