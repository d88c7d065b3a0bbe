/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The plain tests of the packed log's rules (bdev_gga/gga_packed.c): the
 * edges of each rule, on small pools of their own. The exhaustive walk is in
 * gga_packed_ut.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bdev_gga/gga_packed.h"
#include "gga_packed_ut.h"
#include "gga_ut.h"

/* A pool of its own for each test. */
static struct gga_pk *
pool(uint32_t nsegs, uint32_t seg_units, uint32_t reserve_len, uint32_t protect)
{
	struct gga_pk_geom geom = {
		.nsegs = nsegs,
		.seg_units = seg_units,
		.nblocks = 8,
		.max_len = 2,
		.reserve_len = reserve_len,
		.protect = protect,
		.gc_low = 2,
		.throttle = { 4, 3, 2 },
	};
	struct gga_pk *pk = gga_pk_create(&geom);

	CU_ASSERT_FATAL(pk != NULL);
	return pk;
}

/* A host write of lba, len units, completed; its location. */
static struct gga_pk_loc
put(struct gga_pk *pk, uint32_t lba, uint32_t len)
{
	struct gga_pk_loc loc = { 0 };

	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_HOST, len, &loc) == GGA_PK_OK);
	CU_ASSERT(gga_pk_write_done(pk, lba, gga_pk_new_gen(pk), &loc, len));
	return loc;
}

static void
ckpt(struct gga_pk *pk, struct gga_pk *image)
{
	CU_ASSERT_FATAL(gga_pk_ckpt_begin(pk, image) == 0);
	gga_pk_ckpt_commit(pk);
}

void
test_alloc_out_of_place(void)
{
	struct gga_pk *pk = pool(4, 4, 4, 1);
	struct gga_pk_loc a, b;

	CU_ASSERT(gga_pk_size(&(struct gga_pk_geom){ .nsegs = 1 }) == 0);
	a = put(pk, 0, 2);
	b = put(pk, 0, 2);
	CU_ASSERT(a.seg != b.seg || a.off != b.off);
	UT_ASSERT_EQ(gga_pk_sut(pk)[b.seg].live, 2); /* the old location's units given back */
	UT_ASSERT_EQ(pk->live, 2);
	UT_ASSERT_EQ(pk->mapped, 1);
	/* A record that does not fit seals the open segment: the next one opens. */
	a = put(pk, 1, 1);
	b = put(pk, 2, 2);
	UT_ASSERT_EQ(a.seg, 1);
	UT_ASSERT_EQ(b.seg, 1);
	b = put(pk, 3, 2);
	UT_ASSERT_EQ(b.seg, 2);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_FULL);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].fill, 3);
	gga_pk_destroy(pk);
}

/* I3: a segment is opened only from the committed reserve list. */
void
test_reserve_list_needs_commit(void)
{
	struct gga_pk *pk = pool(6, 2, 2, 1), *image = pool(6, 2, 2, 1);
	struct gga_pk_loc loc;

	put(pk, 0, 2);
	put(pk, 1, 2);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 2, &loc), GGA_PK_NEED_CKPT);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_GC, 2, &loc), GGA_PK_NEED_CKPT);
	CU_ASSERT_FATAL(gga_pk_ckpt_begin(pk, image) == 0);
	UT_ASSERT_EQ(gga_pk_ckpt_begin(pk, image), -EBUSY);
	UT_ASSERT_EQ(image->nres, 2);
	UT_ASSERT_EQ(gga_pk_res(image)[0], 2);
	/* Begun, not committed: the new list may not be used yet. */
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 2, &loc), GGA_PK_NEED_CKPT);
	gga_pk_ckpt_abort(pk);
	UT_ASSERT_EQ(pk->nres, 0);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 2, &loc), GGA_PK_NEED_CKPT);
	ckpt(pk, image);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 2, &loc), GGA_PK_OK);
	UT_ASSERT_EQ(loc.seg, 2);
	gga_pk_destroy(pk);
	gga_pk_destroy(image);
}

