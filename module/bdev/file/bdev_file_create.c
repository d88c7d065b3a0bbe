/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File bdev: opening, checking and formatting the file; bdev_file_create.
 *
 * Every check that can fail runs before anything is written. What create
 * does change (a new file, a longer file, a header) is recorded in struct
 * file_create and undone if a later step fails, so a failed create leaves
 * the file system as it found it.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include <isa-l/crc.h>
#include <liburing.h>

#include "gga/bdev_module_util.h"
#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_file.h"
#include "bdev_file_internal.h"

/* The header at offset 0 of a file with metadata; every field little-endian. */
struct file_header {
	char magic[8]; /* FILE_HDR_MAGIC, not NUL-terminated */
	uint32_t version;
	uint32_t header_size; /* sizeof(struct file_header) */
	uint32_t block_size;
	uint32_t md_size;
	uint64_t num_blocks;
	uint64_t data_offset;
	uint64_t md_offset;
	uint8_t uuid[16];
	uint32_t reserved;
	uint32_t crc; /* crc32c of this struct with crc = 0 */
};
_Static_assert(sizeof(struct file_header) == 72, "the on-disk header is 72 bytes");

enum header_state {
	HDR_BLANK,   /* empty, or the header region is all zeros */
	HDR_FOREIGN, /* data, but not a header */
	HDR_VALID,
	HDR_DAMAGED, /* magic, but a bad checksum or size */
	HDR_NEWER,   /* magic, but a version this code does not know */
};

/* What create has learnt and what it changed (to undo on failure). */
struct file_create {
	uint64_t size; /* bytes in the file or device */
	uint32_t lbs;  /* block device's logical block size, 0 for a file */
	enum header_state hstate;
	struct file_header hdr; /* decoded, host order (HDR_VALID) */
	uint8_t uuid[16];
	bool format;  /* write a header */
	uint64_t end; /* bytes the layout needs */
	bool created;
	bool extended;
	bool header_written;
};

/* 0: not probed yet, 1: usable, negative errno: not usable. */
static int g_uring_state;

