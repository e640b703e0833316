/* config.c - iopulsed configuration: defaults, strict YAML loader (libyaml document API) */
#include "config.h"

#include <errno.h>
#include <unistd.h>
#include <grp.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <yaml.h>

#include "hist_math.h"
#include "server_limits.h"

_Static_assert(sizeof(unsigned int) == sizeof(uint32_t), "hist_precision is written as uint32_t");

/* ------------------------------------------------------------ string lists -- */

static void strlist_free(struct iop_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int strlist_append(struct iop_strlist *l, const char *s)
{
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	v[l->n] = strdup(s);
	if (!v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int strlist_copy(struct iop_strlist *dst, const struct iop_strlist *src)
{
	struct iop_strlist l = { 0 };

	for (size_t i = 0; i < src->n; i++) {
		if (strlist_append(&l, src->v[i]) < 0) {
			strlist_free(&l);
			return -ENOMEM;
		}
	}
	*dst = l;
	return 0;
}

/* ---------------------------------------------------------- struct lifecycle -- */

int config_init_defaults(struct iop_config *c)
{
	struct iop_config d = {
		.interval_ms = 1000,
		.hist_precision = IOP_HIST_K_DEFAULT,
		.rollup_partitions = true,
		.queue_from_bio = true,
		.sync_enabled = true,
		.max_devices = 64,
		.max_threads = 1024,
		.max_inflight = 65536,
		.log_level = IOP_LOG_INFO,
		.bpf_stats = false,
		.server_enabled = true,
		.server_socket_mode = 0660,
		.server_ring_ms = 600000,
		.server_mark_rate = IOP_MARK_RATE_DEFAULT,
		.server_ring_mib = IOP_RING_MIB_DEFAULT,
		.server_mark_bytes = IOP_MARK_BYTES_DEFAULT,
		.server_mark_labels = IOP_MARK_LABELS_DEFAULT,
		.server_open_phases = IOP_OPEN_PHASES_DEFAULT,
		.server_subscribers = IOP_SUBSCRIBERS_DEFAULT,
		.server_request_bytes = IOP_REQUEST_BYTES_DEFAULT,
		.metrics_precision = 2,
		.metrics_max_threads = 100,
	};

	d.ceph_osd_dir = strdup("/var/lib/ceph/osd");
	d.server_socket = strdup(IOP_DEFAULT_SOCKET);
	d.server_socket_group = strdup("");
	d.server_mark_group = strdup("");
	d.server_tcp = strdup("");
	d.server_tls_cert = strdup("");
	d.server_tls_key = strdup("");
	d.server_tls_client_ca = strdup("");
	d.metrics_listen = strdup("");
	if (!d.ceph_osd_dir || !d.server_socket || !d.server_socket_group || !d.server_tcp ||
	    !d.server_mark_group ||
	    !d.server_tls_cert || !d.server_tls_key || !d.server_tls_client_ca ||
	    strlist_append(&d.server_mark_clients, "*") < 0 ||
	    !d.metrics_listen || strlist_append(&d.metrics_threads, "bstore_kv_sync") < 0 ||
	    strlist_append(&d.dev_exclude, "ram*") < 0 ||
	    strlist_append(&d.dev_exclude, "zram*") < 0) {
		config_release(&d);
		return -ENOMEM;
	}
	*c = d;
	return 0;
}

static void drop(char **s)
{
	free(*s);
	*s = NULL;
}

void config_release(struct iop_config *c)
{
	strlist_free(&c->dev_include);
	strlist_free(&c->dev_exclude);
	strlist_free(&c->thread_include);
	strlist_free(&c->thread_exclude);
	strlist_free(&c->server_mark_clients);
	strlist_free(&c->metrics_threads);
	drop(&c->ceph_osd_dir);
	drop(&c->server_socket);
	drop(&c->server_socket_group);
	drop(&c->server_mark_group);
	drop(&c->server_tcp);
	drop(&c->server_tls_cert);
	drop(&c->server_tls_key);
	drop(&c->server_tls_client_ca);
	drop(&c->metrics_listen);
}

int iop_strlist_copy(struct iop_strlist *dst, const struct iop_strlist *src)
{
	return strlist_copy(dst, src) < 0 ? -ENOMEM : 0;
}

void iop_strlist_free(struct iop_strlist *l)
{
	strlist_free(l);
}

static int dup_or_null(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -ENOMEM : 0;
}

int config_copy(struct iop_config *dst, const struct iop_config *src)
{
	struct iop_config d = *src;

	d.dev_include = d.dev_exclude = d.thread_include = d.thread_exclude = d.metrics_threads =
		d.server_mark_clients = (struct iop_strlist){ 0 };
	d.ceph_osd_dir = d.server_socket = d.server_socket_group = d.server_tcp = NULL;
	d.server_mark_group = NULL;
	d.server_tls_cert = d.server_tls_key = d.server_tls_client_ca = NULL;
	d.metrics_listen = NULL;
	if (dup_or_null(&d.ceph_osd_dir, src->ceph_osd_dir) < 0 ||
	    dup_or_null(&d.server_socket, src->server_socket) < 0 ||
	    dup_or_null(&d.server_socket_group, src->server_socket_group) < 0 ||
	    dup_or_null(&d.server_mark_group, src->server_mark_group) < 0 ||
	    dup_or_null(&d.server_tcp, src->server_tcp) < 0 ||
	    dup_or_null(&d.server_tls_cert, src->server_tls_cert) < 0 ||
	    dup_or_null(&d.server_tls_key, src->server_tls_key) < 0 ||
	    dup_or_null(&d.server_tls_client_ca, src->server_tls_client_ca) < 0 ||
	    strlist_copy(&d.server_mark_clients, &src->server_mark_clients) < 0 ||
	    dup_or_null(&d.metrics_listen, src->metrics_listen) < 0 ||
	    strlist_copy(&d.metrics_threads, &src->metrics_threads) < 0 ||
	    strlist_copy(&d.dev_include, &src->dev_include) < 0 ||
	    strlist_copy(&d.dev_exclude, &src->dev_exclude) < 0 ||
	    strlist_copy(&d.thread_include, &src->thread_include) < 0 ||
	    strlist_copy(&d.thread_exclude, &src->thread_exclude) < 0) {
		config_release(&d);
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	*dst = d;
	return 0;
}

/* ------------------------------------------------------------------ durations -- */

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

/* --------------------------------------------------------------------- schema -- */

enum key_type {
	KEY_SECTION, KEY_DURATION, KEY_UINT, KEY_BOOL, KEY_GLOBS, KEY_PATH, KEY_LOG_LEVEL,
	KEY_MODE, KEY_GROUP, KEY_LISTEN, KEY_FILE,
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset;          /* of the field in struct iop_config; unused for sections */
	uint32_t min, max;      /* KEY_UINT range */
	const struct key *sub;  /* KEY_SECTION: its keys, ending with an entry without name */
};

#define FIELD(f) offsetof(struct iop_config, f)

static const struct key histogram_keys[] = {
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(hist_precision),
	  .min = IOP_HIST_K_MIN, .max = IOP_HIST_K_MAX },
	{ .name = "queue_from_bio", .type = KEY_BOOL, .offset = FIELD(queue_from_bio) },
	{ .name = NULL },
};

static const struct key devices_keys[] = {
	{ .name = "include", .type = KEY_GLOBS, .offset = FIELD(dev_include) },
	{ .name = "exclude", .type = KEY_GLOBS, .offset = FIELD(dev_exclude) },
	{ .name = "rollup_partitions", .type = KEY_BOOL, .offset = FIELD(rollup_partitions) },
	{ .name = NULL },
};

static const struct key threads_keys[] = {
	{ .name = "include", .type = KEY_GLOBS, .offset = FIELD(thread_include) },
	{ .name = "exclude", .type = KEY_GLOBS, .offset = FIELD(thread_exclude) },
	{ .name = NULL },
};

static const struct key sync_keys[] = {
	{ .name = "enabled", .type = KEY_BOOL, .offset = FIELD(sync_enabled) },
	{ .name = "threads", .type = KEY_SECTION, .sub = threads_keys },
	{ .name = NULL },
};

static const struct key limits_keys[] = {
	{ .name = "devices", .type = KEY_UINT, .offset = FIELD(max_devices), .min = 1, .max = 4096 },
	{ .name = "threads", .type = KEY_UINT, .offset = FIELD(max_threads), .min = 16, .max = 1048576 },
	{ .name = "inflight", .type = KEY_UINT, .offset = FIELD(max_inflight),
	  .min = 1024, .max = 4194304 },
	{ .name = NULL },
};

static const struct key ceph_keys[] = {
	{ .name = "osd_dir", .type = KEY_PATH, .offset = FIELD(ceph_osd_dir) },
	{ .name = NULL },
};

static const struct key log_keys[] = {
	{ .name = "level", .type = KEY_LOG_LEVEL, .offset = FIELD(log_level) },
	{ .name = NULL },
};

static const struct key server_keys[] = {
	{ .name = "enabled", .type = KEY_BOOL, .offset = FIELD(server_enabled) },
	{ .name = "socket", .type = KEY_PATH, .offset = FIELD(server_socket) },
	{ .name = "socket_mode", .type = KEY_MODE, .offset = FIELD(server_socket_mode) },
	{ .name = "socket_group", .type = KEY_GROUP, .offset = FIELD(server_socket_group) },
	{ .name = "mark_group", .type = KEY_GROUP, .offset = FIELD(server_mark_group) },
	{ .name = "tcp", .type = KEY_LISTEN, .offset = FIELD(server_tcp) },
	{ .name = "tls_cert", .type = KEY_FILE, .offset = FIELD(server_tls_cert) },
	{ .name = "tls_key", .type = KEY_FILE, .offset = FIELD(server_tls_key) },
	{ .name = "tls_client_ca", .type = KEY_FILE, .offset = FIELD(server_tls_client_ca) },
	{ .name = "insecure", .type = KEY_BOOL, .offset = FIELD(server_insecure) },
	{ .name = "mark_clients", .type = KEY_GLOBS, .offset = FIELD(server_mark_clients) },
	{ .name = "ring", .type = KEY_DURATION, .offset = FIELD(server_ring_ms) },
	{ .name = "mark_rate", .type = KEY_UINT, .offset = FIELD(server_mark_rate),
	  .min = 1, .max = 1000 },
	{ .name = "ring_mib", .type = KEY_UINT, .offset = FIELD(server_ring_mib),
	  .min = 1, .max = 65536 },
	{ .name = "mark_bytes", .type = KEY_UINT, .offset = FIELD(server_mark_bytes),
	  .min = 256, .max = 1048576 },
	{ .name = "mark_labels", .type = KEY_UINT, .offset = FIELD(server_mark_labels),
	  .min = 0, .max = 1024 },
	{ .name = "open_phases", .type = KEY_UINT, .offset = FIELD(server_open_phases),
	  .min = 1, .max = 65536 },
	{ .name = "subscribers", .type = KEY_UINT, .offset = FIELD(server_subscribers),
	  .min = 1, .max = 100000 },
	{ .name = "request_bytes", .type = KEY_UINT, .offset = FIELD(server_request_bytes),
	  .min = 1024, .max = 4194304 },
	{ .name = NULL },
};

static const struct key metrics_keys[] = {
	{ .name = "listen", .type = KEY_LISTEN, .offset = FIELD(metrics_listen) },
	{ .name = "precision", .type = KEY_UINT, .offset = FIELD(metrics_precision),
	  .min = 0, .max = IOP_HIST_K_MAX },
	{ .name = "threads", .type = KEY_GLOBS, .offset = FIELD(metrics_threads) },
	{ .name = "max_threads", .type = KEY_UINT, .offset = FIELD(metrics_max_threads),
	  .min = 0, .max = 100000 },
	{ .name = NULL },
};

static const struct key top_keys[] = {
	{ .name = "interval", .type = KEY_DURATION, .offset = FIELD(interval_ms) },
	{ .name = "histogram", .type = KEY_SECTION, .sub = histogram_keys },
	{ .name = "devices", .type = KEY_SECTION, .sub = devices_keys },
	{ .name = "sync", .type = KEY_SECTION, .sub = sync_keys },
	{ .name = "limits", .type = KEY_SECTION, .sub = limits_keys },
	{ .name = "ceph", .type = KEY_SECTION, .sub = ceph_keys },
	{ .name = "log", .type = KEY_SECTION, .sub = log_keys },
	{ .name = "bpf_stats", .type = KEY_BOOL, .offset = FIELD(bpf_stats) },
	{ .name = "server", .type = KEY_SECTION, .sub = server_keys },
	{ .name = "metrics", .type = KEY_SECTION, .sub = metrics_keys },
	{ .name = NULL },
};

static const char *const log_level_names[] = { "error", "warning", "info", "debug" };

/* --------------------------------------------------------------------- loader -- */

struct loader {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

/* Keep the message on one line whatever the file or the value contains. */
static void one_line(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

/* "FILE:LINE:COLUMN: key 'a.b': what" ("top level: what" for the document itself). */
__attribute__((format(printf, 4, 5)))
static int fail(struct loader *ld, const yaml_node_t *at, const char *key, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(ld->err, ld->errlen, "%s:%zu:%zu: %s%s%s: %s", ld->path, at->start_mark.line + 1,
		 at->start_mark.column + 1, *key ? "key '" : "top level", key, *key ? "'" : "", what);
	one_line(ld->err);
	return -EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* An unquoted empty value, "~" or "null": "key:" with nothing (or only comments) after it. */
static bool is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (!is_plain(n))
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
	if (is_null(n))
		return "an empty value";
	return is_plain(n) ? "a string" : "a quoted string";
}

/* A user's value for quoting in a message, cut to a readable length. */
static const char *shown(const yaml_node_t *n, char *buf, size_t len)
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
static int get_string(struct loader *ld, const yaml_node_t *n, const char *key, const char *what,
		      const char **out)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return fail(ld, n, key, "expected %s, got %s", what, kind(n));
	if (strlen(scalar(n)) != n->data.scalar.length)
		return fail(ld, n, key, "contains a NUL byte (expected %s)", what);
	if (!*scalar(n))
		return fail(ld, n, key, "is empty (expected %s)", what);
	*out = scalar(n);
	return 0;
}

static int load_uint(struct loader *ld, const yaml_node_t *n, const char *key, const struct key *k,
		     uint32_t *out)
{
	char buf[48];
	const char *s, *v;
	unsigned long long x;
	char *end;

	if (!is_plain(n) || is_null(n))
		return fail(ld, n, key, "expected an integer, got %s (%u..%u)", kind(n), k->min, k->max);
	s = scalar(n);
	v = shown(n, buf, sizeof(buf));
	/* Digits only: strtoull would accept blanks, signs and "0x"; a leading 0 reads as octal
	 * to YAML 1.1 tools, so it is refused too. */
	if (strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]))
		return fail(ld, n, key, "'%s' is not a decimal integer (%u..%u)", v, k->min, k->max);
	errno = 0;
	x = strtoull(s, &end, 10);
	if (end == s || *end != '\0')
		return fail(ld, n, key, "'%s' is not a decimal integer (%u..%u)", v, k->min, k->max);
	if (errno == ERANGE || x < k->min || x > k->max)
		return fail(ld, n, key, "%s is out of range (%u..%u)", v, k->min, k->max);
	*out = (uint32_t)x;
	return 0;
}

static int load_bool(struct loader *ld, const yaml_node_t *n, const char *key, bool *out)
{
	static const char *const words[] = { "false", "true", "no", "yes", "off", "on" };
	char buf[48];

	if (is_plain(n) && !is_null(n)) {
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			if (strcmp(scalar(n), words[i]) == 0) {
				*out = i % 2;
				return 0;
			}
		}
		return fail(ld, n, key, "'%s' is not a boolean (true, false, yes, no, on, off)",
			    shown(n, buf, sizeof(buf)));
	}
	return fail(ld, n, key, "expected a boolean, got %s (true, false, yes, no, on, off)",
		    kind(n));
}

static int load_duration(struct loader *ld, const yaml_node_t *n, const char *key, uint64_t *out)
{
	char buf[48];
	const char *s;
	int r;

	r = get_string(ld, n, key, "a duration (e.g. 500ms, 1s, 2m; 10ms..3600s)", &s);
	if (r < 0)
		return r;
	r = config_parse_duration_ms(s, out);
	if (r == -ERANGE)
		return fail(ld, n, key, "%s is out of range (10ms..3600s)", shown(n, buf, sizeof(buf)));
	if (r < 0)
		return fail(ld, n, key, "'%s' is not a duration (a number with unit ms, s, m or h, "
			    "or a bare number of seconds; whole milliseconds, 10ms..3600s)",
			    shown(n, buf, sizeof(buf)));
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
		return fail(ld, n, key, "expected a sequence of strings, got a mapping");
	if (n->type == YAML_SCALAR_NODE && !is_null(n)) {
		r = get_string(ld, n, key, what, &s);
		if (r == 0)
			r = strlist_append(&l, s);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     r == 0 && i < n->data.sequence.items.top; i++) {
			snprintf(item, sizeof(item), "%s[%td]", key, i - n->data.sequence.items.start);
			r = get_string(ld, yaml_document_get_node(ld->doc, *i), item, what, &s);
			if (r == 0)
				r = strlist_append(&l, s);
		}
	}
	if (r < 0) {
		strlist_free(&l);
		return r;
	}
	strlist_free(out);
	*out = l;
	return 0;
}

