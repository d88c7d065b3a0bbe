/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error bdev: a fault-injection layer. "EE_<base>" sits on a base bdev (which
 * it opens and claims), has the same geometry, and passes I/O through, except
 * for I/O that matches an injected error:
 *   failure       completed FAILED without reaching the base
 *   pending       held and never completed, until a reset of the error bdev
 *                 or its removal completes it ABORTED
 *   corrupt_data  writes: one byte of the caller's buffer is XORed before the
 *                 write goes down (the caller's buffer stays corrupted);
 *                 reads: the byte is XORed after the base read completes
 *   nomem         completed NOMEM (the bdev layer retries it later)
 * Each I/O type has its own injection; its count is shared by all threads
 * and decremented atomically by every I/O it affects.
 *
 * Held I/Os are released by a reset of the error bdev, bdev_error_delete()
 * and hot-removal of the base. A plain bdev_unregister() (as at shutdown)
 * cannot reach them: it waits for the users to close, and a user waiting for
 * its held I/Os never does. Clear or reset before shutting down.
 *
 * RPCs: bdev_error_create {base_name, uuid?} answers the bdev name;
 * bdev_error_delete {name}; bdev_error_inject_error {name, io_type,
 * error_type?, num?, corrupt_offset?, corrupt_value?} (true).
 */
#ifndef GGA_BDEV_ERROR_H
#define GGA_BDEV_ERROR_H

#include <stdint.h>

#include "gga/bdev.h"

/* Prefix of an error bdev's name: "EE_" + base name. */
#define BDEV_ERROR_PREFIX "EE_"

enum bdev_error_type {
	BDEV_ERROR_NONE = 0,
	BDEV_ERROR_FAILURE,
	BDEV_ERROR_PENDING,
	BDEV_ERROR_CORRUPT_DATA,
	BDEV_ERROR_NOMEM,
	/*
	 * A write (also write_zeroes, unmap) completes with success without
	 * reaching the base: a disk that loses writes. gga's own: SPDK's error
	 * bdev has no such type. Installed for those types only (with ALL too).
	 */
	BDEV_ERROR_DROP,
};

/* bdev_error_inject_opts.io_type meaning every type that can be injected. */
#define BDEV_ERROR_IO_TYPE_ALL BDEV_IO_TYPE_INVALID

struct bdev_error_opts {
	const char *base_name; /* required */
	const char *uuid;      /* canonical string, or NULL to generate one */
};

struct bdev_error_inject_opts {
	/*
	 * READ, WRITE, FLUSH, UNMAP, WRITE_ZEROES, or BDEV_ERROR_IO_TYPE_ALL.
	 * With ALL, corrupt_data is installed for READ and WRITE only, drop for
	 * WRITE, UNMAP and WRITE_ZEROES only.
	 */
	enum bdev_io_type io_type;
	/* BDEV_ERROR_NONE clears the injection of io_type (ALL: of every type). */
	enum bdev_error_type error_type;
	/* How many I/Os to affect; 0 = every one until cleared. */
	uint32_t num;
	/* corrupt_data: byte offset within the I/O's buffer, and the XOR mask (not 0). */
	uint64_t corrupt_offset;
	uint8_t corrupt_value;
	/* drop: only I/O that starts at or after this block is dropped (0: all). */
	uint64_t from_block;
};

/* Register the module and its RPCs (once, before bdev_subsystem_init). */
void bdev_error_module_register(void);

/*
 * Create "EE_<base_name>" on the base bdev (app thread). On success *bdev (if
 * not NULL) points at it. Returns 0, -EINVAL (no base name, bad uuid),
 * -ENODEV (no such base bdev), -EEXIST (the error bdev exists already),
 * -EPERM (the base is claimed by another module), -ENOMEM.
 */
int bdev_error_create(const struct bdev_error_opts *opts, struct bdev **bdev);

typedef void (*bdev_error_delete_cb)(void *cb_arg, int rc);

/*
 * Remove an error bdev (app thread): I/O it holds pending is completed
 * ABORTED, then the bdev is unregistered and the base released. Returns 0 and
 * later calls cb (may be NULL) with 0 once the bdev is gone; or returns
 * -ENODEV (no error bdev of that name), -EBUSY (already being removed) or
 * -ENOMEM without calling cb.
 */
int bdev_error_delete(const char *name, bdev_error_delete_cb cb, void *cb_arg);

/*
 * Install (or clear) an injection on the error bdev `name` (app thread).
 * Replaces the previous injection of the same I/O type. Returns 0, -ENODEV
 * (no error bdev of that name), -EINVAL (io_type not injectable,
 * corrupt_data on a type without data or with corrupt_value 0).
 */
int bdev_error_inject_error(const char *name, const struct bdev_error_inject_opts *opts);

/*
 * Send the I/Os held by a "pending" injection on to the base, on every
 * channel (a hung device that answers again; a reset instead aborts them).
 * Clear the injection first or they are held again. Returns 0 or -ENODEV;
 * the I/Os go on from each channel's thread.
 */
int bdev_error_release_pending(const char *name);

/* Internal: registers the RPC methods (bdev_error_rpc.c). */
void bdev_error_rpc_register(void);

#endif /* GGA_BDEV_ERROR_H */
