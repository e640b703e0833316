/* test_phases.c - phase marks: begin/end matching, nesting, sessions, the rate, edges */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "phases.h"
#include "update_pb.h"

typedef Iopulse__V1__PhaseMark pb_mark;

static struct phases *p;
static char err[512];

static int mark_as(const char *owner, const char *name, bool end, uint64_t phase_id,
		   const char *session, uint64_t *id)
{
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	uint64_t dummy;
	uint8_t *req;
	size_t len;
	int r;

	q.name = (char *)name;
	q.end = end;
	q.phase_id = phase_id;
	q.session = (char *)session;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_ptr_nonnull(req);
	err[0] = 0;
	r = phases_submit(p, req, len, owner, id ? id : &dummy, err, sizeof(err));
	free(req);
	return r;
}

static int begin_in(const char *name, uint64_t parent_id, const char *session, uint64_t *id)
{
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	uint8_t *req;
	size_t len;
	int r;

	q.name = (char *)name;
	q.parent_id = parent_id;
	q.session = (char *)session;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_ptr_nonnull(req);
	err[0] = 0;
	r = phases_submit(p, req, len, "", id, err, sizeof(err));
	free(req);
	return r;
}

static int mark(const char *name, bool end, uint64_t phase_id, const char *session, uint64_t *id)
{
	return mark_as("", name, end, phase_id, session, id);
}

/* Cut and stamp at mono; returns the marks (caller frees with drop()). */
static pb_mark **edge(uint64_t mono, size_t *n)
{
	pb_mark **v;

	phases_cut(p);
	ck_assert_int_eq(phases_stamp(p, mono, mono + 7, &v, n), 0);
	return v;
}

static void drop(pb_mark **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		iopulse__v1__phase_mark__free_unpacked(v[i], NULL);
	free(v);
}

static struct server_limits limits(unsigned int rate)
{
	struct server_limits l = server_limits_default();

	l.mark_rate = rate;
	return l;
}

static void setup(void)
{
	struct server_limits l = limits(1000);

	ck_assert_int_eq(phases_new(&p, &l), 0);
}

static void teardown(void)
{
	p = phases_free(p);
}

START_TEST(test_nesting_and_matching)
{
	uint64_t outer, inner, other, end;
	pb_mark **v, **open;
	size_t n, nopen;

	ck_assert_int_eq(mark("run", false, 0, "s1", &outer), 0);
	ck_assert_int_eq(mark("job", false, 0, "s1", &inner), 0);
	ck_assert_int_eq(mark("job", false, 0, "s2", &other), 0);
	/* by name: the latest open one of this session */
	ck_assert_int_eq(mark("job", true, 0, "s1", &end), 0);
	v = edge(1000, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(v[0]->parent_id, 0);
	ck_assert_uint_eq(v[1]->parent_id, outer);      /* nested in run */
	ck_assert_uint_eq(v[2]->parent_id, 0);          /* another session */
	ck_assert(v[3]->end);
	ck_assert_uint_eq(v[3]->begin_id, inner);
	ck_assert_str_eq(v[3]->session, "s1");
	ck_assert_uint_eq(v[3]->monotonic_ns, 1000);
	ck_assert_uint_eq(v[3]->realtime_ns, 1007);
	drop(v, n);
	ck_assert_int_eq(phases_open(p, &open, &nopen), 0);
	ck_assert_uint_eq(nopen, 2);
	ck_assert_uint_eq(open[0]->id, outer);
	ck_assert_uint_eq(open[0]->monotonic_ns, 1000);  /* stamped with its edge */
	ck_assert_uint_eq(open[1]->id, other);
	drop(open, nopen);
	/* by id, with the name left out: the mark takes the begin's name */
	ck_assert_int_eq(mark("", true, other, "", &end), 0);
	v = edge(2000, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0]->name, "job");
	ck_assert_uint_eq(v[0]->begin_id, other);
	drop(v, n);
}
END_TEST

/* Jobs that run at once (one stonewall group of fio) are siblings under their group: a begin
 * that names its parent nests there, not in the innermost open phase of the session. */
