/* accept_guard.c - iopulsed's own accept4() (accept_guard.h) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "accept_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conn_guard.h"
#include "log.h"

#define GUARD_LISTENERS 4
#define FD_LIMIT_WANTED 65536
#define WARN_EVERY_NS 10000000000ull

struct listener {
	int port;                       /* 0: a free entry */
	struct conn_guard *g;
	uint64_t pending_ns;            /* 0: no deadline of ours */
	char what[32];
	unsigned long long evicted, refused, shed, expired, warned, warned_expired;
	uint64_t last_warn_ns;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct listener listeners[GUARD_LISTENERS];
static int reserve_fd = -1;

/* The soft descriptor limit raised (lock held); the reserve descriptor taken. */
static long init_locked(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur < FD_LIMIT_WANTED && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < FD_LIMIT_WANTED ? rl.rlim_max : FD_LIMIT_WANTED;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return -errno;
	}
	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (reserve_fd < 0)
		return -errno;
	return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > FD_LIMIT_WANTED ? FD_LIMIT_WANTED :
	       (long)rl.rlim_cur;
}

/* The guarded listener on port (lock held), or NULL. */
static struct listener *on_port(int port)
{
	int i;

	for (i = 0; port > 0 && i < GUARD_LISTENERS; i++)
		if (listeners[i].port == port)
			return &listeners[i];
	return NULL;
}

