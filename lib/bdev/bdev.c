/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bdev registry: modules, bdev registration and unregistration,
 * descriptors, claims, and the bdev subsystem's start, stop and
 * configuration dump. The I/O path lives in bdev_io.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/log.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_internal.h"

#define BDEV_MIN_BLOCK_SIZE 512u
#define BDEV_MAX_BLOCK_SIZE 65536u
#define BDEV_MAX_MD_SIZE    4096u

/* bdev_io pool: enough for deep queues on every core; per-thread cache for the I/O path. */
#define BDEV_IO_POOL_SIZE  65535u
#define BDEV_IO_CACHE_SIZE 256u

/*
 * Guards the bdev list and each bdev's descriptors, claims and state, which
 * bdev_open()/bdev_close() touch from any thread. Never taken on the I/O path.
 */
pthread_mutex_t g_bdev_mutex = PTHREAD_MUTEX_INITIALIZER;
struct bdev_list g_bdevs = TAILQ_HEAD_INITIALIZER(g_bdevs);

static TAILQ_HEAD(bdev_module_tailq, bdev_module) g_modules = TAILQ_HEAD_INITIALIZER(g_modules);

/* Pool sizing; tests shrink it to exercise exhaustion. */
static size_t g_io_pool_size = BDEV_IO_POOL_SIZE;
static size_t g_io_cache_size = BDEV_IO_CACHE_SIZE;

enum subsystem_state {
	SUBSYSTEM_STOPPED = 0,
	SUBSYSTEM_RUNNING,
	SUBSYSTEM_STOPPING,
};

static enum subsystem_state g_subsystem_state;
static void (*g_fini_cb)(void *arg);
static void *g_fini_arg;
/* bdev_subsystem_fini found only bdevs already being unregistered by someone else. */
static bool g_fini_waiting;

static void fini_unregister_next(void);

/*
 * Modules.
 */

void
bdev_module_register(struct bdev_module *module)
{
	if (module == NULL || module->name == NULL) {
		ERRLOG("bdev module without a name\n");
		return;
	}
	if (bdev_module_find(module->name) != NULL) {
		ERRLOG("bdev module '%s' registered twice\n", module->name);
		return;
	}
	if (g_subsystem_state != SUBSYSTEM_STOPPED) {
		WARNLOG("bdev module '%s' registered after the bdev subsystem started\n",
			module->name);
	}
	TAILQ_INSERT_TAIL(&g_modules, module, link);
}

struct bdev_module *
bdev_module_find(const char *name)
{
	struct bdev_module *module;

	TAILQ_FOREACH(module, &g_modules, link) {
		if (strcmp(module->name, name) == 0) {
			return module;
		}
	}
	return NULL;
}

/*
 * Registration.
 */

/* Caller holds g_bdev_mutex. */
static struct bdev *
bdev_lookup(const char *name)
{
	struct bdev *bdev;

	TAILQ_FOREACH(bdev, &g_bdevs, link) {
		if (strcmp(bdev->name, name) == 0) {
			return bdev;
		}
	}
	return NULL;
}

static int
bdev_validate(const struct bdev *bdev)
{
	const struct bdev_fn_table *fn = bdev->fn_table;

	if (bdev->name == NULL || bdev->name[0] == '\0') {
		ERRLOG("bdev without a name\n");
		return -EINVAL;
	}
	if (!is_pow2(bdev->block_size) || bdev->block_size < BDEV_MIN_BLOCK_SIZE ||
	    bdev->block_size > BDEV_MAX_BLOCK_SIZE) {
		ERRLOG("bdev %s: block size %u is not a power of two in %u..%u\n", bdev->name,
		       bdev->block_size, BDEV_MIN_BLOCK_SIZE, BDEV_MAX_BLOCK_SIZE);
		return -EINVAL;
	}
	if (bdev->md_size > BDEV_MAX_MD_SIZE) {
		ERRLOG("bdev %s: metadata size %u exceeds %u\n", bdev->name, bdev->md_size,
		       BDEV_MAX_MD_SIZE);
		return -EINVAL;
	}
	if (bdev->num_blocks == 0) {
		ERRLOG("bdev %s: zero blocks\n", bdev->name);
		return -EINVAL;
	}
	if (bdev->buf_align > 1 && !is_pow2(bdev->buf_align)) {
		ERRLOG("bdev %s: buffer alignment %u is not a power of two\n", bdev->name,
		       bdev->buf_align);
		return -EINVAL;
	}
	if (fn == NULL || fn->destruct == NULL || fn->submit_request == NULL ||
	    fn->io_type_supported == NULL || fn->get_io_channel == NULL) {
		ERRLOG("bdev %s: function table incomplete\n", bdev->name);
		return -EINVAL;
	}
	if (bdev->module == NULL) {
		ERRLOG("bdev %s: no module\n", bdev->name);
		return -EINVAL;
	}
	return 0;
}

