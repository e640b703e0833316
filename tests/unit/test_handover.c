/* test_handover.c - a reload's cut between two sets of probes: open request records copied so
 * that each IO is counted once on each side, counters at one instant, reference gaps */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "check_main.h"
#include "handover.h"
#include "fake_probes.h"

#define DISK ((8u << 20) | 16)

/* A side of the cut over fake probes: the device in slot `slot`. */
struct side {
	struct handover_side h;
	uint32_t slot_kdev[4];
	uint64_t *data[4];
};

static void side_init(struct side *s, struct probes *p, uint32_t slot, struct reconcile *refs)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < 4; i++)
		s->data[i] = probes_slot_data(p, i);
	s->slot_kdev[slot] = DISK;
	s->h = (struct handover_side){ p, 4, s->slot_kdev, s->data, refs };
}

static void no_grace(void)
{
	ck_abort_msg("no copy was taken back");
}

START_TEST(test_open_records_are_copied_once)
{
	struct probes *from = fake_probes_new(4, 16, false), *to = fake_probes_new(4, 16, false);
	struct iop_rq_rec *o = fake_probes_set(from, 0xffff888100001000ull), *w;
	struct side ts;
	int i;

	side_init(&ts, to, 2, NULL);
	o[0] = (struct iop_rq_rec){ .key = 0xffff888100001000ull, .q_ns = 4, .d_ns = 5,
				    .bytes = 8192, .grp = IOP_OP_WRITE, .slot = 1, .kdev = DISK,
				    .fp = 77, .start_lo = 0x5eed };
	/* a record the sweep or a completion is ending (no dispatch time): not copied */
	fake_probes_set(from, 0xffff888100002000ull)->key = 0xffff888100002000ull;
	ck_assert_int_eq(handover_records(from->recs, from->nrecs, to->recs, to->nrecs, &ts.h,
					  no_grace), 1);
	w = fake_probes_set(to, 0xffff888100001000ull);
	ck_assert_uint_eq(w->key, 0xffff888100001000ull);
	ck_assert_uint_eq(w->d_ns, 5);
	ck_assert_uint_eq(w->q_ns, 4);
	ck_assert_uint_eq(w->bytes, 8192);
	ck_assert_uint_eq(w->grp, IOP_OP_WRITE);
	ck_assert_uint_eq(w->fp, 77);
	ck_assert_uint_eq(w->start_lo, 0x5eed);   /* else every IO handed over looks like another one */
	ck_assert_uint_eq(w->slot, 3);       /* the incoming set's slot of the disk, + 1 */
	/* the original stays: both sets count the IO at the same event */
	ck_assert_uint_eq(o->d_ns, 5);
	/* a request the incoming set has a record of already is left to it */
	ck_assert_int_eq(handover_records(from->recs, from->nrecs, to->recs, to->nrecs, &ts.h,
					  no_grace), 0);
	for (i = 1; i < IOP_WAYS; i++)
		ck_assert_uint_eq(w[i].key, 0);
	fake_probes_free(from);
	fake_probes_free(to);
}
END_TEST

/*
 * A completion as on_rq_complete counts it (bpf/iopulse.bpf.c): a record found takes the IO
 * with its dispatch time (none: counted already); no record, counted without one. The CPU
 * may be taken away between the two (an interrupt): here it is, every time.
 */
