/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error bdev (see bdev_error.h).
 *
 * Each error bdev is its own io_device: a channel holds the calling thread's
 * channel to the base and the list of I/Os held back by a "pending"
 * injection. Injections live in the disk, one per I/O type, shared by every
 * thread; the I/O path reads an injection with one atomic load and consumes
 * it with a compare-and-swap, so there are no locks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/uuid.h"

#include "bdev_error.h"

/*
 * An injection packed in one word so that it can be consumed atomically:
 * error type in the high 32 bits, remaining count in the low 32. A zero word
 * means none; a type with a count of 0 means "every I/O until cleared".
 */
struct error_injection {
	uint64_t state;
	uint64_t corrupt_offset;
	uint8_t corrupt_value;
	uint64_t from_block; /* drop */
};

struct error_disk {
	/*
	 * The disk is the io_device of its channels; the bdev is not its first
	 * member so that the two pointers never coincide.
	 */
	struct bdev_desc *base_desc;
	struct bdev *base;
	bool removing;
	struct error_injection injections[BDEV_NUM_IO_TYPES];
	struct bdev bdev;
};

struct error_io;

struct error_channel {
	struct io_channel *base_ch;
	TAILQ_HEAD(, error_io) pending;
};

/* Per-I/O context in bdev_io->driver_ctx. */
struct error_io {
	struct error_channel *ch;
	TAILQ_ENTRY(error_io) link;
	uint64_t corrupt_offset;
	uint8_t corrupt_value; /* non-zero: corrupt the data once the read is done */
};

struct error_remove_ctx {
	struct error_disk *disk;
	bdev_error_delete_cb cb;
	void *cb_arg;
};

static struct bdev_module error_module;

static bool
io_type_injectable(enum bdev_io_type type)
{
	switch (type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_UNMAP:
	case BDEV_IO_TYPE_WRITE_ZEROES:
		return true;
	default:
		return false;
	}
}

static inline uint64_t
injection_state(enum bdev_error_type type, uint32_t num)
{
	return type == BDEV_ERROR_NONE ? 0 : (uint64_t)type << 32 | num;
}

