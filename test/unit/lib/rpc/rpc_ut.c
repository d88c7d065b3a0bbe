/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the JSON-RPC library: parameter decoding, request
 * validation, batches, states, errno mapping, and the socket server driven
 * by a hand-polled thread with a client socket in the same OS thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"
#include "ut_rpc.h"

#include "lib/rpc/rpc_internal.h"

/* ---- Test methods ---- */

struct decoded {
	char *name;
	uint32_t count;
	uint32_t u32;
	uint64_t big;
	uint64_t blocks;
	int32_t sint;
	bool flag;
	uint32_t bs;
	char *matrix;
	char *label;
	json_t *raw;
};

static const char *const g_matrix_choices[] = { "vandermonde", "cauchy", NULL };

static const struct rpc_param g_decl[] = {
	{ .name = "name", .type = RPC_PARAM_STRING, .offset = offsetof(struct decoded, name) },
	{
		.name = "count",
		.type = RPC_PARAM_UINT32,
		.offset = offsetof(struct decoded, count),
		.optional = true,
		.min = 1,
		.max = 1000,
	},
	{
		.name = "u32",
		.type = RPC_PARAM_UINT32,
		.offset = offsetof(struct decoded, u32),
		.optional = true,
	},
	{
		.name = "big",
		.type = RPC_PARAM_UINT64,
		.offset = offsetof(struct decoded, big),
		.optional = true,
	},
	{
		.name = "blocks",
		.type = RPC_PARAM_UINT64,
		.offset = offsetof(struct decoded, blocks),
		.optional = true,
		.min = 1,
		.max = UINT64_MAX,
	},
	{
		.name = "sint",
		.type = RPC_PARAM_INT32,
		.offset = offsetof(struct decoded, sint),
		.optional = true,
		.min = (uint64_t)-5,
		.max = 5,
	},
	{
		.name = "flag",
		.type = RPC_PARAM_BOOL,
		.offset = offsetof(struct decoded, flag),
		.optional = true,
	},
	{
		.name = "bs",
		.type = RPC_PARAM_UINT32,
		.offset = offsetof(struct decoded, bs),
		.optional = true,
		.min = 512,
		.max = 65536,
		.pow2 = true,
	},
	{
		.name = "matrix",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct decoded, matrix),
		.optional = true,
		.choices = g_matrix_choices,
	},
	{
		.name = "label",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct decoded, label),
		.optional = true,
		.min = 2,
		.max = 4,
	},
	{
		.name = "raw",
		.type = RPC_PARAM_JSON,
		.offset = offsetof(struct decoded, raw),
		.optional = true,
	},
	RPC_PARAM_SPDK_NOOP("ana_reporting", "false"),
	RPC_PARAM_SPDK_NOOP("c2h_success", "true", "false"),
	RPC_PARAM_SPDK_NOOP("tgt_name", "\"nvmf_tgt\""),
	RPC_PARAM_SPDK_NOOP("numa_id", "-1"),
	RPC_PARAM_SPDK_UNSUPPORTED("psk"),
};

static void
method_decode(struct rpc_request *req, json_t *params)
{
	struct decoded d = { .count = 7, .sint = 3 };
	json_t *result;

	if (rpc_decode_params(req, params, g_decl, ARRAY_SIZE(g_decl), &d) != 0) {
		rpc_free_params(g_decl, ARRAY_SIZE(g_decl), &d);
		return;
	}
	result = json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:b, s:I, s:s?, s:s?, s:O?}", "name",
			   d.name, "count", (json_int_t)d.count, "u32", (json_int_t)d.u32, "big",
			   (json_int_t)d.big, "blocks", (json_int_t)d.blocks, "sint", (int)d.sint,
			   "flag", (int)d.flag, "bs", (json_int_t)d.bs, "matrix", d.matrix, "label",
			   d.label, "raw", d.raw);
	rpc_free_params(g_decl, ARRAY_SIZE(g_decl), &d);
	rpc_send_result(req, result);
}

static struct rpc_request *g_async_req[8];
static int g_async_count;

static void
method_async(struct rpc_request *req, json_t *params)
{
	CU_ASSERT_FATAL(g_async_count < (int)ARRAY_SIZE(g_async_req));
	g_async_req[g_async_count++] = req;
}

static void
method_echo(struct rpc_request *req, json_t *params)
{
	rpc_send_result(req, params != NULL ? json_incref(params) : NULL);
}

