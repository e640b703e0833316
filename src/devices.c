/* devices.c - block device table: names from sysfs, roll-up, dm, Ceph OSD labels */
#include "devices.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Every FULL_SCAN_EVERY-th scan re-reads every attribute; the others read only dev and size
 * of devices already known (what changes when a loop device is attached or detached). */
#define FULL_SCAN_EVERY 30

struct devices {
	char *sysfs;
	char *ceph_dir;
	struct iop_device *v;
	size_t n, cap;
	unsigned long scans;
};

int devices_new(struct devices **out, const char *sysfs_root, const char *ceph_dir)
{
	struct devices *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->sysfs = strdup(sysfs_root);
	d->ceph_dir = ceph_dir ? strdup(ceph_dir) : NULL;
	if (!d->sysfs || (ceph_dir && !d->ceph_dir)) {
		devices_free(d);
		return -ENOMEM;
	}
	r = devices_scan(d);
	if (r < 0) {
		devices_free(d);
		return r;
	}
	*out = d;
	return 0;
}

struct devices *devices_free(struct devices *d)
{
	if (!d)
		return NULL;
	free(d->sysfs);
	free(d->ceph_dir);
	free(d->v);
	free(d);
	return NULL;
}

/* Reads a small sysfs file into buf, trimmed of surrounding whitespace; "" on failure. */
static void read_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;
	char *s, *e;

	buf[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	for (e = buf + n; e > buf && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	for (s = buf; isspace((unsigned char)*s); s++)
		;
	memmove(buf, s, strlen(s) + 1);
}

static int parse_devno(const char *s, dev_t *out)
{
	unsigned int ma, mi;
	char tail;

	if (sscanf(s, "%u:%u%c", &ma, &mi, &tail) != 2)
		return -EINVAL;
	*out = makedev(ma, mi);
	return 0;
}

/* Comma list of the entry names in dir/sub ("" if none). */
static void list_dir(const char *dir, const char *sub, char *buf, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t used = 0;
	DIR *dh;

	buf[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/%s", dir, sub) >= (int)sizeof(path))
		return;
	dh = opendir(path);
	if (!dh)
		return;
	while ((de = readdir(dh))) {
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		if (used + n + 2 > len)
			break;
		if (used)
			buf[used++] = ',';
		memcpy(buf + used, de->d_name, n + 1);
		used += n;
	}
	closedir(dh);
}

static struct iop_device *find(struct devices *d, dev_t dev)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->v[i].dev == dev)
			return &d->v[i];
	return NULL;
}

static struct iop_device *find_name(struct devices *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->v[i].present && !strcmp(d->v[i].name, name))
			return &d->v[i];
	return NULL;
}

static struct iop_device *find_known_name(struct devices *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].name, name))
			return &d->v[i];
	return NULL;
}

static int add(struct devices *d, const struct iop_device *dev)
{
	struct iop_device *slot = find(d, dev->dev);

	if (!slot) {
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 32;
			struct iop_device *v = realloc(d->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			d->v = v;
			d->cap = cap;
		}
		slot = &d->v[d->n++];
	}
	*slot = *dev;
	return 0;
}

/* Quick re-read of a known device: its dev and size. Returns false if it must be rescanned. */
static bool rescan_quick(const char *classdir, const char *name, struct iop_device *known,
			 bool was_present, struct iop_device *out)
{
	char dir[PATH_MAX], buf[64];
	dev_t dev;

	if (snprintf(dir, sizeof(dir), "%s/%s", classdir, name) >= (int)sizeof(dir))
		return false;
	read_attr(dir, "dev", buf, sizeof(buf));
	if (parse_devno(buf, &dev) || dev != known->dev)
		return false;
	read_attr(dir, "size", buf, sizeof(buf));
	*out = *known;
	out->size_bytes = strtoull(buf, NULL, 10) * 512ull;
	out->present = out->size_bytes > 0;
	out->osd_id = -1;
	out->osd_role[0] = '\0';
	/* a device that just came back (loop attach) gets a full read: new backing file */
	return out->present == was_present;
}

static void scan_one(struct devices *d, const char *classdir, const char *name,
		     struct iop_device *out)
{
	char dir[PATH_MAX], real[PATH_MAX], buf[256], parent[PATH_MAX];
	char *slash;

	memset(out, 0, sizeof(*out));
	out->osd_id = -1;
	if (strlen(name) >= sizeof(out->name) ||
	    snprintf(dir, sizeof(dir), "%s/%s", classdir, name) >= (int)sizeof(dir))
		return;   /* dev stays 0: skipped */
	memcpy(out->name, name, strlen(name) + 1);
	read_attr(dir, "dev", buf, sizeof(buf));
	if (parse_devno(buf, &out->dev))
		return;
	out->disk = out->dev;
	read_attr(dir, "size", buf, sizeof(buf));
	out->size_bytes = strtoull(buf, NULL, 10) * 512ull;
	read_attr(dir, "partition", buf, sizeof(buf));
	out->is_partition = buf[0] != '\0';
	if (out->is_partition && realpath(dir, real)) {
		snprintf(parent, sizeof(parent), "%s", real);
		slash = strrchr(parent, '/');
		if (slash) {
			*slash = '\0';
			read_attr(parent, "dev", buf, sizeof(buf));
			if (parse_devno(buf, &out->disk))
				out->disk = out->dev;
			read_attr(parent, "queue/rotational", buf, sizeof(buf));
			out->rotational = !strcmp(buf, "1");
		}
	} else {
		read_attr(dir, "queue/rotational", buf, sizeof(buf));
		out->rotational = !strcmp(buf, "1");
	}
	read_attr(dir, "device/model", out->model, sizeof(out->model));
	if (!out->model[0])
		read_attr(dir, "loop/backing_file", out->model, sizeof(out->model));
	read_attr(dir, "dm/name", out->dm_name, sizeof(out->dm_name));
	list_dir(dir, "slaves", out->slaves, sizeof(out->slaves));
	list_dir(dir, "holders", out->holders, sizeof(out->holders));
	out->present = out->size_bytes > 0;
}

