/* phases.c - phase marks: open phases, sessions, the mark rate, and marks waiting for an edge */
#include "phases.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "update_pb.h"

#define NAME_MAX_LEN 128
#define VALUE_MAX_LEN 1024
#define SESSION_MAX_LEN 64

typedef Iopulse__V1__PhaseMark pb_mark;

struct queued {
	pb_mark *pm;
	bool reply;                 /* a client waits for it */
};

struct queue {
	struct queued *v;
	size_t n, cap;
};

struct open_phase {
	pb_mark *begin;             /* own copy, stamped once its edge is taken */
	char owner[PHASES_OWNER_MAX];   /* who opened it (phases_submit) */
};

struct reply {
	uint64_t id;
	struct hub_msg *msg;
};

struct phases {
	pthread_mutex_t lock;
	int efd;
	struct server_limits lim;
	unsigned int rate;
	double tokens;
	uint64_t refill_ns;
	uint64_t next_id;
	struct queue pend, cut;
	struct open_phase *open;
	size_t nopen;
	struct reply *done;
	size_t ndone;
};

static pb_mark *mark_dup(const pb_mark *m)
{
	size_t len;
	uint8_t *buf = pb_pack_alloc(&m->base, &len);
	pb_mark *c;

	if (!buf)
		return NULL;
	c = iopulse__v1__phase_mark__unpack(NULL, len, buf);
	free(buf);
	return c;
}

static void mark_free(pb_mark *m)
{
	if (m)
		iopulse__v1__phase_mark__free_unpacked(m, NULL);
}

int phases_new(struct phases **out, const struct server_limits *lim)
{
	struct phases *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	p->lim = *lim;
	p->rate = lim->mark_rate ? lim->mark_rate : 1;
	p->tokens = 2.0 * p->rate;
	p->refill_ns = iop_clock_ns(CLOCK_MONOTONIC);
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		int r = -errno;

		phases_free(p);
		return r;
	}
	*out = p;
	return 0;
}

static void queue_release(struct queue *q)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		mark_free(q->v[i].pm);
	free(q->v);
	memset(q, 0, sizeof(*q));
}

struct phases *phases_free(struct phases *p)
{
	size_t i;

	if (!p)
		return NULL;
	queue_release(&p->pend);
	queue_release(&p->cut);
	for (i = 0; i < p->nopen; i++)
		mark_free(p->open[i].begin);
	free(p->open);
	for (i = 0; i < p->ndone; i++)
		hub_msg_unref(p->done[i].msg);
	free(p->done);
	if (p->efd >= 0)
		close(p->efd);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return NULL;
}

int phases_fd(const struct phases *p)
{
	return p->efd;
}

