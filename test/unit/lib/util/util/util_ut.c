/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gga/util.h"
#include "gga_ut.h"

/* The plain answer mem_is_zero() must agree with. */
static bool
ref_is_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != 0) {
			return false;
		}
	}
	return true;
}

static void
test_mem_is_zero_empty_and_small(void)
{
	uint8_t b[7] = { 0 };

	CU_ASSERT(mem_is_zero(NULL, 0));
	CU_ASSERT(mem_is_zero(b, 0));
	CU_ASSERT(mem_is_zero(b, sizeof(b)));
	b[6] = 1;
	CU_ASSERT(!mem_is_zero(b, sizeof(b)));
	/* Only the bytes asked about count. */
	CU_ASSERT(mem_is_zero(b, 6));
}

/*
 * Every length up to 200 (the byte tail, the 8-byte steps and the 64-byte
 * steps), every start offset in a word (unaligned loads), and a single
 * non-zero byte at every position, including the last.
 */
static void
test_mem_is_zero_every_byte(void)
{
	uint8_t *buf = calloc(1, 256);
	size_t off, len, pos;
	unsigned int wrong = 0;

	CU_ASSERT_FATAL(buf != NULL);
	for (off = 0; off < 8; off++) {
		for (len = 0; len <= 200; len++) {
			if (!mem_is_zero(buf + off, len)) {
				wrong++;
			}
			for (pos = 0; pos < len; pos++) {
				buf[off + pos] = 0x10;
				if (mem_is_zero(buf + off, len)) {
					wrong++;
				}
				buf[off + pos] = 0;
			}
		}
	}
	/* A byte just past the range is not looked at. */
	buf[8 + 128] = 1;
	CU_ASSERT(mem_is_zero(buf + 8, 128));
	CU_ASSERT(!mem_is_zero(buf + 8, 129));
	UT_ASSERT_EQ(wrong, 0);
	free(buf);
}

static void
test_mem_is_zero_random(void)
{
	uint8_t buf[4096];
	unsigned int i, wrong = 0;
	size_t len;

	srand(13);
	for (i = 0; i < 2000; i++) {
		memset(buf, 0, sizeof(buf));
		len = (size_t)rand() % sizeof(buf);
		if (i % 2 == 0 && len > 0) {
			buf[(size_t)rand() % len] = (uint8_t)(1 + rand() % 255);
		}
		if (mem_is_zero(buf, len) != ref_is_zero(buf, len)) {
			wrong++;
		}
	}
	UT_ASSERT_EQ(wrong, 0);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_mem_is_zero_empty_and_small),
		UT_TEST(test_mem_is_zero_every_byte),
		UT_TEST(test_mem_is_zero_random),
	};

	return ut_run("util", tests, ARRAY_SIZE(tests), NULL, NULL);
}
