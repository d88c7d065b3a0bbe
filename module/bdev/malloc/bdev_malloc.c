/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Malloc bdev: a RAM disk in one anonymous mapping (see bdev_malloc.h).
 *
 * This is the back end of the per-core IOPS benchmark, so the I/O path is a
 * memcpy between the caller's iovecs and the mapping plus a few instructions:
 * no allocation, no locks, no syscalls, and the I/O is completed from inside
 * submit_request (the bdev layer defers the user's callback). All malloc bdevs
 * share one io_device whose channels carry no state.
 *
 * A thin malloc bdev (thin_blocks) is a test vehicle for thin namespaces: a
 * bitmap says which blocks are allocated, at most thin_blocks of them, and a
 * lock serialises its writes, unmaps and write_zeroes (speed does not
 * matter there; the plain disk keeps its lock-free path).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gga/bdev_module.h"
#include "gga/bdev_module_util.h"
#include "gga/log.h"
#include "gga/nvme_spec.h"
#include "gga/uuid.h"

#include "bdev_malloc.h"

/*
 * Zeroing at least this many bytes hands whole pages back to the kernel
 * (MADV_DONTNEED) instead of writing zeros: the range then costs no memory
 * and reads back as zeros, which keeps "unmap the whole disk" cheap.
 */
#define MALLOC_RELEASE_MIN (1u << 20)

struct malloc_disk {
	struct bdev bdev;
	uint8_t *buf;
	size_t buf_len;
	uint32_t buf_block_size;
	/* Thin: at most thin_blocks set bits in alloc_map; 0 = not thin. */
	uint64_t thin_blocks;
	uint64_t *alloc_map;
	uint64_t used_blocks; /* set bits, read without the lock by get_space */
	pthread_mutex_t thin_lock;
};

/* The io_device of every malloc bdev: its channels exist only to satisfy the layer. */
static int g_malloc_io_device;
static size_t g_page_size = 4096;

static struct bdev_module malloc_module;

static int
malloc_destruct(void *ctxt)
{
	struct malloc_disk *disk = ctxt;

	munmap(disk->buf, disk->buf_len);
	if (disk->alloc_map != NULL) {
		pthread_mutex_destroy(&disk->thin_lock);
		free(disk->alloc_map);
	}
	free(disk->bdev.name);
	free(disk);
	return 0;
}

static inline void
copy_to_iovs(const struct iovec *iovs, int iovcnt, const uint8_t *src, size_t len)
{
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		size_t n = GGA_MIN(iovs[i].iov_len, len);

		memcpy(iovs[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

static inline void
copy_from_iovs(uint8_t *dst, const struct iovec *iovs, int iovcnt, size_t len)
{
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		size_t n = GGA_MIN(iovs[i].iov_len, len);

		memcpy(dst, iovs[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

static void
zero_range(uint8_t *p, size_t len)
{
	uintptr_t start, end;

	if (len >= MALLOC_RELEASE_MIN) {
		start = align_up((uintptr_t)p, g_page_size);
		end = ((uintptr_t)p + len) & ~((uintptr_t)g_page_size - 1);
		/* A private anonymous page dropped this way reads back as zeros. */
		if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) {
			memset(p, 0, start - (uintptr_t)p);
			memset((void *)end, 0, (uintptr_t)p + len - end);
			return;
		}
	}
	memset(p, 0, len);
}

static bool
block_allocated(const struct malloc_disk *disk, uint64_t lba)
{
	return (disk->alloc_map[lba / 64] >> (lba % 64)) & 1;
}

/*
 * Thin disk, under its lock: allocate the blocks of a write, or none of them
 * (returns false) when that would pass thin_blocks.
 */
static bool
thin_allocate(struct malloc_disk *disk, uint64_t offset, uint64_t num)
{
	uint64_t lba, need = 0;

	for (lba = offset; lba < offset + num; lba++) {
		need += !block_allocated(disk, lba);
	}
	if (need > disk->thin_blocks - disk->used_blocks) {
		return false;
	}
	for (lba = offset; lba < offset + num; lba++) {
		disk->alloc_map[lba / 64] |= 1ull << (lba % 64);
	}
	__atomic_store_n(&disk->used_blocks, disk->used_blocks + need, __ATOMIC_RELAXED);
	return true;
}

/* Thin disk, under its lock: deallocate a range (it reads as zeros after). */
static void
thin_release(struct malloc_disk *disk, uint64_t offset, uint64_t num)
{
	uint64_t lba, freed = 0;

	for (lba = offset; lba < offset + num; lba++) {
		freed += block_allocated(disk, lba);
		disk->alloc_map[lba / 64] &= ~(1ull << (lba % 64));
	}
	__atomic_store_n(&disk->used_blocks, disk->used_blocks - freed, __ATOMIC_RELAXED);
}

static void
thin_submit_request(struct malloc_disk *disk, struct bdev_io *io, uint8_t *p, size_t len)
{
	bool ok = true;

	pthread_mutex_lock(&disk->thin_lock);
	if (io->type == BDEV_IO_TYPE_WRITE) {
		ok = thin_allocate(disk, io->u.offset_blocks, io->u.num_blocks);
		if (ok) {
			copy_from_iovs(p, io->u.iovs, io->u.iovcnt, len);
		}
	} else {
		thin_release(disk, io->u.offset_blocks, io->u.num_blocks);
		zero_range(p, len);
	}
	pthread_mutex_unlock(&disk->thin_lock);
	if (!ok) {
		/* Nothing of it written: the host may free space and write again. */
		bdev_io_complete_nvme_status(io, NVME_SCT_GENERIC, NVME_SC_CAPACITY_EXCEEDED);
		return;
	}
	bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
}

static void
malloc_submit_request(struct io_channel *ch, struct bdev_io *io)
{
	struct malloc_disk *disk = io->bdev->ctxt;
	uint8_t *p = disk->buf + io->u.offset_blocks * disk->buf_block_size;
	size_t len = io->u.num_blocks * disk->buf_block_size;

	if (disk->alloc_map != NULL &&
	    (io->type == BDEV_IO_TYPE_WRITE || io->type == BDEV_IO_TYPE_WRITE_ZEROES ||
	     io->type == BDEV_IO_TYPE_UNMAP)) {
		thin_submit_request(disk, io, p, len);
		return;
	}
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		copy_to_iovs(io->u.iovs, io->u.iovcnt, p, len);
		break;
	case BDEV_IO_TYPE_WRITE:
		copy_from_iovs(p, io->u.iovs, io->u.iovcnt, len);
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
		zero_range(p, len);
		break;
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_RESET:
		break;
	default:
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		return;
	}
	bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
}

static bool
malloc_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	switch (type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
	case BDEV_IO_TYPE_RESET:
		return true;
	default:
		return false;
	}
}

static struct io_channel *
malloc_get_io_channel(void *ctxt)
{
	return io_channel_get(&g_malloc_io_device);
}

static void
malloc_dump_info_json(void *ctxt, json_t *info)
{
	struct malloc_disk *disk = ctxt;

	json_t *malloc = json_pack("{s:i}", "md_size", (int)disk->bdev.md_size);

	if (malloc != NULL && disk->thin_blocks != 0) {
		json_object_set_new(malloc, "thin_blocks",
				    json_integer((json_int_t)disk->thin_blocks));
	}
	json_object_set_new(info, "malloc", malloc);
}

static void
malloc_write_config_json(struct bdev *bdev, json_t *config)
{
	struct malloc_disk *disk = bdev->ctxt;

	module_write_geometry_config(bdev, config, "bdev_malloc_create", disk->thin_blocks);
}

static void
malloc_get_space(void *ctxt, struct bdev_space *space)
{
	struct malloc_disk *disk = ctxt;

	if (disk->thin_blocks == 0) {
		return;
	}
	space->thin = true;
	space->dealloc_zeroes = true;
	space->used_blocks = __atomic_load_n(&disk->used_blocks, __ATOMIC_RELAXED);
	space->capacity_blocks = disk->thin_blocks;
}

static const struct bdev_fn_table malloc_fn_table = {
	.destruct = malloc_destruct,
	.submit_request = malloc_submit_request,
	.io_type_supported = malloc_io_type_supported,
	.get_io_channel = malloc_get_io_channel,
	.dump_info_json = malloc_dump_info_json,
	.write_config_json = malloc_write_config_json,
	.get_space = malloc_get_space,
};

/* "Malloc<N>" with the lowest N not in use, as a malloc'd string. */
static char *
default_name(void)
{
	char name[32];
	uint32_t n;

	for (n = 0; n < UINT32_MAX; n++) {
		snprintf(name, sizeof(name), "Malloc%" PRIu32, n);
		if (bdev_get_by_name(name) == NULL) {
			return strdup(name);
		}
	}
	return NULL;
}

int
bdev_malloc_create(const struct bdev_malloc_opts *opts, struct bdev **bdev_out)
{
	const char *label = opts->name != NULL ? opts->name : "(unnamed)";
	struct malloc_disk *disk;
	uint8_t uuid[16] = { 0 };
	uint32_t buf_block_size;
	const char *msg;
	int rc;

	if (opts->name != NULL && opts->name[0] == '\0') {
		ERRLOG("malloc bdev: the name must not be empty\n");
		return -EINVAL;
	}
	msg = module_geometry_check(opts->num_blocks, opts->block_size, opts->md_size);
	if (msg != NULL) {
		ERRLOG("malloc bdev '%s': %s\n", label, msg);
		return -EINVAL;
	}
	if (opts->uuid != NULL && uuid_parse(opts->uuid, uuid) != 0) {
		ERRLOG("malloc bdev '%s': uuid '%s' is not a valid UUID\n", label, opts->uuid);
		return -EINVAL;
	}
	buf_block_size = opts->block_size + opts->md_size;
	if (opts->num_blocks > BDEV_MALLOC_MAX_BYTES / buf_block_size) {
		ERRLOG("malloc bdev '%s': %" PRIu64 " blocks of %" PRIu32 " bytes exceed the "
		       "%llu-byte limit\n",
		       label, opts->num_blocks, buf_block_size, BDEV_MALLOC_MAX_BYTES);
		return -ENOMEM;
	}
	if (opts->thin_blocks > opts->num_blocks) {
		ERRLOG("malloc bdev '%s': thin_blocks %" PRIu64 " is more than num_blocks %" PRIu64
		       "\n",
		       label, opts->thin_blocks, opts->num_blocks);
		return -EINVAL;
	}
	if (opts->name != NULL && bdev_get_by_name(opts->name) != NULL) {
		ERRLOG("bdev '%s' already exists\n", opts->name);
		return -EEXIST;
	}

	disk = calloc(1, sizeof(*disk));
	if (disk == NULL) {
		return -ENOMEM;
	}
	disk->bdev.name = opts->name != NULL ? strdup(opts->name) : default_name();
	if (disk->bdev.name == NULL) {
		rc = -ENOMEM;
		goto out_free_disk;
	}
	disk->buf_block_size = buf_block_size;
	if (opts->thin_blocks != 0) {
		disk->thin_blocks = opts->thin_blocks;
		disk->alloc_map = calloc((opts->num_blocks + 63) / 64, sizeof(uint64_t));
		if (disk->alloc_map == NULL) {
			rc = -ENOMEM;
			goto out_free_name;
		}
		pthread_mutex_init(&disk->thin_lock, NULL);
	}
	disk->buf_len = opts->num_blocks * buf_block_size;
	/* NORESERVE: a big, sparsely used disk must not need its full size up front. */
	disk->buf = mmap(NULL, disk->buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (disk->buf == MAP_FAILED) {
		ERRLOG("malloc bdev '%s': cannot map %zu bytes: %s\n", disk->bdev.name,
		       disk->buf_len, strerror(errno));
		rc = -ENOMEM;
		goto out_free_name;
	}
	/*
	 * Transparent huge pages cut the TLB misses of the copy that is the
	 * whole cost of a malloc I/O. Only a hint: without THP it fails harmlessly.
	 */
	(void)madvise(disk->buf, disk->buf_len, MADV_HUGEPAGE);

	disk->bdev.product_name = "Malloc disk";
	disk->bdev.block_size = opts->block_size;
	disk->bdev.md_size = opts->md_size;
	disk->bdev.num_blocks = opts->num_blocks;
	memcpy(disk->bdev.uuid, uuid, sizeof(uuid));
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &malloc_fn_table;
	disk->bdev.module = &malloc_module;

	rc = bdev_register(&disk->bdev);
	if (rc != 0) {
		ERRLOG("malloc bdev '%s': register failed: %s\n", disk->bdev.name, strerror(-rc));
		goto out_unmap_buf;
	}
	if (bdev_out != NULL) {
		*bdev_out = &disk->bdev;
	}
	return 0;

out_unmap_buf:
	munmap(disk->buf, disk->buf_len);
out_free_name:
	if (disk->alloc_map != NULL) {
		pthread_mutex_destroy(&disk->thin_lock);
		free(disk->alloc_map);
	}
	free(disk->bdev.name);
out_free_disk:
	free(disk);
	return rc;
}

int
bdev_malloc_delete(const char *name, bdev_malloc_delete_cb cb, void *cb_arg)
{
	if (name == NULL) {
		return -ENODEV;
	}
	return bdev_unregister_by_name(name, &malloc_module, cb, cb_arg);
}

static int
malloc_channel_create(void *io_device, void *ctx_buf)
{
	return 0;
}

static void
malloc_channel_destroy(void *io_device, void *ctx_buf)
{
}

static int
malloc_module_init(void)
{
	long page_size = sysconf(_SC_PAGESIZE);

	if (page_size > 0) {
		g_page_size = (size_t)page_size;
	}
	io_device_register(&g_malloc_io_device, malloc_channel_create, malloc_channel_destroy, 0,
			   "bdev_malloc");
	return 0;
}

static void
malloc_module_fini(void)
{
	io_device_unregister(&g_malloc_io_device, NULL);
}

static struct bdev_module malloc_module = {
	.name = "malloc",
	.module_init = malloc_module_init,
	.module_fini = malloc_module_fini,
};

void
bdev_malloc_module_register(void)
{
	bdev_module_register(&malloc_module);
	bdev_malloc_rpc_register();
}
