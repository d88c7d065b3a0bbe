/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the file bdev: bdev_file_create and bdev_file_delete.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"

#include "bdev_file.h"

struct rpc_file_create {
	char *name;
	char *filename;
	uint32_t block_size;
	uint32_t md_size;
	uint64_t num_blocks;
	char *uuid;
	bool create;
};

static const struct rpc_param file_create_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_file_create, name),
	},
	{
		.name = "filename",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_file_create, filename),
	},
	{
		.name = "block_size",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.pow2 = true,
		.min = 512,
		.max = 65536,
		.offset = offsetof(struct rpc_file_create, block_size),
	},
	{
		.name = "md_size",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_file_create, md_size),
	},
	{
		.name = "num_blocks",
		.type = RPC_PARAM_UINT64,
		.optional = true,
		.min = 1,
		.max = UINT64_MAX,
		.offset = offsetof(struct rpc_file_create, num_blocks),
	},
	{
		.name = "uuid",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_file_create, uuid),
	},
	{
		.name = "create",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_file_create, create),
	},
};

static void
file_rpc_create(struct rpc_request *req, json_t *params)
{
	struct rpc_file_create args = { .create = true };
	struct bdev_file_opts opts;
	struct bdev *bdev;
	char msg[512];
	int rc;

	if (rpc_decode_params(req, params, file_create_params, ARRAY_SIZE(file_create_params),
			      &args) != 0) {
		goto out_free_params;
	}
	opts = (struct bdev_file_opts){
		.name = args.name,
		.filename = args.filename,
		.block_size = args.block_size,
		.md_size = args.md_size,
		.num_blocks = args.num_blocks,
		.uuid = args.uuid,
		.create = args.create,
	};
	/* The module's message names the parameter or the file at fault. */
	rc = bdev_file_create(&opts, &bdev, msg, sizeof(msg));
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
	} else {
		rpc_send_result(req, json_string(bdev_get_name(bdev)));
	}

out_free_params:
	rpc_free_params(file_create_params, ARRAY_SIZE(file_create_params), &args);
}

static void
file_rpc_delete(struct rpc_request *req, json_t *params)
{
	bdev_rpc_delete(req, params, bdev_file_delete, "file");
}

void
bdev_file_rpc_register(void)
{
	rpc_register_method("bdev_file_create", file_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_file_delete", file_rpc_delete, RPC_STATE_ANY);
}
