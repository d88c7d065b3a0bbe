/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the bdev layer. The layer's sources are included to reach
 * its statics (pool sizing); the real thread, env and rpc libraries are
 * linked. Three gga threads are polled by hand from this one OS thread, and a
 * tiny "ut" module (bdev_ut_module.c) stands in for a real bdev module.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gga_ut.h"

#include "lib/bdev/bdev.c"
#include "lib/bdev/bdev_io.c"
#include "lib/bdev/bdev_rpc.c"

#include "gga/env.h"
#include "gga/rpc.h"

#include "bdev_ut_module.h"

/*
 * Subsystem start/stop around each test.
 */

static int g_fini_done;

static void
ut_fini_done(void *arg)
{
	g_fini_done++;
}

static void
ut_start(size_t pool_size, size_t cache_size)
{
	set_thread(0);
	g_io_pool_size = pool_size;
	g_io_cache_size = cache_size;
	g_events[0] = '\0';
	UT_ASSERT_EQ_FATAL(bdev_subsystem_init(), 0);
	UT_ASSERT_STR_EQ(g_events, "init:ut init:ut_virt ");
	g_events[0] = '\0';
}

static void
ut_stop(void)
{
	set_thread(0);
	g_fini_done = 0;
	bdev_subsystem_fini(ut_fini_done, NULL);
	poll_threads();
	UT_ASSERT_EQ(g_fini_done, 1);
	CU_ASSERT(bdev_first() == NULL);
	CU_ASSERT(g_bdev_io_pool == NULL);
}

/* Submit through the public API, recording whether a callback runs inside the call. */
#define SUBMIT(call)                      \
	({                                \
		int _rc;                  \
		g_in_submit_call = true;  \
		_rc = (call);             \
		g_in_submit_call = false; \
		_rc;                      \
	})

/*
 * Tests.
 */

static void
test_register_validation(void)
{
	struct ut_disk d, d2;
	struct bdev *b;
	const char *uuid;
	static const uint32_t bad_sizes[] = { 0, 256, 511, 1000, 4097, 131072 };
	static const uint8_t fixed[16] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef,
					   0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	struct bdev_fn_table partial = g_ut_fn_table;
	size_t i;

	ut_start(64, 8);

	for (i = 0; i < ARRAY_SIZE(bad_sizes); i++) {
		ut_disk_init(&d, "bad", 0);
		d.bdev.block_size = bad_sizes[i];
		UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	}
	ut_disk_init(&d, "bad", 4097);
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	ut_disk_init(&d, NULL, 0);
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	ut_disk_init(&d, "", 0);
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	ut_disk_init(&d, "bad", 0);
	d.bdev.num_blocks = 0;
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	ut_disk_init(&d, "bad", 0);
	partial.submit_request = NULL;
	d.bdev.fn_table = &partial;
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	ut_disk_init(&d, "bad", 0);
	d.bdev.fn_table = NULL;
	UT_ASSERT_EQ(bdev_register(&d.bdev), -EINVAL);
	CU_ASSERT(bdev_first() == NULL);

	/* Edges that are fine: 64 KiB blocks with 4 KiB metadata, odd md sizes. */
	ut_disk_init(&d, "big", 4096);
	d.bdev.block_size = 65536;
	UT_ASSERT_EQ(bdev_register(&d.bdev), 0);
	UT_ASSERT_EQ(bdev_get_buf_block_size(&d.bdev), 65536 + 4096);
	UT_ASSERT_EQ(bdev_get_buf_align(&d.bdev), 1);
	ut_disk_init(&d2, "odd", 13);
	memcpy(d2.bdev.uuid, fixed, sizeof(fixed));
	UT_ASSERT_EQ(bdev_register(&d2.bdev), 0);

	/* Duplicate name. */
	{
		struct ut_disk dup;

		ut_disk_init(&dup, "big", 0);
		UT_ASSERT_EQ(bdev_register(&dup.bdev), -EEXIST);
	}

	/* Generated uuid: version 4, RFC 4122 variant; a given one is kept. */
	uuid = bdev_get_uuid_str(&d.bdev);
	UT_ASSERT_EQ(strlen(uuid), 36);
	UT_ASSERT_EQ(uuid[14], '4');
	CU_ASSERT(strchr("89ab", uuid[19]) != NULL);
	CU_ASSERT(uuid[8] == '-' && uuid[13] == '-' && uuid[18] == '-' && uuid[23] == '-');
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(&d2.bdev), "12345678-9abc-4def-8123-456789abcdef");
	/* The bytes and the string are the same UUID. */
	CU_ASSERT(memcmp(bdev_get_uuid(&d2.bdev), fixed, sizeof(fixed)) == 0);
	{
		char str[UUID_STR_LEN];

		uuid_format(bdev_get_uuid(&d.bdev), str);
		UT_ASSERT_STR_EQ(str, uuid);
	}

	/* Lookup, iteration in registration order, getters. */
	CU_ASSERT(bdev_get_by_name("big") == &d.bdev);
	CU_ASSERT(bdev_get_by_name("odd") == &d2.bdev);
	CU_ASSERT(bdev_get_by_name("nope") == NULL);
	b = bdev_first();
	CU_ASSERT(b == &d.bdev);
	b = bdev_next(b);
	CU_ASSERT(b == &d2.bdev);
	CU_ASSERT(bdev_next(b) == NULL);
	UT_ASSERT_STR_EQ(bdev_get_name(&d2.bdev), "odd");
	UT_ASSERT_STR_EQ(bdev_get_product_name(&d2.bdev), "UT disk");
	UT_ASSERT_STR_EQ(bdev_get_module_name(&d2.bdev), "ut");
	UT_ASSERT_EQ(bdev_get_block_size(&d2.bdev), 512);
	UT_ASSERT_EQ(bdev_get_md_size(&d2.bdev), 13);
	UT_ASSERT_EQ(bdev_get_buf_block_size(&d2.bdev), 525);
	UT_ASSERT_EQ(bdev_get_num_blocks(&d2.bdev), UT_NUM_BLOCKS);
	CU_ASSERT(!bdev_is_claimed(&d2.bdev));
	CU_ASSERT(bdev_io_type_supported(&d2.bdev, BDEV_IO_TYPE_READ));
	CU_ASSERT(!bdev_io_type_supported(&d2.bdev, BDEV_IO_TYPE_INVALID));
	CU_ASSERT(!bdev_io_type_supported(&d2.bdev, BDEV_NUM_IO_TYPES));
	UT_ASSERT_STR_EQ(bdev_io_type_name(BDEV_IO_TYPE_WRITE_ZEROES), "write_zeroes");
	CU_ASSERT(bdev_module_find("ut") == &g_ut_module);
	CU_ASSERT(bdev_module_find("nope") == NULL);

	ut_unregister_sync(&d.bdev);
	UT_ASSERT_EQ(d.destruct_calls, 1);
	CU_ASSERT(bdev_get_by_name("big") == NULL);
	CU_ASSERT(bdev_first() == &d2.bdev);
	ut_stop();
	UT_ASSERT_EQ(d2.destruct_calls, 1);
}

