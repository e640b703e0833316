/* server_limits.h - what clients may make the daemon hold: the server.* limits, in one place */
#ifndef IOPULSE_SERVER_LIMITS_H
#define IOPULSE_SERVER_LIMITS_H

/*
 * A request over a limit is refused with RESOURCE_EXHAUSTED and a message naming the
 * config key; GetInfo reports every one (Info.limits).
 */
struct server_limits {
	unsigned int mark_rate;       /* server.mark_rate: marks per second, bursts of twice that */
	unsigned int mark_bytes;      /* server.mark_bytes: largest packed MarkPhaseRequest */
	unsigned int mark_labels;     /* server.mark_labels: labels on one mark */
	unsigned int open_phases;     /* server.open_phases: begin marks without their end */
	unsigned int subscribers;     /* server.subscribers: Subscribe streams at once */
	unsigned int request_bytes;   /* server.request_bytes: largest request of any kind */
	unsigned int ring_mib;        /* server.ring_mib: packed Updates the replay ring holds */
};

#define IOP_MARK_RATE_DEFAULT 20
#define IOP_MARK_BYTES_DEFAULT 4096
#define IOP_MARK_LABELS_DEFAULT 32
#define IOP_OPEN_PHASES_DEFAULT 1024
#define IOP_SUBSCRIBERS_DEFAULT 256
#define IOP_REQUEST_BYTES_DEFAULT 65536
#define IOP_RING_MIB_DEFAULT 256

static inline struct server_limits server_limits_default(void)
{
	return (struct server_limits){
		.mark_rate = IOP_MARK_RATE_DEFAULT, .mark_bytes = IOP_MARK_BYTES_DEFAULT,
		.mark_labels = IOP_MARK_LABELS_DEFAULT, .open_phases = IOP_OPEN_PHASES_DEFAULT,
		.subscribers = IOP_SUBSCRIBERS_DEFAULT, .request_bytes = IOP_REQUEST_BYTES_DEFAULT,
		.ring_mib = IOP_RING_MIB_DEFAULT,
	};
}

#endif
