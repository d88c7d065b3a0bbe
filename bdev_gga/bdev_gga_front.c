/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shell around gga_front.c for a gga bdev that two fronts share
 * (docs/DESIGN.md section 1): a poller on the app thread reads the members'
 * Reservation Reports, feeds the module the time and the answers, and sends
 * the reservation commands it asks for through the bdev layer
 * (bdev_nvme_reservation). When the module says active, the shell has the
 * creation code assemble the members; once assembled the disk serves I/O
 * (front_serving) and the NVMe-oF namespace over it turns accessible. A
 * Reservation Conflict seen by any thread (front_fenced) steps the front
 * down. A lapsed lease stops the serving at once; the module then proves the
 * lease (renewals on a quorum) and the front serves again, or learns it was
 * fenced. A front that was assembled and is fenced (or hands over) steps
 * down: its view of the array is no longer current, so the disk lets go of
 * its assembly (unassemble) and the front is a standby again, which reads
 * the members afresh when it is next active; one whose assembly failed is
 * assembled again (docs/DESIGN.md 1.11).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/nvme_spec.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_front.h"
#include "bdev_gga_remove.h"
#include "gga_front.h"

/* Between two tries of a failed assembly: doubles from the first to the last. */
#define RETRY_FIRST_MS 100u
#define RETRY_MAX_MS   5000u

/* Bytes of a Reservation Report: the header and room for 15 registrants. */
#define REPORT_LEN 1024u
/* The extended report: a 64-byte header, then 64 bytes per registrant (NVMe Base spec). */
#define REPORT_HDR 64u
#define REPORT_REG 64u

enum member_step {
	STEP_IDLE = 0,
	STEP_REPORT,
	STEP_REGISTER, /* acquire, preempt: our registration */
	STEP_PREEMPT,  /* preempt: preempt and abort the key seen */
	STEP_ACQUIRE,  /* acquire, preempt: confirm the holder */
	STEP_RENEW,
	STEP_RELEASE,
};

struct front_member {
	struct gga_front_shell *shell;
	uint32_t index;
	enum member_step step;
	struct gga_front_cmd cmd;
	uint8_t *report; /* REPORT_LEN bytes of DMA memory */
};

struct gga_front_shell {
	struct gga_disk *disk;
	struct gga_front f;
	struct poller *poller;
	uint64_t t0;
	uint32_t outstanding;
	void (*assemble)(void *arg);
	void *assemble_arg;
	void (*unassemble)(struct gga_disk *disk);
	bool assembling;   /* assemble() called, and it has not failed */
	bool assembled;    /* the disk started: its view is this front's from then on */
	uint64_t retry_at; /* a failed assembly: the next try not before */
	uint32_t retry_ms; /* the back-off after the next failure */
	uint32_t assemble_failures;
	enum gga_front_role logged_role; /* the role last logged */
	bool stepped_down;               /* until the disk has let go of its assembly */
	bool failed;
	bool stopping;
	const char *why_down;
	uint64_t down_at;
	struct front_member m[BDEV_GGA_MAX_MEMBERS];
};

static uint64_t
now_ms(const struct gga_front_shell *sh)
{
	/* From 1: the module takes 0 as "never". */
	return ticks_to_us(ticks_get() - sh->t0) / 1000 + 1;
}

static void shell_try_free(struct gga_front_shell *sh);
static void follow_role(struct gga_front_shell *sh);

/* The holder's key in a report, 0 if nobody holds the reservation. */
static uint64_t
report_holder_key(const uint8_t *rep)
{
	uint16_t nregs;
	uint64_t key;
	uint32_t j;

	if (rep[4] == 0) {
		return 0;
	}
	memcpy(&nregs, rep + 5, 2);
	for (j = 0; j < nregs && REPORT_HDR + (j + 1) * REPORT_REG <= REPORT_LEN; j++) {
		const uint8_t *e = rep + REPORT_HDR + j * REPORT_REG;

		/* RCSTS bit 0: this registrant holds the reservation. */
		if (e[2] & 1) {
			memcpy(&key, e + 8, 8);
			return key;
		}
	}
	return 0;
}

