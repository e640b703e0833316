/*
 * rpc_server.c - the gRPC server: every gRPC core call of iopulsed lives in this file (the
 * listeners, the credentials, the completion queue, each call's batches and its peer and
 * certificate names). What needs no gRPC core lives beside it: rpc_unix.c the unix socket's
 * file, rpc_tls.c the TLS files, rpc_rights.c who a call comes from and whether it may mark,
 * rpc_stream.c the Subscribe streams' states, rpc_unary.c the answers of the unary calls.
 */
#include "rpc_server.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpc/grpc_posix.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "accept_guard.h"
#include "log.h"
#include "phases.h"
#include "rpc_rights.h"
#include "rpc_stream.h"
#include "rpc_tls.h"
#include "rpc_unary.h"
#include "rpc_unix.h"
#include "unix_listener.h"

/* How often the loop looks for new Updates: the added delivery delay is at most this. */
#define POLL_MS 10
/* After shutdown starts, how long streams get to take their final status. */
#define GRACE_MS 1000
/*
 * gRPC core's own cap on a request: above server.request_bytes's range, so that a request
 * over the configured limit reaches new_call and is refused with a message naming the key.
 */
#define RECV_CAP (4u << 20)
/* server.tcp: connections held at most, from one address, and the handshake's deadline (a
 * connection that has not made a call is shut to make room: accept_guard.h) */
#define TCP_CONNECTIONS 512
#define TCP_PER_ADDRESS 64
#define TCP_HANDSHAKE_MS 10000

enum method { M_SUBSCRIBE, M_SNAPSHOT, M_INFO, M_MARK, M_COUNT };

static const char *const method_path[M_COUNT] = {
	"/iopulse.v1.Telemetry/Subscribe",
	"/iopulse.v1.Telemetry/GetSnapshot",
	"/iopulse.v1.Telemetry/GetInfo",
	"/iopulse.v1.Telemetry/MarkPhase",
};

enum tag_kind { T_NEW, T_DONE, T_HEADERS, T_SENT, T_CLOSED, T_SHUTDOWN };

struct call;

struct tag {
	enum tag_kind kind;
	struct call *c;
	enum method m;            /* T_NEW */
};

/* One requested call slot per method: the next call to arrive fills it. */
struct slot {
	struct tag tag;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
};

struct call {
	enum method m;
	grpc_call *call;
	int pending;              /* batches not completed yet */
	int cancelled;            /* written by RECV_CLOSE_ON_SERVER */
	grpc_slice details;
	bool has_details;
	struct rpc_stream st;      /* Subscribe */
	struct tag t_done, t_headers, t_sent, t_closed;
	uint64_t mark_id;          /* a MarkPhase waiting for its interval edge */
	struct call *wnext;        /* the marks waiting */
};

struct rpc_server {
	struct hub *hub;
	grpc_server *server;
	grpc_completion_queue *cq;
	void *methods[M_COUNT];
	struct slot slots[M_COUNT];
	struct rpc_streams streams;
	struct call *marks;        /* MarkPhase calls waiting for their edge */
	unsigned int ncalls;       /* call contexts alive (streams and unary calls) */
	pthread_t thread;
	bool thread_started;
	int stop;                  /* set by rpc_server_stop */
	int tcp_port;
	unsigned int request_bytes;
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct tag t_shutdown;
	struct rpc_tls *tls;       /* NULL: TCP without TLS */
	struct rpc_rights *rights;
	/* server.mark_group: the unix socket is accepted here, each connection's right kept */
	struct unix_listener *ul;
	grpc_server_credentials *fd_creds;
};

/* ------------------------------------------------------------------ helpers -- */

/*
 * gRPC core's log lines go through ours: one line each, at most LOG_MAX characters, bytes
 * outside printable ASCII escaped (a client's raw bytes can reach these messages).
 */
#define LOG_MAX 300