static void
test_open_close_claim(void)
{
	struct ut_disk d;
	struct bdev_desc *rw, *ro, *ro2, *tmp;
	struct ut_event ev = { 0 };

	ut_start(64, 8);
	ut_disk_init(&d, "disk", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);

	UT_ASSERT_EQ(bdev_open("nope", false, ut_event_cb, &ev, &tmp), -ENODEV);
	UT_ASSERT_EQ(bdev_open("disk", false, NULL, &ev, &tmp), -EINVAL);
	UT_ASSERT_EQ(bdev_open("disk", true, ut_event_cb, &ev, &rw), 0);
	UT_ASSERT_EQ(bdev_open("disk", false, ut_event_cb, &ev, &ro), 0);
	CU_ASSERT(bdev_desc_get_bdev(rw) == &d.bdev);

	/* Not over a writer (found by the RPC fuzzer: an error bdev over a namespace). */
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, ro, &g_ut_virt_module), -EPERM);
	CU_ASSERT(!bdev_is_claimed(&d.bdev));
	bdev_close(rw);

	/* A claim keeps other writers out, not readers; another module cannot take it. */
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, ro, &g_ut_virt_module), 0);
	CU_ASSERT(bdev_is_claimed(&d.bdev));
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, NULL, &g_ut_module), -EPERM);
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, ro, &g_ut_virt_module), 0);
	UT_ASSERT_EQ(bdev_open("disk", true, ut_event_cb, &ev, &tmp), -EPERM);
	UT_ASSERT_EQ(bdev_open("disk", false, ut_event_cb, &ev, &ro2), 0);
	bdev_close(ro2);
	bdev_module_release_bdev(&d.bdev);
	CU_ASSERT(!bdev_is_claimed(&d.bdev));
	UT_ASSERT_EQ(bdev_open("disk", true, ut_event_cb, &ev, &tmp), 0);
	bdev_close(tmp);

	/* Closing the claiming descriptor drops its claim. */
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, ro, &g_ut_virt_module), 0);
	bdev_close(ro);
	CU_ASSERT(!bdev_is_claimed(&d.bdev));
	UT_ASSERT_EQ(bdev_module_claim_bdev(&d.bdev, NULL, &g_ut_module), 0);
	bdev_module_release_bdev(&d.bdev);

	poll_threads();
	UT_ASSERT_EQ(ev.count, 0);
	ut_unregister_sync(&d.bdev);
	ut_stop();
}

struct ut_closer {
	struct ut_event ev;
	struct bdev_desc *desc;
	struct io_channel *ch;
	bool close_in_cb;
};

static void
ut_closer_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct ut_closer *c = ctx;

	ut_event_cb(type, bdev, &c->ev);
	if (c->close_in_cb) {
		if (c->ch != NULL) {
			io_channel_put(c->ch);
			c->ch = NULL;
		}
		bdev_close(c->desc);
		c->desc = NULL;
	}
}

static void
test_hot_remove(void)
{
	struct ut_disk d;
	struct ut_closer c1 = { 0 }, c2 = { 0 }, c0 = { 0 };
	struct ut_unregister u = { 0 }, u2 = { 0 };
	struct ut_io_result r = { 0 };
	struct bdev_desc *tmp;
	char buf[UT_BLOCK_SIZE];

	ut_start(64, 8);
	ut_disk_init(&d, "hot", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);

	/* Descriptors on threads 1 and 2, each with a channel; one on thread 0 closes itself. */
	set_thread(1);
	UT_ASSERT_EQ_FATAL(bdev_open("hot", true, ut_closer_event, &c1, &c1.desc), 0);
	c1.ch = bdev_get_io_channel(c1.desc);
	CU_ASSERT_FATAL(c1.ch != NULL);
	set_thread(2);
	UT_ASSERT_EQ_FATAL(bdev_open("hot", false, ut_closer_event, &c2, &c2.desc), 0);
	c2.ch = bdev_get_io_channel(c2.desc);
	CU_ASSERT_FATAL(c2.ch != NULL);
	set_thread(0);
	c0.close_in_cb = true;
	UT_ASSERT_EQ_FATAL(bdev_open("hot", false, ut_closer_event, &c0, &c0.desc), 0);

	bdev_unregister(&d.bdev, ut_unregister_done, &u);
	/* Opens fail at once; a second unregister is refused. */
	UT_ASSERT_EQ(bdev_open("hot", false, ut_event_cb, &c0.ev, &tmp), -ENODEV);
	bdev_unregister(&d.bdev, ut_unregister_done, &u2);
	UT_ASSERT_EQ(u2.count, 1);
	UT_ASSERT_EQ(u2.rc, -EBUSY);

	poll_threads();
	UT_ASSERT_EQ(c1.ev.count, 1);
	CU_ASSERT(c1.ev.thread == g_thread[1]);
	CU_ASSERT(c1.ev.bdev == &d.bdev);
	UT_ASSERT_EQ(c1.ev.type, BDEV_EVENT_REMOVE);
	UT_ASSERT_EQ(c2.ev.count, 1);
	CU_ASSERT(c2.ev.thread == g_thread[2]);
	UT_ASSERT_EQ(c0.ev.count, 1);
	CU_ASSERT(c0.ev.thread == g_thread[0]);
	UT_ASSERT_EQ(d.destruct_calls, 0);
	UT_ASSERT_EQ(u.count, 0);

	/* I/O on a bdev being removed fails synchronously. */
	set_thread(1);
	UT_ASSERT_EQ(SUBMIT(bdev_write_blocks(c1.desc, c1.ch, buf, 0, 1, ut_io_done, &r)), -ENODEV);
	UT_ASSERT_EQ(SUBMIT(bdev_reset(c1.desc, c1.ch, ut_io_done, &r)), -ENODEV);

	/* Closing one is not enough. */
	io_channel_put(c1.ch);
	bdev_close(c1.desc);
	poll_threads();
	UT_ASSERT_EQ(d.destruct_calls, 0);
	UT_ASSERT_EQ(u.count, 0);

	/* The descriptor is closed but its channel is still held: still waiting. */
	set_thread(2);
	bdev_close(c2.desc);
	poll_threads();
	UT_ASSERT_EQ(d.destruct_calls, 0);
	UT_ASSERT_EQ(u.count, 0);
	CU_ASSERT(bdev_get_by_name("hot") == &d.bdev);

	set_thread(2);
	io_channel_put(c2.ch);
	poll_threads();
	UT_ASSERT_EQ(d.destruct_calls, 1);
	UT_ASSERT_EQ(u.count, 1);
	UT_ASSERT_EQ(u.rc, 0);
	CU_ASSERT(bdev_get_by_name("hot") == NULL);
	UT_ASSERT_EQ(r.count, 0);
	UT_ASSERT_EQ(g_callbacks_inside_submit, 0);
	ut_stop();
}

/*
 * Health: a bdev without get_health is whole; a health change reaches every
 * open descriptor on its own thread, and nothing before registration.
 */
static void
test_health(void)
{
	struct ut_disk d;
	struct ut_event e1 = { 0 }, e2 = { 0 };
	struct bdev_desc *d1, *d2;
	struct bdev_health h;

	ut_start(64, 8);
	ut_disk_init(&d, "hl", 0);
	memset(&h, 0xff, sizeof(h));
	bdev_notify_health_changed(&d.bdev); /* not registered: nothing to tell */
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);
	bdev_get_health(&d.bdev, &h);
	CU_ASSERT(!h.degraded && !h.read_only);
	UT_ASSERT_EQ(h.spare_pct, 100);
	UT_ASSERT_EQ(h.spare_threshold_pct, 0);
	UT_ASSERT_EQ(h.media_errors, 0);

	set_thread(1);
	UT_ASSERT_EQ_FATAL(bdev_open("hl", false, ut_event_cb, &e1, &d1), 0);
	set_thread(2);
	UT_ASSERT_EQ_FATAL(bdev_open("hl", true, ut_event_cb, &e2, &d2), 0);
	set_thread(0);
	bdev_notify_health_changed(&d.bdev);
	poll_threads();
	UT_ASSERT_EQ(e1.count, 1);
	UT_ASSERT_EQ(e1.type, BDEV_EVENT_HEALTH_CHANGED);
	CU_ASSERT(e1.thread == g_thread[1]);
	UT_ASSERT_EQ(e2.count, 1);
	UT_ASSERT_EQ(e2.type, BDEV_EVENT_HEALTH_CHANGED);
	CU_ASSERT(e2.thread == g_thread[2]);
	set_thread(1);
	bdev_close(d1);
	set_thread(2);
	bdev_close(d2);
	set_thread(0);
	ut_unregister_sync(&d.bdev);
	ut_stop();
}

static struct bdev_space g_ut_space;

static void
ut_get_space(void *ctxt, struct bdev_space *space)
{
	*space = g_ut_space;
}

