/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga bdev: a virtual bdev over k data members and m parity members
 * (exposed as 2 + 1: data_1, data_2, parity). Every logical block of B bytes
 * is compressed (LZ4), split into k fragments of B/k bytes, erasure-coded
 * into m parity fragments (ISA-L) and written with per-fragment metadata
 * (gga_codec.h, docs/FORMAT.md) to the members, whose block size is B/k and
 * whose metadata holds the fragment metadata. The gga bdev survives the loss
 * of any m members, detects silent corruption and torn writes, and heals
 * what it detects on read.
 *
 * RPCs (bdev_gga_rpc.c, docs/RPC.md "gga bdev"): bdev_gga_create,
 * bdev_gga_delete, bdev_gga_get_info, bdev_gga_replace_member,
 * bdev_gga_scrub, bdev_gga_set_options.
 *
 * All calls here run on the app thread (the thread that creates the bdevs).
 */
#ifndef GGA_BDEV_GGA_H
#define GGA_BDEV_GGA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gga/bdev.h"

#include "gga_format.h"
#include "gga_lifecycle.h"

/* The most members an array can have (k + m). */
#define BDEV_GGA_MAX_MEMBERS GGA_MAX_FRAGS

/* What create does with what it finds on the members (docs/RPC.md). */
enum bdev_gga_mode {
	/* Format if every member is blank, assemble if every member is a matching member. */
	BDEV_GGA_MODE_AUTO = 0,
	/* Require blank members and format them; with force, overwrite whatever they hold. */
	BDEV_GGA_MODE_CREATE,
	/* Require formatted members of one array in the right roles; never format. */
	BDEV_GGA_MODE_ASSEMBLE,
};

/*
 * A member's state and the array's are the lifecycle module's (enum
 * gga_lc_run and enum gga_lc_array_state, gga_lifecycle.h: one definition,
 * decided there); these are their public names.
 *   ONLINE      in sync: read and written
 *   FAILED      an I/O to it failed: not read or written until its base answers again
 *   REBUILDING  being resynced or rebuilt from the others: written, not read
 *   STALE       its base answers but it missed writes (or is blank): waits for a recovery
 *   ABSENT      its base bdev is gone (removed, or replaced by nothing yet)
 * and for the array: ONLINE (every member online, no block known lost),
 * DEGRADED (at least k online, or blocks known lost: I/O continues), FAILED
 * (fewer than k online: every I/O fails).
 */
#define bdev_gga_member_state      gga_lc_run
#define BDEV_GGA_MEMBER_ONLINE     GGA_LC_ONLINE
#define BDEV_GGA_MEMBER_FAILED     GGA_LC_FAILED
#define BDEV_GGA_MEMBER_REBUILDING GGA_LC_REBUILDING
#define BDEV_GGA_MEMBER_STALE      GGA_LC_STALE
#define BDEV_GGA_MEMBER_ABSENT     GGA_LC_ABSENT
#define bdev_gga_state             gga_lc_array_state
#define BDEV_GGA_ONLINE            GGA_LC_ARRAY_ONLINE
#define BDEV_GGA_DEGRADED          GGA_LC_ARRAY_DEGRADED
#define BDEV_GGA_FAILED            GGA_LC_ARRAY_FAILED

