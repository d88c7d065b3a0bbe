/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An exhaustive checker of the gga member lifecycle (bdev_gga/gga_lifecycle.c).
 *
 * A small world sits beside the module: n members, each holding for NB logical
 * blocks the generation of its fragment (0: never written, GEN_CORRUPT) and its
 * superblock record; the generation acknowledged per block; the write-intent
 * marks. The world feeds the module events and carries out its actions the way
 * the I/O code would, and adds its own: writes (acknowledged only per rule 7),
 * member crashes and returns, blanked members, members restored from an old
 * copy, corrupt fragments, writes failing on one member, a front crash
 * between the record writes of one update, front restarts (assembly), pass
 * steps, bitmap sweeps. Every sequence
 * of events up to a depth is walked (iterative deepening, so the first
 * violation found is a shortest one; states already explored to the same
 * remaining depth are not explored again) and after every step the
 * invariants I1..I7 of docs/FORMAT.md §3.2.1, "Member lifecycle", are checked.
 * Each test prints the depth, the sequences and states explored and its time,
 * and for a violation its shortest sequence of events.
 *
 * GGA_LC_DEPTH=d runs the 2 + 1 walk with all fixes on to depth d instead of
 * 6, GGA_LC_DEPTH_42=d the 4 + 2 one instead of 5.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bdev_gga/gga_lifecycle.h"
#include "gga_ut.h"
#include "ut_explore.h"

#define NB          2    /* logical blocks: 0 below a checkpoint, 1 above */
#define MAXN        6    /* 4 + 2 */
#define GEN_CORRUPT 0xff /* a fragment whose CRC does not match */
#define DEPTH_21    6    /* 2 + 1, all fixes on */
#define DEPTH_42    5    /* 4 + 2, all fixes on */
#define MAX_DEPTH   12
#define MEMO_BITS   21

struct w_disk {
	uint8_t frag[NB]; /* generation of the fragment held; 0 never written */
	uint8_t has_rec;  /* 0: the record is all zero (blank) */
	uint8_t pad[5];
	struct gga_lc_record rec;
};

/* Everything the checker explores: compared and hashed as bytes. */
struct world {
	struct gga_lc_view view; /* all zero while the front is down */
	struct w_disk disk[MAXN];
	struct w_disk snap[MAXN]; /* the old copy of each member RESTORE puts back */
	uint64_t issued[NB];      /* bit g: generation g was written to the block */
	uint8_t acked[NB];        /* generation of the last acknowledged write */
	uint8_t marked[NB];       /* write-intent marks */
	uint8_t up[MAXN];         /* the member answers */
	uint8_t gen;              /* last generation handed out */
	uint8_t front_up;         /* an assembled front runs */
	uint8_t cursor;           /* the running pass's next block */
	uint8_t arm;              /* 0, or 1 + j: the next update lands on j alone, */
				  /* 1 + MAXN + j: on all but j; then the front dies */
	uint8_t short_seen;       /* an update missed some of its targets (a crash, a failure) */
	uint8_t restores;         /* members restored from an old copy so far */
	uint8_t cleared_at;       /* events when the marks were last cleared (< 256 here) */
	uint8_t lossy;            /* a member lost content: blanked, restored, replaced */
};

enum w_ev_type {
	E_WRITE,
	E_WRITE_ERR,
	E_CRASH,
	E_BACK,
	E_BOUNCE,
	E_BLANK,
	E_RESTORE,
	E_SNAP,
	E_CORRUPT,
	E_REPLACE,
	E_ARM_ONLY,
	E_ARM_SKIP,
	E_RESTART,
	E_STEP,
	E_STEP_RACE,
	E_RETRY,
	E_SWEEP,
	E_DISTRUST,
	E_READD,
	E_FAULT,
	E_STALL,
	E_NTYPES,
};

static const char *const g_ev_names[E_NTYPES] = {
	"write block",
	"write block 0, an I/O error on member",
	"crash member",
	"member back",
	"member drops and returns",
	"member blanked",
	"member restored from its old copy",
	"snapshot every member",
	"corrupt block 0 on member",
	"replace member",
	"next update reaches only member",
	"next update skips member",
	"front restart (assembly)",
	"pass step",
	"pass ends, a write fails on member before it reports",
	"retry delay over",
	"bitmap sweep",
	"operator clears member",
	"auto re-add turned on",
	"member's errors pass the limit (fault asked)",
	"member stalls past member_timeout_ms",
};

struct w_ev {
	uint8_t type, arg;
};

/* The checker's run: not part of the explored state. */
static struct {
	uint32_t n, k, m;
	/* Restored copies: false, only copies older than the last bitmap clear (B4); true, any
	 * copy older than the member's record. */
	bool restore_any;
	bool strict_ack; /* rule 7 on the members includes the checkpoint */
	bool skip_i8;    /* a self-test: show that L3 alone finds the fault policy's bug */
	bool skip_l3;    /* the 4 + 2 walk: L3's settling runs are the 2 + 1 walk's */
	bool stalls;     /* E_STALL is enabled (only its own walks: it widens every level) */
	struct gga_lc_rules rules;
	/* The module's helpers as the world calls them; the self-tests break one. */
	uint32_t (*read_mask)(const struct gga_lc_view *view);
	uint32_t (*pass_read_mask)(const struct gga_lc_view *view);
	uint32_t (*write_mask)(const struct gga_lc_view *view);
	enum gga_lc_array_state (*array_state)(const struct gga_lc_view *view);
	bool (*stall_may_fail)(uint32_t online, uint32_t k, uint32_t i);
	bool bad;
	char why[256];
	struct w_ev path[MAX_DEPTH];
	uint32_t path_len;
	uint64_t steps;
	uint64_t states;
	struct ut_memo memo;
} g;

static void
helpers_default(void)
{
	g.read_mask = gga_lc_read_mask;
	g.pass_read_mask = gga_lc_read_mask;
	g.write_mask = gga_lc_write_mask;
	g.array_state = gga_lc_array_state;
	g.stall_may_fail = gga_lc_stall_may_fail;
}

static void
violation(const char *fmt, uint32_t a, uint32_t b)
{
	if (!g.bad) {
		g.bad = true;
		snprintf(g.why, sizeof(g.why), fmt, a, b);
	}
}

static uint32_t
popc(uint32_t x)
{
	return (uint32_t)__builtin_popcount(x);
}

static uint32_t
lc_online_count(const struct gga_lc_view *v)
{
	uint32_t i, c = 0;

	for (i = 0; i < v->n; i++) {
		c += v->mb[i].run == GGA_LC_ONLINE;
	}
	return c;
}

static uint32_t
lc_online_mask(const struct gga_lc_view *v)
{
	uint32_t i, mask = 0;

	for (i = 0; i < v->n; i++) {
		mask |= v->mb[i].run == GGA_LC_ONLINE ? 1u << i : 0;
	}
	return mask;
}

/* Decode as docs/FORMAT.md §7.2: the highest generation with k valid fragments; -1 fails. */
static int
w_decode(const struct world *w, uint32_t read, uint32_t b)
{
	uint32_t i, j, cnt;
	int best = -1;

	for (i = 0; i < g.n; i++) {
		if (!(read & (1u << i)) || w->disk[i].frag[b] == GEN_CORRUPT) {
			continue;
		}
		cnt = 0;
		for (j = 0; j < g.n; j++) {
			cnt += (read & (1u << j)) && w->disk[j].frag[b] == w->disk[i].frag[b];
		}
		if (cnt >= g.k && (int)w->disk[i].frag[b] > best) {
			best = w->disk[i].frag[b];
		}
	}
	return best;
}

/* I5: a data fragment is written only while k members are online. */
static void
w_put_frag(struct world *w, uint32_t i, uint32_t b, uint8_t gen)
{
	if (lc_online_count(&w->view) < g.k) {
		violation("I5: fragment of block %u written to member %u with fewer than k online",
			  b, i);
	}
	w->disk[i].frag[b] = gen;
}

static void w_apply(struct world *w, const struct gga_lc_event *ev);

static void
w_front_down(struct world *w)
{
	w->front_up = 0;
	memset(&w->view, 0, sizeof(w->view));
	w->cursor = 0;
}

static void
w_do(struct world *w, const struct gga_lc_actions *asked)
{
	struct gga_lc_actions copy = *asked, *act = &copy;
	struct gga_lc_event ev;
	uint32_t i, bit, to, got = 0, failed = 0;

	if (!w->front_up) {
		return;
	}
	if (act->flags & GGA_LC_ACT_START_PASS) {
		w->cursor = (uint8_t)act->pass_from;
	}
	if ((act->flags & GGA_LC_ACT_PERSIST) && !(act->flags & GGA_LC_ACT_RECORD_MADE) &&
	    !gga_lc_issue(&w->view, &act->record)) {
		/* Rule 5: the writer finds fewer than k online; nothing goes out. */
		act->flags &= ~GGA_LC_ACT_PERSIST;
	}
	if (act->flags & GGA_LC_ACT_PERSIST) {
		to = act->persist_to;
		if (w->arm != 0) {
			uint32_t j = (w->arm - 1) % MAXN;

			to &= w->arm - 1 < MAXN ? 1u << j : ~(1u << j);
		}
		for (i = 0; i < g.n; i++) {
			bit = 1u << i;
			if (!(to & bit)) {
				continue;
			}
			if (!w->up[i]) {
				failed |= bit;
				continue;
			}
			w->disk[i].has_rec = 1;
			memcpy(&w->disk[i].rec, &act->record, sizeof(act->record));
			got |= bit;
		}
		if (got != act->persist_to) {
			w->short_seen = 1;
		}
		if (w->arm != 0) {
			/* The front dies between the record writes of this update. */
			w->arm = 0;
			w->short_seen = 1;
			w_front_down(w);
			return;
		}
		for (i = 0; i < g.n; i++) {
			if (failed & (1u << i)) {
				memset(&ev, 0, sizeof(ev));
				ev.type = GGA_LC_EV_IO_ERROR;
				ev.member = i;
				w_apply(w, &ev);
			}
		}
		memset(&ev, 0, sizeof(ev));
		ev.type = GGA_LC_EV_PERSISTED;
		ev.events = act->record.events;
		ev.mask = got;
		w_apply(w, &ev);
	}
	if (act->flags & GGA_LC_ACT_PROBE) {
		i = act->probe_member;
		memset(&ev, 0, sizeof(ev));
		ev.type = GGA_LC_EV_PROBE;
		ev.member = i;
		if (!w->up[i]) {
			ev.found = GGA_LC_FOUND_ABSENT;
		} else if (!w->disk[i].has_rec) {
			ev.found = GGA_LC_FOUND_BLANK;
		} else {
			ev.found = GGA_LC_FOUND_RECORD;
			memcpy(&ev.rec, &w->disk[i].rec, sizeof(ev.rec));
		}
		w_apply(w, &ev);
	}
	if (act->flags & GGA_LC_ACT_CLEAR_BITMAP) {
		memset(w->marked, 0, sizeof(w->marked));
		w->cleared_at = (uint8_t)w->view.events;
	}
}