/* bdev_get_space: not thin without the callback, the module's numbers clamped with it. */
static void
test_space(void)
{
	struct bdev_fn_table thin = g_ut_fn_table;
	struct bdev_space sp;
	struct ut_disk d;

	ut_start(64, 8);
	ut_disk_init(&d, "sp", 0);
	memset(&sp, 0xff, sizeof(sp));
	bdev_get_space(&d.bdev, &sp);
	CU_ASSERT(!sp.thin && !sp.dealloc_zeroes);
	UT_ASSERT_EQ(sp.used_blocks, d.bdev.num_blocks);
	UT_ASSERT_EQ(sp.capacity_blocks, d.bdev.num_blocks);

	thin.get_space = ut_get_space;
	d.bdev.fn_table = &thin;
	/* A callback that says "not thin" gets the defaults whatever else it wrote. */
	g_ut_space = (struct bdev_space){ .dealloc_zeroes = true, .used_blocks = 3 };
	bdev_get_space(&d.bdev, &sp);
	CU_ASSERT(!sp.thin && !sp.dealloc_zeroes);
	UT_ASSERT_EQ(sp.used_blocks, d.bdev.num_blocks);
	g_ut_space = (struct bdev_space){
		.thin = true, .dealloc_zeroes = true, .used_blocks = 5, .capacity_blocks = 9
	};
	bdev_get_space(&d.bdev, &sp);
	CU_ASSERT(sp.thin && sp.dealloc_zeroes);
	UT_ASSERT_EQ(sp.used_blocks, 5);
	UT_ASSERT_EQ(sp.capacity_blocks, 9);
	g_ut_space.capacity_blocks = d.bdev.num_blocks + 100;
	g_ut_space.used_blocks = d.bdev.num_blocks + 200;
	bdev_get_space(&d.bdev, &sp);
	UT_ASSERT_EQ(sp.capacity_blocks, d.bdev.num_blocks);
	UT_ASSERT_EQ(sp.used_blocks, d.bdev.num_blocks);
	ut_stop();
}

/* A descriptor closed before its remove notification arrives gets no callback. */
static void
test_close_before_notify(void)
{
	struct ut_disk d;
	struct ut_closer c1 = { 0 };
	struct ut_unregister u = { 0 };

	ut_start(64, 8);
	ut_disk_init(&d, "quick", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);
	set_thread(1);
	UT_ASSERT_EQ_FATAL(bdev_open("quick", false, ut_closer_event, &c1, &c1.desc), 0);
	set_thread(0);
	bdev_unregister(&d.bdev, ut_unregister_done, &u);
	set_thread(1);
	bdev_close(c1.desc);
	poll_threads();
	UT_ASSERT_EQ(c1.ev.count, 0);
	UT_ASSERT_EQ(u.count, 1);
	UT_ASSERT_EQ(d.destruct_calls, 1);
	ut_stop();
}

static void
test_destruct_async(void)
{
	struct ut_disk d;
	struct ut_unregister u = { 0 };

	ut_start(64, 8);
	ut_disk_init(&d, "slow", 0);
	d.destruct_rc = 1;
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);
	bdev_unregister(&d.bdev, ut_unregister_done, &u);
	poll_threads();
	UT_ASSERT_EQ(d.destruct_calls, 1);
	UT_ASSERT_EQ(u.count, 0);
	CU_ASSERT(bdev_get_by_name("slow") == NULL);
	bdev_destruct_done(&d.bdev, 0);
	UT_ASSERT_EQ(u.count, 1);
	UT_ASSERT_EQ(u.rc, 0);

	/* By name, checking the module. */
	ut_disk_init(&d, "slow", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&d.bdev), 0);
	UT_ASSERT_EQ(bdev_unregister_by_name("slow", &g_ut_virt_module, NULL, NULL), -ENODEV);
	UT_ASSERT_EQ(bdev_unregister_by_name("none", &g_ut_module, NULL, NULL), -ENODEV);
	memset(&u, 0, sizeof(u));
	UT_ASSERT_EQ(bdev_unregister_by_name("slow", &g_ut_module, ut_unregister_done, &u), 0);
	poll_threads();
	UT_ASSERT_EQ(u.count, 1);
	UT_ASSERT_EQ(d.destruct_calls, 1);
	ut_stop();
}

struct ut_io_env {
	struct ut_disk disk;
	struct bdev_desc *desc;
	struct bdev_desc *ro_desc;
	struct io_channel *ch[UT_NUM_THREADS];
	struct ut_event ev;
	uint8_t *buf;
};

static void
io_env_setup(struct ut_io_env *e, const char *name, uint32_t md_size)
{
	int i;

	ut_disk_init(&e->disk, name, md_size);
	UT_ASSERT_EQ_FATAL(bdev_register(&e->disk.bdev), 0);
	set_thread(0);
	UT_ASSERT_EQ_FATAL(bdev_open(name, true, ut_event_cb, &e->ev, &e->desc), 0);
	UT_ASSERT_EQ_FATAL(bdev_open(name, false, ut_event_cb, &e->ev, &e->ro_desc), 0);
	for (i = 0; i < UT_NUM_THREADS; i++) {
		set_thread(i);
		e->ch[i] = bdev_get_io_channel(e->desc);
		CU_ASSERT_FATAL(e->ch[i] != NULL);
	}
	set_thread(0);
	e->buf = calloc(16, UT_BLOCK_SIZE + md_size);
	CU_ASSERT_FATAL(e->buf != NULL);
}

static void
io_env_teardown(struct ut_io_env *e)
{
	int i;

	for (i = 0; i < UT_NUM_THREADS; i++) {
		UT_ASSERT_EQ(ut_pending(i), 0);
		set_thread(i);
		io_channel_put(e->ch[i]);
	}
	set_thread(0);
	bdev_close(e->ro_desc);
	bdev_close(e->desc);
	poll_threads();
	ut_unregister_sync(&e->disk.bdev);
	free(e->buf);
}

/* Submit one I/O of `type` on thread 0's channel. */
static int
submit_one(struct ut_io_env *e, struct bdev_desc *desc, enum bdev_io_type type, bool vectored,
	   uint64_t offset, uint64_t num, struct ut_io_result *r)
{
	struct io_channel *ch = e->ch[0];
	struct iovec iov[2];
	size_t len = num * bdev_get_buf_block_size(&e->disk.bdev);

	iov[0].iov_base = e->buf;
	iov[0].iov_len = len / 2;
	iov[1].iov_base = e->buf + len / 2;
	iov[1].iov_len = len - len / 2;
	switch (type) {
	case BDEV_IO_TYPE_READ:
		return vectored ? SUBMIT(bdev_readv_blocks(desc, ch, iov, 2, offset, num,
							   ut_io_done, r)) :
				  SUBMIT(bdev_read_blocks(desc, ch, e->buf, offset, num, ut_io_done,
							  r));
	case BDEV_IO_TYPE_WRITE:
		return vectored ? SUBMIT(bdev_writev_blocks(desc, ch, iov, 2, offset, num,
							    ut_io_done, r)) :
				  SUBMIT(bdev_write_blocks(desc, ch, e->buf, offset, num,
							   ut_io_done, r));
	case BDEV_IO_TYPE_WRITE_ZEROES:
		return SUBMIT(bdev_write_zeroes_blocks(desc, ch, offset, num, ut_io_done, r));
	case BDEV_IO_TYPE_UNMAP:
		return SUBMIT(bdev_unmap_blocks(desc, ch, offset, num, ut_io_done, r));
	case BDEV_IO_TYPE_FLUSH:
		return SUBMIT(bdev_flush_blocks(desc, ch, offset, num, ut_io_done, r));
	case BDEV_IO_TYPE_RESET:
		return SUBMIT(bdev_reset(desc, ch, ut_io_done, r));
	default:
		return -EINVAL;
	}
}

static const struct {
	enum bdev_io_type type;
	bool vectored;
} g_io_kinds[] = {
	{ BDEV_IO_TYPE_READ, false },         { BDEV_IO_TYPE_READ, true },
	{ BDEV_IO_TYPE_WRITE, false },        { BDEV_IO_TYPE_WRITE, true },
	{ BDEV_IO_TYPE_WRITE_ZEROES, false }, { BDEV_IO_TYPE_UNMAP, false },
	{ BDEV_IO_TYPE_FLUSH, false },        { BDEV_IO_TYPE_RESET, false },
};

