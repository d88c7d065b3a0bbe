/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: the request pool, submission, completion, per-command
 * timeouts, the Fabrics Connect that turns a transport connection into a
 * queue, and failure handling (every command outstanding on a queue that
 * breaks completes at once with a path error).
 *
 * A queue pair has num_entries - 1 request slots, so it never has more
 * commands outstanding than its submission queue holds, plus one slot of
 * its own for the Fabrics Connect (I/O waiting for the queue to come up may
 * fill the pool). The request's index is in the low bits of its command
 * id; the bits above count the slot's uses, so a completion that comes late
 * or twice (a broken or hostile controller) names a cid that is no longer
 * outstanding, instead of completing the command that reused the slot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/util.h"

#include "nvme_internal.h"

static void qpair_auth_free(struct nvme_qpair *qp);
static int qpair_send(struct nvme_qpair *qp, struct nvme_request *req);
static void req_init(struct nvme_qpair *qp, struct nvme_request *req, const struct nvme_cmd *cmd,
		     const struct iovec *iov, int iovcnt, size_t iov_offset, uint32_t data_len,
		     nvme_cmd_cb cb, void *cb_arg);

static int qpair_poll(void *ctx);

static void
qpair_transport_fini(struct nvme_qpair *qp)
{
	if (qp->ops->qpair_fini != NULL) {
		qp->ops->qpair_fini(qp);
	}
}

/* A queue pair is its transport's struct (qpair_size bytes), with ours at qpair_offset. */
static struct nvme_qpair *
qpair_alloc(const struct nvme_transport_ops *ops)
{
	uint8_t *mem = calloc(1, ops->qpair_size);

	return mem == NULL ? NULL : (struct nvme_qpair *)(mem + ops->qpair_offset);
}

static void
qpair_free(struct nvme_qpair *qp)
{
	free((uint8_t *)qp - qp->ops->qpair_offset);
}

/* The request pool plus the Connect's slot, each request followed by the transport's state. */
static int
qpair_alloc_reqs(struct nvme_qpair *qp)
{
	struct nvme_request *req;
	uint32_t i;

	/* Requests stay 16-byte aligned, as transport_ctx is. */
	qp->req_stride = sizeof(struct nvme_request) + ((qp->ops->req_ctx_size + 15) & ~(size_t)15);
	qp->reqs = calloc(qp->num_reqs + 1, qp->req_stride);
	if (qp->reqs == NULL) {
		return -ENOMEM;
	}
	for (i = 0; i <= qp->num_reqs; i++) {
		req = nvme_qpair_req(qp, i);
		req->qpair = qp;
		req->cid = (uint16_t)i;
		if (i < qp->num_reqs) {
			TAILQ_INSERT_TAIL(&qp->free_reqs, req, link);
		}
	}
	qp->connect_req = nvme_qpair_req(qp, qp->num_reqs);
	return 0;
}

static void
qpair_init_fields(struct nvme_qpair *qp, struct nvme_ctrlr *ctrlr, uint16_t qid,
		  uint16_t num_entries, bool is_admin)
{
	qp->ctrlr = ctrlr;
	qp->ops = ctrlr->ops;
	qp->thread = thread_get_current();
	qp->qid = qid;
	qp->num_entries = num_entries;
	qp->is_admin = is_admin;
	snprintf(qp->name, sizeof(qp->name), "%.30s q%u", ctrlr->name, qid);
	qp->num_reqs = (uint32_t)num_entries - 1;
	qp->cid_slot_mask = 1;
	while (qp->cid_slot_mask < qp->num_reqs) {
		qp->cid_slot_mask = (uint16_t)(qp->cid_slot_mask << 1 | 1);
	}
	TAILQ_INIT(&qp->free_reqs);
	TAILQ_INIT(&qp->outstanding);
	TAILQ_INIT(&qp->queued);
	qp->cmd_timeout_ticks = us_to_ticks((uint64_t)ctrlr->opts.command_timeout_ms * 1000);
}

