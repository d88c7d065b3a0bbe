/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io_devices, io_channels and the walks over threads and channels.
 *
 * The device registry is guarded by a mutex: it is touched when channels are
 * created and destroyed, never per I/O. A thread's channel list belongs to
 * that thread alone; walks visit it by sending a message there.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/thread.h"
#include "thread_internal.h"

struct io_device {
	TAILQ_ENTRY(io_device) link;
	void *io_device;
	io_channel_create_cb create_cb;
	io_channel_destroy_cb destroy_cb;
	uint32_t ctx_size;
	/* Channels plus walks in progress; guarded by g_devices_lock. */
	uint32_t refcnt;
	bool unregistered;
	io_device_unregister_cb unregister_cb;
	struct thread *unregister_thread;
	char name[THREAD_NAME_LEN];
};

struct io_channel_iter {
	void *io_device;
	struct io_device *dev;
	io_channel_msg fn;
	io_channel_for_each_cpl cpl;
	void *ctx;
	struct thread *orig_thread;
	struct io_channel *ch;
	uint32_t next_thread_id;
	int status;
};

struct thread_for_each_ctx {
	msg_fn fn;
	msg_fn cpl;
	void *ctx;
	struct thread *orig_thread;
	uint32_t next_thread_id;
};

TAILQ_HEAD(io_device_list, io_device);

static pthread_mutex_t g_devices_lock = PTHREAD_MUTEX_INITIALIZER;
/* Registered devices only: an unregistering device lives on in its channels. */
static struct io_device_list g_devices = TAILQ_HEAD_INITIALIZER(g_devices);

static struct io_device *
find_device(void *io_device)
{
	struct io_device *dev;

	TAILQ_FOREACH(dev, &g_devices, link) {
		if (dev->io_device == io_device) {
			return dev;
		}
	}
	return NULL;
}

/*
 * Send a message that must not be lost. The rings are large; a full one means
 * the target is stuck, so retrying briefly is the best there is.
 */
static void
send_msg_reliably(struct thread *thread, msg_fn fn, void *ctx, const char *what)
{
	int attempt;

	for (attempt = 0; attempt < 1000; attempt++) {
		if (thread_send_msg(thread, fn, ctx) == 0) {
			return;
		}
		sched_yield();
	}
	ERRLOG("thread %s: message queue full, %s is lost\n", thread_get_name(thread), what);
}

void
io_device_register(void *io_device, io_channel_create_cb create_cb,
		   io_channel_destroy_cb destroy_cb, uint32_t ctx_size, const char *name)
{
	struct io_device *dev;

	if (io_device == NULL) {
		ERRLOG("io_device %s: NULL pointer\n", name ? name : "");
		return;
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL) {
		ERRLOG("io_device %s: out of memory\n", name ? name : "");
		return;
	}
	dev->io_device = io_device;
	dev->create_cb = create_cb;
	dev->destroy_cb = destroy_cb;
	dev->ctx_size = ctx_size;
	if (name != NULL) {
		snprintf(dev->name, sizeof(dev->name), "%s", name);
	} else {
		snprintf(dev->name, sizeof(dev->name), "%p", io_device);
	}

	pthread_mutex_lock(&g_devices_lock);
	if (find_device(io_device) != NULL) {
		pthread_mutex_unlock(&g_devices_lock);
		ERRLOG("io_device %s (%p): already registered\n", dev->name, io_device);
		free(dev);
		return;
	}
	TAILQ_INSERT_TAIL(&g_devices, dev, link);
	pthread_mutex_unlock(&g_devices_lock);
	DEBUGLOG(thread, "io_device %s (%p) registered\n", dev->name, io_device);
}

static void
complete_unregister(void *arg)
{
	struct io_device *dev = arg;

	DEBUGLOG(thread, "io_device %s (%p) unregistered\n", dev->name, dev->io_device);
	if (dev->unregister_cb != NULL) {
		dev->unregister_cb(dev->io_device);
	}
	free(dev);
}

