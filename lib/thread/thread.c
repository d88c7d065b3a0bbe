/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Threads: message rings, pollers, fd events and event-driven waiting.
 *
 * Fd events caught by thread_wait() are not dispatched there: they are kept
 * in the thread's pending array and the next thread_poll() runs their
 * callbacks first, without another epoll_wait() call. thread_wait() itself
 * only ever runs on the OS thread that polls the thread, so callbacks always
 * run inside thread_poll(), where unregistering is deferred safely.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "gga/log.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "thread_internal.h"

TAILQ_HEAD(thread_list, thread);

__thread struct thread *tls_thread;

static pthread_mutex_t g_threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread_list g_threads = TAILQ_HEAD_INITIALIZER(g_threads);
static struct thread *g_app_thread;
static uint32_t g_next_thread_id;
static uint32_t g_thread_count;
static bool g_thread_lib_initialized;
/* Set once epoll_pwait2() turns out to be missing (kernels before 5.11). */
static bool g_no_epoll_pwait2;

int
thread_lib_init(void)
{
	pthread_mutex_lock(&g_threads_lock);
	if (!g_thread_lib_initialized) {
		__atomic_store_n(&g_thread_lib_initialized, true, __ATOMIC_RELEASE);
		g_next_thread_id = 0;
		g_app_thread = NULL;
	}
	pthread_mutex_unlock(&g_threads_lock);
	/* Calibrate the tick rate now rather than inside the first poller registration. */
	(void)ticks_hz();
	return 0;
}

void
thread_lib_fini(void)
{
	pthread_mutex_lock(&g_threads_lock);
	if (g_thread_count != 0) {
		WARNLOG("thread library finished with %u thread(s) still alive\n", g_thread_count);
	}
	__atomic_store_n(&g_thread_lib_initialized, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g_threads_lock);
	io_device_release_all();
}

static void
copy_name(char *dst, const char *src, const char *fallback)
{
	snprintf(dst, THREAD_NAME_LEN, "%s", src != NULL ? src : fallback);
}

struct thread *
thread_create(const char *name)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct thread *thread;
	int rc;

	if (!__atomic_load_n(&g_thread_lib_initialized, __ATOMIC_ACQUIRE)) {
		ERRLOG("thread %s: thread_lib_init() has not been called\n", name ? name : "");
		errno = EINVAL;
		return NULL;
	}
	rc = posix_memalign((void **)&thread, GGA_CACHE_LINE, sizeof(*thread));
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	memset(thread, 0, sizeof(*thread));
	copy_name(thread->name, name, "thread");
	TAILQ_INIT(&thread->untimed_pollers);
	TAILQ_INIT(&thread->timed_pollers);
	TAILQ_INIT(&thread->fd_events);
	TAILQ_INIT(&thread->channels);
	thread->wake_fd = -1;
	thread->epoll_fd = -1;

	/* Large enough for glibc to mmap it: pages stay untouched until used. */
	thread->ring = calloc(THREAD_RING_SIZE, sizeof(struct msg_slot));
	if (thread->ring == NULL) {
		goto out_free_thread;
	}
	thread->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (thread->epoll_fd < 0) {
		ERRLOG("thread %s: epoll_create1 failed: %s\n", thread->name, strerror(errno));
		goto out_free_ring;
	}
	thread->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (thread->wake_fd < 0) {
		ERRLOG("thread %s: eventfd failed: %s\n", thread->name, strerror(errno));
		goto out_close_epoll;
	}
	/* data.ptr == NULL marks the wake-up eventfd among the ready events. */
	if (epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, thread->wake_fd, &ev) != 0) {
		ERRLOG("thread %s: epoll_ctl failed: %s\n", thread->name, strerror(errno));
		goto out_close_wake;
	}

	pthread_mutex_lock(&g_threads_lock);
	thread->id = g_next_thread_id++;
	TAILQ_INSERT_TAIL(&g_threads, thread, link);
	g_thread_count++;
	if (g_app_thread == NULL) {
		g_app_thread = thread;
	}
	pthread_mutex_unlock(&g_threads_lock);
	DEBUGLOG(thread, "thread %s created with id %u\n", thread->name, thread->id);
	return thread;