START_TEST(test_begin_names_its_parent)
{
	uint64_t run, group, a, b, c, other, id;
	pb_mark **v;
	size_t n;

	ck_assert_int_eq(mark("run", false, 0, "s1", &run), 0);
	ck_assert_int_eq(mark("group1", false, 0, "s1", &group), 0);
	ck_assert_int_eq(begin_in("a", group, "s1", &a), 0);
	ck_assert_int_eq(begin_in("b", group, "s1", &b), 0);
	ck_assert_int_eq(begin_in("c", group, "s1", &c), 0);
	ck_assert_int_eq(mark("x", false, 0, "s2", &other), 0);
	/* refused: a parent of another session, a parent that is not open, an end's parent */
	ck_assert_int_eq(begin_in("d", other, "s1", &id), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "parent phase"));
	ck_assert_ptr_nonnull(strstr(err, "another session"));
	ck_assert_int_eq(begin_in("d", 999, "s1", &id), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "parent phase 999 is not open"));
	/* without a parent: the innermost open phase of the session, as before */
	ck_assert_int_eq(mark("e", false, 0, "s1", &id), 0);
	v = edge(1000, &n);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(v[1]->parent_id, run);
	ck_assert_uint_eq(v[2]->parent_id, group);
	ck_assert_uint_eq(v[3]->parent_id, group);      /* not a */
	ck_assert_uint_eq(v[4]->parent_id, group);      /* not b */
	ck_assert_uint_eq(v[5]->parent_id, 0);
	ck_assert_uint_eq(v[6]->parent_id, c);
	drop(v, n);
	/* a parent that ended is not open */
	ck_assert_int_eq(mark("", true, b, "s1", &id), 0);
	ck_assert_int_eq(begin_in("f", b, "s1", &id), -ENOENT);
	v = edge(2000, &n);
	drop(v, n);
}
END_TEST

START_TEST(test_bad_ends)
{
	uint64_t id;

	ck_assert_int_eq(mark("job", true, 0, "", NULL), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "no phase named 'job' is open"));
	ck_assert_int_eq(mark("job", false, 0, "a", &id), 0);
	ck_assert_int_eq(mark("job", true, 0, "b", NULL), -ENOENT);   /* another session's */
	ck_assert_ptr_nonnull(strstr(err, "in session 'b'"));
	ck_assert_int_eq(mark("job", true, id + 5, "", NULL), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "is not open"));
	ck_assert_int_eq(mark("other", true, id, "", NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "is 'job', not 'other'"));
	ck_assert_int_eq(mark("", false, 0, "", NULL), -EINVAL);
	ck_assert_int_eq(mark("a\nb", false, 0, "", NULL), -EINVAL);
	ck_assert_int_eq(mark("x", false, 0, "a-session-name-that-is-much-longer-than-the-"
			      "sixty-four-characters-allowed", NULL), -EINVAL);
	ck_assert_int_eq(mark("job", true, id, "", NULL), 0);
	ck_assert_int_eq(mark("job", true, id, "", NULL), -ENOENT);   /* ended already */
}
END_TEST

/* A session's phase belongs to the client that opened it: another may not end it, neither
 * by a mark nor by its stream of the same session going away. */
START_TEST(test_session_phases_belong_to_their_opener)
{
	uint64_t a;
	pb_mark **v;
	size_t n;

	ck_assert_int_eq(mark_as("uid:0", "fill", false, 0, "rec", &a), 0);
	ck_assert_int_eq(mark_as("uid:65534", "fill", true, 0, "rec", NULL), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "opened by another client"));
	phases_session_gone(p, "rec", "uid:65534");
	v = edge(10, &n);
	ck_assert_uint_eq(n, 1);                  /* only the begin */
	ck_assert(!v[0]->end);
	drop(v, n);
	phases_session_gone(p, "rec", "uid:0");
	v = edge(20, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert(v[0]->end && v[0]->abandoned && v[0]->begin_id == a);
	drop(v, n);
	/* phases without a session stay anyone's to end, as before */
	ck_assert_int_eq(mark_as("uid:0", "free", false, 0, "", NULL), 0);
	ck_assert_int_eq(mark_as("uid:65534", "free", true, 0, "", NULL), 0);
}
END_TEST

