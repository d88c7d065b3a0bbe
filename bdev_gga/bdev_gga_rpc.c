/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the gga bdev: bdev_gga_create, bdev_gga_delete,
 * bdev_gga_get_info, bdev_gga_replace_member, bdev_gga_scrub,
 * bdev_gga_set_options and bdev_gga_clear_member (docs/RPC.md, "gga bdev").
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/rpc.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_gga.h"

struct rpc_gga_create {
	char *name;
	char *data_1;
	char *data_2;
	char *parity;
	char *matrix_type;
	char *layout;
	uint32_t recovery_read_every_n;
	bool repair;
	char *mode;
	bool force;
	char *uuid;
	uint32_t bitmap_region_kib;
	bool auto_readd;
	uint32_t rebuild_rate_mib_s;
	uint32_t member_error_limit;
	uint32_t member_error_window_s;
	uint32_t member_timeout_ms;
	json_t *data_members;
	json_t *parity_members;
	uint32_t front_id;
	uint32_t lease_ms;
	bool standby;
	bool wait_for_members;
	uint32_t member_block_size;
	uint32_t member_md_size;
	uint64_t member_num_blocks;
};

static const char *const matrix_choices[] = { "vandermonde", "cauchy", NULL };
static const char *const layout_choices[] = { "fixed", "packed", NULL };
static const char *const mode_choices[] = { "auto", "create", "assemble", NULL };

static const struct rpc_param gga_create_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_create, name),
	},
	{
		.name = "data_1",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, data_1),
	},
	{
		.name = "data_2",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, data_2),
	},
	{
		.name = "parity",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, parity),
	},
	{
		.name = "data_members",
		.type = RPC_PARAM_JSON,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, data_members),
	},
	{
		.name = "parity_members",
		.type = RPC_PARAM_JSON,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, parity_members),
	},
	{
		.name = "bitmap_region_kib",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 4,
		.max = 1u << 30,
		.pow2 = true,
		.offset = offsetof(struct rpc_gga_create, bitmap_region_kib),
	},
	{
		.name = "auto_readd",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, auto_readd),
	},
	{
		.name = "rebuild_rate_mib_s",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, rebuild_rate_mib_s),
	},
	{
		.name = "member_error_limit",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, member_error_limit),
	},
	{
		.name = "member_error_window_s",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1,
		.max = 7 * 24 * 3600,
		.offset = offsetof(struct rpc_gga_create, member_error_window_s),
	},
	{
		.name = "member_timeout_ms",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.max = 3600 * 1000,
		.offset = offsetof(struct rpc_gga_create, member_timeout_ms),
	},
	{
		.name = "front_id",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1,
		.max = 65535,
		.offset = offsetof(struct rpc_gga_create, front_id),
	},
	{
		.name = "lease_ms",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 100,
		.max = 600000,
		.offset = offsetof(struct rpc_gga_create, lease_ms),
	},
	{
		.name = "standby",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, standby),
	},
	{
		.name = "wait_for_members",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, wait_for_members),
	},
	{
		.name = "member_block_size",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, member_block_size),
	},
	{
		.name = "member_md_size",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, member_md_size),
	},
	{
		.name = "member_num_blocks",
		.type = RPC_PARAM_UINT64,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, member_num_blocks),
	},
	{
		.name = "matrix_type",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.choices = matrix_choices,
		.offset = offsetof(struct rpc_gga_create, matrix_type),
	},
	{
		.name = "layout",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.choices = layout_choices,
		.offset = offsetof(struct rpc_gga_create, layout),
	},
	{
		.name = "recovery_read_every_n",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, recovery_read_every_n),
	},
	{
		.name = "repair",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, repair),
	},
	{
		.name = "mode",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.choices = mode_choices,
		.offset = offsetof(struct rpc_gga_create, mode),
	},
	{
		.name = "force",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_gga_create, force),
	},
	{
		.name = "uuid",
		.type = RPC_PARAM_STRING,
		.optional = true,
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

/*
 * The members: either data_1, data_2 and parity (2 + 1), or the lists
 * data_members and parity_members (k + m). Returns 0 or answers the request.
 */
static int
create_members(struct rpc_request *req, const struct rpc_gga_create *args,
	       struct bdev_gga_opts *opts)
{
	const json_t *lists[2] = { args->data_members, args->parity_members };
	const char *names[2] = { "data_members", "parity_members" };
	uint32_t counts[2], i, n = 0;
	size_t j;

	if (args->data_members == NULL && args->parity_members == NULL) {
		if (args->data_1 == NULL || args->data_2 == NULL || args->parity == NULL) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
				       "%s: required (or "
				       "data_members and parity_members)",
				       args->data_1 == NULL ? "data_1" :
				       args->data_2 == NULL ? "data_2" :
							      "parity");
			return -EINVAL;
		}
		opts->members[0] = args->data_1;
		opts->members[1] = args->data_2;
		opts->members[2] = args->parity;
		return 0;
	}
	if (args->data_1 != NULL || args->data_2 != NULL || args->parity != NULL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "data_members/parity_members: not "
			       "together with data_1, data_2 or parity");
		return -EINVAL;
	}
	for (i = 0; i < 2; i++) {
		if (lists[i] == NULL || !json_is_array(lists[i]) ||
		    json_array_size(lists[i]) == 0 ||
		    json_array_size(lists[i]) > BDEV_GGA_MAX_MEMBERS) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: %s", names[i],
				       lists[i] == NULL ?
					       "required with the other list" :
					       "expected an array of 1 to 15 bdev names");
			return -EINVAL;
		}
		counts[i] = (uint32_t)json_array_size(lists[i]);
	}
	if (counts[0] + counts[1] > BDEV_GGA_MAX_MEMBERS) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%u + %u members: at most %u in all",
			       counts[0], counts[1], BDEV_GGA_MAX_MEMBERS);
		return -EINVAL;
	}
	for (i = 0; i < 2; i++) {
		for (j = 0; j < counts[i]; j++) {
			const json_t *v = json_array_get(lists[i], j);

			if (!json_is_string(v)) {
				rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
					       "%s[%zu]: expected a "
					       "string",
					       names[i], j);
				return -EINVAL;
			}
			opts->members[n++] = json_string_value(v);
		}
	}
	opts->k = counts[0];
	opts->m = counts[1];
	return 0;
}

