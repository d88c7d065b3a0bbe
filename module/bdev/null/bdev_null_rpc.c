/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the null bdev: bdev_null_create and bdev_null_delete.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"

#include "bdev_null.h"
#include "../module_util.h"

struct rpc_null_create {
	char *name;
	uint64_t num_blocks;
	uint32_t block_size;
	uint32_t md_size;
	char *uuid;
};

static const struct rpc_param null_create_params[] = {
	{
		.name = "name", .type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_null_create, name),
	},
	{
		.name = "num_blocks", .type = RPC_PARAM_UINT64, .min = 1, .max = UINT64_MAX,
		.offset = offsetof(struct rpc_null_create, num_blocks),
	},
	{
		.name = "block_size", .type = RPC_PARAM_UINT32, .pow2 = true,
		.min = 512, .max = 65536,
		.offset = offsetof(struct rpc_null_create, block_size),
	},
	{
		.name = "md_size", .type = RPC_PARAM_UINT32, .optional = true,
		.offset = offsetof(struct rpc_null_create, md_size),
	},
	{
		.name = "uuid", .type = RPC_PARAM_STRING, .optional = true,
		.offset = offsetof(struct rpc_null_create, uuid),
	},
	/* SPDK's parameters for what gga's null bdev lacks, at their defaults. */
	MODULE_SPDK_PI_PARAMS,
	RPC_PARAM_SPDK_NOOP("preferred_write_granularity", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_write_alignment", "0"),
	RPC_PARAM_SPDK_NOOP("optimal_write_size", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_unmap_granularity", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_unmap_alignment", "0"),
};

static void
null_rpc_create(struct rpc_request *req, json_t *params)
{
	struct rpc_null_create args = { 0 };
	struct bdev_null_opts opts;
	struct bdev *bdev;
	uint8_t uuid[16];
	const char *msg;
	int rc;

	if (rpc_decode_params(req, params, null_create_params, ARRAY_SIZE(null_create_params),
			      &args) != 0) {
		goto cleanup;
	}
	/* Check here too so that the answer names the parameter. */
	msg = module_geometry_check(args.num_blocks, args.block_size, args.md_size);
	if (msg != NULL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s", msg);
		goto cleanup;
	}
	if (args.uuid != NULL && module_uuid_parse(args.uuid, uuid) != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "uuid: '%s' is not a valid UUID",
			       args.uuid);
		goto cleanup;
	}

	opts = (struct bdev_null_opts) {
		.name = args.name,
		.num_blocks = args.num_blocks,
		.block_size = args.block_size,
		.md_size = args.md_size,
		.uuid = args.uuid,
	};
	rc = bdev_null_create(&opts, &bdev);
	if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "bdev '%s' already exists", args.name);
	} else if (rc == -EINVAL) {
		/* The geometry and uuid were checked above: only the name is left. */
		rpc_send_errno(req, rc, "name: must not be empty");
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_result(req, json_string(bdev_get_name(bdev)));
	}

cleanup:
	rpc_free_params(null_create_params, ARRAY_SIZE(null_create_params), &args);
}

static void
null_rpc_delete(struct rpc_request *req, json_t *params)
{
	bdev_rpc_delete(req, params, bdev_null_delete, "null");
}

void
bdev_null_rpc_register(void)
{
	rpc_register_method("bdev_null_create", null_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_null_delete", null_rpc_delete, RPC_STATE_ANY);
}