void phases_drain_fd(struct phases *p)
{
	uint64_t v;

	if (read(p->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
}

unsigned int phases_rate(const struct phases *p)
{
	return p->rate;
}

static void wake(struct phases *p)
{
	uint64_t one = 1;

	if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("cannot wake the main loop for a phase mark");
}

static int enqueue(struct queue *q, pb_mark *pm, bool reply)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 8;
		struct queued *v = realloc(q->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n].pm = pm;
	q->v[q->n].reply = reply;
	q->n++;
	return 0;
}

/* ------------------------------------------------------------------ requests -- */

static bool printable(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n > max)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int check_request(const struct phases *p, const Iopulse__V1__MarkPhaseRequest *q,
			 char *err, size_t errlen)
{
	size_t i;

	if ((*q->name || !q->end || !q->phase_id) &&
	    (!*q->name || !printable(q->name, NAME_MAX_LEN))) {
		snprintf(err, errlen, "phase name must be 1..%d printable characters%s", NAME_MAX_LEN,
			 q->end ? " (or give the phase id of the begin mark)" : "");
		return -EINVAL;
	}
	if (!printable(q->session, SESSION_MAX_LEN)) {
		snprintf(err, errlen, "session must be at most %d printable characters",
			 SESSION_MAX_LEN);
		return -EINVAL;
	}
	if (q->n_labels > p->lim.mark_labels) {
		snprintf(err, errlen, "%zu labels: at most %u per mark (server.mark_labels)",
			 q->n_labels, p->lim.mark_labels);
		return -EBUSY;
	}
	for (i = 0; i < q->n_labels; i++) {
		if (!*q->labels[i]->key || !printable(q->labels[i]->key, NAME_MAX_LEN) ||
		    !printable(q->labels[i]->value, VALUE_MAX_LEN)) {
			snprintf(err, errlen, "label %zu: keys must be 1..%d printable characters, "
				 "values at most %d", i, NAME_MAX_LEN, VALUE_MAX_LEN);
			return -EINVAL;
		}
	}
	return 0;
}

/* The request's strings become the mark's. */
static pb_mark *mark_from(const Iopulse__V1__MarkPhaseRequest *q, const char *name)
{
	pb_mark *pm = calloc(1, sizeof(*pm));
	size_t i;
	bool bad = !pm;

	if (bad)
		return NULL;
	iopulse__v1__phase_mark__init(pm);
	pm->name = strdup(name);
	pm->session = strdup(q->session);
	pm->end = q->end;
	pm->labels = calloc(q->n_labels ? q->n_labels : 1, sizeof(*pm->labels));
	bad = !pm->name || !pm->session || !pm->labels;
	for (i = 0; !bad && i < q->n_labels; i++) {
		Iopulse__V1__PhaseMark__LabelsEntry *e = malloc(sizeof(*e));

		bad = !e;
		if (bad)
			break;
		iopulse__v1__phase_mark__labels_entry__init(e);
		e->key = strdup(q->labels[i]->key);
		e->value = strdup(q->labels[i]->value);
		pm->labels[pm->n_labels++] = e;
		bad = !e->key || !e->value;
	}
	if (bad) {
		mark_free(pm);
		return NULL;
	}
	return pm;
}

/* The open phase an end mark closes: by id, else the latest of that name in the session. */
static ssize_t find_open(const struct phases *p, const Iopulse__V1__MarkPhaseRequest *q,
			 char *err, size_t errlen)
{
	size_t i;

	if (q->phase_id) {
		for (i = 0; i < p->nopen; i++) {
			const pb_mark *b = p->open[i].begin;

			if (b->id != q->phase_id)
				continue;
			if (*q->name && strcmp(q->name, b->name)) {
				snprintf(err, errlen, "phase %llu is '%s', not '%s'",
					 (unsigned long long)b->id, b->name, q->name);
				return -EINVAL;
			}
			return (ssize_t)i;
		}
		snprintf(err, errlen, "phase %llu is not open", (unsigned long long)q->phase_id);
		return -ENOENT;
	}
	for (i = p->nopen; i-- > 0;)
		if (!strcmp(p->open[i].begin->name, q->name) &&
		    !strcmp(p->open[i].begin->session, q->session))
			return (ssize_t)i;
	snprintf(err, errlen, "no phase named '%s' is open%s%s%s (%zu open)", q->name,
		 *q->session ? " in session '" : "", q->session, *q->session ? "'" : "", p->nopen);
	return -ENOENT;
}

/* A begin's parent_id: an open phase of the begin's own session. */
static int check_parent(const struct phases *p, const Iopulse__V1__MarkPhaseRequest *q,
			char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < p->nopen; i++) {
		const pb_mark *b = p->open[i].begin;

		if (b->id != q->parent_id)
			continue;
		if (strcmp(b->session, q->session)) {
			snprintf(err, errlen, "parent phase %llu is of another session",
				 (unsigned long long)q->parent_id);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(err, errlen, "parent phase %llu is not open", (unsigned long long)q->parent_id);
	return -ENOENT;
}

static bool take_token(struct phases *p)
{
	uint64_t now = iop_clock_ns(CLOCK_MONOTONIC);
	double burst = 2.0 * p->rate;

	p->tokens += (double)(now - p->refill_ns) * 1e-9 * p->rate;
	if (p->tokens > burst)
		p->tokens = burst;
	p->refill_ns = now;
	if (p->tokens < 1.0)
		return false;
	p->tokens -= 1.0;
	return true;
}

static void open_remove(struct phases *p, size_t i)
{
	mark_free(p->open[i].begin);
	memmove(&p->open[i], &p->open[i + 1], (p->nopen - i - 1) * sizeof(*p->open));
	p->nopen--;
}

/* Under the lock: queue pm (ending open phase `closes`, or -1) and update the open phases;
 * a begin is owned by owner, and nests in pm->parent_id when set (checked by the caller),
 * else in the innermost open phase of its session. */
static int add_mark(struct phases *p, pb_mark *pm, ssize_t closes, bool reply,
		    const char *owner)
{
	pb_mark *copy = NULL;
	size_t i;

	pm->id = ++p->next_id;
	if (!pm->end) {
		struct open_phase *grown;

		for (i = p->nopen; !pm->parent_id && i-- > 0;)
			if (!strcmp(p->open[i].begin->session, pm->session)) {
				pm->parent_id = p->open[i].begin->id;
				break;
			}
		copy = mark_dup(pm);
		grown = copy ? realloc(p->open, (p->nopen + 1) * sizeof(*grown)) : NULL;
		if (!grown) {
			mark_free(copy);
			return -ENOMEM;
		}
		p->open = grown;
	} else {
		pm->begin_id = p->open[closes].begin->id;
	}
	if (enqueue(&p->pend, pm, reply)) {
		mark_free(copy);
		return -ENOMEM;
	}
	if (copy) {
		p->open[p->nopen].begin = copy;
		snprintf(p->open[p->nopen].owner, sizeof(p->open[p->nopen].owner), "%s", owner);
		p->nopen++;
	} else
		open_remove(p, (size_t)closes);
	wake(p);
	return 0;
}

int phases_submit(struct phases *p, const uint8_t *req, size_t len, const char *owner,
		  uint64_t *id, char *err, size_t errlen)
{
	Iopulse__V1__MarkPhaseRequest *q;
	ssize_t closes = -1;
	pb_mark *pm = NULL;
	int r;

	if (len > p->lim.mark_bytes) {
		snprintf(err, errlen, "a mark of %zu bytes: at most %u (server.mark_bytes)", len,
			 p->lim.mark_bytes);
		return -EBUSY;
	}
	q = iopulse__v1__mark_phase_request__unpack(NULL, len, req);
	if (!q) {
		snprintf(err, errlen, "MarkPhaseRequest does not decode");
		return -EINVAL;
	}
	r = check_request(p, q, err, errlen);
	pthread_mutex_lock(&p->lock);
	if (!r && q->end) {
		closes = find_open(p, q, err, errlen);
		r = closes < 0 ? (int)closes : 0;
	}
	if (!r && q->end && *p->open[closes].begin->session &&
	    strcmp(p->open[closes].owner, owner)) {
		snprintf(err, errlen, "phase %llu of session '%s' was opened by another client; "
			 "only it may end it", (unsigned long long)p->open[closes].begin->id,
			 p->open[closes].begin->session);
		r = -EPERM;
	}
	if (!r && !q->end && q->parent_id)
		r = check_parent(p, q, err, errlen);
	if (!r && !q->end && p->nopen >= p->lim.open_phases) {
		snprintf(err, errlen, "%zu phases are open already, the most allowed "
			 "(server.open_phases): end some first", p->nopen);
		r = -EBUSY;
	}
	if (!r && !take_token(p)) {
		snprintf(err, errlen, "phase marks are limited to %u per second (server.mark_rate): "
			 "each one closes an interval", p->rate);
		r = -EBUSY;
	}
	if (!r) {
		pm = mark_from(q, q->end && !*q->name ? p->open[closes].begin->name : q->name);
		if (pm && !q->end)
			pm->parent_id = q->parent_id;
		r = pm ? add_mark(p, pm, closes, true, owner) : -ENOMEM;
		if (!r)
			*id = pm->id;
		else
			mark_free(pm);
	}
	pthread_mutex_unlock(&p->lock);
	iopulse__v1__mark_phase_request__free_unpacked(q, NULL);
	return r;
}

/* Under the lock: an end for open phase i made by the daemon. */
static void abandon(struct phases *p, size_t i)
{
	const pb_mark *b = p->open[i].begin;
	pb_mark *pm = calloc(1, sizeof(*pm));

	if (pm) {
		iopulse__v1__phase_mark__init(pm);
		pm->name = strdup(b->name);
		pm->session = strdup(b->session);
		pm->labels = calloc(1, sizeof(*pm->labels));
		pm->end = true;
		pm->abandoned = true;
	}
	if (!pm || !pm->name || !pm->session || !pm->labels ||
	    add_mark(p, pm, (ssize_t)i, false, "")) {
		mark_free(pm);
		log_warn("out of memory ending abandoned phase '%s'", b->name);
		open_remove(p, i);
	}
}

void phases_session_gone(struct phases *p, const char *session, const char *owner)
{
	size_t i;

	if (!session || !*session)
		return;
	pthread_mutex_lock(&p->lock);
	for (i = p->nopen; i-- > 0;)    /* innermost first */
		if (!strcmp(p->open[i].begin->session, session) && !strcmp(p->open[i].owner, owner))
			abandon(p, i);
	pthread_mutex_unlock(&p->lock);
}

void phases_close_all(struct phases *p)
{
	pthread_mutex_lock(&p->lock);
	while (p->nopen)
		abandon(p, p->nopen - 1);
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------------- edges -- */

size_t phases_cut(struct phases *p)
{
	size_t i, n;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->pend.n; i++)
		if (enqueue(&p->cut, p->pend.v[i].pm, p->pend.v[i].reply)) {
			/* keep the rest for the next edge */
			memmove(p->pend.v, p->pend.v + i, (p->pend.n - i) * sizeof(*p->pend.v));
			break;
		}
	p->pend.n -= i;
	n = p->cut.n;
	pthread_mutex_unlock(&p->lock);
	return n;
}

static int add_reply(struct phases *p, const pb_mark *pm)
{
	size_t len;
	uint8_t *buf = pb_pack_alloc(&pm->base, &len);
	struct hub_msg *m = buf ? hub_msg_new(buf, len) : NULL;
	struct reply *grown;

	if (!m)
		return -ENOMEM;
	grown = realloc(p->done, (p->ndone + 1) * sizeof(*grown));
	if (!grown) {
		hub_msg_unref(m);
		return -ENOMEM;
	}
	p->done = grown;
	p->done[p->ndone].id = pm->id;
	p->done[p->ndone].msg = m;
	p->ndone++;
	return 0;
}

int phases_stamp(struct phases *p, uint64_t mono_ns, uint64_t real_ns, pb_mark ***out, size_t *n)
{
	pb_mark **v = NULL;
	size_t i, j;
	int r = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&p->lock);
	if (p->cut.n) {
		v = calloc(p->cut.n, sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&p->lock);
			return -ENOMEM;   /* they stay cut: the next edge takes them */
		}
	}
	for (i = 0; i < p->cut.n; i++) {
		pb_mark *pm = p->cut.v[i].pm;

		pm->monotonic_ns = mono_ns;
		pm->realtime_ns = real_ns;
		for (j = 0; !pm->end && j < p->nopen; j++)
			if (p->open[j].begin->id == pm->id) {
				p->open[j].begin->monotonic_ns = mono_ns;
				p->open[j].begin->realtime_ns = real_ns;
			}
		if (p->cut.v[i].reply && add_reply(p, pm))
			r = -ENOMEM;   /* that client gets an error instead of its mark */
		v[i] = pm;
	}
	*out = v;
	*n = p->cut.n;
	p->cut.n = 0;
	pthread_mutex_unlock(&p->lock);
	return r;
}

