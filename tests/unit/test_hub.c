/* test_hub.c - Updates from intervals, exact merging, the ring and slow subscribers */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "check_main.h"
#include "pb_check.h"
#include "hist_math.h"
#include "hub.h"
#include "phases.h"
#include "update_pb.h"

#define K 5
#define NB IOP_HIST_NBUCKETS(K)

/* The default server limits with another mark rate. */
static const struct server_limits *lim(unsigned int rate)
{
	static struct server_limits l;

	l = server_limits_default();
	l.mark_rate = rate;
	return &l;
}

static struct iop_device dev;
static struct iop_dev_interval devs[1];
static struct iop_thread_interval thr[1];
static uint64_t counts[NB], fdatasync_counts[NB], fsync_counts[NB];

/* Interval seq: seq reads of seq*1000 ns each and one of 7 ns, over window [seq-1, seq] s. */
static struct iop_bpf_prog_stat progs[2];

static void interval(struct iop_interval *iv, uint64_t seq)
{
	memset(iv, 0, sizeof(*iv));
	memset(devs, 0, sizeof(devs));
	memset(counts, 0, sizeof(counts));
	dev = (struct iop_device){ .dev = makedev(7, 3), .disk = makedev(7, 3), .present = true,
				   .osd_id = -1 };
	strcpy(dev.name, "loop3");
	counts[iop_hist_index(seq * 1000, K)] += seq;
	counts[iop_hist_index(7, K)] += 1;
	devs[0].info = &dev;
	devs[0].cnt[IOP_C_IOS + IOP_OP_READ] = seq + 1;
	devs[0].cnt[IOP_C_BYTES + IOP_OP_READ] = (seq + 1) * 4096;
	devs[0].hist[IOP_H_SERVICE + IOP_OP_READ] =
		(struct iop_hist_view){ .k = K, .nbuckets = NB, .counts = counts };
	iv->seq = seq;
	iv->hist_k = K;
	iv->start_mono_ns = (seq - 1) * 1000000000ull;
	iv->end_mono_ns = seq * 1000000000ull;
	iv->ndevs = 1;
	iv->devs = devs;
	/* two programs, the second skipped seq times by the kernel (recursion on a CPU) */
	memset(progs, 0, sizeof(progs));
	strcpy(progs[0].name, "iop_rq_issue");
	strcpy(progs[1].name, "iop_rq_complete");
	progs[1].missed = seq;
	iv->progs = progs;
	iv->nprogs = 2;
	/* one thread: seq fdatasyncs of seq*1000 ns and one fsync of 7 ns */
	memset(thr, 0, sizeof(thr));
	thr[0].tgid = thr[0].tid = 42;
	strcpy(thr[0].comm, "bstore_kv_sync");
	thr[0].osd_id = -1;
	thr[0].dev = dev.dev;
	thr[0].device = &dev;
	thr[0].calls[IOP_SYNC_FDATASYNC] = seq;
	thr[0].calls[IOP_SYNC_FSYNC] = 1;
	thr[0].kind_lat_sum_ns[IOP_SYNC_FDATASYNC] = seq * seq * 1000;
	thr[0].kind_lat_sum_ns[IOP_SYNC_FSYNC] = 7;
	thr[0].lat_sum_ns = seq * seq * 1000 + 7;
	thr[0].lat = devs[0].hist[IOP_H_SERVICE + IOP_OP_READ];
	for (int kd = 0; kd < IOP_SYNC_MAX; kd++)
		thr[0].kind_lat[kd] = (struct iop_hist_view){ .k = K, .nbuckets = NB };
	thr[0].kind_lat[IOP_SYNC_FDATASYNC].counts = fdatasync_counts;
	thr[0].kind_lat[IOP_SYNC_FSYNC].counts = fsync_counts;
	memset(fdatasync_counts, 0, sizeof(fdatasync_counts));
	memset(fsync_counts, 0, sizeof(fsync_counts));
	fdatasync_counts[iop_hist_index(seq * 1000, K)] = seq;
	fsync_counts[iop_hist_index(7, K)] = 1;
	iv->nthreads = 1;
	iv->threads = thr;
}

