/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/thread: threads polled by hand from the test's OS thread
 * (deterministic), plus real pthreads for cross-thread sends and waits. The
 * reactors have their own test, test/unit/lib/reactor.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "gga/reactor.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"
#include "gga_ut_thread.h"
#include "lib/thread/thread_internal.h"

/* Poll every thread until a whole round finds no work (bounded). */
static int
poll_until_idle(struct thread **threads, int count)
{
	int round, i, busy = 0, total = 0;

	for (round = 0; round < 10000; round++) {
		busy = 0;
		for (i = 0; i < count; i++) {
			busy += thread_poll(threads[i], 0, 0);
		}
		total += busy;
		if (busy == 0) {
			break;
		}
	}
	CU_ASSERT(busy == 0);
	return total;
}

static int
setup(void)
{
	return thread_lib_init();
}

static void
teardown(void)
{
	thread_set_current(NULL);
	UT_ASSERT_EQ(thread_count(), 0);
	thread_lib_fini();
}

static void
test_layout(void)
{
	/* Producers and the consumer must not share a cache line. */
	UT_ASSERT_EQ(offsetof(struct thread, msg_tail) % GGA_CACHE_LINE, 0);
	UT_ASSERT_EQ(offsetof(struct thread, msg_head) % GGA_CACHE_LINE, 0);
	CU_ASSERT(offsetof(struct thread, msg_head) - offsetof(struct thread, msg_tail) >=
		  GGA_CACHE_LINE);
	UT_ASSERT_EQ(offsetof(struct io_channel, ctx) % GGA_CACHE_LINE, 0);
}

static void
test_create_destroy(void)
{
	struct thread *t0, *t1, *t2;

	setup();
	t0 = thread_create("first");
	t1 = thread_create("second");
	t2 = thread_create(NULL);
	CU_ASSERT_FATAL(t0 != NULL && t1 != NULL && t2 != NULL);
	UT_ASSERT_EQ(thread_get_id(t0), 0);
	UT_ASSERT_EQ(thread_get_id(t1), 1);
	UT_ASSERT_EQ(thread_get_id(t2), 2);
	CU_ASSERT(thread_get_app() == t0);
	UT_ASSERT_STR_EQ(thread_get_name(t1), "second");
	UT_ASSERT_EQ(thread_count(), 3);
	CU_ASSERT(thread_get_by_id(1) == t1);
	CU_ASSERT(thread_get_by_id(7) == NULL);
	CU_ASSERT(thread_get_current() == NULL);
	thread_set_current(t1);
	CU_ASSERT(thread_get_current() == t1);
	thread_set_current(NULL);

	thread_destroy(t1);
	UT_ASSERT_EQ(thread_count(), 2);
	CU_ASSERT(thread_get_by_id(1) == NULL);
	/* Ids are not reused while the library lives. */
	t1 = thread_create("third");
	CU_ASSERT_FATAL(t1 != NULL);
	UT_ASSERT_EQ(thread_get_id(t1), 3);
	thread_destroy(t0);
	CU_ASSERT(thread_get_app() == NULL);
	thread_destroy(t1);
	thread_destroy(t2);
	teardown();
}

struct order_ctx {
	struct thread *peer;
	uint32_t next_expected;
	uint32_t received;
	bool out_of_order;
	bool wrong_thread;
	struct thread *expect_thread;
	uint32_t replies;
};

struct order_msg {
	struct order_ctx *ctx;
	uint32_t seq;
};

static void
reply_msg(void *arg)
{
	struct order_ctx *ctx = arg;

	ctx->replies++;
}

static void
order_msg_fn(void *arg)
{
	struct order_msg *m = arg;
	struct order_ctx *ctx = m->ctx;

	if (m->seq != ctx->next_expected) {
		ctx->out_of_order = true;
	}
	if (thread_get_current() != ctx->expect_thread) {
		ctx->wrong_thread = true;
	}
	ctx->next_expected = m->seq + 1;
	ctx->received++;
	/* Answer from inside a message: sending from a handler must work. */
	CU_ASSERT(thread_send_msg(ctx->peer, reply_msg, ctx) == 0);
}

static void
test_msg_order(void)
{
	struct thread *threads[2];
	struct order_ctx ctx = { 0 };
	struct order_msg msgs[1000];
	uint32_t i;
	int busy;

	setup();
	threads[0] = thread_create("t0");
	threads[1] = thread_create("t1");
	CU_ASSERT_FATAL(threads[0] != NULL && threads[1] != NULL);
	ctx.peer = threads[0];
	ctx.expect_thread = threads[1];
	thread_set_current(threads[0]);
	for (i = 0; i < ARRAY_SIZE(msgs); i++) {
		msgs[i].ctx = &ctx;
		msgs[i].seq = i;
		CU_ASSERT(thread_send_msg(threads[1], order_msg_fn, &msgs[i]) == 0);
	}
	/* Nothing runs inside thread_send_msg. */
	UT_ASSERT_EQ(ctx.received, 0);

	/* A batch limit of 10 runs exactly 10. */
	busy = thread_poll(threads[1], 10, 0);
	UT_ASSERT_EQ(busy, 10);
	UT_ASSERT_EQ(ctx.received, 10);
	UT_ASSERT_EQ(ctx.replies, 0);
	poll_until_idle(threads, 2);
	UT_ASSERT_EQ(ctx.received, ARRAY_SIZE(msgs));
	UT_ASSERT_EQ(ctx.replies, ARRAY_SIZE(msgs));
	CU_ASSERT(!ctx.out_of_order);
	CU_ASSERT(!ctx.wrong_thread);
	/* thread_poll restores the caller's current thread. */
	CU_ASSERT(thread_get_current() == threads[0]);
	UT_ASSERT_EQ(thread_poll(threads[0], 0, 0), 0);
	UT_ASSERT_EQ(thread_poll(threads[1], 0, 0), 0);

	thread_set_current(NULL);
	thread_destroy(threads[0]);
	thread_destroy(threads[1]);
	teardown();
}

