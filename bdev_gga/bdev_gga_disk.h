/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga disk and its members: the structures every file of the gga bdev
 * shares (the disk, its members, channels, requests, the bitmap's state)
 * and the few inline reads of them the I/O path makes. Each .c file's calls
 * are declared in its own header (bdev_gga_member.h for bdev_gga_member.c,
 * and so on). The files stand in layers, each calling only those below it
 * (bdev_gga/LAYERS lists them; scripts/check_layers.sh checks it):
 *
 *   bdev_gga_rpc.c       RPCs
 *   bdev_gga_create.c    create, format, assemble (the lifecycle module decides)
 *   bdev_gga_module.c    function table, registration, delete, information
 *   bdev_gga_recover.c   probe, re-add, attach, replace
 *   bdev_gga_walk.c      recovery passes and scrub
 *   bdev_gga_io.c        the I/O state machine
 *   bdev_gga_bitmap.c    the write-intent bitmap
 *   bdev_gga_front.c     the shell around gga_front.c (reservations, the poller)
 *   bdev_gga_sb.c        the superblock writer, generation windows
 *   bdev_gga_channel.c   channels and watchdogs
 *   bdev_gga_fanout.c    one member fan-out: submit to a mask, retry, join, fail
 *   bdev_gga_remove.c    hot-remove, the end of a disk, the list of disks
 *   bdev_gga_member.c    member states and masks, the lifecycle module's view
 *   gga_codec.c, gga_lifecycle.c, gga_format.c, gga_front.c: pure, no I/O
 *
 * A lower file that must hear of something above it reads state the upper
 * file keeps here (disk->walk, disk->bm) rather than calling up, or queues
 * a message the upper file gave it (disk->sb_update: gga_sb_kick()).
 */
#ifndef GGA_BDEV_GGA_DISK_H
#define GGA_BDEV_GGA_DISK_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/thread.h"

#include "bdev_gga.h"
#include "bdev_gga_fanout.h"
#include "gga_codec.h"
#include "gga_lifecycle.h"

/*
 * Logical bytes a request is processed in at most at once ("chunk"): one
 * member I/O per member per chunk. Requests up to GGA_SMALL_CHUNK_BYTES take
 * their member buffers from a pool of small elements, larger ones from a pool
 * of chunk-sized elements.
 */
#define GGA_CHUNK_BYTES       (128u * 1024)
#define GGA_SMALL_CHUNK_BYTES (8u * 1024)
/*
 * Compression memory (bdev_gga_io.c encode_block): after this many blocks
 * of a region in a row came back incompressible, the region stops trying
 * LZ4 but for one block in GGA_INCOMP_RETRY.
 */
#define GGA_INCOMP_SKIP       4u
#define GGA_INCOMP_RETRY      32u
#define GGA_SMALL_POOL_COUNT  512u
#define GGA_SMALL_POOL_CACHE  32u
#define GGA_LARGE_POOL_COUNT  32u
#define GGA_LARGE_POOL_CACHE  2u

/*
 * A regular read takes the data members' halves straight into the caller's
 * buffer, with one iovec for the half and one for its metadata (which goes to
 * the pool element) per block: at most this many iovecs per member I/O, so
 * chunks of up to GGA_DIRECT_MAX_IOVS / 2 blocks. Each pool element ends with
 * room for k such lists.
 */
#define GGA_DIRECT_MAX_IOVS 16u

/*
 * Range lock: one bit per logical block modulo GGA_LOCK_BITS. A chunk never
 * covers more blocks than there are bits, so its bits are distinct.
 */
#define GGA_LOCK_BITS  4096u
#define GGA_LOCK_WORDS (GGA_LOCK_BITS / 64)

/*
 * Generations are handed out in windows: the superblocks' generation_epoch
 * is the end of the current window (every generation ever stamped is below
 * it), and the next window is persisted once less than half of this one is
 * left, so writes wait for a superblock write only if they outrun it.
 */
#define GGA_GEN_WINDOW (1ull << 24)

struct gga_disk;
struct gga_bitmap;
struct gga_walk;
struct member_op;

/* A member I/O's context: which member of which owner (a watchdog's reset, a probe). */
struct gga_member_ctx {
	void *owner;
	uint32_t index;
};

/* The write-intent bitmap (bdev_gga_bitmap.c; its memory goes with the disk). */
struct gga_bitmap {
	struct gga_disk *disk;
	uint32_t block_shift; /* log2 of a region's logical blocks */
	uint64_t regions;
	uint8_t *state;    /* enum region_state, atomic */
	uint32_t *writers; /* atomic */
	uint8_t *touched;  /* written since the last sweep */
	uint8_t *bits;     /* app thread: the image (one byte a region) */
	uint64_t dirty;    /* app thread: regions marked in the image */
	/* Bitmap area of the reserved region: member blocks first_block .. data_offset - 1. */
	uint64_t first_block;
	uint64_t nblocks;
	uint32_t area_bytes;
	uint8_t *packed; /* area_bytes: the image as bits */
	uint8_t *io_buf; /* nblocks member blocks (arena) */
	/* Flushes: one at a time; `kicked` while a message is queued. */
	bool kicked;
	bool flushing;
	bool again;
	bool stopped;
	/* The flush's member writes (a member short of a bdev_io: it counts for nothing). */
	struct gga_fanout fo;
	struct poller *sweep_poller;
	/*
	 * Compression memory, not persisted: per region, the writes in a row
	 * that came back incompressible (gga_region_incomp()).
	 */
	uint8_t *incomp;
};

struct gga_member {
	struct gga_disk *disk;
	uint32_t index;         /* fragment index = role */
	char *name;             /* base bdev name */
	struct bdev_desc *desc; /* NULL once closed (hot-remove) */
	struct bdev *bdev;
	bool claimed;
	/* enum bdev_gga_member_state; read by every thread, changed with atomics. */
	uint32_t state;
	/* Why it is in that state: a string literal (atomic pointer). */
	const char *reason;
	/* App thread: what it needs to come back (persisted as its superblock state). */
	enum gga_lc_needs needs;
	/* App thread: a superblock probe or re-attach is under way. */
	bool probing;
	/* App thread: its base holds something else; not probed again until replaced. */
	bool foreign;
	/* The base is going away: channels to it are being released. */
	bool removing;
	/* Released while app-thread I/O to it was in flight: close when the last ends. */
	bool close_deferred;
	/* App thread: superblock, bitmap, probe and walk I/O in flight on app_ch. */
	uint32_t app_io;
	/*
	 * App thread, its watchdog (app_watchdog_poll): completions of that I/O,
	 * the count last seen, since when (ticks; 0: nothing in flight) and a
	 * reset asked for that has not ended yet.
	 */
	uint64_t app_done;
	uint64_t app_seen;
	uint64_t app_since;
	bool app_resetting;
	/* App thread: this stall of its I/O is waited out (gga_member_stall() kept it). */
	bool app_kept;
	/* App thread: recover it even with auto_readd off (a replace asked for it). */
	bool forced;
	/* App thread: the bdev_gga_replace_member under way. */
	struct member_op *replace_op;
	/* The app thread's channel, for superblock I/O. */
	struct io_channel *app_ch;
	bool flush_supported;
	bool reset_supported;
	/* App thread: the events of the record last written to it (0: none). */
	uint64_t sb_events;
	/*
	 * Corrupt or stale fragments found on it in the window that began at
	 * err_start (ticks); past the disk's limit it is faulted: failed, and not
	 * re-added until bdev_gga_clear_member or a replace (relaxed atomics).
	 */
	uint64_t err_count;
	uint64_t err_start;
	/* The lifecycle module's `faulted` as last taken (atomic: read by info, the probe). */
	bool faulted;
};

/*
 * Blocks whose bad fragments were charged to their members already: the
 * error policy counts a block once, not once per read (a retrying host
 * reading one unreadable block would fault a member by itself). Direct
 * mapped on the LBA; a slot holds (lba + 1) << 16 | the members charged.
 */
#define GGA_CHARGED_SLOTS 256

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
	uint32_t block_size; /* B: logical */
	uint32_t frag_size;  /* F = B / k: member block size */
	uint32_t md_size;    /* member metadata bytes per block */
	uint32_t mbs;        /* F + md_size: a member block in a buffer */
	uint64_t member_blocks;
	uint64_t data_offset; /* member block of logical block 0 */
	enum gga_matrix matrix;
	uint8_t array_uuid[16];
	uint32_t recovery_read_every_n;
	bool repair;

	struct gga_member members[BDEV_GGA_MAX_MEMBERS];
	/* Members ONLINE, one bit each: what the I/O path reads. */
	uint32_t live_mask;
	/* Members ONLINE or REBUILDING: what the I/O path writes. */
	uint32_t write_mask;
	/*
	 * What the latest persisted superblock update says, for rule 7: the
	 * members it reached, those it calls in sync and its checkpoint's
	 * (struct gga_lc_durable, packed; atomic, written by sb_write_done).
	 * Every write and flush completion decides with gga_lc_ack_decide() on
	 * it: a write that a member in sync (or of the checkpoint) missed is
	 * acknowledged only once the superblocks say otherwise.
	 */
	uint64_t persisted;
	uint32_t sb_rec_mask; /* the rec_mask of the update in flight */
	bool auto_readd;
	uint32_t rebuild_rate; /* MiB/s; 0 = unlimited */
	uint32_t err_limit;    /* member error policy: count (0: off) and window */
	uint32_t err_window_s;
	uint32_t timeout_ms;   /* a member without an answer this long is failed (0: never) */
	uint32_t region_shift; /* log2 of a bitmap region's logical bytes */

	/* Member buffers: pool elements hold n regions of cap_blocks member blocks. */
	struct mempool *small_pool;
	struct mempool *large_pool;
	uint32_t small_blocks;
	uint32_t large_blocks;
	uint32_t small_stride; /* bytes per member region */
	uint32_t large_stride;
	/* No member needs aligned buffers: reads may land in the caller's buffer. */
	bool direct_reads;

	/* Generations: next to hand out, and the persisted (exclusive) limit. */
	uint64_t next_gen __attribute__((aligned(64)));
	uint64_t gen_limit;
	bool epoch_busy;   /* a generation window is being persisted */
	bool epoch_wanted; /* the next superblock update carries a new window */
	/*
	 * Superblock updates (app thread, one at a time; bdev_gga_sb.c). The
	 * writer's update message: gga_sb_kick() (bdev_gga_member.c, below the
	 * writer) queues it, so that a change of state asks for an update
	 * without calling up (set by gga_sb_writer_init()).
	 */
	msg_fn sb_update;
	bool sb_kicked; /* atomic: an update message is queued */
	/*
	 * Atomic: members whose confirmed errors passed the limit, for the
	 * module to decide on (GGA_LC_EV_FAULT) in the writer's next message.
	 */
	uint32_t fault_asked;
	uint64_t charged[GGA_CHARGED_SLOTS];
	/* Blocks reads found unrecoverable, lba + 1 (gga_lost_block_read()). */
	uint64_t lost_seen[GGA_CHARGED_SLOTS];
	bool sb_inflight;
	bool sb_again; /* asked for while one was in flight */
	bool sb_epoch; /* the update in flight carries a new window */
	/* The largest event count handed out: every record write takes a new one. */
	uint64_t events;
	uint64_t sb_events; /* the event count of the update in flight */
	/*
	 * Write-intent marks clear only after two updates (rule 8, docs/FORMAT.md
	 * 3.2): the sweep (bdev_gga_bitmap.c) starts it when the module says it
	 * may (gga_lc_clear_may_start()), the superblock writer steps it
	 * (gga_lc_clear_landed()), the sweep clears once it is READY.
	 */
	uint64_t bitmap_events;       /* persisted: see struct gga_sb */
	struct gga_lc_clear bm_clear; /* app thread */
	uint8_t sb_clear_stage;       /* the stage the update in flight carries (IDLE: none) */
	uint32_t sb_sync_mask;        /* in-sync members of the update in flight */
	uint32_t sb_blocks;           /* member blocks holding the superblock record */
	/* Superblock buffers: n areas of sb_blocks member blocks (arena memory). */
	uint8_t *sb_buf;
	uint64_t sb_new_limit;
	struct gga_lc_record sb_record; /* the record of the update in flight */
	/* The update's member writes (a member short of a bdev_io: not persisted). */
	struct gga_fanout sb_fo;

	/* Write-intent bitmap (bdev_gga_bitmap.c). */
	struct gga_bitmap *bm;
	/* Recovery and scrub (bdev_gga_recover.c). */
	uint32_t rec_mask;        /* members of the recovery pass (persisted) */
	uint64_t rec_offset;      /* its checkpoint: done below this block (persisted) */
	bool resume_ok;           /* the module's: an assembly's checkpoint no pass used yet */
	struct gga_walk *walk;    /* the walk running, or NULL */
	uint64_t rec_retry_ticks; /* a failed pass is not retried before */
	uint32_t pass_targets;    /* members of the recovery pass running (0: none) */
	uint32_t lc_failed;       /* failed or absent members the module was told of */
	bool pass_stop;           /* the module stopped the pass (a failure): the walk ends */
	bool pass_rebuild;        /* it rebuilds every block */
	bool check_marked;        /* assembled: check the marked regions once */
	struct poller *probe_poller;
	struct poller *app_watchdog; /* app_watchdog_poll */
	struct bdev_gga_recovery_info last_recovery;
	/*
	 * Blocks known unrecoverable (any thread adds; a clean full scrub
	 * resets): gga_lost_blocks_add/set. lost_total only grows: the SMART
	 * log's media and data integrity errors (bdev_get_health).
	 */
	uint64_t lost_blocks;
	uint64_t lost_total;
	struct bdev_gga_scrub_info scrub;
	/*
	 * A block at which recovery passes stop issuing chunks until it is
	 * moved (0: no hold). Only unit tests set it (see gga_test_knobs).
	 */
	uint64_t walk_hold_at;

	uint64_t lock_words[GGA_LOCK_WORDS] __attribute__((aligned(64)));
	/*
	 * Front requests submitted and completed (relaxed): a recovery pass is
	 * held to its rate while requests are in flight or new ones came lately.
	 */
	uint64_t front_ios __attribute__((aligned(64)));
	uint64_t front_done;

	/* Asynchronous work that the final free must wait for (app thread). */
	uint32_t pending_ops;
	bool registered;
	bool destructing;
	bool channels_gone;
	/*
	 * A clean close (gga_bitmap_close_step()): a deleted array with every
	 * member online clears its write-intent marks by the rule-8 sequence
	 * once no host write can come, so the next assembly has nothing to
	 * check (enum gga_close, bdev_gga_bitmap.h). The module's view is not
	 * "deleted" while the clearing runs.
	 */
	uint8_t closing;
	/*
	 * gga_disk_try_free() asks it before the free: true while it has work
	 * under way (it calls gga_disk_try_free() again when that ends).
	 */
	bool (*close_step)(struct gga_disk *disk);

	/*
	 * Two fronts (bdev_gga_front.c): the role shell, NULL for a single
	 * front. front_serving is set once this front holds its members and
	 * has assembled them, and cleared when it steps down; every thread
	 * reads it before it serves a request. front_fenced is set by any
	 * thread whose member I/O met a Reservation Conflict; the shell's
	 * poller steps the front down.
	 */
	struct gga_front_shell *front;
	bool front_serving;
	bool front_fenced;
	/* A stepped-down front letting go of its assembly (gga_disk_forget()). */
	struct poller *forget_poller;
	void (*forgotten)(struct gga_disk *disk);
	/*
	 * Registered before it could be assembled: fewer than k members in sync
	 * answered, and creation waits for more (bdev_gga_create.c, option
	 * wait_for_members). Gated like a front that does not serve (atomic);
	 * wait_msg says why (app thread).
	 */
	bool waiting;
	char wait_msg[512];
#ifdef GGA_TEST_HOOKS
	/*
	 * Test hook (test_gga_assembly_delay): the next front assembly waits
	 * this long between taking the members and reading their superblocks.
	 */
	uint32_t test_assembly_delay_ms;
#endif

	/* Counters of channels already destroyed. */
	pthread_mutex_t gone_mutex;
	/* Stall decisions, one at a time (gga_member_stall()). */
	pthread_mutex_t stall_mutex;
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
	/*
	 * The stall watchdog: completions per member, the count it last saw and
	 * since when (ticks), and whether it reset the member for this stall.
	 */
	uint32_t member_done[BDEV_GGA_MAX_MEMBERS];
	uint32_t member_seen[BDEV_GGA_MAX_MEMBERS];
	uint64_t member_since[BDEV_GGA_MAX_MEMBERS];
	bool member_reset[BDEV_GGA_MAX_MEMBERS];
	/* This stall is waited out: failing it would leave fewer than k online (logged once). */
	bool member_kept[BDEV_GGA_MAX_MEMBERS];
	struct poller *watchdog;
	/* Read requests seen, for the periodic recovery reads. */
	uint64_t read_seq;
	/* Blocks encoded without LZ4 for the region memory: every few tries again. */
	uint64_t incomp_seq;
	struct bdev_gga_counters stats;
	/* Requests waiting for the range lock or for a generation window. */
	TAILQ_HEAD(, gga_io) retry;
	struct poller *retry_poller;
	/* One logical block, for blocks that straddle the caller's iovecs. */
	uint8_t *bounce;
	/* n member blocks: fragments rebuilt by a repair. */
	uint8_t *heal;
};