int accept_guard_listen(int port, unsigned int max_total, unsigned int max_per_addr,
			uint64_t pending_ns, const char *what)
{
	struct listener *l;
	long limit;
	int i, r = -ENOSPC;

	if (port <= 0)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	limit = init_locked();
	if (limit < 0) {
		pthread_mutex_unlock(&lock);
		return (int)limit;
	}
	if ((long)max_total > limit / 4)
		max_total = limit / 4 > 1 ? (unsigned int)(limit / 4) : 1;
	if (max_per_addr > max_total)
		max_per_addr = max_total;
	l = on_port(port);
	for (i = 0; !l && i < GUARD_LISTENERS; i++)
		if (!listeners[i].port)
			l = &listeners[i];
	if (l) {
		conn_guard_free(l->g);
		memset(l, 0, sizeof(*l));
		r = conn_guard_new(&l->g, max_total, max_per_addr);
		if (!r) {
			l->port = port;
			l->pending_ns = pending_ns;
			snprintf(l->what, sizeof(l->what), "%s", what);
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void accept_guard_unlisten(int port)
{
	struct listener *l;

	pthread_mutex_lock(&lock);
	l = on_port(port);
	if (l) {
		conn_guard_free(l->g);
		memset(l, 0, sizeof(*l));
	}
	pthread_mutex_unlock(&lock);
}

void accept_guard_settle_peer(int port, const char *peer)
{
	struct listener *l;
	uint8_t addr[16];
	uint16_t pport;

	if (!conn_guard_peer(peer, addr, &pport))
		return;
	pthread_mutex_lock(&lock);
	l = on_port(port);
	if (l)
		conn_guard_settle_peer(l->g, addr, pport);
	pthread_mutex_unlock(&lock);
}

void accept_guard_settle_fd(int port, int fd, bool serving)
{
	struct listener *l;

	pthread_mutex_lock(&lock);
	l = on_port(port);
	if (l)
		conn_guard_settle_fd(l->g, fd, serving, iop_clock_ns(CLOCK_MONOTONIC));
	pthread_mutex_unlock(&lock);
}

void accept_guard_gone(int port, int fd)
{
	struct listener *l;

	pthread_mutex_lock(&lock);
	l = on_port(port);
	if (l)
		conn_guard_gone(l->g, fd);
	pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ accept -- */

static uint64_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) || !S_ISSOCK(st.st_mode) ? 0 : (uint64_t)st.st_ino;
}

static bool still_open(int fd, uint64_t id, void *ctx)
{
	(void)ctx;
	return inode_of(fd) == id;
}

/* The local TCP port of a listening socket, 0 for any other socket. */
static int local_port(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t addr[16];
	uint16_t port;

	if (getsockname(lfd, (struct sockaddr *)&ss, &len) ||
	    !conn_guard_addr(&ss, len, addr, &port))
		return 0;
	return port;
}

/* Out of descriptors: the reserve takes one waiting connection, which is closed (lock held). */
static bool shed_one(int lfd)
{
	int fd;

	if (reserve_fd < 0)
		return false;
	close(reserve_fd);
	fd = (int)syscall(SYS_accept4, lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

static void warn(struct listener *l, uint64_t now)
{
	unsigned long long n = l->evicted + l->refused + l->shed + l->expired;

	if (n == l->warned || now - l->last_warn_ns < WARN_EVERY_NS)
		return;
	log_warn("%s: %llu connection(s) shut to make room for new ones, %llu past their "
		 "deadline, %llu refused, %llu closed for lack of descriptors (caps per address "
		 "and in all: docs/limits.md)", l->what, l->evicted, l->expired, l->refused,
		 l->shed);
	l->warned = n;
	l->last_warn_ns = now;
}

/* Keep fd (just accepted on l's port) or not: 0 kept, -1 closed (lock held). */
static int admit(struct listener *l, int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t addr[16];
	uint16_t port;
	int evict[2];
	unsigned int n, i;
	uint64_t now = iop_clock_ns(CLOCK_MONOTONIC);
	int r;

	if (!sa || !conn_guard_addr(sa, salen, addr, &port)) {
		if (getpeername(fd, (struct sockaddr *)&ss, &len) ||
		    !conn_guard_addr(&ss, len, addr, &port))
			return 0;       /* not TCP over IP: not ours to judge */
	}
	conn_guard_prune(l->g, still_open, NULL);
	if (l->pending_ns) {            /* past the deadline: shut, their owner closes them */
		int late[16];
		unsigned int k, nl;

		do {
			nl = conn_guard_expired(l->g, now, l->pending_ns, late, 16);
			for (k = 0; k < nl; k++)
				shutdown(late[k], SHUT_RDWR);
			l->expired += nl;
		} while (nl == 16);
	}
	r = conn_guard_admit(l->g, fd, inode_of(fd), addr, port, now, evict, &n);
	for (i = 0; i < n; i++)
		shutdown(evict[i], SHUT_RDWR);  /* its owner sees the end and closes it */
	l->evicted += n;
	if (r)
		l->refused++;
	if (n || r || l->expired != l->warned_expired) {
		l->warned_expired = l->expired;
		warn(l, now);
	}
	if (r) {
		close(fd);
		return -1;
	}
	return 0;
}

int accept4(int lfd, struct sockaddr *sa, socklen_t *salen, int flags)
{
	socklen_t cap = salen ? *salen : 0;
	struct listener *l;
	int fd, err, port;

	for (;;) {
		if (salen)
			*salen = cap;
		fd = (int)syscall(SYS_accept4, lfd, sa, salen, flags);
		err = errno;
		if (fd < 0 && err != EMFILE && err != ENFILE)
			return fd;
		port = local_port(lfd);
		pthread_mutex_lock(&lock);
		l = on_port(port);
		if (!l) {
			pthread_mutex_unlock(&lock);
			errno = err;
			return fd;
		}
		if (fd < 0) {
			bool again = shed_one(lfd);

			l->shed += again;
			warn(l, iop_clock_ns(CLOCK_MONOTONIC));
			pthread_mutex_unlock(&lock);
			if (again)
				continue;
			errno = EAGAIN;
			return -1;
		}
		if (!admit(l, fd, sa, salen ? *salen : 0)) {
			pthread_mutex_unlock(&lock);
			return fd;
		}
		pthread_mutex_unlock(&lock);
	}
}
