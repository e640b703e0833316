/* test_unseen.c - completions the programs did not see, found at idle moments: the full
 * mode's record sweep and the completion-only mode's count, one stamp of /proc/diskstats each */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "unseen.h"
#include "fake_probes.h"

#define LOOP3 ((7u << 20) | 3)

static char path[] = "/tmp/iopulse-test-unseen-XXXXXX";

/* A stand-in /proc/diskstats: loop2, and loop3 with reads, read sectors, in flight. */
static void write_stats(unsigned int reads, unsigned int inflight)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "   7       2 loop2 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	fprintf(f, "   7       3 loop3 %u 0 %u 1 0 0 0 0 %u 1 1 0 0 0 0 0 0\n", reads, reads * 8,
		inflight);
	fclose(f);
}

static void setup(void)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/iopulse-test-unseen-XXXXXX");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An open request record of a 4 KiB read on loop3 (slot 0), dispatched at d. */
static struct iop_rq_rec *open_read(struct probes *p, uint64_t key, uint64_t d)
{
	struct iop_rq_rec *r = fake_probes_set(p, key);

	r->key = key;
	r->d_ns = d;
	r->bytes = 4096;
	r->grp = IOP_OP_READ;
	r->slot = 1;
	r->kdev = LOOP3;
	return r;
}

START_TEST(test_sweep_retires_what_an_idle_stamp_proves_complete)
{
	struct probes *p = fake_probes_new(4, 16, false);
	uint64_t *c = p->data;
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = c, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct iop_rq_rec *lost, *late;
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	/* 10 reads completed, 9 seen: the record of the tenth is still open */
	lost = open_read(p, 0x1000, mono_ns() - 1000000);
	c[IOP_C_IOS + IOP_OP_READ] = 9;
	c[IOP_C_BYTES + IOP_OP_READ] = 9 * 4096;
	write_stats(10, 0);
	/* the first stamp only finds the device idle and its gap moved */
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert(dev.idle);
	ck_assert_uint_eq(lost->key, 0x1000);
	/* the next retires it */
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 1);
	ck_assert_uint_eq(lost->key, 0);
	ck_assert_uint_eq(lost->d_ns, 0);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 10);
	ck_assert_uint_eq(c[IOP_C_UNSEEN + IOP_OP_READ], 1);
	ck_assert_uint_eq(c[IOP_C_BYTES + IOP_OP_READ], 10 * 4096);
	/* busy: a record dispatched now is not judged */
	late = open_read(p, 0x2000, mono_ns());
	write_stats(10, 1);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert(!dev.idle);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_uint_eq(late->key, 0x2000);
	/* the last interval: idle at its stamp, still open after the pause: retired then */
	write_stats(11, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_FINAL), 1);
	ck_assert_uint_eq(late->key, 0);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 11);
	/* one stamp, two reads of /proc/diskstats, per interval; the last one's too */
	ck_assert_uint_eq(unseen_reads(u), 5 * 2);
	ck_assert_uint_eq(p->maps, 0);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

START_TEST(test_a_marks_edge_counts_what_its_own_stamp_proves)
{
	struct probes *p = fake_probes_new(4, 16, false);
	uint64_t *c = p->data;
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = c, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct iop_rq_rec *lost, *busy;
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	write_stats(9, 0);
	c[IOP_C_IOS + IOP_OP_READ] = 9;
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	/* a phase's last read completed unseen; the mark that ends the phase counts it in the
	 * interval it closes, not at the next one (dispatched after the previous stamp) */
	lost = open_read(p, 0x1000, mono_ns());
	write_stats(10, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_MARK), 1);
	ck_assert_uint_eq(lost->key, 0);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 10);
	ck_assert_uint_eq(c[IOP_C_UNSEEN + IOP_OP_READ], 1);
	/* and not again at the next edge */
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 10);
	/* a device with IO in flight at the mark proves nothing: its record stays open */
	busy = open_read(p, 0x2000, mono_ns());
	write_stats(10, 1);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_MARK), 0);
	ck_assert_uint_eq(busy->key, 0x2000);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 10);
	ck_assert_uint_eq(p->maps, 0);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

