/*
 * rpc_unix.c - the gRPC server's unix socket file: a stale one removed, then its group and
 * mode. No gRPC core here: rpc_server.c binds the socket between the two steps.
 */
#include "rpc_unix.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A socket file nobody listens on is left over from a crash: remove it. */
int rpc_unix_prepare(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "server.socket '%s' is longer than %zu bytes", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "cannot create %s for the socket: %s", dir, strerror(errno));
			return r;
		}
	}
	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		/* only a stale socket is ours to remove, never a file someone put there */
		snprintf(err, errlen, "server.socket %s exists and is not a socket; remove it or "
			 "choose another path", path);
		return -EEXIST;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (r == 0) {
		snprintf(err, errlen, "%s is in use: another iopulsed is serving there (set "
			 "server.socket or --socket to run a second one)", path);
		return -EADDRINUSE;
	}
	if (unlink(path) && errno != ENOENT) {
		r = -errno;
		snprintf(err, errlen, "cannot remove the stale socket %s: %s", path, strerror(errno));
		return r;
	}
	return 0;
}

int rpc_unix_secure(const char *path, unsigned int mode, const char *group, char *err,
		    size_t errlen)
{
	struct group *g;
	int r;

	if (group && *group) {
		g = getgrnam(group);
		if (!g) {
			snprintf(err, errlen, "server.socket_group: no group named '%s'", group);
			return -ENOENT;
		}
		if (chown(path, (uid_t)-1, g->gr_gid)) {
			r = -errno;
			snprintf(err, errlen, "cannot give %s to group %s: %s", path, group,
				 strerror(errno));
			return r;
		}
	}
	if (chmod(path, mode)) {
		r = -errno;
		snprintf(err, errlen, "cannot chmod %s to %04o: %s", path, mode, strerror(errno));
		return r;
	}
	return 0;
}
