/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga disk and its members: the state every file of the gga bdev shares,
 * with the calls of each. The files stand in layers, each calling only those
 * below it (bdev_gga/LAYERS lists them; scripts/check_layers.sh checks it):
 *
 *   bdev_gga_rpc.c       RPCs
 *   bdev_gga_create.c    create, format, assemble (the lifecycle module decides)
 *   bdev_gga_module.c    function table, registration, delete, information
 *   bdev_gga_recover.c   probe, re-add, attach, replace
 *   bdev_gga_walk.c      recovery passes and scrub
 *   bdev_gga_io.c        the I/O state machine
 *   bdev_gga_bitmap.c    the write-intent bitmap
 *   bdev_gga_front.c     the shell around gga_front.c (reservations, the poller)
 *   bdev_gga_disk.c      member states, superblock writer, generations,
 *                        channels and watchdogs, hot-remove, the end of a disk
 *   gga_codec.c, gga_lifecycle.c, gga_format.c, gga_front.c: pure, no I/O
 *
 * A lower file that must hear of something above it reads state the upper
 * file keeps here (disk->walk, disk->bm) rather than calling up.
 */
#ifndef GGA_BDEV_GGA_DISK_H
#define GGA_BDEV_GGA_DISK_H

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

/* A member I/O's context: which member of which request (or walk op). */
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
	bool short_write; /* a member found no bdev_io: the flush counts for nothing */
	uint32_t pending;
	uint32_t ok_mask;
	struct gga_member_ctx ctx[BDEV_GGA_MAX_MEMBERS];
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
	bool faulted;
};

/*
 * Timings that only the unit tests change (0: the default), so that a
 * torture run reaches persisted checkpoints mid-pass and gets its members
 * back in milliseconds rather than seconds.
 */
struct gga_test_knobs {
	uint32_t checkpoint_ms; /* a pass persists its checkpoint this often (2000) */
	uint32_t chunk_blocks;  /* blocks per chunk of a pass (128 KiB worth) */
	uint32_t probe_ms;      /* failed members are probed this often (1000) */
	uint32_t retry_ms;      /* a pass that failed is retried this much later (10000) */
	uint32_t sweep_ms;      /* the bitmap sweep looks this often (1000) */
};
extern struct gga_test_knobs gga_test_knobs;

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
	/* Superblock updates (app thread, one at a time; bdev_gga_disk.c). */
	bool sb_kicked; /* atomic: an update message is queued */
	bool sb_inflight;
	bool sb_again; /* asked for while one was in flight */
	bool sb_epoch; /* the update in flight carries a new window */
	bool sb_short; /* a member of it found no bdev_io: not persisted */
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
	uint32_t sb_pending;
	uint32_t sb_ok_mask;
	uint64_t sb_new_limit;
	struct gga_member_ctx sb_ctx[BDEV_GGA_MAX_MEMBERS];

	/* Write-intent bitmap (bdev_gga_bitmap.c). */
	struct gga_bitmap *bm;
	/* Recovery and scrub (bdev_gga_recover.c). */
	uint32_t rec_mask;        /* members of the recovery pass (persisted) */
	uint64_t rec_offset;      /* its checkpoint: done below this block (persisted) */
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
	/*
	 * The stall watchdog: completions per member, the count it last saw and
	 * since when (ticks), and whether it reset the member for this stall.
	 */
	uint32_t member_done[BDEV_GGA_MAX_MEMBERS];
	uint32_t member_seen[BDEV_GGA_MAX_MEMBERS];
	uint64_t member_since[BDEV_GGA_MAX_MEMBERS];
	bool member_reset[BDEV_GGA_MAX_MEMBERS];
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
	bool reread;          /* the chunk did not decode: read it again under the lock */
	bool bm_held;         /* the chunk's regions count this write */
	uint16_t skip_index;  /* periodic: the data member left out */
	uint32_t pending;     /* member I/Os in flight */
	uint32_t submit_mask; /* members still to submit to (waiting for bdev_ios) */
	uint32_t read_mask;   /* members read for this chunk */
	/*
	 * Write and flush: the members whose checkpoint bit holds its
	 * acknowledgement (gga_lc_ack_decide()'s `held`), taken when it is sent:
	 * those of the persisted checkpoint (a member that leaves the pass then
	 * holds it until the checkpoint drops it), the pass's targets it went to
	 * (a write) or every member asked (a flush); not a member that joins a
	 * pass later.
	 */
	uint32_t held;
	uint32_t ok_mask;      /* members whose I/O of this phase succeeded */
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
	struct bdev_io_wait_entry wait;
	TAILQ_ENTRY(gga_io) link;
	/*
	 * What a member I/O's completion is given: &member_idx[i], which holds
	 * i and leads back to this gga_io (gga_member_cb_io()). One byte per
	 * member: every bdev_io of the pool carries this context.
	 */
	uint8_t member_idx[BDEV_GGA_MAX_MEMBERS];
};

