/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The torture run's operations (included by bdev_gga_torture_ut.c after
 * bdev_gga_torture_core.c): I/O, corruption, member faults, restarts,
 * crashes, replaces, scrubs, holds of recovery passes, and bringing a lost
 * or long-down array back.
 */
static void
op_io(struct torture *t, bool write, int stall)
{
	struct t_io io;
	uint64_t lba;
	uint32_t n;

	t_range(t, &lba, &n);
	if (write && !t_write_ok(t, lba, n, 1)) {
		write = false;
	}
	t_io_prepare(t, &io, 0, write, lba, n);
	t_run_ios(t, &io, 1, stall, stall >= 0 ? "stall" : write ? "write" : "read");
}

/* Two or three I/Os at once around one place: reads overlap writes. */
static void
op_batch(struct torture *t)
{
	struct t_io ios[T_BATCH];
	uint32_t nios = 2 + t_rnd(t, T_BATCH - 1), v, n;
	uint64_t center = t_rnd(t, NBLK), lba;
	bool write, degraded;

	/* The overlap bug (known): reads beside writes fail while degraded. */
	degraded = (t->known & T_KNOWN_OVERLAP) && t_sample(t) != 0;
	for (v = 0; v < nios; v++) {
		n = 1 + t_rnd(t, 12);
		lba = center > n / 2 ? center - n / 2 - t_rnd(t, 3) : 0;
		lba = GGA_MIN(lba, (uint64_t)(NBLK - n));
		write = t_rnd(t, 2) == 0 && t_write_ok(t, lba, n, nios) && !degraded;
		t_io_prepare(t, &ios[v], v, write, lba, n);
	}
	t_run_ios(t, ios, nios, -1, "batch");
}

static void
op_flush(struct torture *t)
{
	struct ut_io r;
	uint32_t before = t_sample(t), after, avail = t_available(t);

	UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_FLUSH, NULL, 0, NBLK, &r), 0);
	after = t_sample(t);
	t_log(t, "flush: %s (not online 0x%x)", r.success ? "ok" : "FAILED", before | after);
	if (!r.done) {
		t->hung = true;
		t_fail(t, "a flush did not complete");
	} else if (!r.success && avail == t->all) {
		t_fail(t, "flush failed (errno %d) with every member up by the oracle's record",
		       r.err);
	}
}

/* ---------------------------------------------------------------------- */
/* Faults                                                                  */
/* ---------------------------------------------------------------------- */

/* Flip one bit of member i's fragment of block lba: data or fragment metadata. */
static bool
t_flip(struct torture *t, uint32_t i, uint64_t lba)
{
	uint32_t off = t_rnd(t, 10) < 7 ? t_rnd(t, t->disk->frag_size) :
					  t->disk->frag_size + t_rnd(t, GGA_FRAG_MD_SIZE);
	uint8_t bit = (uint8_t)(1u << t_rnd(t, 8)), *frag = malloc(t->disk->mbs);
	int rc;

	rc = member_rw(t->disk, i, false, t->disk->data_offset + lba, 1, frag);
	if (rc == 0) {
		frag[off] ^= bit;
		rc = member_rw(t->disk, i, true, t->disk->data_offset + lba, 1, frag);
	}
	free(frag);
	t_log(t, "corrupt: block %" PRIu64 " member %u byte %u bit 0x%02x%s", lba, i, off, bit,
	      rc == 0 ? "" : " (member I/O failed: not corrupted)");
	if (rc != 0) {
		return false;
	}
	t->blk[lba].hold[i] = H_BAD;
	t->blk[lba].doubt = true;
	t->frags_flipped++;
	return true;
}

/* Members whose fragments the test may flip: online, not failed by the test. */
static uint32_t
t_flippable(struct torture *t)
{
	return t->disk == NULL ? 0 : gga_live_mask(t->disk) & ~t->injected;
}

static bool
t_flip_block(struct torture *t, uint64_t lba, uint32_t count)
{
	uint32_t mask = t_flippable(t) & ~t_unsure(t, lba), c;
	int i;
	bool any = false;

	for (c = 0; c < count; c++) {
		i = t_pick_member(t, mask);
		if (i < 0) {
			break;
		}
		mask &= ~(1u << i);
		any |= t_flip(t, (uint32_t)i, lba);
	}
	return any;
}