int
bdev_register(struct bdev *bdev)
{
	struct bdev_internal *internal;
	int rc;

	if (bdev == NULL) {
		return -EINVAL;
	}
	rc = bdev_validate(bdev);
	if (rc != 0) {
		return rc;
	}

	internal = calloc(1, sizeof(*internal));
	if (internal == NULL) {
		return -ENOMEM;
	}
	TAILQ_INIT(&internal->descs);
	bdev_io_stat_init(&internal->stat_gone);
	rc = pthread_mutex_init(&internal->stat_mutex, NULL);
	if (rc != 0) {
		free(internal);
		return -rc;
	}

	pthread_mutex_lock(&g_bdev_mutex);
	if (bdev_lookup(bdev->name) != NULL) {
		pthread_mutex_unlock(&g_bdev_mutex);
		ERRLOG("bdev %s: name already exists\n", bdev->name);
		pthread_mutex_destroy(&internal->stat_mutex);
		free(internal);
		return -EEXIST;
	}
	if (uuid_is_null(bdev->uuid)) {
		uuid_generate(bdev->uuid);
	}
	uuid_format(bdev->uuid, internal->uuid_str);
	internal->state = BDEV_STATE_READY;
	bdev->internal = internal;
	io_device_register(bdev, bdev_channel_create_cb, bdev_channel_destroy_cb,
			   sizeof(struct bdev_channel), bdev->name);
	TAILQ_INSERT_TAIL(&g_bdevs, bdev, link);
	pthread_mutex_unlock(&g_bdev_mutex);

	DEBUGLOG(bdev, "bdev %s registered (%s, %" PRIu64 " x %u+%u)\n", bdev->name,
		 bdev->module->name, bdev->num_blocks, bdev->block_size, bdev->md_size);
	return 0;
}

/*
 * Unregistration: refuse opens → notify descriptors → wait for them to close
 * → io_device_unregister (waits for channels) → destruct → cb.
 */

static void
unregister_finish(struct bdev_internal *internal)
{
	bdev_unregister_cb cb = internal->unregister_cb;
	void *cb_arg = internal->unregister_arg;

	pthread_mutex_destroy(&internal->stat_mutex);
	free(internal);
	if (cb != NULL) {
		cb(cb_arg, 0);
	}
	if (g_fini_waiting) {
		g_fini_waiting = false;
		fini_unregister_next();
	}
}

void
bdev_destruct_done(struct bdev *bdev, int rc)
{
	struct bdev_internal *internal = bdev->internal;

	if (internal == NULL || internal->state != BDEV_STATE_DESTRUCTING) {
		ERRLOG("bdev %s: destruct_done without a destruct in progress\n", bdev->name);
		return;
	}
	if (rc < 0) {
		ERRLOG("bdev %s: destruct failed (%d); removed anyway\n", bdev->name, rc);
	}
	bdev->internal = NULL;
	unregister_finish(internal);
}

static void
bdev_io_device_unregistered(void *io_device)
{
	struct bdev *bdev = io_device;
	struct bdev_internal *internal = bdev->internal;
	int rc;

	pthread_mutex_lock(&g_bdev_mutex);
	TAILQ_REMOVE(&g_bdevs, bdev, link);
	internal->state = BDEV_STATE_DESTRUCTING;
	pthread_mutex_unlock(&g_bdev_mutex);

	DEBUGLOG(bdev, "bdev %s: destruct\n", bdev->name);
	/* After destruct returns 0 the module may have freed `bdev`: use `internal` only. */
	rc = bdev->fn_table->destruct(bdev->ctxt);
	if (rc == 1) {
		return;
	}
	if (rc < 0) {
		ERRLOG("destruct of a bdev failed (%d); removed anyway\n", rc);
	}
	unregister_finish(internal);
}

static void
unregister_descs_closed(void *ctx)
{
	struct bdev *bdev = ctx;

	io_device_unregister(bdev, bdev_io_device_unregistered);
}

