/* test_rq_logic.c - per-request decisions of the BPF programs: diskstats op groups, passthrough,
 * when a re-dispatched request proves a lost completion, what spare programs leave to the
 * first and what a chain of them lost */
#include <string.h>
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

/*
 * A chain of 1 + spares programs on one tracepoint, one task (compat.bpf.h 10): skip has bit
 * pos set where the kernel skips program pos. The bio chains decide from the task's mark
 * (iopulse.bpf.c bio_queue_at), the dispatch chain from the request's record (on_rq_issue).
 */
struct chain {
	int spares;
	unsigned long long mark;                    /* the bio chains' task mark */
	int has_rec, published, requeued;           /* the dispatch chain's request record */
	unsigned long long rec_fp;
	unsigned long long first_skips, made_good;  /* recursion_misses of the first, IOP_G_SPARE_* */
};

static int all_skipped(const struct chain *c, unsigned int skip)
{
	return (skip & ((2u << c->spares) - 1)) == (2u << c->spares) - 1;
}

/* One bio event through the chain: how many programs handled it. */
static int bio_event(struct chain *c, unsigned long long key, unsigned int skip)
{
	int pos, handled = 0;

	for (pos = 0; pos <= c->spares; pos++) {
		if (skip & (1u << pos)) {
			c->first_skips += !pos;
			continue;
		}
		if (!iop_mark_done(pos, 1, c->mark, key)) {
			handled++;
			c->made_good += pos > 0;
		}
		c->mark = iop_mark_after(pos, c->spares, key);
	}
	return handled;
}

/* One dispatch of the IO fp through the chain: how many programs recorded it. */
static int rq_event(struct chain *c, unsigned long long fp, unsigned int skip)
{
	int pos, handled = 0;

	for (pos = 0; pos <= c->spares; pos++) {
		if (skip & (1u << pos)) {
			c->first_skips += !pos;
			continue;
		}
		if (pos && iop_spare_dispatch_done(c->has_rec, c->published, c->requeued,
						   c->rec_fp, fp))
			continue;
		handled++;
		c->made_good += pos > 0;
		c->has_rec = c->published = 1;
		c->requeued = 0;
		c->rec_fp = fp;
	}
	return handled;
}

/*
 * Every skip pattern of two bio events in a row in one task, for one and two spares: each
 * event is handled once unless every program was skipped, and the first program's skips less
 * the spares' work is exactly what went unhandled (what drops.missed_events reports). The one
 * event taken wrongly for handled: the same bio key as the task's previous event, whose last
 * spare was skipped (its mark stayed), with the first program skipped this time.
 */
START_TEST(test_bio_chain_handles_each_event_once)
{
	const unsigned long long k1 = iop_bio_key(0x8e41c300u, 2048);
	const unsigned long long keys[2] = { iop_bio_key(0x8e41c300u, 4096), k1 };
	int spares, same;
	unsigned int p, q, n;

	for (spares = 1; spares <= 2; spares++) {
		n = 2u << spares;   /* skip patterns of 1 + spares programs */
		for (same = 0; same < 2; same++) {
			for (p = 0; p < n; p++) {
				for (q = 0; q < n; q++) {
					struct chain c = { .spares = spares };
					int h1, h2, stale, unhandled;

					h1 = bio_event(&c, k1, p);
					stale = c.mark != 0;
					h2 = bio_event(&c, keys[same], q);
					ck_assert_int_eq(h1, !all_skipped(&c, p));
					if (stale)   /* left only when the last spare was skipped */
						ck_assert(p & (1u << spares));
					if (same && stale && (q & 1))
						ck_assert_int_eq(h2, 0);
					else
						ck_assert_int_eq(h2, !all_skipped(&c, q));
					unhandled = !h1 + !h2;
					ck_assert_uint_eq(c.first_skips - c.made_good, unhandled);
				}
			}
		}
	}
}
END_TEST

/* A task with no storage for its mark (its creation failed): every program handles it. */
START_TEST(test_bio_chain_without_a_mark_handles_again)
{
	ck_assert(!iop_mark_done(1, 0, 0, iop_bio_key(1, 2)));
	ck_assert(!iop_mark_done(0, 1, iop_bio_key(1, 2), iop_bio_key(1, 2)));  /* the first: always */
	ck_assert_uint_eq(iop_mark_after(0, 2, 77), 77);
	ck_assert_uint_eq(iop_mark_after(1, 2, 77), 77);
	ck_assert_uint_eq(iop_mark_after(2, 2, 77), 0);   /* the last clears it */
	ck_assert_uint_eq(iop_mark_after(1, 1, 77), 0);
}
END_TEST

