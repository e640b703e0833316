/* metrics_walk.c - the exported metrics of a cumulative Update, for any exposition format */
#include "metrics_walk.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist_math.h"

static const struct metrics_range R_TIME = { 10, 36, 1e-9 };   /* 1.02 us .. 68.7 s */
static const struct metrics_range R_SIZE = { 9, 32, 1 };       /* 512 B .. 4 GiB */
static const struct metrics_range R_SEEK = { 0, 40, 1 };       /* 0 .. 2^40 sectors */

static const char *const ops[] = { "read", "write", "flush", "discard" };

struct walk {
	const struct metrics_sink *s;
	const struct metrics_opts *o;
	unsigned int k;
};

unsigned int metrics_bucket_count(unsigned int lo_bits, unsigned int hi_bits, unsigned int p)
{
	return iop_hist_index((1ULL << hi_bits) - 1, p) - iop_hist_index(1ULL << lo_bits, p) + 3;
}

/* host, device, osd and role of a device, and op when >= 0; returns the count. */
static size_t device_labels(struct metrics_label *l, char *osd, size_t osdlen, struct walk *w,
			    const Iopulse__V1__DeviceStats *d, int op)
{
	size_t n = 0;

	l[n++] = (struct metrics_label){ "host", w->o->host };
	l[n++] = (struct metrics_label){ "device", d->name ? d->name : "" };
	if (d->osd_id >= 0) {
		snprintf(osd, osdlen, "%d", d->osd_id);
		l[n++] = (struct metrics_label){ "osd", osd };
		if (d->osd_role && *d->osd_role)
			l[n++] = (struct metrics_label){ "role", d->osd_role };
	}
	if (op >= 0)
		l[n++] = (struct metrics_label){ "op", ops[op] };
	return n;
}

static const Iopulse__V1__OpStats *op_of(const Iopulse__V1__DeviceStats *d, int op)
{
	const Iopulse__V1__OpStats *s[] = { d->read, d->write, d->flush, d->discard };

	return s[op];
}

/* An op's histograms exist once the device has done that op. */
static bool op_seen(const Iopulse__V1__OpStats *s)
{
	return s && (s->ios || s->completion_unseen || (s->total_ns && s->total_ns->n_index));
}

static unsigned int k_of(const struct walk *w, const Iopulse__V1__Histogram *h)
{
	return h && h->precision ? h->precision : w->k;
}

typedef uint64_t (*op_counter)(const Iopulse__V1__OpStats *s);
static uint64_t c_ios(const Iopulse__V1__OpStats *s) { return s->ios; }
static uint64_t c_bytes(const Iopulse__V1__OpStats *s) { return s->bytes; }
static uint64_t c_errors(const Iopulse__V1__OpStats *s) { return s->errors; }
static uint64_t c_unseen(const Iopulse__V1__OpStats *s) { return s->completion_unseen; }
static uint64_t c_untimed(const Iopulse__V1__OpStats *s) { return s->untimed; }
static uint64_t c_noqueue(const Iopulse__V1__OpStats *s) { return s->no_queue_ts; }

static void op_counters(struct walk *w, const Iopulse__V1__Update *u, const char *name,
			const char *help, op_counter get)
{
	struct metrics_label l[8];
	char osd[16];
	size_t i, n;
	int op;

	w->s->family(w->s->ctx, name, MT_COUNTER, help);
	for (i = 0; i < u->n_devices; i++)
		for (op = 0; op < 4; op++) {
			const Iopulse__V1__OpStats *s = op_of(u->devices[i], op);

			n = device_labels(l, osd, sizeof(osd), w, u->devices[i], op);
			w->s->number(w->s->ctx, name, l, n, s ? (double)get(s) : 0);
		}
}

