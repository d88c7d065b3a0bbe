/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The framework's own JSON-RPC methods: save_config, framework_get_reactors
 * and gga_get_version.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga/app.h"
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

static json_t *
reactor_json(const struct reactor_stats *st)
{
	return json_pack("{s:i, s:I, s:I, s:I, s:b, s:s, s:[{s:s, s:i}]}",
			 "lcore", (int)st->core,
			 "busy", (json_int_t)st->busy_ticks,
			 "idle", (json_int_t)st->idle_ticks,
			 "sleeps", (json_int_t)st->sleeps,
			 "sleeping", (int)st->sleeping,
			 "poll_mode", reactor_poll_mode_name(st->poll_mode),
			 "threads",
			 "name", st->thread_name ? st->thread_name : "",
			 "id", (int)st->thread_id);
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
	result = json_pack("{s:s, s:{s:i, s:i, s:i, s:s}}",
			   "version", "gga v" GGA_VERSION_STRING,
			   "fields", "major", major, "minor", minor, "patch", patch,
			   "suffix", suffix);
	if (result == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	rpc_send_result(req, result);
}

void
app_rpc_register(void)
{
	rpc_register_method("save_config", rpc_save_config, RPC_STATE_ANY);
	rpc_register_method("framework_get_reactors", rpc_framework_get_reactors, RPC_STATE_ANY);
	rpc_register_method("gga_get_version", rpc_gga_get_version, RPC_STATE_ANY);
}