static enum gga_front_result
result_of(struct bdev_io *io, bool success)
{
	int sct, sc;

	if (success) {
		return GGA_FRONT_OK;
	}
	bdev_io_get_nvme_status(io, &sct, &sc);
	return sct == NVME_SCT_GENERIC && sc == NVME_SC_RESERVATION_CONFLICT ? GGA_FRONT_CONFLICT :
									       GGA_FRONT_ERROR;
}

static void member_io_done(struct bdev_io *io, bool success, void *cb_arg);

static int
member_send(struct front_member *fm, enum member_step step)
{
	struct gga_front_shell *sh = fm->shell;
	struct gga_member *member = &sh->disk->members[fm->index];
	struct bdev_nvme_resv_cmd c;
	int rc;

	if (member->desc == NULL || member->app_ch == NULL || member->removing) {
		return -ENODEV;
	}
	memset(&c, 0, sizeof(c));
	switch (step) {
	case STEP_REPORT:
		c.op = BDEV_NVME_RESV_REPORT;
		c.buf = fm->report;
		c.len = REPORT_LEN;
		break;
	case STEP_REGISTER:
		/* Replace ignoring our old key: an earlier life of this front may have left one. */
		c.op = BDEV_NVME_RESV_REGISTER;
		c.action = 2;
		c.iekey = true;
		c.nrkey = fm->cmd.nrkey;
		break;
	case STEP_PREEMPT:
		c.op = BDEV_NVME_RESV_ACQUIRE;
		c.action = 2;
		c.rtype = GGA_FRONT_RTYPE;
		c.crkey = fm->cmd.nrkey;
		c.nrkey = fm->cmd.prkey;
		break;
	case STEP_ACQUIRE:
		c.op = BDEV_NVME_RESV_ACQUIRE;
		c.action = 0;
		c.rtype = GGA_FRONT_RTYPE;
		c.crkey = fm->cmd.nrkey;
		break;
	case STEP_RENEW:
		c.op = BDEV_NVME_RESV_REGISTER;
		c.action = 2;
		c.crkey = fm->cmd.crkey;
		c.nrkey = fm->cmd.nrkey;
		break;
	case STEP_RELEASE:
		c.op = BDEV_NVME_RESV_RELEASE;
		c.action = 0;
		c.rtype = GGA_FRONT_RTYPE;
		c.crkey = fm->cmd.crkey;
		break;
	default:
		return -EINVAL;
	}
	rc = bdev_nvme_reservation(member->desc, member->app_ch, &c, member_io_done, fm);
	if (rc != 0) {
		return rc;
	}
	fm->step = step;
	member->app_io++;
	sh->outstanding++;
	return 0;
}

/* The module's command for member i ended with `res`. */
static void
cmd_end(struct front_member *fm, enum gga_front_result res)
{
	struct gga_front_shell *sh = fm->shell;

	fm->step = STEP_IDLE;
	if (!sh->stopping) {
		gga_front_done(&sh->f, fm->index, now_ms(sh), res);
		follow_role(sh);
	}
}

static void
member_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct front_member *fm = cb_arg;
	struct gga_front_shell *sh = fm->shell;
	struct gga_member *member = &sh->disk->members[fm->index];
	enum gga_front_result res = result_of(io, success);
	enum member_step step = fm->step, next = STEP_IDLE;

	bdev_free_io(io);
	sh->outstanding--;
	gga_member_app_io_done(member);
	if (sh->stopping) {
		fm->step = STEP_IDLE;
		shell_try_free(sh);
		return;
	}
	switch (step) {
	case STEP_REPORT:
		fm->step = STEP_IDLE;
		gga_front_report(&sh->f, fm->index, now_ms(sh), res == GGA_FRONT_OK,
				 res == GGA_FRONT_OK ? report_holder_key(fm->report) : 0);
		follow_role(sh);
		return;
	case STEP_REGISTER:
		if (res == GGA_FRONT_OK) {
			next = fm->cmd.op == GGA_FRONT_OP_PREEMPT ? STEP_PREEMPT : STEP_ACQUIRE;
		}
		break;
	case STEP_PREEMPT:
		if (res == GGA_FRONT_OK) {
			next = STEP_ACQUIRE;
		}
		break;
	default:
		break;
	}
	if (next != STEP_IDLE) {
		if (member_send(fm, next) == 0) {
			return;
		}
		res = GGA_FRONT_ERROR;
	}
	cmd_end(fm, res);
}

