/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An exhaustive checker of the packed layout's log rules (bdev_gga/gga_packed.c).
 *
 * A tiny world sits beside the module: NB logical blocks, NSEG segments of
 * SEGU units, records of 1..MAXLEN units. The simulated members hold, per
 * segment, the seq its header carries and the records durably written since
 * it was opened, and the last committed checkpoint image. The world calls the
 * module exactly as the bdev will (alloc, write_done, trim_done, gc_pick,
 * gc_live, gc_move, ckpt_begin/commit, recover_*) and decides nothing itself.
 * Events: a host write started, made durable, acknowledged (and all three at
 * once) or failed before it was durable, the same for a trim of one block, a GC step (pick a victim, or copy
 * its next live record), the GC's compare-and-swap, checkpoint begin and
 * commit (or its image's write failing), and a crash of the front (every record in flight lost or durable,
 * as the events before it chose), followed by recovery. Every sequence of
 * events up to a depth is walked (iterative deepening; worlds are memoized as
 * bytes), and after every event:
 *   P1 the map gives every block its last acknowledged write or trim, or a
 *      newer one, and a mapped entry's location holds that very record;
 *   P2 each segment's live count is the sum of the lengths mapped in it;
 *   P3 a segment is reopened only when neither the map, the committed image
 *      nor the running checkpoint's image reference it;
 *   P4 (per state) once faults stop, a settling run (in-flight work finished,
 *      then checkpoints and GC as the module asks) lets a host write of MAXLEN
 *      through, or the module says full only when the live records and that
 *      write could not be packed into the segments host writes may use.
 * Recovery is checked by P1 right after every crash.
 *
 * GGA_PK_DEPTH=d walks to depth d instead of DEPTH (make torture goes deeper).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bdev_gga/gga_packed.h"
#include "gga_packed_ut.h"
#include "gga_ut.h"
#include "ut_explore.h"

#define NB        3
#define NSEG      5
#define SEGU      3
#define MAXLEN    2
#define PROTECT   2
#define MAXREC    SEGU
#define NFLY      2
#define DEPTH     7
#define MAX_DEPTH 16
#define MEMO_BITS 21  /* 23 beyond the default depth */
#define PKB       368 /* >= gga_pk_size of the world's geometry (checked) */

struct d_seg {
	uint64_t seq; /* the header's seq; 0: never opened */
	uint32_t nrec;
	uint32_t pad;
	struct gga_pk_logrec rec[MAXREC];
};

struct fly {
	uint64_t gen;
	struct gga_pk_loc loc;
	uint8_t used, durable, lba, len;
	uint8_t count; /* a trim's blocks */
	uint8_t pad[3];
};

struct gc_run {
	struct gga_pk_logrec rec; /* the record copied, as in the victim */
	struct gga_pk_loc to;
	uint32_t victim;
	uint8_t active, copied;
	uint16_t pad;
};

/* Everything the checker explores: compared and hashed as bytes. */
struct world {
	uint64_t pk[PKB / 8];   /* the front's state */
	uint64_t img[PKB / 8];  /* the committed checkpoint image, on the members */
	uint64_t pend[PKB / 8]; /* the running checkpoint's image (written, not committed) */
	struct d_seg disk[NSEG];
	struct fly fly[NFLY];
	struct fly trim;
	struct gc_run gc;
	uint64_t acked[NB]; /* generation of the newest acknowledged write or trim */
	uint64_t wgens[NB]; /* bit g: a data record of generation g was written */
	uint64_t tgens[NB]; /* bit g: a trim of generation g was started */
	uint8_t front_up;
	uint8_t pad[7];
};

#define PK(w)   ((struct gga_pk *)(w)->pk)
#define IMG(w)  ((struct gga_pk *)(w)->img)
#define PEND(w) ((struct gga_pk *)(w)->pend)

enum ev_type {
	E_WRITE,  /* arg: lba * MAXLEN + len - 1: start, durable, acknowledged at once */
	E_WSTART, /* arg as E_WRITE */
	E_WDUR,   /* arg: slot */
	E_WACK,   /* arg: slot */
	E_WFAIL,  /* arg: slot; the write fails before it is durable */
	E_TSTART, /* arg: lba, or NB: every block */
	E_TDUR,
	E_TACK,
	E_GC,
	E_GC_CAS,
	E_CKPT_BEGIN,
	E_CKPT_COMMIT,
	E_CKPT_FAIL,
	E_CRASH,
	E_NTYPES,
};

