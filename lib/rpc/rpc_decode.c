/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Declarative decoding of a request's params object into a C struct. Every
 * rejection answers the request with INVALID_PARAMS and a message that names
 * the parameter and says what was wrong with it, so that a user of gga_rpc
 * can fix the call without reading the source.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gga/rpc.h"
#include "gga/util.h"

static const struct rpc_param *
find_decl(const struct rpc_param *decl, size_t count, const char *name)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (strcmp(decl[i].name, name) == 0) {
			return &decl[i];
		}
	}
	return NULL;
}

/* Reject an unsigned value outside [lo, hi], where hi == limit means "no upper bound". */
static int
check_unsigned_range(struct rpc_request *req, const struct rpc_param *p, uint64_t v, uint64_t limit)
{
	uint64_t lo = 0, hi = limit;

	if (p->max != 0) {
		lo = p->min;
		hi = GGA_MIN(p->max, limit);
	}
	if (v >= lo && v <= hi) {
		return 0;
	}
	if (hi == limit && lo > 0 && v < lo) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must be at least %" PRIu64,
			       p->name, lo);
	} else if (lo == 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must be at most %" PRIu64,
			       p->name, hi);
	} else {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "%s: must be between %" PRIu64 " and %" PRIu64, p->name, lo, hi);
	}
	return -EINVAL;
}

static int
check_pow2(struct rpc_request *req, const struct rpc_param *p, uint64_t v)
{
	if (p->pow2 && !is_pow2(v)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must be a power of two",
			       p->name);
		return -EINVAL;
	}
	return 0;
}

static int
decode_unsigned(struct rpc_request *req, const struct rpc_param *p, json_t *v, uint64_t limit,
		uint64_t *out)
{
	json_int_t i;

	/* Reals (even 8.0) and negative values are not unsigned integers. */
	if (!json_is_integer(v) || (i = json_integer_value(v)) < 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected an unsigned integer",
			       p->name);
		return -EINVAL;
	}
	if (check_unsigned_range(req, p, (uint64_t)i, limit) != 0 ||
	    check_pow2(req, p, (uint64_t)i) != 0) {
		return -EINVAL;
	}
	*out = (uint64_t)i;
	return 0;
}

static int
decode_int32(struct rpc_request *req, const struct rpc_param *p, json_t *v, int32_t *out)
{
	int64_t lo = INT32_MIN, hi = INT32_MAX;
	json_int_t i;

	if (!json_is_integer(v)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected an integer", p->name);
		return -EINVAL;
	}
	i = json_integer_value(v);
	if (p->max != 0) {
		lo = GGA_MAX((int64_t)p->min, lo);
		hi = GGA_MIN((int64_t)p->max, hi);
	}
	if (i < lo || i > hi) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "%s: must be between %" PRId64 " and %" PRId64, p->name, lo, hi);
		return -EINVAL;
	}
	if (p->pow2 && (i < 0 || !is_pow2((uint64_t)i))) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must be a power of two",
			       p->name);
		return -EINVAL;
	}
	*out = (int32_t)i;
	return 0;
}

static int
check_choices(struct rpc_request *req, const struct rpc_param *p, const char *s)
{
	char list[512];
	size_t i, len = 0;

	if (p->choices == NULL) {
		return 0;
	}
	for (i = 0; p->choices[i] != NULL; i++) {
		if (strcmp(p->choices[i], s) == 0) {
			return 0;
		}
	}
	list[0] = '\0';
	for (i = 0; p->choices[i] != NULL && len < sizeof(list); i++) {
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
					p->choices[i]);
	}
	rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must be one of %s", p->name, list);
	return -EINVAL;
}

static int
decode_string(struct rpc_request *req, const struct rpc_param *p, json_t *v, char **out)
{
	const char *s;
	size_t len;
	char *copy;

	if (!json_is_string(v)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected a string", p->name);
		return -EINVAL;
	}
	s = json_string_value(v);
	len = json_string_length(v);
	if (strlen(s) != len) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: must not contain NUL characters",
			       p->name);
		return -EINVAL;
	}
	/* For strings, min/max bound the length. */
	if (p->max != 0 && (len < p->min || len > p->max)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "%s: length must be between %" PRIu64 " and %" PRIu64 " characters",
			       p->name, p->min, p->max);
		return -EINVAL;
	}
	if (check_choices(req, p, s) != 0) {
		return -EINVAL;
	}
	copy = strdup(s);
	if (copy == NULL) {
		rpc_send_errno(req, -ENOMEM, "%s: out of memory", p->name);
		return -ENOMEM;
	}
	*out = copy;
	return 0;
}

static const char *
json_type_article(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_INTEGER:
		return "an integer";
	case JSON_STRING:
		return "a string";
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	default:
		return "a number";
	}
}

static bool
json_same_type(const json_t *a, const json_t *b)
{
	return json_typeof(a) == json_typeof(b) || (json_is_boolean(a) && json_is_boolean(b));
}

