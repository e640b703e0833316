/* log.c - the one log API */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

static enum iop_log_level log_level = IOP_LOG_INFO;
static bool log_syslog;
static int log_journal = -1;    /* stderr is the journal's stream: -1 not checked yet */

/*
 * systemd sets $JOURNAL_STREAM to "DEV:INODE" of the stream it connects to stderr; lines there
 * may start with "<N>", a syslog priority, which the journal keeps as the entry's level.
 */
static bool stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return v && sscanf(v, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

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
	if (log_journal < 0)
		log_journal = stderr_is_journal();
	if (log_journal) {   /* the journal adds the program's name */
		if (level == IOP_LOG_DEBUG)
			fprintf(stderr, "<%d>%s: %s:%d: %s\n", prio[level], names[level], file, line,
				msg);
		else
			fprintf(stderr, "<%d>%s: %s\n", prio[level], names[level], msg);
		return;
	}
	if (level == IOP_LOG_DEBUG)
		fprintf(stderr, "iopulsed: %s: %s:%d: %s\n", names[level], file, line, msg);
	else
		fprintf(stderr, "iopulsed: %s: %s\n", names[level], msg);
}
