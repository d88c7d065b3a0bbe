/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the null bdev: bdev_null_create and bdev_null_delete.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/bdev_module_util.h"
#include "gga/rpc.h"

#include "bdev_null.h"

/* SPDK's parameters for what gga's null bdev lacks, at their defaults. */
static const struct rpc_param null_spdk_noops[] = {
	RPC_PARAM_SPDK_NOOP("preferred_write_granularity", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_write_alignment", "0"),
	RPC_PARAM_SPDK_NOOP("optimal_write_size", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_unmap_granularity", "0"),
	RPC_PARAM_SPDK_NOOP("preferred_unmap_alignment", "0"),
};

static const struct module_geometry_rpc null_create_rpc = {
	.spdk_noops = null_spdk_noops,
	.spdk_noops_count = ARRAY_SIZE(null_spdk_noops),
};

static void
null_rpc_create(struct rpc_request *req, json_t *params)
{
	struct module_geometry_args args;
	struct bdev_null_opts opts;
	struct bdev *bdev = NULL;
	int rc;

	if (module_geometry_rpc_decode(req, params, &null_create_rpc, &args) != 0) {
		return;
	}
	opts = (struct bdev_null_opts){
		.name = args.name,
		.num_blocks = args.num_blocks,
		.block_size = args.block_size,
		.md_size = args.md_size,
		.uuid = args.uuid,
	};
	rc = bdev_null_create(&opts, &bdev);
	module_geometry_rpc_answer(req, rc, &args, bdev);
	module_geometry_args_free(&args);
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
