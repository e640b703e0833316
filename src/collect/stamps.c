/* stamps.c - the completion-only mode's check, per device, of the kernel's time stamps its
 * latencies come from: one log line when a device's latency degrades or comes back */
#include "stamps.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"

struct slot_stamps {
	uint32_t kdev;
	enum stamp_state state;
};

struct stamps {
	uint32_t nslots;
	struct slot_stamps *s;
};

enum stamp_state stamps_judge(const uint64_t cnt[IOP_C_MAX], uint64_t split)
{
	static const unsigned int data_ops[] = { IOP_OP_READ, IOP_OP_WRITE, IOP_OP_DISCARD };
	uint64_t data = 0, untimed = 0, stamped = 0;
	unsigned int i, op;

	for (i = 0; i < sizeof(data_ops) / sizeof(data_ops[0]); i++) {
		op = data_ops[i];
		/* completions counted from /proc/diskstats (unseen) have no stamps to judge */
		data += cnt[IOP_C_IOS + op] - cnt[IOP_C_UNSEEN + op];
		untimed += cnt[IOP_C_UNTIMED + op];
	}
	if (data && untimed >= data)
		return STAMPS_COUNTS_ONLY;
	for (op = 0; op < IOP_OP_MAX; op++)
		stamped += cnt[IOP_C_IOS + op] - cnt[IOP_C_UNSEEN + op] - cnt[IOP_C_UNTIMED + op];
	if (!stamped)
		return STAMPS_UNKNOWN;
	if (!split && cnt[IOP_C_NO_DISPATCH_TS])
		return STAMPS_TOTAL_ONLY;
	return STAMPS_FULL;
}

int stamps_new(struct stamps **out, uint32_t nslots)
{
	struct stamps *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->nslots = nslots;
	s->s = calloc(nslots, sizeof(*s->s));
	if (!s->s) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

struct stamps *stamps_free(struct stamps *s)
{
	if (s)
		free(s->s);
	free(s);
	return NULL;
}

void stamps_check(struct stamps *s, uint32_t slot, uint32_t kdev, const char *name,
		  const uint64_t cnt[IOP_C_MAX], uint64_t split)
{
	enum stamp_state now = stamps_judge(cnt, split), was;
	struct slot_stamps *ss;

	if (slot >= s->nslots)
		return;
	ss = &s->s[slot];
	if (ss->kdev != kdev) {
		ss->kdev = kdev;
		ss->state = STAMPS_UNKNOWN;
	}
	was = ss->state;
	if (now == STAMPS_UNKNOWN || now == was)
		return;
	ss->state = now;
	if (now == STAMPS_COUNTS_ONLY)
		log_warn("%s: histogram mode completion: its requests carry no set-up time (its "
			 "queue/iostats is off): counted, without latency", name);
	else if (now == STAMPS_TOTAL_ONLY)
		log_warn("%s: histogram mode completion: its dispatches carry no time (the queue "
			 "keeps no blk-stat statistics: no wbt, blk-iolatency or bfq): total latency "
			 "only, no queue wait or service time", name);
	else if (was != STAMPS_UNKNOWN)
		log_info("%s: histogram mode completion: its requests carry the kernel's time "
			 "stamps again: latency measured", name);
}
