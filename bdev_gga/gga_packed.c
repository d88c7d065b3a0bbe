/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rules of the packed layout's log (gga_packed.h; docs/DESIGN.md,
 * "Packed layout: the log's rules (draft)").
 */
#include "gga_packed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t
align8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

size_t
gga_pk_size(const struct gga_pk_geom *g)
{
	if (g == NULL || g->nsegs < 2 || g->seg_units == 0 || g->nblocks == 0 || g->max_len == 0 ||
	    g->max_len > g->seg_units || g->max_len > UINT16_MAX || g->reserve_len == 0 ||
	    g->reserve_len > g->nsegs || g->protect >= g->nsegs || g->nsegs > (1u << 24) ||
	    g->nblocks > (1u << 30)) {
		return 0;
	}
	return sizeof(struct gga_pk) + align8((size_t)g->nblocks * sizeof(struct gga_pk_entry)) +
	       align8((size_t)g->nsegs * sizeof(struct gga_pk_seg)) +
	       align8((size_t)g->nsegs * sizeof(uint32_t));
}

int
gga_pk_init(struct gga_pk *pk, size_t size, const struct gga_pk_geom *g)
{
	size_t need = gga_pk_size(g);
	uint32_t i;

	if (need == 0 || size < need) {
		return -EINVAL;
	}
	memset(pk, 0, need);
	pk->geom = *g;
	pk->map_off = sizeof(struct gga_pk);
	pk->sut_off = pk->map_off + align8((size_t)g->nblocks * sizeof(struct gga_pk_entry));
	pk->res_off = pk->sut_off + align8((size_t)g->nsegs * sizeof(struct gga_pk_seg));
	pk->size = (uint32_t)need;
	pk->next_seq = 1;
	pk->next_gen = 1;
	pk->ckpt_seq = 1;
	pk->open = GGA_PK_NONE;
	for (i = 0; i < g->nblocks; i++) {
		gga_pk_map(pk)[i].seg = GGA_PK_NONE;
	}
	for (i = 0; i < g->reserve_len; i++) {
		gga_pk_res(pk)[i] = i;
	}
	pk->nres = pk->res_committed = g->reserve_len;
	return 0;
}

struct gga_pk *
gga_pk_create(const struct gga_pk_geom *g)
{
	size_t size = gga_pk_size(g);
	struct gga_pk *pk;

	if (size == 0) {
		return NULL;
	}
	pk = aligned_alloc(8, align8(size));
	if (pk != NULL && gga_pk_init(pk, size, g) != 0) {
		free(pk);
		pk = NULL;
	}
	return pk;
}

void
gga_pk_destroy(struct gga_pk *pk)
{
	free(pk);
}

uint64_t
gga_pk_new_gen(struct gga_pk *pk)
{
	return pk->next_gen++;
}

static uint32_t
count_state(const struct gga_pk *pk, uint32_t state)
{
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	uint32_t i, c = 0;

	for (i = 0; i < pk->geom.nsegs; i++) {
		c += sut[i].state == state;
	}
	return c;
}

/* A sealed segment with nothing live and nothing in flight is free-pending (I4). */
static void
maybe_release(struct gga_pk *pk, uint32_t s)
{
	struct gga_pk_seg *seg = &gga_pk_sut(pk)[s];

	if (seg->state == GGA_PK_SEG_FULL && seg->live == 0 && seg->inflight == 0) {
		seg->state = GGA_PK_SEG_PENDING;
	}
}

static bool
in_reserve(const struct gga_pk *pk, uint32_t s)
{
	uint32_t i;

	for (i = 0; i < pk->nres; i++) {
		if (gga_pk_res(pk)[i] == s) {
			return true;
		}
	}
	return false;
}

/*
 * What would give space when none can be allocated; list_empty: the committed
 * reserve list is used up (else the protected reserve stopped a host write).
 */
