/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe-oF target: poll groups, transports, listeners, the request path
 * between transports and the core, and the "nvmf" app subsystem (start-up,
 * save_config, shutdown).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gga/app.h"
#include "gga/log.h"
#include "gga/nvmf.h"
#include "gga/rpc.h"
#include "gga/util.h"

#include "gga/nvme_auth.h"

#include "nvmf_internal.h"

struct nvmf_tgt g_nvmf_tgt = {
	.transports = TAILQ_HEAD_INITIALIZER(g_nvmf_tgt.transports),
	.subsystems = TAILQ_HEAD_INITIALIZER(g_nvmf_tgt.subsystems),
	.listeners = TAILQ_HEAD_INITIALIZER(g_nvmf_tgt.listeners),
	.dhchap_digests = NVME_AUTH_DIGESTS_ALL,
	.dhchap_dhgroups = NVME_AUTH_DHGROUPS_ALL,
};

extern const struct nvmf_transport_ops nvmf_tcp_ops;
#ifdef GGA_CONFIG_RDMA
extern const struct nvmf_transport_ops nvmf_rdma_ops;
#endif

/* Transport types, registered explicitly. */
static const struct nvmf_transport_ops *const g_transport_types[] = {
	&nvmf_tcp_ops,
#ifdef GGA_CONFIG_RDMA
	&nvmf_rdma_ops,
#endif
};

/*
 * Status mapping: the one place where a negative errno becomes an NVMe
 * status. Permanent conditions carry DNR; conditions that may clear (no
 * memory now, a namespace going away) leave the host free to retry.
 */
uint16_t
nvmf_errno_to_status(int rc)
{
	switch (rc) {
	case 0:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_SUCCESS);
	case -EINVAL:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_DNR;
	case -ERANGE:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_OUT_OF_RANGE) | NVME_STATUS_DNR;
	case -ENOTSUP:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE) | NVME_STATUS_DNR;
	case -EBADF:
	case -EROFS:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_NAMESPACE_IS_WRITE_PROTECTED) |
		       NVME_STATUS_DNR;
	case -EPERM:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_OPERATION_DENIED) | NVME_STATUS_DNR;
	case -EACCES:
		return NVME_STATUS(NVME_SCT_MEDIA_ERROR, NVME_SC_ACCESS_DENIED) | NVME_STATUS_DNR;
	case -ENOSPC:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_CAPACITY_EXCEEDED) | NVME_STATUS_DNR;
	case -ECANCELED:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_BY_REQUEST);
	case -ENODEV:
	case -ENXIO:
	case -EAGAIN:
	case -EBUSY:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_NAMESPACE_NOT_READY);
	case -EILSEQ:
	case -EBADMSG:
		return NVME_STATUS(NVME_SCT_MEDIA_ERROR, NVME_SC_UNRECOVERED_READ_ERROR);
	case -ENOMEM:
	case -EIO:
	default:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INTERNAL_DEVICE_ERROR);
	}
}

const char *
nvmf_trtype_str(enum nvme_trtype trtype)
{
	switch (trtype) {
	case NVME_TRTYPE_RDMA:
		return "RDMA";
	case NVME_TRTYPE_FC:
		return "FC";
	case NVME_TRTYPE_TCP:
		return "TCP";
	case NVME_TRTYPE_LOOP:
		return "LOOP";
	}
	return "unknown";
}

const char *
nvmf_adrfam_str(enum nvme_adrfam adrfam)
{
	switch (adrfam) {
	case NVME_ADRFAM_IPV4:
		return "IPv4";
	case NVME_ADRFAM_IPV6:
		return "IPv6";
	case NVME_ADRFAM_IB:
		return "IB";
	case NVME_ADRFAM_FC:
		return "FC";
	case NVME_ADRFAM_LOOP:
		return "LOOP";
	}
	return "unknown";
}

/*
 * Transports.
 */

const struct nvmf_transport_ops *
nvmf_transport_ops_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(g_transport_types); i++) {
		if (strcasecmp(g_transport_types[i]->name, name) == 0) {
			return g_transport_types[i];
		}
	}
	return NULL;
}

void
nvmf_transport_opts_init(const struct nvmf_transport_ops *ops, struct nvmf_transport_opts *opts)
{
	*opts = (struct nvmf_transport_opts){
		.max_queue_depth = 128,
		.max_io_qpairs_per_ctrlr = 127,
		.in_capsule_data_size = 8192,
		.max_io_size = 131072,
		.io_unit_size = 8192,
		.max_aq_depth = 32,
		.num_shared_buffers = 2047,
		.buf_cache_size = 32,
		.max_connections_per_listener = 1024,
		.pdu_timeout_ms = 10000,
		.max_kato_ms = 0,
		.max_pending_connections = 128,
		.handshake_timeout_ms = 3000,
	};
	if (ops->opts_init != NULL) {
		ops->opts_init(opts);
	}
}

