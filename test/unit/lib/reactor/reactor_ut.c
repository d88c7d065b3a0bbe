/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/thread's reactors: options and their errors, real
 * two-reactor runs in busy and event mode (messages delivered on the right
 * thread, sleeping when idle), and the stall watchdog.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gga/reactor.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"
#include "gga_ut_thread.h"
#include "lib/thread/thread_internal.h"

/*
 * Round trips per mode: busy reactors answer in microseconds; sleeping ones
 * pay two wake-ups a round, which on a loaded 2-core machine came to 4 ms
 * (20000 rounds overran the 20 s watchdog). Delivery, not speed, is tested.
 */
#define PINGPONG_ROUNDS_BUSY  20000
#define PINGPONG_ROUNDS_EVENT 2000

struct pingpong {
	struct thread *a, *b;
	uint32_t rounds, want;
	bool wrong_thread;
	bool done;
};

static void pong(void *arg);

static void
ping(void *arg)
{
	struct pingpong *pp = arg;

	if (thread_get_current() != pp->a) {
		pp->wrong_thread = true;
	}
	if (++pp->rounds == pp->want) {
		pp->done = true;
		reactors_stop();
		return;
	}
	CU_ASSERT(thread_send_msg(pp->b, pong, pp) == 0);
}

static void
pong(void *arg)
{
	struct pingpong *pp = arg;

	if (thread_get_current() != pp->b) {
		pp->wrong_thread = true;
	}
	CU_ASSERT(thread_send_msg(pp->a, ping, pp) == 0);
}

static bool g_watchdog_fired;
static bool g_watchdog_cancel;

static void *
watchdog_main(void *arg)
{
	uint64_t deadline = now_ms() + (uint64_t)(uintptr_t)arg;

	while (now_ms() < deadline) {
		if (__atomic_load_n(&g_watchdog_cancel, __ATOMIC_ACQUIRE)) {
			return NULL;
		}
		sleep_us(1000);
	}
	__atomic_store_n(&g_watchdog_fired, true, __ATOMIC_RELEASE);
	reactors_stop();
	return NULL;
}

static pthread_t
start_watchdog(uint64_t ms)
{
	pthread_t tid;

	g_watchdog_fired = false;
	g_watchdog_cancel = false;
	CU_ASSERT_FATAL(pthread_create(&tid, NULL, watchdog_main, (void *)(uintptr_t)ms) == 0);
	return tid;
}

static void
stop_watchdog(pthread_t tid)
{
	__atomic_store_n(&g_watchdog_cancel, true, __ATOMIC_RELEASE);
	pthread_join(tid, NULL);
}

static void
test_reactor_opts(void)
{
	struct reactor_opts opts;
	enum reactor_poll_mode mode;

	reactor_opts_init(&opts);
	UT_ASSERT_EQ(opts.core_mask, 1);
	UT_ASSERT_EQ(opts.poll_mode, REACTOR_POLL_EVENT);
	UT_ASSERT_EQ(opts.idle_spell_us, 200);
	UT_ASSERT_EQ(reactor_parse_poll_mode("busy", &mode), 0);
	UT_ASSERT_EQ(mode, REACTOR_POLL_BUSY);
	UT_ASSERT_EQ(reactor_parse_poll_mode("event", &mode), 0);
	UT_ASSERT_EQ(mode, REACTOR_POLL_EVENT);
	UT_ASSERT_EQ(reactor_parse_poll_mode("lazy", &mode), -EINVAL);
	UT_ASSERT_STR_EQ(reactor_poll_mode_name(REACTOR_POLL_BUSY), "busy");

	opts.core_mask = 0;
	UT_ASSERT_EQ(reactors_init(&opts), -EINVAL);
	opts.core_mask = 1ull << 63;
	UT_ASSERT_EQ(reactors_init(&opts), -EINVAL);
	UT_ASSERT_EQ(reactor_count(), 0);
	UT_ASSERT_EQ(reactors_start(), -EINVAL);
}

