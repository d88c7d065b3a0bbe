/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The differential check of the torture run: the shell (the gga bdev's I/O
 * code) against the lifecycle module it calls.
 *
 * The shell keeps the member lifecycle in the disk's own fields (member
 * states, needs, checkpoint bits, counts) and hands the module a view made
 * from them (gga_lc_view_of()) at every decision. The module's result goes
 * back into those fields (gga_lc_take()). If every change of a lifecycle
 * field goes through the module, the view the shell hands it next is the
 * view the module handed back last: nothing else changed it. This file holds
 * the module's last result, the shadow, and compares: the binary is linked
 * with --wrap for the module's five entry points that change a view
 * (gga_lc_new, gga_lc_assemble, gga_lc_apply, gga_lc_issue,
 * gga_lc_unissue), so every decision
 * production makes in the run passes here. The shadow is never fed from the
 * disk: it starts from the format's or the assembly's result and moves only by the module's
 * own calls.
 *
 * What the shell may change by itself (and the shadow therefore ignores):
 * the inputs of the I/O code's policy (held, retry_wait, the counts each
 * member is known to hold, the latest persisted update, the clear in
 * flight, deleted), and one transition that cannot go through the module on
 * the hot path: an I/O thread marks a member failed (or absent, for a base
 * that went away) at once, and the next decision tells the module with the
 * member seen as stale (gga_lc_view_now(); see shadow_run_ok()). Everything else that differs is
 * a lifecycle change made outside the module: a test failure.
 */
#include "bdev_gga/gga_lifecycle.h"

int __real_gga_lc_apply(struct gga_lc_view *v, const struct gga_lc_event *ev,
			struct gga_lc_actions *act);
bool __real_gga_lc_issue(struct gga_lc_view *v, struct gga_lc_record *rec);
void __real_gga_lc_unissue(struct gga_lc_view *v, uint64_t events);
int __real_gga_lc_assemble(struct gga_lc_view *v, uint32_t k, uint32_t m,
			   const struct gga_lc_rules *rules, const enum gga_lc_found *found,
			   const struct gga_lc_record *rec, uint32_t held,
			   struct gga_lc_actions *act);
void __real_gga_lc_new(struct gga_lc_view *v, uint32_t k, uint32_t m);

static struct {
	struct gga_lc_view v; /* the module's last result */
	bool on;              /* an assembly started it */
	uint64_t decisions;   /* decisions compared */
	uint64_t mismatches;
	/* Failed by an I/O thread, not yet told: up in the shadow until told. */
	uint32_t pending;
	uint8_t pending_run[GGA_LC_MAX_MEMBERS];
	char first[512]; /* the first mismatch, for the failure message */
} g_shadow;

static const char *
shadow_what(const struct gga_lc_event *ev)
{
	static const char *const names[] = {
		"io_error",        "ctrlr_lost", "ctrlr_back", "probe",     "pass_start",
		"pass_checkpoint", "pass_done",  "replace",    "persisted", "bitmap_clear",
		"delete",          "distrust",   "readd",
	};

	if (ev == NULL) {
		return "issue";
	}
	return (uint32_t)ev->type < sizeof(names) / sizeof(names[0]) ? names[ev->type] : "?";
}

