/* test_rq_logic.c - per-request decisions of the BPF programs: diskstats op groups, passthrough,
 * when a re-dispatched request proves a lost completion, and what a spare dispatch program
 * leaves to the first */
#include <check.h>

#include "check_main.h"
#include "rq_logic.h"

/* REQ_OP_* as include/linux/blk_types.h numbers them (6.18, and the older passthrough ops) */
enum {
	OP_READ = 0, OP_WRITE = 1, OP_FLUSH = 2, OP_DISCARD = 3, OP_SECURE_ERASE = 5,
	OP_ZONE_APPEND = 7, OP_WRITE_ZEROES = 9, OP_ZONE_OPEN = 11, OP_ZONE_RESET = 17,
	OP_ZONE_RESET_ALL = 19, OP_SCSI_IN = 32, OP_SCSI_OUT = 33, OP_DRV_IN = 34, OP_DRV_OUT = 35,
};

START_TEST(test_groups_as_diskstats)
{
	ck_assert_int_eq(iop_op_group(OP_READ, 0), IOP_OP_READ);
	ck_assert_int_eq(iop_op_group(OP_WRITE, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_FLUSH, 0), IOP_OP_FLUSH);
	ck_assert_int_eq(iop_op_group(OP_DISCARD, 0), IOP_OP_DISCARD);
	/* op_stat_group: only REQ_OP_DISCARD is a discard; the rest go by direction */
	ck_assert_int_eq(iop_op_group(OP_SECURE_ERASE, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_WRITE_ZEROES, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_ZONE_APPEND, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_ZONE_OPEN, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_ZONE_RESET, 0), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_ZONE_RESET_ALL, 0), IOP_OP_WRITE);
}
END_TEST

START_TEST(test_passthrough_is_not_io)
{
	ck_assert_int_eq(iop_op_group(OP_DRV_IN, 0), -1);
	ck_assert_int_eq(iop_op_group(OP_DRV_OUT, 0), -1);
	ck_assert_int_eq(iop_op_group(OP_SCSI_IN, 0), -1);
	ck_assert_int_eq(iop_op_group(OP_SCSI_OUT, 0), -1);
	ck_assert_int_eq(iop_op_group(255, 0), -1);
}
END_TEST

START_TEST(test_passthrough_the_kernel_accounts_is_io_by_direction)
{
	/* 5.5-5.17, and 6.13+ with iostats_passthrough: diskstats counts it by op_is_write */
	ck_assert_int_eq(iop_op_group(OP_DRV_IN, 1), IOP_OP_READ);
	ck_assert_int_eq(iop_op_group(OP_DRV_OUT, 1), IOP_OP_WRITE);
	ck_assert_int_eq(iop_op_group(OP_SCSI_IN, 1), IOP_OP_READ);
	ck_assert_int_eq(iop_op_group(OP_SCSI_OUT, 1), IOP_OP_WRITE);
	/* the flag says nothing about the others */
	ck_assert_int_eq(iop_op_group(OP_FLUSH, 1), IOP_OP_FLUSH);
	ck_assert_int_eq(iop_op_group(OP_READ, 1), IOP_OP_READ);
	ck_assert(iop_op_passthrough(OP_DRV_IN) && iop_op_passthrough(OP_SCSI_OUT));
	ck_assert(!iop_op_passthrough(OP_ZONE_RESET_ALL) && !iop_op_passthrough(OP_READ));
}
END_TEST

START_TEST(test_stat_bytes_are_whole_sectors)
{
	/* an INQUIRY of 36 bytes adds no sector; a data IO is always whole sectors */
	ck_assert_uint_eq(iop_stat_bytes(36), 0);
	ck_assert_uint_eq(iop_stat_bytes(4096), 4096);
	ck_assert_uint_eq(iop_stat_bytes(1024 + 100), 1024);
}
END_TEST

START_TEST(test_busy_redispatch_is_the_same_io)
{
	/* queue_rq started the request, returned BLK_STS_RESOURCE, the block layer sends it again */
	unsigned long long fp = iop_rq_fingerprint(123456789ull, 2048);

	ck_assert_int_eq(iop_redispatch_kind(0, fp, iop_rq_fingerprint(123456789ull, 2048)),
			 IOP_RD_SAME_IO);
	/* requeued after a partial completion moved its sector */
	ck_assert_int_eq(iop_redispatch_kind(1, fp, iop_rq_fingerprint(123456789ull, 2056)),
			 IOP_RD_SAME_IO);
}
END_TEST

START_TEST(test_new_io_in_a_recycled_request_is_a_lost_completion)
{
	unsigned long long fp = iop_rq_fingerprint(123456789ull, 2048);

	ck_assert_int_eq(iop_redispatch_kind(0, fp, iop_rq_fingerprint(123999999ull, 2048)),
			 IOP_RD_LOST);
	/* iostats off: the set-up time is stale, the sector tells them apart */
	ck_assert_int_eq(iop_redispatch_kind(0, fp, iop_rq_fingerprint(123456789ull, 99)),
			 IOP_RD_LOST);
	ck_assert_int_eq(iop_redispatch_kind(0, iop_rq_fingerprint(0, 0),
					     iop_rq_fingerprint(0, 8)), IOP_RD_LOST);
}
END_TEST

