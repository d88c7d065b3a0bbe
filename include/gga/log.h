/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging: ERRLOG/WARNLOG/NOTICELOG/INFOLOG always compiled in (filtered by
 * level at run time); DEBUGLOG(component, ...) compiled in only in debug
 * builds and enabled per component with log_set_flag() (the -L option).
 * Messages go to stderr, prefixed with the time, file:line and function.
 * Thread-safe.
 */
#ifndef GGA_LOG_H
#define GGA_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LEVEL_DISABLED = -1,
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Messages above this level are not printed. Default: LOG_LEVEL_NOTICE. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/*
 * Enable debug logging for a component ("bdev", "thread", "rpc", ... or
 * "all"). Returns 0, or -EINVAL for a name that is too long. In release
 * builds flags are accepted but DEBUGLOG is compiled out.
 */
int log_set_flag(const char *component);
int log_clear_flag(const char *component);
bool log_flag_enabled(const char *component);

void log_print(enum log_level level, const char *file, int line, const char *func, const char *fmt,
	       ...) __attribute__((format(printf, 5, 6)));

#define ERRLOG(...)    log_print(LOG_LEVEL_ERROR, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define WARNLOG(...)   log_print(LOG_LEVEL_WARN, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define NOTICELOG(...) log_print(LOG_LEVEL_NOTICE, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define INFOLOG(...)   log_print(LOG_LEVEL_INFO, __FILE__, __LINE__, __func__, __VA_ARGS__)

#ifdef DEBUG
#define DEBUGLOG(component, ...)                                                               \
	do {                                                                                   \
		if (log_flag_enabled(#component)) {                                            \
			log_print(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __func__, __VA_ARGS__); \
		}                                                                              \
	} while (0)
#else
#define DEBUGLOG(component, ...) \
	do {                     \
	} while (0)
#endif

#endif /* GGA_LOG_H */
