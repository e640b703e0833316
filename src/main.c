/* main.c - iopulsed command line */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "hist_math.h"
#include "log.h"
#include "output_json.h"

static const char usage_text[] =
	"Usage: iopulsed [OPTIONS]\n"
	"\n"
	"Always-on block IO telemetry: per-device queue wait, service time, seek distance,\n"
	"request size, flush/FUA latency and per-thread fsync/fdatasync/sync_file_range,\n"
	"aggregated in the kernel with eBPF.\n"
	"\n"
	"Options:\n"
	"  -c, --config FILE        config file (default " IOP_CONFIG_DEFAULT_PATH ";\n"
	"                           built-in defaults when that file does not exist)\n"
	"      --check-config FILE  validate FILE, print \"FILE: ok\" or the error, and exit\n"
	"  -i, --interval DUR       reporting interval: 1s, 500ms, 2m (default 1s)\n"
	"  -p, --print              print a table per interval (percentiles per device and op)\n"
	"  -j, --json               print one JSON object per interval (docs/json-output.md)\n"
	"      --json-buckets       with --json, also print each histogram's buckets\n"
	"  -d, --duration DUR       exit 0 after DUR (the last interval is printed)\n"
	"      --precision K        histogram precision 2..7 (default 5: error <= 1.6%)\n"
	"      --devices GLOBS      only these devices, comma-separated globs (sd*,nvme0n1)\n"
	"      --exclude GLOBS      never these devices\n"
	"      --no-rollup          report partitions apart from their disk\n"
	"      --queue-from WHAT    queue wait from: bio (submission, exact; default) or\n"
	"                           request (the request's set-up: one probe less per IO,\n"
	"                           misses tag and plug waits)\n"
	"      --mode MODE          histogram mode: full (default) or completion (one program\n"
	"                           at completion, the kernel's own stamps: least cost per IO)\n"
	"      --threads GLOBS      only these thread names in the sync table\n"
	"      --no-sync            do not track fsync/fdatasync/sync_file_range\n"
	"      --max-devices N      device slots in the kernel (1..4096)\n"
	"      --max-threads N      sync-table entries (16..1048576)\n"
	"      --ceph-osd-dir DIR   Ceph OSD data directories (default /var/lib/ceph/osd)\n"
	"      --bpf-stats          enable kernel BPF run-time statistics and report them\n"
	"      --socket PATH        gRPC unix socket (default " IOP_DEFAULT_SOCKET ")\n"
	"      --tcp HOST:PORT      also serve gRPC on TCP (port 0: any free port, logged)\n"
	"      --metrics HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"
	"      --no-server          no gRPC server (local output only)\n"
	"      --log-level LEVEL    error, warning, info or debug\n"
	"      --syslog             log to syslog instead of stderr\n"
	"  -V, --version            print the version and exit\n"
	"  -h, --help               print this help and exit\n"
	"\n"
	"Examples:\n"
	"  iopulsed --print                       live table for every disk, 1 s interval\n"
	"  iopulsed --json -i 10s --devices 'sd*' one JSON line per 10 s for SCSI disks\n"
	"  iopulsed --json -d 60s > run.jsonl     record one minute, then exit\n"
	"  iopulsed --print --threads 'bstore_kv_sync'  BlueStore's sync thread only\n"
	"  iopulsed --tcp 127.0.0.1:7073          serve TCP clients on this host too (iopulse --target\n"
	"                                         127.0.0.1:7073); remote ones need TLS (server.tls_cert)\n"
	"  iopulsed --metrics 0.0.0.0:9873        for Prometheus (scrape http://host:9873/metrics)\n"
	"  iopulsed --check-config /etc/iopulse/iopulse.yaml\n"
	"\n"
	"Signals: SIGINT/SIGTERM print the last interval, detach and exit 0; SIGHUP reloads\n"
	"the config file (a bad file is rejected and the running config kept).\n"
	"Exit codes: 0 ok, 1 runtime failure (BPF, permissions, kernel), 2 bad flags or config\n"
	"(including a socket path, address or port that cannot be used).\n";

