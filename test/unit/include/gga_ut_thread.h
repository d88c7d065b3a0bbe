/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For unit tests whose code under test sends messages and registers pollers:
 * the thread library with one thread, current on the caller's, and its end;
 * and the clock and sleep of tests that run real threads.
 */
#ifndef GGA_UT_THREAD_H
#define GGA_UT_THREAD_H

#include <stdint.h>
#include <time.h>

#include "gga/thread.h"
#include "gga/util.h"

static inline uint64_t
now_ms(void)
{
	return time_now_ns() / 1000000;
}

static inline void
sleep_us(uint64_t us)
{
	struct timespec ts = {
		.tv_sec = (time_t)(us / 1000000),
		.tv_nsec = (long)(us % 1000000) * 1000,
	};

	nanosleep(&ts, NULL);
}

/* Returns the thread, or NULL if the library or the thread cannot start. */
static inline struct thread *
ut_thread_start(void)
{
	struct thread *thread;

	if (thread_lib_init() != 0) {
		return NULL;
	}
	thread = thread_create("ut");
	if (thread != NULL) {
		thread_set_current(thread);
	}
	return thread;
}

static inline void
ut_thread_stop(struct thread *thread)
{
	thread_set_current(NULL);
	thread_destroy(thread);
	thread_lib_fini();
}

#endif /* GGA_UT_THREAD_H */
