/* hub_msg.h - a packed message shared between senders, freed with its last reference */
#ifndef IOPULSE_HUB_MSG_H
#define IOPULSE_HUB_MSG_H

#include <stddef.h>
#include <stdint.h>

struct hub_msg {
	int ref;
	size_t len;
	uint8_t *buf;
};

struct hub_msg *hub_msg_new(uint8_t *buf, size_t len);   /* takes buf (malloc'd) */
struct hub_msg *hub_msg_ref(struct hub_msg *m);
void hub_msg_unref(struct hub_msg *m);

#endif
