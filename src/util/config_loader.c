/* config_loader.c - the strict YAML loader: typed values, checked against the key tables */
#include "config_loader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "config_duration.h"
#include "strlist.h"

/* ------------------------------------------------------------------ helpers -- */

/* Keep the message on one line whatever the file or the value contains. */
void loader_one_line(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

/* "FILE:LINE:COLUMN: key 'a.b': what" ("top level: what" for the document itself). */
int loader_fail(struct loader *ld, const yaml_node_t *at, const char *key, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(ld->err, ld->errlen, "%s:%zu:%zu: %s%s%s: %s", ld->path, at->start_mark.line + 1,
		 at->start_mark.column + 1, *key ? "key '" : "top level", key, *key ? "'" : "", what);
	loader_one_line(ld->err);
	return -EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

bool loader_is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* An unquoted empty value, "~" or "null": "key:" with nothing (or only comments) after it. */
bool loader_is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (!loader_is_plain(n))
		return false;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
		if (strcmp(scalar(n), nulls[i]) == 0)
			return true;
	}
	return false;
}

static const char *kind(const yaml_node_t *n)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a sequence";
	if (loader_is_null(n))
		return "an empty value";
	return loader_is_plain(n) ? "a string" : "a quoted string";
}

/* A user's value for quoting in a message, cut to a readable length. */
const char *loader_shown(const yaml_node_t *n, char *buf, size_t len)
{
	const char *s = scalar(n);
	size_t cut = len - 4;

	if (strlen(s) < len)
		return s;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80) /* keep UTF-8 characters whole */
		cut--;
	snprintf(buf, len, "%.*s...", (int)cut, s);
	return buf;
}

/* A non-empty string scalar without NUL bytes. */
int loader_string(struct loader *ld, const yaml_node_t *n, const char *key, const char *what,
		  const char **out)
{
	if (n->type != YAML_SCALAR_NODE || loader_is_null(n))
		return loader_fail(ld, n, key, "expected %s, got %s", what, kind(n));
	if (strlen(scalar(n)) != n->data.scalar.length)
		return loader_fail(ld, n, key, "contains a NUL byte (expected %s)", what);
	if (!*scalar(n))
		return loader_fail(ld, n, key, "is empty (expected %s)", what);
	*out = scalar(n);
	return 0;
}

/* ------------------------------------------------------------------- values -- */

static int load_uint(struct loader *ld, const yaml_node_t *n, const char *key, const struct key *k,
		     uint32_t *out)
{
	char buf[48];
	const char *s, *v;
	unsigned long long x;
	char *end;

	if (!loader_is_plain(n) || loader_is_null(n))
		return loader_fail(ld, n, key, "expected an integer, got %s (%u..%u)", kind(n),
				   k->min, k->max);
	s = scalar(n);
	v = loader_shown(n, buf, sizeof(buf));
	/* Digits only: strtoull would accept blanks, signs and "0x"; a leading 0 reads as octal
	 * to YAML 1.1 tools, so it is refused too. */
	if (strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]))
		return loader_fail(ld, n, key, "'%s' is not a decimal integer (%u..%u)", v,
				   k->min, k->max);
	errno = 0;
	x = strtoull(s, &end, 10);
	if (end == s || *end != '\0')
		return loader_fail(ld, n, key, "'%s' is not a decimal integer (%u..%u)", v,
				   k->min, k->max);
	if (errno == ERANGE || x < k->min || x > k->max)
		return loader_fail(ld, n, key, "%s is out of range (%u..%u)", v, k->min, k->max);
	*out = (uint32_t)x;
	return 0;
}

static int load_bool(struct loader *ld, const yaml_node_t *n, const char *key, bool *out)
{
	static const char *const words[] = { "false", "true", "no", "yes", "off", "on" };
	char buf[48];

	if (loader_is_plain(n) && !loader_is_null(n)) {
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			if (strcmp(scalar(n), words[i]) == 0) {
				*out = i % 2;
				return 0;
			}
		}
		return loader_fail(ld, n, key,
				   "'%s' is not a boolean (true, false, yes, no, on, off)",
				   loader_shown(n, buf, sizeof(buf)));
	}
	return loader_fail(ld, n, key,
			   "expected a boolean, got %s (true, false, yes, no, on, off)", kind(n));
}

static int load_duration(struct loader *ld, const yaml_node_t *n, const char *key, uint64_t *out)
{
	char buf[48];
	const char *s;
	int r;

	r = loader_string(ld, n, key, "a duration (e.g. 500ms, 1s, 2m; 10ms..3600s)", &s);
	if (r < 0)
		return r;
	r = config_parse_duration_ms(s, out);
	if (r == -ERANGE)
		return loader_fail(ld, n, key, "%s is out of range (10ms..3600s)",
				   loader_shown(n, buf, sizeof(buf)));
	if (r < 0)
		return loader_fail(ld, n, key, "'%s' is not a duration (a number with unit ms, s, "
				   "m or h, or a bare number of seconds; whole milliseconds, "
				   "10ms..3600s)", loader_shown(n, buf, sizeof(buf)));
	return 0;
}

/* A sequence of glob strings or one string; an empty value is the empty list. */
static int load_globs(struct loader *ld, const yaml_node_t *n, const char *key,
		      struct iop_strlist *out)
{
	static const char *what = "a glob pattern string";
	struct iop_strlist l = { 0 };
	const char *s;
	char item[320];
	int r = 0;

