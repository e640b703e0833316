/* accept_guard.h - iopulsed's own accept4(): gRPC core's TCP listener and libmicrohttpd's
 * accept through it (the executable's definition comes before libc's for every library), so
 * that a peer cannot take the daemon's descriptors or a listener from other clients:
 *  - a listener registered here keeps its connections in a conn_guard (caps in all and per
 *    address; the oldest connection not settled is shut to make room for a new one);
 *  - accept never fails with EMFILE or ENFILE (gRPC core 1.51 stops accepting on a port for
 *    good after one): a descriptor kept in reserve takes the connection, which is closed.
 * Other sockets (the unix listener) pass through untouched. */
#ifndef IOPULSE_ACCEPT_GUARD_H
#define IOPULSE_ACCEPT_GUARD_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Guard the TCP listener on local port: at most max_total connections (and never more than a
 * quarter of the descriptor limit: two listeners leave half for the daemon's own work),
 * max_per_addr from one address. The first call raises the soft descriptor limit to the hard
 * one (at most 65,536) and takes the reserve descriptor. what names the listener in warnings
 * ("server.tcp"). pending_ns, when not 0: a connection that stays unsettled so long is shut
 * when the next one comes (an HTTP request's headers must come within it). -errno.
 */
int accept_guard_listen(int port, unsigned int max_total, unsigned int max_per_addr,
			uint64_t pending_ns, const char *what);
void accept_guard_unlisten(int port);
/* A gRPC call came from peer ("ipv4:a.b.c.d:port"): its connection settled. */
void accept_guard_settle_peer(int port, const char *peer);
/* An HTTP connection is serving a request (true) or waits for the next (false). */
void accept_guard_settle_fd(int port, int fd, bool serving);
void accept_guard_gone(int port, int fd);

#endif
