/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the gga bdev: bdev_gga_create, bdev_gga_delete and
 * bdev_gga_get_info (docs/RPC.md, "gga bdev").
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "bdev_gga.h"

struct rpc_gga_create {
	char *name;
	char *data_1;
	char *data_2;
	char *parity;
	char *matrix_type;
	uint32_t recovery_read_every_n;
	bool repair;
	char *mode;
	bool force;
	char *uuid;
};

static const char *const matrix_choices[] = { "vandermonde", "cauchy", NULL };
static const char *const mode_choices[] = { "auto", "create", "assemble", NULL };

static const struct rpc_param gga_create_params[] = {
	{
		.name = "name", .type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_create, name),
	},
	{
		.name = "data_1", .type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_create, data_1),
	},
	{
		.name = "data_2", .type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_create, data_2),
	},
	{
		.name = "parity", .type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_create, parity),
	},
	{
		.name = "matrix_type", .type = RPC_PARAM_STRING, .optional = true,
		.choices = matrix_choices,
		.offset = offsetof(struct rpc_gga_create, matrix_type),
	},
	{
		.name = "recovery_read_every_n", .type = RPC_PARAM_UINT32, .optional = true,
		.offset = offsetof(struct rpc_gga_create, recovery_read_every_n),
	},
	{
		.name = "repair", .type = RPC_PARAM_BOOL, .optional = true,
		.offset = offsetof(struct rpc_gga_create, repair),
	},
	{
		.name = "mode", .type = RPC_PARAM_STRING, .optional = true, .choices = mode_choices,
		.offset = offsetof(struct rpc_gga_create, mode),
	},
	{
		.name = "force", .type = RPC_PARAM_BOOL, .optional = true,
		.offset = offsetof(struct rpc_gga_create, force),
	},
	{
		.name = "uuid", .type = RPC_PARAM_STRING, .optional = true,
		.offset = offsetof(struct rpc_gga_create, uuid),
	},
};

static void
gga_rpc_create_done(void *cb_arg, struct bdev *bdev, int rc, const char *msg)
{
	struct rpc_request *req = cb_arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
		return;
	}
	rpc_send_result(req, json_string(bdev_get_name(bdev)));
}

static void
gga_rpc_create(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_create args = { .repair = true };
	struct bdev_gga_opts opts;
	int rc;

	if (rpc_decode_params(req, params, gga_create_params, ARRAY_SIZE(gga_create_params),
			      &args) != 0) {
		goto cleanup;
	}
	bdev_gga_opts_init(&opts);
	opts.name = args.name;
	opts.members[0] = args.data_1;
	opts.members[1] = args.data_2;
	opts.members[2] = args.parity;
	if (args.matrix_type != NULL) {
		/* The decoder has checked it is one of the choices. */
		gga_matrix_parse(args.matrix_type, &opts.matrix);
		opts.matrix_set = true;
	}
	opts.recovery_read_every_n = args.recovery_read_every_n;
	opts.repair = args.repair;
	if (args.mode == NULL || strcmp(args.mode, "auto") == 0) {
		opts.mode = BDEV_GGA_MODE_AUTO;
	} else if (strcmp(args.mode, "create") == 0) {
		opts.mode = BDEV_GGA_MODE_CREATE;
	} else {
		opts.mode = BDEV_GGA_MODE_ASSEMBLE;
	}
	opts.force = args.force;
	opts.uuid = args.uuid;

	rc = bdev_gga_create(&opts, gga_rpc_create_done, req);
	if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	}

cleanup:
	rpc_free_params(gga_create_params, ARRAY_SIZE(gga_create_params), &args);
}

struct rpc_gga_name {
	char *name;
};

static void
gga_rpc_delete(struct rpc_request *req, json_t *params)
{
	bdev_rpc_delete(req, params, bdev_gga_delete, "gga");
}

static const struct rpc_param gga_info_params[] = {
	{
		.name = "name", .type = RPC_PARAM_STRING, .optional = true,
		.offset = offsetof(struct rpc_gga_name, name),
	},
};

/* One bdev_gga_get_info call after another, over a snapshot of the names. */
struct gga_info_walk {
	struct rpc_request *req;
	char **names;
	size_t count;
	size_t next;
	struct bdev_gga_info info;
	json_t *result;
};

