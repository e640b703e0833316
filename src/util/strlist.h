/* strlist.h - a list of owned strings (glob lists of the config and the command line) */
#ifndef IOPULSE_STRLIST_H
#define IOPULSE_STRLIST_H

#include <stddef.h>

struct iop_strlist {
	char **v;
	size_t n;
};

/* A copy of src (0 or -ENOMEM), and freeing one. */
int iop_strlist_copy(struct iop_strlist *dst, const struct iop_strlist *src);
void iop_strlist_free(struct iop_strlist *l);
/* Append a copy of s (0 or -ENOMEM; on -ENOMEM l stays valid for iop_strlist_free). */
int iop_strlist_append(struct iop_strlist *l, const char *s);

#endif
