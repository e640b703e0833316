/* output_json.c - one JSON object per interval (--json) */
#include "output_json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
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

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0 if the bytes there are not one. n bytes are readable. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len, i;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * A JSON string from at most max bytes of s (fixed-size fields need not end in a NUL).
 * Names, models and paths come from sysfs, the kernel and the file system: quotes,
 * backslashes and control characters are escaped, and bytes that are not UTF-8 become
 * U+FFFD so the line stays valid JSON (RFC 8259 requires UTF-8).
 */
static void put_strn(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strnlen(s, max), i = 0;

	fputc('"', f);
	while (i < n) {
		size_t len = utf8_len(p + i, n - i);

		if (len == 0) {
			fputs("\\ufffd", f);
			i++;
		} else if (len > 1) {
			fwrite(p + i, 1, len, f);
			i += len;
		} else {
			if (p[i] == '"' || p[i] == '\\')
				fprintf(f, "\\%c", p[i]);
			else if (p[i] < 0x20 || p[i] == 0x7f)
				fprintf(f, "\\u%04x", p[i]);
			else
				fputc(p[i], f);
			i++;
		}
	}
	fputc('"', f);
}

static void put_strn_or_null(FILE *f, const char *s, size_t max)
{
	if (s && max && *s)
		put_strn(f, s, max);
	else
		fputs("null", f);
}

/*
 * A finite double as the shortest of %.15g / %.17g that reads back as the same value,
 * always with a '.' or an exponent so that JSON readers see a float (1.0, not 1);
 * NaN and infinities (a rate over an empty interval) as null.
 */
static void put_double(FILE *f, double v)
{
	char buf[40];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	fputs(buf, f);
}

/* A per-second rate; null when the interval has no length. */
static void put_rate(FILE *f, uint64_t n, double secs)
{
	put_double(f, secs > 0 ? (double)n / secs : NAN);
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

/* A comma list ("sdc,sdd") as a JSON array of strings; empty items are skipped. */
static void put_list(FILE *f, const char *csv, size_t max)
{
	const char *p = csv, *end = csv + strnlen(csv, max);
	bool first = true;

	fputc('[', f);
	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		if (n) {
			if (!first)
				fputc(',', f);
			put_strn(f, p, n);
			first = false;
		}
		p += n + 1;
	}
	fputc(']', f);
}

static void put_devno(FILE *f, dev_t dev)
{
	fprintf(f, "\"%u:%u\"", major(dev), minor(dev));
}

