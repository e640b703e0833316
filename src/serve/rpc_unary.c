/*
 * rpc_unary.c - the answers of the unary calls (GetSnapshot, GetInfo, MarkPhase) from the hub
 * and the phase marks, and the errors their clients read. No gRPC core here: rpc_server.c
 * reads the requests, checks the right to mark and sends the answers.
 */
#include "rpc_unary.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "info_pb.h"
#include "phases.h"

/* An error without a line of its own: the errno's. */
static int failed(int r, char *err, size_t errlen)
{
	if (r && !err[0])
		snprintf(err, errlen, "%s", strerror(-r));
	return r;
}

int rpc_unary_snapshot(struct hub *hub, const uint8_t *req, size_t len, struct hub_msg **out,
		       char *err, size_t errlen)
{
	return failed(hub_snapshot(hub, req, len, out, err, errlen), err, errlen);
}

int rpc_unary_info(struct hub *hub, const uint8_t *req, size_t len, const char *sysfs_root,
		   struct hub_msg **out, char *err, size_t errlen)
{
	Iopulse__V1__InfoRequest *q = iopulse__v1__info_request__unpack(NULL, len, req);
	struct hub_msg *cached = NULL;
	int r;

	if (!q) {
		snprintf(err, errlen, "InfoRequest does not decode");
		return -EINVAL;
	}
	r = hub_info(hub, &cached);
	if (r == -EAGAIN)
		snprintf(err, errlen, "iopulsed is starting; try again in a moment");
	if (!r && q->device_settings) {
		*out = info_with_settings(cached, sysfs_root);
		hub_msg_unref(cached);
		r = *out ? 0 : -ENOMEM;
	} else if (!r) {
		*out = cached;
	}
	iopulse__v1__info_request__free_unpacked(q, NULL);
	return failed(r, err, errlen);
}

int rpc_unary_mark(struct hub *hub, bool stopping, const uint8_t *req, size_t len,
		   const char *owner, uint64_t *id, char *err, size_t errlen)
{
	int r = stopping ? -EAGAIN : phases_submit_as(hub_phases(hub), req, len, owner, id, err,
						      errlen);

	if (r == -EAGAIN)
		snprintf(err, errlen, "iopulsed is shutting down");
	return failed(r, err, errlen);
}

int rpc_unary_mark_reply(struct hub *hub, uint64_t id, bool final, struct hub_msg **out,
			 char *err, size_t errlen)
{
	int r = phases_reply(hub_phases(hub), id, out);

	if (r == 1 || (r == 0 && !final))
		return r;
	if (r) {
		snprintf(err, errlen, "the mark was made but its answer was lost (out of memory)");
		return -EIO;
	}
	snprintf(err, errlen, "iopulsed stopped before the mark's interval edge");
	return -EAGAIN;
}
