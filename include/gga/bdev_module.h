/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Block device layer: the API for bdev modules (malloc, null, error, file,
 * nvme, gga).
 *
 * A module fills a `struct bdev_module` and registers it explicitly at
 * start-up with bdev_module_register() (module/bdev/bdev_modules.c lists
 * them). Each bdev it creates fills a `struct bdev` (name, geometry, function
 * table, ctxt) and calls bdev_register(). The bdev layer makes the bdev an
 * io_device; each thread's bdev channel wraps the module's own channel from
 * fn_table->get_io_channel.
 *
 * Per-I/O module state lives in bdev_io->driver_ctx (get_ctx_size bytes), so
 * the I/O path never allocates.
 */
#ifndef GGA_BDEV_MODULE_H
#define GGA_BDEV_MODULE_H

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/util.h"

struct bdev_module {
	const char *name;
	/* Called once at bdev subsystem start. Returns 0 or a negative errno. */
	int (*module_init)(void);
	/* Called once at shutdown, after every bdev is unregistered. */
	void (*module_fini)(void);
	/* Bytes of per-I/O context the module needs in bdev_io->driver_ctx. */
	size_t (*get_ctx_size)(void);
	/* Module-wide options as RPC calls appended to `config` (may be NULL). */
	void (*config_json)(json_t *config);

	TAILQ_ENTRY(bdev_module) link; /* bdev layer */
};

/* Register a module. Only before the bdev subsystem starts. */
void bdev_module_register(struct bdev_module *module);
struct bdev_module *bdev_module_find(const char *name);

struct bdev_fn_table {
	/*
	 * Release the module's resources for this bdev. Return 0 when done, or 1
	 * to finish later by calling bdev_destruct_done(); a negative errno is
	 * logged and the bdev is removed anyway.
	 */
	int (*destruct)(void *ctxt);
	/*
	 * Start an I/O. The module completes it, later or at once, with
	 * bdev_io_complete(). `ch` is the module's channel from get_io_channel.
	 */
	void (*submit_request)(struct io_channel *ch, struct bdev_io *io);
	bool (*io_type_supported)(void *ctxt, enum bdev_io_type type);
	/* The calling thread's module channel (io_channel_get on some device). */
	struct io_channel *(*get_io_channel)(void *ctxt);
	/* Optional: add module-specific fields to `info` (bdev_get_bdevs "driver_specific"). */
	void (*dump_info_json)(void *ctxt, json_t *info);
	/*
	 * Optional: append the RPC call that recreates this bdev to `config`, as
	 * {"method": ..., "params": {...}}. Bdevs are written in registration
	 * order, except that a bdev's bases (get_bases) are written before it.
	 */
	void (*write_config_json)(struct bdev *bdev, json_t *config);
	/*
	 * Optional, for a virtual bdev: fill bases[] (at most max) with the bdevs
	 * it is built on, as its configuration names them, and return how many.
	 * save_config writes them first: a base can be newer than the bdev over
	 * it (a gga member replaced by a bdev created later).
	 */
	int (*get_bases)(void *ctxt, struct bdev **bases, int max);
	/* Optional: bdev_is_accessible (absent: always). Any thread. */
	bool (*is_accessible)(void *ctxt);
	/* Optional: bdev_get_health (absent: whole). Any thread. */
	void (*get_health)(void *ctxt, struct bdev_health *health);
	/*
	 * Optional, for a thin bdev: fill *space (bdev_get_space; zeroed
	 * first). Any thread, cheap: a target calls it at each Identify. A
	 * thin bdev fails a write it has no room for with
	 * bdev_io_complete_nvme_status(io, NVME_SCT_GENERIC,
	 * NVME_SC_CAPACITY_EXCEEDED), having written none of it.
	 */
	void (*get_space)(void *ctxt, struct bdev_space *space);
};

/* The most bases a get_bases callback is asked for. */
#define BDEV_MAX_BASES 32

struct bdev_internal;

struct bdev {
	/* Filled by the module before bdev_register(). */
	char *name;               /* unique; owned by the module */
	const char *product_name; /* "Malloc disk", ... */
	uint32_t block_size;
	uint32_t md_size;
	uint64_t num_blocks;
	uint32_t buf_align; /* 0 or 1 = no requirement */
	uint8_t uuid[16];   /* all zero: the layer generates one */
	void *ctxt;
	const struct bdev_fn_table *fn_table;
	struct bdev_module *module;

	/* Owned by the bdev layer. */
	struct bdev_internal *internal;
	TAILQ_ENTRY(bdev) link;
};

/*
 * Register a bdev (app thread). Returns 0, -EEXIST (name taken), -EINVAL (no
 * name, block_size not a power of two in 512..65536 — md_size excepted —,
 * zero blocks, missing fn_table entries), -ENOMEM.
 */
int bdev_register(struct bdev *bdev);

typedef void (*bdev_unregister_cb)(void *cb_arg, int rc);
/*
 * Remove a bdev (app thread): refuse new opens, send BDEV_EVENT_REMOVE to
 * every open descriptor, wait for them to close and their channels to go,
 * call fn_table->destruct, then cb (may be NULL) with 0. An unregister
 * already in progress gets -EBUSY.
 */
