/* log.h - the one log API: levels, file:line on debug, stderr or syslog */
#ifndef IOPULSE_LOG_H
#define IOPULSE_LOG_H

#include <stdbool.h>

#include "config.h"

void log_setup(enum iop_log_level level, bool use_syslog);
enum iop_log_level log_get_level(void);
void log_emit(enum iop_log_level level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define log_error(...) log_emit(IOP_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...) log_emit(IOP_LOG_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_emit(IOP_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_emit(IOP_LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__)

#endif
