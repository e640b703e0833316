/* metrics_http.c - the Prometheus / OpenMetrics endpoint (every libmicrohttpd call) */
#include "metrics_http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "accept_guard.h"
#include "clock.h"
#include "iopulse.pb-c.h"
#include "log.h"
#include "metrics_pb.h"
#include "metrics_text.h"

/* Connections: at most this many open, this many from one address (a new one shuts the
 * oldest that is not being served: accept_guard.h), a request's headers within so long of the
 * connection or of its last answer, closed when idle so long */
#define METRICS_CONNECTIONS 512
#define METRICS_PER_ADDRESS 8
#define METRICS_HEADERS_NS 3000000000ull
#define METRICS_IDLE_S 10

struct metrics_server {
	struct MHD_Daemon *d;
	struct hub *hub;
	int fd;
	int port;
	bool guarded;
	unsigned int precision, max_threads;
	struct iop_strlist threads;
	char host[256];
	pthread_mutex_t lock;
	double last_scrape_s;
	unsigned long long scrapes;
};

static double mono_s(void)
{
	return iop_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ok;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	char *b = strdup(msg);

	return b ? reply(c, status, "text/plain; charset=utf-8", b, strlen(b)) : MHD_NO;
}

enum format { F_TEXT, F_OPENMETRICS, F_PROTOBUF };

/* The body of one scrape, or NULL with *msg saying why. */
static char *scrape(struct metrics_server *s, enum format fmt, size_t *len, const char **msg)
{
	bool om = fmt == F_OPENMETRICS;
	struct metrics_opts o = { .precision = s->precision, .threads = &s->threads,
				  .max_threads = s->max_threads, .openmetrics = om, .host = s->host };
	struct metrics_health h;
	struct hub_msg *snap = NULL, *im = NULL;
	Iopulse__V1__Update *u = NULL;
	Iopulse__V1__Info *info = NULL;
	unsigned int omitted = 0;
	char err[256], *body = NULL;
	double t0 = mono_s();
	FILE *f;
	int r;

	*msg = "iopulsed: out of memory\n";
	if (hub_snapshot(s->hub, NULL, 0, &snap, err, sizeof(err)) || !snap)
		return NULL;
	u = iopulse__v1__update__unpack(NULL, snap->len, snap->buf);
	if (hub_info(s->hub, &im) == 0 && im)
		info = iopulse__v1__info__unpack(NULL, im->len, im->buf);
	pthread_mutex_lock(&s->lock);
	h.last_scrape_s = s->last_scrape_s;
	h.scrapes = s->scrapes;
	pthread_mutex_unlock(&s->lock);
	if (u && fmt == F_PROTOBUF) {
		uint8_t *b = NULL;

		if (metrics_render_pb(&b, len, u, info, &o, &h, &omitted) == 0)
			body = (char *)b;
	} else if (u && (f = open_memstream(&body, len))) {
		r = metrics_render(f, u, info, &o, &h, &omitted);
		if (fclose(f) || r) {
			free(body);
			body = NULL;
		}
	}
	if (u)
		iopulse__v1__update__free_unpacked(u, NULL);
	if (info)
		iopulse__v1__info__free_unpacked(info, NULL);
	hub_msg_unref(snap);
	if (im)
		hub_msg_unref(im);
	pthread_mutex_lock(&s->lock);
	s->last_scrape_s = mono_s() - t0;
	s->scrapes++;
	pthread_mutex_unlock(&s->lock);
	return body;
}

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

	return i ? i->connect_fd : -1;
}

/* The answer is sent: the connection waits for its next request's headers. */
static void completed(void *cls, struct MHD_Connection *c, void **state,
		      enum MHD_RequestTerminationCode why)
{
	struct metrics_server *s = cls;

	(void)state;
	(void)why;
	accept_guard_settle_fd(s->port, conn_fd(c), false);
}

static void connection(void *cls, struct MHD_Connection *c, void **socket_state,
		       enum MHD_ConnectionNotificationCode what)
{
	struct metrics_server *s = cls;

	(void)socket_state;
	if (what == MHD_CONNECTION_NOTIFY_CLOSED)
		accept_guard_gone(s->port, conn_fd(c));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct metrics_server *s = cls;
	const char *accept, *msg;
	size_t len = 0;
	char *body;
	enum format fmt;

