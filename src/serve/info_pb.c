/* info_pb.c - builds the packed iopulse.v1.Info answer */
#include "info_pb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hist_math.h"
#include "queue_settings.h"
#include "update_pb.h"

static uint64_t rss_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Comma list "a,b" -> a new array of strings. */

static Iopulse__V1__DeviceInfo *device_info(const struct iop_device *d)
{
	Iopulse__V1__DeviceInfo *i = malloc(sizeof(*i));

	if (!i)
		return NULL;
	iopulse__v1__device_info__init(i);
	i->name = strndup(d->name, sizeof(d->name));
	i->model = strndup(d->model, sizeof(d->model));
	i->dm_name = strndup(d->dm_name, sizeof(d->dm_name));
	i->osd_role = strndup(d->osd_id >= 0 ? d->osd_role : "", sizeof(d->osd_role));
	i->major = major(d->dev);
	i->minor = minor(d->dev);
	i->rotational = d->rotational;
	i->osd_id = d->osd_id;
	i->partition = d->is_partition;
	i->present = d->present;
	i->slaves = pb_split_list(d->slaves, &i->n_slaves);
	i->holders = pb_split_list(d->holders, &i->n_holders);
	i->disks = pb_split_list(d->disks, &i->n_disks);
	if (!i->name || !i->model || !i->dm_name || !i->osd_role) {
		iopulse__v1__device_info__free_unpacked(i, NULL);
		return NULL;
	}
	return i;
}

static void join_list(char *buf, size_t len, char *const *v, size_t n)
{
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", v[i]);
}