static enum gga_pk_status
what_helps(const struct gga_pk *pk, bool list_empty)
{
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	uint32_t i, victim;

	for (i = 0; i < pk->geom.nsegs; i++) {
		if (sut[i].state == GGA_PK_SEG_PENDING || sut[i].state == GGA_PK_SEG_COMMITTING) {
			return GGA_PK_NEED_CKPT; /* its commit frees them (I4) */
		}
		if (list_empty && sut[i].state == GGA_PK_SEG_FREE && !in_reserve(pk, i)) {
			return GGA_PK_NEED_CKPT; /* its commit lists them (I3) */
		}
	}
	if (list_empty && pk->nres > pk->res_committed) {
		return GGA_PK_NEED_CKPT;
	}
	/* GC helps when the emptiest sealed segment's live data, moved, leaves room
	 * for a record of any size in the segment it moves to. */
	victim = GGA_PK_NONE;
	for (i = 0; i < pk->geom.nsegs; i++) {
		if (sut[i].state == GGA_PK_SEG_FULL && sut[i].inflight == 0 &&
		    (victim == GGA_PK_NONE || sut[i].live < sut[victim].live)) {
			victim = i;
		}
	}
	if (victim != GGA_PK_NONE && sut[victim].live + pk->geom.max_len <= pk->geom.seg_units) {
		return GGA_PK_NEED_GC;
	}
	return GGA_PK_FULL;
}

enum gga_pk_status
gga_pk_alloc(struct gga_pk *pk, enum gga_pk_class cls, uint32_t len, struct gga_pk_loc *loc)
{
	struct gga_pk_seg *sut = gga_pk_sut(pk), *seg;
	uint32_t *res = gga_pk_res(pk), s, free_segs;

	if (len == 0 || len > pk->geom.max_len) {
		return GGA_PK_FULL;
	}
	if (pk->open != GGA_PK_NONE && sut[pk->open].fill + len > pk->geom.seg_units) {
		/* Sealed at the first record it cannot take, even if no segment can be
		 * opened now: emptied, it is freed; else GC may clean it. */
		sut[pk->open].state = GGA_PK_SEG_FULL;
		maybe_release(pk, pk->open);
		pk->open = GGA_PK_NONE;
	}
	if (pk->open == GGA_PK_NONE) {
		free_segs = count_state(pk, GGA_PK_SEG_FREE);
		/* Host writes leave the protected reserve, trims half of it, GC none. */
		if ((cls == GGA_PK_HOST && free_segs <= pk->geom.protect) ||
		    (cls == GGA_PK_TRIM && free_segs <= pk->geom.protect / 2)) {
			return what_helps(pk, false);
		}
		if (pk->res_committed == 0) { /* I3: only a committed list is opened */
			return what_helps(pk, true);
		}
		s = res[0];
		memmove(res, res + 1, (pk->nres - 1) * sizeof(*res));
		res[--pk->nres] = 0;
		pk->res_committed--;
		seg = &sut[s];
		seg->state = GGA_PK_SEG_OPEN;
		seg->seq = pk->next_seq++;
		seg->live = seg->fill = seg->inflight = 0;
		pk->open = s;
	}
	seg = &sut[pk->open];
	loc->seg = pk->open;
	loc->off = seg->fill;
	seg->fill += len;
	seg->inflight++;
	return GGA_PK_OK;
}

static void
done_inflight(struct gga_pk *pk, uint32_t s)
{
	struct gga_pk_seg *seg = &gga_pk_sut(pk)[s];

	if (seg->inflight > 0) {
		seg->inflight--;
	}
	maybe_release(pk, s);
}

void
gga_pk_abort(struct gga_pk *pk, const struct gga_pk_loc *loc)
{
	done_inflight(pk, loc->seg);
}

/* The entry of lba leaves its location: its units are given back. */
static void
unref(struct gga_pk *pk, struct gga_pk_entry *e)
{
	struct gga_pk_seg *seg;

	if (e->state != GGA_PK_MAPPED) {
		return;
	}
	seg = &gga_pk_sut(pk)[e->seg];
	seg->live -= e->len;
	pk->live -= e->len;
	pk->mapped--;
	maybe_release(pk, e->seg);
}

