/* rpc_unix.h - the gRPC server's unix socket file: a stale one removed, then its group and mode */
#ifndef IOPULSE_RPC_UNIX_H
#define IOPULSE_RPC_UNIX_H

#include <stddef.h>

/*
 * Before the bind: make the socket's directory, and remove a socket file nobody listens on
 * (left over from a crash). Refuses a path too long for a socket, a file that is not a socket,
 * and a socket another iopulsed serves on. -errno and one line in err.
 */
int rpc_unix_prepare(const char *path, char *err, size_t errlen);
/* After the bind: give the socket to group (NULL or "": leave it) and chmod it to mode. */
int rpc_unix_secure(const char *path, unsigned int mode, const char *group, char *err,
		    size_t errlen);

#endif