out_close_wake:
	rc = errno;
	close(thread->wake_fd);
	errno = rc;
out_close_epoll:
	rc = errno;
	close(thread->epoll_fd);
	errno = rc;
out_free_ring:
	rc = errno;
	free(thread->ring);
	errno = rc;
out_free_thread:
	rc = errno;
	free(thread);
	errno = rc;
	return NULL;
}

/* Runs up to `max` queued messages; returns how many ran. */
/* Record what the thread is about to run, for the stall watchdog. */
static inline void
note_running(struct thread *thread, enum thread_running_kind kind, const char *name, void *fn)
{
	uint32_t seq = thread->running_seq;

	__atomic_store_n(&thread->running_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	thread->running_kind = kind;
	thread->running_fn = fn;
	if (name != NULL) {
		memcpy(thread->running_name, name, THREAD_NAME_LEN);
	}
	__atomic_store_n(&thread->running_seq, seq + 2, __ATOMIC_RELEASE);
}

void
thread_describe_running(struct thread *thread, char *buf, size_t len)
{
	enum thread_running_kind kind = THREAD_RUNNING_NONE;
	char name[THREAD_NAME_LEN] = "";
	void *fn = NULL;
	uint32_t s1, s2;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		s1 = __atomic_load_n(&thread->running_seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			continue;
		}
		kind = thread->running_kind;
		fn = thread->running_fn;
		memcpy(name, thread->running_name, sizeof(name));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&thread->running_seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			break;
		}
	}
	name[sizeof(name) - 1] = '\0';
	switch (kind) {
	case THREAD_RUNNING_MSG:
		snprintf(buf, len, "message %p", fn);
		break;
	case THREAD_RUNNING_POLLER:
		snprintf(buf, len, "poller %s", name);
		break;
	case THREAD_RUNNING_FD_EVENT:
		snprintf(buf, len, "fd event %s", name);
		break;
	default:
		snprintf(buf, len, "its loop");
		break;
	}
}

static uint32_t
process_msgs(struct thread *thread, uint32_t max)
{
	struct msg_slot *ring = thread->ring;
	uint64_t head = thread->msg_head;
	uint32_t count;

	for (count = 0; count < max; count++) {
		struct msg_slot *slot = &ring[head & THREAD_RING_MASK];
		uint64_t lap = head & ~(uint64_t)THREAD_RING_MASK;
		msg_fn fn;
		void *ctx;

		if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != lap + 1) {
			break;
		}
		fn = slot->fn;
		ctx = slot->ctx;
		/* Free the slot before running fn so fn can send messages itself. */
		__atomic_store_n(&slot->seq, lap + THREAD_RING_SIZE, __ATOMIC_RELEASE);
		head++;
		thread->msg_head = head;
		note_running(thread, THREAD_RUNNING_MSG, NULL, (void *)fn);
		fn(ctx);
	}
	return count;
}

static bool
msg_queued(const struct thread *thread)
{
	uint64_t head = thread->msg_head;
	const struct msg_slot *slot = &thread->ring[head & THREAD_RING_MASK];
	uint64_t lap = head & ~(uint64_t)THREAD_RING_MASK;

	/* Sequentially consistent: pairs with the sender's store in thread_send_msg(). */
	return __atomic_load_n(&slot->seq, __ATOMIC_SEQ_CST) == lap + 1;
}

static void
free_poller(struct poller *poller)
{
	free(poller);
}

static void
free_fd_event(struct fd_event *ev)
{
	free(ev);
}