static void
gga_rpc_create(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_create args = { .repair = true,
				       .auto_readd = true,
				       .rebuild_rate_mib_s = 100,
				       .member_error_limit = 20,
				       .member_error_window_s = 600,
				       .member_timeout_ms = 5000 };
	struct bdev_gga_opts opts;
	int rc;

	if (rpc_decode_params(req, params, gga_create_params, ARRAY_SIZE(gga_create_params),
			      &args) != 0) {
		goto out_free_params;
	}
	bdev_gga_opts_init(&opts);
	opts.name = args.name;
	if (create_members(req, &args, &opts) != 0) {
		goto out_free_params;
	}
	opts.bitmap_region_kib = args.bitmap_region_kib;
	opts.auto_readd = args.auto_readd;
	opts.rebuild_rate_mib_s = args.rebuild_rate_mib_s;
	opts.member_error_limit = args.member_error_limit;
	opts.member_error_window_s = args.member_error_window_s;
	opts.member_timeout_ms = args.member_timeout_ms;
	opts.front_id = (uint16_t)args.front_id;
	opts.lease_ms = args.lease_ms != 0 ? args.lease_ms : 2000;
	opts.standby = args.standby;
	opts.wait_for_members = args.wait_for_members;
	opts.member_block_size = args.member_block_size;
	opts.member_md_size = args.member_md_size;
	opts.member_num_blocks = args.member_num_blocks;
	if (args.matrix_type != NULL) {
		/* The decoder has checked it is one of the choices. */
		gga_matrix_parse(args.matrix_type, &opts.matrix);
		opts.matrix_set = true;
	}
	if (args.layout != NULL) {
		/* One of the choices, as for the matrix. */
		gga_layout_parse(args.layout, &opts.layout);
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

out_free_params:
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
		.name = "name",
		.type = RPC_PARAM_STRING,
		.optional = true,
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

	json_t *o;

	o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:I, s:I}",
		      "reads", (json_int_t)c->reads, "writes", (json_int_t)c->writes,
		      "regular_reads", (json_int_t)c->regular_reads, "recovery_reads_periodic",
		      (json_int_t)c->recovery_reads_periodic, "recovery_reads_forced",
		      (json_int_t)c->recovery_reads_forced, "raw_blocks", (json_int_t)c->raw_blocks,
		      "lz4_blocks", (json_int_t)c->lz4_blocks, "zero_blocks",
		      (json_int_t)c->zero_blocks, "lz4_skipped_blocks",
		      (json_int_t)c->lz4_skipped_blocks, "logical_bytes_written",
		      (json_int_t)c->logical_bytes_written, "compressed_bytes_written",
		      (json_int_t)c->compressed_bytes_written, "checksum_failures",
		      (json_int_t)c->checksum_failures, "torn_writes_detected",
		      (json_int_t)c->torn_writes_detected, "repairs_written",
		      (json_int_t)c->repairs_written, "member_io_errors",
		      (json_int_t)c->member_io_errors, "failed_ios", (json_int_t)c->failed_ios,
		      "generation", (json_int_t)info->generation);
	if (o != NULL) {
		json_object_set_new(o, "stale_fragments",
				    json_integer((json_int_t)c->stale_fragments));
		json_object_set_new(o, "repairs_corrupt",
				    json_integer((json_int_t)c->repairs_corrupt));
		json_object_set_new(o, "repairs_stale", json_integer((json_int_t)c->repairs_stale));
		json_object_set_new(o, "repairs_torn", json_integer((json_int_t)c->repairs_torn));
	}
	return o;
}