struct nvme_qpair *
nvme_qpair_create(struct nvme_ctrlr *ctrlr, uint16_t qid, uint16_t num_entries, bool is_admin)
{
	struct nvme_qpair *qp;

	qp = qpair_alloc(ctrlr->ops);
	if (qp == NULL) {
		return NULL;
	}
	qpair_init_fields(qp, ctrlr, qid, num_entries, is_admin);
	if (qpair_alloc_reqs(qp) != 0) {
		goto out_free_qpair;
	}
	qp->connect_data = calloc(1, sizeof(*qp->connect_data));
	if (qp->connect_data == NULL) {
		goto out_free_reqs;
	}
	if (qp->ops->qpair_init != NULL && qp->ops->qpair_init(qp) != 0) {
		goto out_free_connect_data;
	}
	qp->poller = poller_register(qpair_poll, qp, NVME_QPAIR_POLL_US, "nvme_qpair");
	if (qp->poller == NULL) {
		goto out_fini_transport;
	}
	return qp;

out_fini_transport:
	qpair_transport_fini(qp);
out_free_connect_data:
	free(qp->connect_data);
out_free_reqs:
	free(qp->reqs);
out_free_qpair:
	qpair_free(qp);
	errno = ENOMEM;
	return NULL;
}

int
nvme_qpair_error(struct nvme_qpair *qp, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(qp->fail_reason, sizeof(qp->fail_reason), fmt, ap);
	va_end(ap);
	return rc;
}

int
nvme_qpair_sockaddr(struct nvme_qpair *qp, struct sockaddr_in *sin)
{
	const struct nvme_transport_id *trid = &qp->ctrlr->trid;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, trid->traddr, &sin->sin_addr) != 1) {
		return nvme_qpair_error(qp, -EINVAL, "traddr '%s' is not an IPv4 address",
					trid->traddr);
	}
	sin->sin_port = htons((uint16_t)strtoul(trid->trsvcid, NULL, 10));
	return 0;
}

void
nvme_qpair_hold(struct nvme_qpair *qp)
{
	qp->cb_depth++;
}

bool
nvme_qpair_release(struct nvme_qpair *qp)
{
	if (--qp->cb_depth == 0 && qp->free_pending && !qp->destroying) {
		nvme_qpair_destroy(qp);
		return true;
	}
	return false;
}

void
nvme_qpair_destroy(struct nvme_qpair *qp)
{
	if (qp->cb_depth > 0) {
		/* Inside one of our own callbacks: finish when they return. */
		qp->free_pending = true;
		return;
	}
	qp->destroying = true;
	qp->cb_depth++;
	nvme_qpair_disconnect(qp, NVME_STATUS_SQ_DELETION);
	qp->cb_depth--;
	poller_unregister(&qp->poller);
	if (qp->destroyed != NULL) {
		qp->destroyed(qp);
	}
	qpair_transport_fini(qp);
	free(qp->connect_data);
	qpair_auth_free(qp);
	free(qp->reqs);
	qpair_free(qp);
}

/* The Fabrics Connect failed with status: fail the queue pair, saying what the target refused. */
static void
qpair_connect_failed(struct nvme_qpair *qp, const struct nvme_cpl *cpl, uint16_t status)
{
	char reason[sizeof(qp->fail_reason)];

	if (NVME_STATUS_GET_SCT(status) == NVME_SCT_COMMAND_SPECIFIC &&
	    NVME_STATUS_GET_SC(status) == NVME_SC_CONNECT_INVALID_PARAMETERS) {
		snprintf(reason, sizeof(reason),
			 "Fabrics Connect failed: %s (sct 0x%x, sc 0x%x, %s byte %u)%s",
			 nvme_status_string(status), NVME_STATUS_GET_SCT(status),
			 NVME_STATUS_GET_SC(status), (cpl->cdw0 & 1) ? "connect data" : "command",
			 cpl->cdw0 >> 16,
			 (cpl->cdw0 & 1) && (cpl->cdw0 >> 16) ==
						    offsetof(struct nvme_connect_data, subnqn) ?
				 ": unknown subsystem NQN" :
				 "");
	} else {
		snprintf(reason, sizeof(reason), "Fabrics Connect failed: %s (sct 0x%x, sc 0x%x)",
			 nvme_status_string(status), NVME_STATUS_GET_SCT(status),
			 NVME_STATUS_GET_SC(status));
	}
	nvme_qpair_fail(qp, nvme_connect_status_errno(status), reason);
}