void
thread_destroy(struct thread *thread)
{
	struct thread *prev = tls_thread;
	struct poller *poller;
	struct fd_event *ev;
	uint32_t rounds;

	if (thread == NULL) {
		return;
	}
	if (thread->in_poll > 0) {
		ERRLOG("thread %s: cannot destroy a thread from inside its own poll\n",
		       thread->name);
		return;
	}
	tls_thread = thread;
	thread->exiting = true;

	/*
	 * Drain the queue, including messages queued by the messages themselves
	 * (deferred channel destruction). The bound stops a message that keeps
	 * re-sending itself.
	 */
	for (rounds = 0; rounds < 100000; rounds++) {
		if (process_msgs(thread, THREAD_MSG_BATCH) == 0) {
			break;
		}
	}
	if (msg_queued(thread)) {
		WARNLOG("thread %s: messages still queued at destroy are dropped\n", thread->name);
	}

	while ((poller = TAILQ_FIRST(&thread->untimed_pollers)) != NULL) {
		TAILQ_REMOVE(&thread->untimed_pollers, poller, link);
		if (poller->state != POLLER_STATE_UNREGISTERED) {
			WARNLOG("thread %s: poller %s still registered at destroy\n", thread->name,
				poller->name);
		}
		free_poller(poller);
	}
	while ((poller = TAILQ_FIRST(&thread->timed_pollers)) != NULL) {
		TAILQ_REMOVE(&thread->timed_pollers, poller, link);
		if (poller->state != POLLER_STATE_UNREGISTERED) {
			WARNLOG("thread %s: poller %s still registered at destroy\n", thread->name,
				poller->name);
		}
		free_poller(poller);
	}
	while ((ev = TAILQ_FIRST(&thread->fd_events)) != NULL) {
		TAILQ_REMOVE(&thread->fd_events, ev, link);
		if (!ev->unregistered) {
			WARNLOG("thread %s: fd event %s (fd %d) still registered at destroy\n",
				thread->name, ev->name, ev->fd);
		}
		free_fd_event(ev);
	}
	io_channel_release_thread(thread);
	/* Destroy callbacks may have queued messages here: give them their run. */
	for (rounds = 0; rounds < 100000; rounds++) {
		if (process_msgs(thread, THREAD_MSG_BATCH) == 0) {
			break;
		}
	}

	pthread_mutex_lock(&g_threads_lock);
	TAILQ_REMOVE(&g_threads, thread, link);
	g_thread_count--;
	if (g_app_thread == thread) {
		g_app_thread = NULL;
	}
	pthread_mutex_unlock(&g_threads_lock);

	tls_thread = prev == thread ? NULL : prev;
	DEBUGLOG(thread, "thread %s (id %u) destroyed\n", thread->name, thread->id);
	close(thread->wake_fd);
	close(thread->epoll_fd);
	free(thread->ring);
	free(thread);
}

void
thread_set_current(struct thread *thread)
{
	tls_thread = thread;
}

struct thread *
thread_get_current(void)
{
	return tls_thread;
}

struct thread *
thread_get_app(void)
{
	return __atomic_load_n(&g_app_thread, __ATOMIC_ACQUIRE);
}

const char *
thread_get_name(const struct thread *thread)
{
	return thread->name;
}

uint32_t
thread_get_id(const struct thread *thread)
{
	return thread->id;
}

struct thread *
thread_get_by_id(uint32_t id)
{
	struct thread *thread;

	pthread_mutex_lock(&g_threads_lock);
	TAILQ_FOREACH(thread, &g_threads, link) {
		if (thread->id == id) {
			break;
		}
	}
	pthread_mutex_unlock(&g_threads_lock);
	return thread;
}

struct thread *
thread_get_next_from_id(uint32_t id)
{
	struct thread *thread;

	/* The list is in creation order, which is id order. */
	pthread_mutex_lock(&g_threads_lock);
	TAILQ_FOREACH(thread, &g_threads, link) {
		if (thread->id >= id) {
			break;
		}
	}
	pthread_mutex_unlock(&g_threads_lock);
	return thread;
}

uint32_t
thread_count(void)
{
	uint32_t count;

	pthread_mutex_lock(&g_threads_lock);
	count = g_thread_count;
	pthread_mutex_unlock(&g_threads_lock);
	return count;
}

void
thread_wakeup(struct thread *thread)
{
	uint64_t one = 1;
	ssize_t rc;

	/* EAGAIN means the counter is saturated: the thread is awake anyway. */
	rc = write(thread->wake_fd, &one, sizeof(one));
	(void)rc;
}

static void
drain_wake_fd(struct thread *thread)
{
	uint64_t value;
	ssize_t rc;

	rc = read(thread->wake_fd, &value, sizeof(value));
	(void)rc;
}

