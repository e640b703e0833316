/* test_thread_fold.c - exited threads fold into totals per name; snapshots fit a byte budget */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "pb_check.h"
#include "thread_fold.h"
#include "update_pb.h"

typedef Iopulse__V1__ThreadSync thread_pb;

/* A histogram of n buckets from first on, each count c. */
static Iopulse__V1__Histogram *hist(uint32_t first, size_t n, uint64_t c)
{
	Iopulse__V1__Histogram *h = malloc(sizeof(*h));
	size_t i;

	iopulse__v1__histogram__init(h);
	h->precision = 5;
	h->n_index = h->n_count = n;
	h->index = malloc(n * sizeof(*h->index));
	h->count = malloc(n * sizeof(*h->count));
	for (i = 0; i < n; i++) {
		h->index[i] = first + (uint32_t)i;
		h->count[i] = c;
	}
	return h;
}

static Iopulse__V1__SyncLatency *sync_latency(Iopulse__V1__Histogram *h, uint64_t sum)
{
	Iopulse__V1__SyncLatency *l = malloc(sizeof(*l));

	iopulse__v1__sync_latency__init(l);
	l->sum_ns = sum;
	l->histogram_ns = h;
	return l;
}

/* Thread tid of pid named comm on device 8:minor: calls fdatasyncs over nb buckets. */
static thread_pb *thread(uint32_t pid, uint32_t tid, const char *comm, uint32_t minor,
			 uint64_t calls, size_t nb)
{
	thread_pb *t = malloc(sizeof(*t));

	iopulse__v1__thread_sync__init(t);
	t->pid = pid;
	t->tid = tid;
	t->comm = strdup(comm);
	t->process = strdup("ceph-osd");
	t->device = strdup(minor ? "sdb" : "sda");
	t->osd_id = 3;
	t->dev_major = 8;
	t->dev_minor = minor;
	t->fdatasync = calls * nb;
	t->latency_sum_ns = 1000 * calls * nb;
	t->latency_ns = hist(100, nb, calls);
	t->fdatasync_latency = sync_latency(hist(100, nb, calls), 1000 * calls * nb);
	t->fsync_latency = sync_latency(NULL, 0);
	t->sync_file_range_latency = sync_latency(NULL, 0);
	return t;
}

static pb_update *update(size_t n)
{
	pb_update *u = malloc(sizeof(*u));

	iopulse__v1__update__init(u);
	u->threads = calloc(n, sizeof(*u->threads));
	return u;
}

static void add(pb_update *u, thread_pb *t)
{
	u->threads[u->n_threads++] = t;
}

struct totals {
	uint64_t calls, sum, hist, kind_hist, threads;
};

/* What u holds for device 8:minor, threads counted as folded ones or 1 each. */
static struct totals totals(const pb_update *u, uint32_t minor)
{
	struct totals s = { 0 };
	size_t i;

	for (i = 0; i < u->n_threads; i++) {
		const thread_pb *t = u->threads[i];

		if (t->dev_minor != minor)
			continue;
		s.calls += t->fdatasync;
		s.sum += t->fdatasync_latency->sum_ns;
		s.hist += hist_total(t->latency_ns);
		s.kind_hist += hist_total(t->fdatasync_latency->histogram_ns);
		s.threads += t->threads_folded ? t->threads_folded : 1;
	}
	return s;
}

static void same_totals(struct totals a, struct totals b)
{
	ck_assert_uint_eq(a.calls, b.calls);
	ck_assert_uint_eq(a.sum, b.sum);
	ck_assert_uint_eq(a.hist, b.hist);
	ck_assert_uint_eq(a.kind_hist, b.kind_hist);
	ck_assert_uint_eq(a.threads, b.threads);
}

/* Odd thread ids have exited. */
static bool even_alive(uint32_t pid, uint32_t tid)
{
	(void)pid;
	return tid % 2 == 0;
}

