/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Generic bdev RPCs: bdev_get_bdevs and bdev_get_iostat.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/rpc.h"
#include "gga/util.h"

struct rpc_bdev_name {
	char *name;
};

static const struct rpc_param rpc_bdev_name_decl[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_bdev_name, name),
	  .optional = true },
	/* SPDK waits that long for the bdev to appear; gga answers at once. */
	RPC_PARAM_SPDK_NOOP("timeout", "0"),
};

struct rpc_iostat {
	char *name;
	json_t *names;
};

static const struct rpc_param rpc_iostat_decl[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_iostat, name),
	  .optional = true },
	/* SPDK's form: an array of names. */
	{ .name = "names",
	  .type = RPC_PARAM_JSON,
	  .offset = offsetof(struct rpc_iostat, names),
	  .optional = true },
	RPC_PARAM_SPDK_NOOP("per_channel", "false"),
	RPC_PARAM_SPDK_NOOP("reset_mode", "\"none\""),
};

static const struct {
	const char *name;
	enum bdev_io_type type;
} g_rpc_io_types[] = {
	{ "read", BDEV_IO_TYPE_READ },   { "write", BDEV_IO_TYPE_WRITE },
	{ "flush", BDEV_IO_TYPE_FLUSH }, { "write_zeroes", BDEV_IO_TYPE_WRITE_ZEROES },
	{ "unmap", BDEV_IO_TYPE_UNMAP }, { "reset", BDEV_IO_TYPE_RESET },
};

/* jansson integers are signed: a counter at UINT64_MAX ("no sample") reads as 0. */
static json_t *
json_u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? 0 : (json_int_t)v);
}

static json_t *
bdev_info_json(struct bdev *bdev)
{
	json_t *info, *types, *driver;
	struct bdev_space space;
	bool supported;
	size_t i;

	info = json_object();
	types = json_object();
	driver = json_object();
	if (info == NULL || types == NULL || driver == NULL) {
		goto out_free_json;
	}
	for (i = 0; i < ARRAY_SIZE(g_rpc_io_types); i++) {
		supported = bdev_io_type_supported(bdev, g_rpc_io_types[i].type);
		json_object_set_new(types, g_rpc_io_types[i].name, json_boolean(supported));
	}
	if (bdev->fn_table->dump_info_json != NULL) {
		bdev->fn_table->dump_info_json(bdev->ctxt, driver);
	}
	json_object_set_new(info, "name", json_string(bdev_get_name(bdev)));
	json_object_set_new(info, "product_name", json_string(bdev_get_product_name(bdev)));
	json_object_set_new(info, "block_size", json_integer(bdev->block_size));
	json_object_set_new(info, "md_size", json_integer(bdev->md_size));
	json_object_set_new(info, "num_blocks", json_u64(bdev->num_blocks));
	json_object_set_new(info, "uuid", json_string(bdev_get_uuid_str(bdev)));
	json_object_set_new(info, "claimed", json_boolean(bdev_is_claimed(bdev)));
	bdev_get_space(bdev, &space);
	if (space.thin) {
		json_object_set_new(info, "thin",
				    json_pack("{s:I, s:I}", "used_blocks",
					      (json_int_t)space.used_blocks, "capacity_blocks",
					      (json_int_t)space.capacity_blocks));
	}
	json_object_set_new(info, "supported_io_types", types);
	json_object_set_new(info, "driver_specific", driver);
	return info;

out_free_json:
	json_decref(driver);
	json_decref(types);
	json_decref(info);
	return NULL;
}

static void
rpc_bdev_get_bdevs(struct rpc_request *req, json_t *params)
{
	struct rpc_bdev_name p = { 0 };
	struct bdev *bdev;
	json_t *result = NULL, *info;

	if (rpc_decode_params(req, params, rpc_bdev_name_decl, ARRAY_SIZE(rpc_bdev_name_decl),
			      &p) != 0) {
		goto out_free_params;
	}
	result = json_array();
	if (result == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto out_free_params;
	}
	if (p.name != NULL) {
		bdev = bdev_get_by_name(p.name);
		if (bdev == NULL) {
			rpc_send_errno(req, -ENODEV, "bdev '%s' not found", p.name);
			goto out_free_params;
		}
		info = bdev_info_json(bdev);
		if (info == NULL || json_array_append_new(result, info) != 0) {
			rpc_send_errno(req, -ENOMEM, NULL);
			goto out_free_params;
		}
	} else {
		for (bdev = bdev_first(); bdev != NULL; bdev = bdev_next(bdev)) {
			info = bdev_info_json(bdev);
			if (info == NULL || json_array_append_new(result, info) != 0) {
				rpc_send_errno(req, -ENOMEM, NULL);
				goto out_free_params;
			}
		}
	}
	rpc_send_result(req, result);
	result = NULL;

out_free_params:
	json_decref(result);
	rpc_free_params(rpc_bdev_name_decl, ARRAY_SIZE(rpc_bdev_name_decl), &p);
}

