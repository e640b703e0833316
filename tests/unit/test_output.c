/* test_output.c - JSON output shape (checked by a real JSON parser) and the text table */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "histogram.h"
#include "output_json.h"
#include "output_text.h"

#define K 5
#define NB IOP_HIST_NBUCKETS(K)
#define NTHREADS 12

static uint64_t lat[NB], size4k[NB], size1m[NB], seek[NB], empty[NB];
static struct iop_device dev_a, dev_b;
static struct iop_dev_interval devs[2];
static struct iop_thread_interval thr[NTHREADS];
static struct iop_bpf_prog_stat progs[2] = {
	{ .name = "iop_rq_complete", .run_cnt = 100, .run_time_ns = 30000, .missed = 2 },
	{ .name = "iop_rq_issue", .run_cnt = 50, .run_time_ns = 7000 },
};

/* quote, backslash, a control character, UTF-8 and a byte that is not UTF-8 */
#define ODD_NAME "dm \"x\"\\y\x01\xc3\xa9\xff"
#define ODD_NAME_JSON "\"name\":\"dm \\\"x\\\"\\\\y\\u0001\xc3\xa9\\ufffd\""
#define ODD_NAME_TEXT "dm \"x\"\\y????"

static struct iop_hist_view view(uint64_t *c)
{
	return (struct iop_hist_view){ .k = K, .nbuckets = NB, .counts = c };
}

