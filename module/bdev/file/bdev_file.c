/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File bdev: module, channels and the I/O path (see bdev_file.h; opening
 * and formatting the file is in bdev_file_create.c).
 *
 * Each thread's channel owns an io_uring. submit_request only prepares SQEs
 * (or queues the I/O when the ring or the bounce buffers are taken); the
 * channel's poller reaps completions, starts queued I/O and then submits
 * everything prepared with one io_uring_submit(). The ring signals an
 * eventfd watched by the thread, so the poller can report idle while I/O is
 * in flight: a reactor that falls asleep is woken by the completion.
 *
 * Per-I/O state lives in bdev_io->driver_ctx, the bounce buffers are carved
 * out of one arena allocation per channel, and nothing on the I/O path
 * allocates or locks.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <liburing.h>

#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/log.h"

#include "bdev_file.h"
#include "bdev_file_internal.h"

#define FILE_RING_DEPTH      256u
#define FILE_CQE_BATCH       32u
/* Larger direct I/O runs through the bounce buffers: a CQE result is an int. */
#define FILE_MAX_PASSTHROUGH (1u << 30)

/* The low bits of an SQE's user_data say which descriptor it went to. */
#define FILE_TAG_DATA 0u
#define FILE_TAG_MD   1u
#define FILE_TAG_MASK 1u

/* Parts of a zeroing I/O. */
#define FILE_PART_DATA 0x1u
#define FILE_PART_MD   0x2u

enum file_io_phase {
	FILE_IO_PASSTHROUGH, /* data read/written straight from the caller's iovecs */
	FILE_IO_BOUNCE,      /* chunks through a bounce buffer */
	FILE_IO_FLUSH,
	FILE_IO_ZERO_FALLOC, /* fallocate of the data and/or metadata range */
	FILE_IO_ZERO_WRITE,  /* chunks of writes from the zero buffer */
};

/* Per-I/O context in bdev_io->driver_ctx. */
struct file_io {
	TAILQ_ENTRY(file_io) link; /* in a wait queue of the channel */
	uint8_t *bounce;
	struct io_channel_iter *reset_iter;
	uint32_t bounce_blocks; /* blocks the bounce buffer holds */
	uint8_t bounce_class;
	uint64_t done_blocks; /* blocks finished by earlier chunks */
	size_t iov_off;       /* cursor in the caller's iovecs (bounce) */
	int iov_idx;
	int err;               /* first error, negative errno */
	uint32_t chunk_blocks; /* blocks of the chunk in flight */
	uint32_t data_len;     /* bytes expected from the data SQE */
	uint32_t md_len;       /* bytes expected from the metadata SQE */
	uint8_t pending;       /* SQEs in flight */
	uint8_t phase;         /* enum file_io_phase */
	uint8_t zero_parts;    /* FILE_PART_* left to zero by writing */
};

TAILQ_HEAD(file_io_list, file_io);

struct file_channel {
	struct file_disk *disk;
	struct io_uring ring;
	int efd;
	struct fd_event *efd_event;
	struct poller *poller;
	uint32_t inflight;    /* SQEs prepared or submitted, not yet reaped */
	uint64_t outstanding; /* bdev I/Os accepted, not completed (resets aside) */
	uint8_t *bounce_mem;  /* every element of both classes */
	uint8_t **bounce_free[FILE_BOUNCE_CLASSES];
	uint32_t bounce_avail[FILE_BOUNCE_CLASSES];
	struct file_io_list start_wait; /* new I/O waiting for ring room or a bounce buffer */
	struct file_io_list step_wait;  /* next chunks of started I/O waiting for ring room */
	struct file_io_list drain_wait; /* resets waiting for `outstanding` to reach 0 */
};

uint8_t *g_file_zero_buf;
bool g_file_force_buffered;

static inline struct file_io *
file_io_ctx(struct bdev_io *io)
{
	return (struct file_io *)io->driver_ctx;
}

static inline struct bdev_io *
fio_io(struct file_io *fio)
{
	return bdev_io_from_ctx(fio);
}

/*
 * Copying between the caller's interleaved buffer and a bounce buffer. The
 * cursor (iov_idx, iov_off) carries over from one chunk to the next.
 */
