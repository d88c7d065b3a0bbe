/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the error bdev: bdev_error_create, bdev_error_delete and
 * bdev_error_inject_error.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_error.h"

struct rpc_error_create {
	char *base_name;
	char *uuid;
};

static const struct rpc_param error_create_params[] = {
	{
		.name = "base_name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_error_create, base_name),
	},
	{
		.name = "uuid",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_error_create, uuid),
	},
};

static void
error_rpc_create(struct rpc_request *req, json_t *params)
{
	struct rpc_error_create args = { 0 };
	struct bdev_error_opts opts;
	struct bdev *bdev;
	uint8_t uuid[16];
	int rc;

	if (rpc_decode_params(req, params, error_create_params, ARRAY_SIZE(error_create_params),
			      &args) != 0) {
		goto out_free_params;
	}
	if (args.uuid != NULL && uuid_parse(args.uuid, uuid) != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "uuid: '%s' is not a valid UUID",
			       args.uuid);
		goto out_free_params;
	}

	opts = (struct bdev_error_opts){
		.base_name = args.base_name,
		.uuid = args.uuid,
	};
	rc = bdev_error_create(&opts, &bdev);
	switch (rc) {
	case 0:
		rpc_send_result(req, json_string(bdev_get_name(bdev)));
		break;
	case -EINVAL:
		rpc_send_errno(req, rc, "base_name: must not be empty");
		break;
	case -ENODEV:
		rpc_send_errno(req, rc, "base bdev '%s' does not exist", args.base_name);
		break;
	case -EEXIST:
		rpc_send_errno(req, rc, "bdev '" BDEV_ERROR_PREFIX "%s' already exists",
			       args.base_name);
		break;
	case -EPERM:
		rpc_send_errno(req, rc,
			       "base bdev '%s' %s: delete or remove that first, or "
			       "choose another base",
			       args.base_name, bdev_busy_reason(args.base_name));
		break;
	default:
		rpc_send_errno(req, rc, NULL);
		break;
	}

out_free_params:
	rpc_free_params(error_create_params, ARRAY_SIZE(error_create_params), &args);
}

static void
error_rpc_delete(struct rpc_request *req, json_t *params)
{
	bdev_rpc_delete(req, params, bdev_error_delete, "error");
}

struct rpc_error_inject {
	char *name;
	char *io_type;
	char *error_type;
	uint32_t num;
	uint64_t corrupt_offset;
	uint32_t corrupt_value;
};

static const char *const inject_io_types[] = { "read",         "write", "flush", "unmap",
					       "write_zeroes", "all",   "clear", NULL };
static const enum bdev_io_type inject_io_type_values[] = {
	BDEV_IO_TYPE_READ,      BDEV_IO_TYPE_WRITE,        BDEV_IO_TYPE_FLUSH,
	BDEV_IO_TYPE_UNMAP,     BDEV_IO_TYPE_WRITE_ZEROES, BDEV_ERROR_IO_TYPE_ALL,
	BDEV_ERROR_IO_TYPE_ALL,
};

static const char *const inject_error_types[] = {
	"failure", "pending", "corrupt_data", "nomem", "drop", NULL,
};
static const enum bdev_error_type inject_error_type_values[] = {
	BDEV_ERROR_FAILURE, BDEV_ERROR_PENDING, BDEV_ERROR_CORRUPT_DATA,
	BDEV_ERROR_NOMEM,   BDEV_ERROR_DROP,
};

static const struct rpc_param error_inject_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_error_inject, name),
	},
	{
		.name = "io_type",
		.type = RPC_PARAM_STRING,
		.choices = inject_io_types,
		.offset = offsetof(struct rpc_error_inject, io_type),
	},
	{
		.name = "error_type",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.choices = inject_error_types,
		.offset = offsetof(struct rpc_error_inject, error_type),
	},
	{
		.name = "num",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_error_inject, num),
	},
	{
		.name = "corrupt_offset",
		.type = RPC_PARAM_UINT64,
		.optional = true,
		.offset = offsetof(struct rpc_error_inject, corrupt_offset),
	},
	{
		.name = "corrupt_value",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1,
		.max = 255,
		.offset = offsetof(struct rpc_error_inject, corrupt_value),
	},
	/* SPDK's parameters for error kinds gga's error bdev lacks, at their defaults. */
	RPC_PARAM_SPDK_NOOP("nvme_sct", "0"),
	RPC_PARAM_SPDK_NOOP("nvme_sc", "0"),
	RPC_PARAM_SPDK_NOOP("queue_depth", "0"),
};

/* Index of `value` in a NULL-terminated list (the decoder has checked it is there). */
static size_t
choice_index(const char *const *choices, const char *value)
{
	size_t i;

	for (i = 0; choices[i + 1] != NULL; i++) {
		if (strcmp(choices[i], value) == 0) {
			break;
		}
	}
	return i;
}

static void
error_rpc_inject(struct rpc_request *req, json_t *params)
{
	struct rpc_error_inject args = {
		.num = 1,
		.corrupt_value = 0xff,
	};
	struct bdev_error_inject_opts opts = { 0 };
	int rc;

	if (rpc_decode_params(req, params, error_inject_params, ARRAY_SIZE(error_inject_params),
			      &args) != 0) {
		goto out_free_params;
	}

	opts.io_type = inject_io_type_values[choice_index(inject_io_types, args.io_type)];
	if (strcmp(args.io_type, "clear") == 0) {
		opts.error_type = BDEV_ERROR_NONE;
	} else if (args.error_type == NULL) {
		opts.error_type = BDEV_ERROR_FAILURE;
	} else {
		opts.error_type =
			inject_error_type_values[choice_index(inject_error_types, args.error_type)];
	}
	opts.num = args.num;
	opts.corrupt_offset = args.corrupt_offset;
	opts.corrupt_value = (uint8_t)args.corrupt_value;

	if (opts.error_type == BDEV_ERROR_CORRUPT_DATA && opts.io_type != BDEV_IO_TYPE_READ &&
	    opts.io_type != BDEV_IO_TYPE_WRITE && opts.io_type != BDEV_ERROR_IO_TYPE_ALL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "io_type: corrupt_data applies to read, write or all, not %s",
			       args.io_type);
		goto out_free_params;
	}
	rc = bdev_error_inject_error(args.name, &opts);
	if (rc == -ENODEV) {
		rpc_send_errno(req, rc, "error bdev '%s' does not exist", args.name);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}

out_free_params:
	rpc_free_params(error_inject_params, ARRAY_SIZE(error_inject_params), &args);
}

void
bdev_error_rpc_register(void)
{
	rpc_register_method("bdev_error_create", error_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_error_delete", error_rpc_delete, RPC_STATE_ANY);
	rpc_register_method("bdev_error_inject_error", error_rpc_inject, RPC_STATE_ANY);
}
