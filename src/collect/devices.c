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
#include <unistd.h>

#include "cleanup.h"
#include "log.h"

/*
 * Scans between full re-reads of every attribute. In between, a device still listed under
 * the same name, dev_t and sysfs directory inode (kernfs gives a re-created device a new one)
 * keeps its attributes; only its size (and a loop device's backing file) is re-read, and all
 * of it if its presence changed. Any device appearing, vanishing or being re-created makes
 * the scan a full one, since that can change other devices' holders and slaves.
 */
#define FULL_SCAN_EVERY 30
#define LABEL_DEPTH_MAX 8

enum label_prio {
	LABEL_NONE,
	LABEL_STACKED,   /* under the OSD's device: a dm slave or a partition's disk */
	LABEL_DIRECT,    /* the device the OSD's symlink resolves to */
};

struct entry {
	struct iop_device info;   /* first: devices_at() hands out &entry.info */
	ino_t ino;                /* inode of the device's sysfs directory */
	bool listed;              /* in class/block at the last scan */
	enum label_prio label;
	bool label_shared;        /* stacked under devices of different OSDs: no label */
};

struct devices {
	char *sysfs;
	char *ceph_dir;
	struct entry *v;          /* sorted by dev */
	size_t n;
	unsigned long scans;
};

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

static void devices_freep(struct devices **d)
{
	devices_free(*d);
}

int devices_new(struct devices **out, const char *sysfs_root, const char *ceph_dir)
{
	struct devices *d __attribute__((cleanup(devices_freep))) = NULL;
	int r;

	if (!sysfs_root)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->sysfs = strdup(sysfs_root);
	if (!d->sysfs)
		return -ENOMEM;
	if (ceph_dir) {
		d->ceph_dir = strdup(ceph_dir);
		if (!d->ceph_dir)
			return -ENOMEM;
	}
	r = devices_scan(d);
	if (r < 0)
		return r;
	*out = d;
	d = NULL;
	return 0;
}

/* dir/name into buf; false if it does not fit. */
static bool join(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n >= 0 && (size_t)n < len;
}

/* A small attribute file, surrounding whitespace trimmed, cut to len - 1; "" if unreadable. */
static void read_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX], tmp[512], *s, *e;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if (!join(path, sizeof(path), dir, name))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, tmp, sizeof(tmp) - 1);
	close(fd);
	if (n <= 0)
		return;
	tmp[n] = '\0';
	for (s = tmp; isspace((unsigned char)*s); s++)
		;
	for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	snprintf(buf, len, "%s", s);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];

	return join(path, sizeof(path), dir, name) && access(path, F_OK) == 0;
}

static int parse_ull(const char *s, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "MAJ:MIN" as the kernel prints it (12-bit major, 20-bit minor). */
static int parse_devno(const char *s, dev_t *out)
{
	char buf[32], *colon;
	unsigned long long ma, mi;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return -EINVAL;
	colon = strchr(buf, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	if (parse_ull(buf, &ma) || parse_ull(colon + 1, &mi) || ma > 0xfff || mi > 0xfffff)
		return -EINVAL;
	*out = makedev((unsigned int)ma, (unsigned int)mi);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted comma list of the entry names in dir/sub; "" if none or unreadable; whole names only. */
static void list_dir(const char *dir, const char *sub, char *buf, size_t len)
{
	DIR *dh __attribute__((cleanup(closedirp))) = NULL;
	char path[PATH_MAX], *names[64];
	struct dirent *de;
	size_t n = 0, used = 0, i;

	buf[0] = '\0';
	if (!join(path, sizeof(path), dir, sub))
		return;
	dh = opendir(path);
	if (!dh)
		return;
	while (n < sizeof(names) / sizeof(names[0]) && (de = readdir(dh))) {
		if (de->d_name[0] == '.')
			continue;
		names[n] = strdup(de->d_name);
		if (!names[n])
			break;
		n++;
	}
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]), sep = used ? 1 : 0;

		if (used < len && used + sep + l < len) {
			if (sep)
				buf[used++] = ',';
			memcpy(buf + used, names[i], l + 1);
			used += l;
		} else {
			used = len;   /* full: later names would leave a gap */
		}
		free(names[i]);
	}
}