/* bdev_gga_disk.c */
extern struct bdev_module gga_bdev_module;
/* Persist the members' states (and any new generation window) in the superblocks (any thread). */
void gga_sb_kick(struct gga_disk *disk);
/*
 * App thread: the bitmap sweep found marks to clear; start the two updates
 * after which it may (disk->bm_clear.stage becomes GGA_LC_CLEAR_READY).
 */
void gga_bm_clear_request(struct gga_disk *disk);
/*
 * App thread: move member `index` to `state` for `reason` (a string
 * literal), updating the masks and logging the change once.
 */
/*
 * Count n more blocks found unrecoverable, or (a full scrub) set the count
 * to n (any thread). A change between none and some changes the health.
 */
void gga_lost_blocks_add(struct gga_disk *disk, uint64_t n);
void gga_lost_blocks_set(struct gga_disk *disk, uint64_t n);
/* bdev_get_health of a gga bdev (any thread). */
void gga_disk_health(const struct gga_disk *disk, struct bdev_health *health);

void gga_member_set_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state state,
			  const char *reason);
/*
 * App thread: move member `index` from `from` to `to` only if it is still in
 * `from` (another thread may have failed it meanwhile). True if it moved.
 */
bool gga_member_cas_state(struct gga_disk *disk, uint32_t index, enum bdev_gga_member_state from,
			  enum bdev_gga_member_state to, const char *reason);
/* Encode the module's record `rec` as member `index`'s superblock into buf (sb_blocks blocks). */
int gga_sb_record_encode(struct gga_disk *disk, uint32_t index, uint64_t epoch,
			 const struct gga_lc_record *rec, uint8_t *buf);
/* Build member `index`'s superblock record for the current state into buf (sb_blocks blocks). */
int gga_sb_area_encode(struct gga_disk *disk, uint32_t index, uint64_t epoch, uint64_t events,
		       uint32_t sync_mask, uint8_t *buf);
/* Gather `len` data bytes of member blocks (disk->mbs each) at src into dst, skipping metadata. */
void gga_area_gather(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len);
/* The reverse: scatter `len` data bytes into member blocks, metadata zero. */
void gga_area_scatter(const struct gga_disk *disk, const uint8_t *src, uint8_t *dst, size_t len);
/* True when every member but those in `except` is online. */
bool gga_disk_all_online(const struct gga_disk *disk);
/* Final free may proceed once nothing asynchronous is left (app thread). */
void gga_disk_try_free(struct gga_disk *disk);
/* The gga bdev of that name, unless it is being deleted; NULL otherwise. */
struct gga_disk *gga_disk_lookup(const char *name);
/* A disk is registered: the list bdev_gga_first() walks has it. */
void gga_disk_link(struct gga_disk *disk);
/* The array's state from its members (the true redundancy). */
enum bdev_gga_state gga_disk_state(const struct gga_disk *disk);
/* Channels of the disk's io_device (io_device_register). */
int gga_channel_create(void *io_device, void *ctx_buf);
void gga_channel_destroy(void *io_device, void *ctx_buf);
/* Start watching the app thread's member I/O (until the disk is freed). */
void gga_app_watchdog_start(struct gga_disk *disk);
/*
 * The lifecycle module's view of the disk as it stands (app thread): member
 * states, what each needs (not in sync unless the last persisted record says
 * so), the checkpoint, the pass running, and the members the I/O code holds
 * back from a pass (auto re-add off, a probe under way, a base going away).
 */
void gga_lc_view_of(const struct gga_disk *disk, struct gga_lc_view *v);
/*
 * Carry the view the module returned (from `before`) into the disk: every
 * member whose state it changed moves with `reason`, by compare-and-swap
 * from its state in `before` (an I/O thread that failed it since has the
 * last word); what each needs, the checkpoint and the running pass follow.
 * Returns the members moved.
 */
uint32_t gga_lc_take(struct gga_disk *disk, const struct gga_lc_view *before,
		     const struct gga_lc_view *v, const char *reason);
/*
 * gga_lc_view_of() after telling the module of the failures the I/O threads
 * took since the last step (GGA_LC_EV_IO_ERROR, GGA_LC_EV_CTRLR_LOST for a
 * base that went away) and carrying out what it returned (an update; a pass
 * to stop: disk->pass_stop): every lifecycle step of the app thread and
 * every superblock update starts with it.
 */