/* I/O that waited for the queue goes out now, oldest first. */
static void
qpair_submit_queued(struct nvme_qpair *qp)
{
	struct nvme_request *req;
	int rc;

	while (qp->state == QPAIR_LIVE && (req = TAILQ_FIRST(&qp->queued)) != NULL) {
		TAILQ_REMOVE(&qp->queued, req, link);
		req->state = REQ_OUTSTANDING;
		TAILQ_INSERT_TAIL(&qp->outstanding, req, link);
		qp->num_outstanding++;
		rc = qp->ops->submit(qp, req);
		if (rc != 0) {
			nvme_qpair_fail(qp, rc, "cannot send a queued command");
		}
	}
}

/* Connected (and authenticated where asked): queued I/O goes out, the owner hears. */
static void
qpair_go_live(struct nvme_qpair *qp)
{
	qp->state = QPAIR_LIVE;
	DEBUGLOG(nvme, "%s: connected, cntlid %u\n", qp->name, qp->cntlid);

	nvme_qpair_hold(qp);
	qpair_submit_queued(qp);
	if (qp->state == QPAIR_LIVE) {
		qp->connect_done(qp, 0);
	}
	nvme_qpair_release(qp);
}

/*
 * DH-HMAC-CHAP: the host's state machine (lib/auth) driven by Authentication
 * Send and Receive commands in the Connect's own request slot, before the
 * queue is live. The connect deadline bounds it.
 */
#define AUTH_BUF_SIZE 4096

struct nvme_qpair_auth {
	struct nvme_dhchap t;
	bool receiving;
	uint8_t buf[AUTH_BUF_SIZE];
};

static void
qpair_auth_free(struct nvme_qpair *qp)
{
	if (qp->auth != NULL) {
		nvme_dhchap_fini(&qp->auth->t);
		explicit_bzero(qp->auth->buf, sizeof(qp->auth->buf));
		free(qp->auth);
		qp->auth = NULL;
	}
}

static void qpair_auth_step(struct nvme_qpair *qp);

static void
qpair_auth_cpl(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct nvme_qpair *qp = cb_arg;
	struct nvme_qpair_auth *a = qp->auth;
	uint16_t status = cpl->status & ~NVME_STATUS_P;
	char reason[sizeof(qp->fail_reason)];

	if (qp->state != QPAIR_CONNECTING || a == NULL) {
		return;
	}
	if (!NVME_STATUS_IS_SUCCESS(status)) {
		snprintf(reason, sizeof(reason),
			 "DH-HMAC-CHAP: Authentication %s failed: %s (sct 0x%x, sc 0x%x)",
			 a->receiving ? "Receive" : "Send", nvme_status_string(status),
			 NVME_STATUS_GET_SCT(status), NVME_STATUS_GET_SC(status));
		nvme_qpair_fail(qp, -EACCES, reason);
		return;
	}
	if (a->receiving) {
		(void)nvme_dhchap_host_recv(&a->t, a->buf, sizeof(a->buf));
	}
	qpair_auth_step(qp);
}