START_TEST(exited_threads_fold_by_name_and_device)
{
	static const char *const names[] = { "tp_osd_tp", "bstore_kv_sync", "msgr-worker-0" };
	pb_update *u = update(6000);
	struct totals before[2], after;
	size_t i, live = 0, named = 0;
	int r;

	for (i = 0; i < 6000; i++)
		add(u, thread(100, 1000 + (uint32_t)i, names[i % 3], (uint32_t)(i / 3000), 1 + i % 7,
			      1 + i % 5));
	before[0] = totals(u, 0);
	before[1] = totals(u, 1);
	r = thread_fold_exited(u, even_alive);
	ck_assert_int_eq(r, 3000);
	/* the 3000 live ones stay; the others are 3 names x 2 devices */
	ck_assert_uint_eq(u->n_threads, 3000 + 6);
	for (i = 0; i < u->n_threads; i++) {
		const thread_pb *t = u->threads[i];

		if (!t->threads_folded) {
			ck_assert_uint_eq(t->tid % 2, 0);
			live++;
			continue;
		}
		named++;
		ck_assert_uint_eq(t->pid, 0);
		ck_assert_uint_eq(t->tid, 0);
		ck_assert_uint_eq(t->threads_folded, 500);
		ck_assert_int_eq(t->osd_id, 3);
		ck_assert_str_eq(t->process, "ceph-osd");
	}
	ck_assert_uint_eq(live, 3000);
	ck_assert_uint_eq(named, 6);
	same_totals(totals(u, 0), before[0]);
	same_totals(totals(u, 1), before[1]);
	/* folding again changes nothing: the folded entries are not threads */
	ck_assert_int_eq(thread_fold_exited(u, even_alive), 0);
	after = totals(u, 1);
	same_totals(after, before[1]);
	update_free(u);
}
END_TEST

static bool none_alive(uint32_t pid, uint32_t tid)
{
	(void)pid;
	(void)tid;
	return false;
}

START_TEST(names_past_the_bound_fold_into_other_threads)
{
	pb_update *u = update(3000);
	struct totals before;
	char name[16];
	size_t i, other = 0;

	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "worker-%zu", i);   /* a name per thread */
		add(u, thread(7, 10 + (uint32_t)i, name, 0, 2, 3));
	}
	before = totals(u, 0);
	ck_assert_int_eq(thread_fold_exited(u, none_alive), 3000);
	ck_assert_uint_eq(u->n_threads, THREAD_FOLD_NAMES_MAX + 1);
	for (i = 0; i < u->n_threads; i++) {
		const thread_pb *t = u->threads[i];

		if (*t->comm)
			continue;
		other++;
		ck_assert_str_eq(t->process, "");
		ck_assert_int_eq(t->osd_id, -1);
		ck_assert_uint_eq(t->threads_folded, 3000 - THREAD_FOLD_NAMES_MAX);
	}
	ck_assert_uint_eq(other, 1);
	same_totals(totals(u, 0), before);
	update_free(u);
}
END_TEST

/* A thread of a process that is not a Ceph OSD. */
static thread_pb *plain_thread(uint32_t tid, const char *comm, uint64_t calls)
{
	thread_pb *t = thread(9, tid, comm, 0, calls, 1);

	free(t->process);
	t->process = strdup("other");
	t->osd_id = -1;
	return t;
}

/* The named folded entry of comm in u, or NULL. */
static const thread_pb *named_entry(const pb_update *u, const char *comm)
{
	size_t i;

	for (i = 0; i < u->n_threads; i++)
		if (u->threads[i]->threads_folded && !strcmp(u->threads[i]->comm, comm))
			return u->threads[i];
	return NULL;
}

/*
 * The case: exited threads with a name each fill the names; a later name must still
 * get its own totals (the least recently used name gives way), a name used lately keeps its
 * place, and an OSD's name is not pushed out by other processes' names.
 */