static void
test_io_async_contract(void)
{
	struct ut_io_env e;
	struct ut_io_result r;
	uint32_t before;
	size_t k;
	int n;

	ut_start(64, 8);
	io_env_setup(&e, "io", 8);

	for (k = 0; k < ARRAY_SIZE(g_io_kinds); k++) {
		enum bdev_io_type type = g_io_kinds[k].type;

		/* Completed inline by the module: the callback still waits for the poller. */
		e.disk.mode = UT_COMPLETE_INLINE;
		memset(&r, 0, sizeof(r));
		before = e.disk.submitted[type];
		UT_ASSERT_EQ(submit_one(&e, e.desc, type, g_io_kinds[k].vectored, 3, 2, &r), 0);
		UT_ASSERT_EQ(r.count, 0);
		if (type != BDEV_IO_TYPE_RESET) {
			/* One poll of the thread runs it, and reports that it did work. */
			CU_ASSERT(thread_poll(g_thread[0], 0, 0) > 0);
			UT_ASSERT_EQ(r.count, 1);
		}
		poll_threads();
		UT_ASSERT_EQ(r.count, 1);
		CU_ASSERT(r.success);
		UT_ASSERT_EQ(r.err, 0);
		UT_ASSERT_EQ(r.type, type);
		CU_ASSERT(r.thread == g_thread[0]);

		UT_ASSERT_EQ(e.disk.submitted[type], before + 1);
		if (type != BDEV_IO_TYPE_RESET) {
			UT_ASSERT_EQ(e.disk.last_offset, 3);
			UT_ASSERT_EQ(e.disk.last_num, 2);
		}
		if (type == BDEV_IO_TYPE_READ || type == BDEV_IO_TYPE_WRITE) {
			UT_ASSERT_EQ(e.disk.last_len, 2 * (512 + 8));
			UT_ASSERT_EQ(e.disk.last_iovcnt, g_io_kinds[k].vectored ? 2 : 1);
			CU_ASSERT(e.disk.last_base == e.buf);
		} else {
			UT_ASSERT_EQ(e.disk.last_iovcnt, 0);
			CU_ASSERT(e.disk.last_base == NULL);
		}

		/* Completed later by the module: exactly one callback, from that completion. */
		e.disk.mode = UT_COMPLETE_LATER;
		memset(&r, 0, sizeof(r));
		UT_ASSERT_EQ(submit_one(&e, e.desc, type, g_io_kinds[k].vectored, 0, 1, &r), 0);
		poll_threads();
		UT_ASSERT_EQ(r.count, 0);
		UT_ASSERT_EQ(ut_pending(0), 1);
		n = ut_complete(0, BDEV_IO_STATUS_FAILED, 10);
		UT_ASSERT_EQ(n, 1);
		if (type == BDEV_IO_TYPE_RESET) {
			/* The reset completes after the unfreeze walk. */
			UT_ASSERT_EQ(r.count, 0);
			poll_threads();
		}
		UT_ASSERT_EQ(r.count, 1);
		CU_ASSERT(!r.success);
		UT_ASSERT_EQ(r.err, -EIO);
		poll_threads();
		UT_ASSERT_EQ(r.count, 1);
	}
	UT_ASSERT_EQ(g_callbacks_inside_submit, 0);
	io_env_teardown(&e);
	ut_stop();
}

static void
check_rejected(struct ut_io_env *e, struct bdev_desc *desc, enum bdev_io_type type, bool vectored,
	       uint64_t offset, uint64_t num, int expected)
{
	struct ut_io_result r = { 0 };
	uint32_t before = e->disk.submitted[type];

	UT_ASSERT_EQ(submit_one(e, desc, type, vectored, offset, num, &r), expected);
	poll_threads();
	UT_ASSERT_EQ(r.count, 0);
	UT_ASSERT_EQ(e->disk.submitted[type], before);
}

static void
test_io_errors(void)
{
	struct ut_io_env e;
	struct ut_io_result r = { 0 };
	struct iovec iov[2];
	uint32_t md;
	size_t k;

	for (md = 0; md <= 8; md += 8) {
		memset(&r, 0, sizeof(r));
		ut_start(64, 8);
		io_env_setup(&e, "err", md);
		e.disk.mode = UT_COMPLETE_INLINE;

		for (k = 0; k < ARRAY_SIZE(g_io_kinds); k++) {
			enum bdev_io_type type = g_io_kinds[k].type;
			bool v = g_io_kinds[k].vectored;

			if (type == BDEV_IO_TYPE_RESET) {
				continue;
			}
			/* Range. */
			check_rejected(&e, e.desc, type, v, 0, 0, -EINVAL);
			check_rejected(&e, e.desc, type, v, UT_NUM_BLOCKS, 1, -EINVAL);
			check_rejected(&e, e.desc, type, v, UT_NUM_BLOCKS - 1, 2, -EINVAL);
			check_rejected(&e, e.desc, type, v, UINT64_MAX, 2, -EINVAL);
			check_rejected(&e, e.desc, type, v, 0, UT_NUM_BLOCKS + 1, -EINVAL);
			/* Read-only descriptors only read. */
			if (type != BDEV_IO_TYPE_READ) {
				check_rejected(&e, e.ro_desc, type, v, 0, 1, -EBADF);
			}
			/* Unsupported types. */
			e.disk.unsupported[type] = true;
			check_rejected(&e, e.desc, type, v, 0, 1, -ENOTSUP);
			e.disk.unsupported[type] = false;
		}
		e.disk.unsupported[BDEV_IO_TYPE_RESET] = true;
		check_rejected(&e, e.desc, BDEV_IO_TYPE_RESET, false, 0, 0, -ENOTSUP);
		e.disk.unsupported[BDEV_IO_TYPE_RESET] = false;

		/* Buffer length must be num_blocks * (block_size + md_size). */
		iov[0].iov_base = e.buf;
		iov[0].iov_len = 512;
		iov[1].iov_base = e.buf + 512;
		iov[1].iov_len = 512;
		UT_ASSERT_EQ(SUBMIT(bdev_readv_blocks(e.desc, e.ch[0], iov, 2, 0, 2, ut_io_done,
						      &r)),
			     md == 0 ? 0 : -EINVAL);
		iov[1].iov_len = 512 + 2 * md;
		UT_ASSERT_EQ(SUBMIT(bdev_writev_blocks(e.desc, e.ch[0], iov, 2, 0, 2, ut_io_done,
						       &r)),
			     0);
		iov[1].iov_len = 511 + 2 * md;
		UT_ASSERT_EQ(SUBMIT(bdev_writev_blocks(e.desc, e.ch[0], iov, 2, 0, 2, ut_io_done,
						       &r)),
			     -EINVAL);
		UT_ASSERT_EQ(SUBMIT(bdev_writev_blocks(e.desc, e.ch[0], iov, 0, 0, 2, ut_io_done,
						       &r)),
			     -EINVAL);
		UT_ASSERT_EQ(SUBMIT(bdev_writev_blocks(e.desc, e.ch[0], NULL, 2, 0, 2, ut_io_done,
						       &r)),
			     -EINVAL);
		UT_ASSERT_EQ(SUBMIT(bdev_read_blocks(e.desc, e.ch[0], NULL, 0, 1, ut_io_done, &r)),
			     -EINVAL);
		poll_threads();
		UT_ASSERT_EQ(r.count, md == 0 ? 2 : 1);
		CU_ASSERT(r.success);

		/* Whole-device I/O is in range. */
		memset(&r, 0, sizeof(r));
		UT_ASSERT_EQ(SUBMIT(bdev_unmap_blocks(e.desc, e.ch[0], 0, UT_NUM_BLOCKS, ut_io_done,
						      &r)),
			     0);
		poll_threads();
		UT_ASSERT_EQ(r.count, 1);
		UT_ASSERT_EQ(g_callbacks_inside_submit, 0);
		io_env_teardown(&e);
		ut_stop();
	}
}

