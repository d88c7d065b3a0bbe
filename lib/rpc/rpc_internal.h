/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared between the request processor (rpc.c) and the socket server
 * (rpc_server.c): one parsed JSON value in, one response value out.
 */
#ifndef GGA_RPC_INTERNAL_H
#define GGA_RPC_INTERNAL_H

#include <jansson.h>

#include "gga/rpc.h"

/* Largest batch accepted; a bigger one is answered with INVALID_REQUEST. */
#define RPC_MAX_BATCH 1024

/*
 * Receives the answer to one processed value: a response object, a batch
 * array, or NULL when nothing is to be sent (notifications only). Ownership
 * of `response` passes to the callee.
 */
typedef void (*rpc_exchange_done_fn)(void *ctx, json_t *response);

/*
 * Process one JSON value received from a client (a request object, a batch
 * array, or anything else, which is answered as an invalid request). `value`
 * is borrowed. done(ctx, ...) is called exactly once, possibly before this
 * returns, and always on the app thread. Returns 0, or -ENOMEM (done is then
 * not called).
 */
int rpc_process_value(json_t *value, rpc_exchange_done_fn done, void *ctx);

/* A complete error response {"jsonrpc","id","error":{code,message}}; id NULL means null. */
json_t *rpc_error_response(json_t *id, int code, const char *message);

#endif /* GGA_RPC_INTERNAL_H */
