/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/log/log.c: log_escape() (peer-supplied strings made safe for a log
 * line: nothing a peer sends can end the line and start a forged one) and
 * log_print()'s own guard against a control character in a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gga/log.h"
#include "gga_ut.h"

static void
test_escape_plain(void)
{
	char out[64];

	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), "nqn.2016-06.io.gga:a b_c"),
			 "nqn.2016-06.io.gga:a b_c");
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), ""), "");
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), NULL), "(null)");
	UT_ASSERT_STR_EQ(log_escape(out, 0, "abc"), "");
}

static void
test_escape_hostile(void)
{
	char out[128];

	/* A newline (and a carriage return) cannot end the line. */
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), "h\n[1.2] x.c:1:f: *NOTICE*: forged"),
			 "h\\x0a[1.2] x.c:1:f: *NOTICE*: forged");
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), "a\rb"), "a\\x0db");
	/* Terminal escapes, DEL, bytes above ASCII, tabs. */
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), "\x1b[2J\x7f\xff\t"),
			 "\\x1b[2J\\x7f\\xff\\x09");
	/* The backslash itself, so an escape in the log is always ours. */
	UT_ASSERT_STR_EQ(log_escape(out, sizeof(out), "a\\x0ab"), "a\\x5cx0ab");
	/* The macro: one buffer per use, so two in one call do not collide. */
	snprintf(out, sizeof(out), "%s|%s", LOG_ESC("x\ny"), LOG_ESC("\x01"));
	UT_ASSERT_STR_EQ(out, "x\\x0ay|\\x01");
}

/* Every output size: bounded, NUL-terminated, a prefix of the whole, "..." when cut. */
static void
test_escape_bounds(void)
{
	const char *in = "ab\ncd\\ef\x01gh";
	char whole[64], out[64];
	size_t n, len;

	log_escape(whole, sizeof(whole), in);
	UT_ASSERT_STR_EQ(whole, "ab\\x0acd\\x5cef\\x01gh");
	for (n = 1; n <= strlen(whole) + 1; n++) {
		memset(out, 'Z', sizeof(out));
		log_escape(out, n, in);
		len = strlen(out);
		CU_ASSERT(len < n);
		CU_ASSERT(out[n] == 'Z'); /* nothing written past out_len */
		if (n == strlen(whole) + 1) {
			UT_ASSERT_STR_EQ(out, whole);
		} else if (n > 4) {
			/* Cut short: a prefix ending at a whole escape, then "...". */
			CU_ASSERT(len >= 3 && strcmp(out + len - 3, "...") == 0);
			CU_ASSERT(strncmp(out, whole, len - 3) == 0);
			CU_ASSERT(strchr(out, '\n') == NULL);
			CU_ASSERT(len - 3 < 2 || out[len - 4] != '\\');
		}
	}
	{
		/* A long NQN is cut at LOG_ESC_LEN. */
		char big[2000];

		memset(big, '\n', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		len = strlen(LOG_ESC(big));
		CU_ASSERT(len < LOG_ESC_LEN && len > LOG_ESC_LEN - 8);
	}
}

/* log_print() with stderr in a file: what it wrote. */
static void
printed(const char *text, char *buf, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	CU_ASSERT_FATAL(f != NULL && saved >= 0);
	fflush(stderr);
	dup2(fileno(f), 2);
	NOTICELOG("peer says %s\n", text);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void
test_print_guard(void)
{
	char buf[2048];

	/* Even unescaped, a newline inside a message stays inside its line. */
	printed("x\n[0.0] forged.c:1:f: *NOTICE*: host authenticated", buf, sizeof(buf));
	CU_ASSERT(strchr(buf, '\n') == buf + strlen(buf) - 1);
	CU_ASSERT(strstr(buf, "peer says x\\x0a[0.0] forged.c") != NULL);
	printed("plain", buf, sizeof(buf));
	CU_ASSERT(strstr(buf, "*NOTICE*: peer says plain\n") != NULL);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_escape_plain),
		UT_TEST(test_escape_hostile),
		UT_TEST(test_escape_bounds),
		UT_TEST(test_print_guard),
	};

	return ut_run("log", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
