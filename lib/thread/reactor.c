/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reactors: one pinned OS thread per core, each polling one gga thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/reactor.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "thread_internal.h"

#define REACTOR_MAX_CORES 64

struct reactor {
	uint32_t core;
	struct thread *thread;
	pthread_t pthread;
	bool spawned;
	int rc;
	/* Written by the reactor, read by reactor_get_stats() from anywhere. */
	uint64_t busy_ticks;
	uint64_t idle_ticks;
	uint64_t sleeps;
	bool sleeping;
	/* Tick at which the reactor last started a loop iteration (or woke up). */
	uint64_t beat;
	/* The stall watchdog's own: the beat of the stall it reported, 0 if none. */
	uint64_t stall_beat;
} __attribute__((aligned(GGA_CACHE_LINE)));

static struct reactor *g_reactors;
static uint32_t g_reactor_count;
static enum reactor_poll_mode g_poll_mode;
static uint64_t g_idle_spell_ticks;
static bool g_stop;
static bool g_running;

void
reactor_opts_init(struct reactor_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->core_mask = 0x1;
	opts->poll_mode = REACTOR_POLL_EVENT;
	opts->idle_spell_us = REACTOR_DEFAULT_IDLE_SPELL_US;
}

int
reactor_parse_poll_mode(const char *s, enum reactor_poll_mode *mode)
{
	if (s == NULL) {
		return -EINVAL;
	}
	if (strcmp(s, "event") == 0) {
		*mode = REACTOR_POLL_EVENT;
	} else if (strcmp(s, "busy") == 0) {
		*mode = REACTOR_POLL_BUSY;
	} else {
		return -EINVAL;
	}
	return 0;
}

const char *
reactor_poll_mode_name(enum reactor_poll_mode mode)
{
	switch (mode) {
	case REACTOR_POLL_EVENT:
		return "event";
	case REACTOR_POLL_BUSY:
		return "busy";
	}
	return "unknown";
}

int
reactors_init(const struct reactor_opts *user_opts)
{
	struct reactor_opts opts;
	cpu_set_t allowed;
	uint32_t core, count = 0, i = 0;
	char name[THREAD_NAME_LEN];
	int rc;

	if (g_reactors != NULL) {
		ERRLOG("reactors are already initialised\n");
		return -EINVAL;
	}
	if (user_opts != NULL) {
		opts = *user_opts;
	} else {
		reactor_opts_init(&opts);
	}
	if (opts.core_mask == 0) {
		ERRLOG("empty core mask\n");
		return -EINVAL;
	}
	if (opts.poll_mode != REACTOR_POLL_EVENT && opts.poll_mode != REACTOR_POLL_BUSY) {
		ERRLOG("unknown poll mode %d\n", (int)opts.poll_mode);
		return -EINVAL;
	}
	/* The affinity mask holds only online CPUs this process may run on. */
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		rc = -errno;
		ERRLOG("sched_getaffinity failed: %s\n", strerror(errno));
		return rc;
	}
	for (core = 0; core < REACTOR_MAX_CORES; core++) {
		if ((opts.core_mask & (1ull << core)) == 0) {
			continue;
		}
		if (!CPU_ISSET(core, &allowed)) {
			ERRLOG("core %u of mask 0x%llx is not online or not allowed\n", core,
			       (unsigned long long)opts.core_mask);
			return -EINVAL;
		}
		count++;
	}

	rc = thread_lib_init();
	if (rc != 0) {
		return rc;
	}
	/* struct reactor is cache-line aligned (no false sharing); calloc is not. */
	if (posix_memalign((void **)&g_reactors, GGA_CACHE_LINE, count * sizeof(*g_reactors)) !=
	    0) {
		g_reactors = NULL;
		thread_lib_fini();
		return -ENOMEM;
	}
	memset(g_reactors, 0, count * sizeof(*g_reactors));
	g_reactor_count = count;
	g_poll_mode = opts.poll_mode;
	g_idle_spell_ticks = us_to_ticks(opts.idle_spell_us);
	__atomic_store_n(&g_stop, false, __ATOMIC_SEQ_CST);

	/* Lowest core first: its thread, created first, becomes the app thread. */
	for (core = 0; core < REACTOR_MAX_CORES; core++) {
		struct reactor *r;

		if ((opts.core_mask & (1ull << core)) == 0) {
			continue;
		}
		r = &g_reactors[i++];
		r->core = core;
		snprintf(name, sizeof(name), "reactor_%u", core);
		r->thread = thread_create(name);
		if (r->thread == NULL) {
			ERRLOG("cannot create the thread of reactor %u\n", core);
			reactors_fini();
			return -ENOMEM;
		}
	}
	NOTICELOG("%u reactor(s) on core mask 0x%llx, %s poll mode\n", count,
		  (unsigned long long)opts.core_mask, reactor_poll_mode_name(g_poll_mode));
	return 0;
}

