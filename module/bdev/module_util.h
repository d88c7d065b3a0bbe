/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers shared by the bdev modules under module/bdev (private to
 * them): geometry checks with messages that name the parameter, and UUID
 * parsing for the "uuid" create parameter.
 */
#ifndef GGA_MODULE_BDEV_UTIL_H
#define GGA_MODULE_BDEV_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/log.h"
#include "gga/util.h"

/*
 * SPDK's create parameters for end-to-end protection information and a
 * physical block size, which gga's bdevs do not have: accepted at SPDK's
 * defaults only (entries of an rpc_param table; see gga/rpc.h).
 */
#define MODULE_SPDK_PI_PARAMS							\
	RPC_PARAM_SPDK_NOOP("dif_type", "0"),					\
	RPC_PARAM_SPDK_NOOP("dif_is_head_of_md", "false"),			\
	RPC_PARAM_SPDK_NOOP("dif_pi_format", "0"),				\
	RPC_PARAM_SPDK_NOOP("physical_block_size", "0")

/*
 * Check the geometry of a bdev a module is asked to create. Returns NULL when
 * it is valid, or a message naming the offending parameter (for the RPC
 * answer and the log).
 */
static inline const char *
module_geometry_check(uint64_t num_blocks, uint32_t block_size, uint32_t md_size)
{
	if (num_blocks == 0) {
		return "num_blocks: must be at least 1";
	}
	if (!is_pow2(block_size) || block_size < 512 || block_size > 65536) {
		return "block_size: must be a power of two from 512 to 65536";
	}
	switch (md_size) {
	case 0:
	case 8:
	case 16:
	case 32:
	case 64:
	case 128:
		break;
	default:
		return "md_size: must be 0, 8, 16, 32, 64 or 128";
	}
	/* Offsets in bytes must fit in 64 bits. */
	if (num_blocks > UINT64_MAX / (block_size + md_size)) {
		return "num_blocks: size in bytes does not fit in 64 bits";
	}
	return NULL;
}

static inline int
module_hex_digit(char c)
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

/*
 * Parse the canonical 36-character form "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 * into 16 bytes. Returns 0 or -EINVAL.
 */
static inline int
module_uuid_parse(const char *str, uint8_t uuid[16])
{
	size_t i, n = 0;
	int hi, lo;

	if (str == NULL || strlen(str) != 36) {
		return -EINVAL;
	}
	for (i = 0; i < 36;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (str[i] != '-') {
				return -EINVAL;
			}
			i++;
			continue;
		}
		hi = module_hex_digit(str[i]);
		lo = module_hex_digit(str[i + 1]);
		if (hi < 0 || lo < 0) {
			return -EINVAL;
		}
		uuid[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return 0;
}

/*
 * Append the call that recreates a bdev defined by its geometry alone
 * (malloc, null): {"method": method, "params": {name, num_blocks,
 * block_size, md_size, uuid}}.
 */
static inline void
module_write_geometry_config(struct bdev *bdev, json_t *config, const char *method)
{
	json_t *params;

	params = json_pack("{s:s, s:I, s:i, s:i, s:s}",
			   "name", bdev_get_name(bdev),
			   "num_blocks", (json_int_t)bdev_get_num_blocks(bdev),
			   "block_size", (int)bdev_get_block_size(bdev),
			   "md_size", (int)bdev_get_md_size(bdev),
			   "uuid", bdev_get_uuid_str(bdev));
	if (params == NULL) {
		ERRLOG("bdev '%s': out of memory writing its configuration\n",
		       bdev_get_name(bdev));
		return;
	}
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", method,
						"params", params));
}

#endif /* GGA_MODULE_BDEV_UTIL_H */