static void
count_msg(void *arg)
{
	(*(uint32_t *)arg)++;
}

static void
test_msg_self_not_inline(void)
{
	struct thread *t;
	uint32_t count = 0;

	setup();
	t = thread_create("self");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	CU_ASSERT(thread_send_msg(t, count_msg, &count) == 0);
	UT_ASSERT_EQ(count, 0);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(count, 1);
	thread_set_current(NULL);
	/* Queued messages run when the thread is destroyed. */
	CU_ASSERT(thread_send_msg(t, count_msg, &count) == 0);
	thread_destroy(t);
	UT_ASSERT_EQ(count, 2);
	teardown();
}

static void
test_msg_queue_full(void)
{
	struct thread *t;
	uint32_t count = 0, i;
	int rc = 0;

	setup();
	t = thread_create("full");
	CU_ASSERT_FATAL(t != NULL);
	for (i = 0; i < THREAD_RING_SIZE && rc == 0; i++) {
		rc = thread_send_msg(t, count_msg, &count);
	}
	UT_ASSERT_EQ(rc, 0);
	UT_ASSERT_EQ(thread_send_msg(t, count_msg, &count), -ENOMEM);
	/* Draining one slot makes room for exactly one more. */
	UT_ASSERT_EQ(thread_poll(t, 1, 0), 1);
	UT_ASSERT_EQ(thread_send_msg(t, count_msg, &count), 0);
	UT_ASSERT_EQ(thread_send_msg(t, count_msg, &count), -ENOMEM);
	while (thread_poll(t, 0, 0) > 0) {
	}
	UT_ASSERT_EQ(count, THREAD_RING_SIZE + 1);
	/* Wrapped around: the ring keeps working on later laps. */
	for (i = 0; i < 3 * THREAD_RING_SIZE / 2; i++) {
		CU_ASSERT_FATAL(thread_send_msg(t, count_msg, &count) == 0);
		if (i % 1000 == 999) {
			while (thread_poll(t, 0, 0) > 0) {
			}
		}
	}
	while (thread_poll(t, 0, 0) > 0) {
	}
	UT_ASSERT_EQ(count, THREAD_RING_SIZE + 1 + 3 * THREAD_RING_SIZE / 2);
	thread_destroy(t);
	teardown();
}

#define PRODUCERS    3
#define PER_PRODUCER 20000

struct producer {
	pthread_t tid;
	struct thread *target;
	uint32_t index;
	uint32_t next_expected;
	bool out_of_order;
	uint32_t full_retries;
	uint32_t seqs[PER_PRODUCER];
};

static uint32_t g_received;

static void
producer_msg(void *arg)
{
	uint32_t *seqp = arg;
	struct producer *p = (struct producer *)((char *)(seqp - *seqp) -
						 offsetof(struct producer, seqs));

	if (*seqp != p->next_expected) {
		p->out_of_order = true;
	}
	p->next_expected = *seqp + 1;
	g_received++;
}

static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	uint32_t i;

	for (i = 0; i < PER_PRODUCER; i++) {
		p->seqs[i] = i;
		while (thread_send_msg(p->target, producer_msg, &p->seqs[i]) != 0) {
			p->full_retries++;
			sched_yield();
		}
	}
	return NULL;
}

static void
test_msg_from_pthreads(void)
{
	static struct producer producers[PRODUCERS];
	struct thread *t;
	uint64_t deadline;
	int i;

	setup();
	t = thread_create("consumer");
	CU_ASSERT_FATAL(t != NULL);
	g_received = 0;
	for (i = 0; i < PRODUCERS; i++) {
		memset(&producers[i], 0, sizeof(producers[i]));
		producers[i].target = t;
		producers[i].index = (uint32_t)i;
		CU_ASSERT_FATAL(
			pthread_create(&producers[i].tid, NULL, producer_main, &producers[i]) == 0);
	}
	deadline = now_ms() + 20000;
	while (g_received < PRODUCERS * PER_PRODUCER && now_ms() < deadline) {
		thread_poll(t, 0, 0);
	}
	for (i = 0; i < PRODUCERS; i++) {
		pthread_join(producers[i].tid, NULL);
		CU_ASSERT(!producers[i].out_of_order);
		UT_ASSERT_EQ(producers[i].next_expected, PER_PRODUCER);
	}
	UT_ASSERT_EQ(g_received, PRODUCERS * PER_PRODUCER);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);
	thread_destroy(t);
	teardown();
}

struct poller_ctx {
	uint32_t calls;
	uint32_t unregister_at;
	int ret;
	struct poller *self;
	struct poller **victim;
};