static void build(struct iop_interval *iv)
{
	int h, i;

	memset(iv, 0, sizeof(*iv));
	memset(lat, 0, sizeof(lat));
	memset(size4k, 0, sizeof(size4k));
	memset(size1m, 0, sizeof(size1m));
	memset(seek, 0, sizeof(seek));
	lat[iop_hist_index(100000, K)] = 5;      /* five IOs of ~100 us */
	size4k[iop_hist_index(4096, K)] = 5;
	size1m[iop_hist_index(1040000, K)] = 2;  /* 1016 KiB: shown as 0.992MiB */
	seek[iop_hist_index(2048, K)] = 3;

	dev_a = (struct iop_device){ .dev = makedev(8, 16), .disk = makedev(8, 16),
				     .present = true, .rotational = true, .osd_id = 3 };
	strcpy(dev_a.name, "sdb");
	strcpy(dev_a.model, "Disk \"quoted\" \\ \t tab");
	strcpy(dev_a.dm_name, "ceph-vg-osd3");
	strcpy(dev_a.osd_role, "block.db");
	strcpy(dev_a.slaves, "sdc,,sdd");
	dev_b = (struct iop_device){ .dev = makedev(253, 1), .disk = makedev(253, 1),
				     .present = true, .osd_id = -1 };
	strcpy(dev_b.name, ODD_NAME);
	memset(dev_b.model, 'm', sizeof(dev_b.model));   /* fills the field: no NUL */
	for (i = 0; i < 2; i++) {
		memset(&devs[i], 0, sizeof(devs[i]));
		devs[i].info = i ? &dev_b : &dev_a;
		for (h = 0; h < IOP_H_MAX; h++)
			devs[i].hist[h] = view(empty);
	}
	devs[0].cnt[IOP_C_IOS + IOP_OP_READ] = 5;
	devs[0].cnt[IOP_C_BYTES + IOP_OP_READ] = 20480;
	devs[0].cnt[IOP_C_ERRORS + IOP_OP_READ] = 1;
	devs[0].cnt[IOP_C_UNTIMED + IOP_OP_READ] = 2;
	devs[0].cnt[IOP_C_NOQUEUE + IOP_OP_READ] = 3;
	devs[0].cnt[IOP_C_UNSEEN + IOP_OP_READ] = 4;
	devs[0].cnt[IOP_C_IOS + IOP_OP_WRITE] = 2;
	devs[0].cnt[IOP_C_BYTES + IOP_OP_WRITE] = 2080000;
	devs[0].cnt[IOP_C_IOS + IOP_OP_FLUSH] = 4;
	devs[0].cnt[IOP_C_PREFLUSH] = 6;
	devs[0].cnt[IOP_C_FUA] = 7;
	devs[0].cnt[IOP_C_REQUEUE] = 9;
	devs[0].cnt[IOP_C_SEQ] = 1;
	devs[0].cnt[IOP_C_FWD] = 3;
	devs[0].hist[IOP_H_QUEUE + IOP_OP_READ] = view(lat);
	devs[0].hist[IOP_H_SERVICE + IOP_OP_READ] = view(lat);
	devs[0].hist[IOP_H_TOTAL + IOP_OP_READ] = view(lat);
	devs[0].hist[IOP_H_SIZE + IOP_OP_READ] = view(size4k);
	devs[0].hist[IOP_H_SIZE + IOP_OP_WRITE] = view(size1m);
	devs[0].hist[IOP_H_SEEK] = view(seek);
	devs[0].hist[IOP_H_PREFLUSH_LAT] = view(lat);

	for (i = 0; i < NTHREADS; i++) {
		struct iop_thread_interval *t = &thr[i];

		memset(t, 0, sizeof(*t));
		t->tgid = 100;
		t->tid = 101 + (unsigned int)i;
		snprintf(t->comm, sizeof(t->comm), "worker-%d", i);
		strcpy(t->process, "ceph-osd");
		t->osd_id = 3;
		t->dev = dev_a.dev;
		t->device = &dev_a;
		t->calls[IOP_SYNC_FSYNC] = (uint64_t)i;
		t->lat = view(empty);
		for (int kd = 0; kd < IOP_SYNC_MAX; kd++)
			t->kind_lat[kd] = view(empty);
	}
	strcpy(thr[0].comm, "bstore_kv_sync");
	thr[0].calls[IOP_SYNC_FDATASYNC] = 500;
	thr[0].calls[IOP_SYNC_RANGE] = 40;
	thr[0].flush_bios = 120;
	thr[0].lat = view(lat);
	thr[0].lat_sum_ns = 7000;
	thr[0].kind_lat[IOP_SYNC_FDATASYNC] = view(lat);
	thr[0].kind_lat_sum_ns[IOP_SYNC_FDATASYNC] = 7000;
	thr[0].lat_max_ns = 999700;              /* shown as 1ms, not 1e+03us */
	memcpy(thr[1].comm, "evil\x1b[2Jname!!!", 16);   /* no NUL, an escape sequence */
	thr[1].osd_id = -1;
	thr[1].dev = makedev(8, 32);
	thr[1].device = NULL;
	thr[1].calls[IOP_SYNC_FSYNC] = 300;
	thr[1].lat_max_ns = 1100000000000ULL;    /* 1100 s */

	iv->seq = 7;
	iv->hist_k = K;
	iv->start_realtime_ns = 1699999998000000000ull;
	iv->end_realtime_ns = 1700000000000000000ull;
	iv->start_mono_ns = 1000000000ull;
	iv->end_mono_ns = 3000000000ull;
	iv->ndevs = 2;
	iv->devs = devs;
	iv->nthreads = NTHREADS;
	iv->threads = thr;
	iv->global[IOP_G_NO_SLOT] = 11;
	iv->global[IOP_G_INFLIGHT_FULL] = 12;
	iv->global[IOP_G_SYNC_FULL] = 13;
	iv->global[IOP_G_NO_BIO_TS] = 14;
	iv->global[IOP_G_BIO_EVICT] = 15;
	iv->global[IOP_G_AT_ACCOUNTING] = 17;
	iv->sync_evictions = 16;
	iv->bpf_stats = true;
	iv->nprogs = 2;
	iv->progs = progs;
}

static char *render(int (*write)(FILE *, const struct iop_interval *), struct iop_interval *iv)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(write(f, iv), 0);
	fclose(f);
	return buf;
}

static char *render_json(bool buckets)
{
	struct iop_interval iv;

	build(&iv);
	output_json_set_buckets(buckets);
	return render(output_json_write, &iv);
}

/*
 * python3 is the referee: strict UTF-8, one line, json.loads, and every object with exactly
 * the keys of docs/json-output.md in that order, with the documented types.
 */