typedef const Iopulse__V1__Histogram *(*op_hist)(const Iopulse__V1__OpStats *s);
static const Iopulse__V1__Histogram *h_queue(const Iopulse__V1__OpStats *s) { return s->queue_wait_ns; }
static const Iopulse__V1__Histogram *h_service(const Iopulse__V1__OpStats *s) { return s->service_ns; }
static const Iopulse__V1__Histogram *h_total(const Iopulse__V1__OpStats *s) { return s->total_ns; }
static const Iopulse__V1__Histogram *h_size(const Iopulse__V1__OpStats *s) { return s->size_bytes; }

static void op_histograms(struct walk *w, const Iopulse__V1__Update *u, const char *name,
			  const char *help, op_hist get, const struct metrics_range *r,
			  bool data_only)
{
	struct metrics_label l[8];
	char osd[16];
	size_t i, n;
	int op;

	w->s->family(w->s->ctx, name, MT_HISTOGRAM, help);
	for (i = 0; i < u->n_devices; i++)
		for (op = 0; op < 4; op++) {
			const Iopulse__V1__OpStats *s = op_of(u->devices[i], op);

			if (!op_seen(s) || (data_only && op == 2))
				continue;
			n = device_labels(l, osd, sizeof(osd), w, u->devices[i], op);
			w->s->histogram(w->s->ctx, name, l, n, get(s), k_of(w, get(s)), r, NULL);
		}
}

/* One histogram per device (no op label). */
static void device_histograms(struct walk *w, const Iopulse__V1__Update *u, const char *name,
			      const char *help, size_t field, const struct metrics_range *r)
{
	struct metrics_label l[8];
	char osd[16];
	size_t i, n;

	w->s->family(w->s->ctx, name, MT_HISTOGRAM, help);
	for (i = 0; i < u->n_devices; i++) {
		const Iopulse__V1__Histogram *h =
			*(Iopulse__V1__Histogram *const *)((const char *)u->devices[i] + field);

		n = device_labels(l, osd, sizeof(osd), w, u->devices[i], -1);
		w->s->histogram(w->s->ctx, name, l, n, h, k_of(w, h), r, NULL);
	}
}

