/* metrics_text.c - the cumulative telemetry as Prometheus / OpenMetrics text */
#include "metrics_text.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "hist_math.h"

/* Value range of a family's fixed buckets: [2^lo_bits, 2^hi_bits), below and above fold into
 * the first bucket and +Inf. scale turns the unit into the exported one (ns -> s). */
struct range {
	unsigned int lo_bits, hi_bits;
	double scale;
};

static const struct range R_TIME = { 10, 36, 1e-9 };    /* 1.02 us .. 68.7 s */
static const struct range R_SIZE = { 9, 32, 1 };        /* 512 B .. 4 GiB */
static const struct range R_SEEK = { 0, 40, 1 };        /* 0 .. 2^40 sectors */

struct out {
	FILE *f;
	const struct metrics_opts *o;
	unsigned int k, p;         /* the snapshot's precision, the exported one */
};

unsigned int metrics_bucket_count(unsigned int lo_bits, unsigned int hi_bits, unsigned int p)
{
	return iop_hist_index((1ULL << hi_bits) - 1, p) - iop_hist_index(1ULL << lo_bits, p) + 3;
}

/* Label value escaping of both formats: backslash, double quote, newline. */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void label(FILE *f, bool *first, const char *name, const char *value)
{
	fprintf(f, "%s%s=\"", *first ? "" : ",", name);
	put_escaped(f, value);
	fputc('"', f);
	*first = false;
}

/* HELP and TYPE; a counter family is named without _total in OpenMetrics only. */
static void family(struct out *w, const char *name, const char *type, const char *help)
{
	const char *suffix = !strcmp(type, "counter") && !w->o->openmetrics ? "_total" : "";

	fprintf(w->f, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
}

/* A number the way both formats take it: integers plainly, others with enough digits. */
static void put_number(FILE *f, double v, bool openmetrics)
{
	if (v == (double)(long long)v && v < 1e15 && v > -1e15)
		fprintf(f, openmetrics ? "%lld.0" : "%lld", (long long)v);
	else
		fprintf(f, "%.17g", v);
}

/* le of an edge: exact decimal of a whole number of units times scale (ns -> s). */
static void put_le(FILE *f, unsigned long long edge, double scale, bool openmetrics)
{
	char b[64];
	size_t n;

	if (scale == 1) {
		fprintf(f, openmetrics ? "%llu.0" : "%llu", edge);
		return;
	}
	/* scale 1e-9: seconds with nine decimals, trailing zeros cut (an exact decimal) */
	n = (size_t)snprintf(b, sizeof(b), "%llu.%09llu", edge / 1000000000ULL, edge % 1000000000ULL);
	while (n > 0 && b[n - 1] == '0')
		b[--n] = '\0';
	if (n > 0 && b[n - 1] == '.')
		b[n++] = '0', b[n] = '\0';
	fputs(b, f);
}

/*
 * One histogram's samples: cumulative bucket counts at the fixed edges of range r, _count and,
 * when sum is not NULL, _sum (in exported units). labels: the series' labels, without braces.
 */
static void histogram(struct out *w, const char *name, const char *labels,
		      const Iopulse__V1__Histogram *h, const struct range *r, const uint64_t *sum)
{
	unsigned int j, jlast, p = w->p, k = h && h->precision ? h->precision : w->k;
	unsigned long long edge;
	uint64_t cum = 0, total = 0;
	size_t i = 0, n = h ? h->n_index : 0;

	if (p > k)
		p = k;
	for (i = 0; i < n; i++)
		total += h->count[i];
	i = 0;
	j = iop_hist_index(1ULL << r->lo_bits, p);
	jlast = iop_hist_index((1ULL << r->hi_bits) - 1, p);
	edge = (1ULL << r->lo_bits) - 1;
	for (;;) {
		while (i < n && iop_hist_lower(h->index[i], k) <= edge)
			cum += h->count[i++];
		fprintf(w->f, "%s_bucket{%s%sle=\"", name, labels, *labels ? "," : "");
		put_le(w->f, edge, r->scale, w->o->openmetrics);
		fprintf(w->f, "\"} %llu\n", (unsigned long long)cum);
		if (j > jlast)
			break;
		edge = iop_hist_upper(j++, p);
	}
	fprintf(w->f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, *labels ? "," : "",
		(unsigned long long)total);
	/* OpenMetrics allows _count only beside _sum, which only the sync histograms have: the
	 * kernel keeps bucket counts, and a sum from bucket midpoints would not be exact */
	if (sum || !w->o->openmetrics)
		fprintf(w->f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)total);
	if (sum) {
		fprintf(w->f, "%s_sum{%s} ", name, labels);
		put_le(w->f, *sum, r->scale, w->o->openmetrics);    /* exact decimal */
		fputc('\n', w->f);
	}
}

