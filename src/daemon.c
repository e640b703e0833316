/* daemon.c - the main loop: timer, signals, reload, output */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "aggregator.h"
#include "clock.h"
#include "config_apply.h"
#include "devices.h"
#include "hub.h"
#include "info_pb.h"
#include "metrics_http.h"
#include "notify.h"
#include "log.h"
#include "output_json.h"
#include "output_text.h"
#include "phases.h"
#include "probes.h"
#include "rpc_server.h"
#include "threads.h"

struct pipeline {
	struct probes *probes;
	struct devices *devices;
	struct threads *threads;
	struct aggregator *agg;
};

/* The gRPC side: lives across reloads. */
struct serving {
	struct hub *hub;
	struct rpc_server *rpc;
	struct metrics_server *metrics;
	uint64_t started_realtime_ns;
	uint64_t bpf_run_time_ns, bpf_run_count;
};

static struct serving srv;

/*
 * IOPULSE_TEST_INFO_LAG_MS=N: the tests' way to build the Info after an interval N ms late
 * (0..1000, 0 or unset: at once), as a loaded machine may, to show that GetInfo does not
 * depend on it for the phases open (rpc_unary.c with_open_phases).
 */
static void test_info_lag(void)
{
	static long ms = -1;
	struct timespec ts;

	if (ms < 0) {
		const char *v = getenv("IOPULSE_TEST_INFO_LAG_MS");

		ms = v ? strtol(v, NULL, 10) : 0;
		ms = ms < 0 ? 0 : ms > 1000 ? 1000 : ms;
		if (ms)
			log_warn("IOPULSE_TEST_INFO_LAG_MS=%ld: the Info of each interval is built "
				 "%ld ms late (a test setting)", ms, ms);
	}
	if (!ms)
		return;
	ts.tv_sec = 0;
	ts.tv_nsec = ms * 1000000L;
	nanosleep(&ts, NULL);
}

static void publish(struct pipeline *pl, const struct iop_config *c, const struct iop_interval *iv)
{
	struct info_src is = {
		.config = c, .devices = pl->devices, .attach_mode = probes_attach_mode(pl->probes),
		.sync_on = probes_sync_on(pl->probes),
		.sync_off_reason = probes_sync_off_reason(pl->probes),
		.hist_k = iv->hist_k, .completion_only = iv->completion_only,
		.started_realtime_ns = srv.started_realtime_ns,
		.bpf_stats = iv->bpf_stats,
	};
	struct hub_msg *info;
	size_t i;
	int r;

	if (!srv.hub)
		return;
	for (i = 0; i < iv->nprogs; i++) {
		srv.bpf_run_time_ns += iv->progs[i].run_time_ns;
		srv.bpf_run_count += iv->progs[i].run_cnt;
	}
	r = hub_publish(srv.hub, iv);
	if (r)
		log_warn("an interval could not be kept for subscribers: %s", strerror(-r));
	test_info_lag();
	if (phases_open(hub_phases(srv.hub), &is.open_phases, &is.n_open_phases))
		log_warn("out of memory listing the open phases");
	is.bpf_run_time_ns = srv.bpf_run_time_ns;
	is.bpf_run_count = srv.bpf_run_count;
	is.last_seq = hub_last_seq(srv.hub);
	is.subscribers = hub_subscriber_count(srv.hub);
	is.ring_seconds = hub_ring_seconds(srv.hub);
	is.limits = hub_limits(srv.hub);
	is.ring_bytes = hub_ring_bytes(srv.hub);
	hub_last_fanout(srv.hub, &is.fanout_ns, &is.fanout_streams);
	info = info_build(&is);
	if (info)
		hub_set_info(srv.hub, info);
}

/*
 * What a listener's failure says about the address or path it was given: bind(2), chmod(2)
 * and the socket path's checks fail so for what the config names (exit IOP_EXIT_CONFIG);
 * anything else is the host's (out of memory, descriptors, threads, gRPC core).
 */
static bool listener_misconfigured(int r)
{
	switch (-r) {
	case EADDRINUSE:
	case EADDRNOTAVAIL:
	case EAFNOSUPPORT:
	case EACCES:
	case EPERM:
	case EINVAL:
	case EEXIST:
	case ENOENT:
	case ENOTDIR:
	case ENAMETOOLONG:
	case ELOOP:
	case EROFS:
		return true;
	}
	return false;
}