/* Host writes leave the protected reserve; trims may use half of it, GC all of it. */
void
test_protected_reserve(void)
{
	struct gga_pk *pk = pool(5, 2, 5, 2);
	struct gga_pk_loc loc;
	struct gga_pk_stats st;

	put(pk, 0, 2);
	put(pk, 1, 2);
	put(pk, 2, 2);
	gga_pk_stats(pk, &st);
	UT_ASSERT_EQ(st.free_segs, 2);
	UT_ASSERT_EQ(st.writable_blocks, 3);
	/* Segments 0, 1 are wholly live: GC would give nothing. */
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 1, &loc), GGA_PK_FULL);
	UT_ASSERT_EQ(gga_pk_throttle(pk), 2);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &loc), GGA_PK_OK);
	UT_ASSERT_EQ(loc.seg, 3);
	gga_pk_trim_done(pk, 0, 1, gga_pk_new_gen(pk), &loc);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &loc), GGA_PK_OK);
	gga_pk_trim_done(pk, 7, 1, gga_pk_new_gen(pk), &loc);
	/* Block 0 trimmed: segment 0 is free-pending, a checkpoint would free it. */
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_PENDING);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &loc), GGA_PK_NEED_CKPT);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_GC, 2, &loc), GGA_PK_OK);
	UT_ASSERT_EQ(loc.seg, 4);
	gga_pk_abort(pk, &loc);
	UT_ASSERT_EQ(gga_pk_throttle(pk), 3);
	gga_pk_destroy(pk);
}

/* I4: a segment emptied is free only at the commit of a checkpoint begun after. */
void
test_pending_until_commit(void)
{
	struct gga_pk *pk = pool(6, 2, 6, 1), *image = pool(6, 2, 6, 1);
	struct gga_pk_loc loc;
	uint32_t i;

	put(pk, 0, 2); /* segment 0 */
	put(pk, 1, 2); /* segment 1 */
	put(pk, 0, 2); /* segment 2: segment 0 is empty */
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_PENDING);
	CU_ASSERT_FATAL(gga_pk_ckpt_begin(pk, image) == 0);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_COMMITTING);
	UT_ASSERT_EQ(gga_pk_sut(image)[0].state, GGA_PK_SEG_FREE);
	for (i = 0; i < image->nres; i++) {
		CU_ASSERT(gga_pk_res(image)[i] != 0);
	}
	put(pk, 1, 2); /* segment 3: segment 1 is empty after the begin */
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_PENDING);
	gga_pk_ckpt_commit(pk);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_FREE);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_PENDING);
	/* The segment open at the begin is scanned by a recovery from this image. */
	UT_ASSERT_EQ(gga_pk_sut(image)[2].scan, 1);
	ckpt(pk, image);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_FREE);
	UT_ASSERT_EQ(gga_pk_res(pk)[pk->nres - 1], 0); /* free at the last begin: listed */
	CU_ASSERT(pk->nres == 3 && gga_pk_res(pk)[0] == 4);
	UT_ASSERT_EQ(gga_pk_alloc(pk, GGA_PK_HOST, 2, &loc), GGA_PK_OK);
	gga_pk_destroy(pk);
	gga_pk_destroy(image);
}