struct nvmf_transport *
nvmf_tgt_find_transport(enum nvme_trtype trtype)
{
	struct nvmf_transport *t;

	TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
		if (t->ops->trtype == trtype) {
			return t;
		}
	}
	return NULL;
}

json_t *
nvmf_transport_opts_json(const struct nvmf_transport *t)
{
	const struct nvmf_transport_opts *o = &t->opts;
	json_t *obj;

	obj = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"trtype", t->ops->name, "max_queue_depth", (json_int_t)o->max_queue_depth,
			"max_io_qpairs_per_ctrlr", (json_int_t)o->max_io_qpairs_per_ctrlr,
			"in_capsule_data_size", (json_int_t)o->in_capsule_data_size, "max_io_size",
			(json_int_t)o->max_io_size, "io_unit_size", (json_int_t)o->io_unit_size,
			"max_aq_depth", (json_int_t)o->max_aq_depth, "num_shared_buffers",
			(json_int_t)o->num_shared_buffers, "buf_cache_size",
			(json_int_t)o->buf_cache_size, "max_connections_per_listener",
			(json_int_t)o->max_connections_per_listener, "pdu_timeout_ms",
			(json_int_t)o->pdu_timeout_ms, "max_kato_ms", (json_int_t)o->max_kato_ms,
			"max_pending_connections", (json_int_t)o->max_pending_connections,
			"handshake_timeout_ms", (json_int_t)o->handshake_timeout_ms);
	if (obj != NULL && t->ops->dump_opts != NULL) {
		t->ops->dump_opts(t, obj);
	}
	return obj;
}

/*
 * Poll groups.
 */

struct nvmf_thread_walk {
	void (*fn)(struct nvmf_poll_group *pg, void *ctx);
	void (*cpl)(void *ctx);
	void *ctx;
};

static struct nvmf_poll_group *
current_poll_group(void)
{
	struct thread *thread = thread_get_current();
	uint32_t i;

	for (i = 0; i < g_nvmf_tgt.num_pgs; i++) {
		if (g_nvmf_tgt.pgs[i].thread == thread) {
			return &g_nvmf_tgt.pgs[i];
		}
	}
	return NULL;
}

static void
thread_walk_fn(void *arg)
{
	struct nvmf_thread_walk *walk = arg;
	struct nvmf_poll_group *pg = current_poll_group();

	if (pg != NULL) {
		walk->fn(pg, walk->ctx);
	}
}

static void
thread_walk_cpl(void *arg)
{
	struct nvmf_thread_walk *walk = arg;

	if (walk->cpl != NULL) {
		walk->cpl(walk->ctx);
	}
	free(walk);
}

int
nvmf_tgt_for_each_pg(void (*fn)(struct nvmf_poll_group *pg, void *ctx), void *ctx,
		     void (*cpl)(void *ctx))
{
	struct nvmf_thread_walk *walk;
	int rc;

	walk = calloc(1, sizeof(*walk));
	if (walk == NULL) {
		return -ENOMEM;
	}
	walk->fn = fn;
	walk->cpl = cpl;
	walk->ctx = ctx;
	rc = thread_for_each(thread_walk_fn, walk, thread_walk_cpl);
	if (rc != 0) {
		free(walk);
	}
	return rc;
}

struct nvmf_poll_group *
nvmf_tgt_next_poll_group(void)
{
	struct nvmf_poll_group *pg;

	if (g_nvmf_tgt.num_pgs == 0) {
		return NULL;
	}
	pg = &g_nvmf_tgt.pgs[g_nvmf_tgt.next_pg % g_nvmf_tgt.num_pgs];
	g_nvmf_tgt.next_pg++;
	return pg;
}

struct thread *
nvmf_poll_group_get_thread(const struct nvmf_poll_group *pg)
{
	return pg->thread;
}

struct nvmf_transport_poll_group *
nvmf_poll_group_get_tgroup(const struct nvmf_poll_group *pg, const struct nvmf_transport *t)
{
	return t->index < NVMF_MAX_TRANSPORTS ? pg->tgroups[t->index] : NULL;
}

/* Transport creation: the transport, then its part of every poll group. */
struct transport_create_ctx {
	struct nvmf_transport *transport;
	int rc;
	void (*cb)(void *arg, int rc);
	void *arg;
};