static int
counting_poller(void *arg)
{
	struct poller_ctx *ctx = arg;

	ctx->calls++;
	if (ctx->unregister_at != 0 && ctx->calls == ctx->unregister_at) {
		poller_unregister(&ctx->self);
		CU_ASSERT(ctx->self == NULL);
	}
	if (ctx->victim != NULL && *ctx->victim != NULL) {
		poller_unregister(ctx->victim);
	}
	return ctx->ret;
}

static void
test_poller_untimed(void)
{
	struct thread *t;
	struct poller_ctx a = { .ret = POLLER_BUSY }, b = { .ret = POLLER_IDLE };
	struct poller *pa, *pb;

	setup();
	t = thread_create("pollers");
	CU_ASSERT_FATAL(t != NULL);
	/* No current thread: refused. */
	CU_ASSERT(poller_register(counting_poller, &a, 0, "none") == NULL);
	thread_set_current(t);
	CU_ASSERT(!thread_has_active_pollers(t));
	pa = poller_register(counting_poller, &a, 0, "a");
	pb = poller_register(counting_poller, &b, 0, "b");
	CU_ASSERT_FATAL(pa != NULL && pb != NULL);
	CU_ASSERT(thread_has_active_pollers(t));
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(a.calls, 2);
	UT_ASSERT_EQ(b.calls, 2);
	poller_unregister(&pa);
	CU_ASSERT(pa == NULL);
	poller_unregister(&pa);
	/* Only the idle poller is left: the iteration is idle. */
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);
	UT_ASSERT_EQ(a.calls, 2);
	UT_ASSERT_EQ(b.calls, 3);
	poller_unregister(&pb);
	CU_ASSERT(!thread_has_active_pollers(t));
	thread_set_current(NULL);
	thread_destroy(t);
	teardown();
}

static void
test_poller_unregister_inside(void)
{
	struct thread *t;
	struct poller_ctx self = { .unregister_at = 3, .ret = POLLER_BUSY };
	struct poller_ctx killer = { .ret = POLLER_BUSY }, victim = { .ret = POLLER_BUSY };
	struct poller_ctx early_victim = { .ret = POLLER_BUSY }, killer2 = { .ret = POLLER_BUSY };
	struct poller *pvictim, *pearly;
	int i;

	setup();
	t = thread_create("unreg");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	self.self = poller_register(counting_poller, &self, 0, "self");
	/* killer runs before victim and removes it in the same iteration. */
	CU_ASSERT_FATAL(poller_register(counting_poller, &killer, 0, "killer") != NULL);
	pvictim = poller_register(counting_poller, &victim, 0, "victim");
	killer.victim = &pvictim;
	/* killer2 removes a poller that already ran in this iteration. */
	pearly = poller_register(counting_poller, &early_victim, 0, "early");
	CU_ASSERT_FATAL(poller_register(counting_poller, &killer2, 0, "killer2") != NULL);
	killer2.victim = &pearly;
	for (i = 0; i < 5; i++) {
		thread_poll(t, 0, 0);
	}
	UT_ASSERT_EQ(self.calls, 3);
	CU_ASSERT(self.self == NULL);
	UT_ASSERT_EQ(victim.calls, 0);
	CU_ASSERT(pvictim == NULL);
	/* It ran once, before killer2 removed it. */
	UT_ASSERT_EQ(early_victim.calls, 1);
	CU_ASSERT(pearly == NULL);
	UT_ASSERT_EQ(killer.calls, 5);

	/* A timed poller unregistering itself. */
	{
		struct poller_ctx timed = { .unregister_at = 2, .ret = POLLER_BUSY };
		uint64_t deadline = now_ms() + 5000;

		timed.self = poller_register(counting_poller, &timed, 100, "timed-self");
		CU_ASSERT_FATAL(timed.self != NULL);
		while (timed.self != NULL && now_ms() < deadline) {
			thread_poll(t, 0, 0);
		}
		CU_ASSERT(timed.self == NULL);
		sleep_us(1000);
		thread_poll(t, 0, 0);
		UT_ASSERT_EQ(timed.calls, 2);
		CU_ASSERT(TAILQ_EMPTY(&t->timed_pollers));
	}
	thread_set_current(NULL);
	/* killer and killer2 are left on purpose: destroy releases them with a warning. */
	thread_destroy(t);
	teardown();
}

static void
test_poller_timed(void)
{
	struct thread *t;
	struct poller_ctx fast = { .ret = POLLER_BUSY }, slow = { .ret = POLLER_BUSY };
	struct poller *pfast, *pslow;
	uint64_t start, elapsed;

	setup();
	t = thread_create("timed");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	pfast = poller_register(counting_poller, &fast, 2000, "fast");
	pslow = poller_register(counting_poller, &slow, 1000000, "slow");
	CU_ASSERT_FATAL(pfast != NULL && pslow != NULL);
	CU_ASSERT(!thread_has_active_pollers(t));
	/* Not due yet. */
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);
	UT_ASSERT_EQ(fast.calls, 0);
	/* Bounded by time rather than a fixed window: a loaded machine may deschedule us. */
	start = now_ms();
	while (fast.calls < 10 && now_ms() - start < 5000) {
		thread_poll(t, 0, 0);
	}
	elapsed = now_ms() - start;
	UT_ASSERT_EQ(fast.calls, 10);
	/* Never more often than the period: 10 runs take at least 20 ms. */
	CU_ASSERT(elapsed >= 19);
	UT_ASSERT_EQ(slow.calls, 0);
	/* An explicit `now` far in the future makes both due, each once per poll. */
	UT_ASSERT_EQ(thread_poll(t, 0, ticks_get() + us_to_ticks(2000000)), 2);
	UT_ASSERT_EQ(slow.calls, 1);
	poller_unregister(&pfast);
	poller_unregister(&pslow);
	CU_ASSERT(TAILQ_EMPTY(&t->timed_pollers));
	thread_set_current(NULL);
	thread_destroy(t);
	teardown();
}