enum {
	OPT_CHECK = 256, OPT_PRECISION, OPT_DEVICES, OPT_EXCLUDE, OPT_NO_ROLLUP, OPT_QUEUE_FROM, OPT_MODE, OPT_THREADS,
	OPT_NO_SYNC, OPT_MAX_DEVICES, OPT_MAX_THREADS, OPT_CEPH, OPT_BPF_STATS, OPT_LOG_LEVEL,
	OPT_SYSLOG, OPT_JSON_BUCKETS, OPT_SOCKET, OPT_TCP, OPT_METRICS, OPT_NO_SERVER,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "check-config", required_argument, NULL, OPT_CHECK },
	{ "interval", required_argument, NULL, 'i' },
	{ "print", no_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "json-buckets", no_argument, NULL, OPT_JSON_BUCKETS },
	{ "duration", required_argument, NULL, 'd' },
	{ "precision", required_argument, NULL, OPT_PRECISION },
	{ "devices", required_argument, NULL, OPT_DEVICES },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "no-rollup", no_argument, NULL, OPT_NO_ROLLUP },
	{ "queue-from", required_argument, NULL, OPT_QUEUE_FROM },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
	{ "max-devices", required_argument, NULL, OPT_MAX_DEVICES },
	{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
	{ "ceph-osd-dir", required_argument, NULL, OPT_CEPH },
	{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "syslog", no_argument, NULL, OPT_SYSLOG },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "tcp", required_argument, NULL, OPT_TCP },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "no-server", no_argument, NULL, OPT_NO_SERVER },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *flag, const char *value, const char *why)
{
	fprintf(stderr, "iopulsed: %s '%s': %s (see iopulsed --help)\n", flag, value, why);
	return -EINVAL;
}

static int parse_u32(const char *flag, const char *s, unsigned long lo, unsigned long hi,
		     uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		return bad(flag, s, "not a number");
	v = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE)
		return bad(flag, s, "not a number");
	if (v < lo || v > hi) {
		char why[64];

		snprintf(why, sizeof(why), "out of range (%lu..%lu)", lo, hi);
		return bad(flag, s, why);
	}
	*out = (uint32_t)v;
	return 0;
}

static int parse_globs(const char *s, struct iop_strlist *l)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int r = copy ? 0 : -ENOMEM;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !r;
	     tok = strtok_r(NULL, ",", &save))
		r = iop_strlist_append(l, tok);
	free(copy);
	if (r)
		return r;
	if (!l->n)
		return bad("--devices/--exclude/--threads", s, "empty list");
	return 0;
}

static int parse_level(const char *s, int *out)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	return bad("--log-level", s, "expected error, warning, info or debug");
}

static int parse_args(int argc, char **argv, struct daemon_opts *o, const char **check)
{
	uint32_t u;
	int c, r = 0;

	o->ov.hist_precision = -1;
	o->ov.rollup = -1;
	o->ov.queue_from_bio = -1;
	o->ov.hist_mode = -1;
	o->ov.log_level = -1;
	o->ov.bpf_stats = -1;
	o->ov.sync_enabled = -1;
	o->ov.server_enabled = -1;
	opterr = 0;
	while (r == 0 && (c = getopt_long(argc, argv, ":c:i:pjd:Vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config_path = optarg; break;
		case OPT_CHECK: *check = optarg; break;
		case 'i':
			if (config_parse_duration_ms(optarg, &o->ov.interval_ms))
				r = bad("--interval", optarg, "expected a duration such as 1s or 500ms, 10ms..3600s");
			break;
		case 'd':
			if (config_parse_duration_range_ms(optarg, 10, 30ull * 24 * 3600 * 1000,
							   &o->duration_ms))
				r = bad("--duration", optarg, "expected a duration such as 30s, 5m or 2h (10ms..30 days)");
			break;
		case 'p': o->output = OUTPUT_TEXT; break;
		case 'j': o->output = OUTPUT_JSON; break;
		case OPT_JSON_BUCKETS: output_json_set_buckets(true); break;
		case OPT_PRECISION:
			r = parse_u32("--precision", optarg, IOP_HIST_K_MIN, IOP_HIST_K_MAX, &u);
			o->ov.hist_precision = (int)u;
			break;
		case OPT_DEVICES:
			r = parse_globs(optarg, &o->ov.dev_include);
			o->ov.set_dev_include = true;
			break;
		case OPT_EXCLUDE:
			r = parse_globs(optarg, &o->ov.dev_exclude);
			o->ov.set_dev_exclude = true;
			break;
		case OPT_THREADS:
			r = parse_globs(optarg, &o->ov.thread_include);
			o->ov.set_thread_include = true;
			break;
		case OPT_NO_ROLLUP: o->ov.rollup = 0; break;
		case OPT_QUEUE_FROM:
			if (strcmp(optarg, "bio") == 0) {
				o->ov.queue_from_bio = 1;
			} else if (strcmp(optarg, "request") == 0) {
				o->ov.queue_from_bio = 0;
			} else {
				r = bad("--queue-from", optarg, "expected bio or request");
			}
			break;
		case OPT_MODE: {
			enum iop_hist_mode m = IOP_HIST_MODE_FULL;

			if (config_hist_mode_parse(optarg, &m))
				r = bad("--mode", optarg, "expected full or completion");
			o->ov.hist_mode = (int)m;
			break;
		}
		case OPT_NO_SYNC: o->ov.sync_enabled = 0; break;
		case OPT_MAX_DEVICES: r = parse_u32("--max-devices", optarg, 1, 4096, &o->ov.max_devices); break;
		case OPT_MAX_THREADS: r = parse_u32("--max-threads", optarg, 16, 1048576, &o->ov.max_threads); break;
		case OPT_CEPH:
			if (optarg[0] != '/')
				r = bad("--ceph-osd-dir", optarg, "expected an absolute path");
			o->ov.ceph_osd_dir = optarg;
			break;
		case OPT_BPF_STATS: o->ov.bpf_stats = 1; break;
		case OPT_LOG_LEVEL: r = parse_level(optarg, &o->ov.log_level); break;
		case OPT_SYSLOG: o->use_syslog = true; break;
		case OPT_SOCKET:
			if (optarg[0] != '/')
				r = bad("--socket", optarg, "expected an absolute path");
			o->ov.socket = optarg;
			break;
		case OPT_TCP:
			if (!config_listen_valid(optarg))
				r = bad("--tcp", optarg, "expected HOST:PORT with a port 0..65535, e.g. "
					"127.0.0.1:7073");
			o->ov.tcp = optarg;
			break;
		case OPT_METRICS:
			if (!config_listen_valid(optarg))
				r = bad("--metrics", optarg, "expected HOST:PORT with a port 0..65535, e.g. "
					"127.0.0.1:9873");
			o->ov.metrics = optarg;
			break;
		case OPT_NO_SERVER: o->ov.server_enabled = 0; break;
		case 'V':
			printf("iopulsed %s\n", IOPULSE_VERSION);
			exit(0);
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "iopulsed: option '%s' needs a value (see iopulsed --help)\n",
				argv[optind - 1]);
			r = -EINVAL;
			break;
		default:
			fprintf(stderr, "iopulsed: unknown option '%s' (see iopulsed --help)\n",
				argv[optind - 1]);
			r = -EINVAL;
			break;
		}
	}
	if (!r && o->ov.hist_mode == IOP_HIST_MODE_COMPLETION && o->ov.queue_from_bio == 1) {
		fprintf(stderr, "iopulsed: --queue-from bio needs the full mode: --mode completion "
			"takes queue wait from the request's set-up (see iopulsed --help)\n");
		r = -EINVAL;
	}
	if (!r && optind < argc) {
		fprintf(stderr, "iopulsed: unexpected argument '%s' (see iopulsed --help)\n", argv[optind]);
		r = -EINVAL;
	}
	return r;
}