static pb_update *unpack(const struct hub_msg *m)
{
	pb_update *u = iopulse__v1__update__unpack(NULL, m->len, m->buf);

	ck_assert_ptr_nonnull(u);
	return u;
}

static uint8_t *subscribe_req(unsigned int multiple, size_t *len)
{
	Iopulse__V1__SubscribeRequest q = IOPULSE__V1__SUBSCRIBE_REQUEST__INIT;

	q.interval_multiple = multiple;
	return pb_pack_alloc(&q.base, len);
}

START_TEST(test_merge_is_exact)
{
	struct iop_interval iv;
	pb_update *acc = NULL, *u;
	const Iopulse__V1__Histogram *h;
	uint64_t seq;
	size_t i;

	for (seq = 1; seq <= 4; seq++) {
		interval(&iv, seq);
		u = update_from_interval(&iv);
		ck_assert_ptr_nonnull(u);
		if (!acc)
			acc = u;
		else {
			ck_assert_int_eq(update_merge_into(acc, u, NULL), 0);
			update_free(u);
		}
	}
	ck_assert_uint_eq(acc->merged, 4);
	ck_assert_uint_eq(acc->first_seq, 1);
	ck_assert_uint_eq(acc->seq, 4);
	ck_assert_uint_eq(acc->end_monotonic_ns - acc->start_monotonic_ns, 4000000000ull);
	ck_assert_uint_eq(acc->n_devices, 1);
	ck_assert_uint_eq(acc->devices[0]->read->ios, 2 + 3 + 4 + 5);
	ck_assert_uint_eq(acc->drops->program_skips, 1 + 2 + 3 + 4);
	ck_assert_uint_eq(acc->devices[0]->read->bytes, 14 * 4096);
	h = acc->devices[0]->read->service_ns;
	ck_assert_uint_eq(hist_total(h), 1 + 2 + 3 + 4 + 4);
	for (i = 1; i < h->n_index; i++)
		ck_assert_uint_lt(h->index[i - 1], h->index[i]);      /* sorted, no duplicates */
	ck_assert_uint_eq(h->index[0], iop_hist_index(7, K));
	ck_assert_uint_eq(h->count[0], 4);
	ck_assert_ptr_null(acc->devices[0]->write->service_ns);  /* empty travels as absent */
	/* the thread: each call kind merged apart, and all kinds together */
	ck_assert_uint_eq(acc->n_threads, 1);
	ck_assert_uint_eq(acc->threads[0]->fdatasync, 1 + 2 + 3 + 4);
	ck_assert_uint_eq(acc->threads[0]->fsync, 4);
	ck_assert_uint_eq(acc->threads[0]->fdatasync_latency->sum_ns, (1 + 4 + 9 + 16) * 1000);
	ck_assert_uint_eq(hist_total(acc->threads[0]->fdatasync_latency->histogram_ns), 10);
	ck_assert_uint_eq(acc->threads[0]->fsync_latency->sum_ns, 4 * 7);
	ck_assert_uint_eq(hist_total(acc->threads[0]->fsync_latency->histogram_ns), 4);
	ck_assert_uint_eq(acc->threads[0]->fsync_latency->histogram_ns->n_index, 1);
	ck_assert_uint_eq(acc->threads[0]->sync_file_range_latency->sum_ns, 0);
	ck_assert_ptr_null(acc->threads[0]->sync_file_range_latency->histogram_ns);
	ck_assert_uint_eq(acc->threads[0]->latency_sum_ns, 30 * 1000 + 4 * 7);
	ck_assert_uint_eq(hist_total(acc->threads[0]->latency_ns), 14);
	update_free(acc);
}
END_TEST