static void grpc_log_line(gpr_log_func_args *a)
{
	const unsigned char *p = (const unsigned char *)(a->message ? a->message : "");
	char buf[LOG_MAX + 8];
	size_t j = 0;

	for (; *p && j < LOG_MAX; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			buf[j++] = (char)*p;
		else
			j += (size_t)snprintf(buf + j, sizeof(buf) - j, "\\x%02x", *p);
	}
	buf[j] = '\0';
	if (a->severity == GPR_LOG_SEVERITY_ERROR)
		log_warn("grpc: %s%s", buf, *p ? "..." : "");
	else
		log_debug("grpc: %s%s", buf, *p ? "..." : "");
}

static void unref_msg(void *p)
{
	hub_msg_unref(p);
}

/* A byte buffer over a shared message: no copy; the message lives until gRPC lets go. */
static grpc_byte_buffer *buffer_of(struct hub_msg *m)
{
	grpc_slice s = grpc_slice_new_with_user_data(m->buf, m->len, unref_msg, m);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

	grpc_slice_unref(s);
	return bb;
}

static void read_payload(grpc_byte_buffer *bb, uint8_t **buf, size_t *len)
{
	grpc_byte_buffer_reader r;
	grpc_slice s;

	*buf = NULL;
	*len = 0;
	if (!bb)
		return;
	if (grpc_byte_buffer_reader_init(&r, bb)) {
		s = grpc_byte_buffer_reader_readall(&r);
		*len = GRPC_SLICE_LENGTH(s);
		*buf = malloc(*len ? *len : 1);
		if (*buf)
			memcpy(*buf, GRPC_SLICE_START_PTR(s), *len);
		grpc_slice_unref(s);
		grpc_byte_buffer_reader_destroy(&r);
	}
}

static grpc_status_code status_of(int r)
{
	switch (r) {
	case 0: return GRPC_STATUS_OK;
	case -EINVAL: return GRPC_STATUS_INVALID_ARGUMENT;
	case -EAGAIN: return GRPC_STATUS_UNAVAILABLE;
	case -ENOMEM: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	case -EBUSY: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	case -EMSGSIZE: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	case -ENOENT: return GRPC_STATUS_NOT_FOUND;
	case -EPERM: return GRPC_STATUS_PERMISSION_DENIED;
	default: return GRPC_STATUS_INTERNAL;
	}
}

static int request(struct rpc_server *s, enum method m)
{
	struct slot *sl = &s->slots[m];
	grpc_call_error e;

	sl->tag.kind = T_NEW;
	sl->tag.m = m;
	sl->call = NULL;
	sl->payload = NULL;
	grpc_metadata_array_init(&sl->md);
	e = grpc_server_request_registered_call(s->server, s->methods[m], &sl->call, &sl->deadline,
						&sl->md, &sl->payload, s->cq, s->cq, &sl->tag);
	if (e != GRPC_CALL_OK) {
		log_error("grpc: cannot wait for %s calls (error %d)", method_path[m], (int)e);
		grpc_metadata_array_destroy(&sl->md);
		return -EIO;
	}
	return 0;
}

static struct call *call_new(struct rpc_server *s, enum method m, grpc_call *gc)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	s->ncalls++;
	c->m = m;
	c->call = gc;
	c->t_done = (struct tag){ .kind = T_DONE, .c = c };
	c->t_headers = (struct tag){ .kind = T_HEADERS, .c = c };
	c->t_sent = (struct tag){ .kind = T_SENT, .c = c };
	c->t_closed = (struct tag){ .kind = T_CLOSED, .c = c };
	return c;
}

/* The call that holds the stream st. */
static struct call *call_of(struct rpc_stream *st)
{
	return (struct call *)((char *)st - offsetof(struct call, st));
}

static void call_free(struct rpc_server *s, struct call *c)
{
	rpc_stream_release(&s->streams, &c->st);
	if (c->has_details)
		grpc_slice_unref(c->details);
	grpc_call_unref(c->call);
	free(c);
	s->ncalls--;
}

static bool start_batch(struct call *c, const grpc_op *ops, size_t n, struct tag *t)
{
	grpc_call_error e = grpc_call_start_batch(c->call, ops, n, t, NULL);

	if (e != GRPC_CALL_OK) {
		log_warn("grpc: %s: batch refused (error %d)", method_path[c->m], (int)e);
		return false;
	}
	c->pending++;
	return true;
}