static void complete(struct iop_rq_rec *set, uint64_t key, uint64_t *count)
{
	uint64_t d;
	int i;

	for (i = 0; i < IOP_WAYS; i++) {
		if (__atomic_load_n(&set[i].key, __ATOMIC_ACQUIRE) != key)
			continue;
		sched_yield();
		d = __atomic_load_n(&set[i].d_ns, __ATOMIC_ACQUIRE);
		if (!d || !__atomic_compare_exchange_n(&set[i].d_ns, &d, 0, false,
						       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return;
		(*count)++;
		__atomic_store_n(&set[i].key, 0, __ATOMIC_RELEASE);
		return;
	}
	(*count)++;
}

#define NIO 64

struct race {
	struct probes *from, *to;
	uint64_t keys[NIO];           /* in the order the copy meets their records */
	uint64_t by_from[NIO], by_to[NIO];
	bool after[NIO];              /* completed after the copy had returned */
	int go, cut;
};

/* Odd while a completion runs (a BPF program in its RCU read side). */
static unsigned int running;

/* The IOs complete one by one, each running the outgoing set's program, then the incoming's. */
static void *completions(void *arg)
{
	struct race *rc = arg;
	int i;

	__atomic_store_n(&rc->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NIO; i++) {
		__atomic_fetch_add(&running, 1, __ATOMIC_SEQ_CST);
		rc->after[i] = __atomic_load_n(&rc->cut, __ATOMIC_ACQUIRE);
		complete(fake_probes_set(rc->from, rc->keys[i]), rc->keys[i], &rc->by_from[i]);
		complete(fake_probes_set(rc->to, rc->keys[i]), rc->keys[i], &rc->by_to[i]);
		__atomic_fetch_add(&running, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* Waits until the completion running now, if any, is over (a grace period). */
static void completion_over(void)
{
	unsigned int r = __atomic_load_n(&running, __ATOMIC_SEQ_CST);

	while ((r & 1) && __atomic_load_n(&running, __ATOMIC_SEQ_CST) == r)
		sched_yield();
}

/*
 * IOs dispatched before the incoming set came complete while their records are copied: each
 * is counted once by the outgoing set; one completing after the copy (after the cut) once by
 * the incoming set; and no copy outlives its IO (the incoming set's sweep would count it
 * again after the cut). One that completes during the copy may go uncounted by the incoming
 * set: that is before the cut, where the outgoing set's count is the one reported.
 */
START_TEST(test_ios_completing_during_the_copy_count_once_on_each_side)
{
	struct race rc;
	struct side ts;
	pthread_t th;
	uint64_t key;
	size_t j;
	int round, i, later = 0;

	for (round = 0; round < 1000; round++) {
		rc = (struct race){ fake_probes_new(4, 64, false), fake_probes_new(4, 64, false) };
		side_init(&ts, rc.to, 0, NULL);
		for (i = 0; i < NIO; i++) {
			struct iop_rq_rec *set;

			key = 0xffff888100000000ull + (uint64_t)i * 0x140;
			set = fake_probes_set(rc.from, key);
			for (j = 0; set[j].key; j++)
				ck_assert_uint_lt(j, IOP_WAYS - 1);
			set[j] = (struct iop_rq_rec){ .key = key, .d_ns = 1000 + (uint64_t)i,
						      .bytes = 4096, .slot = 1, .kdev = DISK };
		}
		for (i = 0, j = 0; j < rc.from->nrecs; j++)
			if (rc.from->recs[j].key)
				rc.keys[i++] = rc.from->recs[j].key;
		ck_assert_int_eq(pthread_create(&th, NULL, completions, &rc), 0);
		while (!__atomic_load_n(&rc.go, __ATOMIC_ACQUIRE))
			sched_yield();
		ck_assert_int_ge(handover_records(rc.from->recs, rc.from->nrecs, rc.to->recs,
						  rc.to->nrecs, &ts.h, completion_over), 0);
		__atomic_store_n(&rc.cut, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		for (i = 0; i < NIO; i++) {
			ck_assert_uint_eq(rc.by_from[i], 1);
			ck_assert_uint_le(rc.by_to[i], 1);
			if (rc.after[i])
				ck_assert_uint_eq(rc.by_to[i], 1);
			later += rc.after[i];
		}
		for (j = 0; j < rc.to->nrecs; j++)
			ck_assert_uint_eq(rc.to->recs[j].key, 0);
		fake_probes_free(rc.from);
		fake_probes_free(rc.to);
	}
	ck_assert_int_gt(later, 0);
}
END_TEST

/* The incoming set's program of a completion held between the two sets' programs. */
static uint64_t *held_ios, *held_bytes;

static void finish_held(void)
{
	if (held_ios) {
		(*held_ios)++;
		*held_bytes += 4096;
	}
}

START_TEST(test_a_completion_between_the_two_programs_counts_before_the_cut)
{
	struct probes *from = fake_probes_new(4, 0, false), *to = fake_probes_new(4, 0, false);
	uint64_t mine[4 * IOP_C_MAX], theirs[4 * IOP_C_MAX];
	uint64_t *f = probes_slot_data(from, 1), *t = probes_slot_data(to, 0);
	struct side fs, ts;
	bool paused;

	side_init(&fs, from, 1, NULL);
	side_init(&ts, to, 0, NULL);
	/* the outgoing set counted the 100th read; the incoming set's program has yet to run */
	f[IOP_C_IOS + IOP_OP_READ] = 100;
	f[IOP_C_BYTES + IOP_OP_READ] = 100 * 4096;
	t[IOP_C_IOS + IOP_OP_READ] = 9;
	t[IOP_C_BYTES + IOP_OP_READ] = 9 * 4096;
	held_ios = &t[IOP_C_IOS + IOP_OP_READ];
	held_bytes = &t[IOP_C_BYTES + IOP_OP_READ];
	ck_assert_int_eq(handover_counters(&fs.h, &ts.h, mine, theirs, finish_held, &paused), 1);
	ck_assert(paused);
	ck_assert_uint_eq(mine[1 * IOP_C_MAX + IOP_C_IOS + IOP_OP_READ], 100);
	ck_assert_uint_eq(theirs[IOP_C_IOS + IOP_OP_READ], 10);
	ck_assert_uint_eq(theirs[IOP_C_BYTES + IOP_OP_READ], 10 * 4096);
	/* none held: nothing moves */
	held_ios = NULL;
	ck_assert_int_eq(handover_counters(&fs.h, &ts.h, mine, theirs, finish_held, &paused), 0);
	ck_assert_uint_eq(theirs[IOP_C_IOS + IOP_OP_READ], 10);
	/* and without a grace period none is looked for */
	held_ios = &t[IOP_C_IOS + IOP_OP_READ];
	held_bytes = &t[IOP_C_BYTES + IOP_OP_READ];
	f[IOP_C_IOS + IOP_OP_READ]++;
	ck_assert_int_eq(handover_counters(&fs.h, &ts.h, mine, theirs, NULL, &paused), 0);
	ck_assert_uint_eq(theirs[IOP_C_IOS + IOP_OP_READ], 10);
	fake_probes_free(from);
	fake_probes_free(to);
}
END_TEST

/* IO that goes on after the cut, counted by both sets, is not taken for such a completion. */
static uint64_t *both[2];

static void more_io(void)
{
	*both[1] += 5;
	*both[0] += 5;
}

START_TEST(test_io_after_the_cut_stays_after_it)
{
	struct probes *from = fake_probes_new(4, 0, false), *to = fake_probes_new(4, 0, false);
	uint64_t mine[4 * IOP_C_MAX], theirs[4 * IOP_C_MAX];
	struct side fs, ts;
	bool paused;

	side_init(&fs, from, 0, NULL);
	side_init(&ts, to, 3, NULL);
	both[0] = &probes_slot_data(from, 0)[IOP_C_IOS + IOP_OP_WRITE];
	both[1] = &probes_slot_data(to, 3)[IOP_C_IOS + IOP_OP_WRITE];
	*both[0] = 50;
	*both[1] = 7;
	ck_assert_int_eq(handover_counters(&fs.h, &ts.h, mine, theirs, more_io, &paused), 0);
	ck_assert_uint_eq(mine[IOP_C_IOS + IOP_OP_WRITE], 50);
	ck_assert_uint_eq(theirs[3 * IOP_C_MAX + IOP_C_IOS + IOP_OP_WRITE], 7);
	fake_probes_free(from);
	fake_probes_free(to);
}
END_TEST

START_TEST(test_the_cut_carries_the_references)
{
	struct probes *from = fake_probes_new(4, 16, false), *to = fake_probes_new(4, 16, true);
	uint64_t mine[4 * IOP_C_MAX], theirs[4 * IOP_C_MAX];
	struct reconcile *rf, *rt;
	struct side fs, ts;
	int64_t ref[2 * IOP_OP_MAX] = { 0 };

	ck_assert_int_eq(reconcile_new(&rf, false), 0);
	ck_assert_int_eq(reconcile_new(&rt, true), 0);
	side_init(&fs, from, 0, rf);
	side_init(&ts, to, 1, rt);
	/* 100 reads before the programs came; at the cut the old set counted 80, the new 2 */
	ref[IOP_OP_READ] = 100;
	ck_assert_int_eq(reconcile_set_ref(rf, DISK, ref), 0);
	probes_slot_data(from, 0)[IOP_C_IOS + IOP_OP_READ] = 80;
	probes_slot_data(to, 1)[IOP_C_IOS + IOP_OP_READ] = 2;
	/* the full mode to the completion-only one: no records move */
	ck_assert_int_eq(handover_cut(&fs.h, &ts.h, mine, theirs), 0);
	ck_assert(reconcile_ref(rt, DISK, ref));
	ck_assert_int_eq(ref[IOP_OP_READ], 100 + 80 - 2);
	ck_assert_uint_eq(from->maps + to->maps, 0);
	reconcile_free(rf);
	reconcile_free(rt);
	fake_probes_free(from);
	fake_probes_free(to);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handover");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_open_records_are_copied_once);
	tcase_add_test(tc, test_ios_completing_during_the_copy_count_once_on_each_side);
	tcase_add_test(tc, test_a_completion_between_the_two_programs_counts_before_the_cut);
	tcase_add_test(tc, test_io_after_the_cut_stays_after_it);
	tcase_add_test(tc, test_the_cut_carries_the_references);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
