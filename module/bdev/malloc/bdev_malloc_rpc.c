/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the malloc bdev: bdev_malloc_create and bdev_malloc_delete.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"

#include "bdev_malloc.h"
#include "../module_util.h"

struct rpc_malloc_create {
	char *name;
	uint64_t num_blocks;
	uint32_t block_size;
	uint32_t md_size;
	bool md_interleave;
	char *uuid;
};

static const struct rpc_param malloc_create_params[] = {
	{
		.name = "name", .type = RPC_PARAM_STRING, .optional = true,
		.offset = offsetof(struct rpc_malloc_create, name),
	},
	{
		.name = "num_blocks", .type = RPC_PARAM_UINT64, .min = 1, .max = UINT64_MAX,
		.offset = offsetof(struct rpc_malloc_create, num_blocks),
	},
	{
		.name = "block_size", .type = RPC_PARAM_UINT32, .pow2 = true,
		.min = 512, .max = 65536,
		.offset = offsetof(struct rpc_malloc_create, block_size),
	},
	{
		.name = "md_size", .type = RPC_PARAM_UINT32, .optional = true,
		.offset = offsetof(struct rpc_malloc_create, md_size),
	},
	{
		.name = "uuid", .type = RPC_PARAM_STRING, .optional = true,
		.offset = offsetof(struct rpc_malloc_create, uuid),
	},
	{
		.name = "md_interleave", .type = RPC_PARAM_BOOL, .optional = true,
		.offset = offsetof(struct rpc_malloc_create, md_interleave),
	},
	/* SPDK's parameters for what gga's malloc bdev lacks, at their defaults. */
	MODULE_SPDK_PI_PARAMS,
	RPC_PARAM_SPDK_NOOP("optimal_io_boundary", "0"),
	RPC_PARAM_SPDK_NOOP("numa_id", "-1"),
};

static void
malloc_rpc_create(struct rpc_request *req, json_t *params)
{
	/*
	 * gga's metadata is interleaved; SPDK's rpc.py sends md_interleave false
	 * (SPDK's default), which is refused only when there is metadata.
	 */
	struct rpc_malloc_create args = { .md_interleave = true };
	struct bdev_malloc_opts opts;
	struct bdev *bdev;
	uint8_t uuid[16];
	const char *msg;
	int rc;

	if (rpc_decode_params(req, params, malloc_create_params, ARRAY_SIZE(malloc_create_params),
			      &args) != 0) {
		goto cleanup;
	}
	/* Check here too so that the answer names the parameter. */
	msg = module_geometry_check(args.num_blocks, args.block_size, args.md_size);
	if (msg != NULL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s", msg);
		goto cleanup;
	}
	if (args.md_size != 0 && !args.md_interleave) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "md_interleave false: not supported by gga (metadata is interleaved)");
		goto cleanup;
	}
	if (args.uuid != NULL && module_uuid_parse(args.uuid, uuid) != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "uuid: '%s' is not a valid UUID",
			       args.uuid);
		goto cleanup;
	}

	opts = (struct bdev_malloc_opts) {
		.name = args.name,
		.num_blocks = args.num_blocks,
		.block_size = args.block_size,
		.md_size = args.md_size,
		.uuid = args.uuid,
	};
	rc = bdev_malloc_create(&opts, &bdev);
	if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "bdev '%s' already exists", args.name);
	} else if (rc == -EINVAL) {
		/* The geometry and uuid were checked above: only the name is left. */
		rpc_send_errno(req, rc, "name: must not be empty");
	} else if (rc == -ENOMEM) {
		rpc_send_errno(req, rc, "cannot allocate %llu blocks of %u bytes",
			       (unsigned long long)args.num_blocks, args.block_size + args.md_size);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_result(req, json_string(bdev_get_name(bdev)));
	}

cleanup:
	rpc_free_params(malloc_create_params, ARRAY_SIZE(malloc_create_params), &args);
}

static void
malloc_rpc_delete(struct rpc_request *req, json_t *params)
{
	bdev_rpc_delete(req, params, bdev_malloc_delete, "malloc");
}

void
bdev_malloc_rpc_register(void)
{
	rpc_register_method("bdev_malloc_create", malloc_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_malloc_delete", malloc_rpc_delete, RPC_STATE_ANY);
}