/* The hub, the metrics endpoint and the gRPC server. 0, or the exit code to end with. */
static int serving_start(const struct iop_config *c)
{
	struct rpc_server_opts ro = {
		.unix_path = c->server_socket, .unix_mode = c->server_socket_mode,
		.unix_group = c->server_socket_group, .tcp = c->server_tcp,
		.mark_group = c->server_mark_group,
		.tls_cert = c->server_tls_cert, .tls_key = c->server_tls_key,
		.tls_client_ca = c->server_tls_client_ca,
		.mark_clients = c->server_mark_clients.v, .nmark_clients = c->server_mark_clients.n,
	};
	struct server_limits lim;
	char err[512] = "";
	int r;

	if (!c->server_enabled && !*c->metrics_listen)
		return 0;
	if (c->server_ring_ms < c->interval_ms) {
		log_error("server.ring (%llu ms) is shorter than one interval (%llu ms)",
			  (unsigned long long)c->server_ring_ms, (unsigned long long)c->interval_ms);
		return IOP_EXIT_CONFIG;
	}
	srv.started_realtime_ns = iop_clock_ns(CLOCK_REALTIME);
	lim = (struct server_limits){
		.mark_rate = c->server_mark_rate, .mark_bytes = c->server_mark_bytes,
		.mark_labels = c->server_mark_labels, .open_phases = c->server_open_phases,
		.subscribers = c->server_subscribers, .request_bytes = c->server_request_bytes,
		.ring_mib = c->server_ring_mib,
	};
	ro.request_bytes = lim.request_bytes;
	r = hub_new(&srv.hub, c->interval_ms, c->server_ring_ms, &lim);
	if (r) {
		log_error("cannot set up the replay ring: %s", strerror(-r));
		return IOP_EXIT_RUNTIME;
	}
	hub_watch_threads(srv.hub, threads_alive);
	if (*c->metrics_listen) {
		if (c->metrics_precision > c->hist_precision)
			log_warn("metrics.precision %u is finer than histogram.precision %u: "
				 "exporting at %u", c->metrics_precision, c->hist_precision,
				 c->hist_precision);
		r = metrics_server_start(&srv.metrics, srv.hub, c, err, sizeof(err));
		if (r) {
			log_error("%s", err[0] ? err : strerror(-r));
			srv.hub = hub_free(srv.hub);
			return listener_misconfigured(r) ? IOP_EXIT_CONFIG : IOP_EXIT_RUNTIME;
		}
		log_info("serving Prometheus metrics on http://%s (port %d)/metrics",
			 c->metrics_listen, metrics_server_port(srv.metrics));
	}
	if (!c->server_enabled)
		return 0;
	r = rpc_server_start(&srv.rpc, srv.hub, &ro, err, sizeof(err));
	if (r) {
		log_error("gRPC server: %s", err[0] ? err : strerror(-r));
		srv.metrics = metrics_server_stop(srv.metrics);
		srv.hub = hub_free(srv.hub);
		return listener_misconfigured(r) ? IOP_EXIT_CONFIG : IOP_EXIT_RUNTIME;
	}
	if (c->server_socket && *c->server_socket)
		log_info("serving gRPC on unix:%s", c->server_socket);
	if (rpc_server_tcp_port(srv.rpc))
		log_info("serving gRPC on tcp port %d%s", rpc_server_tcp_port(srv.rpc),
			 *c->server_tls_cert ? (*c->server_tls_client_ca ? " (TLS, client certificates "
			 "required)" : " (TLS)") : "");
	if (*c->server_tcp && !*c->server_tls_cert && c->server_insecure)
		log_warn("server.insecure: gRPC on %s is clear text without client authentication: "
			 "whoever reaches the port reads every device and thread", c->server_tcp);
	return 0;
}

static void serving_stop(void)
{
	srv.metrics = metrics_server_stop(srv.metrics);
	srv.rpc = rpc_server_stop(srv.rpc);
	srv.hub = hub_free(srv.hub);
}

/* Replace *dst with a copy of src. 0 or -ENOMEM (dst unchanged). */
static int replace_list(struct iop_strlist *dst, const struct iop_strlist *src)
{
	struct iop_strlist l;

	if (iop_strlist_copy(&l, src))
		return -ENOMEM;
	iop_strlist_free(dst);
	*dst = l;
	return 0;
}

