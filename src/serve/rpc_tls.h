/* rpc_tls.h - the TLS files of the TCP listener, read at start and again on SIGHUP */
#ifndef IOPULSE_RPC_TLS_H
#define IOPULSE_RPC_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* The PEM texts of the last read. */
struct rpc_pem {
	const char *cert, *key;
	const char *ca;            /* NULL: clients need no certificate */
};

struct rpc_tls;

/*
 * The paths of server.tls_cert, server.tls_key (NULL: "") and server.tls_client_ca (NULL or
 * "": none); nothing is read yet. -ENOMEM.
 */
int rpc_tls_new(struct rpc_tls **out, const char *cert, const char *key, const char *client_ca);
struct rpc_tls *rpc_tls_free(struct rpc_tls *t);

/* Read the files into the PEM texts the next handshake takes, all or nothing: -errno and one
 * line in err, the texts read before kept. */
int rpc_tls_read(struct rpc_tls *t, char *err, size_t errlen);
/* Whether server.tls_client_ca is set: clients must present a certificate it signed. */
bool rpc_tls_verifies_clients(const struct rpc_tls *t);

/*
 * For a handshake, from any thread: the PEM texts when they changed since the last call, NULL
 * when not. Either way the texts stay as they are until rpc_tls_unlock.
 */
const struct rpc_pem *rpc_tls_lock_changed(struct rpc_tls *t);
void rpc_tls_unlock(struct rpc_tls *t);

#endif
