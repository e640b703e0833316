/* hub.c - the ring of recent Updates, the subscribers' cursors, phase marks and snapshots */
#include "hub.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "phases.h"
#include "thread_fold.h"
#include "update_pb.h"

#define MULTIPLE_MAX 3600
/* A GetSnapshot answer fits the default gRPC receive limit (4 MiB) of any client. */
#define SNAPSHOT_BYTES_MAX ((4u << 20) - (64u << 10))
/* Exited threads are looked for every this many intervals, or once this many entries came. */
#define FOLD_EVERY 16
#define FOLD_GROWTH 1024
#define NAME_MAX_LEN 128

/* The ring keeps packed Updates only: a merge unpacks what it needs. */
struct entry {
	uint64_t seq;
	uint64_t end_mono;
	bool edge;                  /* carries phase marks: its end is a phase edge */
	struct hub_msg *msg;
};

struct hub_sub {
	uint64_t next_seq;          /* first interval not delivered yet */
	uint64_t replay_last;       /* the last interval of its replay (0: none) */
	unsigned int multiple;
	struct update_filter f;
	pb_update *carry;           /* intervals that left the ring before it took them */
	char *session;              /* holds this session's open phases; NULL for none */
	char *owner;                /* who holds it (phases_submit) */
	char *reader;               /* a client without the right to mark: who it is */
	struct hub_sub *prev, *next;
};

struct hub {
	pthread_mutex_t lock;
	uint64_t interval_ms, ring_ms;
	struct entry *ring;
	size_t cap, n, head;        /* head: index of the oldest entry */
	size_t cap_max;             /* marks add intervals: the ring grows up to this */
	uint64_t bytes, bytes_max;  /* packed Updates held, and server.ring_mib */
	uint64_t last_seq;
	pb_update *cum;             /* everything since start */
	thread_alive_fn alive;      /* folds exited threads in cum; NULL: never */
	uint64_t publishes;
	size_t threads_checked;     /* cum's thread entries after the last fold */
	struct phases *phases;
	char **known;               /* device names ever published */
	size_t nknown;
	struct hub_msg *info;
	struct hub_sub *subs;
	unsigned int nsubs;
	struct server_limits lim;
	uint64_t fanout_ns;
	unsigned int fanout_n;
};

static struct hub_msg *pack_msg(const ProtobufCMessage *pb)
{
	size_t len;
	uint8_t *buf = pb_pack_alloc(pb, &len);

	return buf ? hub_msg_new(buf, len) : NULL;
}

int hub_new(struct hub **out, uint64_t interval_ms, uint64_t ring_ms,
	    const struct server_limits *lim)
{
	unsigned int mark_rate = lim->mark_rate;
	struct hub *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->interval_ms = interval_ms ? interval_ms : 1000;
	h->ring_ms = ring_ms;
	h->cap = ring_ms / h->interval_ms + 1;
	/* every mark may close an interval of its own */
	h->cap_max = h->cap + (ring_ms / 1000 + 2) * (mark_rate ? mark_rate : 1);
	h->ring = calloc(h->cap, sizeof(*h->ring));
	h->cum = malloc(sizeof(*h->cum));
	if (!h->ring || !h->cum) {
		hub_free(h);
		return -ENOMEM;
	}
	h->lim = *lim;
	h->bytes_max = (uint64_t)(lim->ring_mib ? lim->ring_mib : 1) << 20;
	r = phases_new(&h->phases, lim);
	if (r) {
		hub_free(h);
		return r;
	}
	iopulse__v1__update__init(h->cum);
	*out = h;
	return 0;
}

static void filter_release(struct update_filter *f)
{
	size_t i;

	for (i = 0; i < f->ndevices; i++)
		free(f->devices[i]);
	for (i = 0; i < f->nthreads; i++)
		free(f->threads[i]);
	free(f->devices);
	free(f->threads);
	memset(f, 0, sizeof(*f));
}

