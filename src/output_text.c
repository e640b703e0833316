/* output_text.c - the live human table (--print) */
#include "output_text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "histogram.h"

static const char *fmt_ns(uint64_t ns, bool have, char *buf, size_t len)
{
	double v = (double)ns;

	if (!have)
		snprintf(buf, len, "-");
	else if (v < 1e3)
		snprintf(buf, len, "%.0fns", v);
	else if (v < 1e6)
		snprintf(buf, len, "%.3gus", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, len, "%.3gms", v / 1e6);
	else
		snprintf(buf, len, "%.3gs", v / 1e9);
	return buf;
}

static const char *fmt_bytes(uint64_t b, bool have, char *buf, size_t len)
{
	if (!have)
		snprintf(buf, len, "-");
	else if (b < 1024)
		snprintf(buf, len, "%lluB", (unsigned long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%.3gKiB", (double)b / 1024);
	else
		snprintf(buf, len, "%.3gMiB", (double)b / 1048576);
	return buf;
}

static int by_calls(const void *a, const void *b)
{
	const struct iop_thread_interval *x = a, *y = b;
	uint64_t cx = x->calls[0] + x->calls[1] + x->calls[2];
	uint64_t cy = y->calls[0] + y->calls[1] + y->calls[2];

	return cx < cy ? 1 : cx > cy ? -1 : 0;
}

static void device_lines(FILE *f, const struct iop_dev_interval *d, double secs)
{
	static const char opc[IOP_OP_MAX] = { 'r', 'w', 'f', 'd' };
	char name[96], a[16], b[16], c[16], e[16], g[16], h[16];
	uint64_t seq = d->cnt[IOP_C_SEQ], fwd = d->cnt[IOP_C_FWD], bwd = d->cnt[IOP_C_BWD];
	bool any = false;
	int op;

	if (d->info->osd_id >= 0)
		snprintf(name, sizeof(name), "%s osd.%d/%s", d->info->name, d->info->osd_id,
			 d->info->osd_role);
	else
		snprintf(name, sizeof(name), "%s", d->info->name);
	for (op = 0; op < IOP_OP_MAX; op++) {
		struct iop_hist_summary q, s, t, z;
		uint64_t ios = d->cnt[IOP_C_IOS + op];

		if (!ios)
			continue;
		any = true;
		hist_summarize(&d->hist[IOP_H_QUEUE + op], &q);
		hist_summarize(&d->hist[IOP_H_SERVICE + op], &s);
		hist_summarize(&d->hist[IOP_H_TOTAL + op], &t);
		hist_summarize(&d->hist[IOP_H_SIZE + op], &z);
		fprintf(f, "%-22s %c %9.0f %8.2f %8s %8s %8s %8s %8s %8s\n", name, opc[op],
			(double)ios / secs, (double)d->cnt[IOP_C_BYTES + op] / secs / 1e6,
			fmt_ns(q.p50, q.count, a, sizeof(a)), fmt_ns(q.p99, q.count, b, sizeof(b)),
			fmt_ns(s.p50, s.count, c, sizeof(c)), fmt_ns(s.p99, s.count, e, sizeof(e)),
			fmt_ns(t.p99, t.count, g, sizeof(g)), fmt_bytes(z.p50, z.count, h, sizeof(h)));
		name[0] = '\0';
	}
	if (!any)
		fprintf(f, "%-22s   idle\n", name);
	if (seq + fwd + bwd) {
		struct iop_hist_summary sk;

		hist_summarize(&d->hist[IOP_H_SEEK], &sk);
		fprintf(f, "%-22s   seek: %.1f%% sequential, %llu forward, %llu backward, distance p50 %llu sectors\n",
			"", 100.0 * (double)seq / (double)(seq + fwd + bwd), (unsigned long long)fwd,
			(unsigned long long)bwd, (unsigned long long)sk.p50);
	}
	if (d->cnt[IOP_C_IOS + IOP_OP_FLUSH] || d->cnt[IOP_C_PREFLUSH] || d->cnt[IOP_C_FUA]) {
		struct iop_hist_summary pf;

		hist_summarize(&d->hist[IOP_H_PREFLUSH_LAT], &pf);
		fprintf(f, "%-22s   flush: %.0f/s, %llu preflush (p99 %s), %llu FUA\n", "",
			(double)d->cnt[IOP_C_IOS + IOP_OP_FLUSH] / secs,
			(unsigned long long)d->cnt[IOP_C_PREFLUSH], fmt_ns(pf.p99, pf.count, a, sizeof(a)),
			(unsigned long long)d->cnt[IOP_C_FUA]);
	}
}

int output_text_write(FILE *f, const struct iop_interval *iv)
{
	uint64_t span = iv->end_mono_ns - iv->start_mono_ns;
	double secs = span ? (double)span / 1e9 : 1.0;
	time_t now = (time_t)(iv->end_realtime_ns / 1000000000ull);
	struct iop_thread_interval *th = NULL;
	char when[32], a[16], b[16], c[16];
	struct tm tm;
	size_t i, n;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "\n%s  interval %.2fs  #%llu\n", when, secs, (unsigned long long)iv->seq);
	fprintf(f, "%-22s op %9s %8s %8s %8s %8s %8s %8s %8s\n", "device", "IOPS", "MB/s",
		"queue50", "queue99", "svc50", "svc99", "total99", "size50");
	for (i = 0; i < iv->ndevs; i++)
		device_lines(f, &iv->devs[i], secs);
	if (iv->nthreads) {
		th = malloc(iv->nthreads * sizeof(*th));
		if (!th)
			return -ENOMEM;
		memcpy(th, iv->threads, iv->nthreads * sizeof(*th));
		qsort(th, iv->nthreads, sizeof(*th), by_calls);
		fprintf(f, "%-8s %-16s %-16s %-5s %-10s %8s %8s %8s %8s\n", "tid", "thread", "process",
			"osd", "device", "calls/s", "p50", "p99", "max");
		for (i = 0, n = iv->nthreads < 10 ? iv->nthreads : 10; i < n; i++) {
			struct iop_hist_summary s;
			char osd[16];

			hist_summarize(&th[i].lat, &s);
			if (th[i].osd_id >= 0)
				snprintf(osd, sizeof(osd), "%d", th[i].osd_id);
			else
				snprintf(osd, sizeof(osd), "-");
			fprintf(f, "%-8u %-16s %-16s %-5s %-10s %8.1f %8s %8s %8s\n", th[i].tid, th[i].comm,
				th[i].process, osd, th[i].device ? th[i].device->name : "?",
				(double)(th[i].calls[0] + th[i].calls[1] + th[i].calls[2]) / secs,
				fmt_ns(s.p50, s.count, a, sizeof(a)), fmt_ns(s.p99, s.count, b, sizeof(b)),
				fmt_ns(th[i].lat_max_ns, true, c, sizeof(c)));
		}
		free(th);
	}
	if (fflush(f) || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