static void
ref(struct gga_pk *pk, struct gga_pk_entry *e, uint32_t seg, uint32_t off, uint32_t len,
    uint64_t gen)
{
	e->state = GGA_PK_MAPPED;
	e->seg = seg;
	e->off = off;
	e->len = (uint16_t)len;
	e->gen = gen;
	gga_pk_sut(pk)[seg].live += len;
	pk->live += len;
	pk->mapped++;
}

bool
gga_pk_write_done(struct gga_pk *pk, uint32_t lba, uint64_t gen, const struct gga_pk_loc *loc,
		  uint32_t len)
{
	struct gga_pk_entry *e = &gga_pk_map(pk)[lba];
	bool took = gen > e->gen;

	if (took) {
		unref(pk, e);
		ref(pk, e, loc->seg, loc->off, len, gen);
	}
	done_inflight(pk, loc->seg);
	return took;
}

/*
 * Every block of the range older than gen reads zero. Recovery passes
 * account false: the counts it loaded are rebuilt at its end, and giving units
 * back to them could free a segment the scan still maps into.
 */
static void
trim_range(struct gga_pk *pk, uint32_t lba, uint32_t count, uint64_t gen, bool account)
{
	struct gga_pk_entry *e;
	uint32_t i;

	for (i = lba; i < lba + count && i < pk->geom.nblocks; i++) {
		e = &gga_pk_map(pk)[i];
		if (gen > e->gen) {
			if (account) {
				unref(pk, e);
			}
			e->state = GGA_PK_ZERO;
			e->seg = GGA_PK_NONE;
			e->off = 0;
			e->len = 0;
			e->gen = gen;
		}
	}
}

void
gga_pk_trim_done(struct gga_pk *pk, uint32_t lba, uint32_t count, uint64_t gen,
		 const struct gga_pk_loc *loc)
{
	trim_range(pk, lba, count, gen, true);
	done_inflight(pk, loc->seg);
}

/* Is a better than b as a cost-benefit victim: age * (1 - u) / (1 + u), u = live / size? */
static bool
cb_better(const struct gga_pk *pk, uint32_t a, uint32_t b)
{
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	unsigned __int128 S = pk->geom.seg_units;
	unsigned __int128 age_a = pk->next_seq - sut[a].seq, age_b = pk->next_seq - sut[b].seq;

	return age_a * (S - sut[a].live) * (S + sut[b].live) >
	       age_b * (S - sut[b].live) * (S + sut[a].live);
}

uint32_t
gga_pk_gc_pick(const struct gga_pk *pk)
{
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	bool greedy = count_state(pk, GGA_PK_SEG_FREE) < pk->geom.gc_low;
	uint32_t i, best = GGA_PK_NONE;

	for (i = 0; i < pk->geom.nsegs; i++) {
		if (sut[i].state != GGA_PK_SEG_FULL || sut[i].inflight != 0) {
			continue;
		}
		if (best == GGA_PK_NONE || (greedy && sut[i].live < sut[best].live) ||
		    (!greedy && cb_better(pk, i, best))) {
			best = i;
		}
	}
	return best;
}

static bool
points_at(const struct gga_pk_entry *e, uint32_t seg, const struct gga_pk_logrec *rec)
{
	return e->state == GGA_PK_MAPPED && e->seg == seg && e->off == rec->off &&
	       e->gen == rec->gen;
}

bool
gga_pk_gc_live(const struct gga_pk *pk, uint32_t seg, const struct gga_pk_logrec *rec)
{
	return rec->type == GGA_PK_LOG_DATA && rec->lba < pk->geom.nblocks &&
	       points_at(&gga_pk_map(pk)[rec->lba], seg, rec);
}

bool
gga_pk_gc_move(struct gga_pk *pk, uint32_t from, const struct gga_pk_logrec *rec,
	       const struct gga_pk_loc *to)
{
	struct gga_pk_entry *e;
	bool moved = gga_pk_gc_live(pk, from, rec);

	if (moved) {
		e = &gga_pk_map(pk)[rec->lba];
		unref(pk, e);
		ref(pk, e, to->seg, to->off, rec->len, rec->gen);
	}
	done_inflight(pk, to->seg);
	return moved;
}

