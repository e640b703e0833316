/* test_config.c - config defaults, YAML loading, error messages, copy, durations and what a
 * reload does with each key */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "config.h"
#include "config_apply.h"
#include "config_keys.h"
#include "config_loader.h"
#include "hist_math.h"

#ifndef TEST_SRCDIR
#error "build with -DTEST_SRCDIR=\"<project root>\""
#endif

static char tmpdir[] = "/tmp/iopulse-test-config-XXXXXX";
static char yaml_path[64];

/* ------------------------------------------------------------------ helpers -- */

static void write_yaml(const char *text)
{
	FILE *f = fopen(yaml_path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* Write text to the temp file, load it into c, remove the file. */
static int load_text(struct iop_config *c, const char *text, char *err, size_t errlen)
{
	int r;

	write_yaml(text);
	r = config_load(c, yaml_path, err, errlen);
	unlink(yaml_path);
	return r;
}

static bool strlist_eq(const struct iop_strlist *a, const struct iop_strlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	}
	return true;
}

static bool strlist_is(const struct iop_strlist *l, size_t n, const char *const *want)
{
	struct iop_strlist w = { .v = (char **)want, .n = n };

	return strlist_eq(l, &w);
}

static bool config_eq(const struct iop_config *a, const struct iop_config *b)
{
	return a->interval_ms == b->interval_ms && a->hist_precision == b->hist_precision &&
	       a->hist_mode == b->hist_mode && a->queue_from_bio == b->queue_from_bio &&
	       strlist_eq(&a->dev_include, &b->dev_include) &&
	       strlist_eq(&a->dev_exclude, &b->dev_exclude) &&
	       a->rollup_partitions == b->rollup_partitions &&
	       strlist_eq(&a->thread_include, &b->thread_include) &&
	       strlist_eq(&a->thread_exclude, &b->thread_exclude) &&
	       a->sync_enabled == b->sync_enabled && a->max_devices == b->max_devices &&
	       a->max_threads == b->max_threads && a->max_inflight == b->max_inflight &&
	       strcmp(a->ceph_osd_dir, b->ceph_osd_dir) == 0 && a->log_level == b->log_level &&
	       a->bpf_stats == b->bpf_stats;
}

static void init_defaults(struct iop_config *c)
{
	ck_assert_int_eq(config_init_defaults(c), 0);
}

/* Load text over defaults; expect success and the defaults unchanged. */
static void assert_loads_as_defaults(const char *text)
{
	struct iop_config c, d;
	char err[512] = "";

	init_defaults(&c);
	init_defaults(&d);
	ck_assert_msg(load_text(&c, text, err, sizeof(err)) == 0, "'%s': %s", text, err);
	ck_assert_msg(config_eq(&c, &d), "'%s' changed the defaults", text);
	config_release(&c);
	config_release(&d);
}

/* -------------------------------------------------------------------- valid -- */

START_TEST(test_defaults)
{
	static const char *const excl[] = { "ram*", "zram*" };
	struct iop_config c;

	init_defaults(&c);
	ck_assert_uint_eq(c.interval_ms, 1000);
	ck_assert_uint_eq(c.hist_precision, IOP_HIST_K_DEFAULT);
	ck_assert_uint_eq(c.hist_precision, 5);
	ck_assert_int_eq(c.hist_mode, IOP_HIST_MODE_FULL);
	ck_assert(c.queue_from_bio);
	ck_assert_uint_eq(c.dev_include.n, 0);
	ck_assert(strlist_is(&c.dev_exclude, 2, excl));
	ck_assert(c.rollup_partitions);
	ck_assert(c.sync_enabled);
	ck_assert_uint_eq(c.thread_include.n, 0);
	ck_assert_uint_eq(c.thread_exclude.n, 0);
	ck_assert_uint_eq(c.max_devices, 64);
	ck_assert_uint_eq(c.max_threads, 1024);
	ck_assert_uint_eq(c.threads_reserved, 128);
	ck_assert_uint_eq(c.max_inflight, 65536);
	ck_assert_str_eq(c.ceph_osd_dir, "/var/lib/ceph/osd");
	ck_assert_int_eq(c.log_level, IOP_LOG_INFO);
	ck_assert(!c.bpf_stats);
	config_release(&c);
}
END_TEST

START_TEST(test_example_file_is_defaults)
{
	struct iop_config c, d;
	char err[512] = "";

	init_defaults(&c);
	init_defaults(&d);
	/* Load over non-default values so that every key must be present in the file. */
	ck_assert_int_eq(load_text(&c, "interval: 7s\nhistogram: {precision: 2, mode: completion, "
				   "queue_from_bio: no}\n"
				   "devices: {include: [x], exclude: [y], rollup_partitions: no}\n"
				   "sync: {enabled: no, threads: {include: [a], exclude: [b]}}\n"
				   "limits: {devices: 1, threads: 16, inflight: 1024}\n"
				   "ceph: {osd_dir: /x}\nlog: {level: debug}\nbpf_stats: yes\n",
				   err, sizeof(err)), 0);
	ck_assert_msg(config_load(&c, TEST_SRCDIR "/etc/iopulse.yaml", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(config_eq(&c, &d), "etc/iopulse.yaml differs from the built-in defaults");
	config_release(&c);
	config_release(&d);
}
END_TEST

START_TEST(test_full_file)
{
	static const char *const dinc[] = { "sd*", "nvme*" }, *const dexc[] = { "loop*" };
	static const char *const tinc[] = { "bstore_kv_sync", "fio*" };
	struct iop_config c;
	char err[512] = "";

	init_defaults(&c);
	ck_assert_msg(load_text(&c,
		"# full config\n"
		"interval: 500ms   # trailing comment\n"
		"histogram:\n"
		"  precision: 7\n"
		"  mode: completion\n"
		"devices:\n"
		"  include: [\"sd*\", 'nvme*']\n"
		"  exclude:\n"
		"    - loop*\n"
		"  rollup_partitions: off\n"
		"sync:\n"
		"  enabled: no\n"
		"  threads:\n"
		"    include: [bstore_kv_sync, \"fio*\"]\n"
		"    exclude: []\n"
		"limits:\n"
		"  devices: 4096\n"
		"  threads: 16\n"
		"  inflight: 4194304\n"
		"ceph:\n"
		"  osd_dir: \"/srv/ceph osd\"\n"
		"log:\n"
		"  level: debug\n"
		"bpf_stats: on\n"
		"server:\n"
		"  enabled: false\n"
		"  socket: /run/x/i.sock\n"
		"  socket_mode: \"0640\"\n"
		"  socket_group: daemon\n"
		"  tcp: \"[::]:7073\"\n"
		"  ring: 20m\n"
		"  mark_rate: 200\n", err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.interval_ms, 500);
	ck_assert_uint_eq(c.hist_precision, 7);
	ck_assert_int_eq(c.hist_mode, IOP_HIST_MODE_COMPLETION);
	ck_assert(strlist_is(&c.dev_include, 2, dinc));
	ck_assert(strlist_is(&c.dev_exclude, 1, dexc));
	ck_assert(!c.rollup_partitions);
	ck_assert(!c.sync_enabled);
	ck_assert(strlist_is(&c.thread_include, 2, tinc));
	ck_assert_uint_eq(c.thread_exclude.n, 0);
	ck_assert_uint_eq(c.max_devices, 4096);
	ck_assert_uint_eq(c.max_threads, 16);
	ck_assert_uint_eq(c.max_inflight, 4194304);
	ck_assert_str_eq(c.ceph_osd_dir, "/srv/ceph osd");
	ck_assert_int_eq(c.log_level, IOP_LOG_DEBUG);
	ck_assert(c.bpf_stats);
	ck_assert(!c.server_enabled);
	ck_assert_str_eq(c.server_socket, "/run/x/i.sock");
	ck_assert_uint_eq(c.server_socket_mode, 0640);
	ck_assert_str_eq(c.server_socket_group, "daemon");
	ck_assert_str_eq(c.server_tcp, "[::]:7073");
	ck_assert_uint_eq(c.server_ring_ms, 1200000);
	ck_assert_uint_eq(c.server_mark_rate, 200);
	config_release(&c);
}
END_TEST

START_TEST(test_partial_keeps_defaults)
{
	static const char *const one[] = { "vd*" };
	struct iop_config c, d;
	char err[512] = "";

	init_defaults(&c);
	init_defaults(&d);
	ck_assert_msg(load_text(&c, "histogram:\n  precision: 2\ndevices:\n  include: vd*\n"
				"interval: 2.5\nlog: {level: error}\n", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(c.hist_precision, 2);
	ck_assert(strlist_is(&c.dev_include, 1, one));
	ck_assert_uint_eq(c.interval_ms, 2500);
	ck_assert_int_eq(c.log_level, IOP_LOG_ERROR);
	/* everything else untouched */
	ck_assert(strlist_eq(&c.dev_exclude, &d.dev_exclude));
	ck_assert(c.rollup_partitions && c.sync_enabled && !c.bpf_stats);
	ck_assert_uint_eq(c.max_devices, d.max_devices);
	ck_assert_uint_eq(c.max_threads, d.max_threads);
	ck_assert_uint_eq(c.max_inflight, d.max_inflight);
	ck_assert_str_eq(c.ceph_osd_dir, d.ceph_osd_dir);

	/* A second file replaces only the keys it names. */
	ck_assert_int_eq(load_text(&c, "limits:\n  threads: 2048\n", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.max_threads, 2048);
	ck_assert_int_eq(load_text(&c, "limits:\n  threads_reserved: 0\n", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.threads_reserved, 0);
	ck_assert_uint_eq(c.max_threads, 2048);
	ck_assert_uint_eq(c.hist_precision, 2);
	ck_assert(strlist_is(&c.dev_include, 1, one));
	config_release(&c);
	config_release(&d);
}
END_TEST

START_TEST(test_empty_and_comment_only)
{
	assert_loads_as_defaults("");
	assert_loads_as_defaults("\n\n");
	assert_loads_as_defaults("# nothing here\n   # indented comment\n");
	assert_loads_as_defaults("---\n");
	assert_loads_as_defaults("---\n...\n");
	assert_loads_as_defaults("interval: 1s\n---\n");
	/* sections whose keys are all commented out */
	assert_loads_as_defaults("histogram:\n#  precision: 5\nsync:\n  threads:\nlog: ~\n");
	assert_loads_as_defaults("interval: 1000ms\nhistogram: {precision: 5}\nbpf_stats: false\n");
}
END_TEST

START_TEST(test_list_forms)
{
	static const char *const star[] = { "*" }, *const two[] = { "a", "b" };
	struct iop_config c;
	char err[512] = "";

	init_defaults(&c);
	ck_assert_int_eq(load_text(&c, "devices:\n  exclude:\n", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.dev_exclude.n, 0);
	ck_assert_int_eq(load_text(&c, "devices:\n  exclude: [x]\n", err, sizeof(err)), 0);
	ck_assert_int_eq(load_text(&c, "devices:\n  exclude: []\n", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.dev_exclude.n, 0);
	ck_assert_int_eq(load_text(&c, "sync:\n  threads:\n    exclude: \"*\"\n", err, sizeof(err)), 0);
	ck_assert(strlist_is(&c.thread_exclude, 1, star));
	ck_assert_int_eq(load_text(&c, "sync:\n  threads:\n    include:\n      - a\n      - 'b'\n",
				   err, sizeof(err)), 0);
	ck_assert(strlist_is(&c.thread_include, 2, two));
	config_release(&c);
}
END_TEST

START_TEST(test_bool_words)
{
	static const struct { const char *word; bool value; } words[] = {
		{ "true", true }, { "yes", true }, { "on", true },
		{ "false", false }, { "no", false }, { "off", false },
	};
	struct iop_config c;
	char text[64], err[512] = "";

	init_defaults(&c);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		c.bpf_stats = !words[i].value;
		snprintf(text, sizeof(text), "bpf_stats: %s\n", words[i].word);
		ck_assert_msg(load_text(&c, text, err, sizeof(err)) == 0, "%s", err);
		ck_assert_msg(c.bpf_stats == words[i].value, "%s", words[i].word);
	}
	config_release(&c);
}
END_TEST

/* -------------------------------------------------------------------- errors -- */

struct bad_case {
	const char *yaml;
	const char *where;  /* "LINE:COLUMN" */
	const char *key;    /* dotted key, "" for the document itself, NULL for syntax errors */
	const char *what;   /* expected part of the message */
};

static const struct bad_case bad_cases[] = {
	/* unknown keys at every level */
	{ "bogus: 1\n", "1:1", "bogus", "unknown key (expected interval, histogram, devices, "
	  "sync, limits, ceph, log, bpf_stats, server, metrics)" },
	{ "server:\n  sock: /x\n", "2:3", "server.sock", "unknown key (expected enabled, socket, "
	  "socket_mode, socket_group, mark_group, tcp, tls_cert, tls_key, tls_client_ca, insecure, mark_clients, "
	  "ring, mark_rate, ring_mib, mark_bytes, mark_labels, open_phases, "
	  "subscribers, request_bytes)" },
	{ "server:\n  socket_mode: \"0999\"\n", "2:16", "server.socket_mode",
	  "is not an octal file mode" },
	{ "server:\n  socket_mode: rw\n", "2:16", "server.socket_mode", "is not an octal file mode" },
	{ "server:\n  socket_group: nosuchgroup\n", "2:17", "server.socket_group",
	  "no group named 'nosuchgroup' on this host" },
	{ "metrics:\n  listen: \"127.0.0.1:99999\"\n", "2:11", "metrics.listen",
	  "is not a listen address" },
	{ "server:\n  tcp: localhost\n", "2:8", "server.tcp", "is not a listen address" },
	{ "devices:\n  include: " "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
	  "2:74", NULL, "collections nested deeper than 64 levels" },
	{ "server:\n  tcp: \"nosuchhost.invalid:7073\"\n", "2:8", "server.tcp",
	  "the host of 'nosuchhost.invalid:7073' does not resolve" },
	{ "metrics:\n  listen: \"[::1:9873\"\n", "2:11", "metrics.listen", "does not resolve" },
	{ "server:\n  tcp: \"host:99999\"\n", "2:8", "server.tcp", "is not a listen address" },
	{ "server:\n  socket: relative.sock\n", "2:11", "server.socket", "is not an absolute path" },
	{ "server:\n  ring: 0s\n", "2:9", "server.ring", "out of range" },
	{ "server:\n  tcp:\n", "2:7", "server.tcp", "expected a listen address" },
	{ "histogram:\n  precison: 5\n", "2:3", "histogram.precison",
	  "unknown key (expected precision, mode, queue_from_bio)" },
	{ "histogram:\n  mode: fast\n", "2:9", "histogram.mode",
	  "'fast' is not a histogram mode (full, completion)" },
	{ "histogram:\n  mode: [completion]\n", "2:9", "histogram.mode",
	  "expected a histogram mode (full, completion), got a sequence" },
	{ "histogram:\n  mode:\n", "2:8", "histogram.mode", "got an empty value" },
	{ "devices:\n  inclde: [sd*]\n", "2:3", "devices.inclde",
	  "unknown key (expected include, exclude, rollup_partitions)" },
	{ "sync:\n  enable: true\n", "2:3", "sync.enable", "unknown key (expected enabled, threads)" },
	{ "sync:\n  threads:\n    includ: [fio*]\n", "3:5", "sync.threads.includ",
	  "unknown key (expected include, exclude)" },
	{ "limits:\n  device: 4\n", "2:3", "limits.device",
	  "unknown key (expected devices, threads, threads_reserved, inflight)" },
	{ "ceph:\n  osd: /x\n", "2:3", "ceph.osd", "unknown key (expected osd_dir)" },
	{ "log:\n  lvl: info\n", "2:3", "log.lvl", "unknown key (expected level)" },
	{ "Interval: 1s\n", "1:1", "Interval", "unknown key" },
	/* wrong types */
	{ "interval: [1s]\n", "1:11", "interval", "got a sequence" },
	{ "interval: {a: 1}\n", "1:11", "interval", "got a mapping" },
	{ "interval:\n", "1:10", "interval", "got an empty value" },
	{ "interval: \"\"\n", "1:11", "interval", "is empty" },
	{ "histogram: 5\n", "1:12", "histogram", "expected a mapping, got a string" },
	{ "histogram: [5]\n", "1:12", "histogram", "expected a mapping, got a sequence" },
	{ "histogram:\n  precision: {a: 1}\n", "2:14", "histogram.precision",
	  "expected an integer, got a mapping (2..7)" },
	{ "histogram:\n  precision: \"5\"\n", "2:14", "histogram.precision",
	  "expected an integer, got a quoted string (2..7)" },
	{ "histogram:\n  precision:\n", "2:13", "histogram.precision",
	  "expected an integer, got an empty value (2..7)" },
	{ "devices:\n  include: {a: b}\n", "2:12", "devices.include",
	  "expected a sequence of strings, got a mapping" },
	{ "devices:\n  include: [[sd*]]\n", "2:13", "devices.include[0]",
	  "expected a glob pattern string, got a sequence" },
	{ "devices:\n  exclude: [ram*, '']\n", "2:19", "devices.exclude[1]", "is empty" },
	{ "devices:\n  exclude: [ram*, ~]\n", "2:19", "devices.exclude[1]", "got an empty value" },
	{ "devices:\n  rollup_partitions: [true]\n", "2:22", "devices.rollup_partitions",
	  "expected a boolean, got a sequence" },
	{ "sync: true\n", "1:7", "sync", "expected a mapping, got a string" },
	{ "sync:\n  enabled: {}\n", "2:12", "sync.enabled", "expected a boolean, got a mapping" },
	{ "sync:\n  threads: [a]\n", "2:12", "sync.threads", "expected a mapping, got a sequence" },
	{ "sync:\n  threads:\n    exclude: {x: 1}\n", "3:14", "sync.threads.exclude",
	  "got a mapping" },
	{ "sync:\n  threads:\n    include: [a, [b]]\n", "3:18", "sync.threads.include[1]",
	  "got a sequence" },
	{ "limits: 64\n", "1:9", "limits", "expected a mapping" },
	{ "limits:\n  devices: [1]\n", "2:12", "limits.devices", "got a sequence (1..4096)" },
	{ "ceph: /var\n", "1:7", "ceph", "expected a mapping" },
	{ "ceph:\n  osd_dir: [a]\n", "2:12", "ceph.osd_dir", "got a sequence" },
	{ "ceph:\n  osd_dir: relative/dir\n", "2:12", "ceph.osd_dir",
	  "'relative/dir' is not an absolute path" },
	{ "ceph:\n  osd_dir: \"/a\\0b\"\n", "2:12", "ceph.osd_dir", "contains a NUL byte" },
	{ "log: debug\n", "1:6", "log", "expected a mapping, got a string" },
	{ "log:\n  level: [info]\n", "2:10", "log.level", "got a sequence" },
	{ "bpf_stats: {}\n", "1:12", "bpf_stats", "expected a boolean, got a mapping" },
	{ "bpf_stats: \"true\"\n", "1:12", "bpf_stats", "expected a boolean, got a quoted string" },
	{ "[a]: 1\n", "1:1", "", "keys must be names, got a sequence" },
	/* integers: range of every numeric key, and strictness */
	{ "histogram:\n  precision: 1\n", "2:14", "histogram.precision", "1 is out of range (2..7)" },
	{ "histogram:\n  precision: 8\n", "2:14", "histogram.precision", "8 is out of range (2..7)" },
	{ "limits:\n  devices: 0\n", "2:12", "limits.devices", "0 is out of range (1..4096)" },
	{ "limits:\n  devices: 4097\n", "2:12", "limits.devices", "4097 is out of range (1..4096)" },
	{ "limits:\n  threads: 15\n", "2:12", "limits.threads", "15 is out of range (16..1048576)" },
	{ "limits:\n  threads: 1048577\n", "2:12", "limits.threads",
	  "1048577 is out of range (16..1048576)" },
	{ "limits:\n  threads_reserved: 524289\n", "2:21", "limits.threads_reserved",
	  "524289 is out of range (0..524288)" },
	{ "limits:\n  inflight: 1023\n", "2:13", "limits.inflight",
	  "1023 is out of range (1024..4194304)" },
	{ "limits:\n  inflight: 4194305\n", "2:13", "limits.inflight",
	  "4194305 is out of range (1024..4194304)" },
	{ "server:\n  mark_rate: 0\n", "2:14", "server.mark_rate", "0 is out of range (1..1000)" },
	{ "server:\n  mark_rate: 1001\n", "2:14", "server.mark_rate", "1001 is out of range (1..1000)" },
	{ "limits:\n  inflight: 4294967297\n", "2:13", "limits.inflight", "is out of range" },
	{ "limits:\n  devices: 99999999999999999999999\n", "2:12", "limits.devices",
	  "99999999999999999999999 is out of range (1..4096)" },
	{ "limits:\n  devices: -1\n", "2:12", "limits.devices",
	  "'-1' is not a decimal integer (1..4096)" },
	{ "limits:\n  devices: +5\n", "2:12", "limits.devices", "'+5' is not a decimal integer" },
	{ "limits:\n  devices: 0x10\n", "2:12", "limits.devices", "'0x10' is not a decimal integer" },
	{ "limits:\n  devices: 010\n", "2:12", "limits.devices", "'010' is not a decimal integer" },
	{ "limits:\n  devices: 1e3\n", "2:12", "limits.devices", "'1e3' is not a decimal integer" },
	{ "limits:\n  devices: 1.5\n", "2:12", "limits.devices", "'1.5' is not a decimal integer" },
	{ "limits:\n  devices: 12abc\n", "2:12", "limits.devices", "'12abc' is not a decimal integer" },
	/* durations */
	{ "interval: 1x\n", "1:11", "interval", "'1x' is not a duration" },
	{ "interval: -1s\n", "1:11", "interval", "'-1s' is not a duration" },
	{ "interval: 1 s\n", "1:11", "interval", "'1 s' is not a duration" },
	{ "interval: 1.5ms\n", "1:11", "interval", "'1.5ms' is not a duration" },
	{ "interval: 0\n", "1:11", "interval", "0 is out of range (10ms..3600s)" },
	{ "interval: 9ms\n", "1:11", "interval", "9ms is out of range (10ms..3600s)" },
	{ "interval: 5000s\n", "1:11", "interval", "5000s is out of range (10ms..3600s)" },
	{ "interval: \"2h\"\n", "1:11", "interval", "2h is out of range" },
	/* booleans and log levels */
	{ "bpf_stats: maybe\n", "1:12", "bpf_stats",
	  "'maybe' is not a boolean (true, false, yes, no, on, off)" },
	{ "bpf_stats: 1\n", "1:12", "bpf_stats", "'1' is not a boolean" },
	{ "sync:\n  enabled: TRUE\n", "2:12", "sync.enabled", "'TRUE' is not a boolean" },
	{ "log:\n  level: verbose\n", "2:10", "log.level",
	  "'verbose' is not a log level (error, warning, info, debug)" },
	{ "log:\n  level: warn\n", "2:10", "log.level", "'warn' is not a log level" },
	/* duplicate keys */
	{ "interval: 1s\nbpf_stats: true\ninterval: 2s\n", "3:1", "interval",
	  "duplicate key (first set on line 1)" },
	{ "devices:\n  include: [a]\n  include: [b]\n", "3:3", "devices.include",
	  "duplicate key (first set on line 2)" },
	{ "sync:\n  threads:\n    include: [a]\n    include: [b]\n", "4:5", "sync.threads.include",
	  "duplicate key (first set on line 3)" },
	{ "log: {level: info}\nlog: {level: debug}\n", "2:1", "log",
	  "duplicate key (first set on line 1)" },
	/* the document */
	{ "- a\n- b\n", "1:1", "", "expected a mapping, got a sequence" },
	{ "hello\n", "1:1", "", "expected a mapping, got a string" },
	{ "# header\n\"quoted\"\n", "2:1", "", "expected a mapping, got a quoted string" },
	{ "interval: 1s\n---\ninterval: 2s\n", "3:1", "", "a second YAML document" },
	/* YAML syntax errors: libyaml's problem text */
	{ "interval: b: c\n", "1:12", NULL, "mapping values are not allowed in this context" },
	{ "devices:\n  include: [sd*\nsync: {}\n", "3:5", NULL,
	  "did not find expected ',' or ']' (while parsing a flow sequence at 2:12)" },
	{ "interval: 1s\n\tbpf_stats: true\n", "2:1", NULL,
	  "found a tab character that violates indentation" },
	{ "interval: *nope\n", "1:11", NULL, "found undefined alias" },
};

START_TEST(test_bad)
{
	const struct bad_case *t = &bad_cases[_i];
	struct iop_config c, d;
	char err[512] = "", want[512];
	int r;

	init_defaults(&c);
	init_defaults(&d);
	r = load_text(&c, t->yaml, err, sizeof(err));
	ck_assert_msg(r == -EINVAL, "'%s': returned %d (%s)", t->yaml, r, err);
	snprintf(want, sizeof(want), "%s:%s: ", yaml_path, t->where);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s': message '%s' does not start '%s'",
		      t->yaml, err, want);
	if (!t->key)
		snprintf(want, sizeof(want), ": YAML syntax error: ");
	else if (!*t->key)
		snprintf(want, sizeof(want), ": top level: ");
	else
		snprintf(want, sizeof(want), ": key '%s': ", t->key);
	ck_assert_msg(strstr(err, want), "'%s': message '%s' lacks '%s'", t->yaml, err, want);
	ck_assert_msg(strstr(err, t->what), "'%s': message '%s' lacks '%s'", t->yaml, err, t->what);
	ck_assert_msg(!strchr(err, '\n'), "message '%s' is not one line", err);
	ck_assert_msg(config_eq(&c, &d), "'%s': failed load changed the config", t->yaml);
	config_release(&c);
	config_release(&d);
}
END_TEST

START_TEST(test_bad_utf8)
{
	struct iop_config c;
	char err[512] = "", want[128];

	init_defaults(&c);
	ck_assert_int_eq(load_text(&c, "interval: \xff\xfe\n", err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:1:11: YAML input error: ", yaml_path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	ck_assert_msg(strstr(err, "UTF-8") && strstr(err, "(byte 10)"), "%s", err);
	/* the column counts characters, not bytes */
	ck_assert_int_eq(load_text(&c, "# \xc3\xa9t\xc3\xa9\nlog:\n  level: \x80\n", err,
				   sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3:10: YAML input error: ", yaml_path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	config_release(&c);
}
END_TEST

START_TEST(test_one_line_messages)
{
	struct iop_config c;
	char err[512] = "";

	init_defaults(&c);
	/* a value with escaped newlines and a very long value */
	ck_assert_int_eq(load_text(&c, "log:\n  level: \"de\\nbug\\r\"\n", err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(!strchr(err, '\n') && !strchr(err, '\r'), "%s", err);
	ck_assert_msg(strstr(err, "'de?bug?' is not a log level"), "%s", err);
	ck_assert_int_eq(load_text(&c, "interval: 1111111111111111111111111111111111111111111111111"
				   "1111111111111111111111111111111111111111111111111111x\n",
				   err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "...' is not a duration") && strlen(err) < 300, "%s", err);
	/* a short buffer truncates, never overflows */
	ck_assert_int_eq(load_text(&c, "bogus: 1\n", err, 8), -EINVAL);
	ck_assert_uint_eq(strlen(err), 7);
	ck_assert_int_eq(load_text(&c, "bogus: 1\n", NULL, 0), -EINVAL);
	config_release(&c);
}
END_TEST

START_TEST(test_error_keeps_previous_config)
{
	struct iop_config c, before;
	char err[512] = "";

	init_defaults(&c);
	ck_assert_int_eq(load_text(&c, "interval: 2s\ndevices: {include: [sd*], exclude: []}\n"
				   "sync: {threads: {include: [fio*]}}\nceph: {osd_dir: /srv}\n",
				   err, sizeof(err)), 0);
	ck_assert_int_eq(config_copy(&before, &c), 0);
	/* the error comes after keys that would have changed every field */
	ck_assert_int_eq(load_text(&c, "interval: 3s\nhistogram: {precision: 3}\n"
				   "devices: {include: [vd*], exclude: [x], rollup_partitions: no}\n"
				   "sync: {enabled: no, threads: {include: [a], exclude: [b]}}\n"
				   "limits: {devices: 2, threads: 32, inflight: 2048}\n"
				   "ceph: {osd_dir: /other}\nlog: {level: debug}\nbpf_stats: yes\n"
				   "limits: {devices: 3}\n", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "key 'limits': duplicate key"), "%s", err);
	ck_assert(config_eq(&c, &before));
	config_release(&c);
	config_release(&before);
}
END_TEST

START_TEST(test_missing_file)
{
	struct iop_config c, d;
	char err[512] = "", path[128], want[256];

	init_defaults(&c);
	init_defaults(&d);
	snprintf(path, sizeof(path), "%s/does-not-exist.yaml", tmpdir);
	ck_assert_int_eq(config_load(&c, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: %s", path, strerror(ENOENT));
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(config_load(&c, tmpdir, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: cannot open: %s", tmpdir, strerror(EISDIR));
	ck_assert_str_eq(err, want);
	ck_assert(config_eq(&c, &d));
	config_release(&c);
	config_release(&d);
}
END_TEST

/* ------------------------------------------------------------ copy, release -- */

START_TEST(test_copy_is_deep)
{
	struct iop_config a, b;
	char err[512] = "";

	init_defaults(&a);
	ck_assert_int_eq(load_text(&a, "devices: {include: [sd*, nvme*]}\n"
				   "sync: {threads: {include: [a], exclude: [b, c]}}\n",
				   err, sizeof(err)), 0);
	ck_assert_int_eq(config_copy(&b, &a), 0);
	ck_assert(config_eq(&a, &b));
	ck_assert_ptr_ne(a.dev_include.v, b.dev_include.v);
	ck_assert_ptr_ne(a.dev_include.v[0], b.dev_include.v[0]);
	ck_assert_ptr_ne(a.ceph_osd_dir, b.ceph_osd_dir);
	a.dev_include.v[0][0] = 'X';
	a.ceph_osd_dir[1] = 'X';
	a.max_devices = 7;
	ck_assert_str_eq(b.dev_include.v[0], "sd*");
	ck_assert_str_eq(b.ceph_osd_dir, "/var/lib/ceph/osd");
	ck_assert_uint_eq(b.max_devices, 64);
	config_release(&a);
	ck_assert_str_eq(b.thread_exclude.v[1], "c");
	config_release(&b);
}
END_TEST

START_TEST(test_release_twice_and_zeroed)
{
	struct iop_config c, z;

	memset(&z, 0, sizeof(z));
	config_release(&z);
	config_release(&z);
	init_defaults(&c);
	config_release(&c);
	ck_assert_ptr_null(c.ceph_osd_dir);
	ck_assert_uint_eq(c.dev_exclude.n, 0);
	config_release(&c);
	/* a zeroed struct copies too */
	ck_assert_int_eq(config_copy(&c, &z), 0);
	ck_assert_ptr_null(c.ceph_osd_dir);
	config_release(&c);
}
END_TEST

/* ----------------------------------------------------------------- durations -- */

static const struct { const char *s; int r; uint64_t ms; } durations[] = {
	{ "1s", 0, 1000 }, { "500ms", 0, 500 }, { "2m", 0, 120000 }, { "1h", 0, 3600000 },
	{ "2", 0, 2000 }, { "0.5", 0, 500 }, { "0.25s", 0, 250 }, { "10ms", 0, 10 },
	{ "0.010", 0, 10 }, { "3600s", 0, 3600000 }, { "60m", 0, 3600000 }, { "1.5m", 0, 90000 },
	{ "1.000000000s", 0, 1000 }, { "0.0005m", 0, 30 }, { "1000ms", 0, 1000 },
	{ "3600", 0, 3600000 }, { "007s", 0, 7000 },
	{ "", -EINVAL, 0 }, { "1x", -EINVAL, 0 }, { "-1s", -EINVAL, 0 }, { "+1s", -EINVAL, 0 },
	{ " 1s", -EINVAL, 0 }, { "1s ", -EINVAL, 0 }, { "1 s", -EINVAL, 0 }, { ".5s", -EINVAL, 0 },
	{ "1.s", -EINVAL, 0 }, { "1e3", -EINVAL, 0 }, { "1.5ms", -EINVAL, 0 },
	{ "0.0001s", -EINVAL, 0 }, { "s", -EINVAL, 0 }, { "ms", -EINVAL, 0 },
	{ "1sec", -EINVAL, 0 }, { "0x10", -EINVAL, 0 }, { "1.0000000001s", -EINVAL, 0 },
	{ "1S", -EINVAL, 0 }, { "1..5s", -EINVAL, 0 }, { "1,5s", -EINVAL, 0 },
	{ "0", -ERANGE, 0 }, { "0ms", -ERANGE, 0 }, { "9ms", -ERANGE, 0 }, { "0.009s", -ERANGE, 0 },
	{ "3601s", -ERANGE, 0 }, { "5000s", -ERANGE, 0 }, { "61m", -ERANGE, 0 }, { "2h", -ERANGE, 0 },
	{ "3600.001", -ERANGE, 0 }, { "99999999999999999999999999s", -ERANGE, 0 },
	{ "18446744073709551617ms", -ERANGE, 0 }, { "9999999999999h", -ERANGE, 0 },
	{ "5124095576030431h", -ERANGE, 0 },
};

START_TEST(test_duration)
{
	uint64_t ms = 12345;
	int r = config_parse_duration_ms(durations[_i].s, &ms);

	ck_assert_msg(r == durations[_i].r, "'%s': returned %d, want %d", durations[_i].s, r,
		      durations[_i].r);
	ck_assert_msg(ms == (r == 0 ? durations[_i].ms : 12345), "'%s': %llu ms", durations[_i].s,
		      (unsigned long long)ms);
}
END_TEST

START_TEST(test_duration_null)
{
	uint64_t ms = 1;

	ck_assert_int_eq(config_parse_duration_ms(NULL, &ms), -EINVAL);
	ck_assert_uint_eq(ms, 1);
}
END_TEST

START_TEST(test_duration_range)
{
	uint64_t ms = 0;

	ck_assert_int_eq(config_parse_duration_range_ms("2h", 1, 86400000, &ms), 0);
	ck_assert_uint_eq(ms, 7200000);
	ck_assert_int_eq(config_parse_duration_range_ms("24h", 1, 86400000, &ms), 0);
	ck_assert_uint_eq(ms, 86400000);
	ck_assert_int_eq(config_parse_duration_range_ms("1ms", 1, 86400000, &ms), 0);
	ck_assert_uint_eq(ms, 1);
	ck_assert_int_eq(config_parse_duration_range_ms("0", 1, 86400000, &ms), -ERANGE);
	ck_assert_int_eq(config_parse_duration_range_ms("0", 0, 1, &ms), 0);
	ck_assert_uint_eq(ms, 0);
	ck_assert_int_eq(config_parse_duration_range_ms("24.001h", 1, 86400000, &ms), -ERANGE);
	ck_assert_int_eq(config_parse_duration_range_ms("999999999999h", 0, UINT64_MAX, &ms), 0);
	ck_assert_uint_eq(ms, 999999999999ULL * 3600000);
	ck_assert_int_eq(config_parse_duration_range_ms("1000000000000ms", 0, UINT64_MAX, &ms), 0);
	ck_assert_uint_eq(ms, 1000000000000ULL);
	ck_assert_int_eq(config_parse_duration_range_ms("1000000000001ms", 0, UINT64_MAX, &ms),
			 -ERANGE);
	/* 10^13 h would wrap around 2^64 if multiplied */
	ck_assert_int_eq(config_parse_duration_range_ms("9999999999999h", 0, UINT64_MAX, &ms),
			 -ERANGE);
	ck_assert_int_eq(config_parse_duration_range_ms("5124095576030431h", 0, UINT64_MAX, &ms),
			 -ERANGE);
	ck_assert_int_eq(config_parse_duration_range_ms("1d", 0, UINT64_MAX, &ms), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ reload -- */

/* Every key of the tables, flattened: its dotted name and its entry. */
struct flat_key {
	char name[48];
	const struct key *k;
};

static size_t flatten(const struct key *keys, const char *prefix, struct flat_key *out,
		      size_t n)
{
	char name[48];

	for (const struct key *k = keys; k->name; k++) {
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k->name);
		if (k->type == KEY_SECTION) {
			n = flatten(k->sub, name, out, n);
			continue;
		}
		ck_assert_uint_lt(n, CONFIG_KEYS_MAX);
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		out[n].k = k;
		n++;
	}
	return n;
}

static size_t all_keys(struct flat_key *out)
{
	return flatten(config_top_keys, "", out, 0);
}

/* Give the key another value than the one c holds, whatever its type. */
static void change_value(struct iop_config *c, const struct key *k)
{
	void *f = (char *)c + k->offset;

	switch (k->type) {
	case KEY_DURATION:
		*(uint64_t *)f += 10;
		break;
	case KEY_UINT:
		*(uint32_t *)f = *(uint32_t *)f == k->min ? k->max : k->min;
		break;
	case KEY_MODE:
		*(uint32_t *)f ^= 1;
		break;
	case KEY_BOOL:
		*(bool *)f = !*(bool *)f;
		break;
	case KEY_ENUM:   /* histogram.mode full <-> completion, log.level info <-> debug */
		*(int *)f ^= 1;
		break;
	case KEY_GLOBS:
		ck_assert_int_eq(iop_strlist_append(f, "changed*"), 0);
		break;
	case KEY_PATH:
	case KEY_STRING:
	case KEY_FILE:
		ck_assert_int_eq(loader_set_string(f, "/changed"), 0);
		break;
	case KEY_SECTION:
		ck_abort_msg("a section has no value");
	}
}

START_TEST(test_every_key_says_how_it_applies)
{
	struct flat_key keys[CONFIG_KEYS_MAX];
	struct config_change list[CONFIG_KEYS_MAX];
	size_t n = all_keys(keys);

	ck_assert_uint_ge(n, 40);
	ck_assert_uint_eq(config_key_list(list, CONFIG_KEYS_MAX), n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(keys[i].k->apply != CONFIG_APPLY_UNSET,
			      "%s: its table entry does not say how a change applies", keys[i].name);
		ck_assert_msg(keys[i].k->load || (keys[i].k->type != KEY_STRING &&
						  keys[i].k->type != KEY_ENUM),
			      "%s: its table entry gives no loader", keys[i].name);
		ck_assert_str_eq(list[i].key, keys[i].name);
		ck_assert_int_eq(list[i].apply, keys[i].k->apply);
	}
	/* fewer than the room: config_key_list counts past it */
	ck_assert_uint_eq(config_key_list(list, 3), n);
	ck_assert_str_eq(list[0].key, "interval");
}
END_TEST

/* Each key changed alone: the plan names it and the table's word; a restart keeps the
 * running value, the others keep the new one. */
START_TEST(test_plan_each_key_alone)
{
	struct flat_key keys[CONFIG_KEYS_MAX];
	struct iop_config running, next;
	struct config_plan plan;
	size_t n = all_keys(keys);

	for (size_t i = 0; i < n; i++) {
		const struct key *k = keys[i].k;

		init_defaults(&running);
		ck_assert_int_eq(config_copy(&next, &running), 0);
		ck_assert_int_eq(config_plan_reload(&next, &running, &plan), 0);
		ck_assert_uint_eq(plan.n, 0);
		ck_assert(!plan.probes);
		change_value(&next, k);
		ck_assert_int_eq(config_plan_reload(&next, &running, &plan), 0);
		ck_assert_msg(plan.n == 1, "%s: %zu keys changed", keys[i].name, plan.n);
		ck_assert_str_eq(plan.changes[0].key, keys[i].name);
		ck_assert_int_eq(plan.changes[0].apply, k->apply);
		ck_assert(plan.probes == (k->apply == CONFIG_APPLY_PROBES));
		/* planning again: a restart key is back at its running value, the others stay new */
		ck_assert_int_eq(config_plan_reload(&next, &running, &plan), 0);
		ck_assert_msg(plan.n == (k->apply == CONFIG_APPLY_RESTART ? 0u : 1u),
			      "%s (%s): %zu keys differ after the plan", keys[i].name,
			      config_apply_name(k->apply), plan.n);
		config_release(&next);
		config_release(&running);
	}
}
END_TEST

static enum config_apply apply_of_key(const char *name)
{
	struct config_change list[CONFIG_KEYS_MAX];
	size_t n = config_key_list(list, CONFIG_KEYS_MAX);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(list[i].key, name) == 0)
			return list[i].apply;
	}
	ck_abort_msg("no key %s", name);
	return CONFIG_APPLY_UNSET;
}

/* Keys a reload used to drop without a word, and some that it applies. */
START_TEST(test_plan_named_keys)
{
	static const char *const restart[] = {
		"metrics.threads", "server.tls_cert", "server.tls_key",
		"server.tls_client_ca", "server.tcp", "server.enabled", "metrics.listen",
	};
	static const char *const probes[] = {
		"histogram.precision", "histogram.mode", "limits.devices", "sync.enabled",
		"ceph.osd_dir", "bpf_stats",
	};
	static const char *const live[] = {
		"interval", "log.level", "devices.include", "sync.threads.include",
		"limits.threads_reserved", "server.mark_clients",
	};

	for (size_t i = 0; i < sizeof(restart) / sizeof(restart[0]); i++)
		ck_assert_msg(apply_of_key(restart[i]) == CONFIG_APPLY_RESTART, "%s", restart[i]);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		ck_assert_msg(apply_of_key(probes[i]) == CONFIG_APPLY_PROBES, "%s", probes[i]);
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		ck_assert_msg(apply_of_key(live[i]) == CONFIG_APPLY_LIVE, "%s", live[i]);
	ck_assert_str_eq(config_apply_name(CONFIG_APPLY_LIVE), "live");
	ck_assert_str_eq(config_apply_name(CONFIG_APPLY_PROBES), "probes");
	ck_assert_str_eq(config_apply_name(CONFIG_APPLY_RESTART), "restart");
	ck_assert_str_eq(config_apply_name(CONFIG_APPLY_UNSET), "restart");
}
END_TEST

/* A file changing several keys: each is listed in table order, the restart ones go back. */
START_TEST(test_plan_several_keys)
{
	struct iop_config running, next;
	struct config_plan plan;
	char err[512] = "";

	init_defaults(&running);
	init_defaults(&next);
	ck_assert_int_eq(load_text(&next, "interval: 250ms\nhistogram: {precision: 4}\n"
				   "log: {level: debug}\n"
				   "server: {tcp: \"127.0.0.1:0\", mark_clients: [ops], "
				   "subscribers: 9}\nmetrics: {threads: [fio*]}\n", err, sizeof(err)),
			 0);
	ck_assert_int_eq(config_plan_reload(&next, &running, &plan), 0);
	ck_assert_uint_eq(plan.n, 7);
	ck_assert(plan.probes);
	ck_assert_str_eq(plan.changes[0].key, "interval");
	ck_assert_int_eq(plan.changes[0].apply, CONFIG_APPLY_LIVE);
	ck_assert_ptr_nonnull(plan.changes[0].note);
	ck_assert_str_eq(plan.changes[1].key, "histogram.precision");
	ck_assert_int_eq(plan.changes[1].apply, CONFIG_APPLY_PROBES);
	ck_assert_ptr_null(plan.changes[1].note);
	ck_assert_str_eq(plan.changes[2].key, "log.level");
	ck_assert_str_eq(plan.changes[3].key, "server.tcp");
	ck_assert_int_eq(plan.changes[3].apply, CONFIG_APPLY_RESTART);
	ck_assert_str_eq(plan.changes[4].key, "server.mark_clients");
	ck_assert_int_eq(plan.changes[4].apply, CONFIG_APPLY_LIVE);
	ck_assert_str_eq(plan.changes[5].key, "server.subscribers");
	ck_assert_str_eq(plan.changes[6].key, "metrics.threads");
	/* applied: the new values; a restart: the running ones */
	ck_assert_uint_eq(next.interval_ms, 250);
	ck_assert_uint_eq(next.hist_precision, 4);
	ck_assert_int_eq(next.log_level, IOP_LOG_DEBUG);
	ck_assert_str_eq(next.server_tcp, "");
	ck_assert(!strlist_eq(&next.server_mark_clients, &running.server_mark_clients));
	ck_assert_str_eq(next.server_mark_clients.v[0], "ops");
	ck_assert_uint_eq(next.server_subscribers, running.server_subscribers);
	ck_assert(strlist_eq(&next.metrics_threads, &running.metrics_threads));
	config_release(&next);
	config_release(&running);
}
END_TEST

/* ---------------------------------------------------------------------- main -- */

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("valid");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_example_file_is_defaults);
	tcase_add_test(tc, test_full_file);
	tcase_add_test(tc, test_partial_keeps_defaults);
	tcase_add_test(tc, test_empty_and_comment_only);
	tcase_add_test(tc, test_list_forms);
	tcase_add_test(tc, test_bool_words);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, test_bad, 0, sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_bad_utf8);
	tcase_add_test(tc, test_one_line_messages);
	tcase_add_test(tc, test_error_keeps_previous_config);
	tcase_add_test(tc, test_missing_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("copy");
	tcase_add_test(tc, test_copy_is_deep);
	tcase_add_test(tc, test_release_twice_and_zeroed);
	suite_add_tcase(s, tc);

	tc = tcase_create("durations");
	tcase_add_loop_test(tc, test_duration, 0, sizeof(durations) / sizeof(durations[0]));
	tcase_add_test(tc, test_duration_null);
	tcase_add_test(tc, test_duration_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_add_test(tc, test_every_key_says_how_it_applies);
	tcase_add_test(tc, test_plan_each_key_alone);
	tcase_add_test(tc, test_plan_named_keys);
	tcase_add_test(tc, test_plan_several_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int r;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(yaml_path, sizeof(yaml_path), "%s/iopulse.yaml", tmpdir);
	r = run_suite(config_suite());
	unlink(yaml_path); /* left behind if a test failed between writing and loading */
	if (rmdir(tmpdir) < 0)
		perror("rmdir");
	return r;
}
