/* config_sync.c - the sync.* keys: tracing of sync calls, and the threads reported */
#include "config_keys.h"

static const struct key threads_keys[] = {
	{ .name = "include", .type = KEY_GLOBS, .offset = FIELD(thread_include),
	  .apply = CONFIG_APPLY_LIVE },
	{ .name = "exclude", .type = KEY_GLOBS, .offset = FIELD(thread_exclude),
	  .apply = CONFIG_APPLY_LIVE },
	{ .name = NULL },
};

const struct key config_sync_keys[] = {
	{ .name = "enabled", .type = KEY_BOOL, .offset = FIELD(sync_enabled),
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = "threads", .type = KEY_SECTION, .sub = threads_keys },
	{ .name = NULL },
};