static const char *const ops[] = { "read", "write", "flush", "discard" };

static const Iopulse__V1__OpStats *op_of(const Iopulse__V1__DeviceStats *d, int op)
{
	const Iopulse__V1__OpStats *s[] = { d->read, d->write, d->flush, d->discard };

	return s[op];
}

/* host, device and the OSD labels of a device (and op when >= 0) into buf. */
static void device_labels(char *buf, size_t len, struct out *w, const Iopulse__V1__DeviceStats *d,
			  int op)
{
	char *m = NULL;
	size_t ml = 0;
	FILE *f = open_memstream(&m, &ml);
	bool first = true;
	char osd[16];

	if (!f) {
		buf[0] = '\0';
		return;
	}
	label(f, &first, "host", w->o->host);
	label(f, &first, "device", d->name ? d->name : "");
	if (d->osd_id >= 0) {
		snprintf(osd, sizeof(osd), "%d", d->osd_id);
		label(f, &first, "osd", osd);
		if (d->osd_role && *d->osd_role)
			label(f, &first, "role", d->osd_role);
	}
	if (op >= 0)
		label(f, &first, "op", ops[op]);
	fclose(f);
	snprintf(buf, len, "%s", m ? m : "");
	free(m);
}

/* An op's series sets exist once the device has done that op. */
static bool op_seen(const Iopulse__V1__OpStats *s)
{
	return s && (s->ios || s->completion_unseen || (s->total_ns && s->total_ns->n_index));
}

typedef uint64_t (*op_counter)(const Iopulse__V1__OpStats *s);
static uint64_t c_ios(const Iopulse__V1__OpStats *s) { return s->ios; }
static uint64_t c_bytes(const Iopulse__V1__OpStats *s) { return s->bytes; }
static uint64_t c_errors(const Iopulse__V1__OpStats *s) { return s->errors; }
static uint64_t c_unseen(const Iopulse__V1__OpStats *s) { return s->completion_unseen; }
static uint64_t c_untimed(const Iopulse__V1__OpStats *s) { return s->untimed; }
static uint64_t c_noqueue(const Iopulse__V1__OpStats *s) { return s->no_queue_ts; }

static void op_counters(struct out *w, const Iopulse__V1__Update *u, const char *name,
			const char *help, op_counter get)
{
	char lab[512];
	size_t i;
	int op;

	family(w, name, "counter", help);
	for (i = 0; i < u->n_devices; i++)
		for (op = 0; op < 4; op++) {
			const Iopulse__V1__OpStats *s = op_of(u->devices[i], op);

			device_labels(lab, sizeof(lab), w, u->devices[i], op);
			fprintf(w->f, "%s_total{%s} %llu\n", name, lab,
				(unsigned long long)(s ? get(s) : 0));
		}
}

typedef const Iopulse__V1__Histogram *(*op_hist)(const Iopulse__V1__OpStats *s);
static const Iopulse__V1__Histogram *h_queue(const Iopulse__V1__OpStats *s) { return s->queue_wait_ns; }
static const Iopulse__V1__Histogram *h_service(const Iopulse__V1__OpStats *s) { return s->service_ns; }
static const Iopulse__V1__Histogram *h_total(const Iopulse__V1__OpStats *s) { return s->total_ns; }
static const Iopulse__V1__Histogram *h_size(const Iopulse__V1__OpStats *s) { return s->size_bytes; }

static void op_histograms(struct out *w, const Iopulse__V1__Update *u, const char *name,
			  const char *help, op_hist get, const struct range *r, bool data_only)
{
	char lab[512];
	size_t i;
	int op;

	family(w, name, "histogram", help);
	for (i = 0; i < u->n_devices; i++)
		for (op = 0; op < 4; op++) {
			const Iopulse__V1__OpStats *s = op_of(u->devices[i], op);

			if (!op_seen(s) || (data_only && op == 2))
				continue;
			device_labels(lab, sizeof(lab), w, u->devices[i], op);
			histogram(w, name, lab, get(s), r, NULL);
		}
}

