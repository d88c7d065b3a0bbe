/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 request processing: the method registry, request validation,
 * batches, answers, and in-process calls (rpc_call).
 *
 * Every value a client sends becomes one exchange: a single request, or a
 * batch of them. Each request of the exchange is a `struct rpc_request` that
 * lives until its handler answers, which may be long after the client has
 * gone; the exchange collects the answers and hands the finished response to
 * its owner (a connection, or an rpc_call caller) when the last one is in.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gga/log.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "rpc_internal.h"

struct rpc_method {
	char *name;
	rpc_method_fn fn;
	uint32_t state_mask;
	TAILQ_ENTRY(rpc_method) link;
};

static TAILQ_HEAD(, rpc_method) g_methods = TAILQ_HEAD_INITIALIZER(g_methods);
static uint32_t g_state = RPC_STATE_STARTUP;

struct rpc_exchange {
	rpc_exchange_done_fn done;
	void *done_ctx;
	bool batch;
	uint32_t count;
	/* Requests not yet answered, plus one held while the exchange is being set up. */
	uint32_t outstanding;
	/* One slot per request, so a batch answer keeps the request order. */
	json_t *responses[];
};

struct rpc_request {
	struct rpc_exchange *exchange;
	uint32_t slot;
	/* The request object: keeps method name and params alive until the answer. */
	json_t *request;
	/* The id to answer with; NULL for a notification (no answer is sent). */
	json_t *id;
	const char *method;
};

static struct rpc_method *
find_method(const char *name)
{
	struct rpc_method *m;

	TAILQ_FOREACH(m, &g_methods, link) {
		if (strcmp(m->name, name) == 0) {
			return m;
		}
	}
	return NULL;
}

void
rpc_register_method(const char *name, rpc_method_fn fn, uint32_t state_mask)
{
	struct rpc_method *m;

	if (name == NULL || fn == NULL) {
		ERRLOG("rpc: refusing to register a method without a name or function\n");
		return;
	}
	if (find_method(name) != NULL) {
		ERRLOG("rpc: method %s is already registered; keeping the first\n", name);
		return;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		ERRLOG("rpc: out of memory registering method %s\n", name);
		return;
	}
	m->name = strdup(name);
	if (m->name == NULL) {
		ERRLOG("rpc: out of memory registering method %s\n", name);
		free(m);
		return;
	}
	m->fn = fn;
	m->state_mask = state_mask;
	TAILQ_INSERT_TAIL(&g_methods, m, link);
}

void
rpc_unregister_all(void)
{
	struct rpc_method *m;

	while ((m = TAILQ_FIRST(&g_methods)) != NULL) {
		TAILQ_REMOVE(&g_methods, m, link);
		free(m->name);
		free(m);
	}
}

void
rpc_set_state(uint32_t state)
{
	g_state = state;
}

uint32_t
rpc_get_state(void)
{
	return g_state;
}

static const char *
state_name(uint32_t state)
{
	switch (state) {
	case RPC_STATE_STARTUP:
		return "startup";
	case RPC_STATE_RUNTIME:
		return "runtime";
	default:
		return "unknown";
	}
}

json_t *
rpc_error_response(json_t *id, int code, const char *message)
{
	json_t *error;

	error = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (error == NULL) {
		return NULL;
	}
	/* "O?" packs a NULL id as null: an id that could not be read is answered as null. */
	return json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "error", error);
}

static void
exchange_finish(struct rpc_exchange *ex)
{
	json_t *response = NULL;
	uint32_t i;

	if (ex->batch) {
		response = json_array();
		for (i = 0; i < ex->count; i++) {
			if (ex->responses[i] == NULL) {
				continue;
			}
			if (response != NULL) {
				json_array_append_new(response, ex->responses[i]);
			} else {
				json_decref(ex->responses[i]);
			}
		}
		if (response == NULL) {
			ERRLOG("rpc: out of memory collecting a batch answer\n");
		} else if (json_array_size(response) == 0) {
			/* A batch of notifications gets no answer at all. */
			json_decref(response);
			response = NULL;
		}
	} else {
		response = ex->responses[0];
	}
	ex->done(ex->done_ctx, response);
	free(ex);
}

static void
exchange_put(struct rpc_exchange *ex)
{
	if (ex->outstanding == 0) {
		ERRLOG("rpc: answer to an exchange that has no request outstanding\n");
		return;
	}
	if (--ex->outstanding == 0) {
		exchange_finish(ex);
	}
}

