/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Null bdev: a bdev with geometry but no storage, for measuring the layers
 * above it. Writes are dropped and reads succeed without touching the
 * caller's buffer (it keeps whatever it held: filling it with zeros would
 * cost a memset per read and defeat the purpose). write_zeroes, unmap, flush
 * and reset succeed and do nothing.
 *
 * RPCs: bdev_null_create {name, num_blocks, block_size, md_size?, uuid?}
 * answers the bdev name; bdev_null_delete {name} answers true.
 */
#ifndef GGA_BDEV_NULL_H
#define GGA_BDEV_NULL_H

#include <stdint.h>

struct bdev;

struct bdev_null_opts {
	const char *name;    /* required */
	uint64_t num_blocks; /* at least 1 */
	uint32_t block_size; /* power of two, 512 .. 65536 */
	uint32_t md_size;    /* 0, 8, 16, 32, 64 or 128 */
	const char *uuid;    /* canonical string, or NULL to generate one */
};

/* Register the module and its RPCs (once, before bdev_subsystem_init). */
void bdev_null_module_register(void);

/*
 * Create and register a null bdev (app thread). On success *bdev (if not
 * NULL) points at it. Returns 0, -EINVAL (no name, bad geometry or uuid),
 * -EEXIST (name taken), -ENOMEM.
 */
int bdev_null_create(const struct bdev_null_opts *opts, struct bdev **bdev);

typedef void (*bdev_null_delete_cb)(void *cb_arg, int rc);

/*
 * Unregister a null bdev (app thread). Returns 0 and later calls cb (may be
 * NULL) with 0 once the bdev is gone (-EBUSY if a removal was already in
 * progress); or returns -ENODEV, without calling cb, when there is no null
 * bdev of that name.
 */
int bdev_null_delete(const char *name, bdev_null_delete_cb cb, void *cb_arg);

/* Internal: registers the RPC methods (bdev_null_rpc.c). */
void bdev_null_rpc_register(void);

#endif /* GGA_BDEV_NULL_H */
