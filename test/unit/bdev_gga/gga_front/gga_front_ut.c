/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An exhaustive checker of the two-front roles (bdev_gga/gga_front.c).
 *
 * The world: two fronts, each a gga_front, and n members, each an NVMe
 * namespace whose reservations are the target's own pure module
 * (target/nvmf_resv.c, built here with 4 registrant slots). The world
 * carries out the commands each front asks for the way the gga bdev does
 * (a command is out until its delivery, which may come any time later or
 * never), and adds its own events: time passes, a front reads a member's
 * report, writes (sent to the members the front may use; acknowledged once k
 * accepted it and none refused), a member goes away or comes back, a front
 * crashes and restarts, a hand-over is asked for. A paused front is one whose
 * events do not come: every order is walked, so every pause is.
 *
 * Every sequence of events up to a depth is walked from a world where front
 * A is active and has acknowledged a write (iterative deepening; states
 * already explored to the same remaining depth are not explored again), and
 * after each step:
 *   S1  a front that becomes active holds a member that has the last
 *       acknowledged write (so its assembly finds it);
 *   S2  no front acknowledges a write after the other front became active
 *       later than it did (the old active is fenced by the members);
 *   S3  a front that steps down as fenced was fenced: the other front holds
 *       a member, or a member dropped its registration (a renewal whose
 *       answer was lost must not look like a fence).
 * Then a liveness check: with members up and the events in a fair order,
 * the standby takes over within a bound after the active stops; and a
 * liveness walk under pauses, a crash and member loss (L1, live_check).
 *
 * GGA_FRONT_DEPTH=d walks to depth d instead of DEPTH (the walk without a
 * lease to d - 1, the 3 + 2 one to at most 8); make test's ASan lane sets 9.
 * GGA_LIVE_DEPTH=d (4 to LIVE_DEPTH) does the same for the liveness walk;
 * the ASan lane sets 8.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVMF_RESV_MAX_REGS 4
#include "target/nvmf_resv.c"

#include "bdev_gga/gga_front.h"
#include "gga/nvme_spec.h"
#include "gga_ut.h"
#include "ut_explore.h"

#define MAXN      6
#define NF        2
#define LEASE     4 /* ticks; renewals every tick */
#define DEPTH     10
#define MAX_DEPTH 14
#define MEMO_BITS 22

enum ev_type {
	E_TICK,
	E_POLL,     /* arg: front */
	E_REPORT,   /* arg: front * MAXN + member */
	E_DELIVER,  /* arg: front * MAXN + member */
	E_LOST,     /* arg: front * MAXN + member: carried out, the answer lost */
	E_WRITE,    /* arg: front */
	E_TOGGLE,   /* arg: member */
	E_CRASH,    /* arg: front */
	E_RESTART,  /* arg: front */
	E_HANDOVER, /* arg: front */
	E_NTYPES,
};

static const char *const g_ev_names[E_NTYPES] = {
	"tick",  "poll",   "report", "deliver", "answer lost",
	"write", "toggle", "crash",  "restart", "hand-over",
};

struct ev {
	uint8_t type;
	uint8_t arg;
};

/* Everything the checker explores: compared and hashed as bytes. */
struct world {
	struct gga_front f[NF];
	struct nvmf_resv mem[MAXN];
	struct gga_front_cmd out[NF][MAXN]; /* commands sent, not delivered */
	uint8_t ver[MAXN];                  /* the newest write the member took */
	uint8_t up[MAXN];                   /* the member answers */
	uint8_t front_up[NF];
	uint8_t act_epoch[NF]; /* epoch at which the front last became active */
	uint8_t was_active[NF];
	uint8_t epoch;
	uint8_t acked;                               /* the newest acknowledged write */
	uint8_t gen;                                 /* the newest write sent */
	uint8_t toggles, crashes, handovers, writes; /* budgets left */
	uint8_t pad[3];
	uint64_t now;
};

static struct {
	uint32_t k, m, n;
	uint32_t q_override; /* 0: the module's quorum */
	uint64_t lease;      /* the fronts' lease (LEASE but in one test) */
	uint64_t renew;      /* the fronts' renew_ms */
	bool no_uncertain;   /* turn gga_front.rule_uncertain off */
	bool no_come_back;   /* turn gga_front.rule_come_back off */
	bool stay_down;      /* the old shell: an assembled front stepped down for good */
	uint64_t t_max;
	struct ut_memo memo;
	bool bad;
	const char *why;
	struct ev path[MAX_DEPTH + 1];
	uint32_t path_len;
	uint64_t states, steps;
} g;

static const uint8_t g_hostid[NF][NVMF_RESV_HOSTID_LEN] = { { 0xa }, { 0xb } };

static void
front_init(struct world *w, uint32_t x)
{
	gga_front_init(&w->f[x], g.k, g.m, (uint16_t)(x + 1), g.lease, x == 0, w->now);
	/* The reason is a pointer: equal worlds must compare equal. */
	w->f[x].reason = NULL;
	if (g.q_override != 0) {
		w->f[x].q = g.q_override;
	}
	w->f[x].rule_uncertain = !g.no_uncertain;
	w->f[x].rule_come_back = !g.no_come_back;
	/* The safety walks: a renewal round a tick (lease 4). */
	w->f[x].renew_ms = g.renew;
	memset(w->out[x], 0, sizeof(w->out[x]));
	w->was_active[x] = 0;
}

/* The holder's key on member i, 0 if nobody holds it. */
static uint64_t
holder_key(const struct nvmf_resv *r)
{
	uint32_t j;

	if (r->type == NVMF_RESV_NONE) {
		return 0;
	}
	for (j = 0; j < r->nregs; j++) {
		if (memcmp(r->regs[j].hostid, r->holder, NVMF_RESV_HOSTID_LEN) == 0) {
			return r->regs[j].key;
		}
	}
	return 0;
}

static enum gga_front_result
as_result(int sc)
{
	if (sc == NVME_SC_SUCCESS) {
		return GGA_FRONT_OK;
	}
	return sc == NVME_SC_RESERVATION_CONFLICT ? GGA_FRONT_CONFLICT : GGA_FRONT_ERROR;
}