static void file_set_msg(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
file_set_msg(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

void
file_disk_free(struct file_disk *disk)
{
	if (disk->dfd >= 0 && disk->dfd != disk->fd) {
		close(disk->dfd);
	}
	if (disk->fd >= 0) {
		close(disk->fd);
	}
	free(disk->filename);
	free(disk->bdev.name);
	free(disk);
}

static int
uring_check(char *msg, size_t msg_len)
{
	static const int ops[] = {
		IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_READ,
		IORING_OP_WRITE, IORING_OP_FSYNC,  IORING_OP_FALLOCATE,
	};
	struct io_uring_probe *probe;
	size_t i;

	if (g_uring_state == 0) {
		probe = io_uring_get_probe();
		g_uring_state = probe != NULL ? 1 : -ENOTSUP;
		for (i = 0; probe != NULL && i < ARRAY_SIZE(ops); i++) {
			if (!io_uring_opcode_supported(probe, ops[i])) {
				g_uring_state = -ENOTSUP;
			}
		}
		if (probe != NULL) {
			io_uring_free_probe(probe);
		}
	}
	if (g_uring_state < 0) {
		file_set_msg(msg, msg_len,
			     "io_uring is unavailable (kernel.io_uring_disabled, or a "
			     "kernel before 5.6): file bdevs need it");
		return g_uring_state;
	}
	return 0;
}

static int
check_opts(const struct bdev_file_opts *opts, uint8_t uuid[16], char *msg, size_t msg_len)
{
	if (opts->name == NULL || opts->name[0] == '\0') {
		file_set_msg(msg, msg_len, "name: must not be empty");
		return -EINVAL;
	}
	if (opts->filename == NULL || opts->filename[0] == '\0') {
		file_set_msg(msg, msg_len, "filename: must not be empty");
		return -EINVAL;
	}
	if (opts->block_size != 0 &&
	    (!is_pow2(opts->block_size) || opts->block_size < 512 || opts->block_size > 65536)) {
		file_set_msg(msg, msg_len, "block_size: must be a power of two from 512 to 65536");
		return -EINVAL;
	}
	/* Any valid num_blocks and block_size: only md_size is left to judge. */
	if (module_geometry_check(1, 512, opts->md_size) != NULL) {
		file_set_msg(msg, msg_len, "md_size: must be 0, 8, 16, 32, 64 or 128");
		return -EINVAL;
	}
	memset(uuid, 0, 16);
	if (opts->uuid != NULL && uuid_parse(opts->uuid, uuid) != 0) {
		file_set_msg(msg, msg_len, "uuid: '%s' is not a valid UUID", opts->uuid);
		return -EINVAL;
	}
	return 0;
}

/*
 * Layout of a file with metadata: header region, data, metadata from the
 * next 4 KiB boundary (so that the buffered metadata pages never share a
 * page with O_DIRECT data).
 */
static uint64_t
layout_md_offset(uint64_t num_blocks, uint32_t block_size)
{
	return align_up(FILE_HDR_REGION + num_blocks * block_size, FILE_MD_ALIGN);
}

static uint64_t
layout_end(uint64_t num_blocks, uint32_t block_size, uint32_t md_size)
{
	if (md_size == 0) {
		return num_blocks * block_size;
	}
	return layout_md_offset(num_blocks, block_size) + num_blocks * md_size;
}

/* Blocks that fit in `size` bytes; 0 if not even one. */
static uint64_t
blocks_fitting(uint64_t size, uint32_t block_size, uint32_t md_size)
{
	uint64_t n;

	if (md_size == 0) {
		return size / block_size;
	}
	/* An underestimate by at most the alignment slack, then step up. */
	n = size > 2 * FILE_HDR_REGION ? (size - 2 * FILE_HDR_REGION) / (block_size + md_size) : 0;
	while (layout_end(n + 1, block_size, md_size) <= size) {
		n++;
	}
	return n;
}

static uint32_t
header_crc(const struct file_header *disk_order)
{
	struct file_header h = *disk_order;

	h.crc = 0;
	return crc32_iscsi((unsigned char *)&h, (int)sizeof(h), 0xffffffffu);
}

static void
header_encode(const struct file_header *h, struct file_header *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->magic, FILE_HDR_MAGIC, sizeof(out->magic));
	out->version = htole32(FILE_HDR_VERSION);
	out->header_size = htole32(sizeof(*out));
	out->block_size = htole32(h->block_size);
	out->md_size = htole32(h->md_size);
	out->num_blocks = htole64(h->num_blocks);
	out->data_offset = htole64(h->data_offset);
	out->md_offset = htole64(h->md_offset);
	memcpy(out->uuid, h->uuid, sizeof(out->uuid));
	out->crc = htole32(header_crc(out));
}

/* Read and classify the first 4 KiB. Returns an enum header_state or a negative errno. */
static int
header_read(int fd, uint64_t size, struct file_header *out)
{
	uint8_t buf[FILE_HDR_REGION];
	size_t len = (size_t)GGA_MIN(size, (uint64_t)sizeof(buf)), done = 0;
	struct file_header d;
	ssize_t n;

	while (done < len) {
		n = pread(fd, buf + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		if (n == 0) {
			break;
		}
		done += (size_t)n;
	}
	if (done < sizeof(d) || memcmp(buf, FILE_HDR_MAGIC, sizeof(d.magic)) != 0) {
		return mem_is_zero(buf, done) ? HDR_BLANK : HDR_FOREIGN;
	}
	memcpy(&d, buf, sizeof(d));
	out->version = le32toh(d.version);
	if (out->version != FILE_HDR_VERSION) {
		return out->version > FILE_HDR_VERSION ? HDR_NEWER : HDR_DAMAGED;
	}
	if (le32toh(d.header_size) != sizeof(d) || le32toh(d.crc) != header_crc(&d)) {
		return HDR_DAMAGED;
	}
	out->block_size = le32toh(d.block_size);
	out->md_size = le32toh(d.md_size);
	out->num_blocks = le64toh(d.num_blocks);
	out->data_offset = le64toh(d.data_offset);
	out->md_offset = le64toh(d.md_offset);
	memcpy(out->uuid, d.uuid, sizeof(out->uuid));
	/* A header that passes its checksum but describes another layout is not ours. */
	if (module_geometry_check(out->num_blocks, out->block_size, out->md_size) != NULL ||
	    out->md_size == 0 || out->data_offset != FILE_HDR_REGION ||
	    out->num_blocks >
		    (INT64_MAX - 2 * FILE_HDR_REGION) / (out->block_size + out->md_size) ||
	    out->md_offset != layout_md_offset(out->num_blocks, out->block_size)) {
		return HDR_DAMAGED;
	}
	return HDR_VALID;
}

/*
 * The path made absolute, for the saved configuration (a daemon replaying it
 * may run elsewhere), but with symlinks kept: /dev/disk/by-id/... must stay
 * that rather than become whatever /dev/sdX it points at today.
 */
static char *
absolute_path(const char *path)
{
	char *cwd, *abs;

	if (path[0] == '/') {
		return strdup(path);
	}
	cwd = getcwd(NULL, 0);
	if (cwd == NULL || asprintf(&abs, "%s/%s", cwd, path) < 0) {
		abs = strdup(path);
	}
	free(cwd);
	return abs;
}

/* Open (or create) the file or device and take it for this bdev. */
static int
open_target(struct file_disk *disk, const struct bdev_file_opts *opts, struct file_create *st,
	    char *msg, size_t msg_len)
{
	const char *path = opts->filename;
	int flags = O_RDWR | O_CLOEXEC;
	struct stat sb;
	int lbs, rc;

	if (stat(path, &sb) != 0) {
		if (errno != ENOENT) {
			rc = -errno;
			file_set_msg(msg, msg_len, "filename: cannot access '%s': %s", path,
				     strerror(errno));
			return rc;
		}
		if (!opts->create) {
			file_set_msg(msg, msg_len,
				     "filename: '%s' does not exist (and create is false)", path);
			return -ENOENT;
		}
		/* A mistyped device name must not turn into a regular file in /dev. */
		if (strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/shm/", 9) != 0) {
			file_set_msg(msg, msg_len, "filename: no such device '%s'", path);
			return -ENOENT;
		}
		if (opts->block_size == 0) {
			file_set_msg(msg, msg_len, "block_size: required to create '%s'", path);
			return -EINVAL;
		}
		if (opts->num_blocks == 0) {
			file_set_msg(msg, msg_len, "num_blocks: required to create '%s'", path);
			return -EINVAL;
		}
		disk->fd = open(path, flags | O_CREAT | O_EXCL, 0644);
		if (disk->fd < 0) {
			rc = -errno;
			file_set_msg(msg, msg_len, "filename: cannot create '%s': %s", path,
				     strerror(errno));
			return rc;
		}
		st->created = true;
	} else if (S_ISBLK(sb.st_mode) || S_ISREG(sb.st_mode)) {
		/* O_EXCL on a block device: refused while mounted or claimed by anyone else. */
		disk->fd = open(path, flags | (S_ISBLK(sb.st_mode) ? O_EXCL : 0));
		if (disk->fd < 0) {
			rc = -errno;
			if (errno == EBUSY) {
				file_set_msg(msg, msg_len,
					     "filename: block device '%s' is in use "
					     "(mounted, or open by another bdev or process)",
					     path);
			} else {
				file_set_msg(msg, msg_len, "filename: cannot open '%s': %s", path,
					     strerror(errno));
			}
			return rc;
		}
	} else {
		file_set_msg(msg, msg_len,
			     "filename: '%s' is neither a regular file nor a block device", path);
		return -EINVAL;
	}

	/* The descriptor is what counts: the path may have changed since stat(). */
	if (fstat(disk->fd, &sb) != 0) {
		rc = -errno;
		file_set_msg(msg, msg_len, "filename: cannot stat '%s': %s", path, strerror(errno));
		return rc;
	}
	if (S_ISBLK(sb.st_mode)) {
		disk->blockdev = true;
		if (ioctl(disk->fd, BLKGETSIZE64, &st->size) != 0 ||
		    ioctl(disk->fd, BLKSSZGET, &lbs) != 0) {
			rc = -errno;
			file_set_msg(msg, msg_len, "filename: cannot get the geometry of '%s': %s",
				     path, strerror(errno));
			return rc;
		}
		st->lbs = (uint32_t)lbs;
	} else if (S_ISREG(sb.st_mode)) {
		/* One bdev per file, across processes too: a second one would corrupt it. */
		if (flock(disk->fd, LOCK_EX | LOCK_NB) != 0) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			file_set_msg(msg, msg_len,
				     "filename: '%s' is in use by another bdev or process", path);
			return rc;
		}
		st->size = (uint64_t)sb.st_size;
	} else {
		file_set_msg(msg, msg_len,
			     "filename: '%s' is neither a regular file nor a block device", path);
		return -EINVAL;
	}

	disk->filename = absolute_path(path);
	if (disk->filename == NULL) {
		file_set_msg(msg, msg_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int
default_block_size(const struct bdev_file_opts *opts, const struct file_create *st,
		   uint32_t *block_size, char *msg, size_t msg_len)
{
	if (opts->block_size != 0) {
		*block_size = opts->block_size;
	} else if (st->lbs != 0) {
		*block_size = st->lbs;
	} else {
		file_set_msg(msg, msg_len,
			     "block_size: required for '%s' (a regular file without a "
			     "header to take it from)",
			     opts->filename);
		return -EINVAL;
	}
	return 0;
}

/* Geometry of a file with a valid header: it must match what was asked. */
static int
geometry_from_header(struct file_disk *disk, const struct bdev_file_opts *opts,
		     struct file_create *st, const uint8_t uuid[16], char *msg, size_t msg_len)
{
	const struct file_header *h = &st->hdr;
	char have[UUID_STR_LEN], want[UUID_STR_LEN];

	if (opts->block_size != 0 && opts->block_size != h->block_size) {
		file_set_msg(msg, msg_len,
			     "block_size: '%s' was formatted with block_size %" PRIu32
			     ", not %" PRIu32,
			     opts->filename, h->block_size, opts->block_size);
		return -EINVAL;
	}
	if (opts->md_size != h->md_size) {
		file_set_msg(msg, msg_len,
			     "md_size: '%s' was formatted with md_size %" PRIu32 ", not %" PRIu32,
			     opts->filename, h->md_size, opts->md_size);
		return -EINVAL;
	}
	if (opts->num_blocks != 0 && opts->num_blocks != h->num_blocks) {
		file_set_msg(msg, msg_len,
			     "num_blocks: '%s' was formatted with %" PRIu64 " blocks, not %" PRIu64,
			     opts->filename, h->num_blocks, opts->num_blocks);
		return -EINVAL;
	}
	if (!uuid_is_null(uuid) && memcmp(uuid, h->uuid, 16) != 0) {
		uuid_format(h->uuid, have);
		uuid_format(uuid, want);
		file_set_msg(msg, msg_len, "uuid: '%s' holds the bdev with uuid %s, not %s",
			     opts->filename, have, want);
		return -EINVAL;
	}
	disk->block_size = h->block_size;
	disk->md_size = h->md_size;
	disk->num_blocks = h->num_blocks;
	disk->data_offset = h->data_offset;
	disk->md_offset = h->md_offset;
	disk->formatted = true;
	memcpy(st->uuid, h->uuid, 16);
	st->end = layout_end(disk->num_blocks, disk->block_size, disk->md_size);
	if (st->size < st->end) {
		file_set_msg(msg, msg_len,
			     "filename: '%s' is %" PRIu64 " bytes, shorter than the %" PRIu64
			     " its header describes (truncated?)",
			     opts->filename, st->size, st->end);
		return -EINVAL;
	}
	return 0;
}

/* Decide block size, block count, layout and uuid from the options and the file. */
static int
set_geometry(struct file_disk *disk, const struct bdev_file_opts *opts, struct file_create *st,
	     const uint8_t uuid[16], char *msg, size_t msg_len)
{
	const char *what;
	uint32_t bs, md = opts->md_size;
	uint64_t n, fit;
	int rc;

	rc = header_read(disk->fd, st->size, &st->hdr);
	if (rc < 0) {
		file_set_msg(msg, msg_len, "filename: cannot read '%s': %s", opts->filename,
			     strerror(-rc));
		return rc;
	}
	st->hstate = (enum header_state)rc;

	if (md == 0 && st->hstate == HDR_VALID) {
		file_set_msg(msg, msg_len,
			     "md_size: '%s' is a file bdev with md_size %" PRIu32
			     " (block_size %" PRIu32 ", %" PRIu64 " blocks): give that md_size",
			     opts->filename, st->hdr.md_size, st->hdr.block_size,
			     st->hdr.num_blocks);
		return -EINVAL;
	}
	if (md != 0) {
		switch (st->hstate) {
		case HDR_VALID:
			return geometry_from_header(disk, opts, st, uuid, msg, msg_len);
		case HDR_DAMAGED:
			file_set_msg(msg, msg_len,
				     "filename: '%s' has a damaged file bdev header (bad "
				     "checksum or layout); refusing to use it",
				     opts->filename);
			return -EINVAL;
		case HDR_NEWER:
			file_set_msg(msg, msg_len,
				     "filename: '%s' has a file bdev header of version %" PRIu32
				     ", newer than this gga supports (%u)",
				     opts->filename, st->hdr.version, FILE_HDR_VERSION);
			return -EINVAL;
		case HDR_FOREIGN:
			file_set_msg(msg, msg_len,
				     "md_size: '%s' holds data but no file bdev header; "
				     "refusing to format it (zero its first 4 KiB to allow that)",
				     opts->filename);
			return -EINVAL;
		case HDR_BLANK:
			st->format = true;
			break;
		}
	}
	/* Raw data (md_size 0), or a blank target to format. */
	rc = default_block_size(opts, st, &bs, msg, msg_len);
	if (rc != 0) {
		return rc;
	}
	fit = blocks_fitting(st->size, bs, md);
	n = opts->num_blocks != 0 ? opts->num_blocks : fit;
	if (n == 0) {
		file_set_msg(msg, msg_len,
			     "num_blocks: '%s' (%" PRIu64 " bytes) is too small for one "
			     "block of %" PRIu32 " + %" PRIu32 " bytes; give num_blocks to size it",
			     opts->filename, st->size, bs, md);
		return -EINVAL;
	}
	what = module_geometry_check(n, bs, md);
	if (what == NULL && n > (INT64_MAX - 2 * FILE_HDR_REGION) / (bs + md)) {
		what = "num_blocks: the file would exceed the largest file size";
	}
	if (what != NULL) {
		file_set_msg(msg, msg_len, "%s", what);
		return -EINVAL;
	}
	if (disk->blockdev && n > fit) {
		file_set_msg(msg, msg_len,
			     "num_blocks: block device '%s' (%" PRIu64 " bytes) holds %" PRIu64
			     " blocks of %" PRIu32 " + %" PRIu32 " bytes, not %" PRIu64,
			     opts->filename, st->size, fit, bs, md, n);
		return -EINVAL;
	}
	disk->block_size = bs;
	disk->md_size = md;
	disk->num_blocks = n;
	disk->data_offset = md != 0 ? FILE_HDR_REGION : 0;
	disk->md_offset = md != 0 ? layout_md_offset(n, bs) : 0;
	disk->formatted = md != 0;
	st->end = layout_end(n, bs, md);
	memcpy(st->uuid, uuid, 16);
	if (st->format && uuid_is_null(st->uuid)) {
		/* Stored in the header, so that it comes back with the file. */
		uuid_generate(st->uuid);
	}
	return 0;
}

/* Choose O_DIRECT for the data when the file system and the geometry allow it. */
static void
open_data_fd(struct file_disk *disk, const struct file_create *st)
{
	uint32_t mem_align = 512, len_align = st->lbs != 0 ? st->lbs : 512;
	struct statx stx;
	char proc[64];

	disk->dfd = disk->fd;
	disk->direct = false;
	disk->dio_mem_align = 1;
	disk->dio_len_align = 1;
	if (g_file_force_buffered) {
		NOTICELOG("file bdev '%s': direct I/O disabled, using buffered I/O\n",
			  disk->bdev.name);
		return;
	}
	if (statx(disk->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) != 0) {
		if (stx.stx_dio_offset_align == 0) {
			NOTICELOG("file bdev '%s': '%s' does not support direct I/O, using "
				  "buffered I/O\n",
				  disk->bdev.name, disk->filename);
			return;
		}
		mem_align = GGA_MAX(stx.stx_dio_mem_align, 1u);
		len_align = stx.stx_dio_offset_align;
	}
	if (!is_pow2(mem_align) || !is_pow2(len_align) || disk->block_size % len_align != 0 ||
	    disk->data_offset % len_align != 0) {
		NOTICELOG("file bdev '%s': block_size %" PRIu32 " does not meet the direct-I/O "
			  "granularity %" PRIu32 " of '%s', using buffered I/O\n",
			  disk->bdev.name, disk->block_size, len_align, disk->filename);
		return;
	}
	/* Reopen the very file we hold, whatever has happened to its path since. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", disk->fd);
	disk->dfd = open(proc, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (disk->dfd < 0) {
		NOTICELOG("file bdev '%s': '%s' cannot be opened with O_DIRECT (%s), using "
			  "buffered I/O\n",
			  disk->bdev.name, disk->filename, strerror(errno));
		disk->dfd = disk->fd;
		return;
	}
	disk->direct = true;
	disk->dio_mem_align = mem_align;
	disk->dio_len_align = len_align;
}

static int
write_full(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Make the file what the geometry says: long enough, and formatted. */
static int
prepare_file(struct file_disk *disk, struct file_create *st, char *msg, size_t msg_len)
{
	uint8_t region[FILE_HDR_REGION] = { 0 };
	struct file_header h = { 0 };
	int rc;

	if (!disk->blockdev && st->size < st->end) {
		/* Sparse: the new blocks read as zeros and cost nothing until written. */
		if (ftruncate(disk->fd, (off_t)st->end) != 0) {
			rc = -errno;
			file_set_msg(msg, msg_len,
				     "filename: cannot extend '%s' to %" PRIu64 " bytes: %s",
				     disk->filename, st->end, strerror(errno));
			return rc;
		}
		st->extended = true;
	}
	if (st->format) {
		h.block_size = disk->block_size;
		h.md_size = disk->md_size;
		h.num_blocks = disk->num_blocks;
		h.data_offset = disk->data_offset;
		h.md_offset = disk->md_offset;
		memcpy(h.uuid, st->uuid, 16);
		header_encode(&h, (struct file_header *)region);
		st->header_written = true;
		rc = write_full(disk->fd, region, sizeof(region), 0);
		if (rc == 0 && fdatasync(disk->fd) != 0) {
			rc = -errno;
		}
		if (rc != 0) {
			file_set_msg(msg, msg_len, "filename: cannot write the header of '%s': %s",
				     disk->filename, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Put the file back as create found it. */
static void
restore_file(struct file_disk *disk, const struct file_create *st)
{
	static const uint8_t zero[FILE_HDR_REGION];

	if (st->created) {
		return; /* unlinked by the caller */
	}
	if (st->header_written) {
		/* It was blank: all zeros. */
		if (write_full(disk->fd, zero, sizeof(zero), 0) != 0 || fdatasync(disk->fd) != 0) {
			ERRLOG("file bdev '%s': cannot clear the header written to '%s': %s\n",
			       disk->bdev.name, disk->filename, strerror(errno));
		}
	}
	if (st->extended && ftruncate(disk->fd, (off_t)st->size) != 0) {
		ERRLOG("file bdev '%s': cannot cut '%s' back to %" PRIu64 " bytes: %s\n",
		       disk->bdev.name, disk->filename, st->size, strerror(errno));
	}
}

/* Per-channel bounce buffers and the fallocate modes. */
static void
set_io_params(struct file_disk *disk)
{
	struct file_bounce_class_params *small = &disk->bounce[FILE_BOUNCE_CLASS_SMALL];
	struct file_bounce_class_params *large = &disk->bounce[FILE_BOUNCE_CLASS_LARGE];
	uint32_t bbs = disk->block_size + disk->md_size;

	small->blocks = GGA_MAX(FILE_BOUNCE_SMALL / disk->block_size, 1u);
	large->blocks = FILE_BOUNCE_LARGE / disk->block_size;
	small->size = align_up((uint64_t)small->blocks * bbs, 4096);
	large->size = align_up((uint64_t)large->blocks * bbs, 4096);
	if (disk->md_size != 0) {
		small->count = FILE_BOUNCE_SMALL_MD;
		large->count = FILE_BOUNCE_LARGE_MD;
	} else if (disk->direct) {
		small->count = FILE_BOUNCE_SMALL_RAW;
		large->count = FILE_BOUNCE_LARGE_RAW;
	} else {
		small->count = 0;
		large->count = 0;
	}
	/*
	 * A file: punch holes, which read back as zeros and free the space. A
	 * block device: ZERO_RANGE, which the kernel carries out with the
	 * device's write-zeroes or unmap, or by writing zeros. Metadata on a
	 * block device is rarely sector-aligned, so it is zeroed by writing.
	 */
	disk->data_zero_mode = disk->blockdev ? FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE :
						FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	disk->data_falloc = true;
	disk->md_falloc = !disk->blockdev;
}

int
bdev_file_create(const struct bdev_file_opts *opts, struct bdev **bdev_out, char *msg,
		 size_t msg_len)
{
	struct file_create st = { 0 };
	struct file_disk *disk;
	uint8_t uuid[16];
	char local[256];
	int rc;

	if (msg == NULL || msg_len == 0) {
		msg = local;
		msg_len = sizeof(local);
	}
	msg[0] = '\0';
	rc = check_opts(opts, uuid, msg, msg_len);
	if (rc != 0) {
		goto out_log;
	}
	if (bdev_get_by_name(opts->name) != NULL) {
		file_set_msg(msg, msg_len, "bdev '%s' already exists", opts->name);
		rc = -EEXIST;
		goto out_log;
	}
	rc = uring_check(msg, msg_len);
	if (rc != 0) {
		goto out_log;
	}
	if (g_file_zero_buf == NULL) {
		g_file_zero_buf = env_dma_zmalloc(FILE_ZERO_BUF_SIZE, 4096);
		if (g_file_zero_buf == NULL) {
			file_set_msg(msg, msg_len, "cannot allocate the zero buffer");
			rc = -ENOMEM;
			goto out_log;
		}
	}

	disk = calloc(1, sizeof(*disk));
	if (disk == NULL) {
		file_set_msg(msg, msg_len, "out of memory");
		rc = -ENOMEM;
		goto out_log;
	}
	disk->fd = -1;
	disk->dfd = -1;
	disk->bdev.name = strdup(opts->name);
	if (disk->bdev.name == NULL) {
		file_set_msg(msg, msg_len, "out of memory");
		rc = -ENOMEM;
		goto out_free_disk;
	}
	rc = open_target(disk, opts, &st, msg, msg_len);
	if (rc != 0) {
		goto out_free_disk;
	}
	rc = set_geometry(disk, opts, &st, uuid, msg, msg_len);
	if (rc != 0) {
		goto out_free_disk;
	}
	open_data_fd(disk, &st);
	set_io_params(disk);
	rc = prepare_file(disk, &st, msg, msg_len);
	if (rc != 0) {
		goto out_restore_file;
	}

	disk->bdev.product_name = disk->blockdev ? "File bdev (block device)" : "File bdev";
	disk->bdev.block_size = disk->block_size;
	disk->bdev.md_size = disk->md_size;
	disk->bdev.num_blocks = disk->num_blocks;
	/* Buffers aligned like this skip the bounce (only possible without metadata). */
	disk->bdev.buf_align = disk->direct && disk->md_size == 0 ? disk->dio_mem_align : 0;
	memcpy(disk->bdev.uuid, st.uuid, 16);
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &file_fn_table;
	disk->bdev.module = &file_module;

	io_device_register(disk, file_channel_create, file_channel_destroy, file_channel_ctx_size(),
			   disk->bdev.name);
	rc = bdev_register(&disk->bdev);
	if (rc != 0) {
		file_set_msg(msg, msg_len, "register failed: %s", strerror(-rc));
		io_device_unregister(disk, NULL);
		goto out_restore_file;
	}
	NOTICELOG("file bdev '%s': '%s', %" PRIu64 " blocks of %" PRIu32 " + %" PRIu32
		  " bytes, %s I/O%s\n",
		  disk->bdev.name, disk->filename, disk->num_blocks, disk->block_size,
		  disk->md_size, disk->direct ? "direct" : "buffered",
		  st.created ? ", new file" :
		  st.format  ? ", formatted" :
			       "");
	if (bdev_out != NULL) {
		*bdev_out = &disk->bdev;
	}
	return 0;

out_restore_file:
	restore_file(disk, &st);
out_free_disk:
	file_disk_free(disk);
	if (st.created && unlink(opts->filename) != 0) {
		ERRLOG("file bdev '%s': cannot remove '%s' again: %s\n", opts->name, opts->filename,
		       strerror(errno));
	}
out_log:
	ERRLOG("file bdev '%s': %s\n", opts->name != NULL ? opts->name : "(unnamed)", msg);
	return rc;
}
