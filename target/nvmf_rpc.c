/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe-oF target RPCs, with SPDK's method and parameter names. Each handler
 * decodes, checks, and either does all of its work or none of it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gga/log.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "gga/nvme_auth.h"

#include "nvmf_internal.h"

/* SPDK's methods may name their target; gga has one, SPDK's default "nvmf_tgt". */
#define TGT_NAME_PARAM RPC_PARAM_SPDK_NOOP("tgt_name", "\"nvmf_tgt\"")

/* The subsystem named by an NVM subsystem RPC, answering the error itself if none. */
static struct nvmf_subsystem *
rpc_find_subsystem(struct rpc_request *req, const char *nqn, bool allow_discovery)
{
	struct nvmf_subsystem *subsys = nvmf_subsystem_find(nqn);

	if (subsys == NULL) {
		rpc_send_errno(req, -ENODEV, "subsystem %s does not exist", nqn);
		return NULL;
	}
	if (subsys->state != NVMF_SUBSYS_ACTIVE) {
		rpc_send_errno(req, -EBUSY, "subsystem %s is being deleted", nqn);
		return NULL;
	}
	if (!allow_discovery && subsys->subtype == NVMF_SUBTYPE_DISCOVERY) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "nqn: not allowed for the discovery subsystem");
		return NULL;
	}
	return subsys;
}

/*
 * nvmf_create_transport
 */

struct rpc_create_transport {
	char *trtype;
	struct nvmf_transport_opts opts;
};

#define OPT_PARAM(field, lo, hi)                                                         \
	{                                                                                \
		.name = #field, .type = RPC_PARAM_UINT32, .optional = true, .min = (lo), \
		.max = (hi), .offset = offsetof(struct rpc_create_transport, opts.field) \
	}

static const struct rpc_param create_transport_params[] = {
	{ .name = "trtype",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_create_transport, trtype) },
	OPT_PARAM(max_queue_depth, 2, 65536),
	OPT_PARAM(max_io_qpairs_per_ctrlr, 1, 65535),
	OPT_PARAM(in_capsule_data_size, 0, 1048576),
	OPT_PARAM(max_io_size, 4096, 16777216),
	OPT_PARAM(io_unit_size, 512, 16777216),
	OPT_PARAM(max_aq_depth, 2, 4096),
	OPT_PARAM(num_shared_buffers, 2, 1048576),
	OPT_PARAM(buf_cache_size, 0, 65536),
	/* gga's limits a peer cannot exceed (SPDK has none of these names). */
	OPT_PARAM(max_connections_per_listener, 1, 1048576),
	OPT_PARAM(pdu_timeout_ms, 100, 3600000),
	OPT_PARAM(max_kato_ms, 0, 3600000),
	OPT_PARAM(max_pending_connections, 1, 1048576),
	OPT_PARAM(handshake_timeout_ms, 100, 3600000),
	/* SPDK's options for what gga's transports lack, at SPDK's defaults (docs/RPC.md). */
	TGT_NAME_PARAM,
	RPC_PARAM_SPDK_NOOP("iobuf_small_cache_size", "4294967295"),
	RPC_PARAM_SPDK_NOOP("iobuf_large_cache_size", "4294967295"),
	RPC_PARAM_SPDK_NOOP("zcopy", "false"),
	RPC_PARAM_SPDK_NOOP("num_cqe", "4096"),
	RPC_PARAM_SPDK_NOOP("max_srq_depth", "4096"),
	RPC_PARAM_SPDK_NOOP("no_srq", "false", "true"),
	RPC_PARAM_SPDK_NOOP("c2h_success", "true", "false"),
	RPC_PARAM_SPDK_NOOP("dif_insert_or_strip", "false"),
	RPC_PARAM_SPDK_NOOP("sock_priority", "0"),
	RPC_PARAM_SPDK_NOOP("acceptor_backlog", "100"),
	RPC_PARAM_SPDK_NOOP("abort_timeout_sec", "1"),
	RPC_PARAM_SPDK_NOOP("no_wr_batching", "false"),
	RPC_PARAM_SPDK_NOOP("control_msg_num", "32"),
	RPC_PARAM_SPDK_NOOP("disable_mappable_bar0", "false"),
	RPC_PARAM_SPDK_NOOP("disable_adaptive_irq", "false"),
	RPC_PARAM_SPDK_NOOP("disable_shadow_doorbells", "false"),
	RPC_PARAM_SPDK_NOOP("acceptor_poll_rate", "10000"),
	RPC_PARAM_SPDK_NOOP("ack_timeout", "0"),
	RPC_PARAM_SPDK_NOOP("data_wr_pool_size", "0", "4095"),
	RPC_PARAM_SPDK_NOOP("disable_command_passthru", "false", "true"),
	RPC_PARAM_SPDK_NOOP("kas", "100"),
	RPC_PARAM_SPDK_NOOP("min_kato", "10000"),
	RPC_PARAM_SPDK_UNSUPPORTED("masked_oncs"),
	RPC_PARAM_SPDK_UNSUPPORTED("masked_fuses"),
};

static void
create_transport_done(void *arg, int rc)
{
	struct rpc_request *req = arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, "cannot create the transport");
	} else {
		rpc_send_bool(req, true);
	}
}