static void
method_errno(struct rpc_request *req, json_t *params)
{
	json_int_t rc = json_integer_value(json_object_get(params, "rc"));
	json_t *msg = json_object_get(params, "msg");

	if (msg != NULL) {
		rpc_send_errno(req, (int)rc, "custom: %s", json_string_value(msg));
	} else {
		rpc_send_errno(req, (int)rc, NULL);
	}
}

static void
method_startup_only(struct rpc_request *req, json_t *params)
{
	rpc_send_bool(req, true);
}

static void
method_other(struct rpc_request *req, json_t *params)
{
	rpc_send_bool(req, false);
}

/* ---- In-process helpers ---- */

/* Call a synchronous method; returns the whole response (caller decrefs). */
static json_t *
call(const char *method, const char *params_text)
{
	json_t *params = NULL, *resp;

	if (params_text != NULL) {
		params = json_loads(params_text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		CU_ASSERT_FATAL(params != NULL);
	}
	resp = ut_rpc_call(method, params);
	json_decref(params);
	return resp;
}

/* Process raw text as a client value; returns what would be sent (NULL: nothing). */
static json_t *
process(const char *text, int *calls)
{
	struct ut_capture c = { 0 };
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	CU_ASSERT_FATAL(v != NULL);
	UT_ASSERT_EQ_FATAL(rpc_process_value(v, ut_capture_cb, &c), 0);
	json_decref(v);
	if (calls != NULL) {
		*calls = c.calls;
	} else {
		UT_ASSERT_EQ(c.calls, 1);
	}
	return c.resp;
}

static int
err_code(json_t *resp)
{
	return (int)json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static const char *
err_msg(json_t *resp)
{
	return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

/* Expect an INVALID_PARAMS answer with exactly this message. */
static void
expect_param_error(const char *params, const char *message)
{
	json_t *resp = call("test_decode", params);

	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_STR_EQ(err_msg(resp), message);
	CU_ASSERT(json_object_get(resp, "result") == NULL);
	json_decref(resp);
}

/* ---- Decoding ---- */

static void
test_decode_all_types(void)
{
	json_t *resp, *r;

	resp = call("test_decode",
		    "{\"name\":\"n1\",\"count\":1000,\"u32\":4294967295,"
		    "\"big\":1099511627776,\"blocks\":1,\"sint\":-5,\"flag\":true,\"bs\":4096,"
		    "\"matrix\":\"cauchy\",\"label\":\"abcd\",\"raw\":[1,{\"x\":2}]}");
	r = json_object_get(resp, "result");
	CU_ASSERT_FATAL(json_is_object(r));
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r, "name")), "n1");
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "count")), 1000);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "u32")), 4294967295ll);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "big")), 1099511627776ll);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "blocks")), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "sint")), -5);
	CU_ASSERT(json_is_true(json_object_get(r, "flag")));
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "bs")), 4096);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r, "matrix")), "cauchy");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(r, "label")), "abcd");
	UT_ASSERT_EQ(json_integer_value(json_array_get(json_object_get(r, "raw"), 0)), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(resp, "id")), 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "jsonrpc")), "2.0");
	json_decref(resp);
}

static void
test_decode_optional_defaults(void)
{
	json_t *resp, *r;

	/* Optional parameters keep the handler's defaults; explicit null means absent. */
	resp = call("test_decode", "{\"name\":\"n\",\"count\":null}");
	r = json_object_get(resp, "result");
	CU_ASSERT_FATAL(json_is_object(r));
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "count")), 7);
	UT_ASSERT_EQ(json_integer_value(json_object_get(r, "sint")), 3);
	CU_ASSERT(json_is_false(json_object_get(r, "flag")));
	CU_ASSERT(json_is_null(json_object_get(r, "matrix")));
	json_decref(resp);
}