static void devices(struct walk *w, const Iopulse__V1__Update *u)
{
	static const char *const seek_kinds[] = { "sequential", "forward", "backward" };
	static const char *const flags[] = { "preflush", "fua", "requeue" };
	struct metrics_label l[8];
	char osd[16];
	size_t i, n;
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

	w->s->family(w->s->ctx, "iopulse_device_seeks", MT_COUNTER,
		     "Data requests dispatched, by where they start against the end of the previous one.");
	for (i = 0; i < u->n_devices; i++) {
		const Iopulse__V1__DeviceStats *d = u->devices[i];
		const uint64_t v[] = { d->seek_sequential, d->seek_forward, d->seek_backward };

		n = device_labels(l, osd, sizeof(osd), w, d, -1);
		for (kd = 0; kd < 3; kd++) {
			l[n] = (struct metrics_label){ "kind", seek_kinds[kd] };
			w->s->number(w->s->ctx, "iopulse_device_seeks", l, n + 1, (double)v[kd]);
		}
	}
	device_histograms(w, u, "iopulse_device_seek_distance_sectors",
			  "Distance from the end of the previous dispatched request, in 512-byte sectors.",
			  offsetof(Iopulse__V1__DeviceStats, seek_distance_sectors), &R_SEEK);
	w->s->family(w->s->ctx, "iopulse_device_flag_requests", MT_COUNTER,
		     "Completed requests carrying REQ_PREFLUSH or REQ_FUA, and requeues.");
	for (i = 0; i < u->n_devices; i++) {
		const Iopulse__V1__DeviceStats *d = u->devices[i];
		const uint64_t v[] = { d->preflush, d->fua, d->requeues };

		n = device_labels(l, osd, sizeof(osd), w, d, -1);
		for (kd = 0; kd < 3; kd++) {
			l[n] = (struct metrics_label){ "flag", flags[kd] };
			w->s->number(w->s->ctx, "iopulse_device_flag_requests", l, n + 1, (double)v[kd]);
		}
	}
	device_histograms(w, u, "iopulse_device_preflush_latency_seconds",
			  "Bios carrying REQ_PREFLUSH: submission to completion.",
			  offsetof(Iopulse__V1__DeviceStats, preflush_latency_ns), &R_TIME);
	device_histograms(w, u, "iopulse_device_fua_latency_seconds",
			  "Bios carrying REQ_FUA: submission to completion.",
			  offsetof(Iopulse__V1__DeviceStats, fua_latency_ns), &R_TIME);
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

struct thread_label_buf {
	char pid[16], tid[16], osd[16];
};

static size_t thread_labels(struct metrics_label *l, struct thread_label_buf *b, struct walk *w,
			    const Iopulse__V1__ThreadSync *t)
{
	size_t n = 0;

	l[n++] = (struct metrics_label){ "host", w->o->host };
	l[n++] = (struct metrics_label){ "comm", t->comm ? t->comm : "" };
	l[n++] = (struct metrics_label){ "process", t->process ? t->process : "" };
	snprintf(b->pid, sizeof(b->pid), "%u", t->pid);
	l[n++] = (struct metrics_label){ "pid", b->pid };
	snprintf(b->tid, sizeof(b->tid), "%u", t->tid);
	l[n++] = (struct metrics_label){ "tid", b->tid };
	l[n++] = (struct metrics_label){ "device", t->device && *t->device ? t->device : "?" };
	if (t->osd_id >= 0) {
		snprintf(b->osd, sizeof(b->osd), "%d", t->osd_id);
		l[n++] = (struct metrics_label){ "osd", b->osd };
	}
	return n;
}

static int threads(struct walk *w, const Iopulse__V1__Update *u, unsigned int *omitted)
{
	static const char *const calls[] = { "fsync", "fdatasync", "sync_file_range" };
	const Iopulse__V1__ThreadSync **sel;
	struct thread_label_buf b;
	struct metrics_label l[10];
	size_t i, n = 0, nl;
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
	w->s->family(w->s->ctx, "iopulse_thread_sync_calls", MT_COUNTER,
		     "fsync, fdatasync and sync_file_range calls of a thread on a device.");
	for (i = 0; i < n; i++) {
		const uint64_t v[] = { sel[i]->fsync, sel[i]->fdatasync, sel[i]->sync_file_range };

		nl = thread_labels(l, &b, w, sel[i]);
		for (c = 0; c < 3; c++) {
			l[nl] = (struct metrics_label){ "call", calls[c] };
			w->s->number(w->s->ctx, "iopulse_thread_sync_calls", l, nl + 1, (double)v[c]);
		}
	}
	w->s->family(w->s->ctx, "iopulse_thread_sync_latency_seconds", MT_HISTOGRAM,
		     "Latency of each kind of sync call (syscall entry to exit); _sum is exact.");
	for (i = 0; i < n; i++) {
		const Iopulse__V1__SyncLatency *lat[] = { sel[i]->fsync_latency,
			sel[i]->fdatasync_latency, sel[i]->sync_file_range_latency };

		nl = thread_labels(l, &b, w, sel[i]);
		for (c = 0; c < 3; c++) {
			if (!lat[c])
				continue;
			l[nl] = (struct metrics_label){ "call", calls[c] };
			w->s->histogram(w->s->ctx, "iopulse_thread_sync_latency_seconds", l, nl + 1,
					lat[c]->histogram_ns, k_of(w, lat[c]->histogram_ns), &R_TIME,
					&lat[c]->sum_ns);
		}
	}
	free(sel);
	return 0;
}

static void health(struct walk *w, const Iopulse__V1__Update *u, const Iopulse__V1__Info *info,
		   const struct metrics_health *h, unsigned int omitted, unsigned int p)
{
	const Iopulse__V1__Drops *d = u->drops;
	const struct { const char *kind; uint64_t v; } drops[] = {
		{ "no_slot", d ? d->no_slot : 0 }, { "inflight_full", d ? d->inflight_full : 0 },
		{ "sync_full", d ? d->sync_full : 0 }, { "no_bio_ts", d ? d->no_bio_ts : 0 },
		{ "bio_evicted", d ? d->bio_evicted : 0 },
		{ "program_skips", d ? d->program_skips : 0 },
		{ "completed_at_accounting", d ? d->completed_at_accounting : 0 },
	};
	struct metrics_label l[4] = { { "host", w->o->host } };
	char k[16], mp[16];
	size_t i;

	w->s->family(w->s->ctx, "iopulse_drops", MT_COUNTER, "What could not be measured, by kind.");
	for (i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
		l[1] = (struct metrics_label){ "kind", drops[i].kind };
		w->s->number(w->s->ctx, "iopulse_drops", l, 2, (double)drops[i].v);
	}
	if (info && info->cost) {
		const Iopulse__V1__AgentCost *c = info->cost;

		if (c->bpf_stats) {
			w->s->family(w->s->ctx, "iopulse_bpf_run_seconds", MT_COUNTER,
				     "Run time of the daemon's BPF programs (kernel bpf_stats).");
			w->s->number(w->s->ctx, "iopulse_bpf_run_seconds", l, 1,
				     (double)c->bpf_run_time_ns * 1e-9);
			w->s->family(w->s->ctx, "iopulse_bpf_runs", MT_COUNTER,
				     "Runs of the daemon's BPF programs.");
			w->s->number(w->s->ctx, "iopulse_bpf_runs", l, 1, (double)c->bpf_run_count);
		}
		w->s->family(w->s->ctx, "iopulse_cpu_seconds", MT_COUNTER, "CPU time of the daemon.");
		l[1] = (struct metrics_label){ "mode", "user" };
		w->s->number(w->s->ctx, "iopulse_cpu_seconds", l, 2, c->cpu_user_s);
		l[1] = (struct metrics_label){ "mode", "system" };
		w->s->number(w->s->ctx, "iopulse_cpu_seconds", l, 2, c->cpu_system_s);
		w->s->family(w->s->ctx, "iopulse_resident_memory_bytes", MT_GAUGE,
			     "Resident memory of the daemon.");
		w->s->number(w->s->ctx, "iopulse_resident_memory_bytes", l, 1, (double)c->rss_bytes);
	}
	if (info) {
		w->s->family(w->s->ctx, "iopulse_subscribers", MT_GAUGE, "gRPC Subscribe streams open.");
		w->s->number(w->s->ctx, "iopulse_subscribers", l, 1, info->subscribers);
	}
	w->s->family(w->s->ctx, "iopulse_scrape_duration_seconds", MT_GAUGE,
		     "How long the previous scrape took.");
	w->s->number(w->s->ctx, "iopulse_scrape_duration_seconds", l, 1, h ? h->last_scrape_s : 0);
	w->s->family(w->s->ctx, "iopulse_metrics_threads_omitted", MT_GAUGE,
		     "Threads matching metrics.threads left out by metrics.max_threads.");
	w->s->number(w->s->ctx, "iopulse_metrics_threads_omitted", l, 1, omitted);
	w->s->family(w->s->ctx, "iopulse_build", MT_INFO,
		     "The daemon's version and histogram precisions.");
	snprintf(k, sizeof(k), "%u", w->k);
	snprintf(mp, sizeof(mp), "%u", p);
	l[1] = (struct metrics_label){ "version", info && info->version ? info->version : "" };
	l[2] = (struct metrics_label){ "precision", k };
	l[3] = (struct metrics_label){ "metrics_precision", mp };
	w->s->number(w->s->ctx, "iopulse_build", l, 4, 1);
}

int metrics_walk(const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		 const struct metrics_opts *o, const struct metrics_health *h,
		 const struct metrics_sink *sink, unsigned int *omitted)
{
	struct walk w = { .s = sink, .o = o, .k = snap->precision ? snap->precision : 5 };
	int r;

	devices(&w, snap);
	r = threads(&w, snap, omitted);
	if (r)
		return r;
	health(&w, snap, info, h, *omitted, o->precision < w.k ? o->precision : w.k);
	return 0;
}