static int replace_str(char **dst, const char *src)
{
	char *d;

	if (!src)
		return 0;
	d = strdup(src);
	if (!d)
		return -ENOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

int overrides_apply(const struct overrides *ov, struct iop_config *c)
{
	int r = 0;

	if (ov->interval_ms)
		c->interval_ms = ov->interval_ms;
	if (ov->hist_precision >= 0)
		c->hist_precision = (unsigned int)ov->hist_precision;
	if (ov->set_dev_include)
		r = r ?: replace_list(&c->dev_include, &ov->dev_include);
	if (ov->set_dev_exclude)
		r = r ?: replace_list(&c->dev_exclude, &ov->dev_exclude);
	if (ov->set_thread_include)
		r = r ?: replace_list(&c->thread_include, &ov->thread_include);
	if (ov->rollup >= 0)
		c->rollup_partitions = ov->rollup;
	if (ov->queue_from_bio >= 0)
		c->queue_from_bio = ov->queue_from_bio;
	if (ov->hist_mode >= 0)
		c->hist_mode = (enum iop_hist_mode)ov->hist_mode;
	if (ov->max_devices)
		c->max_devices = ov->max_devices;
	if (ov->max_threads)
		c->max_threads = ov->max_threads;
	r = r ?: replace_str(&c->ceph_osd_dir, ov->ceph_osd_dir);
	if (ov->log_level >= 0)
		c->log_level = (enum iop_log_level)ov->log_level;
	if (ov->bpf_stats >= 0)
		c->bpf_stats = ov->bpf_stats;
	if (ov->sync_enabled >= 0)
		c->sync_enabled = ov->sync_enabled;
	if (ov->server_enabled >= 0)
		c->server_enabled = ov->server_enabled;
	r = r ?: replace_str(&c->server_socket, ov->socket);
	r = r ?: replace_str(&c->server_tcp, ov->tcp);
	r = r ?: replace_str(&c->metrics_listen, ov->metrics);
	return r;
}

static void pipeline_stop(struct pipeline *pl)
{
	pl->agg = aggregator_free(pl->agg);
	pl->threads = threads_free(pl->threads);
	pl->probes = probes_free(pl->probes);
	pl->devices = devices_free(pl->devices);
}

static int pipeline_start(struct pipeline *pl, const struct iop_config *c)
{
	struct probes_opts po = {
		.hist_k = c->hist_precision,
		.rollup_partitions = c->rollup_partitions,
		.queue_from_bio = c->queue_from_bio,
		.completion_only = c->hist_mode == IOP_HIST_MODE_COMPLETION,
		.sync_enabled = c->sync_enabled,
		.bpf_stats = c->bpf_stats,
		.max_devices = c->max_devices,
		.max_threads = c->max_threads,
		.max_inflight = c->max_inflight,
	};
	char err[1024];
	int r;

	r = devices_new(&pl->devices, "/sys", c->ceph_osd_dir);
	if (r) {
		log_error("cannot read the block devices from /sys: %s", strerror(-r));
		return r;
	}
	r = probes_new(&pl->probes, &po, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		goto fail;
	}
	if (probes_sync_on(pl->probes)) {
		r = threads_new(&pl->threads, pl->probes, pl->devices);
		if (r)
			goto fail;
	}
	r = aggregator_new(&pl->agg, pl->probes, pl->devices, pl->threads);
	if (r)
		goto fail;
	r = aggregator_prime(pl->agg, c);
	if (r)
		log_warn("cannot take the devices' reference counts from /proc/diskstats: %s",
			 strerror(-r));
	return 0;
fail:
	pipeline_stop(pl);
	return r;
}

static int arm_timer(int tfd, uint64_t ms)
{
	struct itimerspec its = {
		.it_interval = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 },
	};

	its.it_value = its.it_interval;
	return timerfd_settime(tfd, 0, &its, NULL) ? -errno : 0;
}

