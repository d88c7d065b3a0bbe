/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The role of one front of a shared gga bdev: decisions only (gga_front.h).
 */
#include <errno.h>
#include <string.h>

#include "gga_front.h"

uint32_t
gga_front_quorum(uint32_t k, uint32_t m)
{
	uint32_t n = k + m, a = m + 1, b = n / 2 + 1;

	return a > b ? a : b;
}

void
gga_front_init(struct gga_front *f, uint32_t k, uint32_t m, uint16_t front_id, uint64_t lease_ms,
	       bool preferred, uint64_t now)
{
	memset(f, 0, sizeof(*f));
	f->n = k + m;
	f->k = k;
	f->q = gga_front_quorum(k, m);
	f->front_id = front_id;
	f->lease_ms = lease_ms;
	f->preferred = preferred;
	f->role = GGA_FRONT_STANDBY;
	f->since = now;
	f->reason = "started";
	f->rule_uncertain = true;
	f->rule_come_back = true;
	/* Renewals every lease/20, polled every lease/80: a pause of 0.9 lease rides out (1.11). */
	f->renew_ms = lease_ms / 20;
}

uint64_t
gga_front_current_key(const struct gga_front *f)
{
	return gga_front_key(f->front_id, f->renewals);
}

/* Forget what the reports showed: after a role change they are read again. */
static void
forget_seen(struct gga_front *f)
{
	uint32_t i;

	for (i = 0; i < f->n; i++) {
		f->members[i].seen = false;
	}
}

static void
become(struct gga_front *f, enum gga_front_role role, uint64_t now, const char *reason)
{
	uint32_t i;

	if (role == GGA_FRONT_STANDBY && f->role != GGA_FRONT_STANDBY &&
	    f->role != GGA_FRONT_TAKING_OVER) {
		/* It was active: the members it lets go are for the other front first. */
		f->yielded = true;
	} else if (role == GGA_FRONT_ACTIVE) {
		f->yielded = false;
	}
	f->role = role;
	f->since = now;
	f->reason = reason;
	if (role == GGA_FRONT_STANDBY) {
		for (i = 0; i < f->n; i++) {
			f->members[i].held = false;
			f->members[i].uncertain = false;
			f->members[i].continuous = false;
		}
		f->takeover_now = false;
		forget_seen(f);
	}
}

static void step_down(struct gga_front *f, uint64_t now, const char *reason);

bool
gga_front_wants_report(const struct gga_front *f, uint32_t i)
{
	const struct gga_front_member *mb = &f->members[i];

	return !mb->busy && (!mb->held || mb->uncertain);
}

/* What an uncertain member holds (see gga_front_member.uncertain). */
static void
report_uncertain(struct gga_front *f, uint32_t i, uint64_t now, uint64_t holder_key)
{
	struct gga_front_member *mb = &f->members[i];

	mb->uncertain = false;
	if (holder_key != 0 && gga_front_key_owner(holder_key) == f->front_id) {
		/* Still ours: with the key the lost answer carried, or the one before. */
		mb->key = holder_key;
		return;
	}
	mb->held = false;
	if (holder_key == 0) {
		/* It lost its reservations (restarted without persisting them): take it again. */
		mb->seen = true;
		mb->seen_key = 0;
		mb->seen_since = now;
		return;
	}
	/* Another front holds a member this front held: it was preempted. */
	step_down(f, now, "fenced: another front holds a member");
}

void
gga_front_report(struct gga_front *f, uint32_t i, uint64_t now, bool ok, uint64_t holder_key)
{
	struct gga_front_member *mb = &f->members[i];

	if (mb->held && mb->uncertain) {
		if (ok) {
			report_uncertain(f, i, now, holder_key);
		}
		return;
	}
	if (!ok) {
		mb->seen = false;
		return;
	}
	if (!mb->seen || mb->seen_key != holder_key) {
		mb->seen = true;
		mb->seen_key = holder_key;
		mb->seen_since = now;
	}
}

