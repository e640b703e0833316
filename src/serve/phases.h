/* phases.h - phase marks: open phases, sessions, the mark rate, and marks waiting for an edge */
#ifndef IOPULSE_PHASES_H
#define IOPULSE_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "hub_msg.h"
#include "iopulse.pb-c.h"
#include "server_limits.h"

/*
 * A mark closes the current interval: the server queues it here and the main loop, woken by
 * phases_fd(), cuts the queue right before it reads the kernel's maps, then stamps the cut
 * marks with the edge it took. Every call is thread-safe.
 */
struct phases;

/* Uses lim's mark_rate, mark_bytes, mark_labels and open_phases. */
int phases_new(struct phases **out, const struct server_limits *lim);
struct phases *phases_free(struct phases *p);

/* An eventfd, readable while marks wait for an interval edge. */
int phases_fd(const struct phases *p);
/* Empties the eventfd (the main loop, before it collects). */
void phases_drain_fd(struct phases *p);

/*
 * A MarkPhaseRequest (packed) from the client known by owner (at most PHASES_OWNER_MAX - 1
 * bytes). On success *id is the mark's id, the ticket for phases_reply. -EINVAL (bad
 * request, or a parent of another session), -ENOENT (an end, or a begin's parent, for no open
 * phase), -EPERM (an end of a phase another owner opened in a session), -EBUSY (over a limit:
 * err names its config key), -ENOMEM; err says which.
 *
 * A phase opened in a session belongs to its opener, so an end from another owner is refused.
 * A begin nests in the open phase its parent_id names, else in the innermost open phase of
 * its session.
 */
int phases_submit(struct phases *p, const uint8_t *req, size_t len, const char *owner,
		  uint64_t *id, char *err, size_t errlen);
#define PHASES_OWNER_MAX 160

/* The last stream of owner's session ended: the open phases it opened in that session end,
 * flagged abandoned. */
void phases_session_gone(struct phases *p, const char *session, const char *owner);
/* iopulsed stops: every open phase ends, flagged abandoned. */
void phases_close_all(struct phases *p);

/* Right before the maps are read: the marks queued so far make this edge. Returns how many. */
size_t phases_cut(struct phases *p);
/*
 * The cut marks, stamped with the edge's clocks, as a malloc'd array the caller takes (NULL
 * and 0 when none); the replies of their clients become ready. -ENOMEM.
 */
int phases_stamp(struct phases *p, uint64_t mono_ns, uint64_t real_ns,
		 Iopulse__V1__PhaseMark ***out, size_t *n);

/* The reply to mark id: 1 and *out (a PhaseMark) when ready, 0 while it waits, -ENOENT. */
int phases_reply(struct phases *p, uint64_t id, struct hub_msg **out);

/* Copies of the begin marks of the open phases, oldest first (caller takes). -ENOMEM. */
int phases_open(struct phases *p, Iopulse__V1__PhaseMark ***out, size_t *n);

unsigned int phases_rate(const struct phases *p);

#endif
