/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The role of one front of a gga bdev that two fronts share (docs/DESIGN.md
 * section 1) as a pure module: which front may write the members, the lease
 * the active one renews through its reservation keys, the standby's watch
 * and takeover, and the step-down. No I/O, no thread, no clock, no
 * allocation: the gga bdev feeds it the time (milliseconds) and what the
 * members answered, and sends the reservation commands it asks for, the way
 * gga_lifecycle.c serves the member lifecycle. The decisions are checked
 * against every order of events, with the target's own reservation module
 * as the members (test/unit/bdev_gga/gga_front).
 *
 * The members decide who may read and write (Exclusive Access, one holder);
 * this module only decides when to try, so a wrong guess costs a takeover
 * too early or too late, never data:
 * - Active: holds Exclusive Access on at least q members (gga_front_quorum)
 *   and renews its key on them every lease/20 (Register, Replace). Steps down
 *   on any Reservation Conflict (to standby), and when it has not renewed on
 *   q members within the lease (to proving). Never preempts.
 * - Proving: serves nothing; renews as the active does. Back to active once
 *   q members it held since its takeover took a renewal sent after the
 *   step-down (nobody preempted it, so nobody else wrote: DESIGN.md 1.11);
 *   standby on any Reservation Conflict.
 * - Standby: reads the members' Reservation Reports and notes when each
 *   holder's key last changed. When it has not changed for a lease on q
 *   members, preempts those members with the key it saw (the member refuses
 *   if the active renewed meanwhile: the check and the fence are one step).
 */
#ifndef GGA_FRONT_H
#define GGA_FRONT_H

#include <stdbool.h>
#include <stdint.h>

#include "gga_format.h"

#define GGA_FRONT_MAX_MEMBERS GGA_MAX_FRAGS

/* The reservation type the active holds: Exclusive Access (docs/DESIGN.md 1.2). */
#define GGA_FRONT_RTYPE 2u

/* A front's reservation key: its id in the top 16 bits, the renewal count below. */
static inline uint64_t
gga_front_key(uint16_t front_id, uint64_t count)
{
	return ((uint64_t)front_id << 48) | (count & 0xffffffffffffull);
}

static inline uint16_t
gga_front_key_owner(uint64_t key)
{
	return (uint16_t)(key >> 48);
}

/* q = max(m + 1, floor(n / 2) + 1): the members an active must hold (DESIGN.md 1.4). */
uint32_t gga_front_quorum(uint32_t k, uint32_t m);

enum gga_front_role {
	GGA_FRONT_STANDBY = 0,  /* watches the members; writes nothing */
	GGA_FRONT_TAKING_OVER,  /* preempting the members it found lapsed */
	GGA_FRONT_ACTIVE,       /* holds at least q members: reads and writes them */
	GGA_FRONT_HANDING_OVER, /* planned hand-over: releasing its reservations */
	GGA_FRONT_PROVING,      /* was active, lease lapsed: renews to prove it still holds it */
};

/* What a member answered to a command this module asked for. */
enum gga_front_result {
	GGA_FRONT_OK = 0,
	GGA_FRONT_CONFLICT, /* Reservation Conflict */
	GGA_FRONT_ERROR,    /* anything else: the member is unreachable for now */
};

/* The command to send to one member. */
enum gga_front_op {
	GGA_FRONT_OP_NONE = 0,
	/* Register with our key (Replace, ignoring any key of ours there), then Acquire. */
	GGA_FRONT_OP_ACQUIRE,
	/* Register as above, then Preempt and Abort the key `prkey`. */
	GGA_FRONT_OP_PREEMPT,
	/* Register, Replace `crkey` with `nrkey` (no ignore: fails once fenced). */
	GGA_FRONT_OP_RENEW,
	/* Release our reservation (hand-over). */
	GGA_FRONT_OP_RELEASE,
};

struct gga_front_cmd {
	enum gga_front_op op;
	uint64_t crkey;
	uint64_t nrkey;
	uint64_t prkey;
};