static void
test_nomem_requeue(void)
{
	struct ut_io_env e;
	struct ut_io_result a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	uint32_t i;

	ut_start(64, 8);
	io_env_setup(&e, "nomem", 0);
	e.disk.mode = UT_COMPLETE_LATER;

	/* Nothing outstanding: the bounced I/O is retried by the timed poller. */
	e.disk.nomem_next = 1;
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_WRITE, false, 0, 1, &a), 0);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_WRITE], 1);
	/* A new I/O waits behind it rather than overtaking it. */
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_READ, false, 0, 1, &b), 0);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_READ], 0);
	poll_threads_for_us(2000);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_WRITE], 2);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_READ], 1);
	UT_ASSERT_EQ(ut_pending(0), 2);
	UT_ASSERT_EQ(a.count + b.count, 0);

	/* Something outstanding: the bounced I/O goes again when that completes. */
	e.disk.nomem_next = 1;
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_UNMAP, false, 0, 1, &c), 0);
	poll_threads_for_us(500);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_UNMAP], 1);
	UT_ASSERT_EQ(ut_pending(0), 2);
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(a.count, 1);
	CU_ASSERT(a.success);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_UNMAP], 2);

	/* Bounced twice in a row during a retry: stays queued, order kept. */
	e.disk.nomem_next = 1;
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_FLUSH, false, 0, 1, &d), 0);
	e.disk.nomem_next = 1;
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(b.count, 1);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_FLUSH], 2);
	poll_threads_for_us(2000);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_FLUSH], 2);
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(c.count, 1);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_FLUSH], 3);
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(d.count, 1);
	CU_ASSERT(d.success);
	poll_threads();
	UT_ASSERT_EQ(a.count + b.count + c.count + d.count, 4);
	UT_ASSERT_EQ(g_callbacks_inside_submit, 0);

	/* A module that bounces inline is not spun on: one try per poller period. */
	e.disk.mode = UT_COMPLETE_INLINE;
	e.disk.nomem_next = 3;
	memset(&a, 0, sizeof(a));
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_READ, false, 0, 1, &a), 0);
	UT_ASSERT_EQ(e.disk.nomem_next, 2);
	/*
	 * Two more periods, at least: polled in steps, bounded, since a loaded
	 * machine may run the poll loop only a few times in 5 ms.
	 */
	poll_threads_for_us(5000);
	for (i = 0; i < 1000 && a.count == 0; i++) {
		poll_threads_for_us(1000);
	}
	UT_ASSERT_EQ(a.count, 1);
	CU_ASSERT(a.success);
	UT_ASSERT_EQ(e.disk.nomem_next, 0);

	io_env_teardown(&e);
	ut_stop();
}

struct ut_waiter {
	struct bdev_io_wait_entry entry;
	struct ut_io_env *e;
	struct ut_io_result r;
	int called;
	int rc;
};

static void
ut_waiter_cb(void *arg)
{
	struct ut_waiter *w = arg;

	w->called++;
	w->rc = bdev_read_blocks(w->e->desc, w->e->ch[0], w->e->buf, 0, 1, ut_io_done, &w->r);
}

static void
test_pool_exhaustion(void)
{
	struct ut_io_env e;
	struct ut_io_result r[40];
	struct ut_waiter w = { 0 };
	struct ut_disk other;
	int i, n, rc;

	memset(r, 0, sizeof(r));
	ut_start(16, 4);
	io_env_setup(&e, "pool", 0);
	e.disk.mode = UT_COMPLETE_LATER;

	w.entry.bdev = &e.disk.bdev;
	w.entry.cb_fn = ut_waiter_cb;
	w.entry.cb_arg = &w;
	w.e = &e;
	/* A bdev_io is available: nothing to wait for. */
	UT_ASSERT_EQ(bdev_queue_io_wait(&e.disk.bdev, e.ch[0], &w.entry), -EINVAL);

	for (n = 0; n < 40; n++) {
		rc = submit_one(&e, e.desc, BDEV_IO_TYPE_READ, false, 0, 1, &r[n]);
		if (rc != 0) {
			break;
		}
	}
	UT_ASSERT_EQ(rc, -ENOMEM);
	UT_ASSERT_EQ(n, 16);
	/* Other types and the reset hit the same wall. */
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_FLUSH, false, 0, 1, &r[39]), -ENOMEM);
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_RESET, false, 0, 0, &r[39]), -ENOMEM);

	/* The entry must name the channel's bdev. */
	ut_disk_init(&other, "other", 0);
	w.entry.bdev = &other.bdev;
	UT_ASSERT_EQ(bdev_queue_io_wait(&e.disk.bdev, e.ch[0], &w.entry), -EINVAL);
	w.entry.bdev = &e.disk.bdev;
	UT_ASSERT_EQ(bdev_queue_io_wait(&e.disk.bdev, e.ch[0], &w.entry), 0);
	poll_threads();
	UT_ASSERT_EQ(w.called, 0);

	/* Freeing one (in the completion callback) wakes the waiter, which gets it. */
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(r[0].count, 1);
	UT_ASSERT_EQ(w.called, 1);
	UT_ASSERT_EQ(w.rc, 0);
	UT_ASSERT_EQ(ut_pending(0), 16);

	/* No waiter left: further frees call nothing. */
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 100), 16);
	UT_ASSERT_EQ(w.called, 1);
	UT_ASSERT_EQ(w.r.count, 1);
	for (i = 0; i < n; i++) {
		UT_ASSERT_EQ(r[i].count, 1);
	}
	/* The refused submissions never call back. */
	UT_ASSERT_EQ(r[n].count, 0);
	UT_ASSERT_EQ(r[39].count, 0);
	poll_threads();
	UT_ASSERT_EQ(mempool_count(g_bdev_io_pool), 16);
	UT_ASSERT_EQ(g_callbacks_inside_submit, 0);
	io_env_teardown(&e);
	ut_stop();
}

static void
test_reset_aborts(void)
{
	struct ut_io_env e;
	struct ut_io_result q[4], rst = { 0 }, late = { 0 }, after = { 0 };
	int i;

	memset(q, 0, sizeof(q));
	ut_start(64, 8);
	io_env_setup(&e, "rst", 0);
	e.disk.mode = UT_COMPLETE_LATER;

	/* Two NOMEM-queued I/Os each on threads 1 and 2 (the module keeps bouncing them). */
	e.disk.nomem_next = 1000;
	for (i = 0; i < 4; i++) {
		int t = 1 + i / 2;

		set_thread(t);
		UT_ASSERT_EQ(SUBMIT(bdev_write_blocks(e.desc, e.ch[t], e.buf, i, 1, ut_io_done,
						      &q[i])),
			     0);
	}
	set_thread(0);
	poll_threads();
	for (i = 0; i < 4; i++) {
		UT_ASSERT_EQ(q[i].count, 0);
	}
	/* The retry pollers keep bouncing them until the reset gets there. */
	e.disk.nomem_next = 1000000;

	UT_ASSERT_EQ(SUBMIT(bdev_reset(e.desc, e.ch[0], ut_io_done, &rst)), 0);
	poll_threads();
	for (i = 0; i < 4; i++) {
		int t = 1 + i / 2;

		UT_ASSERT_EQ(q[i].count, 1);
		CU_ASSERT(!q[i].success);
		UT_ASSERT_EQ(q[i].err, -ECANCELED);
		UT_ASSERT_EQ(q[i].sct, 0);
		UT_ASSERT_EQ(q[i].sc, 0x07);
		CU_ASSERT(q[i].thread == g_thread[t]);
	}
	e.disk.nomem_next = 0;
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_RESET], 1);
	UT_ASSERT_EQ(rst.count, 0);

	/* While the reset runs, new I/O is aborted (asynchronously). */
	set_thread(1);
	UT_ASSERT_EQ(SUBMIT(bdev_read_blocks(e.desc, e.ch[1], e.buf, 0, 1, ut_io_done, &late)), 0);
	set_thread(0);
	UT_ASSERT_EQ(late.count, 0);
	poll_threads();
	UT_ASSERT_EQ(late.count, 1);
	UT_ASSERT_EQ(late.err, -ECANCELED);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_READ], 0);

	/* The module finishes the reset; the caller hears once every channel is thawed. */
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_SUCCESS, 1), 1);
	poll_threads();
	UT_ASSERT_EQ(rst.count, 1);
	CU_ASSERT(rst.success);
	CU_ASSERT(rst.thread == g_thread[0]);

	set_thread(2);
	UT_ASSERT_EQ(SUBMIT(bdev_read_blocks(e.desc, e.ch[2], e.buf, 0, 1, ut_io_done, &after)), 0);
	UT_ASSERT_EQ(ut_complete(2, BDEV_IO_STATUS_SUCCESS, 1), 1);
	UT_ASSERT_EQ(after.count, 1);
	CU_ASSERT(after.success);
	UT_ASSERT_EQ(g_callbacks_inside_submit, 0);
	io_env_teardown(&e);
	ut_stop();
}