/* The device's last reference is gone: run the unregister callback where it was asked for. */
static void
finish_unregister(struct io_device *dev)
{
	struct thread *thread = dev->unregister_thread;

	if (thread == NULL || thread->exiting) {
		complete_unregister(dev);
		return;
	}
	send_msg_reliably(thread, complete_unregister, dev, "an io_device unregister completion");
}

static void
device_put(struct io_device *dev)
{
	bool last;

	pthread_mutex_lock(&g_devices_lock);
	dev->refcnt--;
	last = dev->refcnt == 0 && dev->unregistered;
	pthread_mutex_unlock(&g_devices_lock);
	if (last) {
		finish_unregister(dev);
	}
}

void
io_device_unregister(void *io_device, io_device_unregister_cb unregister_cb)
{
	struct io_device *dev;
	bool last;

	pthread_mutex_lock(&g_devices_lock);
	dev = find_device(io_device);
	if (dev == NULL) {
		pthread_mutex_unlock(&g_devices_lock);
		ERRLOG("io_device %p: not registered\n", io_device);
		return;
	}
	TAILQ_REMOVE(&g_devices, dev, link);
	__atomic_store_n(&dev->unregistered, true, __ATOMIC_RELEASE);
	dev->unregister_cb = unregister_cb;
	dev->unregister_thread = tls_thread != NULL ? tls_thread : thread_get_app();
	last = dev->refcnt == 0;
	pthread_mutex_unlock(&g_devices_lock);
	DEBUGLOG(thread, "io_device %s (%p): unregistering, %u reference(s) left\n", dev->name,
		 io_device, dev->refcnt);
	if (last) {
		/* Still by message: the callback never runs inside this call. */
		finish_unregister(dev);
	}
}

struct io_channel *
io_channel_get(void *io_device)
{
	struct thread *thread = tls_thread;
	struct io_device *dev;
	struct io_channel *ch;
	int rc;

	if (thread == NULL) {
		ERRLOG("io_device %p: io_channel_get() outside of a thread\n", io_device);
		return NULL;
	}
	TAILQ_FOREACH(ch, &thread->channels, link) {
		if (ch->dev->io_device == io_device &&
		    !__atomic_load_n(&ch->dev->unregistered, __ATOMIC_ACQUIRE)) {
			/* Also revives a channel whose deferred destruction is pending. */
			ch->ref++;
			return ch;
		}
	}

	pthread_mutex_lock(&g_devices_lock);
	dev = find_device(io_device);
	if (dev == NULL) {
		pthread_mutex_unlock(&g_devices_lock);
		DEBUGLOG(thread, "io_device %p: not registered\n", io_device);
		return NULL;
	}
	dev->refcnt++;
	pthread_mutex_unlock(&g_devices_lock);

	rc = posix_memalign((void **)&ch, GGA_CACHE_LINE, sizeof(*ch) + dev->ctx_size);
	if (rc != 0) {
		ERRLOG("io_device %s: no memory for a channel on thread %s\n", dev->name,
		       thread->name);
		device_put(dev);
		return NULL;
	}
	memset(ch, 0, sizeof(*ch) + dev->ctx_size);
	ch->thread = thread;
	ch->dev = dev;
	ch->ref = 1;
	TAILQ_INSERT_TAIL(&thread->channels, ch, link);
	if (dev->create_cb != NULL) {
		rc = dev->create_cb(io_device, ch->ctx);
		if (rc != 0) {
			ERRLOG("io_device %s: creating a channel on thread %s failed: %s\n",
			       dev->name, thread->name, strerror(-rc));
			TAILQ_REMOVE(&thread->channels, ch, link);
			free(ch);
			device_put(dev);
			return NULL;
		}
	}
	DEBUGLOG(thread, "io_device %s: channel %p created on thread %s\n", dev->name, ch,
		 thread->name);
	return ch;
}

