/* devices.h - block device table: names from sysfs, roll-up, dm, Ceph OSD labels */
#ifndef IOPULSE_DEVICES_H
#define IOPULSE_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "iopulse.h"

struct iop_device {
	dev_t dev;               /* user-space dev_t (makedev) */
	dev_t disk;              /* the whole disk; == dev unless this is a partition */
	bool is_partition;
	bool present;            /* listed in sysfs at the last scan with a non-zero size */
	bool rotational;
	unsigned long long size_bytes;
	char name[64];           /* kernel name: sda, nvme0n1, loop3, dm-0, sda1 */
	char model[64];          /* device/model, or loop/backing_file for loop devices, or "" */
	char dm_name[128];       /* dm/name for device-mapper volumes, or "" */
	char holders[256];       /* comma list of dm/md devices stacked on this one, or "" */
	char slaves[256];        /* for dm/md: comma list of underlying devices, or "" */
	char disks[256];         /* for dm/md: the disks at the bottom of its stack (slaves of
				  * slaves, a partition's disk), comma list; "" for a disk */
	int osd_id;              /* Ceph OSD id using this device, -1 if none (see devices_new) */
	char osd_role[16];       /* "block", "block.db", "block.wal" or "" */
	bool seen_absent;        /* internal: listed in sysfs at the last scan with size 0 */
	bool was_present;        /* internal: present before the current scan */
};

struct devices;

/* The kernel's dev_t encoding (IOP_KDEV_MINORBITS minor bits) as a user-space dev_t. */
static inline dev_t devices_from_kdev(unsigned int kdev)
{
	return makedev(IOP_KDEV_MAJOR(kdev), IOP_KDEV_MINOR(kdev));
}

/* A user-space dev_t in the kernel's encoding, as the programs key devices. */
static inline unsigned int devices_to_kdev(dev_t dev)
{
	return major(dev) << IOP_KDEV_MINORBITS | minor(dev);
}

/*
 * sysfs_root: normally "/sys"; ceph_dir: normally "/var/lib/ceph/osd" (NULL: no Ceph labels;
 * a missing or unreadable directory is no error either). Scans once; -errno on failure.
 *
 * OSD data directories are ceph_dir/<cluster>-<id>/ (a "whoami" file there overrides the id)
 * whose block, block.db and block.wal entries resolve (stat) to block device nodes. That
 * device gets the OSD id and role; so do the devices under it: the slaves of a dm device
 * (LVM: dm-N -> sdb), recursively, and a partition's disk. A device under the devices of two
 * different OSDs (one NVMe disk holding the block.db of several) gets no label, since no one
 * id would be true; its partitions or logical volumes carry their own.
 */
int devices_new(struct devices **out, const char *sysfs_root, const char *ceph_dir);
struct devices *devices_free(struct devices *d);

/*
 * Re-read sysfs/class/block and the Ceph OSD directories. Returns the number of devices in
 * the table or -errno (the table is then unchanged). The table holds:
 *  - every device listed in sysfs; present only if its size is non-zero (a detached loop
 *    device is listed with size 0: in the table, not present);
 *  - a device listed at the previous scan but not at this one, with present = false and its
 *    last attributes, so its last interval can still be named; it is dropped at the next
 *    scan unless it is listed again.
 * Entries are sorted by dev. Attributes other than size are re-read when a device appears,
 * is re-created, changes presence, or any device comes or goes, and at least every 30th scan.
 */
int devices_scan(struct devices *d);

/* Look up by user-space dev_t; NULL if unknown. Pointers stay valid until the next scan
 * or devices_free. */
const struct iop_device *devices_get(struct devices *d, dev_t dev);

/* Iterate in dev order: returns the i-th device (0-based) or NULL past the end. */
const struct iop_device *devices_at(struct devices *d, size_t i);
size_t devices_count(struct devices *d);

/* The disk a partition belongs to (dev itself for disks and unknown devices). */
dev_t devices_rollup(struct devices *d, dev_t dev);

/* Name match against shell globs (fnmatch): selected if include is empty or any include
 * pattern matches, and no exclude pattern matches. */
bool devices_name_selected(const char *name, char *const *include, size_t ninclude,
			   char *const *exclude, size_t nexclude);

#endif