static void
tgroup_destroy_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct nvmf_transport *t = arg;
	struct nvmf_transport_poll_group *tg = pg->tgroups[t->index];

	if (tg != NULL) {
		pg->tgroups[t->index] = NULL;
		nvmf_tgroup_destroy(tg);
	}
}

static void
transport_create_undone(void *arg)
{
	struct transport_create_ctx *ctx = arg;

	ctx->transport->ops->destroy(ctx->transport);
	ctx->cb(ctx->arg, ctx->rc);
	free(ctx);
}

static void
tgroup_create_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct transport_create_ctx *ctx = arg;
	struct nvmf_transport *t = ctx->transport;
	int rc;

	if (ctx->rc != 0) {
		return;
	}
	rc = nvmf_tgroup_create(t, pg, &pg->tgroups[t->index]);
	if (rc != 0) {
		ERRLOG("nvmf: transport %s: cannot create its poll group on thread %s: %s\n",
		       t->ops->name, thread_get_name(pg->thread), strerror(-rc));
		pg->tgroups[t->index] = NULL;
		ctx->rc = rc;
	}
}

static void
tgroup_create_done(void *arg)
{
	struct transport_create_ctx *ctx = arg;

	if (ctx->rc != 0) {
		if (nvmf_tgt_for_each_pg(tgroup_destroy_fn, ctx->transport,
					 transport_create_undone) != 0) {
			ERRLOG("nvmf: cannot undo transport %s creation\n",
			       ctx->transport->ops->name);
			ctx->cb(ctx->arg, ctx->rc);
			free(ctx);
		}
		return;
	}
	TAILQ_INSERT_TAIL(&g_nvmf_tgt.transports, ctx->transport, link);
	g_nvmf_tgt.num_transports++;
	NOTICELOG("nvmf: transport %s created\n", ctx->transport->ops->name);
	ctx->cb(ctx->arg, 0);
	free(ctx);
}

static uint32_t
free_transport_index(void)
{
	struct nvmf_transport *t;
	uint32_t i;
	bool used;

	for (i = 0; i < NVMF_MAX_TRANSPORTS; i++) {
		used = false;
		TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
			used |= t->index == i;
		}
		if (!used) {
			return i;
		}
	}
	return NVMF_MAX_TRANSPORTS;
}

int
nvmf_tgt_create_transport(const struct nvmf_transport_ops *ops,
			  const struct nvmf_transport_opts *opts, void (*cb)(void *arg, int rc),
			  void *arg)
{
	struct transport_create_ctx *ctx;
	struct nvmf_transport *t;
	uint32_t index;
	int rc;

	if (g_nvmf_tgt.state != NVMF_TGT_RUNNING) {
		return -ESHUTDOWN;
	}
	if (nvmf_tgt_find_transport(ops->trtype) != NULL) {
		return -EEXIST;
	}
	index = free_transport_index();
	if (index == NVMF_MAX_TRANSPORTS) {
		return -ENOSPC;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		return -ENOMEM;
	}
	rc = ops->create(opts, &t);
	if (rc != 0) {
		free(ctx);
		return rc;
	}
	t->ops = ops;
	t->opts = *opts;
	t->index = index;
	ctx->transport = t;
	ctx->cb = cb;
	ctx->arg = arg;
	rc = nvmf_tgt_for_each_pg(tgroup_create_fn, ctx, tgroup_create_done);
	if (rc != 0) {
		ops->destroy(t);
		free(ctx);
	}
	return rc;
}

/*
 * Listen addresses.
 */

int
nvmf_listen_addr_parse(enum nvme_trtype trtype, const char *adrfam, const char *traddr,
		       const char *trsvcid, struct nvmf_listen_addr *addr)
{
	unsigned char bin[sizeof(struct in6_addr)];
	unsigned long port;
	char *end;

	memset(addr, 0, sizeof(*addr));
	addr->trtype = trtype;
	if (adrfam == NULL || strcasecmp(adrfam, "ipv4") == 0) {
		addr->adrfam = NVME_ADRFAM_IPV4;
	} else if (strcasecmp(adrfam, "ipv6") == 0) {
		addr->adrfam = NVME_ADRFAM_IPV6;
	} else {
		return -EAFNOSUPPORT;
	}
	if (traddr == NULL || strlen(traddr) > NVME_TRADDR_LEN ||
	    inet_pton(addr->adrfam == NVME_ADRFAM_IPV4 ? AF_INET : AF_INET6, traddr, bin) != 1) {
		return -EADDRNOTAVAIL;
	}
	if (trsvcid == NULL || trsvcid[0] == '\0' || strlen(trsvcid) > NVME_TRSVCID_LEN) {
		return -EINVAL;
	}
	errno = 0;
	port = strtoul(trsvcid, &end, 10);
	if (errno != 0 || *end != '\0' || trsvcid[0] == '-' || trsvcid[0] == '+' || port == 0 ||
	    port > 65535) {
		return -EINVAL;
	}
	snprintf(addr->traddr, sizeof(addr->traddr), "%s", traddr);
	snprintf(addr->trsvcid, sizeof(addr->trsvcid), "%lu", port);
	return 0;
}