/* The error for a trtype no registered transport has. */
static void
send_unknown_trtype(struct rpc_request *req, const char *trtype)
{
#ifndef GGA_CONFIG_RDMA
	if (trtype != NULL && strcasecmp(trtype, "RDMA") == 0) {
		rpc_send_error(
			req, RPC_ERROR_INVALID_PARAMS,
			"trtype: gga was built without RDMA support (configure --with-rdma)");
		return;
	}
#endif
	rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "trtype: unknown transport '%s'", trtype);
}

static void
rpc_nvmf_create_transport(struct rpc_request *req, json_t *params)
{
	struct rpc_create_transport args = { 0 };
	const struct nvmf_transport_ops *ops = NULL;
	json_t *trtype = json_is_object(params) ? json_object_get(params, "trtype") : NULL;
	int rc;

	/* The defaults depend on the transport type: find it first. */
	if (json_is_string(trtype)) {
		ops = nvmf_transport_ops_find(json_string_value(trtype));
		if (ops != NULL) {
			nvmf_transport_opts_init(ops, &args.opts);
		}
	}
	if (rpc_decode_params(req, params, create_transport_params,
			      ARRAY_SIZE(create_transport_params), &args) != 0) {
		goto out_free_params;
	}
	if (ops == NULL) {
		send_unknown_trtype(req, args.trtype);
		goto out_free_params;
	}
	if (args.opts.in_capsule_data_size % 16 != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "in_capsule_data_size: must be a multiple of 16");
		goto out_free_params;
	}
	if (args.opts.io_unit_size > args.opts.max_io_size) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "io_unit_size: must not exceed max_io_size (%u)",
			       args.opts.max_io_size);
		goto out_free_params;
	}
	if (args.opts.in_capsule_data_size > args.opts.io_unit_size) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "in_capsule_data_size: must not exceed io_unit_size (%u)",
			       args.opts.io_unit_size);
		goto out_free_params;
	}
	if (args.opts.max_aq_depth > args.opts.max_queue_depth) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "max_aq_depth: must not exceed max_queue_depth (%u)",
			       args.opts.max_queue_depth);
		goto out_free_params;
	}
	rc = nvmf_tgt_create_transport(ops, &args.opts, create_transport_done, req);
	if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "transport %s already exists", ops->name);
	} else if (rc == -EINVAL) {
		rpc_send_errno(req, rc, "transport %s refused these options (see the log)",
			       ops->name);
	} else if (rc == -ENODEV && ops->trtype == NVME_TRTYPE_RDMA) {
		rpc_send_errno(req, rc,
			       "cannot create transport RDMA: no RDMA device (load the "
			       "NIC's driver and rdma_ucm; without an RDMA NIC, SoftRoCE: modprobe "
			       "rdma_rxe && rdma link add rxe0 type rxe netdev IFACE)");
	} else if (rc != 0) {
		rpc_send_errno(req, rc, "cannot create transport %s", ops->name);
	}

out_free_params:
	rpc_free_params(create_transport_params, ARRAY_SIZE(create_transport_params), &args);
}

struct rpc_get_transports {
	char *trtype;
};

static const struct rpc_param get_transports_params[] = {
	{ .name = "trtype",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_get_transports, trtype) },
	TGT_NAME_PARAM,
};

static void
rpc_nvmf_get_transports(struct rpc_request *req, json_t *params)
{
	struct rpc_get_transports args = { 0 };
	struct nvmf_transport *t;
	json_t *result;

	if (rpc_decode_params(req, params, get_transports_params, ARRAY_SIZE(get_transports_params),
			      &args) != 0) {
		goto out_free_params;
	}
	result = json_array();
	TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
		if (args.trtype == NULL || strcasecmp(args.trtype, t->ops->name) == 0) {
			json_array_append_new(result, nvmf_transport_opts_json(t));
		}
	}
	if (args.trtype != NULL && json_array_size(result) == 0) {
		json_decref(result);
		rpc_send_errno(req, -ENODEV, "transport %s does not exist", args.trtype);
		goto out_free_params;
	}
	rpc_send_result(req, result);

out_free_params:
	rpc_free_params(get_transports_params, ARRAY_SIZE(get_transports_params), &args);
}

/*
 * Subsystems.
 */

struct rpc_create_subsystem {
	char *nqn;
	char *serial_number;
	char *model_number;
	bool allow_any_host;
	uint32_t max_namespaces;
	bool ana_reporting;
	uint32_t min_cntlid;
	uint32_t max_cntlid;
};

static const struct rpc_param create_subsystem_params[] = {
	{ .name = "nqn",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_create_subsystem, nqn) },
	{ .name = "serial_number",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_create_subsystem, serial_number) },
	{ .name = "model_number",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_create_subsystem, model_number) },
	{ .name = "allow_any_host",
	  .type = RPC_PARAM_BOOL,
	  .optional = true,
	  .offset = offsetof(struct rpc_create_subsystem, allow_any_host) },
	{ .name = "max_namespaces",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = 1,
	  .max = NVMF_MAX_NAMESPACES,
	  .offset = offsetof(struct rpc_create_subsystem, max_namespaces) },
	/* SPDK's options for what gga's subsystems lack, at SPDK's defaults. */
	TGT_NAME_PARAM,
	RPC_PARAM_SPDK_UNSUPPORTED("admin_label"),
	{ .name = "ana_reporting",
	  .type = RPC_PARAM_BOOL,
	  .optional = true,
	  .offset = offsetof(struct rpc_create_subsystem, ana_reporting) },
	{ .name = "min_cntlid",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = NVME_CNTLID_MIN,
	  .max = NVME_CNTLID_MAX,
	  .offset = offsetof(struct rpc_create_subsystem, min_cntlid) },
	{ .name = "max_cntlid",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = NVME_CNTLID_MIN,
	  .max = NVME_CNTLID_MAX,
	  .offset = offsetof(struct rpc_create_subsystem, max_cntlid) },
	RPC_PARAM_SPDK_NOOP("dmrsl", "0"),
	RPC_PARAM_SPDK_NOOP("wzsl", "0"),
	RPC_PARAM_SPDK_NOOP("passthrough", "false"),
	RPC_PARAM_SPDK_NOOP("enable_nssr", "false"),
};

