/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Threads, messages, pollers, fd events and io_channels.
 *
 * A `struct thread` is a lightweight execution context: a message queue, a
 * set of pollers, a set of fd event sources, and the io_channels created on
 * it. Exactly one OS thread runs it at a time, by calling thread_poll() in a
 * loop. In gga_tgt and bdevperf each reactor (reactor.h) owns one thread and
 * is pinned to one core; unit tests create threads and poll them by hand
 * from one OS thread, which makes multi-thread behaviour deterministic.
 *
 * No locks on the I/O path: per-thread state lives in io_channels, and the
 * only cross-thread operation is thread_send_msg().
 *
 * Event-driven idle: everything that can bring work to a thread from outside
 * it is an fd (sockets, eventfds, RDMA completion channels) registered with
 * thread_fd_register(), a timer (timed pollers), or a message. A thread that
 * has seen only idle iterations for a short spell may therefore block in
 * thread_wait() on its epoll set and wake within microseconds when one of
 * those fires. A poller that polls a source with no fd (say, a completion
 * queue that is armed by an earlier submission on this thread) must report
 * POLLER_BUSY while it has work outstanding, or the thread may sleep through it.
 */
#ifndef GGA_THREAD_H
#define GGA_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct thread;
struct poller;
struct fd_event;
struct io_channel;
struct io_channel_iter;

typedef void (*msg_fn)(void *ctx);

/* Poller return values: did the call find work? */
#define POLLER_IDLE 0
#define POLLER_BUSY 1
typedef int (*poller_fn)(void *ctx);

/* fd event mask bits (the epoll ones) and callback. */
#define THREAD_FD_IN  0x001u /* EPOLLIN */
#define THREAD_FD_OUT 0x004u /* EPOLLOUT */
#define THREAD_FD_ERR 0x008u /* EPOLLERR */
#define THREAD_FD_HUP 0x010u /* EPOLLHUP */
typedef int (*fd_event_fn)(void *ctx, uint32_t events);

/*
 * Library-wide set-up and tear-down. thread_lib_init() must precede every
 * other call here; thread_lib_fini() requires every thread destroyed.
 * Returns 0 or -ENOMEM.
 */
int thread_lib_init(void);
void thread_lib_fini(void);

/*
 * Create a thread. `name` is copied. The first thread created is the "app
 * thread" (thread_get_app()): RPC, configuration and bdev registration run
 * there. Returns NULL on allocation failure (errno set).
 */
struct thread *thread_create(const char *name);

/*
 * Destroy a thread. Its message queue is drained first; pollers, fd events or
 * io_channels still registered are reported with a warning and released.
 * Must not be called from the thread itself.
 */
void thread_destroy(struct thread *thread);

/* Make `thread` the calling OS thread's current thread (NULL to clear). */
void thread_set_current(struct thread *thread);
struct thread *thread_get_current(void);
struct thread *thread_get_app(void);

const char *thread_get_name(const struct thread *thread);
/* Ids are 0, 1, 2, ... in creation order and are never reused while alive. */
uint32_t thread_get_id(const struct thread *thread);
struct thread *thread_get_by_id(uint32_t id);
/* Number of live threads. */
uint32_t thread_count(void);

/*
 * Run one iteration of `thread` on the calling OS thread: up to `max_msgs`
 * queued messages (0 = a default batch), every untimed poller, every due
 * timed poller, and ready fd events. `now` is ticks_get() or 0 to read it.
 * Returns > 0 if any of them did work, 0 if the iteration was idle.
 */
int thread_poll(struct thread *thread, uint32_t max_msgs, uint64_t now);

/*
 * Block the calling OS thread until `thread` has a message, a ready fd, or a
 * timed poller due, or `timeout_us` passes (0 = no limit beyond the next
 * timer). Returns immediately if a message is already queued. Returns 0, or a
 * negative errno from epoll_wait other than EINTR.
 */
int thread_wait(struct thread *thread, uint64_t timeout_us);

/* True if the thread has untimed pollers (it cannot sleep while they report busy). */
bool thread_has_active_pollers(const struct thread *thread);

