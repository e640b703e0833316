/* log.c - the one log API */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

static enum iop_log_level log_level = IOP_LOG_INFO;
static bool log_syslog;

void log_setup(enum iop_log_level level, bool use_syslog)
{
	log_level = level;
	if (use_syslog && !log_syslog)
		openlog("iopulsed", LOG_PID, LOG_DAEMON);
	log_syslog = use_syslog;
}

enum iop_log_level log_get_level(void)
{
	return log_level;
}

void log_emit(enum iop_log_level level, const char *file, int line, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(prio[level], "%s", msg);
		return;
	}
	if (level == IOP_LOG_DEBUG)
		fprintf(stderr, "iopulsed: %s: %s:%d: %s\n", names[level], file, line, msg);
	else
		fprintf(stderr, "iopulsed: %s: %s\n", names[level], msg);
}
