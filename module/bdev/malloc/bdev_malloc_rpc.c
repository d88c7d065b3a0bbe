/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the malloc bdev: bdev_malloc_create and bdev_malloc_delete.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/bdev_module_util.h"
#include "gga/rpc.h"

#include "bdev_malloc.h"

/* SPDK's parameters for what gga's malloc bdev lacks, at their defaults. */
static const struct rpc_param malloc_spdk_noops[] = {
	RPC_PARAM_SPDK_NOOP("optimal_io_boundary", "0"),
	RPC_PARAM_SPDK_NOOP("numa_id", "-1"),
};

static const struct module_geometry_rpc malloc_create_rpc = {
	.name_optional = true,
	.md_interleave = true,
	.spdk_noops = malloc_spdk_noops,
	.spdk_noops_count = ARRAY_SIZE(malloc_spdk_noops),
	.thin = true,
};

static void
malloc_rpc_create(struct rpc_request *req, json_t *params)
{
	struct module_geometry_args args;
	struct bdev_malloc_opts opts;
	struct bdev *bdev = NULL;
	int rc;

	if (module_geometry_rpc_decode(req, params, &malloc_create_rpc, &args) != 0) {
		return;
	}
	opts = (struct bdev_malloc_opts){
		.name = args.name,
		.num_blocks = args.num_blocks,
		.block_size = args.block_size,
		.md_size = args.md_size,
		.uuid = args.uuid,
		.thin_blocks = args.thin_blocks,
	};
	rc = bdev_malloc_create(&opts, &bdev);
	if (rc == -ENOMEM) {
		rpc_send_errno(req, rc, "cannot allocate %llu blocks of %u bytes",
			       (unsigned long long)args.num_blocks, args.block_size + args.md_size);
	} else {
		module_geometry_rpc_answer(req, rc, &args, bdev);
	}
	module_geometry_args_free(&args);
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
