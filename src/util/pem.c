/* pem.c - reads the PEM files of TLS (certificates, keys, CA bundles) into memory */
#include "pem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEM_MAX (1 << 20)

int pem_read(const char *path, const char *what, char **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	size_t n;
	char *buf;
	int r;

	*out = NULL;
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return r;
	}
	buf = malloc(PEM_MAX + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, PEM_MAX + 1, f);
	r = ferror(f) ? -EIO : 0;
	fclose(f);
	if (!r && n > PEM_MAX)
		r = -EFBIG;
	buf[n <= PEM_MAX ? n : PEM_MAX] = '\0';
	if (!r && (strlen(buf) != n || !strstr(buf, "-----BEGIN ")))
		r = -EINVAL;
	if (r) {
		snprintf(err, errlen, "%s %s: %s", what, path, r == -EINVAL ? "not a PEM file" :
			 r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}
