/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 server (jansson) on a Unix stream socket.
 *
 * Methods are registered explicitly at start-up with the states in which they
 * may be called. Requests are read and handled on the app thread. A handler
 * answers exactly once with rpc_send_result() or rpc_send_error*(),
 * immediately or later (from the app thread); requests that are
 * notifications (no "id") get no answer but the handler still runs and must
 * still answer (the answer is dropped). If the client has gone when the answer
 * comes, it is dropped.
 *
 * Framing: a stream of JSON values (objects or batch arrays); whitespace
 * between them is optional. A request larger than RPC_MAX_REQUEST_SIZE, or
 * bytes that are not JSON, get a parse error and the connection is closed.
 */
#ifndef GGA_RPC_H
#define GGA_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define RPC_DEFAULT_SOCKET   "/var/tmp/gga.sock"
#define RPC_MAX_REQUEST_SIZE (4u * 1024 * 1024)

/* JSON-RPC 2.0 error codes. */
#define RPC_ERROR_PARSE_ERROR      -32700
#define RPC_ERROR_INVALID_REQUEST  -32600
#define RPC_ERROR_METHOD_NOT_FOUND -32601
#define RPC_ERROR_INVALID_PARAMS   -32602
#define RPC_ERROR_INTERNAL_ERROR   -32603
/* Server-defined: the method exists but not in the current state. */
#define RPC_ERROR_INVALID_STATE    -32000

/* States: methods declare which they are allowed in. */
#define RPC_STATE_STARTUP 0x1u /* while --json config is replayed */
#define RPC_STATE_RUNTIME 0x2u
#define RPC_STATE_ANY     (RPC_STATE_STARTUP | RPC_STATE_RUNTIME)

struct rpc_request;

/* params is the request's "params" (object or array), or NULL if absent. */
typedef void (*rpc_method_fn)(struct rpc_request *req, json_t *params);

/*
 * Register a method (before or after the server starts). Re-registering a
 * name is a programming error: logged, and the first registration kept.
 */
void rpc_register_method(const char *name, rpc_method_fn fn, uint32_t state_mask);
/* Remove every method (at shutdown). */
void rpc_unregister_all(void);

void rpc_set_state(uint32_t state);
uint32_t rpc_get_state(void);

