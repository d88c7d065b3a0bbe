/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calling JSON-RPC methods in-process from a unit test: the response of
 * rpc_call()/rpc_process_value() captured, and a synchronous call.
 * Include after gga_ut.h.
 */
#ifndef GGA_UT_RPC_H
#define GGA_UT_RPC_H

#include <jansson.h>

#include "gga/rpc.h"

struct ut_capture {
	json_t *resp;
	int calls;
};

/* An rpc_call_cb keeping the last response (the previous one is dropped). */
static inline void
ut_capture_cb(void *ctx, json_t *resp)
{
	struct ut_capture *c = ctx;

	c->calls++;
	json_decref(c->resp);
	c->resp = resp;
}

/*
 * Call a method that answers at once; params is borrowed (may be NULL).
 * Returns the whole response (the caller decrefs it).
 */
static inline json_t *
ut_rpc_call(const char *method, json_t *params)
{
	struct ut_capture c = { 0 };

	UT_ASSERT_EQ_FATAL(rpc_call(method, params, ut_capture_cb, &c), 0);
	UT_ASSERT_EQ_FATAL(c.calls, 1);
	return c.resp;
}

#endif /* GGA_UT_RPC_H */
