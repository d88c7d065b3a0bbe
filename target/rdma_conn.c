/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/RDMA connections of the target: queue set-up and accept (app thread),
 * command capsules, data movement and responses (the poll group's thread),
 * and teardown. See rdma.c for connection management.
 *
 * Receive: every command capsule slot the host may fill (hsqsize + 1) has a
 * RECV posted with a buffer of 64 bytes plus the in-capsule data size, all
 * before the connection is accepted. A capsule's RECV is posted again as soon
 * as the command no longer needs the buffer: at once when its data is not in
 * the capsule, after the command completes when it is.
 *
 * Data: a keyed SGL data block names host memory. Host-to-controller data is
 * pulled with RDMA READs into buffers from the transport's mempool, and the
 * command runs when the last READ completes; controller-to-host data is
 * pushed after the command with RDMA WRITEs chained in front of the response
 * SEND, in one ibv_post_send. Every work request is signaled; a request is
 * recycled when its SEND completes. Work requests are limited by the send
 * queue's size and READs by the initiator depth negotiated at connect time;
 * requests that do not fit wait in order, as do requests that find the buffer
 * pool empty. Nothing is allocated per command.
 *
 * Memory: capsules, responses and data buffers all lie in the env arena,
 * registered once per device (rdma.c), so the lkey of any of them is the
 * device's one MR key.
 *
 * Idle: each connection has a CQ with its own completion channel, whose fd is
 * watched by the poll group's thread. While completions keep coming the
 * group's poller polls the CQ; when a poll finds nothing the CQ is armed
 * (ibv_req_notify_cq), polled once more for what raced the arming, and left
 * to the fd, so an idle target sleeps.
 *
 * Teardown: a disconnect moves the QP to the error state, so every posted
 * work request comes back (flushed, which is ordinary); the core detaches the
 * qpair; when both are done the poll group lets go and the app thread, which
 * owns the CM id, destroys the queues.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"

#include "nvmf_internal.h"
#include "rdma_internal.h"

static void rq_close(struct rdma_qpair *rq);
static void rq_try_finish(struct rdma_qpair *rq);
static void sq_drain(struct rdma_qpair *rq);

static struct rdma_qpair *
to_rq(struct nvmf_qpair *qpair)
{
	return container_of(qpair, struct rdma_qpair, qpair);
}

static struct rdma_req *
to_rdma_req(struct nvmf_request *req)
{
	return container_of(req, struct rdma_req, req);
}

static void
rq_hold(struct rdma_qpair *rq)
{
	rq->holds++;
}

static void
rq_unhold(struct rdma_qpair *rq)
{
	if (--rq->holds == 0) {
		rq_try_finish(rq);
	}
}

static void
rq_activate(struct rdma_qpair *rq)
{
	if (!rq->active && rq->state != RQ_DONE) {
		rq->active = true;
		TAILQ_INSERT_TAIL(&rq->group->active, rq, active_link);
	}
}

static void
rq_deactivate(struct rdma_qpair *rq)
{
	if (rq->active) {
		rq->active = false;
		TAILQ_REMOVE(&rq->group->active, rq, active_link);
	}
}

/*
 * Receives.
 */

static int
recv_post(struct rdma_qpair *rq, struct rdma_recv *rv)
{
	struct ibv_recv_wr *bad;
	int rc;

	rv->wr.next = NULL;
	rc = ibv_post_recv(rq->qp, &rv->wr, &bad);
	if (rc != 0) {
		return -rc;
	}
	rq->recvs_posted++;
	return 0;
}

/* The capsule buffer is free again: give it back to the host. */
static void
recv_repost(struct rdma_qpair *rq, struct rdma_recv *rv)
{
	int rc;

	if (rq->state != RQ_RUNNING) {
		return;
	}
	rc = recv_post(rq, rv);
	if (rc != 0) {
		WARNLOG("nvmf rdma: qpair %u (%s): cannot post a receive: %s\n", rq->qpair.id,
			rq->peer, strerror(-rc));
		rq_close(rq);
	}
}

/*
 * Requests.
 */

static void
rdma_req_release(struct rdma_req *req)
{
	struct rdma_qpair *rq = req->rq;

	switch (req->state) {
	case RREQ_FREE:
		return;
	case RREQ_NEED_READ:
	case RREQ_NEED_SEND:
		TAILQ_REMOVE(&rq->sq_wait, req, link);
		break;
	default:
		break;
	}
	nvmf_tgroup_req_put_bufs(&rq->group->base, &req->req);
	/* A capsule still held belongs to a closing connection: it is not posted again. */
	req->recv = NULL;
	req->state = RREQ_FREE;
	TAILQ_INSERT_HEAD(&rq->free_reqs, req, link);
	rq->num_busy--;
	rq_try_finish(rq);
}

/* Lay out the READ/WRITE work requests of the data buffers the request holds. */
static void
rdma_req_map_bufs(struct rdma_req *req)
{
	struct rdma_qpair *rq = req->rq;
	uint32_t unit = rq->rt->base.opts.io_unit_size, len = req->req.length;
	uint32_t max_sge = rq->dev->max_sge, lkey = rq->dev->mr->lkey, off = 0, i, j, w;
	struct nvmf_rdma_xfer_plan plan;
	struct ibv_send_wr *wr;

	nvmf_rdma_xfer_plan(len, unit, max_sge, &plan);
	for (i = 0; i < plan.nbufs; i++) {
		req->sges[i].addr = (uintptr_t)req->req.bufs[i];
		req->sges[i].length = (uint32_t)req->req.buf_iov[i].iov_len;
		req->sges[i].lkey = lkey;
	}
	for (w = 0, i = 0; w < plan.nwrs; w++, i += max_sge) {
		uint32_t cnt = GGA_MIN(max_sge, plan.nbufs - i);

		wr = &req->wrs[w];
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = (uintptr_t)&req->data_ref;
		wr->sg_list = &req->sges[i];
		wr->num_sge = (int)cnt;
		wr->opcode = req->req.xfer == NVME_XFER_HOST_TO_CTRLR ? IBV_WR_RDMA_READ :
									IBV_WR_RDMA_WRITE;
		wr->send_flags = IBV_SEND_SIGNALED;
		wr->wr.rdma.remote_addr = req->sgl.raddr + off;
		wr->wr.rdma.rkey = req->sgl.rkey;
		for (j = 0; j < cnt; j++) {
			off += req->sges[i + j].length;
		}
	}
	req->nwrs = plan.nwrs;
	req->next_wr = 0;
}

static void
rdma_req_exec(struct rdma_req *req)
{
	req->state = RREQ_EXEC;
	nvmf_request_exec(&req->req);
}

static void
rdma_req_fail(struct rdma_req *req, uint16_t status)
{
	req->state = RREQ_EXEC;
	nvmf_request_fail(&req->req, status);
}

/* Buffers in hand: pull the host's data, or run a read. */
static void
rdma_req_have_bufs(struct rdma_req *req)
{
	struct rdma_qpair *rq = req->rq;

	if (req->req.xfer == NVME_XFER_HOST_TO_CTRLR) {
		req->state = RREQ_NEED_READ;
		TAILQ_INSERT_TAIL(&rq->sq_wait, req, link);
		sq_drain(rq);
	} else {
		rdma_req_exec(req);
	}
}

void
nvmf_rdma_req_bufs_ready(struct nvmf_request *nreq)
{
	struct rdma_req *req = to_rdma_req(nreq);
	struct rdma_qpair *rq = req->rq;

	/* From the group's poller too: the connection stays while the request moves on. */
	rq_hold(rq);
	rdma_req_map_bufs(req);
	rdma_req_have_bufs(req);
	rq_unhold(rq);
}

/*
 * Post the chain first..last (count work requests). Returns how many the
 * device took; on a partial post the connection is closed.
 */
static uint32_t
post_chain(struct rdma_qpair *rq, struct ibv_send_wr *first, uint32_t count)
{
	struct ibv_send_wr *bad = NULL, *wr;
	uint32_t posted = 0;
	int rc;

	rc = ibv_post_send(rq->qp, first, &bad);
	if (rc == 0) {
		posted = count;
	} else {
		for (wr = first; wr != NULL && wr != bad; wr = wr->next) {
			posted++;
		}
		WARNLOG("nvmf rdma: qpair %u (%s): cannot post a send: %s\n", rq->qpair.id,
			rq->peer, strerror(rc));
	}
	rq->sq_free -= posted;
	rq->sends_out += posted;
	return posted;
}

/* Post up to n more READs of a request. Returns false if posting failed. */
static bool
post_reads(struct rdma_req *req, uint32_t n)
{
	struct rdma_qpair *rq = req->rq;
	uint32_t i, posted;

	for (i = 0; i < n; i++) {
		req->wrs[req->next_wr + i].next = i + 1 < n ? &req->wrs[req->next_wr + i + 1] :
							      NULL;
	}
	posted = post_chain(rq, &req->wrs[req->next_wr], n);
	req->next_wr += posted;
	req->wrs_out += posted;
	rq->reads_free -= posted;
	rq->group->reads += posted;
	return posted == n;
}

/* Post the response, behind the WRITEs of a successful read. */
static bool
post_response(struct rdma_req *req)
{
	struct rdma_qpair *rq = req->rq;
	const struct nvmf_request *nreq = &req->req;
	struct ibv_send_wr *first = &req->rsp_wr;
	uint32_t n = 1, posted, i;

	*req->rsp = nreq->rsp;
	memset(&req->rsp_wr, 0, sizeof(req->rsp_wr));
	req->rsp_wr.wr_id = (uintptr_t)&req->send_ref;
	req->rsp_wr.sg_list = &req->rsp_sge;
	req->rsp_wr.num_sge = 1;
	req->rsp_wr.send_flags = IBV_SEND_SIGNALED;
	if (req->sgl.invalidate) {
		/* The host asked us to invalidate its key with the response. */
		req->rsp_wr.opcode = IBV_WR_SEND_WITH_INV;
		req->rsp_wr.invalidate_rkey = req->sgl.rkey;
	} else {
		req->rsp_wr.opcode = IBV_WR_SEND;
	}
	if (NVME_STATUS_IS_SUCCESS(nreq->rsp.status) && nreq->xfer == NVME_XFER_CTRLR_TO_HOST &&
	    req->nwrs > 0) {
		for (i = 0; i < req->nwrs; i++) {
			req->wrs[i].next = i + 1 < req->nwrs ? &req->wrs[i + 1] : &req->rsp_wr;
		}
		first = &req->wrs[0];
		n += req->nwrs;
		rq->group->writes += req->nwrs;
	}
	req->state = RREQ_SENDING;
	posted = post_chain(rq, first, n);
	req->wrs_out += posted;
	rq->group->sends++;
	return posted == n;
}

/* Post what the send queue and the initiator depth allow, in arrival order. */
static void
sq_drain(struct rdma_qpair *rq)
{
	struct rdma_req *req;
	uint32_t n;

	while (rq->state == RQ_RUNNING && (req = TAILQ_FIRST(&rq->sq_wait)) != NULL) {
		if (req->state == RREQ_NEED_READ) {
			n = GGA_MIN(req->nwrs - req->next_wr, GGA_MIN(rq->sq_free, rq->reads_free));
			if (n == 0) {
				rq->group->sq_waits++;
				return;
			}
			if (req->next_wr + n == req->nwrs) {
				TAILQ_REMOVE(&rq->sq_wait, req, link);
				req->state = RREQ_READING;
			}
			if (!post_reads(req, n)) {
				rq_close(rq);
				return;
			}
		} else {
			n = 1 + (NVME_STATUS_IS_SUCCESS(req->req.rsp.status) &&
						 req->req.xfer == NVME_XFER_CTRLR_TO_HOST ?
					 req->nwrs :
					 0);
			if (rq->sq_free < n) {
				rq->group->sq_waits++;
				return;
			}
			TAILQ_REMOVE(&rq->sq_wait, req, link);
			if (!post_response(req)) {
				rq_close(rq);
				return;
			}
		}
	}
}

/*
 * Capsules.
 */

static void
rdma_handle_capsule(struct rdma_qpair *rq, struct rdma_recv *rv)
{
	struct rdma_req *req = TAILQ_FIRST(&rq->free_reqs);
	uint32_t icd_len;
	uint16_t status;

	if (rv->byte_len < sizeof(struct nvme_cmd)) {
		/* Not even a command: the host broke the protocol. */
		WARNLOG("nvmf rdma: qpair %u (%s): %u-byte capsule; closing\n", rq->qpair.id,
			rq->peer, rv->byte_len);
		rq->group->bad_capsules++;
		rq_close(rq);
		return;
	}
	TAILQ_REMOVE(&rq->free_reqs, req, link);
	rq->num_busy++;
	req->recv = NULL;
	req->req.nbufs = 0;
	req->nwrs = 0;
	req->next_wr = 0;
	req->wrs_out = 0;
	req->wr_error = false;
	memcpy(&req->req.cmd, rv->buf, sizeof(req->req.cmd));
	req->req.qpair = &rq->qpair;
	req->req.xfer = nvmf_cmd_xfer(&req->req.cmd);
	req->req.iov = NULL;
	req->req.iovcnt = 0;
	req->req.length = 0;
	icd_len = rv->byte_len - (uint32_t)sizeof(struct nvme_cmd);
	status = nvmf_rdma_sgl_parse(&req->req.cmd, icd_len, rq->icd_size,
				     rq->rt->base.opts.max_io_size, &req->sgl);
	if (status != 0) {
		DEBUGLOG(nvmf_rdma, "qpair %u: cid %u: bad SGL (status 0x%x)\n", rq->qpair.id,
			 req->req.cmd.cid, status);
		req->state = RREQ_EXEC;
		recv_repost(rq, rv);
		rdma_req_fail(req, status);
		return;
	}
	req->req.length = req->sgl.length;
	if (req->sgl.icd && req->sgl.length > 0) {
		/* The data stays in the capsule until the command completes. */
		rq->group->icd_cmds++;
		req->recv = rv;
		req->icd_iov.iov_base = rv->buf + sizeof(struct nvme_cmd) + req->sgl.icd_offset;
		req->icd_iov.iov_len = req->sgl.length;
		req->req.iov = &req->icd_iov;
		req->req.iovcnt = 1;
		rdma_req_exec(req);
		return;
	}
	req->state = RREQ_EXEC;
	recv_repost(rq, rv);
	if (rq->state != RQ_RUNNING) {
		rdma_req_release(req);
		return;
	}
	if (req->sgl.length == 0) {
		rdma_req_exec(req);
		return;
	}
	req->state = RREQ_NEED_BUF;
	nvmf_tgroup_req_get_bufs(&rq->group->base, &req->req);
}

/* Capsules that arrived while every request was busy. */
static void
pending_drain(struct rdma_qpair *rq)
{
	struct rdma_recv *rv;

	while (rq->state == RQ_RUNNING && !TAILQ_EMPTY(&rq->free_reqs) &&
	       (rv = STAILQ_FIRST(&rq->pending)) != NULL) {
		STAILQ_REMOVE_HEAD(&rq->pending, link);
		rdma_handle_capsule(rq, rv);
	}
}

/*
 * Completions.
 */

static void
handle_wc(struct rdma_qpair *rq, const struct ibv_wc *wc)
{
	enum rdma_wr_kind *kind = (enum rdma_wr_kind *)(uintptr_t)wc->wr_id;
	bool ok = wc->status == IBV_WC_SUCCESS;
	struct rdma_wr_ref *ref;
	struct rdma_recv *rv;
	struct rdma_req *req;

	if (!ok && wc->status != IBV_WC_WR_FLUSH_ERR) {
		rq->group->completion_errors++;
		WARNLOG("nvmf rdma: qpair %u (%s): work request failed: %s\n", rq->qpair.id,
			rq->peer, ibv_wc_status_str(wc->status));
	}
	if (*kind == RDMA_WR_RECV) {
		rv = container_of(kind, struct rdma_recv, kind);
		rq->recvs_posted--;
		if (!ok) {
			rq_close(rq);
			return;
		}
		if (rq->state != RQ_RUNNING) {
			return;
		}
		rq->group->recvs++;
		rv->byte_len = wc->byte_len;
		if (!STAILQ_EMPTY(&rq->pending) || TAILQ_EMPTY(&rq->free_reqs)) {
			STAILQ_INSERT_TAIL(&rq->pending, rv, link);
			return;
		}
		rdma_handle_capsule(rq, rv);
		return;
	}
	ref = container_of(kind, struct rdma_wr_ref, kind);
	req = ref->req;
	rq->sends_out--;
	rq->sq_free++;
	if (*kind == RDMA_WR_DATA && req->req.xfer == NVME_XFER_HOST_TO_CTRLR) {
		rq->reads_free++;
	}
	req->wrs_out--;
	if (!ok) {
		req->wr_error = true;
		rq_close(rq);
	}
	if (rq->state != RQ_RUNNING) {
		if (req->wrs_out == 0 && req->state != RREQ_EXEC) {
			rdma_req_release(req);
		}
		return;
	}
	if (req->wrs_out > 0) {
		return;
	}
	if (req->state == RREQ_READING) {
		rdma_req_exec(req);
	} else if (req->state == RREQ_SENDING) {
		rdma_req_release(req);
	}
}

static int
poll_cq(struct rdma_qpair *rq)
{
	struct ibv_wc wc[RDMA_POLL_BATCH];
	int n, i;

	n = ibv_poll_cq(rq->cq, RDMA_POLL_BATCH, wc);
	if (n < 0) {
		ERRLOG("nvmf rdma: qpair %u (%s): cannot poll the completion queue\n", rq->qpair.id,
		       rq->peer);
		rq_close(rq);
		return 0;
	}
	for (i = 0; i < n; i++) {
		handle_wc(rq, &wc[i]);
	}
	return n;
}

/* Poll the connection's CQ; arm it when it runs dry. Returns the completions handled. */
static int
rq_process(struct rdma_qpair *rq)
{
	int n, total;

	if (rq->state == RQ_DONE) {
		return 0;
	}
	total = n = poll_cq(rq);
	if (rq->state == RQ_RUNNING) {
		sq_drain(rq);
		pending_drain(rq);
	}
	if (n == 0 && rq->state != RQ_DONE) {
		/* Nothing more: arm the CQ, then poll once more for what raced the arming. */
		if (ibv_req_notify_cq(rq->cq, 0) != 0) {
			return 0;
		}
		n = poll_cq(rq);
		total += n;
		if (n == 0) {
			rq_deactivate(rq);
		}
	}
	return total;
}

static int
cq_event(void *ctx, uint32_t events)
{
	struct rdma_qpair *rq = ctx;
	struct ibv_cq *cq;
	void *cq_ctx;

	rq_hold(rq);
	while (ibv_get_cq_event(rq->channel, &cq, &cq_ctx) == 0) {
		rq->cq_events_unacked++;
		rq->group->cq_events++;
	}
	if (rq->cq_events_unacked >= RDMA_CQ_ACK_BATCH) {
		ibv_ack_cq_events(rq->cq, rq->cq_events_unacked);
		rq->cq_events_unacked = 0;
	}
	rq_activate(rq);
	rq_process(rq);
	rq_unhold(rq);
	return POLLER_BUSY;
}

int
nvmf_rdma_group_poll(struct nvmf_transport_poll_group *tg)
{
	struct rdma_group *group = container_of(tg, struct rdma_group, base);
	struct rdma_qpair *rq, *tmp;
	int busy = POLLER_IDLE;

	TAILQ_FOREACH_SAFE(rq, &group->active, active_link, tmp) {
		rq_hold(rq);
		if (rq_process(rq) > 0) {
			busy = POLLER_BUSY;
		}
		rq_unhold(rq);
	}
	if (!TAILQ_EMPTY(&group->active)) {
		busy = POLLER_BUSY;
	}
	return busy;
}

/*
 * Teardown (poll group thread).
 */

static void pg_done_msg(void *arg);

static void
rq_fini_done(struct nvmf_qpair *qpair)
{
	struct rdma_qpair *rq = to_rq(qpair);

	rq->fini_done = true;
	rq_try_finish(rq);
}

/* Forget the work requests that never came back (a device that stopped answering). */
static int
close_timeout(void *arg)
{
	struct rdma_qpair *rq = arg;
	uint32_t i;

	poller_unregister(&rq->close_timer);
	if (rq->recvs_posted > 0 || rq->sends_out > 0) {
		WARNLOG("nvmf rdma: qpair %u (%s): %u receives and %u sends never completed\n",
			rq->qpair.id, rq->peer, rq->recvs_posted, rq->sends_out);
	}
	rq_hold(rq);
	rq->recvs_posted = 0;
	rq->sends_out = 0;
	for (i = 0; i < rq->num_reqs; i++) {
		struct rdma_req *req = &rq->reqs[i];

		req->wrs_out = 0;
		if (req->state != RREQ_FREE && req->state != RREQ_EXEC) {
			rdma_req_release(req);
		}
	}
	rq_unhold(rq);
	return POLLER_BUSY;
}

static void
rq_close(struct rdma_qpair *rq)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	uint32_t i;

	if (rq->state != RQ_RUNNING) {
		return;
	}
	DEBUGLOG(nvmf_rdma, "qpair %u (%s): closing\n", rq->qpair.id, rq->peer);
	rq_hold(rq);
	rq->state = RQ_CLOSED;
	/* Tell the host; in the error state every posted work request comes back flushed. */
	rdma_disconnect(rq->id);
	ibv_modify_qp(rq->qp, &attr, IBV_QP_STATE);
	STAILQ_INIT(&rq->pending);
	for (i = 0; i < rq->num_reqs; i++) {
		struct rdma_req *req = &rq->reqs[i];

		if (req->state == RREQ_FREE || req->state == RREQ_EXEC) {
			continue;
		}
		if (req->wrs_out == 0) {
			rdma_req_release(req);
		} else if (req->state == RREQ_NEED_READ || req->state == RREQ_NEED_SEND) {
			/* Some of its work requests are out: wait for them, off the queue. */
			TAILQ_REMOVE(&rq->sq_wait, req, link);
			req->state = RREQ_SENDING;
		}
	}
	rq->close_timer = poller_register(close_timeout, rq, RDMA_CLOSE_TIMEOUT_US,
					  "nvmf_rdma_close");
	rq_activate(rq);
	if (!rq->fini_started) {
		rq->fini_started = true;
		nvmf_qpair_fini(&rq->qpair, rq_fini_done);
	}
	rq_unhold(rq);
}