START_TEST(test_device_filter)
{
	struct iop_interval iv;
	char *names[] = { "sda" };
	struct update_filter f = { .devices = names, .ndevices = 1 };
	pb_update *u, *c;

	interval(&iv, 1);
	u = update_from_interval(&iv);
	c = update_copy(u, &f);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->n_devices, 0);
	ck_assert_uint_eq(c->merged, 1);
	update_free(c);
	update_free(u);
}
END_TEST

/* A subscriber that stops taking Updates gets the missed intervals merged; with a ring of 3
 * intervals, the ones that fall out are carried for it: no count is lost. */
START_TEST(test_slow_subscriber_loses_nothing)
{
	struct hub *h;
	struct hub_sub *fast, *slow;
	struct hub_msg *m;
	struct iop_interval iv;
	char err[256];
	uint64_t seq, fast_ios = 0;
	uint8_t *req;
	size_t len;
	pb_update *u;

	ck_assert_int_eq(hub_new(&h, 1000, 2000, lim(20)), 0);   /* ring: 3 intervals */
	interval(&iv, 1);
	ck_assert_int_eq(hub_publish(h, &iv), 0);
	req = subscribe_req(1, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &fast, err, sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &slow, err, sizeof(err)), 0);
	free(req);
	ck_assert_ptr_null(hub_next(h, fast));               /* starts with the next interval */
	for (seq = 2; seq <= 9; seq++) {
		interval(&iv, seq);
		ck_assert_int_eq(hub_publish(h, &iv), 0);
		m = hub_next(h, fast);
		ck_assert_ptr_nonnull(m);
		u = unpack(m);
		ck_assert_uint_eq(u->seq, seq);
		ck_assert_uint_eq(u->merged, 1);
		fast_ios += u->devices[0]->read->ios;
		update_free(u);
		hub_msg_unref(m);
	}
	m = hub_next(h, slow);
	ck_assert_ptr_nonnull(m);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 2);
	ck_assert_uint_eq(u->seq, 9);
	ck_assert_uint_eq(u->merged, 8);
	ck_assert_uint_eq(u->devices[0]->read->ios, fast_ios);
	ck_assert_uint_eq(hist_total(u->devices[0]->read->service_ns), 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 8);
	update_free(u);
	hub_msg_unref(m);
	ck_assert_ptr_null(hub_next(h, slow));
	ck_assert_uint_eq(hub_subscriber_count(h), 2);
	hub_unsubscribe(h, fast);
	hub_unsubscribe(h, slow);
	ck_assert_uint_eq(hub_subscriber_count(h), 0);
	hub_free(h);
}
END_TEST

START_TEST(test_bad_requests)
{
	struct hub *h;
	struct hub_sub *s;
	struct iop_interval iv;
	char err[256] = "";
	uint8_t *req;
	size_t len;
	Iopulse__V1__SubscribeRequest q = IOPULSE__V1__SUBSCRIBE_REQUEST__INIT;
	char *names[] = { "nvme9n9" };

	ck_assert_int_eq(hub_new(&h, 1000, 600000, lim(20)), 0);
	interval(&iv, 1);
	ck_assert_int_eq(hub_publish(h, &iv), 0);
	req = subscribe_req(0, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "interval_multiple 0"));
	free(req);
	q.interval_multiple = 1;
	q.replay_seconds = 601;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "replay_seconds 601"));
	free(req);
	q.replay_seconds = 0;
	q.n_devices = 1;
	q.devices = names;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "unknown device 'nvme9n9'"));
	free(req);
	ck_assert_int_eq(hub_subscribe(h, (const uint8_t *)"\xff\xff", 2, "", NULL, &s, err,
				       sizeof(err)),
			 -EINVAL);
	hub_free(h);
}
END_TEST

/* Marks cut before an interval's maps were read travel in that interval's Update, stamped
 * with its end; a mark made after the cut waits for the next edge. The ring keeps its span
 * in time when marks add intervals. */
