/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Block device layer: the API for users of bdevs (bdevperf, the NVMe-oF
 * target, virtual bdevs stacked on other bdevs).
 *
 * Geometry: a bdev has block_size data bytes per block, md_size metadata
 * bytes per block, and num_blocks blocks. Metadata is interleaved ("extended
 * LBA"): in every I/O buffer each block's md_size metadata bytes directly
 * follow its block_size data bytes, so a transfer of n blocks is
 * n * (block_size + md_size) bytes, bdev_get_buf_block_size() per block.
 *
 * Async contract: every submit call returns 0 and later calls its completion
 * callback exactly once, on the submitting thread and never from inside the
 * submit call itself; or it returns a negative errno and never calls it:
 *   -EINVAL  range beyond the end of the bdev, zero blocks, or buffer length
 *            not num_blocks * buf_block_size
 *   -EBADF   write-type I/O on a descriptor opened read-only
 *   -ENOTSUP the bdev does not support this I/O type
 *   -ENOMEM  no bdev_io available now; bdev_queue_io_wait() calls back when
 *            one is
 *   -ENODEV  the bdev is being removed
 * The completion callback must release the bdev_io with bdev_free_io().
 */
#ifndef GGA_BDEV_H
#define GGA_BDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include "gga/thread.h"

struct bdev;
struct bdev_desc;
struct bdev_io;

enum bdev_io_type {
	BDEV_IO_TYPE_INVALID = 0,
	BDEV_IO_TYPE_READ,
	BDEV_IO_TYPE_WRITE,
	BDEV_IO_TYPE_FLUSH,
	BDEV_IO_TYPE_WRITE_ZEROES,
	BDEV_IO_TYPE_UNMAP,
	BDEV_IO_TYPE_RESET,
	/* An NVMe reservation command (bdev_nvme_reservation()); NVMe bdevs only. */
	BDEV_IO_TYPE_NVME_RESV,
	BDEV_NUM_IO_TYPES,
};

const char *bdev_io_type_name(enum bdev_io_type type);

enum bdev_event_type {
	/* The bdev is going away: stop I/O, put channels, bdev_close(). */
	BDEV_EVENT_REMOVE,
	/*
	 * What the bdev serves may have changed under it (a remote controller
	 * reconnected: its target may have restarted on other media). Users
	 * that rely on the content (metadata they wrote) should check it again.
	 * Users that do not care ignore it, as any event they do not know.
	 */
	BDEV_EVENT_MEDIA_CHANGED,
	/*
	 * The bdev cannot serve I/O for now (a remote controller was lost and
	 * is reconnecting); BDEV_EVENT_MEDIA_CHANGED follows when it is back.
	 * Users that keep redundancy (a gga bdev) stop counting on it at once.
	 */
	BDEV_EVENT_OFFLINE,
	/*
	 * Whether this node may serve the bdev's I/O changed (bdev_is_accessible):
	 * a gga bdev shared by two fronts is served by the active one only. An
	 * NVMe-oF namespace turns its ANA state with it.
	 */
	BDEV_EVENT_ACCESS_CHANGED,
	/*
	 * What bdev_get_health reports changed (a gga bdev lost a member, or is
	 * whole again; a file bdev's writes began to fail). An NVMe-oF
	 * controller reports it in its SMART / Health log and raises an
	 * asynchronous event.
	 */
	BDEV_EVENT_HEALTH_CHANGED,
};

typedef void (*bdev_event_cb)(enum bdev_event_type type, struct bdev *bdev, void *ctx);
typedef void (*bdev_io_completion_cb)(struct bdev_io *io, bool success, void *cb_arg);

/*
 * Open a bdev by name. event_cb (required) runs on the opening thread when
 * the bdev is hot-removed. Returns 0, -ENODEV (no such bdev, or being
 * removed), -EPERM (write open of a bdev claimed by a module), -ENOMEM.
 */
int bdev_open(const char *name, bool write, bdev_event_cb event_cb, void *event_ctx,
	      struct bdev_desc **desc);
/* Close on the thread that opened it. All channels from it must be put. */
void bdev_close(struct bdev_desc *desc);
struct bdev *bdev_desc_get_bdev(struct bdev_desc *desc);

/* The calling thread's channel for I/O through `desc`; put with io_channel_put(). */
struct io_channel *bdev_get_io_channel(struct bdev_desc *desc);

/* Lookup and iteration (app thread). Iteration is in registration order. */
struct bdev *bdev_get_by_name(const char *name);
struct bdev *bdev_first(void);
struct bdev *bdev_next(struct bdev *prev);

const char *bdev_get_name(const struct bdev *bdev);
const char *bdev_get_product_name(const struct bdev *bdev);
const char *bdev_get_module_name(const struct bdev *bdev);
uint32_t bdev_get_block_size(const struct bdev *bdev);
uint32_t bdev_get_md_size(const struct bdev *bdev);
/* block_size + md_size: bytes each block occupies in an I/O buffer. */
uint32_t bdev_get_buf_block_size(const struct bdev *bdev);
uint64_t bdev_get_num_blocks(const struct bdev *bdev);
/* Required buffer alignment in bytes (1 = none). */
uint32_t bdev_get_buf_align(const struct bdev *bdev);
/* The bdev's UUID: its 16 bytes, and as a 36-character string (gga/uuid.h). */
const uint8_t *bdev_get_uuid(const struct bdev *bdev);
const char *bdev_get_uuid_str(const struct bdev *bdev);
bool bdev_is_claimed(const struct bdev *bdev);
/*
 * May this node serve the bdev's I/O now? False for a gga bdev whose front
 * is standby: its I/O fails with an ANA Inaccessible path status, which a
 * multipath host retries on another path. True for every other bdev.
 */
bool bdev_is_accessible(const struct bdev *bdev);

/*
 * A bdev's health as the NVMe SMART / Health log reports it (docs/NVME.md
 * says how a controller maps it). A bdev without a health of its own (malloc,
 * null, nvme) is whole: not degraded, spare 100, threshold 0, no errors.
 */
struct bdev_health {
	/*
	 * Its reliability is reduced: a gga bdev with a member lost, stale or
	 * being rebuilt, or blocks known unreadable; a file bdev whose I/O
	 * has failed.
	 */
	bool degraded;
	/* It refuses writes now (no module does yet). */
	bool read_only;
	/*
	 * Its redundancy left, 0..100: a gga bdev's share of members in sync;
	 * below spare_threshold_pct it has lost more than it can survive.
	 */
	uint8_t spare_pct;
	uint8_t spare_threshold_pct;
	/* Times data could not be read or written intact (undecodable blocks, failed media I/O). */
	uint64_t media_errors;
};

/* Fill *health for bdev (any thread). */
void bdev_get_health(const struct bdev *bdev, struct bdev_health *health);
/*
 * The space of a bdev. A thin bdev allocates a block when it is first
 * written and frees it on unmap (and write_zeroes); it may run out of space
 * before every block is written. A write that needs space when none is
 * left fails with NVMe generic status Capacity Exceeded (81h), which
 * bdev_io_get_errno gives as -ENOSPC; only that write fails: reads,
 * unmaps and overwrites of allocated blocks go on. A bdev that is not
 * thin (no get_space callback) has every block allocated.
 */
struct bdev_space {
	/* Blocks are allocated on write; the counts below mean something. */
	bool thin;
	/*
	 * Unmap and write_zeroes deallocate the blocks, and a deallocated
	 * block reads as zeros (NVMe DLFEAT 09h).
	 */
	bool dealloc_zeroes;
	/* Blocks allocated now (NVMe NUSE). */
	uint64_t used_blocks;
	/*
	 * The most blocks that can be allocated at once (NVMe NCAP): used
	 * plus those still free, at most num_blocks. For a bdev whose
	 * blocks take variable room (compressed), an estimate of the moment.
	 */
	uint64_t capacity_blocks;
};

/* Fill *space for bdev (any thread). Not thin: used = capacity = num_blocks. */
void bdev_get_space(const struct bdev *bdev, struct bdev_space *space);
/*
 * For messages, why the bdev called bdev_name cannot be claimed or opened
 * for writing: "is a base of another bdev (claimed by the gga module)", "is
 * open for writing elsewhere (an NVMe-oF namespace?)". A static buffer: app
 * thread, use before the next call.
 */
const char *bdev_busy_reason(const char *bdev_name);
bool bdev_io_type_supported(struct bdev *bdev, enum bdev_io_type type);

int bdev_read_blocks(struct bdev_desc *desc, struct io_channel *ch, void *buf,
		     uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		     void *cb_arg);
int bdev_readv_blocks(struct bdev_desc *desc, struct io_channel *ch, struct iovec *iov, int iovcnt,
		      uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		      void *cb_arg);
int bdev_write_blocks(struct bdev_desc *desc, struct io_channel *ch, void *buf,
		      uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		      void *cb_arg);
int bdev_writev_blocks(struct bdev_desc *desc, struct io_channel *ch, struct iovec *iov, int iovcnt,
		       uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		       void *cb_arg);
int bdev_write_zeroes_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
			     uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg);