static bool
op_flip(struct torture *t)
{
	uint64_t lba = t_rnd(t, NBLK);
	uint32_t count = 1 + t_rnd(t, t->m + 1);

	if (t->known & T_KNOWN_T1) {
		/* T1 needs a block with more than m bad fragments beside a repairable one. */
		if (t_unsure(t, lba) != 0) {
			return false;
		}
		count = 1;
	}
	return t_flip_block(t, lba, count);
}

/*
 * Neighbouring blocks damaged at once, then one read over both: one beyond
 * repair (m + 1 fragments), one repairable (one fragment), in either order.
 */
static bool
op_cluster(struct torture *t)
{
	uint64_t a = t_rnd(t, NBLK - 1), lost, fixable;
	struct t_io io;
	uint32_t before = 0, n;

	if ((t->known & T_KNOWN_T1) || t->disk == NULL ||
	    (uint32_t)__builtin_popcount(t_flippable(t)) < t->m + 1) {
		return false;
	}
	lost = t_rnd(t, 4) == 0 ? a + 1 : a;
	fixable = lost == a ? a + 1 : a;
	if (!t_flip_block(t, lost, t->m + 1)) {
		return false;
	}
	t_flip_block(t, fixable, 1);
	/* One draw: GGA_MIN evaluates its arguments twice (a second draw read before block 0). */
	before = t_rnd(t, 3);
	before = (uint32_t)GGA_MIN(a, (uint64_t)before);
	n = 2 + before + t_rnd(t, 3);
	n = (uint32_t)GGA_MIN((uint64_t)n, NBLK - (a - before));
	t_io_prepare(t, &io, 0, false, a - before, n);
	t_run_ios(t, &io, 1, -1, "read");
	return true;
}

static bool
op_fail(struct torture *t)
{
	int i;

	/* At most m + 1 at once (enough to take the array down), and m + 1 seldom. */
	if ((uint32_t)__builtin_popcount(t->injected) > t->m ||
	    ((uint32_t)__builtin_popcount(t->injected) == t->m && t_rnd(t, 4) != 0)) {
		return false;
	}
	i = t_pick_member(t, t->all & ~t->injected);
	if (i < 0) {
		return false;
	}
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_FAILURE), 0);
	t->injected |= 1u << i;
	t_log(t, "fail: member %u (%s)", i, t->ee[i]);
	return true;
}

static bool
op_return(struct torture *t)
{
	int i = t_pick_member(t, t->injected);

	if (i < 0) {
		return false;
	}
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_NONE), 0);
	t_uninject(t, 1u << i);
	t_wait_probed(t, 1u << i);
	t_log(t, "return: member %u (state now %s)", i,
	      bdev_gga_member_state_name(t_member_state(t, (uint32_t)i)));
	return true;
}

/* Failed members the gga bdev knows are failed: their storage can be changed behind it. */
static uint32_t
t_known_failed(struct torture *t)
{
	uint32_t mask = 0, i;

	for (i = 0; i < t->n; i++) {
		if ((t->injected & (1u << i)) && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED) {
			mask |= 1u << i;
		}
	}
	return mask;
}

/* Its whole storage destroyed: member i holds nothing until a recovery, verified. */
static void
t_destroyed(struct torture *t, uint32_t i)
{
	uint32_t b;

	for (b = 0; b < NBLK; b++) {
		t->blk[b].hold[i] = H_MISSED;
	}
	t->destroyed |= 1u << i;
	t_unverify(t, 1u << i);
}

/* T2 is a front restart with blank members: with it known, never more than m destroyed. */
static bool
t_may_destroy(struct torture *t, uint32_t i)
{
	return !(t->known & T_KNOWN_T2) ||
	       (uint32_t)__builtin_popcount(t->destroyed | (1u << i)) <= t->m;
}

/*
 * Write a whole image (reserved region included) to failed member i, its
 * writes let through for that (reads stay failed, so no probe sees it half
 * written).
 */
static int
t_write_image(struct torture *t, uint32_t i, const uint8_t *img)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_IO_TYPE_WRITE,
		.error_type = BDEV_ERROR_NONE,
	};
	int rc;

	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &opts), 0);
	rc = member_rw(t->disk, i, true, 0, (uint32_t)t->disk->member_blocks, (void *)img);
	opts.error_type = BDEV_ERROR_FAILURE;
	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &opts), 0);
	return rc;
}

