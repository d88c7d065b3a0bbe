/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The framework's own JSON-RPC methods: save_config, framework_get_reactors,
 * framework_get_subsystems, framework_get_config and gga_get_version; in
 * builds with test hooks (CONFIG_TEST_HOOKS=y, never a release build) also
 * test_reactor_stall.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gga/app.h"
#include "gga/log.h"
#include "gga/reactor.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "app_internal.h"

static int
reject_params(struct rpc_request *req, json_t *params)
{
	return rpc_decode_params(req, params, NULL, 0, NULL);
}

static void
rpc_save_config(struct rpc_request *req, json_t *params)
{
	json_t *config;

	if (reject_params(req, params) != 0) {
		return;
	}
	config = app_save_config();
	if (config == NULL) {
		rpc_send_errno(req, -ENOMEM, "save_config: out of memory");
		return;
	}
	rpc_send_result(req, config);
}

/*
 * SPDK's rpc.py builds save_config itself from framework_get_subsystems and
 * one framework_get_config per subsystem; both are cut from app_save_config().
 * A subsystem is replayed after those before it, so it depends on them.
 */
static void
rpc_framework_get_subsystems(struct rpc_request *req, json_t *params)
{
	json_t *config, *result, *s, *deps;
	size_t i;

	if (reject_params(req, params) != 0) {
		return;
	}
	config = app_save_config();
	result = json_array();
	deps = json_array();
	if (config == NULL || result == NULL || deps == NULL) {
		json_decref(config);
		json_decref(result);
		json_decref(deps);
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	json_array_foreach(json_object_get(config, "subsystems"), i, s)
	{
		json_array_append_new(result, json_pack("{s:O, s:o}", "subsystem",
							json_object_get(s, "subsystem"),
							"depends_on", json_deep_copy(deps)));
		json_array_append(deps, json_object_get(s, "subsystem"));
	}
	json_decref(deps);
	json_decref(config);
	rpc_send_result(req, result);
}

struct get_config_params {
	char *name;
};

static const struct rpc_param get_config_params[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct get_config_params, name) },
	/* gga's configuration has no batches: the same calls either way. */
	RPC_PARAM_SPDK_NOOP("with_batches", "false", "true"),
};

static void
rpc_framework_get_config(struct rpc_request *req, json_t *params)
{
	struct get_config_params p = { 0 };
	json_t *config, *s;
	size_t i;

	if (rpc_decode_params(req, params, get_config_params, ARRAY_SIZE(get_config_params), &p) !=
	    0) {
		goto out_free_params;
	}
	config = app_save_config();
	if (config == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		goto out_free_params;
	}
	json_array_foreach(json_object_get(config, "subsystems"), i, s)
	{
		if (strcmp(json_string_value(json_object_get(s, "subsystem")), p.name) == 0) {
			rpc_send_result(req, json_incref(json_object_get(s, "config")));
			break;
		}
	}
	if (i == json_array_size(json_object_get(config, "subsystems"))) {
		rpc_send_errno(req, -ENOENT, "subsystem '%s' not found", p.name);
	}
	json_decref(config);

out_free_params:
	rpc_free_params(get_config_params, ARRAY_SIZE(get_config_params), &p);
}

static json_t *
reactor_json(const struct reactor_stats *st)
{
	return json_pack("{s:i, s:I, s:I, s:I, s:b, s:s, s:[{s:s, s:i}]}", "lcore", (int)st->core,
			 "busy", (json_int_t)st->busy_ticks, "idle", (json_int_t)st->idle_ticks,
			 "sleeps", (json_int_t)st->sleeps, "sleeping", (int)st->sleeping,
			 "poll_mode", reactor_poll_mode_name(st->poll_mode), "threads", "name",
			 st->thread_name ? st->thread_name : "", "id", (int)st->thread_id);
}

static void
rpc_framework_get_reactors(struct rpc_request *req, json_t *params)
{
	struct reactor_stats st;
	json_t *result, *reactors, *r;
	uint32_t i;

	if (reject_params(req, params) != 0) {
		return;
	}
	reactors = json_array();
	if (reactors == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	for (i = 0; i < reactor_count(); i++) {
		if (reactor_get_stats(i, &st) != 0) {
			continue;
		}
		r = reactor_json(&st);
		if (r == NULL || json_array_append_new(reactors, r) != 0) {
			json_decref(reactors);
			rpc_send_errno(req, -ENOMEM, NULL);
			return;
		}
	}
	result = json_pack("{s:I, s:o}", "tick_rate", (json_int_t)ticks_hz(), "reactors", reactors);
	if (result == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	rpc_send_result(req, result);
}

static void
rpc_gga_get_version(struct rpc_request *req, json_t *params)
{
	int major = 0, minor = 0, patch = 0, n = 0;
	const char *suffix = "";
	json_t *result;

	if (reject_params(req, params) != 0) {
		return;
	}
	/* The suffix is whatever follows "major.minor.patch" (e.g. "-pre"). */
	if (sscanf(GGA_VERSION_STRING, "%d.%d.%d%n", &major, &minor, &patch, &n) == 3) {
		suffix = GGA_VERSION_STRING + n;
	}
	result = json_pack("{s:s, s:{s:i, s:i, s:i, s:s}}", "version", "gga v" GGA_VERSION_STRING,
			   "fields", "major", major, "minor", minor, "patch", patch, "suffix",
			   suffix);
	if (result == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	rpc_send_result(req, result);
}

#ifdef GGA_TEST_HOOKS
struct stall_params {
	uint32_t ms;
};

static const struct rpc_param stall_params[] = {
	{ .name = "ms",
	  .type = RPC_PARAM_UINT32,
	  .offset = offsetof(struct stall_params, ms),
	  .min = 1,
	  .max = 60000 },
};

/*
 * Test hook: a handler that does not return for `ms` milliseconds, as a
 * misbehaving poller would, so the tests can watch the stall watchdog and
 * the forced exit on a second signal. It busy-waits on purpose.
 */
static void
rpc_test_reactor_stall(struct rpc_request *req, json_t *params)
{
	struct stall_params p = { 0 };
	uint64_t end;

	if (rpc_decode_params(req, params, stall_params, ARRAY_SIZE(stall_params), &p) != 0) {
		return;
	}
	WARNLOG("test hook: stalling this reactor for %u ms\n", p.ms);
	end = ticks_get() + us_to_ticks((uint64_t)p.ms * 1000);
	while (ticks_get() < end) {
	}
	rpc_send_bool(req, true);
}
#endif

void
app_rpc_register(void)
{
#ifdef GGA_TEST_HOOKS
	rpc_register_method("test_reactor_stall", rpc_test_reactor_stall, RPC_STATE_RUNTIME);
#endif
	rpc_register_method("save_config", rpc_save_config, RPC_STATE_ANY);
	rpc_register_method("framework_get_reactors", rpc_framework_get_reactors, RPC_STATE_ANY);
	rpc_register_method("framework_get_subsystems", rpc_framework_get_subsystems,
			    RPC_STATE_RUNTIME);
	rpc_register_method("framework_get_config", rpc_framework_get_config, RPC_STATE_RUNTIME);
	rpc_register_method("gga_get_version", rpc_gga_get_version, RPC_STATE_ANY);
}
