/* test_reconcile.c - the completion-only mode's count of completions the tracepoint did not
 * report, from the gaps to /proc/diskstats at idle moments */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "diskstats.h"
#include "reconcile.h"

#define N (2 * IOP_OP_MAX)

static void gaps(int64_t *g, int64_t r, int64_t w, int64_t rb, int64_t wb)
{
	memset(g, 0, N * sizeof(*g));
	g[IOP_OP_READ] = r;
	g[IOP_OP_WRITE] = w;
	g[IOP_OP_MAX + IOP_OP_READ] = rb;
	g[IOP_OP_MAX + IOP_OP_WRITE] = wb;
}

START_TEST(test_first_idle_moment_is_the_reference)
{
	struct reconcile_gap g = { 0 };
	int64_t gap[N];
	uint64_t add[N];

	/* the daemon started with 1000 reads already in the kernel's counts */
	gaps(gap, 1000, 20, 4096000, 81920);
	reconcile_step(&g, gap, add);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(add[i], 0);
	reconcile_step(&g, gap, add);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(add[i], 0);
}
END_TEST

START_TEST(test_grown_gap_is_counted_once)
{
	struct reconcile_gap g = { 0 };
	int64_t gap[N];
	uint64_t add[N];

	gaps(gap, 1000, 20, 4096000, 81920);
	reconcile_step(&g, gap, add);
	/* 3 reads and 1 write of 4 KiB completed unreported */
	gaps(gap, 1003, 21, 4096000 + 3 * 4096, 81920 + 4096);
	reconcile_step(&g, gap, add);
	ck_assert_uint_eq(add[IOP_OP_READ], 3);
	ck_assert_uint_eq(add[IOP_OP_WRITE], 1);
	ck_assert_uint_eq(add[IOP_OP_MAX + IOP_OP_READ], 3 * 4096);
	ck_assert_uint_eq(add[IOP_OP_MAX + IOP_OP_WRITE], 4096);
	ck_assert_uint_eq(add[IOP_OP_FLUSH], 0);
	/* counted: the gap is back at the reference */
	gaps(gap, 1000, 20, 4096000, 81920);
	reconcile_step(&g, gap, add);
	ck_assert_uint_eq(add[IOP_OP_READ] + add[IOP_OP_WRITE], 0);
}
END_TEST

START_TEST(test_a_flush_counted_before_the_kernel_does_not_count_twice)
{
	struct reconcile_gap g = { 0 };
	int64_t gap[N] = { 0 };
	uint64_t add[N];

	reconcile_step(&g, gap, add);
	/* our flush count ran one ahead at this idle moment, then the kernel counted it */
	gap[IOP_OP_FLUSH] = -1;
	reconcile_step(&g, gap, add);
	gap[IOP_OP_FLUSH] = 0;
	reconcile_step(&g, gap, add);
	ck_assert_uint_eq(add[IOP_OP_FLUSH], 0);
}
END_TEST

START_TEST(test_iostats_off_lowers_the_reference)
{
	struct reconcile_gap g = { 0 };
	int64_t gap[N];
	uint64_t add[N];

	gaps(gap, 0, 0, 0, 0);
	reconcile_step(&g, gap, add);
	/* iostats off: we count 500 writes the kernel does not; still busy between moments */
	gaps(gap, 0, -300, 0, -300 * 4096);
	reconcile_step(&g, gap, add);
	gaps(gap, 0, -500, 0, -500 * 4096);
	reconcile_step(&g, gap, add);
	/* the same lower gap twice: the new reference */
	reconcile_step(&g, gap, add);
	ck_assert_uint_eq(add[IOP_OP_WRITE], 0);
	/* iostats on again, one write unreported */
	gaps(gap, 0, -499, 0, -499 * 4096);
	reconcile_step(&g, gap, add);
	ck_assert_uint_eq(add[IOP_OP_WRITE], 1);
	ck_assert_uint_eq(add[IOP_OP_MAX + IOP_OP_WRITE], 4096);
}
END_TEST