/* Replace *out with a copy of s. */
static int set_string(char **out, const char *s)
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

	r = get_string(ld, n, key, "an absolute directory path", &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return fail(ld, n, key, "'%s' is not an absolute path (must start with /)",
			    shown(n, buf, sizeof(buf)));
	return set_string(out, s);
}

/* "" (none) or the absolute path of a regular file this process can read now. */
static int load_readable(struct loader *ld, const yaml_node_t *n, const char *key, char **out)
{
	char buf[48];
	struct stat st;
	const char *s;
	int r;

	if (n->type == YAML_SCALAR_NODE && !is_plain(n) && n->data.scalar.length == 0)
		return set_string(out, "");
	r = get_string(ld, n, key, "an absolute file path or \"\"", &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return fail(ld, n, key, "'%s' is not an absolute path (must start with /)",
			    shown(n, buf, sizeof(buf)));
	if (stat(s, &st))
		return fail(ld, n, key, "'%s': %s", shown(n, buf, sizeof(buf)), strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(ld, n, key, "'%s' is not a regular file", shown(n, buf, sizeof(buf)));
	if (access(s, R_OK))
		return fail(ld, n, key, "'%s' cannot be read: %s", shown(n, buf, sizeof(buf)),
			    strerror(errno));
	return set_string(out, s);
}

static int load_mode(struct loader *ld, const yaml_node_t *n, const char *key, uint32_t *out)
{
	char buf[48], *end;
	const char *s;
	unsigned long v;
	int r;

	r = get_string(ld, n, key, "an octal file mode such as \"0660\"", &s);
	if (r < 0)
		return r;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 0777)
		return fail(ld, n, key, "'%s' is not an octal file mode (0000..0777, e.g. \"0660\")",
			    shown(n, buf, sizeof(buf)));
	*out = (uint32_t)v;
	return 0;
}

/* A group name (checked when the socket is made) or a TCP listen address; "" for none. */
bool config_listen_valid(const char *s)
{
	const char *colon = strrchr(s, ':');
	size_t digits;

	if (!colon || colon == s || !colon[1])
		return false;
	digits = strspn(colon + 1, "0123456789");
	return digits == strlen(colon + 1) && digits <= 5 && atoi(colon + 1) <= 65535;
}

/* 0 when the host part of a valid "host:port" resolves, else getaddrinfo's EAI_* code;
 * *loopback: every address it resolves to is a loopback one (NULL: not asked). */
static int listen_resolve(const char *s, bool *loopback)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai;
	char host[256];
	size_t len = (size_t)(strrchr(s, ':') - s);
	int r;

	if (len >= sizeof(host))
		return EAI_NONAME;
	memcpy(host, s, len);
	host[len] = '\0';
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		memmove(host, host + 1, len - 2);
		host[len - 2] = '\0';
	}
	r = getaddrinfo(host, NULL, &hints, &ai);
	if (r)
		return r;
	if (loopback) {
		*loopback = true;
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			if (a->ai_family == AF_INET)
				*loopback &= (ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr)
					      >> 24) == 127;
			else if (a->ai_family == AF_INET6)
				*loopback &= IN6_IS_ADDR_LOOPBACK(
					&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr);
			else
				*loopback = false;
		}
	}
	freeaddrinfo(ai);
	return 0;
}