/* Initial metadata (unless sent), an optional message, the status, and wait for the end. */
static void finish_call(struct call *c, bool headers, grpc_byte_buffer *msg,
			grpc_status_code code, const char *details)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	if (headers)
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (msg) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = msg;
	}
	c->details = grpc_slice_from_copied_string(details ? details : "");
	c->has_details = true;
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details = &c->details;
	if (c->m != M_SUBSCRIBE) {
		ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	}
	start_batch(c, ops, n, &c->t_done);
	if (msg)
		grpc_byte_buffer_destroy(msg);
}

/* ------------------------------------------------------------ authorization -- */

/* A name of the client certificate (prop: CN or SAN) matches a glob of server.mark_clients. */
static bool names_match(struct rpc_server *s, grpc_auth_context *ac, const char *prop)
{
	grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(ac, prop);
	const grpc_auth_property *p;

	while ((p = grpc_auth_property_iterator_next(&it)))
		if (rpc_rights_name_may_mark(s->rights, p->value, p->value_length))
			return true;
	return false;
}

/* A unix connection accepted by the listener: its right recorded, then handed to gRPC core. */
static void accepted(void *arg, int fd, bool in_group)
{
	struct rpc_server *s = arg;

	if (rpc_rights_note_fd(s->rights, fd, in_group)) {
		close(fd);
		return;
	}
	grpc_server_add_channel_from_fd(s->server, fd, s->fd_creds);
}

/* May this call mark phases? (rpc_rights_of_peer says who may.) */
static bool may_mark(struct rpc_server *s, grpc_call *call, char *err, size_t errlen)
{
	char *peer = grpc_call_get_peer(call);
	enum rpc_right right = rpc_rights_of_peer(s->rights, peer, err, errlen);
	grpc_auth_context *ac;
	bool ok = false;

	gpr_free(peer);
	if (right != RPC_RIGHT_BY_NAMES)
		return right == RPC_RIGHT_YES;
	ac = grpc_call_auth_context(call);
	if (ac) {
		ok = names_match(s, ac, GRPC_X509_CN_PROPERTY_NAME) ||
		     names_match(s, ac, GRPC_X509_SAN_PROPERTY_NAME);
		grpc_auth_context_release(ac);
	}
	if (!ok)
		rpc_rights_names_refused(err, errlen);
	return ok;
}

/* Who a call comes from, as the owner of the session phases it opens (rpc_rights_owner). */
static void call_owner(grpc_call *call, char *out, size_t len)
{
	char *peer = grpc_call_get_peer(call);
	grpc_auth_context *ac = grpc_call_auth_context(call);
	const grpc_auth_property *p = NULL;
	grpc_auth_property_iterator it;

	if (ac) {
		it = grpc_auth_context_find_properties_by_name(ac, GRPC_X509_CN_PROPERTY_NAME);
		p = grpc_auth_property_iterator_next(&it);
		if (!p) {
			it = grpc_auth_context_find_properties_by_name(ac,
								       GRPC_X509_SAN_PROPERTY_NAME);
			p = grpc_auth_property_iterator_next(&it);
		}
	}
	rpc_rights_owner(peer, p ? p->value : NULL, p ? p->value_length : 0, out, len);
	if (ac)
		grpc_auth_context_release(ac);
	gpr_free(peer);
}

/* --------------------------------------------------------------------- calls -- */

static void unary(struct rpc_server *s, struct call *c, const uint8_t *req, size_t len)
{
	struct hub_msg *out = NULL;
	char err[512] = "", owner[PHASES_OWNER_MAX];
	int r;

	switch (c->m) {
	case M_SNAPSHOT:
		r = rpc_unary_snapshot(s->hub, req, len, &out, err, sizeof(err));
		break;
	case M_INFO:
		r = rpc_unary_info(s->hub, req, len, "/sys", &out, err, sizeof(err));
		break;
	default:
		if (!may_mark(s, c->call, err, sizeof(err))) {
			finish_call(c, true, NULL, GRPC_STATUS_PERMISSION_DENIED, err);
			return;
		}
		call_owner(c->call, owner, sizeof(owner));
		r = rpc_unary_mark(s->hub, s->stop, req, len, owner, &c->mark_id, err,
				   sizeof(err));
		if (!r) {
			c->wnext = s->marks;   /* answered once the main loop took the edge */
			s->marks = c;
			return;
		}
		break;
	}
	finish_call(c, true, r ? NULL : buffer_of(out), status_of(r), r ? err : NULL);
}

