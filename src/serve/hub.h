/* hub.h - the ring of recent Updates, the subscribers' cursors, phase marks and snapshots */
#ifndef IOPULSE_HUB_H
#define IOPULSE_HUB_H

#include <stddef.h>
#include <stdint.h>

#include "hub_msg.h"
#include "interval.h"
#include "server_limits.h"
#include "thread_fold.h"

struct hub;
struct hub_sub;

/* interval_ms: the daemon's interval; ring_ms: how much history Subscribe can replay;
 * lim: the subscriber and phase-mark limits (each mark closes an interval). */
int hub_new(struct hub **out, uint64_t interval_ms, uint64_t ring_ms,
	    const struct server_limits *lim);
struct hub *hub_free(struct hub *h);

/* ---- the aggregator's side ---- */

/* Turn one interval into an Update (with the phase marks cut before its maps were read,
 * stamped with its end), pack it once, keep it in the ring and the cumulative snapshot.
 * 0 or -ENOMEM. */
int hub_publish(struct hub *h, const struct iop_interval *iv);
/* Thread entries of threads that alive() says are gone fold into totals per name (see
 * thread_fold.h); without this, the snapshot keeps an entry per thread ever seen. */
void hub_watch_threads(struct hub *h, thread_alive_fn alive);
/* Replace the packed Info answer (takes m). */
void hub_set_info(struct hub *h, struct hub_msg *m);
uint64_t hub_last_seq(struct hub *h);
unsigned int hub_subscriber_count(struct hub *h);
struct server_limits hub_limits(const struct hub *h);
/* Bytes of packed Updates the replay ring holds now. */
uint64_t hub_ring_bytes(struct hub *h);
unsigned int hub_ring_seconds(const struct hub *h);
/* The server's last fan-out: ns to hand a new interval to n streams. */
void hub_note_fanout(struct hub *h, uint64_t ns, unsigned int n);
void hub_last_fanout(struct hub *h, uint64_t *ns, unsigned int *n);

/* ---- the server's side; requests are packed protobuf. -EINVAL: err says what is wrong ---- */

/* A client's SubscribeRequest (packed): *out is its new subscriber. The client is known by
 * owner (as in phases_submit), or NULL for a client without the right to mark: holding a
 * session needs that right (-EPERM). A client without it, known as peer (its uid, certificate
 * name or address: rpc_rights_owner), holds at most a quarter of server.subscribers, and the
 * last eighth are kept for clients with it (-EBUSY, err says which bound). */
int hub_subscribe(struct hub *h, const uint8_t *req, size_t len, const char *owner,
		  const char *peer, struct hub_sub **out, char *err, size_t errlen);
void hub_unsubscribe(struct hub *h, struct hub_sub *s);
/* The subscriber's next Update, or NULL when nothing is due yet. A subscriber that fell
 * behind gets what it missed merged into one Update, up to the next phase edge: an Update
 * never spans a mark (one with marks ends at them, even before interval_multiple). The
 * intervals a subscription replays (replay_seconds: those published before it) are not
 * merged to catch up: they go out interval_multiple at a time (fewer before a phase edge). */
struct hub_msg *hub_next(struct hub *h, struct hub_sub *s);
int hub_snapshot(struct hub *h, const uint8_t *req, size_t len, struct hub_msg **out,
		 char *err, size_t errlen);
int hub_info(struct hub *h, struct hub_msg **out);
/* Phase marks (phases.h): the server submits them, the main loop cuts them at its edges. */
struct phases *hub_phases(struct hub *h);

#endif