static void
test_decode_errors(void)
{
	expect_param_error("{}", "name: required");
	expect_param_error(NULL, "name: required");
	expect_param_error("{\"name\":null}", "name: required");
	expect_param_error("[\"n\"]", "params: expected an object of named parameters");
	expect_param_error("{\"name\":\"n\",\"foo\":1}", "unknown parameter 'foo'");
	expect_param_error("{\"name\":5}", "name: expected a string");
	expect_param_error("{\"name\":\"n\",\"count\":\"many\"}",
			   "count: expected an unsigned integer");
	expect_param_error("{\"name\":\"n\",\"count\":8.0}", "count: expected an unsigned integer");
	expect_param_error("{\"name\":\"n\",\"count\":-1}", "count: expected an unsigned integer");
	expect_param_error("{\"name\":\"n\",\"count\":0}", "count: must be between 1 and 1000");
	expect_param_error("{\"name\":\"n\",\"count\":1001}", "count: must be between 1 and 1000");
	expect_param_error("{\"name\":\"n\",\"u32\":4294967296}",
			   "u32: must be at most 4294967295");
	expect_param_error("{\"name\":\"n\",\"big\":-3}", "big: expected an unsigned integer");
	expect_param_error("{\"name\":\"n\",\"big\":true}", "big: expected an unsigned integer");
	expect_param_error("{\"name\":\"n\",\"blocks\":0}", "blocks: must be at least 1");
	expect_param_error("{\"name\":\"n\",\"sint\":\"x\"}", "sint: expected an integer");
	expect_param_error("{\"name\":\"n\",\"sint\":1.5}", "sint: expected an integer");
	expect_param_error("{\"name\":\"n\",\"sint\":6}", "sint: must be between -5 and 5");
	expect_param_error("{\"name\":\"n\",\"sint\":-6}", "sint: must be between -5 and 5");
	expect_param_error("{\"name\":\"n\",\"flag\":1}", "flag: expected a boolean");
	expect_param_error("{\"name\":\"n\",\"flag\":\"true\"}", "flag: expected a boolean");
	expect_param_error("{\"name\":\"n\",\"bs\":1000}", "bs: must be a power of two");
	expect_param_error("{\"name\":\"n\",\"bs\":131072}", "bs: must be between 512 and 65536");
	expect_param_error("{\"name\":\"n\",\"bs\":256}", "bs: must be between 512 and 65536");
	expect_param_error("{\"name\":\"n\",\"matrix\":\"foo\"}",
			   "matrix: must be one of vandermonde, cauchy");
	expect_param_error("{\"name\":\"n\",\"matrix\":3}", "matrix: expected a string");
	expect_param_error("{\"name\":\"n\",\"label\":\"a\"}",
			   "label: length must be between 2 and 4 characters");
	expect_param_error("{\"name\":\"n\",\"label\":\"abcde\"}",
			   "label: length must be between 2 and 4 characters");
	expect_param_error("{\"name\":\"a\\u0000b\"}", "name: must not contain NUL characters");
	/* An error after a string was decoded must not leak it (checked under ASan). */
	expect_param_error("{\"name\":\"n\",\"matrix\":\"cauchy\",\"bs\":3}",
			   "bs: must be between 512 and 65536");
}

static void
test_decode_spdk_params(void)
{
	json_t *resp;

	/* SPDK's defaults are accepted and change nothing; null is absent as usual. */
	resp = call("test_decode", "{\"name\":\"n\",\"ana_reporting\":false,"
				   "\"c2h_success\":true,\"tgt_name\":\"nvmf_tgt\",\"numa_id\":-1,"
				   "\"psk\":null}");
	CU_ASSERT(json_is_object(json_object_get(resp, "result")));
	json_decref(resp);
	resp = call("test_decode", "{\"name\":\"n\",\"c2h_success\":false}");
	CU_ASSERT(json_is_object(json_object_get(resp, "result")));
	json_decref(resp);

	expect_param_error("{\"name\":\"n\",\"ana_reporting\":true}",
			   "ana_reporting true: not supported by gga");
	expect_param_error("{\"name\":\"n\",\"tgt_name\":\"t2\"}",
			   "tgt_name \"t2\": not supported by gga");
	expect_param_error("{\"name\":\"n\",\"numa_id\":0}", "numa_id 0: not supported by gga");
	expect_param_error("{\"name\":\"n\",\"psk\":\"key0\"}",
			   "psk \"key0\": not supported by gga");
	expect_param_error("{\"name\":\"n\",\"psk\":false}", "psk false: not supported by gga");
	/* A value of the wrong type is a malformed call, not a missing feature. */
	expect_param_error("{\"name\":\"n\",\"ana_reporting\":0}",
			   "ana_reporting: expected a boolean");
	expect_param_error("{\"name\":\"n\",\"numa_id\":\"-1\"}", "numa_id: expected an integer");
	expect_param_error("{\"name\":\"n\",\"tgt_name\":1}", "tgt_name: expected a string");
	/* Unknown names are still refused; a refusal after a string leaks nothing (ASan). */
	expect_param_error("{\"name\":\"n\",\"ana_reportin\":false}",
			   "unknown parameter 'ana_reportin'");
	expect_param_error("{\"name\":\"n\",\"matrix\":\"cauchy\",\"ana_reporting\":true}",
			   "ana_reporting true: not supported by gga");
}