static const char checker[] =
	"import json, sys\n"
	"buckets, zero = sys.argv[1] == '1', sys.argv[2] == '1'\n"
	"text = sys.stdin.buffer.read().decode('utf-8')\n"
	"assert text.endswith('\\n') and text.count('\\n') == 1, 'not one line'\n"
	"iv = json.loads(text)\n"
	"def keys(o, want, where):\n"
	"    assert list(o) == want.split(), f'{where}: {list(o)}'\n"
	"def ints(o, names, where):\n"
	"    for n in names.split():\n"
	"        assert type(o[n]) is int and o[n] >= 0, f'{where}.{n}: {o[n]!r}'\n"
	"def rate(v, where):\n"
	"    assert (v is None) if zero else (type(v) is float and v >= 0), f'{where}: {v!r}'\n"
	"H = 'count mean min p50 p90 p99 p999 max' + (' buckets' if buckets else '')\n"
	"def hist(h, where):\n"
	"    keys(h, H, where)\n"
	"    ints(h, 'count', where)\n"
	"    if h['count'] == 0:\n"
	"        assert all(h[n] is None for n in 'mean min p50 p90 p99 p999 max'.split()), where\n"
	"    else:\n"
	"        assert type(h['mean']) is float, where\n"
	"        ints(h, 'min p50 p90 p99 p999 max', where)\n"
	"        assert h['min'] <= h['p50'] <= h['p90'] <= h['p99'] <= h['p999'] <= h['max'], where\n"
	"        assert h['min'] <= h['mean'] <= h['max'], where\n"
	"    if buckets:\n"
	"        assert sum(c for i, c in h['buckets']) == h['count'], where\n"
	"keys(iv, 'type seq start_realtime_ns end_realtime_ns start_mono_ns end_mono_ns interval_s '\n"
	"     'histogram devices threads drops bpf', 'top')\n"
	"assert iv['type'] == 'interval'\n"
	"ints(iv, 'seq start_realtime_ns end_realtime_ns start_mono_ns end_mono_ns', 'top')\n"
	"assert type(iv['interval_s']) is float\n"
	"keys(iv['histogram'], 'precision max_relative_error mode', 'histogram')\n"
	"assert iv['histogram']['mode'] in ('full', 'completion')\n"
	"k = iv['histogram']['precision']\n"
	"assert iv['histogram']['max_relative_error'] == 2.0 ** -(k + 1)\n"
	"for d in iv['devices']:\n"
	"    w = d['name']\n"
	"    keys(d, 'dev name model rotational dm_name slaves holders osd_id osd_role ops seek flush requeues', w)\n"
	"    assert all(type(d[n]) is str for n in 'dev name model'.split()), w\n"
	"    assert type(d['rotational']) is bool and type(d['slaves']) is list, w\n"
	"    assert (d['osd_id'] is None) == (d['osd_role'] is None), w\n"
	"    keys(d['ops'], 'read write flush discard', w)\n"
	"    for op, o in d['ops'].items():\n"
	"        keys(o, 'ios bytes iops bytes_per_s errors untimed no_queue_ts completion_unseen '\n"
	"             'queue_wait_ns service_ns total_ns size_bytes', f'{w}.{op}')\n"
	"        ints(o, 'ios bytes errors untimed no_queue_ts completion_unseen', f'{w}.{op}')\n"
	"        rate(o['iops'], f'{w}.{op}.iops')\n"
	"        rate(o['bytes_per_s'], f'{w}.{op}.bytes_per_s')\n"
	"        for h in 'queue_wait_ns service_ns total_ns size_bytes'.split():\n"
	"            hist(o[h], f'{w}.{op}.{h}')\n"
	"    s = d['seek']\n"
	"    keys(s, 'sequential forward backward sequential_pct distance_sectors', w)\n"
	"    ints(s, 'sequential forward backward', w)\n"
	"    assert s['sequential_pct'] is None or type(s['sequential_pct']) is float, w\n"
	"    hist(s['distance_sectors'], w + '.seek')\n"
	"    keys(d['flush'], 'requests preflush fua preflush_latency_ns fua_latency_ns', w)\n"
	"    ints(d['flush'], 'requests preflush fua', w)\n"
	"    hist(d['flush']['preflush_latency_ns'], w + '.preflush')\n"
	"    hist(d['flush']['fua_latency_ns'], w + '.fua')\n"
	"    ints(d, 'requeues', w)\n"
	"for t in iv['threads']:\n"
	"    w = str(t['tid'])\n"
	"    keys(t, 'pid tid comm process osd_id dev device disks fsync fdatasync sync_file_range calls '\n"
	"         'calls_per_s flush_bios latency_sum_ns latency_ns by_call', w)\n"
	"    ints(t, 'pid tid fsync fdatasync sync_file_range calls flush_bios latency_sum_ns', w)\n"
	"    assert t['calls'] == t['fsync'] + t['fdatasync'] + t['sync_file_range'], w\n"
	"    rate(t['calls_per_s'], w)\n"
	"    hist(t['latency_ns'], w)\n"
	"    keys(t['by_call'], 'fsync fdatasync sync_file_range', w)\n"
	"    for kind, b in t['by_call'].items():\n"
	"        keys(b, 'calls latency_sum_ns latency_ns', w + kind)\n"
	"        ints(b, 'calls latency_sum_ns', w + kind)\n"
	"        assert b['calls'] == t[kind], w + kind\n"
	"        hist(b['latency_ns'], w + kind)\n"
	"    assert sum(b['latency_sum_ns'] for b in t['by_call'].values()) == t['latency_sum_ns']\n"
	"keys(iv['drops'], 'missed_events no_slot inflight_full sync_full sync_evicted no_bio_ts '\n"
	"     'bio_evicted completed_at_accounting', 'drops')\n"
	"ints(iv['drops'], 'missed_events no_slot inflight_full sync_full sync_evicted no_bio_ts '\n"
	"     'bio_evicted completed_at_accounting', 'drops')\n"
	"b = iv['bpf']\n"
	"keys(b, 'stats_enabled run_cnt run_time_ns programs', 'bpf')\n"
	"assert type(b['stats_enabled']) is bool\n"
	"for p in b['programs']:\n"
	"    keys(p, 'name run_cnt run_time_ns missed', 'bpf.programs')\n"
	"assert b['run_cnt'] == sum(p['run_cnt'] for p in b['programs'])\n"
	"assert iv['drops']['missed_events'] == sum(p['missed'] for p in b['programs'])\n";