static void
rq_try_finish(struct rdma_qpair *rq)
{
	if (rq->state != RQ_CLOSED || !rq->fini_done || rq->num_busy > 0 || rq->recvs_posted > 0 ||
	    rq->sends_out > 0 || rq->holds > 0) {
		return;
	}
	rq->state = RQ_DONE;
	poller_unregister(&rq->close_timer);
	rq_deactivate(rq);
	thread_fd_unregister(&rq->ev);
	TAILQ_REMOVE(&rq->group->qpairs, rq, link);
	rq->group->base.num_conns--;
	DEBUGLOG(nvmf_rdma, "qpair %u (%s): closed\n", rq->qpair.id, rq->peer);
	nvmf_qpair_release(&rq->qpair);
	/* The CM id and the queues belong to the app thread. */
	nvmf_send_msg_or_spin(thread_get_app(), pg_done_msg, rq);
}

/*
 * Core callbacks.
 */

void
nvmf_rdma_req_complete(struct nvmf_request *nreq)
{
	struct rdma_req *req = to_rdma_req(nreq);
	struct rdma_qpair *rq = req->rq;
	struct rdma_recv *rv = req->recv;

	rq_hold(rq);
	if (rv != NULL && rq->state == RQ_RUNNING) {
		/* Free the capsule before the host can learn the command is done. */
		req->recv = NULL;
		recv_repost(rq, rv);
	}
	if (rq->state != RQ_RUNNING) {
		rdma_req_release(req);
	} else {
		req->state = RREQ_NEED_SEND;
		TAILQ_INSERT_TAIL(&rq->sq_wait, req, link);
		sq_drain(rq);
	}
	rq_unhold(rq);
}