int
thread_send_msg(struct thread *thread, msg_fn fn, void *ctx)
{
	uint64_t pos = __atomic_load_n(&thread->msg_tail, __ATOMIC_RELAXED);
	struct msg_slot *slot;
	uint64_t lap;

	for (;;) {
		int64_t diff;
		uint64_t seq;

		slot = &thread->ring[pos & THREAD_RING_MASK];
		lap = pos & ~(uint64_t)THREAD_RING_MASK;
		seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		diff = (int64_t)(seq - lap);
		if (diff == 0) {
			if (__atomic_compare_exchange_n(&thread->msg_tail, &pos, pos + 1, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				break;
			}
			/* pos now holds the current tail: retry there. */
		} else if (diff < 0) {
			/* The slot still holds a message of the previous lap. */
			return -ENOMEM;
		} else {
			pos = __atomic_load_n(&thread->msg_tail, __ATOMIC_RELAXED);
		}
	}
	slot->fn = fn;
	slot->ctx = ctx;
	/*
	 * Publish, then look at the sleeping flag. Both are sequentially
	 * consistent, as are the consumer's store of the flag and its re-check
	 * of the queue in thread_wait(), so at least one side sees the other:
	 * either the consumer finds this message or we find it asleep.
	 */
	__atomic_store_n(&slot->seq, lap + 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&thread->sleeping, __ATOMIC_SEQ_CST) != 0 &&
	    __atomic_exchange_n(&thread->sleeping, 0, __ATOMIC_SEQ_CST) != 0) {
		thread_wakeup(thread);
	}
	return 0;
}

static void
timed_poller_insert(struct thread *thread, struct poller *poller)
{
	struct poller *iter;

	/* Few timed pollers per thread: a sorted list is cheaper than a heap. */
	TAILQ_FOREACH_REVERSE(iter, &thread->timed_pollers, poller_list, link) {
		if (iter->next_run <= poller->next_run) {
			TAILQ_INSERT_AFTER(&thread->timed_pollers, iter, poller, link);
			return;
		}
	}
	TAILQ_INSERT_HEAD(&thread->timed_pollers, poller, link);
}

struct poller *
poller_register(poller_fn fn, void *ctx, uint64_t period_us, const char *name)
{
	struct thread *thread = tls_thread;
	struct poller *poller;

	if (thread == NULL) {
		ERRLOG("poller %s: no current thread\n", name ? name : "");
		errno = EINVAL;
		return NULL;
	}
	if (fn == NULL) {
		ERRLOG("poller %s: no function\n", name ? name : "");
		errno = EINVAL;
		return NULL;
	}
	poller = calloc(1, sizeof(*poller));
	if (poller == NULL) {
		return NULL;
	}
	poller->thread = thread;
	poller->fn = fn;
	poller->ctx = ctx;
	poller->state = POLLER_STATE_WAITING;
	copy_name(poller->name, name, "poller");
	if (period_us == 0) {
		TAILQ_INSERT_TAIL(&thread->untimed_pollers, poller, link);
	} else {
		poller->period_ticks = GGA_MAX(us_to_ticks(period_us), 1);
		poller->next_run = ticks_get() + poller->period_ticks;
		timed_poller_insert(thread, poller);
	}
	DEBUGLOG(thread, "thread %s: poller %s registered, period %lu us\n", thread->name,
		 poller->name, (unsigned long)period_us);
	return poller;
}

void
poller_unregister(struct poller **pp)
{
	struct poller *poller = *pp;
	struct thread *thread;

	if (poller == NULL) {
		return;
	}
	*pp = NULL;
	thread = poller->thread;
	if (thread != tls_thread) {
		ERRLOG("poller %s: unregistered from thread %s, not its own thread %s\n",
		       poller->name, tls_thread ? tls_thread->name : "(none)", thread->name);
	}
	switch (poller->state) {
	case POLLER_STATE_UNREGISTERED:
		ERRLOG("poller %s: unregistered twice\n", poller->name);
		return;
	case POLLER_STATE_RUNNING:
		/* The loop that runs it frees it when its function returns. */
		poller->state = POLLER_STATE_UNREGISTERED;
		return;
	case POLLER_STATE_WAITING:
		break;
	}
	if (thread->in_poll > 0) {
		/*
		 * The loop in thread_poll() may hold a pointer to this poller:
		 * leave it in its list, skipped, until the poll finishes.
		 */
		poller->state = POLLER_STATE_UNREGISTERED;
		thread->dead_pollers++;
		return;
	}
	if (poller->period_ticks == 0) {
		TAILQ_REMOVE(&thread->untimed_pollers, poller, link);
	} else {
		TAILQ_REMOVE(&thread->timed_pollers, poller, link);
	}
	free_poller(poller);
}