START_TEST(test_marks_sit_on_the_edge_they_made)
{
	struct hub *h;
	struct hub_msg *m, *snap;
	struct hub_sub *sub;
	struct iop_interval iv;
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	char err[256];
	uint64_t id1, id2, id3, seq;
	struct timespec now;
	uint8_t *req;
	size_t len;
	pb_update *u;

	ck_assert_int_eq(hub_new(&h, 1000, 10000, lim(1000)), 0);
	q.name = "fill";
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(hub_phases(h), req, len, "", &id1, err, sizeof(err)), 0);
	free(req);
	q.end = 1;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(hub_phases(h), req, len, "", &id2, err, sizeof(err)), 0);
	ck_assert_int_eq(phases_reply(hub_phases(h), id2, &m), 0);        /* waits for an edge */
	phases_cut(hub_phases(h));
	q.end = 0;
	free(req);
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(hub_phases(h), req, len, "", &id3, err, sizeof(err)), 0);
	free(req);
	interval(&iv, 1);
	ck_assert_int_eq(hub_publish(h, &iv), 0);
	ck_assert_int_eq(phases_reply(hub_phases(h), id2, &m), 1);
	{
		Iopulse__V1__PhaseMark *pm = iopulse__v1__phase_mark__unpack(NULL, m->len, m->buf);

		ck_assert_ptr_nonnull(pm);
		ck_assert(pm->end);
		ck_assert_uint_eq(pm->begin_id, id1);
		ck_assert_uint_eq(pm->monotonic_ns, iv.end_mono_ns);
		iopulse__v1__phase_mark__free_unpacked(pm, NULL);
	}
	hub_msg_unref(m);
	ck_assert_int_eq(phases_reply(hub_phases(h), id3, &m), 0);        /* not cut yet */
	ck_assert_int_eq(hub_snapshot(h, (const uint8_t *)"", 0, &snap, err, sizeof(err)), 0);
	u = unpack(snap);
	/* the snapshot counts the two marks at the edge, and lists the phase open now */
	ck_assert_uint_eq(u->phase_marks, 2);
	ck_assert_uint_eq(u->n_phases, 1);
	ck_assert_str_eq(u->phases[0]->name, "fill");
	ck_assert(!u->phases[0]->end);
	ck_assert_uint_eq(u->phases[0]->id, id3);
	update_free(u);
	hub_msg_unref(snap);

	/* 30 short intervals in the last 3 s: a 9 s replay still has them all, more than the 11
	 * intervals of 1 s the ring was sized for (the first ends at a mark: an Update of its
	 * own), and sends them one by one as they were published, not merged */
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (seq = 2; seq <= 31; seq++) {
		phases_cut(hub_phases(h));
		interval(&iv, 1);
		iv.seq = seq;
		iv.start_mono_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec -
				   3000000000ull + (seq - 2) * 100000000ull;
		iv.end_mono_ns = iv.start_mono_ns + 100000000ull;
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
	ck_assert_int_eq(phases_reply(hub_phases(h), id3, &m), 1);
	hub_msg_unref(m);
	{
		Iopulse__V1__SubscribeRequest sq = IOPULSE__V1__SUBSCRIBE_REQUEST__INIT;

		sq.interval_multiple = 1;
		sq.replay_seconds = 9;
		req = pb_pack_alloc(&sq.base, &len);
	}
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &sub, err, sizeof(err)), 0);
	free(req);
	m = hub_next(h, sub);            /* interval 2 ends at the mark made before the loop */
	u = unpack(m);
	ck_assert_uint_eq(u->merged, 1);
	ck_assert_uint_eq(u->first_seq, 2);
	ck_assert_uint_eq(u->n_phases, 1);
	update_free(u);
	hub_msg_unref(m);
	for (seq = 3; seq <= 31; seq++) {
		m = hub_next(h, sub);
		ck_assert_ptr_nonnull(m);
		u = unpack(m);
		ck_assert_uint_eq(u->merged, 1);
		ck_assert_uint_eq(u->first_seq, seq);
		ck_assert_uint_eq(u->seq, seq);
		ck_assert_uint_eq(u->devices[0]->read->ios, 2);
		update_free(u);
		hub_msg_unref(m);
	}
	ck_assert_ptr_null(hub_next(h, sub));   /* caught up */
	hub_unsubscribe(h, sub);
	hub_free(h);
}
END_TEST

