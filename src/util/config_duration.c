/* config_duration.c - durations such as "500ms", "1s", "2m" or "0.25", strictly parsed */
#include "config_duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

int config_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	return config_parse_duration_range_ms(s, IOP_INTERVAL_MS_MIN, IOP_INTERVAL_MS_MAX, out_ms);
}

int config_parse_duration_range_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
				   uint64_t *out_ms)
{
	static const struct { const char *suffix; uint64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "", 1000 }, { "m", 60000 }, { "h", 3600000 },
	};
	uint64_t whole = 0, frac = 0, frac_scale = 1, mult = 0, ms;
	bool huge = false;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	/* Past 10^12 of any unit stop adding digits: whole * mult must not overflow. */
	for (; *p >= '0' && *p <= '9'; p++) {
		if (!huge)
			whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > 1000000000000ULL)
			huge = true;
	}
	if (*p == '.') {
		if (*++p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (frac_scale == 1000000000ULL) /* more than 9 decimals */
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_scale *= 10;
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) == 0)
			mult = units[i].ms;
	}
	if (!mult || (frac * mult) % frac_scale != 0)
		return -EINVAL;
	if (huge)
		return -ERANGE;
	ms = whole * mult + frac * mult / frac_scale;
	if (ms < min_ms || ms > max_ms)
		return -ERANGE;
	*out_ms = ms;
	return 0;
}