static const char *const g_ev_names[E_NTYPES] = {
	"write (durable, acknowledged) lba*2+len-1",
	"write starts lba*2+len-1",
	"write durable, slot",
	"write acknowledged, slot",
	"write fails, slot",
	"trim starts, lba (3: all)",
	"trim durable",
	"trim acknowledged",
	"GC step",
	"GC compare-and-swap",
	"checkpoint begins",
	"checkpoint commits",
	"checkpoint's image write fails",
	"front crash, then recovery",
};

struct ev {
	uint8_t type, arg;
};

static struct {
	bool bad;
	char why[256];
	struct ev path[MAX_DEPTH];
	uint32_t path_len;
	uint64_t steps, states, reopened, crashes, gc_moves, gc_lost, settle_gc, settle_ckpt, full;
	struct ut_memo memo;
} g;

static const struct gga_pk_geom g_geom = {
	.nsegs = NSEG,
	.seg_units = SEGU,
	.nblocks = NB,
	.max_len = MAXLEN,
	.reserve_len = 1,
	.protect = PROTECT,
	.gc_low = 3,
	.throttle = { 4, 3, 2 },
};

static void
violation(const char *fmt, uint64_t a, uint64_t b)
{
	if (!g.bad) {
		g.bad = true;
		snprintf(g.why, sizeof(g.why), fmt, a, b);
	}
}

static bool
image_refs(const struct gga_pk *pk, uint32_t s)
{
	const struct gga_pk_entry *map;
	uint32_t i;

	if (pk->size == 0) {
		return false;
	}
	map = gga_pk_map(pk);
	for (i = 0; i < NB; i++) {
		if (map[i].state == GGA_PK_MAPPED && map[i].seg == s) {
			return true;
		}
	}
	return false;
}

/*
 * The module gave *loc: if its segment was (re)opened, its header now holds the
 * new seq and its old records are gone (P3 checks nobody needed them first).
 */
static void
w_placed(struct world *w, const struct gga_pk_loc *loc)
{
	const struct gga_pk_seg *seg = &gga_pk_sut(PK(w))[loc->seg];
	struct d_seg *d = &w->disk[loc->seg];

	if (seg->seq == d->seq) {
		return;
	}
	g.reopened++;
	if (image_refs(PK(w), loc->seg) || image_refs(IMG(w), loc->seg) ||
	    image_refs(PEND(w), loc->seg)) {
		violation("P3: segment %" PRIu64 " reopened while a map references it (seq %" PRIu64
			  ")",
			  loc->seg, seg->seq);
	}
	/* A GC run may still hold it as its victim: harmless, it reads the records
	 * there now and the compare-and-swap checks location and generation. */
	memset(d, 0, sizeof(*d));
	d->seq = seg->seq;
}