/* What the gga bdev's shell sends for one command, at the member (DESIGN.md 1.3). */
static enum gga_front_result
carry_out(struct nvmf_resv *r, const uint8_t *hostid, const struct gga_front_cmd *c)
{
	int sc;

	switch (c->op) {
	case GGA_FRONT_OP_ACQUIRE:
	case GGA_FRONT_OP_PREEMPT:
		sc = nvmf_resv_register(r, hostid, 1, NVMF_RESV_REPLACE, true, 0, 0, c->nrkey,
					NULL);
		if (sc != NVME_SC_SUCCESS) {
			return as_result(sc);
		}
		if (c->op == GGA_FRONT_OP_PREEMPT) {
			sc = nvmf_resv_acquire(r, hostid, NVMF_RESV_PREEMPT_ABORT, false,
					       GGA_FRONT_RTYPE, c->nrkey, c->prkey, NULL);
			if (sc != NVME_SC_SUCCESS) {
				return as_result(sc);
			}
		}
		/* Confirms the holder: a preempt of a released member acquires nothing. */
		return as_result(nvmf_resv_acquire(r, hostid, NVMF_RESV_ACQUIRE, false,
						   GGA_FRONT_RTYPE, c->nrkey, 0, NULL));
	case GGA_FRONT_OP_RENEW:
		return as_result(nvmf_resv_register(r, hostid, 1, NVMF_RESV_REPLACE, false, 0,
						    c->crkey, c->nrkey, NULL));
	case GGA_FRONT_OP_RELEASE:
		return as_result(nvmf_resv_release(r, hostid, NVMF_RESV_RELEASE, false,
						   GGA_FRONT_RTYPE, c->crkey, NULL));
	default:
		return GGA_FRONT_ERROR;
	}
}

static void
fail(const char *why)
{
	if (!g.bad) {
		g.bad = true;
		g.why = why;
	}
}

/* After any event: a front that just became active must see the last acknowledged write (S1). */
static void
w_note_roles(struct world *w)
{
	uint32_t x, i;
	bool sees;

	for (x = 0; x < NF; x++) {
		bool active = w->front_up[x] && w->f[x].role == GGA_FRONT_ACTIVE;

		if (active && !w->was_active[x]) {
			sees = w->acked == 0;
			for (i = 0; i < g.n; i++) {
				if (w->f[x].members[i].held && w->ver[i] >= w->acked) {
					sees = true;
				}
			}
			if (!sees) {
				fail("S1: a front became active without a member that has the last acknowledged write");
			}
			w->epoch++;
			w->act_epoch[x] = w->epoch;
		}
		w->was_active[x] = active;
	}
}

/*
 * S3: a front that steps down saying it was fenced was: the other front holds
 * one of the members, or a member no longer has its registration. (A false
 * fence loses nothing but the array's service: the check keeps it honest.)
 */
static void
w_check_fenced(const struct world *w, uint32_t x)
{
	uint32_t i;

	for (i = 0; i < g.n; i++) {
		if (nvmf_resv_is_holder(&w->mem[i], g_hostid[1 - x]) ||
		    !nvmf_resv_is_registered(&w->mem[i], g_hostid[x])) {
			return;
		}
	}
	fail("S3: a front stepped down as fenced while no member had fenced it");
}

static void
w_write(struct world *w, uint32_t x)
{
	struct gga_front *f = &w->f[x];
	uint32_t i, took = 0;
	bool refused = false;
	uint8_t v = (uint8_t)(w->gen + 1);

	w->gen = v;
	w->writes--;
	for (i = 0; i < g.n; i++) {
		if (!gga_front_may_use(f, i) || !w->up[i]) {
			continue;
		}
		if (nvmf_resv_check(&w->mem[i], g_hostid[x], true) != NVME_SC_SUCCESS) {
			refused = true;
			gga_front_conflict(f, i, w->now);
			continue;
		}
		w->ver[i] = v;
		took++;
	}
	if (refused || took < g.k) {
		return;
	}
	if (w->act_epoch[x] != w->epoch) {
		fail("S2: a front acknowledged a write after the other became active");
	}
	w->acked = v;
}

static bool
w_enabled(const struct world *w, struct ev e)
{
	uint32_t x = e.arg / MAXN, i = e.arg % MAXN;

	switch (e.type) {
	case E_TICK:
		return w->now < g.t_max;
	case E_POLL:
		return w->front_up[e.arg];
	case E_REPORT:
		return w->front_up[x] && gga_front_wants_report(&w->f[x], i);
	case E_DELIVER:
		return w->front_up[x] && w->out[x][i].op != GGA_FRONT_OP_NONE;
	case E_LOST:
		return w->front_up[x] && w->up[i] && w->out[x][i].op != GGA_FRONT_OP_NONE;
	case E_WRITE:
		return w->writes > 0 && w->front_up[e.arg] && w->f[e.arg].role == GGA_FRONT_ACTIVE;
	case E_TOGGLE:
		return w->toggles > 0;
	case E_CRASH:
		return w->crashes > 0 && w->front_up[e.arg];
	case E_RESTART:
		return !w->front_up[e.arg];
	case E_HANDOVER:
		return w->handovers > 0 && w->front_up[e.arg] &&
		       (w->f[e.arg].role == GGA_FRONT_ACTIVE ||
			w->f[e.arg].role == GGA_FRONT_STANDBY);
	default:
		return false;
	}
}