	(void)version;
	(void)upload;
	if (*upload_len)
		return MHD_NO;
	if (!*state) {          /* headers only so far: answer on the next call */
		*state = s;
		accept_guard_settle_fd(s->port, conn_fd(c), true);
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "iopulsed: only GET /metrics\n");
	if (strcmp(url, "/metrics"))
		return text(c, MHD_HTTP_NOT_FOUND, "iopulsed: the metrics are at /metrics\n");
	accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	/* a scraper that takes the protobuf format wants native histograms: it gets them */
	if (accept && strstr(accept, "application/vnd.google.protobuf") &&
	    strstr(accept, "io.prometheus.client.MetricFamily"))
		fmt = F_PROTOBUF;
	else if (accept && strstr(accept, "application/openmetrics-text"))
		fmt = F_OPENMETRICS;
	else
		fmt = F_TEXT;
	body = scrape(s, fmt, &len, &msg);
	if (!body)
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	return reply(c, MHD_HTTP_OK, fmt == F_PROTOBUF ? METRICS_PB_CONTENT_TYPE :
		     fmt == F_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
		     "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* A listening socket on "host:port" (the last colon splits; [v6]:port works too). */
static int listen_on(const char *spec, int *port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai, *a;
	char host[256];
	const char *colon = strrchr(spec, ':');
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, r, e = 0;

	if (!colon || colon == spec || !colon[1]) {
		snprintf(err, errlen, "metrics.listen '%s': expected host:port", spec);
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	r = getaddrinfo(host, colon + 1, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "metrics.listen '%s': %s", spec, gai_strerror(r));
		return -EINVAL;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		snprintf(err, errlen, "metrics.listen '%s': %s", spec, strerror(e ? e : EADDRNOTAVAIL));
		return -(e ? e : EADDRNOTAVAIL);
	}
	*port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
			      ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int metrics_server_start(struct metrics_server **out, struct hub *hub, const struct iop_config *c,
			 char *err, size_t errlen)
{
	struct metrics_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->hub = hub;
	s->fd = -1;
	s->precision = c->metrics_precision;
	s->max_threads = c->metrics_max_threads;
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "unknown");
	if (iop_strlist_copy(&s->threads, &c->metrics_threads)) {
		metrics_server_stop(s);
		return -ENOMEM;
	}
	r = listen_on(c->metrics_listen, &s->port, err, errlen);
	if (r < 0) {
		metrics_server_stop(s);
		return r;
	}
	s->fd = r;
	/*
	 * Slow or idle clients must not keep a scraper out: epoll lifts select()'s 1,024-fd
	 * ceiling; the accept guard keeps at most METRICS_PER_ADDRESS connections from one
	 * address and METRICS_CONNECTIONS in all, shutting the oldest one not being served to
	 * make room for a new one (a scrape from any address gets in), and shuts one whose
	 * request's headers took longer than METRICS_HEADERS_NS; libmicrohttpd's own cap is
	 * above the guard's, and it closes a connection idle METRICS_IDLE_S.
	 */
	r = accept_guard_listen(s->port, METRICS_CONNECTIONS, METRICS_PER_ADDRESS,
				METRICS_HEADERS_NS, "metrics.listen");
	if (r) {
		snprintf(err, errlen, "metrics.listen '%s': cannot guard the listener: %s",
			 c->metrics_listen, strerror(-r));
		metrics_server_stop(s);
		return r;
	}
	s->guarded = true;
	s->d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				handle, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTIONS + 16,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_IDLE_S,
				MHD_OPTION_NOTIFY_COMPLETED, completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, connection, s,
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "metrics.listen '%s': the HTTP server did not start",
			 c->metrics_listen);
		metrics_server_stop(s);
		return -EIO;
	}
	*out = s;
	return 0;
}

struct metrics_server *metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return NULL;
	if (s->d)
		MHD_stop_daemon(s->d);
	if (s->guarded)
		accept_guard_unlisten(s->port);
	if (s->fd >= 0)
		close(s->fd);
	iop_strlist_free(&s->threads);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

int metrics_server_port(const struct metrics_server *s)
{
	return s ? s->port : 0;
}
