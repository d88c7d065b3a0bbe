/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness of the bdev unit tests: three gga threads polled by hand, and
 * a tiny "ut" bdev module that records every I/O and completes it inline,
 * later (when the test says so), or with NOMEM.
 */
#ifndef BDEV_UT_MODULE_H
#define BDEV_UT_MODULE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"

#define UT_NUM_THREADS 3
#define UT_BLOCK_SIZE  512u
#define UT_NUM_BLOCKS  1024u

enum ut_mode {
	UT_COMPLETE_INLINE, /* inside submit_request */
	UT_COMPLETE_LATER,  /* when the test calls ut_complete() */
};

struct ut_disk {
	struct bdev bdev;
	enum ut_mode mode;
	enum bdev_io_status inline_status;
	/* The next this-many submissions complete inline with NOMEM. */
	uint32_t nomem_next;
	bool unsupported[BDEV_NUM_IO_TYPES];
	int destruct_rc;
	int destruct_calls;
	uint32_t submitted[BDEV_NUM_IO_TYPES];
	/* The last submission as the module saw it (the bdev_io itself is recycled). */
	struct bdev_io *last_io;
	struct thread *last_thread;
	uint64_t last_offset, last_num;
	int last_iovcnt;
	size_t last_len;
	void *last_base;
	/* A virtual disk holds its bases open and claimed. */
	struct bdev_desc *base_desc[2];
	int nbases;
};

struct ut_io_ctx {
	TAILQ_ENTRY(ut_io_ctx) link;
	uint64_t magic;
};

struct ut_channel {
	TAILQ_HEAD(, ut_io_ctx) pending;
	uint32_t npending;
	struct thread *thread;
};

struct ut_io_result {
	int count;
	bool success;
	int err;
	int sct, sc;
	enum bdev_io_type type;
	struct thread *thread;
};

struct ut_event {
	int count;
	struct thread *thread;
	struct bdev *bdev;
	enum bdev_event_type type;
};

struct ut_unregister {
	int count;
	int rc;
};

extern struct thread *g_thread[UT_NUM_THREADS];
extern struct ut_channel *g_ut_ch[UT_NUM_THREADS];
/* What the modules did, in order ("init:ut destruct:b1 ..."). */
extern char g_events[256];
extern struct bdev_module g_ut_module;
extern struct bdev_module g_ut_virt_module;
extern const struct bdev_fn_table g_ut_fn_table;
/* True while the test is inside a bdev submit call: callbacks must not run then. */
extern bool g_in_submit_call;
extern int g_callbacks_inside_submit;

/* Make thread i current; poll every thread until idle, or for at least `us`. */
void set_thread(int i);
void poll_threads(void);
void poll_threads_for_us(uint64_t us);
void event_log(const char *fmt, const char *name);
/* A 1024 x 512 B "ut" disk (md_size bytes of metadata), not yet registered. */
void ut_disk_init(struct ut_disk *disk, const char *name, uint32_t md_size);
/* Complete up to max I/Os the module holds on thread t; take one; count them. */
int ut_complete(int t, enum bdev_io_status status, int max);
struct bdev_io *ut_pop(int t);
uint32_t ut_pending(int t);
/* Completion callback: records into a struct ut_io_result and frees the I/O. */
void ut_io_done(struct bdev_io *io, bool success, void *cb_arg);
void ut_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx);
void ut_unregister_done(void *cb_arg, int rc);
/* Unregister from thread 0 and poll until the callback says 0. */
void ut_unregister_sync(struct bdev *bdev);

#endif /* BDEV_UT_MODULE_H */