static void
w_event(struct world *w, struct ev e)
{
	struct gga_front_cmd cmds[MAXN];
	uint32_t x = e.arg / MAXN, i = e.arg % MAXN, j;
	enum gga_front_result res;

	switch (e.type) {
	case E_TICK:
		w->now++;
		break;
	case E_POLL:
		gga_front_poll(&w->f[e.arg], w->now, cmds);
		for (j = 0; j < g.n; j++) {
			if (cmds[j].op != GGA_FRONT_OP_NONE) {
				w->out[e.arg][j] = cmds[j];
			}
		}
		break;
	case E_REPORT:
		gga_front_report(&w->f[x], i, w->now, w->up[i],
				 w->up[i] ? holder_key(&w->mem[i]) : 0);
		break;
	case E_DELIVER:
		res = w->up[i] ? carry_out(&w->mem[i], g_hostid[x], &w->out[x][i]) :
				 GGA_FRONT_ERROR;
		memset(&w->out[x][i], 0, sizeof(w->out[x][i]));
		gga_front_done(&w->f[x], i, w->now, res);
		break;
	case E_LOST:
		/* The member did it; the front hears only that the command failed. */
		carry_out(&w->mem[i], g_hostid[x], &w->out[x][i]);
		memset(&w->out[x][i], 0, sizeof(w->out[x][i]));
		gga_front_done(&w->f[x], i, w->now, GGA_FRONT_ERROR);
		break;
	case E_WRITE:
		w_write(w, e.arg);
		break;
	case E_TOGGLE:
		w->up[e.arg] = !w->up[e.arg];
		w->toggles--;
		break;
	case E_CRASH:
		w->front_up[e.arg] = 0;
		w->crashes--;
		memset(&w->f[e.arg], 0, sizeof(w->f[e.arg]));
		memset(w->out[e.arg], 0, sizeof(w->out[e.arg]));
		w->was_active[e.arg] = 0;
		break;
	case E_RESTART:
		w->front_up[e.arg] = 1;
		front_init(w, e.arg);
		break;
	case E_HANDOVER:
		gga_front_hand_over(&w->f[e.arg], w->now);
		w->handovers--;
		break;
	default:
		break;
	}
	for (x = 0; x < NF; x++) {
		if (w->front_up[x] && w->was_active[x] && w->f[x].role != GGA_FRONT_ACTIVE &&
		    w->f[x].reason != NULL && strncmp(w->f[x].reason, "fenced", 6) == 0) {
			w_check_fenced(w, x);
		}
		w->f[x].reason = NULL;
	}
	w_note_roles(w);
}

static uint32_t
w_events(struct ev *evs)
{
	uint32_t c = 0, x, i, t;

	for (t = 0; t < E_NTYPES; t++) {
		switch (t) {
		case E_TICK:
			evs[c++] = (struct ev){ (uint8_t)t, 0 };
			break;
		case E_REPORT:
		case E_DELIVER:
		case E_LOST:
			for (x = 0; x < NF; x++) {
				for (i = 0; i < g.n; i++) {
					evs[c++] = (struct ev){ (uint8_t)t,
								(uint8_t)(x * MAXN + i) };
				}
			}
			break;
		case E_TOGGLE:
			for (i = 0; i < g.n; i++) {
				evs[c++] = (struct ev){ (uint8_t)t, (uint8_t)i };
			}
			break;
		default:
			for (x = 0; x < NF; x++) {
				evs[c++] = (struct ev){ (uint8_t)t, (uint8_t)x };
			}
			break;
		}
	}
	return c;
}

static uint64_t
w_hash(const struct world *w)
{
	return ut_hash_bytes(w, sizeof(*w));
}