bool
thread_has_active_pollers(const struct thread *thread)
{
	return !TAILQ_EMPTY(&thread->untimed_pollers);
}

static int
run_untimed_pollers(struct thread *thread)
{
	struct poller *poller, *next;
	int busy = 0;

	for (poller = TAILQ_FIRST(&thread->untimed_pollers); poller != NULL; poller = next) {
		int rc;

		if (poller->state == POLLER_STATE_UNREGISTERED) {
			next = TAILQ_NEXT(poller, link);
			continue;
		}
		poller->state = POLLER_STATE_RUNNING;
		note_running(thread, THREAD_RUNNING_POLLER, poller->name, NULL);
		rc = poller->fn(poller->ctx);
		/*
		 * Read after the call: it may have appended pollers. Its successor
		 * is still in the list even if unregistered, which only marks it.
		 */
		next = TAILQ_NEXT(poller, link);
		if (poller->state == POLLER_STATE_UNREGISTERED) {
			TAILQ_REMOVE(&thread->untimed_pollers, poller, link);
			free_poller(poller);
		} else {
			poller->state = POLLER_STATE_WAITING;
		}
		if (rc > 0) {
			busy++;
		}
	}
	return busy;
}

static int
run_timed_pollers(struct thread *thread, uint64_t now)
{
	struct poller *poller;
	int busy = 0;

	while ((poller = TAILQ_FIRST(&thread->timed_pollers)) != NULL) {
		int rc;

		if (poller->state == POLLER_STATE_UNREGISTERED) {
			TAILQ_REMOVE(&thread->timed_pollers, poller, link);
			thread->dead_pollers--;
			free_poller(poller);
			continue;
		}
		if (poller->next_run > now) {
			break;
		}
		TAILQ_REMOVE(&thread->timed_pollers, poller, link);
		poller->state = POLLER_STATE_RUNNING;
		note_running(thread, THREAD_RUNNING_POLLER, poller->name, NULL);
		rc = poller->fn(poller->ctx);
		if (poller->state == POLLER_STATE_UNREGISTERED) {
			free_poller(poller);
		} else {
			poller->state = POLLER_STATE_WAITING;
			/* Never due again in this pass, even with a tiny period. */
			poller->next_run = now + poller->period_ticks;
			timed_poller_insert(thread, poller);
		}
		if (rc > 0) {
			busy++;
		}
	}
	return busy;
}

static int
dispatch_fd_events(struct thread *thread, struct epoll_event *events, int count)
{
	int busy = 0;
	int i;

	for (i = 0; i < count; i++) {
		struct fd_event *ev = events[i].data.ptr;

		if (ev == NULL) {
			/* The wake-up eventfd: a sender thought we were asleep. */
			drain_wake_fd(thread);
			continue;
		}
		if (ev->unregistered) {
			continue;
		}
		note_running(thread, THREAD_RUNNING_FD_EVENT, ev->name, NULL);
		ev->fn(ev->ctx, events[i].events);
		busy++;
	}
	return busy;
}

static int
poll_fds(struct thread *thread)
{
	struct epoll_event events[THREAD_MAX_EVENTS];
	int count;

	count = epoll_wait(thread->epoll_fd, events, THREAD_MAX_EVENTS, 0);
	if (count <= 0) {
		return 0;
	}
	return dispatch_fd_events(thread, events, count);
}