/*
 * Queue fn(ctx) to run on `thread`. Callable from any OS thread. The function
 * never runs inside this call, even when `thread` is the current thread.
 * Wakes the thread if it sleeps. Returns 0, or -ENOMEM if the queue is
 * full (fn is then not called).
 */
int thread_send_msg(struct thread *thread, msg_fn fn, void *ctx);

/*
 * Register a poller on the current thread. period_us == 0: run on every
 * iteration; otherwise at most once per period. Returns NULL on failure.
 * `name` is for diagnostics (copied, may be NULL).
 */
struct poller *poller_register(poller_fn fn, void *ctx, uint64_t period_us, const char *name);

/*
 * Unregister and free a poller; sets *poller to NULL. Must be called on the
 * poller's thread. Safe to call from inside the poller's own function.
 * NULL *poller is a no-op.
 */
void poller_unregister(struct poller **poller);

/*
 * Watch an fd on the current thread. `events` is a mask of THREAD_FD_*; fn
 * runs on this thread with the ready events when the fd is ready (also when
 * the thread is busy-polling). Returns NULL on failure (errno set).
 */
struct fd_event *thread_fd_register(int fd, uint32_t events, fd_event_fn fn, void *ctx,
				    const char *name);
int thread_fd_modify(struct fd_event *ev, uint32_t events);
/* Stop watching (the fd is not closed); sets *ev to NULL. NULL is a no-op. */
void thread_fd_unregister(struct fd_event **ev);

/*
 * io_devices and io_channels.
 *
 * Any pointer can be an io_device. io_channel_get(dev) returns the calling
 * thread's channel for it, creating it with create_cb on first use (the
 * channel carries ctx_size bytes of per-thread context) and reference
 * counting it after that. The last io_channel_put() destroys it with
 * destroy_cb, deferred by a message so a channel can be put from inside its
 * own callbacks.
 */
typedef int (*io_channel_create_cb)(void *io_device, void *ctx_buf);
typedef void (*io_channel_destroy_cb)(void *io_device, void *ctx_buf);
typedef void (*io_device_unregister_cb)(void *io_device);

/*
 * Register an io_device. Registering the same pointer twice is an error,
 * logged and ignored. `name` is copied.
 */
void io_device_register(void *io_device, io_channel_create_cb create_cb,
			io_channel_destroy_cb destroy_cb, uint32_t ctx_size, const char *name);

/*
 * Unregister an io_device. New io_channel_get() calls fail at once;
 * unregister_cb (if not NULL) runs on the calling thread once every channel
 * of the device has been destroyed.
 */
void io_device_unregister(void *io_device, io_device_unregister_cb unregister_cb);

/* Returns the channel, or NULL (device unknown/unregistering, create_cb failed, ENOMEM). */
struct io_channel *io_channel_get(void *io_device);
/* Must be called on the channel's thread. */
void io_channel_put(struct io_channel *ch);
void *io_channel_get_ctx(struct io_channel *ch);
struct io_channel *io_channel_from_ctx(void *ctx);
struct thread *io_channel_get_thread(struct io_channel *ch);
void *io_channel_get_io_device(struct io_channel *ch);

/*
 * Visit every channel of an io_device, one thread at a time: fn runs on each
 * channel's thread and must call io_channel_iter_continue(i, status) when
 * done with that channel (possibly later). A non-zero status stops the walk.
 * cpl runs on the calling thread at the end with the last status.
 */
typedef void (*io_channel_msg)(struct io_channel_iter *i);
typedef void (*io_channel_for_each_cpl)(struct io_channel_iter *i, int status);
void io_device_for_each_channel(void *io_device, io_channel_msg fn, void *ctx,
				io_channel_for_each_cpl cpl);
void io_channel_iter_continue(struct io_channel_iter *i, int status);
void *io_channel_iter_get_io_device(struct io_channel_iter *i);
struct io_channel *io_channel_iter_get_channel(struct io_channel_iter *i);
void *io_channel_iter_get_ctx(struct io_channel_iter *i);

/*
 * Run fn(ctx) on every thread, one after another, then cpl(ctx) on the
 * calling thread. Returns 0 or -ENOMEM (then nothing runs).
 */
int thread_for_each(msg_fn fn, void *ctx, msg_fn cpl);

#endif /* GGA_THREAD_H */