START_TEST(test_sweep_leaves_a_requeued_request_waiting_for_its_next_dispatch)
{
	struct probes *p = fake_probes_new(4, 16, false);
	uint64_t *c = p->data;
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = c, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct iop_rq_rec *waiting, *lost;
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	/* a requeued read (idle, out of the kernel's in_flight) and a read whose completion
	 * was lost, both dispatched before the device was found idle */
	waiting = open_read(p, 0x1000, mono_ns() - 1000000);
	waiting->requeued = 1;
	lost = open_read(p, 0x2000, mono_ns() - 1000000);
	c[IOP_C_IOS + IOP_OP_READ] = 9;
	write_stats(10, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 1);
	ck_assert_uint_eq(lost->key, 0);
	/* the requeued one completes after its next dispatch: counted then, not here */
	ck_assert_uint_eq(waiting->key, 0x1000);
	ck_assert_uint_ne(waiting->d_ns, 0);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 10);
	ck_assert_uint_eq(c[IOP_C_UNSEEN + IOP_OP_READ], 1);
	/* still waiting at the next idle stamps: still left */
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_uint_eq(waiting->key, 0x1000);
	/* one that waited longer than any requeue does is retired after all */
	waiting->d_ns = mono_ns() - 31ull * 1000000000ull;
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 1);
	ck_assert_uint_eq(waiting->key, 0);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

START_TEST(test_sweep_leaves_a_slot_handed_to_another_device)
{
	struct probes *p = fake_probes_new(4, 16, false);
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = p->data, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct iop_rq_rec *r;
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	r = open_read(p, 0x1000, mono_ns() - 1000000);
	write_stats(10, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	/* slot 0 now serves another disk: the record of loop3 in it is not loop3's to judge */
	slot_kdev[0] = (8u << 20) | 0;
	dev.slot = 0;
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_uint_eq(r->key, 0x1000);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

START_TEST(test_count_adds_a_grown_gap)
{
	struct probes *p = fake_probes_new(4, 0, true);
	uint64_t *c = p->data;
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = c, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	write_stats(100, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);   /* the reference */
	/* 20 reads completed, 18 seen */
	c[IOP_C_IOS + IOP_OP_READ] = 18;
	c[IOP_C_BYTES + IOP_OP_READ] = 18 * 4096;
	write_stats(120, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_FINAL), 2);
	ck_assert_uint_eq(c[IOP_C_IOS + IOP_OP_READ], 20);
	ck_assert_uint_eq(c[IOP_C_UNSEEN + IOP_OP_READ], 2);
	ck_assert_uint_eq(unseen_reads(u), 2 * 2);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

START_TEST(test_records_that_cannot_be_mapped_are_an_error)
{
	struct probes *p = fake_probes_new(4, 0, false);
	struct diskstats_dev dev = { .kdev = LOOP3, .slot = 1, .data = p->data, .held = true };
	uint32_t slot_kdev[4] = { LOOP3 };
	struct unseen *u;

	ck_assert_int_eq(unseen_new(&u, p, 4, path), 0);
	write_stats(10, 0);
	ck_assert_int_eq(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	ck_assert_int_lt(unseen_run(u, &dev, 1, slot_kdev, UNSEEN_TICK), 0);
	unseen_free(u);
	fake_probes_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unseen");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sweep_retires_what_an_idle_stamp_proves_complete);
	tcase_add_test(tc, test_a_marks_edge_counts_what_its_own_stamp_proves);
	tcase_add_test(tc, test_sweep_leaves_a_requeued_request_waiting_for_its_next_dispatch);
	tcase_add_test(tc, test_sweep_leaves_a_slot_handed_to_another_device);
	tcase_add_test(tc, test_count_adds_a_grown_gap);
	tcase_add_test(tc, test_records_that_cannot_be_mapped_are_an_error);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
