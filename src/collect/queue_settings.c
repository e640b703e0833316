/* queue_settings.c - a block device's queue settings, read from sysfs when asked */
#include "queue_settings.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

/* A small attribute file below dirfd, surrounding whitespace trimmed, cut to len - 1; false
 * (and "") when it cannot be read. */
static bool read_at(int dirfd, const char *rel, char *buf, size_t len)
{
	char tmp[512], *s, *e;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, tmp, sizeof(tmp) - 1);
	close(fd);
	if (n < 0)
		return false;
	tmp[n] = '\0';
	for (s = tmp; isspace((unsigned char)*s); s++)
		;
	for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	snprintf(buf, len, "%s", s);
	return true;
}

/* A whole decimal number, optionally negative; -1 when absent or not one. */
static long long number_at(int dirfd, const char *rel)
{
	char buf[64], *end;
	long long v;

	if (!read_at(dirfd, rel, buf, sizeof(buf)) ||
	    !(isdigit((unsigned char)buf[0]) || (buf[0] == '-' && isdigit((unsigned char)buf[1]))))
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (end == buf || *end != '\0' || errno == ERANGE)
		return -1;
	return v;
}

/* "none [mq-deadline] kyber bfq": the selected one and those offered. */
static void parse_schedulers(const char *line, struct queue_settings *qs)
{
	char buf[512], *tok, *save = NULL;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		bool selected = tok[0] == '[';

		if (selected) {
			tok++;
			n = strlen(tok);
			if (n && tok[n - 1] == ']')
				tok[n - 1] = '\0';
			snprintf(qs->scheduler, sizeof(qs->scheduler), "%s", tok);
		}
		if (qs->n_schedulers < sizeof(qs->schedulers) / sizeof(qs->schedulers[0]))
			snprintf(qs->schedulers[qs->n_schedulers++], sizeof(qs->schedulers[0]), "%s",
				 tok);
	}
	if (!qs->scheduler[0] && qs->n_schedulers == 1)   /* the only one: in use */
		snprintf(qs->scheduler, sizeof(qs->scheduler), "%s", qs->schedulers[0]);
}

static int cmp_tunable(const void *a, const void *b)
{
	return strcmp(((const struct qs_tunable *)a)->name, ((const struct qs_tunable *)b)->name);
}

static void read_iosched(int queuefd, struct queue_settings *qs)
{
	DIR *dh __attribute__((cleanup(closedirp))) = NULL;
	struct dirent *de;
	int fd;

	fd = openat(queuefd, "iosched", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	dh = fdopendir(fd);
	if (!dh) {
		close(fd);
		return;
	}
	while (qs->n_iosched < QS_IOSCHED_MAX && (de = readdir(dh))) {
		struct qs_tunable *t = &qs->iosched[qs->n_iosched];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(t->name))
			continue;
		if (!read_at(dirfd(dh), de->d_name, t->value, sizeof(t->value)))
			continue;   /* write-only, or gone */
		snprintf(t->name, sizeof(t->name), "%s", de->d_name);
		qs->n_iosched++;
	}
	qsort(qs->iosched, qs->n_iosched, sizeof(qs->iosched[0]), cmp_tunable);
}

int queue_settings_read(const char *sysfs_root, const char *name, struct queue_settings *qs)
{
	int dev __attribute__((cleanup(closep))) = -1;
	int disk __attribute__((cleanup(closep))) = -1;
	int queue __attribute__((cleanup(closep))) = -1;
	char path[PATH_MAX], line[512];
	int n, at;

	memset(qs, 0, sizeof(*qs));
	qs->nr_requests = qs->queue_depth = qs->read_ahead_kb = qs->wbt_lat_usec =
		qs->max_sectors_kb = qs->nomerges = qs->rotational = -1;
	if (!name || !name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) >= 64)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/class/block/%s", sysfs_root, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	dev = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	at = dev;
	if (faccessat(dev, "partition", F_OK, 0) == 0) {
		/* the directory was reached through the class symlink: '..' is the disk's */
		disk = openat(dev, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (disk < 0)
			return -errno;
		at = disk;
	}
	qs->queue_depth = number_at(at, "device/queue_depth");
	if (!read_at(at, "device/firmware_rev", qs->firmware, sizeof(qs->firmware)))
		read_at(at, "device/rev", qs->firmware, sizeof(qs->firmware));
	queue = openat(at, "queue", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (queue < 0)
		return 0;   /* no request queue (a partition's disk gone meanwhile): nothing more */
	read_at(queue, "scheduler", line, sizeof(line));
	parse_schedulers(line, qs);
	qs->nr_requests = number_at(queue, "nr_requests");
	qs->read_ahead_kb = number_at(queue, "read_ahead_kb");
	qs->wbt_lat_usec = number_at(queue, "wbt_lat_usec");
	qs->max_sectors_kb = number_at(queue, "max_sectors_kb");
	qs->nomerges = number_at(queue, "nomerges");
	qs->rotational = number_at(queue, "rotational");
	read_at(queue, "write_cache", qs->write_cache, sizeof(qs->write_cache));
	read_iosched(queue, qs);
	return 0;
}