struct bdev_gga_opts {
	const char *name; /* the gga bdev's name, required */
	uint32_t k;       /* data members (default 2) */
	uint32_t m;       /* parity members (default 1) */
	/* Base bdev names: members[0..k-1] data, members[k..k+m-1] parity. */
	const char *members[BDEV_GGA_MAX_MEMBERS];
	enum gga_matrix matrix; /* default vandermonde */
	/*
	 * How the members hold the blocks (default fixed). Packed (issue 35,
	 * docs/FORMAT.md §11) is experimental and not yet accepted: create
	 * refuses it with -EINVAL.
	 */
	enum gga_layout layout;
	/* Assembling: false adopts the members' matrix instead of checking it. */
	bool matrix_set;
	/* Every Nth read on a thread goes through the recovery path; 0 = never. */
	uint32_t recovery_read_every_n;
	/* Rewrite fragments found corrupt, stale or missing on read (default true). */
	bool repair;
	enum bdev_gga_mode mode;
	/* MODE_CREATE only: format members that are not blank (their data is lost). */
	bool force;
	/* Array uuid (canonical string): formatting uses it, assembling checks it; NULL: any. */
	const char *uuid;
	/* Write-intent region in KiB of logical space (power of two; 0 = 1024). Formatting only. */
	uint32_t bitmap_region_kib;
	/* Re-add a failed member whose base answers again, and recover it (default true). */
	bool auto_readd;
	/* Recovery speed limit in logical MiB/s (default 100; 0 = unlimited). */
	uint32_t rebuild_rate_mib_s;
	/*
	 * A member found holding this many corrupt or stale fragments within
	 * member_error_window_s is failed and not re-added automatically
	 * (default 20 in 600 s; 0 = never).
	 */
	uint32_t member_error_limit;
	uint32_t member_error_window_s;
	/*
	 * A member whose I/O gets no answer for this long is failed (I/O goes on
	 * degraded) and reset, so that its requests in flight end now rather
	 * than at its own timeout (default 5000; 0 = never).
	 */
	uint32_t member_timeout_ms;
	/*
	 * Two fronts for one array (docs/DESIGN.md section 1): this front's id
	 * (1..65535, distinct per front; 0: a single front, no reservations).
	 * Needs `uuid` and members that are NVMe namespaces with reservations.
	 * The bdev is registered at once, inaccessible, and assembled only once
	 * this front holds the members (docs/RPC.md "bdev_gga_create").
	 */
	uint16_t front_id;
	/* The lease in ms (default 2000): the standby takes over after it lapses. */
	uint32_t lease_ms;
	/* Start as the standby: do not take members nobody holds without a lease first. */
	bool standby;
	/*
	 * Modes auto and assemble, an existing array (a member holds its record)
	 * of which fewer than k members in sync answer: register the bdev anyway,
	 * failing every request, and assemble it by itself once k do (default
	 * false: refused; configurations save_config writes say true).
	 */
	bool wait_for_members;
	/*
	 * The members' geometry, as save_config records it (0: unknown). With
	 * wait_for_members and `uuid`, a bdev none of whose members' base bdevs
	 * exists is registered from it and waits; members that appear must
	 * match it. With members present, they must match it too.
	 */
	uint32_t member_block_size;
	uint32_t member_md_size;
	uint64_t member_num_blocks;
};

/* Progress of a recovery pass, or the summary of the last one. */
struct bdev_gga_recovery_info {
	bool active;
	bool rebuild;         /* full rebuild (else resync of marked regions) */
	uint32_t members;     /* mask of the members recovered */
	uint64_t blocks_done; /* logical blocks walked */
	uint64_t blocks_total;
	uint64_t blocks_copied; /* logical blocks whose fragments were written */
	uint64_t regions_done;  /* marked regions copied */
	uint64_t regions_total;
	uint64_t fragments_repaired;   /* corrupt fragments of the other members mended */
	uint64_t unrecoverable_blocks; /* blocks that could not be resolved (left unreadable) */
	uint32_t rate_mib_s;
	double seconds;
	int result; /* 0 done, -ECANCELED stopped, other: failed */
	bool valid; /* (last) a pass has ended */
};

enum bdev_gga_scrub_state {
	BDEV_GGA_SCRUB_IDLE = 0,
	BDEV_GGA_SCRUB_RUNNING,
	BDEV_GGA_SCRUB_DONE,
	BDEV_GGA_SCRUB_STOPPED,
	BDEV_GGA_SCRUB_FAILED,
};