static void
w_apply(struct world *w, const struct gga_lc_event *ev)
{
	struct gga_lc_actions act;

	if (!w->front_up) {
		return;
	}
	gga_lc_apply(&w->view, ev, &act);
	w_do(w, &act);
}

static void
w_apply_simple(struct world *w, enum gga_lc_event_type type, uint32_t member)
{
	struct gga_lc_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.member = member;
	w_apply(w, &ev);
}

/*
 * I1, second half: among the records with the largest count, each member's state
 * in the view is at least the worst of them (ties never make it more trusted).
 */
static void
w_check_assembly(const struct world *w, const enum gga_lc_found *found,
		 const struct gga_lc_record *rec)
{
	uint64_t max = 0;
	uint32_t i, j;
	uint8_t worst, faulted;

	for (i = 0; i < g.n; i++) {
		if (found[i] == GGA_LC_FOUND_RECORD && rec[i].events > max) {
			max = rec[i].events;
		}
	}
	for (j = 0; j < g.n; j++) {
		worst = 0;
		faulted = 0;
		for (i = 0; i < g.n; i++) {
			if (found[i] != GGA_LC_FOUND_RECORD || rec[i].events != max) {
				continue;
			}
			if (gga_sb_member_need(rec[i].member_state[j]) > worst) {
				worst = gga_sb_member_need(rec[i].member_state[j]);
			}
			faulted |= rec[i].member_state[j] & GGA_SB_MEMBER_FAULTED;
		}
		if (w->view.mb[j].needs < worst ||
		    (faulted && (!w->view.mb[j].faulted || w->view.mb[j].run == GGA_LC_ONLINE))) {
			violation("I1: assembly trusts member %u more than a freshest record (%u)",
				  j, worst | faulted);
		}
	}
}

static bool w_rec_same(const struct gga_lc_record *a, const struct gga_lc_record *b);

/* Do two members (*a, *b) hold records that disagree with one count? */
static bool
w_tie(const struct world *w, uint32_t *a, uint32_t *b)
{
	uint32_t i, j;

	for (i = 0; i < g.n; i++) {
		for (j = i + 1; j < g.n; j++) {
			if (w->disk[i].has_rec && w->disk[j].has_rec &&
			    w->disk[i].rec.events == w->disk[j].rec.events &&
			    !w_rec_same(&w->disk[i].rec, &w->disk[j].rec)) {
				*a = i;
				*b = j;
				return true;
			}
		}
	}
	return false;
}

static uint32_t
w_up_mask(const struct world *w)
{
	uint32_t i, mask = 0;

	for (i = 0; i < g.n; i++) {
		mask |= w->up[i] ? 1u << i : 0;
	}
	return mask;
}

static void
w_restart(struct world *w)
{
	enum gga_lc_found found[MAXN];
	struct gga_lc_record rec[MAXN];
	struct gga_lc_actions act;
	uint32_t i, a, b;

	w_front_down(w);
	for (i = 0; i < g.n; i++) {
		found[i] = !w->up[i]          ? GGA_LC_FOUND_ABSENT :
			   w->disk[i].has_rec ? GGA_LC_FOUND_RECORD :
						GGA_LC_FOUND_BLANK;
		memcpy(&rec[i], &w->disk[i].rec, sizeof(rec[i]));
	}
	if (gga_lc_assemble(&w->view, g.k, g.m, &g.rules, found, rec, 0, &act) != 0) {
		if (!w->lossy && popc(w_up_mask(w)) == g.n && !w_tie(w, &a, &b)) {
			/*
			 * L1: crashes and I/O errors alone never leave an array that will not
			 * start, unless two records disagree with one count: then the worst
			 * of them may refuse an array that lost nothing (rule 2 is safe,
			 * not live).
			 */
			violation("L1: assembly refused with every member present and none lost "
				  "(%u)%.0u",
				  (uint32_t)-act.refuse, 0);
		}
		if (act.flags != GGA_LC_ACT_REFUSE) {
			violation("I5: a refused assembly asks for actions 0x%x%.0u", act.flags, 0);
		}
		memset(&w->view, 0, sizeof(w->view));
		return;
	}
	w->front_up = 1;
	w_check_assembly(w, found, rec);
	w_do(w, &act);
}

/*
 * Rule 7, on the members: every member that missed the write of block b is
 * recorded, on each of the k or more that have it, as not in sync and not done
 * by a pass below b.
 */
static bool
w_ack_ok(const struct world *w, uint32_t recv, uint32_t b)
{
	const struct gga_lc_record *r;
	uint32_t i, j;

	if (popc(recv) < g.k) {
		return false;
	}
	for (j = 0; j < g.n; j++) {
		if (recv & (1u << j)) {
			continue;
		}
		for (i = 0; i < g.n; i++) {
			r = &w->disk[i].rec;
			if ((recv & (1u << i)) &&
			    (!w->disk[i].has_rec || r->member_state[j] == GGA_SB_MEMBER_IN_SYNC ||
			     (g.strict_ack && (r->rec_mask & (1u << j)) && b < r->rec_offset))) {
				return false;
			}
		}
	}
	return true;
}

/* What the I/O path decides for a write `recv` took (`held`: see gga_lc_ack_decide). */
static enum gga_lc_ack
w_ack_decision(const struct world *w, uint32_t held, uint32_t recv)
{
	const struct gga_lc_view *v = &w->view;
	struct gga_lc_durable d = {
		.reached = v->persisted_mask,
		.sync = v->persisted_sync,
		.rec = v->persisted_rec,
	};
	uint32_t i, online = 0;

	for (i = 0; i < g.n; i++) {
		online |= gga_lc_run_reads(v->mb[i].run) ? 1u << i : 0;
	}
	return gga_lc_ack_decide(&d, g.n, g.k, held, recv, online);
}

/* The I/O code acknowledges as the module says; the records on the members must agree. */
static void
w_ack(struct world *w, uint32_t b, uint8_t gen, uint32_t held, uint32_t recv)
{
	if (!w->front_up || w->acked[b] == gen || !gga_lc_ack_ok(&w->view, held, recv)) {
		return;
	}
	if (!w_ack_ok(w, recv, b)) {
		violation("I7: write of block %u acknowledged with members 0x%x only, before the "
			  "records say the others are not in sync",
			  b, recv);
	}
	w->acked[b] = gen;
}

/* Write block b; member `miss` (if < MAXN) answers it with an I/O error. */
static void
w_write(struct world *w, uint32_t b, uint32_t miss)
{
	uint32_t i, wm = g.write_mask(&w->view), recv = 0;
	uint8_t gen = ++w->gen;
	/*
	 * The members whose checkpoint bit may hold it, as the I/O path takes them:
	 * the pass's targets it is sent to, and those of the checkpoint now.
	 */
	uint32_t held = (wm & ~gga_lc_read_mask(&w->view)) | w->view.persisted_rec;

	w->issued[b] |= 1ull << gen;
	w->marked[b] = 1;
	for (i = 0; i < g.n; i++) {
		if ((wm & (1u << i)) && w->up[i] && i != miss) {
			w_put_frag(w, i, b, gen);
			recv |= 1u << i;
		}
	}
	/* The I/O code asks before and after it reports the members that failed. */
	w_ack(w, b, gen, held, recv);
	for (i = 0; i < g.n && w->front_up; i++) {
		if ((wm & (1u << i)) && (!w->up[i] || i == miss)) {
			w_apply_simple(w, GGA_LC_EV_IO_ERROR, i);
		}
	}
	w_ack(w, b, gen, held, recv);
	/*
	 * L2: with the failures told, a write that fewer than k online members
	 * took is failed, never left waiting for an update that rule 5 forbids
	 * (the I/O path would hold it, and its range lock, for ever).
	 */
	if (w->front_up && lc_online_count(&w->view) < g.k &&
	    w_ack_decision(w, held, recv) == GGA_LC_ACK_WAIT) {
		violation("L2: write of block %u with members 0x%x waits with fewer than k online",
			  b, recv);
	}
}

/* Copy block b's decoded version to the pass's targets; false: the pass ended. */
static bool
w_copy(struct world *w, uint32_t b)
{
	struct gga_lc_event ev;
	uint32_t i, targets = w->view.pass_targets;
	int v = w_decode(w, g.pass_read_mask(&w->view), b);

	if (v < 0) {
		memset(&ev, 0, sizeof(ev));
		ev.type = GGA_LC_EV_PASS_DONE;
		ev.result = -EIO;
		ev.mask = targets;
		w_apply(w, &ev);
		return false;
	}
	if (v < w->acked[b]) {
		violation("I4: the pass copies generation %u of block %u, older than the "
			  "acknowledged one",
			  (uint32_t)v, b);
	}
	for (i = 0; i < g.n; i++) {
		if ((targets & (1u << i)) && w->up[i]) {
			w_put_frag(w, i, b, (uint8_t)v);
		}
	}
	for (i = 0; i < g.n && w->front_up; i++) {
		if ((targets & (1u << i)) && !w->up[i]) {
			w_apply_simple(w, GGA_LC_EV_IO_ERROR, i);
		}
	}
	if (!w->front_up || !w->view.pass) {
		return false;
	}
	w->cursor = (uint8_t)(b + 1);
	memset(&ev, 0, sizeof(ev));
	ev.type = GGA_LC_EV_PASS_CHECKPOINT;
	ev.offset = b + 1;
	w_apply(w, &ev);
	return w->front_up && w->view.pass;
}