static void
cursor_copy_out(struct file_io *fio, const struct bdev_io *io, uint8_t *dst, size_t len)
{
	while (len > 0 && fio->iov_idx < io->u.iovcnt) {
		const struct iovec *iov = &io->u.iovs[fio->iov_idx];
		size_t n = GGA_MIN(len, iov->iov_len - fio->iov_off);

		memcpy(dst, (const uint8_t *)iov->iov_base + fio->iov_off, n);
		dst += n;
		len -= n;
		fio->iov_off += n;
		if (fio->iov_off == iov->iov_len) {
			fio->iov_idx++;
			fio->iov_off = 0;
		}
	}
}

static void
cursor_copy_in(struct file_io *fio, const struct bdev_io *io, const uint8_t *src, size_t len)
{
	while (len > 0 && fio->iov_idx < io->u.iovcnt) {
		const struct iovec *iov = &io->u.iovs[fio->iov_idx];
		size_t n = GGA_MIN(len, iov->iov_len - fio->iov_off);

		memcpy((uint8_t *)iov->iov_base + fio->iov_off, src, n);
		src += n;
		len -= n;
		fio->iov_off += n;
		if (fio->iov_off == iov->iov_len) {
			fio->iov_idx++;
			fio->iov_off = 0;
		}
	}
}

/* Split a chunk of the caller's blocks into the bounce buffer's data and metadata areas. */
static void
bounce_gather(struct file_disk *disk, struct file_io *fio, const struct bdev_io *io)
{
	uint8_t *data = fio->bounce;
	uint8_t *md = fio->bounce + (size_t)fio->bounce_blocks * disk->block_size;
	uint32_t i;

	if (disk->md_size == 0) {
		cursor_copy_out(fio, io, data, (size_t)fio->chunk_blocks * disk->block_size);
		return;
	}
	for (i = 0; i < fio->chunk_blocks; i++) {
		cursor_copy_out(fio, io, data + (size_t)i * disk->block_size, disk->block_size);
		cursor_copy_out(fio, io, md + (size_t)i * disk->md_size, disk->md_size);
	}
}

static void
bounce_scatter(struct file_disk *disk, struct file_io *fio, const struct bdev_io *io)
{
	const uint8_t *data = fio->bounce;
	const uint8_t *md = fio->bounce + (size_t)fio->bounce_blocks * disk->block_size;
	uint32_t i;

	if (disk->md_size == 0) {
		cursor_copy_in(fio, io, data, (size_t)fio->chunk_blocks * disk->block_size);
		return;
	}
	for (i = 0; i < fio->chunk_blocks; i++) {
		cursor_copy_in(fio, io, data + (size_t)i * disk->block_size, disk->block_size);
		cursor_copy_in(fio, io, md + (size_t)i * disk->md_size, disk->md_size);
	}
}

/* Can the caller's iovecs go to the data descriptor as they are? */
static bool
can_pass_through(const struct file_disk *disk, const struct bdev_io *io)
{
	uint64_t len = io->u.num_blocks * disk->block_size;
	int i;

	if (disk->md_size != 0 || len > FILE_MAX_PASSTHROUGH || io->u.iovcnt > IOV_MAX) {
		return false;
	}
	if (!disk->direct) {
		return true;
	}
	for (i = 0; i < io->u.iovcnt; i++) {
		if (((uintptr_t)io->u.iovs[i].iov_base & (disk->dio_mem_align - 1)) != 0 ||
		    (io->u.iovs[i].iov_len & (disk->dio_len_align - 1)) != 0) {
			return false;
		}
	}
	return true;
}

/* The ranges a zeroing I/O covers. */
static inline uint32_t
all_parts(const struct file_disk *disk)
{
	return disk->md_size != 0 ? FILE_PART_DATA | FILE_PART_MD : FILE_PART_DATA;
}

static uint32_t
zero_chunk_blocks(const struct file_disk *disk)
{
	return FILE_ZERO_BUF_SIZE / disk->block_size;
}

/* SQEs the next step of this I/O needs. */
static uint32_t
step_sqes(const struct file_disk *disk, const struct file_io *fio)
{
	switch (fio->phase) {
	case FILE_IO_PASSTHROUGH:
		return 1;
	case FILE_IO_BOUNCE:
		return disk->md_size != 0 ? 2 : 1;
	case FILE_IO_FLUSH:
		return disk->md_size != 0 && disk->dfd != disk->fd ? 2 : 1;
	case FILE_IO_ZERO_FALLOC:
		return (uint32_t)__builtin_popcount(all_parts(disk) & ~fio->zero_parts);
	case FILE_IO_ZERO_WRITE:
		return (uint32_t)__builtin_popcount(fio->zero_parts);
	}
	return 1;
}