static void devices(struct out *w, const Iopulse__V1__Update *u)
{
	static const char *const seek_kinds[] = { "sequential", "forward", "backward" };
	char lab[512];
	size_t i;
	int kd;

	op_counters(w, u, "iopulse_device_ios", "Requests completed (as /proc/diskstats counts them).", c_ios);
	op_counters(w, u, "iopulse_device_bytes", "Bytes completed.", c_bytes);
	op_counters(w, u, "iopulse_device_errors", "Completions with an error status.", c_errors);
	op_counters(w, u, "iopulse_device_completion_unseen",
		    "Completions the completion tracepoint never reported (counted, untimed).", c_unseen);
	op_counters(w, u, "iopulse_device_untimed", "Completions without a dispatch record.", c_untimed);
	op_counters(w, u, "iopulse_device_no_queue_timestamp",
		    "Completions without a submission time (no queue-wait sample).", c_noqueue);
	op_histograms(w, u, "iopulse_device_queue_wait_seconds",
		      "Bio submission to dispatch to the driver.", h_queue, &R_TIME, false);
	op_histograms(w, u, "iopulse_device_service_seconds", "Dispatch to completion.",
		      h_service, &R_TIME, false);
	op_histograms(w, u, "iopulse_device_latency_seconds", "Bio submission to completion.",
		      h_total, &R_TIME, false);
	op_histograms(w, u, "iopulse_device_request_size_bytes", "Request size at completion.",
		      h_size, &R_SIZE, true);

	family(w, "iopulse_device_seeks", "counter",
	       "Data requests dispatched, by where they start against the end of the previous one.");
	for (i = 0; i < u->n_devices; i++) {
		const Iopulse__V1__DeviceStats *d = u->devices[i];
		const uint64_t v[] = { d->seek_sequential, d->seek_forward, d->seek_backward };

		device_labels(lab, sizeof(lab), w, d, -1);
		for (kd = 0; kd < 3; kd++)
			fprintf(w->f, "iopulse_device_seeks_total{%s,kind=\"%s\"} %llu\n", lab,
				seek_kinds[kd], (unsigned long long)v[kd]);
	}
	family(w, "iopulse_device_seek_distance_sectors", "histogram",
	       "Distance from the end of the previous dispatched request, in 512-byte sectors.");
	for (i = 0; i < u->n_devices; i++) {
		device_labels(lab, sizeof(lab), w, u->devices[i], -1);
		histogram(w, "iopulse_device_seek_distance_sectors", lab,
			  u->devices[i]->seek_distance_sectors, &R_SEEK, NULL);
	}
	family(w, "iopulse_device_flag_requests", "counter",
	       "Completed requests carrying REQ_PREFLUSH or REQ_FUA, and requeues.");
	for (i = 0; i < u->n_devices; i++) {
		const Iopulse__V1__DeviceStats *d = u->devices[i];

		device_labels(lab, sizeof(lab), w, d, -1);
		fprintf(w->f, "iopulse_device_flag_requests_total{%s,flag=\"preflush\"} %llu\n", lab,
			(unsigned long long)d->preflush);
		fprintf(w->f, "iopulse_device_flag_requests_total{%s,flag=\"fua\"} %llu\n", lab,
			(unsigned long long)d->fua);
		fprintf(w->f, "iopulse_device_flag_requests_total{%s,flag=\"requeue\"} %llu\n", lab,
			(unsigned long long)d->requeues);
	}
	family(w, "iopulse_device_preflush_latency_seconds", "histogram",
	       "Bios carrying REQ_PREFLUSH: submission to completion.");
	for (i = 0; i < u->n_devices; i++) {
		device_labels(lab, sizeof(lab), w, u->devices[i], -1);
		histogram(w, "iopulse_device_preflush_latency_seconds", lab,
			  u->devices[i]->preflush_latency_ns, &R_TIME, NULL);
	}
	family(w, "iopulse_device_fua_latency_seconds", "histogram",
	       "Bios carrying REQ_FUA: submission to completion.");
	for (i = 0; i < u->n_devices; i++) {
		device_labels(lab, sizeof(lab), w, u->devices[i], -1);
		histogram(w, "iopulse_device_fua_latency_seconds", lab,
			  u->devices[i]->fua_latency_ns, &R_TIME, NULL);
	}
}

