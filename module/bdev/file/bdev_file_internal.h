/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File bdev internals shared by bdev_file.c (module, channels, I/O path) and
 * bdev_file_create.c (opening, checking and formatting the file).
 */
#ifndef GGA_BDEV_FILE_INTERNAL_H
#define GGA_BDEV_FILE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "gga/bdev_module.h"

/* Layout of a file with metadata (see bdev_file.h). */
#define FILE_HDR_MAGIC   "GGAFBDEV"
#define FILE_HDR_VERSION 1u
#define FILE_HDR_REGION  4096u
#define FILE_MD_ALIGN    4096u

/*
 * Bounce buffers come in two classes per channel: many small ones for the
 * common small I/O, a few large ones for the rest. Each holds up to this
 * much data plus its metadata; larger I/O that needs one runs as a sequence
 * of chunks. A block larger than the small size makes both classes one block.
 */
#define FILE_BOUNCE_SMALL     (8u * 1024)
#define FILE_BOUNCE_LARGE     (64u * 1024)
/* Bounce buffers per channel and class: with metadata every I/O bounces. */
#define FILE_BOUNCE_SMALL_MD  64u
#define FILE_BOUNCE_LARGE_MD  8u
/* Without metadata only callers that miss the O_DIRECT alignment do. */
#define FILE_BOUNCE_SMALL_RAW 16u
#define FILE_BOUNCE_LARGE_RAW 4u

enum file_bounce_class {
	FILE_BOUNCE_CLASS_SMALL,
	FILE_BOUNCE_CLASS_LARGE,
	FILE_BOUNCE_CLASSES,
};

struct file_bounce_class_params {
	uint32_t blocks; /* data blocks (and their metadata) an element holds */
	uint32_t count;  /* elements per channel; 0 when nothing ever bounces */
	size_t size;     /* bytes per element: data, then metadata, 4 KiB-aligned */
};
/* The shared zero buffer that backs write_zeroes where fallocate cannot. */
#define FILE_ZERO_BUF_SIZE (1024u * 1024)

struct file_disk {
	char *filename; /* canonical path, for messages and the saved config */
	int fd;         /* buffered: header, metadata; holds the lock */
	int dfd;        /* data: O_DIRECT, or == fd when buffered */
	bool direct;
	bool blockdev;
	bool formatted;         /* has a header (md_size > 0) */
	uint32_t dio_mem_align; /* caller buffers need this alignment to skip the bounce */
	uint32_t dio_len_align;
	uint32_t block_size;
	uint32_t md_size;
	uint64_t num_blocks;
	uint64_t data_offset;
	uint64_t md_offset;
	struct file_bounce_class_params bounce[FILE_BOUNCE_CLASSES];
	int data_zero_mode; /* fallocate mode that zeroes the data range */
	/* Cleared (for good) when fallocate turns out unsupported; then zeros are written. */
	bool data_falloc;
	bool md_falloc;
	/*
	 * Requests that failed with an error from the file (any thread adds).
	 * From the first one on the bdev's health is degraded (bdev_get_health),
	 * until the bdev is created again.
	 */
	uint64_t media_errors;
	/*
	 * The disk is the io_device of its channels; the bdev is not its first
	 * member so that the two pointers never coincide.
	 */
	struct bdev bdev;
};

extern struct bdev_module file_module;
extern const struct bdev_fn_table file_fn_table;
extern uint8_t *g_file_zero_buf;
/* Test hook: never use O_DIRECT (as on a file system without it). */
extern bool g_file_force_buffered;

/* Channels: the disk's io_device callbacks (bdev_file.c). */
int file_channel_create(void *io_device, void *ctx_buf);
void file_channel_destroy(void *io_device, void *ctx_buf);
uint32_t file_channel_ctx_size(void);

/* Close the descriptors and free the disk (bdev_file_create.c). */
void file_disk_free(struct file_disk *disk);

#endif /* GGA_BDEV_FILE_INTERNAL_H */
