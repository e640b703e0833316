/* devices.h - block device table: names from sysfs, roll-up, dm, Ceph OSD labels */
#ifndef IOPULSE_DEVICES_H
#define IOPULSE_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

struct iop_device {
	dev_t dev;               /* user-space dev_t (makedev) */
	dev_t disk;              /* the whole disk; == dev unless this is a partition */
	bool is_partition;
	bool present;            /* seen in sysfs at the last scan with a non-zero size */
	bool rotational;
	unsigned long long size_bytes;
	char name[64];           /* kernel name: sda, nvme0n1, loop3, dm-0, sda1 */
	char model[64];          /* device/model, or loop/backing_file for loop devices, or "" */
	char dm_name[128];       /* dm/name for device-mapper volumes, or "" */
	char holders[256];       /* comma list of dm/md devices stacked on this one, or "" */
	char slaves[256];        /* for dm/md: comma list of underlying devices, or "" */
	int osd_id;              /* Ceph OSD id using this device, -1 if none */
	char osd_role[16];       /* "block", "block.db", "block.wal" or "" */
	bool seen_absent;        /* internal: listed in sysfs at the last scan with size 0 */
	bool was_present;        /* internal: present before the current scan */
};

struct devices;

/* The kernel's dev_t encoding (20 minor bits) as a user-space dev_t. */
static inline dev_t devices_from_kdev(unsigned int kdev)
{
	return makedev(kdev >> 20, kdev & 0xfffff);
}

/*
 * sysfs_root: normally "/sys"; ceph_dir: normally "/var/lib/ceph/osd" (NULL: no Ceph labels).
 * OSD data directories are ceph_dir/<cluster>-<id>/ whose block, block.db and block.wal
 * symlinks resolve (stat) to block device nodes.
 */
int devices_new(struct devices **out, const char *sysfs_root, const char *ceph_dir);
struct devices *devices_free(struct devices *d);

/* Re-read sysfs and the Ceph OSD directories. Returns number of devices or -errno. */
int devices_scan(struct devices *d);

/* Look up by user-space dev_t; NULL if unknown. Pointers stay valid until the next scan. */
const struct iop_device *devices_get(struct devices *d, dev_t dev);

/* Iterate: returns the i-th device (0-based) or NULL past the end. */
const struct iop_device *devices_at(struct devices *d, size_t i);
size_t devices_count(struct devices *d);

/* The disk a partition belongs to (dev itself for disks and unknown devices). */
dev_t devices_rollup(struct devices *d, dev_t dev);

/* Name match against shell globs (fnmatch). include empty = everything. */
bool devices_name_selected(const char *name, char *const *include, size_t ninclude,
			   char *const *exclude, size_t nexclude);

#endif