static void subscribe(struct rpc_server *s, struct call *c, const uint8_t *req, size_t len)
{
	char err[512] = "", owner[PHASES_OWNER_MAX], why[256];
	grpc_op op;
	bool right = may_mark(s, c->call, why, sizeof(why));
	int r;

	call_owner(c->call, owner, sizeof(owner));
	r = rpc_stream_open(&s->streams, &c->st, req, len, right ? owner : NULL, owner, s->stop,
			    err, sizeof(err));
	if (r) {
		finish_call(c, true, NULL, status_of(r), err);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_INITIAL_METADATA;
	start_batch(c, &op, 1, &c->t_headers);
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->cancelled;
	if (!start_batch(c, &op, 1, &c->t_closed))
		rpc_stream_set_closed(&c->st);
}

static void new_call(struct rpc_server *s, enum method m, bool ok)
{
	struct slot *sl = &s->slots[m];
	struct call *c;
	uint8_t *req;
	size_t len;

	grpc_metadata_array_destroy(&sl->md);
	if (!ok) {                 /* the server is shutting down */
		if (sl->payload)
			grpc_byte_buffer_destroy(sl->payload);
		return;
	}
	if (s->tcp_port) {         /* a TCP connection that makes a call has settled */
		char *peer = grpc_call_get_peer(sl->call);

		accept_guard_settle_peer(s->tcp_port, peer);
		gpr_free(peer);
	}
	read_payload(sl->payload, &req, &len);
	if (sl->payload)
		grpc_byte_buffer_destroy(sl->payload);
	c = call_new(s, m, sl->call);
	if (!s->stop)
		request(s, m);
	if (!c) {
		grpc_call_cancel_with_status(sl->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
					     "out of memory", NULL);
		grpc_call_unref(sl->call);
		free(req);
		return;
	}
	if (len > s->request_bytes) {
		char err[128];

		snprintf(err, sizeof(err), "a request of %zu bytes: at most %u (server.request_bytes)",
			 len, s->request_bytes);
		rpc_stream_set_closed(&c->st);
		finish_call(c, true, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, err);
	} else if (m == M_SUBSCRIBE)
		subscribe(s, c, req ? req : (uint8_t *)"", len);
	else
		unary(s, c, req ? req : (uint8_t *)"", len);
	free(req);
	if (!c->pending && !c->mark_id)
		call_free(s, c);
}

/* Answer the marks whose interval edge the main loop has taken. final: iopulsed stops. */
static void answer_marks(struct rpc_server *s, bool final)
{
	struct call **pc = &s->marks, *c;
	struct hub_msg *m;
	char err[128];
	int r;

	while ((c = *pc)) {
		err[0] = '\0';
		r = rpc_unary_mark_reply(s->hub, c->mark_id, final, &m, err, sizeof(err));
		if (r == 0) {
			pc = &c->wnext;
			continue;
		}
		*pc = c->wnext;
		c->mark_id = 0;
		if (r == 1)
			finish_call(c, true, buffer_of(m), GRPC_STATUS_OK, NULL);
		else
			finish_call(c, true, NULL, status_of(r), err);
		if (!c->pending)
			call_free(s, c);
	}
}

/* Start sending the Update m on the stream st: false if gRPC core refused the batch. */
static bool send_update(void *arg, struct rpc_stream *st, struct hub_msg *m)
{
	struct call *c = call_of(st);
	grpc_op op;
	bool ok;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = buffer_of(m);
	ok = start_batch(c, &op, 1, &c->t_sent);
	grpc_byte_buffer_destroy(op.data.send_message.send_message);
	return ok;
}

/* Hand each idle stream its next Update, if one is due. */
static void feed(struct rpc_server *s)
{
	gpr_timespec t0 = gpr_now(GPR_CLOCK_MONOTONIC), dt;
	bool fresh;
	unsigned int handed = rpc_streams_feed(&s->streams, send_update, s, &fresh);

	if (fresh && handed) {
		dt = gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), t0);
		hub_note_fanout(s->hub, (uint64_t)dt.tv_sec * 1000000000ull + (uint64_t)dt.tv_nsec,
				handed);
	}
}

