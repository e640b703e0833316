/* test_devices.c - device table against a fake sysfs tree and fake Ceph OSD directories */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check_main.h"
#include "devices.h"
#include "info_pb.h"
#include "queue_settings.h"
#include "update_pb.h"

#define SCSI "devices/pci0000:00/0000:00:04.0/virtio1/host0/target0:0:0/0:0:0:0/block"
#define SCSI2 "devices/pci0000:00/0000:00:05.0/virtio2/host1/target1:0:0/1:0:0:0/block"
#define VIRT "devices/virtual/block"

static char base[64];         /* made by main, so that it is removed even after a failure */
static char root[PATH_MAX];   /* one per test, in base */

/* root/rel into buf */
static const char *at(char *buf, size_t len, const char *rel)
{
	ck_assert_int_lt(snprintf(buf, len, "%s/%s", root, rel), (int)len);
	return buf;
}

/* mkdir -p root/rel */
static void mkdirs(const char *rel)
{
	char path[PATH_MAX], *slash;

	at(path, sizeof(path), rel);
	for (slash = path + strlen(root) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*slash = '/';
	}
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void parent_dirs(const char *rel)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", rel);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdirs(dir);
	}
}

static void put(const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	parent_dirs(rel);
	f = fopen(at(path, sizeof(path), rel), "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void rm(const char *rel)
{
	char path[PATH_MAX];

	ck_assert_int_eq(unlink(at(path, sizeof(path), rel)), 0);
}

/* symlink root/link -> root/target */
static void sym(const char *link, const char *target)
{
	char l[PATH_MAX], t[PATH_MAX];

	parent_dirs(link);
	ck_assert_int_eq(symlink(at(t, sizeof(t), target), at(l, sizeof(l), link)), 0);
}

/* A device directory sys/dir/name with dev and size, listed in sys/class/block. */
static void blockdev(const char *dir, const char *name, const char *devno, const char *size)
{
	char rel[PATH_MAX], link[PATH_MAX];

	snprintf(rel, sizeof(rel), "sys/%s/%s/dev", dir, name);
	put(rel, devno);
	snprintf(rel, sizeof(rel), "sys/%s/%s/size", dir, name);
	put(rel, size);
	snprintf(rel, sizeof(rel), "sys/%s/%s", dir, name);
	snprintf(link, sizeof(link), "sys/class/block/%s", name);
	sym(link, rel);
}

static void node(const char *name, unsigned int ma, unsigned int mi)
{
	char rel[PATH_MAX], path[PATH_MAX];

	snprintf(rel, sizeof(rel), "dev/%s", name);
	parent_dirs(rel);
	ck_assert_int_eq(mknod(at(path, sizeof(path), rel), S_IFBLK | 0600, makedev(ma, mi)), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void remove_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * sda (rotational, model with trailing blanks) with partitions sda1 and sda2; sdb and sdc
 * under dm-0 "vg0-data"; loop0 attached to a file, loop1 detached (size 0). Plus entries
 * that must be skipped: a dangling link, an unparsable dev, a name too long.
 */
static void setup(void)
{
	snprintf(root, sizeof(root), "%s/test-XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(root));

	blockdev(SCSI, "sda", "8:0\n", "2097152\n");
	put("sys/" SCSI "/sda/device/model", "QEMU HARDDISK   \n");
	put("sys/" SCSI "/sda/queue/rotational", "1\n");
	blockdev(SCSI "/sda", "sda1", "8:1\n", "1024\n");
	put("sys/" SCSI "/sda/sda1/partition", "1\n");
	blockdev(SCSI "/sda", "sda2", "8:2\n", "2048\n");
	put("sys/" SCSI "/sda/sda2/partition", "2\n");

	blockdev(SCSI2, "sdb", "8:16\n", "4096\n");
	put("sys/" SCSI2 "/sdb/device/model", "  FAST SSD\t\n");
	put("sys/" SCSI2 "/sdb/queue/rotational", "0\n");
	sym("sys/" SCSI2 "/sdb/holders/dm-0", "sys/" VIRT "/dm-0");
	blockdev(SCSI2, "sdc", "8:32\n", "4096\n");
	put("sys/" SCSI2 "/sdc/queue/rotational", "0\n");
	sym("sys/" SCSI2 "/sdc/holders/dm-0", "sys/" VIRT "/dm-0");

	blockdev(VIRT, "dm-0", "253:0\n", "8192\n");
	put("sys/" VIRT "/dm-0/dm/name", "vg0-data\n");
	put("sys/" VIRT "/dm-0/queue/rotational", "0\n");
	sym("sys/" VIRT "/dm-0/slaves/sdc", "sys/" SCSI2 "/sdc");
	sym("sys/" VIRT "/dm-0/slaves/sdb", "sys/" SCSI2 "/sdb");

	blockdev(VIRT, "loop0", "7:0\n", "2048\n");
	put("sys/" VIRT "/loop0/loop/backing_file", "/var/tmp/disk image.img\n");
	blockdev(VIRT, "loop1", "7:1\n", "0\n");

	sym("sys/class/block/ghost", "sys/" VIRT "/ghost");
	blockdev(VIRT, "junk", "8:x\n", "100\n");
	blockdev(VIRT, "a-name-much-longer-than-the-sixty-four-bytes-a-kernel-name-may-have",
		 "250:0\n", "100\n");
}

/* A failed check ends a forked test at once, without its teardown: main removes base. */
static void teardown(void)
{
	remove_tree(root);
}

static struct devices *open_devs(const char *ceph_rel)
{
	char sys[PATH_MAX], ceph[PATH_MAX];
	struct devices *d = NULL;

	at(sys, sizeof(sys), "sys");
	ck_assert_int_eq(devices_new(&d, sys, ceph_rel ? at(ceph, sizeof(ceph), ceph_rel) : NULL),
			 0);
	ck_assert_ptr_nonnull(d);
	return d;
}

static const struct iop_device *get(struct devices *d, unsigned int ma, unsigned int mi)
{
	const struct iop_device *x = devices_get(d, makedev(ma, mi));

	ck_assert_msg(x != NULL, "device %u:%u not in the table", ma, mi);
	return x;
}

START_TEST(test_names_and_order)
{
	static const char *const names[] = { "loop0", "loop1", "sda", "sda1", "sda2", "sdb",
					     "sdc", "dm-0" };
	struct devices *d = open_devs(NULL);
	size_t i;

	ck_assert_uint_eq(devices_count(d), 8);
	for (i = 0; i < 8; i++)
		ck_assert_str_eq(devices_at(d, i)->name, names[i]);
	ck_assert_ptr_null(devices_at(d, 8));
	ck_assert(get(d, 8, 16)->dev == makedev(8, 16));
	ck_assert_str_eq(get(d, 253, 0)->name, "dm-0");
	ck_assert_ptr_null(devices_get(d, makedev(250, 0)));
	ck_assert_int_eq(devices_scan(d), 8);
	devices_free(d);
}
END_TEST

START_TEST(test_partitions)
{
	struct devices *d = open_devs(NULL);
	const struct iop_device *sda = get(d, 8, 0), *sda1 = get(d, 8, 1);

	ck_assert(!sda->is_partition && sda->disk == sda->dev);
	ck_assert(sda1->is_partition && sda1->disk == makedev(8, 0));
	ck_assert(get(d, 8, 2)->disk == makedev(8, 0));
	ck_assert(sda1->rotational);                        /* the disk's */
	ck_assert_str_eq(sda1->model, "QEMU HARDDISK");     /* the disk's */
	ck_assert_uint_eq(sda1->size_bytes, 1024 * 512);
	ck_assert(devices_rollup(d, makedev(8, 1)) == makedev(8, 0));
	ck_assert(devices_rollup(d, makedev(8, 0)) == makedev(8, 0));
	ck_assert(devices_rollup(d, makedev(253, 0)) == makedev(253, 0));
	ck_assert(devices_rollup(d, makedev(99, 9)) == makedev(99, 9));
	devices_free(d);
}
END_TEST

START_TEST(test_present)
{
	struct devices *d = open_devs(NULL);

	ck_assert(get(d, 7, 0)->present);
	ck_assert_uint_eq(get(d, 7, 0)->size_bytes, 2048 * 512);
	ck_assert(!get(d, 7, 1)->present);                  /* detached loop: listed, size 0 */
	ck_assert(get(d, 7, 1)->seen_absent);
	ck_assert_uint_eq(get(d, 7, 1)->size_bytes, 0);
	ck_assert(get(d, 8, 0)->present && get(d, 253, 0)->present);
	ck_assert_uint_eq(get(d, 8, 0)->size_bytes, 2097152ull * 512);
	devices_free(d);
}
END_TEST

START_TEST(test_models)
{
	struct devices *d = open_devs(NULL);

	ck_assert_str_eq(get(d, 8, 0)->model, "QEMU HARDDISK");
	ck_assert_str_eq(get(d, 8, 16)->model, "FAST SSD");
	ck_assert_str_eq(get(d, 8, 32)->model, "");
	ck_assert_str_eq(get(d, 7, 0)->model, "/var/tmp/disk image.img");
	ck_assert_str_eq(get(d, 7, 1)->model, "");
	ck_assert_str_eq(get(d, 253, 0)->model, "");
	devices_free(d);
}
END_TEST

START_TEST(test_dm_and_rotational)
{
	struct devices *d = open_devs(NULL);

	ck_assert_str_eq(get(d, 253, 0)->dm_name, "vg0-data");
	ck_assert_str_eq(get(d, 253, 0)->slaves, "sdb,sdc");  /* sorted */
	ck_assert_str_eq(get(d, 253, 0)->holders, "");
	ck_assert_str_eq(get(d, 8, 16)->holders, "dm-0");
	ck_assert_str_eq(get(d, 8, 32)->holders, "dm-0");
	ck_assert_str_eq(get(d, 8, 16)->slaves, "");
	ck_assert_str_eq(get(d, 8, 0)->holders, "");
	ck_assert_str_eq(get(d, 8, 0)->dm_name, "");
	ck_assert(get(d, 8, 0)->rotational);
	ck_assert(!get(d, 8, 16)->rotational);
	ck_assert(!get(d, 253, 0)->rotational);
	ck_assert(!get(d, 7, 1)->rotational);              /* no queue/rotational: default */
	ck_assert_int_eq(get(d, 8, 0)->osd_id, -1);
	ck_assert_str_eq(get(d, 8, 0)->osd_role, "");
	devices_free(d);
}
END_TEST

START_TEST(test_device_vanishes)
{
	struct devices *d = open_devs(NULL);

	rm("sys/class/block/sdc");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(!get(d, 8, 32)->present);                 /* kept once, named */
	ck_assert(get(d, 8, 32)->was_present);
	ck_assert_str_eq(get(d, 8, 32)->name, "sdc");
	ck_assert(get(d, 8, 16)->present);
	ck_assert_int_eq(devices_scan(d), 7);
	ck_assert_ptr_null(devices_get(d, makedev(8, 32)));   /* then dropped */
	ck_assert_int_eq(devices_scan(d), 7);
	/* and back again */
	sym("sys/class/block/sdc", "sys/" SCSI2 "/sdc");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(get(d, 8, 32)->present);
	devices_free(d);
}
END_TEST

START_TEST(test_loop_detach_and_attach)
{
	struct devices *d = open_devs(NULL);

	/* loop0 detached: still listed, size 0 -> in the table, not present, for good */
	put("sys/" VIRT "/loop0/size", "0\n");
	rm("sys/" VIRT "/loop0/loop/backing_file");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(!get(d, 7, 0)->present && get(d, 7, 0)->was_present);
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(!get(d, 7, 0)->present && !get(d, 7, 0)->was_present);

	/* loop1 attached: present with its backing file */
	put("sys/" VIRT "/loop1/size", "4096\n");
	put("sys/" VIRT "/loop1/loop/backing_file", "/srv/one.img\n");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(get(d, 7, 1)->present);
	ck_assert_uint_eq(get(d, 7, 1)->size_bytes, 4096 * 512);
	ck_assert_str_eq(get(d, 7, 1)->model, "/srv/one.img");

	/* detached and attached to another file between two scans */
	put("sys/" VIRT "/loop1/loop/backing_file", "/srv/two.img\n");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_str_eq(get(d, 7, 1)->model, "/srv/two.img");
	devices_free(d);
}
END_TEST

START_TEST(test_device_appears)
{
	struct devices *d = open_devs(NULL);

	ck_assert_ptr_null(devices_get(d, makedev(8, 48)));
	blockdev(SCSI2, "sdd", "8:48\n", "100\n");
	put("sys/" SCSI2 "/sdd/device/model", "NEW ONE\n");
	put("sys/" SCSI2 "/sdd/queue/rotational", "1\n");
	ck_assert_int_eq(devices_scan(d), 9);
	ck_assert(get(d, 8, 48)->present && get(d, 8, 48)->rotational);
	ck_assert(!get(d, 8, 48)->was_present);
	ck_assert_str_eq(get(d, 8, 48)->name, "sdd");
	ck_assert_str_eq(get(d, 8, 48)->model, "NEW ONE");
	ck_assert_str_eq(devices_at(d, 7)->name, "sdd");     /* dev order */
	devices_free(d);
}
END_TEST

/* Scans past the first one, which reads everything. */
static struct devices *open_settled(void)
{
	struct devices *d = open_devs(NULL);

	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_int_eq(devices_scan(d), 8);
	return d;
}

/* A dm device removed: the disks under it lose it from their holders at once. */
START_TEST(test_dm_removed)
{
	struct devices *d = open_settled();

	rm("sys/class/block/dm-0");
	rm("sys/" SCSI2 "/sdb/holders/dm-0");
	rm("sys/" SCSI2 "/sdc/holders/dm-0");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(!get(d, 253, 0)->present);
	ck_assert_str_eq(get(d, 253, 0)->dm_name, "vg0-data");  /* last attributes kept */
	ck_assert_str_eq(get(d, 8, 16)->holders, "");
	ck_assert_str_eq(get(d, 8, 32)->holders, "");
	devices_free(d);
}
END_TEST

/* A dm device added on a disk already known: the disk's holders follow at once. */
START_TEST(test_dm_added)
{
	struct devices *d = open_settled();

	blockdev(VIRT, "dm-1", "253:1\n", "4096\n");
	put("sys/" VIRT "/dm-1/dm/name", "vg1-new\n");
	sym("sys/" VIRT "/dm-1/slaves/sdb", "sys/" SCSI2 "/sdb");
	sym("sys/" SCSI2 "/sdb/holders/dm-1", "sys/" VIRT "/dm-1");
	ck_assert_int_eq(devices_scan(d), 9);
	ck_assert_str_eq(get(d, 8, 16)->holders, "dm-0,dm-1");
	ck_assert_str_eq(get(d, 253, 1)->dm_name, "vg1-new");
	ck_assert_str_eq(get(d, 253, 1)->slaves, "sdb");
	devices_free(d);
}
END_TEST

/* An LV (dm-1) on an md raid1 (md0) of a partition (sda1) and a disk (sdb): the disks at the
 * bottom of each stack, each once. */
START_TEST(test_stack_disks)
{
	struct devices *d;

	blockdev(VIRT, "md0", "9:0\n", "1024\n");
	sym("sys/" VIRT "/md0/slaves/sda1", "sys/" SCSI "/sda/sda1");
	sym("sys/" VIRT "/md0/slaves/sdb", "sys/" SCSI2 "/sdb");
	blockdev(VIRT, "dm-1", "253:1\n", "1024\n");
	sym("sys/" VIRT "/dm-1/slaves/md0", "sys/" VIRT "/md0");
	blockdev(VIRT, "dm-2", "253:2\n", "1024\n");   /* on dm-0 and md0: sdb under both */
	sym("sys/" VIRT "/dm-2/slaves/dm-0", "sys/" VIRT "/dm-0");
	sym("sys/" VIRT "/dm-2/slaves/md0", "sys/" VIRT "/md0");
	d = open_devs(NULL);
	ck_assert_str_eq(get(d, 253, 0)->disks, "sdb,sdc");
	ck_assert_str_eq(get(d, 9, 0)->disks, "sda,sdb");
	ck_assert_str_eq(get(d, 253, 1)->disks, "sda,sdb");
	ck_assert_str_eq(get(d, 253, 2)->disks, "sdb,sdc,sda");
	ck_assert_str_eq(get(d, 8, 16)->disks, "");
	ck_assert_str_eq(get(d, 8, 1)->disks, "");
	devices_free(d);
}
END_TEST

/* dm-0 removed and another dm-0 created between two scans: same name and dev_t, new
 * sysfs directory. */
START_TEST(test_dm_recreated)
{
	struct devices *d = open_settled();
	char from[PATH_MAX], to[PATH_MAX];

	/* renamed, not removed, so that the new directory cannot reuse the old inode */
	ck_assert_int_eq(rename(at(from, sizeof(from), "sys/" VIRT "/dm-0"),
				at(to, sizeof(to), "sys/" VIRT "/dm-0.old")), 0);
	put("sys/" VIRT "/dm-0/dev", "253:0\n");
	put("sys/" VIRT "/dm-0/size", "8192\n");
	put("sys/" VIRT "/dm-0/dm/name", "vg0-other\n");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_str_eq(get(d, 253, 0)->dm_name, "vg0-other");
	ck_assert_str_eq(get(d, 253, 0)->slaves, "");
	devices_free(d);
}
END_TEST

/* A disk without media (size 0) gets some: everything is read again. */
START_TEST(test_media_inserted)
{
	struct devices *d;

	put("sys/" SCSI2 "/sdc/size", "0\n");
	d = open_settled();
	ck_assert(!get(d, 8, 32)->present);
	put("sys/" SCSI2 "/sdc/size", "4096\n");
	put("sys/" SCSI2 "/sdc/device/model", "CARD\n");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert(get(d, 8, 32)->present);
	ck_assert_str_eq(get(d, 8, 32)->model, "CARD");
	devices_free(d);
}
END_TEST

/* What changes without a device coming or going is picked up at the next of every 30th scan. */
START_TEST(test_periodic_full_scan)
{
	struct devices *d = open_devs(NULL);
	int i;

	put("sys/" SCSI2 "/sdb/device/model", "RENAMED\n");
	for (i = 2; i <= 30; i++) {        /* devices_new made scan 1 */
		ck_assert_int_eq(devices_scan(d), 8);
		ck_assert_str_eq(get(d, 8, 16)->model, "FAST SSD");
	}
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_str_eq(get(d, 8, 16)->model, "RENAMED");
	devices_free(d);
}
END_TEST

START_TEST(test_bad_attributes)
{
	struct devices *d;

	put("sys/" SCSI2 "/sdb/size", "12abc\n");
	put("sys/" SCSI2 "/sdc/size", "");
	put("sys/" SCSI2 "/sdc/device/model", "");
	put("sys/" VIRT "/dm-0/queue/rotational", "yes\n");
	d = open_devs(NULL);
	ck_assert_uint_eq(devices_count(d), 8);
	ck_assert(!get(d, 8, 16)->present);
	ck_assert(!get(d, 8, 32)->present);
	ck_assert_str_eq(get(d, 8, 32)->model, "");
	ck_assert(!get(d, 253, 0)->rotational);
	devices_free(d);
}
END_TEST

START_TEST(test_missing_root)
{
	struct devices *d = NULL;
	char path[PATH_MAX];

	ck_assert_int_eq(devices_new(&d, "/nonexistent-iopulse-sysfs", NULL), -ENOENT);
	ck_assert_ptr_null(d);
	mkdirs("empty-sys");
	ck_assert_int_eq(devices_new(&d, at(path, sizeof(path), "empty-sys"), NULL), -ENOENT);
	ck_assert_ptr_null(d);
	ck_assert_int_eq(devices_new(&d, NULL, NULL), -EINVAL);
	ck_assert_ptr_null(devices_free(NULL));
}
END_TEST

START_TEST(test_globs)
{
	char *inc[] = { "sd*", "nvme*" }, *exc[] = { "sda*" }, *loops[] = { "loop[0-9]*" };

	ck_assert(devices_name_selected("sdb", inc, 2, exc, 1));
	ck_assert(!devices_name_selected("sda", inc, 2, exc, 1));
	ck_assert(!devices_name_selected("sda1", inc, 2, exc, 1));
	ck_assert(devices_name_selected("nvme0n1", inc, 2, exc, 1));
	ck_assert(devices_name_selected("nvme0n1", inc, 2, NULL, 0));
	ck_assert(!devices_name_selected("loop0", inc, 2, NULL, 0));
	ck_assert(devices_name_selected("loop0", NULL, 0, NULL, 0));
	ck_assert(!devices_name_selected("loop12", NULL, 0, loops, 1));
	ck_assert(devices_name_selected("dm-0", NULL, 0, loops, 1));
	ck_assert(!devices_name_selected("ram0", NULL, 0, (char *[]){ "ram*" }, 1));
	ck_assert(!devices_name_selected("sdb", (char *[]){ "sd?" }, 1, (char *[]){ "*" }, 1));
	ck_assert(!devices_name_selected("sdb", (char *[]){ "sda" }, 1, NULL, 0));
}
END_TEST

START_TEST(test_kdev)
{
	ck_assert(devices_from_kdev((8u << 20) | 16) == makedev(8, 16));
	ck_assert(devices_from_kdev((259u << 20) | 0xfffff) == makedev(259, 0xfffff));
	ck_assert(devices_from_kdev(0) == makedev(0, 0));
}
END_TEST

/* LVM-based OSD 3: block -> /dev/ceph-vg/osd-block -> dm-0 over sdb and sdc;
 * its block.db on partition sda1. */
static void ceph_osd3(void)
{
	node("dm-0", 253, 0);
	node("sda1", 8, 1);
	sym("dev/ceph-vg/osd-block-1234", "dev/dm-0");
	sym("ceph/ceph-3/block", "dev/ceph-vg/osd-block-1234");
	sym("ceph/ceph-3/block.db", "dev/sda1");
	put("ceph/ceph-3/type", "bluestore\n");
}

START_TEST(test_ceph_labels)
{
	struct devices *d;

	ceph_osd3();
	d = open_devs("ceph");
	ck_assert_int_eq(get(d, 253, 0)->osd_id, 3);
	ck_assert_str_eq(get(d, 253, 0)->osd_role, "block");
	ck_assert_int_eq(get(d, 8, 16)->osd_id, 3);           /* dm slaves */
	ck_assert_str_eq(get(d, 8, 16)->osd_role, "block");
	ck_assert_int_eq(get(d, 8, 32)->osd_id, 3);
	ck_assert_str_eq(get(d, 8, 32)->osd_role, "block");
	ck_assert_int_eq(get(d, 8, 1)->osd_id, 3);            /* partition */
	ck_assert_str_eq(get(d, 8, 1)->osd_role, "block.db");
	ck_assert_int_eq(get(d, 8, 0)->osd_id, 3);            /* and its disk */
	ck_assert_str_eq(get(d, 8, 0)->osd_role, "block.db");
	ck_assert_int_eq(get(d, 8, 2)->osd_id, -1);
	ck_assert_int_eq(get(d, 7, 0)->osd_id, -1);
	ck_assert_str_eq(get(d, 7, 0)->osd_role, "");

	/* labels follow the symlinks at every scan */
	rm("ceph/ceph-3/block.db");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_int_eq(get(d, 8, 1)->osd_id, -1);
	ck_assert_int_eq(get(d, 8, 0)->osd_id, -1);
	ck_assert_int_eq(get(d, 8, 16)->osd_id, 3);
	devices_free(d);
}
END_TEST

START_TEST(test_ceph_whoami)
{
	struct devices *d;

	node("loop0", 7, 0);
	node("sdb", 8, 16);
	sym("ceph/ceph-12/block.wal", "dev/loop0");
	put("ceph/ceph-12/whoami", "7\n");                    /* wins over the name */
	sym("ceph/ceph-x/block", "dev/sdb");
	put("ceph/ceph-x/whoami", "5\n");                     /* no id in the name */
	sym("ceph/ceph-abc/block", "dev/sdb");                /* no id at all: skipped */
	put("ceph/ceph-9/whoami", "x9\n");                    /* bad whoami: the name's id */
	sym("ceph/ceph-9/block.db", "dev/loop0");
	d = open_devs("ceph");
	ck_assert_int_eq(get(d, 8, 16)->osd_id, 5);
	ck_assert_str_eq(get(d, 8, 16)->osd_role, "block");
	/* two OSDs name loop0 directly: the lower id wins, whichever is read first */
	ck_assert_int_eq(get(d, 7, 0)->osd_id, 7);
	ck_assert_str_eq(get(d, 7, 0)->osd_role, "block.wal");
	put("ceph/ceph-12/whoami", "10\n");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_int_eq(get(d, 7, 0)->osd_id, 9);
	ck_assert_str_eq(get(d, 7, 0)->osd_role, "block.db");
	devices_free(d);
}
END_TEST

START_TEST(test_ceph_missing_or_broken)
{
	struct devices *d = open_devs("no-such-ceph-dir");

	ck_assert_int_eq(get(d, 253, 0)->osd_id, -1);
	devices_free(d);

	put("ceph/ceph-1/block", "not a device\n");
	sym("ceph/ceph-2/block", "dev/nothing-here");
	node("unknown", 99, 9);                               /* not in sysfs */
	sym("ceph/ceph-4/block", "dev/unknown");
	put("ceph/stray-file", "x\n");
	d = open_devs("ceph");
	ck_assert_uint_eq(devices_count(d), 8);
	ck_assert_int_eq(get(d, 253, 0)->osd_id, -1);
	ck_assert_int_eq(get(d, 8, 0)->osd_id, -1);
	devices_free(d);
}
END_TEST

/* Two OSDs' block.db on partitions of one disk: the disk has no single OSD. */
START_TEST(test_ceph_shared_disk)
{
	struct devices *d;

	node("sda1", 8, 1);
	node("sda2", 8, 2);
	sym("ceph/ceph-1/block.db", "dev/sda1");
	sym("ceph/ceph-2/block.db", "dev/sda2");
	d = open_devs("ceph");
	ck_assert_int_eq(get(d, 8, 1)->osd_id, 1);
	ck_assert_int_eq(get(d, 8, 2)->osd_id, 2);
	ck_assert_int_eq(get(d, 8, 0)->osd_id, -1);
	ck_assert_str_eq(get(d, 8, 0)->osd_role, "");
	rm("ceph/ceph-2/block.db");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_int_eq(get(d, 8, 0)->osd_id, 1);
	ck_assert_str_eq(get(d, 8, 0)->osd_role, "block.db");
	/* one OSD's block and block.db on one disk: the disk is that OSD's, role "block" */
	sym("ceph/ceph-1/block", "dev/sda2");
	ck_assert_int_eq(devices_scan(d), 8);
	ck_assert_int_eq(get(d, 8, 0)->osd_id, 1);
	ck_assert_str_eq(get(d, 8, 0)->osd_role, "block");
	ck_assert_str_eq(get(d, 8, 2)->osd_role, "block");
	ck_assert_str_eq(get(d, 8, 1)->osd_role, "block.db");
	devices_free(d);
}
END_TEST

/* ---------------------------------------------------------------- queue settings -- */

static void settings_tree(void)
{
	put("sys/" SCSI "/sda/queue/scheduler", "mq-deadline kyber [bfq] none\n");
	put("sys/" SCSI "/sda/queue/iosched/slice_idle", "8\n");
	put("sys/" SCSI "/sda/queue/iosched/low_latency", "1\n");
	put("sys/" SCSI "/sda/queue/iosched/back_seek_max", "16384\n");
	put("sys/" SCSI "/sda/queue/nr_requests", "64\n");
	put("sys/" SCSI "/sda/queue/read_ahead_kb", "128\n");
	put("sys/" SCSI "/sda/queue/write_cache", "write back\n");
	put("sys/" SCSI "/sda/queue/wbt_lat_usec", "75000\n");
	put("sys/" SCSI "/sda/queue/max_sectors_kb", "1280\n");
	put("sys/" SCSI "/sda/queue/nomerges", "0\n");
	put("sys/" SCSI "/sda/device/queue_depth", "32\n");
	put("sys/" SCSI "/sda/device/rev", "2.5+\n");
	put("sys/" VIRT "/dm-0/queue/scheduler", "none\n");
	put("sys/" VIRT "/dm-0/queue/nr_requests", "12abc\n");
	put("sys/" VIRT "/dm-0/queue/read_ahead_kb", "99999999999999999999999\n");
	put("sys/" SCSI2 "/sdb/device/firmware_rev", "1B2QEXM7\n");
	put("sys/" SCSI2 "/sdb/device/rev", "not this\n");
}

static void read_settings(const char *name, struct queue_settings *qs)
{
	char sys[PATH_MAX];

	ck_assert_int_eq(queue_settings_read(at(sys, sizeof(sys), "sys"), name, qs), 0);
}

START_TEST(test_queue_settings)
{
	struct queue_settings qs;

	settings_tree();
	read_settings("sda", &qs);
	ck_assert_str_eq(qs.scheduler, "bfq");
	ck_assert_uint_eq(qs.n_schedulers, 4);
	ck_assert_str_eq(qs.schedulers[0], "mq-deadline");
	ck_assert_str_eq(qs.schedulers[2], "bfq");
	ck_assert_str_eq(qs.schedulers[3], "none");
	ck_assert_uint_eq(qs.n_iosched, 3);   /* sorted by name */
	ck_assert_str_eq(qs.iosched[0].name, "back_seek_max");
	ck_assert_str_eq(qs.iosched[0].value, "16384");
	ck_assert_str_eq(qs.iosched[1].name, "low_latency");
	ck_assert_str_eq(qs.iosched[2].name, "slice_idle");
	ck_assert_str_eq(qs.iosched[2].value, "8");
	ck_assert_int_eq(qs.nr_requests, 64);
	ck_assert_int_eq(qs.read_ahead_kb, 128);
	ck_assert_str_eq(qs.write_cache, "write back");
	ck_assert_int_eq(qs.wbt_lat_usec, 75000);
	ck_assert_int_eq(qs.max_sectors_kb, 1280);
	ck_assert_int_eq(qs.nomerges, 0);
	ck_assert_int_eq(qs.rotational, 1);
	ck_assert_int_eq(qs.queue_depth, 32);
	ck_assert_str_eq(qs.firmware, "2.5+");
	/* a partition's settings are its disk's */
	read_settings("sda1", &qs);
	ck_assert_str_eq(qs.scheduler, "bfq");
	ck_assert_int_eq(qs.queue_depth, 32);
	ck_assert_uint_eq(qs.n_iosched, 3);
	/* NVMe's firmware_rev first */
	read_settings("sdb", &qs);
	ck_assert_str_eq(qs.firmware, "1B2QEXM7");
	ck_assert_str_eq(qs.scheduler, "");
	ck_assert_int_eq(qs.rotational, 0);
	/* a single scheduler without brackets is the one in use; no tunables; what does not
	 * parse, and what the device has no file for, is -1 or "" */
	read_settings("dm-0", &qs);
	ck_assert_str_eq(qs.scheduler, "none");
	ck_assert_uint_eq(qs.n_iosched, 0);
	ck_assert_int_eq(qs.nr_requests, -1);
	ck_assert_int_eq(qs.read_ahead_kb, -1);
	ck_assert_int_eq(qs.queue_depth, -1);
	ck_assert_int_eq(qs.wbt_lat_usec, -1);
	ck_assert_str_eq(qs.write_cache, "");
	ck_assert_str_eq(qs.firmware, "");
}
END_TEST

START_TEST(test_queue_settings_bad_names)
{
	struct queue_settings qs;
	char sys[PATH_MAX];

	at(sys, sizeof(sys), "sys");
	ck_assert_int_eq(queue_settings_read(sys, "", &qs), -EINVAL);
	ck_assert_int_eq(queue_settings_read(sys, NULL, &qs), -EINVAL);
	ck_assert_int_eq(queue_settings_read(sys, "..", &qs), -EINVAL);
	ck_assert_int_eq(queue_settings_read(sys, "../../etc", &qs), -EINVAL);
	ck_assert_int_eq(queue_settings_read(sys, "nosuch", &qs), -ENOENT);
	ck_assert_int_eq(queue_settings_read(sys, "ghost", &qs), -ENOENT);
	ck_assert_int_eq(qs.nr_requests, -1);
}
END_TEST

/* GetInfo with device_settings: the cached Info's devices, each with its settings now */
START_TEST(test_info_with_settings)
{
	Iopulse__V1__Info info = IOPULSE__V1__INFO__INIT;
	Iopulse__V1__DeviceInfo a = IOPULSE__V1__DEVICE_INFO__INIT, b = a, c = a;
	Iopulse__V1__DeviceInfo *devs[] = { &a, &b, &c };
	struct hub_msg *in, *out;
	Iopulse__V1__Info *got;
	char sys[PATH_MAX];
	uint8_t *buf;
	size_t len;

	settings_tree();
	a.name = "sda";
	b.name = "gone";
	c.name = "dm-0";
	info.hostname = "node1";
	info.devices = devs;
	info.n_devices = 3;
	buf = pb_pack_alloc(&info.base, &len);
	ck_assert_ptr_nonnull(buf);
	in = hub_msg_new(buf, len);
	out = info_with_settings(in, at(sys, sizeof(sys), "sys"));
	ck_assert_ptr_nonnull(out);
	got = iopulse__v1__info__unpack(NULL, out->len, out->buf);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got->hostname, "node1");
	ck_assert_uint_eq(got->n_devices, 3);
	ck_assert_ptr_nonnull(got->devices[0]->settings);
	ck_assert_str_eq(got->devices[0]->settings->scheduler, "bfq");
	ck_assert_uint_eq(got->devices[0]->settings->n_schedulers, 4);
	ck_assert_uint_eq(got->devices[0]->settings->n_iosched, 3);
	ck_assert_str_eq(got->devices[0]->settings->iosched[2]->key, "slice_idle");
	ck_assert_str_eq(got->devices[0]->settings->iosched[2]->value, "8");
	ck_assert_int_eq(got->devices[0]->settings->queue_depth, 32);
	ck_assert_str_eq(got->devices[0]->settings->write_cache, "write back");
	ck_assert_ptr_null(got->devices[1]->settings);   /* gone: none rather than made up */
	ck_assert_int_eq(got->devices[2]->settings->nr_requests, -1);
	iopulse__v1__info__free_unpacked(got, NULL);
	hub_msg_unref(out);
	/* the Info built every interval is not touched */
	got = iopulse__v1__info__unpack(NULL, in->len, in->buf);
	ck_assert_ptr_null(got->devices[0]->settings);
	iopulse__v1__info__free_unpacked(got, NULL);
	hub_msg_unref(in);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("devices");
	TCase *tc = tcase_create("sysfs");
	int r;

	snprintf(base, sizeof(base), "/tmp/iopulse-devtest-XXXXXX");
	if (!mkdtemp(base)) {
		perror("test_devices: mkdtemp");
		return EXIT_FAILURE;
	}

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_names_and_order);
	tcase_add_test(tc, test_partitions);
	tcase_add_test(tc, test_present);
	tcase_add_test(tc, test_models);
	tcase_add_test(tc, test_dm_and_rotational);
	tcase_add_test(tc, test_device_vanishes);
	tcase_add_test(tc, test_loop_detach_and_attach);
	tcase_add_test(tc, test_device_appears);
	tcase_add_test(tc, test_dm_removed);
	tcase_add_test(tc, test_dm_added);
	tcase_add_test(tc, test_stack_disks);
	tcase_add_test(tc, test_dm_recreated);
	tcase_add_test(tc, test_media_inserted);
	tcase_add_test(tc, test_periodic_full_scan);
	tcase_add_test(tc, test_bad_attributes);
	tcase_add_test(tc, test_missing_root);
	tcase_add_test(tc, test_globs);
	tcase_add_test(tc, test_kdev);
	tcase_add_test(tc, test_queue_settings);
	tcase_add_test(tc, test_queue_settings_bad_names);
	tcase_add_test(tc, test_info_with_settings);
	suite_add_tcase(s, tc);

	/* the OSD symlinks must resolve to block device nodes, which only root can make */
	if (geteuid() == 0) {
		TCase *ceph = tcase_create("ceph");

		tcase_add_checked_fixture(ceph, setup, teardown);
		tcase_add_test(ceph, test_ceph_labels);
		tcase_add_test(ceph, test_ceph_whoami);
		tcase_add_test(ceph, test_ceph_missing_or_broken);
		tcase_add_test(ceph, test_ceph_shared_disk);
		suite_add_tcase(s, ceph);
	} else {
		fprintf(stderr, "test_devices: not root, Ceph label tests not run\n");
	}
	r = run_suite(s);
	remove_tree(base);
	return r;
}