/* ["data_2", ...]: the roles of the members in mask. */
static json_t *
roles_json(const struct bdev_gga_info *info, uint32_t mask)
{
	json_t *roles = json_array();
	char role[16];
	uint32_t i;

	for (i = 0; i < info->num_members; i++) {
		if (mask & (1u << i)) {
			json_array_append_new(roles,
					      json_string(bdev_gga_role_name(i, info->k, info->m,
									     role, sizeof(role))));
		}
	}
	return roles;
}

static json_t *
recovery_json(const struct bdev_gga_info *info, const struct bdev_gga_recovery_info *r, bool last)
{
	double rate, eta;
	json_t *o;

	if ((!last && !r->active) || (last && !r->valid)) {
		return json_null();
	}
	o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "kind",
		      r->rebuild ? "rebuild" : "resync", "members", roles_json(info, r->members),
		      "blocks_done", (json_int_t)r->blocks_done, "blocks_total",
		      (json_int_t)r->blocks_total, "blocks_copied", (json_int_t)r->blocks_copied,
		      "regions_done", (json_int_t)r->regions_done, "regions_total",
		      (json_int_t)r->regions_total, "rate_mib_s", (json_int_t)r->rate_mib_s,
		      "seconds", r->seconds);
	if (last) {
		json_object_set_new(o, "regions", json_integer((json_int_t)r->regions_done));
		json_object_set_new(o, "blocks", json_integer((json_int_t)r->blocks_copied));
		json_object_set_new(o, "fragments_repaired",
				    json_integer((json_int_t)r->fragments_repaired));
		json_object_set_new(o, "unrecoverable_blocks",
				    json_integer((json_int_t)r->unrecoverable_blocks));
		json_object_set_new(o, "result",
				    json_string(r->result == 0          ? "done" :
						r->result == -ECANCELED ? "stopped" :
									  "failed"));
	} else {
		/* Logical MiB/s of what was copied, and the time left at that pace. */
		rate = r->seconds > 0 ? (double)r->blocks_copied * info->block_size /
						(1024.0 * 1024.0) / r->seconds :
					0;
		eta = r->seconds > 0 && r->blocks_done > 0 ?
			      r->seconds * (double)(r->blocks_total - r->blocks_done) /
				      r->blocks_done :
			      -1;
		json_object_set_new(o, "mib_s", json_real(rate));
		json_object_set_new(o, "eta_s", json_real(eta));
	}
	return o;
}

static const char *const scrub_state_names[] = {
	"idle", "running", "done", "stopped", "failed",
};

static json_t *
scrub_json(const struct bdev_gga_scrub_info *s)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "state",
			 scrub_state_names[s->state], "scope", s->marked_only ? "marked" : "all",
			 "regions_done", (json_int_t)s->regions_done, "blocks_done",
			 (json_int_t)s->blocks_done, "blocks_total", (json_int_t)s->blocks_total,
			 "fragments_repaired", (json_int_t)s->fragments_repaired,
			 "unrecoverable_blocks", (json_int_t)s->unrecoverable_blocks, "rate_mib_s",
			 (json_int_t)s->rate_mib_s, "seconds", s->seconds);
}