static inline struct io_uring_sqe *
get_sqe(struct file_channel *ch, struct file_io *fio, uint32_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ch->ring);

	/* Room was checked: inflight never exceeds the ring's depth. */
	assert(sqe != NULL);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)fio | tag);
	return sqe;
}

/* Prepare the SQEs of the I/O's next step; io_uring_submit() comes from the poller. */
static void
step_submit(struct file_channel *ch, struct file_io *fio)
{
	struct file_disk *disk = ch->disk;
	struct bdev_io *io = fio_io(fio);
	uint64_t lba = io->u.offset_blocks + fio->done_blocks;
	uint64_t left = io->u.num_blocks - fio->done_blocks;
	uint64_t data_off = disk->data_offset + lba * disk->block_size;
	uint64_t md_off = disk->md_offset + lba * disk->md_size;
	bool read = io->type == BDEV_IO_TYPE_READ;
	struct io_uring_sqe *sqe;
	uint8_t *md_buf;
	uint32_t n = step_sqes(disk, fio);

	switch (fio->phase) {
	case FILE_IO_PASSTHROUGH:
		fio->data_len = (uint32_t)(io->u.num_blocks * disk->block_size);
		sqe = get_sqe(ch, fio, FILE_TAG_DATA);
		if (io->u.iovcnt == 1 && read) {
			io_uring_prep_read(sqe, disk->dfd, io->u.iovs[0].iov_base, fio->data_len,
					   data_off);
		} else if (io->u.iovcnt == 1) {
			io_uring_prep_write(sqe, disk->dfd, io->u.iovs[0].iov_base, fio->data_len,
					    data_off);
		} else if (read) {
			io_uring_prep_readv(sqe, disk->dfd, io->u.iovs, (unsigned)io->u.iovcnt,
					    data_off);
		} else {
			io_uring_prep_writev(sqe, disk->dfd, io->u.iovs, (unsigned)io->u.iovcnt,
					     data_off);
		}
		break;
	case FILE_IO_BOUNCE:
		fio->chunk_blocks = (uint32_t)GGA_MIN(left, (uint64_t)fio->bounce_blocks);
		fio->data_len = fio->chunk_blocks * disk->block_size;
		fio->md_len = fio->chunk_blocks * disk->md_size;
		md_buf = fio->bounce + (size_t)fio->bounce_blocks * disk->block_size;
		if (!read) {
			bounce_gather(disk, fio, io);
		}
		sqe = get_sqe(ch, fio, FILE_TAG_DATA);
		if (read) {
			io_uring_prep_read(sqe, disk->dfd, fio->bounce, fio->data_len, data_off);
		} else {
			io_uring_prep_write(sqe, disk->dfd, fio->bounce, fio->data_len, data_off);
		}
		if (disk->md_size != 0) {
			sqe = get_sqe(ch, fio, FILE_TAG_MD);
			if (read) {
				io_uring_prep_read(sqe, disk->fd, md_buf, fio->md_len, md_off);
			} else {
				io_uring_prep_write(sqe, disk->fd, md_buf, fio->md_len, md_off);
			}
		}
		break;
	case FILE_IO_FLUSH:
		sqe = get_sqe(ch, fio, FILE_TAG_DATA);
		io_uring_prep_fsync(sqe, disk->dfd, IORING_FSYNC_DATASYNC);
		if (n == 2) {
			sqe = get_sqe(ch, fio, FILE_TAG_MD);
			io_uring_prep_fsync(sqe, disk->fd, IORING_FSYNC_DATASYNC);
		}
		break;
	case FILE_IO_ZERO_FALLOC:
		/* The parts not in zero_parts are the ones fallocate handles. */
		if (!(fio->zero_parts & FILE_PART_DATA)) {
			sqe = get_sqe(ch, fio, FILE_TAG_DATA);
			io_uring_prep_fallocate(sqe, disk->dfd, disk->data_zero_mode,
						(off_t)data_off, (off_t)(left * disk->block_size));
		}
		if (disk->md_size != 0 && !(fio->zero_parts & FILE_PART_MD)) {
			sqe = get_sqe(ch, fio, FILE_TAG_MD);
			io_uring_prep_fallocate(sqe, disk->fd,
						FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						(off_t)md_off, (off_t)(left * disk->md_size));
		}
		break;
	case FILE_IO_ZERO_WRITE:
		fio->chunk_blocks = (uint32_t)GGA_MIN(left, (uint64_t)zero_chunk_blocks(disk));
		fio->data_len = fio->chunk_blocks * disk->block_size;
		fio->md_len = fio->chunk_blocks * disk->md_size;
		if (fio->zero_parts & FILE_PART_DATA) {
			sqe = get_sqe(ch, fio, FILE_TAG_DATA);
			io_uring_prep_write(sqe, disk->dfd, g_file_zero_buf, fio->data_len,
					    data_off);
		}
		if (fio->zero_parts & FILE_PART_MD) {
			sqe = get_sqe(ch, fio, FILE_TAG_MD);
			io_uring_prep_write(sqe, disk->fd, g_file_zero_buf, fio->md_len, md_off);
		}
		break;
	}
	fio->pending = (uint8_t)n;
	ch->inflight += n;
}