static void label(struct devices *d, dev_t dev, int id, const char *role)
{
	struct iop_device *x = find(d, dev);
	char slaves[256], *tok, *save = NULL;

	if (!x || !x->present)
		return;
	x->osd_id = id;
	snprintf(x->osd_role, sizeof(x->osd_role), "%s", role);
	if (x->is_partition) {
		struct iop_device *disk = find(d, x->disk);

		if (disk && disk->osd_id < 0) {
			disk->osd_id = id;
			snprintf(disk->osd_role, sizeof(disk->osd_role), "%s", role);
		}
	}
	snprintf(slaves, sizeof(slaves), "%s", x->slaves);
	for (tok = strtok_r(slaves, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct iop_device *s = find_name(d, tok);

		if (s && s->osd_id < 0)
			label(d, s->dev, id, role);
	}
}

static void scan_ceph(struct devices *d)
{
	static const char *const roles[] = { "block", "block.db", "block.wal" };
	struct dirent *de;
	DIR *dh;

	if (!d->ceph_dir)
		return;
	dh = opendir(d->ceph_dir);
	if (!dh)
		return;
	while ((de = readdir(dh))) {
		char osd[PATH_MAX], buf[64], *dash, *end;
		struct stat st;
		long id = -1;
		size_t i;

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(osd, sizeof(osd), "%s/%s", d->ceph_dir, de->d_name) >= (int)sizeof(osd))
			continue;
		read_attr(osd, "whoami", buf, sizeof(buf));
		if (buf[0]) {
			errno = 0;
			id = strtol(buf, &end, 10);
			if (end == buf || *end || errno)
				id = -1;
		}
		dash = strrchr(de->d_name, '-');
		if (id < 0 && dash && dash[1]) {
			errno = 0;
			id = strtol(dash + 1, &end, 10);
			if (*end || errno)
				id = -1;
		}
		if (id < 0 || id > 1000000)
			continue;
		for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
			char link[PATH_MAX + 16];

			snprintf(link, sizeof(link), "%s/%s", osd, roles[i]);
			if (stat(link, &st) == 0 && S_ISBLK(st.st_mode))
				label(d, st.st_rdev, (int)id, roles[i]);
		}
	}
	closedir(dh);
}

int devices_scan(struct devices *d)
{
	char classdir[PATH_MAX];
	struct dirent *de;
	size_t i, kept = 0;
	DIR *dh;
	int r = 0;
	bool full;

	snprintf(classdir, sizeof(classdir), "%s/class/block", d->sysfs);
	dh = opendir(classdir);
	if (!dh)
		return -errno;
	/* Devices absent at the previous scan are dropped; present ones are marked unseen. */
	full = d->scans++ % FULL_SCAN_EVERY == 0;
	for (i = 0; i < d->n; i++) {
		if (!d->v[i].present && !d->v[i].seen_absent)
			continue;
		d->v[kept] = d->v[i];
		d->v[kept].seen_absent = false;
		d->v[kept].was_present = d->v[i].present;
		d->v[kept].present = false;
		kept++;
	}
	d->n = kept;
	while ((de = readdir(dh))) {
		struct iop_device dev, *known;

		if (de->d_name[0] == '.')
			continue;
		known = full ? NULL : find_known_name(d, de->d_name);
		if (!known || !rescan_quick(classdir, de->d_name, known, known->was_present, &dev))
			scan_one(d, classdir, de->d_name, &dev);
		if (!dev.present)
			dev.seen_absent = true;
		if (!dev.dev)
			continue;
		r = add(d, &dev);
		if (r)
			break;
	}
	closedir(dh);
	if (r)
		return r;
	scan_ceph(d);
	return (int)d->n;
}

const struct iop_device *devices_get(struct devices *d, dev_t dev)
{
	return find(d, dev);
}

const struct iop_device *devices_at(struct devices *d, size_t i)
{
	return i < d->n ? &d->v[i] : NULL;
}

size_t devices_count(struct devices *d)
{
	return d->n;
}

dev_t devices_rollup(struct devices *d, dev_t dev)
{
	const struct iop_device *x = find(d, dev);

	return x && x->is_partition ? x->disk : dev;
}

bool devices_name_selected(const char *name, char *const *include, size_t ninclude,
			   char *const *exclude, size_t nexclude)
{
	bool in = ninclude == 0;
	size_t i;

	for (i = 0; !in && i < ninclude; i++)
		in = fnmatch(include[i], name, 0) == 0;
	for (i = 0; in && i < nexclude; i++)
		in = fnmatch(exclude[i], name, 0) != 0;
	return in;
}
