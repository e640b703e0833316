/*
 * fuzz_requests.c - libFuzzer target: what the server does with a client's request bytes
 * (MarkPhase, Subscribe, GetSnapshot decoding and validation) against a hub holding data.
 * The first byte picks the method; the rest is the request as it came off the wire.
 */
#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "hist_math.h"
#include "hub.h"
#include "phases.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define K IOP_HIST_K_DEFAULT
#define NB IOP_HIST_NBUCKETS(K)

static struct hub *hub;
static struct iop_device dev;
static struct iop_dev_interval devs[1];
static uint64_t counts[NB];

/* One interval of one device with a few reads in two buckets. */
static void publish(uint64_t seq)
{
	struct iop_interval iv = { .seq = seq, .hist_k = K, .ndevs = 1, .devs = devs };

	iv.start_mono_ns = (seq - 1) * 1000000000ull;
	iv.end_mono_ns = seq * 1000000000ull;
	memset(devs, 0, sizeof(devs));
	dev = (struct iop_device){ .dev = makedev(7, 3), .disk = makedev(7, 3), .present = true,
				   .osd_id = -1 };
	strcpy(dev.name, "loop3");
	counts[iop_hist_index(seq * 1000, K)] = seq;
	devs[0].info = &dev;
	devs[0].cnt[IOP_C_IOS + IOP_OP_READ] = seq;
	devs[0].hist[IOP_H_SERVICE + IOP_OP_READ] =
		(struct iop_hist_view){ .k = K, .nbuckets = NB, .counts = counts };
	hub_publish(hub, &iv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t seq;
	struct server_limits lim = server_limits_default();
	struct hub_msg *m = NULL;
	struct hub_sub *sub = NULL;
	char err[512];
	uint64_t id;

	if (!hub) {
		lim.mark_rate = 1000;
		if (hub_new(&hub, 1000, 60000, &lim))
			return 0;
		for (seq = 1; seq <= 3; seq++)
			publish(seq);
	}
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (!phases_submit(hub_phases(hub), data + 1, size - 1, "", &id, err, sizeof(err))) {
			phases_cut(hub_phases(hub));
			publish(seq++);             /* the mark's edge; its reply becomes ready */
			if (phases_reply(hub_phases(hub), id, &m) == 1)
				hub_msg_unref(m);
		}
		break;
	case 1:
		if (!hub_subscribe(hub, data + 1, size - 1, "", NULL, &sub, err, sizeof(err))) {
			while ((m = hub_next(hub, sub)))
				hub_msg_unref(m);
			hub_unsubscribe(hub, sub);
		}
		break;
	default:
		if (!hub_snapshot(hub, data + 1, size - 1, &m, err, sizeof(err)))
			hub_msg_unref(m);
		break;
	}
	return 0;
}