static void
test_send_errno(void)
{
	json_t *resp;

	resp = call("test_errno", "{\"rc\":-22}");
	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_STR_EQ(err_msg(resp), strerror(EINVAL));
	json_decref(resp);

	resp = call("test_errno", "{\"rc\":-34,\"msg\":\"x\"}");
	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_STR_EQ(err_msg(resp), "custom: x");
	json_decref(resp);

	resp = call("test_errno", "{\"rc\":-19}");
	UT_ASSERT_EQ(err_code(resp), -ENODEV);
	UT_ASSERT_STR_EQ(err_msg(resp), strerror(ENODEV));
	json_decref(resp);

	resp = call("test_errno", "{\"rc\":-17,\"msg\":\"bdev M0 exists\"}");
	UT_ASSERT_EQ(err_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(err_msg(resp), "custom: bdev M0 exists");
	json_decref(resp);
}

/* ---- Requests, batches, states ---- */

static void
expect_invalid_request(const char *text, bool null_id)
{
	json_t *resp = process(text, NULL);

	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_REQUEST);
	if (null_id) {
		CU_ASSERT(json_is_null(json_object_get(resp, "id")));
	} else {
		UT_ASSERT_EQ(json_integer_value(json_object_get(resp, "id")), 5);
	}
	json_decref(resp);
}

static void
test_invalid_requests(void)
{
	expect_invalid_request("42", true);
	expect_invalid_request("\"str\"", true);
	expect_invalid_request("{\"id\":5,\"method\":\"test_echo\"}", false);
	expect_invalid_request("{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"test_echo\"}", false);
	expect_invalid_request("{\"jsonrpc\":2.0,\"id\":5,\"method\":\"test_echo\"}", false);
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}", false);
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":5}", false);
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test_echo\","
			       "\"params\":5}",
			       false);
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test_echo\","
			       "\"params\":\"s\"}",
			       false);
	/* An id of the wrong type cannot be echoed: answered with null. */
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"test_echo\"}", true);
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"test_echo\"}", true);
	/* Invalid requests are answered even without an id. */
	expect_invalid_request("{\"jsonrpc\":\"2.0\",\"method\":5}", true);
}

static void
test_ids_and_not_found(void)
{
	struct ut_capture c = { 0 };
	json_t *resp, *v;
	int calls;

	resp = process("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"test_echo\","
		       "\"params\":[1,2]}",
		       NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "id")), "abc");
	UT_ASSERT_EQ(json_array_size(json_object_get(resp, "result")), 2);
	json_decref(resp);

	resp = process("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"test_echo\"}", NULL);
	CU_ASSERT(json_is_null(json_object_get(resp, "id")));
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);

	resp = process("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}", NULL);
	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_METHOD_NOT_FOUND);
	UT_ASSERT_STR_EQ(err_msg(resp), "Method not found: nope");
	UT_ASSERT_EQ(json_integer_value(json_object_get(resp, "id")), 3);
	json_decref(resp);

	/* Notifications get nothing back, even on errors; the handler still runs. */
	resp = process("{\"jsonrpc\":\"2.0\",\"method\":\"nope\"}", &calls);
	UT_ASSERT_EQ(calls, 1);
	CU_ASSERT(resp == NULL);
	g_async_count = 0;
	v = json_loads("{\"jsonrpc\":\"2.0\",\"method\":\"test_async\"}", 0, NULL);
	UT_ASSERT_EQ_FATAL(rpc_process_value(v, ut_capture_cb, &c), 0);
	json_decref(v);
	UT_ASSERT_EQ(c.calls, 0);
	UT_ASSERT_EQ_FATAL(g_async_count, 1);
	rpc_send_result(g_async_req[0], json_string("dropped"));
	UT_ASSERT_EQ(c.calls, 1);
	CU_ASSERT(c.resp == NULL);
	g_async_count = 0;
}