static json_t *
info_json(const struct bdev_gga_info *info)
{
	json_t *members = json_array(), *obj;
	const struct bdev_gga_member_info *mi;
	char role[16], uuid[UUID_STR_LEN];
	uint32_t i;

	/* A front that has not assembled the members has not read them: their states are not known. */
	bool unread = info->front_id != 0 && !info->assembled;

	for (i = 0; i < info->num_members; i++) {
		mi = &info->members[i];
		json_array_append_new(
			members,
			json_pack(
				"{s:s, s:s, s:s, s:s?, s:s?, s:b, s:I}", "role",
				bdev_gga_role_name(i, info->k, info->m, role, sizeof(role)), "name",
				mi->name, "state",
				unread ? "unknown" : bdev_gga_member_state_name(mi->state), "needs",
				unread ? NULL : mi->needs, "reason",
				unread ? "not read by this front (it has not assembled the array)" :
					 mi->reason,
				"faulted", mi->faulted, "errors", (json_int_t)mi->errors));
	}
	uuid_format(info->array_uuid, uuid);
	obj = json_pack("{s:s, s:i, s:I, s:i, s:i, s:s, s:s, s:I, s:b, s:s, s:o, s:o}", "name",
			info->name, "block_size", (int)info->block_size, "num_blocks",
			(json_int_t)info->num_blocks, "k", (int)info->k, "m", (int)info->m,
			"matrix_type", gga_matrix_name(info->matrix), "array_uuid", uuid,
			"recovery_read_every_n", (json_int_t)info->recovery_read_every_n, "repair",
			info->repair, "state",
			unread ? "unknown" : bdev_gga_state_name(info->state), "members", members,
			"counters", counters_json(info));
	/* Every array this build assembles is fixed (packed: issue 35, not yet accepted). */
	json_object_set_new(obj, "layout", json_string(gga_layout_name(GGA_LAYOUT_FIXED)));
	json_object_set_new(obj, "events", json_integer((json_int_t)info->events));
	json_object_set_new(obj, "unrecoverable_blocks",
			    json_integer((json_int_t)info->unrecoverable_blocks));
	json_object_set_new(obj, "auto_readd", json_boolean(info->auto_readd));
	json_object_set_new(obj, "rebuild_rate_mib_s", json_integer(info->rebuild_rate_mib_s));
	json_object_set_new(obj, "member_error_limit", json_integer(info->member_error_limit));
	json_object_set_new(obj, "member_error_window_s",
			    json_integer(info->member_error_window_s));
	json_object_set_new(obj, "member_timeout_ms", json_integer(info->member_timeout_ms));
	json_object_set_new(obj, "bitmap",
			    json_pack("{s:i, s:I, s:I}", "region_kib", (int)info->bitmap_region_kib,
				      "regions", (json_int_t)info->bitmap_regions, "dirty",
				      (json_int_t)info->bitmap_dirty));
	json_object_set_new(obj, "recovery", recovery_json(info, &info->recovery, false));
	json_object_set_new(obj, "last_recovery", recovery_json(info, &info->last_recovery, true));
	json_object_set_new(obj, "scrub", scrub_json(&info->scrub));
	if (info->waiting != NULL) {
		/* Registered, not assembled: every request fails until k members in sync answer. */
		json_object_set_new(obj, "assembly",
				    json_pack("{s:s, s:s}", "state", "waiting_for_members",
					      "reason", info->waiting));
	}
	if (info->front_id != 0) {
		json_object_set_new(obj, "front",
				    json_pack("{s:i, s:s, s:s?, s:f, s:b, s:b, s:i, s:I, s:b}",
					      "front_id", (int)info->front_id, "role", info->role,
					      "reason", info->role_reason, "role_seconds",
					      info->role_seconds, "serving", info->serving,
					      "assembled", info->assembled, "members_held",
					      (int)info->members_held, "lease_ms",
					      (json_int_t)info->lease_ms, "standby",
					      info->standby));
	}
	return obj;
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

	if (rpc_decode_params(req, params, gga_info_params, ARRAY_SIZE(gga_info_params), &args) !=
	    0) {
		goto out_free_params;
	}
	walk = calloc(1, sizeof(*walk));
	if (walk == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto out_free_params;
	}
	walk->req = req;
	walk->result = json_array();
	if (args.name != NULL) {
		bdev = bdev_get_by_name(args.name);
		if (bdev == NULL || strcmp(bdev_get_module_name(bdev), "gga") != 0) {
			rpc_send_errno(req, -ENODEV, "gga bdev '%s' does not exist", args.name);
			info_walk_free(walk);
			goto out_free_params;
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
		goto out_free_params;
	}
	if (args.name != NULL) {
		walk->names[walk->count++] = strdup(args.name);
	} else {
		for (bdev = bdev_gga_first(); bdev != NULL; bdev = bdev_gga_next(bdev)) {
			walk->names[walk->count++] = strdup(bdev_get_name(bdev));
		}
	}
	info_walk_next(walk);

out_free_params:
	rpc_free_params(gga_info_params, ARRAY_SIZE(gga_info_params), &args);
}

/* ---------------------------------------------------------------------- */
/* bdev_gga_replace_member                                                 */
/* ---------------------------------------------------------------------- */

struct rpc_gga_replace {
	char *name;
	char *member;
	char *new_base;
};

static const struct rpc_param gga_replace_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_replace, name) },
	{ .name = "member",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_replace, member) },
	{ .name = "new_base",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_replace, new_base) },
};