int config_check_serving(const struct iop_config *c, char *err, size_t errlen)
{
	bool tls = *c->server_tls_cert, loopback = false;
	int r;

	if (!*c->server_tls_cert != !*c->server_tls_key) {
		snprintf(err, errlen, "server.tls_cert and server.tls_key go together: set both or "
			 "neither");
		return -EINVAL;
	}
	if (*c->server_tls_client_ca && !tls) {
		snprintf(err, errlen, "server.tls_client_ca needs server.tls_cert and server.tls_key "
			 "(clients are verified during the TLS handshake)");
		return -EINVAL;
	}
	if (!c->server_enabled || !*c->server_tcp || tls || c->server_insecure)
		return 0;
	r = listen_resolve(c->server_tcp, &loopback);
	if (r) {
		snprintf(err, errlen, "server.tcp '%s': the host does not resolve: %s", c->server_tcp,
			 gai_strerror(r));
		return -EINVAL;
	}
	if (loopback)
		return 0;
	snprintf(err, errlen, "server.tcp '%s' is reachable beyond this host without TLS: set "
		 "server.tls_cert and server.tls_key, or server.insecure: true to serve it in clear "
		 "text", c->server_tcp);
	return -EINVAL;
}

static int load_name(struct loader *ld, const yaml_node_t *n, const char *key, char **out,
		     bool listen)
{
	char buf[48];
	const char *s;
	int r;

	if (n->type == YAML_SCALAR_NODE && !is_plain(n) && n->data.scalar.length == 0) {
		s = "";   /* a quoted "": none */
	} else {
		r = get_string(ld, n, key, listen ? "a listen address \"host:port\" or \"\"" :
			       "a group name or \"\"", &s);
		if (r < 0)
			return r;
	}
	if (!listen && *s && !getgrnam(s))
		return fail(ld, n, key, "no group named '%s' on this host", s);
	if (listen && *s) {
		if (!config_listen_valid(s))
			return fail(ld, n, key, "'%s' is not a listen address (host:port, e.g. "
				    "\"0.0.0.0:7073\", \"[::]:7073\", \"127.0.0.1:0\")",
				    shown(n, buf, sizeof(buf)));
		r = listen_resolve(s, NULL);
		if (r)
			return fail(ld, n, key, "the host of '%s' does not resolve: %s",
				    shown(n, buf, sizeof(buf)), gai_strerror(r));
	}
	return set_string(out, s);
}