static bool
op_blank(struct torture *t, int i)
{
	uint8_t *zero;
	int rc;

	if (i < 0) {
		i = t_pick_member(t, t_known_failed(t));
	}
	if (i < 0 || !t_may_destroy(t, (uint32_t)i)) {
		return false;
	}
	zero = calloc(t->disk->member_blocks, t->disk->mbs);
	rc = t_write_image(t, (uint32_t)i, zero);
	free(zero);
	t_log(t, "blank: member %u%s", i, rc == 0 ? "" : " (write failed)");
	UT_ASSERT_EQ(rc, 0);
	t_destroyed(t, (uint32_t)i);
	return true;
}

/*
 * May member j go back to its snapshot? Not if the copy could pass for a
 * crash in the middle of an update, the known limit (docs/FORMAT.md 3.2.1,
 * "any older copy"; the exhaustive checker leaves such copies out too): a
 * copy exactly one update behind the freshest record an assembly will find
 * is trusted when fewer than k members are otherwise. So only a blank
 * snapshot, one older than the last clearing of the bitmap (rule 3 makes it
 * a full rebuild), or one at least two updates behind a member that holds
 * every block (its record only grows).
 */
static bool
t_restorable(struct torture *t, uint32_t j)
{
	struct gga_sb sb;
	uint32_t x;

	if (gga_sb_decode(t->snap[j], t->disk->frag_size, &sb) != 0 ||
	    sb.events < t->disk->bitmap_events) {
		return true;
	}
	for (x = 0; x < t->n; x++) {
		if (x != j && (t_good(t) & (1u << x)) &&
		    t->disk->members[x].sb_events >= sb.events + 2) {
			return true;
		}
	}
	return false;
}

static bool
op_restore(struct torture *t)
{
	uint32_t mask = t_known_failed(t), i, b;
	int j, rc;

	for (i = 0; i < t->n; i++) {
		if (t->snap[i] == NULL) {
			mask &= ~(1u << i);
		}
	}
	j = t_pick_member(t, mask);
	/* The old-copy bug (known): a member restored from an old copy is trusted. */
	if (j < 0 || !t_may_destroy(t, (uint32_t)j) || (t->known & T_KNOWN_OLDCOPY)) {
		return false;
	}
	if (t->disk == NULL || !t_restorable(t, (uint32_t)j)) {
		t_log(t,
		      "restore-old: member %d left as it is (its snapshot could be taken for a "
		      "crash in the middle of an update: the known limit)",
		      j);
		return false;
	}
	rc = t_write_image(t, (uint32_t)j, t->snap[j]);
	t_log(t, "restore-old: member %d from its snapshot%s", j, rc == 0 ? "" : " (failed)");
	UT_ASSERT_EQ(rc, 0);
	t_destroyed(t, (uint32_t)j);
	/*
	 * A fragment the test had damaged in place when the copy was taken, of a
	 * block not written since, is that damage again: no recovery has to mend
	 * it (a resync copies the regions written since).
	 */
	for (b = 0; b < NBLK; b++) {
		if (t->snap_hold[j][b] == H_BAD && t->snap_seq[j][b] == t->blk[b].seq) {
			t->blk[b].hold[j] = H_BAD;
			t->blk[b].doubt = true;
		}
	}
	return true;
}

static bool
op_snapshot(struct torture *t)
{
	uint32_t i = t_rnd(t, t->n), b;

	free(t->snap[i]);
	t->snap[i] = snapshot(t->base[i]);
	for (b = 0; b < NBLK; b++) {
		t->snap_hold[i][b] = t->blk[b].hold[i];
		t->snap_seq[i][b] = t->blk[b].seq;
	}
	t_log(t, "snapshot: member %u", i);
	return true;
}

static bool
op_stall(struct torture *t)
{
	int i = t_pick_member(t, t_flippable(t));

	if (i < 0) {
		return false;
	}
	op_io(t, t_rnd(t, 5) < 2, i);
	return true;
}

/*
 * The members' records as their media hold them, into the log: what a
 * refused assembly saw (for the report only; the oracle does not use them).
 */
