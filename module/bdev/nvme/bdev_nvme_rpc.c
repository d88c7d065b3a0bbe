/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPCs of the NVMe bdev: bdev_nvme_attach_controller,
 * bdev_nvme_detach_controller and bdev_nvme_get_controllers.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/rpc.h"
#include "gga/util.h"

#include "gga/keyring.h"
#include "gga/nvme_auth.h"

#include "bdev_nvme.h"

struct rpc_nvme_attach {
	char *name;
	char *trtype;
	char *adrfam;
	char *traddr;
	char *trsvcid;
	char *subnqn;
	char *hostnqn;
	bool hdgst;
	bool ddgst;
	uint32_t timeout_ms;
	uint32_t keep_alive_timeout_ms;
	bool retry_first_connect;
	char *multipath;
	uint32_t fast_io_fail_timeout_sec;
	char *dhchap_key;
	char *dhchap_ctrlr_key;
	char *psk;
};

static const struct rpc_param nvme_attach_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.min = 1,
		.max = 64,
		.offset = offsetof(struct rpc_nvme_attach, name),
	},
	{
		.name = "trtype",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_nvme_attach, trtype),
	},
	{
		.name = "adrfam",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, adrfam),
	},
	{
		.name = "traddr",
		.type = RPC_PARAM_STRING,
		.min = 1,
		.max = NVME_TRADDR_MAX_LEN,
		.offset = offsetof(struct rpc_nvme_attach, traddr),
	},
	{
		.name = "trsvcid",
		.type = RPC_PARAM_STRING,
		.min = 1,
		.max = NVME_TRSVCID_MAX_LEN,
		.offset = offsetof(struct rpc_nvme_attach, trsvcid),
	},
	{
		.name = "subnqn",
		.type = RPC_PARAM_STRING,
		.min = 1,
		.max = NVME_NQN_MAX_LEN,
		.offset = offsetof(struct rpc_nvme_attach, subnqn),
	},
	{
		.name = "hostnqn",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.min = 1,
		.max = NVME_NQN_MAX_LEN,
		.offset = offsetof(struct rpc_nvme_attach, hostnqn),
	},
	{
		.name = "hdgst",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, hdgst),
	},
	{
		.name = "ddgst",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, ddgst),
	},
	{
		.name = "timeout_ms",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1,
		.max = 3600 * 1000,
		.offset = offsetof(struct rpc_nvme_attach, timeout_ms),
	},
	{
		.name = "keep_alive_timeout_ms",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1000,
		.max = 3600 * 1000,
		.offset = offsetof(struct rpc_nvme_attach, keep_alive_timeout_ms),
	},
	{
		.name = "retry_first_connect",
		.type = RPC_PARAM_BOOL,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, retry_first_connect),
	},
	/* SPDK's parameters for what gga's NVMe bdev lacks, at their defaults (docs/RPC.md). */
	RPC_PARAM_SPDK_UNSUPPORTED("priority"),
	RPC_PARAM_SPDK_UNSUPPORTED("hostaddr"),
	RPC_PARAM_SPDK_UNSUPPORTED("hostsvcid"),
	RPC_PARAM_SPDK_NOOP("prchk_reftag", "false"),
	RPC_PARAM_SPDK_NOOP("prchk_guard", "false"),
	RPC_PARAM_SPDK_NOOP("fabrics_connect_timeout_us", "0"),
	{
		.name = "multipath",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, multipath),
	},
	{
		.name = "fast_io_fail_timeout_sec",
		.type = RPC_PARAM_UINT32,
		.optional = true,
		.min = 1,
		.max = 3600,
		.offset = offsetof(struct rpc_nvme_attach, fast_io_fail_timeout_sec),
	},
	RPC_PARAM_SPDK_NOOP("num_io_queues", "1024"),
	/* gga reconnects a lost controller for ever and fails I/O meanwhile at once. */
	RPC_PARAM_SPDK_NOOP("ctrlr_loss_timeout_sec", "-1"),
	RPC_PARAM_SPDK_UNSUPPORTED("reconnect_delay_sec"),
	{
		.name = "psk",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, psk),
	},
	RPC_PARAM_SPDK_NOOP("max_bdevs", "128"),
	{
		.name = "dhchap_key",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, dhchap_key),
	},
	{
		.name = "dhchap_ctrlr_key",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_attach, dhchap_ctrlr_key),
	},
	RPC_PARAM_SPDK_NOOP("allow_unrecognized_csi", "false"),
	RPC_PARAM_SPDK_UNSUPPORTED("multipath_opts"),
	RPC_PARAM_SPDK_NOOP("disable_sq_flow_control", "false"),
};