/* The steps of a clean close (disk->closing, gga_bitmap_close_eligible()). */
enum gga_close {
	GGA_CLOSE_NONE = 0, /* not closing, or not clean: the marks stay */
	GGA_CLOSE_WANTED,   /* the delete may close clean once the channels are gone */
	GGA_CLOSE_CLEARING, /* the two updates are under way */
	GGA_CLOSE_FLUSHING, /* the cleared image is being written */
	GGA_CLOSE_DONE,
};

enum gga_io_phase {
	GGA_PHASE_READ = 0,      /* reading the chunk (regular, periodic or forced) */
	GGA_PHASE_HEAL_LOCK,     /* waiting for the range lock to repair the chunk */
	GGA_PHASE_HEAL_READ,     /* re-reading every live member under the lock */
	GGA_PHASE_HEAL_WRITE,    /* writing rebuilt fragments */
	GGA_PHASE_WRITE_LOCK,    /* waiting for the range lock (or a generation window) */
	GGA_PHASE_WRITE,         /* writing the encoded chunk */
	GGA_PHASE_WRITE_DURABLE, /* written; waiting for superblocks that say who missed it */
	GGA_PHASE_PASSTHRU,      /* flush or reset on every live member */
	GGA_PHASE_FLUSH_DURABLE, /* flushed; waiting for superblocks that say whose flush failed */
};

