/* test_devices.c - device naming against a fake sysfs tree and a fake Ceph OSD directory */
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

static char root[PATH_MAX];

static void put(const char *rel, const char *content)
{
	char path[PATH_MAX * 2], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static void link_class(const char *name, const char *target)
{
	char l[PATH_MAX * 2], t[PATH_MAX * 2];

	snprintf(l, sizeof(l), "%s/sys/class", root);
	mkdir(l, 0755);
	snprintf(l, sizeof(l), "%s/sys/class/block", root);
	mkdir(l, 0755);
	snprintf(l, sizeof(l), "%s/sys/class/block/%s", root, name);
	snprintf(t, sizeof(t), "%s/sys/%s", root, target);
	ck_assert_int_eq(symlink(t, l), 0);
}

static void disk(const char *dir, const char *name, const char *devno, const char *size)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "sys/%s/dev", dir);
	put(p, devno);
	snprintf(p, sizeof(p), "sys/%s/size", dir);
	put(p, size);
	link_class(name, dir);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void setup(void)
{
	char p[PATH_MAX * 2];

	snprintf(root, sizeof(root), "/tmp/iopulse-devtest-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	/* sda with partition sda1, a model with trailing blanks, rotational */
	disk("devices/pci0/host0/block/sda", "sda", "8:0\n", "2097152\n");
	put("sys/devices/pci0/host0/block/sda/device/model", "FAKE DISK   \n");
	put("sys/devices/pci0/host0/block/sda/queue/rotational", "1\n");
	disk("devices/pci0/host0/block/sda/sda1", "sda1", "8:1\n", "1024\n");
	put("sys/devices/pci0/host0/block/sda/sda1/partition", "1\n");
	/* sdb under dm-0 */
	disk("devices/pci0/host0/block/sdb", "sdb", "8:16\n", "4096\n");
	put("sys/devices/pci0/host0/block/sdb/queue/rotational", "0\n");
	snprintf(p, sizeof(p), "%s/sys/devices/pci0/host0/block/sdb/holders", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sys/devices/pci0/host0/block/sdb/holders/dm-0", root);
	mkdir(p, 0755);
	disk("devices/virtual/block/dm-0", "dm-0", "253:0\n", "4096\n");
	put("sys/devices/virtual/block/dm-0/dm/name", "vg0-data\n");
	snprintf(p, sizeof(p), "%s/sys/devices/virtual/block/dm-0/slaves", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sys/devices/virtual/block/dm-0/slaves/sdb", root);
	mkdir(p, 0755);
	/* an attached and a detached loop device */
	disk("devices/virtual/block/loop0", "loop0", "7:0\n", "2048\n");
	put("sys/devices/virtual/block/loop0/loop/backing_file", "/var/tmp/a b.img\n");
	disk("devices/virtual/block/loop1", "loop1", "7:1\n", "0\n");
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct devices *open_devs(const char *ceph)
{
	char sys[PATH_MAX + 8];
	struct devices *d = NULL;

	snprintf(sys, sizeof(sys), "%s/sys", root);
	ck_assert_int_eq(devices_new(&d, sys, ceph), 0);
	return d;
}

START_TEST(test_names_and_attributes)
{
	struct devices *d = open_devs(NULL);
	const struct iop_device *sda = devices_get(d, makedev(8, 0));
	const struct iop_device *sda1 = devices_get(d, makedev(8, 1));
	const struct iop_device *dm = devices_get(d, makedev(253, 0));
	const struct iop_device *sdb = devices_get(d, makedev(8, 16));
	const struct iop_device *loop0 = devices_get(d, makedev(7, 0));
	const struct iop_device *loop1 = devices_get(d, makedev(7, 1));

	ck_assert_ptr_nonnull(sda);
	ck_assert_str_eq(sda->name, "sda");
	ck_assert_str_eq(sda->model, "FAKE DISK");
	ck_assert(sda->rotational && sda->present && !sda->is_partition);
	ck_assert_uint_eq(sda->size_bytes, 2097152ull * 512);
	ck_assert(sda1->is_partition && sda1->rotational);
	ck_assert(sda1->disk == makedev(8, 0));
	ck_assert(devices_rollup(d, makedev(8, 1)) == makedev(8, 0));
	ck_assert(devices_rollup(d, makedev(8, 0)) == makedev(8, 0));
	ck_assert(devices_rollup(d, makedev(99, 9)) == makedev(99, 9));
	ck_assert_str_eq(dm->dm_name, "vg0-data");
	ck_assert_str_eq(dm->slaves, "sdb");
	ck_assert_str_eq(sdb->holders, "dm-0");
	ck_assert(!sdb->rotational);
	ck_assert_str_eq(loop0->model, "/var/tmp/a b.img");
	ck_assert(loop0->present);
	ck_assert(loop1 != NULL && !loop1->present);
	ck_assert_int_eq(sda->osd_id, -1);
	devices_free(d);
}
END_TEST

START_TEST(test_hotplug)
{
	struct devices *d = open_devs(NULL);
	char p[PATH_MAX * 2];

	/* loop1 attached, loop0 detached (size 0), sdb unplugged */
	put("sys/devices/virtual/block/loop1/size", "4096\n");
	put("sys/devices/virtual/block/loop0/size", "0\n");
	snprintf(p, sizeof(p), "%s/sys/class/block/sdb", root);
	unlink(p);
	ck_assert_int_ge(devices_scan(d), 0);
	ck_assert(devices_get(d, makedev(7, 1))->present);
	ck_assert(!devices_get(d, makedev(7, 0))->present);
	ck_assert_ptr_nonnull(devices_get(d, makedev(8, 16)));      /* kept once, not present */
	ck_assert(!devices_get(d, makedev(8, 16))->present);
	ck_assert_int_ge(devices_scan(d), 0);
	ck_assert_ptr_null(devices_get(d, makedev(8, 16)));         /* then dropped */
	devices_free(d);
}
END_TEST

START_TEST(test_ceph_labels)
{
	char ceph[PATH_MAX + 16], node[PATH_MAX * 2], l[PATH_MAX * 2];
	struct devices *d;

	snprintf(ceph, sizeof(ceph), "%s/osd", root);
	mkdir(ceph, 0755);
	snprintf(l, sizeof(l), "%s/ceph-3", ceph);
	mkdir(l, 0755);
	snprintf(l, sizeof(l), "%s/ceph-12", ceph);
	mkdir(l, 0755);
	snprintf(node, sizeof(node), "%s/dev-dm0", root);
	ck_assert_int_eq(mknod(node, S_IFBLK | 0600, makedev(253, 0)), 0);
	snprintf(l, sizeof(l), "%s/ceph-3/block", ceph);
	ck_assert_int_eq(symlink(node, l), 0);
	snprintf(node, sizeof(node), "%s/dev-sda1", root);
	ck_assert_int_eq(mknod(node, S_IFBLK | 0600, makedev(8, 1)), 0);
	snprintf(l, sizeof(l), "%s/ceph-12/block.db", ceph);
	ck_assert_int_eq(symlink(node, l), 0);
	snprintf(l, sizeof(l), "%s/ceph-12/whoami", ceph);
	{
		FILE *f = fopen(l, "w");

		fputs("7\n", f);
		fclose(f);
	}
	d = open_devs(ceph);
	ck_assert_int_eq(devices_get(d, makedev(253, 0))->osd_id, 3);
	ck_assert_str_eq(devices_get(d, makedev(253, 0))->osd_role, "block");
	ck_assert_int_eq(devices_get(d, makedev(8, 16))->osd_id, 3);     /* dm slave */
	ck_assert_str_eq(devices_get(d, makedev(8, 16))->osd_role, "block");
	ck_assert_int_eq(devices_get(d, makedev(8, 1))->osd_id, 7);      /* whoami wins */
	ck_assert_str_eq(devices_get(d, makedev(8, 1))->osd_role, "block.db");
	ck_assert_int_eq(devices_get(d, makedev(8, 0))->osd_id, 7);      /* its disk */
	ck_assert_int_eq(devices_get(d, makedev(7, 0))->osd_id, -1);
	devices_free(d);
}
END_TEST

START_TEST(test_missing_root)
{
	struct devices *d = NULL;

	ck_assert_int_eq(devices_new(&d, "/nonexistent-iopulse-sysfs", NULL), -ENOENT);
	ck_assert_ptr_null(d);
}
END_TEST

START_TEST(test_globs)
{
	char *inc[] = { "sd*", "nvme*" }, *exc[] = { "sda*" };

	ck_assert(devices_name_selected("sdb", inc, 2, exc, 1));
	ck_assert(!devices_name_selected("sda1", inc, 2, exc, 1));
	ck_assert(devices_name_selected("nvme0n1", inc, 2, NULL, 0));
	ck_assert(!devices_name_selected("loop0", inc, 2, NULL, 0));
	ck_assert(devices_name_selected("loop0", NULL, 0, NULL, 0));
	ck_assert(!devices_name_selected("ram0", NULL, 0, (char *[]){ "ram*" }, 1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("devices");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_names_and_attributes);
	tcase_add_test(tc, test_hotplug);
	tcase_add_test(tc, test_ceph_labels);
	tcase_add_test(tc, test_missing_root);
	tcase_add_test(tc, test_globs);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