static void
nvme_rpc_attach_done(void *cb_arg, int rc, const char *errmsg, const char *const *names,
		     size_t count)
{
	struct rpc_request *req = cb_arg;
	json_t *result;
	size_t i;

	if (rc != 0) {
		/* rpc_send_errno maps -EINVAL to INVALID_PARAMS; a failed connect is not that. */
		rpc_send_error(req, rc == -EINVAL ? RPC_ERROR_INTERNAL_ERROR : rc, "%s",
			       errmsg != NULL ? errmsg : "attach failed");
		return;
	}
	result = json_array();
	for (i = 0; i < count && result != NULL; i++) {
		json_array_append_new(result, json_string(names[i]));
	}
	rpc_send_result(req, result);
}

/* A named key's DH-HMAC-CHAP secret; on failure the error is sent and -1 returned. */
static int
rpc_load_secret(struct rpc_request *req, const char *param, const char *name,
		struct nvme_dhchap_secret *secret)
{
	char msg[256];

	if (name == NULL || nvme_dhchap_key_lookup(name, NULL, secret, msg, sizeof(msg)) == 0) {
		return 0;
	}
	rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "%s: %s", param, msg);
	return -1;
}

static void
nvme_rpc_attach(struct rpc_request *req, json_t *params)
{
	struct rpc_nvme_attach args = { 0 };
	struct bdev_nvme_attach_opts opts = { 0 };
	int rc;

	if (rpc_decode_params(req, params, nvme_attach_params, ARRAY_SIZE(nvme_attach_params),
			      &args) != 0) {
		goto out_free_params;
	}
	if (nvme_transport_type_parse(args.trtype, &opts.trid.trtype) != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "trtype: '%s' is not a transport (tcp or rdma)", args.trtype);
		goto out_free_params;
	}
#ifndef GGA_CONFIG_RDMA
	if (opts.trid.trtype == NVME_TRANSPORT_RDMA) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "trtype: gga was built without RDMA support; use tcp");
		goto out_free_params;
	}
#endif
	opts.trid.adrfam = NVME_ADRFAM_IPV4;
	if (args.adrfam != NULL && (nvme_adrfam_parse(args.adrfam, &opts.trid.adrfam) != 0 ||
				    opts.trid.adrfam != NVME_ADRFAM_IPV4)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "adrfam: '%s' is not supported (ipv4)", args.adrfam);
		goto out_free_params;
	}
	snprintf(opts.trid.traddr, sizeof(opts.trid.traddr), "%s", args.traddr);
	snprintf(opts.trid.trsvcid, sizeof(opts.trid.trsvcid), "%s", args.trsvcid);
	snprintf(opts.trid.subnqn, sizeof(opts.trid.subnqn), "%s", args.subnqn);
	opts.name = args.name;
	opts.hostnqn = args.hostnqn;
	opts.hdgst = args.hdgst;
	opts.ddgst = args.ddgst;
	opts.timeout_ms = args.timeout_ms;
	opts.keep_alive_timeout_ms = args.keep_alive_timeout_ms;
	opts.retry_first_connect = args.retry_first_connect;
	opts.hold_ms = args.fast_io_fail_timeout_sec * 1000;
	if (args.dhchap_ctrlr_key != NULL && args.dhchap_key == NULL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "dhchap_ctrlr_key: needs dhchap_key");
		goto out_free_params;
	}
	if (rpc_load_secret(req, "dhchap_key", args.dhchap_key, &opts.dhchap_key) != 0 ||
	    rpc_load_secret(req, "dhchap_ctrlr_key", args.dhchap_ctrlr_key,
			    &opts.dhchap_ctrlr_key) != 0) {
		goto out_free_params;
	}
	opts.dhchap_key_name = args.dhchap_key;
	opts.dhchap_ctrlr_key_name = args.dhchap_ctrlr_key;
	if (args.psk != NULL) {
		char msg[256];

		if (opts.trid.trtype != NVME_TRANSPORT_TCP) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
				       "psk: TLS is for NVMe/TCP only (trtype tcp)");
			goto out_free_params;
		}
		if (nvme_tls_key_lookup(args.psk, NULL, &opts.psk, msg, sizeof(msg)) != 0) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "psk: %s", msg);
			goto out_free_params;
		}
		opts.psk_name = args.psk;
	}
	if (args.multipath == NULL || strcmp(args.multipath, "multipath") == 0) {
		opts.multipath = BDEV_NVME_MP_MULTIPATH;
	} else if (strcmp(args.multipath, "failover") == 0) {
		opts.multipath = BDEV_NVME_MP_FAILOVER;
	} else if (strcmp(args.multipath, "disable") == 0) {
		opts.multipath = BDEV_NVME_MP_DISABLE;
	} else {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "multipath: '%s' is not multipath, failover or disable",
			       args.multipath);
		goto out_free_params;
	}

	rc = bdev_nvme_attach_controller(&opts, nvme_rpc_attach_done, req);
	switch (rc) {
	case 0:
		break;
	case -EEXIST:
		rpc_send_errno(req, rc, "nvme controller '%s' already exists%s", args.name,
			       opts.multipath == BDEV_NVME_MP_DISABLE ?
				       " and multipath is disabled" :
				       " and its multipath is disabled");
		break;
	case -EBUSY:
		rpc_send_errno(req, rc, "nvme controller '%s' is being attached or detached",
			       args.name);
		break;
	case -EXDEV:
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "subnqn: nvme controller '%s' exists with another subsystem NQN",
			       args.name);
		break;
	case -EALREADY:
		rpc_send_errno(req, rc, "nvme controller '%s' already has the path %s:%s",
			       args.name, args.traddr, args.trsvcid);
		break;
	case -ENOSPC:
		rpc_send_errno(req, rc, "nvme controller '%s' has %d paths already", args.name,
			       BDEV_NVME_MAX_PATHS);
		break;
	case -EPERM:
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "hostnqn/hdgst/ddgst: a path of nvme controller '%s' must use the "
			       "same host NQN and digests as its first",
			       args.name);
		break;
	case -ENOTSUP:
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "retry_first_connect: only for the first path of a controller");
		break;
	case -EINVAL:
		rpc_send_errno(req, rc, "traddr/trsvcid: '%s:%s' is not an IPv4 address and port",
			       args.traddr, args.trsvcid);
		break;
	default:
		rpc_send_errno(req, rc, NULL);
		break;
	}

