/* rpc_stream.h - the Subscribe streams: their states, and which stream takes which Update */
#ifndef IOPULSE_RPC_STREAM_H
#define IOPULSE_RPC_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hub.h"

/*
 * One Subscribe call, kept inside the server's call (zeroed). A stream has at most one Update
 * in flight; it is closed when its client went away or its call ended before it became a
 * stream, and finishing once its final status is on its way. The fields are rpc_stream.c's.
 */
struct rpc_stream {
	struct hub_sub *sub;       /* NULL until subscribed */
	bool sending, closed, finishing;
	struct rpc_stream *prev, *next;
};

/* The streams of a server. */
struct rpc_streams {
	struct hub *hub;
	struct rpc_stream *head;
	unsigned int n;
	uint64_t fed_seq;          /* newest interval offered to every stream */
	bool refeed;               /* a stream became ready to send again */
};

/* Start an Update on its way on st; false if it could not be started. */
typedef bool (*rpc_stream_send_fn)(void *ctx, struct rpc_stream *st, struct hub_msg *m);
/* Send st's final status. */
typedef void (*rpc_stream_finish_fn)(void *ctx, struct rpc_stream *st);

void rpc_streams_init(struct rpc_streams *ss, struct hub *hub);

/*
 * Subscribe st with the packed request req for owner (NULL: a client without the right to
 * mark, known as peer: hub_subscribe); stopping: the server stops. 0: st is a stream and a replay may be due at once; else
 * -errno, st closed and err (empty on entry) says why.
 */
int rpc_stream_open(struct rpc_streams *ss, struct rpc_stream *st, const uint8_t *req,
		    size_t len, const char *owner, const char *peer, bool stopping, char *err,
		    size_t errlen);
/* The call ends: st unsubscribes and leaves the streams (nothing if it never became one). */
void rpc_stream_release(struct rpc_streams *ss, struct rpc_stream *st);

/*
 * Hand each stream that is free its next Update, if one is due, through send. Returns how
 * many were handed; *fresh: there was a new interval (not only a stream free again).
 */
unsigned int rpc_streams_feed(struct rpc_streams *ss, rpc_stream_send_fn send, void *ctx,
			      bool *fresh);
/* An Update went out (ok) or the stream is gone (!ok): the stream is free again. */
void rpc_stream_sent(struct rpc_streams *ss, struct rpc_stream *st, bool ok);
void rpc_stream_set_closed(struct rpc_stream *st);
bool rpc_stream_closed(const struct rpc_stream *st);

/* Whether a stream has an Update on its way (the server stops: it waits for them). */
bool rpc_streams_sending(const struct rpc_streams *ss);

/* The server stops: the next feed offers every stream what is due, the last interval too. */
void rpc_streams_refeed(struct rpc_streams *ss);
/* The server stops: each stream neither closed nor finishing gets its final status. */
void rpc_streams_finish(struct rpc_streams *ss, rpc_stream_finish_fn finish, void *ctx);

#endif
