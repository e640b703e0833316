/* info_pb.h - builds the packed iopulse.v1.Info answer */
#ifndef IOPULSE_INFO_PB_H
#define IOPULSE_INFO_PB_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "devices.h"
#include "hub_msg.h"
#include "server_limits.h"
#include "interval.h"
#include "iopulse.pb-c.h"

struct info_src {
	const struct iop_config *config;
	struct devices *devices;
	const char *attach_mode;
	bool sync_on;                 /* sync tracking loaded */
	const char *sync_off_reason;  /* why not although configured, or "" */
	unsigned int hist_k;
	bool completion_only;         /* histogram.mode in effect: completion */
	uint64_t started_realtime_ns;
	uint64_t bpf_run_time_ns;     /* cumulative, all programs */
	uint64_t bpf_run_count;
	bool bpf_stats;
	uint64_t last_seq;
	unsigned int subscribers;
	unsigned int ring_seconds;
	struct server_limits limits;
	uint64_t ring_bytes;  /* in effect (a reload changes them only at restart) */
	uint64_t fanout_ns;
	unsigned int fanout_streams;
	Iopulse__V1__PhaseMark **open_phases;   /* taken by info_build */
	size_t n_open_phases;
};

/* NULL on ENOMEM. Takes src->open_phases. */
struct hub_msg *info_build(const struct info_src *src);

/* A copy of the packed Info with each device's queue settings read from sysfs_root now
 * (DeviceInfo.settings; none for a device gone meanwhile). NULL on ENOMEM or if info does
 * not decode. Reads a dozen files per device: for GetInfo with device_settings, not for the
 * Info built every interval. */
struct hub_msg *info_with_settings(const struct hub_msg *info, const char *sysfs_root);

/*
 * A copy of the packed Info whose open_phases are open[0..n) (taken: freed whatever
 * happens), the phases open when GetInfo is answered rather than when the Info was built at
 * the end of the last interval: a client that has just marked a phase finds it open. NULL on
 * ENOMEM or if info does not decode.
 */
struct hub_msg *info_with_open_phases(const struct hub_msg *info,
				      Iopulse__V1__PhaseMark **open, size_t n);

#endif