static int emit(struct pipeline *pl, const struct daemon_opts *o, const struct iop_config *c,
		bool final)
{
	struct iop_interval iv;
	enum unseen_edge edge = final ? UNSEEN_FINAL : UNSEEN_TICK;
	int r;

	/* phase marks made so far sit on this edge: cut them before the maps are read */
	if (srv.hub && phases_cut(hub_phases(srv.hub)) && !final)
		edge = UNSEEN_MARK;
	r = aggregator_collect(pl->agg, c, &iv, edge);

	if (r) {
		log_error("collecting the interval failed: %s", strerror(-r));
		return r;
	}
	publish(pl, c, &iv);
	if (o->output == OUTPUT_JSON)
		r = output_json_write(stdout, &iv);
	else if (o->output == OUTPUT_TEXT)
		r = output_text_write(stdout, &iv);
	if (r)
		log_error("writing the output failed: %s", strerror(-r));
	return r;
}

/* Whether key (dotted) is among the plan's changes applied live. */
static bool plan_has(const struct config_plan *plan, const char *key)
{
	for (size_t i = 0; i < plan->n; i++)
		if (!strcmp(plan->changes[i].key, key) &&
		    plan->changes[i].apply == CONFIG_APPLY_LIVE)
			return true;
	return false;
}

/* One line per key a reload changes, saying how the change applies (or that it waits). */
static void log_plan(const struct config_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++) {
		const struct config_change *ch = &plan->changes[i];

		if (ch->apply == CONFIG_APPLY_LIVE)
			log_info("reload: %s changed, applied%s%s%s", ch->key, ch->note ? " (" : "",
				 ch->note ? ch->note : "", ch->note ? ")" : "");
		else if (ch->apply == CONFIG_APPLY_PROBES)
			log_info("reload: %s changed, applied by loading the probes again", ch->key);
		else
			log_warn("reload: %s changed, which needs a restart: the running value stays "
				 "until iopulsed restarts", ch->key);
	}
}

/*
 * SIGHUP: parse into a copy; keep the old config on any error. What each changed key does is
 * the key tables' word (config_plan_reload()): applied now, applied by new probes, or kept
 * at its running value with a warning.
 */
static int reload(const struct daemon_opts *o, struct iop_config *cfg, struct pipeline *pl, int tfd)
{
	struct iop_config fresh;
	struct config_plan plan;
	char err[1024] = "";
	int r;

	if (!o->config_path) {
		log_info("SIGHUP: no config file in use, nothing to reload");
		return 0;
	}
	r = config_init_defaults(&fresh);
	if (r)
		return r;
	r = config_load(&fresh, o->config_path, err, sizeof(err));
	if (!r)
		r = overrides_apply(&o->ov, &fresh);
	if (!r)
		r = config_check_serving(&fresh, err, sizeof(err));
	if (!r)
		r = config_plan_reload(&fresh, cfg, &plan);
	if (r) {
		log_error("reload rejected, keeping the running config: %s",
			  err[0] ? err : strerror(-r));
		config_release(&fresh);
		return 0;
	}
	if (plan.probes) {
		struct pipeline next = { 0 };

		/*
		 * The new probes attach beside the old ones, which keep counting meanwhile; the
		 * old ones' last interval ends where the new ones' first begins (no gap).
		 */
		r = pipeline_start(&next, &fresh);
		if (r) {
			log_error("reload rejected, the new settings could not be applied; keeping the running config");
			config_release(&fresh);
			return 0;
		}
		/* the cut between the two sets is at the old one's last interval's end */
		aggregator_hand_over(pl->agg, next.agg, &fresh);
		emit(pl, o, cfg, false);
		aggregator_set_seq(next.agg, aggregator_seq(pl->agg));
		pipeline_stop(pl);
		*pl = next;
	}
	if (fresh.interval_ms != cfg->interval_ms) {
		r = arm_timer(tfd, fresh.interval_ms);
		if (r) {
			log_error("interval not changed: the timer cannot be set: %s", strerror(-r));
			fresh.interval_ms = cfg->interval_ms;
		}
	}
	if (srv.rpc && plan_has(&plan, "server.mark_clients") &&
	    rpc_server_set_mark_clients(srv.rpc, fresh.server_mark_clients.v,
					fresh.server_mark_clients.n)) {
		log_error("reload: server.mark_clients not changed (out of memory): the running "
			  "globs stay");
		iop_strlist_free(&fresh.server_mark_clients);
		if (iop_strlist_copy(&fresh.server_mark_clients, &cfg->server_mark_clients))
			log_error("reload: server.mark_clients: out of memory");
	}
	log_plan(&plan);
	log_setup(fresh.log_level, o->use_syslog);
	/* the certificate, key and client CAs are read again from the running paths */
	if (srv.rpc && *cfg->server_tls_cert && *cfg->server_tcp) {
		err[0] = '\0';
		if (rpc_server_reload_tls(srv.rpc, err, sizeof(err)))
			log_error("TLS files not reloaded, new connections keep the previous ones: %s",
				  err);
		else
			log_info("TLS certificate, key and client CAs reloaded for new connections");
	}
	config_release(cfg);
	*cfg = fresh;
	log_info("configuration reloaded from %s", o->config_path);
	return 0;
}