struct fd_ctx {
	int fd;
	uint32_t calls;
	uint32_t events;
	bool drain;
	bool unregister;
	struct fd_event *ev;
	struct thread *thread;
	bool wrong_thread;
};

static int
fd_cb(void *arg, uint32_t events)
{
	struct fd_ctx *ctx = arg;
	uint64_t v;

	ctx->calls++;
	ctx->events = events;
	if (thread_get_current() != ctx->thread) {
		ctx->wrong_thread = true;
	}
	if (ctx->drain) {
		CU_ASSERT(read(ctx->fd, &v, sizeof(v)) == sizeof(v));
	}
	if (ctx->unregister) {
		thread_fd_unregister(&ctx->ev);
	}
	return 0;
}

static void
efd_signal(int fd)
{
	uint64_t one = 1;

	CU_ASSERT(write(fd, &one, sizeof(one)) == sizeof(one));
}

static void
test_fd_events(void)
{
	struct thread *t;
	struct fd_ctx ctx = { .drain = true };
	struct poller_ctx busy = { .ret = POLLER_BUSY };
	struct poller *p;
	int i;

	setup();
	t = thread_create("fds");
	CU_ASSERT_FATAL(t != NULL);
	ctx.fd = eventfd(0, EFD_NONBLOCK);
	ctx.thread = t;
	CU_ASSERT_FATAL(ctx.fd >= 0);
	CU_ASSERT(thread_fd_register(ctx.fd, THREAD_FD_IN, fd_cb, &ctx, "efd") == NULL);
	thread_set_current(t);
	ctx.ev = thread_fd_register(ctx.fd, THREAD_FD_IN, fd_cb, &ctx, "efd");
	CU_ASSERT_FATAL(ctx.ev != NULL);
	/* Registering the same fd twice is refused by epoll. */
	CU_ASSERT(thread_fd_register(ctx.fd, THREAD_FD_IN, fd_cb, &ctx, "dup") == NULL);

	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);
	UT_ASSERT_EQ(ctx.calls, 0);
	efd_signal(ctx.fd);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(ctx.calls, 1);
	CU_ASSERT(ctx.events & THREAD_FD_IN);
	CU_ASSERT(!ctx.wrong_thread);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);

	/* A busy thread still sees the fd within 16 iterations. */
	p = poller_register(counting_poller, &busy, 0, "busy");
	efd_signal(ctx.fd);
	for (i = 0; i < 16 && ctx.calls == 1; i++) {
		thread_poll(t, 0, 0);
	}
	UT_ASSERT_EQ(ctx.calls, 2);
	poller_unregister(&p);

	/* Modify to OUT: an eventfd is always writable. */
	ctx.drain = false;
	UT_ASSERT_EQ(thread_fd_modify(ctx.ev, THREAD_FD_OUT), 0);
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(ctx.calls, 3);
	CU_ASSERT(ctx.events & THREAD_FD_OUT);

	/* Unregistered from its own callback: no further calls, no crash. */
	ctx.unregister = true;
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(ctx.calls, 4);
	CU_ASSERT(ctx.ev == NULL);
	thread_poll(t, 0, 0);
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(ctx.calls, 4);
	UT_ASSERT_EQ(t->num_fds, 0);
	CU_ASSERT(TAILQ_EMPTY(&t->fd_events));
	thread_fd_unregister(&ctx.ev);

	thread_set_current(NULL);
	close(ctx.fd);
	thread_destroy(t);
	teardown();
}

/* Two fds ready in one batch; the first callback unregisters the second. */
struct fd_pair {
	struct fd_ctx a, b;
};

static int
fd_kill_other_cb(void *arg, uint32_t events)
{
	struct fd_pair *pair = arg;

	pair->a.calls++;
	thread_fd_unregister(&pair->b.ev);
	thread_fd_unregister(&pair->a.ev);
	return 0;
}

static void
test_fd_unregister_other(void)
{
	struct thread *t;
	struct fd_pair pair = { 0 };

	setup();
	t = thread_create("fds2");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	pair.a.fd = eventfd(1, EFD_NONBLOCK);
	pair.b.fd = eventfd(1, EFD_NONBLOCK);
	pair.b.thread = t;
	pair.a.ev = thread_fd_register(pair.a.fd, THREAD_FD_IN, fd_kill_other_cb, &pair, "a");
	pair.b.ev = thread_fd_register(pair.b.fd, THREAD_FD_IN, fd_cb, &pair.b, "b");
	CU_ASSERT_FATAL(pair.a.ev != NULL && pair.b.ev != NULL);
	/* Both are ready; whichever runs first, the other must be handled safely. */
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(pair.a.calls, 1);
	CU_ASSERT(pair.b.calls <= 1);
	CU_ASSERT(pair.a.ev == NULL);
	CU_ASSERT(pair.b.ev == NULL);
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(pair.a.calls, 1);
	CU_ASSERT(pair.b.calls <= 1);
	UT_ASSERT_EQ(t->num_fds, 0);
	thread_set_current(NULL);
	close(pair.a.fd);
	close(pair.b.fd);
	thread_destroy(t);
	teardown();
}

