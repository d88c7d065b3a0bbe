/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Null bdev (see bdev_null.h). Every I/O is completed from inside
 * submit_request without looking at its data; all null bdevs share one
 * io_device whose channels carry no state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/bdev_module_util.h"
#include "gga/log.h"
#include "gga/uuid.h"

#include "bdev_null.h"

struct null_disk {
	struct bdev bdev;
};

static int g_null_io_device;

static struct bdev_module null_module;

static int
null_destruct(void *ctxt)
{
	struct null_disk *disk = ctxt;

	free(disk->bdev.name);
	free(disk);
	return 0;
}

static void
null_submit_request(struct io_channel *ch, struct bdev_io *io)
{
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_RESET:
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		break;
	default:
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		break;
	}
}

static bool
null_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	switch (type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_RESET:
		return true;
	default:
		return false;
	}
}

static struct io_channel *
null_get_io_channel(void *ctxt)
{
	return io_channel_get(&g_null_io_device);
}

static void
null_dump_info_json(void *ctxt, json_t *info)
{
	struct null_disk *disk = ctxt;

	json_object_set_new(info, "null", json_pack("{s:i}", "md_size", (int)disk->bdev.md_size));
}

static void
null_write_config_json(struct bdev *bdev, json_t *config)
{
	module_write_geometry_config(bdev, config, "bdev_null_create", 0);
}

static const struct bdev_fn_table null_fn_table = {
	.destruct = null_destruct,
	.submit_request = null_submit_request,
	.io_type_supported = null_io_type_supported,
	.get_io_channel = null_get_io_channel,
	.dump_info_json = null_dump_info_json,
	.write_config_json = null_write_config_json,
};

int
bdev_null_create(const struct bdev_null_opts *opts, struct bdev **bdev_out)
{
	struct null_disk *disk;
	uint8_t uuid[16] = { 0 };
	const char *msg;
	int rc;

	if (opts->name == NULL || opts->name[0] == '\0') {
		ERRLOG("null bdev: a name is required\n");
		return -EINVAL;
	}
	msg = module_geometry_check(opts->num_blocks, opts->block_size, opts->md_size);
	if (msg != NULL) {
		ERRLOG("null bdev '%s': %s\n", opts->name, msg);
		return -EINVAL;
	}
	if (opts->uuid != NULL && uuid_parse(opts->uuid, uuid) != 0) {
		ERRLOG("null bdev '%s': uuid '%s' is not a valid UUID\n", opts->name, opts->uuid);
		return -EINVAL;
	}
	if (bdev_get_by_name(opts->name) != NULL) {
		ERRLOG("bdev '%s' already exists\n", opts->name);
		return -EEXIST;
	}

	disk = calloc(1, sizeof(*disk));
	if (disk == NULL) {
		return -ENOMEM;
	}
	disk->bdev.name = strdup(opts->name);
	if (disk->bdev.name == NULL) {
		rc = -ENOMEM;
		goto out_free_disk;
	}
	disk->bdev.product_name = "Null disk";
	disk->bdev.block_size = opts->block_size;
	disk->bdev.md_size = opts->md_size;
	disk->bdev.num_blocks = opts->num_blocks;
	memcpy(disk->bdev.uuid, uuid, sizeof(uuid));
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &null_fn_table;
	disk->bdev.module = &null_module;

	rc = bdev_register(&disk->bdev);
	if (rc != 0) {
		ERRLOG("null bdev '%s': register failed: %s\n", disk->bdev.name, strerror(-rc));
		goto out_free_name;
	}
	if (bdev_out != NULL) {
		*bdev_out = &disk->bdev;
	}
	return 0;

out_free_name:
	free(disk->bdev.name);
out_free_disk:
	free(disk);
	return rc;
}

int
bdev_null_delete(const char *name, bdev_null_delete_cb cb, void *cb_arg)
{
	if (name == NULL) {
		return -ENODEV;
	}
	return bdev_unregister_by_name(name, &null_module, cb, cb_arg);
}

static int
null_channel_create(void *io_device, void *ctx_buf)
{
	return 0;
}

static void
null_channel_destroy(void *io_device, void *ctx_buf)
{
}

static int
null_module_init(void)
{
	io_device_register(&g_null_io_device, null_channel_create, null_channel_destroy, 0,
			   "bdev_null");
	return 0;
}

static void
null_module_fini(void)
{
	io_device_unregister(&g_null_io_device, NULL);
}

static struct bdev_module null_module = {
	.name = "null",
	.module_init = null_module_init,
	.module_fini = null_module_fini,
};

void
bdev_null_module_register(void)
{
	bdev_module_register(&null_module);
	bdev_null_rpc_register();
}