static void
rpc_nvmf_create_subsystem(struct rpc_request *req, json_t *params)
{
	struct rpc_create_subsystem args = { .max_namespaces = NVMF_DEFAULT_MAX_NAMESPACES,
					     .min_cntlid = NVME_CNTLID_MIN,
					     .max_cntlid = NVME_CNTLID_MAX };
	struct nvmf_subsystem *subsys;
	int rc;

	if (rpc_decode_params(req, params, create_subsystem_params,
			      ARRAY_SIZE(create_subsystem_params), &args) != 0) {
		goto out_free_params;
	}
	if (strcmp(args.nqn, NVME_DISCOVERY_NQN) == 0 || !nvmf_nqn_is_valid(args.nqn)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "nqn: '%s' is not a valid NQN",
			       args.nqn);
		goto out_free_params;
	}
	/* Check the strings before creating anything. */
	if (args.serial_number != NULL && !nvmf_sn_is_valid(args.serial_number)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "serial_number: must be 1 to %d printable ASCII characters",
			       NVME_SN_LEN);
		goto out_free_params;
	}
	if (args.model_number != NULL && !nvmf_mn_is_valid(args.model_number)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "model_number: must be 1 to %d printable ASCII characters",
			       NVME_MN_LEN);
		goto out_free_params;
	}
	if (args.min_cntlid > args.max_cntlid) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "min_cntlid: %u is above max_cntlid %u", args.min_cntlid,
			       args.max_cntlid);
		goto out_free_params;
	}
	if (g_nvmf_tgt.state != NVMF_TGT_RUNNING) {
		rpc_send_errno(req, -ESHUTDOWN, "the target is shutting down");
		goto out_free_params;
	}
	rc = nvmf_subsystem_create(args.nqn, NVMF_SUBTYPE_NVME, args.max_namespaces, &subsys);
	if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "subsystem %s already exists", args.nqn);
		goto out_free_params;
	} else if (rc != 0) {
		rpc_send_errno(req, rc, "cannot create subsystem %s", args.nqn);
		goto out_free_params;
	}
	if (args.serial_number != NULL) {
		nvmf_subsystem_set_sn(subsys, args.serial_number);
	}
	if (args.model_number != NULL) {
		nvmf_subsystem_set_mn(subsys, args.model_number);
	}
	subsys->allow_any_host = args.allow_any_host;
	subsys->ana_reporting = args.ana_reporting;
	nvmf_subsystem_set_cntlid_range(subsys, (uint16_t)args.min_cntlid,
					(uint16_t)args.max_cntlid);
	rpc_send_bool(req, true);

out_free_params:
	rpc_free_params(create_subsystem_params, ARRAY_SIZE(create_subsystem_params), &args);
}

struct rpc_nqn {
	char *nqn;
};

static const struct rpc_param nqn_params[] = {
	{ .name = "nqn", .type = RPC_PARAM_STRING, .offset = offsetof(struct rpc_nqn, nqn) },
	TGT_NAME_PARAM,
};

static const struct rpc_param get_subsystems_params[] = {
	{ .name = "nqn",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_nqn, nqn) },
	TGT_NAME_PARAM,
};

static void
delete_subsystem_done(void *arg)
{
	rpc_send_bool(arg, true);
}

static void
rpc_nvmf_delete_subsystem(struct rpc_request *req, json_t *params)
{
	struct rpc_nqn args = { 0 };
	struct nvmf_subsystem *subsys;
	int rc;

	if (rpc_decode_params(req, params, nqn_params, ARRAY_SIZE(nqn_params), &args) != 0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, false);
	if (subsys == NULL) {
		goto out_free_params;
	}
	rc = nvmf_subsystem_delete(subsys, delete_subsystem_done, req);
	if (rc != 0) {
		rpc_send_errno(req, rc, "cannot delete subsystem %s", args.nqn);
	}

out_free_params:
	rpc_free_params(nqn_params, ARRAY_SIZE(nqn_params), &args);
}

