/* conn_guard.h - which connections a listener keeps: at most so many in all and from one
 * address, room made for a new one by shutting the oldest connection that has not settled
 * (a gRPC connection settles with its first call, an HTTP one while it is serving a request),
 * and a deadline for connections that stay unsettled. No sockets here: the caller accepts,
 * and shuts down the descriptors it is handed. Not thread-safe: the caller holds a lock. */
#ifndef IOPULSE_CONN_GUARD_H
#define IOPULSE_CONN_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct conn_guard;

/* addr: 16 bytes, an IPv6 address or an IPv4 one mapped (::ffff:a.b.c.d) */
int conn_guard_new(struct conn_guard **out, unsigned int max_total, unsigned int max_per_addr);
void conn_guard_free(struct conn_guard *g);

/*
 * A connection accepted at now_ns: fd, id (its socket's inode: a closed fd's number comes
 * back for another socket), the peer's address and port. Room is made first: the oldest
 * unsettled connection of the same address when that address holds max_per_addr, the oldest
 * unsettled one of the address holding the most when the table is full; their fds go to
 * evict[] (*nevict, at most 2) for the caller to shut down, whatever the result. Returns 0
 * (kept), or -EBUSY when every connection in the way has settled (the caller closes the new
 * one).
 */
int conn_guard_admit(struct conn_guard *g, int fd, uint64_t id, const uint8_t addr[16],
		     uint16_t port, uint64_t now_ns, int evict[2], unsigned int *nevict);
/* The connection of fd, or of the peer addr:port, settled (true) or pending again since
 * now_ns (false). -ENOENT when it is not in the table. */
int conn_guard_settle_fd(struct conn_guard *g, int fd, bool settled, uint64_t now_ns);
int conn_guard_settle_peer(struct conn_guard *g, const uint8_t addr[16], uint16_t port);
/* fd was closed. */
void conn_guard_gone(struct conn_guard *g, int fd);
/* Forget the connections whose fd no longer holds their socket (alive() false). */
void conn_guard_prune(struct conn_guard *g, bool (*alive)(int fd, uint64_t id, void *ctx),
		      void *ctx);
/* Unsettled connections pending longer than max_age_ns: up to max fds, each handed once. */
unsigned int conn_guard_expired(struct conn_guard *g, uint64_t now_ns, uint64_t max_age_ns,
				int *fds, unsigned int max);
unsigned int conn_guard_count(const struct conn_guard *g, const uint8_t *addr);

/* 16-byte form of a sockaddr_in or sockaddr_in6; false for other families. */
bool conn_guard_addr(const void *sa, unsigned int len, uint8_t addr[16], uint16_t *port);
/* The same of a gRPC peer string ("ipv4:10.0.0.1:5000", "ipv6:[::1]:5000"). */
bool conn_guard_peer(const char *peer, uint8_t addr[16], uint16_t *port);

#endif