/* Consume one use of the injection; returns what the I/O must suffer. */
static inline enum bdev_error_type
injection_take(struct error_injection *inj)
{
	uint64_t old, new;

	old = __atomic_load_n(&inj->state, __ATOMIC_ACQUIRE);
	do {
		if (likely(old == 0)) {
			return BDEV_ERROR_NONE;
		}
		if ((uint32_t)old == 0) {
			return (enum bdev_error_type)(old >> 32);
		}
		new = (uint32_t)old == 1 ? 0 : old - 1;
	} while (!__atomic_compare_exchange_n(&inj->state, &old, new, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return (enum bdev_error_type)(old >> 32);
}

/* XOR one byte at `offset` of the data described by iovs (nothing if beyond it). */
static void
corrupt_iovs(struct iovec *iovs, int iovcnt, uint64_t offset, uint8_t value)
{
	int i;

	for (i = 0; i < iovcnt; i++) {
		if (offset < iovs[i].iov_len) {
			((uint8_t *)iovs[i].iov_base)[offset] ^= value;
			return;
		}
		offset -= iovs[i].iov_len;
	}
}

static void
base_io_done(struct bdev_io *base_io, bool success, void *cb_arg)
{
	struct bdev_io *io = cb_arg;
	struct error_io *eio = (struct error_io *)io->driver_ctx;
	int sct = 0, sc = 0;

	if (!success) {
		bdev_io_get_nvme_status(base_io, &sct, &sc);
	}
	/* Free first so that the upper completion can reuse the bdev_io at once. */
	bdev_free_io(base_io);

	if (!success) {
		bdev_io_complete_nvme_status(io, sct, sc);
		return;
	}
	if (eio->corrupt_value != 0) {
		corrupt_iovs(io->u.iovs, io->u.iovcnt, eio->corrupt_offset, eio->corrupt_value);
	}
	bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
}

static int
submit_to_base(struct error_disk *disk, struct error_channel *ech, struct bdev_io *io)
{
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		return bdev_readv_blocks(disk->base_desc, ech->base_ch, io->u.iovs, io->u.iovcnt,
					 io->u.offset_blocks, io->u.num_blocks, base_io_done, io);
	case BDEV_IO_TYPE_WRITE:
		return bdev_writev_blocks(disk->base_desc, ech->base_ch, io->u.iovs, io->u.iovcnt,
					  io->u.offset_blocks, io->u.num_blocks, base_io_done, io);
	case BDEV_IO_TYPE_FLUSH:
		return bdev_flush_blocks(disk->base_desc, ech->base_ch, io->u.offset_blocks,
					 io->u.num_blocks, base_io_done, io);
	case BDEV_IO_TYPE_UNMAP:
		return bdev_unmap_blocks(disk->base_desc, ech->base_ch, io->u.offset_blocks,
					 io->u.num_blocks, base_io_done, io);
	case BDEV_IO_TYPE_WRITE_ZEROES:
		return bdev_write_zeroes_blocks(disk->base_desc, ech->base_ch, io->u.offset_blocks,
						io->u.num_blocks, base_io_done, io);
	default:
		return -ENOTSUP;
	}
}

/*
 * Complete every I/O held on this channel with ABORTED. The list is detached
 * first: a completion callback may submit more I/O that gets held again.
 */
static void
abort_pending(struct error_channel *ech)
{
	TAILQ_HEAD(, error_io) pending = TAILQ_HEAD_INITIALIZER(pending);
	struct error_io *eio;

	TAILQ_CONCAT(&pending, &ech->pending, link);
	while ((eio = TAILQ_FIRST(&pending)) != NULL) {
		TAILQ_REMOVE(&pending, eio, link);
		bdev_io_complete(bdev_io_from_ctx(eio), BDEV_IO_STATUS_ABORTED);
	}
}

static void
abort_pending_on_channel(struct io_channel_iter *i)
{
	abort_pending(io_channel_get_ctx(io_channel_iter_get_channel(i)));
	io_channel_iter_continue(i, 0);
}

static void
release_pending_on_channel(struct io_channel_iter *i)
{
	struct error_disk *disk = io_channel_iter_get_ctx(i);
	struct error_channel *ech = io_channel_get_ctx(io_channel_iter_get_channel(i));
	TAILQ_HEAD(, error_io) pending = TAILQ_HEAD_INITIALIZER(pending);
	struct error_io *eio;
	int rc;

	TAILQ_CONCAT(&pending, &ech->pending, link);
	while ((eio = TAILQ_FIRST(&pending)) != NULL) {
		TAILQ_REMOVE(&pending, eio, link);
		rc = submit_to_base(disk, ech, bdev_io_from_ctx(eio));
		if (rc != 0) {
			bdev_io_complete(bdev_io_from_ctx(eio), rc == -ENOMEM ?
									BDEV_IO_STATUS_NOMEM :
									BDEV_IO_STATUS_FAILED);
		}
	}
	io_channel_iter_continue(i, 0);
}

static void
release_pending_done(struct io_channel_iter *i, int status)
{
	(void)i;
	(void)status;
}

static void
reset_pending_aborted(struct io_channel_iter *i, int status)
{
	struct bdev_io *io = io_channel_iter_get_ctx(i);
	struct error_disk *disk = io->bdev->ctxt;
	struct error_io *eio = (struct error_io *)io->driver_ctx;
	int rc;

	if (!bdev_io_type_supported(disk->base, BDEV_IO_TYPE_RESET)) {
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	rc = bdev_reset(disk->base_desc, eio->ch->base_ch, base_io_done, io);
	if (rc != 0) {
		ERRLOG("error bdev '%s': reset of base '%s' failed: %s\n", disk->bdev.name,
		       bdev_get_name(disk->base), strerror(-rc));
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
	}
}

static void
error_submit_request(struct io_channel *ch, struct bdev_io *io)
{
	struct error_disk *disk = io->bdev->ctxt;
	struct error_channel *ech = io_channel_get_ctx(ch);
	struct error_io *eio = (struct error_io *)io->driver_ctx;
	struct error_injection *inj;
	int rc;

	eio->ch = ech;
	eio->corrupt_value = 0;

	if (unlikely(io->type == BDEV_IO_TYPE_RESET)) {
		/* Held I/Os on every thread are aborted first, then the base is reset. */
		io_device_for_each_channel(disk, abort_pending_on_channel, io,
					   reset_pending_aborted);
		return;
	}

	inj = &disk->injections[io->type];
	switch (injection_take(inj)) {
	case BDEV_ERROR_NONE:
		break;
	case BDEV_ERROR_FAILURE:
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		return;
	case BDEV_ERROR_NOMEM:
		bdev_io_complete(io, BDEV_IO_STATUS_NOMEM);
		return;
	case BDEV_ERROR_PENDING:
		/* A bdev on its way out must not gain I/Os nobody will complete. */
		if (__atomic_load_n(&disk->removing, __ATOMIC_ACQUIRE)) {
			bdev_io_complete(io, BDEV_IO_STATUS_ABORTED);
		} else {
			TAILQ_INSERT_TAIL(&ech->pending, eio, link);
		}
		return;
	case BDEV_ERROR_DROP:
		if (io->u.offset_blocks < __atomic_load_n(&inj->from_block, __ATOMIC_RELAXED)) {
			break;
		}
		/* Acknowledged, never written. */
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	case BDEV_ERROR_CORRUPT_DATA:
		if (io->type == BDEV_IO_TYPE_WRITE) {
			corrupt_iovs(io->u.iovs, io->u.iovcnt,
				     __atomic_load_n(&inj->corrupt_offset, __ATOMIC_RELAXED),
				     __atomic_load_n(&inj->corrupt_value, __ATOMIC_RELAXED));
		} else if (io->type == BDEV_IO_TYPE_READ) {
			eio->corrupt_offset = __atomic_load_n(&inj->corrupt_offset,
							      __ATOMIC_RELAXED);
			eio->corrupt_value = __atomic_load_n(&inj->corrupt_value, __ATOMIC_RELAXED);
		}
		break;
	}

	rc = submit_to_base(disk, ech, io);
	if (unlikely(rc != 0)) {
		bdev_io_complete(io, rc == -ENOMEM ? BDEV_IO_STATUS_NOMEM : BDEV_IO_STATUS_FAILED);
	}
}

static bool
error_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	struct error_disk *disk = ctxt;

	/* Reset is always handled: it also releases the held I/Os. */
	if (type == BDEV_IO_TYPE_RESET) {
		return true;
	}
	/* Reservations are not forwarded: the error bdev injects block I/O errors only. */
	if (type == BDEV_IO_TYPE_NVME_RESV) {
		return false;
	}
	return bdev_io_type_supported(disk->base, type);
}

static struct io_channel *
error_get_io_channel(void *ctxt)
{
	return io_channel_get(ctxt);
}

static const char *const error_type_names[] = {
	[BDEV_ERROR_NONE] = "none",       [BDEV_ERROR_FAILURE] = "failure",
	[BDEV_ERROR_PENDING] = "pending", [BDEV_ERROR_CORRUPT_DATA] = "corrupt_data",
	[BDEV_ERROR_NOMEM] = "nomem",     [BDEV_ERROR_DROP] = "drop",
};

/* The io_type names of bdev_error_inject_error. */
static const char *const io_type_names[BDEV_NUM_IO_TYPES] = {
	[BDEV_IO_TYPE_READ] = "read",
	[BDEV_IO_TYPE_WRITE] = "write",
	[BDEV_IO_TYPE_FLUSH] = "flush",
	[BDEV_IO_TYPE_UNMAP] = "unmap",
	[BDEV_IO_TYPE_WRITE_ZEROES] = "write_zeroes",
};

static void
error_dump_info_json(void *ctxt, json_t *info)
{
	struct error_disk *disk = ctxt;
	struct error_injection *inj;
	json_t *injections, *entry;
	enum bdev_error_type type;
	uint64_t state;
	int t;

	injections = json_array();
	for (t = 0; t < BDEV_NUM_IO_TYPES; t++) {
		inj = &disk->injections[t];
		state = __atomic_load_n(&inj->state, __ATOMIC_ACQUIRE);
		if (state == 0) {
			continue;
		}
		type = (enum bdev_error_type)(state >> 32);
		entry = json_pack("{s:s, s:s, s:I}", "io_type", io_type_names[t], "error_type",
				  error_type_names[type], "num", (json_int_t)(uint32_t)state);
		if (entry != NULL && type == BDEV_ERROR_CORRUPT_DATA) {
			json_object_set_new(entry, "corrupt_offset",
					    json_integer((json_int_t)inj->corrupt_offset));
			json_object_set_new(entry, "corrupt_value",
					    json_integer(inj->corrupt_value));
		}
		json_array_append_new(injections, entry);
	}
	json_object_set_new(info, "error",
			    json_pack("{s:s, s:o}", "base_bdev", bdev_get_name(disk->base),
				      "injections", injections));
}

static void
error_write_config_json(struct bdev *bdev, json_t *config)
{
	struct error_disk *disk = bdev->ctxt;
	json_t *params;

	/* Injections are run-time state: only the bdev itself is recreated. */
	params = json_pack("{s:s, s:s}", "base_name", bdev_get_name(disk->base), "uuid",
			   bdev_get_uuid_str(bdev));
	if (params == NULL) {
		ERRLOG("error bdev '%s': out of memory writing its configuration\n",
		       bdev_get_name(bdev));
		return;
	}
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", "bdev_error_create",
						"params", params));
}

