/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness of the bdev unit tests (see bdev_ut_module.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga_ut.h"

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "bdev_ut_module.h"

struct thread *g_thread[UT_NUM_THREADS];

/*
 * Polling.
 */

void
set_thread(int i)
{
	thread_set_current(g_thread[i]);
}

/* Poll every thread until a few rounds in a row find nothing to do. */
void
poll_threads(void)
{
	int busy, i, idle_rounds = 0, rounds;

	for (rounds = 0; rounds < 100000 && idle_rounds < 3; rounds++) {
		busy = 0;
		for (i = 0; i < UT_NUM_THREADS; i++) {
			thread_set_current(g_thread[i]);
			busy += thread_poll(g_thread[i], 0, 0) > 0;
		}
		idle_rounds = busy != 0 ? 0 : idle_rounds + 1;
	}
	CU_ASSERT(idle_rounds >= 3);
	set_thread(0);
}

/* Poll every thread for at least `us` microseconds of wall time (for timed pollers). */
void
poll_threads_for_us(uint64_t us)
{
	uint64_t end = time_now_ns() + us * 1000;
	int i;

	while (time_now_ns() < end) {
		for (i = 0; i < UT_NUM_THREADS; i++) {
			thread_set_current(g_thread[i]);
			thread_poll(g_thread[i], 0, 0);
		}
	}
	poll_threads();
}

/*
 * The "ut" module.
 */

static uint8_t g_ut_io_device;
struct ut_channel *g_ut_ch[UT_NUM_THREADS];
char g_events[256];
/* True while the test is inside a bdev submit call: callbacks must not run then. */
bool g_in_submit_call;
int g_callbacks_inside_submit;

void
event_log(const char *fmt, const char *name)
{
	size_t len = strlen(g_events);

	snprintf(g_events + len, sizeof(g_events) - len, fmt, name);
}

static int
ut_channel_create(void *io_device, void *ctx_buf)
{
	struct ut_channel *ch = ctx_buf;

	TAILQ_INIT(&ch->pending);
	ch->thread = thread_get_current();
	g_ut_ch[thread_get_id(ch->thread)] = ch;
	return 0;
}

static void
ut_channel_destroy(void *io_device, void *ctx_buf)
{
	struct ut_channel *ch = ctx_buf;

	CU_ASSERT(TAILQ_EMPTY(&ch->pending));
	g_ut_ch[thread_get_id(ch->thread)] = NULL;
}

static int
ut_module_init(void)
{
	event_log("init:%s ", "ut");
	io_device_register(&g_ut_io_device, ut_channel_create, ut_channel_destroy,
			   sizeof(struct ut_channel), "ut");
	return 0;
}

static void
ut_module_fini(void)
{
	event_log("fini:%s ", "ut");
	io_device_unregister(&g_ut_io_device, NULL);
}

static size_t
ut_get_ctx_size(void)
{
	return sizeof(struct ut_io_ctx);
}

static void
ut_config_json(json_t *config)
{
	json_array_append_new(config, json_pack("{s:s}", "method", "ut_set_options"));
}

static int
ut_virt_module_init(void)
{
	event_log("init:%s ", "ut_virt");
	return 0;
}

static void
ut_virt_module_fini(void)
{
	event_log("fini:%s ", "ut_virt");
}

struct bdev_module g_ut_module = {
	.name = "ut",
	.module_init = ut_module_init,
	.module_fini = ut_module_fini,
	.get_ctx_size = ut_get_ctx_size,
	.config_json = ut_config_json,
};

struct bdev_module g_ut_virt_module = {
	.name = "ut_virt",
	.module_init = ut_virt_module_init,
	.module_fini = ut_virt_module_fini,
};

static int
ut_destruct(void *ctxt)
{
	struct ut_disk *disk = ctxt;
	int i;

	disk->destruct_calls++;
	event_log("destruct:%s ", disk->bdev.name);
	for (i = 0; i < disk->nbases; i++) {
		bdev_module_release_bdev(bdev_desc_get_bdev(disk->base_desc[i]));
		bdev_close(disk->base_desc[i]);
		disk->base_desc[i] = NULL;
	}
	disk->nbases = 0;
	return disk->destruct_rc;
}

static void
ut_submit_request(struct io_channel *_ch, struct bdev_io *io)
{
	struct ut_disk *disk = io->bdev->ctxt;
	struct ut_channel *ch = io_channel_get_ctx(_ch);
	struct ut_io_ctx *ctx = (struct ut_io_ctx *)io->driver_ctx;

	CU_ASSERT(io->type > BDEV_IO_TYPE_INVALID && io->type < BDEV_NUM_IO_TYPES);
	CU_ASSERT(bdev_io_from_ctx(ctx) == io);
	disk->submitted[io->type]++;
	disk->last_io = io;
	disk->last_thread = thread_get_current();
	disk->last_offset = io->u.offset_blocks;
	disk->last_num = io->u.num_blocks;
	disk->last_iovcnt = io->u.iovcnt;
	disk->last_len = io->u.iovs != NULL ? iov_length(io->u.iovs, io->u.iovcnt) : 0;
	disk->last_base = io->u.iovs != NULL ? io->u.iovs[0].iov_base : NULL;
	CU_ASSERT(ch->thread == thread_get_current());
	CU_ASSERT(bdev_io_get_thread(io) == thread_get_current());
	if (disk->nomem_next > 0 && io->type != BDEV_IO_TYPE_RESET) {
		disk->nomem_next--;
		bdev_io_complete(io, BDEV_IO_STATUS_NOMEM);
		return;
	}
	if (disk->mode == UT_COMPLETE_INLINE) {
		bdev_io_complete(io, disk->inline_status);
		return;
	}
	ctx->magic = 0x75747574;
	TAILQ_INSERT_TAIL(&ch->pending, ctx, link);
	ch->npending++;
}

static bool
ut_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	struct ut_disk *disk = ctxt;

	return !disk->unsupported[type];
}