static void
set_serving(struct gga_front_shell *sh, bool serving)
{
	struct gga_disk *disk = sh->disk;

	if (__atomic_exchange_n(&disk->front_serving, serving, __ATOMIC_ACQ_REL) == serving) {
		return;
	}
	bdev_notify_access_changed(&disk->bdev);
}

/*
 * An assembled front that is no longer active stops serving at once; its
 * view of the array may be stale (the other front may have written), so the
 * disk lets go of the assembly, and the front idles until it has
 * (gga_front_shell_rearm()).
 */
static void
step_down(struct gga_front_shell *sh, const char *why)
{
	struct gga_disk *disk = sh->disk;

	if (sh->stepped_down) {
		return;
	}
	sh->stepped_down = true;
	sh->why_down = why;
	sh->down_at = now_ms(sh);
	__atomic_store_n(&disk->front_serving, false, __ATOMIC_RELEASE);
	bdev_notify_access_changed(&disk->bdev);
	ERRLOG("gga bdev '%s': front %u steps down: %s; its view of the array may be stale "
	       "(the other front may have written): it lets go of its assembly and stands by "
	       "to take over again\n",
	       disk->bdev.name, sh->f.front_id, why);
	if (sh->unassemble != NULL) {
		sh->unassemble(disk);
	}
}

/*
 * Carry out what the module's role now asks, at once (after a poll, an
 * answer or a report): log a change, assemble once active, stop serving as
 * soon as it is not.
 */
static void
follow_role(struct gga_front_shell *sh)
{
	struct gga_disk *disk = sh->disk;

	if (sh->f.role != sh->logged_role) {
		NOTICELOG("gga bdev '%s': front %u: %s -> %s (%s)\n", disk->bdev.name,
			  sh->f.front_id, gga_front_role_name(sh->logged_role),
			  gga_front_role_name(sh->f.role),
			  sh->f.reason != NULL ? sh->f.reason : "");
		sh->logged_role = sh->f.role;
	}
	if (sh->stopping || sh->stepped_down) {
		return;
	}
	switch (sh->f.role) {
	case GGA_FRONT_ACTIVE:
		if (!sh->assembling && now_ms(sh) >= sh->retry_at) {
			sh->assembling = true;
			sh->assemble(sh->assemble_arg);
		} else if (sh->assembled && !disk->destructing &&
			   !__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE) &&
			   !__atomic_load_n(&disk->front_fenced, __ATOMIC_ACQUIRE)) {
			/* Proved its lease: nobody else wrote since its assembly. */
			NOTICELOG("gga bdev '%s': front %u serves again (%s)\n", disk->bdev.name,
				  sh->f.front_id, sh->f.reason != NULL ? sh->f.reason : "");
			set_serving(sh, true);
		}
		break;
	case GGA_FRONT_PROVING:
		/* Safety first: nothing is acknowledged until the lease is proved. */
		set_serving(sh, false);
		break;
	default:
		if (sh->assembled) {
			/* Was active, and fenced (or handed over): its view may be stale. */
			step_down(sh, sh->f.reason != NULL ? sh->f.reason : "lost the members");
		}
		/* One under way: gga_front_shell_assembled() looks at the role then. */
		break;
	}
}