START_TEST(test_parse_line)
{
	struct diskstats_line l;

	ck_assert_int_eq(diskstats_parse_line("   7       3 loop3 100 0 800 5 200 1 1600 9 2 30 40 "
					      "7 0 56 1 12 3\n", &l), 0);
	ck_assert_uint_eq(l.major, 7);
	ck_assert_uint_eq(l.minor, 3);
	ck_assert_uint_eq(l.ios[IOP_OP_READ], 100);
	ck_assert_uint_eq(l.ios[IOP_OP_WRITE], 200);
	ck_assert_uint_eq(l.ios[IOP_OP_DISCARD], 7);
	ck_assert_uint_eq(l.ios[IOP_OP_FLUSH], 12);
	ck_assert_uint_eq(l.sectors[IOP_OP_READ], 800);
	ck_assert_uint_eq(l.sectors[IOP_OP_WRITE], 1600);
	ck_assert_uint_eq(l.sectors[IOP_OP_DISCARD], 56);
	ck_assert_uint_eq(l.in_flight, 2);
	ck_assert_uint_eq(l.completed, 319);
	/* before 4.18: no discard or flush fields */
	ck_assert_int_eq(diskstats_parse_line("8 0 sda 1 0 8 0 2 0 16 0 0 0 0\n", &l), 0);
	ck_assert_uint_eq(l.ios[IOP_OP_FLUSH], 0);
	ck_assert_int_eq(diskstats_parse_line("8 0 sda 1 2\n", &l), -EINVAL);
}
END_TEST

/* One interval: the stamp of a stand-in /proc/diskstats, then what it shows. */
static int run(struct diskstats *ds, struct reconcile *r, struct diskstats_dev *devs, size_t n)
{
	uint64_t at;
	int e = diskstats_stamp(ds, devs, n, &at);

	return e ? e : reconcile_run(r, devs, n);
}

/* A fake /proc/diskstats with loop3 (7:3): reads, read sectors, in flight. */
static void write_stats(const char *path, unsigned reads, unsigned rsect, unsigned inflight)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "   7       2 loop2 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	fprintf(f, "   7       3 loop3 %u 0 %u 1 0 0 0 0 %u 1 1 0 0 0 0 0 0\n", reads, rsect,
		inflight);
	fclose(f);
}

START_TEST(test_run_counts_into_the_slot)
{
	char path[] = "/tmp/iopulse-test-diskstats-XXXXXX";
	uint64_t slot0[IOP_C_MAX] = { 0 };
	struct diskstats_dev devs[2] = { { .kdev = (7u << 20) | 3, .held = true },
					 { .kdev = (7u << 20) | 2, .held = true } };
	struct diskstats *ds;
	struct reconcile *r;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(diskstats_new(&ds, path), 0);
	ck_assert_int_eq(reconcile_new(&r, true), 0);
	/* before the first IO since attach: no slot, nothing counted; the reference */
	write_stats(path, 100, 100 * 8, 0);
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	/* busy: nothing is judged */
	devs[0].data = slot0;
	write_stats(path, 150, 150 * 8, 3);
	slot0[IOP_C_IOS + IOP_OP_READ] = 40;
	slot0[IOP_C_BYTES + IOP_OP_READ] = 40 * 4096;
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	/* idle: 60 reads completed, 2 of them unreported */
	write_stats(path, 160, 160 * 8, 0);
	slot0[IOP_C_IOS + IOP_OP_READ] = 58;
	slot0[IOP_C_BYTES + IOP_OP_READ] = 58 * 4096;
	ck_assert_int_eq(run(ds, r, devs, 2), 2);
	ck_assert_uint_eq(slot0[IOP_C_IOS + IOP_OP_READ], 60);
	ck_assert_uint_eq(slot0[IOP_C_UNSEEN + IOP_OP_READ], 2);
	ck_assert_uint_eq(slot0[IOP_C_BYTES + IOP_OP_READ], 60 * 4096);
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	/* a device no longer listed is forgotten: listed again, it starts over */
	ck_assert_int_eq(run(ds, r, devs + 1, 1), 0);
	slot0[IOP_C_IOS + IOP_OP_READ] = 0;
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	ck_assert_uint_eq(slot0[IOP_C_UNSEEN + IOP_OP_READ], 2);
	/* a first IO made the slot after the list was taken: counted next time, not now */
	devs[0].data = NULL;
	write_stats(path, 161, 161 * 8, 0);
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	devs[0].data = slot0;
	slot0[IOP_C_IOS + IOP_OP_READ] = 1;
	slot0[IOP_C_BYTES + IOP_OP_READ] = 4096;
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	ck_assert_uint_eq(slot0[IOP_C_UNSEEN + IOP_OP_READ], 2);
	/* a device watched for its idle moments only (not held to its line) is not counted */
	devs[0].held = false;
	write_stats(path, 170, 170 * 8, 0);
	ck_assert_int_eq(run(ds, r, devs, 2), 0);
	ck_assert(devs[0].idle);
	ck_assert_uint_eq(slot0[IOP_C_IOS + IOP_OP_READ], 1);
	/* one stamp, two reads */
	ck_assert_uint_eq(diskstats_reads(ds), 2 * 9);
	reconcile_free(r);
	diskstats_free(ds);
	unlink(path);
}
END_TEST