START_TEST(test_session_gone_and_stop_end_phases_abandoned)
{
	uint64_t a, b, c;
	pb_mark **v;
	size_t n;

	ck_assert_int_eq(mark("run", false, 0, "rec", &a), 0);
	ck_assert_int_eq(mark("job", false, 0, "rec", &b), 0);
	ck_assert_int_eq(mark("keep", false, 0, "", &c), 0);
	v = edge(10, &n);
	drop(v, n);
	phases_session_gone(p, "rec", "");
	v = edge(20, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert(v[0]->end && v[0]->abandoned && v[0]->begin_id == b);   /* innermost first */
	ck_assert(v[1]->end && v[1]->abandoned && v[1]->begin_id == a);
	ck_assert_uint_eq(v[1]->monotonic_ns, 20);
	drop(v, n);
	phases_close_all(p);
	v = edge(30, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert(v[0]->abandoned && v[0]->begin_id == c);
	drop(v, n);
}
END_TEST

/* A client's mark is answered once its edge is stamped, never before. */
START_TEST(test_reply_after_the_edge)
{
	struct hub_msg *m;
	uint64_t id, late;
	pb_mark **v, *r;
	size_t n;

	ck_assert_int_eq(mark("a", false, 0, "", &id), 0);
	ck_assert_int_eq(phases_reply(p, id, &m), 0);
	phases_cut(p);
	ck_assert_int_eq(mark("b", false, 0, "", &late), 0);          /* after the cut */
	ck_assert_int_eq(phases_reply(p, id, &m), 0);
	ck_assert_int_eq(phases_stamp(p, 5, 6, &v, &n), 0);
	ck_assert_uint_eq(n, 1);
	drop(v, n);
	ck_assert_int_eq(phases_reply(p, id, &m), 1);
	r = iopulse__v1__phase_mark__unpack(NULL, m->len, m->buf);
	ck_assert_uint_eq(r->monotonic_ns, 5);
	ck_assert_uint_eq(r->id, id);
	iopulse__v1__phase_mark__free_unpacked(r, NULL);
	hub_msg_unref(m);
	ck_assert_int_eq(phases_reply(p, id, &m), -ENOENT);          /* taken */
	ck_assert_int_eq(phases_reply(p, late, &m), 0);
	v = edge(9, &n);
	drop(v, n);
	ck_assert_int_eq(phases_reply(p, late, &m), 1);
	hub_msg_unref(m);
}
END_TEST

START_TEST(test_rate_limit)
{
	struct phases *slow;
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	uint8_t *req;
	size_t len;
	uint64_t id;
	struct server_limits l = limits(5);
	int i, ok = 0, r;

	ck_assert_int_eq(phases_new(&slow, &l), 0);
	q.name = "x";
	req = pb_pack_alloc(&q.base, &len);
	for (i = 0; i < 30; i++) {
		r = phases_submit(slow, req, len, "", &id, err, sizeof(err));
		ck_assert(r == 0 || r == -EBUSY);
		ok += r == 0;
	}
	ck_assert_int_ge(ok, 10);          /* a burst of twice the rate */
	ck_assert_int_le(ok, 11);
	ck_assert_ptr_nonnull(strstr(err, "limited to 5 per second (server.mark_rate)"));
	free(req);
	phases_free(slow);
}
END_TEST

/* Each limit refuses with -EBUSY (RESOURCE_EXHAUSTED) and names its config key. */
START_TEST(test_size_label_and_open_limits)
{
	Iopulse__V1__MarkPhaseRequest q = IOPULSE__V1__MARK_PHASE_REQUEST__INIT;
	Iopulse__V1__MarkPhaseRequest__LabelsEntry e[40], *ep[40];
	struct server_limits l = limits(1000);
	struct phases *small;
	char big[600];
	uint8_t *req;
	size_t len;
	uint64_t id;
	int i;

	l.mark_bytes = 512;
	l.mark_labels = 3;
	l.open_phases = 2;
	ck_assert_int_eq(phases_new(&small, &l), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	q.name = "x";
	q.session = big;   /* too long a session, but the size is checked first */
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(small, req, len, "", &id, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "at most 512 (server.mark_bytes)"));
	free(req);
	q.session = "";
	for (i = 0; i < 4; i++) {
		iopulse__v1__mark_phase_request__labels_entry__init(&e[i]);
		e[i].key = "k";
		e[i].value = "v";
		ep[i] = &e[i];
	}
	q.labels = ep;
	q.n_labels = 4;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(small, req, len, "", &id, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "4 labels: at most 3 per mark (server.mark_labels)"));
	free(req);
	q.n_labels = 3;
	req = pb_pack_alloc(&q.base, &len);
	ck_assert_int_eq(phases_submit(small, req, len, "", &id, err, sizeof(err)), 0);
	ck_assert_int_eq(phases_submit(small, req, len, "", &id, err, sizeof(err)), 0);
	ck_assert_int_eq(phases_submit(small, req, len, "", &id, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "2 phases are open already, the most allowed "
				      "(server.open_phases)"));
	free(req);
	phases_free(small);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("phases");
	TCase *tc = tcase_create("phases");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nesting_and_matching);
	tcase_add_test(tc, test_begin_names_its_parent);
	tcase_add_test(tc, test_bad_ends);
	tcase_add_test(tc, test_session_gone_and_stop_end_phases_abandoned);
	tcase_add_test(tc, test_session_phases_belong_to_their_opener);
	tcase_add_test(tc, test_reply_after_the_edge);
	tcase_add_test(tc, test_rate_limit);
	tcase_add_test(tc, test_size_label_and_open_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
