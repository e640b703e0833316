/* test_output.c - JSON output shape (checked by a real JSON parser) and the text table */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check_main.h"
#include "histogram.h"
#include "output_json.h"
#include "output_text.h"

#define K 5
#define NB IOP_HIST_NBUCKETS(K)

static uint64_t lat[NB], empty[NB];
static struct iop_device dev_a, dev_b;
static struct iop_dev_interval devs[2];
static struct iop_thread_interval thr;
static struct iop_bpf_prog_stat prog = { "iop_rq_complete", 100, 30000 };

static void build(struct iop_interval *iv)
{
	int h, i;

	memset(iv, 0, sizeof(*iv));
	memset(lat, 0, sizeof(lat));
	lat[iop_hist_index(100000, K)] = 5;     /* five IOs of ~100 us */
	dev_a = (struct iop_device){ .dev = makedev(8, 16), .disk = makedev(8, 16), .present = true,
				     .osd_id = 3 };
	strcpy(dev_a.name, "sdb");
	strcpy(dev_a.model, "Disk \"quoted\" \\ \t tab");
	strcpy(dev_a.osd_role, "block.db");
	strcpy(dev_a.slaves, "sdc,sdd");
	dev_b = (struct iop_device){ .dev = makedev(7, 0), .disk = makedev(7, 0), .present = true,
				     .osd_id = -1 };
	strcpy(dev_b.name, "loop0");
	for (i = 0; i < 2; i++) {
		memset(&devs[i], 0, sizeof(devs[i]));
		devs[i].info = i ? &dev_b : &dev_a;
		for (h = 0; h < IOP_H_MAX; h++)
			devs[i].hist[h] = (struct iop_hist_view){ K, NB, empty };
	}
	devs[0].cnt[IOP_C_IOS + IOP_OP_READ] = 5;
	devs[0].cnt[IOP_C_BYTES + IOP_OP_READ] = 20480;
	devs[0].cnt[IOP_C_SEQ] = 1;
	devs[0].cnt[IOP_C_FWD] = 3;
	devs[0].hist[IOP_H_QUEUE + IOP_OP_READ].counts = lat;
	devs[0].hist[IOP_H_SERVICE + IOP_OP_READ].counts = lat;
	memset(&thr, 0, sizeof(thr));
	thr.tgid = 100;
	thr.tid = 101;
	strcpy(thr.comm, "bstore_kv_sync");
	strcpy(thr.process, "ceph-osd");
	thr.osd_id = 3;
	thr.dev = dev_a.dev;
	thr.device = &dev_a;
	thr.calls[IOP_SYNC_FDATASYNC] = 5;
	thr.lat = (struct iop_hist_view){ K, NB, lat };
	iv->seq = 7;
	iv->hist_k = K;
	iv->start_mono_ns = 1000000000ull;
	iv->end_mono_ns = 3000000000ull;
	iv->end_realtime_ns = 1700000000000000000ull;
	iv->ndevs = 2;
	iv->devs = devs;
	iv->nthreads = 1;
	iv->threads = &thr;
	iv->nprogs = 1;
	iv->progs = &prog;
}

static char *render_json(bool buckets)
{
	struct iop_interval iv;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	build(&iv);
	output_json_set_buckets(buckets);
	ck_assert_int_eq(output_json_write(f, &iv), 0);
	fclose(f);
	return buf;
}

/* python3's json module is the referee for validity; the checks below are on content */
static void assert_valid_json(const char *s)
{
	char path[] = "/tmp/iopulse-json-XXXXXX", cmd[256];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fputs(s, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' %s", path);
	ck_assert_int_eq(system(cmd), 0);
	unlink(path);
}

START_TEST(test_json_shape)
{
	char *s = render_json(false);

	assert_valid_json(s);
	ck_assert(s[strlen(s) - 1] == '\n');
	ck_assert(strchr(s, '\n') == s + strlen(s) - 1);          /* exactly one line */
	ck_assert_ptr_nonnull(strstr(s, "\"seq\":7"));
	ck_assert_ptr_nonnull(strstr(s, "\"interval_s\":2,"));
	ck_assert_ptr_nonnull(strstr(s, "\"dev\":\"8:16\""));
	ck_assert_ptr_nonnull(strstr(s, "\"model\":\"Disk \\\"quoted\\\" \\\\ \\u0009 tab\""));
	ck_assert_ptr_nonnull(strstr(s, "\"osd_id\":3,\"osd_role\":\"block.db\""));
	ck_assert_ptr_nonnull(strstr(s, "\"slaves\":[\"sdc\",\"sdd\"]"));
	ck_assert_ptr_nonnull(strstr(s, "\"read\":{\"ios\":5,\"bytes\":20480,\"iops\":2.5,"));
	ck_assert_ptr_nonnull(strstr(s, "\"sequential\":1,\"forward\":3,\"backward\":0,\"sequential_pct\":25"));
	ck_assert_ptr_nonnull(strstr(s, "\"write\":{\"ios\":0"));
	ck_assert_ptr_nonnull(strstr(s, "\"p50\":null"));           /* empty histogram: null */
	ck_assert_ptr_nonnull(strstr(s, "\"osd_id\":null"));
	ck_assert_ptr_nonnull(strstr(s, "\"comm\":\"bstore_kv_sync\",\"process\":\"ceph-osd\",\"osd_id\":3"));
	ck_assert_ptr_nonnull(strstr(s, "\"fdatasync\":5,\"sync_file_range\":0,\"calls\":5"));
	ck_assert_ptr_nonnull(strstr(s, "\"max_relative_error\":0.015625"));
	ck_assert_ptr_null(strstr(s, "nan"));
	ck_assert_ptr_null(strstr(s, "buckets"));
	free(s);
}
END_TEST

START_TEST(test_json_percentiles_and_buckets)
{
	char *s = render_json(true), want[128];
	unsigned int idx = iop_hist_index(100000, K);

	assert_valid_json(s);
	snprintf(want, sizeof(want), "\"p50\":%llu", (unsigned long long)hist_bucket_mid(idx, K));
	ck_assert_ptr_nonnull(strstr(s, want));
	snprintf(want, sizeof(want), "\"buckets\":[[%u,5]]", idx);
	ck_assert_ptr_nonnull(strstr(s, want));
	ck_assert_ptr_nonnull(strstr(s, "\"buckets\":[]"));
	free(s);
}
END_TEST

START_TEST(test_text_table)
{
	struct iop_interval iv;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	build(&iv);
	ck_assert_int_eq(output_text_write(f, &iv), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "sdb osd.3/block.db"));
	ck_assert_ptr_nonnull(strstr(buf, "loop0"));
	ck_assert_ptr_nonnull(strstr(buf, "idle"));
	ck_assert_ptr_nonnull(strstr(buf, "us"));                   /* ~100 us with a unit */
	ck_assert_ptr_nonnull(strstr(buf, "bstore_kv_sync"));
	ck_assert_ptr_nonnull(strstr(buf, "25.0% sequential"));
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_json_shape);
	tcase_add_test(tc, test_json_percentiles_and_buckets);
	tcase_add_test(tc, test_text_table);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