static void
error_disk_unregistered(void *io_device)
{
	struct error_disk *disk = io_device;

	/* Every channel, and with them every base channel, is gone: release the base. */
	bdev_module_release_bdev(disk->base);
	bdev_close(disk->base_desc);
	bdev_destruct_done(&disk->bdev, 0);
	free(disk->bdev.name);
	free(disk);
}

static int
error_destruct(void *ctxt)
{
	struct error_disk *disk = ctxt;

	io_device_unregister(disk, error_disk_unregistered);
	return 1;
}

static int
error_get_bases(void *ctxt, struct bdev **bases, int max)
{
	struct error_disk *disk = ctxt;

	if (max < 1 || disk->removing) {
		return 0;
	}
	bases[0] = disk->base;
	return 1;
}

static const struct bdev_fn_table error_fn_table = {
	.destruct = error_destruct,
	.submit_request = error_submit_request,
	.io_type_supported = error_io_type_supported,
	.get_io_channel = error_get_io_channel,
	.dump_info_json = error_dump_info_json,
	.write_config_json = error_write_config_json,
	.get_bases = error_get_bases,
};

static int
error_channel_create(void *io_device, void *ctx_buf)
{
	struct error_disk *disk = io_device;
	struct error_channel *ech = ctx_buf;

	ech->base_ch = bdev_get_io_channel(disk->base_desc);
	if (ech->base_ch == NULL) {
		ERRLOG("error bdev '%s': no channel to base '%s'\n", disk->bdev.name,
		       bdev_get_name(disk->base));
		return -ENOMEM;
	}
	TAILQ_INIT(&ech->pending);
	return 0;
}