START_TEST(test_references_follow_and_carry_over)
{
	char path[] = "/tmp/iopulse-test-diskstats-XXXXXX";
	uint64_t old[IOP_C_MAX] = { 0 }, nw[IOP_C_MAX] = { 0 };
	struct diskstats_dev dev = { .kdev = (7u << 20) | 3, .slot = 1, .data = old, .held = true };
	struct reconcile_shift shift = { .kdev = dev.kdev };
	struct reconcile *full, *compl;
	struct diskstats *ds;
	int64_t ref[N];
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(diskstats_new(&ds, path), 0);
	ck_assert_int_eq(reconcile_new(&full, false), 0);
	ck_assert_int_eq(reconcile_new(&compl, true), 0);
	ck_assert(!reconcile_ref(full, dev.kdev, ref));
	/* the full mode only follows the gap: 100 reads before attach, 50 seen, 1 missed */
	write_stats(path, 151, 151 * 8, 0);
	old[IOP_C_IOS + IOP_OP_READ] = 50;
	old[IOP_C_BYTES + IOP_OP_READ] = 50 * 4096;
	ck_assert_int_eq(run(ds, full, &dev, 1), 0);
	ck_assert(reconcile_ref(full, dev.kdev, ref));
	ck_assert_int_eq(ref[IOP_OP_READ], 101);
	/* its sweep finds the missed read: the reference follows, nothing is added */
	old[IOP_C_IOS + IOP_OP_READ] = 51;
	old[IOP_C_BYTES + IOP_OP_READ] = 51 * 4096;
	ck_assert_int_eq(run(ds, full, &dev, 1), 0);
	ck_assert(reconcile_ref(full, dev.kdev, ref));
	ck_assert_int_eq(ref[IOP_OP_READ], 100);
	ck_assert_int_eq(ref[IOP_OP_MAX + IOP_OP_READ], 100 * 4096);
	ck_assert_uint_eq(old[IOP_C_UNSEEN + IOP_OP_READ], 0);
	/* a reload into the completion-only mode under IO: at the cut the old counters stood
	 * at 80 reads, the new at 2; 40 more complete, the new program sees 37 of them */
	shift.d[IOP_OP_READ] = 80 - 2;
	shift.d[IOP_OP_MAX + IOP_OP_READ] = (80 - 2) * 4096;
	ck_assert_int_eq(reconcile_carry(full, compl, &shift, 1), 0);
	ck_assert(reconcile_ref(compl, dev.kdev, ref));
	ck_assert_int_eq(ref[IOP_OP_READ], 100 + 80 - 2);
	dev.data = nw;
	nw[IOP_C_IOS + IOP_OP_READ] = 2 + 37;
	nw[IOP_C_BYTES + IOP_OP_READ] = (2 + 37) * 4096;
	write_stats(path, 100 + 80 + 40, (100 + 80 + 40) * 8, 0);
	ck_assert_int_eq(run(ds, compl, &dev, 1), 3);
	ck_assert_uint_eq(nw[IOP_C_IOS + IOP_OP_READ], 42);
	ck_assert_uint_eq(nw[IOP_C_BYTES + IOP_OP_READ], 42 * 4096);
	reconcile_free(full);
	reconcile_free(compl);
	diskstats_free(ds);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reconcile");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_first_idle_moment_is_the_reference);
	tcase_add_test(tc, test_grown_gap_is_counted_once);
	tcase_add_test(tc, test_a_flush_counted_before_the_kernel_does_not_count_twice);
	tcase_add_test(tc, test_iostats_off_lowers_the_reference);
	tcase_add_test(tc, test_parse_line);
	tcase_add_test(tc, test_run_counts_into_the_slot);
	tcase_add_test(tc, test_references_follow_and_carry_over);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