/* The pass's next block to copy, NB at the end (a resync copies marked blocks only). */
static uint32_t
w_next_block(const struct world *w)
{
	uint32_t b = w->cursor;

	while (b < NB && !w->view.pass_rebuild && !w->marked[b]) {
		b++;
	}
	return b;
}

static void
w_pass_done(struct world *w, uint32_t mask)
{
	struct gga_lc_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = GGA_LC_EV_PASS_DONE;
	ev.mask = mask;
	w_apply(w, &ev);
}

static void
w_step(struct world *w, bool race, uint32_t j)
{
	uint32_t b = w_next_block(w), targets;

	do {
		if (b < NB && !w_copy(w, b)) {
			return;
		}
		b = w_next_block(w);
	} while (race && b < NB);
	if (b < NB) {
		return;
	}
	targets = w->view.pass_targets;
	if (race) {
		/* The pass decided with these targets; a write fails on member j before it reports. */
		w_write(w, 0, j);
		if (!w->front_up) {
			return;
		}
	}
	w_pass_done(w, targets);
}

static void
w_lost_and_back(struct world *w, uint32_t i)
{
	w_apply_simple(w, GGA_LC_EV_CTRLR_LOST, i);
	w_apply_simple(w, GGA_LC_EV_CTRLR_BACK, i);
}

static bool
w_disk_is_blank(const struct w_disk *d)
{
	static const struct w_disk zero;

	return memcmp(d, &zero, sizeof(zero)) == 0;
}

/* Is event e possible (and not a no-op) in w? */
static bool
w_enabled(const struct world *w, struct w_ev e)
{
	uint32_t i = e.arg;
	const struct gga_lc_view *v = &w->view;

	switch (e.type) {
	case E_WRITE:
		return w->front_up && g.write_mask(v) != 0 && w->gen < 60;
	case E_WRITE_ERR:
		return w->front_up && (g.write_mask(v) & (1u << i)) && w->gen < 60;
	case E_CRASH:
	case E_BOUNCE:
		return w->up[i];
	case E_BACK:
		return !w->up[i];
	case E_BLANK:
		return !w_disk_is_blank(&w->disk[i]);
	case E_RESTORE:
		/* An old copy: its record is older than the member's (else nothing can tell). */
		/* Each is a lost member: at most m of them, as for any other loss. */
		if (w->restores >= g.m || !w->snap[i].has_rec || !w->disk[i].has_rec ||
		    w->snap[i].rec.events >= w->disk[i].rec.events) {
			return false;
		}
		return g.restore_any || w->snap[i].rec.events < w->cleared_at;
	case E_SNAP:
		return memcmp(w->disk, w->snap, sizeof(w->disk)) != 0;
	case E_CORRUPT:
		return w->disk[i].frag[0] != GEN_CORRUPT;
	case E_REPLACE:
		/* A member down, or one back and waiting for its pass (bdev_gga allows both). */
		return w->front_up && (!w->up[i] || v->mb[i].run == GGA_LC_STALE);
	case E_ARM_ONLY:
	case E_ARM_SKIP:
		return w->front_up && w->arm == 0;
	case E_RESTART:
		return true;
	case E_STEP:
		return w->front_up && v->pass;
	case E_STEP_RACE:
		return w->front_up && v->pass && (v->pass_targets & (1u << i)) && w->up[i];
	case E_RETRY:
		return w->front_up && v->retry_wait;
	case E_SWEEP:
		return w->front_up && (w->marked[0] || w->marked[1]);
	case E_DISTRUST:
		/* bdev_gga_clear_member takes only a faulted member. */
		return w->front_up && v->mb[i].faulted &&
		       (v->mb[i].run == GGA_LC_FAILED || v->mb[i].run == GGA_LC_ABSENT);
	case E_READD:
		for (i = 0; i < g.n && w->front_up; i++) {
			if (v->mb[i].foreign) {
				return true;
			}
		}
		return false;
	case E_FAULT:
		return w->front_up && !v->mb[i].faulted;
	case E_STALL:
		return g.stalls && w->front_up && v->mb[i].run == GGA_LC_ONLINE;
	}
	return false;
}

static void
w_event(struct world *w, struct w_ev e)
{
	uint32_t i = e.arg, before;

	switch (e.type) {
	case E_WRITE:
		w_write(w, i, MAXN);
		break;
	case E_WRITE_ERR:
		w_write(w, 0, i);
		break;
	case E_CRASH:
		w->up[i] = 0;
		w_apply_simple(w, GGA_LC_EV_CTRLR_LOST, i);
		break;
	case E_BACK:
		w->up[i] = 1;
		w_apply_simple(w, GGA_LC_EV_CTRLR_BACK, i);
		break;
	case E_BOUNCE:
		w_lost_and_back(w, i);
		break;
	case E_BLANK:
	case E_RESTORE:
		w->lossy = 1;
		if (e.type == E_BLANK) {
			memset(&w->disk[i], 0, sizeof(w->disk[i]));
		} else {
			memcpy(&w->disk[i], &w->snap[i], sizeof(w->disk[i]));
			w->restores++;
		}
		/* A member that answers was swapped under the front: it sees it go and return. */
		if (w->up[i]) {
			w_lost_and_back(w, i);
		}
		break;
	case E_SNAP:
		memcpy(w->snap, w->disk, sizeof(w->snap));
		break;
	case E_CORRUPT:
		w->disk[i].frag[0] = GEN_CORRUPT;
		break;
	case E_REPLACE:
		w->lossy = 1;
		memset(&w->disk[i], 0, sizeof(w->disk[i]));
		w->up[i] = 1;
		w_apply_simple(w, GGA_LC_EV_REPLACE, i);
		break;
	case E_ARM_ONLY:
		w->arm = (uint8_t)(1 + i);
		break;
	case E_ARM_SKIP:
		w->arm = (uint8_t)(1 + MAXN + i);
		break;
	case E_RESTART:
		w_restart(w);
		break;
	case E_STEP:
		w_step(w, false, 0);
		break;
	case E_STEP_RACE:
		w_step(w, true, i);
		break;
	case E_RETRY:
		w_apply_simple(w, GGA_LC_EV_PASS_START, 0);
		break;
	case E_SWEEP:
		w_apply_simple(w, GGA_LC_EV_BITMAP_CLEAR, 0);
		break;
	case E_DISTRUST:
		w_apply_simple(w, GGA_LC_EV_DISTRUST, i);
		break;
	case E_READD:
		w_apply_simple(w, GGA_LC_EV_READD, 0);
		break;
	case E_STALL:
		/* The watchdogs' question (gga_member_stall()): failed as by an I/O error, or kept. */
		before = lc_online_mask(&w->view);
		if (!g.stall_may_fail(before, g.k, i)) {
			break;
		}
		if (__builtin_popcount(before) >= (int)g.k &&
		    __builtin_popcount(before & ~(1u << i)) < (int)g.k) {
			/*
			 * I9: a stall never takes the array below k by itself (what
			 * the failure then sets off, an update that misses others, is
			 * theirs).
			 */
			violation("I9: failing stalled member %u would leave %u members online", i,
				  (uint32_t)__builtin_popcount(before & ~(1u << i)));
		}
		w_apply_simple(w, GGA_LC_EV_IO_ERROR, i);
		break;
	case E_FAULT:
		before = lc_online_count(&w->view);
		w_apply_simple(w, GGA_LC_EV_FAULT, i);
		if (!g.skip_i8 && before >= g.k && w->front_up && lc_online_count(&w->view) < g.k) {
			/* I8: the error policy never takes the array below k by itself. */
			violation("I8: faulting member %u left %u members online", i,
				  lc_online_count(&w->view));
		}
		break;
	}
}

/*
 * L3 (liveness): once the faults stop, the array serves again by itself and
 * the operator's clear. From any world where no member lost what it held
 * (blanked, restored from an old copy, replaced), every member comes back,
 * the front restarts if it is down, the operator clears every faulted
 * member, and passes run (a bounded number of steps): then at least k
 * members are online, so the array serves. (Not all of them: a block that
 * two failures tore cannot be copied, and the world ends such a pass
 * failed where gga poisons the block and goes on.)
 */
static void
w_check_live(const struct world *w)
{
	struct world s;
	uint32_t i, step, a, b;

	if (w->lossy || w->restores != 0 || g.bad || g.skip_l3) {
		return;
	}
	memcpy(&s, w, sizeof(s));
	s.arm = 0;
	for (i = 0; i < g.n; i++) {
		s.up[i] = 1;
		/* Down, or failed by an I/O error: the probe poller finds it answering. */
		if (s.view.mb[i].run == GGA_LC_FAILED || s.view.mb[i].run == GGA_LC_ABSENT) {
			w_apply_simple(&s, GGA_LC_EV_CTRLR_BACK, i);
		}
	}
	if (!s.front_up) {
		w_restart(&s);
		if (!s.front_up) {
			/* w_restart() says why (L1) where it must not refuse. */
			return;
		}
	}
	for (i = 0; i < g.n; i++) {
		if (s.view.mb[i].faulted) {
			w_apply_simple(&s, GGA_LC_EV_DISTRUST, i);
			w_apply_simple(&s, GGA_LC_EV_CTRLR_BACK, i);
		}
	}
	for (step = 0; step < 4 * g.n && s.front_up && (s.view.pass || s.view.retry_wait); step++) {
		if (s.view.retry_wait) {
			w_apply_simple(&s, GGA_LC_EV_PASS_START, 0);
		} else {
			w_step(&s, false, 0);
		}
	}
	if (!g.bad && s.front_up && lc_online_count(&s.view) < g.k && !w_tie(&s, &a, &b)) {
		violation("L3: with every member back and the faults cleared, %u members online "
			  "(pass %u)",
			  lc_online_count(&s.view), s.view.pass);
	}
}