static void
t_log_records(struct torture *t, const char *why)
{
	char line[T_LINE];
	struct gga_sb sb;
	size_t len = 0;
	uint8_t *img;
	uint32_t i, j;

	line[0] = '\0';
	for (i = 0; i < t->n; i++) {
		img = snapshot(t->base[i]);
		if (gga_sb_decode(img, MBS, &sb) != 0) {
			t_cat(line, sizeof(line), &len, " %u: none;", i);
		} else {
			t_cat(line, sizeof(line), &len, " %u: events %" PRIu64 " states ", i,
			      sb.events);
			for (j = 0; j < t->n; j++) {
				t_cat(line, sizeof(line), &len, "%u", sb.member_state[j]);
			}
			t_cat(line, sizeof(line), &len, ";");
		}
		free(img);
	}
	t_log(t, "%s: the members' records:%s", why, line);
}

/*
 * Create the gga bdev again over the same members (it is gone). Failed
 * members make assembly fail (their superblocks cannot be read): then they
 * come back first. If it still fails, it must be for want of k good members
 * (`good`: the oracle's, from before the stop).
 */
static bool
t_reassemble(struct torture *t, const char *why, uint32_t good)
{
	int rc;

	rc = t_create(t);
	if (rc != 0 && t->injected != 0) {
		t_log(t, "%s: assembly refused (%d) with failed members 0x%x: they come back", why,
		      rc, t->injected);
		t_clear_all(t);
		rc = t_create(t);
	}
	if (rc != 0) {
		t_log(t, "%s: assembly refused (%d); good members 0x%x", why, rc, good);
		t_log_records(t, why);
		if ((uint32_t)__builtin_popcount(good) >= t->k) {
			t_fail(t,
			       "the gga bdev could not be assembled again (%d) although members "
			       "0x%x (at least k) hold every block by the oracle's record",
			       rc, good);
		}
		return false;
	}
	return true;
}

/* Delete the gga bdev and create it again over the same members. */
static bool
t_restart(struct torture *t, const char *why)
{
	uint32_t unreach = t_sample(t), good = t_good(t);

	if (t->disk != NULL && t->disk->walk != NULL) {
		t_log(t, "%s: a pass runs: checkpoint at block %" PRIu64 " for members 0x%x", why,
		      t->disk->rec_offset, t->disk->rec_mask);
	}
	t_stop_front(t);
	if (t->failed || !t_reassemble(t, why, good)) {
		return false;
	}
	t_log(t, "%s: assembled (not online before 0x%x, now 0x%x)", why, unreach, t_sample(t));
	return true;
}

static bool
op_restart(struct torture *t)
{
	if ((t->known & T_KNOWN_T2) && t->destroyed != 0) {
		return false;
	}
	if (!t_restart(t, "restart") && !t->failed) {
		/* The array is gone for good (the model agrees): start a fresh one. */
		t->arrays_lost++;
		t_teardown(t);
		t_setup(t);
		t_log(t, "restart: a fresh array");
	}
	return true;
}

struct t_replace {
	bool done;
	int rc;
};

static void
t_replace_done(void *cb_arg, int rc, const char *msg)
{
	struct t_replace *r = cb_arg;

	r->done = true;
	r->rc = rc;
}

static bool
op_replace(struct torture *t)
{
	struct t_replace r = { 0 };
	char base[16], ee[20], msg[256];
	int i = t_pick_member(t, t_known_failed(t)), rc;

	if (i < 0 || !t_may_destroy(t, (uint32_t)i)) {
		return false;
	}
	snprintf(base, sizeof(base), "%sR%u", t->name, ++t->renames);
	snprintf(ee, sizeof(ee), "EE_%s", base);
	t_make_base(base);
	rc = bdev_gga_replace_member(t->name, t->ee[i], ee, t_replace_done, &r, msg, sizeof(msg));
	if (rc == 0) {
		UT_POLL_UNTIL(r.done);
		if (!r.done) {
			t->hung = true;
			t_fail(t, "replace of member %d never completed", i);
			return true;
		}
		rc = r.rc;
	}
	t_log(t, "replace: member %d %s by %s: %d", i, t->ee[i], ee, rc);
	if (rc != 0) {
		t_delete_base(base);
		return false;
	}
	t_inject(t, (uint32_t)i, BDEV_ERROR_NONE);
	t_delete_base(t->base[i]);
	snprintf(t->base[i], sizeof(t->base[i]), "%s", base);
	snprintf(t->ee[i], sizeof(t->ee[i]), "%s", ee);
	t_uninject(t, 1u << i);
	free(t->snap[i]);
	t->snap[i] = NULL;
	t_destroyed(t, (uint32_t)i);
	return true;
}

