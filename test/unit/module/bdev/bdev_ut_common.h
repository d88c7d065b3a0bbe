/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared harness of the bdev module unit tests: an env arena, an app thread
 * and a worker thread driven by hand from the test's OS thread, the bdev
 * subsystem, synchronous wrappers around bdev I/O and in-process RPC calls.
 * Every wait is bounded by UT_TIMEOUT_NS.
 */
#ifndef GGA_UT_BDEV_COMMON_H
#define GGA_UT_BDEV_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "gga_ut.h"

#define UT_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)

static struct thread *g_ut_app;
static struct thread *g_ut_worker;

/* One iteration of every thread; the app thread stays current. */
static inline int
ut_poll_once(void)
{
	int busy = 0;

	busy += thread_poll(g_ut_app, 0, 0);
	busy += thread_poll(g_ut_worker, 0, 0);
	return busy;
}

/* Poll until `cond` holds or the timeout passes. */
#define UT_POLL_UNTIL(cond)                                            \
	do {                                                           \
		uint64_t _ut_deadline = time_now_ns() + UT_TIMEOUT_NS; \
		while (!(cond) && time_now_ns() < _ut_deadline) {      \
			ut_poll_once();                                \
		}                                                      \
	} while (0)

/* Poll until a few consecutive rounds find nothing to do (bounded). */
static inline void
ut_poll_idle(void)
{
	uint64_t deadline = time_now_ns() + UT_TIMEOUT_NS;
	int idle = 0;

	while (idle < 4 && time_now_ns() < deadline) {
		idle = ut_poll_once() == 0 ? idle + 1 : 0;
	}
}

/*
 * Set up env (an arena of arena_size bytes, named name), the app and worker
 * threads, the modules (register_modules) and the bdev subsystem.
 */
static inline int
ut_setup_arena(void (*register_modules)(void), const char *name, size_t arena_size)
{
	struct env_opts opts;

	env_opts_init(&opts);
	opts.name = name;
	opts.arena_size = arena_size;
	opts.no_huge = true;
	if (env_init(&opts) != 0) {
		return -1;
	}
	if (thread_lib_init() != 0) {
		return -1;
	}
	g_ut_app = thread_create("app");
	g_ut_worker = thread_create("worker");
	if (g_ut_app == NULL || g_ut_worker == NULL) {
		return -1;
	}
	thread_set_current(g_ut_app);
	register_modules();
	rpc_set_state(RPC_STATE_RUNTIME);
	if (bdev_subsystem_init() != 0) {
		return -1;
	}
	ut_poll_idle();
	return 0;
}

/* ut_setup_arena with a 64 MiB arena: what the module tests need. */
static inline int
ut_setup(void (*register_modules)(void))
{
	return ut_setup_arena(register_modules, "bdev_module_ut", 64ull * 1024 * 1024);
}

static inline void
ut_set_true(void *arg)
{
	*(bool *)arg = true;
}

static inline int
ut_teardown(void)
{
	bool done = false;

	bdev_subsystem_fini(ut_set_true, &done);
	UT_POLL_UNTIL(done);
	ut_poll_idle();
	rpc_unregister_all();
	thread_set_current(NULL);
	thread_destroy(g_ut_worker);
	thread_destroy(g_ut_app);
	thread_lib_fini();
	env_fini();
	return done ? 0 : -1;
}

/*
 * I/O.
 */

struct ut_io {
	bool done;
	bool success;
	int sct;
	int sc;
	int err;
};

static inline void
ut_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	struct ut_io *r = cb_arg;

	r->done = true;
	r->success = success;
	bdev_io_get_nvme_status(io, &r->sct, &r->sc);
	r->err = bdev_io_get_errno(io);
	bdev_free_io(io);
}

/* An open descriptor with a channel on one thread. */
struct ut_dev {
	struct bdev_desc *desc;
	struct io_channel *ch;
	struct thread *thread;
	bool removed;
};

static inline void
ut_dev_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct ut_dev *dev = ctx;

	dev->removed = true;
}

/* Open `name` on the app thread and take a channel on `thread`. */
static inline int
ut_dev_open_mode(struct ut_dev *dev, const char *name, bool write, struct thread *thread)
{
	int rc;

	memset(dev, 0, sizeof(*dev));
	rc = bdev_open(name, write, ut_dev_event, dev, &dev->desc);
	if (rc != 0) {
		return rc;
	}
	dev->thread = thread;
	thread_set_current(thread);
	dev->ch = bdev_get_io_channel(dev->desc);
	thread_set_current(g_ut_app);
	if (dev->ch == NULL) {
		bdev_close(dev->desc);
		return -ENOMEM;
	}
	return 0;
}

static inline int
ut_dev_open(struct ut_dev *dev, const char *name, struct thread *thread)
{
	return ut_dev_open_mode(dev, name, true, thread);
}

static inline void
ut_dev_close(struct ut_dev *dev)
{
	thread_set_current(dev->thread);
	io_channel_put(dev->ch);
	thread_set_current(g_ut_app);
	bdev_close(dev->desc);
	ut_poll_idle();
}

/* Submit one I/O on the device's thread without waiting; returns the submit rc. */
static inline int
ut_submit(struct ut_dev *dev, enum bdev_io_type type, void *buf, uint64_t offset, uint64_t num,
	  struct ut_io *r)
{
	int rc;