/*
 * The dispatch chain over every skip pattern: a new IO in a request whose previous IO
 * completed (record gone), one whose previous IO completed unseen (its record still
 * there), and the same IO dispatched again after a requeue. Recorded once unless every
 * program was skipped; unhandled = the first's skips less the spares' work.
 */
START_TEST(test_dispatch_chain_records_each_dispatch_once)
{
	const unsigned long long a = iop_rq_fingerprint(1000, 8), b = iop_rq_fingerprint(2000, 64);
	int spares, kind;
	unsigned int p, q, n;

	for (spares = 1; spares <= 2; spares++) {
		n = 2u << spares;
		for (kind = 0; kind < 3; kind++) {
			for (p = 0; p < n; p++) {
				for (q = 0; q < n; q++) {
					struct chain c = { .spares = spares };
					int h1, h2;

					h1 = rq_event(&c, a, p);
					if (kind == 0)
						c.has_rec = 0;        /* completed: record freed */
					else if (kind == 2 && c.has_rec)
						c.requeued = 1;       /* requeued */
					h2 = rq_event(&c, kind == 2 ? a : b, q);
					ck_assert_int_eq(h1, !all_skipped(&c, p));
					ck_assert_int_eq(h2, !all_skipped(&c, q));
					ck_assert_uint_eq(c.first_skips - c.made_good, !h1 + !h2);
				}
			}
		}
	}
}
END_TEST

/*
 * Lost events of a chain as reported: the first program's skips less the spares' work, never
 * negative and never below what was reported before (the daemon reports deltas).
 */
