/*
 * rpc_stream.c - the Subscribe streams: their states (sending, closed, finishing), the hub
 * subscription behind each, and which stream takes which Update. No gRPC core here:
 * rpc_server.c starts the batches and reports what they did.
 */
#include "rpc_stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void rpc_streams_init(struct rpc_streams *ss, struct hub *hub)
{
	memset(ss, 0, sizeof(*ss));
	ss->hub = hub;
}

int rpc_stream_open(struct rpc_streams *ss, struct rpc_stream *st, const uint8_t *req,
		    size_t len, const char *owner, const char *peer, bool stopping, char *err,
		    size_t errlen)
{
	int r = stopping ? -EAGAIN : hub_subscribe(ss->hub, req, len, owner, peer, &st->sub,
						   err, errlen);

	if (r) {
		if (!err[0])
			snprintf(err, errlen, "%s", r == -EAGAIN ? "iopulsed is shutting down" :
				 strerror(-r));
		st->closed = true;
		return r;
	}
	st->next = ss->head;
	if (ss->head)
		ss->head->prev = st;
	ss->head = st;
	ss->n++;
	ss->refeed = true;   /* a replay may be due at once */
	return 0;
}

void rpc_stream_release(struct rpc_streams *ss, struct rpc_stream *st)
{
	if (!st->sub)
		return;
	hub_unsubscribe(ss->hub, st->sub);
	if (st->prev)
		st->prev->next = st->next;
	else
		ss->head = st->next;
	if (st->next)
		st->next->prev = st->prev;
	ss->n--;
}

unsigned int rpc_streams_feed(struct rpc_streams *ss, rpc_stream_send_fn send, void *ctx,
			      bool *fresh)
{
	uint64_t last = hub_last_seq(ss->hub);
	unsigned int handed = 0;
	struct rpc_stream *st;
	struct hub_msg *m;

	*fresh = last != ss->fed_seq;
	if (!*fresh && !ss->refeed)
		return 0;   /* nothing new, and nobody became free to take it */
	ss->fed_seq = last;
	ss->refeed = false;
	for (st = ss->head; st; st = st->next) {
		if (st->sending || st->closed || st->finishing)
			continue;
		m = hub_next(ss->hub, st->sub);
		if (!m)
			continue;
		st->sending = send(ctx, st, m);
		handed += st->sending;
	}
	return handed;
}

void rpc_stream_sent(struct rpc_streams *ss, struct rpc_stream *st, bool ok)
{
	st->sending = false;
	ss->refeed = true;
	if (!ok)
		st->closed = true;  /* the stream is gone */
}

void rpc_stream_set_closed(struct rpc_stream *st)
{
	st->closed = true;
}

bool rpc_stream_closed(const struct rpc_stream *st)
{
	return st->closed;
}

void rpc_streams_refeed(struct rpc_streams *ss)
{
	ss->refeed = true;
}

bool rpc_streams_sending(const struct rpc_streams *ss)
{
	for (const struct rpc_stream *st = ss->head; st; st = st->next)
		if (st->sending && !st->closed)
			return true;
	return false;
}

void rpc_streams_finish(struct rpc_streams *ss, rpc_stream_finish_fn finish, void *ctx)
{
	struct rpc_stream *st;

	for (st = ss->head; st; st = st->next) {
		if (st->closed || st->finishing)
			continue;
		st->finishing = true;
		finish(ctx, st);
	}
}
