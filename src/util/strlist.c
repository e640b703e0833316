/* strlist.c - a list of owned strings */
#include "strlist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void iop_strlist_free(struct iop_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int iop_strlist_append(struct iop_strlist *l, const char *s)
{
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	v[l->n] = strdup(s);
	if (!v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

int iop_strlist_copy(struct iop_strlist *dst, const struct iop_strlist *src)
{
	struct iop_strlist l = { 0 };

	for (size_t i = 0; i < src->n; i++) {
		if (iop_strlist_append(&l, src->v[i]) < 0) {
			iop_strlist_free(&l);
			return -ENOMEM;
		}
	}
	*dst = l;
	return 0;
}