/* Intervals seq first..last of 1 s, the last ending now. */
static void publish_recent(struct hub *h, uint64_t first, uint64_t last)
{
	struct iop_interval iv;
	struct timespec now;
	uint64_t seq, now_ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	for (seq = first; seq <= last; seq++) {
		interval(&iv, seq);
		iv.end_mono_ns = now_ns - (last - seq) * 1000000000ull;
		iv.start_mono_ns = iv.end_mono_ns - 1000000000ull;
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
}

/* A replay goes out at the subscriber's resolution, interval_multiple intervals per Update
 * (not merged into one to catch up, as before); what is published after the subscription
 * and not taken in time is merged as for any subscriber behind. */
START_TEST(test_replay_keeps_the_resolution)
{
	Iopulse__V1__SubscribeRequest q = IOPULSE__V1__SUBSCRIBE_REQUEST__INIT;
	char *only[] = { "loop3" };
	struct hub_sub *one, *two;
	struct hub_msg *m;
	struct hub *h;
	char err[256];
	uint64_t seq;
	uint8_t *req;
	size_t len;
	pb_update *u;

	ck_assert_int_eq(hub_new(&h, 1000, 60000, lim(20)), 0);
	publish_recent(h, 1, 10);
	q.replay_seconds = 30;
	q.interval_multiple = 1;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &one, err, sizeof(err)), 0);
	free(req);
	q.interval_multiple = 2;
	q.devices = only;
	q.n_devices = 1;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &two, err, sizeof(err)), 0);
	free(req);
	for (seq = 1; seq <= 10; seq++) {
		m = hub_next(h, one);
		ck_assert_ptr_nonnull(m);
		u = unpack(m);
		ck_assert_uint_eq(u->seq, seq);
		ck_assert_uint_eq(u->merged, 1);
		ck_assert_uint_eq(u->devices[0]->read->ios, seq + 1);
		update_free(u);
		hub_msg_unref(m);
	}
	for (seq = 2; seq <= 10; seq += 2) {
		m = hub_next(h, two);
		ck_assert_ptr_nonnull(m);
		u = unpack(m);
		ck_assert_uint_eq(u->first_seq, seq - 1);
		ck_assert_uint_eq(u->seq, seq);
		ck_assert_uint_eq(u->merged, 2);
		ck_assert_uint_eq(u->devices[0]->read->ios, seq + seq + 1);
		update_free(u);
		hub_msg_unref(m);
	}
	ck_assert_ptr_null(hub_next(h, one));
	ck_assert_ptr_null(hub_next(h, two));
	/* live from here: three intervals not taken in time come merged, as before */
	publish_recent(h, 11, 13);
	m = hub_next(h, one);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 11);
	ck_assert_uint_eq(u->seq, 13);
	ck_assert_uint_eq(u->merged, 3);
	ck_assert_uint_eq(u->devices[0]->read->ios, 12 + 13 + 14);
	update_free(u);
	hub_msg_unref(m);
	ck_assert_ptr_null(hub_next(h, one));
	hub_unsubscribe(h, one);
	hub_unsubscribe(h, two);
	hub_free(h);
}
END_TEST

/* A subscriber behind by three intervals whose second ends at a mark gets two Updates, one
 * ending at the mark and one after it: a merge never spans a phase edge, also with
 * interval_multiple (the edge delivers early). */