struct ut_stat_result {
	int count;
	int rc;
	struct bdev_io_stat stat;
	struct thread *thread;
};

static void
ut_iostat_done(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg, int rc)
{
	struct ut_stat_result *s = cb_arg;

	s->count++;
	s->rc = rc;
	s->thread = thread_get_current();
	CU_ASSERT(stat == &s->stat);
}

static void
get_iostat_sync(struct bdev *bdev, struct ut_stat_result *s)
{
	memset(s, 0, sizeof(*s));
	set_thread(0);
	bdev_get_iostat(bdev, &s->stat, ut_iostat_done, s);
	poll_threads();
	UT_ASSERT_EQ(s->count, 1);
	UT_ASSERT_EQ(s->rc, 0);
	CU_ASSERT(s->thread == g_thread[0]);
}

static void
test_iostat(void)
{
	struct ut_io_env e;
	struct ut_io_result r = { 0 };
	struct ut_stat_result s, s2;
	const uint32_t bbs = 512 + 8;
	int i;

	ut_start(64, 8);
	io_env_setup(&e, "stat", 8);
	e.disk.mode = UT_COMPLETE_INLINE;

	get_iostat_sync(&e.disk.bdev, &s);
	UT_ASSERT_EQ(s.stat.num_read_ops, 0);
	CU_ASSERT(s.stat.min_read_latency_ticks == UINT64_MAX);

	/* Thread 1: 3 reads of 2 blocks, 2 writes of 1 block, 1 failed read. */
	set_thread(1);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(bdev_read_blocks(e.desc, e.ch[1], e.buf, 0, 2, ut_io_done, &r), 0);
	}
	for (i = 0; i < 2; i++) {
		UT_ASSERT_EQ(bdev_write_blocks(e.desc, e.ch[1], e.buf, 0, 1, ut_io_done, &r), 0);
	}
	e.disk.inline_status = BDEV_IO_STATUS_FAILED;
	UT_ASSERT_EQ(bdev_read_blocks(e.desc, e.ch[1], e.buf, 0, 1, ut_io_done, &r), 0);
	e.disk.inline_status = BDEV_IO_STATUS_SUCCESS;
	/* Thread 2: 1 read of 4 blocks, unmap of 8, flush, write_zeroes. Completed later. */
	e.disk.mode = UT_COMPLETE_LATER;
	set_thread(2);
	UT_ASSERT_EQ(bdev_read_blocks(e.desc, e.ch[2], e.buf, 0, 4, ut_io_done, &r), 0);
	UT_ASSERT_EQ(bdev_unmap_blocks(e.desc, e.ch[2], 0, 8, ut_io_done, &r), 0);
	UT_ASSERT_EQ(bdev_flush_blocks(e.desc, e.ch[2], 0, 8, ut_io_done, &r), 0);
	UT_ASSERT_EQ(bdev_write_zeroes_blocks(e.desc, e.ch[2], 0, 8, ut_io_done, &r), 0);
	poll_threads_for_us(50);
	UT_ASSERT_EQ(ut_complete(2, BDEV_IO_STATUS_SUCCESS, 10), 4);
	poll_threads();
	UT_ASSERT_EQ(r.count, 10);

	get_iostat_sync(&e.disk.bdev, &s);
	UT_ASSERT_EQ(s.stat.num_read_ops, 4);
	UT_ASSERT_EQ(s.stat.bytes_read, (3 * 2 + 4) * bbs);
	UT_ASSERT_EQ(s.stat.num_write_ops, 2);
	UT_ASSERT_EQ(s.stat.bytes_written, 2 * bbs);
	UT_ASSERT_EQ(s.stat.num_unmap_ops, 1);
	UT_ASSERT_EQ(s.stat.bytes_unmapped, 8 * bbs);
	UT_ASSERT_EQ(s.stat.num_flush_ops, 1);
	UT_ASSERT_EQ(s.stat.num_write_zeroes_ops, 1);
	UT_ASSERT_EQ(s.stat.num_reset_ops, 0);
	UT_ASSERT_EQ(s.stat.num_failed_ops, 1);
	/* The read that waited 50 us on thread 2 is the slowest; inline ones are fast. */
	CU_ASSERT(s.stat.max_read_latency_ticks >= us_to_ticks(50));
	CU_ASSERT(s.stat.min_read_latency_ticks < s.stat.max_read_latency_ticks);
	CU_ASSERT(s.stat.read_latency_ticks >=
		  s.stat.max_read_latency_ticks + 3 * s.stat.min_read_latency_ticks);
	CU_ASSERT(s.stat.min_write_latency_ticks <= s.stat.max_write_latency_ticks);
	CU_ASSERT(s.stat.write_latency_ticks >= s.stat.max_write_latency_ticks);
	CU_ASSERT(s.stat.unmap_latency_ticks >= us_to_ticks(50));

	/* Thread 2's channel goes away; its numbers stay. */
	set_thread(2);
	io_channel_put(e.ch[2]);
	poll_threads();
	get_iostat_sync(&e.disk.bdev, &s2);
	CU_ASSERT(memcmp(&s.stat, &s2.stat, sizeof(s.stat)) == 0);

	/* And a new channel on thread 2 adds to them. */
	set_thread(2);
	e.ch[2] = bdev_get_io_channel(e.desc);
	e.disk.mode = UT_COMPLETE_INLINE;
	UT_ASSERT_EQ(bdev_reset(e.desc, e.ch[2], ut_io_done, &r), 0);
	poll_threads();
	get_iostat_sync(&e.disk.bdev, &s2);
	UT_ASSERT_EQ(s2.stat.num_reset_ops, 1);
	UT_ASSERT_EQ(s2.stat.num_read_ops, 4);
	io_env_teardown(&e);
	ut_stop();
}

static void
test_nvme_status(void)
{
	struct ut_io_env e;
	struct ut_io_result r;
	struct bdev_io *io;
	static const struct {
		int sct, sc, err;
	} cases[] = {
		{ 0, 0x80, -ERANGE }, { 0, 0x02, -EINVAL }, { 0, 0x07, -ECANCELED },
		{ 0, 0x06, -EIO },    { 2, 0x81, -EIO },    { 0, 0x83, -EBADE },
	};
	size_t i;

	ut_start(64, 8);
	io_env_setup(&e, "nvme", 0);
	e.disk.mode = UT_COMPLETE_LATER;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&r, 0, sizeof(r));
		UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_READ, false, 0, 1, &r), 0);
		io = ut_pop(0);
		CU_ASSERT_FATAL(io == e.disk.last_io);
		bdev_io_complete_nvme_status(io, cases[i].sct, cases[i].sc);
		UT_ASSERT_EQ(r.count, 1);
		CU_ASSERT(!r.success);
		UT_ASSERT_EQ(r.sct, cases[i].sct);
		UT_ASSERT_EQ(r.sc, cases[i].sc);
		UT_ASSERT_EQ(r.err, cases[i].err);
	}

	/* NVMe success is plain success. */
	memset(&r, 0, sizeof(r));
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_READ, false, 0, 1, &r), 0);
	io = ut_pop(0);
	CU_ASSERT_FATAL(io != NULL);
	bdev_io_complete_nvme_status(io, 0, 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(r.err, 0);
	UT_ASSERT_EQ(r.sct, 0);
	UT_ASSERT_EQ(r.sc, 0);

	/* Generic failure and abort. */
	memset(&r, 0, sizeof(r));
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_WRITE, false, 0, 1, &r), 0);
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_FAILED, 1), 1);
	UT_ASSERT_EQ(r.sct, 0);
	UT_ASSERT_EQ(r.sc, 0x06);
	UT_ASSERT_EQ(r.err, -EIO);
	memset(&r, 0, sizeof(r));
	UT_ASSERT_EQ(submit_one(&e, e.desc, BDEV_IO_TYPE_WRITE, false, 0, 1, &r), 0);
	UT_ASSERT_EQ(ut_complete(0, BDEV_IO_STATUS_ABORTED, 1), 1);
	UT_ASSERT_EQ(r.sct, 0);
	UT_ASSERT_EQ(r.sc, 0x07);
	UT_ASSERT_EQ(r.err, -ECANCELED);
	io_env_teardown(&e);
	ut_stop();
}

