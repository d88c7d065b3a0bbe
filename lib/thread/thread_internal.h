/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by thread.c, io_channel.c and reactor.c.
 */
#ifndef GGA_THREAD_INTERNAL_H
#define GGA_THREAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/queue.h>

#include "gga/thread.h"
#include "gga/util.h"

/*
 * Message ring: a bounded multi-producer single-consumer ring of 2^16 slots.
 * Each slot's `seq` says whose turn it is: lap * RING_SIZE means free for a
 * producer at a position of that lap, lap * RING_SIZE + 1 means it holds a
 * message of that lap. Starting from zero lets the ring come from calloc()
 * without touching its pages until they are used.
 */
#define THREAD_RING_BITS 16
#define THREAD_RING_SIZE (1u << THREAD_RING_BITS)
#define THREAD_RING_MASK (THREAD_RING_SIZE - 1)

/* Messages run by one thread_poll() call when the caller passes 0. */
#define THREAD_MSG_BATCH 64

/* Ready fd events taken from the epoll set at a time. */
#define THREAD_MAX_EVENTS 32

#define THREAD_NAME_LEN 64

struct msg_slot {
	uint64_t seq;
	msg_fn fn;
	void *ctx;
	uint64_t pad;
};

enum poller_state {
	POLLER_STATE_WAITING,
	POLLER_STATE_RUNNING,
	POLLER_STATE_UNREGISTERED,
};

struct poller {
	TAILQ_ENTRY(poller) link;
	struct thread *thread;
	poller_fn fn;
	void *ctx;
	uint64_t period_ticks; /* 0: untimed */
	uint64_t next_run;     /* timed pollers: tick when due */
	enum poller_state state;
	char name[THREAD_NAME_LEN];
};

struct fd_event {
	TAILQ_ENTRY(fd_event) link;
	struct thread *thread;
	int fd;
	uint32_t events;
	fd_event_fn fn;
	void *ctx;
	bool unregistered;
	char name[THREAD_NAME_LEN];
};

struct io_device;

struct io_channel {
	struct thread *thread;
	struct io_device *dev;
	uint32_t ref;
	bool destroy_pending;
	TAILQ_ENTRY(io_channel) link;
	/* The per-thread context handed to the device's callbacks. */
	uint8_t ctx[] __attribute__((aligned(GGA_CACHE_LINE)));
};

TAILQ_HEAD(poller_list, poller);
TAILQ_HEAD(fd_event_list, fd_event);
TAILQ_HEAD(io_channel_list, io_channel);

enum thread_running_kind {
	THREAD_RUNNING_NONE,
	THREAD_RUNNING_MSG,
	THREAD_RUNNING_POLLER,
	THREAD_RUNNING_FD_EVENT,
};

struct thread {
	/*
	 * Producer side: every sender reads these and CASes msg_tail. Kept on
	 * their own cache line so senders do not steal the consumer's line.
	 */
	struct {
		uint64_t msg_tail;
		struct msg_slot *ring;
		/* 1 while the owner is (about to be) blocked in epoll_wait. */
		int sleeping;
		int wake_fd;
	} __attribute__((aligned(GGA_CACHE_LINE)));

	/* Consumer side: touched only by the OS thread running this thread. */
	uint64_t msg_head __attribute__((aligned(GGA_CACHE_LINE)));
	uint32_t in_poll;
	uint32_t iteration;
	uint32_t num_fds;
	uint32_t dead_pollers;
	uint32_t dead_fds;
	uint32_t num_pending;
	bool exiting;
	struct poller_list untimed_pollers;
	struct poller_list timed_pollers;
	struct fd_event_list fd_events;
	struct io_channel_list channels;
	/* Ready events caught by thread_wait(), dispatched by the next thread_poll(). */
	struct epoll_event pending[THREAD_MAX_EVENTS];
	int epoll_fd;

	uint32_t id;
	char name[THREAD_NAME_LEN];
	TAILQ_ENTRY(thread) link;

	/*
	 * What the thread runs now, for the stall watchdog (another OS thread
	 * reads it with thread_describe_running()). A copy, not a pointer: the
	 * poller may be freed while the watchdog reads. running_seq is odd
	 * while the owner writes (a sequence lock).
	 */
	struct {
		uint32_t running_seq;
		enum thread_running_kind running_kind;
		void *running_fn;
		char running_name[THREAD_NAME_LEN];
	} __attribute__((aligned(GGA_CACHE_LINE)));
};

/* The thread the calling OS thread runs (thread_get_current()). */
extern __thread struct thread *tls_thread;

/*
 * Describe what the thread runs now ("poller NAME", "fd event NAME", "message
 * 0xADDR", "its loop") into buf. Any OS thread; for the stall watchdog.
 */
void thread_describe_running(struct thread *thread, char *buf, size_t len);

/* Write the thread's eventfd so a blocked thread_wait() returns. Any OS thread. */
void thread_wakeup(struct thread *thread);

/*
 * The live thread with the smallest id >= `id`, or NULL. Used to walk threads
 * one after another without holding a lock across the walk.
 */
struct thread *thread_get_next_from_id(uint32_t id);

/* Release the channels left on a thread being destroyed (io_channel.c). */
void io_channel_release_thread(struct thread *thread);

/* Free io_devices left registered at thread_lib_fini() (io_channel.c). */
void io_device_release_all(void);

#endif /* GGA_THREAD_INTERNAL_H */
