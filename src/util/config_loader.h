/* config_loader.h - the config file's key tables and typed value loaders (internal to config*.c) */
#ifndef IOPULSE_CONFIG_LOADER_H
#define IOPULSE_CONFIG_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "config.h"
#include "config_apply.h"

/* One file being loaded; errors are written to err as "FILE:LINE:COLUMN: key 'a.b': what". */
struct loader {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

enum key_type {
	KEY_SECTION, KEY_DURATION, KEY_UINT, KEY_BOOL, KEY_GLOBS, KEY_PATH, KEY_LOG_LEVEL,
	KEY_MODE, KEY_GROUP, KEY_LISTEN, KEY_FILE, KEY_HIST_MODE,
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset;          /* of the field in struct iop_config; unused for sections */
	uint32_t min, max;      /* KEY_UINT range */
	const struct key *sub;  /* KEY_SECTION: its keys, ending with an entry without name */
	enum config_apply apply; /* how a change applies on SIGHUP (config_plan_reload) */
	const char *note;       /* logged with a live change: what it does not change */
};

#define FIELD(f) offsetof(struct iop_config, f)

/* The top level's keys (config.c) and the sections' key tables, each in its config_<section>.c. */
extern const struct key config_top_keys[];
extern const struct key config_histogram_keys[];
extern const struct key config_devices_keys[];
extern const struct key config_sync_keys[];
extern const struct key config_server_keys[];
extern const struct key config_metrics_keys[];

/*
 * Load the mapping map into c by keys (prefix: the section's dotted name, "" at the top).
 * Unknown and duplicate keys are errors. 0, or -EINVAL with the message in ld->err (-ENOMEM).
 */
int loader_section(struct loader *ld, const yaml_node_t *map, const struct key *keys,
		   const char *prefix, struct iop_config *c);

/* "FILE:LINE:COLUMN: key 'a.b': what" ("top level: what" for key ""); returns -EINVAL. */
__attribute__((format(printf, 4, 5)))
int loader_fail(struct loader *ld, const yaml_node_t *at, const char *key, const char *fmt, ...);

/* Keep the message on one line whatever the file or the value contains. */
void loader_one_line(char *s);

bool loader_is_plain(const yaml_node_t *n);
/* An unquoted empty value, "~" or "null": "key:" with nothing (or only comments) after it. */
bool loader_is_null(const yaml_node_t *n);
/* A user's value for quoting in a message, cut to a readable length. */
const char *loader_shown(const yaml_node_t *n, char *buf, size_t len);
/* A non-empty string scalar without NUL bytes (what: the expected value, for the message). */
int loader_string(struct loader *ld, const yaml_node_t *n, const char *key, const char *what,
		  const char **out);
/* Replace *out with a copy of s (0 or -ENOMEM). */
int loader_set_string(char **out, const char *s);

/* config_histogram.c: histogram.mode (KEY_HIST_MODE). */
int config_load_hist_mode(struct loader *ld, const yaml_node_t *n, const char *key,
			  enum iop_hist_mode *out);

/* config_server.c: a group name (KEY_GROUP) or a listen address (KEY_LISTEN); "" for none. */
int config_load_name(struct loader *ld, const yaml_node_t *n, const char *key, char **out,
		     bool listen);

#endif
