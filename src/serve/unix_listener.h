/* unix_listener.h - a unix socket iopulsed accepts on itself, to learn each peer's groups */
#ifndef IOPULSE_UNIX_LISTENER_H
#define IOPULSE_UNIX_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct unix_listener;

/* A connection accepted: fd (the callee takes it) and whether its peer is in mark_gid. */
typedef void (*unix_accepted_fn)(void *ctx, int fd, bool in_group);

/*
 * Listen on path (a stale socket removed by the caller) and accept from a thread of its own,
 * calling fn for each connection with whether the peer (SO_PEERCRED, SO_PEERGROUPS) is root
 * or a member of mark_gid. The socket file is left to the caller to chmod and chown.
 * -errno and one line in err.
 */
int unix_listener_start(struct unix_listener **out, const char *path, gid_t mark_gid,
			unix_accepted_fn fn, void *ctx, char *err, size_t errlen);
/* Stop accepting and close the socket (connections made stay). */
struct unix_listener *unix_listener_stop(struct unix_listener *l);

/* Whether a connected unix socket's peer is root or has gid among its groups. */
bool unix_peer_in_group(int fd, gid_t gid);

#endif
