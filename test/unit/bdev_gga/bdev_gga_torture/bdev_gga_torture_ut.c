/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A seeded torture run of the gga bdev on the harness of ../bdev_gga_harness.c:
 * the real gga bdev code over error bdevs over malloc members, driven by a
 * random mix of I/O (writes, reads, concurrent batches, flushes) and faults
 * (members failed, returned, blanked, restored from an old copy of their own
 * storage, stalled; fragments corrupted; the gga bdev deleted and created
 * again, or cut off from its members with I/O in flight, a crash; failed
 * members replaced; scrubs; waits for recovery), for a fixed number of steps.
 *
 * The oracle is independent of the gga bdev's view: it keeps, per block and
 * per member, what that member's fragment holds (the last acknowledged
 * version, maybe a newer one of a write not acknowledged, missed, damaged),
 * from the test's own operations only. After every read each block holds one
 * of the contents the model allows, or the whole read failed; a read may fail
 * only where fewer than k members the oracle counts can hold the block's
 * version. A member failed, stalled or destroyed by the test, or everyone
 * after a crash, is counted again only once the oracle has verified it on its
 * media (t_verify), after the gga bdev reports recovery done.
 *
 * GGA_TORTURE_SEED (default 1; make torture: time-based), GGA_TORTURE_STEPS
 * (steps per geometry, T_STEPS by default; with the seed it replays a run),
 * GGA_TORTURE_GEOMETRY ("2+1" or "4+2": run only that one),
 * GGA_TORTURE_LIMIT_SECONDS (the hang guard per geometry: past it the run
 * fails), GGA_TORTURE_KNOWN_BUGS ("t1,t2": leave out the sequences that
 * trigger those bugs; the oracle is the same; also "overlap": no reads
 * beside writes while degraded, "oldcopy": no member restored from an old
 * copy, "fmtcount": no crash while a blank or replaced member is not yet
 * verified), GGA_TORTURE_VERBOSE=1 (print every operation).
 * GGA_TORTURE_SECONDS is no longer read.
 */
#include "test/unit/bdev_gga/bdev_gga_torture/bdev_gga_torture_core.c"
#include "test/unit/bdev_gga/bdev_gga_torture/bdev_gga_torture_shadow.c"
#include "test/unit/bdev_gga/bdev_gga_torture/bdev_gga_torture_ops.c"
/* ---------------------------------------------------------------------- */
/* The run                                                                 */
/* ---------------------------------------------------------------------- */

static enum t_op
t_pick_op(struct torture *t)
{
	uint32_t total = 0, r, i;

	for (i = 0; i < OP_COUNT; i++) {
		total += g_ops[i].weight;
	}
	r = t_rnd(t, total);
	for (i = 0; i < OP_COUNT; i++) {
		if (r < g_ops[i].weight) {
			return (enum t_op)i;
		}
		r -= g_ops[i].weight;
	}
	return OP_READ;
}