void
nvmf_rdma_qpair_disconnect(struct nvmf_qpair *qpair)
{
	rq_close(to_rq(qpair));
}

/*
 * Hand-over between the app thread (CM) and the poll group thread.
 */

static void app_try_destroy(struct rdma_qpair *rq);

static void
pg_done_msg(void *arg)
{
	struct rdma_qpair *rq = arg;

	rq->app_pg_done = true;
	app_try_destroy(rq);
}

static void
disc_ack_msg(void *arg)
{
	struct rdma_qpair *rq = arg;

	rq->app_disc_acked = true;
	app_try_destroy(rq);
}

/* A CM event said the connection is gone (poll group thread). */
static void
disconnect_msg(void *arg)
{
	struct rdma_qpair *rq = arg;

	if (rq->state == RQ_RUNNING) {
		rq_hold(rq);
		rq_close(rq);
		rq_unhold(rq);
	}
	nvmf_send_msg_or_spin(thread_get_app(), disc_ack_msg, rq);
}

void
nvmf_rdma_conn_cm_disconnect(struct rdma_qpair *rq)
{
	if (rq->app_pg_done || rq->app_disc_sent) {
		return;
	}
	rq->app_disc_sent = true;
	nvmf_send_msg_or_spin(nvmf_poll_group_get_thread(rq->pg), disconnect_msg, rq);
}

