/* test_metrics.c - Prometheus / OpenMetrics text: exact le edges, merged precision, escaping */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "hist_math.h"
#include "exposition.pb-c.h"
#include "metrics_pb.h"
#include "metrics_text.h"
#include <math.h>

#define K 5

static char *render(const Iopulse__V1__Update *u, unsigned int p, bool om,
		    const struct iop_strlist *threads, unsigned int max_threads, unsigned int *omitted)
{
	struct metrics_opts o = { .precision = p, .threads = threads, .max_threads = max_threads,
				  .openmetrics = om, .host = "node\"1" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(metrics_render(f, u, NULL, &o, NULL, omitted), 0);
	fclose(f);
	return buf;
}

static void has(const char *s, const char *want)
{
	ck_assert_msg(strstr(s, want), "missing: %s", want);
}

/* one device, 10 reads: 3 of 1023 ns, 4 of 1024 ns, 2 of 5 ms, 1 of 100 s */
static uint32_t idx[4];
static uint64_t cnt[4] = { 3, 4, 2, 1 };
static Iopulse__V1__Histogram svc = IOPULSE__V1__HISTOGRAM__INIT;
static Iopulse__V1__OpStats rd = IOPULSE__V1__OP_STATS__INIT, none = IOPULSE__V1__OP_STATS__INIT;
static Iopulse__V1__DeviceStats dev = IOPULSE__V1__DEVICE_STATS__INIT;
static Iopulse__V1__DeviceStats *devs[1] = { &dev };
static Iopulse__V1__Update u = IOPULSE__V1__UPDATE__INIT;

static void setup(void)
{
	idx[0] = iop_hist_index(1023, K);
	idx[1] = iop_hist_index(1024, K);
	idx[2] = iop_hist_index(5000000, K);
	idx[3] = iop_hist_index(100000000000ULL, K);
	svc.precision = K;
	svc.n_index = svc.n_count = 4;
	svc.index = idx;
	svc.count = cnt;
	rd.ios = 10;
	rd.service_ns = &svc;
	dev.name = "sdb";
	dev.osd_id = 3;
	dev.osd_role = "block";
	dev.read = &rd;
	dev.write = dev.flush = dev.discard = &none;
	u.precision = K;
	u.n_devices = 1;
	u.devices = devs;
}

START_TEST(test_edges_are_exact)
{
	unsigned int omitted;
	char *s = render(&u, 2, false, NULL, 0, &omitted);
	const char *lab = "host=\"node\\\"1\",device=\"sdb\",osd=\"3\",role=\"block\",op=\"read\"";
	char line[512];

	/* 1023 ns is the largest value of the first edge: counted there, 1024 ns is not */
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"0.000001023\"} 3\n", lab);
	has(s, line);
	/* the next edge at precision 2 (4 per power of two): 1024..1279 */
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"0.000001279\"} 7\n", lab);
	has(s, line);
	/* 5 ms lies in 4194304..5242879 ns at precision 2 */
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"0.005242879\"} 9\n", lab);
	has(s, line);
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"0.004194303\"} 7\n", lab);
	has(s, line);
	/* 100 s is above the last edge (68.7 s): only in +Inf */
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"68.719476735\"} 9\n", lab);
	has(s, line);
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_bucket{%s,le=\"+Inf\"} 10\n", lab);
	has(s, line);
	snprintf(line, sizeof(line), "iopulse_device_service_seconds_count{%s} 10\n", lab);
	has(s, line);
	has(s, "# TYPE iopulse_device_ios_total counter\n");
	snprintf(line, sizeof(line), "iopulse_device_ios_total{%s} 10\n", lab);
	has(s, line);
	ck_assert_ptr_null(strstr(s, "op=\"write\",le="));   /* no writes: no write histograms */
	ck_assert_ptr_null(strstr(s, "# EOF"));
	free(s);
}
END_TEST

START_TEST(test_bucket_counts_per_precision)
{
	unsigned int omitted, p;

	for (p = 0; p <= K; p++) {
		char *s = render(&u, p, false, NULL, 0, &omitted), *q = s;
		unsigned int n = 0;

		while ((q = strstr(q, "iopulse_device_service_seconds_bucket{"))) {
			n++;
			q++;
		}
		ck_assert_uint_eq(n, metrics_bucket_count(10, 36, p));
		free(s);
	}
	ck_assert_uint_eq(metrics_bucket_count(10, 36, 2), 106);
}
END_TEST