/* Answer with a result; steals the reference (NULL means true). */
void rpc_send_result(struct rpc_request *req, json_t *result);
void rpc_send_bool(struct rpc_request *req, bool value);
/* Answer with an error object {code, message}. */
void rpc_send_error(struct rpc_request *req, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Answer with an error for a negative errno from a create/delete call:
 * -EINVAL and -ERANGE become INVALID_PARAMS; others use the errno itself as
 * the code (e.g. -19), as SPDK does. `fmt` may be NULL (strerror is used).
 */
void rpc_send_errno(struct rpc_request *req, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

const char *rpc_request_method(const struct rpc_request *req);

/*
 * Declarative parameter decoding. Each entry decodes one member of the params
 * object into `out + offset`:
 *   RPC_PARAM_STRING  char *      (strdup'd; free with rpc_free_params; the
 *                                  field must start NULL: apply string defaults after)
 *   RPC_PARAM_BOOL    bool
 *   RPC_PARAM_INT32   int32_t     (min/max as signed limits when set)
 *   RPC_PARAM_UINT32  uint32_t
 *   RPC_PARAM_UINT64  uint64_t
 *   RPC_PARAM_JSON    json_t *    (borrowed from params: valid during the handler)
 *   RPC_PARAM_SPDK    nothing     a parameter SPDK's server takes for a feature gga
 *                                  lacks (declare with RPC_PARAM_SPDK_NOOP or
 *                                  RPC_PARAM_SPDK_UNSUPPORTED)
 * choices (NULL-terminated) restricts a string to a set of values. min/max
 * apply when max != 0 (for strings they bound the length). pow2 requires a
 * power of two. An explicit JSON null counts as absent (except for
 * RPC_PARAM_JSON). With count 0, any parameter is refused: a method that
 * takes none calls rpc_decode_params(req, params, NULL, 0, NULL).
 */
enum rpc_param_type {
	RPC_PARAM_STRING,
	RPC_PARAM_BOOL,
	RPC_PARAM_INT32,
	RPC_PARAM_UINT32,
	RPC_PARAM_UINT64,
	RPC_PARAM_JSON,
	RPC_PARAM_SPDK,
};

struct rpc_param {
	const char *name;
	enum rpc_param_type type;
	size_t offset;
	bool optional;
	uint64_t min;
	uint64_t max;
	bool pow2;
	const char *const *choices;
	/* RPC_PARAM_SPDK: the values accepted as JSON texts, NULL-terminated, or NULL for none. */
	const char *const *spdk_values;
};

/*
 * SPDK compatibility: a parameter SPDK's server accepts for a feature gga does
 * not have, so that SPDK's rpc.py (which sends such parameters at their
 * defaults) and SPDK configuration files work unchanged. A value equal to one
 * of the listed JSON texts (SPDK's default, e.g. "false", "0", "\"nvmf_tgt\"")
 * changes nothing and is ignored; any other value is refused with
 * INVALID_PARAMS "NAME VALUE: not supported by gga", before the handler does
 * anything. RPC_PARAM_SPDK_UNSUPPORTED declares one with no value gga can
 * honour (a key, a label, an address to bind): any value given is refused.
 * Tables holding these must be at file scope (the list is a compound literal).
 */
#define RPC_PARAM_SPDK_NOOP(param, ...)                                    \
	{                                                                  \
		.name = (param), .type = RPC_PARAM_SPDK, .optional = true, \
		.spdk_values = (const char *const[])                       \
		{                                                          \
			__VA_ARGS__, NULL                                  \
		}                                                          \
	}
#define RPC_PARAM_SPDK_UNSUPPORTED(param)                                 \
	{                                                                 \
		.name = (param), .type = RPC_PARAM_SPDK, .optional = true \
	}

/*
 * Decode `params` (must be an object, or NULL when every entry is optional).
 * On failure answers the request with INVALID_PARAMS naming the parameter
 * ("num_blocks: must be at least 1", "unknown parameter 'foo'", "name:
 * required", "block_size: expected an integer") and returns -EINVAL; the
 * handler then just returns (after rpc_free_params). Returns 0 on success.
 */
int rpc_decode_params(struct rpc_request *req, json_t *params, const struct rpc_param *decl,
		      size_t count, void *out);
/*
 * A JSON array of names as a bit mask (bit lookup(name) for each): the mask,
 * or -1 with INVALID_PARAMS sent ("PARAM: unknown value X", "PARAM: expected
 * a non-empty array"). lookup returns 0..30, or -1 for an unknown name.
 */
int rpc_name_mask(struct rpc_request *req, const char *param, json_t *arr,
		  int (*lookup)(const char *name));
/* Free the strings rpc_decode_params allocated (safe on partial decodes). */
void rpc_free_params(const struct rpc_param *decl, size_t count, void *out);

/*
 * Call a method in-process, as config replay does: cb(ctx, response) runs on
 * the app thread with the whole response object ({"result":...} or
 * {"error":{...}}), which cb must json_decref. `params` is borrowed. Returns
 * 0 (cb will be called: before rpc_call returns if the handler answers at
 * once, later otherwise), or -ENOMEM.
 */
typedef void (*rpc_call_cb)(void *ctx, json_t *response);
int rpc_call(const char *method, json_t *params, rpc_call_cb cb, void *ctx);

/*
 * Listen on a Unix socket path (app thread). Refuses (-EADDRINUSE) when a live
 * server already answers on it; a stale socket file is replaced. Returns 0 or
 * a negative errno.
 */
int rpc_server_listen(const char *path);
/* Stop listening, drop every connection, unlink the socket file. */
void rpc_server_close(void);

/* Built-in: rpc_get_methods. Called by rpc_server_listen and by tests. */
void rpc_register_builtin_methods(void);

#endif /* GGA_RPC_H */