static void
w_put(struct world *w, const struct gga_pk_loc *loc, uint16_t type, uint32_t lba, uint32_t count,
      uint64_t gen, uint32_t len)
{
	struct d_seg *d = &w->disk[loc->seg];
	struct gga_pk_logrec *r;

	if (d->seq != gga_pk_sut(PK(w))[loc->seg].seq || d->nrec >= MAXREC) {
		violation("a record lands in segment %" PRIu64 " not opened for it (%" PRIu64 ")",
			  loc->seg, d->nrec);
		return;
	}
	r = &d->rec[d->nrec++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->lba = lba;
	r->count = count;
	r->gen = gen;
	r->len = (uint16_t)len;
	r->off = loc->off;
	if (type == GGA_PK_LOG_DATA) {
		w->wgens[lba] |= 1ull << (gen & 63);
	}
}

static void
w_ckpt_begin(struct world *w)
{
	if (gga_pk_ckpt_begin(PK(w), PEND(w)) != 0) {
		return;
	}
}

static void
w_ckpt_commit(struct world *w)
{
	if (!PK(w)->in_ckpt) {
		return;
	}
	memcpy(w->img, w->pend, sizeof(w->img)); /* the image is durable, then the commit */
	memset(w->pend, 0, sizeof(w->pend));
	gga_pk_ckpt_commit(PK(w));
}

static void
w_recover(struct world *w)
{
	struct gga_pk *pk = PK(w);
	uint32_t s, i;

	gga_pk_recover_begin(pk, IMG(w));
	for (s = 0; s < NSEG; s++) {
		if (!gga_pk_recover_segment(pk, s, w->disk[s].seq)) {
			continue;
		}
		for (i = 0; i < w->disk[s].nrec; i++) {
			gga_pk_recover_record(pk, s, &w->disk[s].rec[i]);
		}
	}
	gga_pk_recover_end(pk);
}

static void
w_crash(struct world *w)
{
	g.crashes++;
	memset(w->fly, 0, sizeof(w->fly));
	memset(&w->trim, 0, sizeof(w->trim));
	memset(&w->gc, 0, sizeof(w->gc));
	memset(w->pend, 0, sizeof(w->pend));
	memset(w->pk, 0, sizeof(w->pk));
	w_recover(w);
}

static bool
w_start(struct world *w, struct fly *f, enum gga_pk_class cls, uint32_t lba, uint32_t count,
	uint32_t len)
{
	struct gga_pk_loc loc;
	uint32_t b;

	if (gga_pk_alloc(PK(w), cls, len, &loc) != GGA_PK_OK) {
		return false;
	}
	w_placed(w, &loc);
	memset(f, 0, sizeof(*f));
	f->used = 1;
	f->lba = (uint8_t)lba;
	f->len = (uint8_t)len;
	f->count = (uint8_t)count;
	f->loc = loc;
	f->gen = gga_pk_new_gen(PK(w));
	if (f->gen >= 64) {
		violation("generation %" PRIu64 " beyond the checker's masks", f->gen, 0);
	}
	for (b = lba; cls == GGA_PK_TRIM && b < lba + count; b++) {
		w->tgens[b] |= 1ull << (f->gen & 63);
	}
	return true;
}

static void
w_durable(struct world *w, struct fly *f, uint16_t type)
{
	w_put(w, &f->loc, type, f->lba, f->count, f->gen, f->len);
	f->durable = 1;
}

static void
w_ack(struct world *w, struct fly *f, uint16_t type)
{
	uint32_t b;

	if (type == GGA_PK_LOG_DATA) {
		gga_pk_write_done(PK(w), f->lba, f->gen, &f->loc, f->len);
	} else {
		gga_pk_trim_done(PK(w), f->lba, f->count, f->gen, &f->loc);
	}
	for (b = f->lba; b < (uint32_t)f->lba + f->count; b++) {
		if (f->gen > w->acked[b]) {
			w->acked[b] = f->gen;
		}
	}
	memset(f, 0, sizeof(*f));
}

/*
 * A GC step: pick a victim, or copy its next record the map still references
 * (verbatim, same generation) to space of class GC; false if nothing to do.
 */
static bool
w_gc_step(struct world *w)
{
	struct gc_run *gc = &w->gc;
	struct d_seg *d;
	struct gga_pk_loc to;
	uint32_t i;

	if (gc->copied) {
		return false;
	}
	if (!gc->active) {
		gc->victim = gga_pk_gc_pick(PK(w));
		if (gc->victim == GGA_PK_NONE) {
			gc->victim = 0;
			return false;
		}
		gc->active = 1;
		return true;
	}
	d = &w->disk[gc->victim];
	for (i = 0; i < d->nrec; i++) {
		if (gga_pk_gc_live(PK(w), gc->victim, &d->rec[i])) {
			break;
		}
	}
	if (i == d->nrec) {
		memset(gc, 0, sizeof(*gc)); /* nothing live is left: the run ends */
		return true;
	}
	if (gga_pk_alloc(PK(w), GGA_PK_GC, d->rec[i].len, &to) != GGA_PK_OK) {
		return false;
	}
	w_placed(w, &to);
	gc->rec = d->rec[i];
	gc->to = to;
	gc->copied = 1;
	w_put(w, &to, GGA_PK_LOG_DATA, gc->rec.lba, 0, gc->rec.gen, gc->rec.len);
	return true;
}

static void
w_gc_cas(struct world *w)
{
	struct gc_run *gc = &w->gc;

	if (gga_pk_gc_move(PK(w), gc->victim, &gc->rec, &gc->to)) {
		g.gc_moves++;
	} else {
		g.gc_lost++;
	}
	gc->copied = 0;
	memset(&gc->rec, 0, sizeof(gc->rec));
	memset(&gc->to, 0, sizeof(gc->to));
}

static bool
w_enabled(const struct world *w, struct ev e)
{
	switch (e.type) {
	case E_WSTART:
		return !w->fly[0].used || !w->fly[1].used;
	case E_WDUR:
	case E_WFAIL:
		return w->fly[e.arg].used && !w->fly[e.arg].durable;
	case E_WACK:
		return w->fly[e.arg].used && w->fly[e.arg].durable;
	case E_TSTART:
		return !w->trim.used;
	case E_TDUR:
		return w->trim.used && !w->trim.durable;
	case E_TACK:
		return w->trim.used && w->trim.durable;
	case E_GC_CAS:
		return w->gc.copied;
	case E_CKPT_BEGIN:
		return !PK(w)->in_ckpt;
	case E_CKPT_COMMIT:
	case E_CKPT_FAIL:
		return PK(w)->in_ckpt;
	default:
		return true;
	}
}

static void
w_event(struct world *w, struct ev e)
{
	struct fly f;
	uint32_t i;

	switch (e.type) {
	case E_WRITE:
		if (w_start(w, &f, GGA_PK_HOST, e.arg / MAXLEN, 1, e.arg % MAXLEN + 1u)) {
			w_durable(w, &f, GGA_PK_LOG_DATA);
			w_ack(w, &f, GGA_PK_LOG_DATA);
		}
		break;
	case E_WSTART:
		i = w->fly[0].used ? 1 : 0;
		w_start(w, &w->fly[i], GGA_PK_HOST, e.arg / MAXLEN, 1, e.arg % MAXLEN + 1u);
		break;
	case E_WDUR:
		w_durable(w, &w->fly[e.arg], GGA_PK_LOG_DATA);
		break;
	case E_WACK:
		w_ack(w, &w->fly[e.arg], GGA_PK_LOG_DATA);
		break;
	case E_WFAIL:
		gga_pk_abort(PK(w), &w->fly[e.arg].loc);
		memset(&w->fly[e.arg], 0, sizeof(w->fly[e.arg]));
		break;
	case E_TSTART:
		/* arg NB: one trim of every block */
		w_start(w, &w->trim, GGA_PK_TRIM, e.arg < NB ? e.arg : 0, e.arg < NB ? 1 : NB, 1);
		break;
	case E_TDUR:
		w_durable(w, &w->trim, GGA_PK_LOG_TRIM);
		break;
	case E_TACK:
		w_ack(w, &w->trim, GGA_PK_LOG_TRIM);
		break;
	case E_GC:
		w_gc_step(w);
		break;
	case E_GC_CAS:
		w_gc_cas(w);
		break;
	case E_CKPT_BEGIN:
		w_ckpt_begin(w);
		break;
	case E_CKPT_COMMIT:
		w_ckpt_commit(w);
		break;
	case E_CKPT_FAIL:
		memset(w->pend, 0, sizeof(w->pend));
		gga_pk_ckpt_abort(PK(w));
		break;
	case E_CRASH:
		w_crash(w);
		break;
	default:
		break;
	}
}

/* P1 and P2. */
static void
w_check(const struct world *w)
{
	const struct gga_pk *pk = PK(w);
	const struct gga_pk_entry *map = gga_pk_map(pk), *e;
	const struct gga_pk_seg *sut = gga_pk_sut(pk);
	const struct d_seg *d;
	uint64_t live[NSEG] = { 0 }, total = 0, mapped = 0;
	uint32_t b, s, i;

	for (b = 0; b < NB && !g.bad; b++) {
		e = &map[b];
		if (e->gen < w->acked[b]) {
			violation("P1: block %" PRIu64 " maps generation %" PRIu64
				  " older than acknowledged",
				  b, e->gen);
			return;
		}
		if (e->state == GGA_PK_ZERO && !(w->tgens[b] & (1ull << (e->gen & 63)))) {
			violation("P1: block %" PRIu64 " reads zero at generation %" PRIu64
				  " that no trim had",
				  b, e->gen);
		}
		if (e->state == GGA_PK_UNMAPPED && e->gen != 0) {
			violation("P1: block %" PRIu64 " unmapped at generation %" PRIu64, b,
				  e->gen);
		}
		if (e->state != GGA_PK_MAPPED) {
			continue;
		}
		if (e->seg >= NSEG) {
			violation("P1: block %" PRIu64 " maps segment %" PRIu64, b, e->seg);
			return;
		}
		d = &w->disk[e->seg];
		for (i = 0; i < d->nrec; i++) {
			if (d->rec[i].off == e->off && d->rec[i].type == GGA_PK_LOG_DATA &&
			    d->rec[i].lba == b && d->rec[i].gen == e->gen &&
			    d->rec[i].len == e->len) {
				break;
			}
		}
		if (i == d->nrec) {
			violation("P1: block %" PRIu64 " maps generation %" PRIu64
				  " where its record is not",
				  b, e->gen);
		}
		live[e->seg] += e->len;
		total += e->len;
		mapped++;
	}
	for (s = 0; s < NSEG && !g.bad; s++) {
		if (sut[s].live != live[s]) {
			violation("P2: segment %" PRIu64 " counts %" PRIu64 " live units", s,
				  sut[s].live);
		}
	}
	if (!g.bad && (pk->live != total || pk->mapped != mapped)) {
		violation("P2: totals %" PRIu64 " units, %" PRIu64 " blocks", pk->live, pk->mapped);
	}
}

/*
 * Could the live records and one more of MAXLEN units be packed into the
 * segments a host write may use (all but PROTECT), none split? Tried by
 * brute force: the spec P4 holds the module's "full" to.
 */
static bool
fits(const struct gga_pk *pk)
{
	const struct gga_pk_entry *map = gga_pk_map(pk);
	uint32_t len[NB + 1], n = 0, b, i, combo, ncombo = 1, used[NSEG];
	bool ok;

	for (b = 0; b < NB; b++) {
		if (map[b].state == GGA_PK_MAPPED) {
			len[n++] = map[b].len;
		}
	}
	len[n++] = MAXLEN;
	for (i = 0; i < n; i++) {
		ncombo *= NSEG - PROTECT;
	}
	for (combo = 0; combo < ncombo; combo++) {
		memset(used, 0, sizeof(used));
		ok = true;
		for (i = 0, b = combo; i < n && ok; i++, b /= NSEG - PROTECT) {
			used[b % (NSEG - PROTECT)] += len[i];
			ok = used[b % (NSEG - PROTECT)] <= SEGU;
		}
		if (ok) {
			return true;
		}
	}
	return false;
}

/* Run a whole GC of the victim the module picks, checkpointing when it asks. */
static bool
settle_gc(struct world *w)
{
	uint32_t tries;
	enum gga_pk_status st;

	if (!w_gc_step(w)) {
		return false;
	}
	for (tries = 0; tries < 4 * MAXREC && w->gc.active; tries++) {
		if (w_gc_step(w)) {
			if (w->gc.copied) {
				w_gc_cas(w);
			}
			continue;
		}
		st = gga_pk_alloc(PK(w), GGA_PK_GC, MAXLEN, &(struct gga_pk_loc){ 0 });
		if (st != GGA_PK_NEED_CKPT) {
			violation("P4: GC cannot relocate (status %" PRIu64 ")", st, 0);
			return false;
		}
		w_ckpt_begin(w);
		w_ckpt_commit(w);
	}
	return !w->gc.active;
}

/* P4 on w (a scratch copy): finish what is in flight, then settle as the module asks. */
static void
w_settle(struct world *w)
{
	struct gga_pk_loc loc;
	enum gga_pk_status st;
	uint32_t i;

	for (i = 0; i < NFLY; i++) {
		if (w->fly[i].used) {
			if (!w->fly[i].durable) {
				w_durable(w, &w->fly[i], GGA_PK_LOG_DATA);
			}
			w_ack(w, &w->fly[i], GGA_PK_LOG_DATA);
		}
	}
	if (w->trim.used) {
		if (!w->trim.durable) {
			w_durable(w, &w->trim, GGA_PK_LOG_TRIM);
		}
		w_ack(w, &w->trim, GGA_PK_LOG_TRIM);
	}
	if (w->gc.copied) {
		w_gc_cas(w);
	}
	memset(&w->gc, 0, sizeof(w->gc));
	w_ckpt_commit(w);
	for (i = 0; i < 32 && !g.bad; i++) {
		/* Space as a host write of MAXLEN would get it. */
		st = gga_pk_alloc(PK(w), GGA_PK_HOST, MAXLEN, &loc);
		if (st == GGA_PK_OK) {
			w_placed(w, &loc);
			w_check(w);
			return;
		}
		if (st == GGA_PK_FULL) {
			g.full++;
			if (fits(PK(w))) {
				violation("P4: full with %" PRIu64 " live units in %" PRIu64
					  " blocks that would fit",
					  PK(w)->live, PK(w)->mapped);
			}
			return;
		}
		if (st == GGA_PK_NEED_CKPT) {
			g.settle_ckpt++;
			w_ckpt_begin(w);
			w_ckpt_commit(w);
		} else if (g.settle_gc++, !settle_gc(w)) {
			violation("P4: GC asked for and impossible (%" PRIu64 " live)", PK(w)->live,
				  0);
		}
		w_check(w);
	}
	violation("P4: no host write after %" PRIu64 " settling steps (%" PRIu64 " live)", i,
		  PK(w)->live);
}

static void
w_check_live(const struct world *start)
{
	static struct world w;
	uint64_t reopened = g.reopened; /* the walk's count, not the settling runs' */

	memcpy(&w, start, sizeof(w));
	w_settle(&w);
	g.reopened = reopened;
}

static uint32_t
w_events(struct ev *evs)
{
	uint32_t n = 0, a;

	for (a = 0; a < NB * MAXLEN; a++) {
		evs[n++] = (struct ev){ E_WRITE, (uint8_t)a };
		evs[n++] = (struct ev){ E_WSTART, (uint8_t)a };
	}
	for (a = 0; a < NFLY; a++) {
		evs[n++] = (struct ev){ E_WDUR, (uint8_t)a };
		evs[n++] = (struct ev){ E_WACK, (uint8_t)a };
		evs[n++] = (struct ev){ E_WFAIL, (uint8_t)a };
	}
	for (a = 0; a <= NB; a++) {
		evs[n++] = (struct ev){ E_TSTART, (uint8_t)a };
	}
	evs[n++] = (struct ev){ E_TDUR, 0 };
	evs[n++] = (struct ev){ E_TACK, 0 };
	evs[n++] = (struct ev){ E_GC, 0 };
	evs[n++] = (struct ev){ E_GC_CAS, 0 };
	evs[n++] = (struct ev){ E_CKPT_BEGIN, 0 };
	evs[n++] = (struct ev){ E_CKPT_COMMIT, 0 };
	evs[n++] = (struct ev){ E_CKPT_FAIL, 0 };
	evs[n++] = (struct ev){ E_CRASH, 0 };
	return n;
}

#define MAXEV (2 * NB * MAXLEN + 3 * NFLY + NB + 9)

static bool
dfs(const struct world *w, uint32_t rem, uint32_t depth, uint64_t *count)
{
	struct ev evs[MAXEV];
	uint32_t ne = w_events(evs), e;
	struct world nw;
	struct ut_memo_entry *slot;
	uint64_t sub, fp;
	bool hit;

	*count = 0;
	for (e = 0; e < ne; e++) {
		if (!w_enabled(w, evs[e])) {
			continue;
		}
		memcpy(&nw, w, sizeof(nw));
		g.path[depth] = evs[e];
		w_event(&nw, evs[e]);
		w_check(&nw);
		g.steps++;
		if (g.bad) {
			g.path_len = depth + 1;
			return true;
		}
		sub = 0;
		if (rem > 1) {
			fp = ut_hash_bytes(&nw, sizeof(nw));
			slot = ut_memo_slot(&g.memo, fp, rem - 1, &hit);
			if (hit) {
				sub = slot->count;
			} else {
				g.states++;
				w_check_live(&nw);
				if (g.bad) {
					g.path_len = depth + 1;
					return true;
				}
				if (dfs(&nw, rem - 1, depth + 1, &sub)) {
					return true;
				}
				if (slot != NULL) {
					slot->fp = fp;
					slot->rem = rem - 1;
					slot->count = sub;
				}
			}
		}
		*count += 1 + sub;
	}
	return false;
}

static void
w_init(struct world *w)
{
	static const uint8_t prefix[][2] = { { 0, 2 }, { 1, 1 }, { 2, 2 }, { 1, 1 } };
	struct fly f;
	uint32_t i;

	memset(w, 0, sizeof(*w));
	CU_ASSERT_FATAL(gga_pk_size(&g_geom) <= PKB);
	CU_ASSERT_FATAL(gga_pk_init(PK(w), PKB, &g_geom) == 0);
	/* Format writes the first image; then blocks 0..2 are written, block 1 twice
	 * (segment 0 keeps 2 live units of 3), with checkpoints as the list asks (one a time). */
	w_ckpt_begin(w);
	w_ckpt_commit(w);
	for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
		if (!w_start(w, &f, GGA_PK_HOST, prefix[i][0], 1, prefix[i][1])) {
			w_ckpt_begin(w); /* the list is used up: a checkpoint lists the next */
			w_ckpt_commit(w);
			CU_ASSERT_FATAL(w_start(w, &f, GGA_PK_HOST, prefix[i][0], 1, prefix[i][1]));
		}
		w_durable(w, &f, GGA_PK_LOG_DATA);
		w_ack(w, &f, GGA_PK_LOG_DATA);
	}
	w_ckpt_begin(w);
	w_ckpt_commit(w);
	w->front_up = 1;
}