START_TEST(test_openmetrics_and_threads)
{
	static char *globs_v[] = { "bstore*" };
	struct iop_strlist globs = { .v = globs_v, .n = 1 };
	Iopulse__V1__ThreadSync t[3] = { IOPULSE__V1__THREAD_SYNC__INIT,
		IOPULSE__V1__THREAD_SYNC__INIT, IOPULSE__V1__THREAD_SYNC__INIT };
	Iopulse__V1__ThreadSync *tp[3] = { &t[0], &t[1], &t[2] };
	Iopulse__V1__SyncLatency lat = IOPULSE__V1__SYNC_LATENCY__INIT;
	unsigned int omitted;
	char *s;

	t[0].comm = "bstore_kv_sync";
	t[0].process = "ceph\\osd\n";
	t[0].pid = t[0].tid = 7;
	t[0].osd_id = 3;
	t[0].device = "sdb";
	t[0].fdatasync = 10;
	lat.sum_ns = 12345678;
	lat.histogram_ns = &svc;
	t[0].fdatasync_latency = &lat;
	t[1] = t[0];
	t[1].tid = 8;
	t[1].fdatasync = 1;
	t[2] = t[0];
	t[2].comm = "fio";
	u.n_threads = 3;
	u.threads = tp;
	s = render(&u, 2, true, &globs, 1, &omitted);
	u.n_threads = 0;
	ck_assert_uint_eq(omitted, 1);      /* two bstore threads, room for one: the busier */
	has(s, "# TYPE iopulse_device_ios counter\n");
	has(s, "iopulse_thread_sync_calls_total{host=\"node\\\"1\",comm=\"bstore_kv_sync\","
	       "process=\"ceph\\\\osd\\n\",pid=\"7\",tid=\"7\",device=\"sdb\",osd=\"3\","
	       "call=\"fdatasync\"} 10\n");
	ck_assert_ptr_null(strstr(s, "tid=\"8\""));
	ck_assert_ptr_null(strstr(s, "comm=\"fio\""));
	has(s, "call=\"fdatasync\"} 0.012345678\n");                     /* exact _sum */
	has(s, "le=\"0.000001023\"} 3\n");
	ck_assert_ptr_null(strstr(s, "iopulse_device_service_seconds_count"));  /* no _sum */
	has(s, "iopulse_metrics_threads_omitted{host=\"node\\\"1\"} 1\n");
	has(s, "# TYPE iopulse_build info\n");
	ck_assert_str_eq(s + strlen(s) - 6, "# EOF\n");
	free(s);
}
END_TEST

/* The protobuf exposition: delimited families; the service histogram's native buckets hold
 * every daemon bucket's count in the native bucket whose range holds its midpoint. */
START_TEST(test_protobuf_native)
{
	struct metrics_opts o = { .precision = 2, .host = "h" };
	Io__Prometheus__Client__Histogram *found = NULL;
	uint8_t *buf = NULL;
	size_t len = 0, at = 0;
	unsigned int omitted, i, fams = 0;

	ck_assert_int_eq(metrics_render_pb(&buf, &len, &u, NULL, &o, NULL, &omitted), 0);
	while (at < len) {
		uint64_t n = 0;
		int shift = 0;
		Io__Prometheus__Client__MetricFamily *f;

		do {
			n |= (uint64_t)(buf[at] & 0x7f) << shift;
			shift += 7;
		} while (buf[at++] & 0x80);
		f = io__prometheus__client__metric_family__unpack(NULL, n, buf + at);
		ck_assert_ptr_nonnull(f);
		at += n;
		fams++;
		if (!strcmp(f->name, "iopulse_device_ios_total"))
			ck_assert_int_eq(f->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER);
		if (!strcmp(f->name, "iopulse_device_service_seconds")) {
			ck_assert_uint_eq(f->n_metric, 1);       /* reads only */
			found = f->metric[0]->histogram;
			f->metric[0]->histogram = NULL;
		}
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
		if (found)
			break;
	}
	ck_assert_uint_gt(fams, 5);
	ck_assert_ptr_nonnull(found);
	ck_assert_uint_eq(found->sample_count, 10);
	ck_assert_int_eq(found->schema, 4);
	ck_assert_uint_eq(found->zero_count, 0);
	ck_assert_uint_eq(found->n_bucket, metrics_bucket_count(10, 36, 2) - 1);   /* classic too */
	for (i = 0; i < 4; i++) {
		double mid = ((double)iop_hist_lower(idx[i], K) + (double)iop_hist_upper(idx[i], K)) /
			     2 * 1e-9;
		int64_t c = 0, b = 0, ok = 0;
		size_t sp, d = 0;

		if (idx[i] + 1 >= IOP_HIST_NBUCKETS(K))
			mid = (double)iop_hist_lower(idx[i], K) * 1e-9;
		for (sp = 0; sp < found->n_positive_span; sp++) {
			b += found->positive_span[sp]->offset;
			for (uint32_t j = 0; j < found->positive_span[sp]->length; j++, b++, d++) {
				c += found->positive_delta[d];
				if (pow(2, (b - 1) / 16.0) < mid && mid <= pow(2, b / 16.0) &&
				    c >= (int64_t)cnt[i])
					ok = 1;
			}
		}
		ck_assert_msg(ok, "daemon bucket %u (mid %g s): no native bucket around it", idx[i], mid);
	}
	io__prometheus__client__histogram__free_unpacked(found, NULL);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("text");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_edges_are_exact);
	tcase_add_test(tc, test_bucket_counts_per_precision);
	tcase_add_test(tc, test_openmetrics_and_threads);
	tcase_add_test(tc, test_protobuf_native);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