static void
qpair_auth_step(struct nvme_qpair *qp)
{
	struct nvme_qpair_auth *a = qp->auth;
	struct nvme_request *req = qp->connect_req;
	struct nvme_auth_cmd *cmd;
	struct nvme_cmd sqe;
	char reason[sizeof(qp->fail_reason)];
	int len, rc;

	switch (nvme_dhchap_result(&a->t)) {
	case NVME_DHCHAP_RES_SUCCESS:
		DEBUGLOG(nvme, "%s: authenticated (DH-HMAC-CHAP %s, %s)\n", qp->name,
			 nvme_auth_hash_name(a->t.hash), nvme_auth_dhgroup_name(a->t.dhgroup));
		qpair_auth_free(qp);
		qpair_go_live(qp);
		return;
	case NVME_DHCHAP_RES_FAILED:
		snprintf(reason, sizeof(reason), "DH-HMAC-CHAP failed: %s (%s, 0x%x)",
			 a->t.why != NULL ? a->t.why : "?", nvme_auth_rce_str(a->t.rce), a->t.rce);
		nvme_qpair_fail(qp, -EACCES, reason);
		return;
	default:
		break;
	}
	memset(&sqe, 0, sizeof(sqe));
	cmd = (struct nvme_auth_cmd *)&sqe;
	cmd->opc = NVME_OPC_FABRICS;
	cmd->flags = NVME_CMD_FLAGS_SGL;
	cmd->secp = NVME_AUTH_SECP;
	cmd->spsp0 = NVME_AUTH_SPSP;
	cmd->spsp1 = NVME_AUTH_SPSP;
	a->receiving = nvme_dhchap_host_receiving(&a->t);
	memset(a->buf, 0, sizeof(a->buf));
	if (a->receiving) {
		cmd->fctype = NVME_FCTYPE_AUTH_RECV;
		len = (int)sizeof(a->buf);
	} else {
		cmd->fctype = NVME_FCTYPE_AUTH_SEND;
		len = nvme_dhchap_host_next(&a->t, a->buf, sizeof(a->buf));
		if (len <= 0) {
			nvme_qpair_fail(qp, -EPROTO, "DH-HMAC-CHAP: no message to send");
			return;
		}
	}
	cmd->len = (uint32_t)len;
	req->local_iov.iov_base = a->buf;
	req->local_iov.iov_len = (size_t)len;
	req_init(qp, req, &sqe, &req->local_iov, 1, 0, (uint32_t)len, qpair_auth_cpl, qp);
	rc = qpair_send(qp, req);
	if (rc != 0) {
		nvme_qpair_fail(qp, rc, "cannot send an Authentication command");
	}
}

/*
 * After a successful Connect: 1 if authentication started (the queue goes
 * live when it succeeds), 0 if none is needed, or -EACCES (the queue failed).
 */
static int
qpair_auth_start(struct nvme_qpair *qp, bool required)
{
	const struct nvme_ctrlr_opts *opts = &qp->ctrlr->opts;
	struct nvme_dhchap_params p = { 0 };
	uint32_t seqnum = 0;

	if (!required) {
		if (opts->dhchap_ctrlr_key.len > 0) {
			/* The controller's identity was to be checked: an impostor would not ask. */
			nvme_qpair_fail(qp, -EACCES,
					"the controller does not ask for DH-HMAC-CHAP, and a "
					"dhchap_ctrlr_key is set: its identity cannot be checked");
			return -EACCES;
		}
		return 0;
	}
	if (opts->dhchap_key.len == 0) {
		nvme_qpair_fail(qp, -EACCES,
				"the controller requires DH-HMAC-CHAP and no dhchap_key is set");
		return -EACCES;
	}
	qpair_auth_free(qp);
	qp->auth = calloc(1, sizeof(*qp->auth));
	if (qp->auth == NULL || nvme_auth_random(&seqnum, sizeof(seqnum)) != 0) {
		nvme_qpair_fail(qp, -ENOMEM, "cannot start DH-HMAC-CHAP");
		return -EACCES;
	}
	p.hostnqn = qp->ctrlr->opts.hostnqn;
	p.subnqn = qp->ctrlr->trid.subnqn;
	p.host_key = opts->dhchap_key;
	p.ctrlr_key = opts->dhchap_ctrlr_key;
	p.digests = opts->dhchap_digests != 0 ? opts->dhchap_digests : NVME_AUTH_DIGESTS_ALL;
	p.dhgroups = opts->dhchap_dhgroups != 0 ? opts->dhchap_dhgroups : NVME_AUTH_DHGROUPS_ALL;
	nvme_dhchap_host_init(&qp->auth->t, &p, qp->qid, seqnum);
	explicit_bzero(&p, sizeof(p));
	qpair_auth_step(qp);
	return 1;
}

static void
qpair_connect_cpl(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct nvme_qpair *qp = cb_arg;
	char reason[sizeof(qp->fail_reason)];
	uint16_t status = cpl->status & ~NVME_STATUS_P;

	/* A failing queue completes the Connect too; that failure is reported already. */
	if (qp->state != QPAIR_CONNECTING) {
		return;
	}
	if (!NVME_STATUS_IS_SUCCESS(status)) {
		qpair_connect_failed(qp, cpl, status);
		return;
	}
	if (qp->is_admin) {
		qp->cntlid = (uint16_t)cpl->cdw0;
	} else if ((uint16_t)cpl->cdw0 != qp->cntlid) {
		/* Not the controller the admin queue set up: this queue is someone else's. */
		snprintf(reason, sizeof(reason),
			 "Fabrics Connect of an I/O queue answered with cntlid %u, not %u",
			 (uint16_t)cpl->cdw0, qp->cntlid);
		nvme_qpair_fail(qp, -EPROTO, reason);
		return;
	}
	if (qpair_auth_start(qp, (cpl->cdw0 & NVME_CONNECT_RSP_ATR) != 0) != 0) {
		return;
	}
	qpair_go_live(qp);
}