	if (n->type == YAML_MAPPING_NODE)
		return loader_fail(ld, n, key, "expected a sequence of strings, got a mapping");
	if (n->type == YAML_SCALAR_NODE && !loader_is_null(n)) {
		r = loader_string(ld, n, key, what, &s);
		if (r == 0)
			r = iop_strlist_append(&l, s);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     r == 0 && i < n->data.sequence.items.top; i++) {
			snprintf(item, sizeof(item), "%s[%td]", key, i - n->data.sequence.items.start);
			r = loader_string(ld, yaml_document_get_node(ld->doc, *i), item, what,
					  &s);
			if (r == 0)
				r = iop_strlist_append(&l, s);
		}
	}
	if (r < 0) {
		iop_strlist_free(&l);
		return r;
	}
	iop_strlist_free(out);
	*out = l;
	return 0;
}

/* Replace *out with a copy of s. */
int loader_set_string(char **out, const char *s)
{
	char *dup = strdup(s);

	if (!dup)
		return -ENOMEM;
	free(*out);
	*out = dup;
	return 0;
}

static int load_path(struct loader *ld, const yaml_node_t *n, const char *key, char **out)
{
	char buf[48];
	const char *s;
	int r;

	r = loader_string(ld, n, key, "an absolute directory path", &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return loader_fail(ld, n, key, "'%s' is not an absolute path (must start with /)",
				   loader_shown(n, buf, sizeof(buf)));
	return loader_set_string(out, s);
}

/* "" (none) or the absolute path of a regular file this process can read now. */
static int load_readable(struct loader *ld, const yaml_node_t *n, const char *key, char **out)
{
	char buf[48];
	struct stat st;
	const char *s;
	int r;

	if (n->type == YAML_SCALAR_NODE && !loader_is_plain(n) && n->data.scalar.length == 0)
		return loader_set_string(out, "");
	r = loader_string(ld, n, key, "an absolute file path or \"\"", &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return loader_fail(ld, n, key, "'%s' is not an absolute path (must start with /)",
				   loader_shown(n, buf, sizeof(buf)));
	if (stat(s, &st))
		return loader_fail(ld, n, key, "'%s': %s", loader_shown(n, buf, sizeof(buf)),
				   strerror(errno));
	if (!S_ISREG(st.st_mode))
		return loader_fail(ld, n, key, "'%s' is not a regular file",
				   loader_shown(n, buf, sizeof(buf)));
	if (access(s, R_OK))
		return loader_fail(ld, n, key, "'%s' cannot be read: %s",
				   loader_shown(n, buf, sizeof(buf)), strerror(errno));
	return loader_set_string(out, s);
}

static int load_mode(struct loader *ld, const yaml_node_t *n, const char *key, uint32_t *out)
{
	char buf[48], *end;
	const char *s;
	unsigned long v;
	int r;

	r = loader_string(ld, n, key, "an octal file mode such as \"0660\"", &s);
	if (r < 0)
		return r;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 0777)
		return loader_fail(ld, n, key,
				   "'%s' is not an octal file mode (0000..0777, e.g. \"0660\")",
				   loader_shown(n, buf, sizeof(buf)));
	*out = (uint32_t)v;
	return 0;
}

/* ----------------------------------------------------------------- sections -- */

static int load_value(struct loader *ld, const yaml_node_t *n, const struct key *k,
		      const char *key, void *base)
{
	void *field = (char *)base + k->offset;

	if (k->load)
		return k->load(ld, n, key, field);
	switch (k->type) {
	case KEY_SECTION:
		return loader_section(ld, n, k->sub, key, base);
	case KEY_DURATION:
		return load_duration(ld, n, key, field);
	case KEY_UINT:
		return load_uint(ld, n, key, k, field);
	case KEY_BOOL:
		return load_bool(ld, n, key, field);
	case KEY_GLOBS:
		return load_globs(ld, n, key, field);
	case KEY_PATH:
		return load_path(ld, n, key, field);
	case KEY_MODE:
		return load_mode(ld, n, key, field);
	case KEY_FILE:
		return load_readable(ld, n, key, field);
	case KEY_STRING:
	case KEY_ENUM:
		break;
	}
	return loader_fail(ld, n, key, "the key table gives no loader for this key");
}

int loader_section(struct loader *ld, const yaml_node_t *map, const struct key *keys,
		   const char *prefix, void *base)
{
	yaml_node_pair_t *pairs;
	char key[256], names[256];
	const struct key *k;
	int r;

	if (loader_is_null(map)) /* "section:" with nothing (or only comments) under it */
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return loader_fail(ld, map, prefix, "expected a mapping, got %s", kind(map));
	pairs = map->data.mapping.pairs.start;
	for (yaml_node_pair_t *p = pairs; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *kn = yaml_document_get_node(ld->doc, p->key);

		if (kn->type != YAML_SCALAR_NODE || loader_is_null(kn))
			return loader_fail(ld, kn, prefix, "keys must be names, got %s", kind(kn));
		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", scalar(kn));
		for (yaml_node_pair_t *q = pairs; q < p; q++) {
			const yaml_node_t *qn = yaml_document_get_node(ld->doc, q->key);

			if (qn->type == YAML_SCALAR_NODE && strcmp(scalar(qn), scalar(kn)) == 0)
				return loader_fail(ld, kn, key,
						   "duplicate key (first set on line %zu)",
						   qn->start_mark.line + 1);
		}
		for (k = keys; k->name && strcmp(k->name, scalar(kn)) != 0; k++)
			;
		if (!k->name) {
			names[0] = '\0';
			for (k = keys; k->name; k++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 k == keys ? "" : ", ", k->name);
			return loader_fail(ld, kn, key, "unknown key (expected %s)", names);
		}
		r = load_value(ld, yaml_document_get_node(ld->doc, p->value), k, key, base);
		if (r < 0)
			return r;
	}
	return 0;
}