bool
nvmf_listen_addr_equal(const struct nvmf_listen_addr *a, const struct nvmf_listen_addr *b)
{
	return a->trtype == b->trtype && a->adrfam == b->adrfam &&
	       strcmp(a->traddr, b->traddr) == 0 && strcmp(a->trsvcid, b->trsvcid) == 0;
}

int
nvmf_tgt_listen(const struct nvmf_listen_addr *addr, struct nvmf_tgt_listener **out)
{
	struct nvmf_tgt_listener *tl;
	struct nvmf_transport *t;
	int rc;

	TAILQ_FOREACH(tl, &g_nvmf_tgt.listeners, link) {
		if (nvmf_listen_addr_equal(&tl->addr, addr)) {
			if (tl->addr.secure_channel != addr->secure_channel) {
				/* One socket cannot be both: the first listener's choice stands. */
				return -EPROTOTYPE;
			}
			tl->refs++;
			*out = tl;
			return 0;
		}
	}
	t = nvmf_tgt_find_transport(addr->trtype);
	if (t == NULL) {
		return -ENOENT;
	}
	if (addr->secure_channel && addr->trtype != NVME_TRTYPE_TCP) {
		return -EPROTONOSUPPORT;
	}
	tl = calloc(1, sizeof(*tl));
	if (tl == NULL) {
		return -ENOMEM;
	}
	rc = t->ops->listen(t, addr);
	if (rc != 0) {
		free(tl);
		return rc;
	}
	tl->addr = *addr;
	tl->transport = t;
	tl->refs = 1;
	tl->portid = ++g_nvmf_tgt.next_portid;
	TAILQ_INSERT_TAIL(&g_nvmf_tgt.listeners, tl, link);
	*out = tl;
	return 0;
}

void
nvmf_tgt_unlisten(struct nvmf_tgt_listener *tl)
{
	if (--tl->refs > 0) {
		return;
	}
	TAILQ_REMOVE(&g_nvmf_tgt.listeners, tl, link);
	if (!tl->stopped) {
		tl->transport->ops->stop_listen(tl->transport, &tl->addr);
	}
	free(tl);
}

uint16_t
nvmf_tgt_conn_admit(const struct nvmf_listen_addr *listen)
{
	struct nvmf_tgt_listener *tl;
	uint32_t limit;

	TAILQ_FOREACH(tl, &g_nvmf_tgt.listeners, link) {
		if (nvmf_listen_addr_equal(&tl->addr, listen)) {
			break;
		}
	}
	if (tl == NULL || tl->stopped) {
		return 0;
	}
	limit = tl->transport->opts.max_connections_per_listener;
	if (tl->num_conns >= limit) {
		if (!tl->conn_limit_warned) {
			WARNLOG("nvmf: %s:%s has %u connections (max_connections_per_listener); "
				"refusing more until some close\n",
				listen->traddr, listen->trsvcid, limit);
			tl->conn_limit_warned = true;
		}
		return 0;
	}
	tl->num_conns++;
	return tl->portid;
}

static void
conn_gone_msg(void *arg)
{
	uint16_t portid = (uint16_t)(uintptr_t)arg;
	struct nvmf_tgt_listener *tl;

	/* The listener may be gone already: then there is nothing to count. */
	TAILQ_FOREACH(tl, &g_nvmf_tgt.listeners, link) {
		if (tl->portid == portid && tl->num_conns > 0) {
			if (--tl->num_conns < tl->transport->opts.max_connections_per_listener) {
				tl->conn_limit_warned = false;
			}
			return;
		}
	}
}

void
nvmf_tgt_conn_gone(uint16_t portid)
{
	if (portid == 0) {
		return;
	}
	if (thread_get_current() == thread_get_app()) {
		conn_gone_msg((void *)(uintptr_t)portid);
	} else {
		nvmf_send_msg_or_spin(thread_get_app(), conn_gone_msg, (void *)(uintptr_t)portid);
	}
}

