/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the bdev modules under module/bdev, compiled into
 * libgga_bdev_modules: geometry checks with messages that name the
 * parameter, and the create RPC and configuration of the bdevs defined by
 * their geometry alone (malloc, null).
 */
#ifndef GGA_BDEV_MODULE_UTIL_H
#define GGA_BDEV_MODULE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/rpc.h"

/*
 * Check the geometry of a bdev a module is asked to create. Returns NULL when
 * it is valid, or a message naming the offending parameter (for the RPC
 * answer and the log).
 */
const char *module_geometry_check(uint64_t num_blocks, uint32_t block_size, uint32_t md_size);

/* The decoded parameters of a geometry bdev's create RPC. */
struct module_geometry_args {
	char *name; /* NULL when optional and not given */
	uint64_t num_blocks;
	uint32_t block_size;
	uint32_t md_size;
	bool md_interleave;
	char *uuid;           /* canonical string (checked), or NULL */
	uint64_t thin_blocks; /* "thin_blocks" (module_geometry_rpc.thin), 0 when not given */
};

/* What tells one module's create RPC from another's. */
struct module_geometry_rpc {
	/* May "name" be left out (the module then makes one up)? */
	bool name_optional;
	/*
	 * Take SPDK's "md_interleave": gga's metadata is interleaved, so false
	 * (SPDK's default, which its rpc.py sends) is refused only with metadata.
	 */
	bool md_interleave;
	/*
	 * SPDK parameters the module takes at their defaults only
	 * (RPC_PARAM_SPDK_NOOP entries), beyond the protection-information ones
	 * every geometry module takes; at most 8.
	 */
	const struct rpc_param *spdk_noops;
	size_t spdk_noops_count;
	/* Take "thin_blocks" (1..num_blocks): a thin bdev limited to that many allocated blocks. */
	bool thin;
};

/*
 * Decode {name, num_blocks, block_size, md_size?, uuid?, md_interleave?,
 * thin_blocks?, and SPDK's parameters at their defaults} and check geometry,
 * md_interleave, thin_blocks and uuid. Returns 0 with *args filled (free it with module_geometry_args_free),
 * or -EINVAL having answered req with a message that names the parameter
 * and freed *args.
 */
int module_geometry_rpc_decode(struct rpc_request *req, json_t *params,
			       const struct module_geometry_rpc *rpc,
			       struct module_geometry_args *args);

/*
 * Answer a create RPC with the result of the module's create(): the bdev's
 * name for rc 0, else the errno with a message (-EEXIST: the name is taken;
 * -EINVAL: the name is empty, since the decoder checked everything else).
 */
void module_geometry_rpc_answer(struct rpc_request *req, int rc,
				const struct module_geometry_args *args, struct bdev *bdev);

void module_geometry_args_free(struct module_geometry_args *args);

/*
 * Append the call that recreates a bdev defined by its geometry alone
 * (malloc, null): {"method": method, "params": {name, num_blocks,
 * block_size, md_size, uuid}}, and "thin_blocks" when that is not 0.
 */
void module_write_geometry_config(struct bdev *bdev, json_t *config, const char *method,
				  uint64_t thin_blocks);

#endif /* GGA_BDEV_MODULE_UTIL_H */