struct bdev_gga_scrub_info {
	enum bdev_gga_scrub_state state;
	/* The check of the regions marked at assembly (an unclean stop), not a full scrub. */
	bool marked_only;
	uint64_t regions_done;
	uint64_t blocks_done;
	uint64_t blocks_total;
	uint64_t fragments_repaired;
	uint64_t unrecoverable_blocks;
	uint32_t rate_mib_s;
	double seconds;
};

/* Defaults: 2 + 1, vandermonde, no periodic recovery reads, repair on, mode auto. */
void bdev_gga_opts_init(struct bdev_gga_opts *opts);

/*
 * rc 0: bdev is the new gga bdev. Otherwise rc is a negative errno and msg a
 * sentence naming the member and the problem (msg is valid during the call).
 */
typedef void (*bdev_gga_create_cb)(void *cb_arg, struct bdev *bdev, int rc, const char *msg);

/*
 * Create a gga bdev (app thread). Creation is asynchronous: it opens and
 * claims the bases, reads their superblocks, then formats or assembles them
 * (writing superblocks) and registers the bdev. Returns 0 and calls cb
 * exactly once, never from inside this call; or returns -EINVAL (NULL opts
 * or cb) or -ENOMEM without calling it. Errors reported through cb:
 *   -EINVAL     bad options, or the bases differ in block size, metadata size
 *               or block count, or do not fit the format
 *   -EEXIST     a bdev of that name exists, a base is listed twice, a member
 *               belongs to another array, holds another role, was formatted
 *               with another geometry, or (mode auto) blank and formatted
 *               members are mixed; mode create: a member is not blank
 *   -ENOENT     mode assemble: a member is blank
 *   -ENODEV     a base bdev does not exist, or went away during creation
 *   -EPERM      a base is claimed by another module
 *   -EMEDIUMTYPE, -EBADMSG, -EUCLEAN, -EPROTONOSUPPORT
 *               a member holds something that is not a valid gga superblock
 *   -EIO        reading or writing a superblock failed
 * When creation fails nothing has been written to any member unless the
 * failure was an I/O error while writing superblocks.
 */
int bdev_gga_create(const struct bdev_gga_opts *opts, bdev_gga_create_cb cb, void *cb_arg);

typedef void (*bdev_gga_delete_cb)(void *cb_arg, int rc);

/*
 * Unregister a gga bdev (app thread). The members keep their format, so
 * creating it again over the same bases assembles it with its data. Returns
 * 0 and later calls cb (may be NULL) once the bdev is gone and its bases are
 * released; or returns -ENODEV (no gga bdev of that name) without calling it.
 */
int bdev_gga_delete(const char *name, bdev_gga_delete_cb cb, void *cb_arg);

/* Counters of a gga bdev, summed over its threads (docs/RPC.md explains each). */
struct bdev_gga_counters {
	uint64_t reads;
	uint64_t writes; /* write, write_zeroes and unmap requests */
	uint64_t regular_reads;
	uint64_t recovery_reads_periodic;
	uint64_t recovery_reads_forced;
	uint64_t raw_blocks; /* blocks written per encoding */
	uint64_t lz4_blocks;
	uint64_t zero_blocks;
	uint64_t lz4_skipped_blocks; /* stored raw without trying LZ4 (region memory) */
	uint64_t logical_bytes_written;
	uint64_t compressed_bytes_written; /* payload bytes of those blocks */
	uint64_t checksum_failures;        /* fragments found corrupt */
	uint64_t torn_writes_detected;     /* blocks whose fragments disagreed */
	uint64_t repairs_written;          /* fragments rewritten by repair (the three below) */
	uint64_t stale_fragments;          /* fragments of an older write on a member read */
	uint64_t repairs_corrupt;          /* repairs of corrupt fragments */
	uint64_t repairs_stale; /* repairs of stale fragments (a member missed a write) */
	uint64_t repairs_torn;  /* repairs of fragments of a write torn by a crash */
	uint64_t member_io_errors;
	uint64_t failed_ios; /* requests completed with an error */
};