/* The connection on its poll group thread. */
static void
start_msg(void *arg)
{
	struct rdma_qpair *rq = arg;
	struct nvmf_transport_poll_group *tg;

	tg = nvmf_poll_group_get_tgroup(rq->pg, &rq->rt->base);
	/* A connection that arrives while the target stops is not taken. */
	if (tg == NULL ||
	    __atomic_load_n(&g_nvmf_tgt.state, __ATOMIC_SEQ_CST) != NVMF_TGT_RUNNING) {
		goto out_disconnect;
	}
	rq->group = container_of(tg, struct rdma_group, base);
	rq->ev = thread_fd_register(rq->channel->fd, THREAD_FD_IN, cq_event, rq, "nvmf_rdma_cq");
	if (rq->ev == NULL) {
		ERRLOG("nvmf rdma: cannot watch the completion channel of %s\n", rq->peer);
		goto out_disconnect;
	}
	nvmf_qpair_init(&rq->qpair, &rq->rt->base, rq->pg, &rq->listen, rq->peer);
	rq->state = RQ_RUNNING;
	TAILQ_INSERT_TAIL(&rq->group->qpairs, rq, link);
	rq->group->base.num_conns++;
	DEBUGLOG(nvmf_rdma, "qpair %u: connection from %s on %s:%s (qid %u, %u capsules)\n",
		 rq->qpair.id, rq->peer, rq->listen.traddr, rq->listen.trsvcid, rq->cm_qid,
		 rq->num_recvs);
	/* Capsules may have come already: poll before waiting for the channel. */
	rq_activate(rq);
	return;

out_disconnect:
	rdma_disconnect(rq->id);
	rq->state = RQ_DONE;
	nvmf_send_msg_or_spin(thread_get_app(), pg_done_msg, rq);
}