int bdev_unmap_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
		      uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg);
int bdev_flush_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
		      uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg);
/* Abort everything outstanding on every channel of the bdev, then reset it. */
int bdev_reset(struct bdev_desc *desc, struct io_channel *ch, bdev_io_completion_cb cb,
	       void *cb_arg);

void bdev_free_io(struct bdev_io *io);

/*
 * NVMe reservations through the bdev layer (NVM Express Base Specification,
 * "Reservations"), for a user that arbitrates a shared namespace: a gga
 * bdev with two fronts fences the old one at its members (docs/DESIGN.md
 * section 1). The request is typed rather than a raw command so the layer
 * can check it and modules need not parse commands. The NVMe bdev sends it
 * on the path it would use for I/O; bdevs that are not NVMe namespaces do
 * not support BDEV_IO_TYPE_NVME_RESV (-ENOTSUP).
 */
enum bdev_nvme_resv_op {
	BDEV_NVME_RESV_REGISTER = 1, /* action: 0 register, 1 unregister, 2 replace */
	BDEV_NVME_RESV_ACQUIRE,      /* action: 0 acquire, 1 preempt, 2 preempt and abort */
	BDEV_NVME_RESV_RELEASE,      /* action: 0 release, 1 clear */
	BDEV_NVME_RESV_REPORT,       /* the extended data structure into buf */
};