static void
destroy_channel(struct io_channel *ch)
{
	struct io_device *dev = ch->dev;

	TAILQ_REMOVE(&ch->thread->channels, ch, link);
	if (dev->destroy_cb != NULL) {
		dev->destroy_cb(dev->io_device, ch->ctx);
	}
	DEBUGLOG(thread, "io_device %s: channel %p destroyed on thread %s\n", dev->name, ch,
		 ch->thread->name);
	free(ch);
	device_put(dev);
}

static void
put_channel_msg(void *arg)
{
	struct io_channel *ch = arg;

	ch->destroy_pending = false;
	if (ch->ref > 0) {
		/* Got again before the message ran: keep it. */
		return;
	}
	destroy_channel(ch);
}

void
io_channel_put(struct io_channel *ch)
{
	if (ch->thread != tls_thread) {
		ERRLOG("io_device %s: channel of thread %s put on thread %s\n", ch->dev->name,
		       ch->thread->name, tls_thread ? tls_thread->name : "(none)");
		return;
	}
	if (ch->ref == 0) {
		ERRLOG("io_device %s: channel put more often than got\n", ch->dev->name);
		return;
	}
	ch->ref--;
	if (ch->ref > 0 || ch->destroy_pending) {
		return;
	}
	ch->destroy_pending = true;
	if (thread_send_msg(ch->thread, put_channel_msg, ch) != 0) {
		/* The channel stays; thread_destroy() releases it. */
		ERRLOG("io_device %s: cannot queue the destruction of a channel on thread %s\n",
		       ch->dev->name, ch->thread->name);
		ch->destroy_pending = false;
	}
}

void *
io_channel_get_ctx(struct io_channel *ch)
{
	return ch->ctx;
}

struct io_channel *
io_channel_from_ctx(void *ctx)
{
	return container_of(ctx, struct io_channel, ctx);
}

struct thread *
io_channel_get_thread(struct io_channel *ch)
{
	return ch->thread;
}

void *
io_channel_get_io_device(struct io_channel *ch)
{
	return ch->dev->io_device;
}

void
io_channel_release_thread(struct thread *thread)
{
	struct io_channel *ch;

	while ((ch = TAILQ_FIRST(&thread->channels)) != NULL) {
		if (ch->ref > 0) {
			WARNLOG("thread %s: channel of io_device %s still held (%u reference(s))\n",
				thread->name, ch->dev->name, ch->ref);
		}
		destroy_channel(ch);
	}
}

void
io_device_release_all(void)
{
	struct io_device *dev;

	pthread_mutex_lock(&g_devices_lock);
	while ((dev = TAILQ_FIRST(&g_devices)) != NULL) {
		TAILQ_REMOVE(&g_devices, dev, link);
		WARNLOG("io_device %s (%p) still registered at thread_lib_fini()\n", dev->name,
			dev->io_device);
		free(dev);
	}
	pthread_mutex_unlock(&g_devices_lock);
}

static void iter_advance(struct io_channel_iter *i);

static void
iter_complete_msg(void *arg)
{
	struct io_channel_iter *i = arg;

	i->ch = NULL;
	if (i->cpl != NULL) {
		i->cpl(i, i->status);
	}
	if (i->dev != NULL) {
		device_put(i->dev);
	}
	free(i);
}

static void
iter_on_thread_msg(void *arg)
{
	struct io_channel_iter *i = arg;
	struct io_channel *ch;

	TAILQ_FOREACH(ch, &tls_thread->channels, link) {
		/* A channel waiting for its deferred destruction is already gone for users. */
		if (ch->dev == i->dev && ch->ref > 0) {
			i->ch = ch;
			i->fn(i);
			return;
		}
	}
	iter_advance(i);
}

static void
iter_advance(struct io_channel_iter *i)
{
	struct thread *thread = thread_get_next_from_id(i->next_thread_id);

	i->ch = NULL;
	if (thread == NULL) {
		send_msg_reliably(i->orig_thread, iter_complete_msg, i,
				  "a channel walk completion");
		return;
	}
	i->next_thread_id = thread->id + 1;
	send_msg_reliably(thread, iter_on_thread_msg, i, "a channel walk step");
}