/* The discovery log changed: bump the generation and tell discovery controllers. */
void
nvmf_tgt_discovery_changed(void)
{
	struct nvmf_subsystem *disc = g_nvmf_tgt.discovery;
	struct nvmf_ctrlr *ctrlr;

	g_nvmf_tgt.discovery_genctr++;
	if (disc == NULL) {
		return;
	}
	TAILQ_FOREACH(ctrlr, &disc->ctrlrs, link) {
		nvmf_ctrlr_discovery_changed(ctrlr);
	}
}

/*
 * The request path.
 */

enum nvme_data_xfer
nvmf_cmd_xfer(const struct nvme_cmd *cmd)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)cmd;

	if (cmd->opc == NVME_OPC_FABRICS) {
		return nvme_opc_data_xfer(fc->fctype);
	}
	return nvme_opc_data_xfer(cmd->opc);
}

void
nvmf_request_set_status(struct nvmf_request *req, uint16_t status)
{
	req->rsp.status = status & (uint16_t)~NVME_STATUS_P;
}

static bool
is_connect(const struct nvmf_request *req)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)&req->cmd;

	return req->cmd.opc == NVME_OPC_FABRICS && fc->fctype == NVME_FCTYPE_CONNECT;
}

static bool
is_auth(const struct nvmf_request *req)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)&req->cmd;

	return req->cmd.opc == NVME_OPC_FABRICS &&
	       (fc->fctype == NVME_FCTYPE_AUTH_SEND || fc->fctype == NVME_FCTYPE_AUTH_RECV);
}

/* What a queue that has not authenticated yet answers to anything else. */
#define AUTH_REQUIRED NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_AUTH_REQUIRED)

/* Finish a request on its qpair's thread and hand it back to the transport. */
static void
request_complete_local(struct nvmf_request *req)
{
	struct nvmf_qpair *qpair = req->qpair;
	struct nvmf_poll_group *pg = qpair->pg;

	if (req->auth_done) {
		req->auth_done = false;
		qpair->auth_pending = false;
	}
	if (is_connect(req) && qpair->state == NVMF_QPAIR_CONNECTING) {
		if (NVME_STATUS_IS_SUCCESS(req->rsp.status) && qpair->ctrlr != NULL) {
			qpair->state = NVMF_QPAIR_LIVE;
			if (qpair->qid == 0) {
				pg->admin_qpairs++;
				pg->current_admin_qpairs++;
			} else {
				pg->io_qpairs++;
				pg->current_io_qpairs++;
			}
		} else {
			qpair->state = NVMF_QPAIR_UNCONNECTED;
		}
	}
	/*
	 * A failed I/O command goes in its controller's Error Information log
	 * (admin commands are recorded on the app thread as they fail). The
	 * controller outlives the requests of its I/O queues (io_draining).
	 */
	if (qpair->qid != 0 && qpair->ctrlr != NULL && !NVME_STATUS_IS_SUCCESS(req->rsp.status) &&
	    req->cmd.opc != NVME_OPC_FABRICS && !qpair->auth_pending) {
		nvmf_ctrlr_error_record(qpair->ctrlr, req);
	}
	req->rsp.cid = req->cmd.cid;
	req->rsp.sqid = qpair->qid;
	if (qpair->sq_entries > 0) {
		qpair->sqhd = (uint16_t)((qpair->sqhd + 1) % qpair->sq_entries);
	}
	req->rsp.sqhd = qpair->sqhd;
	qpair->transport->ops->req_complete(req);
}

static void
request_complete_msg(void *arg)
{
	request_complete_local(arg);
}

void
nvmf_request_complete(struct nvmf_request *req)
{
	if (thread_get_current() != req->qpair->thread) {
		nvmf_send_msg_or_spin(req->qpair->thread, request_complete_msg, req);
		return;
	}
	request_complete_local(req);
}

void
nvmf_request_fail(struct nvmf_request *req, uint16_t status)
{
	memset(&req->rsp, 0, sizeof(req->rsp));
	nvmf_request_set_status(req, status);
	request_complete_local(req);
}

static void
exec_fabrics_msg(void *arg)
{
	nvmf_ctrlr_exec_fabrics(arg);
}

static void
exec_admin_msg(void *arg)
{
	nvmf_ctrlr_exec_admin(arg);
}

