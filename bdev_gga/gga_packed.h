/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rules of the packed, log-structured member layout (issue 35) as one
 * pure module: the map (logical block -> location), the segment usage table
 * (SUT), the committed reserve list, and every decision about them: where a
 * record goes, what a write's or a trim's completion does to the map, which
 * segment GC cleans and whether a relocation still counts, what a checkpoint
 * holds and when segments become free, and how recovery rebuilds the state
 * from the last committed checkpoint and the records of the segments opened
 * since. It does no I/O, takes no lock, keeps no global and uses no
 * randomness; the caller writes the records and the checkpoint image.
 *
 * The whole state is one block of memory without pointers (struct gga_pk and
 * its arrays after it), so it is copied, compared and hashed as bytes, and a
 * checkpoint image is the same layout. Units are 16 bytes; a segment holds
 * geom.seg_units of them, on every member in lockstep.
 *
 * The rules (docs/DESIGN.md, "Packed layout: the log's rules (draft)"):
 *   I1 allocation is out of place: a location the committed checkpoint or an
 *      acknowledged record depends on is never written;
 *   I2 generations strictly increase per block (gga_pk_new_gen);
 *   I3 segments are opened only from the committed reserve list;
 *   I4 a segment freed by overwrite, trim or GC is free-pending and becomes
 *      free only at a commit whose map does not reference it.
 * Checked by test/unit/bdev_gga/gga_packed (every event order, with crashes).
 */
#ifndef GGA_PACKED_H
#define GGA_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GGA_PK_NONE UINT32_MAX

enum gga_pk_map_state {
	GGA_PK_UNMAPPED = 0, /* never written: reads zero */
	GGA_PK_ZERO = 1,     /* trimmed at generation gen: reads zero */
	GGA_PK_MAPPED = 2,   /* the record at (seg, off) of len units, generation gen */
};

enum gga_pk_seg_state {
	GGA_PK_SEG_FREE = 0,
	GGA_PK_SEG_OPEN = 1,    /* records are allocated in it */
	GGA_PK_SEG_FULL = 2,    /* sealed; may still have records in flight */
	GGA_PK_SEG_PENDING = 3, /* nothing live, freed after the running checkpoint began */
	GGA_PK_SEG_COMMITTING =
		4, /* nothing live when the running checkpoint began: free at its commit */
};

/* Who asks for space: a host write, a trim record, a GC relocation. */
enum gga_pk_class {
	GGA_PK_HOST = 0,
	GGA_PK_TRIM = 1, /* trims may use half the protected reserve, GC all of it */
	GGA_PK_GC = 2,
};

/*
 * gga_pk_alloc's answer. NEED_CKPT: the commit of a checkpoint (the running
 * one, else a new one) would give space: free-pending segments, or a reserve
 * list used up while free segments exist. NEED_GC: a GC run would. FULL:
 * nothing would (Capacity Exceeded for a host write).
 */
enum gga_pk_status {
	GGA_PK_OK = 0,
	GGA_PK_NEED_CKPT = 1,
	GGA_PK_NEED_GC = 2,
	GGA_PK_FULL = 3,
};

enum gga_pk_logrec_type {
	GGA_PK_LOG_DATA = 0,
	GGA_PK_LOG_TRIM = 1,
};

struct gga_pk_geom {
	uint32_t nsegs;       /* segments per member */
	uint32_t seg_units;   /* 16-byte units per segment */
	uint32_t nblocks;     /* logical blocks */
	uint32_t max_len;     /* the largest record, in units (a block at worst case) */
	uint32_t reserve_len; /* the reserve list's length at each checkpoint */
	uint32_t protect;     /* free segments only trims and GC may open */
	uint32_t gc_low;      /* below this many free segments GC is greedy (cost-benefit above) */
	uint32_t throttle[3]; /* free segments below throttle[i]: throttle level i + 1 */
};

struct gga_pk_loc {
	uint32_t seg;
	uint32_t off; /* units from the segment's start */
};

/* A map entry: 24 bytes, no padding. */
struct gga_pk_entry {
	uint64_t gen;
	uint32_t seg;
	uint32_t off;
	uint16_t len;
	uint16_t state;
	uint32_t pad;
};

/* A SUT entry: 32 bytes, no padding. */
struct gga_pk_seg {
	uint64_t seq;      /* when it was opened (a global counter) */
	uint32_t live;     /* units the map references */
	uint32_t fill;     /* units allocated */
	uint32_t inflight; /* allocations not completed or aborted */
	uint16_t state;
	uint16_t scan; /* in a checkpoint image: recovery scans it (open or busy at begin) */
	uint64_t pad;
};

/* A record as recovery and GC see it (its byte format is docs/FORMAT.md's). */
struct gga_pk_logrec {
	uint64_t gen;
	uint32_t lba;   /* data: the block; trim: the first block */
	uint32_t count; /* trim: blocks */
	uint32_t off;   /* units from the segment's start */
	uint16_t len;   /* units */
	uint16_t type;
};

/*
 * The state. The map (nblocks entries), the SUT (nsegs) and the reserve list
 * (nsegs slots) follow it in the same block (gga_pk_size).
 */
struct gga_pk {
	struct gga_pk_geom geom;
	uint64_t next_seq;
	uint64_t next_gen;
	uint64_t ckpt_seq; /* image: next_seq at its begin; recovery scans segments opened since */
	uint64_t mapped;   /* blocks in the mapped state */
	uint64_t live;     /* units referenced */
	uint32_t open;     /* the open segment, GGA_PK_NONE */
	uint32_t nres;     /* reserve list entries */
	uint32_t res_committed; /* of them, the first res_committed are committed (I3) */
	uint32_t in_ckpt;       /* a checkpoint began and is not committed */
	uint32_t map_off, sut_off, res_off, size;
	uint8_t mem[] __attribute__((aligned(8)));
};