/* Blocks a read may fail on by the oracle's record, counting the members in `avail`. */
static uint32_t
t_count_may_fail(const struct torture *t, uint32_t avail)
{
	uint32_t b, cnt = 0;

	for (b = 0; b < NBLK; b++) {
		cnt += !t_must_read(t, b, avail, 0);
	}
	return cnt;
}

/*
 * A scrub of the whole array. Before it, recovery is waited for and the
 * media verified; it may call at most the blocks the oracle's record says
 * may be lost unrecoverable; after it, with every member online and none
 * failed by the test, every member must hold every block that decodes
 * (t_verify's D).
 */
static bool
op_scrub(struct torture *t, bool must_run)
{
	uint32_t before, after, allowed;
	struct bdev_gga_info info;
	uint64_t deadline;
	bool whole;
	int rc;

	/* A recovery pass would refuse or stop it, at a time the seed does not choose. */
	whole = t_sync(t, false) && t->injected == 0;
	if (t->failed || t->disk == NULL) {
		return false;
	}
	before = t_sample(t);
	allowed = t_count_may_fail(t, t_available(t));
	rc = bdev_gga_scrub_start(t->name, 0);
	if (rc != 0) {
		t_log(t, "scrub: not started (%d)", rc);
		if (must_run) {
			t_fail(t, "the final scrub did not start (%d)", rc);
		}
		return false;
	}
	deadline = time_now_ns() + 20 * T_SEC_NS;
	while (t->disk->scrub.state == BDEV_GGA_SCRUB_RUNNING && time_now_ns() < deadline) {
		ut_poll_once();
	}
	get_info(t->name, &info);
	after = t_sample(t);
	t_log(t,
	      "scrub: %s, %" PRIu64 " repaired, %" PRIu64 " unrecoverable (oracle: at most %u) "
	      "(not online 0x%x)",
	      info.scrub.state == BDEV_GGA_SCRUB_DONE ? "done" : "not done",
	      info.scrub.fragments_repaired, info.scrub.unrecoverable_blocks, allowed,
	      before | after);
	if (info.scrub.state == BDEV_GGA_SCRUB_RUNNING) {
		t_fail(t, "a scrub of %u blocks did not end within 20 s", NBLK);
	} else if (info.scrub.state == BDEV_GGA_SCRUB_DONE) {
		t->scrubs_done++;
		if (info.scrub.unrecoverable_blocks > allowed) {
			t_fail(t,
			       "scrub found %" PRIu64 " unrecoverable blocks; the oracle's record "
			       "allows at most %u",
			       info.scrub.unrecoverable_blocks, allowed);
		} else {
			t_sync(t, whole);
		}
	} else if (must_run) {
		t_fail(t, "the final scrub ended in state %d with every member online",
		       info.scrub.state);
	}
	bdev_gga_info_clear(&info);
	return true;
}

/*
 * Recovery passes stop issuing chunks at a random block, with the checkpoint
 * below it persisted, until a later op_hold, a wait or T_HOLD_STEPS steps
 * let them go on; the hold outlives a front restart. So a pass meets the
 * rest: its member fails again or comes back blank or old, writes land
 * behind and ahead of its checkpoint, the front restarts and resumes it.
 */
static bool
op_hold(struct torture *t)
{
	uint64_t deadline;

	if (t->hold_at != 0) {
		t_hold_release(t);
		return true;
	}
	t->hold_at = 1 + t_rnd(t, NBLK - 1);
	t->hold_steps = 0;
	if (t->disk != NULL) {
		__atomic_store_n(&t->disk->walk_hold_at, t->hold_at, __ATOMIC_RELAXED);
	}
	if (t->disk != NULL && t->disk->walk != NULL &&
	    t->disk->scrub.state != BDEV_GGA_SCRUB_RUNNING) {
		/* A pass runs: it reaches the hold, and persists its checkpoint there (bounded). */
		deadline = time_now_ns() + T_SEC_NS;
		while (t->disk->walk != NULL && time_now_ns() < deadline &&
		       (t->disk->rec_offset < t->hold_at || t->disk->sb_inflight ||
			__atomic_load_n(&t->disk->sb_kicked, __ATOMIC_ACQUIRE))) {
			ut_poll_once();
		}
	}
	t_log(t,
	      "hold: recovery passes stop at block %" PRIu64 " (a pass %s; checkpoint %" PRIu64
	      ", members 0x%x)",
	      t->hold_at, t->disk != NULL && t->disk->walk != NULL ? "is held" : "does not run",
	      t->disk != NULL ? t->disk->rec_offset : 0, t->disk != NULL ? t->disk->rec_mask : 0);
	return true;
}