static int add_config(Iopulse__V1__Info *info, const char *key, const char *value)
{
	Iopulse__V1__Info__ConfigEntry *e, **g;

	g = realloc(info->config, (info->n_config + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	info->config = g;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	iopulse__v1__info__config_entry__init(e);
	e->key = strdup(key);
	e->value = strdup(value);
	g[info->n_config++] = e;
	return e->key && e->value ? 0 : -ENOMEM;
}

static int add_uint(Iopulse__V1__Info *info, const char *key, unsigned int v)
{
	char b[16];

	snprintf(b, sizeof(b), "%u", v);
	return add_config(info, key, b);
}

static int fill_config(Iopulse__V1__Info *info, const struct info_src *s)
{
	const struct iop_config *c = s->config;
	static const char *const levels[] = { "error", "warning", "info", "debug" };
	char b[1024];
	int r = 0;

	snprintf(b, sizeof(b), "%llums", (unsigned long long)c->interval_ms);
	r = r ?: add_config(info, "interval", b);
	r = r ?: add_uint(info, "histogram.precision", c->hist_precision);
	join_list(b, sizeof(b), c->dev_include.v, c->dev_include.n);
	r = r ?: add_config(info, "devices.include", b);
	join_list(b, sizeof(b), c->dev_exclude.v, c->dev_exclude.n);
	r = r ?: add_config(info, "devices.exclude", b);
	r = r ?: add_config(info, "devices.rollup_partitions", c->rollup_partitions ? "true" : "false");
	r = r ?: add_config(info, "histogram.mode", config_hist_mode_name(c->hist_mode));
	r = r ?: add_config(info, "histogram.queue_from_bio", c->queue_from_bio ? "true" : "false");
	r = r ?: add_config(info, "sync.enabled", c->sync_enabled ? "true" : "false");
	/* what runs: off with the reason when this kernel or host cannot do it */
	snprintf(b, sizeof(b), "%s%s%s", s->sync_on ? "true" : "false",
		 s->sync_off_reason && s->sync_off_reason[0] ? ": " : "",
		 s->sync_off_reason ? s->sync_off_reason : "");
	r = r ?: add_config(info, "sync.active", b);
	join_list(b, sizeof(b), c->thread_include.v, c->thread_include.n);
	r = r ?: add_config(info, "sync.threads.include", b);
	join_list(b, sizeof(b), c->thread_exclude.v, c->thread_exclude.n);
	r = r ?: add_config(info, "sync.threads.exclude", b);
	r = r ?: add_uint(info, "limits.devices", c->max_devices);
	r = r ?: add_uint(info, "limits.threads", c->max_threads);
	r = r ?: add_uint(info, "limits.inflight", c->max_inflight);
	r = r ?: add_config(info, "ceph.osd_dir", c->ceph_osd_dir ? c->ceph_osd_dir : "");
	r = r ?: add_config(info, "log.level", levels[c->log_level & 3]);
	r = r ?: add_config(info, "bpf_stats", c->bpf_stats ? "true" : "false");
	r = r ?: add_config(info, "server.socket", c->server_socket ? c->server_socket : "");
	snprintf(b, sizeof(b), "%04o", c->server_socket_mode);
	r = r ?: add_config(info, "server.socket_mode", b);
	r = r ?: add_config(info, "server.socket_group",
			    c->server_socket_group ? c->server_socket_group : "");
	r = r ?: add_config(info, "server.mark_group",
			    c->server_mark_group ? c->server_mark_group : "");
	r = r ?: add_config(info, "server.tcp", c->server_tcp ? c->server_tcp : "");
	r = r ?: add_config(info, "server.tls_cert", c->server_tls_cert ? c->server_tls_cert : "");
	r = r ?: add_config(info, "server.tls_client_ca",
			    c->server_tls_client_ca ? c->server_tls_client_ca : "");
	r = r ?: add_config(info, "server.insecure", c->server_insecure ? "true" : "false");
	join_list(b, sizeof(b), c->server_mark_clients.v, c->server_mark_clients.n);
	r = r ?: add_config(info, "server.mark_clients", b);
	snprintf(b, sizeof(b), "%llums", (unsigned long long)c->server_ring_ms);
	r = r ?: add_config(info, "server.ring", b);
	r = r ?: add_uint(info, "server.mark_rate", c->server_mark_rate);
	r = r ?: add_uint(info, "server.ring_mib", c->server_ring_mib);
	r = r ?: add_uint(info, "server.mark_bytes", c->server_mark_bytes);
	r = r ?: add_uint(info, "server.mark_labels", c->server_mark_labels);
	r = r ?: add_uint(info, "server.open_phases", c->server_open_phases);
	r = r ?: add_uint(info, "server.subscribers", c->server_subscribers);
	r = r ?: add_uint(info, "server.request_bytes", c->server_request_bytes);
	return r;
}

struct hub_msg *info_build(const struct info_src *s)
{
	Iopulse__V1__Info *info = malloc(sizeof(*info));
	struct hub_msg *m = NULL;
	struct utsname u;
	struct rusage ru;
	size_t i, n, len;
	uint8_t *buf;
	int r = 0;

	if (!info) {
		for (i = 0; i < s->n_open_phases; i++)
			iopulse__v1__phase_mark__free_unpacked(s->open_phases[i], NULL);
		free(s->open_phases);
		return NULL;
	}
	iopulse__v1__info__init(info);
	info->open_phases = s->open_phases;
	info->n_open_phases = s->n_open_phases;
	uname(&u);
	info->version = strdup(IOPULSE_VERSION);
	info->kernel = strdup(u.release);
	info->hostname = strdup(u.nodename);
	info->attach_mode = strdup(s->attach_mode ? s->attach_mode : "");
	info->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	info->interval_ns = s->config->interval_ms * 1000000ull;
	info->ring_seconds = s->ring_seconds;
	info->ring_bytes = s->ring_bytes;
	info->started_realtime_ns = s->started_realtime_ns;
	info->last_seq = s->last_seq;
	info->subscribers = s->subscribers;
	info->fanout_ns = s->fanout_ns;
	info->fanout_streams = s->fanout_streams;
	/* initialised at once: freeing the answer on any error below walks them */
	info->histogram = malloc(sizeof(*info->histogram));
	if (info->histogram)
		iopulse__v1__histogram_layout__init(info->histogram);
	info->cost = malloc(sizeof(*info->cost));
	if (info->cost)
		iopulse__v1__agent_cost__init(info->cost);
	info->limits = malloc(sizeof(*info->limits));
	if (info->limits)
		iopulse__v1__server_limits__init(info->limits);
	if (!info->version || !info->kernel || !info->hostname || !info->attach_mode || !info->histogram ||
	    !info->cost || !info->limits)
		goto out;
	info->limits->mark_rate = s->limits.mark_rate;
	info->limits->mark_bytes = s->limits.mark_bytes;
	info->limits->mark_labels = s->limits.mark_labels;
	info->limits->open_phases = s->limits.open_phases;
	info->limits->subscribers = s->limits.subscribers;
	info->limits->request_bytes = s->limits.request_bytes;
	info->limits->ring_seconds = s->ring_seconds;
	info->limits->ring_mib = s->limits.ring_mib;
	info->histogram->precision = s->hist_k;
	info->histogram->range_bits = IOP_HIST_RANGE_BITS;
	info->histogram->buckets = IOP_HIST_NBUCKETS(s->hist_k);
	info->histogram->max_relative_error = 1.0 / (double)(2u << s->hist_k);
	info->histogram->mode = strdup(s->completion_only ? "completion" : "full");
	if (!info->histogram->mode)
		goto out;
	info->cost->bpf_run_time_ns = s->bpf_run_time_ns;
	info->cost->bpf_run_count = s->bpf_run_count;
	info->cost->bpf_stats = s->bpf_stats;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		info->cost->cpu_user_s = tv_s(ru.ru_utime);
		info->cost->cpu_system_s = tv_s(ru.ru_stime);
	}
	info->cost->rss_bytes = rss_bytes();
	n = s->devices ? devices_count(s->devices) : 0;
	info->devices = calloc(n ? n : 1, sizeof(*info->devices));
	if (!info->devices)
		goto out;
	for (i = 0; i < n; i++) {
		const struct iop_device *d = devices_at(s->devices, i);

		if (!d->present)
			continue;
		info->devices[info->n_devices] = device_info(d);
		if (!info->devices[info->n_devices])
			goto out;
		info->n_devices++;
	}
	r = fill_config(info, s);
	if (r)
		goto out;
	buf = pb_pack_alloc(&info->base, &len);
	if (buf)
		m = hub_msg_new(buf, len);
out:
	iopulse__v1__info__free_unpacked(info, NULL);
	return m;
}

/* ------------------------------------------------------------ device settings -- */

static Iopulse__V1__DeviceSettings *settings_pb(const struct queue_settings *q)
{
	Iopulse__V1__DeviceSettings *m = malloc(sizeof(*m));
	size_t i;

	if (!m)
		return NULL;
	iopulse__v1__device_settings__init(m);
	m->scheduler = strdup(q->scheduler);
	m->write_cache = strdup(q->write_cache);
	m->firmware = strdup(q->firmware);
	m->schedulers = calloc(q->n_schedulers ? q->n_schedulers : 1, sizeof(*m->schedulers));
	m->iosched = calloc(q->n_iosched ? q->n_iosched : 1, sizeof(*m->iosched));
	if (!m->scheduler || !m->write_cache || !m->firmware || !m->schedulers || !m->iosched)
		goto fail;
	for (i = 0; i < q->n_schedulers; i++) {
		m->schedulers[i] = strdup(q->schedulers[i]);
		if (!m->schedulers[i])
			goto fail;
		m->n_schedulers++;
	}
	for (i = 0; i < q->n_iosched; i++) {
		Iopulse__V1__DeviceSettings__IoschedEntry *e = malloc(sizeof(*e));

		if (!e)
			goto fail;
		iopulse__v1__device_settings__iosched_entry__init(e);
		m->iosched[m->n_iosched++] = e;
		e->key = strdup(q->iosched[i].name);
		e->value = strdup(q->iosched[i].value);
		if (!e->key || !e->value)
			goto fail;
	}
	m->nr_requests = q->nr_requests;
	m->queue_depth = q->queue_depth;
	m->read_ahead_kb = q->read_ahead_kb;
	m->wbt_lat_usec = q->wbt_lat_usec;
	m->max_sectors_kb = q->max_sectors_kb;
	m->nomerges = q->nomerges;
	m->rotational = q->rotational;
	return m;
fail:
	iopulse__v1__device_settings__free_unpacked(m, NULL);
	return NULL;
}

struct hub_msg *info_with_open_phases(const struct hub_msg *info,
				      Iopulse__V1__PhaseMark **open, size_t n)
{
	Iopulse__V1__Info *m = iopulse__v1__info__unpack(NULL, info->len, info->buf);
	struct hub_msg *out = NULL;
	uint8_t *buf;
	size_t i, len;

	if (!m) {
		for (i = 0; i < n; i++)
			iopulse__v1__phase_mark__free_unpacked(open[i], NULL);
		free(open);
		return NULL;
	}
	for (i = 0; i < m->n_open_phases; i++)
		iopulse__v1__phase_mark__free_unpacked(m->open_phases[i], NULL);
	free(m->open_phases);
	m->open_phases = open;      /* freed with m */
	m->n_open_phases = n;
	buf = pb_pack_alloc(&m->base, &len);
	if (buf)
		out = hub_msg_new(buf, len);
	iopulse__v1__info__free_unpacked(m, NULL);
	return out;
}

struct hub_msg *info_with_settings(const struct hub_msg *info, const char *sysfs_root)
{
	Iopulse__V1__Info *m = iopulse__v1__info__unpack(NULL, info->len, info->buf);
	struct queue_settings *qs = malloc(sizeof(*qs));
	struct hub_msg *out = NULL;
	uint8_t *buf;
	size_t i, len;

	if (!m || !qs)
		goto done;
	for (i = 0; i < m->n_devices; i++) {
		Iopulse__V1__DeviceInfo *d = m->devices[i];

		if (queue_settings_read(sysfs_root, d->name, qs))
			continue;   /* gone since the scan: no settings rather than made-up ones */
		d->settings = settings_pb(qs);
		if (!d->settings)
			goto done;
	}
	buf = pb_pack_alloc(&m->base, &len);
	if (buf)
		out = hub_msg_new(buf, len);
done:
	free(qs);
	if (m)
		iopulse__v1__info__free_unpacked(m, NULL);
	return out;
}
