/* config_duration.h - durations such as "500ms", "1s", "2m" or "0.25", strictly parsed */
#ifndef IOPULSE_CONFIG_DURATION_H
#define IOPULSE_CONFIG_DURATION_H

#include <stdint.h>

/* Allowed range of interval (and of any duration accepted by config_parse_duration_ms). */
#define IOP_INTERVAL_MS_MIN 10ULL
#define IOP_INTERVAL_MS_MAX 3600000ULL

/*
 * Parse a duration such as "1s", "250ms", "2m", "1h", "0.5s" or a bare number of seconds
 * ("2", "0.25"). Returns -EINVAL if s is not such a duration or not a whole number of
 * milliseconds, -ERANGE if it lies outside IOP_INTERVAL_MS_MIN..IOP_INTERVAL_MS_MAX;
 * *out_ms is written only on success.
 */
int config_parse_duration_ms(const char *s, uint64_t *out_ms);

/*
 * The same syntax with the caller's range (e.g. a run length: 1 ms .. a day). Numbers above
 * 10^12 of their unit always give -ERANGE.
 */
int config_parse_duration_range_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
				   uint64_t *out_ms);

#endif