static struct io_channel *
ut_get_io_channel(void *ctxt)
{
	return io_channel_get(&g_ut_io_device);
}

static void
ut_dump_info_json(void *ctxt, json_t *info)
{
	json_object_set_new(info, "ut", json_pack("{s:b}", "fake", 1));
}

static void
ut_write_config_json(struct bdev *bdev, json_t *config)
{
	json_array_append_new(config, json_pack("{s:s, s:{s:s}}", "method", "bdev_ut_create",
						"params", "name", bdev->name));
}

const struct bdev_fn_table g_ut_fn_table = {
	.destruct = ut_destruct,
	.submit_request = ut_submit_request,
	.io_type_supported = ut_io_type_supported,
	.get_io_channel = ut_get_io_channel,
	.dump_info_json = ut_dump_info_json,
	.write_config_json = ut_write_config_json,
};

void
ut_disk_init(struct ut_disk *disk, const char *name, uint32_t md_size)
{
	memset(disk, 0, sizeof(*disk));
	disk->bdev.name = (char *)name;
	disk->bdev.product_name = "UT disk";
	disk->bdev.block_size = UT_BLOCK_SIZE;
	disk->bdev.md_size = md_size;
	disk->bdev.num_blocks = UT_NUM_BLOCKS;
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &g_ut_fn_table;
	disk->bdev.module = &g_ut_module;
	disk->inline_status = BDEV_IO_STATUS_SUCCESS;
}

/* Complete up to `max` I/Os the module holds on thread `t`, on that thread. */
int
ut_complete(int t, enum bdev_io_status status, int max)
{
	struct ut_channel *ch = g_ut_ch[thread_get_id(g_thread[t])];
	struct ut_io_ctx *ctx;
	int n = 0;

	if (ch == NULL) {
		return 0;
	}
	set_thread(t);
	while (n < max && (ctx = TAILQ_FIRST(&ch->pending)) != NULL) {
		TAILQ_REMOVE(&ch->pending, ctx, link);
		ch->npending--;
		CU_ASSERT(ctx->magic == 0x75747574);
		bdev_io_complete(bdev_io_from_ctx(ctx), status);
		n++;
	}
	set_thread(0);
	return n;
}

/* Take the oldest I/O the module holds on thread `t` without completing it. */
struct bdev_io *
ut_pop(int t)
{
	struct ut_channel *ch = g_ut_ch[thread_get_id(g_thread[t])];
	struct ut_io_ctx *ctx = ch != NULL ? TAILQ_FIRST(&ch->pending) : NULL;

	if (ctx == NULL) {
		return NULL;
	}
	TAILQ_REMOVE(&ch->pending, ctx, link);
	ch->npending--;
	return bdev_io_from_ctx(ctx);
}

uint32_t
ut_pending(int t)
{
	struct ut_channel *ch = g_ut_ch[thread_get_id(g_thread[t])];

	return ch != NULL ? ch->npending : 0;
}

/*
 * Callbacks.
 */

void
ut_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct ut_io_result *r = cb_arg;

	if (g_in_submit_call) {
		g_callbacks_inside_submit++;
	}
	r->count++;
	r->success = success;
	r->err = bdev_io_get_errno(io);
	bdev_io_get_nvme_status(io, &r->sct, &r->sc);
	r->type = io->type;
	r->thread = thread_get_current();
	CU_ASSERT(bdev_io_get_thread(io) == r->thread);
	bdev_free_io(io);
}

void
ut_event_cb(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct ut_event *ev = ctx;

	ev->count++;
	ev->thread = thread_get_current();
	ev->bdev = bdev;
	ev->type = type;
}

void
ut_unregister_done(void *cb_arg, int rc)
{
	struct ut_unregister *u = cb_arg;

	u->count++;
	u->rc = rc;
}

/* Unregister and wait until done. */
void
ut_unregister_sync(struct bdev *bdev)
{
	struct ut_unregister u = { 0 };

	set_thread(0);
	bdev_unregister(bdev, ut_unregister_done, &u);
	poll_threads();
	UT_ASSERT_EQ(u.count, 1);
	UT_ASSERT_EQ(u.rc, 0);
}