/* Record the answer (or none) and release the request. */
static void
request_complete(struct rpc_request *req, json_t *member, const char *member_name)
{
	struct rpc_exchange *ex = req->exchange;
	json_t *resp = NULL;

	if (req->id != NULL) {
		resp = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", req->id, member_name,
				 member);
		if (resp == NULL) {
			ERRLOG("rpc: out of memory answering method %s\n",
			       req->method ? req->method : "(none)");
		}
	} else {
		json_decref(member);
	}
	ex->responses[req->slot] = resp;
	json_decref(req->id);
	json_decref(req->request);
	free(req);
	exchange_put(ex);
}

void
rpc_send_result(struct rpc_request *req, json_t *result)
{
	if (result == NULL) {
		result = json_true();
	}
	request_complete(req, result, "result");
}

void
rpc_send_bool(struct rpc_request *req, bool value)
{
	rpc_send_result(req, json_boolean(value));
}

static void
send_error_va(struct rpc_request *req, int code, const char *fmt, va_list ap)
{
	char *msg = NULL;
	json_t *error;

	if (vasprintf(&msg, fmt, ap) < 0) {
		msg = NULL;
	}
	error = json_pack("{s:i, s:s}", "code", code, "message", msg ? msg : "error");
	free(msg);
	request_complete(req, error, "error");
}

void
rpc_send_error(struct rpc_request *req, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_error_va(req, code, fmt, ap);
	va_end(ap);
}

void
rpc_send_errno(struct rpc_request *req, int rc, const char *fmt, ...)
{
	int code;
	va_list ap;

	if (rc > 0) {
		rc = -rc;
	}
	code = (rc == -EINVAL || rc == -ERANGE) ? RPC_ERROR_INVALID_PARAMS : rc;
	if (rc == 0) {
		code = RPC_ERROR_INTERNAL_ERROR;
	}
	if (fmt == NULL) {
		rpc_send_error(req, code, "%s", strerror(-rc));
		return;
	}
	va_start(ap, fmt);
	send_error_va(req, code, fmt, ap);
	va_end(ap);
}

const char *
rpc_request_method(const struct rpc_request *req)
{
	return req->method;
}

static bool
valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_number(id) || json_is_null(id);
}

/*
 * Validate one request and run its handler. Invalid requests are answered
 * even without an id (with a null id), as the specification asks.
 */
static void
process_request(struct rpc_exchange *ex, uint32_t slot, json_t *value)
{
	struct rpc_request *req;
	struct rpc_method *m;
	json_t *id, *version, *method, *params;

	req = calloc(1, sizeof(*req));
	if (req == NULL) {
		ex->responses[slot] = rpc_error_response(NULL, RPC_ERROR_INTERNAL_ERROR,
							 "Internal error: out of memory");
		exchange_put(ex);
		return;
	}
	req->exchange = ex;
	req->slot = slot;
	req->request = json_incref(value);

	if (!json_is_object(value)) {
		req->id = json_null();
		rpc_send_error(req, RPC_ERROR_INVALID_REQUEST,
			       "Invalid request: a request must be a JSON object");
		return;
	}
	id = json_object_get(value, "id");
	if (id != NULL && !valid_id(id)) {
		req->id = json_null();
		rpc_send_error(req, RPC_ERROR_INVALID_REQUEST,
			       "Invalid request: id must be a string, a number or null");
		return;
	}
	/* From here on an invalid request is answered with its own id. */
	req->id = id != NULL ? json_incref(id) : json_null();

	version = json_object_get(value, "jsonrpc");
	if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_REQUEST,
			       "Invalid request: jsonrpc must be \"2.0\"");
		return;
	}
	method = json_object_get(value, "method");
	if (!json_is_string(method)) {
		rpc_send_error(req, RPC_ERROR_INVALID_REQUEST,
			       "Invalid request: method must be a string");
		return;
	}
	req->method = json_string_value(method);
	params = json_object_get(value, "params");
	if (params != NULL && !json_is_object(params) && !json_is_array(params)) {
		rpc_send_error(req, RPC_ERROR_INVALID_REQUEST,
			       "Invalid request: params must be an object or an array");
		return;
	}

	if (id == NULL) {
		/* A valid notification: the handler runs, its answer is dropped. */
		json_decref(req->id);
		req->id = NULL;
	}
	m = find_method(req->method);
	if (m == NULL) {
		rpc_send_error(req, RPC_ERROR_METHOD_NOT_FOUND, "Method not found: %s",
			       req->method);
		return;
	}
	if ((m->state_mask & g_state) == 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_STATE,
			       "Method %s is not allowed in the %s state", req->method,
			       state_name(g_state));
		return;
	}
	DEBUGLOG(rpc, "calling %s\n", req->method);
	m->fn(req, params);
}

