/* SPDX-License-Identifier: BSD-3-Clause */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module_util.h"
#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

const char *
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

/* The parameters every geometry module takes, in the order the answers check them. */
static const struct rpc_param g_geometry_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct module_geometry_args, name),
	},
	{
		.name = "num_blocks",
		.type = RPC_PARAM_UINT64,
		.min = 1,
		.max = UINT64_MAX,
		.offset = offsetof(struct module_geometry_args, num_blocks),
	},
	{
		.name = "block_size",
		.type = RPC_PARAM_UINT32,
		.pow2 = true,
		.min = 512,
		.max = 65536,
		.offset = offsetof(struct module_geometry_args, block_size),
	},
	{
		.name = "md_size",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct module_geometry_args, md_size),
	},
	{
		.name = "uuid",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct module_geometry_args, uuid),
	},
};

static const struct rpc_param g_thin_blocks_param = {
	.name = "thin_blocks",
	.type = RPC_PARAM_UINT64,
	.optional = true,
	.min = 1,
	.max = UINT64_MAX,
	.offset = offsetof(struct module_geometry_args, thin_blocks),
};

static const struct rpc_param g_md_interleave_param = {
	.name = "md_interleave",
	.type = RPC_PARAM_BOOL,
	.optional = true,
	.offset = offsetof(struct module_geometry_args, md_interleave),
};

/*
 * SPDK's create parameters for end-to-end protection information and a
 * physical block size, which gga's bdevs do not have: accepted at SPDK's
 * defaults only.
 */
static const struct rpc_param g_spdk_pi_params[] = {
	RPC_PARAM_SPDK_NOOP("dif_type", "0"),
	RPC_PARAM_SPDK_NOOP("dif_is_head_of_md", "false"),
	RPC_PARAM_SPDK_NOOP("dif_pi_format", "0"),
	RPC_PARAM_SPDK_NOOP("physical_block_size", "0"),
};

#define GEOMETRY_RPC_MAX_NOOPS 8

static size_t
append_params(struct rpc_param *decl, size_t n, const struct rpc_param *add, size_t count)
{
	memcpy(&decl[n], add, count * sizeof(*add));
	return n + count;
}

int
module_geometry_rpc_decode(struct rpc_request *req, json_t *params,
			   const struct module_geometry_rpc *rpc, struct module_geometry_args *args)
{
	struct rpc_param decl[ARRAY_SIZE(g_geometry_params) + 2 + ARRAY_SIZE(g_spdk_pi_params) +
			      GEOMETRY_RPC_MAX_NOOPS];
	uint8_t uuid[UUID_LEN];
	const char *msg;
	size_t n;
	int rc;

	assert(rpc->spdk_noops_count <= GEOMETRY_RPC_MAX_NOOPS);
	*args = (struct module_geometry_args){ .md_interleave = true };
	n = append_params(decl, 0, g_geometry_params, ARRAY_SIZE(g_geometry_params));
	decl[0].optional = rpc->name_optional;
	if (rpc->md_interleave) {
		n = append_params(decl, n, &g_md_interleave_param, 1);
	}
	if (rpc->thin) {
		n = append_params(decl, n, &g_thin_blocks_param, 1);
	}
	n = append_params(decl, n, g_spdk_pi_params, ARRAY_SIZE(g_spdk_pi_params));
	n = append_params(decl, n, rpc->spdk_noops, rpc->spdk_noops_count);

	rc = rpc_decode_params(req, params, decl, n, args);
	if (rc != 0) {
		goto out_free_args;
	}
	/* create() checks these too; here the answer names the parameter. */
	msg = module_geometry_check(args->num_blocks, args->block_size, args->md_size);
	if (msg != NULL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s", msg);
		rc = -EINVAL;
		goto out_free_args;
	}
	if (args->thin_blocks > args->num_blocks) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "thin_blocks: must be at most num_blocks");
		rc = -EINVAL;
		goto out_free_args;
	}
	if (args->md_size != 0 && !args->md_interleave) {
		rpc_send_error(
			req, RPC_ERROR_INVALID_PARAMS,
			"md_interleave false: not supported by gga (metadata is interleaved)");
		rc = -EINVAL;
		goto out_free_args;
	}
	if (args->uuid != NULL && uuid_parse(args->uuid, uuid) != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "uuid: '%s' is not a valid UUID",
			       args->uuid);
		rc = -EINVAL;
		goto out_free_args;
	}
	return 0;

out_free_args:
	module_geometry_args_free(args);
	return rc;
}

void
module_geometry_rpc_answer(struct rpc_request *req, int rc, const struct module_geometry_args *args,
			   struct bdev *bdev)
{
	if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "bdev '%s' already exists", args->name);
	} else if (rc == -EINVAL) {
		/* The geometry and uuid were checked by the decoder: only the name is left. */
		rpc_send_errno(req, rc, "name: must not be empty");
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_result(req, json_string(bdev_get_name(bdev)));
	}
}

void
module_geometry_args_free(struct module_geometry_args *args)
{
	free(args->name);
	args->name = NULL;
	free(args->uuid);
	args->uuid = NULL;
}

void
module_write_geometry_config(struct bdev *bdev, json_t *config, const char *method,
			     uint64_t thin_blocks)
{
	json_t *params;

	params = json_pack("{s:s, s:I, s:i, s:i, s:s}", "name", bdev_get_name(bdev), "num_blocks",
			   (json_int_t)bdev_get_num_blocks(bdev), "block_size",
			   (int)bdev_get_block_size(bdev), "md_size", (int)bdev_get_md_size(bdev),
			   "uuid", bdev_get_uuid_str(bdev));
	if (params == NULL) {
		ERRLOG("bdev '%s': out of memory writing its configuration\n", bdev_get_name(bdev));
		return;
	}
	if (thin_blocks != 0) {
		json_object_set_new(params, "thin_blocks", json_integer((json_int_t)thin_blocks));
	}
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", method, "params", params));
}