/* Model of a disk: device/model, else the backing file of a loop device. */
static void read_model(const char *dir, char *buf, size_t len)
{
	read_attr(dir, "device/model", buf, len);
	if (!buf[0])
		read_attr(dir, "loop/backing_file", buf, len);
}

/* Cheap part of a scan: what says whether a device is the same one, and its size. */
static int probe(const char *classdir, const char *name, struct entry *e)
{
	char dir[PATH_MAX], buf[64];
	unsigned long long sectors;
	struct stat st;

	memset(e, 0, sizeof(*e));
	e->info.osd_id = -1;
	if (strlen(name) >= sizeof(e->info.name)) {
		log_debug("block device name too long, ignored: %.80s", name);
		return -ENAMETOOLONG;
	}
	if (!join(dir, sizeof(dir), classdir, name) || stat(dir, &st) < 0)
		return -ENOENT;    /* dangling, or removed while we looked */
	read_attr(dir, "dev", buf, sizeof(buf));
	if (parse_devno(buf, &e->info.dev)) {
		log_debug("%s: unreadable dev attribute '%s'", name, buf);
		return -EINVAL;
	}
	snprintf(e->info.name, sizeof(e->info.name), "%s", name);
	e->ino = st.st_ino;
	e->listed = true;
	e->info.disk = e->info.dev;
	read_attr(dir, "size", buf, sizeof(buf));
	if (parse_ull(buf, &sectors) || sectors > ULLONG_MAX / 512)
		sectors = 0;
	e->info.size_bytes = sectors * 512;
	e->info.present = e->info.size_bytes > 0;
	e->info.seen_absent = !e->info.present;
	return 0;
}

/* Everything else, for a device new or changed since the last scan. */
static void read_full(const char *classdir, struct entry *e)
{
	struct iop_device *x = &e->info;
	char dir[PATH_MAX], real[PATH_MAX], buf[64], *slash;
	const char *attrs;

	if (!join(dir, sizeof(dir), classdir, x->name))
		return;
	attrs = dir;
	x->is_partition = exists(dir, "partition");
	/* the disk is the directory above the partition's own */
	if (x->is_partition && realpath(dir, real) && (slash = strrchr(real, '/'))) {
		*slash = '\0';
		read_attr(real, "dev", buf, sizeof(buf));
		if (parse_devno(buf, &x->disk))
			x->disk = x->dev;
		else
			attrs = real;
	}
	read_attr(attrs, "queue/rotational", buf, sizeof(buf));
	x->rotational = !strcmp(buf, "1");
	read_model(attrs, x->model, sizeof(x->model));
	read_attr(dir, "dm/name", x->dm_name, sizeof(x->dm_name));
	list_dir(dir, "slaves", x->slaves, sizeof(x->slaves));
	list_dir(dir, "holders", x->holders, sizeof(x->holders));
}

static int cmp_entry(const void *a, const void *b)
{
	dev_t x = ((const struct entry *)a)->info.dev, y = ((const struct entry *)b)->info.dev;

	return x < y ? -1 : x > y;
}

static struct entry *find(struct entry *v, size_t n, dev_t dev)
{
	struct entry key = { .info.dev = dev };

	return n ? bsearch(&key, v, n, sizeof(*v), cmp_entry) : NULL;
}

static struct entry *find_listed_name(struct devices *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->v[i].listed && !strcmp(d->v[i].info.name, name))
			return &d->v[i];
	return NULL;
}

static void set_label(struct entry *e, int id, const char *role)
{
	e->info.osd_id = id;
	snprintf(e->info.osd_role, sizeof(e->info.osd_role), "%s", role);
}

/* Of two labels for one device, the lower id wins, then the role first in sort order. */
static bool label_better(const struct iop_device *x, int id, const char *role)
{
	return id < x->osd_id || (id == x->osd_id && strcmp(role, x->osd_role) < 0);
}

/*
 * A device the OSD's symlink points at carries its label; devices under it (a dm device's
 * slaves, a partition's disk) carry it too unless they sit under devices of two OSDs.
 * Two direct labels on one device (a misconfiguration): label_better decides.
 */
static void label(struct devices *d, struct entry *e, int id, const char *role,
		  enum label_prio prio, int depth)
{
	char slaves[sizeof(e->info.slaves)], *tok, *save = NULL;