void gga_lc_view_now(struct gga_disk *disk, struct gga_lc_view *v);
/*
 * The decision of one lifecycle step (app thread): gga_lc_view_now(), `ev`
 * applied by the module (with the pass held back when hold_pass: the caller
 * starts one for every member at once later), the new view taken into the
 * disk with `reason` (or reason_of(view after, ev) when not NULL). Returns
 * the members it moved and the module's actions in *act, for the caller to
 * carry out (gga_lc_step() carries them all).
 */
uint32_t gga_lc_decide(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
		       const char *reason,
		       const char *(*reason_of)(const struct gga_lc_view *v,
						const struct gga_lc_event *ev),
		       struct gga_lc_actions *act);
/* sum += add, counter by counter. */
void gga_counters_add(struct bdev_gga_counters *sum, const struct bdev_gga_counters *add);
/* "data_2" etc. for this disk's member `index`, in buf. */
const char *gga_role_of(const struct gga_disk *disk, uint32_t index, char *buf, size_t len);
/* "data_2 'M2'": member `index`'s role and base name, for messages; written to buf. */
const char *gga_member_label(const struct gga_disk *disk, uint32_t index, char *buf, size_t len);
/* Release a member: its app-thread channel, its claim, its descriptor (app thread). */
void gga_member_close(struct gga_member *member);
/* io_device_for_each_channel() step (ctx: the member): drop its channels once drained. */
void gga_member_release_channel(struct io_channel_iter *i);
/* Close a member now, or once its app-thread I/O has ended. */
void gga_member_close_when_idle(struct gga_member *member);
/* An app-thread I/O to the member ended (call after bdev_free_io). */
void gga_member_app_io_done(struct gga_member *member);
/* Event callback of every member's descriptor (hot-remove). */
void gga_member_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx);
void gga_disk_free(struct gga_disk *disk);
/* The bitmap's memory (gga_bitmap_create()) goes with the disk. */
void gga_bitmap_destroy(struct gga_disk *disk);
/* Is the bitmap writing, or about to (a flush message queued)? */
bool gga_bitmap_busy(const struct gga_disk *disk);
/* Recovery work that holds the disk: a walk, a probe, member I/O of the app thread. */
bool gga_recover_busy(const struct gga_disk *disk);
/* Mark a member failed after an I/O error (any thread); logs once. */
void gga_member_fail(struct gga_disk *disk, uint32_t index, const char *why);
/*
 * Any thread: `count` corrupt or stale fragments were found on member
 * `index` (not torn writes: those are no member's fault). Past the error
 * policy's limit within its window, the member is faulted.
 */
void gga_member_errors(struct gga_disk *disk, uint32_t index, uint32_t count);
/* Reserve `count` generations; -EAGAIN when the persisted window is used up. */
int gga_gen_reserve(struct gga_disk *disk, uint32_t count, uint64_t *first);
/* Channel: drop a member channel once its I/O is drained (hot-remove). */
void gga_channel_member_drained(struct gga_channel *ch, uint32_t index);

/* bdev_gga_module.c */
/*
 * Make a created disk a bdev: buffer pools, io_device, bdev_register.
 * Returns 0, -ENOMEM, or bdev_register()'s error (nothing left registered).
 */
int gga_disk_register(struct gga_disk *disk);
/*
 * Start the disk's background work (bitmap sweep, watchdog, probes and
 * recovery). gga_disk_register does it, but for a front of a shared array,
 * which registers before it may assemble: it starts once assembled.
 */
void gga_disk_start(struct gga_disk *disk);

/* bdev_gga_front.c: the role of a front of a shared array (docs/DESIGN.md 1). */
struct gga_front_shell;
/* Give disk its role shell (before registration). 0 or -ENOMEM. */
int gga_front_shell_create(struct gga_disk *disk, uint16_t front_id, uint32_t lease_ms,
			   bool standby);
void gga_front_shell_free(struct gga_disk *disk, struct gga_front_shell *sh);
/* Start the poller (after registration); assemble(arg) runs once the front is active. */
int gga_front_shell_run(struct gga_disk *disk, void (*assemble)(void *arg), void *arg);
/* Members whose reservation this front holds now. */
uint32_t gga_front_shell_held_mask(const struct gga_disk *disk);
/* The assembly asked for ended: rc 0 serves (if still active); else msg says why not. */
void gga_front_shell_assembled(struct gga_disk *disk, int rc, const char *msg);
/* Stop (destruct): the disk is freed once the shell's I/O has ended. */
void gga_front_shell_stop(struct gga_disk *disk);
/* Planned hand-over: 0, -ENOTSUP (single front), -EINVAL (neither active nor standby). */
int gga_front_shell_hand_over(struct gga_disk *disk);
void gga_front_shell_info(const struct gga_disk *disk, struct bdev_gga_info *info);