static void assert_valid_json(const char *s, bool buckets, bool zero)
{
	char path[] = "/tmp/iopulse-jsoncheck-XXXXXX", cmd[256];
	int fd = mkstemp(path), status;
	FILE *f;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, checker, sizeof(checker) - 1), (ssize_t)(sizeof(checker) - 1));
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 %s %d %d", path, buckets, zero);
	f = popen(cmd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(s, f);
	status = pclose(f);
	unlink(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* too long for a Check message, which has a size limit */
		fprintf(stderr, "rejected JSON: %s", s);
		ck_abort_msg("the JSON checker failed (status %d); the JSON is on stderr", status);
	}
}

static void has(const char *s, const char *want)
{
	ck_assert_msg(strstr(s, want) != NULL, "missing %s", want);
}

START_TEST(test_json_shape)
{
	char *s = render_json(false);

	assert_valid_json(s, false, false);
	ck_assert(strchr(s, '\n') == s + strlen(s) - 1);          /* exactly one line */
	has(s, "{\"type\":\"interval\",\"seq\":7,\"start_realtime_ns\":1699999998000000000,");
	has(s, "\"interval_s\":2.0,");
	has(s, "\"histogram\":{\"precision\":5,\"max_relative_error\":0.015625,\"mode\":\"full\"}");
	has(s, "{\"dev\":\"8:16\",\"name\":\"sdb\",");
	has(s, "\"model\":\"Disk \\\"quoted\\\" \\\\ \\u0009 tab\",\"rotational\":true,");
	has(s, "\"dm_name\":\"ceph-vg-osd3\",\"slaves\":[\"sdc\",\"sdd\"],");
	has(s, "\"osd_id\":3,\"osd_role\":\"block.db\",");
	has(s, "\"read\":{\"ios\":5,\"bytes\":20480,\"iops\":2.5,\"bytes_per_s\":10240.0,"
	       "\"errors\":1,\"untimed\":2,\"no_queue_ts\":3,\"completion_unseen\":4,");
	has(s, "\"write\":{\"ios\":2,\"bytes\":2080000,\"iops\":1.0,\"bytes_per_s\":1040000.0,");
	has(s, "\"discard\":{\"ios\":0,\"bytes\":0,\"iops\":0.0,");
	has(s, "\"seek\":{\"sequential\":1,\"forward\":3,\"backward\":0,\"sequential_pct\":25.0,");
	has(s, "\"flush\":{\"requests\":4,\"preflush\":6,\"fua\":7,\"preflush_latency_ns\":{\"count\":5,");
	has(s, "\"requeues\":9}");
	has(s, "\"p50\":null");                                    /* empty histogram: null */
	/* the second device: escaped name, a model field without a NUL, no labels */
	has(s, "{\"dev\":\"253:1\"," ODD_NAME_JSON ",\"model\":\"mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
	       "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm\",\"rotational\":false,\"dm_name\":null,"
	       "\"slaves\":[],\"holders\":[],\"osd_id\":null,\"osd_role\":null,");
	has(s, "\"sequential_pct\":null");
	has(s, "{\"pid\":100,\"tid\":101,\"comm\":\"bstore_kv_sync\",\"process\":\"ceph-osd\","
	       "\"osd_id\":3,\"dev\":\"8:16\",\"device\":\"sdb\",\"disks\":[],\"fsync\":0,"
	       "\"fdatasync\":500,"
	       "\"sync_file_range\":40,\"calls\":540,\"calls_per_s\":270.0,\"flush_bios\":120,"
	       "\"latency_sum_ns\":7000,\"latency_ns\":{\"count\":5,");
	has(s, "\"by_call\":{\"fsync\":{\"calls\":0,\"latency_sum_ns\":0,\"latency_ns\":{\"count\":0,");
	has(s, "\"fdatasync\":{\"calls\":500,\"latency_sum_ns\":7000,\"latency_ns\":{\"count\":5,");
	has(s, "\"tid\":102,\"comm\":\"evil\\u001b[2Jname!!!\",\"process\":\"ceph-osd\","
	       "\"osd_id\":null,\"dev\":\"8:32\",\"device\":null,\"disks\":[],");
	has(s, "\"drops\":{\"missed_events\":2,\"no_slot\":11,\"inflight_full\":12,\"sync_full\":13,"
	       "\"sync_evicted\":16,\"no_bio_ts\":14,\"bio_evicted\":15,"
	       "\"completed_at_accounting\":17}");
	has(s, "\"bpf\":{\"stats_enabled\":true,\"run_cnt\":150,\"run_time_ns\":37000,\"programs\":"
	       "[{\"name\":\"iop_rq_complete\",\"run_cnt\":100,\"run_time_ns\":30000,\"missed\":2},"
	       "{\"name\":\"iop_rq_issue\",\"run_cnt\":50,\"run_time_ns\":7000,\"missed\":0}]}}\n");
	ck_assert_ptr_null(strstr(s, ":nan"));
	ck_assert_ptr_null(strstr(s, "inf,"));
	ck_assert_ptr_null(strstr(s, "buckets"));
	free(s);
}
END_TEST