START_TEST(test_chain_lost_is_cumulative)
{
	ck_assert_uint_eq(iop_chain_lost(0, 0, 0), 0);
	ck_assert_uint_eq(iop_chain_lost(0, 72, 66), 6);       /* 66 made good, 6 lost */
	ck_assert_uint_eq(iop_chain_lost(6, 80, 74), 6);
	ck_assert_uint_eq(iop_chain_lost(6, 90, 80), 10);
	/* made good read after the misses: a spare's work on a skip not yet counted */
	ck_assert_uint_eq(iop_chain_lost(0, 10, 11), 0);
	/* a skip whose spare ran just after the read: counted, and not taken back */
	ck_assert_uint_eq(iop_chain_lost(0, 11, 10), 1);
	ck_assert_uint_eq(iop_chain_lost(1, 11, 11), 1);
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

/*
 * A model of one bio record set as the programs use it (iopulse.bpf.c put_bio, on_bio_split,
 * find_bio): a write takes the first way free or holding its key, a split moves its parent's
 * record in place, a lookup takes the first way holding its key; writes and moves then free
 * the key's other ways (iop_bio_dups).
 */
struct set_model {
	unsigned long long key[IOP_WAYS], ns[IOP_WAYS];
};

static void model_drop_dups(struct set_model *m, unsigned long long key, int keep)
{
	unsigned int dups = iop_bio_dups(m->key, key, keep);
	int i;

	for (i = 0; i < IOP_WAYS; i++)
		if (dups & (1u << i))
			m->key[i] = 0;
}

static void model_put(struct set_model *m, unsigned long long key, unsigned long long ns)
{
	int i, at = -1, oldest = 0;

	for (i = 0; i < IOP_WAYS && at < 0; i++) {
		if (m->key[i] == 0 || m->key[i] == key)
			at = i;
		else if (m->ns[i] < m->ns[oldest])
			oldest = i;
	}
	if (at < 0)
		at = oldest;
	m->key[at] = key;
	m->ns[at] = ns;
	model_drop_dups(m, key, at);
}

static int model_find(const struct set_model *m, unsigned long long key)
{
	int i;

	for (i = 0; i < IOP_WAYS; i++)
		if (m->key[i] == key)
			return i;
	return -1;
}

/* The split of the parent record at key from to its new start to; the part's word. */
static unsigned long long model_split(struct set_model *m, unsigned long long from,
				      unsigned long long to)
{
	int at = model_find(m, from);
	unsigned long long w = iop_split_word(at >= 0, at >= 0 ? m->ns[at] : 0);

	if (at >= 0) {
		m->key[at] = to;
		model_drop_dups(m, to, at);
	} else {
		model_put(m, to, w);
	}
	return w;
}

START_TEST(test_bio_dups_are_the_other_ways_of_the_key)
{
	const unsigned long long k = iop_bio_key(0x8e41c300u, 128);
	unsigned long long keys[IOP_WAYS] = { k, 7, k, 0 };

	ck_assert_uint_eq(iop_bio_dups(keys, k, 0), 1u << 2);
	ck_assert_uint_eq(iop_bio_dups(keys, k, 2), 1u << 0);
	ck_assert_uint_eq(iop_bio_dups(keys, k, IOP_WAYS), (1u << 0) | (1u << 2));
	ck_assert_uint_eq(iop_bio_dups(keys, 9, IOP_WAYS), 0);
	ck_assert_uint_eq(iop_split_word(1, 12345), 12345);
	ck_assert_uint_eq(iop_split_word(0, 12345), 0);   /* no parent record: no time */
}
END_TEST

/*
 * The case seen on 6.18 (a 64 KiB max_sectors_kb splitting 1-4 MiB writes over sectors that
 * earlier IO had written): a merged bio at the parent's address left a record at one of the
 * parent's later starts, in a lower way than the one the parent's record was written to. The
 * move must not leave two records of that key: the next part, and each after it, would take
 * the stale time (seconds old) and pass the fresh one on as stale.
 */
START_TEST(test_split_never_takes_a_record_left_under_its_key)
{
	const unsigned int p = 0x8e41c300u;
	const unsigned long long stale = 1000, fresh = 90000000000ull;
	struct set_model m = { { 0 }, { 0 } };
	unsigned long long s, w;
	int at;

	/* way 0: left at p's sector 256 by a merged bio; 1, 2: in flight elsewhere */
	m.key[0] = iop_bio_key(p, 256);
	m.ns[0] = stale;
	m.key[1] = iop_bio_key(0x11110000u, 8);
	m.ns[1] = fresh - 10;
	m.key[2] = iop_bio_key(0x22220000u, 8);
	m.ns[2] = fresh - 5;
	model_put(&m, iop_bio_key(p, 0), fresh);   /* way 3: the parent, submitted at 0 */
	for (s = 0; s + 128 < 2048; s += 128) {
		w = model_split(&m, iop_bio_key(p, s), iop_bio_key(p, s + 128));
		ck_assert_uint_eq(w, fresh);
		ck_assert_uint_eq(iop_bio_dups(m.key, iop_bio_key(p, s + 128), IOP_WAYS) &
				  (iop_bio_dups(m.key, iop_bio_key(p, s + 128), IOP_WAYS) - 1), 0);
	}
	at = model_find(&m, iop_bio_key(p, 1920));   /* the parent's own dispatch */
	ck_assert_int_ge(at, 0);
	ck_assert_uint_eq(m.ns[at], fresh);

	/* a write of a key that a lower way holds stale takes that way over: one record */
	memset(&m, 0, sizeof(m));
	m.key[2] = iop_bio_key(p, 64);
	m.ns[2] = stale;
	model_put(&m, iop_bio_key(p, 64), fresh);
	ck_assert_uint_eq(m.ns[model_find(&m, iop_bio_key(p, 64))], fresh);
	ck_assert_uint_eq(iop_bio_dups(m.key, iop_bio_key(p, 64), model_find(&m, iop_bio_key(p, 64))), 0);
}
END_TEST

/*
 * A parent whose record is gone (evicted, its submission not seen) gives its part, and its
 * own new start, a record with no time: a record another bio left under either key is
 * replaced, never taken.
 */
START_TEST(test_split_of_an_unknown_parent_writes_no_time)
{
	const unsigned int p = 0x8e41c300u;
	struct set_model m = { { 0 }, { 0 } };
	unsigned long long w;
	int at;

	m.key[0] = iop_bio_key(p, 128);   /* left behind, stale */
	m.ns[0] = 1000;
	w = model_split(&m, iop_bio_key(p, 0), iop_bio_key(p, 128));
	ck_assert_uint_eq(w, 0);
	at = model_find(&m, iop_bio_key(p, 128));
	ck_assert_int_ge(at, 0);
	ck_assert_uint_eq(m.ns[at], 0);
}
END_TEST

/*
 * The completion chain on one CPU (rq_logic.h iop_spare_completes) over every skip pattern of
 * 1 + spares programs (the kernel skips a program busy in an interrupted context): a whole
 * completion with an open record of its IO is counted once unless every program was
 * skipped; a part, the data part of a flush sequence, or an IO without a record is counted
 * by the first program alone, never by a spare; and the first's skips less the spares' work
 * is exactly what went uncounted (drops.missed_events).
 */
START_TEST(test_completion_chain_counts_each_completion_once)
{
	int spares, shape;
	unsigned int skip, n;

	for (spares = 1; spares <= 2; spares++) {
		n = 2u << spares;
		for (shape = 0; shape < 5; shape++) {
			/*
			 * 0 whole with a record, 1 a part, 2 flush-sequence data, 3 no record,
			 * 4 an undispatched empty PREFLUSH write with its bio's record
			 */
			int whole = shape != 1, seq = shape == 2, has = shape < 3, ns = shape == 4;

			for (skip = 0; skip < n; skip++) {
				int open = has, bio = ns, counted = 0, pos;
				unsigned long long first_skips = 0, made_good = 0;

				for (pos = 0; pos <= spares; pos++) {
					if (skip & (1u << pos)) {
						first_skips += !pos;
						continue;
					}
					if (pos && !iop_spare_completes(whole, seq, has, 0, open, ns, bio))
						continue;
					made_good += pos > 0;
					if (!whole || seq) {
						counted++;      /* bytes counted, the record stays open */
						continue;
					}
					if (has && !open)
						continue;       /* take_ownership failed */
					open = 0;
					bio = 0;                /* the bio's record taken */
					counted++;
				}
				ck_assert_int_le(counted, 1);
				if (shape == 0 || shape == 4)
					ck_assert_int_eq(counted, (skip & (n - 1)) != n - 1);
				else
					ck_assert_int_eq(counted, !(skip & 1));
				ck_assert_uint_eq(first_skips - made_good, !counted);
			}
		}
	}
	/* a record of another IO under the request is never a spare's to complete */
	ck_assert(!iop_spare_completes(1, 0, 1, 1, 1, 0, 0));
	ck_assert(!iop_spare_completes(1, 0, 1, 0, 0, 0, 0));
	ck_assert(iop_spare_completes(1, 0, 1, 0, 1, 0, 0));
	/* nor a request that was dispatched, without a record */
	ck_assert(!iop_spare_completes(1, 0, 0, 0, 0, 0, 1));
}
END_TEST

/*
 * A completion holds its request's record to the IO it completes: the same IO over a requeue
 * or after partial completions (its set-up time is the request's until it is set up again),
 * another IO once the request was set up again (a later set-up time, or an earlier one that
 * wrapped the low 32 bits) or when it ends without ever having been started.
 */
START_TEST(test_completion_tells_a_record_of_another_io)
{
	const unsigned long long t = 1764000000123456789ull;

	ck_assert(!iop_record_of_other_io((unsigned int)t, t, 0, 0));
	ck_assert(iop_record_of_other_io((unsigned int)t, t + 1000, 0, 0));
	ck_assert(iop_record_of_other_io((unsigned int)(t + 1000), t, 0, 0));
	ck_assert(iop_record_of_other_io((unsigned int)t, t + (1ull << 31), 0, 0));
	/* no set-up time kept (0 both): a request ended without a start is not the record's */
	ck_assert(iop_record_of_other_io(0, 0, 1, 0));
	ck_assert(!iop_record_of_other_io(0, 0, 0, 0));
	/* a requeued request is idle again until dispatched: still the record's own IO */
	ck_assert(!iop_record_of_other_io((unsigned int)t, t, 1, 1));
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
	tcase_add_test(tc, test_bio_chain_handles_each_event_once);
	tcase_add_test(tc, test_bio_chain_without_a_mark_handles_again);
	tcase_add_test(tc, test_dispatch_chain_records_each_dispatch_once);
	tcase_add_test(tc, test_chain_lost_is_cumulative);
	tcase_add_test(tc, test_bio_record_keeps_time_and_the_two_flags);
	tcase_add_test(tc, test_bio_key_tells_starts_apart);
	tcase_add_test(tc, test_bio_dups_are_the_other_ways_of_the_key);
	tcase_add_test(tc, test_split_never_takes_a_record_left_under_its_key);
	tcase_add_test(tc, test_split_of_an_unknown_parent_writes_no_time);
	tcase_add_test(tc, test_completion_chain_counts_each_completion_once);
	tcase_add_test(tc, test_completion_tells_a_record_of_another_io);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
