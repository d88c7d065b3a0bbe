/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reactors: one OS thread per core of the core mask, pinned to it with
 * pthread_setaffinity_np, each running one gga `struct thread`.
 *
 * In event mode (default) a reactor that has been idle for idle_spell_us
 * sleeps in thread_wait() until a message, fd or timer wakes it, so an idle
 * daemon uses no CPU. During that idle spell it keeps polling (a request that
 * comes soon is served without a wake-up) but yields the core to any other
 * runnable thread each time round: daemons that share a core (the one-machine
 * topology) would otherwise take turns spinning while the one with work
 * waits. With idle_spell_us 0 a reactor sleeps as soon as it is idle, which is
 * best when several daemons share one core. In busy mode it never sleeps
 * (lowest latency).
 */
#ifndef GGA_REACTOR_H
#define GGA_REACTOR_H

#include <stdbool.h>
#include <stdint.h>

struct thread;

enum reactor_poll_mode {
	REACTOR_POLL_EVENT = 0,
	REACTOR_POLL_BUSY,
};

/* Idle time before an event-mode reactor sleeps, unless told otherwise. */
#define REACTOR_DEFAULT_IDLE_SPELL_US 200

struct reactor_opts {
	uint64_t core_mask; /* default: core 0 */
	enum reactor_poll_mode poll_mode;
	uint32_t idle_spell_us; /* default: 200 */
};

void reactor_opts_init(struct reactor_opts *opts);

/* Parse "event" / "busy". Returns 0 or -EINVAL. */
int reactor_parse_poll_mode(const char *s, enum reactor_poll_mode *mode);
const char *reactor_poll_mode_name(enum reactor_poll_mode mode);

/*
 * Create one reactor (and its thread) per core in the mask. The lowest core's
 * thread is the app thread. Calls thread_lib_init(). Returns 0, -EINVAL (empty
 * mask, core not online), -ENOMEM.
 */
int reactors_init(const struct reactor_opts *opts);

/*
 * Run the reactors: spawn the OS threads for all cores but the first, run the
 * first reactor on the calling OS thread, and return once reactors_stop() has
 * been called and every reactor has exited. Returns 0 or a negative errno
 * (spawning or pinning failed; the reactors already started are stopped).
 */
int reactors_start(void);

/* Ask all reactors to exit after their current iteration. Any thread; async. */
void reactors_stop(void);

/* Destroy the reactors and their threads; calls thread_lib_fini(). */
void reactors_fini(void);

uint32_t reactor_count(void);

struct reactor_stats {
	uint32_t core;
	const char *thread_name;
	uint32_t thread_id;
	enum reactor_poll_mode poll_mode;
	uint64_t busy_ticks; /* time in iterations that did work */
	uint64_t idle_ticks; /* time in idle iterations and asleep */
	uint64_t sleeps;     /* times it blocked in thread_wait() */
	bool sleeping;
};

/* Returns 0, or -ENOENT for an index >= reactor_count(). Any thread. */
int reactor_get_stats(uint32_t index, struct reactor_stats *stats);

/*
 * Stall watchdog. A reactor that is awake and has not started a loop
 * iteration for longer than a limit is stuck in one poller, fd event or
 * message; the app's watchdog thread asks every few hundred milliseconds.
 */
#define REACTOR_DEFAULT_STALL_WARN_MS 1000

struct reactor_stall {
	uint32_t core;
	uint64_t stalled_us;
	char what[96]; /* "poller NAME", "fd event NAME", "message 0x..." */
};

/* True if a reactor last seen at `beat` (ticks) is stalled at `now`. Pure. */
bool reactor_beat_stalled(uint64_t beat, bool sleeping, uint64_t now, uint64_t limit_ticks);

/*
 * Check every reactor against limit_us (0: off). Logs a warning naming what
 * a stalled reactor runs, once per stall, and a notice when it is back.
 * Fills up to max entries of stalls and returns the number of reactors
 * stalled now. Any thread, but one caller at a time.
 */
uint32_t reactors_check_stalls(uint64_t limit_us, struct reactor_stall *stalls, uint32_t max);

#endif /* GGA_REACTOR_H */