/* Reservation requests: checked by the layer, carried to the module as given. */
static void
test_nvme_resv(void)
{
	struct ut_io_env e;
	struct ut_io_result r;
	struct bdev_io *io;
	uint8_t report[64];
	struct bdev_nvme_resv_cmd c = {
		.op = BDEV_NVME_RESV_ACQUIRE,
		.action = 2,
		.rtype = 2,
		.crkey = 0x1111,
		.nrkey = 0x2222,
	};

	ut_start(64, 8);
	io_env_setup(&e, "resv", 0);
	e.disk.mode = UT_COMPLETE_LATER;

	memset(&r, 0, sizeof(r));
	UT_ASSERT_EQ(SUBMIT(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r)), 0);
	io = ut_pop(0);
	CU_ASSERT_FATAL(io != NULL && io == e.disk.last_io);
	UT_ASSERT_EQ(io->type, BDEV_IO_TYPE_NVME_RESV);
	UT_ASSERT_EQ(io->u.resv.op, BDEV_NVME_RESV_ACQUIRE);
	UT_ASSERT_EQ(io->u.resv.action, 2);
	UT_ASSERT_EQ(io->u.resv.rtype, 2);
	UT_ASSERT_EQ(io->u.resv.crkey, 0x1111);
	UT_ASSERT_EQ(io->u.resv.nrkey, 0x2222);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_NVME_RESV], 1);
	/* The target's Reservation Conflict reaches the user as it is, and as -EBADE. */
	bdev_io_complete_nvme_status(io, 0, 0x83);
	UT_ASSERT_EQ(r.count, 1);
	CU_ASSERT(!r.success);
	UT_ASSERT_EQ(r.sc, 0x83);
	UT_ASSERT_EQ(r.err, -EBADE);

	/* A report carries its buffer. */
	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	c.op = BDEV_NVME_RESV_REPORT;
	c.buf = report;
	c.len = sizeof(report);
	UT_ASSERT_EQ(SUBMIT(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r)), 0);
	io = ut_pop(0);
	CU_ASSERT_FATAL(io != NULL);
	CU_ASSERT(io->u.resv.buf == report);
	UT_ASSERT_EQ(io->u.resv.len, 64);
	bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
	CU_ASSERT(r.success);

	/* Refusals, none of which reaches the module. */
	c.len = 60;
	UT_ASSERT_EQ(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r), -EINVAL);
	c.len = 64;
	c.buf = NULL;
	UT_ASSERT_EQ(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r), -EINVAL);
	c.op = 0;
	UT_ASSERT_EQ(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r), -EINVAL);
	c.op = BDEV_NVME_RESV_REGISTER;
	UT_ASSERT_EQ(bdev_nvme_reservation(e.desc, e.ch[0], NULL, ut_io_done, &r), -EINVAL);
	UT_ASSERT_EQ(bdev_nvme_reservation(e.ro_desc, e.ch[0], &c, ut_io_done, &r), -EBADF);
	e.disk.unsupported[BDEV_IO_TYPE_NVME_RESV] = true;
	UT_ASSERT_EQ(bdev_nvme_reservation(e.desc, e.ch[0], &c, ut_io_done, &r), -ENOTSUP);
	UT_ASSERT_EQ(e.disk.submitted[BDEV_IO_TYPE_NVME_RESV], 2);
	io_env_teardown(&e);
	ut_stop();
}

static struct ut_event g_virt_ev;

static void
ut_virt_create(struct ut_disk *v, const char *name, const char *base0, const char *base1)
{
	const char *bases[2] = { base0, base1 };
	int i;

	ut_disk_init(v, name, 0);
	v->bdev.module = &g_ut_virt_module;
	for (i = 0; i < 2; i++) {
		UT_ASSERT_EQ_FATAL(bdev_open(bases[i], false, ut_event_cb, &g_virt_ev,
					     &v->base_desc[i]),
				   0);
		UT_ASSERT_EQ_FATAL(bdev_module_claim_bdev(bdev_desc_get_bdev(v->base_desc[i]),
							  v->base_desc[i], &g_ut_virt_module),
				   0);
		v->nbases++;
	}
	UT_ASSERT_EQ_FATAL(bdev_register(&v->bdev), 0);
}

static void
test_fini_stacked(void)
{
	struct ut_disk b1, b2, b3, b4, b5, v1, v2;

	ut_start(64, 8);
	ut_disk_init(&b1, "b1", 0);
	ut_disk_init(&b2, "b2", 0);
	ut_disk_init(&b3, "b3", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&b1.bdev), 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&b2.bdev), 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&b3.bdev), 0);
	/* v1 sits on b1 and b2; v2 on v1 and b3; so v2 must go first, then v1. */
	ut_virt_create(&v1, "v1", "b1", "b2");
	ut_virt_create(&v2, "v2", "v1", "b3");
	CU_ASSERT(bdev_is_claimed(&v1.bdev));
	CU_ASSERT(bdev_is_claimed(&b3.bdev));
	/* A late, unclaimed base-level bdev, and a late one with a claim nobody releases. */
	ut_disk_init(&b4, "b4", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&b4.bdev), 0);
	ut_disk_init(&b5, "b5", 0);
	UT_ASSERT_EQ_FATAL(bdev_register(&b5.bdev), 0);
	UT_ASSERT_EQ_FATAL(bdev_module_claim_bdev(&b5.bdev, NULL, &g_ut_virt_module), 0);

	/* Configuration: module options first, then bdevs in registration order. */
	{
		json_t *config = json_array();
		const char *names[] = { "b1", "b2", "b3", "v1", "v2", "b4", "b5" };
		size_t i;

		bdev_subsystem_config_json(config);
		UT_ASSERT_EQ(json_array_size(config), 8);
		UT_ASSERT_STR_EQ(json_string_value(
					 json_object_get(json_array_get(config, 0), "method")),
				 "ut_set_options");
		for (i = 0; i < ARRAY_SIZE(names); i++) {
			json_t *params = json_object_get(json_array_get(config, i + 1), "params");

			UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "name")),
					 names[i]);
		}
		json_decref(config);
	}

	set_thread(0);
	g_fini_done = 0;
	bdev_subsystem_fini(ut_fini_done, NULL);
	poll_threads();
	UT_ASSERT_EQ(g_fini_done, 1);
	/* Newest unclaimed first; the stale claim only when nothing else is left. */
	UT_ASSERT_STR_EQ(g_events, "destruct:b4 destruct:v2 destruct:v1 destruct:b3 "
				   "destruct:b2 destruct:b1 destruct:b5 fini:ut_virt fini:ut ");
	CU_ASSERT(bdev_first() == NULL);
}

static bool g_fail_init;

static int
ut_fail_module_init(void)
{
	return g_fail_init ? -EIO : 0;
}

static struct bdev_module g_ut_fail_module = {
	.name = "ut_fail",
	.module_init = ut_fail_module_init,
};

static void
test_init_failure(void)
{
	/* A module failing its init undoes the ones before it, in reverse, and nothing else. */
	bdev_module_register(&g_ut_fail_module);
	g_fail_init = true;
	g_events[0] = '\0';
	UT_ASSERT_EQ(bdev_subsystem_init(), -EIO);
	UT_ASSERT_STR_EQ(g_events, "init:ut init:ut_virt fini:ut_virt fini:ut ");
	CU_ASSERT(g_bdev_io_pool == NULL);
	poll_threads();

	/* And the subsystem can start afterwards. */
	g_fail_init = false;
	ut_start(64, 8);
	UT_ASSERT_EQ(bdev_subsystem_init(), -EALREADY);
	ut_stop();
}

/*
 * RPCs through rpc_call.
 */

struct ut_rpc {
	int count;
	json_t *response;
};

static void
ut_rpc_done(void *ctx, json_t *response)
{
	struct ut_rpc *r = ctx;

	r->count++;
	r->response = response;
}