void
io_device_for_each_channel(void *io_device, io_channel_msg fn, void *ctx,
			   io_channel_for_each_cpl cpl)
{
	struct io_channel_iter *i;
	struct thread *orig = tls_thread != NULL ? tls_thread : thread_get_app();

	if (orig == NULL) {
		ERRLOG("io_device %p: channel walk started outside of any thread\n", io_device);
		return;
	}
	i = calloc(1, sizeof(*i));
	if (i == NULL) {
		ERRLOG("io_device %p: no memory for a channel walk\n", io_device);
		return;
	}
	i->io_device = io_device;
	i->fn = fn;
	i->cpl = cpl;
	i->ctx = ctx;
	i->orig_thread = orig;

	pthread_mutex_lock(&g_devices_lock);
	i->dev = find_device(io_device);
	if (i->dev != NULL) {
		/* Keeps the device alive for the walk, even if it is unregistered meanwhile. */
		i->dev->refcnt++;
	}
	pthread_mutex_unlock(&g_devices_lock);
	if (i->dev == NULL) {
		ERRLOG("io_device %p: channel walk on an unregistered device\n", io_device);
		i->status = -ENODEV;
		send_msg_reliably(orig, iter_complete_msg, i, "a channel walk completion");
		return;
	}
	iter_advance(i);
}

void
io_channel_iter_continue(struct io_channel_iter *i, int status)
{
	i->status = status;
	if (status != 0) {
		i->ch = NULL;
		send_msg_reliably(i->orig_thread, iter_complete_msg, i,
				  "a channel walk completion");
		return;
	}
	iter_advance(i);
}

void *
io_channel_iter_get_io_device(struct io_channel_iter *i)
{
	return i->io_device;
}

struct io_channel *
io_channel_iter_get_channel(struct io_channel_iter *i)
{
	return i->ch;
}

void *
io_channel_iter_get_ctx(struct io_channel_iter *i)
{
	return i->ctx;
}

static void for_each_advance(struct thread_for_each_ctx *fe);

static void
for_each_complete_msg(void *arg)
{
	struct thread_for_each_ctx *fe = arg;

	if (fe->cpl != NULL) {
		fe->cpl(fe->ctx);
	}
	free(fe);
}

static void
for_each_on_thread_msg(void *arg)
{
	struct thread_for_each_ctx *fe = arg;

	fe->fn(fe->ctx);
	for_each_advance(fe);
}

static int
for_each_send_next(struct thread_for_each_ctx *fe)
{
	struct thread *thread = thread_get_next_from_id(fe->next_thread_id);

	if (thread == NULL) {
		return thread_send_msg(fe->orig_thread, for_each_complete_msg, fe);
	}
	fe->next_thread_id = thread->id + 1;
	return thread_send_msg(thread, for_each_on_thread_msg, fe);
}

static void
for_each_advance(struct thread_for_each_ctx *fe)
{
	struct thread *thread = thread_get_next_from_id(fe->next_thread_id);

	if (thread == NULL) {
		send_msg_reliably(fe->orig_thread, for_each_complete_msg, fe,
				  "a thread walk completion");
		return;
	}
	fe->next_thread_id = thread->id + 1;
	send_msg_reliably(thread, for_each_on_thread_msg, fe, "a thread walk step");
}

int
thread_for_each(msg_fn fn, void *ctx, msg_fn cpl)
{
	struct thread_for_each_ctx *fe;
	struct thread *orig = tls_thread != NULL ? tls_thread : thread_get_app();
	int rc;

	if (orig == NULL) {
		ERRLOG("thread walk started with no thread to complete on\n");
		return -EINVAL;
	}
	fe = calloc(1, sizeof(*fe));
	if (fe == NULL) {
		return -ENOMEM;
	}
	fe->fn = fn;
	fe->cpl = cpl;
	fe->ctx = ctx;
	fe->orig_thread = orig;
	/* Only the first step can fail visibly: then nothing has run. */
	rc = for_each_send_next(fe);
	if (rc != 0) {
		free(fe);
	}
	return rc;
}