static void
gga_rpc_replace_done(void *cb_arg, int rc, const char *msg)
{
	struct rpc_request *req = cb_arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
		return;
	}
	rpc_send_result(req, json_true());
}

static void
gga_rpc_replace_member(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_replace args = { 0 };
	char msg[768];
	int rc;

	if (rpc_decode_params(req, params, gga_replace_params, ARRAY_SIZE(gga_replace_params),
			      &args) != 0) {
		goto out_free_params;
	}
	rc = bdev_gga_replace_member(args.name, args.member, args.new_base, gga_rpc_replace_done,
				     req, msg, sizeof(msg));
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
	}
out_free_params:
	rpc_free_params(gga_replace_params, ARRAY_SIZE(gga_replace_params), &args);
}

/* ---------------------------------------------------------------------- */
/* bdev_gga_scrub                                                          */
/* ---------------------------------------------------------------------- */

struct rpc_gga_scrub {
	char *name;
	char *action;
	uint32_t rate_mib_s;
};

static const char *const scrub_actions[] = { "start", "stop", "status", NULL };

static const struct rpc_param gga_scrub_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_scrub, name) },
	{ .name = "action",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .choices = scrub_actions,
	  .offset = offsetof(struct rpc_gga_scrub, action) },
	{ .name = "rate_mib_s",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_scrub, rate_mib_s) },
};

static void
scrub_status_done(void *cb_arg, int rc)
{
	struct gga_info_walk *walk = cb_arg;

	if (rc == 0) {
		rpc_send_result(walk->req, scrub_json(&walk->info.scrub));
	} else {
		rpc_send_errno(walk->req, rc, NULL);
	}
	bdev_gga_info_clear(&walk->info);
	info_walk_free(walk);
}

static void
gga_rpc_scrub(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_scrub args = { .rate_mib_s = 100 };
	struct gga_info_walk *walk;
	const char *action;
	char msg[768];
	int rc = 0;

	if (rpc_decode_params(req, params, gga_scrub_params, ARRAY_SIZE(gga_scrub_params), &args) !=
	    0) {
		goto out_free_params;
	}
	action = args.action != NULL ? args.action : "status";
	if (strcmp(action, "start") == 0) {
		rc = bdev_gga_scrub_start(args.name, args.rate_mib_s);
	} else if (strcmp(action, "stop") == 0) {
		rc = bdev_gga_scrub_stop(args.name);
	}
	if (rc == -EAGAIN) {
		/* Start and stop need an assembled array that serves; the status does not. */
		bdev_gga_ready(args.name, msg, sizeof(msg));
		rpc_send_errno(req, rc, "%s", msg);
		goto out_free_params;
	}
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s",
			       rc == -ENODEV   ? "no such gga bdev" :
			       rc == -EBUSY    ? "a scrub or a recovery is running" :
			       rc == -EALREADY ? "no scrub is running" :
			       rc == -EIO      ? "fewer than k members are online" :
						 strerror(-rc));
		goto out_free_params;
	}
	/* Every action answers with the scrub's status. */
	walk = calloc(1, sizeof(*walk));
	if (walk == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto out_free_params;
	}
	walk->req = req;
	rc = bdev_gga_get_info(args.name, &walk->info, scrub_status_done, walk);
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", rc == -ENODEV ? "no such gga bdev" : strerror(-rc));
		info_walk_free(walk);
	}
out_free_params:
	rpc_free_params(gga_scrub_params, ARRAY_SIZE(gga_scrub_params), &args);
}