out_free_params:
	explicit_bzero(&opts, sizeof(opts));
	rpc_free_params(nvme_attach_params, ARRAY_SIZE(nvme_attach_params), &args);
}

struct rpc_nvme_name {
	char *name;
};

static const struct rpc_param nvme_detach_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.offset = offsetof(struct rpc_nvme_name, name),
	},
	/* SPDK's path selectors: a gga controller has one path, detached by name. */
	RPC_PARAM_SPDK_UNSUPPORTED("trtype"),
	RPC_PARAM_SPDK_UNSUPPORTED("traddr"),
	RPC_PARAM_SPDK_UNSUPPORTED("adrfam"),
	RPC_PARAM_SPDK_UNSUPPORTED("trsvcid"),
	RPC_PARAM_SPDK_UNSUPPORTED("subnqn"),
	RPC_PARAM_SPDK_UNSUPPORTED("hostaddr"),
	RPC_PARAM_SPDK_UNSUPPORTED("hostsvcid"),
};

static void
nvme_rpc_detach_done(void *cb_arg, int rc)
{
	struct rpc_request *req = cb_arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}
}

static void
nvme_rpc_detach(struct rpc_request *req, json_t *params)
{
	struct rpc_nvme_name args = { 0 };
	int rc;

	if (rpc_decode_params(req, params, nvme_detach_params, ARRAY_SIZE(nvme_detach_params),
			      &args) != 0) {
		goto out_free_params;
	}
	rc = bdev_nvme_detach_controller(args.name, nvme_rpc_detach_done, req);
	if (rc == -ENODEV) {
		rpc_send_errno(req, rc, "nvme controller '%s' does not exist", args.name);
	} else if (rc == -EBUSY) {
		rpc_send_errno(req, rc, "nvme controller '%s' is being attached or detached",
			       args.name);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	}

out_free_params:
	rpc_free_params(nvme_detach_params, ARRAY_SIZE(nvme_detach_params), &args);
}

static const struct rpc_param nvme_get_params[] = {
	{
		.name = "name",
		.type = RPC_PARAM_STRING,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_name, name),
	},
};

static void
nvme_rpc_get_controllers(struct rpc_request *req, json_t *params)
{
	struct rpc_nvme_name args = { 0 };
	json_t *result;

	if (rpc_decode_params(req, params, nvme_get_params, ARRAY_SIZE(nvme_get_params), &args) !=
	    0) {
		goto out_free_params;
	}
	result = bdev_nvme_get_controllers_json(args.name);
	if (result == NULL) {
		if (args.name != NULL) {
			rpc_send_errno(req, -ENODEV, "nvme controller '%s' does not exist",
				       args.name);
		} else {
			rpc_send_errno(req, -ENOMEM, NULL);
		}
		goto out_free_params;
	}
	rpc_send_result(req, result);

out_free_params:
	rpc_free_params(nvme_get_params, ARRAY_SIZE(nvme_get_params), &args);
}

