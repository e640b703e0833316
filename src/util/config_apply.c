/* config_apply.c - how a change to each config key takes effect on SIGHUP, and reload's plan */
#include "config_apply.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"

const char *config_apply_name(enum config_apply a)
{
	switch (a) {
	case CONFIG_APPLY_LIVE:
		return "live";
	case CONFIG_APPLY_PROBES:
		return "probes";
	case CONFIG_APPLY_UNSET:
	case CONFIG_APPLY_RESTART:
		break;
	}
	return "restart";
}

static enum config_apply apply_of(const struct key *k)
{
	return k->apply == CONFIG_APPLY_UNSET ? CONFIG_APPLY_RESTART : k->apply;
}

/* ------------------------------------------------------------ one value -- */

/* Bytes of a scalar field, 0 for strings and lists. */
static size_t scalar_size(enum key_type t)
{
	switch (t) {
	case KEY_DURATION:
		return sizeof(uint64_t);
	case KEY_UINT:
	case KEY_MODE:
		return sizeof(uint32_t);
	case KEY_BOOL:
		return sizeof(bool);
	case KEY_ENUM:
		return sizeof(int);
	case KEY_SECTION:
	case KEY_GLOBS:
	case KEY_PATH:
	case KEY_FILE:
	case KEY_STRING:
		break;
	}
	return 0;
}

static bool strlist_equal(const struct iop_strlist *a, const struct iop_strlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	}
	return true;
}

static bool value_equal(const struct key *k, const void *a, const void *b)
{
	const char *sa, *sb;

	if (scalar_size(k->type))
		return memcmp(a, b, scalar_size(k->type)) == 0;
	if (k->type == KEY_GLOBS)
		return strlist_equal(a, b);
	sa = *(char *const *)a;
	sb = *(char *const *)b;
	return strcmp(sa ? sa : "", sb ? sb : "") == 0;
}

/* Copy the value at src over the one at dst. 0 or -ENOMEM (dst unchanged). */
static int value_copy(const struct key *k, void *dst, const void *src)
{
	struct iop_strlist l;
	const char *s;

	if (scalar_size(k->type)) {
		memcpy(dst, src, scalar_size(k->type));
		return 0;
	}
	if (k->type == KEY_GLOBS) {
		if (iop_strlist_copy(&l, src) < 0)
			return -ENOMEM;
		iop_strlist_free(dst);
		*(struct iop_strlist *)dst = l;
		return 0;
	}
	s = *(char *const *)src;
	if (!s) {
		free(*(char **)dst);
		*(char **)dst = NULL;
		return 0;
	}
	return loader_set_string(dst, s);
}

/* ------------------------------------------------------------ the tables -- */

static int plan_section(const struct key *keys, const char *prefix, struct iop_config *next,
			const struct iop_config *running, struct config_plan *plan)
{
	struct config_change *ch;
	char name[sizeof(ch->key)];
	int r;

	for (const struct key *k = keys; k->name; k++) {
		void *nv = (char *)next + k->offset;
		const void *rv = (const char *)running + k->offset;

		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k->name);
		if (k->type == KEY_SECTION) {
			r = plan_section(k->sub, name, next, running, plan);
			if (r)
				return r;
			continue;
		}
		if (value_equal(k, nv, rv))
			continue;
		if (plan->n == CONFIG_KEYS_MAX)
			return -E2BIG;
		ch = &plan->changes[plan->n++];
		snprintf(ch->key, sizeof(ch->key), "%s", name);
		ch->apply = apply_of(k);
		ch->note = k->note;
		if (ch->apply == CONFIG_APPLY_PROBES)
			plan->probes = true;
		if (ch->apply == CONFIG_APPLY_RESTART) {
			r = value_copy(k, nv, rv);
			if (r)
				return r;
		}
	}
	return 0;
}

int config_plan_reload(struct iop_config *next, const struct iop_config *running,
		       struct config_plan *plan)
{
	plan->n = 0;
	plan->probes = false;
	return plan_section(config_top_keys, "", next, running, plan);
}

static size_t list_section(const struct key *keys, const char *prefix, struct config_change *out,
			   size_t max, size_t n)
{
	char name[sizeof(out->key)];

	for (const struct key *k = keys; k->name; k++) {
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k->name);
		if (k->type == KEY_SECTION) {
			n = list_section(k->sub, name, out, max, n);
			continue;
		}
		if (n < max) {
			snprintf(out[n].key, sizeof(out[n].key), "%s", name);
			out[n].apply = apply_of(k);
			out[n].note = k->note;
		}
		n++;
	}
	return n;
}

size_t config_key_list(struct config_change *out, size_t max)
{
	return list_section(config_top_keys, "", out, max, 0);
}