static void
reap_dead(struct thread *thread)
{
	struct poller *poller, *next_poller;
	struct fd_event *ev, *next_ev;

	if (thread->dead_pollers > 0) {
		for (poller = TAILQ_FIRST(&thread->untimed_pollers); poller != NULL;
		     poller = next_poller) {
			next_poller = TAILQ_NEXT(poller, link);
			if (poller->state == POLLER_STATE_UNREGISTERED) {
				TAILQ_REMOVE(&thread->untimed_pollers, poller, link);
				free_poller(poller);
			}
		}
		for (poller = TAILQ_FIRST(&thread->timed_pollers); poller != NULL;
		     poller = next_poller) {
			next_poller = TAILQ_NEXT(poller, link);
			if (poller->state == POLLER_STATE_UNREGISTERED) {
				TAILQ_REMOVE(&thread->timed_pollers, poller, link);
				free_poller(poller);
			}
		}
		thread->dead_pollers = 0;
	}
	if (thread->dead_fds > 0) {
		for (ev = TAILQ_FIRST(&thread->fd_events); ev != NULL; ev = next_ev) {
			next_ev = TAILQ_NEXT(ev, link);
			if (ev->unregistered) {
				TAILQ_REMOVE(&thread->fd_events, ev, link);
				free_fd_event(ev);
			}
		}
		thread->dead_fds = 0;
	}
}

int
thread_poll(struct thread *thread, uint32_t max_msgs, uint64_t now)
{
	struct thread *prev = tls_thread;
	int busy;

	tls_thread = thread;
	thread->in_poll++;

	busy = (int)process_msgs(thread, max_msgs != 0 ? max_msgs : THREAD_MSG_BATCH);
	busy += run_untimed_pollers(thread);
	if (!TAILQ_EMPTY(&thread->timed_pollers)) {
		if (now == 0) {
			now = ticks_get();
		}
		busy += run_timed_pollers(thread, now);
	}
	if (thread->num_pending > 0) {
		uint32_t count = thread->num_pending;

		/* Cleared first: callbacks may unregister fds, which scrubs this array. */
		thread->num_pending = 0;
		busy += dispatch_fd_events(thread, thread->pending, (int)count);
	} else if (thread->num_fds > 0) {
		/*
		 * Checking fds costs a system call: a busy thread does it every
		 * 16th iteration, an otherwise idle one every time.
		 */
		thread->iteration++;
		if (busy == 0 || (thread->iteration & 15) == 0) {
			busy += poll_fds(thread);
		}
	}

	thread->in_poll--;
	if ((thread->dead_pollers | thread->dead_fds) != 0 && thread->in_poll == 0) {
		reap_dead(thread);
	}
	tls_thread = prev;
	return busy;
}

static uint64_t
ticks_to_ns(uint64_t ticks)
{
	uint64_t hz = ticks_hz();

	return ticks / hz * 1000000000ull + (ticks % hz) * 1000000000ull / hz;
}

static int
epoll_wait_ns(struct thread *thread, struct epoll_event *events, int max, int64_t timeout_ns)
{
	struct timespec ts;
	int timeout_ms;

	if (!__atomic_load_n(&g_no_epoll_pwait2, __ATOMIC_RELAXED)) {
		int rc;

		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		rc = epoll_pwait2(thread->epoll_fd, events, max, timeout_ns < 0 ? NULL : &ts, NULL);
		if (rc >= 0 || errno != ENOSYS) {
			return rc;
		}
		__atomic_store_n(&g_no_epoll_pwait2, true, __ATOMIC_RELAXED);
	}
	/* Millisecond resolution: round up so a timer is never missed by spinning. */
	if (timeout_ns < 0) {
		timeout_ms = -1;
	} else if (timeout_ns / 1000000 >= 0x7fffffff) {
		timeout_ms = 0x7fffffff;
	} else {
		timeout_ms = (int)((timeout_ns + 999999) / 1000000);
	}
	return epoll_wait(thread->epoll_fd, events, max, timeout_ms);
}