static bool
w_rec_same(const struct gga_lc_record *a, const struct gga_lc_record *b)
{
	return a->bitmap_events == b->bitmap_events && a->rec_mask == b->rec_mask &&
	       a->rec_offset == b->rec_offset && memcmp(a->member_state, b->member_state, g.n) == 0;
}

static void
w_check(const struct world *w)
{
	const struct gga_lc_view *v = &w->view;
	uint32_t i, j, b, rm;
	int r;

	/*
	 * I1: records that disagree never share a count, unless an update reached only
	 * some of its members (a crash, a failure during it): a front assembled
	 * without those cannot know its count.
	 */
	if (!w->short_seen && w_tie(w, &i, &j)) {
		violation("I1: members %u and %u hold records that disagree with one event count",
			  i, j);
	}
	if (!w->front_up) {
		return;
	}
	for (i = 0; i < g.n; i++) {
		if (v->mb[i].run != GGA_LC_ONLINE) {
			continue;
		}
		/* I6: a member reported online answers. */
		if (!w->up[i]) {
			violation("I6: member %u is reported online but does not answer%.0u", i, 0);
			continue;
		}
		/* I2: an online member holds every acknowledged write (a corrupt one is detected). */
		for (b = 0; b < NB; b++) {
			if (w->disk[i].frag[b] != GEN_CORRUPT && w->disk[i].frag[b] < w->acked[b]) {
				violation(
					"I2: member %u is online without the acknowledged write of "
					"block %u",
					i, b);
			}
		}
	}
	/* I3: a read returns the acknowledged version, a newer unacknowledged one, or fails. */
	rm = g.read_mask(v);
	for (b = 0; b < NB && rm != 0; b++) {
		r = w_decode(w, rm, b);
		if (r >= 0 && r != w->acked[b] &&
		    !(r > w->acked[b] && (w->issued[b] & (1ull << r)))) {
			violation("I3: block %u reads generation %u, not the acknowledged one", b,
				  (uint32_t)r);
		}
	}
	/* I6: the reported state is the redundancy of the members online. */
	if ((g.array_state(v) == GGA_LC_ARRAY_ONLINE) != (lc_online_count(v) == g.n) ||
	    (g.array_state(v) == GGA_LC_ARRAY_FAILED) != (lc_online_count(v) < g.k)) {
		violation("I6: array state %u with %u members online", g.array_state(v),
			  lc_online_count(v));
	}
}

static uint64_t
w_hash(const struct world *w)
{
	return ut_hash_bytes(w, sizeof(*w));
}

/* Number of the events possible in a world: writes 2, five per member, the rest. */
static uint32_t
w_events(struct w_ev *evs)
{
	uint32_t c = 0, i, t;

	for (t = 0; t < E_NTYPES; t++) {
		switch (t) {
		case E_WRITE:
			for (i = 0; i < NB; i++) {
				evs[c++] = (struct w_ev){ (uint8_t)t, (uint8_t)i };
			}
			break;
		case E_SNAP:
		case E_RESTART:
		case E_STEP:
		case E_RETRY:
		case E_SWEEP:
		case E_READD:
			evs[c++] = (struct w_ev){ (uint8_t)t, 0 };
			break;
		default:
			for (i = 0; i < g.n; i++) {
				evs[c++] = (struct w_ev){ (uint8_t)t, (uint8_t)i };
			}
			break;
		}
	}
	return c;
}

/*
 * Walk every sequence of `rem` more events from w. Returns true on a violation
 * (g.path holds the sequence); *count gets the number of sequences of 1..rem
 * events from w.
 */
static bool
dfs(const struct world *w, uint32_t rem, uint32_t depth, uint64_t *count)
{
	struct w_ev evs[E_NTYPES * MAXN];
	uint32_t ne = w_events(evs), e;
	struct world nw;
	struct ut_memo_entry *slot;
	uint64_t sub;
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
			slot = ut_memo_slot(&g.memo, w_hash(&nw), rem - 1, &hit);
			if (hit) {
				sub = slot->count;
			} else {
				g.states++;
				/* L3 costs a settling run: once per state expanded, not per step. */
				w_check_live(&nw);
				if (g.bad) {
					g.path_len = depth + 1;
					return true;
				}
				if (dfs(&nw, rem - 1, depth + 1, &sub)) {
					return true;
				}
				if (slot != NULL) {
					slot->fp = w_hash(&nw);
					slot->rem = rem - 1;
					slot->count = sub;
				}
			}
		}
		*count += 1 + sub;
	}
	return false;
}

/* A formatted array with block 0 and 1 written (generations 1 and 2), marks set, assembled. */
static void
w_init(struct world *w)
{
	uint32_t i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < g.n; i++) {
		w->disk[i].frag[0] = 1;
		w->disk[i].frag[1] = 2;
		w->disk[i].has_rec = 1;
		w->disk[i].rec.events = 1;
		w->up[i] = 1;
	}
	w->gen = 2;
	w->acked[0] = 1;
	w->acked[1] = 2;
	w->issued[0] = 1ull << 1;
	w->issued[1] = 1ull << 2;
	w->marked[0] = w->marked[1] = 1;
	w_restart(w);
	memcpy(w->snap, w->disk, sizeof(w->snap));
}

static void
print_path(void)
{
	uint32_t i;

	printf("  shortest counterexample (%u events), then: %s\n", g.path_len, g.why);
	for (i = 0; i < g.path_len; i++) {
		printf("    %u. %s", i + 1, g_ev_names[g.path[i].type]);
		switch (g.path[i].type) {
		case E_SNAP:
		case E_RESTART:
		case E_STEP:
		case E_RETRY:
		case E_SWEEP:
		case E_READD:
			printf("\n");
			break;
		default:
			printf(" %u\n", g.path[i].arg);
		}
	}
}

/*
 * Check every sequence of up to max_depth events on a k + m array under
 * `rules`. Returns the length of the shortest violating sequence, 0 if none.
 */
static uint32_t
check_restore(uint32_t k, uint32_t m, const struct gga_lc_rules *rules, uint32_t max_depth,
	      bool restore_any)
{
	struct timespec t0;
	struct world w;
	uint64_t count = 0;
	uint32_t d, found = 0;

	g.k = k;
	g.m = m;
	g.n = k + m;
	g.rules = *rules;
	if (g.read_mask == NULL) {
		helpers_default();
	}
	g.restore_any = restore_any;
	g.strict_ack = rules->ack_waits_checkpoint;
	g.bad = false;
	g.steps = 0;
	g.states = 0;
	CU_ASSERT_FATAL(ut_memo_init(&g.memo, MEMO_BITS));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	w_init(&w);
	w_check(&w);
	CU_ASSERT_FATAL(!g.bad);
	CU_ASSERT_FATAL(w.front_up);
	for (d = 1; d <= max_depth; d++) {
		ut_memo_clear(&g.memo);
		if (dfs(&w, d, 0, &count)) {
			found = d;
			break;
		}
	}
	printf("\n  %u+%u (restored copies: %s): ", k, m,
	       restore_any ? "any older" : "older than the last clear");
	ut_explore_summary(found, max_depth, count, g.states, g.steps, &t0, &g.memo);
	if (found) {
		print_path();
	}
	ut_memo_fini(&g.memo);
	return found;
}

static uint32_t
check(uint32_t k, uint32_t m, const struct gga_lc_rules *rules, uint32_t max_depth)
{
	return check_restore(k, m, rules, max_depth, false);
}

static uint32_t
depth_env(const char *name, uint32_t dflt)
{
	const char *s = getenv(name);
	long d = s != NULL ? strtol(s, NULL, 10) : (long)dflt;

	return d >= 1 && d <= MAX_DEPTH ? (uint32_t)d : dflt;
}

static void
test_all_fixes_2_1(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	UT_ASSERT_EQ(check(2, 1, &r, depth_env("GGA_LC_DEPTH", DEPTH_21)), 0);
}

static void
test_all_fixes_4_2(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	g.skip_l3 = getenv("GGA_LC_L3_42") == NULL;
	UT_ASSERT_EQ(check(4, 2, &r, depth_env("GGA_LC_DEPTH_42", DEPTH_42)), 0);
	g.skip_l3 = false;
}

/* Each fix off alone: the checker must find what it fixed. */
static void
expect_found(void (*off)(struct gga_lc_rules *r), uint32_t depth)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	off(&r);
	CU_ASSERT(check(2, 1, &r, depth) != 0);
}

/*
 * Issue 32 case 7: a stalled member may be failed only while k others stay
 * online; one that is not online (rebuilding, stale) always. Every online
 * mask of 2 + 1 and 4 + 2, every member.
 */
static void
test_stall_may_fail(void)
{
	uint32_t k, m, n, online, i, others;

	for (k = 2, m = 1; k <= 4; k += 2, m++) {
		n = k + m;
		for (online = 0; online < (1u << n); online++) {
			for (i = 0; i < n; i++) {
				others = (uint32_t)__builtin_popcount(online & ~(1u << i));
				UT_ASSERT_EQ(gga_lc_stall_may_fail(online, k, i),
					     !(online & (1u << i)) || others >= k);
			}
		}
	}
	/* The case 7 shape: 2 + 1, data_1 and data_2 online, parity rebuilding: data_2 is kept. */
	CU_ASSERT(!gga_lc_stall_may_fail(0x2 | 0x1, 2, 1));
	CU_ASSERT(gga_lc_stall_may_fail(0x2 | 0x1, 2, 2));
	CU_ASSERT(gga_lc_stall_may_fail(0x7, 2, 1));
}

static bool
stall_fails_always(uint32_t online, uint32_t k, uint32_t i)
{
	(void)online;
	(void)k;
	(void)i;
	return true;
}

/*
 * Issue 32 case 7 in the walk: stalls of online members (E_STALL, only in
 * this test's walks) among writes, failures, restarts and passes of 2 + 1
 * to depth 5. With the module's rule (gga_lc_stall_may_fail(), what the
 * watchdogs ask) no stall takes the array below k (I9) and every other
 * property holds; with the old watchdog (any stall fails the member) the
 * walk finds I9.
 */