static void
error_channel_destroy(void *io_device, void *ctx_buf)
{
	struct error_disk *disk = io_device;
	struct error_channel *ech = ctx_buf;
	struct error_io *eio;
	int n = 0;

	/*
	 * Held I/Os cannot be completed any more once their bdev channel is
	 * going; reset or delete the error bdev before closing it instead.
	 */
	TAILQ_FOREACH(eio, &ech->pending, link) {
		n++;
	}
	if (n > 0) {
		ERRLOG("error bdev '%s': channel destroyed with %d I/Os still pending\n",
		       disk->bdev.name, n);
	}
	io_channel_put(ech->base_ch);
}

static void
remove_pending_aborted(struct io_channel_iter *i, int status)
{
	struct error_remove_ctx *ctx = io_channel_iter_get_ctx(i);

	bdev_unregister(&ctx->disk->bdev, ctx->cb, ctx->cb_arg);
	free(ctx);
}

/* Abort the held I/Os on every thread, then unregister the bdev. */
static int
error_disk_remove(struct error_disk *disk, bdev_error_delete_cb cb, void *cb_arg)
{
	struct error_remove_ctx *ctx;

	if (disk->removing) {
		return -EBUSY;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		return -ENOMEM;
	}
	ctx->disk = disk;
	ctx->cb = cb;
	ctx->cb_arg = cb_arg;
	__atomic_store_n(&disk->removing, true, __ATOMIC_RELEASE);
	io_device_for_each_channel(disk, abort_pending_on_channel, ctx, remove_pending_aborted);
	return 0;
}

