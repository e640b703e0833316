/* output_json.c - one JSON object per interval (--json) */
#include "output_json.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "histogram.h"

static bool with_buckets;

void output_json_set_buckets(bool on)
{
	with_buckets = on;
}

static void put_buckets(FILE *f, const struct iop_hist_view *h)
{
	unsigned int pos = 0, idx;
	bool first = true;
	uint64_t c;

	fputs(",\"buckets\":[", f);
	while (hist_next(h, &pos, &idx, &c)) {
		fprintf(f, "%s[%u,%llu]", first ? "" : ",", idx, (unsigned long long)c);
		first = false;
	}
	fputc(']', f);
}

static void put_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void put_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		put_str(f, s);
	else
		fputs("null", f);
}

static void put_double(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void put_hist(FILE *f, const char *key, const struct iop_hist_view *h)
{
	struct iop_hist_summary s;

	hist_summarize(h, &s);
	fprintf(f, "\"%s\":{\"count\":%llu", key, (unsigned long long)s.count);
	if (!s.count) {
		fputs(",\"mean\":null,\"min\":null,\"p50\":null,\"p90\":null,\"p99\":null,"
		      "\"p999\":null,\"max\":null", f);
		if (with_buckets)
			fputs(",\"buckets\":[]", f);
		fputc('}', f);
		return;
	}
	fputs(",\"mean\":", f);
	put_double(f, s.mean);
	fprintf(f, ",\"min\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu",
		(unsigned long long)s.min, (unsigned long long)s.p50, (unsigned long long)s.p90,
		(unsigned long long)s.p99, (unsigned long long)s.p999, (unsigned long long)s.max);
	if (with_buckets)
		put_buckets(f, h);
	fputc('}', f);
}

static void put_list(FILE *f, const char *csv)
{
	const char *p = csv;
	bool first = true;

	fputc('[', f);
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char item[256];

		if (n && n < sizeof(item)) {
			memcpy(item, p, n);
			item[n] = '\0';
			if (!first)
				fputc(',', f);
			put_str(f, item);
			first = false;
		}
		p = e ? e + 1 : NULL;
	}
	fputc(']', f);
}

static void put_device(FILE *f, const struct iop_dev_interval *d, double secs)
{
	static const char *const ops[IOP_OP_MAX] = { "read", "write", "flush", "discard" };
	const struct iop_device *in = d->info;
	uint64_t seq = d->cnt[IOP_C_SEQ], fwd = d->cnt[IOP_C_FWD], bwd = d->cnt[IOP_C_BWD];
	char devno[32];
	int op;

	snprintf(devno, sizeof(devno), "%u:%u", major(in->dev), minor(in->dev));
	fputs("{\"dev\":", f);
	put_str(f, devno);
	fputs(",\"name\":", f);
	put_str(f, in->name);
	fputs(",\"model\":", f);
	put_str(f, in->model);
	fprintf(f, ",\"rotational\":%s,\"dm_name\":", in->rotational ? "true" : "false");
	put_str_or_null(f, in->dm_name);
	fputs(",\"slaves\":", f);
	put_list(f, in->slaves);
	if (in->osd_id >= 0) {
		fprintf(f, ",\"osd_id\":%d,\"osd_role\":", in->osd_id);
		put_str_or_null(f, in->osd_role);
	} else {
		fputs(",\"osd_id\":null,\"osd_role\":null", f);
	}
	fputs(",\"ops\":{", f);
	for (op = 0; op < IOP_OP_MAX; op++) {
		uint64_t ios = d->cnt[IOP_C_IOS + op], bytes = d->cnt[IOP_C_BYTES + op];

		fprintf(f, "%s\"%s\":{\"ios\":%llu,\"bytes\":%llu,\"iops\":", op ? "," : "", ops[op],
			(unsigned long long)ios, (unsigned long long)bytes);
		put_double(f, (double)ios / secs);
		fputs(",\"bytes_per_s\":", f);
		put_double(f, (double)bytes / secs);
		fprintf(f, ",\"errors\":%llu,\"untimed\":%llu,\"no_queue_ts\":%llu,",
			(unsigned long long)d->cnt[IOP_C_ERRORS + op],
			(unsigned long long)d->cnt[IOP_C_UNTIMED + op],
			(unsigned long long)d->cnt[IOP_C_NOQUEUE + op]);
		put_hist(f, "queue_wait_ns", &d->hist[IOP_H_QUEUE + op]);
		fputc(',', f);
		put_hist(f, "service_ns", &d->hist[IOP_H_SERVICE + op]);
		fputc(',', f);
		put_hist(f, "total_ns", &d->hist[IOP_H_TOTAL + op]);
		fputc(',', f);
		put_hist(f, "size_bytes", &d->hist[IOP_H_SIZE + op]);
		fputc('}', f);
	}
	fprintf(f, "},\"seek\":{\"sequential\":%llu,\"forward\":%llu,\"backward\":%llu,"
		"\"sequential_pct\":", (unsigned long long)seq, (unsigned long long)fwd,
		(unsigned long long)bwd);
	if (seq + fwd + bwd)
		put_double(f, 100.0 * (double)seq / (double)(seq + fwd + bwd));
	else
		fputs("null", f);
	fputc(',', f);
	put_hist(f, "distance_sectors", &d->hist[IOP_H_SEEK]);
	fprintf(f, "},\"flush\":{\"requests\":%llu,\"preflush\":%llu,\"fua\":%llu,",
		(unsigned long long)d->cnt[IOP_C_IOS + IOP_OP_FLUSH],
		(unsigned long long)d->cnt[IOP_C_PREFLUSH], (unsigned long long)d->cnt[IOP_C_FUA]);
	put_hist(f, "preflush_latency_ns", &d->hist[IOP_H_PREFLUSH_LAT]);
	fputc(',', f);
	put_hist(f, "fua_latency_ns", &d->hist[IOP_H_FUA_LAT]);
	fprintf(f, "},\"requeues\":%llu}", (unsigned long long)d->cnt[IOP_C_REQUEUE]);
}