static inline bool
ring_has_room(const struct file_channel *ch, uint32_t n)
{
	return ch->inflight + n <= FILE_RING_DEPTH;
}

static bool
can_start(const struct file_channel *ch, const struct file_io *fio)
{
	if (fio->phase == FILE_IO_BOUNCE && ch->bounce_avail[FILE_BOUNCE_CLASS_SMALL] == 0 &&
	    ch->bounce_avail[FILE_BOUNCE_CLASS_LARGE] == 0) {
		return false;
	}
	return ring_has_room(ch, step_sqes(ch->disk, fio));
}

static void
start(struct file_channel *ch, struct file_io *fio)
{
	struct file_disk *disk = ch->disk;
	uint32_t c;

	if (fio->phase == FILE_IO_BOUNCE) {
		/* The class that fits, else the other rather than wait. */
		c = fio_io(fio)->u.num_blocks <= disk->bounce[FILE_BOUNCE_CLASS_SMALL].blocks ?
			    FILE_BOUNCE_CLASS_SMALL :
			    FILE_BOUNCE_CLASS_LARGE;
		if (ch->bounce_avail[c] == 0) {
			c ^= 1;
		}
		fio->bounce_class = (uint8_t)c;
		fio->bounce_blocks = disk->bounce[c].blocks;
		fio->bounce = ch->bounce_free[c][--ch->bounce_avail[c]];
	}
	step_submit(ch, fio);
}

/* The next chunk of an I/O that holds its resources: ahead of anything new. */
static void
step_continue(struct file_channel *ch, struct file_io *fio)
{
	if (TAILQ_EMPTY(&ch->step_wait) && ring_has_room(ch, step_sqes(ch->disk, fio))) {
		step_submit(ch, fio);
	} else {
		TAILQ_INSERT_TAIL(&ch->step_wait, fio, link);
	}
}

/* Start what waits, in order, as far as the ring and the bounce buffers allow. */
static int
run_wait_queues(struct file_channel *ch)
{
	struct file_io *fio;
	int started = 0;

	while ((fio = TAILQ_FIRST(&ch->step_wait)) != NULL &&
	       ring_has_room(ch, step_sqes(ch->disk, fio))) {
		TAILQ_REMOVE(&ch->step_wait, fio, link);
		step_submit(ch, fio);
		started++;
	}
	/* Chunks of started I/O go first: they hold bounce buffers new I/O may wait for. */
	if (!TAILQ_EMPTY(&ch->step_wait)) {
		return started;
	}
	while ((fio = TAILQ_FIRST(&ch->start_wait)) != NULL && can_start(ch, fio)) {
		TAILQ_REMOVE(&ch->start_wait, fio, link);
		start(ch, fio);
		started++;
	}
	return started;
}

static void
drain_done(struct file_channel *ch)
{
	struct file_io *fio;

	while ((fio = TAILQ_FIRST(&ch->drain_wait)) != NULL) {
		TAILQ_REMOVE(&ch->drain_wait, fio, link);
		io_channel_iter_continue(fio->reset_iter, 0);
	}
}

