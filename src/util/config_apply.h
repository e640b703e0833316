/* config_apply.h - how a change to each config key takes effect on SIGHUP, and reload's plan */
#ifndef IOPULSE_CONFIG_APPLY_H
#define IOPULSE_CONFIG_APPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "config_loader.h"   /* enum config_apply: each key's table entry says */

/* Room for every key the tables hold (test_config holds the tables to it). */
#define CONFIG_KEYS_MAX 64

struct config_change {
	char key[48];             /* dotted name, "server.tls_cert" */
	enum config_apply apply;  /* never CONFIG_APPLY_UNSET */
	const char *note;         /* what else a live change means, or NULL */
};

struct config_plan {
	size_t n;                 /* keys whose value differs */
	bool probes;              /* one of them needs the probes loaded again */
	struct config_change changes[CONFIG_KEYS_MAX];
};

/*
 * Compare next with running key by key over the key tables: each key that differs goes into
 * plan with how its change applies, and one that needs a restart is set back to running's
 * value in next. 0, -ENOMEM (next stays valid for config_release), or -E2BIG when more
 * keys differ than CONFIG_KEYS_MAX (never while the tables fit it).
 *
 * So what a reload applies follows from the tables alone: a key added to them is either
 * applied or named in a warning, never dropped in silence.
 */
int config_plan_reload(struct iop_config *next, const struct iop_config *running,
		       struct config_plan *plan);

/*
 * Every key's dotted name and how a change to it applies, in table order; at most max are
 * written, the count of keys is returned.
 */
size_t config_key_list(struct config_change *out, size_t max);

/* "live", "probes" or "restart". */
const char *config_apply_name(enum config_apply a);

#endif