static void
rpc_nvmf_get_subsystems(struct rpc_request *req, json_t *params)
{
	struct rpc_nqn args = { 0 };
	struct nvmf_subsystem *subsys;
	json_t *result;

	if (rpc_decode_params(req, params, get_subsystems_params, ARRAY_SIZE(get_subsystems_params),
			      &args) != 0) {
		goto out_free_params;
	}
	result = json_array();
	TAILQ_FOREACH(subsys, &g_nvmf_tgt.subsystems, link) {
		if (subsys->state != NVMF_SUBSYS_ACTIVE ||
		    (args.nqn != NULL && strcmp(args.nqn, subsys->nqn) != 0)) {
			continue;
		}
		json_array_append_new(result, nvmf_subsystem_info_json(subsys));
	}
	if (args.nqn != NULL && json_array_size(result) == 0) {
		json_decref(result);
		rpc_send_errno(req, -ENODEV, "subsystem %s does not exist", args.nqn);
		goto out_free_params;
	}
	rpc_send_result(req, result);

out_free_params:
	rpc_free_params(get_subsystems_params, ARRAY_SIZE(get_subsystems_params), &args);
}

static void
rpc_nvmf_subsystem_get_listeners(struct rpc_request *req, json_t *params)
{
	struct rpc_nqn args = { 0 };
	struct nvmf_subsystem *subsys;

	if (rpc_decode_params(req, params, nqn_params, ARRAY_SIZE(nqn_params), &args) != 0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, true);
	if (subsys != NULL) {
		rpc_send_result(req, nvmf_subsystem_listeners_json(subsys));
	}

out_free_params:
	rpc_free_params(nqn_params, ARRAY_SIZE(nqn_params), &args);
}

/*
 * Namespaces.
 */

struct rpc_ns {
	char *bdev_name;
	uint32_t nsid;
	char *ptpl_file;
	uint32_t anagrpid;
};

static const struct rpc_param ns_params[] = {
	{ .name = "bdev_name",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_ns, bdev_name) },
	{ .name = "nsid",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = 1,
	  .max = NVMF_MAX_NAMESPACES,
	  .offset = offsetof(struct rpc_ns, nsid) },
	/* SPDK's namespace options for what gga lacks, at SPDK's defaults. */
	RPC_PARAM_SPDK_UNSUPPORTED("nguid"),
	RPC_PARAM_SPDK_UNSUPPORTED("eui64"),
	RPC_PARAM_SPDK_UNSUPPORTED("uuid"),
	{ .name = "ptpl_file",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_ns, ptpl_file) },
	{ .name = "anagrpid",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = 1,
	  .max = NVMF_MAX_NAMESPACES,
	  .offset = offsetof(struct rpc_ns, anagrpid) },
	RPC_PARAM_SPDK_NOOP("no_auto_visible", "false"),
	RPC_PARAM_SPDK_NOOP("hide_metadata", "false"),
};

struct rpc_add_ns {
	char *nqn;
	json_t *namespace;
};

static const struct rpc_param add_ns_params[] = {
	{ .name = "nqn", .type = RPC_PARAM_STRING, .offset = offsetof(struct rpc_add_ns, nqn) },
	{ .name = "namespace",
	  .type = RPC_PARAM_JSON,
	  .offset = offsetof(struct rpc_add_ns, namespace) },
	TGT_NAME_PARAM,
};

static void
rpc_nvmf_subsystem_add_ns(struct rpc_request *req, json_t *params)
{
	struct rpc_add_ns args = { 0 };
	struct rpc_ns ns = { 0 };
	struct nvmf_ns_opts opts = { 0 };
	struct nvmf_subsystem *subsys;
	uint32_t nsid;
	int rc;

	if (rpc_decode_params(req, params, add_ns_params, ARRAY_SIZE(add_ns_params), &args) != 0) {
		goto out_free_params;
	}
	if (!json_is_object(args.namespace)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "namespace: expected an object");
		goto out_free_params;
	}
	if (rpc_decode_params(req, args.namespace, ns_params, ARRAY_SIZE(ns_params), &ns) != 0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, false);
	if (subsys == NULL) {
		goto out_free_params;
	}
	if (ns.ptpl_file != NULL && ns.ptpl_file[0] == '\0') {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "ptpl_file: expected a path");
		goto out_free_params;
	}
	opts.ptpl_file = ns.ptpl_file;
	opts.anagrpid = ns.anagrpid;
	rc = nvmf_subsystem_add_ns(subsys, ns.bdev_name, ns.nsid, &opts, &nsid);
	if (rc == -EINVAL && opts.why[0] != '\0') {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "ptpl_file: %s", opts.why);
		goto out_free_params;
	}
	switch (rc) {
	case 0:
		rpc_send_result(req, json_integer(nsid));
		break;
	case -ENODEV:
		rpc_send_errno(req, rc, "bdev %s does not exist", ns.bdev_name);
		break;
	case -EPERM:
		rpc_send_errno(req, rc, "bdev %s %s: export that bdev instead, or delete it first",
			       ns.bdev_name, bdev_busy_reason(ns.bdev_name));
		break;
	case -EEXIST:
		rpc_send_errno(req, rc, "subsystem %s already has namespace %u", args.nqn, ns.nsid);
		break;
	case -EALREADY:
		rpc_send_errno(req, rc, "bdev %s is already a namespace of %s", ns.bdev_name,
			       args.nqn);
		break;
	case -ERANGE:
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "nsid: %u exceeds max_namespaces (%u) of subsystem %s", ns.nsid,
			       subsys->max_nsid, args.nqn);
		break;
	case -ENOSPC:
		rpc_send_errno(req, rc, "subsystem %s has no free namespace id (max_namespaces %u)",
			       args.nqn, subsys->max_nsid);
		break;
	case -EDOM:
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "anagrpid: %u exceeds max_namespaces (%u) of subsystem %s",
			       ns.anagrpid, subsys->max_nsid, args.nqn);
		break;
	case -EINVAL:
		rpc_send_errno(req, rc, "bdev %s: block size must be a power of two >= 512",
			       ns.bdev_name);
		break;
	default:
		rpc_send_errno(req, rc, "cannot add bdev %s to subsystem %s", ns.bdev_name,
			       args.nqn);
		break;
	}