static void
base_event_cb(enum bdev_event_type type, struct bdev *bdev, void *event_ctx)
{
	struct error_disk *disk = event_ctx;
	int rc;

	if (type == BDEV_EVENT_MEDIA_CHANGED) {
		/* What the base serves is what this bdev serves: pass it up. */
		bdev_notify_media_changed(&disk->bdev);
		return;
	}
	if (type == BDEV_EVENT_OFFLINE) {
		bdev_notify_offline(&disk->bdev);
		return;
	}
	if (type != BDEV_EVENT_REMOVE) {
		return;
	}
	NOTICELOG("error bdev '%s': base '%s' is being removed\n", disk->bdev.name,
		  bdev_get_name(bdev));
	rc = error_disk_remove(disk, NULL, NULL);
	if (rc == -ENOMEM) {
		/* Held I/Os stay held, but the base must not wait for us forever. */
		bdev_unregister(&disk->bdev, NULL, NULL);
	}
}

static struct error_disk *
disk_by_name(const char *name)
{
	struct bdev *bdev = name != NULL ? bdev_get_by_name(name) : NULL;

	if (bdev == NULL || bdev->module != &error_module) {
		return NULL;
	}
	return bdev->ctxt;
}

int
bdev_error_create(const struct bdev_error_opts *opts, struct bdev **bdev_out)
{
	struct error_disk *disk;
	uint8_t uuid[16] = { 0 };
	char *name;
	int rc;

	if (opts->base_name == NULL || opts->base_name[0] == '\0') {
		ERRLOG("error bdev: a base bdev name is required\n");
		return -EINVAL;
	}
	if (opts->uuid != NULL && uuid_parse(opts->uuid, uuid) != 0) {
		ERRLOG("error bdev on '%s': uuid '%s' is not a valid UUID\n", opts->base_name,
		       opts->uuid);
		return -EINVAL;
	}
	if (asprintf(&name, BDEV_ERROR_PREFIX "%s", opts->base_name) < 0) {
		return -ENOMEM;
	}
	if (bdev_get_by_name(name) != NULL) {
		ERRLOG("bdev '%s' already exists\n", name);
		rc = -EEXIST;
		goto out_free_name;
	}

	disk = calloc(1, sizeof(*disk));
	if (disk == NULL) {
		rc = -ENOMEM;
		goto out_free_name;
	}
	rc = bdev_open(opts->base_name, true, base_event_cb, disk, &disk->base_desc);
	if (rc != 0) {
		ERRLOG("error bdev '%s': cannot open base '%s': %s\n", name, opts->base_name,
		       strerror(-rc));
		goto out_free_disk;
	}
	disk->base = bdev_desc_get_bdev(disk->base_desc);
	rc = bdev_module_claim_bdev(disk->base, disk->base_desc, &error_module);
	if (rc != 0) {
		ERRLOG("error bdev '%s': cannot claim base '%s': %s\n", name, opts->base_name,
		       strerror(-rc));
		goto out_close_base;
	}

	disk->bdev.name = name;
	disk->bdev.product_name = "Error disk";
	disk->bdev.block_size = bdev_get_block_size(disk->base);
	disk->bdev.md_size = bdev_get_md_size(disk->base);
	disk->bdev.num_blocks = bdev_get_num_blocks(disk->base);
	disk->bdev.buf_align = bdev_get_buf_align(disk->base);
	memcpy(disk->bdev.uuid, uuid, sizeof(uuid));
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &error_fn_table;
	disk->bdev.module = &error_module;

	io_device_register(disk, error_channel_create, error_channel_destroy,
			   sizeof(struct error_channel), name);
	rc = bdev_register(&disk->bdev);
	if (rc != 0) {
		ERRLOG("error bdev '%s': register failed: %s\n", name, strerror(-rc));
		goto out_unregister_device;
	}
	if (bdev_out != NULL) {
		*bdev_out = &disk->bdev;
	}
	return 0;

out_unregister_device:
	/* No channel can exist yet, so nothing refers to the disk after this. */
	io_device_unregister(disk, NULL);
	bdev_module_release_bdev(disk->base);
out_close_base:
	bdev_close(disk->base_desc);
out_free_disk:
	free(disk);
out_free_name:
	free(name);
	return rc;
}

