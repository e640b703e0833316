/* config_histogram.c - the histogram.* keys: bucket precision, how latencies are taken, where
 * queue wait starts */
#include "config_keys.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hist_math.h"

_Static_assert(sizeof(unsigned int) == sizeof(uint32_t), "hist_precision is written as uint32_t");
_Static_assert(sizeof(enum iop_hist_mode) == sizeof(int), "hist_mode is a KEY_ENUM field");

static const char *const mode_names[] = {
	[IOP_HIST_MODE_FULL] = "full",
	[IOP_HIST_MODE_COMPLETION] = "completion",
};

const char *config_hist_mode_name(enum iop_hist_mode m)
{
	return (unsigned int)m < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[m] : "?";
}

int config_hist_mode_parse(const char *s, enum iop_hist_mode *out)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum iop_hist_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int load_hist_mode(struct loader *ld, const yaml_node_t *n, const char *key, void *field)
{
	static const char *what = "a histogram mode (full, completion)";
	char buf[48];
	const char *s;
	int r;

	r = loader_string(ld, n, key, what, &s);
	if (r < 0)
		return r;
	if (config_hist_mode_parse(s, field))
		return loader_fail(ld, n, key, "'%s' is not %s", loader_shown(n, buf, sizeof(buf)),
				   what);
	return 0;
}

const struct key config_histogram_keys[] = {
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(hist_precision),
	  .min = IOP_HIST_K_MIN, .max = IOP_HIST_K_MAX, .apply = CONFIG_APPLY_PROBES },
	{ .name = "mode", .type = KEY_ENUM, .offset = FIELD(hist_mode), .load = load_hist_mode,
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = "queue_from_bio", .type = KEY_BOOL, .offset = FIELD(queue_from_bio),
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = NULL },
};