/* On the descriptor's thread: deliver `type`, unless the descriptor was closed meanwhile. */
static void
desc_notify(struct bdev_desc *desc, enum bdev_event_type type)
{
	bool closed;

	pthread_mutex_lock(&g_bdev_mutex);
	desc->notify_pending--;
	closed = desc->closed;
	pthread_mutex_unlock(&g_bdev_mutex);
	if (closed) {
		if (desc->notify_pending == 0) {
			free(desc);
		}
		return;
	}
	/* event_cb may close the descriptor, which frees it: do not touch it afterwards. */
	desc->event_cb(type, desc->bdev, desc->event_ctx);
}

static void
desc_remove_notify(void *ctx)
{
	desc_notify(ctx, BDEV_EVENT_REMOVE);
}

static void
desc_media_notify(void *ctx)
{
	desc_notify(ctx, BDEV_EVENT_MEDIA_CHANGED);
}

static void
desc_offline_notify(void *ctx)
{
	desc_notify(ctx, BDEV_EVENT_OFFLINE);
}

static void
desc_access_notify(void *ctx)
{
	desc_notify(ctx, BDEV_EVENT_ACCESS_CHANGED);
}

/* Send `fn` to every open descriptor's thread (g_bdev_mutex held). */
static void
descs_notify(struct bdev *bdev, void (*fn)(void *ctx), const char *what)
{
	struct bdev_desc *desc;
	int rc;

	TAILQ_FOREACH(desc, &bdev->internal->descs, link) {
		/* Counted before sending: the message may run on another core at once. */
		desc->notify_pending++;
		rc = thread_send_msg(desc->thread, fn, desc);
		if (rc != 0) {
			desc->notify_pending--;
			ERRLOG("bdev %s: cannot notify a descriptor of %s (%d)\n", bdev->name, what,
			       rc);
		}
	}
}

static void
desc_health_notify(void *ctx)
{
	desc_notify(ctx, BDEV_EVENT_HEALTH_CHANGED);
}

/* Send fn to every open descriptor of a registered bdev (any thread). */
static void
notify_all(struct bdev *bdev, void (*fn)(void *ctx), const char *what)
{
	struct bdev_internal *internal = bdev->internal;

	if (internal == NULL) {
		return;
	}
	pthread_mutex_lock(&g_bdev_mutex);
	if (internal->state == BDEV_STATE_READY) {
		descs_notify(bdev, fn, what);
	}
	pthread_mutex_unlock(&g_bdev_mutex);
}

void
bdev_notify_media_changed(struct bdev *bdev)
{
	notify_all(bdev, desc_media_notify, "a media change");
}

void
bdev_notify_offline(struct bdev *bdev)
{
	notify_all(bdev, desc_offline_notify, "its base going offline");
}

void
bdev_notify_access_changed(struct bdev *bdev)
{
	notify_all(bdev, desc_access_notify, "a change of who serves it");
}

void
bdev_notify_health_changed(struct bdev *bdev)
{
	notify_all(bdev, desc_health_notify, "a change of its health");
}

bool
bdev_is_accessible(const struct bdev *bdev)
{
	return bdev->fn_table->is_accessible == NULL || bdev->fn_table->is_accessible(bdev->ctxt);
}

void
bdev_get_health(const struct bdev *bdev, struct bdev_health *health)
{
	memset(health, 0, sizeof(*health));
	health->spare_pct = 100;
	if (bdev->fn_table->get_health != NULL) {
		bdev->fn_table->get_health(bdev->ctxt, health);
	}
}

void
bdev_get_space(const struct bdev *bdev, struct bdev_space *space)
{
	memset(space, 0, sizeof(*space));
	if (bdev->fn_table->get_space != NULL) {
		bdev->fn_table->get_space(bdev->ctxt, space);
	}
	if (!space->thin) {
		space->dealloc_zeroes = false;
		space->used_blocks = bdev->num_blocks;
		space->capacity_blocks = bdev->num_blocks;
		return;
	}
	space->capacity_blocks = GGA_MIN(space->capacity_blocks, bdev->num_blocks);
	space->used_blocks = GGA_MIN(space->used_blocks, space->capacity_blocks);
}