int
bdev_error_delete(const char *name, bdev_error_delete_cb cb, void *cb_arg)
{
	struct error_disk *disk = disk_by_name(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	return error_disk_remove(disk, cb, cb_arg);
}

int
bdev_error_release_pending(const char *name)
{
	struct error_disk *disk = disk_by_name(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	io_device_for_each_channel(disk, release_pending_on_channel, disk, release_pending_done);
	return 0;
}

int
bdev_error_inject_error(const char *name, const struct bdev_error_inject_opts *opts)
{
	struct error_disk *disk = disk_by_name(name);
	bool all = opts->io_type == BDEV_ERROR_IO_TYPE_ALL;
	bool corrupt = opts->error_type == BDEV_ERROR_CORRUPT_DATA;
	bool drop = opts->error_type == BDEV_ERROR_DROP;
	struct error_injection *inj;
	int t;

	if (disk == NULL) {
		return -ENODEV;
	}
	if (!all && !io_type_injectable(opts->io_type)) {
		return -EINVAL;
	}
	if (opts->error_type > BDEV_ERROR_DROP) {
		return -EINVAL;
	}
	if (drop &&
	    !(all || opts->io_type == BDEV_IO_TYPE_WRITE || opts->io_type == BDEV_IO_TYPE_UNMAP ||
	      opts->io_type == BDEV_IO_TYPE_WRITE_ZEROES)) {
		return -EINVAL;
	}
	if (corrupt && (opts->corrupt_value == 0 || !(all || opts->io_type == BDEV_IO_TYPE_READ ||
						      opts->io_type == BDEV_IO_TYPE_WRITE))) {
		return -EINVAL;
	}

	for (t = 0; t < BDEV_NUM_IO_TYPES; t++) {
		if (!io_type_injectable(t) || (!all && (int)opts->io_type != t)) {
			continue;
		}
		if (corrupt && t != BDEV_IO_TYPE_READ && t != BDEV_IO_TYPE_WRITE) {
			continue;
		}
		if (drop && t != BDEV_IO_TYPE_WRITE && t != BDEV_IO_TYPE_UNMAP &&
		    t != BDEV_IO_TYPE_WRITE_ZEROES) {
			continue;
		}
		inj = &disk->injections[t];
		/* The corruption parameters are visible before the state that enables them. */
		__atomic_store_n(&inj->corrupt_offset, opts->corrupt_offset, __ATOMIC_RELAXED);
		__atomic_store_n(&inj->corrupt_value, opts->corrupt_value, __ATOMIC_RELAXED);
		__atomic_store_n(&inj->from_block, opts->from_block, __ATOMIC_RELAXED);
		__atomic_store_n(&inj->state, injection_state(opts->error_type, opts->num),
				 __ATOMIC_RELEASE);
	}
	if (opts->error_type == BDEV_ERROR_NONE) {
		NOTICELOG("error bdev '%s': injections cleared for io_type %s\n", disk->bdev.name,
			  all ? "all" : io_type_names[opts->io_type]);
	} else {
		NOTICELOG("error bdev '%s': injecting %s on io_type %s, num %" PRIu32 "\n",
			  disk->bdev.name, error_type_names[opts->error_type],
			  all ? "all" : io_type_names[opts->io_type], opts->num);
	}
	return 0;
}

static size_t
error_get_ctx_size(void)
{
	return sizeof(struct error_io);
}

static struct bdev_module error_module = {
	.name = "error",
	.get_ctx_size = error_get_ctx_size,
};

void
bdev_error_module_register(void)
{
	bdev_module_register(&error_module);
	bdev_error_rpc_register();
}