	memset(r, 0, sizeof(*r));
	thread_set_current(dev->thread);
	switch (type) {
	case BDEV_IO_TYPE_READ:
		rc = bdev_read_blocks(dev->desc, dev->ch, buf, offset, num, ut_io_done, r);
		break;
	case BDEV_IO_TYPE_WRITE:
		rc = bdev_write_blocks(dev->desc, dev->ch, buf, offset, num, ut_io_done, r);
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
		rc = bdev_write_zeroes_blocks(dev->desc, dev->ch, offset, num, ut_io_done, r);
		break;
	case BDEV_IO_TYPE_UNMAP:
		rc = bdev_unmap_blocks(dev->desc, dev->ch, offset, num, ut_io_done, r);
		break;
	case BDEV_IO_TYPE_FLUSH:
		rc = bdev_flush_blocks(dev->desc, dev->ch, offset, num, ut_io_done, r);
		break;
	case BDEV_IO_TYPE_RESET:
		rc = bdev_reset(dev->desc, dev->ch, ut_io_done, r);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	thread_set_current(g_ut_app);
	return rc;
}

/* Submit and wait; returns the submit rc, the outcome is in *r. */
static inline int
ut_io_sync(struct ut_dev *dev, enum bdev_io_type type, void *buf, uint64_t offset, uint64_t num,
	   struct ut_io *r)
{
	int rc = ut_submit(dev, type, buf, offset, num, r);

	if (rc == 0) {
		UT_POLL_UNTIL(r->done);
	}
	return rc;
}

/* Fill with a pattern that differs per byte and per seed. */
static inline void
ut_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		buf[i] = (uint8_t)((i * 31 + seed * 7 + (i >> 9)) ^ (seed >> 3));
	}
}

/*
 * RPC.
 */

struct ut_rpc {
	bool done;
	json_t *resp;
};

static inline void
ut_rpc_done(void *ctx, json_t *resp)
{
	struct ut_rpc *r = ctx;

	r->resp = resp;
	r->done = true;
}

/*
 * Call `method` with params given as JSON text (NULL: none) and wait for the
 * answer. Returns the whole response (json_decref it), or NULL.
 */
static inline json_t *
ut_rpc_call(const char *method, const char *params_text)
{
	struct ut_rpc r = { 0 };
	json_t *params = NULL;
	int rc;

	if (params_text != NULL) {
		params = json_loads(params_text, 0, NULL);
		if (params == NULL) {
			fprintf(stderr, "bad test JSON: %s\n", params_text);
			return NULL;
		}
	}
	rc = rpc_call(method, params, ut_rpc_done, &r);
	if (rc == 0) {
		UT_POLL_UNTIL(r.done);
	}
	json_decref(params);
	return r.resp;
}

/* The error code of a response, or 0 if it has a result. */
static inline int
ut_rpc_error_code(const json_t *resp)
{
	json_t *err = json_object_get(resp, "error");

	return err != NULL ? (int)json_integer_value(json_object_get(err, "code")) : 0;
}

static inline const char *
ut_rpc_error_message(const json_t *resp)
{
	const char *msg = json_string_value(
		json_object_get(json_object_get(resp, "error"), "message"));

	return msg != NULL ? msg : "";
}

/* Call and return only the error code (0 on success); checks a result exists. */
static inline int
ut_rpc_code(const char *method, const char *params_text)
{
	json_t *resp = ut_rpc_call(method, params_text);
	int code;

	if (resp == NULL) {
		return -99999;
	}
	code = ut_rpc_error_code(resp);
	if (code != 0) {
		fprintf(stderr, "  (%s: %d %s)\n", method, code, ut_rpc_error_message(resp));
	} else if (json_object_get(resp, "result") == NULL) {
		code = -99998;
	}
	json_decref(resp);
	return code;
}

/* Unregister-style completion. */
struct ut_cpl {
	bool done;
	int rc;
};

static inline void
ut_cpl_done(void *cb_arg, int rc)
{
	struct ut_cpl *c = cb_arg;

	c->done = true;
	c->rc = rc;
}

/* The write_config_json entry of one bdev (json_decref it). */
static inline json_t *
ut_bdev_config(struct bdev *bdev)
{
	json_t *config = json_array();
	json_t *entry;

	bdev->fn_table->write_config_json(bdev, config);
	entry = json_array_get(config, 0);
	json_incref(entry);
	if (json_array_size(config) != 1) {
		json_decref(entry);
		entry = NULL;
	}
	json_decref(config);
	return entry;
}

/* Replay a config entry through rpc_call; returns the error code or 0. */
static inline int
ut_rpc_replay(json_t *entry)
{
	struct ut_rpc r = { 0 };
	int code, rc;

	rc = rpc_call(json_string_value(json_object_get(entry, "method")),
		      json_object_get(entry, "params"), ut_rpc_done, &r);
	if (rc != 0) {
		return rc;
	}
	UT_POLL_UNTIL(r.done);
	if (!r.done) {
		return -99999;
	}
	code = ut_rpc_error_code(r.resp);
	json_decref(r.resp);
	return code;
}

#endif /* GGA_UT_BDEV_COMMON_H */