START_TEST(test_merges_stop_at_phase_edges)
{
	struct hub *h;
	struct hub_sub *sub, *ten;
	struct hub_msg *m;
	struct iop_interval iv;
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	char err[256];
	uint64_t id, seq;
	uint8_t *req;
	size_t len;
	pb_update *u;

	ck_assert_int_eq(hub_new(&h, 1000, 60000, lim(20)), 0);
	req = subscribe_req(1, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &sub, err, sizeof(err)), 0);
	free(req);
	req = subscribe_req(10, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &ten, err, sizeof(err)), 0);
	free(req);
	q.name = "edge";
	req = pb_pack_alloc(&q.base, &len);
	for (seq = 1; seq <= 3; seq++) {
		if (seq == 2) {
			ck_assert_int_eq(phases_submit(hub_phases(h), req, len, "", &id, err,
						       sizeof(err)), 0);
			phases_cut(hub_phases(h));
		}
		interval(&iv, seq);
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
	free(req);
	m = hub_next(h, sub);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 1);
	ck_assert_uint_eq(u->seq, 2);
	ck_assert_uint_eq(u->n_phases, 1);
	ck_assert_uint_eq(u->end_monotonic_ns, u->phases[0]->monotonic_ns);
	update_free(u);
	hub_msg_unref(m);
	m = hub_next(h, sub);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 3);
	ck_assert_uint_eq(u->seq, 3);
	update_free(u);
	hub_msg_unref(m);
	ck_assert_ptr_null(hub_next(h, sub));
	m = hub_next(h, ten);            /* 3 of 10 intervals, but an edge is among them */
	u = unpack(m);
	ck_assert_uint_eq(u->seq, 2);
	update_free(u);
	hub_msg_unref(m);
	ck_assert_ptr_null(hub_next(h, ten));   /* then it waits for ten again */
	ck_assert_int_eq(phases_reply(hub_phases(h), id, &m), 1);
	hub_msg_unref(m);
	hub_unsubscribe(h, sub);
	hub_unsubscribe(h, ten);
	hub_free(h);
}
END_TEST

/* A reload that changes the histogram precision: never merged across, the snapshot restarts. */
START_TEST(test_precision_change_is_not_merged)
{
	struct hub *h;
	struct hub_sub *sub;
	struct hub_msg *m;
	struct iop_interval iv;
	char err[256];
	uint8_t *req;
	size_t len;
	pb_update *u;
	uint64_t seq;

	ck_assert_int_eq(hub_new(&h, 1000, 60000, lim(20)), 0);
	req = subscribe_req(1, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &sub, err, sizeof(err)), 0);
	free(req);
	for (seq = 1; seq <= 3; seq++) {
		interval(&iv, seq);
		if (seq == 3) {
			iv.hist_k = 4;   /* the layout the kernel uses after the reload */
			devs[0].hist[IOP_H_SERVICE + IOP_OP_READ].k = 4;
		}
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
	m = hub_next(h, sub);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 1);
	ck_assert_uint_eq(u->seq, 2);
	ck_assert_uint_eq(u->precision, 5);
	update_free(u);
	hub_msg_unref(m);
	m = hub_next(h, sub);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 3);
	ck_assert_uint_eq(u->precision, 4);
	update_free(u);
	hub_msg_unref(m);
	ck_assert_int_eq(hub_snapshot(h, (const uint8_t *)"", 0, &m, err, sizeof(err)), 0);
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 3);
	ck_assert_uint_eq(u->merged, 1);
	update_free(u);
	hub_msg_unref(m);
	hub_unsubscribe(h, sub);
	hub_free(h);
}
END_TEST

/*
 * 301 marks (150 phases begun and ended, one left open) pass through the hub: the Updates carry
 * every mark, the snapshot only their count and the open phase's begin mark, so it stays the
 * same size however many marks are made. A subscriber over server.subscribers is refused.
 */
