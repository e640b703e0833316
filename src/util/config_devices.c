/* config_devices.c - the devices.* keys: which block devices are reported, partitions rolled up */
#include "config_keys.h"

const struct key config_devices_keys[] = {
	{ .name = "include", .type = KEY_GLOBS, .offset = FIELD(dev_include),
	  .apply = CONFIG_APPLY_LIVE },
	{ .name = "exclude", .type = KEY_GLOBS, .offset = FIELD(dev_exclude),
	  .apply = CONFIG_APPLY_LIVE },
	{ .name = "rollup_partitions", .type = KEY_BOOL, .offset = FIELD(rollup_partitions),
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = NULL },
};