static void
test_stall_keeps_k_found(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	g.stalls = true;
	UT_ASSERT_EQ(check(2, 1, &r, 5), 0);
	g.stall_may_fail = stall_fails_always;
	CU_ASSERT(check(2, 1, &r, 5) != 0);
	CU_ASSERT(strncmp(g.why, "I9", 2) == 0);
	helpers_default();
	g.stalls = false;
}

/*
 * Issue 32: without the k rule, the error policy fails the array by itself
 * (I8: an I/O error on one member, then a fault asked for another), and, I8
 * aside, leaves it no way back (L3: the faulted member was one of the last
 * in sync; cleared, it needs a resync that nothing can serve).
 */
static void
test_fault_keeps_k_found(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	r.fault_keeps_k = false;
	CU_ASSERT(check(2, 1, &r, 4) != 0);
	CU_ASSERT(strncmp(g.why, "I8", 2) == 0);
	g.skip_i8 = true;
	CU_ASSERT(check(2, 1, &r, 4) != 0);
	CU_ASSERT(strncmp(g.why, "L3", 2) == 0);
	g.skip_i8 = false;
}

static void
off_b1(struct gga_lc_rules *r)
{
	r->format_raises_events = false;
}

static void
off_b2(struct gga_lc_rules *r)
{
	r->drop_checkpoint = false;
}

static void
off_b3(struct gga_lc_rules *r)
{
	r->blank_drops_checkpoint = false;
}

static void
off_b4(struct gga_lc_rules *r)
{
	r->check_own_events = false;
}

static void
off_b6(struct gga_lc_rules *r)
{
	r->cas_state = false;
}

/* The brief's rule 3 as written: one-phase clear, trust one below. */
static void
off_two_phase(struct gga_lc_rules *r)
{
	r->clear_two_phase = false;
	r->trust_one_below = true;
}

static void
off_ack_checkpoint(struct gga_lc_rules *r)
{
	r->ack_waits_checkpoint = false;
}

static void
test_b1_found(void)
{
	expect_found(off_b1, 6);
}

static void
test_b2_found(void)
{
	expect_found(off_b2, 7);
}

static void
test_b3_found(void)
{
	expect_found(off_b3, 7);
}

static void
test_b4_found(void)
{
	expect_found(off_b4, 6);
}

static void
test_b6_found(void)
{
	expect_found(off_b6, 6);
}

static void
test_one_phase_clear_found(void)
{
	expect_found(off_two_phase, 6);
}

/*
 * The limit of every record-based rule: a copy taken after the last clear, one
 * update behind the freshest record that survives, is indistinguishable from a
 * member that missed the last update in a crash, which assembly must trust when
 * fewer than k members are fresher. The checker must find that.
 */
/* Rule 7 as first written: a write below the checkpoint that a pass member missed. */
static void
test_rule7_as_written_found(void)
{
	expect_found(off_ack_checkpoint, 6);
}

static void
test_recent_copy_limit_found(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	CU_ASSERT(check_restore(2, 1, &r, 6, true) != 0);
}

/*
 * Scripted sequences: rules whose violations need more events than the walks
 * reach (or a restored copy newer than the last clear, which they leave out
 * by design). Each replays one sequence of the checker's own events on its
 * world, checks every invariant after every event, and asserts the decision
 * the rule makes; the slip it guards against is named in its comment.
 */

#define EV(t, a) ((struct w_ev){ (uint8_t)(t), (uint8_t)(a) })

/*
 * Start a k + m world (w_init) with every fix on; restore_any lets the script
 * restore a copy newer than the last clear of the marks.
 */
static void
script_start(struct world *w, uint32_t k, uint32_t m, bool restore_any)
{
	g.k = k;
	g.m = m;
	g.n = k + m;
	gga_lc_rules_default(&g.rules);
	helpers_default();
	g.restore_any = restore_any;
	g.strict_ack = g.rules.ack_waits_checkpoint;
	g.bad = false;
	w_init(w);
	w_check(w);
	CU_ASSERT_FATAL(!g.bad && w->front_up);
}

/*
 * Apply the events in order, each of which must be possible (w_enabled), and
 * check the invariants after each. False, with the event and the violation
 * printed, at the first that breaks one.
 */
static bool
script_run(struct world *w, const struct w_ev *evs, uint32_t count)
{
	uint32_t i;

	for (i = 0; i < count; i++) {
		if (!w_enabled(w, evs[i])) {
			printf("\n  event %u (%s %u) is not possible here\n", i + 1,
			       g_ev_names[evs[i].type], evs[i].arg);
			CU_FAIL("a scripted event is not possible");
			return false;
		}
		w_event(w, evs[i]);
		w_check(w);
		if (g.bad) {
			printf("\n  after event %u (%s %u): %s\n", i + 1, g_ev_names[evs[i].type],
			       evs[i].arg, g.why);
			return false;
		}
	}
	return true;
}

/*
 * Rule 2: records that tie on the count but disagree drop the checkpoint.
 * 2 + 1: a resync of member 0 checkpoints above block 0; that update reaches
 * member 0 alone and the front dies. A front assembled without member 0
 * issues the same count (no checkpoint) to members 1 and 2 and acknowledges a
 * write of block 0 that member 0 misses; then members 1 and 2 fail, and the
 * next assembly finds member 0's record (checkpoint: member 0, above block 0)
 * tied with theirs. The pass it starts must copy from block 0: resumed at the
 * checkpoint it skips block 0, and member 0 goes online without the write
 * (I2). Kills b1-tie-keeps-checkpoint (twelve events: past the walk's depth).
 */
static void
test_tie_drops_checkpoint(void)
{
	static const struct w_ev to_tie[] = {
		EV(E_CRASH, 0),   EV(E_BACK, 0),    EV(E_ARM_ONLY, 0), EV(E_STEP, 0),
		EV(E_CRASH, 0),   EV(E_RESTART, 0), EV(E_WRITE, 0),    EV(E_CRASH, 1),
		EV(E_RESTART, 0), EV(E_BACK, 0),    EV(E_BACK, 1),
	};
	static const struct w_ev assemble[] = { EV(E_RESTART, 0) };
	static const struct w_ev steps[] = { EV(E_STEP, 0), EV(E_STEP, 0) };
	struct world w;
	uint32_t a = 0, b = 0, i;

	script_start(&w, 2, 1, false);
	CU_ASSERT_FATAL(script_run(&w, to_tie, sizeof(to_tie) / sizeof(to_tie[0])));
	/* The records tie and disagree: member 0's carries the checkpoint at block 1. */
	CU_ASSERT_FATAL(w_tie(&w, &a, &b));
	UT_ASSERT_EQ(w.disk[0].rec.events, w.disk[1].rec.events);
	UT_ASSERT_EQ(w.disk[0].rec.rec_mask, 1u << 0);
	UT_ASSERT_EQ(w.disk[0].rec.rec_offset, 1);
	UT_ASSERT_EQ(w.disk[1].rec.rec_mask, 0);
	CU_ASSERT(w.disk[0].frag[0] < w.acked[0]);

	CU_ASSERT(script_run(&w, assemble, 1));
	/* The checkpoint is gone: the pass over member 0 starts at block 0. */
	CU_ASSERT(w.front_up && w.view.pass);
	UT_ASSERT_EQ(w.view.pass_targets, 1u << 0);
	UT_ASSERT_EQ(w.view.rec_offset, 0);
	UT_ASSERT_EQ(w.cursor, 0);
	CU_ASSERT(!w.view.resume_ok);

	CU_ASSERT(script_run(&w, steps, 2));
	UT_ASSERT_EQ(w.view.mb[0].run, GGA_LC_ONLINE);
	for (i = 0; i < NB; i++) {
		UT_ASSERT_EQ(w.disk[0].frag[i], w.acked[i]);
	}
}

/*
 * Rule 3 (changed), at probe: a record older than the last one the member is
 * known to hold is an old copy, at least resynced, also when the member failed
 * with the array. 2 + 1: every member's old copy taken (w_init); block 0 written on all
 * three; member 0 fails (the update recording it reaches members 1 and 2),
 * then member 1: the array is failed, member 1 failed with it. Member 1 comes
 * back restored from its snapshot (an update older than the last it held, and
 * newer than the last clear of the marks): it must not come back online, which
 * would make the array read block 0 from a member without its last write
 * (I2). Kills b4-probe-seen.
 */
static void
test_probe_old_copy_failed_array(void)
{
	static const struct w_ev evs[] = {
		EV(E_WRITE, 0),
		EV(E_CRASH, 0),
		EV(E_CRASH, 1),
		EV(E_RESTORE, 1),
	};
	static const struct w_ev back[] = { EV(E_BACK, 1) };
	struct world w;

	script_start(&w, 2, 1, true);
	CU_ASSERT_FATAL(script_run(&w, evs, sizeof(evs) / sizeof(evs[0])));
	/* Failed with the array; its record now older than the last it held, not below the clear. */
	UT_ASSERT_EQ(w.view.mb[1].needs, GGA_LC_NEEDS_NONE);
	CU_ASSERT(w.disk[1].rec.events < w.view.seen[1]);
	CU_ASSERT(w.disk[1].rec.events >= w.view.bitmap_events);
	CU_ASSERT(w.disk[1].frag[0] < w.acked[0]);

	CU_ASSERT(script_run(&w, back, 1));
	UT_ASSERT_EQ(w.view.mb[1].run, GGA_LC_STALE);
	UT_ASSERT_EQ(w.view.mb[1].needs, GGA_LC_NEEDS_RESYNC);
	UT_ASSERT_EQ(gga_lc_array_state(&w.view), GGA_LC_ARRAY_FAILED);
	UT_ASSERT_EQ(gga_lc_read_mask(&w.view), 0);
}

/*
 * Issue 32: a fault is recorded and outlives a restart (the probe does not
 * take the member back either); the operator's clear brings it back with a
 * resync of the writes it missed, not a rebuild.
 */