struct bdev_gga_member_info {
	char *name;     /* base bdev name */
	uint32_t index; /* fragment index: the role */
	enum bdev_gga_member_state state;
	bool faulted;       /* failed for too many bad fragments: waits for an operator */
	uint64_t errors;    /* corrupt or stale fragments found in the current window */
	const char *needs;  /* NULL, "resync" or "rebuild" */
	const char *reason; /* why it is in that state (static string) */
};

struct bdev_gga_info {
	char *name;
	uint32_t block_size;
	uint64_t num_blocks;
	uint32_t k;
	uint32_t m;
	enum gga_matrix matrix;
	uint8_t array_uuid[16];
	uint32_t recovery_read_every_n;
	bool repair;
	enum bdev_gga_state state;
	uint32_t num_members;
	struct bdev_gga_member_info members[BDEV_GGA_MAX_MEMBERS];
	/* The next write generation to be handed out. */
	uint64_t generation;
	struct bdev_gga_counters counters;
	uint64_t events;
	uint32_t bitmap_region_kib;
	uint64_t bitmap_regions;
	uint64_t bitmap_dirty;
	bool auto_readd;
	uint32_t rebuild_rate_mib_s;
	uint32_t member_error_limit;
	uint32_t member_error_window_s;
	uint32_t member_timeout_ms;
	struct bdev_gga_recovery_info recovery;
	struct bdev_gga_recovery_info last_recovery;
	struct bdev_gga_scrub_info scrub;
	/*
	 * Blocks found unrecoverable (by reads, passes and scrubs) since the
	 * last full scrub that found none: while non-zero the array is degraded.
	 */
	uint64_t unrecoverable_blocks;
	/* Two fronts: front_id 0 for a single front (the rest unset). */
	uint16_t front_id;
	uint32_t lease_ms;
	bool standby;
	/* "standby", "taking_over", "active", "proving", "handing_over", "stepped_down" */
	const char *role;
	const char *role_reason; /* why it holds that role (static string) */
	double role_seconds;     /* how long it has held it */
	uint32_t members_held;   /* members whose reservation it holds */
	bool serving;            /* assembled and serving I/O */
	/* This front has read and assembled the members (else their states are not known here). */
	bool assembled;
	/*
	 * Registered but not assembled yet: fewer than k members in sync answered
	 * and creation waits for more (wait_for_members); why, or NULL.
	 */
	char *waiting;
};

typedef void (*bdev_gga_info_cb)(void *cb_arg, int rc);

/*
 * Fill *info for the gga bdev `name` (app thread), summing the counters over
 * every thread's channel; cb runs on the calling thread when done, never from
 * inside this call. *info must stay valid until then; release its strings
 * with bdev_gga_info_clear(). Returns 0, or -ENODEV (no gga bdev of that name)
 * or -ENOMEM without calling cb.
 */
int bdev_gga_get_info(const char *name, struct bdev_gga_info *info, bdev_gga_info_cb cb,
		      void *cb_arg);
void bdev_gga_info_clear(struct bdev_gga_info *info);

/*
 * Put base bdev `new_base` in place of member `member` (a role name such as
 * "data_2", or the member's current base name) of gga bdev `name` (app
 * thread). The new base is claimed, formatted (its reserved region) and
 * rebuilt whole under I/O. Returns 0 and calls cb once, never from inside
 * this call; or a negative errno without calling it: -ENODEV (no such gga
 * bdev or base), -ENOENT (no such member), -EBUSY (the member is online or
 * being recovered), -EIO (fewer than k members online), -EINVAL (geometry),
 * -EPERM (claimed), -ENOMEM, -EAGAIN (not assembled, or a front that does
 * not serve: bdev_gga_ready(); nothing claimed or written). msg names the
 * problem (valid during the call).
 */