static bool
dfs(const struct world *w, uint32_t rem, uint32_t depth, uint64_t *count)
{
	struct ev evs[E_NTYPES * NF * MAXN];
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
		g.steps++;
		if (g.bad) {
			g.path_len = depth + 1;
			return true;
		}
		sub = 0;
		if (rem > 1) {
			fp = w_hash(&nw);
			slot = ut_memo_slot(&g.memo, fp, rem - 1, &hit);
			if (hit) {
				sub = slot->count;
			} else {
				g.states++;
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

/* Run one event that must be enabled (the set-up and the liveness check). */
static void
run(struct world *w, uint8_t type, uint32_t x, uint32_t i)
{
	struct ev e = { type, (uint8_t)(type == E_REPORT || type == E_DELIVER || type == E_LOST ?
						x * MAXN + i :
						x) };

	if (type == E_TOGGLE) {
		e.arg = (uint8_t)i;
	}
	if (w_enabled(w, e)) {
		w_event(w, e);
	}
}

/* Reports, a poll and the deliveries of front x, for every member. */
static void
round_of(struct world *w, uint32_t x)
{
	uint32_t i;

	for (i = 0; i < g.n; i++) {
		run(w, E_REPORT, x, i);
	}
	run(w, E_POLL, x, 0);
	for (i = 0; i < g.n; i++) {
		run(w, E_DELIVER, x, i);
	}
}

/* Both fronts up over blank members; A takes them, writes once; B has read the reports. */
static void
w_init(struct world *w)
{
	uint32_t i, x;

	memset(w, 0, sizeof(*w));
	w->now = 1;
	for (i = 0; i < g.n; i++) {
		nvmf_resv_init(&w->mem[i]);
		w->up[i] = 1;
	}
	for (x = 0; x < NF; x++) {
		w->front_up[x] = 1;
		front_init(w, x);
	}
	round_of(w, 0);
	w->writes = 3;
	run(w, E_WRITE, 0, 0);
	for (i = 0; i < g.n; i++) {
		run(w, E_REPORT, 1, i);
	}
	w->toggles = 1;
	w->crashes = 1;
	w->handovers = 1;
}

static void
print_path(void)
{
	uint32_t i;
	struct ev e;

	printf("  shortest counterexample (%u events), then: %s\n", g.path_len, g.why);
	for (i = 0; i < g.path_len; i++) {
		e = g.path[i];
		printf("    %u. %s", i + 1, g_ev_names[e.type]);
		if (e.type == E_REPORT || e.type == E_DELIVER || e.type == E_LOST) {
			printf(" %c member %u\n", 'A' + e.arg / MAXN, e.arg % MAXN);
		} else if (e.type == E_TOGGLE) {
			printf(" member %u\n", e.arg);
		} else if (e.type != E_TICK) {
			printf(" %c\n", 'A' + e.arg);
		} else {
			printf("\n");
		}
	}
}

static void
setup(uint32_t k, uint32_t m, uint32_t q_override)
{
	g.k = k;
	g.m = m;
	g.n = k + m;
	g.q_override = q_override;
	g.lease = LEASE;
	g.renew = LEASE / 4;
	g.no_uncertain = false;
	g.no_come_back = false;
	g.bad = false;
	g.why = NULL;
	g.steps = 0;
	g.states = 0;
}

/*
 * Every sequence up to max_depth, with the fronts' lease `lease`; the length
 * of the shortest violating one, 0 if none.
 */
static uint32_t
check_lease(uint32_t k, uint32_t m, uint32_t q_override, uint64_t lease, uint32_t max_depth)
{
	struct timespec t0;
	struct world w;
	uint64_t count = 0;
	uint32_t d, found = 0;

	setup(k, m, q_override);
	g.lease = lease;
	g.renew = lease / 4;
	w_init(&w);
	CU_ASSERT_FATAL(!g.bad);
	/* The set-up must reach what the walk starts from. */
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	CU_ASSERT_FATAL(w.f[1].role == GGA_FRONT_STANDBY);
	CU_ASSERT_FATAL(w.acked == 1);
	g.t_max = w.now + LEASE + 2;
	CU_ASSERT_FATAL(ut_memo_init(&g.memo, MEMO_BITS));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (d = 1; d <= max_depth; d++) {
		ut_memo_clear(&g.memo);
		if (dfs(&w, d, 0, &count)) {
			found = d;
			break;
		}
	}
	printf("\n  %u+%u, q %u, lease %" PRIu64 ": ", k, m,
	       q_override ? q_override : gga_front_quorum(k, m), lease);
	ut_explore_summary(found, max_depth, count, g.states, g.steps, &t0, &g.memo);
	if (found) {
		print_path();
	}
	ut_memo_fini(&g.memo);
	return found;
}

static uint32_t
check(uint32_t k, uint32_t m, uint32_t q_override, uint32_t max_depth)
{
	return check_lease(k, m, q_override, LEASE, max_depth);
}

static uint32_t
depth_env(uint32_t dflt)
{
	const char *s = getenv("GGA_FRONT_DEPTH");
	long d = s != NULL ? strtol(s, NULL, 10) : (long)dflt;

	return d >= 1 && d <= MAX_DEPTH ? (uint32_t)d : dflt;
}

static void
test_quorum(void)
{
	UT_ASSERT_EQ(gga_front_quorum(2, 1), 2);
	UT_ASSERT_EQ(gga_front_quorum(4, 2), 4);
	UT_ASSERT_EQ(gga_front_quorum(8, 3), 6);
	UT_ASSERT_EQ(gga_front_quorum(1, 1), 2);
	UT_ASSERT_EQ(gga_front_quorum(3, 2), 3);
	UT_ASSERT_EQ(gga_front_key(3, 7), 0x0003000000000007ull);
	UT_ASSERT_EQ(gga_front_key_owner(gga_front_key(3, 7)), 3);
}

static void
test_safe_2_1(void)
{
	UT_ASSERT_EQ(check(2, 1, 0, depth_env(DEPTH)), 0);
}

static void
test_safe_3_2(void)
{
	UT_ASSERT_EQ(check(3, 2, 0, depth_env(DEPTH) > 8 ? 8 : depth_env(DEPTH)), 0);
}

/*
 * Safety does not hang on the clock: with a lease of 0 the standby preempts
 * at its first poll, taking over from a live active again and again; the
 * members still keep every acknowledged write (docs/DESIGN.md 1.5).
 */
static void
test_safe_without_lease(void)
{
	uint32_t d = depth_env(DEPTH);

	UT_ASSERT_EQ(check_lease(2, 1, 0, 0, d > 1 ? d - 1 : 1), 0);
}

/* The checker finds what a quorum below m + 1 allows: a takeover that misses a write. */
static void
test_quorum_one_found(void)
{
	CU_ASSERT(check(2, 1, 1, 12) != 0);
	CU_ASSERT(g.why != NULL && g.why[0] == 'S');
}

/* Without the uncertain rule, a renewal whose answer was lost is taken for a fence (S3). */
static void
test_lost_answer_found(void)
{
	struct world w;
	uint64_t count = 0;
	uint32_t d, found = 0;

	setup(2, 1, 0);
	g.no_uncertain = true;
	w_init(&w);
	g.t_max = w.now + LEASE + 2;
	CU_ASSERT_FATAL(ut_memo_init(&g.memo, MEMO_BITS));
	for (d = 1; d <= 8 && !found; d++) {
		ut_memo_clear(&g.memo);
		found = dfs(&w, d, 0, &count) ? d : 0;
	}
	ut_memo_fini(&g.memo);
	printf("\n  without the uncertain rule: %s at depth %u\n", found ? "violation" : "none",
	       found);
	if (found) {
		print_path();
	}
	CU_ASSERT(found != 0 && g.why != NULL && strncmp(g.why, "S3", 2) == 0);
	g.no_uncertain = false;
}

/*
 * Liveness: events in a fair order (each front's round, then a tick).
 * Blank members: one front is active within a round. The active stops (its
 * events no longer come): the standby is active within lease + 2 ticks, and
 * the old one, back, steps down at its first renewal without writing.
 */
static void
test_takeover_bound(void)
{
	struct world w;
	uint64_t stop_at;
	uint32_t t;

	setup(2, 1, 0);
	w_init(&w);
	g.t_max = UINT64_MAX;
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	/* Both running: A keeps it (B's preempts would be refused if tried). */
	for (t = 0; t < 3 * LEASE; t++) {
		round_of(&w, 0);
		round_of(&w, 1);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_STANDBY);
	/* A pauses. */
	stop_at = w.now;
	for (t = 0; t < LEASE + 3 && w.f[1].role != GGA_FRONT_ACTIVE; t++) {
		round_of(&w, 1);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(w.now - stop_at <= LEASE + 2);
	printf("\n  takeover %" PRIu64 " ticks after the active stopped (lease %u)\n",
	       w.now - stop_at, LEASE);
	/* A comes back believing it is active: its write is refused, it steps down. */
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	w.writes = 1;
	run(&w, E_WRITE, 0, 0);
	CU_ASSERT(!g.bad);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	UT_ASSERT_EQ(w.acked, 1);
	/* A hand-over back to A: B releases, A takes over without waiting a lease. */
	UT_ASSERT_EQ(gga_front_hand_over(&w.f[1], w.now), 0);
	UT_ASSERT_EQ(gga_front_hand_over(&w.f[0], w.now), 0);
	round_of(&w, 1);
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_STANDBY);
	round_of(&w, 0);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	/* A front that is neither active nor standby refuses a hand-over. */
	w.f[1].role = GGA_FRONT_TAKING_OVER;
	UT_ASSERT_EQ(gga_front_hand_over(&w.f[1], w.now), -EINVAL);
	CU_ASSERT(!g.bad);
}

/*
 * Issue 32: a front that steps down stands by again (its shell lets go of
 * the assembly). The preferred front A hands over: it releases the members,
 * and its next rounds see them held by nobody. It must not take them back
 * at once as the preferred front would at start (it did: B, told to take
 * over, found its takeover reaching too few members). B takes over; A stays
 * standby while B renews, and takes over only once B stops for a lease.
 */
static void
test_hand_over_not_taken_back(void)
{
	struct world w;
	uint32_t t;

	setup(2, 1, 0);
	w_init(&w);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	UT_ASSERT_EQ(gga_front_hand_over(&w.f[0], w.now), 0);
	round_of(&w, 0);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	/* A's next rounds: nobody holds a member; A waits. */
	for (t = 0; t < 3; t++) {
		round_of(&w, 0);
		run(&w, E_TICK, 0, 0);
		UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	}
	UT_ASSERT_EQ(gga_front_hand_over(&w.f[1], w.now), 0);
	round_of(&w, 1);
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_ACTIVE);
	for (t = 0; t < 3 * LEASE; t++) {
		round_of(&w, 0);
		round_of(&w, 1);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_ACTIVE);
	/* B stops: A takes over after the lease, and may take unheld members at once again. */
	for (t = 0; t < LEASE + 3 && w.f[0].role != GGA_FRONT_ACTIVE; t++) {
		round_of(&w, 0);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(!w.f[0].yielded);
	CU_ASSERT(!g.bad);
}

/*
 * Issue 32: a front cut off from most members stops renewing the few it
 * reaches. A is active; members 1 and 2 stop answering it (a partition: B
 * still reaches them, and takes them over once A's keys lapse there, but
 * not member 0 while A renews it). A proves nothing: after a lease of
 * proving it is standby and sends nothing more, so its key on member 0
 * lapses too. Before, it stayed proving, renewing member 0 for ever.
 */
static void
test_proving_bounded(void)
{
	struct world w;
	uint32_t t, sent;
	struct gga_front_cmd cmds[MAXN];

	setup(2, 1, 0);
	w_init(&w);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	w.up[1] = 0;
	w.up[2] = 0;
	for (t = 0; t < LEASE + 2 && w.f[0].role == GGA_FRONT_ACTIVE; t++) {
		round_of(&w, 0);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_PROVING);
	for (t = 0; t < 2 * LEASE && w.f[0].role == GGA_FRONT_PROVING; t++) {
		round_of(&w, 0);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	CU_ASSERT(t <= LEASE + 1);
	/* No more renewals to member 0 (its reports are read as a standby's). */
	sent = gga_front_poll(&w.f[0], w.now, cmds);
	UT_ASSERT_EQ(sent, 0);
	CU_ASSERT(!g.bad);
}

/* A member that refuses the renewal (a preempt happened): the active steps down. */
static void
test_renew_conflict_steps_down(void)
{
	struct world w;

	setup(2, 1, 0);
	w_init(&w);
	g.t_max = UINT64_MAX;
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	/* Someone cleared member 1's registrations. */
	nvmf_resv_init(&w.mem[1]);
	run(&w, E_TICK, 0, 0);
	run(&w, E_POLL, 0, 0);
	CU_ASSERT(w.out[0][1].op == GGA_FRONT_OP_RENEW);
	run(&w, E_DELIVER, 0, 1);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_STANDBY);
	CU_ASSERT(!gga_front_may_use(&w.f[0], 0));
}

/*
 * A renewal the member carried out but whose answer was lost: the next
 * renewal must not go with the old key (the member would refuse it, and the
 * front would take that for a fence). It asks the member first (S3).
 */
static void
test_lost_renewal_not_a_fence(void)
{
	struct world w;

	setup(2, 1, 0);
	w_init(&w);
	g.t_max = UINT64_MAX;
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	run(&w, E_TICK, 0, 0);
	run(&w, E_POLL, 0, 0);
	CU_ASSERT_FATAL(w.out[0][1].op == GGA_FRONT_OP_RENEW);
	run(&w, E_LOST, 0, 1);
	CU_ASSERT(w.f[0].members[1].uncertain);
	run(&w, E_DELIVER, 0, 0);
	run(&w, E_DELIVER, 0, 2);
	run(&w, E_TICK, 0, 0);
	run(&w, E_POLL, 0, 0);
	/* No renewal to the uncertain member; a report instead. */
	CU_ASSERT(w.out[0][1].op == GGA_FRONT_OP_NONE);
	CU_ASSERT(gga_front_wants_report(&w.f[0], 1));
	run(&w, E_REPORT, 0, 1);
	CU_ASSERT(!w.f[0].members[1].uncertain && w.f[0].members[1].held);
	run(&w, E_DELIVER, 0, 0);
	run(&w, E_DELIVER, 0, 2);
	run(&w, E_TICK, 0, 0);
	run(&w, E_POLL, 0, 0);
	CU_ASSERT_FATAL(w.out[0][1].op == GGA_FRONT_OP_RENEW);
	run(&w, E_DELIVER, 0, 1);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(!g.bad);
}

/*
 * A second front given the same front_id by mistake (another host): it must
 * not take the members from the live one. Its Acquire is refused, after
 * which its namesake's key is treated as any other's: it changes at every
 * renewal, so it never lapses.
 */
static void
test_duplicate_front_id(void)
{
	struct world w;
	uint32_t t;

	setup(2, 1, 0);
	w_init(&w);
	g.t_max = UINT64_MAX;
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	/* Front B restarts with A's id. */
	gga_front_init(&w.f[1], g.k, g.m, 1, LEASE, false, w.now);
	w.f[1].reason = NULL;
	for (t = 0; t < 4 * LEASE; t++) {
		round_of(&w, 0);
		round_of(&w, 1);
		run(&w, E_TICK, 0, 0);
		/* Every tick: A keeps the array, B never has it (no ping-pong). */
		if (w.f[0].role != GGA_FRONT_ACTIVE || w.f[1].role == GGA_FRONT_ACTIVE) {
			break;
		}
	}
	UT_ASSERT_EQ(t, 4 * LEASE);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(w.f[1].role == GGA_FRONT_STANDBY);
	CU_ASSERT(w.f[1].members[0].own_key_elsewhere);
	CU_ASSERT(!g.bad);
	/* A stops: B, whatever its id, takes over once A's key has lapsed. */
	for (t = 0; t < LEASE + 3 && w.f[1].role != GGA_FRONT_ACTIVE; t++) {
		round_of(&w, 1);
		run(&w, E_TICK, 0, 0);
	}
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(!g.bad);
}

/*
 * The lease's boundary, on both sides at once. Active A renews on every
 * member at time T, then hears no more answers (its renewals stay out);
 * standby B reads the new key at T. At T + lease - 1 A is active and B
 * still waits. At T + lease B may take over (a key unchanged for a lease:
 * `>= lease`), so by then A must no longer count a member renewed exactly
 * one lease ago as fresh: it steps down at its poll at T + lease, and the
 * two fronts are never active at once. Kills `<` written `<=` in
 * poll_active() (fr-lease-off-by-one: A is still active at T + lease,
 * beside B's takeover).
 */
static void
test_lease_boundary(void)
{
	struct gga_front_cmd cmds[MAXN];
	struct world w;
	uint64_t t;
	uint32_t i;

	setup(2, 1, 0);
	w_init(&w);
	g.t_max = UINT64_MAX;
	CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
	/* A renewal round, answered by every member at T; B reads the new key at T. */
	run(&w, E_TICK, 0, 0);
	round_of(&w, 0);
	t = w.now;
	round_of(&w, 1);
	for (i = 0; i < g.n; i++) {
		UT_ASSERT_EQ(w.f[0].members[i].renewed_at, t);
		CU_ASSERT(w.f[1].members[i].seen && w.f[1].members[i].seen_since == t);
	}
	/* From now on nothing A sends is answered: up to T + lease - 1 both hold their roles. */
	while (w.now < t + LEASE - 1) {
		run(&w, E_TICK, 0, 0);
		run(&w, E_POLL, 0, 0);
		round_of(&w, 1);
		UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
		UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_STANDBY);
	}
	for (i = 0; i < g.n; i++) {
		CU_ASSERT(w.f[0].members[i].busy);
		CU_ASSERT(gga_front_may_use(&w.f[0], i));
	}
	/*
	 * T + lease: A's renewals are exactly one lease old. A stops writing
	 * (proving: its renewals are still out, so it sends none), then B takes over.
	 */
	run(&w, E_TICK, 0, 0);
	UT_ASSERT_EQ(w.now, t + LEASE);
	UT_ASSERT_EQ(gga_front_poll(&w.f[0], w.now, cmds), 0);
	UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_PROVING);
	UT_ASSERT_STR_EQ(w.f[0].reason, "lease not renewed on enough members");
	w.f[0].reason = NULL;
	for (i = 0; i < g.n; i++) {
		CU_ASSERT(!gga_front_may_use(&w.f[0], i));
	}
	round_of(&w, 1);
	UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_ACTIVE);
	CU_ASSERT(w.f[0].role != GGA_FRONT_ACTIVE);
	CU_ASSERT(!g.bad);
}

