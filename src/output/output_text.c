/* output_text.c - the live human table (--print) */
#include "output_text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "histogram.h"

#define TOP_THREADS 10
#define NAME_W 22

/*
 * v scaled into the first unit (each factor times the previous) where it shows as at most
 * 3 significant digits below 1000, e.g. 999.7 us -> "1ms", not "1e+03us"; "-" without data.
 */
static const char *fmt_scaled(double v, bool have, const char *const *units, const double *factor,
			      int nunits, char *buf, size_t len)
{
	int u = 0;

	if (!have) {
		snprintf(buf, len, "-");
		return buf;
	}
	while (u + 1 < nunits && v >= 999.5) {
		u++;
		v /= factor[u];
	}
	if (v >= 999.5)
		snprintf(buf, len, "%.0f%s", v, units[u]);
	else
		snprintf(buf, len, "%.3g%s", v, units[u]);
	return buf;
}

static const char *fmt_ns(uint64_t ns, bool have, char *buf, size_t len)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };
	static const double factor[] = { 1, 1e3, 1e3, 1e3 };

	return fmt_scaled((double)ns, have, units, factor, 4, buf, len);
}

static const char *fmt_bytes(uint64_t b, bool have, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	static const double factor[] = { 1, 1024, 1024, 1024, 1024 };

	return fmt_scaled((double)b, have, units, factor, 5, buf, len);
}

static const char *fmt_rate(double n, double secs, int decimals, char *buf, size_t len)
{
	if (secs > 0)
		snprintf(buf, len, "%.*f", decimals, n / secs);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* At most max bytes of s with everything but printable ASCII shown as '?': names come from
 * the kernel and from processes (a comm can hold terminal escape sequences). */
static const char *printable(const char *s, size_t max, char *buf, size_t len)
{
	size_t i, n = strnlen(s, max);

	if (n >= len)
		n = len - 1;
	for (i = 0; i < n; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[n] = '\0';
	return buf;
}

static uint64_t thread_calls(const struct iop_thread_interval *t)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < IOP_SYNC_MAX; i++)
		n += t->calls[i];
	return n;
}

/* most calls first, then by tid, so that the table does not reorder between equal rows */
static int by_calls(const void *a, const void *b)
{
	const struct iop_thread_interval *x = *(const struct iop_thread_interval *const *)a;
	const struct iop_thread_interval *y = *(const struct iop_thread_interval *const *)b;
	uint64_t cx = thread_calls(x), cy = thread_calls(y);

	if (cx != cy)
		return cx < cy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void device_lines(FILE *f, const struct iop_dev_interval *d, double secs)
{
	static const char opc[IOP_OP_MAX] = { 'r', 'w', 'f', 'd' };
	const struct iop_device *in = d->info;
	char name[128], dn[64], role[16], a[16], b[16], c[16], e[16], g[16], h[16], r1[24], r2[24];
	uint64_t seq = d->cnt[IOP_C_SEQ], fwd = d->cnt[IOP_C_FWD], bwd = d->cnt[IOP_C_BWD];
	uint64_t flushes = d->cnt[IOP_C_IOS + IOP_OP_FLUSH];
	bool any = false;
	int op;

	printable(in->name, sizeof(in->name), dn, sizeof(dn));
	if (in->osd_id >= 0 && in->osd_role[0])
		snprintf(name, sizeof(name), "%s osd.%d/%s", dn, in->osd_id,
			 printable(in->osd_role, sizeof(in->osd_role), role, sizeof(role)));
	else if (in->osd_id >= 0)
		snprintf(name, sizeof(name), "%s osd.%d", dn, in->osd_id);
	else
		snprintf(name, sizeof(name), "%s", dn);
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
		fprintf(f, "%-*s %c %9s %8s %8s %8s %8s %8s %8s %8s\n", NAME_W, name, opc[op],
			fmt_rate((double)ios, secs, 1, r1, sizeof(r1)),
			fmt_rate((double)d->cnt[IOP_C_BYTES + op] / 1e6, secs, 2, r2, sizeof(r2)),
			fmt_ns(q.p50, q.count, a, sizeof(a)), fmt_ns(q.p99, q.count, b, sizeof(b)),
			fmt_ns(s.p50, s.count, c, sizeof(c)), fmt_ns(s.p99, s.count, e, sizeof(e)),
			fmt_ns(t.p99, t.count, g, sizeof(g)), fmt_bytes(z.p50, z.count, h, sizeof(h)));
		name[0] = '\0';          /* the name only on the device's first line */
	}
	if (!any)
		fprintf(f, "%-*s   idle\n", NAME_W, name);
	if (seq + fwd + bwd) {
		struct iop_hist_summary sk;

		hist_summarize(&d->hist[IOP_H_SEEK], &sk);
		if (sk.count)
			snprintf(a, sizeof(a), "%llu", (unsigned long long)sk.p50);
		else
			snprintf(a, sizeof(a), "-");
		fprintf(f, "%-*s   seek: %.1f%% sequential, %llu forward, %llu backward, "
			"distance p50 %s sectors\n", NAME_W, "",
			100.0 * (double)seq / ((double)seq + (double)fwd + (double)bwd),
			(unsigned long long)fwd, (unsigned long long)bwd, a);
	}
	if (flushes || d->cnt[IOP_C_PREFLUSH] || d->cnt[IOP_C_FUA]) {
		struct iop_hist_summary pf;

		hist_summarize(&d->hist[IOP_H_PREFLUSH_LAT], &pf);
		fprintf(f, "%-*s   flush: %s/s, %llu preflush (p99 %s), %llu FUA\n", NAME_W, "",
			fmt_rate((double)flushes, secs, 0, r1, sizeof(r1)),
			(unsigned long long)d->cnt[IOP_C_PREFLUSH], fmt_ns(pf.p99, pf.count, a, sizeof(a)),
			(unsigned long long)d->cnt[IOP_C_FUA]);
	}
}

