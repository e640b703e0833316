/* metrics_text.c - the cumulative telemetry as Prometheus / OpenMetrics text */
#include "metrics_text.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "hist_math.h"

struct out {
	FILE *f;
	const struct metrics_opts *o;
	enum metrics_type type;    /* of the family being written */
};

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

static void put_number(FILE *f, double v, bool openmetrics);

/* The sample name of the family's type: counters end in _total, info metrics in _info. */
static const char *suffix(enum metrics_type t)
{
	return t == MT_COUNTER ? "_total" : t == MT_INFO ? "_info" : "";
}

/* HELP and TYPE: OpenMetrics names counter and info families without their suffix, 0.0.4
 * names the samples and has no info type (a gauge). */
static void family(void *ctx, const char *name, enum metrics_type type, const char *help)
{
	static const char *const om[] = { "counter", "gauge", "histogram", "info" };
	static const char *const v004[] = { "counter", "gauge", "histogram", "gauge" };
	struct out *w = ctx;
	const char *sfx = w->o->openmetrics ? "" : suffix(type);

	w->type = type;
	fprintf(w->f, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, sfx, help, name, sfx,
		(w->o->openmetrics ? om : v004)[type]);
}

/* {a="x",b="y" (no closing brace: le may follow) */
static void labels(FILE *f, const struct metrics_label *l, size_t n)
{
	bool first = true;
	size_t i;

	fputc('{', f);
	for (i = 0; i < n; i++)
		label(f, &first, l[i].name, l[i].value);
}

static void number(void *ctx, const char *name, const struct metrics_label *l, size_t n, double v)
{
	struct out *w = ctx;

	fprintf(w->f, "%s%s", name, suffix(w->type));
	labels(w->f, l, n);
	fputs("} ", w->f);
	put_number(w->f, v, w->o->openmetrics);
	fputc('\n', w->f);
}

/* A number the way both formats take it: integers plainly, others with enough digits. */
static void put_number(FILE *f, double v, bool openmetrics)
{
	(void)openmetrics;
	if (v == (double)(long long)v && v < 1e15 && v > -1e15)
		fprintf(f, "%lld", (long long)v);
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
 * One histogram's samples: cumulative bucket counts at the fixed edges of range r (the
 * daemon's bucket edges at precision p <= k), _count and, when sum is known, _sum.
 */
static void histogram(void *ctx, const char *name, const struct metrics_label *l, size_t nl,
		      const Iopulse__V1__Histogram *h, unsigned int k, const struct metrics_range *r,
		      const uint64_t *sum)
{
	struct out *w = ctx;
	unsigned int j, jlast, p = w->o->precision < k ? w->o->precision : k;
	unsigned long long edge;
	uint64_t cum = 0, total = 0;
	size_t i = 0, n = h ? h->n_index : 0;

	for (i = 0; i < n; i++)
		total += h->count[i];
	i = 0;
	j = iop_hist_index(1ULL << r->lo_bits, p);
	jlast = iop_hist_index((1ULL << r->hi_bits) - 1, p);
	edge = (1ULL << r->lo_bits) - 1;
	for (;;) {
		while (i < n && iop_hist_lower(h->index[i], k) <= edge)
			cum += h->count[i++];
		fprintf(w->f, "%s_bucket", name);
		labels(w->f, l, nl);
		fputs(nl ? ",le=\"" : "le=\"", w->f);
		put_le(w->f, edge, r->scale, w->o->openmetrics);
		fprintf(w->f, "\"} %llu\n", (unsigned long long)cum);
		if (j > jlast)
			break;
		edge = iop_hist_upper(j++, p);
	}
	fprintf(w->f, "%s_bucket", name);
	labels(w->f, l, nl);
	fprintf(w->f, "%sle=\"+Inf\"} %llu\n", nl ? "," : "", (unsigned long long)total);
	/* OpenMetrics allows _count only beside _sum, which only the sync histograms have: the
	 * kernel keeps bucket counts, and a sum from bucket midpoints would not be exact */
	if (sum || !w->o->openmetrics) {
		fprintf(w->f, "%s_count", name);
		labels(w->f, l, nl);
		fprintf(w->f, "} %llu\n", (unsigned long long)total);
	}
	if (sum) {
		fprintf(w->f, "%s_sum", name);
		labels(w->f, l, nl);
		fputs("} ", w->f);
		put_le(w->f, *sum, r->scale, w->o->openmetrics);    /* exact decimal */
		fputc('\n', w->f);
	}
}

int metrics_render(FILE *f, const Iopulse__V1__Update *snap, const Iopulse__V1__Info *info,
		   const struct metrics_opts *o, const struct metrics_health *h,
		   unsigned int *omitted)
{
	struct out w = { .f = f, .o = o };
	struct metrics_sink sink = { .ctx = &w, .family = family, .number = number,
				     .histogram = histogram };
	int r = metrics_walk(snap, info, o, h, &sink, omitted);

	if (r)
		return r;
	if (o->openmetrics)
		fputs("# EOF\n", f);
	return ferror(f) ? -EIO : 0;
}