static json_t *
counters_json(const struct bdev_gga_info *info)
{
	const struct bdev_gga_counters *c = &info->counters;

	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I, s:I}",
			 "reads", (json_int_t)c->reads,
			 "writes", (json_int_t)c->writes,
			 "regular_reads", (json_int_t)c->regular_reads,
			 "recovery_reads_periodic", (json_int_t)c->recovery_reads_periodic,
			 "recovery_reads_forced", (json_int_t)c->recovery_reads_forced,
			 "raw_blocks", (json_int_t)c->raw_blocks,
			 "lz4_blocks", (json_int_t)c->lz4_blocks,
			 "zero_blocks", (json_int_t)c->zero_blocks,
			 "logical_bytes_written", (json_int_t)c->logical_bytes_written,
			 "compressed_bytes_written", (json_int_t)c->compressed_bytes_written,
			 "checksum_failures", (json_int_t)c->checksum_failures,
			 "torn_writes_detected", (json_int_t)c->torn_writes_detected,
			 "repairs_written", (json_int_t)c->repairs_written,
			 "member_io_errors", (json_int_t)c->member_io_errors,
			 "failed_ios", (json_int_t)c->failed_ios,
			 "generation", (json_int_t)info->generation);
}

static json_t *
info_json(const struct bdev_gga_info *info)
{
	json_t *members = json_array();
	char role[16], uuid[37];
	const uint8_t *u = info->array_uuid;
	uint32_t i;

	for (i = 0; i < info->num_members; i++) {
		json_array_append_new(members, json_pack("{s:s, s:s, s:s}", "role",
							 bdev_gga_role_name(i, info->k, info->m,
									    role, sizeof(role)),
							 "name", info->members[i].name, "state",
							 bdev_gga_member_state_name(
								 info->members[i].state)));
	}
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
	return json_pack("{s:s, s:i, s:I, s:i, s:i, s:s, s:s, s:i, s:b, s:s, s:o, s:o}",
			 "name", info->name,
			 "block_size", (int)info->block_size,
			 "num_blocks", (json_int_t)info->num_blocks,
			 "k", (int)info->k,
			 "m", (int)info->m,
			 "matrix_type", gga_matrix_name(info->matrix),
			 "array_uuid", uuid,
			 "recovery_read_every_n", (int)info->recovery_read_every_n,
			 "repair", info->repair,
			 "state", bdev_gga_state_name(info->state),
			 "members", members,
			 "counters", counters_json(info));
}

static void
info_walk_free(struct gga_info_walk *walk)
{
	size_t i;

	for (i = 0; i < walk->count; i++) {
		free(walk->names[i]);
	}
	free(walk->names);
	json_decref(walk->result);
	free(walk);
}

static void info_walk_next(struct gga_info_walk *walk);

static void
info_walk_done(void *cb_arg, int rc)
{
	struct gga_info_walk *walk = cb_arg;

	if (rc == 0) {
		json_array_append_new(walk->result, info_json(&walk->info));
	}
	bdev_gga_info_clear(&walk->info);
	info_walk_next(walk);
}

static void
info_walk_next(struct gga_info_walk *walk)
{
	int rc;

	while (walk->next < walk->count) {
		rc = bdev_gga_get_info(walk->names[walk->next++], &walk->info, info_walk_done,
				       walk);
		if (rc == 0) {
			return;
		}
		/* Deleted since the walk started: it is simply not listed. */
	}
	rpc_send_result(walk->req, walk->result);
	walk->result = NULL;
	info_walk_free(walk);
}

static void
gga_rpc_get_info(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_name args = { 0 };
	struct gga_info_walk *walk = NULL;
	struct bdev *bdev;
	size_t n = 0;

	if (rpc_decode_params(req, params, gga_info_params, ARRAY_SIZE(gga_info_params),
			      &args) != 0) {
		goto cleanup;
	}
	walk = calloc(1, sizeof(*walk));
	if (walk == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto cleanup;
	}
	walk->req = req;
	walk->result = json_array();
	if (args.name != NULL) {
		bdev = bdev_get_by_name(args.name);
		if (bdev == NULL || strcmp(bdev_get_module_name(bdev), "gga") != 0) {
			rpc_send_errno(req, -ENODEV, "gga bdev '%s' does not exist", args.name);
			info_walk_free(walk);
			goto cleanup;
		}
		n = 1;
	} else {
		for (bdev = bdev_gga_first(); bdev != NULL; bdev = bdev_gga_next(bdev)) {
			n++;
		}
	}
	walk->names = calloc(GGA_MAX(n, 1u), sizeof(*walk->names));
	if (walk->names == NULL || walk->result == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		info_walk_free(walk);
		goto cleanup;
	}
	if (args.name != NULL) {
		walk->names[walk->count++] = strdup(args.name);
	} else {
		for (bdev = bdev_gga_first(); bdev != NULL; bdev = bdev_gga_next(bdev)) {
			walk->names[walk->count++] = strdup(bdev_get_name(bdev));
		}
	}
	info_walk_next(walk);

cleanup:
	rpc_free_params(gga_info_params, ARRAY_SIZE(gga_info_params), &args);
}

void
bdev_gga_rpc_register(void)
{
	rpc_register_method("bdev_gga_create", gga_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_delete", gga_rpc_delete, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_get_info", gga_rpc_get_info, RPC_STATE_ANY);
}