/* Per-request context in bdev_io->driver_ctx. */
struct gga_io {
	struct gga_channel *ch;
	uint8_t *buf; /* pool element: n member regions */
	struct mempool *pool;
	uint32_t stride;     /* bytes per member region of buf */
	uint32_t cap_blocks; /* logical blocks per chunk */
	uint64_t next_lba;   /* first block after the current chunk */
	uint64_t chunk_lba;
	uint32_t chunk_blocks;
	/* Caller's iovec position of the current chunk's first block. */
	int iov_idx;
	uint32_t iov_off;
	uint8_t phase;     /* enum gga_io_phase */
	uint8_t member_op; /* enum bdev_io_type of the member I/Os in flight */
	bool periodic;     /* this read leaves a data member out on purpose */
	bool forced;       /* some chunk needed a forced recovery */
	bool aborted;      /* a member I/O was aborted (reset) */
	/* Two fronts: this front does not serve (now): fail with an ANA path error. */
	bool path_error;
	bool locked;
	bool reread;         /* the chunk did not decode: read it again under the lock */
	bool bm_held;        /* the chunk's regions count this write */
	uint16_t skip_index; /* periodic: the data member left out */
	uint32_t read_mask;  /* members read for this chunk */
	/*
	 * Write and flush: the members whose checkpoint bit holds its
	 * acknowledgement (gga_lc_ack_decide()'s `held`), taken when it is sent:
	 * those of the persisted checkpoint (a member that leaves the pass then
	 * holds it until the checkpoint drops it), the pass's targets it went to
	 * (a write) or every member asked (a flush); not a member that joins a
	 * pass later.
	 */
	uint32_t held;
	uint32_t present_mask; /* members whose chunk data has been read */
	/*
	 * Data members whose halves of this chunk were read into the caller's
	 * buffer (blocks that lie in one iovec segment; the others, and all
	 * metadata, are in buf). Only the first read of a chunk does this.
	 */
	uint32_t direct_mask;
	uint32_t direct_iovcnt; /* iovecs per direct member I/O */
	uint32_t dirty_mask;    /* repair: members to write */
	uint32_t repairs;       /* repair: fragments rebuilt */
	uint32_t repairs_stale; /* of them: fragments of an older write */
	uint32_t repairs_torn;  /* of them: fragments of a torn newer write */
	uint64_t gen;           /* first generation of the chunk */
	TAILQ_ENTRY(gga_io) link;
	/*
	 * The member I/O of the phase (ok_mask: the members whose I/O of this
	 * phase succeeded); a member without a bdev_io to spare waits for one.
	 */
	struct gga_fanout fo;
};