static int load_log_level(struct loader *ld, const yaml_node_t *n, const char *key,
			  enum iop_log_level *out)
{
	static const char *what = "a log level (error, warning, info, debug)";
	char buf[48];
	const char *s;
	int r;

	r = get_string(ld, n, key, what, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
		if (strcmp(s, log_level_names[i]) == 0) {
			*out = (enum iop_log_level)i;
			return 0;
		}
	}
	return fail(ld, n, key, "'%s' is not %s", shown(n, buf, sizeof(buf)), what);
}

static int load_section(struct loader *ld, const yaml_node_t *map, const struct key *keys,
			const char *prefix, struct iop_config *c);

static int load_value(struct loader *ld, const yaml_node_t *n, const struct key *k,
		      const char *key, struct iop_config *c)
{
	void *field = (char *)c + k->offset;

	switch (k->type) {
	case KEY_SECTION:
		return load_section(ld, n, k->sub, key, c);
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
	case KEY_LOG_LEVEL:
		return load_log_level(ld, n, key, field);
	case KEY_MODE:
		return load_mode(ld, n, key, field);
	case KEY_GROUP:
		return load_name(ld, n, key, field, false);
	case KEY_LISTEN:
		return load_name(ld, n, key, field, true);
	case KEY_FILE:
		return load_readable(ld, n, key, field);
	}
	return -EINVAL;
}