/*
 * A member loses writes: during one write it acknowledges every write of
 * fragments without storing it (the error bdev's drop, from the data area
 * on). Its fragments of the blocks written stay the old ones: damage, as the
 * model counts it. Its record and bitmap writes are kept: a member that
 * acknowledges records it does not keep defeats the records' protocol, as it
 * does md's superblocks (the exhaustive checker assumes them durable too),
 * and with more than m members lost after it no oracle could hold.
 */
static bool
op_drop(struct torture *t)
{
	struct bdev_error_inject_opts drop = {
		.io_type = BDEV_ERROR_IO_TYPE_ALL,
		.error_type = BDEV_ERROR_DROP,
		.from_block = t->disk != NULL ? t->disk->data_offset : 0,
	};
	int i = t_pick_member(t, t_flippable(t));
	struct t_io io;
	uint64_t lba, b;
	uint32_t n;

	if (i < 0) {
		return false;
	}
	t_range(t, &lba, &n);
	if (!t_write_ok(t, lba, n, 1)) {
		return false;
	}
	UT_ASSERT_EQ(bdev_error_inject_error(t->ee[i], &drop), 0);
	t_log(t, "drop: member %d loses the data writes of the next write", i);
	t_io_prepare(t, &io, 0, true, lba, n);
	t_run_ios(t, &io, 1, -1, "write");
	UT_ASSERT_EQ(t_inject(t, (uint32_t)i, BDEV_ERROR_NONE), 0);
	for (b = lba; b < lba + n; b++) {
		t->blk[b].hold[i] = H_BAD;
		t->blk[b].doubt = true;
	}
	t->writes_dropped++;
	return true;
}

static bool
op_wait(struct torture *t)
{
	bool ok = t_sync(t, false);

	t_log(t, "wait-recovery: %s (not online 0x%x)", ok ? "done" : "not within 3 s",
	      t_sample(t));
	return true;
}

/* Every block, one read each, against the model. */
static void
t_read_all(struct torture *t)
{
	struct t_io io;
	uint32_t b;

	for (b = 0; b < NBLK && !t->failed; b++) {
		t_io_prepare(t, &io, 0, false, b, 1);
		UT_ASSERT_EQ(ut_io_sync(&g_dev, BDEV_IO_TYPE_READ, io.buf, b, 1, &io.r), 0);
		if (!io.r.done) {
			t->hung = true;
			t_fail(t, "a read of block %u did not complete", b);
			return;
		}
		t_check_read(t, &io, NULL, 0, false);
	}
}

/*
 * More than m members' storage destroyed: the array cannot hold its data.
 * They come back (the probe formats the blank ones), the front restarts; an
 * array that assembles must still never return wrong bytes. Then a fresh
 * array.
 */
static void
t_array_lost(struct torture *t)
{
	uint32_t was = t->injected;

	t->arrays_lost++;
	t_log(t, "array lost: members 0x%x destroyed; they come back, then a front restart",
	      t->destroyed);
	t_clear_all(t);
	t_wait_probed(t, was);
	if ((t->known & T_KNOWN_T2) && t->destroyed != 0) {
		/* T2 (known): a restart over blank members trusts them. */
		t_log(t, "restart after loss: left out (t2 known)");
	} else if (t_restart(t, "restart after loss")) {
		t_read_all(t);
	}
	if (!t->failed) {
		t_teardown(t);
		t_setup(t);
		t_log(t, "a fresh array");
	}
}

/*
 * Down for long (more than m members out): every failed member comes back.
 * If fewer than k members still hold every block, the array is lost.
 */
static void
t_revive(struct torture *t)
{
	uint32_t was = t->injected, good = t_good(t), now;

	t->down_steps = 0;
	t_clear_all(t);
	t_wait_probed(t, was);
	t_sync(t, false);
	now = t_sample(t);
	t_log(t, "revive: members 0x%x came back; not online 0x%x, good before 0x%x, now 0x%x", was,
	      now, good, t_good(t));
	if (!t->failed && (uint32_t)__builtin_popcount(good | t_good(t)) < t->k) {
		t_array_lost(t);
	}
}