out_free_params:
	rpc_free_params(ns_params, ARRAY_SIZE(ns_params), &ns);
	rpc_free_params(add_ns_params, ARRAY_SIZE(add_ns_params), &args);
}

struct rpc_remove_ns {
	char *nqn;
	uint32_t nsid;
};

static const struct rpc_param remove_ns_params[] = {
	{ .name = "nqn", .type = RPC_PARAM_STRING, .offset = offsetof(struct rpc_remove_ns, nqn) },
	{ .name = "nsid",
	  .type = RPC_PARAM_UINT32,
	  .min = 1,
	  .max = UINT32_MAX,
	  .offset = offsetof(struct rpc_remove_ns, nsid) },
	TGT_NAME_PARAM,
};

static void
remove_ns_done(void *arg, int rc)
{
	struct rpc_request *req = arg;

	if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}
}

static void
rpc_nvmf_subsystem_remove_ns(struct rpc_request *req, json_t *params)
{
	struct rpc_remove_ns args = { 0 };
	struct nvmf_subsystem *subsys;
	int rc;

	if (rpc_decode_params(req, params, remove_ns_params, ARRAY_SIZE(remove_ns_params), &args) !=
	    0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, false);
	if (subsys == NULL) {
		goto out_free_params;
	}
	rc = nvmf_subsystem_remove_ns(subsys, args.nsid, remove_ns_done, req);
	if (rc == -ENOENT) {
		rpc_send_errno(req, rc, "subsystem %s has no namespace %u", args.nqn, args.nsid);
	} else if (rc == -EBUSY) {
		rpc_send_errno(req, rc, "namespace %u of %s is already being removed", args.nsid,
			       args.nqn);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	}

out_free_params:
	rpc_free_params(remove_ns_params, ARRAY_SIZE(remove_ns_params), &args);
}

/*
 * Listeners.
 */

struct rpc_listen_address {
	char *trtype;
	char *adrfam;
	char *traddr;
	char *trsvcid;
};

static const struct rpc_param listen_address_params[] = {
	{ .name = "trtype",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_listen_address, trtype) },
	{ .name = "adrfam",
	  .type = RPC_PARAM_STRING,
	  .optional = true,
	  .offset = offsetof(struct rpc_listen_address, adrfam) },
	{ .name = "traddr",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_listen_address, traddr) },
	{ .name = "trsvcid",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_listen_address, trsvcid) },
};

struct rpc_listener {
	char *nqn;
	json_t *listen_address;
	char *ana_state;
	uint32_t anagrpid;
	bool secure_channel;
};

#define LISTENER_PARAMS                                                                            \
	{ .name = "nqn", .type = RPC_PARAM_STRING, .offset = offsetof(struct rpc_listener, nqn) }, \
		{ .name = "listen_address",                                                        \
		  .type = RPC_PARAM_JSON,                                                          \
		  .offset = offsetof(struct rpc_listener, listen_address) },                       \
		TGT_NAME_PARAM

static const struct rpc_param remove_listener_params[] = {
	LISTENER_PARAMS,
};

#define ANA_STATE_PARAM(req)                                                       \
	{                                                                          \
		.name = "ana_state", .type = RPC_PARAM_STRING, .optional = !(req), \
		.offset = offsetof(struct rpc_listener, ana_state)                 \
	}

static const struct rpc_param set_ana_state_params[] = {
	LISTENER_PARAMS,
	ANA_STATE_PARAM(true),
	{ .name = "anagrpid",
	  .type = RPC_PARAM_UINT32,
	  .optional = true,
	  .min = 1,
	  .max = NVMF_MAX_NAMESPACES,
	  .offset = offsetof(struct rpc_listener, anagrpid) },
};

static const struct rpc_param add_listener_params[] = {
	LISTENER_PARAMS,
	ANA_STATE_PARAM(false),
	/* SPDK's listener options for what gga lacks, at SPDK's defaults. */
	{ .name = "secure_channel",
	  .type = RPC_PARAM_BOOL,
	  .optional = true,
	  .offset = offsetof(struct rpc_listener, secure_channel) },
	RPC_PARAM_SPDK_NOOP("sock_impl", "\"posix\""),
	RPC_PARAM_SPDK_NOOP("numa_id", "-1"),
};

/*
 * Decode {nqn, listen_address} into a subsystem and an address, and the
 * ANA state and group when the method has them (ana may be NULL); answers
 * errors itself.
 */
static struct nvmf_subsystem *
decode_listener(struct rpc_request *req, json_t *params, const struct rpc_param *decl, size_t count,
		struct nvmf_listen_addr *addr, uint8_t *ana, uint32_t *anagrpid)
{
	struct rpc_listener args = { 0 };
	struct rpc_listen_address la = { 0 };
	const struct nvmf_transport_ops *ops;
	struct nvmf_subsystem *subsys = NULL;
	int rc;