START_TEST(least_recently_used_names_give_way)
{
	pb_update *u = update(4000);
	struct totals before;
	char name[16];
	uint32_t tid = 10;
	size_t i;

	add(u, thread(3, tid++, "bstore_kv_final", 0, 4, 1));       /* an OSD's, first of all */
	add(u, plain_thread(tid++, "kept-name", 1));
	for (i = 0; i < THREAD_FOLD_NAMES_MAX + 200; i++) {
		snprintf(name, sizeof(name), "u%05zu", i);
		add(u, plain_thread(tid++, name, 1));
	}
	ck_assert_int_eq(thread_fold_exited(u, none_alive), (int)THREAD_FOLD_NAMES_MAX + 202);
	ck_assert_ptr_nonnull(named_entry(u, "bstore_kv_final"));
	ck_assert_ptr_null(named_entry(u, "kept-name"));   /* the least recently used */
	ck_assert_ptr_nonnull(named_entry(u, "u01223"));

	/* the next fold: kept-name comes back and a late name arrives after many more */
	add(u, plain_thread(tid++, "kept-name", 5));
	ck_assert_int_eq(thread_fold_exited(u, none_alive), 1);
	for (i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "v%05zu", i);
		add(u, plain_thread(tid++, name, 1));
	}
	ck_assert_int_eq(thread_fold_exited(u, none_alive), 600);
	add(u, plain_thread(tid++, "bstore_kv_sync", 50));
	before = totals(u, 0);
	ck_assert_int_eq(thread_fold_exited(u, none_alive), 1);
	same_totals(totals(u, 0), before);
	ck_assert_uint_eq(named_entry(u, "bstore_kv_sync")->fdatasync, 50);
	ck_assert_uint_eq(named_entry(u, "kept-name")->fdatasync, 5);   /* used lately: kept */
	ck_assert_ptr_nonnull(named_entry(u, "bstore_kv_final"));
	ck_assert_ptr_null(named_entry(u, "u00000"));
	/* still one name per place, and one entry for the other threads */
	ck_assert_uint_eq(u->n_threads, THREAD_FOLD_NAMES_MAX + 1);
	update_free(u);
}
END_TEST

START_TEST(a_snapshot_folds_its_least_active_threads_to_fit)
{
	const size_t max = (4u << 20) - (64u << 10);
	pb_update *u = update(20000);
	struct totals before[2];
	size_t i, big = 0;

	/* 20,000 live threads of 40 latency buckets each: about 5 MB packed */
	for (i = 0; i < 20000; i++)
		add(u, thread(9, 100 + (uint32_t)i, "tp_osd_tp", (uint32_t)(i % 2), 1 + i % 50, 40));
	add(u, thread(9, 99, "bstore_kv_sync", 0, 1000, 40));   /* the busiest */
	before[0] = totals(u, 0);
	before[1] = totals(u, 1);
	ck_assert_uint_gt(protobuf_c_message_get_packed_size(&u->base), max);
	ck_assert_int_eq(thread_fold_to_fit(u, max), 0);
	ck_assert_uint_le(protobuf_c_message_get_packed_size(&u->base), max);
	same_totals(totals(u, 0), before[0]);
	same_totals(totals(u, 1), before[1]);
	for (i = 0; i < u->n_threads; i++)
		big += u->threads[i]->tid == 99;
	ck_assert_uint_eq(big, 1);   /* the most active thread keeps its own entry */
	/* too small for even an entry per device */
	ck_assert_int_eq(thread_fold_to_fit(u, 200), -EMSGSIZE);
	ck_assert_uint_eq(u->n_threads, 2);
	same_totals(totals(u, 0), before[0]);
	update_free(u);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("thread_fold");
	TCase *tc = tcase_create("fold");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, exited_threads_fold_by_name_and_device);
	tcase_add_test(tc, names_past_the_bound_fold_into_other_threads);
	tcase_add_test(tc, least_recently_used_names_give_way);
	tcase_add_test(tc, a_snapshot_folds_its_least_active_threads_to_fit);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