/* The explicit T2 sequence: m + 1 members fail, are blanked, come back; the front restarts. */
static bool
op_blank_restart(struct torture *t)
{
	uint32_t want = t->m + 1, mask = 0, c, i;
	struct t_io io;
	int j;

	/* From a healthy array, as in the field: the members it had all fail together. */
	if ((t->known & T_KNOWN_T2) || t->injected != 0 || t->disk == NULL ||
	    gga_live_mask(t->disk) != t->all) {
		return false;
	}
	/* Half the time the last m + 1 (data_2 and parity in 2 + 1, as in the field report). */
	if (t_rnd(t, 2) == 0) {
		mask = t->all & ~((1u << (t->n - want)) - 1);
	}
	for (c = (uint32_t)__builtin_popcount(mask); c < want; c++) {
		j = t_pick_member(t, t->all & ~mask);
		mask |= 1u << j;
	}
	for (i = 0; i < t->n; i++) {
		if (mask & (1u << i)) {
			UT_ASSERT_EQ(t_inject(t, i, BDEV_ERROR_FAILURE), 0);
		}
	}
	t->injected = mask;
	t_log(t, "blank-then-restart: members 0x%x fail", mask);
	/* A write finds them failed. */
	t_io_prepare(t, &io, 0, true, t_rnd(t, NBLK - 4), 4);
	if (t_room(t, io.lba, io.n, 1)) {
		t_run_ios(t, &io, 1, -1, "write");
	}
	for (i = 0; i < t->n && !t->failed; i++) {
		if ((mask & (1u << i)) && t_member_state(t, i) == BDEV_GGA_MEMBER_FAILED) {
			op_blank(t, (int)i);
		}
	}
	return true;
}

/*
 * Reset every error bdev at once: the I/O they hold completes aborted. (Not
 * ut_dev_close: its wait for idle threads would let the gga bdev's watchdog
 * act first.)
 */
static void
t_reset_members(struct torture *t)
{
	struct ut_dev sd[T_MAX_N];
	struct ut_io rr[T_MAX_N];
	uint32_t i, done;

	for (i = 0; i < t->n; i++) {
		UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&sd[i], t->ee[i], false, g_ut_app), 0);
		memset(&rr[i], 0, sizeof(rr[i]));
		UT_ASSERT_EQ(bdev_reset(sd[i].desc, sd[i].ch, ut_io_done, &rr[i]), 0);
	}
	UT_POLL_UNTIL(({
		for (i = 0, done = 0; i < t->n; i++) {
			done += rr[i].done;
		}
		done == t->n;
	}));
	for (i = 0; i < t->n; i++) {
		CU_ASSERT(rr[i].done);
		io_channel_put(sd[i].ch);
		bdev_close(sd[i].desc);
	}
}

/*
 * A power loss with I/O in flight. Writes (and reads) go out, with a recovery
 * pass running where there is one (a held pass is let go on half the time; a
 * failed member is sometimes returned first so that one starts). After a
 * random number of polling rounds each member's media stop changing, one
 * member after another: its error bdev holds every new I/O, so what reached
 * the member before its cut stays and what did not never will, and a write
 * can reach some members and not others. Then the held I/O ends with an
 * error and every new one fails; the gga bdev is deleted with nothing more
 * reaching any member; power returns (every member answers again) and the
 * array is assembled from what the members hold. Acknowledged writes must be
 * there; the others may read old or new, or be lost where a torn write leaves
 * no version on k members (FORMAT 7.2). Every member is then verified on its
 * media once recovery reports done.
 */
