/* pem.h - reads the PEM files of TLS (certificates, keys, CA bundles) into memory */
#ifndef IOPULSE_PEM_H
#define IOPULSE_PEM_H

#include <stddef.h>

/*
 * The whole of path as a new NUL-terminated string (caller frees), which must hold a PEM
 * block ("-----BEGIN "). At most 1 MiB. -errno and one line in err naming what (a config
 * key) and the file.
 */
int pem_read(const char *path, const char *what, char **out, char *err, size_t errlen);

#endif
