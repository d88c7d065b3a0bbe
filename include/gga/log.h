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
#include <stddef.h>

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

/*
 * A string a peer chose (a host or subsystem NQN from a Connect, a TLS PSK
 * identity, anything taken from the wire) made safe for a log line:
 * printable ASCII is copied, every other byte and the backslash become
 * \xNN, so a peer can neither end the line and forge the next one nor send
 * terminal escapes. At most out_len - 1 bytes are written; a string cut
 * short ends with "...". NULL prints as "(null)". Returns out.
 */
const char *log_escape(char *out, size_t out_len, const char *s);

/*
 * log_escape() into a buffer that lives until the end of the enclosing
 * block, for a log call's argument: ERRLOG("host %s\n", LOG_ESC(hostnqn)).
 * LOG_ESC_LEN holds a PSK identity of two full NQNs.
 */
#define LOG_ESC_LEN 512
#define LOG_ESC(s)  log_escape((char[LOG_ESC_LEN]){ 0 }, LOG_ESC_LEN, (s))

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
