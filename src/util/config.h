/* config.h - iopulsed configuration: typed struct, YAML loader, validation */
#ifndef IOPULSE_CONFIG_H
#define IOPULSE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_duration.h"
#include "strlist.h"

#define IOP_CONFIG_DEFAULT_PATH "/etc/iopulse/iopulse.yaml"

enum iop_log_level {
	IOP_LOG_ERROR = 0,
	IOP_LOG_WARNING = 1,
	IOP_LOG_INFO = 2,
	IOP_LOG_DEBUG = 3,
};

/* histogram.mode: how the block-layer latencies are taken (probes_opts.completion_only). */
enum iop_hist_mode {
	IOP_HIST_MODE_FULL = 0,        /* dispatch and completion programs, records per request */
	IOP_HIST_MODE_COMPLETION = 1,  /* one program at completion: the kernel's own stamps */
};

/* "full" or "completion". */
const char *config_hist_mode_name(enum iop_hist_mode m);
/* The mode called s (0), or -EINVAL. */
int config_hist_mode_parse(const char *s, enum iop_hist_mode *out);

/* "host:port" with a port 0..65535 (server.tcp, metrics.listen, --tcp, --metrics). */
bool config_listen_valid(const char *s);

struct iop_config {
	uint64_t interval_ms;          /* interval: "1s", "500ms", 2 (seconds); 10ms..3600s */
	unsigned int hist_precision;   /* histogram.precision: 2..7 (IOP_HIST_K_*) */
	struct iop_strlist dev_include;  /* devices.include: globs on kernel names; empty = all */
	struct iop_strlist dev_exclude;  /* devices.exclude: globs; default ["ram*", "zram*"] */
	bool rollup_partitions;        /* devices.rollup_partitions: default true */
	bool queue_from_bio;           /* histogram.queue_from_bio: default true (full mode only) */
	enum iop_hist_mode hist_mode;  /* histogram.mode: full (default) or completion */
	struct iop_strlist thread_include; /* sync.threads.include: globs on thread names */
	struct iop_strlist thread_exclude; /* sync.threads.exclude */
	bool sync_enabled;             /* sync.enabled: default true */
	uint32_t max_devices;          /* limits.devices: 1..4096, default 64 */
	uint32_t max_threads;          /* limits.threads: 16..1048576, default 1024 */
	uint32_t threads_reserved;     /* limits.threads_reserved: of those, kept for watched
	                                * threads (at most half), default 128 */
	uint32_t max_inflight;         /* limits.inflight: 1024..4194304, default 65536 */
	char *ceph_osd_dir;            /* ceph.osd_dir: default "/var/lib/ceph/osd" */
	enum iop_log_level log_level;  /* log.level: error|warning|info|debug, default info */
	bool bpf_stats;                /* bpf_stats: enable kernel.bpf_stats_enabled while running */
	bool server_enabled;           /* server.enabled: default true */
	char *server_socket;           /* server.socket: default IOP_DEFAULT_SOCKET */
	uint32_t server_socket_mode;   /* server.socket_mode: octal string, default "0660" */
	char *server_socket_group;     /* server.socket_group: group name, "" = root's */
	char *server_mark_group;       /* server.mark_group: who may mark over the socket, "" = all */
	char *server_tcp;              /* server.tcp: "host:port" to listen on too, "" = none */
	char *server_tls_cert;         /* server.tls_cert: PEM certificate chain for TCP, "" = no TLS */
	char *server_tls_key;          /* server.tls_key: its PEM private key */
	char *server_tls_client_ca;    /* server.tls_client_ca: PEM CAs clients must be signed by */
	bool server_insecure;          /* server.insecure: TCP beyond loopback without TLS allowed */
	struct iop_strlist server_mark_clients; /* server.mark_clients: who may mark over TCP */
	uint64_t server_ring_ms;       /* server.ring: replay history kept, default 10m */
	uint32_t server_mark_rate;     /* server.mark_rate: phase marks per second, default 20 */
	uint32_t server_ring_mib;      /* server.ring_mib: memory the replay ring holds, default 256 */
	uint32_t server_mark_bytes;    /* server.mark_bytes: largest MarkPhaseRequest, default 4 KiB */
	uint32_t server_mark_labels;   /* server.mark_labels: labels per mark, default 32 */
	uint32_t server_open_phases;   /* server.open_phases: phases open at once, default 1024 */
	uint32_t server_subscribers;   /* server.subscribers: Subscribe streams at once, default 256 */
	uint32_t server_request_bytes; /* server.request_bytes: largest request, default 64 KiB */
	char *metrics_listen;          /* metrics.listen: "host:port" of the Prometheus endpoint, "" = off */
	uint32_t metrics_precision;    /* metrics.precision: 2^p buckets per power of two, default 2 */
	struct iop_strlist metrics_threads;  /* metrics.threads: thread-name globs exported */
	uint32_t metrics_max_threads;  /* metrics.max_threads: thread series sets exported at most */
};

/*
 * What serving needs beyond each key alone, checked after the file and the flags: TLS files
 * given in pairs, and a TCP address beyond loopback only with TLS or server.insecure.
 * -EINVAL and one line in err.
 */
int config_check_serving(const struct iop_config *c, char *err, size_t errlen);

#define IOP_DEFAULT_SOCKET "/run/iopulse/iopulse.sock"

/* Fill with the built-in defaults (allocates the default exclude list). */
int config_init_defaults(struct iop_config *c);
void config_release(struct iop_config *c);

/*
 * Parse path into c (which must hold defaults or a previous config; keys present in the file
 * replace them). On error returns -errno (-EINVAL for content errors) and writes one line
 * "FILE:LINE:COLUMN: key 'a.b': what is wrong" into err (errlen bytes). On error c is
 * left unchanged.
 */
int config_load(struct iop_config *c, const char *path, char *err, size_t errlen);

/*
 * Deep copy (for SIGHUP: load into a copy, swap on success). dst is overwritten without
 * being released first; on error (-ENOMEM) dst is left zeroed.
 */
int config_copy(struct iop_config *dst, const struct iop_config *src);

#endif