	if (rpc_decode_params(req, params, decl, count, &args) != 0) {
		goto out_free_params;
	}
	if (!json_is_object(args.listen_address)) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "listen_address: expected an object");
		goto out_free_params;
	}
	if (rpc_decode_params(req, args.listen_address, listen_address_params,
			      ARRAY_SIZE(listen_address_params), &la) != 0) {
		goto out_free_params;
	}
	ops = nvmf_transport_ops_find(la.trtype);
	if (ops == NULL) {
		send_unknown_trtype(req, la.trtype);
		goto out_free_params;
	}
	rc = nvmf_listen_addr_parse(ops->trtype, la.adrfam, la.traddr, la.trsvcid, addr);
	if (rc == -EAFNOSUPPORT) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "adrfam: '%s' is not supported (IPv4 or IPv6)", la.adrfam);
		goto out_free_params;
	} else if (rc == -EADDRNOTAVAIL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "traddr: '%s' is not an %s address",
			       la.traddr, la.adrfam ? la.adrfam : "IPv4");
		goto out_free_params;
	} else if (rc != 0) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "trsvcid: '%s' is not a port number (1-65535)", la.trsvcid);
		goto out_free_params;
	}
	if (ana != NULL) {
		*ana = NVME_ANA_OPTIMIZED;
		if (args.ana_state != NULL && nvmf_ana_state_parse(args.ana_state, ana) != 0) {
			rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
				       "ana_state: '%s' is not optimized, non_optimized, "
				       "inaccessible, persistent_loss or change",
				       args.ana_state);
			goto out_free_params;
		}
	}
	if (anagrpid != NULL) {
		*anagrpid = args.anagrpid;
	}
	addr->secure_channel = args.secure_channel;
	subsys = rpc_find_subsystem(req, args.nqn, true);
	if (subsys != NULL && ana != NULL && *ana != NVME_ANA_OPTIMIZED && !subsys->ana_reporting) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "ana_state: subsystem %s was created without ana_reporting",
			       subsys->nqn);
		subsys = NULL;
	} else if (subsys != NULL && anagrpid != NULL && *anagrpid > subsys->max_nsid) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "anagrpid: %u exceeds max_namespaces (%u) of subsystem %s",
			       *anagrpid, subsys->max_nsid, subsys->nqn);
		subsys = NULL;
	}

out_free_params:
	rpc_free_params(listen_address_params, ARRAY_SIZE(listen_address_params), &la);
	rpc_free_params(decl, count, &args);
	return subsys;
}

static void
rpc_nvmf_subsystem_add_listener(struct rpc_request *req, json_t *params)
{
	struct nvmf_listen_addr addr;
	struct nvmf_subsystem *subsys;
	uint8_t ana;
	int rc;

	subsys = decode_listener(req, params, add_listener_params, ARRAY_SIZE(add_listener_params),
				 &addr, &ana, NULL);
	if (subsys == NULL) {
		return;
	}
	rc = nvmf_subsystem_add_listener(subsys, &addr, ana);
	switch (rc) {
	case 0:
		rpc_send_bool(req, true);
		break;
	case -ENOENT:
		rpc_send_errno(req, rc,
			       "transport %s does not exist: call nvmf_create_transport "
			       "first",
			       nvmf_trtype_str(addr.trtype));
		break;
	case -EEXIST:
		rpc_send_errno(req, rc, "subsystem %s already listens on %s:%s", subsys->nqn,
			       addr.traddr, addr.trsvcid);
		break;
	case -EADDRINUSE:
		rpc_send_errno(req, rc,
			       "%s:%s is in use by another program: choose another "
			       "trsvcid, or stop the program listening there (ss -ltnp shows it)",
			       addr.traddr, addr.trsvcid);
		break;
	case -EADDRNOTAVAIL:
		rpc_send_errno(req, rc, "%s is not an address of this host (ip addr lists them)",
			       addr.traddr);
		break;
	case -EPROTOTYPE:
		rpc_send_errno(req, rc,
			       "%s:%s is already a listener %s a secure channel: a listener is "
			       "either TLS or plaintext for every subsystem",
			       addr.traddr, addr.trsvcid, addr.secure_channel ? "without" : "with");
		break;
	case -EPROTONOSUPPORT:
		rpc_send_errno(req, rc, "secure_channel: TLS is for NVMe/TCP listeners only");
		break;
	default:
		rpc_send_errno(req, rc, "cannot listen on %s:%s", addr.traddr, addr.trsvcid);
		break;
	}
}

static void
rpc_nvmf_subsystem_remove_listener(struct rpc_request *req, json_t *params)
{
	struct nvmf_listen_addr addr;
	struct nvmf_subsystem *subsys;
	int rc;

	subsys = decode_listener(req, params, remove_listener_params,
				 ARRAY_SIZE(remove_listener_params), &addr, NULL, NULL);
	if (subsys == NULL) {
		return;
	}
	rc = nvmf_subsystem_remove_listener(subsys, &addr);
	if (rc == -ENOENT) {
		rpc_send_errno(req, rc, "subsystem %s does not listen on %s:%s", subsys->nqn,
			       addr.traddr, addr.trsvcid);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}
}