void
nvmf_request_exec(struct nvmf_request *req)
{
	struct nvmf_qpair *qpair = req->qpair;
	struct thread *app = thread_get_app();

	memset(&req->rsp, 0, sizeof(req->rsp));
	req->auth_done = false;
	/* Keep-alive traffic only once the queue authenticated. */
	if (!qpair->auth_pending) {
		__atomic_store_n(&qpair->last_cmd_tick, ticks_get(), __ATOMIC_RELAXED);
	}

	if (req->cmd.opc == NVME_OPC_FABRICS) {
		if (is_connect(req)) {
			if (qpair->state != NVMF_QPAIR_UNCONNECTED) {
				nvmf_request_fail(req, NVME_STATUS(NVME_SCT_GENERIC,
								   NVME_SC_COMMAND_SEQUENCE_ERROR) |
							       NVME_STATUS_DNR);
				return;
			}
			qpair->state = NVMF_QPAIR_CONNECTING;
		} else if (qpair->state != NVMF_QPAIR_LIVE) {
			nvmf_request_fail(req, NVME_STATUS(NVME_SCT_GENERIC,
							   NVME_SC_COMMAND_SEQUENCE_ERROR) |
						       NVME_STATUS_DNR);
			return;
		} else if (qpair->auth_pending && !is_auth(req)) {
			nvmf_request_fail(req, AUTH_REQUIRED);
			return;
		}
		/* Controllers live on the app thread: Connect and properties go there. */
		if (thread_send_msg(app, exec_fabrics_msg, req) != 0) {
			if (qpair->state == NVMF_QPAIR_CONNECTING) {
				qpair->state = NVMF_QPAIR_UNCONNECTED;
			}
			nvmf_request_fail(req, nvmf_errno_to_status(-ENOMEM));
		}
		return;
	}
	if (qpair->state != NVMF_QPAIR_LIVE) {
		nvmf_request_fail(req,
				  NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_COMMAND_SEQUENCE_ERROR) |
					  NVME_STATUS_DNR);
		return;
	}
	if (qpair->auth_pending) {
		nvmf_request_fail(req, AUTH_REQUIRED);
		return;
	}
	if (qpair->qid == 0) {
		if (thread_send_msg(app, exec_admin_msg, req) != 0) {
			nvmf_request_fail(req, nvmf_errno_to_status(-ENOMEM));
		}
		return;
	}
	nvmf_io_exec(req);
}

/*
 * Qpair lifecycle.
 */

void
nvmf_qpair_init(struct nvmf_qpair *qpair, struct nvmf_transport *transport,
		struct nvmf_poll_group *pg, const struct nvmf_listen_addr *listen, const char *peer)
{
	qpair->transport = transport;
	qpair->pg = pg;
	qpair->thread = pg->thread;
	qpair->ctrlr = NULL;
	qpair->qid = 0;
	qpair->sq_entries = 0;
	qpair->sqhd = 0;
	qpair->state = NVMF_QPAIR_UNCONNECTED;
	qpair->pgs = NULL;
	qpair->auth = NULL;
	qpair->auth_pending = false;
	qpair->bind_pending = false;
	qpair->listen = *listen;
	snprintf(qpair->peer, sizeof(qpair->peer), "%s", peer ? peer : "?");
	qpair->id = __atomic_fetch_add(&g_nvmf_tgt.next_qpair_id, 1, __ATOMIC_RELAXED);
	qpair->last_cmd_tick = ticks_get();
	TAILQ_INSERT_TAIL(&pg->qpairs, qpair, link);
	pg->num_qpairs++;
	__atomic_fetch_add(&g_nvmf_tgt.num_qpairs, 1, __ATOMIC_SEQ_CST);
	DEBUGLOG(nvmf, "qpair %u from %s on thread %s\n", qpair->id, qpair->peer,
		 thread_get_name(pg->thread));
}

static void
qpair_fini_done_msg(void *arg)
{
	struct nvmf_qpair *qpair = arg;

	qpair->fini_cb(qpair);
}

static void
qpair_detach_msg(void *arg)
{
	struct nvmf_qpair *qpair = arg;

	nvmf_auth_qpair_fini(qpair);
	nvmf_ctrlr_qpair_detach(qpair);
	nvmf_tgt_conn_gone(qpair->admit_portid);
	qpair->admit_portid = 0;
	/* Back on the qpair's thread; messages keep order, so no completion overtakes this. */
	nvmf_send_msg_or_spin(qpair->thread, qpair_fini_done_msg, qpair);
}

void
nvmf_qpair_fini(struct nvmf_qpair *qpair, void (*cb)(struct nvmf_qpair *qpair))
{
	struct nvmf_poll_group *pg = qpair->pg;

	if (qpair->state == NVMF_QPAIR_CLOSING) {
		return;
	}
	if (qpair->state == NVMF_QPAIR_LIVE) {
		if (qpair->qid == 0) {
			pg->current_admin_qpairs--;
		} else {
			pg->current_io_qpairs--;
		}
	}
	qpair->state = NVMF_QPAIR_CLOSING;
	qpair->fini_cb = cb;
	TAILQ_REMOVE(&pg->qpairs, qpair, link);
	DEBUGLOG(nvmf, "qpair %u (%s) closing\n", qpair->id, qpair->peer);
	nvmf_send_msg_or_spin(thread_get_app(), qpair_detach_msg, qpair);
}

