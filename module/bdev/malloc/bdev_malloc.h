/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Malloc bdev: a RAM disk. The blocks live in one anonymous private mapping
 * (zero-filled and committed lazily, so a large, mostly unused disk costs
 * little), with each block's metadata interleaved after its data exactly as
 * in I/O buffers. Reads and writes are a memcpy; write_zeroes and unmap zero
 * the range; flush and reset do nothing.
 *
 * Thin (thin_blocks N): at most N distinct blocks allocated at once, to test
 * thin namespaces. A write that would allocate past N fails whole with NVMe
 * Capacity Exceeded; unmap and write_zeroes deallocate; bdev_get_space
 * reports the count.
 *
 * RPCs: bdev_malloc_create {name?, num_blocks, block_size, md_size?, uuid?,
 * thin_blocks?} answers the bdev name; bdev_malloc_delete {name} answers true.
 */
#ifndef GGA_BDEV_MALLOC_H
#define GGA_BDEV_MALLOC_H

#include <stdint.h>

struct bdev;

/* The largest disk: num_blocks * (block_size + md_size) bytes. */
#define BDEV_MALLOC_MAX_BYTES (1ull << 40)

struct bdev_malloc_opts {
	const char *name;     /* NULL: "Malloc<N>" with the lowest free N */
	uint64_t num_blocks;  /* at least 1 */
	uint32_t block_size;  /* power of two, 512 .. 65536 */
	uint32_t md_size;     /* 0, 8, 16, 32, 64 or 128 */
	const char *uuid;     /* canonical string, or NULL to generate one */
	uint64_t thin_blocks; /* 0: every block backed; else thin, 1 .. num_blocks */
};

/* Register the module and its RPCs (once, before bdev_subsystem_init). */
void bdev_malloc_module_register(void);

/*
 * Create and register a malloc bdev (app thread). On success *bdev (if not
 * NULL) points at it. Returns 0, -EINVAL (empty name, bad geometry, uuid or
 * thin_blocks), -EEXIST (name taken), -ENOMEM (larger than
 * BDEV_MALLOC_MAX_BYTES, or allocation failed).
 */
int bdev_malloc_create(const struct bdev_malloc_opts *opts, struct bdev **bdev);

typedef void (*bdev_malloc_delete_cb)(void *cb_arg, int rc);

/*
 * Unregister a malloc bdev (app thread). Returns 0 and later calls cb (may be
 * NULL) with 0 once the bdev is gone (-EBUSY if a removal was already in
 * progress); or returns -ENODEV, without calling cb, when there is no malloc
 * bdev of that name.
 */
int bdev_malloc_delete(const char *name, bdev_malloc_delete_cb cb, void *cb_arg);

/* Internal: registers the RPC methods (bdev_malloc_rpc.c). */
void bdev_malloc_rpc_register(void);

#endif /* GGA_BDEV_MALLOC_H */