struct gga_front_member {
	/* Standby: the last report, and since when its holder's key is unchanged. */
	bool seen;
	uint64_t seen_key; /* the holder's key; 0: no holder */
	uint64_t seen_since;
	/* Active: we hold it; the key it has for us; the last renewal it took. */
	bool held;
	uint64_t key;
	uint64_t renewed_at;
	/*
	 * A renewal got no answer: the member may hold the old key or the new
	 * one. No renewal goes to it until a report says which (or that another
	 * front holds it: then this front was fenced).
	 */
	bool uncertain;
	/*
	 * Its holder has our front id but refused our Acquire: an earlier life
	 * of this front that had another host identifier, or another front
	 * given the same id by mistake. Taken by preempt once it lapsed.
	 */
	bool own_key_elsewhere;
	/* A command is out to it (its answer not in yet). */
	bool busy;
	enum gga_front_op busy_op;
	uint64_t busy_nrkey;
	uint64_t busy_at; /* when the command was sent: a renewal counts from then */
	/*
	 * Held since this front's takeover, with no Register that ignores the
	 * old key since: only such members prove the lease (DESIGN.md 1.11).
	 */
	bool continuous;
};

struct gga_front {
	uint32_t n, k, q;
	uint16_t front_id;
	uint64_t lease_ms;
	/* Configured to be the active one: takes members nobody holds without waiting a lease. */
	bool preferred;
	enum gga_front_role role;
	uint64_t since;      /* when the role began */
	const char *reason;  /* why the role changed last (static string) */
	uint64_t renewals;   /* renewal count of our key */
	uint64_t last_round; /* when the last renewal round was sent */
	uint64_t renew_ms;   /* between renewal rounds: lease/20 (DESIGN.md 1.11) */
	uint64_t prove_from; /* proving: the first renewal count that proves the lease */
	/* A hand-over was asked for: the standby takes over without waiting for a lease. */
	bool takeover_now;
	/*
	 * It handed over (or was fenced) since it was last active: members
	 * nobody holds lapse after a lease like the others, even if preferred,
	 * so that a front that just released them does not take them back
	 * before the one it handed over to.
	 */
	bool yielded;
	/*
	 * The fix the checker found (S3): a renewal without an answer makes the
	 * member uncertain. Always true but in the checker's test that shows
	 * what happens without it.
	 */
	bool rule_uncertain;
	/*
	 * The fix for issue 32 case 5: a lapsed lease makes the front prove it
	 * (GGA_FRONT_PROVING) instead of stepping down to standby. Always true
	 * but in the checker's test that shows what happens without it.
	 */
	bool rule_come_back;
	struct gga_front_member members[GGA_FRONT_MAX_MEMBERS];
};

/* Start as standby at `now`. front_id 1..65535; lease_ms > 0. */
void gga_front_init(struct gga_front *f, uint32_t k, uint32_t m, uint16_t front_id,
		    uint64_t lease_ms, bool preferred, uint64_t now);

/* The key this front registers with now. */
uint64_t gga_front_current_key(const struct gga_front *f);

/*
 * A Reservation Report of member i came back (standby): ok false if it
 * failed (the member is not seen); holder_key 0 when nobody holds it.
 */
void gga_front_report(struct gga_front *f, uint32_t i, uint64_t now, bool ok, uint64_t holder_key);

/* Should member i's Reservation Report be read now (one it does not hold, or one uncertain)? */
bool gga_front_wants_report(const struct gga_front *f, uint32_t i);

/*
 * What to send now, one command per member in cmds (GGA_FRONT_OP_NONE:
 * nothing for that member); the members it returns a command for are busy
 * until gga_front_done(). Standby: the takeover once q members lapsed.
 * Active and proving: the renewal round every renew_ms; active: the acquisition of members it
 * does not hold (one that came back). Returns how many commands it set.
 */
uint32_t gga_front_poll(struct gga_front *f, uint64_t now, struct gga_front_cmd *cmds);

/* Member i answered the command gga_front_poll() gave it. */
void gga_front_done(struct gga_front *f, uint32_t i, uint64_t now, enum gga_front_result result);

/*
 * An I/O to member i failed with Reservation Conflict: another front holds
 * it. The active steps down at once (it must not count that as a member
 * failure). Returns true when the front is (now) not active.
 */
bool gga_front_conflict(struct gga_front *f, uint32_t i, uint64_t now);

/* May this front read and write member i now? (active and holding it) */
bool gga_front_may_use(const struct gga_front *f, uint32_t i);

/*
 * Planned hand-over. On the active: stop, release every reservation
 * (gga_front_poll gives the releases), then standby; 0, or -EINVAL if not
 * active. On the standby: take over at the next poll without waiting for a
 * lease; 0, or -EINVAL if not standby.
 */
int gga_front_hand_over(struct gga_front *f, uint64_t now);

const char *gga_front_role_name(enum gga_front_role role);

#endif /* GGA_FRONT_H */