void
bdev_unregister(struct bdev *bdev, bdev_unregister_cb cb, void *cb_arg)
{
	struct bdev_internal *internal = bdev->internal;
	bool no_descs;

	if (internal == NULL) {
		ERRLOG("bdev %s: unregister of a bdev that is not registered\n",
		       bdev->name != NULL ? bdev->name : "(null)");
		if (cb != NULL) {
			cb(cb_arg, -ENODEV);
		}
		return;
	}
	pthread_mutex_lock(&g_bdev_mutex);
	if (internal->state != BDEV_STATE_READY) {
		pthread_mutex_unlock(&g_bdev_mutex);
		WARNLOG("bdev %s: unregister already in progress\n", bdev->name);
		if (cb != NULL) {
			cb(cb_arg, -EBUSY);
		}
		return;
	}
	__atomic_store_n(&internal->state, BDEV_STATE_UNREGISTERING, __ATOMIC_RELAXED);
	internal->unregister_thread = thread_get_current() != NULL ? thread_get_current() :
								     thread_get_app();
	internal->unregister_cb = cb;
	internal->unregister_arg = cb_arg;
	descs_notify(bdev, desc_remove_notify, "removal");
	no_descs = TAILQ_EMPTY(&internal->descs);
	pthread_mutex_unlock(&g_bdev_mutex);

	DEBUGLOG(bdev, "bdev %s: unregistering\n", bdev->name);
	if (no_descs) {
		unregister_descs_closed(bdev);
	}
}

int
bdev_unregister_by_name(const char *name, struct bdev_module *module, bdev_unregister_cb cb,
			void *cb_arg)
{
	struct bdev *bdev;

	pthread_mutex_lock(&g_bdev_mutex);
	bdev = bdev_lookup(name);
	if (bdev == NULL || bdev->module != module) {
		pthread_mutex_unlock(&g_bdev_mutex);
		return -ENODEV;
	}
	pthread_mutex_unlock(&g_bdev_mutex);
	bdev_unregister(bdev, cb, cb_arg);
	return 0;
}

/*
 * Descriptors and claims.
 */

int
bdev_open(const char *name, bool write, bdev_event_cb event_cb, void *event_ctx,
	  struct bdev_desc **_desc)
{
	struct bdev_desc *desc;
	struct bdev *bdev;
	struct thread *thread = thread_get_current();

	if (name == NULL || event_cb == NULL || _desc == NULL || thread == NULL) {
		return -EINVAL;
	}
	desc = calloc(1, sizeof(*desc));
	if (desc == NULL) {
		return -ENOMEM;
	}

	pthread_mutex_lock(&g_bdev_mutex);
	bdev = bdev_lookup(name);
	if (bdev == NULL || bdev->internal->state != BDEV_STATE_READY) {
		pthread_mutex_unlock(&g_bdev_mutex);
		free(desc);
		return -ENODEV;
	}
	if (write && bdev->internal->claim_module != NULL) {
		pthread_mutex_unlock(&g_bdev_mutex);
		DEBUGLOG(bdev, "bdev %s: write open refused, claimed by %s\n", name,
			 bdev->internal->claim_module->name);
		free(desc);
		return -EPERM;
	}
	desc->bdev = bdev;
	desc->thread = thread;
	desc->event_cb = event_cb;
	desc->event_ctx = event_ctx;
	desc->write = write;
	TAILQ_INSERT_TAIL(&bdev->internal->descs, desc, link);
	pthread_mutex_unlock(&g_bdev_mutex);

	*_desc = desc;
	return 0;
}

void
bdev_close(struct bdev_desc *desc)
{
	struct bdev *bdev = desc->bdev;
	struct bdev_internal *internal = bdev->internal;
	bool last;
	int rc;

	if (desc->thread != thread_get_current()) {
		ERRLOG("bdev %s: descriptor closed on a thread that did not open it\n", bdev->name);
	}

	pthread_mutex_lock(&g_bdev_mutex);
	TAILQ_REMOVE(&internal->descs, desc, link);
	if (internal->claim_desc == desc) {
		/* The claim lives as long as the descriptor that took it. */
		internal->claim_module = NULL;
		internal->claim_desc = NULL;
	}
	last = internal->state == BDEV_STATE_UNREGISTERING && TAILQ_EMPTY(&internal->descs);
	if (desc->notify_pending > 0) {
		desc->closed = true;
	} else {
		free(desc);
	}
	pthread_mutex_unlock(&g_bdev_mutex);

	if (last) {
		rc = thread_send_msg(internal->unregister_thread, unregister_descs_closed, bdev);
		if (rc != 0) {
			ERRLOG("bdev %s: cannot continue unregistration (%d)\n", bdev->name, rc);
		}
	}
}