/* Put a request on the wire (or on the queue of a connecting queue pair). */
static int
qpair_send(struct nvme_qpair *qp, struct nvme_request *req)
{
	int rc;

	if (qp->state == QPAIR_CONNECTING && req != qp->connect_req) {
		req->state = REQ_QUEUED;
		TAILQ_INSERT_TAIL(&qp->queued, req, link);
		return 0;
	}
	req->state = REQ_OUTSTANDING;
	TAILQ_INSERT_TAIL(&qp->outstanding, req, link);
	qp->num_outstanding++;
	rc = qp->ops->submit(qp, req);
	if (rc != 0) {
		TAILQ_REMOVE(&qp->outstanding, req, link);
		qp->num_outstanding--;
		req->state = REQ_FREE;
	}
	return rc;
}

static void
req_init(struct nvme_qpair *qp, struct nvme_request *req, const struct nvme_cmd *cmd,
	 const struct iovec *iov, int iovcnt, size_t iov_offset, uint32_t data_len, nvme_cmd_cb cb,
	 void *cb_arg)
{
	/* A new use of the slot: the count above the slot bits moves on (and wraps). */
	req->cid = (uint16_t)(req->cid + qp->cid_slot_mask + 1u);
	req->cmd = *cmd;
	req->cmd.cid = req->cid;
	req->cb = cb;
	req->cb_arg = cb_arg;
	req->iov = iov;
	req->iovcnt = iovcnt;
	req->iov_offset = iov_offset;
	req->data_len = data_len;
	req->timed_out = false;
	if (data_len == 0) {
		req->xfer = NVME_XFER_NONE;
	} else if (cmd->opc == NVME_OPC_FABRICS) {
		/* A Fabrics command's type encodes its direction as an opcode does. */
		req->xfer = nvme_opc_data_xfer(((const struct nvme_fabrics_cmd *)cmd)->fctype);
	} else {
		req->xfer = nvme_opc_data_xfer(cmd->opc);
	}
	req->deadline = qp->cmd_timeout_ticks != 0 ? ticks_get() + qp->cmd_timeout_ticks : 0;
}

int
nvme_qpair_submit(struct nvme_qpair *qp, const struct nvme_cmd *cmd, const struct iovec *iov,
		  int iovcnt, size_t iov_offset, uint32_t data_len, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_request *req;
	int rc;

	if (unlikely(qp->state != QPAIR_LIVE)) {
		if (qp->state == QPAIR_DISCONNECTED &&
		    (qp->is_admin || !nvme_ctrlr_io_qpair_kick(qp))) {
			return -ENXIO;
		}
	}
	req = TAILQ_FIRST(&qp->free_reqs);
	if (unlikely(req == NULL)) {
		return -ENOMEM;
	}
	if (unlikely(data_len > 0 && nvme_opc_data_xfer(cmd->opc) == NVME_XFER_BIDIRECTIONAL &&
		     cmd->opc != NVME_OPC_FABRICS)) {
		return -EINVAL;
	}
	TAILQ_REMOVE(&qp->free_reqs, req, link);
	req_init(qp, req, cmd, iov, iovcnt, iov_offset, data_len, cb, cb_arg);
	rc = qpair_send(qp, req);
	if (unlikely(rc != 0)) {
		TAILQ_INSERT_HEAD(&qp->free_reqs, req, link);
	}
	return rc;
}