/*
 * May member i be taken now: seen, not ours yet, and its holder either this
 * front (an earlier life of it), nobody (at once for the preferred front
 * that has not yielded since it was last active, or a hand-over; after a
 * lease otherwise), or a key unchanged for a lease.
 */
static bool
lapsed(const struct gga_front *f, uint32_t i, uint64_t now)
{
	const struct gga_front_member *mb = &f->members[i];

	if (mb->held || mb->busy || !mb->seen) {
		return false;
	}
	/*
	 * Our own key: an earlier life of this front, same host. With another
	 * host identifier (own_key_elsewhere) it could as well be a second
	 * front given our id by mistake: that one must lapse like any other.
	 */
	if (f->takeover_now ||
	    (mb->seen_key != 0 && gga_front_key_owner(mb->seen_key) == f->front_id &&
	     !mb->own_key_elsewhere)) {
		return true;
	}
	if (mb->seen_key == 0 && ((f->preferred && !f->yielded) || f->role == GGA_FRONT_ACTIVE)) {
		return true;
	}
	return now - mb->seen_since >= f->lease_ms;
}

static void
take_cmd(struct gga_front *f, uint32_t i, struct gga_front_cmd *c)
{
	const struct gga_front_member *mb = &f->members[i];
	bool other = mb->seen_key != 0 &&
		     (gga_front_key_owner(mb->seen_key) != f->front_id || mb->own_key_elsewhere);

	c->op = other ? GGA_FRONT_OP_PREEMPT : GGA_FRONT_OP_ACQUIRE;
	c->crkey = gga_front_current_key(f);
	c->nrkey = gga_front_current_key(f);
	c->prkey = other ? mb->seen_key : 0;
}

static void
set_busy(struct gga_front *f, uint32_t i, const struct gga_front_cmd *c, uint64_t now)
{
	f->members[i].busy = true;
	f->members[i].busy_op = c->op;
	f->members[i].busy_nrkey = c->nrkey;
	f->members[i].busy_at = now;
}

static uint32_t
count_held(const struct gga_front *f)
{
	uint32_t i, n = 0;

	for (i = 0; i < f->n; i++) {
		n += f->members[i].held;
	}
	return n;
}

static bool
any_busy(const struct gga_front *f)
{
	uint32_t i;

	for (i = 0; i < f->n; i++) {
		if (f->members[i].busy) {
			return true;
		}
	}
	return false;
}

static uint32_t
poll_standby(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds)
{
	uint32_t i, n = 0, held = 0;

	for (i = 0; i < f->n; i++) {
		n += lapsed(f, i, now);
	}
	if (n < f->q) {
		return 0;
	}
	/* Before the first command: the key may not change while the takeover is out. */
	for (i = 0; i < f->n; i++) {
		if (lapsed(f, i, now)) {
			take_cmd(f, i, &cmds[i]);
			set_busy(f, i, &cmds[i], now);
			held++;
		}
	}
	become(f, GGA_FRONT_TAKING_OVER, now, f->takeover_now ? "hand-over" : "lease lapsed");
	f->takeover_now = false;
	return held;
}

/* A renewal round to every member held (not busy, not uncertain), if one is due. */
static uint32_t
renew_round(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds)
{
	struct gga_front_member *mb;
	uint32_t i, n = 0;
	uint64_t key;

	if (now - f->last_round < f->renew_ms && f->last_round != 0) {
		return 0;
	}
	f->last_round = now;
	f->renewals++;
	key = gga_front_current_key(f);
	for (i = 0; i < f->n; i++) {
		mb = &f->members[i];
		if (!mb->held || mb->busy || mb->uncertain) {
			continue;
		}
		cmds[i].op = GGA_FRONT_OP_RENEW;
		cmds[i].crkey = mb->key;
		cmds[i].nrkey = key;
		cmds[i].prkey = 0;
		set_busy(f, i, &cmds[i], now);
		n++;
	}
	return n;
}