static void
finish(struct file_channel *ch, struct file_io *fio)
{
	struct bdev_io *io = fio_io(fio);
	uint32_t c = fio->bounce_class;
	int err = fio->err;

	if (fio->bounce != NULL) {
		ch->bounce_free[c][ch->bounce_avail[c]++] = fio->bounce;
		fio->bounce = NULL;
	}
	if (unlikely(err != 0)) {
		ERRLOG("file bdev '%s': %s of %" PRIu64 " blocks at %" PRIu64 " failed: %s\n",
		       io->bdev->name, bdev_io_type_name(io->type), io->u.num_blocks,
		       io->u.offset_blocks, strerror(-err));
		if (__atomic_fetch_add(&ch->disk->media_errors, 1, __ATOMIC_RELAXED) == 0) {
			bdev_notify_health_changed(&ch->disk->bdev);
		}
	}
	ch->outstanding--;
	bdev_io_complete(io, err == 0 ? BDEV_IO_STATUS_SUCCESS : BDEV_IO_STATUS_FAILED);
	if (ch->outstanding == 0 && !TAILQ_EMPTY(&ch->drain_wait)) {
		drain_done(ch);
	}
}

/* All SQEs of the current step are back. */
static void
step_done(struct file_channel *ch, struct file_io *fio)
{
	struct bdev_io *io = fio_io(fio);

	if (fio->err != 0) {
		finish(ch, fio);
		return;
	}
	switch (fio->phase) {
	case FILE_IO_BOUNCE:
		if (io->type == BDEV_IO_TYPE_READ) {
			bounce_scatter(ch->disk, fio, io);
		}
		/* Fall through. */
	case FILE_IO_ZERO_WRITE:
		fio->done_blocks += fio->chunk_blocks;
		if (fio->done_blocks < io->u.num_blocks) {
			step_continue(ch, fio);
			return;
		}
		break;
	case FILE_IO_ZERO_FALLOC:
		if (fio->zero_parts != 0) {
			/* Some range could not be fallocated: write zeros over it instead. */
			fio->phase = FILE_IO_ZERO_WRITE;
			fio->done_blocks = 0;
			step_continue(ch, fio);
			return;
		}
		break;
	default:
		break;
	}
	finish(ch, fio);
}

static void
falloc_failed(struct file_disk *disk, struct file_io *fio, uint32_t tag, int res)
{
	bool *flag = tag == FILE_TAG_DATA ? &disk->data_falloc : &disk->md_falloc;

	/*
	 * Not supported here: stop trying for this disk. Any other failure
	 * (EBUSY from a block device's page cache, say) only sends this I/O
	 * down the zero-writing path.
	 */
	if ((res == -EOPNOTSUPP || res == -EINVAL) && __atomic_load_n(flag, __ATOMIC_RELAXED)) {
		__atomic_store_n(flag, false, __ATOMIC_RELAXED);
		NOTICELOG("file bdev '%s': fallocate of the %s range is not supported (%s); "
			  "writing zeros instead\n",
			  disk->bdev.name, tag == FILE_TAG_DATA ? "data" : "metadata",
			  strerror(-res));
	}
	fio->zero_parts |= tag == FILE_TAG_DATA ? FILE_PART_DATA : FILE_PART_MD;
}

static void
cqe_done(struct file_channel *ch, uint64_t user_data, int res)
{
	struct file_io *fio = (struct file_io *)(uintptr_t)(user_data & ~(uint64_t)FILE_TAG_MASK);
	uint32_t tag = (uint32_t)(user_data & FILE_TAG_MASK);
	uint32_t expect;

	ch->inflight--;
	fio->pending--;
	switch (fio->phase) {
	case FILE_IO_ZERO_FALLOC:
		if (res < 0) {
			falloc_failed(ch->disk, fio, tag, res);
		}
		break;
	case FILE_IO_FLUSH:
		if (res < 0 && fio->err == 0) {
			fio->err = res;
		}
		break;
	default:
		expect = tag == FILE_TAG_DATA ? fio->data_len : fio->md_len;
		if (res < 0) {
			if (fio->err == 0) {
				fio->err = res;
			}
		} else if ((uint32_t)res != expect && fio->err == 0) {
			/* Only past the end of a file someone truncated under us. */
			ERRLOG("file bdev '%s': short %s: %d of %" PRIu32 " bytes\n",
			       ch->disk->bdev.name, tag == FILE_TAG_DATA ? "data" : "metadata", res,
			       expect);
			fio->err = -EIO;
		}
		break;
	}
	if (fio->pending == 0) {
		step_done(ch, fio);
	}
}