/*
 * An SPDK parameter for a feature gga lacks: only the values that leave the
 * feature off (SPDK's default) are accepted, and they change nothing.
 */
static int
decode_spdk(struct rpc_request *req, const struct rpc_param *p, json_t *v)
{
	const char *const *text;
	json_t *accepted;
	bool match = false;
	char *dump;

	for (text = p->spdk_values; text != NULL && *text != NULL && !match; text++) {
		accepted = json_loads(*text, JSON_DECODE_ANY, NULL);
		if (accepted == NULL) {
			rpc_send_error(req, RPC_ERROR_INTERNAL_ERROR, "%s: bad SPDK default '%s'",
				       p->name, *text);
			return -EINVAL;
		}
		/* A wrong type is a malformed call, as SPDK's decoder would say too. */
		if (text == p->spdk_values && !json_same_type(accepted, v)) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected %s", p->name,
				       json_type_article(accepted));
			json_decref(accepted);
			return -EINVAL;
		}
		match = json_equal(accepted, v);
		json_decref(accepted);
	}
	if (match) {
		return 0;
	}
	dump = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s %s: not supported by gga", p->name,
		       dump != NULL ? dump : "(value)");
	free(dump);
	return -EINVAL;
}

static int
decode_one(struct rpc_request *req, const struct rpc_param *p, json_t *v, void *out)
{
	char *field;
	uint64_t u;
	int rc;

	/* Stores nothing: a table of only these may decode into NULL. */
	if (p->type == RPC_PARAM_SPDK) {
		return decode_spdk(req, p, v);
	}
	field = (char *)out + p->offset;
	switch (p->type) {
	case RPC_PARAM_STRING:
		return decode_string(req, p, v, (char **)field);
	case RPC_PARAM_BOOL:
		if (!json_is_boolean(v)) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected a boolean",
				       p->name);
			return -EINVAL;
		}
		*(bool *)field = json_is_true(v);
		return 0;
	case RPC_PARAM_INT32:
		return decode_int32(req, p, v, (int32_t *)field);
	case RPC_PARAM_UINT32:
		rc = decode_unsigned(req, p, v, UINT32_MAX, &u);
		if (rc == 0) {
			*(uint32_t *)field = (uint32_t)u;
		}
		return rc;
	case RPC_PARAM_UINT64:
		rc = decode_unsigned(req, p, v, UINT64_MAX, &u);
		if (rc == 0) {
			*(uint64_t *)field = u;
		}
		return rc;
	case RPC_PARAM_JSON:
		*(json_t **)field = v;
		return 0;
	case RPC_PARAM_SPDK:
		break;
	}
	rpc_send_error(req, RPC_ERROR_INTERNAL_ERROR, "%s: unknown parameter type %d", p->name,
		       (int)p->type);
	return -EINVAL;
}

int
rpc_decode_params(struct rpc_request *req, json_t *params, const struct rpc_param *decl,
		  size_t count, void *out)
{
	const char *key;
	json_t *v;
	size_t i;

	if (params != NULL && !json_is_object(params)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "params: expected an object of named parameters");
		return -EINVAL;
	}
	/* Unknown names first: a misspelt optional parameter must not be silently ignored. */
	if (params != NULL) {
		json_object_foreach(params, key, v)
		{
			if (find_decl(decl, count, key) == NULL) {
				rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
					       "unknown parameter '%s'", key);
				return -EINVAL;
			}
		}
	}
	for (i = 0; i < count; i++) {
		v = params != NULL ? json_object_get(params, decl[i].name) : NULL;
		/* An explicit null means "not given", except for raw JSON parameters. */
		if (v == NULL || (json_is_null(v) && decl[i].type != RPC_PARAM_JSON)) {
			if (!decl[i].optional) {
				rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: required",
					       decl[i].name);
				return -EINVAL;
			}
			continue;
		}
		if (decode_one(req, &decl[i], v, out) != 0) {
			return -EINVAL;
		}
	}
	return 0;
}

void
rpc_free_params(const struct rpc_param *decl, size_t count, void *out)
{
	char **s;
	size_t i;

	for (i = 0; i < count; i++) {
		if (decl[i].type == RPC_PARAM_STRING) {
			s = (char **)((char *)out + decl[i].offset);
			free(*s);
			*s = NULL;
		}
	}
}

int
rpc_name_mask(struct rpc_request *req, const char *param, json_t *arr,
	      int (*lookup)(const char *name))
{
	size_t i;
	json_t *v;
	int mask = 0, id;

	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: expected a non-empty array",
			       param);
		return -1;
	}
	json_array_foreach(arr, i, v)
	{
		id = json_is_string(v) ? lookup(json_string_value(v)) : -1;
		if (id < 0 || id > 30) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: unknown value %s", param,
				       json_is_string(v) ? json_string_value(v) : "(not a string)");
			return -1;
		}
		mask |= 1 << id;
	}
	return mask;
}