static int load_section(struct loader *ld, const yaml_node_t *map, const struct key *keys,
			const char *prefix, struct iop_config *c)
{
	yaml_node_pair_t *pairs;
	char key[256], names[256];
	const struct key *k;
	int r;

	if (is_null(map)) /* "section:" with nothing (or only comments) under it */
		return 0;
	if (map->type != YAML_MAPPING_NODE)
		return fail(ld, map, prefix, "expected a mapping, got %s", kind(map));
	pairs = map->data.mapping.pairs.start;
	for (yaml_node_pair_t *p = pairs; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *kn = yaml_document_get_node(ld->doc, p->key);

		if (kn->type != YAML_SCALAR_NODE || is_null(kn))
			return fail(ld, kn, prefix, "keys must be names, got %s", kind(kn));
		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", scalar(kn));
		for (yaml_node_pair_t *q = pairs; q < p; q++) {
			const yaml_node_t *qn = yaml_document_get_node(ld->doc, q->key);

			if (qn->type == YAML_SCALAR_NODE && strcmp(scalar(qn), scalar(kn)) == 0)
				return fail(ld, kn, key, "duplicate key (first set on line %zu)",
					    qn->start_mark.line + 1);
		}
		for (k = keys; k->name && strcmp(k->name, scalar(kn)) != 0; k++)
			;
		if (!k->name) {
			names[0] = '\0';
			for (k = keys; k->name; k++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 k == keys ? "" : ", ", k->name);
			return fail(ld, kn, key, "unknown key (expected %s)", names);
		}
		r = load_value(ld, yaml_document_get_node(ld->doc, p->value), k, key, c);
		if (r < 0)
			return r;
	}
	return 0;
}