int
nvme_qpair_submit_buf(struct nvme_qpair *qp, const struct nvme_cmd *cmd, void *buf, uint32_t len,
		      nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_request *req;
	int rc;

	/*
	 * The iovec must outlive the call: it lives in the request. Take the
	 * slot the submit will take, which is the head of the free list.
	 */
	req = TAILQ_FIRST(&qp->free_reqs);
	if (req == NULL) {
		return qp->state == QPAIR_LIVE ? -ENOMEM : -ENXIO;
	}
	req->local_iov.iov_base = buf;
	req->local_iov.iov_len = len;
	rc = nvme_qpair_submit(qp, cmd, len > 0 ? &req->local_iov : NULL, len > 0 ? 1 : 0, 0, len,
			       cb, cb_arg);
	return rc;
}

int
nvme_qpair_connect(struct nvme_qpair *qp, uint16_t cntlid, uint32_t gen)
{
	int rc;

	if (qp->state != QPAIR_DISCONNECTED) {
		return -EBUSY;
	}
	qp->state = QPAIR_CONNECTING;
	qp->cntlid = cntlid;
	qp->gen = gen;
	qp->fail_reason[0] = '\0';
	qp->timed_out_seen = false;
	qp->connect_deadline = ticks_get() +
			       us_to_ticks((uint64_t)qp->ctrlr->opts.connect_timeout_ms * 1000);
	rc = qp->ops->connect(qp);
	if (rc != 0) {
		qp->state = QPAIR_DISCONNECTED;
		return rc;
	}
	return 0;
}

void
nvme_qpair_transport_ready(struct nvme_qpair *qp)
{
	struct nvme_ctrlr *ctrlr = qp->ctrlr;
	struct nvme_request *req = qp->connect_req;
	struct nvme_cmd cmd;
	int rc;

	nvme_cmd_build_connect(&cmd, qp->qid, (uint16_t)(qp->num_entries - 1),
			       ctrlr->opts.keep_alive_timeout_ms);
	nvme_connect_data_build(qp->connect_data, ctrlr->opts.hostid,
				qp->is_admin ? NVME_CNTLID_DYNAMIC : qp->cntlid, ctrlr->trid.subnqn,
				ctrlr->opts.hostnqn);
	req->local_iov.iov_base = qp->connect_data;
	req->local_iov.iov_len = sizeof(*qp->connect_data);
	req_init(qp, req, &cmd, &req->local_iov, 1, 0, sizeof(*qp->connect_data), qpair_connect_cpl,
		 qp);
	rc = qpair_send(qp, req);
	if (rc != 0) {
		nvme_qpair_fail(qp, rc, "cannot send the Fabrics Connect command");
	}
}

struct nvme_request *
nvme_qpair_find_req(struct nvme_qpair *qp, uint16_t cid)
{
	uint32_t slot = cid & qp->cid_slot_mask;
	struct nvme_request *req;

	if (unlikely(slot > qp->num_reqs)) {
		return NULL;
	}
	req = nvme_qpair_req(qp, slot);
	return req->state == REQ_OUTSTANDING && req->cid == cid ? req : NULL;
}

void
nvme_qpair_complete(struct nvme_qpair *qp, struct nvme_request *req, const struct nvme_cpl *cpl)
{
	nvme_cmd_cb cb = req->cb;
	void *cb_arg = req->cb_arg;
	struct nvme_cpl done = *cpl;

	if (req->state == REQ_OUTSTANDING) {
		TAILQ_REMOVE(&qp->outstanding, req, link);
		qp->num_outstanding--;
	} else if (req->state == REQ_QUEUED) {
		TAILQ_REMOVE(&qp->queued, req, link);
	}
	req->state = REQ_FREE;
	if (req != qp->connect_req) {
		/* Most recently used first: its cache lines are warm. */
		TAILQ_INSERT_HEAD(&qp->free_reqs, req, link);
	}
	done.cid = req->cid;
	nvme_qpair_hold(qp);
	cb(cb_arg, &done);
	nvme_qpair_release(qp);
}

