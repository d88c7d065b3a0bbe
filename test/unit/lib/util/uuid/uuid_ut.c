/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "gga/util.h"
#include "gga/uuid.h"
#include "gga_ut.h"

static const uint8_t g_bytes[UUID_LEN] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
};
static const char g_str[] = "01234567-89ab-cdef-fedc-ba9876543210";

static void
test_format(void)
{
	char out[UUID_STR_LEN];
	uint8_t zero[UUID_LEN] = { 0 };

	memset(out, 'x', sizeof(out));
	uuid_format(g_bytes, out);
	UT_ASSERT_STR_EQ(out, g_str);
	UT_ASSERT_EQ(strlen(out), UUID_STR_LEN - 1);
	uuid_format(zero, out);
	UT_ASSERT_STR_EQ(out, "00000000-0000-0000-0000-000000000000");
}

static void
test_parse(void)
{
	uint8_t u[UUID_LEN];

	memset(u, 0xaa, sizeof(u));
	UT_ASSERT_EQ(uuid_parse(g_str, u), 0);
	CU_ASSERT(memcmp(u, g_bytes, UUID_LEN) == 0);
	/* Upper-case digits are the same UUID. */
	memset(u, 0xaa, sizeof(u));
	UT_ASSERT_EQ(uuid_parse("01234567-89AB-CDEF-FEDC-BA9876543210", u), 0);
	CU_ASSERT(memcmp(u, g_bytes, UUID_LEN) == 0);
}

static void
test_parse_errors(void)
{
	static const char *const bad[] = {
		"",
		"01234567-89ab-cdef-fedc-ba987654321",   /* one digit short */
		"01234567-89ab-cdef-fedc-ba98765432100", /* one digit long */
		"0123456789abcdeffedcba9876543210",      /* no dashes */
		"01234567-89ab-cdef-fedc-ba987654321g",  /* not hex, at the end */
		"g1234567-89ab-cdef-fedc-ba9876543210",  /* not hex, at the start */
		"01234567-89ab-cdef-fedc_ba9876543210",  /* wrong separator */
		"0123456-789ab-cdef-fedc-ba9876543210",  /* dash one early */
		"01234567-89ab-cdef-fedc-ba98765432-0",  /* dash among the digits */
		" 1234567-89ab-cdef-fedc-ba9876543210",  /* space */
		"{01234567-89ab-cdef-fedc-ba98765432}",  /* braces */
	};
	uint8_t u[UUID_LEN];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (uuid_parse(bad[i], u) != -EINVAL) {
			fprintf(stderr, "accepted '%s'\n", bad[i]);
			CU_FAIL("uuid_parse accepted a malformed string");
		}
	}
	UT_ASSERT_EQ(uuid_parse(NULL, u), -EINVAL);
}

static void
test_round_trip_generate(void)
{
	uint8_t a[UUID_LEN], b[UUID_LEN], back[UUID_LEN];
	char str[UUID_STR_LEN];

	uuid_generate(a);
	uuid_generate(b);
	CU_ASSERT(memcmp(a, b, UUID_LEN) != 0);
	CU_ASSERT(!uuid_is_null(a));
	/* Version 4, variant 10 (RFC 9562). */
	UT_ASSERT_EQ(a[6] >> 4, 4);
	UT_ASSERT_EQ(a[8] >> 6, 2);
	uuid_format(a, str);
	UT_ASSERT_EQ(str[14], '4');
	UT_ASSERT_EQ(uuid_parse(str, back), 0);
	CU_ASSERT(memcmp(a, back, UUID_LEN) == 0);
}

static void
test_is_null(void)
{
	uint8_t u[UUID_LEN] = { 0 };

	CU_ASSERT(uuid_is_null(u));
	u[15] = 1;
	CU_ASSERT(!uuid_is_null(u));
	u[15] = 0;
	u[0] = 0x80;
	CU_ASSERT(!uuid_is_null(u));
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_format),       UT_TEST(test_parse),
		UT_TEST(test_parse_errors), UT_TEST(test_round_trip_generate),
		UT_TEST(test_is_null),
	};

	return ut_run("uuid", tests, ARRAY_SIZE(tests), NULL, NULL);
}
