/* rpc_server.h - the gRPC server (every gRPC core call lives in rpc_server.c) */
#ifndef IOPULSE_RPC_SERVER_H
#define IOPULSE_RPC_SERVER_H

#include <stddef.h>

#include "hub.h"

struct rpc_server_opts {
	const char *unix_path;    /* NULL or "": no unix socket */
	unsigned int unix_mode;   /* chmod of the socket */
	const char *unix_group;   /* NULL or "": leave the group alone */
	const char *mark_group;   /* NULL or "": any unix peer may mark; else root and members */
	const char *tcp;          /* "host:port" or NULL/"" */
	unsigned int request_bytes;  /* server.request_bytes: larger requests are refused */
	/* TLS on the TCP listener: PEM files, NULL/"" for none (the unix socket never uses TLS) */
	const char *tls_cert, *tls_key;
	const char *tls_client_ca;  /* clients must present a certificate it signed */
	/* globs on client certificate names (CN, SANs; "" without one) that may mark over TCP */
	char *const *mark_clients;
	size_t nmark_clients;
};

struct rpc_server;

/* Bind, start, and serve hub from a thread of its own. -errno and one line in err. */
int rpc_server_start(struct rpc_server **out, struct hub *hub, const struct rpc_server_opts *o,
		     char *err, size_t errlen);
/*
 * Read the TLS files again (SIGHUP): new TCP handshakes use them, connections made keep
 * theirs. Nothing changes on an error (-errno, one line in err). 0 without TLS.
 */
int rpc_server_reload_tls(struct rpc_server *s, char *err, size_t errlen);
/* server.mark_clients changed by a reload: calls from now on are judged by these globs. */
int rpc_server_set_mark_clients(struct rpc_server *s, char *const *globs, size_t n);

/* The TCP port bound (useful with port 0), 0 if none. */
int rpc_server_tcp_port(const struct rpc_server *s);
/* End every stream with UNAVAILABLE, stop, join the thread, remove the unix socket. */
struct rpc_server *rpc_server_stop(struct rpc_server *s);

#endif
