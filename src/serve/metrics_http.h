/* metrics_http.h - the Prometheus / OpenMetrics endpoint (every libmicrohttpd call) */
#ifndef IOPULSE_METRICS_HTTP_H
#define IOPULSE_METRICS_HTTP_H

#include <stddef.h>

#include "config.h"
#include "hub.h"

struct metrics_server;

/*
 * Serves GET /metrics on c->metrics_listen ("host:port"; port 0 takes a free port) from the
 * hub's cumulative snapshot, in Prometheus text 0.0.4 or, when the scraper's Accept asks for
 * it, OpenMetrics 1.0. The config's metrics settings are copied. -errno with err set.
 */
int metrics_server_start(struct metrics_server **out, struct hub *hub, const struct iop_config *c,
			 char *err, size_t errlen);
struct metrics_server *metrics_server_stop(struct metrics_server *s);
int metrics_server_port(const struct metrics_server *s);

#endif