static int
pin_to_core(uint32_t core)
{
	cpu_set_t set;
	int rc;

	CPU_ZERO(&set);
	CPU_SET(core, &set);
	rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc != 0) {
		ERRLOG("cannot pin reactor to core %u: %s\n", core, strerror(rc));
		return -rc;
	}
	return 0;
}

static void
reactor_run(struct reactor *r)
{
	struct thread *thread = r->thread;
	uint64_t busy_ticks = 0, idle_ticks = 0;
	uint64_t prev, now, last_busy;
	bool prev_busy = false;
	bool event_mode = g_poll_mode == REACTOR_POLL_EVENT;

	thread_set_current(thread);
	prev = ticks_get();
	last_busy = prev;
	while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
		int busy;

		/* One clock read per iteration: it ends the previous iteration's accounting. */
		now = ticks_get();
		if (prev_busy) {
			busy_ticks += now - prev;
			__atomic_store_n(&r->busy_ticks, busy_ticks, __ATOMIC_RELAXED);
		} else {
			idle_ticks += now - prev;
			__atomic_store_n(&r->idle_ticks, idle_ticks, __ATOMIC_RELAXED);
		}
		prev = now;
		__atomic_store_n(&r->beat, now, __ATOMIC_RELAXED);

		busy = thread_poll(thread, 0, now);
		prev_busy = busy > 0;
		if (prev_busy) {
			last_busy = now;
			continue;
		}
		if (!event_mode) {
			continue;
		}
		if (now - last_busy < g_idle_spell_ticks) {
			/*
			 * Keep polling, but let any other runnable thread on this
			 * core (another daemon, a client) run first: spinning here
			 * would delay exactly the work we are waiting for.
			 */
			sched_yield();
		} else {
			__atomic_store_n(&r->sleeping, true, __ATOMIC_RELAXED);
			__atomic_store_n(&r->sleeps, r->sleeps + 1, __ATOMIC_RELAXED);
			if (!__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST)) {
				thread_wait(thread, 0);
			}
			/* A fresh beat before "awake": the watchdog must not see the old one. */
			__atomic_store_n(&r->beat, ticks_get(), __ATOMIC_RELAXED);
			__atomic_store_n(&r->sleeping, false, __ATOMIC_RELEASE);
			/* Time asleep counts as idle at the next iteration's start. */
		}
	}
	if (prev_busy) {
		busy_ticks += ticks_get() - prev;
		__atomic_store_n(&r->busy_ticks, busy_ticks, __ATOMIC_RELAXED);
	} else {
		idle_ticks += ticks_get() - prev;
		__atomic_store_n(&r->idle_ticks, idle_ticks, __ATOMIC_RELAXED);
	}
	/* Elements cached by this OS thread go back to their pools before it exits. */
	mempool_thread_flush();
	thread_set_current(NULL);
}

static void *
reactor_thread_main(void *arg)
{
	struct reactor *r = arg;
	char name[16];

	snprintf(name, sizeof(name), "reactor_%u", r->core);
	pthread_setname_np(pthread_self(), name);
	r->rc = pin_to_core(r->core);
	if (r->rc != 0) {
		reactors_stop();
		return NULL;
	}
	reactor_run(r);
	return NULL;
}

int
reactors_start(void)
{
	struct thread *prev_thread = thread_get_current();
	sigset_t block, old_mask;
	cpu_set_t old_affinity;
	bool restore_affinity;
	uint32_t i;
	int rc = 0;

	if (g_reactors == NULL || g_running) {
		ERRLOG("reactors are %s\n", g_reactors == NULL ? "not initialised" : "running");
		return -EINVAL;
	}
	g_running = true;

	/* Spawned reactors inherit a mask without SIGINT/SIGTERM: the app thread takes them. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old_mask);
	for (i = 1; i < g_reactor_count; i++) {
		struct reactor *r = &g_reactors[i];

		r->rc = 0;
		rc = pthread_create(&r->pthread, NULL, reactor_thread_main, r);
		if (rc != 0) {
			ERRLOG("cannot spawn reactor %u: %s\n", r->core, strerror(rc));
			rc = -rc;
			break;
		}
		r->spawned = true;
	}
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);

	restore_affinity = pthread_getaffinity_np(pthread_self(), sizeof(old_affinity),
						  &old_affinity) == 0;
	if (rc == 0) {
		rc = pin_to_core(g_reactors[0].core);
	}
	if (rc == 0) {
		reactor_run(&g_reactors[0]);
	} else {
		reactors_stop();
	}

	for (i = 1; i < g_reactor_count; i++) {
		struct reactor *r = &g_reactors[i];

		if (!r->spawned) {
			continue;
		}
		pthread_join(r->pthread, NULL);
		r->spawned = false;
		if (rc == 0 && r->rc != 0) {
			rc = r->rc;
		}
	}
	if (restore_affinity) {
		pthread_setaffinity_np(pthread_self(), sizeof(old_affinity), &old_affinity);
	}
	thread_set_current(prev_thread);
	g_running = false;
	return rc;
}

void
reactors_stop(void)
{
	uint32_t i;

	__atomic_store_n(&g_stop, true, __ATOMIC_SEQ_CST);
	if (g_reactors == NULL) {
		return;
	}
	/* Unconditional: a reactor about to sleep still finds the eventfd readable. */
	for (i = 0; i < g_reactor_count; i++) {
		if (g_reactors[i].thread != NULL) {
			thread_wakeup(g_reactors[i].thread);
		}
	}
}