/*
 * A front of a shared array that does not serve now (standby, taking over,
 * stepped down), or a gga bdev whose assembly waits for members: nothing
 * may be written to the members and no request served.
 */
static inline bool
gga_disk_gated(const struct gga_disk *disk)
{
	return __atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE) ||
	       (disk->front != NULL && !__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE));
}

/*
 * A member I/O met a Reservation Conflict (any thread): another front holds
 * the member. Stop serving now; the shell's poller steps the front down.
 */
static inline void
gga_disk_fenced(struct gga_disk *disk)
{
	__atomic_store_n(&disk->front_serving, false, __ATOMIC_RELEASE);
	__atomic_store_n(&disk->front_fenced, true, __ATOMIC_RELEASE);
}

/*
 * A failed member I/O of a front of a shared array that met Reservation
 * Conflict: the front is fenced (gga_disk_fenced) and the member is not
 * failed for it. Call before bdev_free_io(io).
 */
static inline bool
gga_member_io_fenced(struct gga_disk *disk, const struct bdev_io *io)
{
	if (disk->front == NULL || bdev_io_get_errno(io) != -EBADE) {
		return false;
	}
	gga_disk_fenced(disk);
	return true;
}

static inline uint32_t
gga_live_mask(const struct gga_disk *disk)
{
	return __atomic_load_n(&disk->live_mask, __ATOMIC_ACQUIRE);
}

static inline uint32_t
gga_write_mask(const struct gga_disk *disk)
{
	return __atomic_load_n(&disk->write_mask, __ATOMIC_ACQUIRE);
}

static inline uint32_t
gga_member_state(const struct gga_member *member)
{
	return __atomic_load_n(&member->state, __ATOMIC_ACQUIRE);
}

#endif /* GGA_BDEV_GGA_DISK_H */
