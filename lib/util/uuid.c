/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gga/uuid.h"

void
uuid_format(const uint8_t u[UUID_LEN], char out[UUID_STR_LEN])
{
	snprintf(out, UUID_STR_LEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		 u[15]);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

int
uuid_parse(const char *str, uint8_t uuid[UUID_LEN])
{
	size_t i = 0, n = 0;
	int hi, lo;

	/* strnlen: a long string is refused without reading all of it. */
	if (str == NULL || strnlen(str, UUID_STR_LEN) != UUID_STR_LEN - 1) {
		return -EINVAL;
	}
	while (i < UUID_STR_LEN - 1) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (str[i++] != '-') {
				return -EINVAL;
			}
			continue;
		}
		hi = hex_digit(str[i]);
		lo = hex_digit(str[i + 1]);
		if (hi < 0 || lo < 0) {
			return -EINVAL;
		}
		uuid[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return 0;
}

void
uuid_generate(uint8_t uuid[UUID_LEN])
{
	size_t done = 0;
	ssize_t n;

	while (done < UUID_LEN) {
		n = getrandom(uuid + done, UUID_LEN - done, 0);
		if (n > 0) {
			done += (size_t)n;
		} else if (n < 0 && errno != EINTR) {
			break;
		}
	}
	while (done < UUID_LEN) {
		uuid[done++] = (uint8_t)rand();
	}
	/* Version 4 (random) in the high nibble of byte 6, variant 10 in byte 8. */
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}