int phases_reply(struct phases *p, uint64_t id, struct hub_msg **out)
{
	size_t i;
	int r = -ENOENT;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->ndone; i++)
		if (p->done[i].id == id) {
			*out = p->done[i].msg;
			p->done[i] = p->done[--p->ndone];
			r = 1;
			break;
		}
	for (i = 0; r < 0 && i < p->pend.n; i++)
		if (p->pend.v[i].pm->id == id)
			r = 0;
	for (i = 0; r < 0 && i < p->cut.n; i++)
		if (p->cut.v[i].pm->id == id)
			r = 0;
	pthread_mutex_unlock(&p->lock);
	return r;
}

int phases_open(struct phases *p, pb_mark ***out, size_t *n)
{
	size_t i;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	*n = 0;
	*out = calloc(p->nopen ? p->nopen : 1, sizeof(**out));
	if (!*out)
		r = -ENOMEM;
	for (i = 0; !r && i < p->nopen; i++) {
		(*out)[i] = mark_dup(p->open[i].begin);
		if (!(*out)[i])
			r = -ENOMEM;
		else
			(*n)++;
	}
	pthread_mutex_unlock(&p->lock);
	if (r) {
		for (i = 0; *out && i < *n; i++)
			mark_free((*out)[i]);
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return r;
}
