/* daemon.h - the main loop: timer, signals, reload, output */
#ifndef IOPULSE_DAEMON_H
#define IOPULSE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* iopulsed's exit codes (iopulsed --help). */
enum {
	IOP_EXIT_RUNTIME = 1,  /* BPF, permissions, the kernel, memory */
	IOP_EXIT_CONFIG = 2,   /* bad flags or config, or a socket path, address or port unusable */
};

enum output_mode {
	OUTPUT_NONE = 0,
	OUTPUT_TEXT,
	OUTPUT_JSON,
};

/* Command-line settings that win over the config file, re-applied after every reload. */
struct overrides {
	uint64_t interval_ms;          /* 0: not set */
	int hist_precision;            /* -1: not set */
	struct iop_strlist dev_include, dev_exclude, thread_include;
	bool set_dev_include, set_dev_exclude, set_thread_include;
	int rollup;                    /* -1 not set, 0/1 */
	int queue_from_bio;            /* -1 not set, 0/1 */
	int hist_mode;                 /* -1 not set, enum iop_hist_mode */
	uint32_t max_devices, max_threads;
	const char *ceph_osd_dir;
	int log_level;                 /* -1: not set */
	int bpf_stats;                 /* -1: not set */
	int sync_enabled;              /* -1: not set */
	int server_enabled;            /* -1: not set */
	const char *socket, *tcp;      /* NULL: not set */
	const char *metrics;           /* metrics.listen; NULL: not set */
};

struct daemon_opts {
	const char *config_path;       /* NULL: built-in defaults only */
	enum output_mode output;
	uint64_t duration_ms;          /* 0: run until a signal */
	bool use_syslog;
	struct overrides ov;
};

/* Applies the overrides to c (in place). Returns 0 or -errno. */
int overrides_apply(const struct overrides *ov, struct iop_config *c);

/* Runs until SIGINT/SIGTERM or the duration ends. Returns a process exit code: 0, or
 * IOP_EXIT_RUNTIME or IOP_EXIT_CONFIG. */
int daemon_run(const struct daemon_opts *o, struct iop_config *cfg);

#endif