static void
t_step(struct torture *t)
{
	enum t_op op = t_pick_op(t);
	bool done = true;

	uint64_t t0 = time_now_ns();

	t->chosen[op]++;
	switch (op) {
	case OP_WRITE:
		op_io(t, true, -1);
		break;
	case OP_READ:
		op_io(t, false, -1);
		break;
	case OP_BATCH:
		op_batch(t);
		break;
	case OP_FLUSH:
		op_flush(t);
		break;
	case OP_FLIP:
		done = op_flip(t);
		break;
	case OP_CLUSTER:
		done = op_cluster(t);
		break;
	case OP_FAIL:
		done = op_fail(t);
		break;
	case OP_RETURN:
		done = op_return(t);
		break;
	case OP_BLANK:
		done = op_blank(t, -1);
		break;
	case OP_RESTORE:
		done = op_restore(t);
		break;
	case OP_SNAPSHOT:
		done = op_snapshot(t);
		break;
	case OP_STALL:
		done = op_stall(t);
		break;
	case OP_RESTART:
		done = op_restart(t);
		break;
	case OP_REPLACE:
		done = op_replace(t);
		break;
	case OP_SCRUB:
		done = op_scrub(t, false);
		break;
	case OP_WAIT:
		done = op_wait(t);
		break;
	case OP_HOLD:
		done = op_hold(t);
		break;
	case OP_DROP:
		done = op_drop(t);
		break;
	case OP_CRASH:
		done = op_crash(t);
		break;
	default:
		done = op_blank_restart(t);
		break;
	}
	if (t->hold_at != 0 && ++t->hold_steps > T_HOLD_STEPS) {
		t_hold_release(t);
	}
	if (done) {
		t->done[op]++;
	} else if (!t->failed) {
		/* Not possible now (no such member, or left out): a read instead. */
		op_io(t, false, -1);
	}
	t->op_ns[op] += time_now_ns() - t0;
	t0 = time_now_ns();
	if (!t->failed && (uint32_t)__builtin_popcount(t->all & ~t->destroyed) < t->k) {
		t_array_lost(t);
	}
	t->down_steps = (uint32_t)__builtin_popcount(t->last_unreach) > t->m ? t->down_steps + 1 :
									       0;
	if (!t->failed && t->down_steps > T_DOWN_STEPS) {
		t_revive(t);
	}
	t->mend_ns += time_now_ns() - t0;
	if (!t->failed && g_shadow.mismatches != 0) {
		t_fail(t, "the shell changed the member lifecycle outside the module: %s",
		       g_shadow.first);
	}
}

/*
 * Wait (bounded) for every member to come back, with a failed pass retried.
 * Once the members had time to be probed, fewer than k members that held
 * every block (`good`, the oracle's, before the faults were cleared) mean
 * that nothing can bring the others back.
 */
static bool
t_wait_final(struct torture *t, uint32_t good)
{
	uint64_t start = time_now_ns(), next = start;

	t_hold_release(t);
	while (t->disk != NULL && time_now_ns() < start + T_FINAL_NS) {
		if (((gga_live_mask(t->disk) | t->injected) == t->all) && t->disk->walk == NULL) {
			return true;
		}
		if (time_now_ns() >= next) {
			t_clear_faulted(t);
			if (time_now_ns() > start + T_WAIT_NS &&
			    (uint32_t)__builtin_popcount(good) < t->k) {
				return false;
			}
			next = time_now_ns() + T_SEC_NS / 10;
		}
		ut_poll_once();
	}
	return false;
}

/*
 * The end: every fault cleared, every member online (bounded) and verified
 * on its media, a scrub (after which every member holds every block that
 * decodes), and every block read against the record.
 */
static void
t_final(struct torture *t)
{
	uint32_t good = t_good(t), unreach;

	t->step++;
	t->final = true;
	t_log(t, "final: every fault cleared");
	t_clear_all(t);
	if (!t_wait_final(t, good)) {
		unreach = t_sample(t);
		t_log(t, "final: members 0x%x not online", unreach);
		if ((uint32_t)__builtin_popcount(good) >= t->k) {
			t_fail(t,
			       "members 0x%x did not come back within %llu s with every fault "
			       "cleared, although members 0x%x held every block",
			       unreach, (unsigned long long)(T_FINAL_NS / T_SEC_NS), good);
			return;
		}
		t_verify(t, false, false);
		t_read_all(t);
		return;
	}
	t_verify(t, true, false);
	if (!t->failed) {
		op_scrub(t, true);
	}
	if (!t->failed) {
		t_read_all(t);
	}
	t_log(t, "final: %u blocks lost by the record", t_count_may_fail(t, t_available(t)));
}

static uint64_t
t_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtoull(v, NULL, 0) : dflt;
}