static void put_device(FILE *f, const struct iop_dev_interval *d, double secs)
{
	static const char *const ops[IOP_OP_MAX] = { "read", "write", "flush", "discard" };
	const struct iop_device *in = d->info;
	uint64_t seq = d->cnt[IOP_C_SEQ], fwd = d->cnt[IOP_C_FWD], bwd = d->cnt[IOP_C_BWD];
	int op;

	fputs("{\"dev\":", f);
	put_devno(f, in->dev);
	fputs(",\"name\":", f);
	put_strn(f, in->name, sizeof(in->name));
	fputs(",\"model\":", f);
	put_strn(f, in->model, sizeof(in->model));
	fprintf(f, ",\"rotational\":%s,\"dm_name\":", in->rotational ? "true" : "false");
	put_strn_or_null(f, in->dm_name, sizeof(in->dm_name));
	fputs(",\"slaves\":", f);
	put_list(f, in->slaves, sizeof(in->slaves));
	fputs(",\"holders\":", f);
	put_list(f, in->holders, sizeof(in->holders));
	if (in->osd_id >= 0) {
		fprintf(f, ",\"osd_id\":%d,\"osd_role\":", in->osd_id);
		put_strn_or_null(f, in->osd_role, sizeof(in->osd_role));
	} else {
		fputs(",\"osd_id\":null,\"osd_role\":null", f);
	}
	fputs(",\"ops\":{", f);
	for (op = 0; op < IOP_OP_MAX; op++) {
		uint64_t ios = d->cnt[IOP_C_IOS + op], bytes = d->cnt[IOP_C_BYTES + op];

		fprintf(f, "%s\"%s\":{\"ios\":%llu,\"bytes\":%llu,\"iops\":", op ? "," : "", ops[op],
			(unsigned long long)ios, (unsigned long long)bytes);
		put_rate(f, ios, secs);
		fputs(",\"bytes_per_s\":", f);
		put_rate(f, bytes, secs);
		fprintf(f, ",\"errors\":%llu,\"untimed\":%llu,\"no_queue_ts\":%llu,"
			"\"completion_unseen\":%llu,",
			(unsigned long long)d->cnt[IOP_C_ERRORS + op],
			(unsigned long long)d->cnt[IOP_C_UNTIMED + op],
			(unsigned long long)d->cnt[IOP_C_NOQUEUE + op],
			(unsigned long long)d->cnt[IOP_C_UNSEEN + op]);
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
		put_double(f, 100.0 * (double)seq / ((double)seq + (double)fwd + (double)bwd));
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

/* enum iop_sync_kind order */
static const char *const sync_kind_names[IOP_SYNC_MAX] = {"fsync", "fdatasync", "sync_file_range"};

static void put_thread(FILE *f, const struct iop_thread_interval *t, double secs)
{
	uint64_t calls = 0;
	int i;

	for (i = 0; i < IOP_SYNC_MAX; i++)
		calls += t->calls[i];
	fprintf(f, "{\"pid\":%u,\"tid\":%u,\"comm\":", t->tgid, t->tid);
	put_strn(f, t->comm, sizeof(t->comm));
	fputs(",\"process\":", f);
	put_strn(f, t->process, sizeof(t->process));
	if (t->osd_id >= 0)
		fprintf(f, ",\"osd_id\":%d", t->osd_id);
	else
		fputs(",\"osd_id\":null", f);
	fputs(",\"dev\":", f);
	put_devno(f, t->dev);
	fputs(",\"device\":", f);
	if (t->device)
		put_strn_or_null(f, t->device->name, sizeof(t->device->name));
	else
		fputs("null", f);
	fputs(",\"disks\":", f);
	if (t->device)
		put_list(f, t->device->disks, sizeof(t->device->disks));
	else
		fputs("[]", f);
	fprintf(f, ",\"fsync\":%llu,\"fdatasync\":%llu,\"sync_file_range\":%llu,\"calls\":%llu,"
		"\"calls_per_s\":", (unsigned long long)t->calls[IOP_SYNC_FSYNC],
		(unsigned long long)t->calls[IOP_SYNC_FDATASYNC],
		(unsigned long long)t->calls[IOP_SYNC_RANGE], (unsigned long long)calls);
	put_rate(f, calls, secs);
	fprintf(f, ",\"flush_bios\":%llu,\"latency_sum_ns\":%llu,", (unsigned long long)t->flush_bios,
		(unsigned long long)t->lat_sum_ns);
	put_hist(f, "latency_ns", &t->lat);
	fputs(",\"by_call\":{", f);
	for (i = 0; i < IOP_SYNC_MAX; i++) {
		fprintf(f, "%s\"%s\":{\"calls\":%llu,\"latency_sum_ns\":%llu,", i ? "," : "",
			sync_kind_names[i], (unsigned long long)t->calls[i],
			(unsigned long long)t->kind_lat_sum_ns[i]);
		put_hist(f, "latency_ns", &t->kind_lat[i]);
		fputc('}', f);
	}
	fputs("}}", f);
}

/* iv->hist_k, or the precision of the first histogram if the producer left it at 0. */
static unsigned int precision_of(const struct iop_interval *iv)
{
	if (iv->hist_k)
		return iv->hist_k;
	if (iv->ndevs)
		return iv->devs[0].hist[0].k;
	if (iv->nthreads)
		return iv->threads[0].lat.k;
	return 0;
}

int output_json_write(FILE *f, const struct iop_interval *iv)
{
	uint64_t cnt = 0, ns = 0, missed = 0;
	double secs = (double)(iv->end_mono_ns - iv->start_mono_ns) / 1e9;
	unsigned int k = precision_of(iv);
	size_t i;

	if (iv->end_mono_ns < iv->start_mono_ns)
		secs = 0;
	fprintf(f, "{\"type\":\"interval\",\"seq\":%llu,\"start_realtime_ns\":%llu,"
		"\"end_realtime_ns\":%llu,\"start_mono_ns\":%llu,\"end_mono_ns\":%llu,\"interval_s\":",
		(unsigned long long)iv->seq, (unsigned long long)iv->start_realtime_ns,
		(unsigned long long)iv->end_realtime_ns, (unsigned long long)iv->start_mono_ns,
		(unsigned long long)iv->end_mono_ns);
	put_double(f, secs);
	if (k >= IOP_HIST_K_MIN && k <= IOP_HIST_K_MAX) {
		fprintf(f, ",\"histogram\":{\"precision\":%u,\"max_relative_error\":", k);
		put_double(f, ldexp(1.0, -(int)k - 1));
	} else {
		fputs(",\"histogram\":{\"precision\":null,\"max_relative_error\":null", f);
	}
	fprintf(f, ",\"mode\":\"%s\"}", iv->completion_only ? "completion" : "full");
	fputs(",\"devices\":[", f);
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
	for (i = 0; i < iv->nprogs; i++) {
		cnt += iv->progs[i].run_cnt;
		ns += iv->progs[i].run_time_ns;
		missed += iv->progs[i].missed;
	}
	fprintf(f, "],\"drops\":{\"missed_events\":%llu,\"no_slot\":%llu,\"inflight_full\":%llu,"
		"\"sync_full\":%llu,\"sync_evicted\":%llu,\"no_bio_ts\":%llu,\"bio_evicted\":%llu,"
		"\"completed_at_accounting\":%llu},",
		(unsigned long long)missed, (unsigned long long)iv->global[IOP_G_NO_SLOT],
		(unsigned long long)iv->global[IOP_G_INFLIGHT_FULL],
		(unsigned long long)iv->global[IOP_G_SYNC_FULL],
		(unsigned long long)iv->sync_evictions,
		(unsigned long long)iv->global[IOP_G_NO_BIO_TS],
		(unsigned long long)iv->global[IOP_G_BIO_EVICT],
		(unsigned long long)iv->global[IOP_G_AT_ACCOUNTING]);
	fprintf(f, "\"bpf\":{\"stats_enabled\":%s,\"run_cnt\":%llu,\"run_time_ns\":%llu,\"programs\":[",
		iv->bpf_stats ? "true" : "false", (unsigned long long)cnt, (unsigned long long)ns);
	for (i = 0; i < iv->nprogs; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		put_strn(f, iv->progs[i].name, sizeof(iv->progs[i].name));
		fprintf(f, ",\"run_cnt\":%llu,\"run_time_ns\":%llu,\"missed\":%llu}",
			(unsigned long long)iv->progs[i].run_cnt,
			(unsigned long long)iv->progs[i].run_time_ns,
			(unsigned long long)iv->progs[i].missed);
	}
	fputs("]}}\n", f);
	/* stdio keeps the stream's error flag; errno still holds the cause of the failed write */
	if (fflush(f) == EOF || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