static void
run_pingpong(enum reactor_poll_mode mode)
{
	struct reactor_opts opts;
	struct reactor_stats stats[2];
	struct pingpong pp = { 0 };
	pthread_t wd;
	uint64_t start;
	int rc;

	reactor_opts_init(&opts);
	opts.core_mask = 0x3;
	opts.poll_mode = mode;
	UT_ASSERT_EQ_FATAL(reactors_init(&opts), 0);
	UT_ASSERT_EQ(reactor_count(), 2);
	UT_ASSERT_EQ(reactor_get_stats(0, &stats[0]), 0);
	UT_ASSERT_EQ(reactor_get_stats(1, &stats[1]), 0);
	UT_ASSERT_EQ(reactor_get_stats(2, &stats[1]), -ENOENT);
	UT_ASSERT_EQ(stats[0].core, 0);
	UT_ASSERT_EQ(stats[1].core, 1);
	UT_ASSERT_STR_EQ(stats[1].thread_name, "reactor_1");
	pp.want = mode == REACTOR_POLL_BUSY ? PINGPONG_ROUNDS_BUSY : PINGPONG_ROUNDS_EVENT;
	pp.a = thread_get_by_id(stats[0].thread_id);
	pp.b = thread_get_by_id(stats[1].thread_id);
	CU_ASSERT_FATAL(pp.a != NULL && pp.b != NULL);
	CU_ASSERT(thread_get_app() == pp.a);

	/* Kick off from outside any reactor; the app thread finishes and stops. */
	CU_ASSERT(thread_send_msg(pp.b, pong, &pp) == 0);
	wd = start_watchdog(20000);
	start = now_ms();
	rc = reactors_start();
	stop_watchdog(wd);
	UT_ASSERT_EQ(rc, 0);
	CU_ASSERT(!g_watchdog_fired);
	CU_ASSERT(pp.done);
	UT_ASSERT_EQ(pp.rounds, pp.want);
	CU_ASSERT(!pp.wrong_thread);
	CU_ASSERT(thread_get_current() == NULL);
	UT_ASSERT_EQ(reactor_get_stats(1, &stats[1]), 0);
	CU_ASSERT(stats[1].busy_ticks > 0);
	UT_ASSERT_EQ(stats[1].poll_mode, mode);
	CU_ASSERT(!stats[1].sleeping);
	if (mode == REACTOR_POLL_BUSY) {
		UT_ASSERT_EQ(stats[1].sleeps, 0);
	}
	fprintf(stderr, "  %s mode: %u round trips in %llu ms\n", reactor_poll_mode_name(mode),
		pp.want, (unsigned long long)(now_ms() - start));
	reactors_fini();
	UT_ASSERT_EQ(reactor_count(), 0);
}

static void
test_reactors_pingpong_event(void)
{
	run_pingpong(REACTOR_POLL_EVENT);
}

static void
test_reactors_pingpong_busy(void)
{
	run_pingpong(REACTOR_POLL_BUSY);
}

struct idle_check {
	uint32_t step;
	struct thread *app;
	struct poller *poller;
	uint64_t slept_before;
	bool reactor1_slept;
	bool woke;
};

static void
remote_wake(void *arg)
{
	struct idle_check *ic = arg;

	ic->woke = true;
}

/* Runs on the app reactor every 50 ms: checks that reactor 1 sleeps and wakes. */
static int
idle_check_poller(void *arg)
{
	struct idle_check *ic = arg;
	struct reactor_stats st;

	reactor_get_stats(1, &st);
	switch (ic->step++) {
	case 0:
		ic->slept_before = st.sleeps;
		break;
	case 1:
		/* Idle for 50 ms with nothing to do: it went to sleep and stays asleep. */
		ic->reactor1_slept = st.sleeping && st.sleeps > 0;
		thread_send_msg(thread_get_by_id(st.thread_id), remote_wake, ic);
		break;
	default:
		poller_unregister(&ic->poller);
		reactors_stop();
		break;
	}
	return POLLER_BUSY;
}

static void
start_idle_check(void *arg)
{
	struct idle_check *ic = arg;

	ic->poller = poller_register(idle_check_poller, ic, 50000, "idle_check");
	CU_ASSERT(ic->poller != NULL);
}

static void
test_reactors_event_sleep(void)
{
	struct reactor_opts opts;
	struct reactor_stats st;
	struct idle_check ic = { 0 };
	pthread_t wd;

	reactor_opts_init(&opts);
	opts.core_mask = 0x3;
	UT_ASSERT_EQ_FATAL(reactors_init(&opts), 0);
	ic.app = thread_get_app();
	CU_ASSERT(thread_send_msg(ic.app, start_idle_check, &ic) == 0);
	wd = start_watchdog(20000);
	UT_ASSERT_EQ(reactors_start(), 0);
	stop_watchdog(wd);
	CU_ASSERT(!g_watchdog_fired);
	CU_ASSERT(ic.reactor1_slept);
	CU_ASSERT(ic.woke);
	CU_ASSERT(ic.poller == NULL);
	UT_ASSERT_EQ(reactor_get_stats(0, &st), 0);
	/* The app reactor slept between its 50 ms timer runs. */
	CU_ASSERT(st.sleeps >= 2);
	CU_ASSERT(st.idle_ticks > st.busy_ticks);
	reactors_fini();
}