/*
 * Liveness under pauses and member loss (issue 32 cases 5 and 6). The
 * lease is LIVE_LEASE ticks and the fronts renew as the module does
 * (lease/20: a tick), one round of each front a tick. The shell is modelled
 * where it matters: a front that was active and is standby again (fenced)
 * steps down: its events stop until its disk has let go of the assembly (the
 * next tick), then it stands by again as a front never active (the old shell
 * stayed stepped down for good: g.stay_down).
 * Every sequence of up to LIVE_DEPTH of these steps is walked:
 *   a fair tick (A's round, B's round); a pause of one front for 0.9 of
 *   the lease (the other's rounds only), then a fair tick; a pause of one
 *   front for two leases (a real fence when it is active; it takes one of
 *   the pauses), then a fair tick; a fair tick in
 *   which a member goes away between the polls and the deliveries (a
 *   takeover or a renewal round loses it); that member back; a front
 *   crashing for good, then lease - 2 fair ticks (so that the next steps
 *   meet the other's takeover);
 * with S1 to S3 after every event, and after every sequence, once faults
 * stop (fair ticks, the members as they are, at least q up): L1 within
 * LIVE_BOUND ticks a front that is up and not stepped down is active.
 */
#define LIVE_LEASE 20
#define LIVE_PAUSE 18 /* 0.9 of the lease */
#define LIVE_BOUND (3 * LIVE_LEASE)
#define LIVE_DEPTH 9