START_TEST(test_snapshot_counts_marks_and_subscribers_are_bounded)
{
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	struct server_limits l = *lim(1000);
	struct hub_sub *subs[3];
	struct hub_msg *m;
	struct iop_interval iv;
	char err[256];
	uint64_t id, seq, listed = 0;
	uint8_t *req, *sreq;
	size_t len, slen;
	pb_update *u;
	struct hub *h;
	int i;

	l.subscribers = 2;
	ck_assert_int_eq(hub_new(&h, 1000, 600000, &l), 0);
	sreq = subscribe_req(1, &slen);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "", NULL, &subs[0], err, sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "", NULL, &subs[1], err, sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "", NULL, &subs[2], err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "2 streams are open, the most allowed "
				      "(server.subscribers)"));
	hub_unsubscribe(h, subs[1]);
	q.name = "step";
	for (seq = 1; seq <= 302; seq++) {
		if (seq > 1) {
			q.end = seq % 2 == 1;   /* begin, end, begin, ... */
			req = pb_pack_alloc(&q.base, &len);
			ck_assert_int_eq(phases_submit(hub_phases(h), req, len, "", &id, err,
						       sizeof(err)), 0);
			free(req);
			phases_cut(hub_phases(h));
		}
		interval(&iv, seq);
		ck_assert_int_eq(hub_publish(h, &iv), 0);
		while ((m = hub_next(h, subs[0]))) {
			u = unpack(m);
			ck_assert_uint_eq(u->phase_marks, u->n_phases);
			listed += u->n_phases;
			update_free(u);
			hub_msg_unref(m);
		}
	}
	ck_assert_uint_eq(listed, 301);
	ck_assert_int_eq(hub_snapshot(h, (const uint8_t *)"", 0, &m, err, sizeof(err)), 0);
	u = unpack(m);
	ck_assert_uint_eq(u->phase_marks, 301);
	ck_assert_uint_eq(u->n_phases, 1);       /* the phase still open */
	ck_assert(!u->phases[0]->end);
	ck_assert_uint_eq(u->merged, 302);
	update_free(u);
	ck_assert_uint_lt(m->len, 2048);
	hub_msg_unref(m);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "", NULL, &subs[1], err, sizeof(err)), 0);
	ck_assert_uint_gt(hub_ring_bytes(h), 0);
	ck_assert_uint_le(hub_ring_bytes(h), 1u << 20);
	for (i = 0; i < 2; i++)
		hub_unsubscribe(h, subs[i]);
	free(sreq);
	hub_free(h);
}
END_TEST

/* Readers (clients without the right to mark) hold at most a quarter of server.subscribers
 * each, and the last eighth are kept for clients that may mark. */
START_TEST(test_readers_cannot_take_every_stream)
{
	struct server_limits l = *lim(20);
	struct hub_sub *subs[16];
	char err[256];
	uint8_t *sreq;
	size_t slen;
	struct hub *h;
	int i, n = 0;

	l.subscribers = 16;         /* 4 per reader, the last 2 for markers */
	ck_assert_int_eq(hub_new(&h, 1000, 600000, &l), 0);
	sreq = subscribe_req(1, &slen);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(hub_subscribe(h, sreq, slen, NULL, "uid:65534", &subs[n++],
					       err, sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, NULL, "uid:65534", &subs[n], err,
				       sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "uid:65534 holds 4 streams"));
	for (i = 0; i < 10; i++) {        /* other readers: up to 14 of 16 */
		char who[16];

		snprintf(who, sizeof(who), "uid:%d", 1000 + i / 4);
		ck_assert_int_eq(hub_subscribe(h, sreq, slen, NULL, who, &subs[n++], err,
					       sizeof(err)), 0);
	}
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, NULL, "uid:2000", &subs[n], err,
				       sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "are kept for clients with it"));
	/* a client that may mark gets the last two, then nobody */
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "uid:0", "uid:0", &subs[n++], err,
				       sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "uid:0", "uid:0", &subs[n++], err,
				       sizeof(err)), 0);
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, "uid:0", "uid:0", &subs[n], err,
				       sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "the most allowed (server.subscribers)"));
	/* a reader's stream gone: that reader may open one again */
	hub_unsubscribe(h, subs[0]);
	subs[0] = NULL;
	ck_assert_int_eq(hub_subscribe(h, sreq, slen, NULL, "uid:65534", &subs[0], err,
				       sizeof(err)), 0);
	for (i = 0; i < n; i++)
		hub_unsubscribe(h, subs[i]);
	free(sreq);
	hub_free(h);
}
END_TEST

