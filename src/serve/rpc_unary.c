/*
 * rpc_unary.c - the answers of the unary calls (GetSnapshot, GetInfo, MarkPhase) from the hub
 * and the phase marks, and the errors their clients read. No gRPC core here: rpc_server.c
 * reads the requests, checks the right to mark and sends the answers.
 */
#include "rpc_unary.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hub_msg.h"
#include "info_pb.h"
#include "phases.h"

/* GetInfo with device settings reads sysfs for every device: the answer is kept while the
 * hub's Info is the same one (an interval) and at most SETTINGS_FRESH_NS, so that a client
 * asking in a loop costs one read per interval, not one per call. */
#define SETTINGS_FRESH_NS 1000000000ull

static struct {
	pthread_mutex_t lock;
	struct hub_msg *base;       /* the hub's Info it was made from (a reference held) */
	struct hub_msg *answer;
	uint64_t made_ns;
} settings_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The Info base with device settings read from sysfs_root, or the one made last. */
static struct hub_msg *with_settings(struct hub_msg *base, const char *sysfs_root)
{
	struct hub_msg *out;
	uint64_t now = iop_clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&settings_cache.lock);
	if (settings_cache.answer && settings_cache.base == base &&
	    now - settings_cache.made_ns < SETTINGS_FRESH_NS) {
		out = hub_msg_ref(settings_cache.answer);
		pthread_mutex_unlock(&settings_cache.lock);
		return out;
	}
	out = info_with_settings(base, sysfs_root);
	if (out) {
		if (settings_cache.answer)
			hub_msg_unref(settings_cache.answer);
		if (settings_cache.base)
			hub_msg_unref(settings_cache.base);
		settings_cache.answer = hub_msg_ref(out);
		settings_cache.base = hub_msg_ref(base);
		settings_cache.made_ns = now;
	}
	pthread_mutex_unlock(&settings_cache.lock);
	return out;
}

void rpc_unary_forget(void)
{
	pthread_mutex_lock(&settings_cache.lock);
	if (settings_cache.answer)
		hub_msg_unref(settings_cache.answer);
	if (settings_cache.base)
		hub_msg_unref(settings_cache.base);
	settings_cache.answer = settings_cache.base = NULL;
	pthread_mutex_unlock(&settings_cache.lock);
}

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

/*
 * The Info *out with the phases open now: the hub's Info was built at the end of the last
 * interval, and a mark's reply reaches its client before the Info after the mark's interval
 * edge is built (seen on a busy machine: a client that had marked two phases
 * found one of them in Info).
 */
static int with_open_phases(struct hub *hub, struct hub_msg **out)
{
	Iopulse__V1__PhaseMark **open;
	struct hub_msg *now;
	size_t n;
	int r = phases_open(hub_phases(hub), &open, &n);

	if (!r) {
		now = info_with_open_phases(*out, open, n);
		r = now ? 0 : -ENOMEM;
	}
	if (r) {
		hub_msg_unref(*out);
		*out = NULL;
		return r;
	}
	hub_msg_unref(*out);
	*out = now;
	return 0;
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
		*out = with_settings(cached, sysfs_root);
		hub_msg_unref(cached);
		r = *out ? 0 : -ENOMEM;
	} else if (!r) {
		*out = cached;
	}
	iopulse__v1__info_request__free_unpacked(q, NULL);
	if (!r)
		r = with_open_phases(hub, out);
	return failed(r, err, errlen);
}

int rpc_unary_mark(struct hub *hub, bool stopping, const uint8_t *req, size_t len,
		   const char *owner, uint64_t *id, char *err, size_t errlen)
{
	int r = stopping ? -EAGAIN : phases_submit(hub_phases(hub), req, len, owner, id, err,
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