static int check_config(const char *path)
{
	struct iop_config c;
	char err[1024] = "";
	int r = config_init_defaults(&c);

	if (!r)
		r = config_load(&c, path, err, sizeof(err));
	if (!r)
		r = config_check_serving(&c, err, sizeof(err));
	config_release(&c);
	if (r) {
		fprintf(stderr, "iopulsed: %s\n", err[0] ? err : strerror(-r));
		return IOP_EXIT_CONFIG;
	}
	printf("%s: ok\n", path);
	return 0;
}

/* The options live as long as the process; the lists parse_globs() made are freed at exit. */
static struct daemon_opts o;

static void free_options(void)
{
	iop_strlist_free(&o.ov.dev_include);
	iop_strlist_free(&o.ov.dev_exclude);
	iop_strlist_free(&o.ov.thread_include);
}

int main(int argc, char **argv)
{
	struct iop_config cfg;
	const char *check = NULL;
	char err[1024];
	int r;

	atexit(free_options);
	if (parse_args(argc, argv, &o, &check))
		return IOP_EXIT_CONFIG;
	if (check)
		return check_config(check);
	r = config_init_defaults(&cfg);
	if (r) {
		fprintf(stderr, "iopulsed: out of memory\n");
		return IOP_EXIT_RUNTIME;
	}
	if (!o.config_path && access(IOP_CONFIG_DEFAULT_PATH, F_OK) == 0)
		o.config_path = IOP_CONFIG_DEFAULT_PATH;
	if (o.config_path) {
		err[0] = '\0';
		r = config_load(&cfg, o.config_path, err, sizeof(err));
		if (r) {
			fprintf(stderr, "iopulsed: %s\n", err[0] ? err : strerror(-r));
			config_release(&cfg);
			return IOP_EXIT_CONFIG;
		}
	}
	r = overrides_apply(&o.ov, &cfg);
	if (r) {
		fprintf(stderr, "iopulsed: out of memory\n");
		config_release(&cfg);
		return IOP_EXIT_RUNTIME;
	}
	err[0] = '\0';
	r = config_check_serving(&cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "iopulsed: %s%s%s\n", o.config_path ? o.config_path : "",
			o.config_path ? ": " : "", err);
		config_release(&cfg);
		return IOP_EXIT_CONFIG;
	}
	log_setup(cfg.log_level, o.use_syslog);
	if (!o.config_path)
		log_info("no config file at " IOP_CONFIG_DEFAULT_PATH "; using built-in defaults");
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	r = daemon_run(&o, &cfg);
	config_release(&cfg);
	return r;
}