/* Reap every completion; the CQ ring is advanced before any callback runs. */
static int
reap(struct file_channel *ch)
{
	struct io_uring_cqe *cqes[FILE_CQE_BATCH];
	uint64_t data[FILE_CQE_BATCH];
	int res[FILE_CQE_BATCH];
	unsigned n, i;
	int total = 0;

	do {
		n = io_uring_peek_batch_cqe(&ch->ring, cqes, FILE_CQE_BATCH);
		for (i = 0; i < n; i++) {
			data[i] = io_uring_cqe_get_data64(cqes[i]);
			res[i] = cqes[i]->res;
		}
		io_uring_cq_advance(&ch->ring, n);
		for (i = 0; i < n; i++) {
			cqe_done(ch, data[i], res[i]);
		}
		total += (int)n;
	} while (n == FILE_CQE_BATCH);
	return total;
}

static int
channel_process(struct file_channel *ch)
{
	int busy, rc;

	busy = reap(ch);
	if (!TAILQ_EMPTY(&ch->step_wait) || !TAILQ_EMPTY(&ch->start_wait)) {
		busy += run_wait_queues(ch);
	}
	if (io_uring_sq_ready(&ch->ring) > 0) {
		rc = io_uring_submit(&ch->ring);
		if (unlikely(rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)) {
			/* The SQEs stay in the ring and go with the next attempt. */
			ERRLOG("file bdev '%s': io_uring_submit failed: %s\n", ch->disk->bdev.name,
			       strerror(-rc));
		}
		busy++;
	}
	return busy;
}

static int
file_channel_poll(void *ctx)
{
	struct file_channel *ch = ctx;

	/* Nothing in flight and nothing waiting: the common idle case, no system call. */
	if (ch->inflight == 0 && TAILQ_EMPTY(&ch->start_wait) && TAILQ_EMPTY(&ch->step_wait)) {
		return POLLER_IDLE;
	}
	return channel_process(ch) > 0 ? POLLER_BUSY : POLLER_IDLE;
}

