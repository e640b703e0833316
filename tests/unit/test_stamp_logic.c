/* test_stamp_logic.c - the completion-only mode's decisions: which of a request's own stamps
 * stand, and what one completion event ends */
#include <check.h>

#include "check_main.h"
#include "rq_logic.h"
#include "stamp_logic.h"

#define IO_STAT (1u << 8)     /* __RQF_IO_STAT on 6.18 */
#define NOW 5000000000ull

START_TEST(test_start_kept_where_the_kernel_accounts)
{
	/* 6.11+: the flag says whether the time is this IO's */
	ck_assert_uint_eq(iop_start_stamp(1000, NOW, IO_STAT, IO_STAT, 0), 1000);
	ck_assert_uint_eq(iop_start_stamp(1000, NOW, 0, IO_STAT, 0), 0);
	/* iostats off on 6.13+: a stale time from the request's previous IO is not used */
	ck_assert_uint_eq(iop_start_stamp(NOW - 10, NOW, 1u << 1, IO_STAT, 0), 0);
	/* before 6.11 (bit unknown): the kernel wrote 0 where it kept no time */
	ck_assert_uint_eq(iop_start_stamp(1000, NOW, 0, 0, 0), 1000);
	ck_assert_uint_eq(iop_start_stamp(0, NOW, 0, 0, 0), 0);
	/* a time after now is not one */
	ck_assert_uint_eq(iop_start_stamp(NOW + 1, NOW, IO_STAT, IO_STAT, 0), 0);
}
END_TEST

START_TEST(test_flush_request_time_stands_unaccounted)
{
	/* blk_kick_flush: blk_rq_init zeroes and stamps the flush request, never RQF_IO_STAT */
	ck_assert_uint_eq(iop_start_stamp(1000, NOW, 0, IO_STAT, 1), 1000);
	ck_assert_uint_eq(iop_start_stamp(0, NOW, 0, IO_STAT, 1), 0);
}
END_TEST

START_TEST(test_dispatch_stamp)
{
	ck_assert_int_eq(iop_dispatch_stamp(1000, 1500, NOW), IOP_DS_OK);
	/* blk-stat off: blk_mq_start_request did not stamp, set-up zeroed it */
	ck_assert_int_eq(iop_dispatch_stamp(1000, 0, NOW), IOP_DS_NONE);
	/* one plug's cached clock for set-up and dispatch */
	ck_assert_int_eq(iop_dispatch_stamp(1000, 1000, NOW), IOP_DS_CACHED);
	/* another task's plug clock, read before this request's set-up */
	ck_assert_int_eq(iop_dispatch_stamp(1000, 900, NOW), IOP_DS_CACHED);
	ck_assert_int_eq(iop_dispatch_stamp(1000, NOW + 1, NOW), IOP_DS_CACHED);
	ck_assert_int_eq(iop_dispatch_stamp(1000, NOW, NOW), IOP_DS_OK);
}
END_TEST

#define ALL (IOP_CE_DISPATCH | IOP_CE_IO | IOP_CE_OWN_TIME)

START_TEST(test_completion_parts)
{
	/* a whole data request, read or write */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_READ, 0, 4096, 4096, 0, 1), ALL);
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 0, 4096, 4096, 0, 1), ALL);
	/* a FUA write the device does itself: no flush sequence */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 0, 4096, 4096, 1, 1), ALL);
	/* partial completion: bytes only */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_READ, 0, 512, 4096, 0, 1), 0);
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 1, 512, 4096, 1, 1), 0);
	/* the flush machinery's flush request */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_FLUSH, 1, 0, 0, 0, 1), ALL);
	/* data part of a PREFLUSH/FUA sequence, then its end with no bytes left */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 1, 4096, 4096, 1, 1),
			  IOP_CE_DISPATCH);
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 0, 0, 0, 1, 1),
			  IOP_CE_IO | IOP_CE_OWN_TIME);
	/* an empty PREFLUSH (fdatasync on a raw device): never dispatched itself */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 0, 0, 0, 1, 0), IOP_CE_IO);
	/* a request without data and without flush flags (a zone reset): dispatched as any */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_WRITE, 0, 0, 0, 0, 1), ALL);
	/* a discard */
	ck_assert_uint_eq(iop_completion_parts(IOP_OP_DISCARD, 0, 1 << 20, 1 << 20, 0, 1), ALL);
}
END_TEST

START_TEST(test_seek_classes)
{
	unsigned long long d = 99;

	ck_assert_uint_eq(iop_seek_class(2048, 0, &d), 0);
	ck_assert_uint_eq(d, 0);
	ck_assert_uint_eq(iop_seek_class(2048, 2048, &d), 1);
	ck_assert_uint_eq(d, 0);
	ck_assert_uint_eq(iop_seek_class(4096, 2048, &d), 2);
	ck_assert_uint_eq(d, 2048);
	ck_assert_uint_eq(iop_seek_class(8, 2048, &d), 3);
	ck_assert_uint_eq(d, 2040);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stamp_logic");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_start_kept_where_the_kernel_accounts);
	tcase_add_test(tc, test_flush_request_time_stands_unaccounted);
	tcase_add_test(tc, test_dispatch_stamp);
	tcase_add_test(tc, test_completion_parts);
	tcase_add_test(tc, test_seek_classes);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