struct live {
	struct world w;
	uint8_t ever_active[NF]; /* active since its (re)start: assembled */
	uint8_t spent[NF];       /* stepped down for good (the shell idles) */
	uint8_t pauses, fences, losses, backs, crashes;
};

static struct {
	uint64_t checked;
	uint64_t lost_in_takeover; /* steps where a member went away under a takeover */
	bool bad;
	struct live bad_at;
	uint8_t path[LIVE_DEPTH];
	uint8_t path_len;
	uint8_t cur[LIVE_DEPTH];
	uint32_t depth; /* LIVE_DEPTH, or GGA_LIVE_DEPTH if smaller (the ASan lane) */
} gl;

enum live_step {
	L_TICK = 0,
	L_PAUSE_A,
	L_PAUSE_B,
	L_LOSE0, /* L_LOSE0 + i: member i goes away during a round */
	L_BACK0 = L_LOSE0 + MAXN,
	L_CRASH_A = L_BACK0 + MAXN,
	L_CRASH_B,
	L_FENCE_A,
	L_FENCE_B,
	L_NSTEPS,
};

static void
live_note(struct live *l)
{
	uint32_t x;

	for (x = 0; x < NF; x++) {
		enum gga_front_role r = l->w.f[x].role;

		if (!l->w.front_up[x]) {
			continue;
		}
		if (r == GGA_FRONT_ACTIVE) {
			l->ever_active[x] = 1;
		} else if (l->ever_active[x] && r != GGA_FRONT_PROVING) {
			l->spent[x] = 1;
		}
	}
}

/* Front x's reports and poll (if it is not stepped down). */
static void
live_ask(struct live *l, uint32_t x)
{
	uint32_t i;

	if (l->spent[x]) {
		return;
	}
	for (i = 0; i < g.n; i++) {
		run(&l->w, E_REPORT, x, i);
	}
	run(&l->w, E_POLL, x, 0);
	live_note(l);
}