START_TEST(test_spare_dispatch_program_takes_what_the_first_missed)
{
	unsigned long long fp = iop_rq_fingerprint(123456789ull, 2048);
	unsigned long long other = iop_rq_fingerprint(123999999ull, 4096);

	/* the first program recorded this dispatch: nothing left to do */
	ck_assert(iop_spare_dispatch_done(1, 1, 0, fp, fp));
	/* the first missed it: no record, or the request's previous IO still recorded */
	ck_assert(!iop_spare_dispatch_done(0, 0, 0, 0, fp));
	ck_assert(!iop_spare_dispatch_done(1, 1, 0, other, fp));
	/* this IO's record from before its requeue: the re-dispatch is new to it */
	ck_assert(!iop_spare_dispatch_done(1, 1, 1, fp, fp));
	/* a record claimed but not yet published is not a dispatch seen */
	ck_assert(!iop_spare_dispatch_done(1, 0, 0, fp, fp));
}
END_TEST

START_TEST(test_bio_record_keeps_time_and_the_two_flags)
{
	/* 6.18's bits (REQ_PREFLUSH 1 << 18, REQ_FUA 1 << 17) and 4.x's (1 << 13, 1 << 12) */
	const unsigned int bits[][2] = {{1u << 18, 1u << 17}, {1u << 13, 1u << 12}};
	unsigned long long now = 3ull * 24 * 3600 * 1000000000ull + 7, w;
	unsigned int i, opf;

	for (i = 0; i < 2; i++) {
		unsigned int pf = bits[i][0], fua = bits[i][1];

		w = iop_bio_pack(now, 1u | pf | fua | (1u << 11), pf, fua);
		ck_assert_uint_eq(iop_bio_unpack(w, &opf, pf, fua), now);
		ck_assert_uint_eq(opf, pf | fua);      /* the op and other flags are not kept */
		w = iop_bio_pack(now, fua, pf, fua);
		ck_assert_uint_eq(iop_bio_unpack(w, &opf, pf, fua), now);
		ck_assert_uint_eq(opf, fua);
		w = iop_bio_pack(now, 1u, pf, fua);
		ck_assert_uint_eq(iop_bio_unpack(w, &opf, pf, fua), now);
		ck_assert_uint_eq(opf, 0);
	}
	/* a time past 2^62 ns (146 years up) would lose its top bits, never a flag's */
	w = iop_bio_pack(~0ull, 0, 1u << 18, 1u << 17);
	ck_assert_uint_eq(iop_bio_unpack(w, &opf, 1u << 18, 1u << 17), IOP_BIO_NS_MASK);
	ck_assert_uint_eq(opf, 0);
	ck_assert_uint_eq(sizeof(struct iop_bio_rec) * IOP_WAYS, 64);
}
END_TEST

/*
 * A record left behind by a bio that never took it (merged behind another) must not pass for
 * a later bio at the same address: the later one starts elsewhere. A split part's record and
 * its parent's new one differ as their starts do.
 */
START_TEST(test_bio_key_tells_starts_apart)
{
	unsigned int bio = 0x8e41c300u, other = bio + 0x100u;
	unsigned long long s;

	ck_assert_uint_eq(iop_bio_key(bio, 2048), iop_bio_key(bio, 2048));
	for (s = 0; s < 4096; s += 8) {
		ck_assert_uint_ne(iop_bio_key(bio, s), iop_bio_key(bio, s + 8));
		ck_assert_uint_ne(iop_bio_key(bio, s), iop_bio_key(other, s));
		ck_assert_uint_ne(iop_bio_key(bio, s), 0);
	}
	/* the key holds the address's low 32 bits as they are: a different bio never shares it */
	ck_assert_uint_eq(iop_bio_key(bio, 1234) >> 32, bio);
	ck_assert_uint_ne(iop_bio_key(0, 0), 0);   /* 0 is a free record */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rq_logic");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_groups_as_diskstats);
	tcase_add_test(tc, test_passthrough_is_not_io);
	tcase_add_test(tc, test_passthrough_the_kernel_accounts_is_io_by_direction);
	tcase_add_test(tc, test_stat_bytes_are_whole_sectors);
	tcase_add_test(tc, test_busy_redispatch_is_the_same_io);
	tcase_add_test(tc, test_new_io_in_a_recycled_request_is_a_lost_completion);
	tcase_add_test(tc, test_spare_dispatch_program_takes_what_the_first_missed);
	tcase_add_test(tc, test_bio_record_keeps_time_and_the_two_flags);
	tcase_add_test(tc, test_bio_key_tells_starts_apart);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