static void
rpc_nvmf_subsystem_listener_set_ana_state(struct rpc_request *req, json_t *params)
{
	struct nvmf_listen_addr addr;
	struct nvmf_subsystem *subsys;
	uint32_t anagrpid;
	uint8_t ana;
	int rc;

	subsys = decode_listener(req, params, set_ana_state_params,
				 ARRAY_SIZE(set_ana_state_params), &addr, &ana, &anagrpid);
	if (subsys == NULL) {
		return;
	}
	if (!subsys->ana_reporting) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS,
			       "subsystem %s was created without ana_reporting", subsys->nqn);
		return;
	}
	rc = nvmf_subsystem_set_ana_state(subsys, &addr, anagrpid, ana);
	if (rc == -ENOENT) {
		rpc_send_errno(req, rc, "subsystem %s does not listen on %s:%s", subsys->nqn,
			       addr.traddr, addr.trsvcid);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}
}

/*
 * Hosts.
 */

struct rpc_host {
	char *nqn;
	char *host;
	char *dhchap_key;
	char *dhchap_ctrlr_key;
	char *psk;
};

#define HOST_PARAMS                                                                            \
	{ .name = "nqn", .type = RPC_PARAM_STRING, .offset = offsetof(struct rpc_host, nqn) }, \
		{ .name = "host",                                                              \
		  .type = RPC_PARAM_STRING,                                                    \
		  .offset = offsetof(struct rpc_host, host) },                                 \
		TGT_NAME_PARAM

/* Keys by name (keyring_file_add_key). */
static const struct rpc_param add_host_params[] = {
	HOST_PARAMS,
	{ .name = "dhchap_key",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_host, dhchap_key),
	  .optional = true },
	{ .name = "dhchap_ctrlr_key",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_host, dhchap_ctrlr_key),
	  .optional = true },
	{ .name = "psk",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_host, psk),
	  .optional = true },
};

static const struct rpc_param remove_host_params[] = {
	HOST_PARAMS,
	RPC_PARAM_SPDK_UNSUPPORTED("timeout_ms"),
};

static void
rpc_host_change(struct rpc_request *req, json_t *params, bool add)
{
	const struct rpc_param *decl = add ? add_host_params : remove_host_params;
	size_t count = add ? ARRAY_SIZE(add_host_params) : ARRAY_SIZE(remove_host_params);
	struct rpc_host args = { 0 };
	struct nvmf_host_opts opts = { 0 };
	struct nvmf_subsystem *subsys;
	char msg[256] = "";
	int rc;

	if (rpc_decode_params(req, params, decl, count, &args) != 0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, false);
	if (subsys == NULL) {
		goto out_free_params;
	}
	opts.dhchap_key = args.dhchap_key;
	opts.dhchap_ctrlr_key = args.dhchap_ctrlr_key;
	opts.psk = args.psk;
	rc = add ? nvmf_subsystem_add_host(subsys, args.host, &opts, msg, sizeof(msg)) :
		   nvmf_subsystem_remove_host(subsys, args.host);
	if (msg[0] != '\0') {
		rpc_send_errno(req, rc, "%s", msg);
	} else if (rc == -EINVAL) {
		rpc_send_error(req, RPC_ERROR_INVALID_PARAMS, "host: '%s' is not a valid NQN",
			       args.host);
	} else if (rc == -EEXIST) {
		rpc_send_errno(req, rc, "host %s is already allowed on %s", args.host, args.nqn);
	} else if (rc == -ENOENT) {
		rpc_send_errno(req, rc, "host %s is not on the list of %s", args.host, args.nqn);
	} else if (rc != 0) {
		rpc_send_errno(req, rc, NULL);
	} else {
		rpc_send_bool(req, true);
	}

out_free_params:
	rpc_free_params(decl, count, &args);
}

static void
rpc_nvmf_subsystem_add_host(struct rpc_request *req, json_t *params)
{
	rpc_host_change(req, params, true);
}

static void
rpc_nvmf_subsystem_remove_host(struct rpc_request *req, json_t *params)
{
	rpc_host_change(req, params, false);
}

struct rpc_allow_any_host {
	char *nqn;
	bool allow_any_host;
};

static const struct rpc_param allow_any_host_params[] = {
	{ .name = "nqn",
	  .type = RPC_PARAM_STRING,
	  .offset = offsetof(struct rpc_allow_any_host, nqn) },
	{ .name = "allow_any_host",
	  .type = RPC_PARAM_BOOL,
	  .offset = offsetof(struct rpc_allow_any_host, allow_any_host) },
	TGT_NAME_PARAM,
};

static void
rpc_nvmf_subsystem_allow_any_host(struct rpc_request *req, json_t *params)
{
	struct rpc_allow_any_host args = { 0 };
	struct nvmf_subsystem *subsys;

	if (rpc_decode_params(req, params, allow_any_host_params, ARRAY_SIZE(allow_any_host_params),
			      &args) != 0) {
		goto out_free_params;
	}
	subsys = rpc_find_subsystem(req, args.nqn, false);
	if (subsys != NULL) {
		nvmf_subsystem_set_allow_any_host(subsys, args.allow_any_host);
		rpc_send_bool(req, true);
	}

out_free_params:
	rpc_free_params(allow_any_host_params, ARRAY_SIZE(allow_any_host_params), &args);
}

/*
 * nvmf_get_stats: each poll group reports on its own thread.
 */

struct stats_ctx {
	struct rpc_request *req;
	json_t *groups;
};