/* Completions in any order: the newer generation stays; trims are ordered the same way. */
void
test_generations_order_completions(void)
{
	struct gga_pk *pk = pool(4, 8, 4, 1);
	struct gga_pk_loc a, b, t;
	uint64_t ga, gb, gt;

	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_HOST, 2, &a) == GGA_PK_OK);
	ga = gga_pk_new_gen(pk);
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &t) == GGA_PK_OK);
	gt = gga_pk_new_gen(pk);
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_HOST, 1, &b) == GGA_PK_OK);
	gb = gga_pk_new_gen(pk);
	CU_ASSERT(ga < gt && gt < gb);
	CU_ASSERT(gga_pk_write_done(pk, 3, gb, &b, 1));
	gga_pk_trim_done(pk, 3, 1, gt, &t); /* older than the write done: no effect */
	CU_ASSERT(!gga_pk_write_done(pk, 3, ga, &a, 2));
	UT_ASSERT_EQ(gga_pk_map(pk)[3].state, GGA_PK_MAPPED);
	UT_ASSERT_EQ(gga_pk_map(pk)[3].gen, gb);
	UT_ASSERT_EQ(pk->live, 1);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].inflight, 0);
	/* A newer trim of a range zeroes and gives the units back. */
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &t) == GGA_PK_OK);
	gga_pk_trim_done(pk, 2, 4, gga_pk_new_gen(pk), &t);
	UT_ASSERT_EQ(gga_pk_map(pk)[3].state, GGA_PK_ZERO);
	UT_ASSERT_EQ(gga_pk_map(pk)[2].state, GGA_PK_ZERO);
	UT_ASSERT_EQ(gga_pk_map(pk)[6].state, GGA_PK_UNMAPPED);
	UT_ASSERT_EQ(pk->live, 0);
	UT_ASSERT_EQ(pk->mapped, 0);
	gga_pk_destroy(pk);
}

/* GC's compare-and-swap: a host write that completed first wins; a move keeps the generation. */
void
test_gc_cas(void)
{
	struct gga_pk *pk = pool(6, 2, 6, 1);
	struct gga_pk_loc a, to;
	struct gga_pk_logrec rec = { 0 };

	a = put(pk, 0, 2);
	put(pk, 1, 2);
	rec.lba = 0;
	rec.len = 2;
	rec.off = a.off;
	rec.gen = gga_pk_map(pk)[0].gen;
	rec.type = GGA_PK_LOG_DATA;
	UT_ASSERT_EQ(gga_pk_gc_pick(pk), 0);
	CU_ASSERT(gga_pk_gc_live(pk, 0, &rec));
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_GC, 2, &to) == GGA_PK_OK);
	put(pk, 0, 2); /* the host write completes before the copy */
	CU_ASSERT(!gga_pk_gc_live(pk, 0, &rec));
	CU_ASSERT(!gga_pk_gc_move(pk, 0, &rec, &to));
	UT_ASSERT_EQ(gga_pk_map(pk)[0].gen, rec.gen + 2);
	UT_ASSERT_EQ(gga_pk_sut(pk)[to.seg].live, 0);
	UT_ASSERT_EQ(pk->live, 4);
	/* Block 1 moves: same generation, the victim empties and waits for a commit. */
	rec.lba = 1;
	rec.gen = gga_pk_map(pk)[1].gen;
	rec.off = 0;
	CU_ASSERT(gga_pk_gc_live(pk, 1, &rec));
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_GC, 2, &to) == GGA_PK_OK);
	CU_ASSERT(gga_pk_gc_move(pk, 1, &rec, &to));
	UT_ASSERT_EQ(gga_pk_map(pk)[1].gen, rec.gen);
	UT_ASSERT_EQ(gga_pk_map(pk)[1].seg, to.seg);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_PENDING);
	UT_ASSERT_EQ(pk->live, 4);
	gga_pk_destroy(pk);
}

/* Greedy (fewest live units) below gc_low free segments, else age * (1 - u) / (1 + u). */
void
test_gc_pick(void)
{
	struct gga_pk *pk = pool(6, 4, 6, 1);
	struct gga_pk_seg *sut = gga_pk_sut(pk);

	sut[0] = (struct gga_pk_seg){ .seq = 1, .live = 3, .fill = 4, .state = GGA_PK_SEG_FULL };
	sut[1] = (struct gga_pk_seg){ .seq = 9, .live = 1, .fill = 4, .state = GGA_PK_SEG_FULL };
	sut[2] = (struct gga_pk_seg){
		.seq = 2, .live = 0, .fill = 4, .inflight = 1, .state = GGA_PK_SEG_FULL
	};
	pk->next_seq = 10;
	/* 3 free segments: cost-benefit: 9 * 1/7 beats 1 * 3/5 (busy segment 2 is skipped). */
	UT_ASSERT_EQ(gga_pk_gc_pick(pk), 0);
	sut[3].state = sut[4].state = GGA_PK_SEG_FULL;
	sut[3].live = sut[4].live = 4;
	sut[3].seq = sut[4].seq = 5;
	UT_ASSERT_EQ(gga_pk_gc_pick(pk), 1); /* 1 free: greedy */
	sut[0].state = sut[1].state = sut[3].state = sut[4].state = GGA_PK_SEG_OPEN;
	UT_ASSERT_EQ(gga_pk_gc_pick(pk), GGA_PK_NONE);
	gga_pk_destroy(pk);
}