struct delayed {
	pthread_t tid;
	struct thread *target;
	int fd;
	uint64_t delay_us;
	uint32_t count;
};

static void *
delayed_send_main(void *arg)
{
	struct delayed *d = arg;

	sleep_us(d->delay_us);
	if (d->fd >= 0) {
		efd_signal(d->fd);
	} else {
		CU_ASSERT(thread_send_msg(d->target, count_msg, &d->count) == 0);
	}
	return NULL;
}

static void
test_wait_msg(void)
{
	struct thread *t;
	struct delayed d = { .fd = -1, .delay_us = 30000 };
	uint64_t start, elapsed;

	setup();
	t = thread_create("wait");
	CU_ASSERT_FATAL(t != NULL);
	d.target = t;
	/* Already queued: returns at once. */
	CU_ASSERT(thread_send_msg(t, count_msg, &d.count) == 0);
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 2000000), 0);
	CU_ASSERT(now_ms() - start < 100);
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(d.count, 1);

	/* Woken by a message from another OS thread, long before the timeout. */
	CU_ASSERT_FATAL(pthread_create(&d.tid, NULL, delayed_send_main, &d) == 0);
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 5000000), 0);
	elapsed = now_ms() - start;
	pthread_join(d.tid, NULL);
	CU_ASSERT(elapsed >= 20);
	CU_ASSERT(elapsed < 2000);
	UT_ASSERT_EQ(t->sleeping, 0);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(d.count, 2);
	thread_destroy(t);
	teardown();
}

static void
test_wait_fd(void)
{
	struct thread *t;
	struct fd_ctx ctx = { .drain = true };
	struct delayed d = { .delay_us = 30000 };
	uint64_t start, elapsed;

	setup();
	t = thread_create("waitfd");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	ctx.fd = eventfd(0, EFD_NONBLOCK);
	ctx.thread = t;
	ctx.ev = thread_fd_register(ctx.fd, THREAD_FD_IN, fd_cb, &ctx, "efd");
	CU_ASSERT_FATAL(ctx.ev != NULL);
	d.fd = ctx.fd;
	CU_ASSERT_FATAL(pthread_create(&d.tid, NULL, delayed_send_main, &d) == 0);
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 5000000), 0);
	elapsed = now_ms() - start;
	pthread_join(d.tid, NULL);
	CU_ASSERT(elapsed >= 20);
	CU_ASSERT(elapsed < 2000);
	/* The wait only records the event; the next poll runs the callback. */
	UT_ASSERT_EQ(ctx.calls, 0);
	UT_ASSERT_EQ(t->num_pending, 1);
	/* A pending event makes the next wait return at once. */
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 2000000), 0);
	CU_ASSERT(now_ms() - start < 100);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(ctx.calls, 1);
	UT_ASSERT_EQ(t->num_pending, 0);

	/* Unregistering between wait and poll drops the recorded event. */
	efd_signal(ctx.fd);
	UT_ASSERT_EQ(thread_wait(t, 1000000), 0);
	UT_ASSERT_EQ(t->num_pending, 1);
	thread_fd_unregister(&ctx.ev);
	UT_ASSERT_EQ(t->num_pending, 0);
	thread_poll(t, 0, 0);
	UT_ASSERT_EQ(ctx.calls, 1);

	thread_set_current(NULL);
	close(ctx.fd);
	thread_destroy(t);
	teardown();
}

static void
test_wait_timer_and_timeout(void)
{
	struct thread *t;
	struct poller_ctx timed = { .ret = POLLER_BUSY };
	struct poller *p;
	uint64_t start, elapsed;

	setup();
	t = thread_create("waittimer");
	CU_ASSERT_FATAL(t != NULL);

	/* Nothing to wake it: returns on the timeout. */
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 30000), 0);
	elapsed = now_ms() - start;
	CU_ASSERT(elapsed >= 29);
	CU_ASSERT(elapsed < 1000);

	/* A timed poller bounds an unlimited wait. */
	thread_set_current(t);
	p = poller_register(counting_poller, &timed, 100000, "timer");
	CU_ASSERT_FATAL(p != NULL);
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 0), 0);
	elapsed = now_ms() - start;
	CU_ASSERT(elapsed >= 95);
	CU_ASSERT(elapsed < 1000);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 1);
	UT_ASSERT_EQ(timed.calls, 1);

	/* The shorter of timer and timeout wins. */
	start = now_ms();
	UT_ASSERT_EQ(thread_wait(t, 5000), 0);
	elapsed = now_ms() - start;
	CU_ASSERT(elapsed < 80);
	UT_ASSERT_EQ(thread_poll(t, 0, 0), 0);
	poller_unregister(&p);
	thread_set_current(NULL);
	thread_destroy(t);
	teardown();
}

/* io_channels */

