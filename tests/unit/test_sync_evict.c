/* test_sync_evict.c - which idle sync-table entries give way when unwatched threads fill it */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "sync_evict.h"

#define NOBODY 65534u

static struct sync_evict_entry *entries(size_t n)
{
	struct sync_evict_entry *e = calloc(n, sizeof(*e));

	ck_assert_ptr_nonnull(e);
	return e;
}

/* Sets entries [from, to) to uid, idle (not kept), their latest calls at base + i. */
static void fill(struct sync_evict_entry *e, size_t from, size_t to, uint32_t uid, uint64_t base)
{
	for (size_t i = from; i < to; i++)
		e[i] = (struct sync_evict_entry){ .uid = uid, .last_ns = base + i };
}

/* How many of the picked positions belong to uid. */
static size_t of_uid(const struct sync_evict_entry *e, const size_t *pick, long n, uint32_t uid)
{
	size_t c = 0;

	for (long i = 0; i < n; i++)
		c += e[pick[i]].uid == uid;
	return c;
}

START_TEST(nothing_below_target)
{
	struct sync_evict_entry *e = entries(10);
	size_t pick[10];

	fill(e, 0, 10, 0, 0);
	ck_assert_int_eq(sync_evict_pick(e, 10, 10, pick), 0);
	ck_assert_int_eq(sync_evict_pick(e, 10, 20, pick), 0);
	free(e);
}
END_TEST

/* The case: 1,100 idle entries of one user and a few of others'. */
START_TEST(one_users_flood_gives_way_first)
{
	size_t n = 1110, pick[1110];
	struct sync_evict_entry *e = entries(n);
	long got;

	fill(e, 0, 5, 0, 0);           /* root's, idle */
	fill(e, 5, 10, 167, 0);        /* ceph's, idle */
	fill(e, 10, n, NOBODY, 0);
	got = sync_evict_pick(e, n, 840, pick);
	ck_assert_int_eq(got, 270);
	ck_assert_uint_eq(of_uid(e, pick, got, NOBODY), 270);
	free(e);
}
END_TEST

/* The largest uid comes down to the next one, then both evenly. */
START_TEST(levelled_across_users)
{
	size_t n = 1000, pick[1000];
	struct sync_evict_entry *e = entries(n);
	long got;

	fill(e, 0, 600, 1000, 0);
	fill(e, 600, 1000, 1001, 0);
	got = sync_evict_pick(e, n, 800, pick);
	ck_assert_int_eq(got, 200);
	ck_assert_uint_eq(of_uid(e, pick, got, 1000), 200);
	got = sync_evict_pick(e, n, 500, pick);
	ck_assert_int_eq(got, 500);
	ck_assert_uint_eq(of_uid(e, pick, got, 1000), 350);
	ck_assert_uint_eq(of_uid(e, pick, got, 1001), 150);
	/* an odd one out goes to the larger (then lower uid) */
	got = sync_evict_pick(e, n, 499, pick);
	ck_assert_int_eq(got, 501);
	ck_assert_uint_eq(of_uid(e, pick, got, 1000), 351);
	free(e);
}
END_TEST

/* Kept entries (watched, or active) never go, even when too few others may. */
START_TEST(kept_entries_stay)
{
	size_t n = 100, pick[100];
	struct sync_evict_entry *e = entries(n);
	long got;

	fill(e, 0, 100, NOBODY, 0);
	for (size_t i = 0; i < 100; i += 2)
		e[i].keep = true;
	got = sync_evict_pick(e, n, 10, pick);
	ck_assert_int_eq(got, 50);
	for (long i = 0; i < got; i++)
		ck_assert(!e[pick[i]].keep);
	free(e);
}
END_TEST

/* A user whose entries are all kept does not shield another's: the next uid gives. */
START_TEST(kept_user_passes_to_the_next)
{
	size_t n = 300, pick[300];
	struct sync_evict_entry *e = entries(n);
	long got;

	fill(e, 0, 200, 167, 0);
	for (size_t i = 0; i < 200; i++)
		e[i].keep = true;
	fill(e, 200, 300, NOBODY, 0);
	got = sync_evict_pick(e, n, 250, pick);
	ck_assert_int_eq(got, 50);
	ck_assert_uint_eq(of_uid(e, pick, got, NOBODY), 50);
	free(e);
}
END_TEST

/* Within a uid, the least recently active go first. */
START_TEST(oldest_first)
{
	size_t n = 10, pick[10];
	struct sync_evict_entry *e = entries(n);
	long got;

	for (size_t i = 0; i < n; i++)
		e[i] = (struct sync_evict_entry){ .uid = 5, .last_ns = 1000 - i * 10 };
	got = sync_evict_pick(e, n, 7, pick);
	ck_assert_int_eq(got, 3);
	for (long i = 0; i < got; i++)
		ck_assert_uint_ge(pick[i], 7);
	free(e);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sync_evict");
	TCase *tc = tcase_create("pick");

	tcase_add_test(tc, nothing_below_target);
	tcase_add_test(tc, one_users_flood_gives_way_first);
	tcase_add_test(tc, levelled_across_users);
	tcase_add_test(tc, kept_entries_stay);
	tcase_add_test(tc, kept_user_passes_to_the_next);
	tcase_add_test(tc, oldest_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