static void thread_line(FILE *f, const struct iop_thread_interval *t, double secs)
{
	char comm[20], proc[20], osd[16], dev[64], rate[24], a[16], b[16], c[16];
	struct iop_hist_summary s;

	hist_summarize(&t->lat, &s);
	if (t->osd_id >= 0)
		snprintf(osd, sizeof(osd), "%d", t->osd_id);
	else
		snprintf(osd, sizeof(osd), "-");
	if (t->device)
		printable(t->device->name, sizeof(t->device->name), dev, sizeof(dev));
	else
		snprintf(dev, sizeof(dev), "%u:%u", major(t->dev), minor(t->dev));
	fprintf(f, "%-8u %-16s %-16s %-5s %-10s %8s %8s %8s %8s\n", t->tid,
		printable(t->comm, sizeof(t->comm), comm, sizeof(comm)),
		printable(t->process, sizeof(t->process), proc, sizeof(proc)), osd, dev,
		fmt_rate((double)thread_calls(t), secs, 1, rate, sizeof(rate)),
		fmt_ns(s.p50, s.count, a, sizeof(a)), fmt_ns(s.p99, s.count, b, sizeof(b)),
		fmt_ns(t->lat_max_ns, t->lat_max_ns || s.count, c, sizeof(c)));
}

int output_text_write(FILE *f, const struct iop_interval *iv)
{
	double secs = iv->end_mono_ns > iv->start_mono_ns ?
		(double)(iv->end_mono_ns - iv->start_mono_ns) / 1e9 : 0;
	time_t now = (time_t)(iv->end_realtime_ns / 1000000000ull);
	const struct iop_thread_interval **th;
	char when[32];
	struct tm tm;
	size_t i, n;

	if (!localtime_r(&now, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(when, sizeof(when), "@%lld", (long long)now);
	fprintf(f, "\n%s  interval %.2fs  #%llu\n", when, secs, (unsigned long long)iv->seq);
	fprintf(f, "%-*s op %9s %8s %8s %8s %8s %8s %8s %8s\n", NAME_W, "device", "IOPS", "MB/s",
		"queue50", "queue99", "svc50", "svc99", "total99", "size50");
	for (i = 0; i < iv->ndevs; i++)
		device_lines(f, &iv->devs[i], secs);
	if (iv->nthreads) {
		th = malloc(iv->nthreads * sizeof(*th));
		if (!th)
			return -ENOMEM;
		for (i = 0; i < iv->nthreads; i++)
			th[i] = &iv->threads[i];
		qsort(th, iv->nthreads, sizeof(*th), by_calls);
		fprintf(f, "%-8s %-16s %-16s %-5s %-10s %8s %8s %8s %8s\n", "tid", "thread", "process",
			"osd", "device", "calls/s", "p50", "p99", "max");
		n = iv->nthreads < TOP_THREADS ? iv->nthreads : TOP_THREADS;
		for (i = 0; i < n; i++)
			thread_line(f, th[i], secs);
		if (iv->nthreads > n)
			fprintf(f, "(%zu more threads)\n", iv->nthreads - n);
		free(th);
	}
	if (fflush(f) == EOF || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
