/* conn_guard.c - which connections a listener keeps (conn_guard.h) */
#include "conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct conn {
	int fd;                 /* -1: a free entry */
	bool settled;
	bool expired;           /* handed by conn_guard_expired() */
	uint16_t port;
	uint64_t id;
	uint64_t since_ns;      /* accepted, or pending again */
	uint8_t addr[16];
};

struct conn_guard {
	unsigned int max_total, max_per_addr, n;
	struct conn *c;
};

int conn_guard_new(struct conn_guard **out, unsigned int max_total, unsigned int max_per_addr)
{
	struct conn_guard *g;
	unsigned int i;

	if (!max_total || !max_per_addr)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->c = calloc(max_total, sizeof(*g->c));
	if (!g->c) {
		free(g);
		return -ENOMEM;
	}
	for (i = 0; i < max_total; i++)
		g->c[i].fd = -1;
	g->max_total = max_total;
	g->max_per_addr = max_per_addr;
	*out = g;
	return 0;
}

void conn_guard_free(struct conn_guard *g)
{
	if (!g)
		return;
	free(g->c);
	free(g);
}

unsigned int conn_guard_count(const struct conn_guard *g, const uint8_t *addr)
{
	unsigned int i, n = 0;

	if (!addr)
		return g->n;
	for (i = 0; i < g->max_total; i++)
		n += g->c[i].fd >= 0 && !memcmp(g->c[i].addr, addr, 16);
	return n;
}

/* The oldest unsettled connection (of addr, or of any address when addr is NULL), or NULL. */
static struct conn *oldest_pending(struct conn_guard *g, const uint8_t *addr)
{
	struct conn *best = NULL;
	unsigned int i;

	for (i = 0; i < g->max_total; i++) {
		struct conn *c = &g->c[i];

		if (c->fd < 0 || c->settled || (addr && memcmp(c->addr, addr, 16)))
			continue;
		if (!best || c->since_ns < best->since_ns)
			best = c;
	}
	return best;
}

/* The address holding the most unsettled connections (NULL: none is unsettled). */
static const uint8_t *busiest(struct conn_guard *g)
{
	const uint8_t *best = NULL;
	unsigned int i, j, n, most = 0;

	for (i = 0; i < g->max_total; i++) {
		if (g->c[i].fd < 0 || g->c[i].settled)
			continue;
		for (n = 0, j = 0; j < g->max_total; j++)
			n += g->c[j].fd >= 0 && !g->c[j].settled &&
			     !memcmp(g->c[j].addr, g->c[i].addr, 16);
		if (n > most) {
			most = n;
			best = g->c[i].addr;
		}
	}
	return best;
}

static void drop(struct conn_guard *g, struct conn *c)
{
	c->fd = -1;
	g->n--;
}

int conn_guard_admit(struct conn_guard *g, int fd, uint64_t id, const uint8_t addr[16],
		     uint16_t port, uint64_t now_ns, int evict[2], unsigned int *nevict)
{
	struct conn *victim;
	const uint8_t *from;
	unsigned int i;

	*nevict = 0;
	conn_guard_gone(g, fd);                 /* its number was another socket's */
	if (conn_guard_count(g, addr) >= g->max_per_addr) {
		victim = oldest_pending(g, addr);
		if (!victim)
			return -EBUSY;
		evict[(*nevict)++] = victim->fd;
		drop(g, victim);
	}
	if (g->n >= g->max_total) {
		from = busiest(g);
		victim = from ? oldest_pending(g, from) : NULL;
		if (!victim)
			return -EBUSY;
		evict[(*nevict)++] = victim->fd;
		drop(g, victim);
	}
	for (i = 0; i < g->max_total && g->c[i].fd >= 0; i++)
		;
	g->c[i] = (struct conn){ .fd = fd, .id = id, .port = port, .since_ns = now_ns };
	memcpy(g->c[i].addr, addr, 16);
	g->n++;
	return 0;
}

static struct conn *by_fd(struct conn_guard *g, int fd)
{
	unsigned int i;

	for (i = 0; i < g->max_total; i++)
		if (g->c[i].fd == fd && fd >= 0)
			return &g->c[i];
	return NULL;
}

int conn_guard_settle_fd(struct conn_guard *g, int fd, bool settled, uint64_t now_ns)
{
	struct conn *c = by_fd(g, fd);

	if (!c)
		return -ENOENT;
	if (!settled && c->settled) {
		c->since_ns = now_ns;
		c->expired = false;
	}
	c->settled = settled;
	return 0;
}

int conn_guard_settle_peer(struct conn_guard *g, const uint8_t addr[16], uint16_t port)
{
	unsigned int i;

	for (i = 0; i < g->max_total; i++)
		if (g->c[i].fd >= 0 && g->c[i].port == port && !memcmp(g->c[i].addr, addr, 16)) {
			g->c[i].settled = true;
			return 0;
		}
	return -ENOENT;
}

void conn_guard_gone(struct conn_guard *g, int fd)
{
	struct conn *c = by_fd(g, fd);

	if (c)
		drop(g, c);
}

void conn_guard_prune(struct conn_guard *g, bool (*alive)(int fd, uint64_t id, void *ctx),
		      void *ctx)
{
	unsigned int i;

	for (i = 0; i < g->max_total; i++)
		if (g->c[i].fd >= 0 && !alive(g->c[i].fd, g->c[i].id, ctx))
			drop(g, &g->c[i]);
}

unsigned int conn_guard_expired(struct conn_guard *g, uint64_t now_ns, uint64_t max_age_ns,
				int *fds, unsigned int max)
{
	unsigned int i, n = 0;

	for (i = 0; i < g->max_total && n < max; i++) {
		struct conn *c = &g->c[i];

		if (c->fd < 0 || c->settled || c->expired || now_ns - c->since_ns <= max_age_ns)
			continue;
		c->expired = true;
		fds[n++] = c->fd;
	}
	return n;
}

bool conn_guard_addr(const void *sa, unsigned int len, uint8_t addr[16], uint16_t *port)
{
	const struct sockaddr *s = sa;

	if (len >= sizeof(struct sockaddr_in) && s->sa_family == AF_INET) {
		const struct sockaddr_in *in = sa;

		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return true;
	}
	if (len >= sizeof(struct sockaddr_in6) && s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = sa;

		memcpy(addr, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return true;
	}
	return false;
}

bool conn_guard_peer(const char *peer, uint8_t addr[16], uint16_t *port)
{
	char host[INET6_ADDRSTRLEN + 8];
	const char *p, *colon;
	char *end;
	unsigned long v;
	size_t n;
	bool v6;

	if (!peer)
		return false;
	v6 = !strncmp(peer, "ipv6:", 5);
	if (!v6 && strncmp(peer, "ipv4:", 5))
		return false;
	p = peer + 5;
	colon = strrchr(p, ':');
	if (!colon)
		return false;
	n = (size_t)(colon - p);
	if (v6 && n >= 2 && p[0] == '[' && p[n - 1] == ']') {
		p++;
		n -= 2;
	} else if (v6 && n >= 6 && !strncmp(p, "%5B", 3) && !strncmp(p + n - 3, "%5D", 3)) {
		p += 3;
		n -= 6;
	}
	if (n >= sizeof(host))
		return false;
	memcpy(host, p, n);
	host[n] = '\0';
	v = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || *end || v > 65535)
		return false;
	*port = (uint16_t)v;
	if (v6)
		return inet_pton(AF_INET6, host, addr) == 1;
	memset(addr, 0, 10);
	addr[10] = addr[11] = 0xff;
	return inet_pton(AF_INET, host, addr + 12) == 1;
}