static void
live_deliver(struct live *l, uint32_t x)
{
	uint32_t i;

	if (l->spent[x]) {
		return;
	}
	for (i = 0; i < g.n; i++) {
		run(&l->w, E_DELIVER, x, i);
		live_note(l);
	}
}

/*
 * One tick: A's round, B's round; member `lose` (if < n) goes away between
 * polls and deliveries. A front that stepped down before the tick has let
 * go of its assembly after it (the shell's gga_front_shell_rearm()).
 */
static void
live_tick(struct live *l, uint32_t lose, int paused)
{
	uint8_t was_spent[NF];
	uint32_t x;

	memcpy(was_spent, l->spent, sizeof(was_spent));

	for (x = 0; x < NF; x++) {
		if ((int)x != paused) {
			live_ask(l, x);
			if (lose >= g.n) {
				live_deliver(l, x);
			}
		}
	}
	if (lose < g.n) {
		for (x = 0; x < NF; x++) {
			if (l->w.f[x].role == GGA_FRONT_TAKING_OVER &&
			    l->w.out[x][lose].op != GGA_FRONT_OP_NONE) {
				gl.lost_in_takeover++;
			}
		}
		l->w.up[lose] = 0;
		for (x = 0; x < NF; x++) {
			if ((int)x != paused) {
				live_deliver(l, x);
			}
		}
	}
	run(&l->w, E_TICK, 0, 0);
	for (x = 0; x < NF && !g.stay_down; x++) {
		if (was_spent[x] && (int)x != paused) {
			l->spent[x] = 0;
			l->ever_active[x] = 0;
		}
	}
}

static bool
live_step(struct live *l, uint32_t s)
{
	uint32_t t;

	switch (s) {
	case L_TICK:
		live_tick(l, MAXN, -1);
		return true;
	case L_PAUSE_A:
	case L_PAUSE_B:
		if (l->pauses == 0) {
			return false;
		}
		l->pauses--;
		for (t = 0; t < LIVE_PAUSE; t++) {
			live_tick(l, MAXN, (int)(s - L_PAUSE_A));
		}
		live_tick(l, MAXN, -1);
		return true;
	case L_FENCE_A:
	case L_FENCE_B:
		if (l->fences == 0 || l->pauses == 0) {
			return false;
		}
		l->fences--;
		l->pauses--;
		for (t = 0; t < 2 * LIVE_LEASE; t++) {
			live_tick(l, MAXN, (int)(s - L_FENCE_A));
		}
		live_tick(l, MAXN, -1);
		return true;
	case L_CRASH_A:
	case L_CRASH_B:
		if (l->crashes == 0) {
			return false;
		}
		l->crashes--;
		run(&l->w, E_CRASH, s - L_CRASH_A, 0);
		for (t = 0; t + 2 < LIVE_LEASE; t++) {
			live_tick(l, MAXN, -1);
		}
		return true;
	default:
		break;
	}
	if (s >= L_LOSE0 && s < L_LOSE0 + g.n) {
		if (l->losses == 0 || !l->w.up[s - L_LOSE0]) {
			return false;
		}
		l->losses--;
		live_tick(l, s - L_LOSE0, -1);
		return true;
	}
	if (s >= L_BACK0 && s < L_BACK0 + g.n) {
		if (l->backs == 0 || l->w.up[s - L_BACK0]) {
			return false;
		}
		l->backs--;
		l->w.up[s - L_BACK0] = 1;
		live_tick(l, MAXN, -1);
		return true;
	}
	return false;
}

/* L1 from l: fair ticks until a front that is up and not stepped down is active. */
static bool
live_holds(const struct live *from)
{
	struct live l;
	uint32_t t, x, up = 0;

	memcpy(&l, from, sizeof(l));
	for (x = 0; x < g.n; x++) {
		up += l.w.up[x];
	}
	if (up < l.w.f[0].q) {
		return true; /* no quorum of members: nothing to ask */
	}
	for (t = 0; t <= LIVE_BOUND; t++) {
		for (x = 0; x < NF; x++) {
			if (l.w.front_up[x] && !l.spent[x] && l.w.f[x].role == GGA_FRONT_ACTIVE) {
				return true;
			}
		}
		live_tick(&l, MAXN, -1);
		if (g.bad) {
			return false;
		}
	}
	return false;
}

static bool
live_dfs(const struct live *l, uint32_t depth)
{
	struct live nl;
	uint32_t s;

	gl.checked++;
	if (g.bad || !live_holds(l)) {
		gl.bad = true;
		memcpy(&gl.bad_at, l, sizeof(*l));
		gl.path_len = (uint8_t)depth;
		memcpy(gl.path, gl.cur, depth);
		return true;
	}
	if (depth == gl.depth) {
		return false;
	}
	for (s = 0; s < L_NSTEPS; s++) {
		memcpy(&nl, l, sizeof(nl));
		if (!live_step(&nl, s)) {
			continue;
		}
		gl.cur[depth] = (uint8_t)s;
		if (live_dfs(&nl, depth + 1)) {
			return true;
		}
	}
	return false;
}

static const char *
live_step_name(uint32_t s, char *buf, size_t len)
{
	if (s == L_TICK) {
		return "tick";
	}
	if (s == L_PAUSE_A || s == L_PAUSE_B) {
		snprintf(buf, len, "%c paused for 0.9 lease", 'A' + (int)(s - L_PAUSE_A));
	} else if (s == L_FENCE_A || s == L_FENCE_B) {
		snprintf(buf, len, "%c paused for 2 leases", 'A' + (int)(s - L_FENCE_A));
	} else if (s == L_CRASH_A || s == L_CRASH_B) {
		snprintf(buf, len, "%c crashes for good; lease - 2 ticks",
			 'A' + (int)(s - L_CRASH_A));
	} else if (s < L_BACK0) {
		snprintf(buf, len, "tick, member %u lost between polls and answers", s - L_LOSE0);
	} else {
		snprintf(buf, len, "member %u back", s - L_BACK0);
	}
	return buf;
}