static int g_dev_a, g_dev_b;
static uint32_t g_creates, g_destroys, g_unregistered;
static struct thread *g_unregister_thread;
static int g_create_rc;

struct chan_ctx {
	uint32_t magic;
	struct thread *thread;
	uint32_t visits;
};

static int
chan_create(void *dev, void *buf)
{
	struct chan_ctx *ctx = buf;

	if (g_create_rc != 0) {
		return g_create_rc;
	}
	CU_ASSERT(ctx->magic == 0);
	ctx->magic = 0xfeed;
	ctx->thread = thread_get_current();
	g_creates++;
	return 0;
}

static void
chan_destroy(void *dev, void *buf)
{
	struct chan_ctx *ctx = buf;

	UT_ASSERT_EQ(ctx->magic, 0xfeed);
	CU_ASSERT(ctx->thread == thread_get_current());
	g_destroys++;
}

static void
dev_unregistered(void *dev)
{
	g_unregistered++;
	g_unregister_thread = thread_get_current();
}

static void
reset_chan_counters(void)
{
	g_creates = 0;
	g_destroys = 0;
	g_unregistered = 0;
	g_unregister_thread = NULL;
	g_create_rc = 0;
}

static void
test_io_channel_refcount(void)
{
	struct thread *threads[1];
	struct io_channel *ch, *ch2;
	struct chan_ctx *ctx;

	setup();
	reset_chan_counters();
	threads[0] = thread_create("chan");
	CU_ASSERT_FATAL(threads[0] != NULL);
	thread_set_current(threads[0]);
	io_device_register(&g_dev_a, chan_create, chan_destroy, sizeof(struct chan_ctx), "dev_a");
	/* A second registration of the same pointer is ignored. */
	io_device_register(&g_dev_a, chan_create, chan_destroy, 8, "dev_a_again");
	CU_ASSERT(io_channel_get(&g_dev_b) == NULL);

	ch = io_channel_get(&g_dev_a);
	CU_ASSERT_FATAL(ch != NULL);
	UT_ASSERT_EQ(g_creates, 1);
	ctx = io_channel_get_ctx(ch);
	UT_ASSERT_EQ(ctx->magic, 0xfeed);
	UT_ASSERT_EQ((uintptr_t)ctx % GGA_CACHE_LINE, 0);
	CU_ASSERT(io_channel_from_ctx(ctx) == ch);
	CU_ASSERT(io_channel_get_thread(ch) == threads[0]);
	CU_ASSERT(io_channel_get_io_device(ch) == &g_dev_a);
	ch2 = io_channel_get(&g_dev_a);
	CU_ASSERT(ch2 == ch);
	UT_ASSERT_EQ(g_creates, 1);

	io_channel_put(ch2);
	io_channel_put(ch);
	/* Destruction is deferred to a message. */
	UT_ASSERT_EQ(g_destroys, 0);
	/* Got again before the message ran: the same channel survives. */
	ch2 = io_channel_get(&g_dev_a);
	CU_ASSERT(ch2 == ch);
	poll_until_idle(threads, 1);
	UT_ASSERT_EQ(g_destroys, 0);
	UT_ASSERT_EQ(g_creates, 1);
	/* Put, get, put again before the message: one destruction, no double free. */
	io_channel_put(ch2);
	ch2 = io_channel_get(&g_dev_a);
	io_channel_put(ch2);
	UT_ASSERT_EQ(g_destroys, 0);
	poll_until_idle(threads, 1);
	UT_ASSERT_EQ(g_destroys, 1);

	/* create_cb failure gives NULL and leaves nothing behind. */
	g_create_rc = -EIO;
	CU_ASSERT(io_channel_get(&g_dev_a) == NULL);
	g_create_rc = 0;
	CU_ASSERT(TAILQ_EMPTY(&threads[0]->channels));

	io_device_unregister(&g_dev_a, dev_unregistered);
	/* The callback never runs inside the call. */
	UT_ASSERT_EQ(g_unregistered, 0);
	poll_until_idle(threads, 1);
	UT_ASSERT_EQ(g_unregistered, 1);
	CU_ASSERT(g_unregister_thread == threads[0]);
	/* The pointer can be registered again. */
	io_device_register(&g_dev_a, NULL, NULL, 0, NULL);
	ch = io_channel_get(&g_dev_a);
	CU_ASSERT_FATAL(ch != NULL);
	io_channel_put(ch);
	io_device_unregister(&g_dev_a, NULL);
	poll_until_idle(threads, 1);

	thread_set_current(NULL);
	thread_destroy(threads[0]);
	teardown();
}