struct bdev *
bdev_desc_get_bdev(struct bdev_desc *desc)
{
	return desc->bdev;
}

int
bdev_module_claim_bdev(struct bdev *bdev, struct bdev_desc *desc, struct bdev_module *module)
{
	struct bdev_internal *internal = bdev->internal;
	struct bdev_desc *d;

	pthread_mutex_lock(&g_bdev_mutex);
	if (internal->claim_module != NULL && internal->claim_module != module) {
		pthread_mutex_unlock(&g_bdev_mutex);
		ERRLOG("bdev %s: already claimed by module %s\n", bdev->name,
		       internal->claim_module->name);
		return -EPERM;
	}
	/*
	 * A claim keeps writers out, so it cannot be taken over one (an NVMe-oF
	 * namespace): save_config would write the claimant before the writer,
	 * which could then not be opened again.
	 */
	TAILQ_FOREACH(d, &internal->descs, link) {
		if (d != desc && d->write) {
			pthread_mutex_unlock(&g_bdev_mutex);
			ERRLOG("bdev %s: open for writing elsewhere, cannot be claimed\n",
			       bdev->name);
			return -EPERM;
		}
	}
	internal->claim_module = module;
	internal->claim_desc = desc;
	if (desc != NULL) {
		/* The claiming module writes through its own descriptor. */
		desc->write = true;
	}
	pthread_mutex_unlock(&g_bdev_mutex);
	return 0;
}

void
bdev_module_release_bdev(struct bdev *bdev)
{
	pthread_mutex_lock(&g_bdev_mutex);
	bdev->internal->claim_module = NULL;
	bdev->internal->claim_desc = NULL;
	pthread_mutex_unlock(&g_bdev_mutex);
}

bool
bdev_is_claimed(const struct bdev *bdev)
{
	return bdev->internal->claim_module != NULL;
}

const char *
bdev_busy_reason(const char *bdev_name)
{
	static char buf[128];
	struct bdev *bdev;

	pthread_mutex_lock(&g_bdev_mutex);
	bdev = bdev_name != NULL ? bdev_lookup(bdev_name) : NULL;
	if (bdev != NULL && bdev->internal->claim_module != NULL) {
		snprintf(buf, sizeof(buf), "is a base of another bdev (claimed by the %s module)",
			 bdev->internal->claim_module->name);
	} else {
		snprintf(buf, sizeof(buf), "is open for writing elsewhere (an NVMe-oF namespace?)");
	}
	pthread_mutex_unlock(&g_bdev_mutex);
	return buf;
}

/*
 * Lookup, iteration and getters.
 */

struct bdev *
bdev_get_by_name(const char *name)
{
	struct bdev *bdev;

	if (name == NULL) {
		return NULL;
	}
	pthread_mutex_lock(&g_bdev_mutex);
	bdev = bdev_lookup(name);
	pthread_mutex_unlock(&g_bdev_mutex);
	return bdev;
}

struct bdev *
bdev_first(void)
{
	return TAILQ_FIRST(&g_bdevs);
}

struct bdev *
bdev_next(struct bdev *prev)
{
	return TAILQ_NEXT(prev, link);
}

const char *
bdev_get_name(const struct bdev *bdev)
{
	return bdev->name;
}

const char *
bdev_get_product_name(const struct bdev *bdev)
{
	return bdev->product_name != NULL ? bdev->product_name : "";
}

const char *
bdev_get_module_name(const struct bdev *bdev)
{
	return bdev->module->name;
}

uint32_t
bdev_get_block_size(const struct bdev *bdev)
{
	return bdev->block_size;
}

uint32_t
bdev_get_md_size(const struct bdev *bdev)
{
	return bdev->md_size;
}

uint32_t
bdev_get_buf_block_size(const struct bdev *bdev)
{
	return bdev->block_size + bdev->md_size;
}

uint64_t
bdev_get_num_blocks(const struct bdev *bdev)
{
	return bdev->num_blocks;
}

uint32_t
bdev_get_buf_align(const struct bdev *bdev)
{
	return bdev->buf_align > 1 ? bdev->buf_align : 1;
}

const uint8_t *
bdev_get_uuid(const struct bdev *bdev)
{
	return bdev->uuid;
}

