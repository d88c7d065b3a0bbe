/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * State shared by the files of the gga bdev: bdev_gga.c (module, create,
 * assemble, superblocks, generations, channels, delete), bdev_gga_io.c (the
 * I/O state machine) and bdev_gga_rpc.c.
 */
#ifndef GGA_BDEV_GGA_INTERNAL_H
#define GGA_BDEV_GGA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/thread.h"

#include "bdev_gga.h"
#include "gga_codec.h"

/*
 * Logical bytes a request is processed in at most at once ("chunk"): one
 * member I/O per member per chunk. Requests up to GGA_SMALL_CHUNK_BYTES take
 * their member buffers from a pool of small elements, larger ones from a pool
 * of chunk-sized elements.
 */
#define GGA_CHUNK_BYTES		(128u * 1024)
#define GGA_SMALL_CHUNK_BYTES	(8u * 1024)
#define GGA_SMALL_POOL_COUNT	512u
#define GGA_SMALL_POOL_CACHE	32u
#define GGA_LARGE_POOL_COUNT	32u
#define GGA_LARGE_POOL_CACHE	2u

/*
 * A regular read takes the data members' halves straight into the caller's
 * buffer, with one iovec for the half and one for its metadata (which goes to
 * the pool element) per block: at most this many iovecs per member I/O, so
 * chunks of up to GGA_DIRECT_MAX_IOVS / 2 blocks. Each pool element ends with
 * room for k such lists.
 */
#define GGA_DIRECT_MAX_IOVS	16u

/*
 * Range lock: one bit per logical block modulo GGA_LOCK_BITS. A chunk never
 * covers more blocks than there are bits, so its bits are distinct.
 */
#define GGA_LOCK_BITS		4096u
#define GGA_LOCK_WORDS		(GGA_LOCK_BITS / 64)

/*
 * Generations are handed out in windows: the superblocks' generation_epoch
 * is the end of the current window (every generation ever stamped is below
 * it), and the next window is persisted once less than half of this one is
 * left, so writes wait for a superblock write only if they outrun it.
 */
#define GGA_GEN_WINDOW		(1ull << 24)

struct gga_disk;

struct gga_member {
	struct gga_disk *disk;
	uint32_t index;			/* fragment index = role */
	char *name;			/* base bdev name */
	struct bdev_desc *desc;		/* NULL once closed (hot-remove) */
	struct bdev *bdev;
	bool claimed;
	/* enum bdev_gga_member_state; read by every thread, changed with atomics. */
	uint32_t state;
	/* The base is going away: channels to it are being released. */
	bool removing;
	/* Released while a superblock write to it was in flight: close when it ends. */
	bool close_deferred;
	/* The app thread's channel, for superblock I/O. */
	struct io_channel *app_ch;
	bool flush_supported;
	bool reset_supported;
};

struct gga_disk {
	/*
	 * The disk is the io_device of its channels; the bdev (whose address the
	 * bdev layer registers) is not its first member so the two differ.
	 */
	struct thread *app_thread;
	struct bdev bdev;
	struct gga_codec *codec;

	uint32_t k;
	uint32_t m;
	uint32_t n;
	uint32_t data_mask;
	uint32_t all_mask;
	uint32_t block_size;		/* B: logical */
	uint32_t frag_size;		/* F = B / k: member block size */
	uint32_t md_size;		/* member metadata bytes per block */
	uint32_t mbs;			/* F + md_size: a member block in a buffer */
	uint64_t member_blocks;
	uint64_t data_offset;		/* member block of logical block 0 */
	enum gga_matrix matrix;
	uint8_t array_uuid[16];
	uint32_t recovery_read_every_n;
	bool repair;

	struct gga_member members[BDEV_GGA_MAX_MEMBERS];
	/* Members ONLINE, one bit each: what the I/O path reads and writes. */
	uint32_t live_mask;

	/* Member buffers: pool elements hold n regions of cap_blocks member blocks. */
	struct mempool *small_pool;
	struct mempool *large_pool;
	uint32_t small_blocks;
	uint32_t large_blocks;
	uint32_t small_stride;		/* bytes per member region */
	uint32_t large_stride;
	/* No member needs aligned buffers: reads may land in the caller's buffer. */
	bool direct_reads;

	/* Generations: next to hand out, and the persisted (exclusive) limit. */
	uint64_t next_gen __attribute__((aligned(64)));
	uint64_t gen_limit;
	bool epoch_busy;		/* a superblock update is queued or in flight */
	/* Superblock block buffer: n member blocks (arena memory). */
	uint8_t *sb_buf;
	uint32_t sb_pending;
	uint32_t sb_ok_mask;
	uint64_t sb_new_limit;

	uint64_t lock_words[GGA_LOCK_WORDS] __attribute__((aligned(64)));

	/* Asynchronous work that the final free must wait for (app thread). */
	uint32_t pending_ops;
	bool registered;
	bool destructing;
	bool channels_gone;

	/* Counters of channels already destroyed. */
	pthread_mutex_t gone_mutex;
	struct bdev_gga_counters gone;

	TAILQ_ENTRY(gga_disk) link;
};

struct gga_io;

