/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * State shared by the files of the bdev layer: bdev.c (registry, descriptors,
 * claims, unregistration, subsystem), bdev_io.c (channels, the I/O path,
 * reset, statistics) and bdev_rpc.c.
 */
#ifndef GGA_BDEV_INTERNAL_H
#define GGA_BDEV_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/thread.h"
#include "gga/uuid.h"

enum bdev_state {
	BDEV_STATE_READY = 0,
	/* Waiting for every descriptor to close and every channel to go. */
	BDEV_STATE_UNREGISTERING,
	/* fn_table->destruct has been called; waiting for it to finish. */
	BDEV_STATE_DESTRUCTING,
};

struct bdev_internal {
	/* Written under g_bdev_mutex; read without it on the I/O path. */
	enum bdev_state state;
	char uuid_str[UUID_STR_LEN];

	/* Protected by g_bdev_mutex. */
	TAILQ_HEAD(, bdev_desc) descs;
	struct bdev_module *claim_module;
	struct bdev_desc *claim_desc;

	/* The unregistration in progress (app thread). */
	struct thread *unregister_thread;
	bdev_unregister_cb unregister_cb;
	void *unregister_arg;

	/* Statistics of channels already destroyed. */
	pthread_mutex_t stat_mutex;
	struct bdev_io_stat stat_gone;
};

struct bdev_desc {
	struct bdev *bdev;
	struct thread *thread;
	bdev_event_cb event_cb;
	void *event_ctx;
	bool write;
	/*
	 * Event notifications (removal, media change) in flight to the
	 * descriptor's thread; if the user closes the descriptor first, the last
	 * message frees it.
	 */
	uint32_t notify_pending;
	bool closed;
	TAILQ_ENTRY(bdev_desc) link;
};

TAILQ_HEAD(bdev_io_tailq, bdev_io);
TAILQ_HEAD(bdev_io_wait_tailq, bdev_io_wait_entry);

/*
 * Per-thread state shared by every bdev channel of the thread: completions
 * deferred because they happened inside submit_request (drained by one
 * poller per thread), and the waiters for a free bdev_io (the bdev_io pool
 * is shared by all bdevs, so a free on any channel of the thread can serve
 * them).
 */
struct bdev_mgmt_channel {
	struct bdev_io_tailq deferred;
	struct bdev_io_wait_tailq io_wait;
	struct poller *poller;
};

struct bdev_channel {
	struct bdev *bdev;
	struct io_channel *module_ch;
	struct bdev_mgmt_channel *mgmt;
	struct thread *thread;
	/* I/Os handed to the module and not completed yet. */
	uint64_t outstanding;
	/* Resets in progress on the bdev: new I/O is aborted meanwhile. */
	uint32_t resets;
	/* Inside retry_nomem(); guards against re-entry from completions. */
	bool retrying;
	/* I/Os the module bounced with NOMEM, and new ones queued behind them. */
	struct bdev_io_tailq nomem_ios;
	/* Retries the NOMEM queue when nothing is outstanding to trigger it. */
	struct poller *nomem_poller;
	struct bdev_io_stat stat;
	struct io_channel *mgmt_ch;
};

/* bdev.c */
extern pthread_mutex_t g_bdev_mutex;
extern TAILQ_HEAD(bdev_list, bdev) g_bdevs;

/* bdev_io.c */
extern struct mempool *g_bdev_io_pool;
extern uint8_t g_bdev_mgmt_device;
int bdev_channel_create_cb(void *io_device, void *ctx_buf);
void bdev_channel_destroy_cb(void *io_device, void *ctx_buf);
int bdev_mgmt_channel_create_cb(void *io_device, void *ctx_buf);
void bdev_mgmt_channel_destroy_cb(void *io_device, void *ctx_buf);
void bdev_io_stat_init(struct bdev_io_stat *stat);
void bdev_io_stat_add(struct bdev_io_stat *sum, const struct bdev_io_stat *add);

#endif /* GGA_BDEV_INTERNAL_H */