static void
t_run(const char *name, uint32_t k, uint32_t m)
{
	static uint64_t seed;
	struct torture *t;
	const char *geo = getenv("GGA_TORTURE_GEOMETRY"), *known = getenv("GGA_TORTURE_KNOWN_BUGS");
	uint64_t steps = t_env_u64("GGA_TORTURE_STEPS", T_STEPS), limit, start, ns;
	char want[8];
	uint32_t i;

	snprintf(want, sizeof(want), "%u+%u", k, m);
	if (geo != NULL && *geo != '\0' && strcmp(geo, want) != 0) {
		printf("torture: geometry %s skipped (GGA_TORTURE_GEOMETRY=%s)\n", want, geo);
		return;
	}
	if (seed == 0) {
		/*
		 * make test runs one fixed seed (1), so that every lane and every CI
		 * run replays the same mix; make torture passes a new one each time.
		 */
		seed = t_env_u64("GGA_TORTURE_SEED", 1);
	}
	t = calloc(1, sizeof(*t));
	CU_ASSERT_FATAL(t != NULL);
	/*
	 * Passes persist a checkpoint after every chunk of T_CHUNK_BLOCKS, so that
	 * op_hold and a restart meet real checkpoints; members are probed and
	 * failed passes retried in milliseconds, so the run spends its time on
	 * operations rather than on waits.
	 */
	gga_test_knobs.checkpoint_ms = 1;
	gga_test_knobs.chunk_blocks = T_CHUNK_BLOCKS;
	gga_test_knobs.probe_ms = 50;
	gga_test_knobs.retry_ms = 200;
	t->seed = seed;
	/* Each geometry its own stream of the same seed. */
	t->rng = (seed ^ ((uint64_t)k << 32 | m)) * 0x9e3779b97f4a7c15ull | 1;
	t->name = name;
	t->k = k;
	t->m = m;
	t->n = k + m;
	t->all = (1u << t->n) - 1;
	t->bs = k * MBS;
	t->verbose = t_env_u64("GGA_TORTURE_VERBOSE", 0) != 0;
	t->known_env = known;
	if (known != NULL) {
		t->known |= strstr(known, "t1") != NULL ? T_KNOWN_T1 : 0;
		t->known |= strstr(known, "t2") != NULL ? T_KNOWN_T2 : 0;
		t->known |= strstr(known, "overlap") != NULL ? T_KNOWN_OVERLAP : 0;
		t->known |= strstr(known, "oldcopy") != NULL ? T_KNOWN_OLDCOPY : 0;
		t->known |= strstr(known, "fmtcount") != NULL ? T_KNOWN_FMTCOUNT : 0;
	}
	for (i = 0; i < T_BATCH; i++) {
		t->iobuf[i] = malloc((size_t)T_MAX_IO * T_MAX_BS);
	}
	/* The hang guard: generous (T_LIMIT_*), a failure when it trips, never a quiet stop. */
	limit = t_env_u64("GGA_TORTURE_LIMIT_SECONDS",
			  T_LIMIT_BASE_S + steps * T_LIMIT_STEP_MS / 1000);
	printf("\ntorture: seed %" PRIu64 " geometry %u+%u (%" PRIu64 " steps, at most %" PRIu64
	       " s%s%s)\n",
	       seed, k, m, steps, limit, known != NULL ? ", known bugs: " : "",
	       known != NULL ? known : "");
	if (getenv("GGA_TORTURE_SECONDS") != NULL) {
		printf("torture: GGA_TORTURE_SECONDS is no longer read: the run counts steps "
		       "(GGA_TORTURE_STEPS)\n");
	}
	fflush(stdout);

	g_shadow.decisions = 0;
	g_shadow.mismatches = 0;
	t_setup(t);
	start = time_now_ns();
	while (!t->failed && t->step < steps) {
		if (time_now_ns() - start > limit * T_SEC_NS) {
			t_fail(t,
			       "the hang guard: %" PRIu64 " of %" PRIu64
			       " steps done after %" PRIu64
			       " s (GGA_TORTURE_LIMIT_SECONDS); something hangs, or the machine "
			       "is far slower than this budget allows",
			       t->step, steps, limit);
			break;
		}
		t->step++;
		t_step(t);
	}
	if (!t->failed) {
		t_final(t);
	}
	ns = GGA_MAX(time_now_ns() - start, 1ull);
	printf("torture: %u+%u %s: %" PRIu64 " of %" PRIu64 " steps in %.1f s (%.0f steps/s); "
	       "reads %" PRIu64 " ok %" PRIu64 " failed, writes %" PRIu64 " ok %" PRIu64
	       " failed, %" PRIu64 " blocks checked\n",
	       k, m, t->failed ? "FAILED" : "passed", t->final ? t->step - 1 : t->step, steps,
	       (double)ns / T_SEC_NS, (double)t->step * T_SEC_NS / (double)ns, t->reads_ok,
	       t->reads_failed, t->writes_ok, t->writes_failed, t->blocks_checked);
	printf("torture: %u+%u the module's decisions compared with the shell's view: %" PRIu64
	       ", differing: %" PRIu64 "\n",
	       k, m, g_shadow.decisions, g_shadow.mismatches);
	for (i = 0, ns = 0; i < ACC_COUNT; i++) {
		ns += t->accepted[i];
	}
	printf("torture: %u+%u failed reads accepted: %" PRIu64 " (fewer than k members hold a "
	       "block, by the oracle's record: %" PRIu64 "; more than m members failed by the "
	       "test: %" PRIu64 "; only while members that came back were not yet verified: "
	       "%" PRIu64 "; beside a failed write: %" PRIu64 "; aborted by a reset or a crash: "
	       "%" PRIu64 "); crashes %" PRIu64 " (writes acknowledged %" PRIu64 ", cut %" PRIu64
	       "), media verified %" PRIu64 " times (%" PRIu64 " fragments; %" PRIu64
	       " members checked after they came back; %" PRIu64
	       " fragments of cut writes left unrepaired)\n",
	       k, m, ns, t->accepted[ACC_LOST], t->accepted[ACC_DOWN], t->accepted[ACC_UNVERIFIED],
	       t->accepted[ACC_BATCH], t->accepted[ACC_ABORTED], t->crashes, t->crash_writes_acked,
	       t->crash_writes_cut, t->verifies, t->frags_verified, t->recovered_verified,
	       t->torn_left);
	printf("torture: %u+%u operations (done/chosen):", k, m);
	for (i = 0; i < OP_COUNT; i++) {
		printf(" %s %" PRIu64 "/%" PRIu64 " (%.1f s)", g_ops[i].name, t->done[i],
		       t->chosen[i], (double)t->op_ns[i] / T_SEC_NS);
	}
	printf("; arrays brought back %.1f s", (double)t->mend_ns / T_SEC_NS);
	printf("; fragments corrupted %" PRIu64 ", stalls ended by the watchdog %" PRIu64
	       ", by the test's reset %" PRIu64 ", arrays lost %" PRIu64 ", scrubs done %" PRIu64
	       ", writes dropped by a member %" PRIu64 "\n",
	       t->frags_flipped, t->stalls_watchdog, t->stalls_aborted, t->arrays_lost,
	       t->scrubs_done, t->writes_dropped);
	fflush(stdout);
	if (t->hung) {
		/*
		 * I/O still in flight references the buffers, the channels and the
		 * bdevs: no teardown can run safely, so stop here (a failure).
		 */
		fprintf(stderr, "torture: an I/O hung; exiting without teardown\n");
		fflush(stdout);
		fflush(stderr);
		_exit(1);
	}
	t_teardown(t);
	for (i = 0; i < T_BATCH; i++) {
		free(t->iobuf[i]);
	}
	free(t);
	memset(&gga_test_knobs, 0, sizeof(gga_test_knobs));
}

static void
test_torture_2_1(void)
{
	t_run("TA", 2, 1);
}

static void
test_torture_4_2(void)
{
	t_run("TB", 4, 2);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_torture_2_1),
		UT_TEST(test_torture_4_2),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return ut_run("bdev_gga_torture", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