typedef void (*bdev_gga_replace_cb)(void *cb_arg, int rc, const char *msg);
int bdev_gga_replace_member(const char *name, const char *member, const char *new_base,
			    bdev_gga_replace_cb cb, void *cb_arg, char *msg, size_t msg_len);

/*
 * Scrub (app thread): read every block, check every fragment, repair what is
 * wrong, at rate_mib_s (0 = unlimited). Returns 0, -ENODEV, -EBUSY (a scrub
 * or recovery runs), -EIO (the array has fewer than k members online),
 * -EAGAIN (not assembled, or a front that does not serve: bdev_gga_ready()).
 */
int bdev_gga_scrub_start(const char *name, uint32_t rate_mib_s);
/* Stop a running scrub; 0 or -ENODEV, -EALREADY (none running), -EAGAIN (as above). */
int bdev_gga_scrub_stop(const char *name);

/*
 * Change options of an array (app thread): 0 or -ENODEV. NULL: unchanged. Not
 * assembled yet (bdev_gga_ready()): recorded for the assembly to come.
 */
int bdev_gga_set_options(const char *name, const uint32_t *rebuild_rate_mib_s,
			 const bool *auto_readd);
/* The member error policy of a running array (app thread): 0 or -ENODEV. NULL: unchanged. */
int bdev_gga_set_member_policy(const char *name, const uint32_t *member_error_limit,
			       const uint32_t *member_error_window_s,
			       const uint32_t *member_timeout_ms);
#ifdef GGA_TEST_HOOKS
/*
 * Test hook: the next assembly of this front waits `ms` between taking the
 * members and reading their superblocks (app thread): 0 or -ENODEV (no such
 * bdev, or not a front).
 */
int bdev_gga_test_assembly_delay(const char *name, uint32_t ms);
#endif
/*
 * An operator clears a member that was failed for too many bad fragments
 * (app thread): its error count is reset and it is re-added by the probe,
 * rebuilt whole (where its bad fragments lie is not known). Returns 0,
 * -ENODEV (no such gga bdev), -ENOENT (no such member: a role or base name),
 * -EALREADY (the member is not faulted), -EAGAIN (not assembled, or a front
 * that does not serve: bdev_gga_ready()).
 */
int bdev_gga_clear_member(const char *name, const char *member);

/*
 * Whether gga bdev `name` takes an operator's change of its array now (app
 * thread): 0; -ENODEV (no such gga bdev); -EAGAIN: not assembled (waiting
 * for members, or a front between assemblies) or a front that does not
 * serve, msg saying which. bdev_gga_scrub_start/stop, bdev_gga_clear_member
 * and bdev_gga_replace_member refuse with -EAGAIN then, changing nothing;
 * bdev_gga_set_options and bdev_gga_set_member_policy record the options
 * for the assembly to come.
 */
int bdev_gga_ready(const char *name, char *msg, size_t len);

/*
 * Planned hand-over of a shared array (app thread): on the active front it
 * stops serving and releases its reservations; on the standby it takes over
 * at once, without waiting for the lease. 0, -ENODEV (no such gga bdev),
 * -ENOTSUP (a single front), -EINVAL (neither active nor standby).
 */
int bdev_gga_hand_over(const char *name);

/* The gga bdevs, in creation order, for listing (NULL-terminated walk). */
struct bdev *bdev_gga_first(void);
struct bdev *bdev_gga_next(struct bdev *prev);

const char *bdev_gga_member_state_name(enum bdev_gga_member_state state);
const char *bdev_gga_state_name(enum bdev_gga_state state);
/* "data_1", "data_2", ... "parity" (m == 1) or "parity_1", ...; written to buf. */
const char *bdev_gga_role_name(uint32_t index, uint32_t k, uint32_t m, char *buf, size_t len);

/* Register the module (once, before bdev_subsystem_init). */
void bdev_gga_module_register(void);

/* Register its RPC methods (bdev_gga_rpc.c; once, beside the module). */
void bdev_gga_rpc_register(void);

#endif /* GGA_BDEV_GGA_H */
