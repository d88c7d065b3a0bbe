/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UUIDs (RFC 9562) as 16 bytes and as their canonical 36-character string
 * "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": what bdevs, gga arrays, NVMe
 * namespace identifiers and host NQNs carry.
 */
#ifndef GGA_UUID_H
#define GGA_UUID_H

#include <stdbool.h>
#include <stdint.h>

#include "gga/util.h"

/* Bytes in a UUID and in its canonical string with the terminating NUL. */
#define UUID_LEN     16
#define UUID_STR_LEN 37

/* Write the canonical lower-case string of uuid (36 characters and a NUL) to out. */
void uuid_format(const uint8_t uuid[UUID_LEN], char out[UUID_STR_LEN]);

/*
 * Parse the canonical string (hex digits in either case, dashes at offsets 8,
 * 13, 18 and 23, nothing before or after) into 16 bytes. Returns 0, or
 * -EINVAL for NULL or anything else, leaving uuid unspecified.
 */
int uuid_parse(const char *str, uint8_t uuid[UUID_LEN]);

/*
 * Fill uuid with a random (version 4) UUID. Uses getrandom(); where that
 * fails, rand(): uniqueness, not secrecy, is what a UUID needs.
 */
void uuid_generate(uint8_t uuid[UUID_LEN]);

/* True for the nil UUID (all zero), which means "none given" throughout gga. */
static inline bool
uuid_is_null(const uint8_t uuid[UUID_LEN])
{
	return mem_is_zero(uuid, UUID_LEN);
}

#endif /* GGA_UUID_H */