struct bdev_nvme_resv_cmd {
	enum bdev_nvme_resv_op op;
	uint32_t action;
	uint32_t rtype; /* reservation type 1..6 (acquire, release) */
	bool iekey;
	uint32_t cptpl; /* register: 0 no change, 2 clear, 3 set persist through power loss */
	uint64_t crkey; /* the current key */
	uint64_t nrkey; /* register: the new key; acquire: the key to preempt */
	void *buf;      /* report: buffer of len bytes (>= 64, multiple of 4), live until cb */
	uint32_t len;
};

/*
 * Submit a reservation command (descriptor opened for writing). The
 * completion's NVMe status (bdev_io_get_nvme_status) is the target's: a
 * command the reservation forbids fails with Reservation Conflict (generic
 * 83h), which bdev_io_get_errno gives as -EBADE. Errors as the block calls:
 * -EINVAL (a field out of range), -EBADF, -ENOTSUP, -ENOMEM, -ENODEV.
 */
int bdev_nvme_reservation(struct bdev_desc *desc, struct io_channel *ch,
			  const struct bdev_nvme_resv_cmd *cmd, bdev_io_completion_cb cb,
			  void *cb_arg);

/*
 * After a submit returned -ENOMEM: queue `entry`; entry->cb_fn(cb_arg) runs
 * on this thread once a bdev_io has been freed on this channel. Fill bdev,
 * cb_fn and cb_arg first. Returns 0, or -EINVAL (a bdev_io is available now,
 * or the entry does not match the channel's bdev).
 */
struct bdev_io_wait_entry {
	struct bdev *bdev;
	msg_fn cb_fn;
	void *cb_arg;
	TAILQ_ENTRY(bdev_io_wait_entry) link;
};
int bdev_queue_io_wait(struct bdev *bdev, struct io_channel *ch, struct bdev_io_wait_entry *entry);

/*
 * Status of a completed I/O as an NVMe status (sct, sc): success is 0/0, and
 * generic failures map to Generic Command Status / Internal Error (0x06),
 * aborts to Command Abort Requested (0x07).
 */
void bdev_io_get_nvme_status(const struct bdev_io *io, int *sct, int *sc);
/* Status of a completed I/O as 0 or a negative errno (-EIO, -ECANCELED, ...). */
int bdev_io_get_errno(const struct bdev_io *io);

/* Per-bdev I/O statistics, summed over all channels, live and gone. */
struct bdev_io_stat {
	uint64_t bytes_read;
	uint64_t num_read_ops;
	uint64_t bytes_written;
	uint64_t num_write_ops;
	uint64_t bytes_unmapped;
	uint64_t num_unmap_ops;
	uint64_t num_write_zeroes_ops;
	uint64_t num_flush_ops;
	uint64_t num_reset_ops;
	uint64_t num_failed_ops;
	uint64_t read_latency_ticks; /* sums; divide by ops for the mean */
	uint64_t write_latency_ticks;
	uint64_t unmap_latency_ticks;
	uint64_t max_read_latency_ticks;
	uint64_t max_write_latency_ticks;
	uint64_t min_read_latency_ticks; /* UINT64_MAX when no reads */
	uint64_t min_write_latency_ticks;
};

typedef void (*bdev_get_iostat_cb)(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg,
				   int rc);
/*
 * Fill *stat with the bdev's statistics, visiting each channel on its thread;
 * cb runs on the calling thread when done. *stat must stay valid until then.
 */
void bdev_get_iostat(struct bdev *bdev, struct bdev_io_stat *stat, bdev_get_iostat_cb cb,
		     void *cb_arg);

#endif /* GGA_BDEV_H */