static bool thread_wanted(const struct metrics_opts *o, const char *comm)
{
	size_t i;

	for (i = 0; o->threads && i < o->threads->n; i++)
		if (fnmatch(o->threads->v[i], comm, 0) == 0)
			return true;
	return false;
}

static uint64_t calls_of(const Iopulse__V1__ThreadSync *t)
{
	return t->fsync + t->fdatasync + t->sync_file_range;
}

static int by_calls(const void *a, const void *b)
{
	const Iopulse__V1__ThreadSync *x = *(const Iopulse__V1__ThreadSync *const *)a;
	const Iopulse__V1__ThreadSync *y = *(const Iopulse__V1__ThreadSync *const *)b;
	uint64_t cx = calls_of(x), cy = calls_of(y);

	if (cx != cy)
		return cx > cy ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void thread_labels(char *buf, size_t len, struct out *w, const Iopulse__V1__ThreadSync *t)
{
	char *m = NULL, num[16];
	size_t ml = 0;
	FILE *f = open_memstream(&m, &ml);
	bool first = true;

	if (!f) {
		buf[0] = '\0';
		return;
	}
	label(f, &first, "host", w->o->host);
	label(f, &first, "comm", t->comm ? t->comm : "");
	label(f, &first, "process", t->process ? t->process : "");
	snprintf(num, sizeof(num), "%u", t->pid);
	label(f, &first, "pid", num);
	snprintf(num, sizeof(num), "%u", t->tid);
	label(f, &first, "tid", num);
	label(f, &first, "device", t->device && *t->device ? t->device : "?");
	if (t->osd_id >= 0) {
		snprintf(num, sizeof(num), "%d", t->osd_id);
		label(f, &first, "osd", num);
	}
	fclose(f);
	snprintf(buf, len, "%s", m ? m : "");
	free(m);
}

static int threads(struct out *w, const Iopulse__V1__Update *u, unsigned int *omitted)
{
	static const char *const calls[] = { "fsync", "fdatasync", "sync_file_range" };
	const Iopulse__V1__ThreadSync **sel;
	char lab[768];
	size_t i, n = 0;
	int c;

	*omitted = 0;
	sel = calloc(u->n_threads ? u->n_threads : 1, sizeof(*sel));
	if (!sel)
		return -ENOMEM;
	for (i = 0; i < u->n_threads; i++)
		if (u->threads[i]->comm && thread_wanted(w->o, u->threads[i]->comm))
			sel[n++] = u->threads[i];
	qsort(sel, n, sizeof(*sel), by_calls);
	if (n > w->o->max_threads) {
		*omitted = (unsigned int)(n - w->o->max_threads);
		n = w->o->max_threads;
	}
	family(w, "iopulse_thread_sync_calls", "counter",
	       "fsync, fdatasync and sync_file_range calls of a thread on a device.");
	for (i = 0; i < n; i++) {
		const uint64_t v[] = { sel[i]->fsync, sel[i]->fdatasync, sel[i]->sync_file_range };

		thread_labels(lab, sizeof(lab), w, sel[i]);
		for (c = 0; c < 3; c++)
			fprintf(w->f, "iopulse_thread_sync_calls_total{%s,call=\"%s\"} %llu\n", lab,
				calls[c], (unsigned long long)v[c]);
	}
	family(w, "iopulse_thread_sync_latency_seconds", "histogram",
	       "Latency of each kind of sync call (syscall entry to exit); _sum is exact.");
	for (i = 0; i < n; i++) {
		const Iopulse__V1__SyncLatency *l[] = { sel[i]->fsync_latency,
			sel[i]->fdatasync_latency, sel[i]->sync_file_range_latency };
		char full[800];

		thread_labels(lab, sizeof(lab), w, sel[i]);
		for (c = 0; c < 3; c++) {
			if (!l[c])
				continue;
			snprintf(full, sizeof(full), "%s,call=\"%s\"", lab, calls[c]);
			histogram(w, "iopulse_thread_sync_latency_seconds", full, l[c]->histogram_ns,
				  &R_TIME, &l[c]->sum_ns);
		}
	}
	free(sel);
	return 0;
}

static void health(struct out *w, const Iopulse__V1__Update *u, const Iopulse__V1__Info *info,
		   const struct metrics_health *h, unsigned int omitted)
{
	const Iopulse__V1__Drops *d = u->drops;
	const struct { const char *kind; uint64_t v; } drops[] = {
		{ "no_slot", d ? d->no_slot : 0 }, { "inflight_full", d ? d->inflight_full : 0 },
		{ "sync_full", d ? d->sync_full : 0 }, { "no_bio_ts", d ? d->no_bio_ts : 0 },
		{ "bio_evicted", d ? d->bio_evicted : 0 },
	};
	char lab[256];
	bool first = true;
	char *m = NULL;
	size_t ml = 0, i;
	FILE *f = open_memstream(&m, &ml);

	if (f) {
		label(f, &first, "host", w->o->host);
		fclose(f);
	}
	snprintf(lab, sizeof(lab), "%s", m ? m : "");
	free(m);
	family(w, "iopulse_drops", "counter", "What could not be measured, by kind.");
	for (i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
		fprintf(w->f, "iopulse_drops_total{%s,kind=\"%s\"} %llu\n", lab, drops[i].kind,
			(unsigned long long)drops[i].v);
	if (info && info->cost) {
		const Iopulse__V1__AgentCost *c = info->cost;

		if (c->bpf_stats) {
			family(w, "iopulse_bpf_run_seconds", "counter",
			       "Run time of the daemon's BPF programs (kernel bpf_stats).");
			fprintf(w->f, "iopulse_bpf_run_seconds_total{%s} ", lab);
			put_number(w->f, (double)c->bpf_run_time_ns * 1e-9, w->o->openmetrics);
			fputc('\n', w->f);
			family(w, "iopulse_bpf_runs", "counter", "Runs of the daemon's BPF programs.");
			fprintf(w->f, "iopulse_bpf_runs_total{%s} %llu\n", lab,
				(unsigned long long)c->bpf_run_count);
		}
		family(w, "iopulse_cpu_seconds", "counter", "CPU time of the daemon.");
		fprintf(w->f, "iopulse_cpu_seconds_total{%s,mode=\"user\"} ", lab);
		put_number(w->f, c->cpu_user_s, w->o->openmetrics);
		fprintf(w->f, "\niopulse_cpu_seconds_total{%s,mode=\"system\"} ", lab);
		put_number(w->f, c->cpu_system_s, w->o->openmetrics);
		fputc('\n', w->f);
		family(w, "iopulse_resident_memory_bytes", "gauge", "Resident memory of the daemon.");
		fprintf(w->f, "iopulse_resident_memory_bytes{%s} %llu\n", lab,
			(unsigned long long)c->rss_bytes);
	}
	if (info) {
		family(w, "iopulse_subscribers", "gauge", "gRPC Subscribe streams open.");
		fprintf(w->f, "iopulse_subscribers{%s} %u\n", lab, info->subscribers);
	}
	family(w, "iopulse_scrape_duration_seconds", "gauge", "How long the previous scrape took.");
	fprintf(w->f, "iopulse_scrape_duration_seconds{%s} ", lab);
	put_number(w->f, h ? h->last_scrape_s : 0, w->o->openmetrics);
	fputc('\n', w->f);
	family(w, "iopulse_metrics_threads_omitted", "gauge",
	       "Threads matching metrics.threads left out by metrics.max_threads.");
	fprintf(w->f, "iopulse_metrics_threads_omitted{%s} %u\n", lab, omitted);
	if (w->o->openmetrics)
		family(w, "iopulse_build", "info", "The daemon's version and histogram precisions.");
	else
		family(w, "iopulse_build_info", "gauge", "The daemon's version and histogram precisions.");
	fprintf(w->f, "iopulse_build_info{%s,version=\"", lab);
	put_escaped(w->f, info && info->version ? info->version : "");
	fprintf(w->f, "\",precision=\"%u\",metrics_precision=\"%u\"} 1\n", w->k, w->p);
}

int metrics_render(FILE *f, const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		   const struct metrics_opts *o, const struct metrics_health *h,
		   unsigned int *omitted)
{
	struct out w = { .f = f, .o = o, .k = snap->precision ? snap->precision : 5 };
	int r;

	w.p = o->precision < w.k ? o->precision : w.k;
	devices(&w, snap);
	r = threads(&w, snap, omitted);
	if (r)
		return r;
	health(&w, snap, info, h, *omitted);
	if (o->openmetrics)
		fputs("# EOF\n", f);
	return ferror(f) ? -EIO : 0;
}