static bool
op_crash(struct torture *t)
{
	struct t_io ios[T_BATCH];
	uint32_t nios, v, i, n, cut = 0, at[T_MAX_N], first, polls, avail, good, acked = 0;
	uint64_t deadline, lba;
	bool all_done = false, write, pass, torn;
	int j;

	/*
	 * fmtcount (known): a crash in the update after a blank or replaced
	 * member's format leaves a member that missed it two counts behind (the
	 * format took a count of its own), and the assembly is refused.
	 */
	if (t->disk == NULL ||
	    ((t->known & (T_KNOWN_T2 | T_KNOWN_FMTCOUNT)) && t->destroyed != 0)) {
		return false;
	}
	j = t_rnd(t, 2) == 0 ? t_pick_member(t, t->injected) : -1;
	if (j >= 0) {
		/* Back: the probe re-adds it and a pass starts (bounded wait). */
		UT_ASSERT_EQ(t_inject(t, (uint32_t)j, BDEV_ERROR_NONE), 0);
		t_uninject(t, 1u << j);
		deadline = time_now_ns() + T_WAIT_NS / 10;
		while (t->disk->walk == NULL && time_now_ns() < deadline) {
			ut_poll_once();
		}
	}
	if (t->hold_at != 0 && t_rnd(t, 2) == 0) {
		t_hold_release(t);
	}
	pass = t->disk->walk != NULL;
	nios = 1 + t_rnd(t, T_BATCH);
	for (v = 0; v < nios; v++) {
		t_range(t, &lba, &n);
		write = t_rnd(t, 4) != 0 && t_write_ok(t, lba, n, nios);
		t_io_prepare(t, &ios[v], v, write, lba, n);
	}
	avail = t_available(t);
	good = t_good(t);
	/*
	 * A round is one message on each thread, so a cut can fall between any
	 * two steps of a write or a pass chunk. Round 0 is before the I/O is
	 * submitted: a member cut then gets none of it, while the others may get
	 * all (a write's fragments go out to the members in one call).
	 */
	first = t_rnd(t, 16);
	torn = t_rnd(t, 2) == 0;
	for (i = 0; i < t->n; i++) {
		at[i] = torn && t_rnd(t, 3) == 0 ? 0 : first + t_rnd(t, 3);
	}
	for (polls = 0; cut != t->all; polls++) {
		for (i = 0; i < t->n; i++) {
			if (!(cut & (1u << i)) && polls >= at[i]) {
				UT_ASSERT_EQ(t_inject(t, i, BDEV_ERROR_PENDING), 0);
				cut |= 1u << i;
			}
		}
		for (v = 0; polls == 0 && v < nios; v++) {
			if (ut_submit(&g_dev, ios[v].write ? BDEV_IO_TYPE_WRITE : BDEV_IO_TYPE_READ,
				      ios[v].buf, ios[v].lba, ios[v].n, &ios[v].r) != 0) {
				ios[v].r.done = true;
				ios[v].r.success = false;
				ios[v].r.err = -ENOMEM;
			}
		}
		thread_poll(g_ut_app, 1, 0);
		thread_poll(g_ut_worker, 1, 0);
	}
	/* What reached every member before its cut may still be acknowledged. */
	for (polls = 0; polls < 8; polls++) {
		ut_poll_once();
	}
	/* The power is gone: what the members hold ends with an error, new I/O fails. */
	for (i = 0; i < t->n; i++) {
		UT_ASSERT_EQ(t_inject(t, i, BDEV_ERROR_FAILURE), 0);
	}
	t_reset_members(t);
	t->injected = t->all;
	deadline = time_now_ns() + UT_TIMEOUT_NS;
	while (time_now_ns() < deadline) {
		for (v = 0, all_done = true; v < nios; v++) {
			all_done &= ios[v].r.done;
		}
		if (all_done) {
			break;
		}
		ut_poll_once();
	}
	t_describe(t, ios, nios, "crash", t->last_unreach);
	if (!all_done) {
		t->hung = true;
		t_dump_disk(t);
		t_fail(t, "crash: an I/O did not complete once every member failed");
		return true;
	}
	for (v = 0; v < nios; v++) {
		if (ios[v].write) {
			acked += ios[v].r.success;
			t->crash_writes_acked += ios[v].r.success;
			t->crash_writes_cut += !ios[v].r.success;
		}
	}
	t->crashing = true;
	t_check_ios(t, ios, nios, avail, true);
	t->crashing = false;
	t->crashes++;
	t_log(t,
	      "crash: members cut from round %u on (%s), %u write(s) acknowledged; the front "
	      "stops with nothing drained",
	      first, pass ? "a pass ran" : "no pass", acked);
	t_stop_front(t);
	if (t->failed) {
		return true;
	}
	/* Power back: every member answers, holding what it held at its cut. */
	t_clear_all(t);
	t_unverify(t, t->all);
	if (!t_reassemble(t, "crash", good)) {
		if (!t->failed) {
			t->arrays_lost++;
			t_teardown(t);
			t_setup(t);
			t_log(t, "crash: a fresh array");
		}
		return true;
	}
	t_log(t, "crash: assembled again (not online 0x%x)", t_sample(t));
	t_sync(t, false);
	return true;
}