int
gga_pk_ckpt_begin(struct gga_pk *pk, struct gga_pk *image)
{
	struct gga_pk_seg *sut = gga_pk_sut(pk), *isut;
	uint32_t *res = gga_pk_res(pk), i;

	if (pk->in_ckpt) {
		return -EBUSY;
	}
	pk->in_ckpt = 1;
	/* Nothing live in them now, so the map of this image does not reference them (I4). */
	for (i = 0; i < pk->geom.nsegs; i++) {
		if (sut[i].state == GGA_PK_SEG_PENDING) {
			sut[i].state = GGA_PK_SEG_COMMITTING;
		}
	}
	/* The next reserve list: what is left of the committed one, then free segments. */
	pk->nres = pk->res_committed;
	for (i = 0; i < pk->geom.nsegs && pk->nres < pk->geom.reserve_len; i++) {
		if (sut[i].state == GGA_PK_SEG_FREE && !in_reserve(pk, i)) {
			res[pk->nres++] = i;
		}
	}
	for (i = pk->nres; i < pk->geom.nsegs; i++) {
		res[i] = 0;
	}
	memcpy(image, pk, pk->size);
	image->ckpt_seq = pk->next_seq;
	image->open = GGA_PK_NONE;
	image->res_committed = image->nres;
	image->in_ckpt = 0;
	isut = gga_pk_sut(image);
	for (i = 0; i < pk->geom.nsegs; i++) {
		/* Records may still land in the open segment and in busy ones: recovery scans them. */
		isut[i].scan = sut[i].state == GGA_PK_SEG_OPEN || sut[i].inflight != 0;
		if (isut[i].state == GGA_PK_SEG_OPEN) {
			isut[i].state = GGA_PK_SEG_FULL;
		} else if (isut[i].state == GGA_PK_SEG_COMMITTING) {
			isut[i].state = GGA_PK_SEG_FREE;
		}
		isut[i].inflight = 0;
	}
	return 0;
}

void
gga_pk_ckpt_commit(struct gga_pk *pk)
{
	struct gga_pk_seg *sut = gga_pk_sut(pk);
	uint32_t i;

	if (!pk->in_ckpt) {
		return;
	}
	for (i = 0; i < pk->geom.nsegs; i++) {
		if (sut[i].state == GGA_PK_SEG_COMMITTING) {
			sut[i].state = GGA_PK_SEG_FREE;
			sut[i].live = sut[i].fill = 0;
		}
	}
	pk->res_committed = pk->nres;
	pk->in_ckpt = 0;
}

void
gga_pk_ckpt_abort(struct gga_pk *pk)
{
	uint32_t i;

	/* The committing segments stay so; the next begin takes them with the new pending ones. */
	for (i = pk->res_committed; i < pk->nres; i++) {
		gga_pk_res(pk)[i] = 0;
	}
	pk->nres = pk->res_committed;
	pk->in_ckpt = 0;
}

void
gga_pk_recover_begin(struct gga_pk *pk, const struct gga_pk *image)
{
	memcpy(pk, image, image->size);
}

bool
gga_pk_recover_segment(struct gga_pk *pk, uint32_t s, uint64_t seq)
{
	struct gga_pk_seg *seg = &gga_pk_sut(pk)[s];

	if (seq >= pk->next_seq) {
		pk->next_seq = seq + 1;
	}
	if (seg->scan) {
		return true;
	}
	/* Opened since the image began: from its reserve list (I3), so the seq says so. */
	if (seg->state == GGA_PK_SEG_FREE && in_reserve(pk, s) && seq >= pk->ckpt_seq) {
		seg->state = GGA_PK_SEG_FULL;
		seg->seq = seq;
		seg->scan = 1;
		return true;
	}
	return false;
}