/* libyaml reports input (encoding) errors by byte offset only: find the line and column. */
static yaml_mark_t offset_to_mark(FILE *f, size_t offset)
{
	yaml_mark_t m = { .index = offset };
	int ch;

	rewind(f);
	for (size_t i = 0; i < offset && (ch = getc(f)) != EOF; i++) {
		if (ch == '\n') {
			m.line++;
			m.column = 0;
		} else if ((ch & 0xc0) != 0x80) { /* not a UTF-8 continuation byte */
			m.column++;
		}
	}
	return m;
}

static int yaml_failed(struct loader *ld, const yaml_parser_t *p, FILE *f)
{
	yaml_mark_t m;

	/* Some allocation failures in libyaml's loader leave error unset. */
	if (p->error == YAML_MEMORY_ERROR || p->error == YAML_NO_ERROR) {
		snprintf(ld->err, ld->errlen, "%s: out of memory while parsing", ld->path);
		return -ENOMEM;
	}
	if (p->error == YAML_READER_ERROR) {
		m = offset_to_mark(f, p->problem_offset);
		snprintf(ld->err, ld->errlen, "%s:%zu:%zu: YAML input error: %s (byte %zu)", ld->path,
			 m.line + 1, m.column + 1, p->problem ? p->problem : "cannot read",
			 p->problem_offset);
	} else if (p->context)
		snprintf(ld->err, ld->errlen, "%s:%zu:%zu: YAML syntax error: %s (%s at %zu:%zu)",
			 ld->path, p->problem_mark.line + 1, p->problem_mark.column + 1,
			 p->problem ? p->problem : "error", p->context, p->context_mark.line + 1,
			 p->context_mark.column + 1);
	else
		snprintf(ld->err, ld->errlen, "%s:%zu:%zu: YAML syntax error: %s", ld->path,
			 p->problem_mark.line + 1, p->problem_mark.column + 1,
			 p->problem ? p->problem : "error");
	one_line(ld->err);
	return -EINVAL;
}