static void completed(struct rpc_server *s, struct tag *t, bool ok)
{
	struct call *c = t->c;

	switch (t->kind) {
	case T_NEW:
		new_call(s, t->m, ok);
		return;
	case T_SHUTDOWN:
		return;
	case T_SENT:
		rpc_stream_sent(&s->streams, &c->st, ok);
		break;
	case T_CLOSED:
		rpc_stream_set_closed(&c->st);
		break;
	case T_HEADERS:
	case T_DONE:
		break;
	}
	if (--c->pending == 0 && (c->m != M_SUBSCRIBE || rpc_stream_closed(&c->st)))
		call_free(s, c);
}

/* A stream's final status when iopulsed stops. */
static void finish_stream(void *arg, struct rpc_stream *st)
{
	finish_call(call_of(st), false, NULL, GRPC_STATUS_UNAVAILABLE, "iopulsed is shutting down");
}

/* Every stream gets UNAVAILABLE; calls that do not end in time are cancelled. */
static void shut_down(struct rpc_server *s)
{
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					     gpr_time_from_millis(GRACE_MS, GPR_TIMESPAN));
	gpr_timespec drain = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					  gpr_time_from_millis(GRACE_MS / 2, GPR_TIMESPAN));
	bool cancelled = false, done = false;
	grpc_event ev;

	/*
	 * The daemon's last (partial) interval, with the ends of the phases left open, goes out
	 * before the status: to a stream with an Update still on its way, or several behind,
	 * too. Fed until none has one on its way and none is due more, within half the grace.
	 */
	for (;;) {
		rpc_streams_refeed(&s->streams);
		feed(s);
		if (!rpc_streams_sending(&s->streams) ||
		    gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), drain) > 0)
			break;
		ev = grpc_completion_queue_next(s->cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			gpr_time_from_millis(POLL_MS, GPR_TIMESPAN)), NULL);
		if (ev.type == GRPC_OP_COMPLETE)
			completed(s, ev.tag, ev.success);
	}
	answer_marks(s, true);
	rpc_streams_finish(&s->streams, finish_stream, s);
	grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
	/* every call's batches must complete, so that each call is released */
	while (!done || s->ncalls) {
		ev = grpc_completion_queue_next(s->cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			gpr_time_from_millis(POLL_MS * 10, GPR_TIMESPAN)), NULL);
		if (ev.type == GRPC_OP_COMPLETE) {
			struct tag *t = ev.tag;

			if (t->kind == T_SHUTDOWN)
				done = true;
			else
				completed(s, t, ev.success);
		}
		if (!cancelled && gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) > 0) {
			grpc_server_cancel_all_calls(s->server);
			cancelled = true;
			deadline = gpr_time_add(deadline, gpr_time_from_millis(5 * GRACE_MS,
									   GPR_TIMESPAN));
		} else if (cancelled && gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) > 0) {
			log_warn("grpc: %u call(s) did not end after cancellation", s->ncalls);
			break;
		}
	}
}

static void *loop(void *arg)
{
	struct rpc_server *s = arg;
	grpc_event ev;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		ev = grpc_completion_queue_next(s->cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			gpr_time_from_millis(POLL_MS, GPR_TIMESPAN)), NULL);
		if (ev.type == GRPC_OP_COMPLETE)
			completed(s, ev.tag, ev.success);
		else if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		feed(s);
		if (s->marks)
			answer_marks(s, false);
	}
	shut_down(s);
	return NULL;
}

/* --------------------------------------------------------------- set-up -- */