/* A checkpoint's image has recovery scan the open segment and sealed ones with records in flight. */
void
test_ckpt_scans_busy(void)
{
	struct gga_pk *pk = pool(6, 2, 6, 1), *image = pool(6, 2, 6, 1);
	struct gga_pk_loc a, b;

	put(pk, 0, 2); /* segment 0: sealed, idle at the begin */
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_HOST, 2, &a) == GGA_PK_OK);
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_HOST, 1, &b) == GGA_PK_OK);
	UT_ASSERT_EQ(a.seg, 1);
	UT_ASSERT_EQ(b.seg, 2);
	CU_ASSERT_FATAL(gga_pk_ckpt_begin(pk, image) == 0);
	UT_ASSERT_EQ(gga_pk_sut(image)[0].scan, 0);
	UT_ASSERT_EQ(gga_pk_sut(image)[1].scan, 1); /* sealed, a write in flight */
	UT_ASSERT_EQ(gga_pk_sut(image)[2].scan, 1); /* open */
	UT_ASSERT_EQ(gga_pk_sut(image)[2].state, GGA_PK_SEG_FULL);
	UT_ASSERT_EQ(gga_pk_sut(image)[1].inflight, 0);
	UT_ASSERT_EQ(image->ckpt_seq, pk->next_seq);
	gga_pk_ckpt_commit(pk);
	gga_pk_destroy(pk);
	gga_pk_destroy(image);
}

/* Recovery: the image, then the scanned segments' records by generation. */
void
test_recover(void)
{
	struct gga_pk *pk = pool(6, 4, 2, 1), *image = pool(6, 4, 2, 1);
	struct gga_pk_logrec old = {
		.gen = 1, .lba = 0, .len = 2, .off = 0, .type = GGA_PK_LOG_DATA
	};
	struct gga_pk_logrec w0 = {
		.gen = 9, .lba = 0, .len = 1, .off = 0, .type = GGA_PK_LOG_DATA
	};
	struct gga_pk_logrec t1 = {
		.gen = 8, .lba = 1, .count = 2, .off = 1, .type = GGA_PK_LOG_TRIM
	};
	struct gga_pk_logrec w2 = {
		.gen = 10, .lba = 2, .len = 2, .off = 2, .type = GGA_PK_LOG_DATA
	};
	struct gga_pk_logrec b1 = {
		.gen = 1, .lba = 1, .len = 2, .off = 0, .type = GGA_PK_LOG_DATA
	};
	struct gga_pk_logrec b2 = {
		.gen = 2, .lba = 2, .len = 2, .off = 2, .type = GGA_PK_LOG_DATA
	};
	uint64_t g2;

	put(pk, 1, 2);
	put(pk, 2, 2); /* segment 0: blocks 1, 2 */
	g2 = gga_pk_map(pk)[2].gen;
	ckpt(pk, image); /* lists segments 1, 2 */
	UT_ASSERT_EQ(image->ckpt_seq, 2);
	gga_pk_recover_begin(pk, image);
	CU_ASSERT(gga_pk_recover_segment(pk, 0, 1)); /* open at the begin */
	gga_pk_recover_record(pk, 0, &b1);
	gga_pk_recover_record(pk, 0, &b2);
	CU_ASSERT(gga_pk_recover_segment(pk, 1, 2));  /* opened since, from the list */
	CU_ASSERT(!gga_pk_recover_segment(pk, 2, 1)); /* listed, not opened since */
	CU_ASSERT(!gga_pk_recover_segment(pk, 3, 7)); /* not listed: never opened since */
	gga_pk_recover_record(pk, 1, &w2);
	gga_pk_recover_record(pk, 1, &t1);
	gga_pk_recover_record(pk, 1, &w0);
	gga_pk_recover_record(pk, 1, &old);
	gga_pk_recover_end(pk);
	UT_ASSERT_EQ(gga_pk_map(pk)[0].gen, 9);
	UT_ASSERT_EQ(gga_pk_map(pk)[0].len, 1);
	UT_ASSERT_EQ(gga_pk_map(pk)[1].state, GGA_PK_ZERO);
	UT_ASSERT_EQ(gga_pk_map(pk)[2].gen, 10); /* the trim (8) is older than 10 */
	CU_ASSERT(g2 < 8);
	UT_ASSERT_EQ(pk->mapped, 2);
	UT_ASSERT_EQ(pk->live, 3);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].live, 3);
	/* Segment 0 is empty but the image maps into it: free-pending, not free. */
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_PENDING);
	UT_ASSERT_EQ(pk->nres, 1);
	UT_ASSERT_EQ(gga_pk_res(pk)[0], 2);
	CU_ASSERT(gga_pk_new_gen(pk) > 10);
	CU_ASSERT(pk->next_seq > 7);
	gga_pk_destroy(pk);
	gga_pk_destroy(image);
}

