/*
 * rpc_rights.c - who a call comes from, and whether it may mark phases: the rights of the
 * unix connections accepted with server.mark_group (by fd), the globs of server.mark_clients,
 * and the owner names of session phases. No gRPC core here: rpc_server.c reads each call's
 * peer and certificate names and asks.
 */
#include "rpc_rights.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct rpc_rights {
	char **mark_clients;
	size_t nmark_clients;
	pthread_mutex_t lock;      /* rights, nrights */
	unsigned char *rights;     /* by fd: 1 may mark, 2 may not, 0 not ours */
	size_t nrights;
};

/* A copy of n globs (NULL-terminated), or NULL when out of memory. */
static char **copy_globs(char *const *globs, size_t n)
{
	char **v = calloc(n + 1, sizeof(*v));
	size_t i;

	for (i = 0; v && i < n; i++)
		if (!(v[i] = strdup(globs[i]))) {
			while (i--)
				free(v[i]);
			free(v);
			return NULL;
		}
	return v;
}

static void free_globs(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int rpc_rights_new(struct rpc_rights **out, char *const *mark_clients, size_t n)
{
	struct rpc_rights *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->mark_clients = copy_globs(mark_clients, n);
	if (!r->mark_clients) {
		rpc_rights_free(r);
		return -ENOMEM;
	}
	r->nmark_clients = n;
	*out = r;
	return 0;
}

int rpc_rights_set_mark_clients(struct rpc_rights *r, char *const *mark_clients, size_t n)
{
	char **v = copy_globs(mark_clients, n), **old;
	size_t nold;

	if (!v)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	old = r->mark_clients;
	nold = r->nmark_clients;
	r->mark_clients = v;
	r->nmark_clients = n;
	pthread_mutex_unlock(&r->lock);
	free_globs(old, nold);
	return 0;
}

struct rpc_rights *rpc_rights_free(struct rpc_rights *r)
{
	if (!r)
		return NULL;
	free_globs(r->mark_clients, r->nmark_clients);
	free(r->rights);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

int rpc_rights_note_fd(struct rpc_rights *r, int fd, bool in_group)
{
	unsigned char *grown;
	size_t n;

	pthread_mutex_lock(&r->lock);
	if ((size_t)fd >= r->nrights) {
		n = (size_t)fd * 2 + 64;
		grown = realloc(r->rights, n);
		if (!grown) {
			pthread_mutex_unlock(&r->lock);
			return -ENOMEM;
		}
		memset(grown + r->nrights, 0, n - r->nrights);
		r->rights = grown;
		r->nrights = n;
	}
	r->rights[fd] = in_group ? 1 : 2;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* The fd of a call that came over an accepted unix connection (peer "fd:N"), else -1. */
static long peer_fd(const char *peer)
{
	char *end;
	long fd;

	if (!peer || strncmp(peer, "fd:", 3))
		return -1;
	fd = strtol(peer + 3, &end, 10);
	return end != peer + 3 && fd >= 0 ? fd : -1;
}

/*
 * The right of a call that came over an accepted unix connection: its fd cannot be reused
 * while the call holds the connection open.
 */
static bool fd_may_mark(struct rpc_rights *r, const char *peer)
{
	long fd = peer_fd(peer);
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = fd >= 0 && (size_t)fd < r->nrights && r->rights[fd] == 1;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

enum rpc_right rpc_rights_of_peer(struct rpc_rights *r, const char *peer, char *err,
				  size_t errlen)
{
	bool tcp = peer && (!strncmp(peer, "ipv4:", 5) || !strncmp(peer, "ipv6:", 5)), ok = false;
	size_t i;

	if (peer && !strncmp(peer, "fd:", 3)) {
		ok = fd_may_mark(r, peer);
		if (!ok)
			snprintf(err, errlen, "marks over the unix socket are for root and the "
				 "group server.mark_group; this client is in neither");
		return ok ? RPC_RIGHT_YES : RPC_RIGHT_NO;
	}
	if (!tcp)
		return RPC_RIGHT_YES;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmark_clients && !ok; i++)
		ok = !fnmatch(r->mark_clients[i], "", 0);
	pthread_mutex_unlock(&r->lock);
	return ok ? RPC_RIGHT_YES : RPC_RIGHT_BY_NAMES;
}

bool rpc_rights_name_may_mark(struct rpc_rights *r, const char *name, size_t len)
{
	char buf[256];
	size_t i;
	bool ok = false;

	snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->nmark_clients && !ok; i++)
		ok = !fnmatch(r->mark_clients[i], buf, 0);
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void rpc_rights_names_refused(char *err, size_t errlen)
{
	snprintf(err, errlen, "marks over TCP need a client certificate with a name matching "
		 "server.mark_clients");
}

void rpc_rights_owner(const char *peer, const char *cert_name, size_t cert_len, char *out,
		      size_t len)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char *end;
	long fd;

	if (cert_name) {
		snprintf(out, len, "cert:%.*s", (int)cert_len, cert_name);
		return;
	}
	snprintf(out, len, "%s", peer ? peer : "?");
	fd = peer_fd(peer);
	if (fd >= 0) {
		if (!getsockopt((int)fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl))
			snprintf(out, len, "uid:%u", (unsigned int)cred.uid);
	} else if (peer && (end = strrchr(out, ':')) && end > out + 5) {
		*end = '\0';     /* ipv4:1.2.3.4:5678 -> ipv4:1.2.3.4 */
	}
}
