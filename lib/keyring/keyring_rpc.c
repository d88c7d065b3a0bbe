/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keyring's RPCs, with SPDK's names, parameters and error codes:
 * keyring_file_add_key {name, path}, keyring_file_remove_key {name} and
 * keyring_get_keys. No answer ever carries key material.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "gga/keyring.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "keyring_internal.h"

/* Room for keyring.c's messages (a key name, a path, what is wrong). */
#define RPC_KEYRING_MSG_LEN 1024

struct rpc_keyring_add {
	char *name;
	char *path;
};

static const struct rpc_param rpc_keyring_add_decl[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_keyring_add, name),
	  .min = 1,
	  .max = KEYRING_MAX_NAME_LEN },
	{ .name = "path",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_keyring_add, path),
	  .min = 1,
	  .max = PATH_MAX - 1 },
};

static void
rpc_keyring_file_add_key(struct rpc_request *req, json_t *params)
{
	struct rpc_keyring_add p = { 0 };
	char msg[RPC_KEYRING_MSG_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_keyring_add_decl, ARRAY_SIZE(rpc_keyring_add_decl),
			      &p) != 0) {
		goto out_free_params;
	}
	rc = keyring_file_add_key(p.name, p.path, msg, sizeof(msg));
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
		goto out_free_params;
	}
	rpc_send_bool(req, true);

out_free_params:
	rpc_free_params(rpc_keyring_add_decl, ARRAY_SIZE(rpc_keyring_add_decl), &p);
}

struct rpc_keyring_remove {
	char *name;
};

static const struct rpc_param rpc_keyring_remove_decl[] = {
	{ .name = "name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_keyring_remove, name),
	  .min = 1,
	  .max = KEYRING_MAX_NAME_LEN },
};

static void
rpc_keyring_file_remove_key(struct rpc_request *req, json_t *params)
{
	struct rpc_keyring_remove p = { 0 };
	char msg[RPC_KEYRING_MSG_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_keyring_remove_decl,
			      ARRAY_SIZE(rpc_keyring_remove_decl), &p) != 0) {
		goto out_free_params;
	}
	rc = keyring_file_remove_key(p.name, msg, sizeof(msg));
	if (rc != 0) {
		rpc_send_errno(req, rc, "%s", msg);
		goto out_free_params;
	}
	rpc_send_bool(req, true);

out_free_params:
	rpc_free_params(rpc_keyring_remove_decl, ARRAY_SIZE(rpc_keyring_remove_decl), &p);
}

static void
rpc_keyring_get_keys(struct rpc_request *req, json_t *params)
{
	json_t *keys;

	if (rpc_decode_params(req, params, NULL, 0, NULL) != 0) {
		return;
	}
	keys = keyring_dump_keys();
	if (keys == NULL) {
		rpc_send_errno(req, -ENOMEM, "keyring_get_keys: out of memory");
		return;
	}
	rpc_send_result(req, keys);
}

void
keyring_rpc_register(void)
{
	static bool registered;

	/* The RPC table outlives a keyring subsystem restart (unit tests restart it). */
	if (registered) {
		return;
	}
	registered = true;
	/* Allowed in the startup state too: a --json file adds its keys before what names them. */
	rpc_register_method("keyring_file_add_key", rpc_keyring_file_add_key, RPC_STATE_ANY);
	rpc_register_method("keyring_file_remove_key", rpc_keyring_file_remove_key, RPC_STATE_ANY);
	rpc_register_method("keyring_get_keys", rpc_keyring_get_keys, RPC_STATE_ANY);
}