static void
test_batch(void)
{
	json_t *resp;
	int calls;

	resp = process("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\"},"
		       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"},"
		       "{\"jsonrpc\":\"2.0\",\"method\":\"test_echo\"},"
		       "5]",
		       NULL);
	CU_ASSERT_FATAL(json_is_array(resp));
	UT_ASSERT_EQ_FATAL(json_array_size(resp), 3);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_array_get(resp, 0), "id")), 1);
	CU_ASSERT(json_is_true(json_object_get(json_array_get(resp, 0), "result")));
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_array_get(resp, 1), "id")), 2);
	UT_ASSERT_EQ(err_code(json_array_get(resp, 1)), RPC_ERROR_METHOD_NOT_FOUND);
	UT_ASSERT_EQ(err_code(json_array_get(resp, 2)), RPC_ERROR_INVALID_REQUEST);
	json_decref(resp);

	resp = process("[]", NULL);
	CU_ASSERT(json_is_object(resp));
	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_REQUEST);
	json_decref(resp);

	resp = process("[1,2]", NULL);
	UT_ASSERT_EQ(json_array_size(resp), 2);
	UT_ASSERT_EQ(err_code(json_array_get(resp, 1)), RPC_ERROR_INVALID_REQUEST);
	json_decref(resp);

	/* All notifications: no answer at all, but exactly one completion. */
	resp = process("[{\"jsonrpc\":\"2.0\",\"method\":\"test_echo\"},"
		       "{\"jsonrpc\":\"2.0\",\"method\":\"test_echo\"}]",
		       &calls);
	UT_ASSERT_EQ(calls, 1);
	CU_ASSERT(resp == NULL);
}

static void
test_batch_async(void)
{
	struct ut_capture c = { 0 };
	json_t *v, *a;

	/* The batch is answered once, after its last (asynchronous) member. */
	g_async_count = 0;
	v = json_loads("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_async\"},"
		       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"test_echo\"},"
		       "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"test_async\"}]",
		       0, NULL);
	UT_ASSERT_EQ_FATAL(rpc_process_value(v, ut_capture_cb, &c), 0);
	json_decref(v);
	UT_ASSERT_EQ(c.calls, 0);
	UT_ASSERT_EQ_FATAL(g_async_count, 2);
	rpc_send_result(g_async_req[1], json_integer(33));
	UT_ASSERT_EQ(c.calls, 0);
	rpc_send_error(g_async_req[0], -5, "late %d", 11);
	UT_ASSERT_EQ_FATAL(c.calls, 1);
	a = c.resp;
	UT_ASSERT_EQ_FATAL(json_array_size(a), 3);
	/* Request order is kept, not answer order. */
	UT_ASSERT_EQ(err_code(json_array_get(a, 0)), -5);
	UT_ASSERT_STR_EQ(err_msg(json_array_get(a, 0)), "late 11");
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_array_get(a, 2), "result")), 33);
	json_decref(a);
	g_async_count = 0;

	/* rpc_call with an asynchronous handler calls back only when answered. */
	c.calls = 0;
	c.resp = NULL;
	UT_ASSERT_EQ(rpc_call("test_async", NULL, ut_capture_cb, &c), 0);
	UT_ASSERT_EQ(c.calls, 0);
	UT_ASSERT_EQ_FATAL(g_async_count, 1);
	rpc_send_bool(g_async_req[0], false);
	UT_ASSERT_EQ(c.calls, 1);
	CU_ASSERT(json_is_false(json_object_get(c.resp, "result")));
	json_decref(c.resp);
	g_async_count = 0;
}

static void
test_states(void)
{
	json_t *resp, *names;
	size_t i;
	bool found;

	rpc_set_state(RPC_STATE_RUNTIME);
	UT_ASSERT_EQ(rpc_get_state(), RPC_STATE_RUNTIME);
	resp = call("test_startup_only", NULL);
	UT_ASSERT_EQ(err_code(resp), RPC_ERROR_INVALID_STATE);
	UT_ASSERT_STR_EQ(err_msg(resp),
			 "Method test_startup_only is not allowed in the runtime state");
	json_decref(resp);

	resp = call("rpc_get_methods", "{\"current\":true}");
	names = json_object_get(resp, "result");
	CU_ASSERT_FATAL(json_is_array(names));
	found = false;
	for (i = 0; i < json_array_size(names); i++) {
		if (strcmp(json_string_value(json_array_get(names, i)), "test_startup_only") == 0) {
			found = true;
		}
	}
	CU_ASSERT(!found);
	json_decref(resp);

	resp = call("rpc_get_methods", NULL);
	names = json_object_get(resp, "result");
	found = false;
	for (i = 0; i < json_array_size(names); i++) {
		if (strcmp(json_string_value(json_array_get(names, i)), "test_startup_only") == 0) {
			found = true;
		}
	}
	CU_ASSERT(found);
	json_decref(resp);

	resp = call("rpc_get_methods", "{\"current\":1}");
	UT_ASSERT_STR_EQ(err_msg(resp), "current: expected a boolean");
	json_decref(resp);

	rpc_set_state(RPC_STATE_STARTUP);
	resp = call("test_startup_only", NULL);
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	rpc_set_state(RPC_STATE_RUNTIME);
}