static struct rpc_exchange *
exchange_alloc(uint32_t count, bool batch, rpc_exchange_done_fn done, void *ctx)
{
	struct rpc_exchange *ex;

	ex = calloc(1, sizeof(*ex) + count * sizeof(json_t *));
	if (ex == NULL) {
		return NULL;
	}
	ex->done = done;
	ex->done_ctx = ctx;
	ex->batch = batch;
	ex->count = count;
	/* The extra one keeps answers given during set-up from finishing it early. */
	ex->outstanding = count + 1;
	return ex;
}

int
rpc_process_value(json_t *value, rpc_exchange_done_fn done, void *ctx)
{
	struct rpc_exchange *ex;
	json_t *resp;
	size_t i, n;

	if (!json_is_array(value)) {
		ex = exchange_alloc(1, false, done, ctx);
		if (ex == NULL) {
			return -ENOMEM;
		}
		process_request(ex, 0, value);
		exchange_put(ex);
		return 0;
	}

	n = json_array_size(value);
	if (n == 0 || n > RPC_MAX_BATCH) {
		resp = rpc_error_response(NULL, RPC_ERROR_INVALID_REQUEST,
					  n == 0 ? "Invalid request: empty batch" :
						   "Invalid request: batch too large");
		if (resp == NULL) {
			return -ENOMEM;
		}
		done(ctx, resp);
		return 0;
	}
	ex = exchange_alloc((uint32_t)n, true, done, ctx);
	if (ex == NULL) {
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		process_request(ex, (uint32_t)i, json_array_get(value, i));
	}
	exchange_put(ex);
	return 0;
}

struct rpc_call_ctx {
	rpc_call_cb cb;
	void *ctx;
};

static void
call_done(void *arg, json_t *response)
{
	struct rpc_call_ctx *call = arg;

	if (response == NULL) {
		response = rpc_error_response(NULL, RPC_ERROR_INTERNAL_ERROR,
					      "Internal error: no answer");
	}
	call->cb(call->ctx, response);
	free(call);
}

int
rpc_call(const char *method, json_t *params, rpc_call_cb cb, void *ctx)
{
	struct rpc_call_ctx *call;
	json_t *request;
	int rc;

	call = calloc(1, sizeof(*call));
	if (call == NULL) {
		return -ENOMEM;
	}
	call->cb = cb;
	call->ctx = ctx;
	request = json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", 1, "method", method);
	if (request == NULL) {
		free(call);
		return -ENOMEM;
	}
	if (params != NULL && json_object_set(request, "params", params) != 0) {
		json_decref(request);
		free(call);
		return -ENOMEM;
	}
	rc = rpc_process_value(request, call_done, call);
	json_decref(request);
	if (rc != 0) {
		free(call);
	}
	return rc;
}

struct get_methods_params {
	bool current;
};

static const struct rpc_param g_get_methods_decl[] = {
	{
		.name = "current",
		.type = RPC_PARAM_BOOL,
		.offset = offsetof(struct get_methods_params, current),
		.optional = true,
	},
	/* gga has no deprecated aliases: the list is the same either way. */
	RPC_PARAM_SPDK_NOOP("include_aliases", "false", "true"),
};

static void
rpc_get_methods(struct rpc_request *req, json_t *params)
{
	struct get_methods_params p = { .current = false };
	struct rpc_method *m;
	json_t *names;

	if (rpc_decode_params(req, params, g_get_methods_decl, ARRAY_SIZE(g_get_methods_decl),
			      &p) != 0) {
		return;
	}
	names = json_array();
	if (names == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	TAILQ_FOREACH(m, &g_methods, link) {
		if (p.current && (m->state_mask & g_state) == 0) {
			continue;
		}
		json_array_append_new(names, json_string(m->name));
	}
	rpc_send_result(req, names);
}

void
rpc_register_builtin_methods(void)
{
	/* Called both by rpc_server_listen and by the app: once is enough. */
	if (find_method("rpc_get_methods") == NULL) {
		rpc_register_method("rpc_get_methods", rpc_get_methods, RPC_STATE_ANY);
	}
}
