/* config_metrics.c - the metrics.* keys: the Prometheus endpoint and what it exports */
#include "config_keys.h"

#include "hist_math.h"

/* The endpoint copies these when it starts (metrics_server_start()): a change waits for a
 * restart. */
const struct key config_metrics_keys[] = {
	{ .name = "listen", .type = KEY_STRING, .offset = FIELD(metrics_listen),
	  .load = config_load_listen, .apply = CONFIG_APPLY_RESTART },
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(metrics_precision),
	  .min = 0, .max = IOP_HIST_K_MAX, .apply = CONFIG_APPLY_RESTART },
	{ .name = "threads", .type = KEY_GLOBS, .offset = FIELD(metrics_threads),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "max_threads", .type = KEY_UINT, .offset = FIELD(metrics_max_threads),
	  .min = 0, .max = 100000, .apply = CONFIG_APPLY_RESTART },
	{ .name = NULL },
};