struct gga_channel {
	struct gga_disk *disk;
	struct gga_codec_scratch *scratch;
	struct io_channel *member_ch[BDEV_GGA_MAX_MEMBERS];
	uint32_t member_outstanding[BDEV_GGA_MAX_MEMBERS];
	/* Hot-remove walks waiting for this channel's I/O to a member to drain. */
	struct io_channel_iter *member_release[BDEV_GGA_MAX_MEMBERS];
	/* Read requests seen, for the periodic recovery reads. */
	uint64_t read_seq;
	struct bdev_gga_counters stats;
	/* Requests waiting for the range lock or for a generation window. */
	TAILQ_HEAD(, gga_io) retry;
	struct poller *retry_poller;
	/* One logical block, for blocks that straddle the caller's iovecs. */
	uint8_t *bounce;
	/* n member blocks: fragments rebuilt by a repair. */
	uint8_t *heal;
};

enum gga_io_phase {
	GGA_PHASE_READ = 0,	/* reading the chunk (regular, periodic or forced) */
	GGA_PHASE_HEAL_LOCK,	/* waiting for the range lock to repair the chunk */
	GGA_PHASE_HEAL_READ,	/* re-reading every live member under the lock */
	GGA_PHASE_HEAL_WRITE,	/* writing rebuilt fragments */
	GGA_PHASE_WRITE_LOCK,	/* waiting for the range lock (or a generation window) */
	GGA_PHASE_WRITE,	/* writing the encoded chunk */
	GGA_PHASE_PASSTHRU,	/* flush or reset on every live member */
};

/* Per-request context in bdev_io->driver_ctx. */
struct gga_io {
	struct gga_channel *ch;
	uint8_t *buf;			/* pool element: n member regions */
	struct mempool *pool;
	uint32_t stride;		/* bytes per member region of buf */
	uint32_t cap_blocks;		/* logical blocks per chunk */
	uint64_t next_lba;		/* first block after the current chunk */
	uint64_t chunk_lba;
	uint32_t chunk_blocks;
	/* Caller's iovec position of the current chunk's first block. */
	int iov_idx;
	uint32_t iov_off;
	uint8_t phase;			/* enum gga_io_phase */
	uint8_t member_op;		/* enum bdev_io_type of the member I/Os in flight */
	bool periodic;			/* this read leaves a data member out on purpose */
	bool forced;			/* some chunk needed a forced recovery */
	bool aborted;			/* a member I/O was aborted (reset) */
	bool locked;
	uint16_t skip_index;		/* periodic: the data member left out */
	uint32_t pending;		/* member I/Os in flight */
	uint32_t submit_mask;		/* members still to submit to (waiting for bdev_ios) */
	uint32_t read_mask;		/* members read for this chunk */
	uint32_t ok_mask;		/* members whose I/O of this phase succeeded */
	uint32_t present_mask;		/* members whose chunk data has been read */
	/*
	 * Data members whose halves of this chunk were read into the caller's
	 * buffer (blocks that lie in one iovec segment; the others, and all
	 * metadata, are in buf). Only the first read of a chunk does this.
	 */
	uint32_t direct_mask;
	uint32_t direct_iovcnt;		/* iovecs per direct member I/O */
	uint32_t dirty_mask;		/* repair: members to write */
	uint32_t repairs;		/* repair: fragments rebuilt */
	uint64_t gen;			/* first generation of the chunk */
	struct bdev_io_wait_entry wait;
	TAILQ_ENTRY(gga_io) link;
};

/* bdev_gga.c */
extern struct bdev_module gga_bdev_module;
/* "data_2" etc. for this disk's member `index`, in buf. */
const char *gga_role_of(const struct gga_disk *disk, uint32_t index, char *buf, size_t len);
void gga_uuid_format(const uint8_t u[16], char out[37]);
/*
 * Fill a member block (disk->mbs bytes) with member `index`'s superblock for
 * this disk's geometry and the given generation_epoch, the rest zero.
 * Returns 0 or -EINVAL.
 */
int gga_sb_block_encode(const struct gga_disk *disk, const uint8_t uuid[16], uint32_t index,
			uint64_t epoch, uint8_t *block);
/* Release a member: its app-thread channel, its claim, its descriptor (app thread). */
void gga_member_close(struct gga_member *member);
/* Event callback of every member's descriptor (hot-remove). */
void gga_member_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx);
void gga_disk_free(struct gga_disk *disk);
/*
 * Make a created disk a bdev: buffer pools, io_device, bdev_register.
 * Returns 0, -ENOMEM, or bdev_register()'s error (nothing left registered).
 */
int gga_disk_register(struct gga_disk *disk);
/* Mark a member failed after an I/O error (any thread); logs once. */
void gga_member_fail(struct gga_disk *disk, uint32_t index, const char *why);
/* Reserve `count` generations; -EAGAIN when the persisted window is used up. */
int gga_gen_reserve(struct gga_disk *disk, uint32_t count, uint64_t *first);
/* Channel: drop a member channel once its I/O is drained (hot-remove). */
void gga_channel_member_drained(struct gga_channel *ch, uint32_t index);

/* bdev_gga_io.c */
void gga_submit_request(struct io_channel *ch, struct bdev_io *io);
int gga_retry_poll(void *ctx);
bool gga_lock_try(struct gga_disk *disk, uint64_t lba, uint32_t count);
void gga_lock_release(struct gga_disk *disk, uint64_t lba, uint32_t count);

static inline uint32_t
gga_live_mask(const struct gga_disk *disk)
{
	return __atomic_load_n(&disk->live_mask, __ATOMIC_ACQUIRE);
}

static inline uint32_t
gga_member_state(const struct gga_member *member)
{
	return __atomic_load_n(&member->state, __ATOMIC_ACQUIRE);
}

#endif /* GGA_BDEV_GGA_INTERNAL_H */