/* ---------------------------------------------------------------------- */
/* bdev_gga_set_options                                                    */
/* ---------------------------------------------------------------------- */

struct rpc_gga_set_options {
	char *name;
	json_t *rebuild_rate_mib_s;
	json_t *auto_readd;
	json_t *member_error_limit;
	json_t *member_error_window_s;
	json_t *member_timeout_ms;
};

static const struct rpc_param gga_set_options_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_set_options, name) },
	{ .name = "rebuild_rate_mib_s",
	  .type = RPC_PARAM_JSON,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_set_options, rebuild_rate_mib_s) },
	{ .name = "auto_readd",
	  .type = RPC_PARAM_JSON,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_set_options, auto_readd) },
	{ .name = "member_error_limit",
	  .type = RPC_PARAM_JSON,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_set_options, member_error_limit) },
	{ .name = "member_error_window_s",
	  .type = RPC_PARAM_JSON,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_set_options, member_error_window_s) },
	{ .name = "member_timeout_ms",
	  .type = RPC_PARAM_JSON,
	  .optional = true,
	  .offset = offsetof(struct rpc_gga_set_options, member_timeout_ms) },
};

/* An optional unsigned integer parameter from min to max; false (error sent) if it is not. */
static bool
opt_u32(struct rpc_request *req, const char *name, json_t *v, uint32_t min, uint32_t max,
	uint32_t *out)
{
	if (v == NULL) {
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "%s: expected an integer from %u to %u", name, min, max);
		return false;
	}
	*out = (uint32_t)json_integer_value(v);
	return true;
}

static void
gga_rpc_set_options(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_set_options args = { 0 };
	uint32_t rate, limit = 0, window = 0, timeout = 0;
	bool readd;
	int rc;

	if (rpc_decode_params(req, params, gga_set_options_params,
			      ARRAY_SIZE(gga_set_options_params), &args) != 0) {
		goto out_free_params;
	}
	if (args.rebuild_rate_mib_s != NULL &&
	    (!json_is_integer(args.rebuild_rate_mib_s) ||
	     json_integer_value(args.rebuild_rate_mib_s) < 0 ||
	     json_integer_value(args.rebuild_rate_mib_s) > UINT32_MAX)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "rebuild_rate_mib_s: expected an integer from 0 to %u", UINT32_MAX);
		goto out_free_params;
	}
	if (args.auto_readd != NULL && !json_is_boolean(args.auto_readd)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "auto_readd: expected a boolean");
		goto out_free_params;
	}
	if (!opt_u32(req, "member_error_limit", args.member_error_limit, 0, UINT32_MAX, &limit) ||
	    !opt_u32(req, "member_error_window_s", args.member_error_window_s, 1, 7 * 24 * 3600,
		     &window) ||
	    !opt_u32(req, "member_timeout_ms", args.member_timeout_ms, 0, 3600 * 1000, &timeout)) {
		goto out_free_params;
	}
	rate = args.rebuild_rate_mib_s != NULL ?
		       (uint32_t)json_integer_value(args.rebuild_rate_mib_s) :
		       0;
	readd = args.auto_readd != NULL && json_is_true(args.auto_readd);
	rc = bdev_gga_set_member_policy(args.name, args.member_error_limit != NULL ? &limit : NULL,
					args.member_error_window_s != NULL ? &window : NULL,
					args.member_timeout_ms != NULL ? &timeout : NULL);
	if (rc == 0) {
		rc = bdev_gga_set_options(args.name, args.rebuild_rate_mib_s != NULL ? &rate : NULL,
					  args.auto_readd != NULL ? &readd : NULL);
	}
	if (rc != 0) {
		rpc_send_errno(req, rc, "gga bdev '%s' does not exist", args.name);
		goto out_free_params;
	}
	rpc_send_result(req, json_true());
out_free_params:
	rpc_free_params(gga_set_options_params, ARRAY_SIZE(gga_set_options_params), &args);
}

/* ---------------------------------------------------------------------- */
/* bdev_gga_clear_member                                                   */
/* ---------------------------------------------------------------------- */

struct rpc_gga_clear_member {
	char *name;
	char *member;
};

static const struct rpc_param gga_clear_member_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_clear_member, name) },
	{ .name = "member",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_clear_member, member) },
};