static int
file_channel_event(void *ctx, uint32_t events)
{
	struct file_channel *ch = ctx;
	uint64_t count;

	/* Clear the eventfd; the completions themselves are in the CQ ring. */
	if (read(ch->efd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
		ERRLOG("file bdev '%s': reading the completion eventfd failed: %s\n",
		       ch->disk->bdev.name, strerror(errno));
	}
	return channel_process(ch);
}

/*
 * Reset: nothing is aborted; each channel is visited once the I/O it has
 * outstanding has completed.
 */
static void
reset_drain_channel(struct io_channel_iter *i)
{
	struct file_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	struct bdev_io *io = io_channel_iter_get_ctx(i);
	struct file_io *fio = file_io_ctx(io);

	if (ch->outstanding == 0) {
		io_channel_iter_continue(i, 0);
		return;
	}
	fio->reset_iter = i;
	TAILQ_INSERT_TAIL(&ch->drain_wait, fio, link);
}

static void
reset_drained(struct io_channel_iter *i, int status)
{
	bdev_io_complete(io_channel_iter_get_ctx(i), BDEV_IO_STATUS_SUCCESS);
}

static void
file_submit_request(struct io_channel *_ch, struct bdev_io *io)
{
	struct file_channel *ch = io_channel_get_ctx(_ch);
	struct file_disk *disk = ch->disk;
	struct file_io *fio = file_io_ctx(io);
	uint8_t falloc_parts;

	fio->bounce = NULL;
	fio->done_blocks = 0;
	fio->iov_idx = 0;
	fio->iov_off = 0;
	fio->err = 0;
	fio->pending = 0;
	fio->zero_parts = 0;

	switch (io->type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
		fio->phase = can_pass_through(disk, io) ? FILE_IO_PASSTHROUGH : FILE_IO_BOUNCE;
		break;
	case BDEV_IO_TYPE_FLUSH:
		fio->phase = FILE_IO_FLUSH;
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
		/* zero_parts: what fallocate will not cover and zeros must be written over. */
		falloc_parts = 0;
		if (__atomic_load_n(&disk->data_falloc, __ATOMIC_RELAXED)) {
			falloc_parts |= FILE_PART_DATA;
		}
		if (disk->md_size != 0 && __atomic_load_n(&disk->md_falloc, __ATOMIC_RELAXED)) {
			falloc_parts |= FILE_PART_MD;
		}
		fio->zero_parts = (uint8_t)(all_parts(disk) & ~falloc_parts);
		fio->phase = falloc_parts != 0 ? FILE_IO_ZERO_FALLOC : FILE_IO_ZERO_WRITE;
		break;
	case BDEV_IO_TYPE_RESET:
		io_device_for_each_channel(disk, reset_drain_channel, io, reset_drained);
		return;
	default:
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		return;
	}

	ch->outstanding++;
	if (likely(TAILQ_EMPTY(&ch->start_wait) && can_start(ch, fio))) {
		start(ch, fio);
	} else {
		TAILQ_INSERT_TAIL(&ch->start_wait, fio, link);
	}
}

static bool
file_io_type_supported(void *ctxt, enum bdev_io_type type)
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
file_get_io_channel(void *ctxt)
{
	return io_channel_get(ctxt);
}

static void
file_disk_unregistered(void *io_device)
{
	struct file_disk *disk = io_device;

	/* Every channel, and with it every ring, is gone: the descriptors can close. */
	bdev_destruct_done(&disk->bdev, 0);
	file_disk_free(disk);
}

static int
file_destruct(void *ctxt)
{
	struct file_disk *disk = ctxt;

	io_device_unregister(disk, file_disk_unregistered);
	return 1;
}

static void
file_dump_info_json(void *ctxt, json_t *info)
{
	struct file_disk *disk = ctxt;

	json_object_set_new(info, "file",
			    json_pack("{s:s, s:b, s:b, s:b, s:i, s:I, s:I}", "filename",
				      disk->filename, "block_device", disk->blockdev, "direct_io",
				      disk->direct, "formatted", disk->formatted, "md_size",
				      (int)disk->md_size, "data_offset",
				      (json_int_t)disk->data_offset, "md_offset",
				      (json_int_t)disk->md_offset));
}

static void
file_write_config_json(struct bdev *bdev, json_t *config)
{
	struct file_disk *disk = bdev->ctxt;
	json_t *params;

	/* The file exists by now: a replay must find it, never create an empty one. */
	params = json_pack("{s:s, s:s, s:i, s:i, s:I, s:s, s:b}", "name", bdev_get_name(bdev),
			   "filename", disk->filename, "block_size", (int)bdev_get_block_size(bdev),
			   "md_size", (int)bdev_get_md_size(bdev), "num_blocks",
			   (json_int_t)bdev_get_num_blocks(bdev), "uuid", bdev_get_uuid_str(bdev),
			   "create", 0);
	if (params == NULL) {
		ERRLOG("file bdev '%s': out of memory writing its configuration\n",
		       bdev_get_name(bdev));
		return;
	}
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", "bdev_file_create",
						"params", params));
}

static void
file_get_health(void *ctxt, struct bdev_health *health)
{
	const struct file_disk *disk = ctxt;

	health->media_errors = __atomic_load_n(&disk->media_errors, __ATOMIC_RELAXED);
	health->degraded = health->media_errors > 0;
}

const struct bdev_fn_table file_fn_table = {
	.get_health = file_get_health,
	.destruct = file_destruct,
	.submit_request = file_submit_request,
	.io_type_supported = file_io_type_supported,
	.get_io_channel = file_get_io_channel,
	.dump_info_json = file_dump_info_json,
	.write_config_json = file_write_config_json,
};

uint32_t
file_channel_ctx_size(void)
{
	return sizeof(struct file_channel);
}

static void
bounce_free(struct file_channel *ch)
{
	uint32_t c;

	for (c = 0; c < FILE_BOUNCE_CLASSES; c++) {
		free(ch->bounce_free[c]);
		ch->bounce_free[c] = NULL;
	}
	env_dma_free(ch->bounce_mem);
	ch->bounce_mem = NULL;
}