static void
stats_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct stats_ctx *ctx = arg;
	struct nvmf_transport *t;
	json_t *obj, *transports;
	char name[64];

	snprintf(name, sizeof(name), "nvmf_tgt_poll_group_%u", pg->index);
	transports = json_array();
	obj = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "name", name, "thread",
			thread_get_name(pg->thread), "admin_qpairs", (json_int_t)pg->admin_qpairs,
			"io_qpairs", (json_int_t)pg->io_qpairs, "current_admin_qpairs",
			(json_int_t)pg->current_admin_qpairs, "current_io_qpairs",
			(json_int_t)pg->current_io_qpairs, "pending_bdev_io",
			(json_int_t)pg->pending_bdev_io, "completed_nvme_io",
			(json_int_t)pg->completed_nvme_io, "transports", transports);
	TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
		struct nvmf_transport_poll_group *tg = pg->tgroups[t->index];
		json_t *tobj = json_pack("{s:s}", "trtype", t->ops->name);

		if (tg != NULL && tobj != NULL) {
			nvmf_tgroup_dump_stats(tg, tobj);
		}
		json_array_append_new(transports, tobj);
	}
	json_array_append_new(ctx->groups, obj);
}

static void
stats_done(void *arg)
{
	struct stats_ctx *ctx = arg;

	rpc_send_result(ctx->req,
			json_pack("{s:I, s:o, s:o}", "tick_rate", (json_int_t)ticks_hz(),
				  "poll_groups", ctx->groups, "dhchap", nvmf_auth_stats_json()));
	free(ctx);
}

static const struct rpc_param get_stats_params[] = {
	TGT_NAME_PARAM,
};

static void
rpc_nvmf_get_stats(struct rpc_request *req, json_t *params)
{
	struct stats_ctx *ctx;
	int rc;

	if (rpc_decode_params(req, params, get_stats_params, ARRAY_SIZE(get_stats_params), NULL) !=
	    0) {
		return;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		rpc_send_errno(req, -ENOMEM, NULL);
		return;
	}
	ctx->req = req;
	ctx->groups = json_array();
	rc = nvmf_tgt_for_each_pg(stats_fn, ctx, stats_done);
	if (rc != 0) {
		json_decref(ctx->groups);
		free(ctx);
		rpc_send_errno(req, rc, NULL);
	}
}

/*
 * nvmf_set_config: the target-wide settings SPDK keeps there. gga has the
 * DH-HMAC-CHAP digests and groups a controller may choose from.
 */
struct rpc_set_config {
	json_t *digests;
	json_t *dhgroups;
};

static const struct rpc_param set_config_params[] = {
	{ .name = "dhchap_digests",
	  .type = RPC_PARAM_JSON,
	  .offset = offsetof(struct rpc_set_config, digests),
	  .optional = true },
	{ .name = "dhchap_dhgroups",
	  .type = RPC_PARAM_JSON,
	  .offset = offsetof(struct rpc_set_config, dhgroups),
	  .optional = true },
	RPC_PARAM_SPDK_NOOP("admin_cmd_passthru", "{\"identify_ctrlr\":false}",
			    "{\"identify_ctrlr\": false}"),
	RPC_PARAM_SPDK_NOOP("discovery_filter", "\"match_any\""),
	RPC_PARAM_SPDK_UNSUPPORTED("poll_groups_mask"),
};

static void
rpc_nvmf_set_config(struct rpc_request *req, json_t *params)
{
	struct rpc_set_config args = { 0 };

	if (rpc_decode_params(req, params, set_config_params, ARRAY_SIZE(set_config_params),
			      &args) != 0 ||
	    nvme_auth_rpc_lists(req, args.digests, args.dhgroups, &g_nvmf_tgt.dhchap_digests,
				&g_nvmf_tgt.dhchap_dhgroups) != 0) {
		return;
	}
	rpc_send_bool(req, true);
}

void
nvmf_rpc_register(void)
{
	rpc_register_method("nvmf_create_transport", rpc_nvmf_create_transport, RPC_STATE_ANY);
	rpc_register_method("nvmf_get_transports", rpc_nvmf_get_transports, RPC_STATE_ANY);
	rpc_register_method("nvmf_create_subsystem", rpc_nvmf_create_subsystem, RPC_STATE_ANY);
	rpc_register_method("nvmf_delete_subsystem", rpc_nvmf_delete_subsystem, RPC_STATE_ANY);
	rpc_register_method("nvmf_get_subsystems", rpc_nvmf_get_subsystems, RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_get_listeners", rpc_nvmf_subsystem_get_listeners,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_add_ns", rpc_nvmf_subsystem_add_ns, RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_remove_ns", rpc_nvmf_subsystem_remove_ns,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_add_listener", rpc_nvmf_subsystem_add_listener,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_listener_set_ana_state",
			    rpc_nvmf_subsystem_listener_set_ana_state, RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_remove_listener", rpc_nvmf_subsystem_remove_listener,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_add_host", rpc_nvmf_subsystem_add_host, RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_remove_host", rpc_nvmf_subsystem_remove_host,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_subsystem_allow_any_host", rpc_nvmf_subsystem_allow_any_host,
			    RPC_STATE_ANY);
	rpc_register_method("nvmf_get_stats", rpc_nvmf_get_stats, RPC_STATE_ANY);
	rpc_register_method("nvmf_set_config", rpc_nvmf_set_config, RPC_STATE_ANY);
}
