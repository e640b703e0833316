/* config_server.c - the server.* keys, listen addresses and the checks serving needs */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "config_keys.h"

/* -------------------------------------------- group names, listen addresses -- */

bool config_listen_valid(const char *s)
{
	const char *colon = strrchr(s, ':');
	size_t digits;

	if (!colon || colon == s || !colon[1])
		return false;
	digits = strspn(colon + 1, "0123456789");
	return digits == strlen(colon + 1) && digits <= 5 && atoi(colon + 1) <= 65535;
}

/* 0 when the host part of a valid "host:port" resolves, else getaddrinfo's EAI_* code;
 * *loopback: every address it resolves to is a loopback one (NULL: not asked). */
static int listen_resolve(const char *s, bool *loopback)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai;
	char host[256];
	size_t len = (size_t)(strrchr(s, ':') - s);
	int r;

	if (len >= sizeof(host))
		return EAI_NONAME;
	memcpy(host, s, len);
	host[len] = '\0';
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		memmove(host, host + 1, len - 2);
		host[len - 2] = '\0';
	}
	r = getaddrinfo(host, NULL, &hints, &ai);
	if (r)
		return r;
	if (loopback) {
		*loopback = true;
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			if (a->ai_family == AF_INET)
				*loopback &= (ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr)
					      >> 24) == 127;
			else if (a->ai_family == AF_INET6)
				*loopback &= IN6_IS_ADDR_LOOPBACK(
					&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr);
			else
				*loopback = false;
		}
	}
	freeaddrinfo(ai);
	return 0;
}

/* A group name (checked when the socket is made) or a TCP listen address; "" for none. */
static int load_name(struct loader *ld, const yaml_node_t *n, const char *key, char **out,
		     bool listen)
{
	char buf[48];
	const char *s;
	int r;

	if (n->type == YAML_SCALAR_NODE && !loader_is_plain(n) && n->data.scalar.length == 0) {
		s = "";   /* a quoted "": none */
	} else {
		r = loader_string(ld, n, key, listen ? "a listen address \"host:port\" or \"\"" :
				  "a group name or \"\"", &s);
		if (r < 0)
			return r;
	}
	if (!listen && *s && !getgrnam(s))
		return loader_fail(ld, n, key, "no group named '%s' on this host", s);
	if (listen && *s) {
		if (!config_listen_valid(s))
			return loader_fail(ld, n, key, "'%s' is not a listen address (host:port, "
					   "e.g. \"0.0.0.0:7073\", \"[::]:7073\", \"127.0.0.1:0\")",
					   loader_shown(n, buf, sizeof(buf)));
		r = listen_resolve(s, NULL);
		if (r)
			return loader_fail(ld, n, key, "the host of '%s' does not resolve: %s",
					   loader_shown(n, buf, sizeof(buf)), gai_strerror(r));
	}
	return loader_set_string(out, s);
}

static int load_group(struct loader *ld, const yaml_node_t *n, const char *key, void *field)
{
	return load_name(ld, n, key, field, false);
}

int config_load_listen(struct loader *ld, const yaml_node_t *n, const char *key, void *field)
{
	return load_name(ld, n, key, field, true);
}

/* --------------------------------------------------------------- the keys -- */

/*
 * The gRPC server copies every one of these when it starts (rpc_server_start(): the listeners,
 * the rights, the TLS paths, the hub's limits), so a change waits for a restart. The TLS files
 * themselves are read again from the running paths on every SIGHUP (rpc_server_reload_tls()).
 */
const struct key config_server_keys[] = {
	{ .name = "enabled", .type = KEY_BOOL, .offset = FIELD(server_enabled),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "socket", .type = KEY_PATH, .offset = FIELD(server_socket),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "socket_mode", .type = KEY_MODE, .offset = FIELD(server_socket_mode),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "socket_group", .type = KEY_STRING, .offset = FIELD(server_socket_group),
	  .load = load_group, .apply = CONFIG_APPLY_RESTART },
	{ .name = "mark_group", .type = KEY_STRING, .offset = FIELD(server_mark_group),
	  .load = load_group, .apply = CONFIG_APPLY_RESTART },
	{ .name = "tcp", .type = KEY_STRING, .offset = FIELD(server_tcp),
	  .load = config_load_listen, .apply = CONFIG_APPLY_RESTART },
	{ .name = "tls_cert", .type = KEY_FILE, .offset = FIELD(server_tls_cert),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "tls_key", .type = KEY_FILE, .offset = FIELD(server_tls_key),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "tls_client_ca", .type = KEY_FILE, .offset = FIELD(server_tls_client_ca),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "insecure", .type = KEY_BOOL, .offset = FIELD(server_insecure),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "mark_clients", .type = KEY_GLOBS, .offset = FIELD(server_mark_clients),
	  .apply = CONFIG_APPLY_LIVE, .note = "for calls from now on" },
	{ .name = "ring", .type = KEY_DURATION, .offset = FIELD(server_ring_ms),
	  .apply = CONFIG_APPLY_RESTART },
	{ .name = "mark_rate", .type = KEY_UINT, .offset = FIELD(server_mark_rate),
	  .min = 1, .max = 1000, .apply = CONFIG_APPLY_RESTART },
	{ .name = "ring_mib", .type = KEY_UINT, .offset = FIELD(server_ring_mib),
	  .min = 1, .max = 65536, .apply = CONFIG_APPLY_RESTART },
	{ .name = "mark_bytes", .type = KEY_UINT, .offset = FIELD(server_mark_bytes),
	  .min = 256, .max = 1048576, .apply = CONFIG_APPLY_RESTART },
	{ .name = "mark_labels", .type = KEY_UINT, .offset = FIELD(server_mark_labels),
	  .min = 0, .max = 1024, .apply = CONFIG_APPLY_RESTART },
	{ .name = "open_phases", .type = KEY_UINT, .offset = FIELD(server_open_phases),
	  .min = 1, .max = 65536, .apply = CONFIG_APPLY_RESTART },
	{ .name = "subscribers", .type = KEY_UINT, .offset = FIELD(server_subscribers),
	  .min = 1, .max = 100000, .apply = CONFIG_APPLY_RESTART },
	{ .name = "request_bytes", .type = KEY_UINT, .offset = FIELD(server_request_bytes),
	  .min = 1024, .max = 4194304, .apply = CONFIG_APPLY_RESTART },
	{ .name = NULL },
};

/* ----------------------------------------------------------- serving checks -- */

int config_check_serving(const struct iop_config *c, char *err, size_t errlen)
{
	bool tls = *c->server_tls_cert, loopback = false;
	int r;

	if (!*c->server_tls_cert != !*c->server_tls_key) {
		snprintf(err, errlen, "server.tls_cert and server.tls_key go together: set both or "
			 "neither");
		return -EINVAL;
	}
	if (*c->server_tls_client_ca && !tls) {
		snprintf(err, errlen, "server.tls_client_ca needs server.tls_cert and server.tls_key "
			 "(clients are verified during the TLS handshake)");
		return -EINVAL;
	}
	if (!c->server_enabled || !*c->server_tcp || tls || c->server_insecure)
		return 0;
	r = listen_resolve(c->server_tcp, &loopback);
	if (r) {
		snprintf(err, errlen, "server.tcp '%s': the host does not resolve: %s", c->server_tcp,
			 gai_strerror(r));
		return -EINVAL;
	}
	if (loopback)
		return 0;
	snprintf(err, errlen, "server.tcp '%s' is reachable beyond this host without TLS: set "
		 "server.tls_cert and server.tls_key, or server.insecure: true to serve it in clear "
		 "text", c->server_tcp);
	return -EINVAL;
}