static void
test_fault_recorded_and_cleared(void)
{
	static const struct w_ev evs[] = {
		EV(E_FAULT, 0),
		EV(E_WRITE, 1),
		EV(E_RESTART, 0),
	};
	static const struct w_ev back[] = { EV(E_BACK, 0) };
	static const struct w_ev clear[] = { EV(E_DISTRUST, 0) };
	struct world w;

	script_start(&w, 2, 1, false);
	CU_ASSERT_FATAL(script_run(&w, evs, sizeof(evs) / sizeof(evs[0])));
	CU_ASSERT(w.view.mb[0].faulted);
	UT_ASSERT_EQ(w.view.mb[0].run, GGA_LC_FAILED);
	CU_ASSERT(w.disk[1].rec.member_state[0] & GGA_SB_MEMBER_FAULTED);
	UT_ASSERT_EQ(gga_lc_array_state(&w.view), GGA_LC_ARRAY_DEGRADED);
	/* Its base answering is not enough. */
	w.up[0] = 0;
	CU_ASSERT(script_run(&w, back, 1));
	UT_ASSERT_EQ(w.view.mb[0].run, GGA_LC_FAILED);
	CU_ASSERT(script_run(&w, clear, 1));
	CU_ASSERT(!w.view.mb[0].faulted);
	UT_ASSERT_EQ(w.view.mb[0].needs, GGA_LC_NEEDS_RESYNC);
	w_apply_simple(&w, GGA_LC_EV_CTRLR_BACK, 0);
	CU_ASSERT(w.view.pass && !w.view.pass_rebuild && (w.view.pass_targets & 1u));
}

/*
 * Rule 3 (changed), at assembly: a member the freshest record calls in sync
 * whose own record is older is at least resynced (trusted only one update
 * behind, and only if fewer than k are otherwise). 2 + 1: every member's
 * old copy taken (w_init); block 0 written; a restart writes every member's record; the
 * next update (a sweep's) skips member 1 and the front dies; member 1 is
 * restored from its snapshot, two updates behind the freshest record, which
 * calls it in sync. The assembly must resync it: trusted, it is online
 * without the write of block 0 (I2). Kills b4-assemble-behind.
 */
static void
test_assembly_copy_behind(void)
{
	static const struct w_ev evs[] = {
		EV(E_WRITE, 0), EV(E_RESTART, 0), EV(E_ARM_SKIP, 1),
		EV(E_SWEEP, 0), EV(E_RESTORE, 1),
	};
	static const struct w_ev assemble[] = { EV(E_RESTART, 0) };
	static const struct w_ev steps[] = { EV(E_STEP, 0), EV(E_STEP, 0) };
	struct world w;

	script_start(&w, 2, 1, true);
	CU_ASSERT_FATAL(script_run(&w, evs, sizeof(evs) / sizeof(evs[0])));
	CU_ASSERT(!w.front_up);
	/* The freshest record (members 0 and 2) calls member 1 in sync; its own is two behind. */
	UT_ASSERT_EQ(w.disk[0].rec.events, w.disk[2].rec.events);
	UT_ASSERT_EQ(w.disk[0].rec.member_state[1], GGA_SB_MEMBER_IN_SYNC);
	UT_ASSERT_EQ(w.disk[1].rec.events + 2, w.disk[0].rec.events);
	CU_ASSERT(w.disk[1].rec.events >= w.disk[0].rec.bitmap_events);
	CU_ASSERT(w.disk[1].frag[0] < w.acked[0]);

	CU_ASSERT(script_run(&w, assemble, 1));
	CU_ASSERT(w.front_up);
	UT_ASSERT_EQ(w.view.mb[1].needs, GGA_LC_NEEDS_RESYNC);
	UT_ASSERT_EQ(w.view.mb[1].run, GGA_LC_REBUILDING);
	UT_ASSERT_EQ(w.view.pass_targets, 1u << 1);
	CU_ASSERT(!w.view.pass_rebuild);
	/* The resync brings it the write. */
	CU_ASSERT(script_run(&w, steps, 2));
	UT_ASSERT_EQ(w.view.mb[1].run, GGA_LC_ONLINE);
	UT_ASSERT_EQ(w.disk[1].frag[0], w.acked[0]);
}

/*
 * Issue 32: whether an assembly refused for want of members in sync may wait
 * for the members not found, and whether one whose write some members
 * failed stands (rule 5).
 */
static void
test_assemble_may_wait(void)
{
	enum gga_lc_found found[GGA_LC_MAX_MEMBERS];
	struct gga_lc_record rec[GGA_LC_MAX_MEMBERS];
	struct gga_lc_actions act;
	struct gga_lc_view v;
	uint32_t i;
	int rc;

	memset(rec, 0, sizeof(rec));
	for (i = 0; i < GGA_LC_MAX_MEMBERS; i++) {
		rec[i].events = 5;
		memset(rec[i].member_state, GGA_SB_MEMBER_IN_SYNC, sizeof(rec[i].member_state));
	}
	/* 2 + 1, one member answers: refused, and the two missing could make k. */
	found[0] = GGA_LC_FOUND_RECORD;
	found[1] = GGA_LC_FOUND_ABSENT;
	found[2] = GGA_LC_FOUND_ABSENT;
	rc = gga_lc_assemble(&v, 2, 1, NULL, found, rec, 0, &act);
	UT_ASSERT_EQ(rc, -EIO);
	CU_ASSERT(gga_lc_assemble_may_wait(&v, found, rc));
	/* The one that answers is older than the bitmap: only the missing two could make k. */
	rec[0].events = 3;
	rec[0].bitmap_events = 4;
	rc = gga_lc_assemble(&v, 2, 1, NULL, found, rec, 0, &act);
	UT_ASSERT_EQ(rc, -EIO);
	CU_ASSERT(gga_lc_assemble_may_wait(&v, found, rc));
	/* 3 + 1: one trusted, one stale and one blank are here, one is missing: never k. */
	rec[0].events = 5;
	rec[0].bitmap_events = 0;
	rec[1].events = 5;
	rec[1].member_state[0] = GGA_SB_MEMBER_STALE;
	rec[0].member_state[0] = GGA_SB_MEMBER_STALE;
	found[0] = GGA_LC_FOUND_RECORD;
	found[1] = GGA_LC_FOUND_RECORD;
	found[2] = GGA_LC_FOUND_BLANK;
	found[3] = GGA_LC_FOUND_ABSENT;
	rc = gga_lc_assemble(&v, 3, 1, NULL, found, rec, 0, &act);
	UT_ASSERT_EQ(rc, -EIO);
	CU_ASSERT(!gga_lc_assemble_may_wait(&v, found, rc));
	/* A foreign member: final, whatever is missing. */
	found[2] = GGA_LC_FOUND_FOREIGN;
	rc = gga_lc_assemble(&v, 3, 1, NULL, found, rec, 0, &act);
	UT_ASSERT_EQ(rc, -EEXIST);
	CU_ASSERT(!gga_lc_assemble_may_wait(&v, found, rc));

	/* 2 + 1 with two members in sync and the parity missing: assembled. */
	memset(rec[0].member_state, GGA_SB_MEMBER_IN_SYNC, sizeof(rec[0].member_state));
	memset(rec[1].member_state, GGA_SB_MEMBER_IN_SYNC, sizeof(rec[1].member_state));
	found[0] = GGA_LC_FOUND_RECORD;
	found[1] = GGA_LC_FOUND_RECORD;
	found[2] = GGA_LC_FOUND_ABSENT;
	UT_ASSERT_EQ(gga_lc_assemble(&v, 2, 1, NULL, found, rec, 0, &act), 0);
	/* Both took the records: it stands; one alone (or with the absent one) does not. */
	CU_ASSERT(gga_lc_assembly_written(&v, 0x3));
	CU_ASSERT(!gga_lc_assembly_written(&v, 0x1));
	CU_ASSERT(!gga_lc_assembly_written(&v, 0x5));
}

/*
 * The checker itself: each invariant not shown by the tests above must fire
 * when a helper of the module is broken on purpose.
 */
static uint32_t
broken_read_stale(const struct gga_lc_view *v)
{
	uint32_t i, mask = 0;

	for (i = 0; i < v->n; i++) {
		if (v->mb[i].run == GGA_LC_ONLINE || v->mb[i].run == GGA_LC_STALE) {
			mask |= 1u << i;
		}
	}
	return mask;
}

static uint32_t
broken_write_failed(const struct gga_lc_view *v)
{
	uint32_t i, mask = 0;

	for (i = 0; i < v->n; i++) {
		if (v->mb[i].run == GGA_LC_ONLINE || v->mb[i].run == GGA_LC_REBUILDING) {
			mask |= 1u << i;
		}
	}
	return mask;
}

static enum gga_lc_array_state
broken_always_online(const struct gga_lc_view *v)
{
	(void)v;
	return GGA_LC_ARRAY_ONLINE;
}

/* A pass that reads its own targets (k = 1, so one fragment decodes). */
static uint32_t
broken_read_targets(const struct gga_lc_view *v)
{
	return v->pass_targets;
}

static void
expect_invariant(const char *inv, uint32_t k, uint32_t m)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	CU_ASSERT(check(k, m, &r, 6) != 0);
	if (strncmp(g.why, inv, strlen(inv)) != 0) {
		fprintf(stderr, "expected a violation of %s, got: %s\n", inv, g.why);
	}
	CU_ASSERT(strncmp(g.why, inv, strlen(inv)) == 0);
	g.read_mask = NULL;
}

static void
test_checker_i3_reads(void)
{
	helpers_default();
	g.read_mask = broken_read_stale;
	expect_invariant("I3", 2, 1);
}

static void
test_checker_i4_pass(void)
{
	helpers_default();
	g.pass_read_mask = broken_read_targets;
	expect_invariant("I4", 1, 1);
}

static void
test_checker_i5_writes(void)
{
	helpers_default();
	g.write_mask = broken_write_failed;
	expect_invariant("I5", 2, 1);
}

static void
test_checker_i6_state(void)
{
	helpers_default();
	g.array_state = broken_always_online;
	expect_invariant("I6", 2, 1);
}