int
thread_wait(struct thread *thread, uint64_t timeout_us)
{
	struct epoll_event events[THREAD_MAX_EVENTS];
	int64_t timeout_ns = -1;
	struct poller *timed;
	int count, i;

	if (thread->num_pending > 0 || msg_queued(thread)) {
		return 0;
	}
	timed = TAILQ_FIRST(&thread->timed_pollers);
	if (timed != NULL) {
		uint64_t now = ticks_get();

		if (timed->next_run <= now) {
			return 0;
		}
		timeout_ns = (int64_t)GGA_MIN(ticks_to_ns(timed->next_run - now),
					      (uint64_t)INT64_MAX / 2);
	}
	if (timeout_us != 0) {
		int64_t limit = (int64_t)GGA_MIN(timeout_us, (uint64_t)INT64_MAX / 2000) * 1000;

		if (timeout_ns < 0 || limit < timeout_ns) {
			timeout_ns = limit;
		}
	}

	/* See thread_send_msg(): flag first, then re-check the queue. */
	__atomic_store_n(&thread->sleeping, 1, __ATOMIC_SEQ_CST);
	if (msg_queued(thread)) {
		__atomic_store_n(&thread->sleeping, 0, __ATOMIC_RELAXED);
		return 0;
	}
	count = epoll_wait_ns(thread, events, THREAD_MAX_EVENTS, timeout_ns);
	__atomic_store_n(&thread->sleeping, 0, __ATOMIC_RELAXED);
	if (count < 0) {
		return errno == EINTR ? 0 : -errno;
	}
	for (i = 0; i < count; i++) {
		if (events[i].data.ptr == NULL) {
			drain_wake_fd(thread);
		} else {
			thread->pending[thread->num_pending++] = events[i];
		}
	}
	return 0;
}

struct fd_event *
thread_fd_register(int fd, uint32_t events, fd_event_fn fn, void *ctx, const char *name)
{
	struct thread *thread = tls_thread;
	struct epoll_event epev;
	struct fd_event *ev;
	int rc;

	if (thread == NULL || fn == NULL || fd < 0) {
		ERRLOG("fd event %s: %s\n", name ? name : "",
		       thread == NULL ? "no current thread" : "invalid argument");
		errno = EINVAL;
		return NULL;
	}
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL) {
		return NULL;
	}
	ev->thread = thread;
	ev->fd = fd;
	ev->events = events;
	ev->fn = fn;
	ev->ctx = ctx;
	copy_name(ev->name, name, "fd");
	epev.events = events;
	epev.data.ptr = ev;
	if (epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, fd, &epev) != 0) {
		rc = errno;
		ERRLOG("thread %s: fd event %s: epoll_ctl(ADD, %d) failed: %s\n", thread->name,
		       ev->name, fd, strerror(rc));
		free(ev);
		errno = rc;
		return NULL;
	}
	TAILQ_INSERT_TAIL(&thread->fd_events, ev, link);
	thread->num_fds++;
	return ev;
}

int
thread_fd_modify(struct fd_event *ev, uint32_t events)
{
	struct epoll_event epev = { .events = events, .data.ptr = ev };

	if (epoll_ctl(ev->thread->epoll_fd, EPOLL_CTL_MOD, ev->fd, &epev) != 0) {
		return -errno;
	}
	ev->events = events;
	return 0;
}

void
thread_fd_unregister(struct fd_event **pev)
{
	struct fd_event *ev = *pev;
	struct thread *thread;
	uint32_t i, kept;

	if (ev == NULL) {
		return;
	}
	*pev = NULL;
	thread = ev->thread;
	if (thread != tls_thread) {
		ERRLOG("fd event %s: unregistered from thread %s, not its own thread %s\n",
		       ev->name, tls_thread ? tls_thread->name : "(none)", thread->name);
	}
	if (ev->unregistered) {
		ERRLOG("fd event %s: unregistered twice\n", ev->name);
		return;
	}
	/* The fd may already be closed, which removed it from the set: not an error. */
	if (epoll_ctl(thread->epoll_fd, EPOLL_CTL_DEL, ev->fd, NULL) != 0 && errno != EBADF &&
	    errno != ENOENT) {
		WARNLOG("thread %s: fd event %s: epoll_ctl(DEL, %d) failed: %s\n", thread->name,
			ev->name, ev->fd, strerror(errno));
	}
	ev->unregistered = true;
	thread->num_fds--;
	/* Events caught by thread_wait() for this fd must not be dispatched. */
	for (i = 0, kept = 0; i < thread->num_pending; i++) {
		if (thread->pending[i].data.ptr != ev) {
			thread->pending[kept++] = thread->pending[i];
		}
	}
	thread->num_pending = kept;
	if (thread->in_poll > 0) {
		/* An array of ready events being dispatched may still point at it. */
		thread->dead_fds++;
		return;
	}
	TAILQ_REMOVE(&thread->fd_events, ev, link);
	free_fd_event(ev);
}