static void
test_io_device_unregister_waits(void)
{
	struct thread *threads[3];
	struct io_channel *ch[3];
	int i;

	setup();
	reset_chan_counters();
	for (i = 0; i < 3; i++) {
		threads[i] = thread_create("unregister");
		CU_ASSERT_FATAL(threads[i] != NULL);
	}
	io_device_register(&g_dev_b, chan_create, chan_destroy, sizeof(struct chan_ctx), "dev_b");
	for (i = 1; i < 3; i++) {
		thread_set_current(threads[i]);
		ch[i] = io_channel_get(&g_dev_b);
		CU_ASSERT_FATAL(ch[i] != NULL);
	}
	UT_ASSERT_EQ(g_creates, 2);

	/* Unregistered from thread 0 while threads 1 and 2 hold channels. */
	thread_set_current(threads[0]);
	io_device_unregister(&g_dev_b, dev_unregistered);
	poll_until_idle(threads, 3);
	UT_ASSERT_EQ(g_unregistered, 0);
	/* New gets fail at once, also on a thread that has a channel. */
	thread_set_current(threads[1]);
	CU_ASSERT(io_channel_get(&g_dev_b) == NULL);
	io_channel_put(ch[1]);
	poll_until_idle(threads, 3);
	UT_ASSERT_EQ(g_destroys, 1);
	UT_ASSERT_EQ(g_unregistered, 0);
	thread_set_current(threads[2]);
	io_channel_put(ch[2]);
	poll_until_idle(threads, 3);
	UT_ASSERT_EQ(g_destroys, 2);
	UT_ASSERT_EQ(g_unregistered, 1);
	CU_ASSERT(g_unregister_thread == threads[0]);

	thread_set_current(NULL);
	for (i = 0; i < 3; i++) {
		thread_destroy(threads[i]);
	}
	teardown();
}

struct walk {
	uint32_t visited[8];
	uint32_t nvisited;
	bool wrong_thread;
	bool wrong_ctx;
	int stop_at; /* thread id whose visit stops the walk, -1: none */
	int cpl_status;
	uint32_t cpl_calls;
	struct thread *cpl_thread;
	struct thread *defer_thread; /* thread whose visit continues later */
	struct io_channel_iter *deferred;
};

static void
walk_fn(struct io_channel_iter *i)
{
	struct walk *w = io_channel_iter_get_ctx(i);
	struct io_channel *ch = io_channel_iter_get_channel(i);
	struct chan_ctx *ctx = io_channel_get_ctx(ch);
	struct thread *t = thread_get_current();

	if (io_channel_get_thread(ch) != t || ctx->thread != t) {
		w->wrong_thread = true;
	}
	if (io_channel_iter_get_io_device(i) != &g_dev_a) {
		w->wrong_ctx = true;
	}
	ctx->visits++;
	w->visited[w->nvisited++] = thread_get_id(t);
	if (t == w->defer_thread) {
		/* Continued later, from a poller-free message round. */
		w->deferred = i;
		return;
	}
	io_channel_iter_continue(i, (int)thread_get_id(t) == w->stop_at ? -EAGAIN : 0);
}

static void
walk_cpl(struct io_channel_iter *i, int status)
{
	struct walk *w = io_channel_iter_get_ctx(i);

	w->cpl_calls++;
	w->cpl_status = status;
	w->cpl_thread = thread_get_current();
}

static void
test_io_channel_for_each(void)
{
	struct thread *threads[4];
	struct io_channel *ch[4] = { 0 };
	struct walk w;
	int i;

	setup();
	reset_chan_counters();
	for (i = 0; i < 4; i++) {
		threads[i] = thread_create("walk");
		CU_ASSERT_FATAL(threads[i] != NULL);
	}
	io_device_register(&g_dev_a, chan_create, chan_destroy, sizeof(struct chan_ctx), "dev_a");
	/* Channels on threads 0, 2 and 3; thread 1 has none. */
	for (i = 0; i < 4; i++) {
		if (i == 1) {
			continue;
		}
		thread_set_current(threads[i]);
		ch[i] = io_channel_get(&g_dev_a);
		CU_ASSERT_FATAL(ch[i] != NULL);
	}

	memset(&w, 0, sizeof(w));
	w.stop_at = -1;
	w.defer_thread = threads[2];
	thread_set_current(threads[1]);
	io_device_for_each_channel(&g_dev_a, walk_fn, &w, walk_cpl);
	UT_ASSERT_EQ(w.nvisited, 0);
	poll_until_idle(threads, 4);
	/* Stopped at thread 2 until it continues. */
	UT_ASSERT_EQ(w.nvisited, 2);
	UT_ASSERT_EQ(w.cpl_calls, 0);
	CU_ASSERT_FATAL(w.deferred != NULL);
	thread_set_current(threads[2]);
	io_channel_iter_continue(w.deferred, 0);
	poll_until_idle(threads, 4);
	UT_ASSERT_EQ(w.nvisited, 3);
	UT_ASSERT_EQ(w.visited[0], 0);
	UT_ASSERT_EQ(w.visited[1], 2);
	UT_ASSERT_EQ(w.visited[2], 3);
	UT_ASSERT_EQ(w.cpl_calls, 1);
	UT_ASSERT_EQ(w.cpl_status, 0);
	CU_ASSERT(w.cpl_thread == threads[1]);
	CU_ASSERT(!w.wrong_thread);
	CU_ASSERT(!w.wrong_ctx);

	/* A non-zero status stops the walk and reaches cpl. */
	memset(&w, 0, sizeof(w));
	w.stop_at = 2;
	thread_set_current(threads[0]);
	io_device_for_each_channel(&g_dev_a, walk_fn, &w, walk_cpl);
	poll_until_idle(threads, 4);
	UT_ASSERT_EQ(w.nvisited, 2);
	UT_ASSERT_EQ(w.cpl_calls, 1);
	UT_ASSERT_EQ(w.cpl_status, -EAGAIN);
	CU_ASSERT(w.cpl_thread == threads[0]);

	/* A walk keeps the device alive: unregister completes after it. */
	memset(&w, 0, sizeof(w));
	w.stop_at = -1;
	w.defer_thread = threads[3];
	thread_set_current(threads[0]);
	io_device_for_each_channel(&g_dev_a, walk_fn, &w, walk_cpl);
	poll_until_idle(threads, 4);
	CU_ASSERT_FATAL(w.deferred != NULL);
	for (i = 0; i < 4; i++) {
		if (ch[i] != NULL) {
			thread_set_current(threads[i]);
			io_channel_put(ch[i]);
		}
	}
	thread_set_current(threads[0]);
	io_device_unregister(&g_dev_a, dev_unregistered);
	poll_until_idle(threads, 4);
	UT_ASSERT_EQ(g_destroys, 3);
	UT_ASSERT_EQ(g_unregistered, 0);
	thread_set_current(threads[3]);
	io_channel_iter_continue(w.deferred, 0);
	poll_until_idle(threads, 4);
	UT_ASSERT_EQ(w.cpl_calls, 1);
	UT_ASSERT_EQ(g_unregistered, 1);

	/* A walk over an unknown device completes with -ENODEV. */
	memset(&w, 0, sizeof(w));
	thread_set_current(threads[0]);
	io_device_for_each_channel(&g_dev_b, walk_fn, &w, walk_cpl);
	poll_until_idle(threads, 4);
	UT_ASSERT_EQ(w.cpl_calls, 1);
	UT_ASSERT_EQ(w.cpl_status, -ENODEV);
	UT_ASSERT_EQ(w.nvisited, 0);

	thread_set_current(NULL);
	for (i = 0; i < 4; i++) {
		thread_destroy(threads[i]);
	}
	teardown();
}