/*
 * Set-up and destruction (app thread).
 */

/* Free what conn_setup created (not the CM id). */
static void
conn_free(struct rdma_qpair *rq)
{
	if (rq->qp != NULL) {
		rdma_destroy_qp(rq->id);
	}
	if (rq->cq != NULL) {
		if (rq->cq_events_unacked > 0) {
			ibv_ack_cq_events(rq->cq, rq->cq_events_unacked);
		}
		ibv_destroy_cq(rq->cq);
	}
	if (rq->channel != NULL) {
		ibv_destroy_comp_channel(rq->channel);
	}
	env_dma_free(rq->capsule_area);
	env_dma_free(rq->rsp_area);
	free(rq->recvs);
	free(rq->reqs);
	free(rq->iov_area);
	free(rq->buf_area);
	free(rq->wr_area);
	free(rq->sge_area);
	/* A connection that never reached the core gives its admission back here. */
	nvmf_tgt_conn_gone(rq->qpair.admit_portid);
	free(rq);
}

void
nvmf_rdma_conn_destroy(struct rdma_qpair *rq)
{
	struct rdma_cm_id *id = rq->id;

	if (!rq->app_pg_done) {
		WARNLOG("nvmf rdma: destroying connection from %s while its poll group holds it\n",
			rq->peer);
	}
	TAILQ_REMOVE(&rq->rt->conns, rq, conn_link);
	id->context = NULL;
	conn_free(rq);
	rdma_destroy_id(id);
}

