/* test_stamps.c - the completion-only mode's per-device judgement of the kernel's stamps */
#include <check.h>
#include <string.h>

#include "check_main.h"
#include "stamps.h"

static void ops(uint64_t *cnt, unsigned int op, uint64_t ios, uint64_t untimed, uint64_t unseen)
{
	cnt[IOP_C_IOS + op] = ios;
	cnt[IOP_C_UNTIMED + op] = untimed;
	cnt[IOP_C_UNSEEN + op] = unseen;
}

START_TEST(test_idle_tells_nothing)
{
	uint64_t cnt[IOP_C_MAX] = { 0 };

	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_UNKNOWN);
	/* only completions counted from /proc/diskstats: nothing to judge */
	ops(cnt, IOP_OP_READ, 3, 0, 3);
	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_UNKNOWN);
}
END_TEST

START_TEST(test_iostats_off_is_counts_only)
{
	uint64_t cnt[IOP_C_MAX] = { 0 };

	ops(cnt, IOP_OP_READ, 100, 100, 0);
	ops(cnt, IOP_OP_WRITE, 50, 50, 0);
	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_COUNTS_ONLY);
	/* the flush request keeps its own time whatever iostats says: still counts only */
	ops(cnt, IOP_OP_FLUSH, 10, 0, 0);
	ck_assert_int_eq(stamps_judge(cnt, 10), STAMPS_COUNTS_ONLY);
	/* one unseen read among them changes nothing */
	ops(cnt, IOP_OP_READ, 101, 100, 1);
	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_COUNTS_ONLY);
}
END_TEST

START_TEST(test_no_blk_stat_is_total_only)
{
	uint64_t cnt[IOP_C_MAX] = { 0 };

	ops(cnt, IOP_OP_READ, 100, 0, 0);
	cnt[IOP_C_NOQUEUE + IOP_OP_READ] = 100;
	cnt[IOP_C_NO_DISPATCH_TS] = 100;
	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_TOTAL_ONLY);
	/* some dispatches stamped: the device has stamps */
	ck_assert_int_eq(stamps_judge(cnt, 3), STAMPS_FULL);
}
END_TEST

START_TEST(test_plug_clock_is_not_the_device)
{
	uint64_t cnt[IOP_C_MAX] = { 0 };

	/* every dispatch came from the plug that set the request up (6.9+): the kernel's doing */
	ops(cnt, IOP_OP_WRITE, 100, 0, 0);
	cnt[IOP_C_NOQUEUE + IOP_OP_WRITE] = 100;
	ck_assert_int_eq(stamps_judge(cnt, 0), STAMPS_FULL);
}
END_TEST

START_TEST(test_partly_untimed_is_full)
{
	uint64_t cnt[IOP_C_MAX] = { 0 };

	/* iostats turned on during the interval */
	ops(cnt, IOP_OP_READ, 100, 40, 0);
	ck_assert_int_eq(stamps_judge(cnt, 60), STAMPS_FULL);
}
END_TEST

START_TEST(test_check_follows_changes)
{
	uint64_t off[IOP_C_MAX] = { 0 }, on[IOP_C_MAX] = { 0 }, idle[IOP_C_MAX] = { 0 };
	struct stamps *s;

	ops(off, IOP_OP_READ, 10, 10, 0);
	ops(on, IOP_OP_READ, 10, 0, 0);
	ck_assert_int_eq(stamps_new(&s, 4), 0);
	stamps_check(s, 1, 7u << 20, "loop0", on, 10);
	stamps_check(s, 1, 7u << 20, "loop0", off, 0);
	stamps_check(s, 1, 7u << 20, "loop0", idle, 0);
	stamps_check(s, 1, 7u << 20, "loop0", off, 0);
	stamps_check(s, 1, 7u << 20, "loop0", on, 10);
	/* another device in the slot; a slot out of range is ignored */
	stamps_check(s, 1, (7u << 20) | 1, "loop1", off, 0);
	stamps_check(s, 9, 7u << 20, "loop0", off, 0);
	stamps_free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stamps");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_idle_tells_nothing);
	tcase_add_test(tc, test_iostats_off_is_counts_only);
	tcase_add_test(tc, test_no_blk_stat_is_total_only);
	tcase_add_test(tc, test_plug_clock_is_not_the_device);
	tcase_add_test(tc, test_partly_untimed_is_full);
	tcase_add_test(tc, test_check_follows_changes);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