START_TEST(test_json_percentiles_and_buckets)
{
	char *s = render_json(true), want[256];
	unsigned int idx = iop_hist_index(100000, K);
	unsigned long long mid = hist_bucket_mid(idx, K);

	assert_valid_json(s, true, false);
	snprintf(want, sizeof(want), "\"queue_wait_ns\":{\"count\":5,\"mean\":%llu.0,\"min\":%llu,"
		 "\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"p999\":%llu,\"max\":%llu,"
		 "\"buckets\":[[%u,5]]}", mid, (unsigned long long)iop_hist_lower(idx, K), mid, mid,
		 mid, mid, (unsigned long long)iop_hist_upper(idx, K), idx);
	has(s, want);
	has(s, "\"buckets\":[]");
	free(s);
	output_json_set_buckets(false);
}
END_TEST

/* An interval of no length has no rates: null, never inf or nan. */
START_TEST(test_json_zero_interval)
{
	struct iop_interval iv;
	char *s;

	build(&iv);
	iv.end_mono_ns = iv.start_mono_ns;
	s = render(output_json_write, &iv);
	assert_valid_json(s, false, true);
	has(s, "\"interval_s\":0.0,");
	has(s, "\"iops\":null,\"bytes_per_s\":null,");
	has(s, "\"calls_per_s\":null,");
	free(s);
}
END_TEST