const char *
bdev_get_uuid_str(const struct bdev *bdev)
{
	return bdev->internal->uuid_str;
}

bool
bdev_io_type_supported(struct bdev *bdev, enum bdev_io_type type)
{
	if (type <= BDEV_IO_TYPE_INVALID || type >= BDEV_NUM_IO_TYPES) {
		return false;
	}
	return bdev->fn_table->io_type_supported(bdev->ctxt, type);
}

const char *
bdev_io_type_name(enum bdev_io_type type)
{
	switch (type) {
	case BDEV_IO_TYPE_READ:
		return "read";
	case BDEV_IO_TYPE_WRITE:
		return "write";
	case BDEV_IO_TYPE_FLUSH:
		return "flush";
	case BDEV_IO_TYPE_WRITE_ZEROES:
		return "write_zeroes";
	case BDEV_IO_TYPE_UNMAP:
		return "unmap";
	case BDEV_IO_TYPE_RESET:
		return "reset";
	case BDEV_IO_TYPE_NVME_RESV:
		return "nvme_resv";
	default:
		return "invalid";
	}
}

/*
 * The subsystem.
 */

static void
modules_fini_reverse(struct bdev_module *last)
{
	struct bdev_module *module;

	for (module = last; module != NULL; module = TAILQ_PREV(module, bdev_module_tailq, link)) {
		if (module->module_fini != NULL) {
			module->module_fini();
		}
	}
}

int
bdev_subsystem_init(void)
{
	struct bdev_module *module;
	size_t ctx_size = 0, size;
	int rc;

	if (g_subsystem_state != SUBSYSTEM_STOPPED) {
		ERRLOG("bdev subsystem already started\n");
		return -EALREADY;
	}

	/* The pool and the per-thread channels first: a module may create bdevs in its init. */
	TAILQ_FOREACH(module, &g_modules, link) {
		if (module->get_ctx_size != NULL) {
			size = module->get_ctx_size();
			ctx_size = GGA_MAX(ctx_size, size);
		}
	}
	errno = 0;
	g_bdev_io_pool = mempool_create("bdev_io", g_io_pool_size,
					sizeof(struct bdev_io) + ctx_size, g_io_cache_size);
	if (g_bdev_io_pool == NULL) {
		rc = errno != 0 ? -errno : -ENOMEM;
		ERRLOG("cannot create the bdev_io pool of %zu x %zu bytes (%d)\n", g_io_pool_size,
		       sizeof(struct bdev_io) + ctx_size, rc);
		return rc;
	}
	io_device_register(&g_bdev_mgmt_device, bdev_mgmt_channel_create_cb,
			   bdev_mgmt_channel_destroy_cb, sizeof(struct bdev_mgmt_channel),
			   "bdev_mgmt");

	TAILQ_FOREACH(module, &g_modules, link) {
		if (module->module_init == NULL) {
			continue;
		}
		rc = module->module_init();
		if (rc != 0) {
			ERRLOG("bdev module %s: init failed (%d)\n", module->name, rc);
			goto out_fini_modules;
		}
	}

	bdev_rpc_register();
	g_subsystem_state = SUBSYSTEM_RUNNING;
	return 0;

out_fini_modules:
	/* Only the modules before the failed one were initialised. */
	modules_fini_reverse(TAILQ_PREV(module, bdev_module_tailq, link));
	io_device_unregister(&g_bdev_mgmt_device, NULL);
	mempool_free(g_bdev_io_pool);
	g_bdev_io_pool = NULL;
	return rc;
}

static void
fini_mgmt_unregistered(void *io_device)
{
	void (*cb)(void *arg) = g_fini_cb;
	void *arg = g_fini_arg;

	mempool_free(g_bdev_io_pool);
	g_bdev_io_pool = NULL;
	g_subsystem_state = SUBSYSTEM_STOPPED;
	g_fini_cb = NULL;
	g_fini_arg = NULL;
	if (cb != NULL) {
		cb(arg);
	}
}

static void
fini_unregister_done(void *cb_arg, int rc)
{
	fini_unregister_next();
}

/*
 * Pick the next bdev to remove: the most recently registered one that no
 * module claims, so virtual bdevs go before the bases they sit on (removing
 * a virtual bdev releases its claims). A claim with no claimer left (a cycle
 * or a module that forgot to release) must not stall shutdown, so when only
 * claimed bdevs remain the newest of them goes.
 */
