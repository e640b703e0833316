/* config_keys.h - the config file's key tables: the top level (config.c) and each section's */
#ifndef IOPULSE_CONFIG_KEYS_H
#define IOPULSE_CONFIG_KEYS_H

#include <stddef.h>
#include <yaml.h>

#include "config.h"
#include "config_loader.h"

/* A key's field in struct iop_config, the struct every table loads into. */
#define FIELD(f) offsetof(struct iop_config, f)

/* The top level's keys (config.c) and the sections' key tables, each in its config_<section>.c. */
extern const struct key config_top_keys[];
extern const struct key config_histogram_keys[];
extern const struct key config_devices_keys[];
extern const struct key config_sync_keys[];
extern const struct key config_server_keys[];
extern const struct key config_metrics_keys[];

/* A listen address "host:port" whose host resolves, or "" for none (server.tcp,
 * metrics.listen): the load of their KEY_STRING entries, in config_server.c. */
int config_load_listen(struct loader *ld, const yaml_node_t *n, const char *key, void *field);

#endif