/* ---- The stall watchdog ---- */

static void
test_reactor_beat_stalled(void)
{
	CU_ASSERT(!reactor_beat_stalled(0, false, 1000, 10)); /* never ran */
	CU_ASSERT(!reactor_beat_stalled(995, false, 1000, 10));
	CU_ASSERT(!reactor_beat_stalled(990, false, 1000, 10));
	CU_ASSERT(reactor_beat_stalled(989, false, 1000, 10));
	CU_ASSERT(!reactor_beat_stalled(1, true, 1000, 10));     /* asleep: idle, not stuck */
	CU_ASSERT(!reactor_beat_stalled(1005, false, 1000, 10)); /* beat read after now */
}

struct stall_check {
	struct thread *t1;
	struct poller *poller;
	bool release;  /* the checker saw the stall: the poller may return */
	uint32_t seen; /* reactors stalled while the poller spun */
	struct reactor_stall stall;
	uint32_t after;         /* reactors stalled once it returned */
	uint32_t reported_idle; /* checks that flagged a reactor before the stall */
};

/* A misbehaving poller: spins until the checker has seen it (at most 5 s). */
static int
stuck_poller(void *arg)
{
	struct stall_check *sc = arg;
	uint64_t end = now_ms() + 5000;

	while (!__atomic_load_n(&sc->release, __ATOMIC_ACQUIRE) && now_ms() < end) {
	}
	poller_unregister(&sc->poller);
	return POLLER_BUSY;
}

static void
start_stuck_poller(void *arg)
{
	struct stall_check *sc = arg;

	sc->poller = poller_register(stuck_poller, sc, 0, "stuck_poller");
}

static void *
stall_checker(void *arg)
{
	struct stall_check *sc = arg;
	struct reactor_stall st[2];
	uint64_t deadline;
	uint32_t n;

	/* Both reactors idle (asleep soon): nothing is stalled. */
	usleep(200 * 1000);
	sc->reported_idle = reactors_check_stalls(100 * 1000, st, 2);
	thread_send_msg(sc->t1, start_stuck_poller, sc);
	deadline = now_ms() + 5000;
	while (now_ms() < deadline) {
		n = reactors_check_stalls(100 * 1000, st, 2);
		if (n > 0) {
			sc->seen = n;
			sc->stall = st[0];
			break;
		}
		usleep(20 * 1000);
	}
	__atomic_store_n(&sc->release, true, __ATOMIC_RELEASE);
	usleep(300 * 1000);
	sc->after = reactors_check_stalls(100 * 1000, st, 2);
	reactors_stop();
	return NULL;
}

static void
test_reactor_stall_watchdog(void)
{
	struct reactor_opts opts;
	struct reactor_stats rs;
	struct stall_check sc = { 0 };
	pthread_t checker, wd;
	int rc;

	reactor_opts_init(&opts);
	opts.core_mask = 0x3;
	UT_ASSERT_EQ_FATAL(reactors_init(&opts), 0);
	UT_ASSERT_EQ(reactor_get_stats(1, &rs), 0);
	sc.t1 = thread_get_by_id(rs.thread_id);
	CU_ASSERT_FATAL(sc.t1 != NULL);
	UT_ASSERT_EQ_FATAL(pthread_create(&checker, NULL, stall_checker, &sc), 0);
	wd = start_watchdog(20000);
	rc = reactors_start();
	stop_watchdog(wd);
	pthread_join(checker, NULL);
	UT_ASSERT_EQ(rc, 0);
	CU_ASSERT(!g_watchdog_fired);
	UT_ASSERT_EQ(sc.reported_idle, 0);
	UT_ASSERT_EQ(sc.seen, 1);
	UT_ASSERT_EQ(sc.stall.core, 1);
	UT_ASSERT_STR_EQ(sc.stall.what, "poller stuck_poller");
	CU_ASSERT(sc.stall.stalled_us >= 100 * 1000);
	UT_ASSERT_EQ(sc.after, 0);
	/* Off: a limit of 0 checks nothing. */
	UT_ASSERT_EQ(reactors_check_stalls(0, NULL, 0), 0);
	reactors_fini();
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_reactor_opts),           UT_TEST(test_reactors_pingpong_event),
		UT_TEST(test_reactors_pingpong_busy), UT_TEST(test_reactors_event_sleep),
		UT_TEST(test_reactor_beat_stalled),   UT_TEST(test_reactor_stall_watchdog),
	};

	return ut_run("reactor", tests, ARRAY_SIZE(tests), NULL, NULL);
}
