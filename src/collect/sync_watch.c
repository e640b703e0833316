/* sync_watch.c - the thread and process names whose sync calls get the table's reserved room */
#include "sync_watch.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "iopulse.h"
#include "log.h"

struct sync_watch {
	struct iop_watch_key held[IOP_SYNC_WATCH_MAX];   /* what the kernel map holds */
	size_t n;
	bool full_said;
};

int sync_watch_new(struct sync_watch **out)
{
	struct sync_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	*out = w;
	return 0;
}

struct sync_watch *sync_watch_free(struct sync_watch *w)
{
	free(w);
	return NULL;
}

static bool any_glob(const struct iop_strlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (fnmatch(l->v[i], name, 0) == 0)
			return true;
	return false;
}

static bool is_literal(const char *glob)
{
	return !strpbrk(glob, "*?[\\") && strlen(glob) < sizeof(((struct iop_watch_key *)0)->name);
}

bool sync_watch_match(const struct iop_config *c, const char *comm, const char *process)
{
	return any_glob(&c->metrics_threads, comm) || any_glob(&c->thread_include, comm) ||
	       !strcmp(process, SYNC_WATCH_PROCESS);
}

static bool in_list(const struct iop_strlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], name))
			return true;
	return false;
}

/* Whether c still watches held key k. */
static bool wanted(const struct iop_config *c, const struct iop_watch_key *k)
{
	if (k->kind == IOP_WATCH_PROCESS)
		return !strcmp(k->name, SYNC_WATCH_PROCESS);
	/* a literal glob names itself; a name learnt from the table stays while a glob matches */
	return in_list(&c->metrics_threads, k->name) || in_list(&c->thread_include, k->name) ||
	       any_glob(&c->metrics_threads, k->name) || any_glob(&c->thread_include, k->name);
}

static int add(struct sync_watch *w, int fd, const char *name, unsigned int kind)
{
	struct iop_watch_key k = { .kind = kind };
	uint32_t one = 1;
	size_t i;

	strncpy(k.name, name, sizeof(k.name) - 1);
	for (i = 0; i < w->n; i++)
		if (w->held[i].kind == kind && !strcmp(w->held[i].name, k.name))
			return 0;
	if (w->n == IOP_SYNC_WATCH_MAX) {
		if (!w->full_said)
			log_warn("%d watched thread names at most: %s gets no reserved room in the "
				 "sync table", IOP_SYNC_WATCH_MAX, name);
		w->full_said = true;
		return 0;
	}
	if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
		return -errno;
	w->held[w->n++] = k;
	return 0;
}

int sync_watch_refresh(struct sync_watch *w, int fd, const struct iop_config *c)
{
	const struct iop_strlist *lists[] = { &c->metrics_threads, &c->thread_include };
	size_t i, j;
	int r = 0;

	for (i = 0; i < w->n; ) {
		if (wanted(c, &w->held[i])) {
			i++;
			continue;
		}
		if (bpf_map_delete_elem(fd, &w->held[i]) && errno != ENOENT)
			return -errno;
		w->held[i] = w->held[--w->n];
		w->full_said = false;
	}
	for (i = 0; !r && i < 2; i++)
		for (j = 0; !r && j < lists[i]->n; j++)
			if (is_literal(lists[i]->v[j]))
				r = add(w, fd, lists[i]->v[j], IOP_WATCH_THREAD);
	return r ?: add(w, fd, SYNC_WATCH_PROCESS, IOP_WATCH_PROCESS);
}

int sync_watch_seen(struct sync_watch *w, int fd, const struct iop_config *c, const char *comm)
{
	if (!any_glob(&c->metrics_threads, comm) && !any_glob(&c->thread_include, comm))
		return 0;
	return add(w, fd, comm, IOP_WATCH_THREAD);
}