/* bdev_gga_bitmap.c: the write-intent bitmap. */
/*
 * The compression memory of lba's region (NULL without a bitmap): how many
 * writes in a row came back incompressible. Racy by design (relaxed atomic
 * loads and stores from every thread): it only decides whether to try LZ4.
 */
uint8_t *gga_region_incomp(struct gga_disk *disk, uint64_t lba);
/* Set up the bitmap from the image `bits` (NULL: clean). Returns 0 or -ENOMEM. */
int gga_bitmap_create(struct gga_disk *disk, uint32_t region_shift, const uint8_t *image);
/* Start the lazy clearing (app thread, after registration). */
void gga_bitmap_start(struct gga_disk *disk);
void gga_bitmap_stop(struct gga_disk *disk);
/*
 * I/O path, any thread: count a write into blocks lba..lba+count-1 and make
 * sure their regions are marked on the members. Returns true when they
 * are; false when a bitmap write was asked for (call again later; the count
 * stays taken). gga_bitmap_release() drops the count.
 */
bool gga_bitmap_hold(struct gga_disk *disk, uint64_t lba, uint32_t count, bool held);
void gga_bitmap_release(struct gga_disk *disk, uint64_t lba, uint32_t count);
/* Any thread (relaxed, may be a moment old): is the region of block lba marked? */
bool gga_bitmap_marked(const struct gga_disk *disk, uint64_t lba);
/* App thread: is region r marked; regions; bytes of the image; dirty count. */
bool gga_bitmap_test(const struct gga_disk *disk, uint64_t region);
uint64_t gga_bitmap_regions_count(const struct gga_disk *disk);
uint64_t gga_bitmap_dirty(const struct gga_disk *disk);
uint32_t gga_bitmap_region_blocks(const struct gga_disk *disk);
/* App thread: the bitmap area of the reserved region (member blocks) for a member write. */
void gga_bitmap_encode_area(const struct gga_disk *disk, uint8_t *area);
/*
 * App thread: write the image to every member that takes writes, whether
 * or not it changed (a member back from an outage holds an old one).
 */
void gga_bitmap_rewrite(struct gga_disk *disk);

/* bdev_gga_recover.c: re-add (probe), attach, replace. */
void gga_recover_start_disk(struct gga_disk *disk);
void gga_recover_stop_disk(struct gga_disk *disk);

/* bdev_gga_walk.c: recovery passes and scrub. */
/*
 * Carry out what the lifecycle module asked for after gga_lc_take(): a pass
 * to start (which persists its records), or else a record update.
 */
void gga_lc_carry(struct gga_disk *disk, const struct gga_lc_actions *act);
/*
 * One lifecycle step of the app thread: gga_lc_decide(), then its actions
 * carried out (gga_lc_carry()). Returns the members it moved; the actions in
 * *act if not NULL.
 */
uint32_t gga_lc_step(struct gga_disk *disk, const struct gga_lc_event *ev, bool hold_pass,
		     const char *reason,
		     const char *(*reason_of)(const struct gga_lc_view *v,
					      const struct gga_lc_event *ev),
		     struct gga_lc_actions *act);
/* Start a recovery pass for members that need one, if none runs (app thread). */
void gga_recover_maybe_start(struct gga_disk *disk);
void gga_recover_start_assembled(struct gga_disk *disk);
/* App thread: the running recovery's progress (active false if none) and the scrub's. */
void gga_recover_info(const struct gga_disk *disk, struct bdev_gga_recovery_info *rec,
		      struct bdev_gga_scrub_info *scrub);
/* After assembly: check the regions still marked in the bitmap, if every member is online. */
void gga_walk_check_marked(struct gga_disk *disk);
/* Stop the pass running (it ends once its chunks in flight are done). */
void gga_walk_stop(struct gga_disk *disk);
/* A recovery pass running takes this rate at once. */
void gga_walk_set_rate(struct gga_disk *disk, uint32_t rate_mib_s);

/* bdev_gga_io.c */
void gga_submit_request(struct io_channel *ch, struct bdev_io *io);
int gga_retry_poll(void *ctx);
bool gga_lock_try(struct gga_disk *disk, uint64_t lba, uint32_t count);
void gga_lock_release(struct gga_disk *disk, uint64_t lba, uint32_t count);

/*
 * A front of a shared array that does not serve now (standby, taking over,
 * stepped down): nothing may be written to the members and no request
 * served. Always false for a single front.
 */
static inline bool
gga_disk_gated(const struct gga_disk *disk)
{
	return disk->front != NULL && !__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE);
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