static int
front_poll(void *arg)
{
	struct gga_front_shell *sh = arg;
	struct gga_disk *disk = sh->disk;
	struct gga_front_cmd cmds[BDEV_GGA_MAX_MEMBERS];
	uint64_t now = now_ms(sh);
	uint32_t i;

	if (sh->stopping || disk->destructing) {
		return POLLER_IDLE;
	}
	if (__atomic_exchange_n(&disk->front_fenced, false, __ATOMIC_ACQ_REL)) {
		gga_front_conflict(&sh->f, 0, now);
	}
	/* A front letting go of its assembly takes nothing; one handing over still releases. */
	if (sh->stepped_down && sh->f.role != GGA_FRONT_HANDING_OVER) {
		return POLLER_IDLE;
	}
	if (gga_front_poll(&sh->f, now, cmds) > 0) {
		for (i = 0; i < disk->n; i++) {
			if (cmds[i].op == GGA_FRONT_OP_NONE) {
				continue;
			}
			sh->m[i].cmd = cmds[i];
			if (sh->m[i].step != STEP_IDLE ||
			    member_send(&sh->m[i],
					cmds[i].op == GGA_FRONT_OP_RENEW   ? STEP_RENEW :
					cmds[i].op == GGA_FRONT_OP_RELEASE ? STEP_RELEASE :
									     STEP_REGISTER) != 0) {
				gga_front_done(&sh->f, i, now, GGA_FRONT_ERROR);
			}
		}
	}
	/* Then read again what this front does not hold (or is unsure of), for the next poll. */
	for (i = 0; i < disk->n; i++) {
		if (gga_front_wants_report(&sh->f, i) && sh->m[i].step == STEP_IDLE) {
			member_send(&sh->m[i], STEP_REPORT);
		}
	}
	follow_role(sh);
	return POLLER_IDLE;
}

int
gga_front_shell_create(struct gga_disk *disk, uint16_t front_id, uint32_t lease_ms, bool standby)
{
	struct gga_front_shell *sh = calloc(1, sizeof(*sh));
	uint32_t i;

	if (sh == NULL) {
		return -ENOMEM;
	}
	sh->disk = disk;
	sh->t0 = ticks_get();
	gga_front_init(&sh->f, disk->k, disk->m, front_id, lease_ms, !standby, now_ms(sh));
	for (i = 0; i < disk->n; i++) {
		sh->m[i].shell = sh;
		sh->m[i].index = i;
		sh->m[i].report = env_dma_zmalloc(REPORT_LEN, 0);
		if (sh->m[i].report == NULL) {
			gga_front_shell_free(disk, sh);
			return -ENOMEM;
		}
	}
	disk->front = sh;
	return 0;
}

void
gga_front_shell_free(struct gga_disk *disk, struct gga_front_shell *sh)
{
	uint32_t i;

	if (sh == NULL) {
		return;
	}
	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		env_dma_free(sh->m[i].report);
	}
	if (disk->front == sh) {
		disk->front = NULL;
	}
	free(sh);
}

int
gga_front_shell_run(struct gga_disk *disk, void (*assemble)(void *arg), void *arg,
		    void (*unassemble)(struct gga_disk *disk))
{
	struct gga_front_shell *sh = disk->front;
	/* 1/80 of the lease, 10 to 50 ms: with renewals every lease/20 (DESIGN.md 1.11). */
	uint64_t period_us = GGA_MIN(GGA_MAX((uint64_t)sh->f.lease_ms * 1000 / 80, 10000u), 50000u);

	sh->assemble = assemble;
	sh->assemble_arg = arg;
	sh->unassemble = unassemble;
	sh->poller = poller_register(front_poll, sh, period_us, "gga_front");
	if (sh->poller == NULL) {
		return -ENOMEM;
	}
	/* The disk is not freed before the shell has stopped (gga_front_shell_stop). */
	disk->pending_ops++;
	NOTICELOG("gga bdev '%s': front %u starts as %s (lease %u ms, quorum %u of %u members)\n",
		  disk->bdev.name, sh->f.front_id,
		  sh->f.preferred ? "the preferred active" : "standby", (unsigned)sh->f.lease_ms,
		  sh->f.q, disk->n);
	return 0;
}

uint32_t
gga_front_shell_held_mask(const struct gga_disk *disk)
{
	const struct gga_front_shell *sh = disk->front;
	uint32_t i, mask = 0;

	for (i = 0; sh != NULL && i < disk->n; i++) {
		mask |= sh->f.members[i].held && !sh->f.members[i].uncertain ? 1u << i : 0;
	}
	return mask;
}