static struct bdev *
fini_pick_bdev(bool *all_busy)
{
	struct bdev *bdev, *claimed = NULL;

	*all_busy = !TAILQ_EMPTY(&g_bdevs);
	TAILQ_FOREACH_REVERSE(bdev, &g_bdevs, bdev_list, link) {
		if (bdev->internal->state != BDEV_STATE_READY) {
			continue;
		}
		*all_busy = false;
		if (bdev->internal->claim_module == NULL) {
			return bdev;
		}
		if (claimed == NULL) {
			claimed = bdev;
		}
	}
	if (claimed != NULL) {
		WARNLOG("bdev %s: still claimed by %s at shutdown; unregistering it anyway\n",
			claimed->name, claimed->internal->claim_module->name);
	}
	return claimed;
}

static void
fini_unregister_next(void)
{
	struct bdev_module *module;
	struct bdev *bdev;
	bool all_busy;

	pthread_mutex_lock(&g_bdev_mutex);
	bdev = fini_pick_bdev(&all_busy);
	pthread_mutex_unlock(&g_bdev_mutex);

	if (bdev != NULL) {
		DEBUGLOG(bdev, "shutdown: unregistering bdev %s\n", bdev->name);
		bdev_unregister(bdev, fini_unregister_done, NULL);
		return;
	}
	if (all_busy) {
		/* unregister_finish() resumes us when one of them is gone. */
		g_fini_waiting = true;
		return;
	}

	/* Every bdev is gone. */
	module = TAILQ_LAST(&g_modules, bdev_module_tailq);
	modules_fini_reverse(module);
	io_device_unregister(&g_bdev_mgmt_device, fini_mgmt_unregistered);
}

void
bdev_subsystem_fini(void (*cb)(void *arg), void *arg)
{
	if (g_subsystem_state != SUBSYSTEM_RUNNING) {
		WARNLOG("bdev subsystem is not running\n");
		if (cb != NULL) {
			cb(arg);
		}
		return;
	}
	g_subsystem_state = SUBSYSTEM_STOPPING;
	g_fini_cb = cb;
	g_fini_arg = arg;
	fini_unregister_next();
}

/* The bdevs written so far by one save_config (app thread). */
struct config_written {
	struct bdev **bdevs;
	size_t count;
	size_t size;
};

static bool
config_was_written(const struct config_written *w, const struct bdev *bdev)
{
	size_t i;

	for (i = 0; i < w->count; i++) {
		if (w->bdevs[i] == bdev) {
			return true;
		}
	}
	return false;
}

/* Write bdev's call after those of its bases (depth-first; each bdev once). */
static void
config_write_bdev(struct bdev *bdev, json_t *config, struct config_written *w)
{
	struct bdev *bases[BDEV_MAX_BASES];
	int n, i;

	if (config_was_written(w, bdev) || w->count == w->size) {
		return;
	}
	/* Marked first: a cycle of bases (none should exist) cannot recurse forever. */
	w->bdevs[w->count++] = bdev;
	if (bdev->fn_table->get_bases != NULL) {
		n = bdev->fn_table->get_bases(bdev->ctxt, bases, BDEV_MAX_BASES);
		for (i = 0; i < n && i < BDEV_MAX_BASES; i++) {
			if (bases[i] != NULL) {
				config_write_bdev(bases[i], config, w);
			}
		}
	}
	if (bdev->fn_table->write_config_json != NULL) {
		bdev->fn_table->write_config_json(bdev, config);
	}
}

void
bdev_subsystem_config_json(json_t *config)
{
	struct config_written w = { 0 };
	struct bdev_module *module;
	struct bdev *bdev;
	size_t n = 0;

	TAILQ_FOREACH(module, &g_modules, link) {
		if (module->config_json != NULL) {
			module->config_json(config);
		}
	}
	TAILQ_FOREACH(bdev, &g_bdevs, link) {
		n++;
	}
	w.size = n;
	w.bdevs = calloc(n + 1, sizeof(*w.bdevs));
	TAILQ_FOREACH(bdev, &g_bdevs, link) {
		if (w.bdevs == NULL) {
			/* Out of memory: registration order, as before bases were known. */
			if (bdev->fn_table->write_config_json != NULL) {
				bdev->fn_table->write_config_json(bdev, config);
			}
			continue;
		}
		config_write_bdev(bdev, config, &w);
	}
	free(w.bdevs);
}