	if (depth > LABEL_DEPTH_MAX || e->label > prio)
		return;
	if (e->label < prio) {
		e->label = prio;
		e->label_shared = false;
		set_label(e, id, role);
	} else if (prio == LABEL_DIRECT || id == e->info.osd_id) {
		if (!e->label_shared && label_better(&e->info, id, role))
			set_label(e, id, role);
	} else if (!e->label_shared) {
		e->label_shared = true;
		set_label(e, -1, "");
	}
	if (e->info.is_partition && e->info.disk != e->info.dev) {
		struct entry *disk = find(d->v, d->n, e->info.disk);

		if (disk && disk->listed)
			label(d, disk, id, role, LABEL_STACKED, depth + 1);
	}
	snprintf(slaves, sizeof(slaves), "%s", e->info.slaves);
	for (tok = strtok_r(slaves, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct entry *s = find_listed_name(d, tok);

		if (s)
			label(d, s, id, role, LABEL_STACKED, depth + 1);
	}
}

static int parse_osd_id(const char *s)
{
	unsigned long long v;

	return parse_ull(s, &v) || v > INT_MAX ? -1 : (int)v;
}

static void scan_ceph(struct devices *d)
{
	static const char *const roles[] = { "block", "block.db", "block.wal" };
	DIR *dh __attribute__((cleanup(closedirp))) = NULL;
	struct dirent *de;

	if (!d->ceph_dir)
		return;
	dh = opendir(d->ceph_dir);
	if (!dh)
		return;
	while ((de = readdir(dh))) {
		char osd[PATH_MAX], node[PATH_MAX], buf[32];
		const char *dash = strrchr(de->d_name, '-');
		struct stat st;
		struct entry *e;
		size_t i;
		int id;

		if (de->d_name[0] == '.' || !join(osd, sizeof(osd), d->ceph_dir, de->d_name))
			continue;
		read_attr(osd, "whoami", buf, sizeof(buf));
		id = buf[0] ? parse_osd_id(buf) : -1;
		if (id < 0 && dash)
			id = parse_osd_id(dash + 1);
		if (id < 0)
			continue;
		for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
			if (!join(node, sizeof(node), osd, roles[i]) || stat(node, &st) < 0 ||
			    !S_ISBLK(st.st_mode))
				continue;
			e = find(d->v, d->n, st.st_rdev);
			if (e && e->listed)
				label(d, e, id, roles[i], LABEL_DIRECT, 0);
		}
	}
}

/* Appends name to the comma list out unless it is there; false when it does not fit. */
static bool add_name(char *out, size_t len, const char *name)
{
	size_t n = strlen(out), k = strlen(name);
	const char *p;

	for (p = out; (p = strstr(p, name)); p += k)
		if ((p == out || p[-1] == ',') && (p[k] == ',' || p[k] == '\0'))
			return true;
	if (n + (n ? 1 : 0) + k + 1 > len)
		return false;
	snprintf(out + n, len - n, "%s%s", n ? "," : "", name);
	return true;
}

/* The disks at the bottom of e's stack, added to out (a partition counts as its disk). */
static void bottom_disks(struct devices *d, const struct entry *e, char *out, size_t len,
			 int depth)
{
	char slaves[sizeof(e->info.slaves)], *tok, *save = NULL;

	if (depth > LABEL_DEPTH_MAX)
		return;
	if (!e->info.slaves[0]) {
		const struct entry *disk = e;

		if (e->info.is_partition && e->info.disk != e->info.dev)
			disk = find(d->v, d->n, e->info.disk) ?: e;
		add_name(out, len, disk->info.name);
		return;
	}
	snprintf(slaves, sizeof(slaves), "%s", e->info.slaves);
	for (tok = strtok_r(slaves, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct entry *s = find_listed_name(d, tok);

		if (s)
			bottom_disks(d, s, out, len, depth + 1);
	}
}

static void scan_stacks(struct devices *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		struct entry *e = &d->v[i];

		e->info.disks[0] = '\0';
		if (e->listed && e->info.slaves[0])
			bottom_disks(d, e, e->info.disks, sizeof(e->info.disks), 0);
	}
}