void
nvme_qpair_disconnect(struct nvme_qpair *qp, uint16_t status)
{
	TAILQ_HEAD(, nvme_request) failed = TAILQ_HEAD_INITIALIZER(failed);
	struct nvme_request *req;
	struct nvme_cpl cpl;

	if (qp->state == QPAIR_DISCONNECTED) {
		return;
	}
	qp->state = QPAIR_DISCONNECTED;
	qp->ops->disconnect(qp);

	/* Detach both lists first: a callback may submit again (and fail fast). */
	TAILQ_CONCAT(&failed, &qp->outstanding, link);
	TAILQ_CONCAT(&failed, &qp->queued, link);
	qp->num_outstanding = 0;
	nvme_qpair_hold(qp);
	while ((req = TAILQ_FIRST(&failed)) != NULL) {
		TAILQ_REMOVE(&failed, req, link);
		req->state = REQ_FREE;
		memset(&cpl, 0, sizeof(cpl));
		cpl.sqid = qp->qid;
		cpl.status = req->timed_out ? NVME_STATUS_ABORTED_BY_HOST : status;
		nvme_qpair_complete(qp, req, &cpl);
	}
	nvme_qpair_release(qp);
}

void
nvme_qpair_fail(struct nvme_qpair *qp, int rc, const char *reason)
{
	enum nvme_qpair_state was = qp->state;

	if (was == QPAIR_DISCONNECTED) {
		return;
	}
	/*
	 * The host refused the controller (its Failure2 on the way) and the
	 * controller hung up first: the refusal is the reason, not the hang-up.
	 */
	if (qp->auth != NULL && nvme_dhchap_result(&qp->auth->t) == NVME_DHCHAP_RES_FAILED &&
	    qp->auth->t.is_host && qp->auth->t.why != NULL && rc != -EACCES) {
		snprintf(qp->fail_reason, sizeof(qp->fail_reason),
			 "DH-HMAC-CHAP failed: %s (%s, 0x%x)", qp->auth->t.why,
			 nvme_auth_rce_str(qp->auth->t.rce), qp->auth->t.rce);
		rc = -EACCES;
		reason = NULL;
	}
	if (reason != NULL && reason != qp->fail_reason) {
		snprintf(qp->fail_reason, sizeof(qp->fail_reason), "%s", reason);
	}
	if (qp->fail_reason[0] == '\0') {
		snprintf(qp->fail_reason, sizeof(qp->fail_reason), "%s", strerror(-rc));
	}
	DEBUGLOG(nvme, "%s: %s: %s\n", qp->name,
		 was == QPAIR_CONNECTING ? "connect failed" : "connection lost", qp->fail_reason);
	/* Before the completions: I/O they resubmit must not reconnect this association. */
	qp->has_failed = true;
	qp->failed_gen = qp->gen;
	nvme_qpair_hold(qp);
	nvme_qpair_disconnect(qp, NVME_STATUS_HOST_PATH_ERROR);
	if (!qp->free_pending) {
		if (was == QPAIR_CONNECTING) {
			qp->connect_done(qp, rc);
		} else {
			qp->lost(qp, rc);
		}
	}
	nvme_qpair_release(qp);
}

static int
qpair_poll(void *ctx)
{
	struct nvme_qpair *qp = ctx;
	struct nvme_request *req;
	uint64_t now;

	if (qp->free_pending) {
		return POLLER_IDLE;
	}
	if (qp->state == QPAIR_CONNECTING) {
		now = ticks_get();
		if (now > qp->connect_deadline) {
			nvme_qpair_fail(qp, -ETIMEDOUT, "connect timed out");
			return POLLER_BUSY;
		}
	} else if (qp->state == QPAIR_LIVE) {
		req = TAILQ_FIRST(&qp->outstanding);
		if (req != NULL && req->deadline != 0) {
			now = ticks_get();
			if (now > req->deadline) {
				req->timed_out = true;
				qp->timed_out_seen = true;
				ERRLOG("nvme %s: cid %u opcode 0x%02x nsid %u timed out after %" PRIu64
				       " ms; disconnecting\n",
				       qp->name, req->cid, req->cmd.opc, req->cmd.nsid,
				       ticks_to_us(qp->cmd_timeout_ticks) / 1000);
				nvme_qpair_fail(qp, -ETIMEDOUT, "command timed out");
				return POLLER_BUSY;
			}
		}
	}
	if (!qp->is_admin) {
		nvme_ctrlr_io_qpair_poll(qp);
	}
	return POLLER_IDLE;
}

bool
nvme_qpair_is_connected(const struct nvme_qpair *qp)
{
	return qp->state == QPAIR_LIVE;
}