struct fe_ctx {
	uint32_t ids[8];
	uint32_t n;
	uint32_t cpl_calls;
	struct thread *cpl_thread;
};

static void
fe_fn(void *arg)
{
	struct fe_ctx *c = arg;

	c->ids[c->n++] = thread_get_id(thread_get_current());
}

static void
fe_cpl(void *arg)
{
	struct fe_ctx *c = arg;

	c->cpl_calls++;
	c->cpl_thread = thread_get_current();
}

static void
test_thread_for_each(void)
{
	struct thread *threads[3];
	struct fe_ctx c = { 0 };
	int i;

	setup();
	for (i = 0; i < 3; i++) {
		threads[i] = thread_create("each");
		CU_ASSERT_FATAL(threads[i] != NULL);
	}
	thread_set_current(threads[2]);
	UT_ASSERT_EQ(thread_for_each(fe_fn, &c, fe_cpl), 0);
	UT_ASSERT_EQ(c.n, 0);
	poll_until_idle(threads, 3);
	UT_ASSERT_EQ(c.n, 3);
	UT_ASSERT_EQ(c.ids[0], 0);
	UT_ASSERT_EQ(c.ids[1], 1);
	UT_ASSERT_EQ(c.ids[2], 2);
	UT_ASSERT_EQ(c.cpl_calls, 1);
	CU_ASSERT(c.cpl_thread == threads[2]);
	thread_set_current(NULL);
	for (i = 0; i < 3; i++) {
		thread_destroy(threads[i]);
	}
	teardown();
}

/* Destroy releases leftovers: channels get destroy_cb, devices finish unregistering. */
static void
test_destroy_releases(void)
{
	struct thread *t;
	struct io_channel *ch;
	int fd;

	setup();
	reset_chan_counters();
	t = thread_create("leftovers");
	CU_ASSERT_FATAL(t != NULL);
	thread_set_current(t);
	io_device_register(&g_dev_b, chan_create, chan_destroy, sizeof(struct chan_ctx), "dev_b");
	ch = io_channel_get(&g_dev_b);
	CU_ASSERT_FATAL(ch != NULL);
	io_device_unregister(&g_dev_b, dev_unregistered);
	fd = eventfd(0, 0);
	CU_ASSERT(thread_fd_register(fd, THREAD_FD_IN, fd_cb, NULL, "leftover") != NULL);
	CU_ASSERT(poller_register(counting_poller, NULL, 0, "leftover") != NULL);
	thread_set_current(NULL);
	thread_destroy(t);
	UT_ASSERT_EQ(g_destroys, 1);
	UT_ASSERT_EQ(g_unregistered, 1);
	close(fd);
	teardown();
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_layout),
		UT_TEST(test_create_destroy),
		UT_TEST(test_msg_order),
		UT_TEST(test_msg_self_not_inline),
		UT_TEST(test_msg_queue_full),
		UT_TEST(test_msg_from_pthreads),
		UT_TEST(test_poller_untimed),
		UT_TEST(test_poller_unregister_inside),
		UT_TEST(test_poller_timed),
		UT_TEST(test_fd_events),
		UT_TEST(test_fd_unregister_other),
		UT_TEST(test_wait_msg),
		UT_TEST(test_wait_fd),
		UT_TEST(test_wait_timer_and_timeout),
		UT_TEST(test_io_channel_refcount),
		UT_TEST(test_io_device_unregister_waits),
		UT_TEST(test_io_channel_for_each),
		UT_TEST(test_thread_for_each),
		UT_TEST(test_destroy_releases),
	};

	return ut_run("thread", tests, ARRAY_SIZE(tests), NULL, NULL);
}
