/*
 * rpc_tls.c - the TLS files of the TCP listener: their paths, the PEM texts read last and
 * which read the handshakes have taken. No gRPC core here: rpc_server.c turns the texts into
 * gRPC core's certificate config when a handshake asks for them.
 */
#include "rpc_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "pem.h"

struct rpc_tls {
	char *cert, *key, *ca;      /* paths */
	pthread_mutex_t lock;       /* the PEM texts and the generations */
	char *pem_cert, *pem_key, *pem_ca;
	struct rpc_pem pem;         /* what rpc_tls_lock_changed hands out */
	uint64_t gen, served;       /* reads made; the read the handshakes took last */
};

int rpc_tls_new(struct rpc_tls **out, const char *cert, const char *key, const char *client_ca)
{
	struct rpc_tls *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->cert = strdup(cert);
	t->key = strdup(key ? key : "");
	t->ca = client_ca && *client_ca ? strdup(client_ca) : NULL;
	if (!t->cert || !t->key) {
		rpc_tls_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

struct rpc_tls *rpc_tls_free(struct rpc_tls *t)
{
	if (!t)
		return NULL;
	free(t->cert);
	free(t->key);
	free(t->ca);
	free(t->pem_cert);
	free(t->pem_key);
	free(t->pem_ca);
	pthread_mutex_destroy(&t->lock);
	free(t);
	return NULL;
}

int rpc_tls_read(struct rpc_tls *t, char *err, size_t errlen)
{
	char *cert = NULL, *key = NULL, *ca = NULL;
	int r;

	r = pem_read(t->cert, "server.tls_cert", &cert, err, errlen);
	r = r ?: pem_read(t->key, "server.tls_key", &key, err, errlen);
	if (!r && t->ca)
		r = pem_read(t->ca, "server.tls_client_ca", &ca, err, errlen);
	if (!r && (!strstr(cert, "CERTIFICATE-----") || !strstr(key, "PRIVATE KEY-----"))) {
		snprintf(err, errlen, "server.tls_cert must hold a CERTIFICATE and server.tls_key a "
			 "PRIVATE KEY (PEM)");
		r = -EINVAL;
	}
	if (r) {
		free(cert);
		free(key);
		free(ca);
		return r;
	}
	pthread_mutex_lock(&t->lock);
	free(t->pem_cert);
	free(t->pem_key);
	free(t->pem_ca);
	t->pem_cert = cert;
	t->pem_key = key;
	t->pem_ca = ca;
	t->gen++;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

bool rpc_tls_verifies_clients(const struct rpc_tls *t)
{
	return t->ca != NULL;
}

const struct rpc_pem *rpc_tls_lock_changed(struct rpc_tls *t)
{
	pthread_mutex_lock(&t->lock);
	if (t->served == t->gen)
		return NULL;
	t->served = t->gen;
	t->pem = (struct rpc_pem){ .cert = t->pem_cert, .key = t->pem_key, .ca = t->pem_ca };
	return &t->pem;
}

void rpc_tls_unlock(struct rpc_tls *t)
{
	pthread_mutex_unlock(&t->lock);
}
