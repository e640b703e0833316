/*
 * fuzz_sysfs.c - libFuzzer target: the device table's readers of sysfs and of the Ceph OSD
 * directories, run on a tree the input describes, one entry per line:
 *     F<path>\t<content>    a file (\n in content written as the two characters \ and n)
 *     L<path>\t<target>     a symbolic link
 *     D<path>               a directory
 * Paths are relative to a scratch root holding sys/ and ceph/ (no "..", no absolute paths;
 * link targets may be anything, as in a real /sys).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	remove(p);
	return 0;
}

/* root/rel, with the directories above it made; NULL for a path that leaves the root. */
static const char *place(char *buf, size_t len, const char *rel)
{
	char *slash;

	if (!*rel || rel[0] == '/' || strstr(rel, "..") || strlen(rel) > 200)
		return NULL;
	snprintf(buf, len, "%s/%s", root, rel);
	for (slash = buf + strlen(root) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		mkdir(buf, 0755);
		*slash = '/';
	}
	return buf;
}

static void entry(char *line)
{
	char path[512], *tab = strchr(line, '\t'), *r, *w;
	const char *p;
	FILE *f;

	if (tab)
		*tab++ = '\0';
	p = place(path, sizeof(path), line + 1);
	if (!p)
		return;
	switch (line[0]) {
	case 'F':
		f = fopen(p, "we");
		if (!f)
			return;
		for (r = w = tab ? tab : line + strlen(line); *r; r++, w++) {
			if (r[0] == '\\' && r[1] == 'n') {   /* unescape \n in place */
				*w = '\n';
				r++;
			} else {
				*w = *r;
			}
		}
		*w = '\0';
		fputs(tab ? tab : "", f);
		fclose(f);
		break;
	case 'L':
		if (tab && symlink(tab, p) && errno == EEXIST)
			return;
		break;
	case 'D':
		mkdir(p, 0755);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char sys[80], ceph[80], *text, *line, *save = NULL;
	struct devices *d = NULL;

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/iopulse-fuzz-sysfs-%d", (int)getpid());
	}
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(root, 0755);
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(ceph, sizeof(ceph), "%s/ceph", root);
	mkdir(sys, 0755);
	mkdir(ceph, 0755);
	text = strndup((const char *)data, size);
	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		entry(line);
	free(text);
	if (!devices_new(&d, sys, ceph)) {
		devices_scan(d);
		devices_count(d);
		devices_free(d);
	}
	return 0;
}
