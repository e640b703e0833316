/* rpc_rights.h - who a call comes from, and whether it may mark phases */
#ifndef IOPULSE_RPC_RIGHTS_H
#define IOPULSE_RPC_RIGHTS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A call is known by its peer as gRPC core names it: "fd:N" (a unix connection iopulsed
 * accepted itself, with server.mark_group), "unix:..." (the unix socket gRPC core accepts
 * on), "ipv4:a.b.c.d:port" or "ipv6:[...]:port" (TCP); and over TCP with TLS by the names
 * of its client certificate (CN, SANs).
 */
struct rpc_rights;

/* The globs of server.mark_clients (copied). -ENOMEM. */
int rpc_rights_new(struct rpc_rights **out, char *const *mark_clients, size_t n);
/* server.mark_clients changed (a reload): calls from now on are judged by these. -ENOMEM. */
int rpc_rights_set_mark_clients(struct rpc_rights *r, char *const *mark_clients, size_t n);
struct rpc_rights *rpc_rights_free(struct rpc_rights *r);

/* A unix connection accepted with server.mark_group: whether its peer may mark, kept by fd
 * (an fd is not reused while a call holds its connection). From any thread. -ENOMEM. */
int rpc_rights_note_fd(struct rpc_rights *r, int fd, bool in_group);

/* What the peer alone says about the right to mark. */
enum rpc_right {
	RPC_RIGHT_NO,              /* err says why */
	RPC_RIGHT_YES,
	RPC_RIGHT_BY_NAMES,        /* TCP: the client certificate's names decide */
};

/*
 * May a call from peer (NULL: unknown) mark phases? Over the unix socket, whoever may
 * connect may, unless server.mark_group names the group that may (and root); over TCP, a
 * client whose certificate has a name (CN or SAN) matching server.mark_clients, or any client
 * when a glob matches "" (the default "*": anyone the handshake let in).
 */
enum rpc_right rpc_rights_of_peer(struct rpc_rights *r, const char *peer, char *err,
				  size_t errlen);
/* RPC_RIGHT_BY_NAMES: whether a certificate name (len bytes) matches server.mark_clients. */
bool rpc_rights_name_may_mark(struct rpc_rights *r, const char *name, size_t len);
/* RPC_RIGHT_BY_NAMES and no name matched: err says why. */
void rpc_rights_names_refused(char *err, size_t errlen);

/*
 * Who a call comes from, as the owner of the session phases it opens: over the unix socket
 * the peer's uid, over TCP the client certificate's first CN (else SAN; cert_name, len bytes,
 * NULL without one) or, without one, the peer's address without its port; so a client's
 * reconnection is still the same owner, and another client is not.
 */
void rpc_rights_owner(const char *peer, const char *cert_name, size_t cert_len, char *out,
		      size_t len);

#endif