/* Both classes of bounce buffers in one arena allocation, with their free stacks. */
static int
bounce_alloc(struct file_channel *ch)
{
	const struct file_disk *disk = ch->disk;
	size_t total = 0, off = 0;
	uint32_t c, i;

	for (c = 0; c < FILE_BOUNCE_CLASSES; c++) {
		total += disk->bounce[c].count * disk->bounce[c].size;
	}
	if (total == 0) {
		return 0;
	}
	ch->bounce_mem = env_dma_malloc(total, 4096);
	if (ch->bounce_mem == NULL) {
		ERRLOG("file bdev '%s': cannot allocate %zu bytes of bounce buffers\n",
		       disk->bdev.name, total);
		return -ENOMEM;
	}
	for (c = 0; c < FILE_BOUNCE_CLASSES; c++) {
		ch->bounce_free[c] = calloc(disk->bounce[c].count + 1, sizeof(uint8_t *));
		if (ch->bounce_free[c] == NULL) {
			bounce_free(ch);
			return -ENOMEM;
		}
		for (i = 0; i < disk->bounce[c].count; i++) {
			ch->bounce_free[c][i] = ch->bounce_mem + off;
			off += disk->bounce[c].size;
		}
		ch->bounce_avail[c] = disk->bounce[c].count;
	}
	return 0;
}

int
file_channel_create(void *io_device, void *ctx_buf)
{
	struct file_disk *disk = io_device;
	struct file_channel *ch = ctx_buf;
	int rc;

	memset(ch, 0, sizeof(*ch));
	ch->disk = disk;
	TAILQ_INIT(&ch->start_wait);
	TAILQ_INIT(&ch->step_wait);
	TAILQ_INIT(&ch->drain_wait);

	rc = io_uring_queue_init(FILE_RING_DEPTH, &ch->ring, 0);
	if (rc < 0) {
		ERRLOG("file bdev '%s': io_uring_queue_init failed: %s\n", disk->bdev.name,
		       strerror(-rc));
		return rc;
	}
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->efd < 0) {
		rc = -errno;
		ERRLOG("file bdev '%s': eventfd failed: %s\n", disk->bdev.name, strerror(errno));
		goto out_exit_ring;
	}
	rc = io_uring_register_eventfd(&ch->ring, ch->efd);
	if (rc < 0) {
		ERRLOG("file bdev '%s': io_uring_register_eventfd failed: %s\n", disk->bdev.name,
		       strerror(-rc));
		goto out_close_efd;
	}
	ch->efd_event = thread_fd_register(ch->efd, THREAD_FD_IN, file_channel_event, ch,
					   "bdev_file");
	if (ch->efd_event == NULL) {
		rc = errno != 0 ? -errno : -ENOMEM;
		ERRLOG("file bdev '%s': cannot watch the completion eventfd\n", disk->bdev.name);
		goto out_close_efd;
	}
	ch->poller = poller_register(file_channel_poll, ch, 0, "bdev_file");
	if (ch->poller == NULL) {
		rc = -ENOMEM;
		ERRLOG("file bdev '%s': cannot register the channel poller\n", disk->bdev.name);
		goto out_unregister_fd;
	}
	rc = bounce_alloc(ch);
	if (rc != 0) {
		goto out_unregister_poller;
	}
	return 0;

out_unregister_poller:
	poller_unregister(&ch->poller);
out_unregister_fd:
	thread_fd_unregister(&ch->efd_event);
out_close_efd:
	close(ch->efd);
out_exit_ring:
	io_uring_queue_exit(&ch->ring);
	return rc;
}

void
file_channel_destroy(void *io_device, void *ctx_buf)
{
	struct file_channel *ch = ctx_buf;

	if (ch->inflight != 0 || ch->outstanding != 0) {
		/* The bdev layer waits for I/O before putting channels: this is a bug. */
		WARNLOG("file bdev '%s': channel destroyed with %" PRIu64 " I/Os outstanding\n",
			ch->disk->bdev.name, ch->outstanding);
	}
	poller_unregister(&ch->poller);
	thread_fd_unregister(&ch->efd_event);
	io_uring_queue_exit(&ch->ring);
	close(ch->efd);
	bounce_free(ch);
}

static size_t
file_get_ctx_size(void)
{
	return sizeof(struct file_io);
}

static void
file_module_fini(void)
{
	env_dma_free(g_file_zero_buf);
	g_file_zero_buf = NULL;
}

struct bdev_module file_module = {
	.name = "file",
	.module_fini = file_module_fini,
	.get_ctx_size = file_get_ctx_size,
};

int
bdev_file_delete(const char *name, bdev_file_delete_cb cb, void *cb_arg)
{
	if (name == NULL) {
		return -ENODEV;
	}
	return bdev_unregister_by_name(name, &file_module, cb, cb_arg);
}

void
bdev_file_module_register(void)
{
	bdev_module_register(&file_module);
	bdev_file_rpc_register();
}
