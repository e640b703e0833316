/* unix_listener.c - a unix socket iopulsed accepts on itself, to learn each peer's groups */
#include "unix_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

struct unix_listener {
	int fd, wake[2];
	gid_t gid;
	unix_accepted_fn fn;
	void *ctx;
	pthread_t thread;
	bool started;
};

bool unix_peer_in_group(int fd, gid_t gid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	gid_t groups[256];
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return false;
	if (cr.uid == 0 || cr.gid == gid)
		return true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return false;   /* more than 256 groups, or a kernel before 4.13: not a member */
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static void *accept_loop(void *arg)
{
	struct unix_listener *l = arg;
	struct pollfd p[2] = { { .fd = l->fd, .events = POLLIN }, { .fd = l->wake[0], .events = POLLIN } };
	int fd;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);  /* as gRPC core wants */
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				log_warn("unix socket: cannot accept a connection: %s", strerror(errno));
				poll(NULL, 0, 100);
			}
			continue;
		}
		l->fn(l->ctx, fd, unix_peer_in_group(fd, l->gid));
	}
	return NULL;
}

int unix_listener_start(struct unix_listener **out, const char *path, gid_t mark_gid,
			unix_accepted_fn fn, void *ctx, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct unix_listener *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	l->fd = l->wake[0] = l->wake[1] = -1;
	l->gid = mark_gid;
	l->fn = fn;
	l->ctx = ctx;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(l->fd, 128) ||
	    pipe2(l->wake, O_CLOEXEC)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		unix_listener_stop(l);
		return r;
	}
	r = -pthread_create(&l->thread, NULL, accept_loop, l);
	if (r) {
		snprintf(err, errlen, "cannot start the accepting thread: %s", strerror(-r));
		unix_listener_stop(l);
		return r;
	}
	l->started = true;
	*out = l;
	return 0;
}

struct unix_listener *unix_listener_stop(struct unix_listener *l)
{
	if (!l)
		return NULL;
	if (l->started) {
		if (write(l->wake[1], "x", 1) < 0)
			log_warn("unix socket: cannot wake the accepting thread: %s", strerror(errno));
		pthread_join(l->thread, NULL);
	}
	if (l->fd >= 0)
		close(l->fd);
	if (l->wake[0] >= 0)
		close(l->wake[0]);
	if (l->wake[1] >= 0)
		close(l->wake[1]);
	free(l);
	return NULL;
}