/* Grows *v to hold one more entry. */
static int reserve(struct entry **v, size_t n, size_t *cap)
{
	struct entry *nv;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 64;
	nv = realloc(*v, *cap * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	return 0;
}

/* Drops all but the first of entries with the same dev (sorted input). */
static size_t dedup(struct entry *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (k == 0 || v[k - 1].info.dev != v[i].info.dev)
			v[k++] = v[i];
	return k;
}

int devices_scan(struct devices *d)
{
	DIR *dh __attribute__((cleanup(closedirp))) = NULL;
	char classdir[PATH_MAX];
	struct entry *v = NULL, *old;
	size_t n = 0, nlisted, cap = 0, i;
	bool full = d->scans % FULL_SCAN_EVERY == 0;
	struct dirent *de;

	if (!join(classdir, sizeof(classdir), d->sysfs, "class/block"))
		return -ENAMETOOLONG;
	dh = opendir(classdir);
	if (!dh)
		return -errno;
	while ((de = readdir(dh))) {
		if (de->d_name[0] == '.')
			continue;
		if (reserve(&v, n, &cap)) {
			free(v);
			return -ENOMEM;
		}
		if (probe(classdir, de->d_name, &v[n]))
			continue;
		old = find(d->v, d->n, v[n].info.dev);
		v[n].info.was_present = old && old->info.present;
		if (!old || !old->listed || old->ino != v[n].ino ||
		    strcmp(old->info.name, v[n].info.name))
			full = true;   /* appeared or re-created */
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_entry);
	n = nlisted = dedup(v, n);

	/* Listed at the last scan but not now: kept once, not present, then dropped. */
	for (i = 0; i < d->n; i++) {
		old = &d->v[i];
		if (!old->listed || find(v, nlisted, old->info.dev))
			continue;
		full = true;
		if (reserve(&v, n, &cap)) {
			free(v);
			return -ENOMEM;
		}
		v[n] = *old;
		v[n].listed = false;
		v[n].info.was_present = old->info.present;
		v[n].info.present = false;
		v[n].info.seen_absent = false;
		n++;
	}

	for (i = 0; i < nlisted; i++) {
		struct iop_device *x = &v[i].info;

		old = full ? NULL : find(d->v, d->n, x->dev);
		if (old && old->info.present == x->present) {
			struct iop_device keep = *x;

			*x = old->info;
			x->size_bytes = keep.size_bytes;
			x->present = keep.present;
			x->seen_absent = keep.seen_absent;
			x->was_present = keep.was_present;
			x->osd_id = -1;
			x->osd_role[0] = '\0';
			/* a loop device can be detached and re-attached to another file in between */
			if (x->present && !strncmp(x->name, "loop", 4) && !x->is_partition) {
				char dir[PATH_MAX];

				if (join(dir, sizeof(dir), classdir, x->name))
					read_attr(dir, "loop/backing_file", x->model, sizeof(x->model));
			}
		} else {
			read_full(classdir, &v[i]);
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_entry);

	free(d->v);
	d->v = v;
	d->n = n;
	d->scans = full ? 1 : d->scans + 1;
	scan_stacks(d);
	scan_ceph(d);
	return (int)n;
}

const struct iop_device *devices_get(struct devices *d, dev_t dev)
{
	struct entry *e = find(d->v, d->n, dev);

	return e ? &e->info : NULL;
}

const struct iop_device *devices_at(struct devices *d, size_t i)
{
	return i < d->n ? &d->v[i].info : NULL;
}

size_t devices_count(struct devices *d)
{
	return d->n;
}

dev_t devices_rollup(struct devices *d, dev_t dev)
{
	const struct iop_device *x = devices_get(d, dev);

	return x && x->is_partition ? x->disk : dev;
}

bool devices_name_selected(const char *name, char *const *include, size_t ninclude,
			   char *const *exclude, size_t nexclude)
{
	bool in = ninclude == 0;
	size_t i;

	if (!name)
		return false;
	for (i = 0; !in && i < ninclude; i++)
		in = fnmatch(include[i], name, 0) == 0;
	for (i = 0; in && i < nexclude; i++)
		in = fnmatch(exclude[i], name, 0) != 0;
	return in;
}