/* gRPC core asks at each TCP handshake: the PEM texts, when they changed since it last asked. */
static grpc_ssl_certificate_config_reload_status fetch_tls(void *arg,
							   grpc_ssl_server_certificate_config **out)
{
	struct rpc_server *s = arg;
	const struct rpc_pem *pem = rpc_tls_lock_changed(s->tls);
	grpc_ssl_pem_key_cert_pair pair;
	grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;

	if (pem) {
		pair.private_key = pem->key;
		pair.cert_chain = pem->cert;
		*out = grpc_ssl_server_certificate_config_create(pem->ca, &pair, 1);
		st = *out ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW :
			    GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
	}
	rpc_tls_unlock(s->tls);
	return st;
}

int rpc_server_reload_tls(struct rpc_server *s, char *err, size_t errlen)
{
	if (!s || !s->tls)
		return 0;
	return rpc_tls_read(s->tls, err, errlen);
}

int rpc_server_set_mark_clients(struct rpc_server *s, char *const *globs, size_t n)
{
	return s ? rpc_rights_set_mark_clients(s->rights, globs, n) : 0;
}

static int add_port(struct rpc_server *s, const char *addr, bool tls, char *err, size_t errlen)
{
	grpc_ssl_client_certificate_request_type want = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
	grpc_server_credentials *cr;
	int port;

	if (tls && rpc_tls_verifies_clients(s->tls))
		want = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
	if (tls)
		cr = grpc_ssl_server_credentials_create_with_options(
			grpc_ssl_server_credentials_create_options_using_config_fetcher(
				want, fetch_tls, s));
	else
		cr = grpc_insecure_server_credentials_create();
	port = grpc_server_add_http2_port(s->server, addr, cr);

	grpc_server_credentials_release(cr);
	if (port <= 0) {
		snprintf(err, errlen, "cannot listen on %s (address in use, or not an address)", addr);
		return -EADDRNOTAVAIL;
	}
	return port;
}