static void sub_free(struct hub_sub *s)
{
	filter_release(&s->f);
	update_free(s->carry);
	free(s->session);
	free(s->owner);
	free(s->reader);
	free(s);
}

struct hub *hub_free(struct hub *h)
{
	size_t i;

	if (!h)
		return NULL;
	while (h->subs) {
		struct hub_sub *s = h->subs;

		h->subs = s->next;
		sub_free(s);
	}
	for (i = 0; h->ring && i < h->n; i++)
		hub_msg_unref(h->ring[(h->head + i) % h->cap].msg);
	for (i = 0; i < h->nknown; i++)
		free(h->known[i]);
	free(h->known);
	phases_free(h->phases);
	free(h->ring);
	update_free(h->cum);
	hub_msg_unref(h->info);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return NULL;
}

/* ------------------------------------------------------------------ publish -- */

static int remember_devices(struct hub *h, const pb_update *u)
{
	size_t i, j;

	for (i = 0; i < u->n_devices; i++) {
		char **grown;

		for (j = 0; j < h->nknown; j++)
			if (strcmp(h->known[j], u->devices[i]->name) == 0)
				break;
		if (j < h->nknown)
			continue;
		grown = realloc(h->known, (h->nknown + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		h->known = grown;
		grown[h->nknown] = strdup(u->devices[i]->name);
		if (!grown[h->nknown])
			return -ENOMEM;
		h->nknown++;
	}
	return 0;
}

static pb_update *unpack_entry(const struct hub_msg *m)
{
	return iopulse__v1__update__unpack(NULL, m->len, m->buf);
}

/* The oldest entry leaves the ring: subscribers that had not taken it keep it merged. */
static void evict_oldest(struct hub *h)
{
	struct entry *e = &h->ring[h->head];
	pb_update *u = NULL;
	struct hub_sub *s;

	for (s = h->subs; s; s = s->next) {
		if (s->next_seq > e->seq)
			continue;
		if (!u)
			u = unpack_entry(e->msg);
		if (!s->carry) {
			s->carry = malloc(sizeof(*s->carry));
			if (s->carry)
				iopulse__v1__update__init(s->carry);
		}
		if (!u || !s->carry || update_merge_into(s->carry, u, &s->f))
			log_warn("interval %llu could not be kept for a subscriber more than "
				 "server.ring behind (out of memory, or the histogram precision "
				 "changed)", (unsigned long long)e->seq);
		s->next_seq = e->seq + 1;
	}
	update_free(u);
	h->bytes -= e->msg->len;
	hub_msg_unref(e->msg);
	memset(e, 0, sizeof(*e));
	h->head = (h->head + 1) % h->cap;
	h->n--;
}

/* Room for one more entry of len bytes: the oldest leave once older than the ring's span,
 * while the ring would pass server.ring_mib, or when it cannot grow. */
static void make_room(struct hub *h, uint64_t end_mono, size_t len)
{
	struct entry *grown;
	size_t cap, i;

	while (h->n && h->ring[h->head].end_mono + h->ring_ms * 1000000ull < end_mono)
		evict_oldest(h);
	while (h->n && h->bytes + len > h->bytes_max)
		evict_oldest(h);
	if (h->n < h->cap)
		return;
	cap = h->cap * 2 < h->cap_max ? h->cap * 2 : h->cap_max;
	grown = cap > h->cap ? malloc(cap * sizeof(*grown)) : NULL;
	if (!grown) {
		evict_oldest(h);
		return;
	}
	for (i = 0; i < h->n; i++)
		grown[i] = h->ring[(h->head + i) % h->cap];
	memset(grown + h->n, 0, (cap - h->n) * sizeof(*grown));
	free(h->ring);
	h->ring = grown;
	h->cap = cap;
	h->head = 0;
}

int hub_publish(struct hub *h, const struct iop_interval *iv)
{
	pb_update *u = update_from_interval(iv);
	struct hub_msg *m;
	size_t i;
	int r;

	if (!u)
		return -ENOMEM;
	/* the marks cut before the maps were read sit on this interval's end */
	r = phases_stamp(h->phases, iv->end_mono_ns, iv->end_realtime_ns, &u->phases, &u->n_phases);
	if (r)
		log_warn("out of memory answering a phase mark");
	u->phase_marks = u->n_phases;
	pthread_mutex_lock(&h->lock);
	m = pack_msg(&u->base);
	r = m ? 0 : -ENOMEM;
	r = r ?: remember_devices(h, u);
	if (!r && h->cum->merged && h->cum->precision != u->precision) {
		/* a reload changed the histogram layout: the snapshot starts again */
		update_free(h->cum);
		h->cum = malloc(sizeof(*h->cum));
		if (h->cum)
			iopulse__v1__update__init(h->cum);
		r = h->cum ? 0 : -ENOMEM;
	}
	/* the snapshot counts marks but keeps none: they would pile up for the daemon's life */
	r = r ?: update_merge_into(h->cum, u, &(struct update_filter){ .marks_counted = true });
	/* nor an entry per thread ever seen: exited threads' totals fold into their name's */
	if (!r && h->alive && (++h->publishes % FOLD_EVERY == 0 ||
			       h->cum->n_threads >= h->threads_checked + FOLD_GROWTH)) {
		int f = thread_fold_exited(h->cum, h->alive);

		r = f < 0 ? f : 0;
		h->threads_checked = h->cum->n_threads;
	}
	if (m) {
		make_room(h, u->end_monotonic_ns, m->len);
		i = (h->head + h->n) % h->cap;
		h->ring[i].seq = u->seq;
		h->ring[i].end_mono = u->end_monotonic_ns;
		h->ring[i].edge = u->n_phases > 0;
		h->ring[i].msg = m;
		h->bytes += m->len;
		h->n++;
		h->last_seq = u->seq;
	}
	pthread_mutex_unlock(&h->lock);
	update_free(u);
	return r;
}

void hub_watch_threads(struct hub *h, thread_alive_fn alive)
{
	pthread_mutex_lock(&h->lock);
	h->alive = alive;
	pthread_mutex_unlock(&h->lock);
}

void hub_set_info(struct hub *h, struct hub_msg *m)
{
	struct hub_msg *old;

	pthread_mutex_lock(&h->lock);
	old = h->info;
	h->info = m;
	pthread_mutex_unlock(&h->lock);
	hub_msg_unref(old);
}

uint64_t hub_last_seq(struct hub *h)
{
	uint64_t v;

	pthread_mutex_lock(&h->lock);
	v = h->last_seq;
	pthread_mutex_unlock(&h->lock);
	return v;
}

struct server_limits hub_limits(const struct hub *h)
{
	return h->lim;   /* set once at creation */
}

uint64_t hub_ring_bytes(struct hub *h)
{
	uint64_t v;

	pthread_mutex_lock(&h->lock);
	v = h->bytes;
	pthread_mutex_unlock(&h->lock);
	return v;
}

unsigned int hub_subscriber_count(struct hub *h)
{
	unsigned int v;

	pthread_mutex_lock(&h->lock);
	v = h->nsubs;
	pthread_mutex_unlock(&h->lock);
	return v;
}

void hub_note_fanout(struct hub *h, uint64_t ns, unsigned int n)
{
	pthread_mutex_lock(&h->lock);
	h->fanout_ns = ns;
	h->fanout_n = n;
	pthread_mutex_unlock(&h->lock);
}

void hub_last_fanout(struct hub *h, uint64_t *ns, unsigned int *n)
{
	pthread_mutex_lock(&h->lock);
	*ns = h->fanout_ns;
	*n = h->fanout_n;
	pthread_mutex_unlock(&h->lock);
}

unsigned int hub_ring_seconds(const struct hub *h)
{
	return (unsigned int)(h->ring_ms / 1000);
}

/* ---------------------------------------------------------------- subscribers -- */

static int copy_strings(char ***dst, size_t *n, char **src, size_t count)
{
	size_t i;

	*dst = NULL;
	*n = 0;
	if (!count)
		return 0;
	*dst = calloc(count, sizeof(char *));
	if (!*dst)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		(*dst)[i] = strdup(src[i]);
		if (!(*dst)[i])
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

/* Every device named must be one the daemon reports (or has reported). Under the lock. */
static int check_devices(struct hub *h, char **names, size_t n, char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (!*names[i] || strlen(names[i]) > NAME_MAX_LEN) {
			snprintf(err, errlen, "device filter %zu: empty or overlong device name", i);
			return -EINVAL;
		}
		for (j = 0; j < h->nknown; j++)
			if (strcmp(h->known[j], names[i]) == 0)
				break;
		if (j == h->nknown) {
			snprintf(err, errlen, "unknown device '%.128s' (iopulsed reports %zu device%s;"
				 " GetInfo lists them)", names[i], h->nknown, h->nknown == 1 ? "" : "s");
			return -EINVAL;
		}
	}
	return 0;
}

/* Streams held by clients without the right to mark, in all and by reader (lock held). */
static unsigned int readers(const struct hub *h, const char *reader)
{
	const struct hub_sub *s;
	unsigned int n = 0;

	for (s = h->subs; s; s = s->next)
		n += s->reader && (!reader || !strcmp(s->reader, reader));
	return n;
}

/* Room for one more stream (lock held): 0, or -EBUSY and the bound in err. */
static int room_for(const struct hub *h, const char *reader, char *err, size_t errlen)
{
	unsigned int all = h->lim.subscribers, reserve = all / 8, per = all / 4 ? all / 4 : 1;
	unsigned int mine;

	if (h->nsubs >= all) {
		snprintf(err, errlen, "%u streams are open, the most allowed (server.subscribers)",
			 h->nsubs);
		return -EBUSY;
	}
	if (!reader)
		return 0;
	mine = readers(h, NULL);
	if (mine >= all - reserve) {
		snprintf(err, errlen, "clients without the right to mark hold %u streams: the last "
			 "%u of server.subscribers (%u) are kept for clients with it", mine, reserve,
			 all);
		return -EBUSY;
	}
	mine = readers(h, reader);
	if (mine >= per) {
		snprintf(err, errlen, "%s holds %u streams, the most one client without the right "
			 "to mark may (a quarter of server.subscribers, %u)", reader, mine, all);
		return -EBUSY;
	}
	return 0;
}

static void subscribe_request_freep(Iopulse__V1__SubscribeRequest **q)
{
	if (*q)
		iopulse__v1__subscribe_request__free_unpacked(*q, NULL);
}

static void sub_freep(struct hub_sub **s)
{
	if (*s)
		sub_free(*s);
}

int hub_subscribe(struct hub *h, const uint8_t *req, size_t len, const char *owner,
		  const char *peer, struct hub_sub **out, char *err, size_t errlen)
{
	Iopulse__V1__SubscribeRequest *q __attribute__((cleanup(subscribe_request_freep))) =
		iopulse__v1__subscribe_request__unpack(NULL, len, req);
	struct hub_sub *s __attribute__((cleanup(sub_freep))) = NULL;
	uint64_t from;
	size_t i;
	int r;

	if (!q) {
		snprintf(err, errlen, "SubscribeRequest does not decode");
		return -EINVAL;
	}
	if (q->interval_multiple < 1 || q->interval_multiple > MULTIPLE_MAX) {
		snprintf(err, errlen, "interval_multiple %u is out of range: 1 (every interval of "
			 "%llu ms) to %d", q->interval_multiple, (unsigned long long)h->interval_ms,
			 MULTIPLE_MAX);
		return -EINVAL;
	}
	if ((uint64_t)q->replay_seconds * 1000 > h->ring_ms) {
		snprintf(err, errlen, "replay_seconds %u is longer than the %llu s the daemon keeps "
			 "(server.ring)", q->replay_seconds, (unsigned long long)(h->ring_ms / 1000));
		return -EINVAL;
	}
	if (strnlen(q->session, 65) > 64) {
		snprintf(err, errlen, "session must be at most 64 characters");
		return -EINVAL;
	}
	if (*q->session && !owner) {
		snprintf(err, errlen, "a session holds phases open and ends them when it goes: it "
			 "needs the right to mark, which this client does not have");
		return -EPERM;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->multiple = q->interval_multiple;
	if (*q->session) {
		s->session = strdup(q->session);
		s->owner = strndup(owner, PHASES_OWNER_MAX - 1);
		if (!s->session || !s->owner)
			return -ENOMEM;
	}
	if (!owner) {
		s->reader = strdup(peer && *peer ? peer : "?");
		if (!s->reader)
			return -ENOMEM;
	}
	r = copy_strings(&s->f.devices, &s->f.ndevices, q->devices, q->n_devices);
	r = r ?: copy_strings(&s->f.threads, &s->f.nthreads, q->threads, q->n_threads);
	pthread_mutex_lock(&h->lock);
	r = r ?: room_for(h, s->reader, err, errlen);
	r = r ?: check_devices(h, q->devices, q->n_devices, err, errlen);
	if (!r) {
		s->next_seq = h->last_seq + 1;
		if (q->replay_seconds) {
			from = iop_clock_ns(CLOCK_MONOTONIC) -
			       (uint64_t)q->replay_seconds * 1000000000ull;
			for (i = 0; i < h->n; i++) {
				const struct entry *e = &h->ring[(h->head + i) % h->cap];

				if (e->end_mono > from) {
					s->next_seq = e->seq;
					break;
				}
			}
			s->replay_last = h->last_seq;
		}
		s->next = h->subs;
		if (h->subs)
			h->subs->prev = s;
		h->subs = s;
		h->nsubs++;
	}
	pthread_mutex_unlock(&h->lock);
	if (r)
		return r;
	*out = s;
	s = NULL;
	return 0;
}

void hub_unsubscribe(struct hub *h, struct hub_sub *s)
{
	struct hub_sub *other = NULL;

	if (!s)
		return;
	pthread_mutex_lock(&h->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->subs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->nsubs--;
	for (other = h->subs; s->session && other; other = other->next)
		if (other->session && !strcmp(other->session, s->session) &&
		    !strcmp(other->owner, s->owner))
			break;
	pthread_mutex_unlock(&h->lock);
	if (s->session && !other)
		phases_session_gone(h->phases, s->session, s->owner);
	sub_free(s);
}

struct hub_msg *hub_next(struct hub *h, struct hub_sub *s)
{
	struct hub_msg **take = NULL, *out = NULL;
	pb_update *acc = NULL, *u;
	size_t ntake = 0, i;
	uint64_t avail = 0, carried, stop_seq = 0, edge = 0, upto;
	int r;

	pthread_mutex_lock(&h->lock);
	if (h->last_seq >= s->next_seq)
		avail = h->last_seq - s->next_seq + 1;
	carried = s->carry ? s->carry->merged : 0;
	/* an Update never spans a phase edge: it ends at the first interval with marks */
	for (i = 0; avail && i < h->n && !edge; i++) {
		const struct entry *e = &h->ring[(h->head + i) % h->cap];

		if (e->seq >= s->next_seq && e->edge)
			edge = e->seq;
	}
	if (edge)
		avail = edge - s->next_seq + 1;
	/* the replay goes out at the subscriber's resolution (interval_multiple intervals per
	 * Update), not merged: merging is how a subscriber behind the live ring catches up */
	if (s->next_seq <= s->replay_last && avail > s->multiple) {
		avail = s->multiple;
		edge = 0;
	}
	if ((avail + carried < s->multiple && !edge) || (!avail && !carried)) {
		pthread_mutex_unlock(&h->lock);
		return NULL;
	}
	upto = s->next_seq + avail - 1;     /* the last interval this Update holds */
	if (!carried && avail == 1 && s->multiple == 1 && update_filter_empty(&s->f)) {
		/* the common case, live or replayed: the Update as published, shared */
		for (i = h->n; i-- > 0 && !out;)
			if (h->ring[(h->head + i) % h->cap].seq == upto)
				out = hub_msg_ref(h->ring[(h->head + i) % h->cap].msg);
		if (out) {
			s->next_seq++;
			pthread_mutex_unlock(&h->lock);
			return out;
		}
	}
	take = calloc(avail ? avail : 1, sizeof(*take));
	if (!take) {
		pthread_mutex_unlock(&h->lock);
		return NULL;
	}
	for (i = 0; i < h->n; i++) {
		const struct entry *e = &h->ring[(h->head + i) % h->cap];

		if (e->seq >= s->next_seq && e->seq <= upto && ntake < avail)
			take[ntake++] = hub_msg_ref(e->msg);
	}
	acc = s->carry;
	s->carry = NULL;
	s->next_seq = upto + 1;
	pthread_mutex_unlock(&h->lock);

	/* the merge runs outside the lock: the ring's messages are reference counted */
	if (!acc) {
		acc = malloc(sizeof(*acc));
		if (acc)
			iopulse__v1__update__init(acc);
	}
	for (i = 0; i < ntake; i++) {
		u = acc && !stop_seq ? unpack_entry(take[i]) : NULL;
		r = u ? update_merge_into(acc, u, &s->f) : -ENOMEM;
		if (r == -EXDEV)
			stop_seq = u->seq;   /* a new histogram layout: it starts the next Update */
		else if (r && !stop_seq)
			log_warn("out of memory merging intervals for a subscriber");
		update_free(u);
		hub_msg_unref(take[i]);
	}
	free(take);
	if (stop_seq) {
		pthread_mutex_lock(&h->lock);
		s->next_seq = stop_seq;
		pthread_mutex_unlock(&h->lock);
	}
	if (acc)
		out = pack_msg(&acc->base);
	update_free(acc);
	return out;
}

/* ----------------------------------------------------------------- unary calls -- */

int hub_snapshot(struct hub *h, const uint8_t *req, size_t len, struct hub_msg **out,
		 char *err, size_t errlen)
{
	Iopulse__V1__SnapshotRequest *q = iopulse__v1__snapshot_request__unpack(NULL, len, req);
	struct update_filter f = { 0 };
	pb_update *copy = NULL;
	int r;

	if (!q) {
		snprintf(err, errlen, "SnapshotRequest does not decode");
		return -EINVAL;
	}
	f.devices = q->devices;
	f.ndevices = q->n_devices;
	f.threads = q->threads;
	f.nthreads = q->n_threads;
	pthread_mutex_lock(&h->lock);
	r = check_devices(h, q->devices, q->n_devices, err, errlen);
	if (!r) {
		copy = update_copy(h->cum, &f);
		r = copy ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&h->lock);
	iopulse__v1__snapshot_request__free_unpacked(q, NULL);
	/* the marks it lists: the begin marks of the phases open now */
	r = r ?: phases_open(h->phases, &copy->phases, &copy->n_phases);
	r = r ?: thread_fold_to_fit(copy, SNAPSHOT_BYTES_MAX);
	if (r == -EMSGSIZE) {
		snprintf(err, errlen, "the snapshot is %zu bytes even with one thread entry per "
			 "device, more than %u: ask for fewer devices",
			 protobuf_c_message_get_packed_size(&copy->base), SNAPSHOT_BYTES_MAX);
		r = -EMSGSIZE;
	}
	if (r) {
		update_free(copy);
		return r;
	}
	*out = pack_msg(&copy->base);
	update_free(copy);
	return *out ? 0 : -ENOMEM;
}

int hub_info(struct hub *h, struct hub_msg **out)
{
	pthread_mutex_lock(&h->lock);
	*out = hub_msg_ref(h->info);
	pthread_mutex_unlock(&h->lock);
	return *out ? 0 : -EAGAIN;
}

struct phases *hub_phases(struct hub *h)
{
	return h->phases;
}