static void
test_register_twice(void)
{
	json_t *resp;

	/* The first registration wins. */
	rpc_register_method("test_startup_only", method_other, RPC_STATE_ANY);
	rpc_set_state(RPC_STATE_STARTUP);
	resp = call("test_startup_only", NULL);
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	rpc_set_state(RPC_STATE_RUNTIME);
}

/* ---- The socket server ---- */

static struct thread *g_thread;
static char g_dir[32];
static char g_sock[64];

static void
poll_thread(int n)
{
	while (n-- > 0) {
		thread_poll(g_thread, 0, 0);
	}
}

static int
client_connect(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", g_sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CU_ASSERT_FATAL(fd >= 0);
	UT_ASSERT_EQ_FATAL(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

static void
client_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;
	int spins = 0;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN && spins++ < 100000) {
			poll_thread(1);
			continue;
		}
		CU_ASSERT_FATAL(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void
client_send_str(int fd, const char *s)
{
	client_send(fd, s, strlen(s));
}

struct reply {
	char buf[1 << 16];
	size_t len;
	bool closed;
};

/* Count the complete JSON values in the reply. */
static int
reply_count(const struct reply *r, json_t **values, int max)
{
	size_t off = 0;
	json_error_t err;
	json_t *v;
	int n = 0;

	while (off < r->len) {
		while (off < r->len && (r->buf[off] == '\n' || r->buf[off] == ' ')) {
			off++;
		}
		if (off == r->len) {
			break;
		}
		v = json_loadb(r->buf + off, r->len - off, JSON_DISABLE_EOF_CHECK, &err);
		if (v == NULL) {
			break;
		}
		off += (size_t)err.position;
		if (n < max && values != NULL) {
			values[n] = v;
		} else {
			json_decref(v);
		}
		n++;
	}
	return n;
}

/*
 * Poll the server and read until `want` values arrived (or EOF if want < 0).
 * Bounded: gives up after ~2 s.
 */
static void
client_read(int fd, struct reply *r, int want)
{
	ssize_t n;
	int i;

	for (i = 0; i < 2000; i++) {
		poll_thread(4);
		n = recv(fd, r->buf + r->len, sizeof(r->buf) - r->len - 1, MSG_DONTWAIT);
		if (n > 0) {
			r->len += (size_t)n;
		} else if (n == 0 || (n < 0 && errno != EAGAIN)) {
			r->closed = true;
			return;
		}
		if (want >= 0 && reply_count(r, NULL, 0) >= want) {
			return;
		}
		if (n <= 0) {
			usleep(1000);
		}
	}
}

static int
server_init(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/rpc_ut.XXXXXX");
	if (mkdtemp(g_dir) == NULL) {
		return 1;
	}
	snprintf(g_sock, sizeof(g_sock), "%s/rpc.sock", g_dir);
	if (thread_lib_init() != 0) {
		return 1;
	}
	g_thread = thread_create("rpc_ut");
	if (g_thread == NULL) {
		return 1;
	}
	thread_set_current(g_thread);
	rpc_register_method("test_decode", method_decode, RPC_STATE_ANY);
	rpc_register_method("test_async", method_async, RPC_STATE_ANY);
	rpc_register_method("test_echo", method_echo, RPC_STATE_ANY);
	rpc_register_method("test_errno", method_errno, RPC_STATE_ANY);
	rpc_register_method("test_startup_only", method_startup_only, RPC_STATE_STARTUP);
	rpc_register_builtin_methods();
	return 0;
}

static int
server_fini(void)
{
	rpc_server_close();
	rpc_unregister_all();
	poll_thread(4);
	thread_set_current(NULL);
	thread_destroy(g_thread);
	thread_lib_fini();
	unlink(g_sock);
	rmdir(g_dir);
	return 0;
}

static void
test_server_basic(void)
{
	struct reply r = { .len = 0 };
	json_t *v[4] = { NULL };
	struct stat st;
	int fd;

	UT_ASSERT_EQ_FATAL(rpc_server_listen(g_sock), 0);
	UT_ASSERT_EQ(stat(g_sock, &st), 0);
	CU_ASSERT(S_ISSOCK(st.st_mode));
	UT_ASSERT_EQ(st.st_mode & 0777, 0600);
	UT_ASSERT_EQ(rpc_server_listen(g_sock), -EALREADY);

	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"test_echo\","
			    "\"params\":{\"a\":1}}");
	client_read(fd, &r, 1);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 4), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[0], "id")), 7);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(v[0], "result"), "a")), 1);
	json_decref(v[0]);

	/* Whitespace of every kind between the tokens. */
	r.len = 0;
	client_send_str(fd, "{ \"jsonrpc\" :\t\"2.0\",\r\n \"id\": 8 , \"method\":\"test_echo\","
			    "\"params\": [ 1 , { } ] }");
	client_read(fd, &r, 1);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 4), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[0], "id")), 8);
	json_decref(v[0]);

	/* A bare value is an invalid request, not a broken stream: the connection stays. */
	r.len = 0;
	client_send_str(fd, "42 ");
	client_read(fd, &r, 1);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 4), 1);
	UT_ASSERT_EQ(err_code(v[0]), RPC_ERROR_INVALID_REQUEST);
	json_decref(v[0]);
	CU_ASSERT(!r.closed);

	/* Two values in one write, and a batch. */
	r.len = 0;
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\"}\n"
			    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"test_echo\"}"
			    "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"test_echo\"}]");
	client_read(fd, &r, 3);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 4), 3);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[0], "id")), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[1], "id")), 2);
	CU_ASSERT(json_is_array(v[2]));
	json_decref(v[0]);
	json_decref(v[1]);
	json_decref(v[2]);
	close(fd);
	poll_thread(8);
}