const char *
gga_front_shell_not_held_why(const struct gga_disk *disk, uint32_t i)
{
	const struct gga_front_member *fm = &disk->front->f.members[i];

	if (fm->held && fm->uncertain) {
		return "its last reservation renewal went unanswered: taken again once a report "
		       "says who holds it";
	}
	if (fm->seen && fm->seen_key != 0) {
		return "reserved by the other front: taken when it lapses";
	}
	return "it did not answer this front's reservation commands: taken once it does";
}

bool
gga_front_shell_assembled(struct gga_disk *disk, int rc, const char *msg)
{
	struct gga_front_shell *sh = disk->front;

	if (rc != 0) {
		if (sh->stopping || disk->destructing || sh->poller == NULL) {
			sh->failed = true;
			return false;
		}
		/* Tried again after a back-off, with the members it holds then (case 6). */
		sh->assembling = false;
		sh->assemble_failures++;
		sh->retry_ms = GGA_MIN(GGA_MAX(sh->retry_ms * 2, RETRY_FIRST_MS), RETRY_MAX_MS);
		sh->retry_at = now_ms(sh) + sh->retry_ms;
		ERRLOG("gga bdev '%s': front %u could not assemble the members it holds: %s; "
		       "tries again in %u ms\n",
		       disk->bdev.name, sh->f.front_id, msg, sh->retry_ms);
		return true;
	}
	sh->assembled = true;
	sh->retry_ms = 0;
	if (sh->f.role != GGA_FRONT_ACTIVE && sh->f.role != GGA_FRONT_PROVING) {
		/* Fenced while it assembled: the disk started with a view that may be stale. */
		step_down(sh, sh->f.reason != NULL ? sh->f.reason : "lost the members");
	}
	if (sh->stepped_down || sh->f.role != GGA_FRONT_ACTIVE) {
		/* Stepped down (or proving) while it assembled: it must not serve now. */
		return false;
	}
	NOTICELOG("gga bdev '%s': front %u is active and serving\n", disk->bdev.name,
		  sh->f.front_id);
	set_serving(sh, true);
	return false;
}

void
gga_front_shell_rearm(struct gga_disk *disk, void *arg)
{
	struct gga_front_shell *sh = disk->front;

	if (sh == NULL || sh->stopping) {
		return;
	}
	sh->assemble_arg = arg;
	sh->assembled = false;
	sh->assembling = false;
	sh->stepped_down = false;
	sh->retry_at = 0;
	sh->retry_ms = 0;
	sh->assemble_failures = 0;
	NOTICELOG("gga bdev '%s': front %u stands by again (%s); it takes over when the "
		  "active front's lease lapses\n",
		  disk->bdev.name, sh->f.front_id, gga_front_role_name(sh->f.role));
	follow_role(sh);
}

static void
shell_try_free(struct gga_front_shell *sh)
{
	struct gga_disk *disk = sh->disk;

	if (!sh->stopping || sh->outstanding > 0) {
		return;
	}
	gga_front_shell_free(disk, sh);
	disk->pending_ops--;
	gga_disk_try_free(disk);
}

void
gga_front_shell_stop(struct gga_disk *disk)
{
	struct gga_front_shell *sh = disk->front;

	if (sh == NULL || sh->stopping) {
		return;
	}
	__atomic_store_n(&disk->front_serving, false, __ATOMIC_RELEASE);
	sh->stopping = true;
	poller_unregister(&sh->poller);
	if (!sh->assembling && sh->assemble != NULL) {
		/* The creation waiting for this front to be active ends now (it sees the delete). */
		sh->assembling = true;
		sh->assemble(sh->assemble_arg);
	}
	shell_try_free(sh);
}