static void
io_drained_msg(void *arg)
{
	nvmf_ctrlr_io_drained(arg);
}

void
nvmf_qpair_release(struct nvmf_qpair *qpair)
{
	if (qpair->drain_ctrlr != NULL) {
		nvmf_send_msg_or_spin(thread_get_app(), io_drained_msg, qpair->drain_ctrlr);
		qpair->drain_ctrlr = NULL;
	}
	qpair->pg->num_qpairs--;
	__atomic_fetch_sub(&g_nvmf_tgt.num_qpairs, 1, __ATOMIC_SEQ_CST);
}

static void
qpair_disconnect_msg(void *arg)
{
	struct nvmf_qpair *qpair = arg;

	if (qpair->state != NVMF_QPAIR_CLOSING) {
		qpair->transport->ops->qpair_disconnect(qpair);
	}
}

/*
 * Ask a qpair's transport to drop the connection (any thread). The qpair
 * stays valid until it is detached on the app thread, and messages from the
 * app thread reach its thread in order, so this cannot outlive it.
 */
void
nvmf_qpair_disconnect(struct nvmf_qpair *qpair)
{
	if (thread_get_current() == qpair->thread) {
		qpair_disconnect_msg(qpair);
		return;
	}
	nvmf_send_msg_or_spin(qpair->thread, qpair_disconnect_msg, qpair);
}

/*
 * The app subsystem.
 */

static int
nvmf_subsystem_init(void)
{
	struct nvmf_subsystem *disc;
	uint32_t i, n = thread_count();
	int rc;

	g_nvmf_tgt.pgs = calloc(n, sizeof(*g_nvmf_tgt.pgs));
	if (g_nvmf_tgt.pgs == NULL) {
		return -ENOMEM;
	}
	g_nvmf_tgt.num_pgs = 0;
	g_nvmf_tgt.start_tick = ticks_get();
	for (i = 0; i < n; i++) {
		struct thread *thread = thread_get_by_id(i);
		struct nvmf_poll_group *pg;

		if (thread == NULL) {
			continue;
		}
		pg = &g_nvmf_tgt.pgs[g_nvmf_tgt.num_pgs];
		pg->thread = thread;
		pg->index = g_nvmf_tgt.num_pgs++;
		TAILQ_INIT(&pg->qpairs);
	}
	g_nvmf_tgt.next_pg = 0;
	rc = nvmf_auth_init();
	if (rc != 0) {
		ERRLOG("nvmf: cannot start the DH-HMAC-CHAP workers: %s\n", strerror(-rc));
		free(g_nvmf_tgt.pgs);
		g_nvmf_tgt.pgs = NULL;
		return rc;
	}
	g_nvmf_tgt.state = NVMF_TGT_RUNNING;
	rc = nvmf_subsystem_create(NVME_DISCOVERY_NQN, NVMF_SUBTYPE_DISCOVERY, 0, &disc);
	if (rc != 0) {
		nvmf_auth_fini();
		free(g_nvmf_tgt.pgs);
		g_nvmf_tgt.pgs = NULL;
		g_nvmf_tgt.state = NVMF_TGT_STOPPED;
		return rc;
	}
	disc->allow_any_host = true;
	g_nvmf_tgt.discovery = disc;
	nvmf_rpc_register();
	return 0;
}

/* Shutdown: listeners, connections, subsystems, transport poll groups, transports. */
static struct {
	void (*done)(void *arg);
	void *done_arg;
	struct poller *wait_poller;
	uint64_t wait_start;
	uint32_t wait_reports;
} g_fini;

static void fini_delete_next_subsystem(void *arg);

static void
fini_transports(void *arg)
{
	struct nvmf_transport *t;

	while ((t = TAILQ_FIRST(&g_nvmf_tgt.transports)) != NULL) {
		TAILQ_REMOVE(&g_nvmf_tgt.transports, t, link);
		g_nvmf_tgt.num_transports--;
		t->ops->destroy(t);
	}
	free(g_nvmf_tgt.pgs);
	g_nvmf_tgt.pgs = NULL;
	g_nvmf_tgt.num_pgs = 0;
	g_nvmf_tgt.discovery = NULL;
	g_nvmf_tgt.state = NVMF_TGT_STOPPED;
	nvmf_auth_fini();
	NOTICELOG("nvmf: target stopped\n");
	g_fini.done(g_fini.done_arg);
}