static void
test_server_split(void)
{
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"test_echo\","
			  "\"params\":{\"s\":\"a}b]\\\"{[\"}}";
	struct reply r = { .len = 0 };
	json_t *v[2] = { NULL };
	size_t i;
	int fd;

	/* Byte by byte, polling in between: brackets inside strings must not count. */
	fd = client_connect();
	for (i = 0; i < strlen(req); i++) {
		client_send(fd, req + i, 1);
		poll_thread(2);
	}
	client_read(fd, &r, 1);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[0], "id")), 9);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(v[0], "result"), "s")),
			 "a}b]\"{[");
	json_decref(v[0]);
	close(fd);
	poll_thread(8);
}

static void
test_server_parse_errors(void)
{
	struct reply r = { .len = 0 };
	json_t *v[2] = { NULL };
	static const char *const cut[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"meth\x01",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\\x1f",
		"[{\"id\":\x02",
		"{\"id\":1,\xff",
		"\"top\x0a",
	};
	static char junk[1 << 20];
	size_t i;
	int fd;

	/* Malformed JSON: parse error, then the connection is closed. */
	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":}");
	client_read(fd, &r, -1);
	CU_ASSERT(r.closed);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
	UT_ASSERT_EQ(err_code(v[0]), RPC_ERROR_PARSE_ERROR);
	CU_ASSERT(json_is_null(json_object_get(v[0], "id")));
	json_decref(v[0]);
	close(fd);

	/*
	 * A byte that no JSON can hold, in an unfinished value: answered at once
	 * (found by the RPC fuzzer: the server waited for the value's end).
	 */
	for (i = 0; i < ARRAY_SIZE(cut); i++) {
		r.len = 0;
		r.closed = false;
		fd = client_connect();
		client_send_str(fd, cut[i]);
		client_read(fd, &r, 1);
		UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
		UT_ASSERT_EQ(err_code(v[0]), RPC_ERROR_PARSE_ERROR);
		json_decref(v[0]);
		client_read(fd, &r, -1);
		CU_ASSERT(r.closed);
		close(fd);
	}

	/* Binary garbage. */
	for (i = 0; i < sizeof(junk); i++) {
		junk[i] = (char)(i * 7 + 1);
	}
	r.len = 0;
	r.closed = false;
	fd = client_connect();
	send(fd, junk, sizeof(junk), MSG_NOSIGNAL | MSG_DONTWAIT);
	client_read(fd, &r, -1);
	CU_ASSERT(r.closed);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
	UT_ASSERT_EQ(err_code(v[0]), RPC_ERROR_PARSE_ERROR);
	json_decref(v[0]);
	close(fd);
	poll_thread(8);
}

static void
test_server_oversized(void)
{
	static char chunk[64 * 1024];
	struct reply r = { .len = 0 };
	json_t *v[2] = { NULL };
	size_t sent = 0;
	ssize_t n;
	int fd, spins = 0;

	memset(chunk, 'a', sizeof(chunk));
	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\","
			    "\"params\":{\"s\":\"");
	/* An unterminated string twice the size limit. */
	while (sent < 8u * 1024 * 1024 && spins < 100000) {
		n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			sent += (size_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			spins++;
			poll_thread(1);
		} else {
			break;
		}
	}
	/* The server reads and drops the rest instead of resetting the connection. */
	CU_ASSERT(sent >= 8u * 1024 * 1024);
	client_read(fd, &r, -1);
	CU_ASSERT(r.closed);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
	UT_ASSERT_EQ(err_code(v[0]), RPC_ERROR_PARSE_ERROR);
	json_decref(v[0]);
	close(fd);
	poll_thread(8);
}