/* Add fd to efd's set, for input. 0 or -errno. */
static int watch(int efd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static uint64_t mono_ms(void)
{
	return iop_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

int daemon_run(const struct daemon_opts *o, struct iop_config *cfg)
{
	struct pipeline pl = { 0 };
	struct epoll_event got[4];
	sigset_t mask;
	int sfd = -1, tfd = -1, dfd = -1, efd = -1, mfd = -1, rc, n, i, r;
	bool running = true;
	uint64_t end_ms = 0;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return IOP_EXIT_RUNTIME;
	/* without the capabilities nothing else is worth trying: say that, not a socket error */
	{
		char err[512];

		if (probes_check_caps(err, sizeof(err))) {
			log_error("%s", err);
			return IOP_EXIT_RUNTIME;
		}
	}
	/* listeners next: an address in use or unresolvable fails before any probe attaches */
	rc = serving_start(cfg);
	if (rc)
		return rc;
	rc = IOP_EXIT_RUNTIME;
	if (pipeline_start(&pl, cfg)) {
		serving_stop();
		return IOP_EXIT_RUNTIME;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	efd = epoll_create1(EPOLL_CLOEXEC);
	r = sfd < 0 || tfd < 0 || efd < 0 ? -errno : 0;
	r = r ?: arm_timer(tfd, cfg->interval_ms);
	r = r ?: watch(efd, sfd);
	r = r ?: watch(efd, tfd);
	if (!r && srv.hub) {
		mfd = phases_fd(hub_phases(srv.hub));
		r = watch(efd, mfd);
	}
	if (!r && o->duration_ms) {
		struct itimerspec its = { .it_value = { .tv_sec = (time_t)(o->duration_ms / 1000),
						      .tv_nsec = (long)(o->duration_ms % 1000) * 1000000 } };

		dfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		r = dfd < 0 || timerfd_settime(dfd, 0, &its, NULL) ? -errno : 0;
		r = r ?: watch(efd, dfd);
		end_ms = mono_ms() + o->duration_ms;
	}
	if (r) {
		log_error("cannot set up the main loop (signals, timers, epoll): %s", strerror(-r));
		goto out;
	}
	log_info("ready: interval %llu ms, attach mode %s", (unsigned long long)cfg->interval_ms,
		 probes_attach_mode(pl.probes));
	/* Type=notify: the probes are attached and the socket listens */
	if (notify_manager("READY=1"))
		log_warn("could not tell the service manager we are ready ($NOTIFY_SOCKET)");

	while (running) {
		n = epoll_wait(efd, got, 4, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			goto out;
		}
		for (i = 0; i < n; i++) {
			uint64_t ticks;

			if (got[i].data.fd == tfd) {
				if (read(tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
					continue;
				if (end_ms && mono_ms() + 1 >= end_ms)
					continue;   /* the duration timer closes the last interval */
				if (emit(&pl, o, cfg, false))
					goto out;
			} else if (got[i].data.fd == mfd) {
				/* a phase mark closes the interval now */
				phases_drain_fd(hub_phases(srv.hub));
				if (emit(&pl, o, cfg, false))
					goto out;
			} else if (got[i].data.fd == dfd) {
				running = false;
			} else if (got[i].data.fd == sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGHUP) {
					notify_manager("RELOADING=1");
					reload(o, cfg, &pl, tfd);
					notify_manager("READY=1");
				}
				else if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
					running = false;
			}
		}
	}
	notify_manager("STOPPING=1");
	if (srv.hub)     /* iopulsed stops: open phases end with the last interval, abandoned */
		phases_close_all(hub_phases(srv.hub));
	rc = emit(&pl, o, cfg, true) ? IOP_EXIT_RUNTIME : 0;
out:
	serving_stop();
	pipeline_stop(&pl);
	log_info("stopped: probes detached");
	if (dfd >= 0)
		close(dfd);
	if (efd >= 0)
		close(efd);
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