static inline struct gga_pk_entry *
gga_pk_map(const struct gga_pk *pk)
{
	return (struct gga_pk_entry *)(uintptr_t)((const uint8_t *)pk + pk->map_off);
}

static inline struct gga_pk_seg *
gga_pk_sut(const struct gga_pk *pk)
{
	return (struct gga_pk_seg *)(uintptr_t)((const uint8_t *)pk + pk->sut_off);
}

static inline uint32_t *
gga_pk_res(const struct gga_pk *pk)
{
	return (uint32_t *)(uintptr_t)((const uint8_t *)pk + pk->res_off);
}

/* Bytes of a state (and of a checkpoint image) for geom; 0 if geom is invalid. */
size_t gga_pk_size(const struct gga_pk_geom *geom);

/* A formatted, empty pool in size bytes at pk: every block unmapped, the first
 * reserve_len segments the committed reserve list. -EINVAL on a bad geom or size. */
int gga_pk_init(struct gga_pk *pk, size_t size, const struct gga_pk_geom *geom);

/* The same, allocated (gga_pk_destroy frees it); NULL on a bad geom or no memory. */
struct gga_pk *gga_pk_create(const struct gga_pk_geom *geom);
void gga_pk_destroy(struct gga_pk *pk);

/* The next generation for a write or a trim (I2). */
uint64_t gga_pk_new_gen(struct gga_pk *pk);

/*
 * Space for a record of len units of class cls at *loc (out of place: in the
 * open segment, else in the next segment of the committed reserve list). A
 * host write never opens one of the last geom.protect free segments. A
 * segment is sealed at the first record it cannot take. Not OK: nothing else
 * changed, the status says what would help.
 */
enum gga_pk_status gga_pk_alloc(struct gga_pk *pk, enum gga_pk_class cls, uint32_t len,
				struct gga_pk_loc *loc);

/* An allocation whose record will never count (the write failed). */
void gga_pk_abort(struct gga_pk *pk, const struct gga_pk_loc *loc);

/*
 * A data record of lba, generation gen, len units at *loc is durable: the map
 * takes it if gen is newer than what it holds (the old location's units are
 * given back); true if it did. The write may be acknowledged either way.
 */
bool gga_pk_write_done(struct gga_pk *pk, uint32_t lba, uint64_t gen, const struct gga_pk_loc *loc,
		       uint32_t len);

/* A trim record of [lba, lba + count) at generation gen, at *loc, is durable:
 * every block of the range with an older generation reads zero. */
void gga_pk_trim_done(struct gga_pk *pk, uint32_t lba, uint32_t count, uint64_t gen,
		      const struct gga_pk_loc *loc);

/* The segment GC should clean (greedy below gc_low free segments, else the best
 * age * (1 - u) / (1 + u)); GGA_PK_NONE if none is sealed and idle. */
uint32_t gga_pk_gc_pick(const struct gga_pk *pk);

/* Does the map still reference the record rec of segment seg (GC moves it)? */
bool gga_pk_gc_live(const struct gga_pk *pk, uint32_t seg, const struct gga_pk_logrec *rec);

/*
 * The record rec of segment from was copied verbatim (same generation) to *to
 * and is durable there: compare-and-swap; true if the map moved to the copy,
 * false if a host write or a trim came first (the copy counts for nothing).
 */
bool gga_pk_gc_move(struct gga_pk *pk, uint32_t from, const struct gga_pk_logrec *rec,
		    const struct gga_pk_loc *to);

/*
 * Begin a checkpoint: *image (gga_pk_size bytes) gets what must be durable:
 * the map, the SUT, the next reserve list (extended from the free segments)
 * and which segments recovery must scan. -EBUSY if one is running.
 */
int gga_pk_ckpt_begin(struct gga_pk *pk, struct gga_pk *image);

/* The image of the running checkpoint is durable on the members: its reserve
 * list is committed, segments free-pending at its begin are free (I4). */
void gga_pk_ckpt_commit(struct gga_pk *pk);

/* The image could not be written: the checkpoint is forgotten (a later one redoes it). */
void gga_pk_ckpt_abort(struct gga_pk *pk);

/*
 * Recovery after a crash: load the last committed image, then for every
 * segment gga_pk_recover_segment with the seq its header holds on the
 * members; when it returns true, every intact record found in it (in any
 * order) goes to gga_pk_recover_record. gga_pk_recover_end rebuilds the SUT.
 */
void gga_pk_recover_begin(struct gga_pk *pk, const struct gga_pk *image);
bool gga_pk_recover_segment(struct gga_pk *pk, uint32_t seg, uint64_t seq);
void gga_pk_recover_record(struct gga_pk *pk, uint32_t seg, const struct gga_pk_logrec *rec);
void gga_pk_recover_end(struct gga_pk *pk);

/* 0: no throttle; 1..3: the free segments fell below geom.throttle[level - 1]. */
uint32_t gga_pk_throttle(const struct gga_pk *pk);

struct gga_pk_stats {
	uint64_t used_blocks;     /* mapped blocks (NUSE) */
	uint64_t live_bytes;      /* bytes the map references, on one member */
	uint32_t free_segs;       /* free segments (the reserve list's included) */
	uint32_t pending_segs;    /* free-pending: free at the next commit(s) */
	uint64_t writable_blocks; /* blocks that can still be written: min(nblocks, used +
				   * host-usable units / max_len) (NCAP) */
};

void gga_pk_stats(const struct gga_pk *pk, struct gga_pk_stats *st);

#endif /* GGA_PACKED_H */