static void __attribute__((format(printf, 2, 3)))
shadow_differs(const struct gga_lc_event *ev, const char *fmt, ...)
{
	char line[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (g_shadow.mismatches++ == 0) {
		snprintf(g_shadow.first, sizeof(g_shadow.first),
			 "decision %" PRIu64 " (%s, member %u): %s", g_shadow.decisions,
			 shadow_what(ev), ev != NULL ? ev->member : 0, line);
	}
}

static bool
shadow_down(uint8_t run)
{
	return run == GGA_LC_FAILED || run == GGA_LC_ABSENT;
}

/*
 * Is member i's state in the shell's view one the module handed back, or
 * one the I/O threads take by themselves? They mark a member failed (absent,
 * for a base that went away) at once; gga_lc_view_now() then tells the
 * module one failure at a time, the member seen as stale with the failure as
 * the event (the others still down meanwhile). Failed and absent are one
 * state to the module (it makes a member absent only at assembly), so a
 * base that goes or comes back while the member is down changes nothing.
 */
static bool
shadow_run_ok(const struct gga_lc_view *v, const struct gga_lc_event *ev, uint32_t i)
{
	uint8_t was = g_shadow.v.mb[i].run, is = v->mb[i].run;
	bool up = was == GGA_LC_ONLINE || was == GGA_LC_REBUILDING || was == GGA_LC_STALE;

	if (was == is || (shadow_down(was) && shadow_down(is))) {
		return true;
	}
	if (up && shadow_down(is)) {
		g_shadow.pending |= 1u << i;
		g_shadow.pending_run[i] = was;
		return true;
	}
	return ev != NULL && ev->member == i &&
	       (ev->type == GGA_LC_EV_IO_ERROR || ev->type == GGA_LC_EV_CTRLR_LOST) &&
	       is == GGA_LC_STALE && up;
}

static void
shadow_compare(const struct gga_lc_view *v, const struct gga_lc_event *ev)
{
	const struct gga_lc_view *s = &g_shadow.v;
	uint32_t i;

	if (!g_shadow.on || v->n != s->n) {
		return;
	}
	g_shadow.decisions++;
	g_shadow.pending = 0;
	if (v->events != s->events) {
		shadow_differs(ev, "events %" PRIu64 ", the module left %" PRIu64, v->events,
			       s->events);
	}
	if (v->bitmap_events != s->bitmap_events) {
		shadow_differs(ev, "bitmap_events %" PRIu64 ", the module left %" PRIu64,
			       v->bitmap_events, s->bitmap_events);
	}
	if (v->pass != s->pass || (v->pass && (v->pass_targets != s->pass_targets ||
					       v->pass_rebuild != s->pass_rebuild))) {
		shadow_differs(ev, "pass %d targets 0x%x rebuild %d, the module left %d 0x%x %d",
			       v->pass, v->pass_targets, v->pass_rebuild, s->pass, s->pass_targets,
			       s->pass_rebuild);
	}
	if (v->resume_ok != s->resume_ok) {
		shadow_differs(ev, "resume_ok %d, the module left %d", v->resume_ok, s->resume_ok);
	}
	if (v->clear.stage != s->clear.stage || v->clear.first_events != s->clear.first_events) {
		shadow_differs(ev, "clear stage %u first %" PRIu64 ", the module left %u %" PRIu64,
			       v->clear.stage, v->clear.first_events, s->clear.stage,
			       s->clear.first_events);
	}
	for (i = 0; i < v->n; i++) {
		if (!shadow_run_ok(v, ev, i)) {
			shadow_differs(ev, "member %u state %u, the module left %u", i,
				       v->mb[i].run, s->mb[i].run);
		}
		if (v->mb[i].needs != s->mb[i].needs) {
			shadow_differs(ev, "member %u needs %u, the module left %u", i,
				       v->mb[i].needs, s->mb[i].needs);
		}
		if (v->mb[i].rec != s->mb[i].rec) {
			shadow_differs(ev, "member %u checkpoint bit %d, the module left %d", i,
				       v->mb[i].rec, s->mb[i].rec);
		}
		if (v->mb[i].foreign != s->mb[i].foreign) {
			shadow_differs(ev, "member %u foreign %d, the module left %d", i,
				       v->mb[i].foreign, s->mb[i].foreign);
		}
	}
	for (i = 0; i < v->n; i++) {
		if (v->mb[i].rec) {
			break;
		}
	}
	if (i < v->n && v->rec_offset != s->rec_offset) {
		shadow_differs(ev, "checkpoint at %" PRIu64 ", the module left %" PRIu64,
			       v->rec_offset, s->rec_offset);
	}
}

/* The module's result is the shadow; a failure not yet told stays as it was. */
static void
shadow_take(const struct gga_lc_view *v)
{
	uint32_t i;

	g_shadow.v = *v;
	for (i = 0; i < v->n; i++) {
		if (g_shadow.pending & (1u << i)) {
			g_shadow.v.mb[i].run = g_shadow.pending_run[i];
		}
	}
	g_shadow.pending = 0;
}

int
__wrap_gga_lc_apply(struct gga_lc_view *v, const struct gga_lc_event *ev,
		    struct gga_lc_actions *act)
{
	int rc;

	shadow_compare(v, ev);
	rc = __real_gga_lc_apply(v, ev, act);
	if (g_shadow.on && rc == 0) {
		shadow_take(v);
	}
	if (ev->type == GGA_LC_EV_DELETE && rc == 0) {
		/* The disk goes; the next assembly starts the shadow again. */
		g_shadow.on = false;
	}
	return rc;
}

bool
__wrap_gga_lc_issue(struct gga_lc_view *v, struct gga_lc_record *rec)
{
	bool issued;

	shadow_compare(v, NULL);
	issued = __real_gga_lc_issue(v, rec);
	if (g_shadow.on) {
		shadow_take(v);
	}
	return issued;
}

void
__wrap_gga_lc_unissue(struct gga_lc_view *v, uint64_t events)
{
	shadow_compare(v, NULL);
	__real_gga_lc_unissue(v, events);
	if (g_shadow.on) {
		shadow_take(v);
	}
}

int
__wrap_gga_lc_assemble(struct gga_lc_view *v, uint32_t k, uint32_t m,
		       const struct gga_lc_rules *rules, const enum gga_lc_found *found,
		       const struct gga_lc_record *rec, uint32_t held, struct gga_lc_actions *act)
{
	int rc = __real_gga_lc_assemble(v, k, m, rules, found, rec, held, act);

	g_shadow.on = rc == 0;
	if (rc == 0) {
		g_shadow.v = *v;
	}
	return rc;
}

void
__wrap_gga_lc_new(struct gga_lc_view *v, uint32_t k, uint32_t m)
{
	__real_gga_lc_new(v, k, m);
	g_shadow.on = true;
	g_shadow.v = *v;
}