int rpc_server_start(struct rpc_server **out, struct hub *hub, const struct rpc_server_opts *o,
		     char *err, size_t errlen)
{
	struct rpc_server *s;
	grpc_arg args[5];
	grpc_channel_args ch = { .num_args = 5, .args = args };
	char addr[sizeof(s->unix_path) + 8];
	int r = 0, m, port;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->hub = hub;
	s->t_shutdown.kind = T_SHUTDOWN;
	rpc_streams_init(&s->streams, hub);
	r = rpc_rights_new(&s->rights, o->mark_clients, o->nmark_clients);
	if (!r && o->tls_cert && *o->tls_cert)
		r = rpc_tls_new(&s->tls, o->tls_cert, o->tls_key, o->tls_client_ca);
	if (!r && s->tls && o->tcp && *o->tcp)
		r = rpc_tls_read(s->tls, err, errlen);
	if (r)
		goto fail_early;
	gpr_set_log_function(grpc_log_line);
	grpc_init();
	/* detect vanished TCP peers; a stalled subscriber is handled by the merge policy */
	args[0] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_KEEPALIVE_TIME_MS,
			      .value.integer = 30000 };
	args[1] = (grpc_arg){ .type = GRPC_ARG_INTEGER,
			      .key = GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, .value.integer = 1 };
	/* a second daemon must not bind the same TCP port and split the clients */
	args[2] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT,
			      .value.integer = 0 };
	args[3] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
			      .value.integer = RECV_CAP };
	/* a TCP peer that does not finish its TLS and HTTP/2 handshake is closed this soon
	 * (gRPC core's default is 120 s) */
	args[4] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
			      .value.integer = TCP_HANDSHAKE_MS };
	s->request_bytes = o->request_bytes ? o->request_bytes : RECV_CAP;
	s->server = grpc_server_create(&ch, NULL);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->server, s->cq, NULL);
	for (m = 0; m < M_COUNT; m++) {
		s->methods[m] = grpc_server_register_method(s->server, method_path[m], NULL,
			GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
		if (!s->methods[m]) {
			snprintf(err, errlen, "cannot register %s", method_path[m]);
			r = -EINVAL;
			goto fail;
		}
	}
	if (o->unix_path && *o->unix_path) {
		r = rpc_unix_prepare(o->unix_path, err, errlen);
		if (r)
			goto fail;
		snprintf(s->unix_path, sizeof(s->unix_path), "%s", o->unix_path);
		snprintf(addr, sizeof(addr), "unix:%s", o->unix_path);
		/* with server.mark_group, iopulsed accepts the socket itself (below) */
		r = o->mark_group && *o->mark_group ? 0 : add_port(s, addr, false, err, errlen);
		if (r < 0)
			goto fail;
	}
	if (o->tcp && *o->tcp) {
		port = add_port(s, o->tcp, s->tls != NULL, err, errlen);
		if (port < 0) {
			r = port;
			/* the unix listener exists: gRPC core destroys a server with listeners only
			 * after a shutdown, and shuts down only a started server */
			if (s->unix_path[0]) {
				grpc_server_start(s->server);
				goto fail_started;
			}
			goto fail;
		}
		s->tcp_port = port;
		r = accept_guard_listen(port, TCP_CONNECTIONS, TCP_PER_ADDRESS, 0, "server.tcp");
		if (r) {
			snprintf(err, errlen, "server.tcp: cannot guard the listener: %s",
				 strerror(-r));
			grpc_server_start(s->server);
			goto fail_started;
		}
	}
	grpc_server_start(s->server);
	if (s->unix_path[0] && o->mark_group && *o->mark_group) {
		struct group *g = getgrnam(o->mark_group);

		s->fd_creds = grpc_insecure_server_credentials_create();
		r = g ? unix_listener_start(&s->ul, s->unix_path, g->gr_gid, accepted, s, err,
					    errlen) : -ENOENT;
		if (!g)
			snprintf(err, errlen, "server.mark_group: no group named '%s'", o->mark_group);
		if (r)
			goto fail_started;
	}
	if (s->unix_path[0]) {
		r = rpc_unix_secure(s->unix_path, o->unix_mode, o->unix_group, err, errlen);
		if (r)
			goto fail_started;
	}
	for (m = 0; m < M_COUNT && !r; m++)
		r = request(s, (enum method)m);
	if (r) {
		snprintf(err, errlen, "gRPC server refused to take calls");
		goto fail_started;
	}
	r = -pthread_create(&s->thread, NULL, loop, s);
	if (r) {
		snprintf(err, errlen, "cannot start the server thread: %s", strerror(-r));
		goto fail_started;
	}
	s->thread_started = true;
	*out = s;
	return 0;
fail_started:
	s->ul = unix_listener_stop(s->ul);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	shut_down(s);
fail:
	rpc_server_stop(s);
	return r < 0 ? r : -EIO;
fail_early:
	rpc_tls_free(s->tls);
	rpc_rights_free(s->rights);
	free(s);
	return r;
}

int rpc_server_tcp_port(const struct rpc_server *s)
{
	return s ? s->tcp_port : 0;
}

struct rpc_server *rpc_server_stop(struct rpc_server *s)
{
	grpc_event ev;

	if (!s)
		return NULL;
	s->ul = unix_listener_stop(s->ul);     /* no connection comes in while the server stops */
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->server)
		grpc_server_destroy(s->server);
	if (s->cq) {
		grpc_completion_queue_shutdown(s->cq);
		do {
			ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
							NULL);
			if (ev.type == GRPC_OP_COMPLETE && ((struct tag *)ev.tag)->kind == T_NEW)
				new_call(s, ((struct tag *)ev.tag)->m, false);
		} while (ev.type != GRPC_QUEUE_SHUTDOWN);
		grpc_completion_queue_destroy(s->cq);
	}
	if (s->unix_path[0])
		unlink(s->unix_path);
	if (s->tcp_port)
		accept_guard_unlisten(s->tcp_port);
	rpc_unary_forget();
	if (s->fd_creds)
		grpc_server_credentials_release(s->fd_creds);
	grpc_shutdown_blocking();
	rpc_tls_free(s->tls);
	rpc_rights_free(s->rights);
	free(s);
	return NULL;
}