static void
gga_rpc_clear_member(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_clear_member args = { 0 };
	char msg[768];
	int rc;

	if (rpc_decode_params(req, params, gga_clear_member_params,
			      ARRAY_SIZE(gga_clear_member_params), &args) != 0) {
		goto out_free_params;
	}
	rc = bdev_gga_clear_member(args.name, args.member);
	switch (rc) {
	case 0:
		rpc_send_result(req, json_true());
		break;
	case -EAGAIN:
		bdev_gga_ready(args.name, msg, sizeof(msg));
		rpc_send_errno(req, rc,
			       "%s; a member is cleared once the array is assembled and serves",
			       msg);
		break;
	case -ENODEV:
		rpc_send_errno(req, rc, "gga bdev '%s' does not exist", args.name);
		break;
	case -ENOENT:
		rpc_send_errno(req, rc,
			       "gga bdev '%s' has no member '%s' (a role such as data_1, or a base "
			       "bdev name)",
			       args.name, args.member);
		break;
	default:
		rpc_send_errno(req, rc,
			       "member '%s' of '%s' is not faulted (only a member failed for too "
			       "many corrupt or stale fragments is cleared)",
			       args.member, args.name);
		break;
	}
out_free_params:
	rpc_free_params(gga_clear_member_params, ARRAY_SIZE(gga_clear_member_params), &args);
}

static const struct rpc_param gga_hand_over_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_gga_name, name),
	},
};

static void
gga_rpc_hand_over(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_name args = { 0 };
	int rc;

	if (rpc_decode_params(req, params, gga_hand_over_params, ARRAY_SIZE(gga_hand_over_params),
			      &args) != 0) {
		goto out_free_params;
	}
	rc = bdev_gga_hand_over(args.name);
	switch (rc) {
	case 0:
		rpc_send_result(req, json_true());
		break;
	case -ENODEV:
		rpc_send_errno(req, rc, "gga bdev '%s' does not exist", args.name);
		break;
	case -ENOTSUP:
		rpc_send_errno(req, rc, "gga bdev '%s' has a single front (no front_id)",
			       args.name);
		break;
	default:
		rpc_send_errno(req, rc,
			       "front of '%s' is neither active nor standby (taking over, handing "
			       "over or stepped down)",
			       args.name);
		break;
	}
out_free_params:
	rpc_free_params(gga_hand_over_params, ARRAY_SIZE(gga_hand_over_params), &args);
}

#ifdef GGA_TEST_HOOKS
struct rpc_gga_test_delay {
	char *name;
	uint32_t ms;
};

static const struct rpc_param gga_test_delay_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_gga_test_delay, name) },
	{ .name = "ms",
	  .type = RPC_PARAM_UINT32,
	  .offset = offsetof(struct rpc_gga_test_delay, ms),
	  .min = 1,
	  .max = 10000 },
};

/*
 * Test hook: the next assembly of this front (once it takes the members)
 * waits `ms` before it reads their superblocks, so that a test can lose a
 * member the front has just taken (issue 32, case 6).
 */
static void
gga_rpc_test_assembly_delay(struct rpc_request *req, json_t *params)
{
	struct rpc_gga_test_delay args = { 0 };
	int rc;

	if (rpc_decode_params(req, params, gga_test_delay_params, ARRAY_SIZE(gga_test_delay_params),
			      &args) != 0) {
		goto out_free_params;
	}
	rc = bdev_gga_test_assembly_delay(args.name, args.ms);
	if (rc != 0) {
		rpc_send_errno(req, rc, "gga bdev '%s' does not exist or has a single front",
			       args.name);
		goto out_free_params;
	}
	rpc_send_result(req, json_true());
out_free_params:
	rpc_free_params(gga_test_delay_params, ARRAY_SIZE(gga_test_delay_params), &args);
}
#endif

void
bdev_gga_rpc_register(void)
{
#ifdef GGA_TEST_HOOKS
	rpc_register_method("test_gga_assembly_delay", gga_rpc_test_assembly_delay,
			    RPC_STATE_RUNTIME);
#endif
	rpc_register_method("bdev_gga_create", gga_rpc_create, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_delete", gga_rpc_delete, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_get_info", gga_rpc_get_info, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_replace_member", gga_rpc_replace_member, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_scrub", gga_rpc_scrub, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_set_options", gga_rpc_set_options, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_clear_member", gga_rpc_clear_member, RPC_STATE_ANY);
	rpc_register_method("bdev_gga_hand_over", gga_rpc_hand_over, RPC_STATE_ANY);
}
