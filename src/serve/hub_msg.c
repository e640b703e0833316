/* hub_msg.c - a packed message shared between senders, freed with its last reference */
#include "hub_msg.h"

#include <stdlib.h>

struct hub_msg *hub_msg_new(uint8_t *buf, size_t len)
{
	struct hub_msg *m = malloc(sizeof(*m));

	if (!m) {
		free(buf);
		return NULL;
	}
	m->ref = 1;
	m->len = len;
	m->buf = buf;
	return m;
}

struct hub_msg *hub_msg_ref(struct hub_msg *m)
{
	if (m)
		__atomic_add_fetch(&m->ref, 1, __ATOMIC_RELAXED);
	return m;
}

void hub_msg_unref(struct hub_msg *m)
{
	if (m && __atomic_sub_fetch(&m->ref, 1, __ATOMIC_ACQ_REL) == 0) {
		free(m->buf);
		free(m);
	}
}