void
gga_pk_recover_record(struct gga_pk *pk, uint32_t seg, const struct gga_pk_logrec *rec)
{
	struct gga_pk_entry *e;

	if (rec->gen >= pk->next_gen) {
		pk->next_gen = rec->gen + 1;
	}
	if (rec->type == GGA_PK_LOG_TRIM) {
		trim_range(pk, rec->lba, rec->count, rec->gen, false);
		return;
	}
	if (rec->lba >= pk->geom.nblocks || seg >= pk->geom.nsegs || rec->len == 0 ||
	    rec->len > pk->geom.max_len) {
		return;
	}
	/* The newest generation wins; live counts are rebuilt at the end. */
	e = &gga_pk_map(pk)[rec->lba];
	if (rec->gen > e->gen) {
		e->state = GGA_PK_MAPPED;
		e->seg = seg;
		e->off = rec->off;
		e->len = rec->len;
		e->gen = rec->gen;
	}
}

void
gga_pk_recover_end(struct gga_pk *pk)
{
	struct gga_pk_entry *map = gga_pk_map(pk);
	struct gga_pk_seg *sut = gga_pk_sut(pk);
	uint32_t *res = gga_pk_res(pk), i, j;

	for (i = 0; i < pk->geom.nsegs; i++) {
		sut[i].live = 0;
		sut[i].inflight = 0;
		sut[i].scan = 0;
		if (sut[i].state != GGA_PK_SEG_FREE) {
			sut[i].state = GGA_PK_SEG_FULL;
			sut[i].fill = pk->geom.seg_units; /* sealed: its tail is not trusted */
		}
	}
	pk->live = pk->mapped = 0;
	for (i = 0; i < pk->geom.nblocks; i++) {
		if (map[i].state == GGA_PK_MAPPED) {
			sut[map[i].seg].live += map[i].len;
			pk->live += map[i].len;
			pk->mapped++;
		}
	}
	/* The list keeps the segments not opened, in order; the opened ones were its head. */
	for (i = j = 0; i < pk->nres; i++) {
		if (sut[res[i]].state == GGA_PK_SEG_FREE) {
			res[j++] = res[i];
		}
	}
	for (i = j; i < pk->nres; i++) {
		res[i] = 0;
	}
	pk->nres = pk->res_committed = j;
	/* The image may still reference an emptied segment: it waits for a commit (I4). */
	for (i = 0; i < pk->geom.nsegs; i++) {
		maybe_release(pk, i);
	}
	pk->open = GGA_PK_NONE;
	pk->in_ckpt = 0;
}

uint32_t
gga_pk_throttle(const struct gga_pk *pk)
{
	uint32_t free_segs = count_state(pk, GGA_PK_SEG_FREE), level;

	for (level = 3; level > 0; level--) {
		if (free_segs < pk->geom.throttle[level - 1]) {
			return level;
		}
	}
	return 0;
}

void
gga_pk_stats(const struct gga_pk *pk, struct gga_pk_stats *st)
{
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	uint64_t units = 0, w;
	uint32_t free_segs = count_state(pk, GGA_PK_SEG_FREE);

	memset(st, 0, sizeof(*st));
	st->used_blocks = pk->mapped;
	st->live_bytes = pk->live * 16;
	st->free_segs = free_segs;
	st->pending_segs = count_state(pk, GGA_PK_SEG_PENDING) +
			   count_state(pk, GGA_PK_SEG_COMMITTING);
	/* What host writes may still fill: free segments above the protected ones, the
	 * pending ones (free after a commit), and the open segment's tail. */
	free_segs += st->pending_segs;
	if (free_segs > pk->geom.protect) {
		units = (uint64_t)(free_segs - pk->geom.protect) * pk->geom.seg_units;
	}
	if (pk->open != GGA_PK_NONE) {
		units += pk->geom.seg_units - sut[pk->open].fill;
	}
	w = pk->mapped + units / pk->geom.max_len;
	st->writable_blocks = w < pk->geom.nblocks ? w : pk->geom.nblocks;
}