static void
print_path(void)
{
	uint32_t i;

	printf("  shortest counterexample (%u events), then: %s\n", g.path_len, g.why);
	for (i = 0; i < g.path_len; i++) {
		printf("    %u. %s %u\n", i + 1, g_ev_names[g.path[i].type], g.path[i].arg);
	}
}

/* Walk every sequence of up to max_depth events; the depth of the first violation, 0 none. */
static uint32_t
check(uint32_t max_depth)
{
	struct timespec t0;
	struct world w;
	uint64_t count = 0;
	uint32_t d, found = 0;

	memset(&g, 0, sizeof(g));
	CU_ASSERT_FATAL(ut_memo_init(&g.memo, max_depth > DEPTH ? MEMO_BITS + 2 : MEMO_BITS));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	w_init(&w);
	w_check(&w);
	CU_ASSERT_FATAL(!g.bad);
	for (d = 1; d <= max_depth; d++) {
		ut_memo_clear(&g.memo);
		if (dfs(&w, d, 0, &count)) {
			found = d;
			break;
		}
	}
	printf("\n  packed log, %u blocks, %u segments of %u units: ", NB, NSEG, SEGU);
	ut_explore_summary(found, max_depth, count, g.states, g.steps, &t0, &g.memo);
	printf("  segments reopened %" PRIu64 ", crashes %" PRIu64 ", GC moves %" PRIu64
	       " won, %" PRIu64 " lost; settling: %" PRIu64 " checkpoints, %" PRIu64
	       " GC runs, %" PRIu64 " full\n",
	       g.reopened, g.crashes, g.gc_moves, g.gc_lost, g.settle_ckpt, g.settle_gc, g.full);
	if (found) {
		print_path();
	}
	ut_memo_fini(&g.memo);
	return found;
}

static uint32_t
depth_env(const char *name, uint32_t dflt)
{
	const char *s = getenv(name);
	long d = s != NULL ? strtol(s, NULL, 10) : (long)dflt;

	return d >= 1 && d <= MAX_DEPTH ? (uint32_t)d : dflt;
}

static void
test_walk(void)
{
	CU_ASSERT(check(depth_env("GGA_PK_DEPTH", DEPTH)) == 0);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_alloc_out_of_place),
		UT_TEST(test_reserve_list_needs_commit),
		UT_TEST(test_protected_reserve),
		UT_TEST(test_pending_until_commit),
		UT_TEST(test_generations_order_completions),
		UT_TEST(test_gc_cas),
		UT_TEST(test_gc_pick),
		UT_TEST(test_ckpt_scans_busy),
		UT_TEST(test_recover),
		UT_TEST(test_recover_trim_keeps_mapped_segment),
		UT_TEST(test_walk),
	};

	return ut_run("gga_packed", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