static json_t *
rpc_sync(const char *method, json_t *params, struct ut_rpc *r)
{
	memset(r, 0, sizeof(*r));
	set_thread(0);
	UT_ASSERT_EQ(rpc_call(method, params, ut_rpc_done, r), 0);
	poll_threads();
	UT_ASSERT_EQ(r->count, 1);
	return r->response;
}

static void
test_rpc(void)
{
	struct ut_io_env e;
	struct ut_disk d2;
	struct ut_io_result r = { 0 };
	struct ut_rpc rr;
	json_t *resp, *result, *b, *params, *types;

	ut_start(64, 8);
	rpc_set_state(RPC_STATE_RUNTIME);
	io_env_setup(&e, "r1", 8);
	ut_disk_init(&d2, "r2", 0);
	d2.unsupported[BDEV_IO_TYPE_UNMAP] = true;
	UT_ASSERT_EQ_FATAL(bdev_register(&d2.bdev), 0);
	UT_ASSERT_EQ_FATAL(bdev_module_claim_bdev(&d2.bdev, NULL, &g_ut_virt_module), 0);

	resp = rpc_sync("bdev_get_bdevs", NULL, &rr);
	result = json_object_get(resp, "result");
	CU_ASSERT_FATAL(json_is_array(result));
	UT_ASSERT_EQ(json_array_size(result), 2);
	b = json_array_get(result, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(b, "name")), "r1");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(b, "product_name")), "UT disk");
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "block_size")), 512);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "md_size")), 8);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "num_blocks")), UT_NUM_BLOCKS);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(b, "uuid")),
			 bdev_get_uuid_str(&e.disk.bdev));
	CU_ASSERT(json_is_false(json_object_get(b, "claimed")));
	CU_ASSERT(json_is_true(
		json_object_get(json_object_get(json_object_get(b, "driver_specific"), "ut"),
				"fake")));
	b = json_array_get(result, 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(b, "name")), "r2");
	CU_ASSERT(json_is_true(json_object_get(b, "claimed")));
	types = json_object_get(b, "supported_io_types");
	CU_ASSERT(json_is_true(json_object_get(types, "read")));
	CU_ASSERT(json_is_true(json_object_get(types, "reset")));
	CU_ASSERT(json_is_false(json_object_get(types, "unmap")));
	json_decref(resp);

	params = json_pack("{s:s}", "name", "r2");
	resp = rpc_sync("bdev_get_bdevs", params, &rr);
	result = json_object_get(resp, "result");
	UT_ASSERT_EQ(json_array_size(result), 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(result, 0), "name")),
			 "r2");
	json_decref(resp);
	json_decref(params);

	params = json_pack("{s:s}", "name", "zz");
	resp = rpc_sync("bdev_get_bdevs", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     -ENODEV);
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_object_get(resp, "error"), "message")),
			 "bdev 'zz' not found");
	json_decref(resp);
	json_decref(params);

	params = json_pack("{s:i}", "name", 3);
	resp = rpc_sync("bdev_get_bdevs", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	json_decref(params);

	/* iostat: two reads on thread 1, one write on thread 2. */
	e.disk.mode = UT_COMPLETE_INLINE;
	set_thread(1);
	UT_ASSERT_EQ(bdev_read_blocks(e.desc, e.ch[1], e.buf, 0, 2, ut_io_done, &r), 0);
	UT_ASSERT_EQ(bdev_read_blocks(e.desc, e.ch[1], e.buf, 0, 2, ut_io_done, &r), 0);
	set_thread(2);
	UT_ASSERT_EQ(bdev_write_blocks(e.desc, e.ch[2], e.buf, 0, 1, ut_io_done, &r), 0);
	poll_threads();
	UT_ASSERT_EQ(r.count, 3);

	resp = rpc_sync("bdev_get_iostat", NULL, &rr);
	result = json_object_get(resp, "result");
	CU_ASSERT_FATAL(json_is_object(result));
	CU_ASSERT(json_integer_value(json_object_get(result, "tick_rate")) > 0);
	UT_ASSERT_EQ(json_array_size(json_object_get(result, "bdevs")), 2);
	b = json_array_get(json_object_get(result, "bdevs"), 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(b, "name")), "r1");
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "num_read_ops")), 2);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "bytes_read")), 4 * 520);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "num_write_ops")), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "bytes_written")), 520);
	CU_ASSERT(json_object_get(b, "min_write_latency_ticks") != NULL);
	b = json_array_get(json_object_get(result, "bdevs"), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "num_read_ops")), 0);
	UT_ASSERT_EQ(json_integer_value(json_object_get(b, "min_read_latency_ticks")), 0);
	json_decref(resp);

	params = json_pack("{s:s}", "name", "r2");
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_EQ(json_array_size(json_object_get(json_object_get(resp, "result"), "bdevs")), 1);
	json_decref(resp);
	json_decref(params);
	params = json_pack("{s:s}", "name", "zz");
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     -ENODEV);
	json_decref(resp);
	json_decref(params);

	/* SPDK's form: names, in the order asked; SPDK's per_channel only at its default. */
	params = json_pack("{s:[s, s], s:b}", "names", "r2", "r1", "per_channel", 0);
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	result = json_object_get(json_object_get(resp, "result"), "bdevs");
	UT_ASSERT_EQ_FATAL(json_array_size(result), 2);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(result, 0), "name")),
			 "r2");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(result, 1), "name")),
			 "r1");
	json_decref(resp);
	json_decref(params);
	params = json_pack("{s:[s, s]}", "names", "r1", "zz");
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     -ENODEV);
	json_decref(resp);
	json_decref(params);
	params = json_pack("{s:s, s:[s]}", "name", "r1", "names", "r1");
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	json_decref(params);
	params = json_pack("{s:[i]}", "names", 1);
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	json_decref(params);
	params = json_pack("{s:b}", "per_channel", 1);
	resp = rpc_sync("bdev_get_iostat", params, &rr);
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_object_get(resp, "error"), "message")),
			 "per_channel true: not supported by gga");
	json_decref(resp);
	json_decref(params);

	bdev_module_release_bdev(&d2.bdev);
	io_env_teardown(&e);
	ut_stop();
}

/*
 * Suite set-up.
 */

static int
suite_init(void)
{
	struct env_opts opts;
	int i;

	env_opts_init(&opts);
	opts.name = "bdev_ut";
	opts.arena_size = 64ull << 20;
	opts.no_huge = true;
	if (env_init(&opts) != 0) {
		return -1;
	}
	if (thread_lib_init() != 0) {
		return -1;
	}
	for (i = 0; i < UT_NUM_THREADS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "ut%d", i);
		g_thread[i] = thread_create(name);
		if (g_thread[i] == NULL) {
			return -1;
		}
	}
	set_thread(0);
	bdev_module_register(&g_ut_module);
	bdev_module_register(&g_ut_virt_module);
	/* Twice is refused. */
	bdev_module_register(&g_ut_module);
	return 0;
}

static int
suite_fini(void)
{
	int i, j;

	/* No CUnit asserts out here: just drain what is left. */
	for (j = 0; j < 1000; j++) {
		for (i = 0; i < UT_NUM_THREADS; i++) {
			thread_set_current(g_thread[i]);
			thread_poll(g_thread[i], 0, 0);
		}
	}
	thread_set_current(NULL);
	for (i = UT_NUM_THREADS - 1; i >= 0; i--) {
		thread_destroy(g_thread[i]);
	}
	thread_lib_fini();
	rpc_unregister_all();
	mempool_thread_flush();
	env_fini();
	return 0;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_register_validation),
		UT_TEST(test_open_close_claim),
		UT_TEST(test_hot_remove),
		UT_TEST(test_health),
		UT_TEST(test_space),
		UT_TEST(test_close_before_notify),
		UT_TEST(test_destruct_async),
		UT_TEST(test_io_async_contract),
		UT_TEST(test_io_errors),
		UT_TEST(test_nomem_requeue),
		UT_TEST(test_pool_exhaustion),
		UT_TEST(test_reset_aborts),
		UT_TEST(test_iostat),
		UT_TEST(test_nvme_status),
		UT_TEST(test_nvme_resv),
		UT_TEST(test_fini_stacked),
		UT_TEST(test_init_failure),
		UT_TEST(test_rpc),
	};

	return ut_run("bdev", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