/*
 * A session over 64 characters is refused, and the hub is not left locked (it was, found by
 * fuzz_requests: the next publish or subscribe hung the daemon).
 */
START_TEST(test_long_session_is_refused_without_holding_the_lock)
{
	Iopulse__V1__SubscribeRequest q = IOPULSE__V1__SUBSCRIBE_REQUEST__INIT;
	char session[80], err[256];
	struct hub_sub *sub;
	struct iop_interval iv;
	struct hub *h;
	uint8_t *req;
	size_t len;

	memset(session, 's', 65);
	session[65] = '\0';
	q.interval_multiple = 1;
	q.session = session;
	ck_assert_int_eq(hub_new(&h, 1000, 60000, lim(20)), 0);
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &sub, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "session must be at most 64 characters"));
	free(req);
	interval(&iv, 1);
	ck_assert_int_eq(hub_publish(h, &iv), 0);
	ck_assert_uint_eq(hub_last_seq(h), 1);
	hub_free(h);
}
END_TEST

/*
 * server.ring_mib: once the ring holds its limit, the oldest Updates leave before server.ring
 * has passed, and a subscriber that had not taken them still gets them, merged.
 */
START_TEST(test_ring_is_bounded_in_bytes)
{
	struct server_limits l = *lim(20);
	struct hub_sub *sub;
	struct hub_msg *m;
	struct iop_interval iv;
	char err[256];
	uint64_t seq, per, n;
	uint8_t *req;
	size_t len;
	pb_update *u;
	struct hub *h;

	l.ring_mib = 1;
	ck_assert_int_eq(hub_new(&h, 1000, 100000000ull, &l), 0);   /* time is no limit here */
	req = subscribe_req(1, &len);
	ck_assert_int_eq(hub_subscribe(h, req, len, "", NULL, &sub, err, sizeof(err)), 0);
	free(req);
	for (seq = 1; seq <= 10; seq++) {
		interval(&iv, seq);
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
	per = hub_ring_bytes(h) / 10;
	n = (2u << 20) / per + 1;      /* twice what the ring may hold */
	ck_assert_uint_lt(n, 100000);
	for (; seq <= n; seq++) {
		interval(&iv, seq);
		ck_assert_int_eq(hub_publish(h, &iv), 0);
	}
	ck_assert_uint_le(hub_ring_bytes(h), 1u << 20);
	ck_assert_uint_gt(hub_ring_bytes(h), (1u << 20) - 2 * per);
	m = hub_next(h, sub);            /* the evicted half too, merged: nothing lost */
	u = unpack(m);
	ck_assert_uint_eq(u->first_seq, 1);
	ck_assert_uint_eq(u->seq, n);
	ck_assert_uint_eq(u->merged, n);
	update_free(u);
	hub_msg_unref(m);
	hub_unsubscribe(h, sub);
	hub_free(h);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hub");
	TCase *tc = tcase_create("hub");

	tcase_add_test(tc, test_merge_is_exact);
	tcase_add_test(tc, test_device_filter);
	tcase_add_test(tc, test_slow_subscriber_loses_nothing);
	tcase_add_test(tc, test_replay_keeps_the_resolution);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_marks_sit_on_the_edge_they_made);
	tcase_add_test(tc, test_merges_stop_at_phase_edges);
	tcase_add_test(tc, test_precision_change_is_not_merged);
	tcase_add_test(tc, test_snapshot_counts_marks_and_subscribers_are_bounded);
	tcase_add_test(tc, test_readers_cannot_take_every_stream);
	tcase_add_test(tc, test_ring_is_bounded_in_bytes);
	tcase_add_test(tc, test_long_session_is_refused_without_holding_the_lock);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
