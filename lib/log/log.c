/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gga/log.h"

#define MAX_FLAGS    32
#define MAX_FLAG_LEN 32

static enum log_level g_level = LOG_LEVEL_NOTICE;
static pthread_mutex_t g_flags_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_flags[MAX_FLAGS][MAX_FLAG_LEN];
static int g_num_flags;
static bool g_all_flags;

static const char *const g_level_names[] = {
	[LOG_LEVEL_ERROR] = "ERROR", [LOG_LEVEL_WARN] = "WARNING", [LOG_LEVEL_NOTICE] = "NOTICE",
	[LOG_LEVEL_INFO] = "INFO",   [LOG_LEVEL_DEBUG] = "DEBUG",
};

void
log_set_level(enum log_level level)
{
	g_level = level;
}

enum log_level
log_get_level(void)
{
	return g_level;
}

int
log_set_flag(const char *component)
{
	int rc = 0;

	if (strlen(component) >= MAX_FLAG_LEN) {
		return -EINVAL;
	}
	pthread_mutex_lock(&g_flags_lock);
	if (strcmp(component, "all") == 0) {
		g_all_flags = true;
	} else if (!log_flag_enabled(component)) {
		if (g_num_flags == MAX_FLAGS) {
			rc = -ENOSPC;
		} else {
			strcpy(g_flags[g_num_flags++], component);
		}
	}
	pthread_mutex_unlock(&g_flags_lock);
	/* Asking for debug output of a component implies the debug level. */
	if (rc == 0 && g_level < LOG_LEVEL_DEBUG) {
		g_level = LOG_LEVEL_DEBUG;
	}
	return rc;
}

int
log_clear_flag(const char *component)
{
	int i;

	pthread_mutex_lock(&g_flags_lock);
	if (strcmp(component, "all") == 0) {
		g_all_flags = false;
		g_num_flags = 0;
	}
	for (i = 0; i < g_num_flags; i++) {
		if (strcmp(g_flags[i], component) == 0) {
			memmove(g_flags[i], g_flags[i + 1],
				(size_t)(g_num_flags - i - 1) * MAX_FLAG_LEN);
			g_num_flags--;
			break;
		}
	}
	pthread_mutex_unlock(&g_flags_lock);
	return 0;
}

bool
log_flag_enabled(const char *component)
{
	int i;

	if (g_all_flags) {
		return true;
	}
	/* Readers race only with set-up time changes; a stale answer is harmless. */
	for (i = 0; i < g_num_flags; i++) {
		if (strcmp(g_flags[i], component) == 0) {
			return true;
		}
	}
	return false;
}

static bool
plain_byte(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '\\';
}

const char *
log_escape(char *out, size_t out_len, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p;
	size_t need = 0, room, o = 0;

	if (out_len == 0) {
		return "";
	}
	if (s == NULL) {
		s = "(null)";
	}
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		need += plain_byte(*p) ? 1 : 4;
	}
	/* Cut short: keep room for the "..." that says so. */
	room = need < out_len ? need : (out_len > 4 ? out_len - 4 : 0);
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (plain_byte(*p)) {
			if (o + 1 > room) {
				break;
			}
			out[o++] = (char)*p;
		} else {
			if (o + 4 > room) {
				break;
			}
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 0xf];
		}
	}
	if (need >= out_len) {
		size_t dots = 0;

		while (o < out_len - 1 && dots++ < 3) {
			out[o++] = '.';
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * The last line of defence, for a string a log call did not escape: no
 * control character (a newline above all) reaches the log inside a message.
 */
static const char *
neutralize(const char *msg, char *buf, size_t len)
{
	const unsigned char *p;
	size_t o = 0;

	for (p = (const unsigned char *)msg; *p != '\0'; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
			break;
		}
	}
	if (*p == '\0') {
		return msg;
	}
	for (p = (const unsigned char *)msg; *p != '\0' && o + 5 <= len; p++) {
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
		} else {
			buf[o++] = (char)*p;
		}
	}
	buf[o] = '\0';
	return buf;
}

void
log_print(enum log_level level, const char *file, int line, const char *func, const char *fmt, ...)
{
	char msg[1024], safe[1024];
	struct timespec ts;
	const char *base;
	va_list ap;
	size_t len;

	if (level > g_level || level < LOG_LEVEL_ERROR) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	len = strlen(msg);
	while (len > 0 && msg[len - 1] == '\n') {
		msg[--len] = '\0';
	}
	base = strrchr(file, '/');
	base = base ? base + 1 : file;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* One fprintf per message keeps lines from different threads whole. */
	fprintf(stderr, "[%lld.%06ld] %s:%d:%s: *%s*: %s\n", (long long)ts.tv_sec,
		ts.tv_nsec / 1000, base, line, func, g_level_names[level],
		neutralize(msg, safe, sizeof(safe)));
}