/*
 * Recovery replays a trim that empties, in the image's counts, a segment a
 * replayed write maps into: the segment stays sealed and live (the first
 * draft gave the trim's units back to the loaded counts and left it
 * free-pending, so the next commit freed it under the write).
 */
void
test_recover_trim_keeps_mapped_segment(void)
{
	struct gga_pk *pk = pool(6, 3, 6, 1), *image = pool(6, 3, 6, 1);
	struct gga_pk_logrec rec[3];
	struct gga_pk_loc a, b, t;
	uint64_t seq0, seq1;

	a = put(pk, 1, 1); /* segment 0, open at the begin below */
	ckpt(pk, image);
	b = put(pk, 0, 2); /* segment 0 again: full */
	CU_ASSERT_FATAL(gga_pk_alloc(pk, GGA_PK_TRIM, 1, &t) == GGA_PK_OK);
	gga_pk_trim_done(pk, 1, 1, gga_pk_new_gen(pk), &t);
	UT_ASSERT_EQ(a.seg, 0);
	UT_ASSERT_EQ(b.seg, 0);
	UT_ASSERT_EQ(t.seg, 1);
	rec[0] = (struct gga_pk_logrec){ .gen = 1, .lba = 1, .len = 1, .off = a.off };
	rec[1] = (struct gga_pk_logrec){
		.gen = gga_pk_map(pk)[0].gen, .lba = 0, .len = 2, .off = b.off
	};
	rec[2] = (struct gga_pk_logrec){ .gen = gga_pk_map(pk)[1].gen,
					 .lba = 1,
					 .count = 1,
					 .off = t.off,
					 .type = GGA_PK_LOG_TRIM };
	seq0 = gga_pk_sut(pk)[0].seq;
	seq1 = gga_pk_sut(pk)[1].seq;
	gga_pk_recover_begin(pk, image);
	CU_ASSERT(gga_pk_recover_segment(pk, 0, seq0));
	gga_pk_recover_record(pk, 0, &rec[0]);
	gga_pk_recover_record(pk, 0, &rec[1]);
	CU_ASSERT(gga_pk_recover_segment(pk, 1, seq1));
	gga_pk_recover_record(pk, 1, &rec[2]);
	gga_pk_recover_end(pk);
	UT_ASSERT_EQ(gga_pk_map(pk)[1].state, GGA_PK_ZERO);
	UT_ASSERT_EQ(gga_pk_map(pk)[0].seg, 0);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_FULL);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].live, 2);
	UT_ASSERT_EQ(gga_pk_sut(pk)[1].state, GGA_PK_SEG_PENDING);
	ckpt(pk, image);
	UT_ASSERT_EQ(gga_pk_sut(pk)[0].state, GGA_PK_SEG_FULL);
	gga_pk_destroy(pk);
	gga_pk_destroy(image);
}
