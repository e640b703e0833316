/* config.c - iopulsed configuration: defaults, copies, and the strict YAML loader's file walk */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <yaml.h>

#include "config_keys.h"
#include "hist_math.h"
#include "server_limits.h"

/* ---------------------------------------------------------- struct lifecycle -- */

int config_init_defaults(struct iop_config *c)
{
	struct iop_config d = {
		.interval_ms = 1000,
		.hist_precision = IOP_HIST_K_DEFAULT,
		.rollup_partitions = true,
		.queue_from_bio = true,
		.hist_mode = IOP_HIST_MODE_FULL,
		.sync_enabled = true,
		.max_devices = 64,
		.max_threads = 1024,
		.threads_reserved = 128,
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
	    iop_strlist_append(&d.server_mark_clients, "*") < 0 ||
	    !d.metrics_listen || iop_strlist_append(&d.metrics_threads, "bstore_kv_sync") < 0 ||
	    iop_strlist_append(&d.dev_exclude, "ram*") < 0 ||
	    iop_strlist_append(&d.dev_exclude, "zram*") < 0) {
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
	iop_strlist_free(&c->dev_include);
	iop_strlist_free(&c->dev_exclude);
	iop_strlist_free(&c->thread_include);
	iop_strlist_free(&c->thread_exclude);
	iop_strlist_free(&c->server_mark_clients);
	iop_strlist_free(&c->metrics_threads);
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
	    iop_strlist_copy(&d.server_mark_clients, &src->server_mark_clients) < 0 ||
	    dup_or_null(&d.metrics_listen, src->metrics_listen) < 0 ||
	    iop_strlist_copy(&d.metrics_threads, &src->metrics_threads) < 0 ||
	    iop_strlist_copy(&d.dev_include, &src->dev_include) < 0 ||
	    iop_strlist_copy(&d.dev_exclude, &src->dev_exclude) < 0 ||
	    iop_strlist_copy(&d.thread_include, &src->thread_include) < 0 ||
	    iop_strlist_copy(&d.thread_exclude, &src->thread_exclude) < 0) {
		config_release(&d);
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	*dst = d;
	return 0;
}

/* ----------------------------------------------------------- top-level keys -- */

/* The kernel's maps are sized by these when the probes load; threads_reserved is read every
 * interval (threads_collect()). */
static const struct key limits_keys[] = {
	{ .name = "devices", .type = KEY_UINT, .offset = FIELD(max_devices),
	  .min = 1, .max = 4096, .apply = CONFIG_APPLY_PROBES },
	{ .name = "threads", .type = KEY_UINT, .offset = FIELD(max_threads),
	  .min = 16, .max = 1048576, .apply = CONFIG_APPLY_PROBES },
	{ .name = "threads_reserved", .type = KEY_UINT, .offset = FIELD(threads_reserved),
	  .min = 0, .max = 524288, .apply = CONFIG_APPLY_LIVE },
	{ .name = "inflight", .type = KEY_UINT, .offset = FIELD(max_inflight),
	  .min = 1024, .max = 4194304, .apply = CONFIG_APPLY_PROBES },
	{ .name = NULL },
};

static const struct key ceph_keys[] = {
	{ .name = "osd_dir", .type = KEY_PATH, .offset = FIELD(ceph_osd_dir),
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = NULL },
};

_Static_assert(sizeof(enum iop_log_level) == sizeof(int), "log_level is a KEY_ENUM field");

static int load_log_level(struct loader *ld, const yaml_node_t *n, const char *key, void *field)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const char *what = "a log level (error, warning, info, debug)";
	char buf[48];
	const char *s;
	int r;

	r = loader_string(ld, n, key, what, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*(enum iop_log_level *)field = (enum iop_log_level)i;
			return 0;
		}
	}
	return loader_fail(ld, n, key, "'%s' is not %s", loader_shown(n, buf, sizeof(buf)), what);
}

static const struct key log_keys[] = {
	{ .name = "level", .type = KEY_ENUM, .offset = FIELD(log_level), .load = load_log_level,
	  .apply = CONFIG_APPLY_LIVE },
	{ .name = NULL },
};

const struct key config_top_keys[] = {
	{ .name = "interval", .type = KEY_DURATION, .offset = FIELD(interval_ms),
	  .apply = CONFIG_APPLY_LIVE,
	  .note = "the replay ring keeps the room it was given for the interval at start: a "
		  "shorter one replays less than server.ring until iopulsed restarts" },
	{ .name = "histogram", .type = KEY_SECTION, .sub = config_histogram_keys },
	{ .name = "devices", .type = KEY_SECTION, .sub = config_devices_keys },
	{ .name = "sync", .type = KEY_SECTION, .sub = config_sync_keys },
	{ .name = "limits", .type = KEY_SECTION, .sub = limits_keys },
	{ .name = "ceph", .type = KEY_SECTION, .sub = ceph_keys },
	{ .name = "log", .type = KEY_SECTION, .sub = log_keys },
	{ .name = "bpf_stats", .type = KEY_BOOL, .offset = FIELD(bpf_stats),
	  .apply = CONFIG_APPLY_PROBES },
	{ .name = "server", .type = KEY_SECTION, .sub = config_server_keys },
	{ .name = "metrics", .type = KEY_SECTION, .sub = config_metrics_keys },
	{ .name = NULL },
};

/* ----------------------------------------------------------------- the file -- */

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
	loader_one_line(ld->err);
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
		r = loader_section(ld, root, config_top_keys, "", c);
	if (r == 0 && root) {
		if (!yaml_parser_load(&parser, &extra)) {
			r = yaml_failed(ld, &parser, f);
		} else {
			root = yaml_document_get_root_node(&extra);
			if (root && !loader_is_null(root)) /* a trailing "---" alone is harmless */
				r = loader_fail(ld, root, "",
						"a second YAML document (only one is allowed)");
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
		loader_one_line(ld.err);
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
