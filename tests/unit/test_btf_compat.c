/* test_btf_compat.c - request flag bits found in named and anonymous BTF enums, struct members,
 * preemptible tracepoints, features forced and hidden */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include <bpf/btf.h>

#include "collect/btf_compat.h"
#include "check_main.h"

/* BTF holding one enum of the request flags, named or not (6.11-6.13 had it anonymous) */
static struct btf *rqf_btf(const char *enum_name)
{
	struct btf *btf = btf__new_empty();

	ck_assert_ptr_nonnull(btf);
	ck_assert_int_gt(btf__add_int(btf, "int", 4, BTF_INT_SIGNED), 0);
	ck_assert_int_gt(btf__add_enum(btf, enum_name, 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_STARTED", 0), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_FLUSH_SEQ", 1), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_MIXED_MERGE", 2), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_DONTPREP", 3), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_SCHED_TAGS", 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__RQF_IO_STAT", 7), 0);
	return btf;
}

START_TEST(anonymous_enum)
{
	struct btf *btf = rqf_btf(NULL);

	/* bit 4 is SCHED_TAGS here, not FLUSH_SEQ: the old fallback would be wrong */
	ck_assert_int_eq(btf_compat_enumerator(btf, "__RQF_FLUSH_SEQ"), 1);
	ck_assert_int_eq(btf_compat_enumerator(btf, "__RQF_IO_STAT"), 7);
	btf__free(btf);
}
END_TEST

START_TEST(named_enum)
{
	struct btf *btf = rqf_btf("rqf_flags");

	ck_assert_int_eq(btf_compat_enumerator(btf, "__RQF_FLUSH_SEQ"), 1);
	ck_assert_int_eq(btf_compat_enumerator(btf, "__RQF_SCHED_TAGS"), 4);
	btf__free(btf);
}
END_TEST

START_TEST(defines_only)
{
	struct btf *btf = btf__new_empty();

	/* before 6.11 the bits are #defines: nothing in BTF, the caller keeps 1 << 4 */
	ck_assert_int_gt(btf__add_enum(btf, "req_flag_bits", 4), 0);
	ck_assert_int_eq(btf__add_enum_value(btf, "__REQ_FUA", 12), 0);
	ck_assert_int_eq(btf_compat_enumerator(btf, "__RQF_FLUSH_SEQ"), -ENOENT);
	ck_assert_int_eq(btf_compat_enumerator(btf, "__REQ_FUA"), 12);
	btf__free(btf);
}
END_TEST

START_TEST(struct_member)
{
	struct btf *btf = btf__new_empty();
	int u64 = btf__add_int(btf, "u64", 8, 0);

	/* 6.9+: struct blk_plug caches the clock in cur_ktime */
	ck_assert_int_gt(u64, 0);
	ck_assert_int_gt(btf__add_struct(btf, "blk_plug", 16), 0);
	ck_assert_int_eq(btf__add_field(btf, "nr_ios", u64, 0, 0), 0);
	ck_assert_int_eq(btf__add_field(btf, "cur_ktime", u64, 64, 0), 0);
	ck_assert(btf_compat_has_member(btf, "blk_plug", "cur_ktime"));
	ck_assert(!btf_compat_has_member(btf, "blk_plug", "cached_rq"));
	ck_assert(!btf_compat_has_member(btf, "request", "cur_ktime"));
	btf__free(btf);
}
END_TEST

START_TEST(preemptible_tracepoints)
{
	struct btf *old = btf__new_empty(), *new = btf__new_empty();
	int u64a = btf__add_int(old, "unsigned long", 8, 0);
	int u64b = btf__add_int(new, "unsigned long", 8, 0);

	/* kernel/tracepoint.c: 6.18 keeps an RCU state only; 7.0 adds its SRCU state */
	ck_assert_int_gt(btf__add_struct(old, "tp_transition_snapshot", 16), 0);
	ck_assert_int_eq(btf__add_field(old, "rcu", u64a, 0, 0), 0);
	ck_assert_int_eq(btf__add_field(old, "ongoing", u64a, 64, 0), 0);
	ck_assert_int_gt(btf__add_struct(new, "tp_transition_snapshot", 24), 0);
	ck_assert_int_eq(btf__add_field(new, "rcu", u64b, 0, 0), 0);
	ck_assert_int_eq(btf__add_field(new, "srcu_gp", u64b, 64, 0), 0);
	ck_assert_int_eq(btf__add_field(new, "ongoing", u64b, 128, 0), 0);
	ck_assert(!btf_compat_tp_preemptible(old));
	ck_assert(btf_compat_tp_preemptible(new));
	btf__free(old);
	btf__free(new);
}
END_TEST

/* The spares can be run on any kernel (forced), and left out where they would run (hidden). */
START_TEST(force_and_hide)
{
	struct btf_compat c = { 0 };
	char err[256] = "";

	unsetenv(BTF_COMPAT_HIDE_ENV);
	setenv(BTF_COMPAT_FORCE_ENV, "tp_preemptible", 1);
	ck_assert_int_eq(btf_compat_env(&c, err, sizeof(err)), 0);
	ck_assert(c.tp_preemptible);
	setenv(BTF_COMPAT_HIDE_ENV, "atomics,tp_preemptible", 1);
	ck_assert_int_eq(btf_compat_env(&c, err, sizeof(err)), 0);
	ck_assert(!c.tp_preemptible);
	unsetenv(BTF_COMPAT_HIDE_ENV);
	setenv(BTF_COMPAT_FORCE_ENV, "tp_preemptible,atomics", 1);
	ck_assert_int_eq(btf_compat_env(&c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, BTF_COMPAT_FORCE_ENV ": unknown feature 'atomics' (known: "
			 "tp_preemptible)");
	unsetenv(BTF_COMPAT_FORCE_ENV);
	c.tp_preemptible = false;
	ck_assert_int_eq(btf_compat_env(&c, err, sizeof(err)), 0);
	ck_assert(!c.tp_preemptible);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("btf_compat");
	TCase *tc = tcase_create("enumerators");

	tcase_add_test(tc, anonymous_enum);
	tcase_add_test(tc, named_enum);
	tcase_add_test(tc, defines_only);
	tcase_add_test(tc, struct_member);
	tcase_add_test(tc, preemptible_tracepoints);
	tcase_add_test(tc, force_and_hide);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