/*
 * Collections nested deeper than this are refused by a first pass over the parser's events,
 * before libyaml builds the document (100k nested brackets took its loader 37 s).
 */
#define DEPTH_MAX 64
/* Larger files are refused unread. */
#define CONFIG_MAX_BYTES (1 << 20)

static int check_depth(struct loader *ld, FILE *f)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, r = 0;
	bool done = false;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_file(&p, f);
	while (!done && !r && yaml_parser_parse(&p, &ev)) {
		/* a syntax error ends the pass: the loader reports it */
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > DEPTH_MAX) {
				snprintf(ld->err, ld->errlen, "%s:%zu:%zu: YAML syntax error: "
					 "collections nested deeper than %d levels", ld->path,
					 ev.start_mark.line + 1, ev.start_mark.column + 1, DEPTH_MAX);
				r = -EINVAL;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		} else if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	rewind(f);
	return r;
}

/* Parse an open file into c (a copy the caller discards on error). */
static int load_file(struct loader *ld, FILE *f, struct iop_config *c)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	const yaml_node_t *root;
	int r = check_depth(ld, f);

	if (r)
		return r;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		r = yaml_failed(ld, &parser, f);
		yaml_parser_delete(&parser);
		return r;
	}
	ld->doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (root) /* no root: empty file or only comments, all defaults */
		r = load_section(ld, root, top_keys, "", c);
	if (r == 0 && root) {
		if (!yaml_parser_load(&parser, &extra)) {
			r = yaml_failed(ld, &parser, f);
		} else {
			root = yaml_document_get_root_node(&extra);
			if (root && !is_null(root)) /* a trailing "---" alone is harmless */
				r = fail(ld, root, "", "a second YAML document (only one is allowed)");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

/* Open path for reading; a directory is refused here rather than as a read error later. */
static int open_config(const char *path, FILE **out)
{
	struct stat st;
	FILE *f;
	int fd, r = 0;

	/* O_NONBLOCK: a FIFO at the path must not hang the loader until someone writes */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (S_ISDIR(st.st_mode))
		r = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (st.st_size > CONFIG_MAX_BYTES)
		r = -EFBIG;
	else if (fcntl(fd, F_SETFL, 0) < 0)
		r = -errno;
	if (r == 0 && !(f = fdopen(fd, "r")))
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = f;
	return 0;
}

int config_load(struct iop_config *c, const char *path, char *err, size_t errlen)
{
	char dummy[1];
	struct loader ld = { .path = path, .err = err ? err : dummy, .errlen = err ? errlen : 1 };
	struct iop_config tmp;
	FILE *f = NULL;
	int r;

	r = open_config(path, &f);
	if (r < 0) {
		snprintf(ld.err, ld.errlen, "%s: cannot open: %s", path,
			 r == -EINVAL ? "not a regular file" : r == -EFBIG ?
			 "larger than 1 MiB, not a config file" : strerror(-r));
		one_line(ld.err);
		return r;
	}
	r = config_copy(&tmp, c);
	if (r == 0)
		r = load_file(&ld, f, &tmp);
	fclose(f);
	if (r == -ENOMEM)
		snprintf(ld.err, ld.errlen, "%s: out of memory", path);
	/* keys that are right alone but not together */
	if (r == 0 && tmp.server_ring_ms < tmp.interval_ms) {
		snprintf(ld.err, ld.errlen, "%s: key 'server.ring': %llu ms is shorter than one "
			 "interval (%llu ms)", path, (unsigned long long)tmp.server_ring_ms,
			 (unsigned long long)tmp.interval_ms);
		r = -EINVAL;
	}
	if (r < 0) {
		config_release(&tmp);
		return r;
	}
	config_release(c);
	*c = tmp;
	return 0;
}