/* Walk every sequence; 0 if L1 and S1 to S3 hold, else the length of the first that fails. */
static int
live_check(bool old_rules, uint8_t crashes, uint8_t fences)
{
	struct gga_front ref;
	struct live l;
	char buf[80];
	uint32_t i, x;

	/* The module's own schedule, or the old one. */
	gga_front_init(&ref, 2, 1, 1, LIVE_LEASE, true, 0);
	setup(2, 1, 0);
	g.lease = LIVE_LEASE;
	g.renew = old_rules ? LIVE_LEASE / 4 : ref.renew_ms;
	g.no_come_back = old_rules;
	g.stay_down = g.stay_down || old_rules;
	g.t_max = UINT64_MAX;
	memset(&gl, 0, sizeof(gl));
	gl.depth = getenv("GGA_LIVE_DEPTH") != NULL ?
			   (uint32_t)strtoul(getenv("GGA_LIVE_DEPTH"), NULL, 10) :
			   LIVE_DEPTH;
	gl.depth = gl.depth >= 4 && gl.depth <= LIVE_DEPTH ? gl.depth : LIVE_DEPTH;
	memset(&l, 0, sizeof(l));
	w_init(&l.w);
	CU_ASSERT_FATAL(l.w.f[0].role == GGA_FRONT_ACTIVE);
	/* The module's own schedule, unless the old one is asked for. */
	live_note(&l);
	l.pauses = 2;
	l.losses = 1;
	l.backs = 1;
	l.crashes = crashes;
	l.fences = fences;
	live_dfs(&l, 0);
	printf("\n  liveness, %s rules%s, lease %u ticks, pauses of %u, %u crash, %u fence: %" PRIu64
	       " sequences of up to %u steps (%" PRIu64 " lose a member under a takeover), %s\n",
	       old_rules ? "the old" : "the", g.stay_down ? " (stepped down for good)" : "",
	       LIVE_LEASE, LIVE_PAUSE, crashes, fences, gl.checked, gl.depth, gl.lost_in_takeover,
	       gl.bad ? "a violation" : "no violation");
	if (gl.bad) {
		printf("  first found (%u steps), then: %s\n", gl.path_len,
		       g.bad ? g.why : "L1: no front active and serving within 3 leases");
		for (i = 0; i < gl.path_len; i++) {
			printf("    %u. %s\n", i + 1, live_step_name(gl.path[i], buf, sizeof(buf)));
		}
		for (x = 0; x < NF; x++) {
			printf("    then %c: %s%s\n", 'A' + x,
			       gga_front_role_name(gl.bad_at.w.f[x].role),
			       gl.bad_at.spent[x] ? ", stepped down for good" : "");
		}
	}
	g.no_come_back = false;
	g.stay_down = false;
	return gl.bad ? (int)gl.path_len + 1 : 0;
}

/*
 * The schedule (DESIGN.md 1.11): with the module's renewal interval, a
 * pause of 0.9 lease of the active, starting at any tick of its renewal
 * cycle, passes without a step-down (not even to proving) and without the
 * standby trying a takeover. Kills a renewal interval of lease/4 (the
 * active wakes up with its lease lapsed).
 */
static void
test_pause_rides_out(void)
{
	struct gga_front ref;
	struct world w;
	uint32_t off, t;

	gga_front_init(&ref, 2, 1, 1, LIVE_LEASE, true, 0);
	for (off = 0; off < 6; off++) {
		setup(2, 1, 0);
		g.lease = LIVE_LEASE;
		g.renew = ref.renew_ms;
		g.t_max = UINT64_MAX;
		w_init(&w);
		CU_ASSERT_FATAL(w.f[0].role == GGA_FRONT_ACTIVE);
		for (t = 0; t < LIVE_LEASE + off; t++) {
			round_of(&w, 0);
			round_of(&w, 1);
			run(&w, E_TICK, 0, 0);
		}
		/* A paused: only B's rounds. */
		for (t = 0; t < LIVE_PAUSE; t++) {
			round_of(&w, 1);
			run(&w, E_TICK, 0, 0);
			UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_STANDBY);
		}
		round_of(&w, 0);
		UT_ASSERT_EQ(w.f[0].role, GGA_FRONT_ACTIVE);
		round_of(&w, 1);
		UT_ASSERT_EQ(w.f[1].role, GGA_FRONT_STANDBY);
		CU_ASSERT(!g.bad);
	}
}

/*
 * Pauses of 0.9 lease, a crash, and a member lost in the takeover that
 * follows: some front always serves again.
 */
static void
test_live_pauses(void)
{
	UT_ASSERT_EQ(live_check(false, 1, 1), 0);
	CU_ASSERT(gl.lost_in_takeover > 0);
	CU_ASSERT(!g.bad);
}

/*
 * The old rules (renewals every lease/4, a lapsed lease a step-down to
 * standby, so for good once assembled): the walk finds two pauses that
 * leave no front serving (issue 32 case 5).
 */
static void
test_live_old_rules_found(void)
{
	CU_ASSERT(live_check(true, 0, 0) != 0);
	CU_ASSERT(!g.bad);
	CU_ASSERT(gl.bad_at.spent[0] && gl.bad_at.spent[1]);
}

/*
 * The old shell (an assembled front that steps down stays down until the bdev
 * is created again): the walk finds a fence of the active (paused two
 * leases, the other takes over) and then the other's crash, after which no
 * front serves though one is up with every member.
 */
static void
test_live_stay_down_found(void)
{
	g.stay_down = true;
	CU_ASSERT(live_check(false, 1, 1) != 0);
	CU_ASSERT(!g.bad);
	CU_ASSERT(gl.bad_at.spent[0] || gl.bad_at.spent[1]);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_quorum),
		UT_TEST(test_safe_2_1),
		UT_TEST(test_safe_3_2),
		UT_TEST(test_safe_without_lease),
		UT_TEST(test_quorum_one_found),
		UT_TEST(test_lost_answer_found),
		UT_TEST(test_takeover_bound),
		UT_TEST(test_renew_conflict_steps_down),
		UT_TEST(test_lost_renewal_not_a_fence),
		UT_TEST(test_duplicate_front_id),
		UT_TEST(test_lease_boundary),
		UT_TEST(test_pause_rides_out),
		UT_TEST(test_live_pauses),
		UT_TEST(test_live_old_rules_found),
		UT_TEST(test_live_stay_down_found),
		UT_TEST(test_hand_over_not_taken_back),
		UT_TEST(test_proving_bounded),
	};

	return ut_run("gga_front", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