/* k <= m: two disjoint sets of k members can each be the array. */
static void
test_1_1_breaks(void)
{
	struct gga_lc_rules r;

	gga_lc_rules_default(&r);
	CU_ASSERT(check(1, 1, &r, 6) != 0);
}

/*
 * Create's plan (gga_lc_plan_create): what create does with what it found on
 * the members. First one row per case, for 2 + 1 and 4 + 2, each reaching
 * one branch; then properties over every assignment of the four findings to
 * the members of a 2 + 1 and a 4 + 2 array, in every mode, with and without
 * force.
 */
#define P_AUTO     GGA_LC_MODE_AUTO
#define P_CREATE   GGA_LC_MODE_CREATE
#define P_ASSEMBLE GGA_LC_MODE_ASSEMBLE

struct plan_row {
	uint32_t k, m;
	enum gga_lc_mode mode;
	bool force;
	uint32_t absent, blank, formatted, other;
	enum gga_lc_plan_kind kind;
	int rc;
	enum gga_lc_plan_why why;
	uint32_t member, member2;
};

#define P_FORMAT   GGA_LC_PLAN_FORMAT, 0, GGA_LC_WHY_NONE, 0, 0
#define P_ASSEMBLY GGA_LC_PLAN_ASSEMBLE, 0, GGA_LC_WHY_NONE, 0, 0
#define P_REFUSE   GGA_LC_PLAN_REFUSE

static const struct plan_row g_plan_rows[] = {
	/* k, m, mode, force, absent, blank, formatted, other: plan */
	/* 2 + 1, mode create */
	{ 2, 1, P_CREATE, false, 0, 0x7, 0, 0, P_FORMAT },
	{ 2, 1, P_CREATE, true, 0, 0x7, 0, 0, P_FORMAT },
	{ 2, 1, P_CREATE, false, 0, 0x5, 0x2, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_RECORD, 1,
	  0 },
	{ 2, 1, P_CREATE, false, 0, 0, 0x6, 0x1, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_DATA, 0,
	  0 },
	{ 2, 1, P_CREATE, false, 0, 0x1, 0x2, 0x4, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_RECORD,
	  1, 0 },
	{ 2, 1, P_CREATE, false, 0, 0x3, 0, 0x4, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_DATA, 2,
	  0 },
	{ 2, 1, P_CREATE, true, 0, 0, 0x7, 0, P_FORMAT },
	{ 2, 1, P_CREATE, true, 0, 0, 0, 0x7, P_FORMAT },
	{ 2, 1, P_CREATE, true, 0, 0x4, 0x1, 0x2, P_FORMAT },
	/* Absent members never reach the plan in mode create; it would format. */
	{ 2, 1, P_CREATE, false, 0x1, 0x6, 0, 0, P_FORMAT },
	/* 2 + 1, mode auto */
	{ 2, 1, P_AUTO, false, 0, 0x7, 0, 0, P_FORMAT },
	{ 2, 1, P_AUTO, false, 0, 0, 0x7, 0, P_ASSEMBLY },
	{ 2, 1, P_AUTO, false, 0, 0x4, 0x3, 0, P_ASSEMBLY },
	{ 2, 1, P_AUTO, false, 0, 0x6, 0x1, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED, 0,
	  1 },
	{ 2, 1, P_AUTO, false, 0, 0x3, 0x4, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED, 2,
	  0 },
	{ 2, 1, P_AUTO, false, 0, 0, 0x5, 0x2, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 1,
	  0 },
	{ 2, 1, P_AUTO, false, 0, 0x1, 0, 0x6, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 1,
	  0 },
	{ 2, 1, P_AUTO, false, 0x2, 0x5, 0, 0, P_REFUSE, -ENODEV, GGA_LC_WHY_ABSENT_NEW, 1, 0 },
	{ 2, 1, P_AUTO, false, 0x4, 0, 0x3, 0, P_ASSEMBLY },
	{ 2, 1, P_AUTO, false, 0x1, 0, 0x6, 0, P_ASSEMBLY },
	{ 2, 1, P_AUTO, false, 0x1, 0x4, 0x2, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED, 1,
	  2 },
	{ 2, 1, P_AUTO, false, 0x4, 0x2, 0, 0x1, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 0,
	  0 },
	/* force is only valid with mode create (refused before): the plan ignores it. */
	{ 2, 1, P_AUTO, true, 0, 0x7, 0, 0, P_FORMAT },
	{ 2, 1, P_AUTO, true, 0, 0x6, 0, 0x1, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 0, 0 },
	/* 2 + 1, mode assemble */
	{ 2, 1, P_ASSEMBLE, false, 0, 0x7, 0, 0, P_REFUSE, -ENOENT, GGA_LC_WHY_NOTHING_TO_ASSEMBLE,
	  0, 0 },
	{ 2, 1, P_ASSEMBLE, false, 0, 0, 0x7, 0, P_ASSEMBLY },
	{ 2, 1, P_ASSEMBLE, false, 0, 0x4, 0x3, 0, P_ASSEMBLY },
	{ 2, 1, P_ASSEMBLE, false, 0, 0x5, 0x2, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED,
	  1, 0 },
	{ 2, 1, P_ASSEMBLE, false, 0x1, 0x6, 0, 0, P_REFUSE, -ENODEV, GGA_LC_WHY_ABSENT_NEW, 0, 0 },
	{ 2, 1, P_ASSEMBLE, false, 0, 0x3, 0, 0x4, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 2,
	  0 },
	{ 2, 1, P_ASSEMBLE, false, 0x2, 0, 0x4, 0x1, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA,
	  0, 0 },
	/* Fewer than k formatted but none blank: assembly itself refuses it. */
	{ 2, 1, P_ASSEMBLE, false, 0x3, 0, 0x4, 0, P_ASSEMBLY },
	{ 2, 1, P_ASSEMBLE, true, 0, 0x6, 0x1, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED,
	  0, 1 },
	/* A mode outside the three: assemble, unchecked, as create always did. */
	{ 2, 1, (enum gga_lc_mode)3, false, 0, 0x7, 0, 0, P_ASSEMBLY },
	/* 4 + 2, mode create */
	{ 4, 2, P_CREATE, false, 0, 0x3f, 0, 0, P_FORMAT },
	{ 4, 2, P_CREATE, false, 0, 0x1f, 0x20, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_RECORD,
	  5, 0 },
	{ 4, 2, P_CREATE, false, 0, 0x0f, 0x20, 0x10, P_REFUSE, -EEXIST, GGA_LC_WHY_NOT_BLANK_DATA,
	  4, 0 },
	{ 4, 2, P_CREATE, true, 0, 0, 0x3f, 0, P_FORMAT },
	{ 4, 2, P_CREATE, true, 0, 0x0f, 0x10, 0x20, P_FORMAT },
	/* 4 + 2, mode auto */
	{ 4, 2, P_AUTO, false, 0, 0x3f, 0, 0, P_FORMAT },
	{ 4, 2, P_AUTO, false, 0, 0, 0x3f, 0, P_ASSEMBLY },
	{ 4, 2, P_AUTO, false, 0, 0x30, 0x0f, 0, P_ASSEMBLY },
	{ 4, 2, P_AUTO, false, 0, 0x2c, 0x13, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED, 0,
	  2 },
	{ 4, 2, P_AUTO, false, 0, 0x07, 0x38, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED, 3,
	  0 },
	{ 4, 2, P_AUTO, false, 0x03, 0, 0x3c, 0, P_ASSEMBLY },
	{ 4, 2, P_AUTO, false, 0x30, 0x0f, 0, 0, P_REFUSE, -ENODEV, GGA_LC_WHY_ABSENT_NEW, 4, 0 },
	{ 4, 2, P_AUTO, false, 0x01, 0x30, 0x0e, 0, P_REFUSE, -EEXIST, GGA_LC_WHY_TOO_FEW_FORMATTED,
	  1, 4 },
	{ 4, 2, P_AUTO, false, 0, 0, 0x37, 0x08, P_REFUSE, -EMEDIUMTYPE, GGA_LC_WHY_OTHER_DATA, 3,
	  0 },
	/* 4 + 2, mode assemble */
	{ 4, 2, P_ASSEMBLE, false, 0, 0x3f, 0, 0, P_REFUSE, -ENOENT, GGA_LC_WHY_NOTHING_TO_ASSEMBLE,
	  0, 0 },
	{ 4, 2, P_ASSEMBLE, false, 0x20, 0x1f, 0, 0, P_REFUSE, -ENODEV, GGA_LC_WHY_ABSENT_NEW, 5,
	  0 },
	{ 4, 2, P_ASSEMBLE, false, 0, 0, 0x3f, 0, P_ASSEMBLY },
	{ 4, 2, P_ASSEMBLE, false, 0, 0x21, 0x1e, 0, P_ASSEMBLY },
	{ 4, 2, P_ASSEMBLE, false, 0, 0x31, 0x0e, 0, P_REFUSE, -EEXIST,
	  GGA_LC_WHY_TOO_FEW_FORMATTED, 1, 0 },
	{ 4, 2, P_ASSEMBLE, false, 0x01, 0x0e, 0, 0x30, P_REFUSE, -EMEDIUMTYPE,
	  GGA_LC_WHY_OTHER_DATA, 4, 0 },
};

static void
test_plan_table(void)
{
	const struct plan_row *r;
	struct gga_lc_plan p;
	uint32_t i;

	for (i = 0; i < sizeof(g_plan_rows) / sizeof(g_plan_rows[0]); i++) {
		r = &g_plan_rows[i];
		/* Garbage first: every field must be set. */
		memset(&p, 0xa5, sizeof(p));
		gga_lc_plan_create(r->k + r->m, r->k, r->mode, r->force, r->absent, r->blank,
				   r->formatted, r->other, &p);
		if (p.kind != r->kind || p.rc != r->rc || p.why != r->why ||
		    p.member != r->member || p.member2 != r->member2) {
			fprintf(stderr,
				"plan row %u (%u+%u mode %d force %d absent 0x%x blank 0x%x "
				"formatted 0x%x other 0x%x): got kind %d rc %d why %d member %u "
				"member2 %u, expected %d %d %d %u %u\n",
				i, r->k, r->m, (int)r->mode, r->force, r->absent, r->blank,
				r->formatted, r->other, (int)p.kind, p.rc, (int)p.why, p.member,
				p.member2, (int)r->kind, r->rc, (int)r->why, r->member, r->member2);
		}
		UT_ASSERT_EQ(p.kind, r->kind);
		UT_ASSERT_EQ(p.rc, r->rc);
		UT_ASSERT_EQ(p.why, r->why);
		UT_ASSERT_EQ(p.member, r->member);
		UT_ASSERT_EQ(p.member2, r->member2);
	}
}