/*
 * bdev_get_iostat walks every channel of every bdev asynchronously; each bdev
 * stays open (read-only) until the answer is built, so none can be destroyed
 * under a walk.
 */
struct iostat_rpc_ctx;

struct iostat_rpc_entry {
	struct iostat_rpc_ctx *ctx;
	struct bdev_desc *desc;
	struct bdev_io_stat stat;
	int rc;
};

struct iostat_rpc_ctx {
	struct rpc_request *req;
	/* Walks still running, plus one held while they are being started. */
	size_t pending;
	size_t count;
	struct iostat_rpc_entry entries[];
};

static void
iostat_rpc_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	/* The descriptor is closed as soon as the answer is built. */
}

static json_t *
iostat_json(struct bdev *bdev, const struct bdev_io_stat *s)
{
	json_t *o = json_object();

	if (o == NULL) {
		return NULL;
	}
	json_object_set_new(o, "name", json_string(bdev_get_name(bdev)));
	json_object_set_new(o, "bytes_read", json_u64(s->bytes_read));
	json_object_set_new(o, "num_read_ops", json_u64(s->num_read_ops));
	json_object_set_new(o, "bytes_written", json_u64(s->bytes_written));
	json_object_set_new(o, "num_write_ops", json_u64(s->num_write_ops));
	json_object_set_new(o, "bytes_unmapped", json_u64(s->bytes_unmapped));
	json_object_set_new(o, "num_unmap_ops", json_u64(s->num_unmap_ops));
	json_object_set_new(o, "num_write_zeroes_ops", json_u64(s->num_write_zeroes_ops));
	json_object_set_new(o, "num_flush_ops", json_u64(s->num_flush_ops));
	json_object_set_new(o, "num_reset_ops", json_u64(s->num_reset_ops));
	json_object_set_new(o, "num_failed_ops", json_u64(s->num_failed_ops));
	json_object_set_new(o, "read_latency_ticks", json_u64(s->read_latency_ticks));
	json_object_set_new(o, "write_latency_ticks", json_u64(s->write_latency_ticks));
	json_object_set_new(o, "unmap_latency_ticks", json_u64(s->unmap_latency_ticks));
	json_object_set_new(o, "max_read_latency_ticks", json_u64(s->max_read_latency_ticks));
	json_object_set_new(o, "min_read_latency_ticks", json_u64(s->min_read_latency_ticks));
	json_object_set_new(o, "max_write_latency_ticks", json_u64(s->max_write_latency_ticks));
	json_object_set_new(o, "min_write_latency_ticks", json_u64(s->min_write_latency_ticks));
	return o;
}

static void
iostat_rpc_finish(struct iostat_rpc_ctx *ctx)
{
	struct iostat_rpc_entry *e;
	json_t *result, *bdevs, *o;
	bool failed = false;
	size_t i;

	result = json_object();
	bdevs = json_array();
	if (result == NULL || bdevs == NULL) {
		failed = true;
	}
	for (i = 0; i < ctx->count; i++) {
		e = &ctx->entries[i];
		if (e->desc == NULL) {
			continue;
		}
		if (!failed && e->rc == 0) {
			o = iostat_json(bdev_desc_get_bdev(e->desc), &e->stat);
			if (o == NULL || json_array_append_new(bdevs, o) != 0) {
				failed = true;
			}
		} else if (e->rc != 0) {
			WARNLOG("bdev %s: iostat walk failed (%d)\n",
				bdev_get_name(bdev_desc_get_bdev(e->desc)), e->rc);
		}
		bdev_close(e->desc);
	}
	if (failed) {
		json_decref(bdevs);
		json_decref(result);
		rpc_send_errno(ctx->req, -ENOMEM, NULL);
	} else {
		json_object_set_new(result, "tick_rate", json_u64(ticks_hz()));
		json_object_set_new(result, "bdevs", bdevs);
		rpc_send_result(ctx->req, result);
	}
	free(ctx);
}

static void
iostat_rpc_put(struct iostat_rpc_ctx *ctx)
{
	if (--ctx->pending == 0) {
		iostat_rpc_finish(ctx);
	}
}

static void
iostat_rpc_done(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg, int rc)
{
	struct iostat_rpc_entry *e = cb_arg;

	e->rc = rc;
	iostat_rpc_put(e->ctx);
}

/*
 * How many bdevs the answer covers: those of `names` (strings that must all
 * exist), `name`, or every bdev. Answers the error itself and returns -EINVAL.
 */