void bdev_unregister(struct bdev *bdev, bdev_unregister_cb cb, void *cb_arg);

/*
 * Send BDEV_EVENT_MEDIA_CHANGED to every open descriptor of a registered bdev
 * (each on its own thread). Any thread.
 */
void bdev_notify_media_changed(struct bdev *bdev);
/* The same with BDEV_EVENT_OFFLINE (any thread). */
void bdev_notify_offline(struct bdev *bdev);
/* The same with BDEV_EVENT_ACCESS_CHANGED (any thread). */
void bdev_notify_access_changed(struct bdev *bdev);
/* The same with BDEV_EVENT_HEALTH_CHANGED (any thread; before registration: nothing). */
void bdev_notify_health_changed(struct bdev *bdev);

/*
 * Delete-RPC helper: look up `name`, check it belongs to `module`, unregister.
 * Returns 0 (cb will be called), -ENODEV (no such bdev, or another module's).
 */
int bdev_unregister_by_name(const char *name, struct bdev_module *module, bdev_unregister_cb cb,
			    void *cb_arg);

/*
 * The body of a module's bdev_<kind>_delete RPC: decode {"name": string},
 * call delete_fn(name, cb, cb_arg) and answer true when it completes, or the
 * error: -ENODEV as "<kind> bdev 'x' does not exist", -EBUSY as "... is
 * already being removed". delete_fn follows the async contract.
 */
struct rpc_request;
typedef int (*bdev_delete_fn)(const char *name, bdev_unregister_cb cb, void *cb_arg);
void bdev_rpc_delete(struct rpc_request *req, json_t *params, bdev_delete_fn delete_fn,
		     const char *kind);

/* For destruct returning 1. */
void bdev_destruct_done(struct bdev *bdev, int rc);

/*
 * Claims: a virtual bdev claims its bases so nothing else opens them for
 * write. Returns 0 or -EPERM (already claimed by another module, or open
 * for writing through a descriptor other than desc).
 */
int bdev_module_claim_bdev(struct bdev *bdev, struct bdev_desc *desc, struct bdev_module *module);
void bdev_module_release_bdev(struct bdev *bdev);

enum bdev_io_status {
	BDEV_IO_STATUS_PENDING = 0,
	BDEV_IO_STATUS_SUCCESS,
	BDEV_IO_STATUS_FAILED,
	/* Out of resources: the layer queues the I/O and resubmits it later. */
	BDEV_IO_STATUS_NOMEM,
	BDEV_IO_STATUS_ABORTED,
	/* A specific NVMe status, set with bdev_io_complete_nvme_status(). */
	BDEV_IO_STATUS_NVME_ERROR,
};

struct bdev_channel;

struct bdev_io {
	struct bdev *bdev;
	enum bdev_io_type type;
	/* Parameters of block I/O. For flush/unmap/write_zeroes iovs is NULL. */
	struct {
		struct iovec *iovs;
		int iovcnt;
		uint64_t offset_blocks;
		uint64_t num_blocks;
		struct bdev_nvme_resv_cmd resv; /* BDEV_IO_TYPE_NVME_RESV */
	} u;

	/* Owned by the bdev layer. */
	struct {
		enum bdev_io_status status;
		int nvme_sct;
		int nvme_sc;
		bdev_io_completion_cb cb;
		void *cb_arg;
		struct bdev_desc *desc;
		struct bdev_channel *ch;
		uint64_t submit_ticks;
		bool in_submit;
		struct iovec iov; /* storage for single-buffer calls */
		TAILQ_ENTRY(bdev_io) link;
	} internal;

	/* Module context: get_ctx_size() bytes. */
	uint8_t driver_ctx[] __attribute__((aligned(16)));
};

/*
 * Complete an I/O (on the thread it was submitted on). The user's callback
 * runs after this returns if called from inside submit_request, directly
 * otherwise. NOMEM requeues instead of completing.
 */
void bdev_io_complete(struct bdev_io *io, enum bdev_io_status status);
void bdev_io_complete_nvme_status(struct bdev_io *io, int sct, int sc);

static inline struct bdev_io *
bdev_io_from_ctx(void *ctx)
{
	return container_of(ctx, struct bdev_io, driver_ctx);
}

/* The thread the I/O was submitted on. */
struct thread *bdev_io_get_thread(struct bdev_io *io);

/*
 * The bdev subsystem (called by the app framework on the app thread).
 * bdev_subsystem_init runs every module's module_init, sizes the bdev_io
 * pool, registers the bdev RPCs, and returns 0 or the first error.
 * bdev_subsystem_fini unregisters every bdev, top-most first, runs
 * module_fini, and then calls cb.
 */
int bdev_subsystem_init(void);
/* Register the bdev RPC methods (bdev_get_bdevs, bdev_get_iostat); done by bdev_subsystem_init. */
void bdev_rpc_register(void);
void bdev_subsystem_fini(void (*cb)(void *arg), void *arg);
/* Append the bdev subsystem's configuration (module options, then bdevs). */
void bdev_subsystem_config_json(json_t *config);

#endif /* GGA_BDEV_MODULE_H */