static uint32_t
plan_lowest(uint32_t mask)
{
	return mask != 0 ? (uint32_t)__builtin_ctz(mask) : 32;
}

/* The errno each refusal carries. */
static int
plan_rc_of(enum gga_lc_plan_why why)
{
	switch (why) {
	case GGA_LC_WHY_NOT_BLANK_RECORD:
	case GGA_LC_WHY_NOT_BLANK_DATA:
	case GGA_LC_WHY_TOO_FEW_FORMATTED:
		return -EEXIST;
	case GGA_LC_WHY_OTHER_DATA:
		return -EMEDIUMTYPE;
	case GGA_LC_WHY_ABSENT_NEW:
		return -ENODEV;
	case GGA_LC_WHY_NOTHING_TO_ASSEMBLE:
		return -ENOENT;
	case GGA_LC_WHY_NONE:
		break;
	}
	return 0;
}

/*
 * Every property of one plan; returns the name of the first that fails, or
 * NULL. The masks are a partition of the n members.
 */
static const char *
plan_violation(uint32_t n, uint32_t k, enum gga_lc_mode mode, bool force, uint32_t absent,
	       uint32_t blank, uint32_t formatted, uint32_t other, const struct gga_lc_plan *p)
{
	uint32_t all = (1u << n) - 1, nf = (uint32_t)__builtin_popcount(formatted);
	bool create_ok = mode == P_CREATE && (force || (formatted | other) == 0);

	if (p->kind != GGA_LC_PLAN_REFUSE) {
		if (p->rc != 0 || p->why != GGA_LC_WHY_NONE || p->member != 0 || p->member2 != 0) {
			return "a plan that does not refuse carries no refusal";
		}
	} else if (p->rc >= 0 || p->why == GGA_LC_WHY_NONE || p->rc != plan_rc_of(p->why)) {
		return "a refusal carries its errno and its reason";
	} else if (p->member >= n || (p->why != GGA_LC_WHY_TOO_FEW_FORMATTED && p->member2 != 0)) {
		return "a refusal names a member of the array (member2 only for too few)";
	}
	/* FORMAT exactly when create may overwrite, or auto finds every member blank. */
	if ((p->kind == GGA_LC_PLAN_FORMAT) != (create_ok || (mode == P_AUTO && blank == all))) {
		return "FORMAT iff create (all blank, or force) or auto with every member blank";
	}
	if (mode == P_CREATE && p->kind != GGA_LC_PLAN_FORMAT &&
	    (p->kind != GGA_LC_PLAN_REFUSE || create_ok)) {
		return "mode create formats or refuses, and refuses only without force";
	}
	if (p->kind == GGA_LC_PLAN_ASSEMBLE &&
	    (other != 0 || formatted == 0 || (blank != 0 && nf < k))) {
		return "ASSEMBLE only with no other member, one formatted, and k formatted "
		       "beside blank ones";
	}
	if (mode == P_AUTO || mode == P_ASSEMBLE) {
		if (other != 0 &&
		    (p->kind != GGA_LC_PLAN_REFUSE || p->why != GGA_LC_WHY_OTHER_DATA)) {
			return "auto/assemble refuse any other member first";
		}
		if (other == 0 && absent != 0 && formatted == 0 &&
		    (p->kind != GGA_LC_PLAN_REFUSE || p->why != GGA_LC_WHY_ABSENT_NEW)) {
			return "auto/assemble refuse absent members with none formatted";
		}
	}
	if (p->kind != GGA_LC_PLAN_REFUSE) {
		return NULL;
	}
	switch (p->why) {
	case GGA_LC_WHY_NOT_BLANK_RECORD:
	case GGA_LC_WHY_NOT_BLANK_DATA:
		if (mode != P_CREATE || force || p->member != plan_lowest(formatted | other) ||
		    !((p->why == GGA_LC_WHY_NOT_BLANK_RECORD ? formatted : other) &
		      (1u << p->member))) {
			return "not blank: mode create without force, the lowest formatted or other "
			       "member, and what it holds";
		}
		break;
	case GGA_LC_WHY_OTHER_DATA:
		if (mode == P_CREATE || p->member != plan_lowest(other)) {
			return "other data: auto/assemble, the lowest other member";
		}
		break;
	case GGA_LC_WHY_ABSENT_NEW:
		if (mode == P_CREATE || p->member != plan_lowest(absent) || formatted != 0 ||
		    other != 0) {
			return "absent: auto/assemble, the lowest absent member, none formatted";
		}
		break;
	case GGA_LC_WHY_NOTHING_TO_ASSEMBLE:
		if (mode != P_ASSEMBLE || p->member != plan_lowest(blank) || blank != all) {
			return "nothing to assemble: mode assemble, every member blank, the lowest";
		}
		break;
	case GGA_LC_WHY_TOO_FEW_FORMATTED:
		if (mode == P_CREATE || other != 0 || nf >= k || nf == 0 || blank == 0 ||
		    p->member != plan_lowest(formatted) || p->member2 != plan_lowest(blank)) {
			return "too few: fewer than k formatted beside blank ones, the lowest of each";
		}
		break;
	case GGA_LC_WHY_NONE:
		return "a refusal without a reason";
	}
	return NULL;
}

/* Every assignment of absent/blank/formatted/other to the members of a k + m array. */
static void
plan_properties(uint32_t k, uint32_t m)
{
	static const enum gga_lc_mode modes[] = { P_AUTO, P_CREATE, P_ASSEMBLE };
	uint32_t n = k + m, code, i, mi, f, bad = 0, plans = 0;
	uint32_t seen_why[GGA_LC_WHY_TOO_FEW_FORMATTED + 1] = { 0 }, seen_kind[3] = { 0 };
	uint32_t mask[4];
	struct gga_lc_plan p, q;
	const char *why;

	for (code = 0; code < (1u << (2 * n)); code++) {
		memset(mask, 0, sizeof(mask));
		for (i = 0; i < n; i++) {
			mask[(code >> (2 * i)) & 3] |= 1u << i;
		}
		for (mi = 0; mi < 3; mi++) {
			for (f = 0; f < 2; f++) {
				memset(&p, 0xa5, sizeof(p));
				gga_lc_plan_create(n, k, modes[mi], f != 0, mask[0], mask[1],
						   mask[2], mask[3], &p);
				plans++;
				why = plan_violation(n, k, modes[mi], f != 0, mask[0], mask[1],
						     mask[2], mask[3], &p);
				if (why == NULL && modes[mi] != P_CREATE) {
					/* force changes nothing outside mode create. */
					memset(&q, 0x5a, sizeof(q));
					gga_lc_plan_create(n, k, modes[mi], f == 0, mask[0],
							   mask[1], mask[2], mask[3], &q);
					if (q.kind != p.kind || q.rc != p.rc || q.why != p.why ||
					    q.member != p.member || q.member2 != p.member2) {
						why = "force changes nothing outside mode create";
					}
				}
				if (why != NULL && bad++ < 5) {
					fprintf(stderr,
						"%u+%u mode %d force %u absent 0x%x blank 0x%x "
						"formatted 0x%x other 0x%x: kind %d rc %d why %d "
						"member %u member2 %u breaks: %s\n",
						k, m, (int)modes[mi], f, mask[0], mask[1], mask[2],
						mask[3], (int)p.kind, p.rc, (int)p.why, p.member,
						p.member2, why);
				}
				if (p.kind <= GGA_LC_PLAN_REFUSE) {
					seen_kind[p.kind]++;
				}
				if (p.why <= GGA_LC_WHY_TOO_FEW_FORMATTED) {
					seen_why[p.why]++;
				}
			}
		}
	}
	printf("  %u+%u: %u plans checked, %u violations\n", k, m, plans, bad);
	UT_ASSERT_EQ(bad, 0);
	/* The walk reaches every plan and every reason (else it proves less than it says). */
	for (i = 0; i < 3; i++) {
		CU_ASSERT(seen_kind[i] > 0);
	}
	for (i = 0; i <= GGA_LC_WHY_TOO_FEW_FORMATTED; i++) {
		CU_ASSERT(seen_why[i] > 0);
	}
}

static void
test_plan_properties(void)
{
	plan_properties(2, 1);
	plan_properties(4, 2);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_plan_table),
		UT_TEST(test_plan_properties),
		UT_TEST(test_all_fixes_2_1),
		UT_TEST(test_all_fixes_4_2),
		UT_TEST(test_b1_found),
		UT_TEST(test_b2_found),
		UT_TEST(test_b3_found),
		UT_TEST(test_b4_found),
		UT_TEST(test_b6_found),
		UT_TEST(test_one_phase_clear_found),
		UT_TEST(test_rule7_as_written_found),
		UT_TEST(test_recent_copy_limit_found),
		UT_TEST(test_fault_keeps_k_found),
		UT_TEST(test_fault_recorded_and_cleared),
		UT_TEST(test_stall_may_fail),
		UT_TEST(test_stall_keeps_k_found),
		UT_TEST(test_tie_drops_checkpoint),
		UT_TEST(test_probe_old_copy_failed_array),
		UT_TEST(test_assembly_copy_behind),
		UT_TEST(test_1_1_breaks),
		UT_TEST(test_checker_i3_reads),
		UT_TEST(test_checker_i4_pass),
		UT_TEST(test_checker_i5_writes),
		UT_TEST(test_checker_i6_state),
		UT_TEST(test_assemble_may_wait),
	};

	return ut_run("gga_lifecycle", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