static void
app_try_destroy(struct rdma_qpair *rq)
{
	if (rq->app_pg_done && (!rq->app_disc_sent || rq->app_disc_acked)) {
		nvmf_rdma_conn_destroy(rq);
	}
}

static int
conn_alloc(struct rdma_qpair *rq, uint32_t max_wrs)
{
	struct rdma_transport *rt = rq->rt;
	uint32_t capsule = nvmf_rdma_capsule_size(rq->icd_size), max_bufs = rt->max_bufs, i;
	struct env_mem_region region;
	uint32_t lkey = rq->dev->mr->lkey;

	rq->recvs = calloc(rq->num_recvs, sizeof(*rq->recvs));
	rq->reqs = calloc(rq->num_reqs, sizeof(*rq->reqs));
	rq->iov_area = calloc((size_t)rq->num_reqs * max_bufs, sizeof(*rq->iov_area));
	rq->buf_area = calloc((size_t)rq->num_reqs * max_bufs, sizeof(*rq->buf_area));
	rq->sge_area = calloc((size_t)rq->num_reqs * max_bufs, sizeof(*rq->sge_area));
	rq->wr_area = calloc((size_t)rq->num_reqs * max_wrs, sizeof(*rq->wr_area));
	rq->capsule_area = env_dma_malloc((size_t)rq->num_recvs * capsule, 64);
	rq->rsp_area = env_dma_malloc((size_t)rq->num_reqs * sizeof(struct nvme_cpl), 64);
	if (rq->recvs == NULL || rq->reqs == NULL || rq->iov_area == NULL || rq->buf_area == NULL ||
	    rq->sge_area == NULL || rq->wr_area == NULL || rq->capsule_area == NULL ||
	    rq->rsp_area == NULL) {
		return -ENOMEM;
	}
	/* Both come from the registered arena; check once here rather than per I/O. */
	if (env_mem_find_region(rq->capsule_area, (size_t)rq->num_recvs * capsule, &region) != 0 ||
	    env_mem_find_region(rq->rsp_area, (size_t)rq->num_reqs * sizeof(struct nvme_cpl),
				&region) != 0) {
		return -EFAULT;
	}
	STAILQ_INIT(&rq->pending);
	for (i = 0; i < rq->num_recvs; i++) {
		struct rdma_recv *rv = &rq->recvs[i];

		rv->kind = RDMA_WR_RECV;
		rv->rq = rq;
		rv->buf = rq->capsule_area + (size_t)i * capsule;
		rv->sge.addr = (uintptr_t)rv->buf;
		rv->sge.length = capsule;
		rv->sge.lkey = lkey;
		rv->wr.wr_id = (uintptr_t)&rv->kind;
		rv->wr.sg_list = &rv->sge;
		rv->wr.num_sge = 1;
	}
	TAILQ_INIT(&rq->free_reqs);
	TAILQ_INIT(&rq->sq_wait);
	for (i = 0; i < rq->num_reqs; i++) {
		struct rdma_req *req = &rq->reqs[i];

		req->rq = rq;
		req->state = RREQ_FREE;
		req->req.qpair = &rq->qpair;
		req->req.buf_iov = rq->iov_area + (size_t)i * max_bufs;
		req->req.bufs = rq->buf_area + (size_t)i * max_bufs;
		req->sges = rq->sge_area + (size_t)i * max_bufs;
		req->wrs = rq->wr_area + (size_t)i * max_wrs;
		req->data_ref.kind = RDMA_WR_DATA;
		req->data_ref.req = req;
		req->send_ref.kind = RDMA_WR_SEND;
		req->send_ref.req = req;
		req->rsp = &rq->rsp_area[i];
		req->rsp_sge.addr = (uintptr_t)req->rsp;
		req->rsp_sge.length = sizeof(struct nvme_cpl);
		req->rsp_sge.lkey = lkey;
		TAILQ_INSERT_TAIL(&rq->free_reqs, req, link);
	}
	return 0;
}

