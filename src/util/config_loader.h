/* config_loader.h - the strict YAML loader: key tables, and typed values loaded by them */
#ifndef IOPULSE_CONFIG_LOADER_H
#define IOPULSE_CONFIG_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

/* One file being loaded; errors are written to err as "FILE:LINE:COLUMN: key 'a.b': what". */
struct loader {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

/* How a changed key takes effect when the file is loaded again; each key's table entry says. */
enum config_apply {
	CONFIG_APPLY_UNSET = 0,   /* an entry that says nothing: taken as CONFIG_APPLY_RESTART */
	CONFIG_APPLY_LIVE,        /* from the next interval on, nothing started again */
	CONFIG_APPLY_PROBES,      /* new probes are loaded beside the running ones and take over */
	CONFIG_APPLY_RESTART,     /* only when iopulsed starts again: the running value is kept */
};

/* The field a key fills: its type, which also says how it is loaded unless the entry names a
 * loader of its own (KEY_STRING and KEY_ENUM always do). */
enum key_type {
	KEY_SECTION,    /* a mapping of keys (sub) */
	KEY_DURATION,   /* uint64_t milliseconds */
	KEY_UINT,       /* uint32_t in min..max */
	KEY_BOOL,       /* bool */
	KEY_GLOBS,      /* struct iop_strlist of glob patterns */
	KEY_PATH,       /* char *, an absolute directory path */
	KEY_MODE,       /* uint32_t, an octal file mode */
	KEY_FILE,       /* char *, "" or a readable regular file */
	KEY_STRING,     /* char *, loaded by the entry's load */
	KEY_ENUM,       /* an enum (int-sized), loaded by the entry's load */
};

/* Load the value node n of key (its dotted name) into field: 0, or -EINVAL by loader_fail(). */
typedef int key_load_fn(struct loader *ld, const yaml_node_t *n, const char *key, void *field);

struct key {
	const char *name;
	enum key_type type;
	size_t offset;          /* of the field in the loaded struct; unused for sections */
	uint32_t min, max;      /* KEY_UINT range */
	const struct key *sub;  /* KEY_SECTION: its keys, ending with an entry without name */
	key_load_fn *load;      /* the value's own loader, in place of the type's */
	enum config_apply apply; /* how a change applies on SIGHUP (config_plan_reload) */
	const char *note;       /* logged with a live change: what it does not change */
};

/*
 * Load the mapping map into the struct at base by keys (prefix: the section's dotted name, ""
 * at the top). Unknown and duplicate keys are errors. 0, or -EINVAL with the message in
 * ld->err (-ENOMEM).
 */
int loader_section(struct loader *ld, const yaml_node_t *map, const struct key *keys,
		   const char *prefix, void *base);

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

#endif