int
gga_front_shell_hand_over(struct gga_disk *disk)
{
	struct gga_front_shell *sh = disk->front;

	if (sh == NULL) {
		return -ENOTSUP;
	}
	if (sh->stepped_down || sh->failed || sh->f.role == GGA_FRONT_PROVING) {
		return -EINVAL;
	}
	if (sh->f.role == GGA_FRONT_ACTIVE && sh->assembled) {
		/* Stop serving first: nothing is acknowledged after the releases. */
		step_down(sh, "handed over");
	}
	/*
	 * Active but not assembled (assembling, or between two tries): it serves
	 * nothing and has no assembly to let go of. One under way steps down when
	 * it ends (gga_front_shell_assembled()); the context of one that failed
	 * stays for the next time this front is active. (Letting go here started
	 * a second context beside it: the first was never ended, and held the
	 * bdev's delete for ever.)
	 */
	return gga_front_hand_over(&sh->f, now_ms(sh));
}

const char *
gga_disk_unready(const struct gga_disk *disk, bool *assembled)
{
	const struct gga_front_shell *sh = disk->front;
	bool held = true;
	const char *why = NULL;

	if (__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE)) {
		held = false;
		why = "waiting for members";
	} else if (sh == NULL) {
		why = NULL;
	} else if (sh->stepped_down || disk->forget_poller != NULL) {
		held = false;
		why = "this front stepped down and lets go of its assembly (it stands by to take "
		      "over again)";
	} else if (!sh->assembled) {
		held = false;
		why = sh->failed ?
			      "this front could not assemble the members" :
		      sh->f.role == GGA_FRONT_ACTIVE ?
			      (sh->assembling ? "this front is active and assembling the members" :
						"this front is active but could not assemble the "
						"members: it tries again") :
		      sh->f.role == GGA_FRONT_TAKING_OVER ?
			      "this front is taking over: the members are read once it holds them" :
		      sh->f.role == GGA_FRONT_HANDING_OVER ? "this front is handing over" :
		      sh->f.role == GGA_FRONT_PROVING      ? "this front is proving its lease" :
							"this front is a standby: the members are "
							"read when it takes over";
	} else if (!__atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE)) {
		why = sh->f.role == GGA_FRONT_PROVING ?
			      "this front is proving its lease: it serves again once it has" :
			      "this front does not serve now (it was fenced, or hands over)";
	}
	if (assembled != NULL) {
		*assembled = held;
	}
	return why;
}

bool
gga_disk_unready_msg(const struct gga_disk *disk, char *msg, size_t len)
{
	bool assembled;
	const char *why = gga_disk_unready(disk, &assembled);
	bool waiting = __atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE);

	if (why == NULL) {
		return false;
	}
	snprintf(msg, len, "gga bdev '%s' %s: %s%s%s", disk->bdev.name,
		 assembled ? "does not serve" : "is not assembled", why, waiting ? " (" : "",
		 waiting ? disk->wait_msg : "");
	if (waiting && strlen(msg) + 1 < len) {
		strcat(msg, ")");
	}
	return true;
}

void
gga_front_shell_info(const struct gga_disk *disk, struct bdev_gga_info *info)
{
	const struct gga_front_shell *sh = disk->front;
	uint64_t now, since;

	if (sh == NULL) {
		return;
	}
	now = now_ms(sh);
	info->front_id = sh->f.front_id;
	info->lease_ms = (uint32_t)sh->f.lease_ms;
	info->standby = !sh->f.preferred;
	info->serving = __atomic_load_n(&disk->front_serving, __ATOMIC_ACQUIRE);
	info->assembled = sh->assembled;
	if (sh->stepped_down) {
		info->role = "stepped_down";
		info->role_reason = sh->why_down;
		since = sh->down_at;
	} else {
		info->role = gga_front_role_name(sh->f.role);
		info->role_reason = sh->failed ? "could not assemble the members" :
				    sh->f.role == GGA_FRONT_ACTIVE && !sh->assembled &&
						    sh->assemble_failures > 0 ?
						 "could not assemble the members: trying again" :
						 sh->f.reason;
		since = sh->f.since;
	}
	info->role_seconds = (double)(now - GGA_MIN(now, since)) / 1000.0;
	info->members_held = (uint32_t)__builtin_popcount(gga_front_shell_held_mask(disk));
}