static void put_thread(FILE *f, const struct iop_thread_interval *t, double secs)
{
	uint64_t calls = t->calls[IOP_SYNC_FSYNC] + t->calls[IOP_SYNC_FDATASYNC] +
			 t->calls[IOP_SYNC_RANGE];
	char devno[32];

	snprintf(devno, sizeof(devno), "%u:%u", major(t->dev), minor(t->dev));
	fprintf(f, "{\"pid\":%u,\"tid\":%u,\"comm\":", t->tgid, t->tid);
	put_str(f, t->comm);
	fputs(",\"process\":", f);
	put_str(f, t->process);
	if (t->osd_id >= 0)
		fprintf(f, ",\"osd_id\":%d", t->osd_id);
	else
		fputs(",\"osd_id\":null", f);
	fputs(",\"dev\":", f);
	put_str(f, devno);
	fputs(",\"device\":", f);
	put_str_or_null(f, t->device ? t->device->name : NULL);
	fprintf(f, ",\"fsync\":%llu,\"fdatasync\":%llu,\"sync_file_range\":%llu,\"calls\":%llu,"
		"\"calls_per_s\":", (unsigned long long)t->calls[IOP_SYNC_FSYNC],
		(unsigned long long)t->calls[IOP_SYNC_FDATASYNC],
		(unsigned long long)t->calls[IOP_SYNC_RANGE], (unsigned long long)calls);
	put_double(f, (double)calls / secs);
	fprintf(f, ",\"flush_bios\":%llu,", (unsigned long long)t->flush_bios);
	put_hist(f, "latency_ns", &t->lat);
	fputc('}', f);
}

int output_json_write(FILE *f, const struct iop_interval *iv)
{
	uint64_t span = iv->end_mono_ns - iv->start_mono_ns, cnt = 0, ns = 0, missed = 0;
	double secs = span ? (double)span / 1e9 : 1.0;
	size_t i;

	fprintf(f, "{\"type\":\"interval\",\"seq\":%llu,\"start_realtime_ns\":%llu,"
		"\"end_realtime_ns\":%llu,\"start_mono_ns\":%llu,\"end_mono_ns\":%llu,\"interval_s\":",
		(unsigned long long)iv->seq, (unsigned long long)iv->start_realtime_ns,
		(unsigned long long)iv->end_realtime_ns, (unsigned long long)iv->start_mono_ns,
		(unsigned long long)iv->end_mono_ns);
	put_double(f, secs);
	fprintf(f, ",\"histogram\":{\"precision\":%u,\"max_relative_error\":", iv->hist_k);
	put_double(f, ldexp(1.0, -(int)iv->hist_k - 1));
	fputs("},\"devices\":[", f);
	for (i = 0; i < iv->ndevs; i++) {
		if (i)
			fputc(',', f);
		put_device(f, &iv->devs[i], secs);
	}
	fputs("],\"threads\":[", f);
	for (i = 0; i < iv->nthreads; i++) {
		if (i)
			fputc(',', f);
		put_thread(f, &iv->threads[i], secs);
	}
	for (i = 0; i < iv->nprogs; i++)
		missed += iv->progs[i].missed;
	fprintf(f, "],\"drops\":{\"missed_events\":%llu,\"no_slot\":%llu,\"inflight_full\":%llu,\"sync_full\":%llu,"
		"\"sync_evicted\":%llu,\"no_bio_ts\":%llu,\"bio_evicted\":%llu},",
		(unsigned long long)missed, (unsigned long long)iv->global[IOP_G_NO_SLOT],
		(unsigned long long)iv->global[IOP_G_INFLIGHT_FULL],
		(unsigned long long)iv->global[IOP_G_SYNC_FULL],
		(unsigned long long)iv->sync_evictions,
		(unsigned long long)iv->global[IOP_G_NO_BIO_TS],
		(unsigned long long)iv->global[IOP_G_BIO_EVICT]);
	for (i = 0; i < iv->nprogs; i++) {
		cnt += iv->progs[i].run_cnt;
		ns += iv->progs[i].run_time_ns;
	}
	fprintf(f, "\"bpf\":{\"stats_enabled\":%s,\"run_cnt\":%llu,\"run_time_ns\":%llu,\"programs\":[",
		iv->bpf_stats ? "true" : "false", (unsigned long long)cnt, (unsigned long long)ns);
	for (i = 0; i < iv->nprogs; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		put_str(f, iv->progs[i].name);
		fprintf(f, ",\"run_cnt\":%llu,\"run_time_ns\":%llu,\"missed\":%llu}",
			(unsigned long long)iv->progs[i].run_cnt,
			(unsigned long long)iv->progs[i].run_time_ns,
			(unsigned long long)iv->progs[i].missed);
	}
	fputs("]}}\n", f);
	if (fflush(f) || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
