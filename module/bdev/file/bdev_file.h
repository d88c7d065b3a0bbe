/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File bdev: a persistent bdev over a regular file or a block device, with
 * I/O through io_uring (liburing).
 *
 * On-disk layout.
 * - md_size == 0: the file (or device) is the bdev's data, byte for byte:
 *   block n lives at offset n * block_size. Such a file can be used with any
 *   other tool (dd, a loop device, another gga_tgt). The uuid is not stored;
 *   it comes back from the saved configuration (write_config_json records it).
 * - md_size > 0: "per-block metadata stored alongside the data":
 *     [0, 4 KiB)           header: magic "GGAFBDEV", version, block_size,
 *                          md_size, num_blocks, data/metadata offsets, uuid,
 *                          crc32c of the header
 *     [4 KiB, ...)         data area, num_blocks * block_size bytes
 *     [md_offset, ...)     metadata area, num_blocks * md_size bytes, starting
 *                          at the first 4 KiB boundary after the data area
 *   A blank target (new, empty, or whose first 4 KiB are zero) is formatted;
 *   an existing header must match the requested geometry and uuid, and
 *   supplies them when they are not given. A target holding data but no
 *   header is refused rather than overwritten.
 *
 * I/O. Data goes through an O_DIRECT descriptor where the file system or
 * device supports it (otherwise buffered, with a notice); metadata through a
 * second, buffered descriptor. Every thread's channel owns an io_uring and an
 * eventfd registered with the thread, so completions wake a sleeping
 * reactor; submissions are batched to one io_uring_submit() per poll. With
 * md_size > 0, and for caller buffers that do not meet the O_DIRECT
 * alignment (bdev_get_buf_align() reports it), I/O goes through per-channel
 * bounce buffers in chunks of at most 64 KiB of data. Flush is fdatasync of
 * both descriptors; write_zeroes and unmap punch holes (zero ranges on block
 * devices) and fall back to writing zeros; reset waits until the I/O
 * outstanding on every channel has drained.
 *
 * A regular file is locked (flock) and a block device opened O_EXCL, so two
 * bdevs, in this process or another, never share one.
 *
 * RPCs: bdev_file_create {name, filename, block_size?, md_size?, num_blocks?,
 * uuid?, create?} answers the bdev name; bdev_file_delete {name} answers true
 * and leaves the file in place.
 */
#ifndef GGA_BDEV_FILE_H
#define GGA_BDEV_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bdev;

struct bdev_file_opts {
	const char *name;     /* required, not empty */
	const char *filename; /* a regular file or a block device */
	/*
	 * Power of two, 512 .. 65536. 0: the header's (md_size > 0, formatted
	 * target), else the block device's logical block size; a regular file
	 * that is not formatted needs it.
	 */
	uint32_t block_size;
	uint32_t md_size; /* 0, 8, 16, 32, 64 or 128 */
	/*
	 * 0: the header's, or as many blocks as the file or device holds. A
	 * regular file smaller than num_blocks is extended (sparse); a larger
	 * one is never shrunk. A block device must hold num_blocks.
	 */
	uint64_t num_blocks;
	const char *uuid; /* canonical string, or NULL (the header's, or a new one) */
	bool create;      /* create a missing regular file (not under /dev/ but /dev/shm/) */
};

/* Register the module and its RPCs (once, before bdev_subsystem_init). */
void bdev_file_module_register(void);

/*
 * Create and register a file bdev (app thread). On success *bdev (if not
 * NULL) points at it. On failure nothing is left behind: a file this call
 * created is removed again, a file it extended is cut back, a header it
 * wrote is cleared. When `msg` is not NULL it receives a message naming the
 * offending parameter (also logged). Returns 0, or:
 *   -EINVAL  bad parameter, geometry that does not match the file's header,
 *            a file too small or holding data but no header (md_size > 0),
 *            a path that is neither a regular file nor a block device
 *   -EEXIST  a bdev of that name exists
 *   -ENOENT  the file does not exist and create is false (or it is under /dev/)
 *   -EBUSY   the file or device is in use by another bdev or process
 *   -ENOTSUP io_uring is unavailable
 *   -ENOMEM, or another negative errno from opening or sizing the file
 */
int bdev_file_create(const struct bdev_file_opts *opts, struct bdev **bdev, char *msg,
		     size_t msg_len);

typedef void (*bdev_file_delete_cb)(void *cb_arg, int rc);

/*
 * Unregister a file bdev (app thread); the file is closed and kept. Returns
 * 0 and later calls cb (may be NULL) with 0 once the bdev is gone (-EBUSY if
 * a removal was already in progress); or returns -ENODEV, without calling
 * cb, when there is no file bdev of that name.
 */
int bdev_file_delete(const char *name, bdev_file_delete_cb cb, void *cb_arg);

/* Internal: registers the RPC methods (bdev_file_rpc.c). */
void bdev_file_rpc_register(void);

#endif /* GGA_BDEV_FILE_H */