void
reactors_fini(void)
{
	uint32_t i;

	if (g_reactors == NULL) {
		return;
	}
	if (g_running) {
		ERRLOG("reactors_fini() while the reactors run\n");
		return;
	}
	/* Newest first, so the app thread (which may get completions) goes last. */
	for (i = g_reactor_count; i > 0; i--) {
		struct reactor *r = &g_reactors[i - 1];

		if (r->thread != NULL) {
			thread_destroy(r->thread);
			r->thread = NULL;
		}
	}
	free(g_reactors);
	g_reactors = NULL;
	g_reactor_count = 0;
	thread_lib_fini();
}

uint32_t
reactor_count(void)
{
	return g_reactor_count;
}

int
reactor_get_stats(uint32_t index, struct reactor_stats *stats)
{
	struct reactor *r;

	if (g_reactors == NULL || index >= g_reactor_count) {
		return -ENOENT;
	}
	r = &g_reactors[index];
	memset(stats, 0, sizeof(*stats));
	stats->core = r->core;
	stats->thread_name = r->thread != NULL ? thread_get_name(r->thread) : "";
	stats->thread_id = r->thread != NULL ? thread_get_id(r->thread) : 0;
	stats->poll_mode = g_poll_mode;
	stats->busy_ticks = __atomic_load_n(&r->busy_ticks, __ATOMIC_RELAXED);
	stats->idle_ticks = __atomic_load_n(&r->idle_ticks, __ATOMIC_RELAXED);
	stats->sleeps = __atomic_load_n(&r->sleeps, __ATOMIC_RELAXED);
	stats->sleeping = __atomic_load_n(&r->sleeping, __ATOMIC_RELAXED);
	return 0;
}

bool
reactor_beat_stalled(uint64_t beat, bool sleeping, uint64_t now, uint64_t limit_ticks)
{
	/* beat 0: the reactor has not run yet. A beat after now: read before the clock. */
	return !sleeping && beat != 0 && now > beat && now - beat > limit_ticks;
}

uint32_t
reactors_check_stalls(uint64_t limit_us, struct reactor_stall *stalls, uint32_t max)
{
	uint64_t limit = us_to_ticks(limit_us), now, beat;
	uint32_t i, n = 0;
	bool sleeping;

	if (g_reactors == NULL || limit_us == 0) {
		return 0;
	}
	for (i = 0; i < g_reactor_count; i++) {
		struct reactor *r = &g_reactors[i];
		char what[96];

		sleeping = __atomic_load_n(&r->sleeping, __ATOMIC_ACQUIRE);
		beat = __atomic_load_n(&r->beat, __ATOMIC_RELAXED);
		now = ticks_get();
		if (!reactor_beat_stalled(beat, sleeping, now, limit)) {
			if (r->stall_beat != 0 && beat != r->stall_beat) {
				NOTICELOG("reactor on core %u is back in its loop\n", r->core);
				r->stall_beat = 0;
			}
			continue;
		}
		thread_describe_running(r->thread, what, sizeof(what));
		if (r->stall_beat != beat) {
			/* Once per stall: the reactor may stay stuck for a long time. */
			WARNLOG("reactor on core %u has not come back to its loop for %llu ms: "
				"stuck in %s\n",
				r->core, (unsigned long long)(ticks_to_us(now - beat) / 1000),
				what);
			r->stall_beat = beat;
		}
		if (n < max) {
			stalls[n].core = r->core;
			stalls[n].stalled_us = ticks_to_us(now - beat);
			snprintf(stalls[n].what, sizeof(stalls[n].what), "%s", what);
		}
		n++;
	}
	return n;
}