static int
iostat_rpc_count(struct rpc_request *req, struct rpc_iostat *p, size_t *count)
{
	struct bdev *bdev;
	json_t *v;
	size_t i;

	if (json_is_null(p->names)) {
		p->names = NULL;
	}
	if (p->names != NULL && (!json_is_array(p->names) || p->name != NULL)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "names: expected an array of bdev names (and no name)");
		return -EINVAL;
	}
	json_array_foreach(p->names, i, v)
	{
		if (!json_is_string(v)) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "names: expected strings");
			return -EINVAL;
		}
		if (bdev_get_by_name(json_string_value(v)) == NULL) {
			rpc_send_errno(req, -ENODEV, "bdev '%s' not found", json_string_value(v));
			return -EINVAL;
		}
	}
	if (p->name != NULL && bdev_get_by_name(p->name) == NULL) {
		rpc_send_errno(req, -ENODEV, "bdev '%s' not found", p->name);
		return -EINVAL;
	}
	*count = 0;
	if (p->names != NULL) {
		*count = json_array_size(p->names);
	} else if (p->name != NULL) {
		*count = 1;
	} else {
		for (bdev = bdev_first(); bdev != NULL; bdev = bdev_next(bdev)) {
			(*count)++;
		}
	}
	return 0;
}

/* The i-th bdev of the answer; prev is the one before it. */
static struct bdev *
iostat_rpc_pick(const struct rpc_iostat *p, size_t i, struct bdev *prev)
{
	if (p->names != NULL) {
		return bdev_get_by_name(json_string_value(json_array_get(p->names, i)));
	}
	if (p->name != NULL) {
		return bdev_get_by_name(p->name);
	}
	return i == 0 ? bdev_first() : bdev_next(prev);
}

static void
rpc_bdev_get_iostat(struct rpc_request *req, json_t *params)
{
	struct rpc_iostat p = { 0 };
	struct iostat_rpc_ctx *ctx;
	struct iostat_rpc_entry *e;
	struct bdev *bdev = NULL;
	size_t count = 0, i;
	int rc;

	if (rpc_decode_params(req, params, rpc_iostat_decl, ARRAY_SIZE(rpc_iostat_decl), &p) != 0 ||
	    iostat_rpc_count(req, &p, &count) != 0) {
		goto out_free_params;
	}
	ctx = calloc(1, sizeof(*ctx) + count * sizeof(ctx->entries[0]));
	if (ctx == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto out_free_params;
	}
	ctx->req = req;
	ctx->count = count;

	/* Open everything first: a walk's callback must not see a half-built list. */
	for (i = 0; i < count; i++) {
		bdev = iostat_rpc_pick(&p, i, bdev);
		if (bdev == NULL) {
			break;
		}
		e = &ctx->entries[i];
		e->ctx = ctx;
		rc = bdev_open(bdev_get_name(bdev), false, iostat_rpc_event, NULL, &e->desc);
		if (rc != 0) {
			/* Being removed: leave it out. */
			e->desc = NULL;
		}
	}
	if (p.name != NULL && ctx->entries[0].desc == NULL) {
		free(ctx);
		rpc_send_errno(req, -ENODEV, "bdev '%s' not found", p.name);
		goto out_free_params;
	}
	ctx->pending = 1;
	for (i = 0; i < count; i++) {
		e = &ctx->entries[i];
		if (e->desc != NULL) {
			ctx->pending++;
			bdev_get_iostat(bdev_desc_get_bdev(e->desc), &e->stat, iostat_rpc_done, e);
		}
	}
	iostat_rpc_put(ctx);

out_free_params:
	rpc_free_params(rpc_iostat_decl, ARRAY_SIZE(rpc_iostat_decl), &p);
}

void
bdev_rpc_register(void)
{
	static bool registered;

	/* The RPC table outlives a bdev subsystem restart (unit tests restart it). */
	if (registered) {
		return;
	}
	registered = true;
	rpc_register_method("bdev_get_bdevs", rpc_bdev_get_bdevs, RPC_STATE_ANY);
	rpc_register_method("bdev_get_iostat", rpc_bdev_get_iostat, RPC_STATE_ANY);
}

struct rpc_bdev_delete {
	char *name;
};

static const struct rpc_param bdev_delete_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_bdev_delete, name),
	},
};

static void
bdev_rpc_delete_done(void *cb_arg, int rc)
{
	struct rpc_request *req = cb_arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}
}

void
bdev_rpc_delete(struct rpc_request *req, json_t *params, bdev_delete_fn delete_fn, const char *kind)
{
	struct rpc_bdev_delete args = { 0 };
	int rc;

	if (rpc_decode_params(req, params, bdev_delete_params, ARRAY_SIZE(bdev_delete_params),
			      &args) != 0) {
		goto out_free_params;
	}
	rc = delete_fn(args.name, bdev_rpc_delete_done, req);
	if (rc == -ENODEV) {
		rpc_send_errno(req, rc, "%s bdev '%s' does not exist", kind, args.name);
	} else if (rc == -EBUSY) {
		rpc_send_errno(req, rc, "%s bdev '%s' is already being removed", kind, args.name);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	}

out_free_params:
	rpc_free_params(bdev_delete_params, ARRAY_SIZE(bdev_delete_params), &args);
}