static void
test_server_disconnects(void)
{
	struct reply r = { .len = 0 };
	json_t *v[2] = { NULL };
	int fd;

	/* Mid-request. */
	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_ec");
	poll_thread(8);
	close(fd);
	poll_thread(8);

	/* Before an asynchronous handler answers: the answer is dropped later. */
	g_async_count = 0;
	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_async\"}");
	poll_thread(8);
	UT_ASSERT_EQ_FATAL(g_async_count, 1);
	close(fd);
	poll_thread(8);
	rpc_send_result(g_async_req[0], json_string("nobody listens"));
	g_async_count = 0;
	poll_thread(8);

	/* Half-close after the request: the answer still arrives, then EOF. */
	fd = client_connect();
	client_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"test_async\"}");
	shutdown(fd, SHUT_WR);
	poll_thread(8);
	UT_ASSERT_EQ_FATAL(g_async_count, 1);
	rpc_send_result(g_async_req[0], json_integer(44));
	g_async_count = 0;
	client_read(fd, &r, -1);
	CU_ASSERT(r.closed);
	UT_ASSERT_EQ_FATAL(reply_count(&r, v, 2), 1);
	UT_ASSERT_EQ(json_integer_value(json_object_get(v[0], "result")), 44);
	json_decref(v[0]);
	close(fd);
	poll_thread(8);
}

static void
test_server_many_clients(void)
{
	enum { N = 40 };
	int fds[N], i, good = 0;
	char req[128];
	json_t *v[2];

	for (i = 0; i < N; i++) {
		fds[i] = client_connect();
	}
	for (i = 0; i < N; i++) {
		snprintf(req, sizeof(req),
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"test_echo\"}", i);
		client_send_str(fds[i], req);
	}
	for (i = 0; i < N; i++) {
		struct reply r = { .len = 0 };

		client_read(fds[i], &r, 1);
		if (reply_count(&r, v, 2) == 1) {
			if (json_integer_value(json_object_get(v[0], "id")) == i) {
				good++;
			}
			json_decref(v[0]);
		}
		close(fds[i]);
	}
	UT_ASSERT_EQ(good, N);
	poll_thread(8);
}

static void
test_server_close_and_reuse(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char other[64];
	struct stat st;
	int fd, lfd;

	/* Closing removes the socket file; a client then cannot connect. */
	rpc_server_close();
	CU_ASSERT(stat(g_sock, &st) != 0 && errno == ENOENT);

	/* A stale socket file (nobody listening) is replaced. */
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", g_sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	UT_ASSERT_EQ_FATAL(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	close(fd);
	UT_ASSERT_EQ(stat(g_sock, &st), 0);
	UT_ASSERT_EQ(rpc_server_listen(g_sock), 0);
	fd = client_connect();
	close(fd);
	poll_thread(8);
	rpc_server_close();

	/* A live server elsewhere is not stolen from. */
	snprintf(other, sizeof(other), "%s/live.sock", g_dir);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", other);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	UT_ASSERT_EQ_FATAL(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	UT_ASSERT_EQ_FATAL(listen(lfd, 4), 0);
	UT_ASSERT_EQ(rpc_server_listen(other), -EADDRINUSE);
	UT_ASSERT_EQ(stat(other, &st), 0);
	close(lfd);
	unlink(other);

	/* Nor is a regular file replaced. */
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	UT_ASSERT_EQ(rpc_server_listen(other), -EEXIST);
	UT_ASSERT_EQ(stat(other, &st), 0);
	CU_ASSERT(S_ISREG(st.st_mode));
	unlink(other);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_decode_all_types),    UT_TEST(test_decode_optional_defaults),
		UT_TEST(test_decode_errors),       UT_TEST(test_decode_spdk_params),
		UT_TEST(test_send_errno),          UT_TEST(test_invalid_requests),
		UT_TEST(test_ids_and_not_found),   UT_TEST(test_batch),
		UT_TEST(test_batch_async),         UT_TEST(test_states),
		UT_TEST(test_register_twice),      UT_TEST(test_server_basic),
		UT_TEST(test_server_split),        UT_TEST(test_server_parse_errors),
		UT_TEST(test_server_oversized),    UT_TEST(test_server_disconnects),
		UT_TEST(test_server_many_clients), UT_TEST(test_server_close_and_reuse),
	};

	return ut_run("rpc", tests, ARRAY_SIZE(tests), server_init, server_fini);
}