/*
 * Proving: the members held since the takeover that took a renewal sent
 * since the step-down (a key counted from prove_from: not the time, which
 * may not have moved). Such a renewal (Replace without ignoring the old key)
 * succeeds only while our registration is there, which no preempt left.
 */
static uint32_t
count_proved(const struct gga_front *f)
{
	const struct gga_front_member *mb;
	uint32_t i, n = 0;

	for (i = 0; i < f->n; i++) {
		mb = &f->members[i];
		n += mb->held && mb->continuous && !mb->uncertain &&
		     (mb->key & 0xffffffffffffull) >= f->prove_from;
	}
	return n;
}

static uint32_t
poll_active(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds)
{
	struct gga_front_member *mb;
	uint32_t i, n = 0, fresh = 0;

	for (i = 0; i < f->n; i++) {
		mb = &f->members[i];
		if (mb->held && now - mb->renewed_at < f->lease_ms) {
			fresh++;
		}
	}
	if (fresh < f->q) {
		if (!f->rule_come_back) {
			become(f, GGA_FRONT_STANDBY, now, "lease not renewed on enough members");
			return 0;
		}
		/* Stop writing now, and renew at once to learn whether the lease is still ours. */
		become(f, GGA_FRONT_PROVING, now, "lease not renewed on enough members");
		f->last_round = 0;
		f->prove_from = f->renewals + 1;
		return renew_round(f, now, cmds);
	}
	/* A member it does not hold (back after the takeover) is taken as the standby would. */
	for (i = 0; i < f->n; i++) {
		if (lapsed(f, i, now)) {
			take_cmd(f, i, &cmds[i]);
			set_busy(f, i, &cmds[i], now);
			n++;
		}
	}
	return n + renew_round(f, now, cmds);
}

static uint32_t
poll_hand_over(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds)
{
	uint32_t i, n = 0;

	for (i = 0; i < f->n; i++) {
		if (!f->members[i].held || f->members[i].busy) {
			continue;
		}
		cmds[i].op = GGA_FRONT_OP_RELEASE;
		cmds[i].crkey = f->members[i].key;
		set_busy(f, i, &cmds[i], now);
		n++;
	}
	if (n == 0 && !any_busy(f)) {
		become(f, GGA_FRONT_STANDBY, now, "handed over");
	}
	return n;
}

uint32_t
gga_front_poll(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds)
{
	memset(cmds, 0, sizeof(*cmds) * f->n);
	switch (f->role) {
	case GGA_FRONT_STANDBY:
		return poll_standby(f, now, cmds);
	case GGA_FRONT_ACTIVE:
		return poll_active(f, now, cmds);
	case GGA_FRONT_HANDING_OVER:
		return poll_hand_over(f, now, cmds);
	case GGA_FRONT_PROVING:
		if (now - f->since >= f->lease_ms) {
			/*
			 * A lease without a proof: cut off from most members (a
			 * partition). It stops renewing the few it reaches, so
			 * that their holder lapses and the other front can take
			 * them; it takes over again by the standby's rules.
			 */
			become(f, GGA_FRONT_STANDBY, now, "lease not proved within a lease");
			return 0;
		}
		return renew_round(f, now, cmds);
	default:
		return 0; /* taking over: waits for the answers */
	}
}

static void
step_down(struct gga_front *f, uint64_t now, const char *reason)
{
	if (f->role == GGA_FRONT_ACTIVE || f->role == GGA_FRONT_TAKING_OVER ||
	    f->role == GGA_FRONT_HANDING_OVER || f->role == GGA_FRONT_PROVING) {
		become(f, GGA_FRONT_STANDBY, now, reason);
	}
}

