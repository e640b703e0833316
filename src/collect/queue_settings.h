/* queue_settings.h - a block device's queue settings, read from sysfs when asked */
#ifndef IOPULSE_QUEUE_SETTINGS_H
#define IOPULSE_QUEUE_SETTINGS_H

#include <stddef.h>

#define QS_IOSCHED_MAX 48        /* tunables kept of one scheduler (bfq has 13) */
#define QS_NAME_MAX 64
#define QS_VALUE_MAX 128

struct qs_tunable {
	char name[QS_NAME_MAX];
	char value[QS_VALUE_MAX];
};

/* What the file said; -1 (numbers) or "" (strings) where the device has no such file or its
 * content does not parse. */
struct queue_settings {
	char scheduler[32];              /* queue/scheduler: the [selected] entry */
	char schedulers[8][32];          /* the entries offered */
	size_t n_schedulers;
	struct qs_tunable iosched[QS_IOSCHED_MAX];   /* queue/iosched/<name>, sorted by name */
	size_t n_iosched;
	long long nr_requests;           /* queue/nr_requests */
	long long queue_depth;           /* device/queue_depth (SCSI, SATA) */
	long long read_ahead_kb;         /* queue/read_ahead_kb */
	long long wbt_lat_usec;          /* queue/wbt_lat_usec */
	long long max_sectors_kb;        /* queue/max_sectors_kb */
	long long nomerges;              /* queue/nomerges */
	long long rotational;            /* queue/rotational */
	char write_cache[32];            /* queue/write_cache: "write back", "write through" */
	char firmware[64];               /* device/firmware_rev (NVMe), else device/rev */
};

/*
 * The settings of block device name (a kernel name from sysfs_root/class/block, e.g. sda,
 * nvme0n1, dm-0) as sysfs shows them now; a partition's are its disk's. 0, -EINVAL for a
 * name that is not one (empty, '/', '.', '..', too long), -ENOENT when sysfs has no such
 * device, other -errno when its directory cannot be opened.
 */
int queue_settings_read(const char *sysfs_root, const char *name, struct queue_settings *out);

#endif
