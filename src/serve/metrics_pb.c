/* metrics_pb.c - the cumulative telemetry in Prometheus's protobuf exposition, with native
 * histograms */
#include "metrics_pb.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exposition.pb-c.h"
#include "hist_math.h"

typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;

/* Everything one scrape allocates, freed at once. */
struct block {
	struct block *next;
	size_t used, cap;
	max_align_t data[];
};

struct out {
	const struct metrics_opts *o;
	struct block *arena;
	pb_family *fam;
	size_t fam_cap;
	enum metrics_type type;
	uint8_t *buf;
	size_t len, cap;
	int err;
};

static void *alloc(struct out *w, size_t n)
{
	struct block *b = w->arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!b || b->used + n > b->cap) {
		size_t cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(*b) + cap);
		if (!b) {
			w->err = -ENOMEM;
			return NULL;
		}
		b->next = w->arena;
		b->used = 0;
		b->cap = cap;
		w->arena = b;
	}
	p = (char *)b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

static char *str(struct out *w, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = alloc(w, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

static int put(struct out *w, const void *data, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1 << 16;
		uint8_t *b;

		while (cap < w->len + n)
			cap *= 2;
		b = realloc(w->buf, cap);
		if (!b)
			return -ENOMEM;
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
	return 0;
}

/* The family being built, as varint length + message. */
static void flush_family(struct out *w)
{
	uint8_t hdr[10];
	size_t n, h = 0;
	uint8_t *body;

	if (!w->fam || w->err)
		return;
	if (w->fam->n_metric) {
		n = io__prometheus__client__metric_family__get_packed_size(w->fam);
		body = malloc(n ? n : 1);
		if (!body) {
			w->err = -ENOMEM;
			return;
		}
		io__prometheus__client__metric_family__pack(w->fam, body);
		for (size_t v = n; ; v >>= 7) {
			hdr[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
			if (!(v >> 7))
				break;
		}
		if (put(w, hdr, h) || put(w, body, n))
			w->err = -ENOMEM;
		free(body);
	}
	w->fam = NULL;
}

static void family(void *ctx, const char *name, enum metrics_type type, const char *help)
{
	static const Io__Prometheus__Client__MetricType types[] = {
		IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER, IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE,
		IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM, IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE,
	};
	struct out *w = ctx;
	char full[160];

	flush_family(w);
	w->fam = alloc(w, sizeof(*w->fam));
	if (!w->fam)
		return;
	io__prometheus__client__metric_family__init(w->fam);
	/* the protobuf format names counters by their samples, like text 0.0.4 */
	snprintf(full, sizeof(full), "%s%s", name, type == MT_COUNTER ? "_total" :
		 type == MT_INFO ? "_info" : "");
	w->fam->name = str(w, full);
	w->fam->help = str(w, help);
	w->fam->has_type = 1;
	w->fam->type = types[type];
	w->type = type;
	w->fam_cap = 0;
}

/* A new Metric with the labels, appended to the family. */
static pb_metric *metric(struct out *w, const struct metrics_label *l, size_t nl)
{
	pb_metric *m, **grown;
	size_t i;

	if (!w->fam)
		return NULL;
	if (w->fam->n_metric == w->fam_cap) {
		size_t cap = w->fam_cap ? w->fam_cap * 2 : 16;

		grown = alloc(w, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		if (w->fam->n_metric)
			memcpy(grown, w->fam->metric, w->fam->n_metric * sizeof(*grown));
		w->fam->metric = grown;
		w->fam_cap = cap;
	}
	m = alloc(w, sizeof(*m));
	if (!m)
		return NULL;
	io__prometheus__client__metric__init(m);
	m->label = alloc(w, (nl ? nl : 1) * sizeof(*m->label));
	if (!m->label)
		return NULL;
	for (i = 0; i < nl; i++) {
		Io__Prometheus__Client__LabelPair *p = alloc(w, sizeof(*p));

		if (!p)
			return NULL;
		io__prometheus__client__label_pair__init(p);
		p->name = str(w, l[i].name);
		p->value = str(w, l[i].value);
		m->label[i] = p;
	}
	m->n_label = nl;
	w->fam->metric[w->fam->n_metric++] = m;
	return m;
}

static void number(void *ctx, const char *name, const struct metrics_label *l, size_t nl, double v)
{
	struct out *w = ctx;
	pb_metric *m = metric(w, l, nl);

	(void)name;
	if (!m)
		return;
	if (w->type == MT_COUNTER) {
		m->counter = alloc(w, sizeof(*m->counter));
		if (!m->counter)
			return;
		io__prometheus__client__counter__init(m->counter);
		m->counter->has_value = 1;
		m->counter->value = v;
	} else {
		m->gauge = alloc(w, sizeof(*m->gauge));
		if (!m->gauge)
			return;
		io__prometheus__client__gauge__init(m->gauge);
		m->gauge->has_value = 1;
		m->gauge->value = v;
	}
}

int metrics_native_index(double v)
{
	return (int)ceil(log2(v) * (1 << METRICS_NATIVE_SCHEMA));
}

/* The native part: each daemon bucket whole into the native bucket of its midpoint. */
static void native(struct out *w, Io__Prometheus__Client__Histogram *ph,
		   const Iopulse__V1__Histogram *h, unsigned int k, double scale)
{
	size_t i, n = h ? h->n_index : 0, nb = 0, ns = 0;
	int64_t prev_count = 0;
	int *idx = n ? alloc(w, n * sizeof(int)) : NULL;
	uint64_t *cnt = n ? alloc(w, n * sizeof(uint64_t)) : NULL;
	int last = 0;

	ph->has_schema = 1;
	ph->schema = METRICS_NATIVE_SCHEMA;
	ph->has_zero_threshold = 1;
	ph->zero_threshold = scale / 2;   /* below one unit: only zeros */
	ph->has_zero_count = 1;
	if (n && (!idx || !cnt))
		return;
	for (i = 0; i < n; i++) {
		unsigned long long lo = iop_hist_lower(h->index[i], k);
		unsigned long long hi = h->index[i] + 1 >= IOP_HIST_NBUCKETS(k) ? lo :
					iop_hist_upper(h->index[i], k);
		double mid = ((double)lo + (double)hi) / 2 * scale;
		int j;

		if (lo == 0) {
			ph->zero_count += h->count[i];
			continue;
		}
		j = metrics_native_index(mid);
		if (nb && idx[nb - 1] == j) {
			cnt[nb - 1] += h->count[i];
		} else {
			idx[nb] = j;
			cnt[nb++] = h->count[i];
		}
	}
	if (!nb)
		return;
	ph->positive_span = alloc(w, nb * sizeof(*ph->positive_span));
	ph->positive_delta = alloc(w, nb * sizeof(*ph->positive_delta));
	if (!ph->positive_span || !ph->positive_delta)
		return;
	for (i = 0; i < nb; i++) {
		if (i == 0 || idx[i] != last + 1) {
			Io__Prometheus__Client__BucketSpan *sp = alloc(w, sizeof(*sp));

			if (!sp)
				return;
			io__prometheus__client__bucket_span__init(sp);
			sp->has_offset = sp->has_length = 1;
			sp->offset = i == 0 ? idx[i] : idx[i] - last - 1;
			ph->positive_span[ns++] = sp;
		}
		ph->positive_span[ns - 1]->length++;
		ph->positive_delta[i] = (int64_t)cnt[i] - prev_count;
		prev_count = (int64_t)cnt[i];
		last = idx[i];
	}
	ph->n_positive_span = ns;
	ph->n_positive_delta = nb;
}

static void histogram(void *ctx, const char *name, const struct metrics_label *l, size_t nl,
		      const Iopulse__V1__Histogram *h, unsigned int k, const struct metrics_range *r,
		      const uint64_t *sum)
{
	struct out *w = ctx;
	pb_metric *m = metric(w, l, nl);
	Io__Prometheus__Client__Histogram *ph;
	unsigned int j, jlast, p = w->o->precision < k ? w->o->precision : k, nedges;
	unsigned long long edge;
	uint64_t cum = 0, total = 0;
	size_t i, n = h ? h->n_index : 0, e = 0;

	(void)name;
	if (!m || !(ph = m->histogram = alloc(w, sizeof(*ph))))
		return;
	io__prometheus__client__histogram__init(ph);
	for (i = 0; i < n; i++)
		total += h->count[i];
	ph->has_sample_count = 1;
	ph->sample_count = total;
	if (sum) {
		ph->has_sample_sum = 1;
		ph->sample_sum = (double)*sum * r->scale;
	}
	/* the classic buckets of the text format (+Inf is implied by sample_count) */
	nedges = metrics_bucket_count(r->lo_bits, r->hi_bits, p) - 1;
	ph->bucket = alloc(w, nedges * sizeof(*ph->bucket));
	if (!ph->bucket)
		return;
	i = 0;
	j = iop_hist_index(1ULL << r->lo_bits, p);
	jlast = iop_hist_index((1ULL << r->hi_bits) - 1, p);
	edge = (1ULL << r->lo_bits) - 1;
	for (;;) {
		Io__Prometheus__Client__Bucket *b = alloc(w, sizeof(*b));

		if (!b)
			return;
		while (i < n && iop_hist_lower(h->index[i], k) <= edge)
			cum += h->count[i++];
		io__prometheus__client__bucket__init(b);
		b->has_cumulative_count = b->has_upper_bound = 1;
		b->cumulative_count = cum;
		b->upper_bound = (double)edge * r->scale;
		ph->bucket[e++] = b;
		if (j > jlast || e == nedges)
			break;
		edge = iop_hist_upper(j++, p);
	}
	ph->n_bucket = e;
	native(w, ph, h, k, r->scale);
}

int metrics_render_pb(uint8_t **out, size_t *len, const Iopulse__V1__Update *snap,
		      const Iopulse__V1__Info *info, const struct metrics_opts *o,
		      const struct metrics_health *h, unsigned int *omitted)
{
	struct out w = { .o = o };
	struct metrics_sink sink = { .ctx = &w, .family = family, .number = number,
				     .histogram = histogram };
	int r = metrics_walk(snap, info, o, h, &sink, omitted);

	flush_family(&w);
	while (w.arena) {
		struct block *b = w.arena;

		w.arena = b->next;
		free(b);
	}
	r = r ?: w.err;
	if (r) {
		free(w.buf);
		return r;
	}
	*out = w.buf;
	*len = w.len;
	return 0;
}