static void
fini_tgroups_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct nvmf_transport *t;

	TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
		tgroup_destroy_fn(pg, t);
	}
}

static void
fini_subsystem_deleted(void *arg)
{
	fini_delete_next_subsystem(NULL);
}

static void
fini_delete_next_subsystem(void *arg)
{
	struct nvmf_subsystem *subsys = TAILQ_LAST(&g_nvmf_tgt.subsystems, nvmf_subsystem_head);
	int rc;

	if (subsys == NULL) {
		if (nvmf_tgt_for_each_pg(fini_tgroups_fn, NULL, fini_transports) != 0) {
			ERRLOG("nvmf: cannot destroy transport poll groups\n");
			fini_transports(NULL);
		}
		return;
	}
	rc = nvmf_subsystem_delete(subsys, fini_subsystem_deleted, NULL);
	if (rc != 0) {
		ERRLOG("nvmf: cannot delete subsystem %s at shutdown: %s\n", subsys->nqn,
		       strerror(-rc));
		TAILQ_REMOVE(&g_nvmf_tgt.subsystems, subsys, link);
		fini_delete_next_subsystem(NULL);
	}
}

static int
fini_wait_qpairs(void *arg)
{
	uint32_t n = __atomic_load_n(&g_nvmf_tgt.num_qpairs, __ATOMIC_SEQ_CST);
	uint64_t waited_s;

	if (n > 0) {
		waited_s = (ticks_get() - g_fini.wait_start) / ticks_hz();
		if (waited_s > g_fini.wait_reports) {
			g_fini.wait_reports = (uint32_t)waited_s;
			NOTICELOG("nvmf: waiting for %u connection(s) to close\n", n);
		}
		return POLLER_IDLE;
	}
	poller_unregister(&g_fini.wait_poller);
	fini_delete_next_subsystem(NULL);
	return POLLER_BUSY;
}

static void
fini_disconnect_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct nvmf_qpair *qpair, *tmp;

	TAILQ_FOREACH_SAFE(qpair, &pg->qpairs, link, tmp) {
		qpair->transport->ops->qpair_disconnect(qpair);
	}
}

static void
fini_disconnected(void *arg)
{
	g_fini.wait_start = ticks_get();
	g_fini.wait_reports = 0;
	g_fini.wait_poller = poller_register(fini_wait_qpairs, NULL, 10000, "nvmf_fini");
	if (g_fini.wait_poller == NULL) {
		ERRLOG("nvmf: cannot wait for connections to close\n");
		fini_delete_next_subsystem(NULL);
	}
}

static void
nvmf_subsystem_fini(void (*done)(void *arg), void *done_arg)
{
	struct nvmf_tgt_listener *tl;

	g_fini.done = done;
	g_fini.done_arg = done_arg;
	if (g_nvmf_tgt.state != NVMF_TGT_RUNNING) {
		done(done_arg);
		return;
	}
	g_nvmf_tgt.state = NVMF_TGT_STOPPING;
	/* No new connections: close every listening socket first. */
	TAILQ_FOREACH(tl, &g_nvmf_tgt.listeners, link) {
		tl->transport->ops->stop_listen(tl->transport, &tl->addr);
		tl->stopped = true;
	}
	if (nvmf_tgt_for_each_pg(fini_disconnect_fn, NULL, fini_disconnected) != 0) {
		fini_disconnected(NULL);
	}
}

static void
nvmf_write_config_json(json_t *config)
{
	struct nvmf_subsystem *subsys;
	struct nvmf_transport *t;

	/* Written only when changed: the defaults need no call. */
	nvme_auth_rpc_lists_config(config, "nvmf_set_config", g_nvmf_tgt.dhchap_digests,
				   g_nvmf_tgt.dhchap_dhgroups);
	TAILQ_FOREACH(t, &g_nvmf_tgt.transports, link) {
		json_array_append_new(config,
				      json_pack("{s:s, s:o}", "method", "nvmf_create_transport",
						"params", nvmf_transport_opts_json(t)));
	}
	TAILQ_FOREACH(subsys, &g_nvmf_tgt.subsystems, link) {
		nvmf_subsystem_write_config_json(subsys, config);
	}
}

static struct app_subsystem g_nvmf_app_subsystem = {
	.name = "nvmf",
	.init = nvmf_subsystem_init,
	.fini = nvmf_subsystem_fini,
	.write_config_json = nvmf_write_config_json,
};

struct app_subsystem *
nvmf_get_app_subsystem(void)
{
	return &g_nvmf_app_subsystem;
}
