/* rpc_unary.h - the answers of the unary calls: GetSnapshot, GetInfo, MarkPhase */
#ifndef IOPULSE_RPC_UNARY_H
#define IOPULSE_RPC_UNARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hub.h"

/*
 * Requests are packed protobuf; answers are packed messages (the caller takes *out). On an
 * error each returns -errno and a line in err for the client (err empty on entry): -EAGAIN
 * while iopulsed starts or stops, -EINVAL, -ENOENT, -EPERM, -EBUSY, -ENOMEM as hub.h and
 * phases.h say, -EIO when a mark's answer was lost.
 */
int rpc_unary_snapshot(struct hub *hub, const uint8_t *req, size_t len, struct hub_msg **out,
		       char *err, size_t errlen);
/* The Info built at the last interval; with InfoRequest.device_settings, a copy with each
 * device's queue settings read from sysfs_root ("/sys"), kept for the calls that come in the
 * same interval and within 1 s (GetInfo in a loop costs one sysfs read per interval). */
int rpc_unary_info(struct hub *hub, const uint8_t *req, size_t len, const char *sysfs_root,
		   struct hub_msg **out, char *err, size_t errlen);
/* Drop the kept answer (the server stops). */
void rpc_unary_forget(void);

/*
 * A MarkPhase from owner (phases_submit), the right to mark already checked; stopping: the
 * server stops. 0 and *id: the answer waits for the mark's interval edge (rpc_unary_mark_reply).
 */
int rpc_unary_mark(struct hub *hub, bool stopping, const uint8_t *req, size_t len,
		   const char *owner, uint64_t *id, char *err, size_t errlen);
/*
 * The answer to the mark id: 1 and *out when the main loop has taken its edge, 0 while it
 * waits; final (the server stops): it waits no more.
 */
int rpc_unary_mark_reply(struct hub *hub, uint64_t id, bool final, struct hub_msg **out,
			 char *err, size_t errlen);

#endif