uint16_t
nvmf_rdma_conn_accept(struct rdma_transport *rt, struct rdma_listener *l, struct rdma_cm_id *id,
		      const struct nvmf_rdma_cm_params *params, const struct rdma_conn_param *peer,
		      uint16_t admit_portid)
{
	struct nvme_rdma_cm_rep rep = { .recfmt = NVME_RDMA_CM_RECFMT_1_0 };
	struct rdma_conn_param accept = { 0 };
	struct ibv_qp_init_attr qp_attr = { 0 };
	struct nvmf_poll_group *pg;
	struct rdma_device *dev;
	struct rdma_qpair *rq;
	uint32_t max_wrs, sq_size, cq_size, i;
	int flags;

	dev = nvmf_rdma_device_get(rt, id->verbs);
	pg = nvmf_tgt_next_poll_group();
	if (dev == NULL || pg == NULL) {
		return NVME_RDMA_CM_NO_RSC;
	}
	/*
	 * The CM reports the peer's values from our side: initiator_depth is
	 * what the host lets us have outstanding (its responder resources).
	 */
	if (peer->initiator_depth == 0 || dev->attr.max_qp_init_rd_atom <= 0) {
		/* Without READ credits host writes could not move. */
		return NVME_RDMA_CM_INVALID_ORD;
	}
	rq = calloc(1, sizeof(*rq));
	if (rq == NULL) {
		return NVME_RDMA_CM_NO_RSC;
	}
	rq->kind = RDMA_ID_QPAIR;
	rq->rt = rt;
	rq->dev = dev;
	rq->id = id;
	rq->pg = pg;
	rq->listen = l->addr;
	rq->state = RQ_INIT;
	rq->cm_qid = params->qid;
	nvmf_sockaddr_str(rdma_get_peer_addr(id), rq->peer, sizeof(rq->peer));
	rq->num_recvs = params->sq_entries;
	/* Responses still being sent when the host has already sent the next commands. */
	rq->num_reqs = 2 * params->sq_entries;
	rq->icd_size = nvmf_rdma_queue_icd(params->qid, rt->base.opts.in_capsule_data_size);
	max_wrs = (rt->max_bufs + dev->max_sge - 1) / dev->max_sge;
	sq_size = GGA_MIN(rq->num_reqs * (max_wrs + 1), (uint32_t)dev->attr.max_qp_wr);
	cq_size = GGA_MIN(sq_size + rq->num_recvs, (uint32_t)dev->attr.max_cqe);
	if (sq_size < max_wrs + 1 || rq->num_recvs > (uint32_t)dev->attr.max_qp_wr) {
		ERRLOG("nvmf rdma: device queues too small for a connection from %s\n", rq->peer);
		goto out_free_conn;
	}
	if (conn_alloc(rq, max_wrs) != 0) {
		ERRLOG("nvmf rdma: no memory for a connection from %s\n", rq->peer);
		goto out_free_conn;
	}
	rq->channel = ibv_create_comp_channel(id->verbs);
	if (rq->channel == NULL) {
		goto out_free_conn;
	}
	flags = fcntl(rq->channel->fd, F_GETFL);
	if (flags < 0 || fcntl(rq->channel->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		goto out_free_conn;
	}
	rq->cq = ibv_create_cq(id->verbs, (int)cq_size, rq, rq->channel, 0);
	if (rq->cq == NULL) {
		ERRLOG("nvmf rdma: cannot create a %u-entry CQ for %s\n", cq_size, rq->peer);
		goto out_free_conn;
	}
	qp_attr.qp_context = rq;
	qp_attr.send_cq = rq->cq;
	qp_attr.recv_cq = rq->cq;
	qp_attr.qp_type = IBV_QPT_RC;
	qp_attr.cap.max_send_wr = sq_size;
	qp_attr.cap.max_recv_wr = rq->num_recvs;
	qp_attr.cap.max_send_sge = dev->max_sge;
	qp_attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, dev->pd, &qp_attr) != 0) {
		ERRLOG("nvmf rdma: cannot create a QP for %s: %s\n", rq->peer, strerror(errno));
		goto out_free_conn;
	}
	rq->qp = id->qp;
	rq->sq_free = GGA_MIN(sq_size, qp_attr.cap.max_send_wr);
	rq->max_reads = GGA_MIN((uint32_t)peer->initiator_depth,
				(uint32_t)dev->attr.max_qp_init_rd_atom);
	rq->reads_free = rq->max_reads;
	for (i = 0; i < rq->num_recvs; i++) {
		if (recv_post(rq, &rq->recvs[i]) != 0) {
			ERRLOG("nvmf rdma: cannot post receives for %s\n", rq->peer);
			goto out_free_conn;
		}
	}
	rep.crqsize = (uint16_t)rq->num_recvs;
	accept.private_data = &rep;
	accept.private_data_len = sizeof(rep);
	accept.responder_resources = (uint8_t)GGA_MIN((uint32_t)peer->responder_resources,
						      (uint32_t)dev->attr.max_qp_rd_atom);
	accept.initiator_depth = (uint8_t)rq->max_reads;
	accept.rnr_retry_count = 7;
	accept.flow_control = 1;
	id->context = &rq->kind;
	if (rdma_accept(id, &accept) != 0) {
		ERRLOG("nvmf rdma: cannot accept the connection from %s: %s\n", rq->peer,
		       strerror(errno));
		id->context = NULL;
		goto out_free_conn;
	}
	rq->qpair.admit_portid = admit_portid;
	TAILQ_INSERT_TAIL(&rt->conns, rq, conn_link);
	nvmf_send_msg_or_spin(nvmf_poll_group_get_thread(pg), start_msg, rq);
	return 0;

out_free_conn:
	conn_free(rq);
	return NVME_RDMA_CM_NO_RSC;
}