void
gga_front_done(struct gga_front *f, uint32_t i, uint64_t now, enum gga_front_result result)
{
	struct gga_front_member *mb = &f->members[i];
	enum gga_front_op op = mb->busy_op;
	uint32_t j;

	if (!mb->busy) {
		return;
	}
	mb->busy = false;
	switch (op) {
	case GGA_FRONT_OP_ACQUIRE:
	case GGA_FRONT_OP_PREEMPT:
		if (result == GGA_FRONT_OK &&
		    (f->role == GGA_FRONT_TAKING_OVER || f->role == GGA_FRONT_ACTIVE)) {
			mb->held = true;
			mb->uncertain = false;
			mb->own_key_elsewhere = false;
			mb->key = mb->busy_nrkey;
			mb->renewed_at = mb->busy_at;
			/* Taken back while active: its registration was made again. */
			mb->continuous = false;
		} else {
			if (op == GGA_FRONT_OP_ACQUIRE && result == GGA_FRONT_CONFLICT &&
			    mb->seen_key != 0 && gga_front_key_owner(mb->seen_key) == f->front_id) {
				mb->own_key_elsewhere = true;
			}
			/* Someone renewed or holds it: read it again before another try. */
			mb->seen = false;
		}
		break;
	case GGA_FRONT_OP_RENEW:
		if (result == GGA_FRONT_CONFLICT) {
			/* Our registration is gone: another front preempted us. */
			step_down(f, now, "fenced: a member refused the renewal");
			return;
		}
		if (result == GGA_FRONT_OK && mb->held) {
			mb->key = mb->busy_nrkey;
			mb->renewed_at = mb->busy_at;
		} else if (result == GGA_FRONT_ERROR && mb->held && f->rule_uncertain) {
			/* The renewal may have happened: ask the member before the next. */
			mb->uncertain = true;
		}
		break;
	case GGA_FRONT_OP_RELEASE:
		mb->held = false;
		break;
	default:
		break;
	}
	if (f->role == GGA_FRONT_TAKING_OVER && !any_busy(f)) {
		if (count_held(f) >= f->q) {
			become(f, GGA_FRONT_ACTIVE, now, f->reason);
			f->last_round = now;
			for (j = 0; j < f->n; j++) {
				f->members[j].continuous = f->members[j].held;
			}
		} else {
			become(f, GGA_FRONT_STANDBY, now, "takeover reached too few members");
		}
	} else if (f->role == GGA_FRONT_HANDING_OVER && !any_busy(f) && count_held(f) == 0) {
		become(f, GGA_FRONT_STANDBY, now, "handed over");
	} else if (f->role == GGA_FRONT_PROVING && count_proved(f) >= f->q) {
		/* Nobody preempted it on a quorum since its takeover: nobody else wrote. */
		become(f, GGA_FRONT_ACTIVE, now, "lease proved");
	}
}

bool
gga_front_conflict(struct gga_front *f, uint32_t i, uint64_t now)
{
	(void)i;
	step_down(f, now, "fenced: a member refused an I/O");
	return f->role != GGA_FRONT_ACTIVE;
}

bool
gga_front_may_use(const struct gga_front *f, uint32_t i)
{
	return f->role == GGA_FRONT_ACTIVE && f->members[i].held;
}

int
gga_front_hand_over(struct gga_front *f, uint64_t now)
{
	if (f->role == GGA_FRONT_ACTIVE) {
		become(f, GGA_FRONT_HANDING_OVER, now, "handing over");
		return 0;
	}
	if (f->role == GGA_FRONT_STANDBY) {
		f->takeover_now = true;
		return 0;
	}
	return -EINVAL;
}

const char *
gga_front_role_name(enum gga_front_role role)
{
	switch (role) {
	case GGA_FRONT_STANDBY:
		return "standby";
	case GGA_FRONT_TAKING_OVER:
		return "taking_over";
	case GGA_FRONT_ACTIVE:
		return "active";
	case GGA_FRONT_HANDING_OVER:
		return "handing_over";
	case GGA_FRONT_PROVING:
		return "proving";
	default:
		return "unknown";
	}
}