START_TEST(test_json_empty_interval)
{
	struct iop_interval iv;
	char *s;

	memset(&iv, 0, sizeof(iv));
	iv.hist_k = 7;
	iv.end_mono_ns = 500000000;
	s = render(output_json_write, &iv);
	assert_valid_json(s, false, false);
	has(s, "\"interval_s\":0.5,\"histogram\":{\"precision\":7,\"max_relative_error\":0.00390625,"
	       "\"mode\":\"full\"},"
	       "\"devices\":[],\"threads\":[],");
	has(s, "\"bpf\":{\"stats_enabled\":false,\"run_cnt\":0,\"run_time_ns\":0,\"programs\":[]}}\n");
	free(s);
	/* the completion-only mode says so */
	iv.completion_only = true;
	s = render(output_json_write, &iv);
	assert_valid_json(s, false, false);
	has(s, "\"max_relative_error\":0.00390625,\"mode\":\"completion\"},");
}
END_TEST

START_TEST(test_write_errors)
{
	struct iop_interval iv;
	FILE *f = fopen("/dev/full", "w");

	ck_assert_ptr_nonnull(f);
	build(&iv);
	ck_assert_int_eq(output_json_write(f, &iv), -ENOSPC);
	clearerr(f);
	ck_assert_int_eq(output_text_write(f, &iv), -ENOSPC);
	fclose(f);
}
END_TEST

START_TEST(test_text_table)
{
	struct iop_interval iv;
	char *buf, want[64];

	build(&iv);
	buf = render(output_text_write, &iv);
	fputs(buf, stdout);
	has(buf, "interval 2.00s  #7");
	has(buf, "sdb osd.3/block.db     r");
	has(buf, ODD_NAME_TEXT);
	has(buf, "idle");
	has(buf, "99.3us");                   /* ~100 us p50 (bucket mid 99327) with its unit */
	has(buf, "4.06KiB");                  /* 4 KiB size p50 */
	has(buf, "0.992MiB");                 /* 1016 KiB, not 1.02e+03KiB */
	has(buf, "25.0% sequential, 3 forward, 0 backward, distance p50 2079 sectors");
	has(buf, "flush: 2/s, 6 preflush (p99 99.3us), 7 FUA");
	has(buf, "bstore_kv_sync");
	has(buf, "evil?[2Jname!!!");          /* no escape sequence reaches the terminal */
	has(buf, "8:32");                     /* device unknown: its number */
	has(buf, " 1ms\n");                   /* max 999.7 us */
	has(buf, " 1100s\n");
	has(buf, "(2 more threads)");
	ck_assert_ptr_null(strstr(buf, "e+"));
	ck_assert_ptr_null(strchr(buf, '\x1b'));
	/* most calls first: bstore_kv_sync (540), the evil one (300), then worker-11 .. worker-2 */
	ck_assert_ptr_nonnull(strstr(buf, "bstore_kv_sync"));
	ck_assert(strstr(buf, "bstore_kv_sync") < strstr(buf, "evil"));
	ck_assert(strstr(buf, "evil") < strstr(buf, "worker-11"));
	ck_assert(strstr(buf, "worker-11") < strstr(buf, "worker-4"));
	snprintf(want, sizeof(want), "worker-3");
	ck_assert_ptr_null(strstr(buf, want));
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_json_shape);
	tcase_add_test(tc, test_json_percentiles_and_buckets);
	tcase_add_test(tc, test_json_zero_interval);
	tcase_add_test(tc, test_json_empty_interval);
	tcase_add_test(tc, test_write_errors);
	tcase_add_test(tc, test_text_table);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