/* bdev_nvme_set_options: the DH-HMAC-CHAP digests and groups the host offers. */
struct rpc_nvme_options {
	json_t *digests;
	json_t *dhgroups;
};

static const struct rpc_param nvme_options_params[] = {
	{
		.name = "dhchap_digests",
		.type = RPC_PARAM_JSON,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_options, digests),
	},
	{
		.name = "dhchap_dhgroups",
		.type = RPC_PARAM_JSON,
		.optional = true,
		.offset = offsetof(struct rpc_nvme_options, dhgroups),
	},
	/* SPDK's rpc.py sends these at their defaults on every call. */
	RPC_PARAM_SPDK_NOOP("delay_cmd_submit", "true", "false"),
	RPC_PARAM_SPDK_NOOP("disable_auto_failback", "false"),
	RPC_PARAM_SPDK_NOOP("generate_uuids", "false"),
	RPC_PARAM_SPDK_NOOP("nvme_error_stat", "false"),
	RPC_PARAM_SPDK_NOOP("io_path_stat", "false"),
	RPC_PARAM_SPDK_NOOP("allow_accel_sequence", "false"),
	RPC_PARAM_SPDK_NOOP("enable_flush", "false"),
	/* The rest of SPDK's options: gga's own per-attach settings instead. */
	RPC_PARAM_SPDK_UNSUPPORTED("action_on_timeout"),
	RPC_PARAM_SPDK_UNSUPPORTED("timeout_us"),
	RPC_PARAM_SPDK_UNSUPPORTED("timeout_admin_us"),
	RPC_PARAM_SPDK_UNSUPPORTED("keep_alive_timeout_ms"),
	RPC_PARAM_SPDK_UNSUPPORTED("arbitration_burst"),
	RPC_PARAM_SPDK_UNSUPPORTED("low_priority_weight"),
	RPC_PARAM_SPDK_UNSUPPORTED("medium_priority_weight"),
	RPC_PARAM_SPDK_UNSUPPORTED("high_priority_weight"),
	RPC_PARAM_SPDK_UNSUPPORTED("nvme_adminq_poll_period_us"),
	RPC_PARAM_SPDK_UNSUPPORTED("nvme_ioq_poll_period_us"),
	RPC_PARAM_SPDK_UNSUPPORTED("io_queue_requests"),
	RPC_PARAM_SPDK_UNSUPPORTED("transport_retry_count"),
	RPC_PARAM_SPDK_UNSUPPORTED("bdev_retry_count"),
	RPC_PARAM_SPDK_UNSUPPORTED("transport_ack_timeout"),
	RPC_PARAM_SPDK_UNSUPPORTED("ctrlr_loss_timeout_sec"),
	RPC_PARAM_SPDK_UNSUPPORTED("reconnect_delay_sec"),
	RPC_PARAM_SPDK_UNSUPPORTED("fast_io_fail_timeout_sec"),
	RPC_PARAM_SPDK_UNSUPPORTED("transport_tos"),
	RPC_PARAM_SPDK_UNSUPPORTED("rdma_srq_size"),
	RPC_PARAM_SPDK_UNSUPPORTED("rdma_max_cq_size"),
	RPC_PARAM_SPDK_UNSUPPORTED("rdma_cm_event_timeout_ms"),
	RPC_PARAM_SPDK_UNSUPPORTED("rdma_umr_per_io"),
	RPC_PARAM_SPDK_UNSUPPORTED("tcp_connect_timeout_ms"),
	RPC_PARAM_SPDK_UNSUPPORTED("multipath_opts"),
};

static void
nvme_rpc_set_options(struct rpc_request *req, json_t *params)
{
	struct rpc_nvme_options args = { 0 };
	uint8_t digests = 0, groups = 0;

	if (rpc_decode_params(req, params, nvme_options_params, ARRAY_SIZE(nvme_options_params),
			      &args) != 0 ||
	    nvme_auth_rpc_lists(req, args.digests, args.dhgroups, &digests, &groups) != 0) {
		return;
	}
	/* 0: not given, left as it is. */
	bdev_nvme_set_dhchap_options(digests, groups);
	rpc_send_bool(req, true);
}

void
bdev_nvme_rpc_register(void)
{
	rpc_register_method("bdev_nvme_set_options", nvme_rpc_set_options, RPC_STATE_ANY);
	rpc_register_method("bdev_nvme_attach_controller", nvme_rpc_attach, RPC_STATE_ANY);
	rpc_register_method("bdev_nvme_detach_controller", nvme_rpc_detach, RPC_STATE_ANY);
	rpc_register_method("bdev_nvme_get_controllers", nvme_rpc_get_controllers, RPC_STATE_ANY);
}
