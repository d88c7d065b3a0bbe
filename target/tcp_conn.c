/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP connections of the target: the receive and transmit state
 * machines and the per-connection requests (see tcp.c for the picture).
 *
 * Receive: bytes are read into a per-connection staging buffer and parsed by
 * a small state machine (common header, rest of header and its digest,
 * padding, data, data digest), so a PDU may arrive in any number of pieces.
 * Large data skips the staging buffer and is read straight into its
 * destination. In-capsule data lands in a per-request area of the
 * connection; data moved by R2T/H2CData and C2HData uses buffers from the
 * transport's mempool (the env arena, which an RDMA transport can register).
 *
 * Transmit: PDUs queue on the connection and go out with sendmsg() of up to
 * 64 iovecs at a time (header, padding, data buffers, digest); the poll
 * group's poller flushes connections that have something queued, and EPOLLOUT
 * takes over when the socket is full.
 *
 * Protocol errors end the connection with a C2HTermReq carrying the fatal
 * error status; other connections are not affected. A data digest error
 * fails the command with Transient Transport Error and keeps the connection.
 *
 * Admission before allocation: an accepted connection costs only its
 * struct tcp_qpair (no TLS state until the first bytes come, no requests,
 * no staging buffer) until its Fabrics Connect arrives; then one request
 * (the Connect, then the AUTH exchange) until the queue is live and, where
 * the host must authenticate, authenticated: admitted. Its next command
 * gives it as many requests as the Connect's SQSIZE asked (within
 * max_aq_depth or max_queue_depth) and its staging buffer. Until admitted
 * the connection is pending: each poll group holds
 * at most its share of max_pending_connections pending connections per
 * listener, and a new one pushes the oldest out, so connections that never
 * finish cannot lock newcomers out. The TLS handshake and the ICReq must
 * finish within handshake_timeout_ms of the accept.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/nvme_tcp.h"
#include "gga/util.h"

#include "nvmf_internal.h"
#include "tcp_internal.h"

/* Zeros for the padding before C2H data. */
static const uint8_t g_zero_pad[4 * (NVME_TCP_MAX_PDA + 1)];

static void tq_close(struct tcp_qpair *tq);
static void tq_try_free(struct tcp_qpair *tq);
static void tq_unpend(struct tcp_qpair *tq);
static void tx_flush(struct tcp_qpair *tq);

static struct tcp_qpair *
to_tq(struct nvmf_qpair *qpair)
{
	return container_of(qpair, struct tcp_qpair, qpair);
}

static struct tcp_req *
to_tcp_req(struct nvmf_request *req)
{
	return container_of(req, struct tcp_req, req);
}

static void
tq_hold(struct tcp_qpair *tq)
{
	tq->holds++;
}

static void
tq_unhold(struct tcp_qpair *tq)
{
	if (--tq->holds == 0) {
		tq_try_free(tq);
	}
}

/*
 * Socket events.
 */

static void
tq_update_events(struct tcp_qpair *tq)
{
	uint32_t mask;

	if (tq->state == TQ_CLOSED || tq->ev == NULL) {
		return;
	}
	mask = THREAD_FD_IN;
	if (!TAILQ_EMPTY(&tq->tx_queue) || nvme_tls_sock_want_write(tq->tls)) {
		mask |= THREAD_FD_OUT;
	}
	if (mask != tq->ev_mask) {
		if (thread_fd_modify(tq->ev, mask) != 0) {
			ERRLOG("nvmf tcp: qpair %u (%s): cannot change socket events\n",
			       tq->qpair.id, tq->qpair.peer);
			tq_close(tq);
			return;
		}
		tq->ev_mask = mask;
	}
}

/*
 * Requests.
 */

static void
tcp_req_release(struct tcp_req *req)
{
	struct tcp_qpair *tq = req->tq;

	if (req->state == TREQ_FREE) {
		return;
	}
	nvmf_tgroup_req_put_bufs(&tq->group->base, &req->req);
	req->state = TREQ_FREE;
	TAILQ_INSERT_HEAD(&tq->free_reqs, req, link);
	tq->num_busy--;
	tq_try_free(tq);
}

static void
tcp_req_exec(struct tcp_req *req)
{
	req->state = TREQ_EXEC;
	nvmf_request_exec(&req->req);
}

static void
tcp_req_fail(struct tcp_req *req, uint16_t status)
{
	req->state = TREQ_EXEC;
	nvmf_request_fail(&req->req, status);
}

/*
 * Transmit.
 */

static void
queue_pdu(struct tcp_qpair *tq, struct tcp_pdu *pdu)
{
	if (pdu->queued) {
		/*
		 * Inserting a queued element again makes the transmit list a cycle
		 * and tx_flush() spin forever: drop the connection instead.
		 */
		ERRLOG("nvmf tcp: qpair %u (%s): PDU type %u queued twice; closing the connection\n",
		       tq->qpair.id, tq->qpair.peer, pdu->hdr.ch.pdu_type);
		assert(!pdu->queued);
		tq_close(tq);
		return;
	}
	pdu->sent = 0;
	pdu->queued = true;
	TAILQ_INSERT_TAIL(&tq->tx_queue, pdu, link);
	if (!tq->in_dirty) {
		tq->in_dirty = true;
		TAILQ_INSERT_TAIL(&tq->group->dirty, tq, dirty_link);
	}
}

static void
hdr_init(struct tcp_qpair *tq, struct tcp_pdu *pdu, uint8_t type, uint8_t hlen)
{
	memset(&pdu->hdr, 0, hlen);
	pdu->hdr.ch.pdu_type = type;
	pdu->hdr.ch.hlen = hlen;
	if (tq->hdgst) {
		pdu->hdr.ch.flags |= NVME_TCP_F_HDGST;
	}
}

/* Seal a header-only PDU: plen, header digest, one iovec. */
static void
hdr_only_finish(struct tcp_qpair *tq, struct tcp_pdu *pdu)
{
	uint32_t hlen = pdu->hdr.ch.hlen;
	uint32_t total = hlen + (tq->hdgst ? NVME_TCP_DIGEST_LEN : 0);
	uint32_t crc;

	pdu->hdr.ch.plen = total;
	if (tq->hdgst) {
		crc = nvme_tcp_hdgst(&pdu->hdr, hlen);
		memcpy(pdu->hdr.raw + hlen, &crc, sizeof(crc));
	}
	pdu->iov[0].iov_base = &pdu->hdr;
	pdu->iov[0].iov_len = total;
	pdu->iovcnt = 1;
	pdu->len = total;
}

static void
rsp_sent(struct tcp_qpair *tq, struct tcp_pdu *pdu)
{
	tcp_req_release(pdu->req);
}

static void
queue_rsp(struct tcp_req *req)
{
	struct tcp_qpair *tq = req->tq;
	struct tcp_pdu *pdu = &req->rsp;

	hdr_init(tq, pdu, NVME_TCP_PDU_CAPSULE_RESP, NVME_TCP_RSP_HLEN);
	pdu->hdr.rsp.rccqe = req->req.rsp;
	hdr_only_finish(tq, pdu);
	pdu->done = rsp_sent;
	queue_pdu(tq, pdu);
}

static void queue_c2h(struct tcp_req *req);

static void
c2h_sent(struct tcp_qpair *tq, struct tcp_pdu *pdu)
{
	struct tcp_req *req = pdu->req;

	if (req->c2h_off < req->req.length) {
		queue_c2h(req);
	}
}

/* Add the iovecs of data [off, off + len) of req to pdu; returns the data's CRC if asked. */
static uint32_t
pdu_add_data(struct tcp_pdu *pdu, const struct iovec *iov, int iovcnt, uint32_t off, uint32_t len,
	     bool crc)
{
	uint32_t c = 0;
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		uint32_t seg = (uint32_t)iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = GGA_MIN(seg - off, len);
		pdu->iov[pdu->iovcnt].iov_base = (uint8_t *)iov[i].iov_base + off;
		pdu->iov[pdu->iovcnt].iov_len = n;
		pdu->iovcnt++;
		if (crc) {
			c = crc32c((uint8_t *)iov[i].iov_base + off, n, c);
		}
		len -= n;
		off = 0;
	}
	return c;
}

static void
queue_c2h(struct tcp_req *req)
{
	struct tcp_qpair *tq = req->tq;
	struct tcp_pdu *pdu = &req->pdu;
	struct nvme_tcp_data_hdr *h = &pdu->hdr.data;
	uint32_t chunk = GGA_MIN(TCP_C2H_MAX_DATA, req->req.length - req->c2h_off);
	uint32_t hd = tq->hdgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t pdo = nvme_tcp_pdo(NVME_TCP_DATA_HLEN, tq->hdgst, tq->hpda);
	bool last = req->c2h_off + chunk == req->req.length;
	uint32_t crc;

	hdr_init(tq, pdu, NVME_TCP_PDU_C2H_DATA, NVME_TCP_DATA_HLEN);
	if (tq->ddgst) {
		h->ch.flags |= NVME_TCP_F_DDGST;
	}
	if (last) {
		h->ch.flags |= NVME_TCP_F_DATA_LAST;
	}
	h->ch.pdo = (uint8_t)pdo;
	h->ch.plen = pdo + chunk + (tq->ddgst ? NVME_TCP_DIGEST_LEN : 0);
	h->cccid = req->req.cmd.cid;
	h->datao = req->c2h_off;
	h->datal = chunk;
	if (tq->hdgst) {
		crc = nvme_tcp_hdgst(h, NVME_TCP_DATA_HLEN);
		memcpy(pdu->hdr.raw + NVME_TCP_DATA_HLEN, &crc, sizeof(crc));
	}
	pdu->iov[0].iov_base = &pdu->hdr;
	pdu->iov[0].iov_len = NVME_TCP_DATA_HLEN + hd;
	pdu->iovcnt = 1;
	if (pdo > NVME_TCP_DATA_HLEN + hd) {
		pdu->iov[1].iov_base = (void *)g_zero_pad;
		pdu->iov[1].iov_len = pdo - NVME_TCP_DATA_HLEN - hd;
		pdu->iovcnt = 2;
	}
	crc = pdu_add_data(pdu, req->req.iov, req->req.iovcnt, req->c2h_off, chunk, tq->ddgst);
	if (tq->ddgst) {
		memcpy(pdu->ddgst, &crc, sizeof(crc));
		pdu->iov[pdu->iovcnt].iov_base = pdu->ddgst;
		pdu->iov[pdu->iovcnt].iov_len = NVME_TCP_DIGEST_LEN;
		pdu->iovcnt++;
	}
	pdu->len = h->ch.plen;
	pdu->done = last ? NULL : c2h_sent;
	req->c2h_off += chunk;
	queue_pdu(tq, pdu);
	if (last) {
		queue_rsp(req);
	}
}

static void
queue_r2t(struct tcp_req *req)
{
	struct tcp_qpair *tq = req->tq;
	struct tcp_pdu *pdu = &req->pdu;

	hdr_init(tq, pdu, NVME_TCP_PDU_R2T, NVME_TCP_R2T_HLEN);
	pdu->hdr.r2t.cccid = req->req.cmd.cid;
	pdu->hdr.r2t.ttag = req->ttag;
	pdu->hdr.r2t.r2to = 0;
	pdu->hdr.r2t.r2tl = req->req.length;
	hdr_only_finish(tq, pdu);
	pdu->done = NULL;
	req->state = TREQ_R2T;
	req->h2c_off = 0;
	queue_pdu(tq, pdu);
}

void
nvmf_tcp_req_bufs_ready(struct nvmf_request *nreq)
{
	struct tcp_req *req = to_tcp_req(nreq);

	if (req->req.xfer == NVME_XFER_HOST_TO_CTRLR) {
		queue_r2t(req);
	} else {
		tcp_req_exec(req);
	}
}

/* Send what the socket takes now. */
static void
tx_flush(struct tcp_qpair *tq)
{
	struct iovec iov[TCP_TX_IOV_MAX];
	struct tcp_pdu *pdu;
	int budget = TCP_TX_BUDGET;
	ssize_t n;
	int cnt, i;

	tq_hold(tq);
	while (tq->state != TQ_CLOSED && !TAILQ_EMPTY(&tq->tx_queue) && budget-- > 0) {
		cnt = 0;
		TAILQ_FOREACH(pdu, &tq->tx_queue, link) {
			uint32_t skip = pdu->sent;

			for (i = 0; i < pdu->iovcnt && cnt < TCP_TX_IOV_MAX; i++) {
				if (skip >= pdu->iov[i].iov_len) {
					skip -= (uint32_t)pdu->iov[i].iov_len;
					continue;
				}
				iov[cnt].iov_base = (uint8_t *)pdu->iov[i].iov_base + skip;
				iov[cnt].iov_len = pdu->iov[i].iov_len - skip;
				cnt++;
				skip = 0;
			}
			if (cnt == TCP_TX_IOV_MAX) {
				break;
			}
		}
		if (cnt == 0) {
			/* Queued PDUs with nothing left to send: a bug, and a sure spin. */
			ERRLOG("nvmf tcp: qpair %u (%s): transmit queue holds no bytes; closing\n",
			       tq->qpair.id, tq->qpair.peer);
			tq_close(tq);
			break;
		}
		n = nvme_sock_sendv(tq->fd, tq->tls, iov, cnt);
		if (n < 0) {
			if (n != -EAGAIN) {
				/* EPIPE, ECONNRESET, no progress...: the host is gone; never retry. */
				DEBUGLOG(nvmf_tcp, "qpair %u: send failed: %s\n", tq->qpair.id,
					 strerror((int)-n));
				tq_close(tq);
			}
			break;
		}
		while (n > 0 && (pdu = TAILQ_FIRST(&tq->tx_queue)) != NULL) {
			uint32_t left = pdu->len - pdu->sent;
			uint32_t take = (size_t)n < left ? (uint32_t)n : left;

			pdu->sent += take;
			n -= take;
			if (pdu->sent == pdu->len) {
				TAILQ_REMOVE(&tq->tx_queue, pdu, link);
				pdu->queued = false;
				if (pdu->done != NULL) {
					pdu->done(tq, pdu);
				}
			}
		}
	}
	if (tq->in_dirty) {
		TAILQ_REMOVE(&tq->group->dirty, tq, dirty_link);
		tq->in_dirty = false;
	}
	tq_update_events(tq);
	tq_unhold(tq);
}

/*
 * Connection teardown.
 */

static void
tq_fini_done(struct nvmf_qpair *qpair)
{
	struct tcp_qpair *tq = to_tq(qpair);

	tq->fini_done = true;
	tq_try_free(tq);
}

static void
tq_begin_fini(struct tcp_qpair *tq)
{
	if (!tq->fini_started) {
		tq->fini_started = true;
		nvmf_qpair_fini(&tq->qpair, tq_fini_done);
	}
}

static void
tq_close(struct tcp_qpair *tq)
{
	struct tcp_pdu *pdu;
	uint32_t i;

	if (tq->state == TQ_CLOSED) {
		return;
	}
	DEBUGLOG(nvmf_tcp, "qpair %u (%s): closing\n", tq->qpair.id, tq->qpair.peer);
	tq_hold(tq);
	tq->state = TQ_CLOSED;
	tq_unpend(tq);
	thread_fd_unregister(&tq->ev);
	nvme_tls_sock_free(tq->tls);
	tq->tls = NULL;
	close(tq->fd);
	tq->fd = -1;
	poller_unregister(&tq->linger);
	if (tq->in_dirty) {
		TAILQ_REMOVE(&tq->group->dirty, tq, dirty_link);
		tq->in_dirty = false;
	}
	while ((pdu = TAILQ_FIRST(&tq->tx_queue)) != NULL) {
		TAILQ_REMOVE(&tq->tx_queue, pdu, link);
		pdu->queued = false;
	}
	/* Requests the core does not hold are done; the core hands the rest back later. */
	for (i = 0; i < tq->num_reqs; i++) {
		if (tq->reqs[i].state != TREQ_FREE && tq->reqs[i].state != TREQ_EXEC) {
			tcp_req_release(&tq->reqs[i]);
		}
	}
	tq_begin_fini(tq);
	tq_unhold(tq);
}

static void
tq_try_free(struct tcp_qpair *tq)
{
	if (tq->state != TQ_CLOSED || !tq->fini_done || tq->num_busy > 0 || tq->holds > 0) {
		return;
	}
	TAILQ_REMOVE(&tq->group->qpairs, tq, link);
	tq->group->base.num_conns--;
	DEBUGLOG(nvmf_tcp, "qpair %u (%s): freed\n", tq->qpair.id, tq->qpair.peer);
	nvmf_qpair_release(&tq->qpair);
	free(tq->qpair.tls_identity);
	env_dma_free(tq->icd_area);
	free(tq->iov_area);
	free(tq->buf_area);
	free(tq->reqs);
	free(tq->rxbuf);
	free(tq);
}

static int
tq_linger_expired(void *arg)
{
	struct tcp_qpair *tq = arg;

	poller_unregister(&tq->linger);
	tq_close(tq);
	return POLLER_BUSY;
}

static void
term_sent(struct tcp_qpair *tq, struct tcp_pdu *pdu)
{
	/* The host has the reason; it closes, or the linger timer does. */
	if (!tq->write_shut && tq->fd >= 0) {
		shutdown(tq->fd, SHUT_WR);
		tq->write_shut = true;
	}
}

/*
 * A fatal protocol error: tell the host why with a C2HTermReq carrying the
 * offending header, stop processing input, and close.
 */
static void
tq_fatal(struct tcp_qpair *tq, const struct nvmf_tcp_fatal *err, const void *hdr, uint32_t hdr_len)
{
	struct nvme_tcp_term_req_hdr *t = (struct nvme_tcp_term_req_hdr *)tq->term_buf;
	uint32_t copy = GGA_MIN(hdr_len, NVME_TCP_TERM_REQ_MAX_DATA);

	if (tq->state >= TQ_TERMINATING) {
		return;
	}
	WARNLOG("nvmf tcp: qpair %u (%s): fatal protocol error (FES 0x%x, FEI %u); "
		"terminating the connection\n",
		tq->qpair.id, tq->qpair.peer, err->fes, err->fei);
	tq->state = TQ_TERMINATING;
	tq->rx_state = RX_DISCARD;
	tq->group->term_reqs_sent++;
	memset(t, 0, sizeof(*t));
	t->ch.pdu_type = NVME_TCP_PDU_C2H_TERM_REQ;
	t->ch.hlen = NVME_TCP_TERM_REQ_HLEN;
	t->ch.plen = NVME_TCP_TERM_REQ_HLEN + copy;
	t->fes = err->fes;
	nvme_tcp_term_req_set_fei(t, err->fei);
	memcpy(tq->term_buf + NVME_TCP_TERM_REQ_HLEN, hdr, copy);
	poller_unregister(&tq->linger);
	tq->term_iov[0].iov_base = tq->term_buf;
	tq->term_iov[0].iov_len = t->ch.plen;
	tq->term_pdu.hdr.ch = t->ch;
	tq->term_pdu.iov = tq->term_iov;
	tq->term_pdu.iovcnt = 1;
	tq->term_pdu.len = t->ch.plen;
	tq->term_pdu.done = term_sent;
	tq->term_pdu.req = NULL;
	queue_pdu(tq, &tq->term_pdu);
	if (tq->state == TQ_CLOSED) {
		return;
	}
	tq->linger = poller_register(tq_linger_expired, tq, TCP_LINGER_US, "nvmf_tcp_linger");
	if (tq->linger == NULL) {
		tq_close(tq);
		return;
	}
	/* The controller lets go of this queue now; its commands still come back. */
	tq_begin_fini(tq);
}

/*
 * Receive.
 */

static void
rx_reset(struct tcp_qpair *tq)
{
	tq->rx_state = RX_CH;
	tq->rx_got = 0;
	tq->rx_need = sizeof(struct nvme_tcp_common_hdr);
	tq->rx_req = NULL;
	tq->rx_iov = NULL;
	tq->rx_pdus++;
}

static void
rx_ctx(const struct tcp_qpair *tq, struct nvmf_tcp_rx_ctx *ctx)
{
	ctx->ic_done = tq->state != TQ_AWAIT_ICREQ;
	ctx->hdgst = tq->hdgst;
	ctx->ddgst = tq->ddgst;
	/* Until an I/O queue is connected, the admin limit applies (Connect data). */
	ctx->max_icd = tq->qpair.qid == 0 ? tq->tt->icd_size :
					    tq->tt->base.opts.in_capsule_data_size;
	ctx->maxh2cdata = tq->tt->maxh2cdata;
}

/* Set up the padding/data/digest stages for the PDU whose header was just handled. */
static void
rx_start_data(struct tcp_qpair *tq, struct tcp_req *req, struct iovec *iov, int iovcnt,
	      uint32_t off)
{
	tq->rx_req = req;
	tq->rx_iov = iov;
	tq->rx_iovcnt = iovcnt;
	tq->rx_data_off = off;
	tq->rx_crc = 0;
	if (tq->layout.pad_len > 0) {
		tq->rx_state = RX_PAD;
		tq->rx_left = tq->layout.pad_len;
	} else {
		tq->rx_state = RX_DATA;
		tq->rx_left = tq->layout.data_len;
	}
}

static void
capsule_ready(struct tcp_req *req)
{
	if (req->status != 0) {
		tcp_req_fail(req, req->status);
	} else if (!req->icd && req->req.length > 0) {
		req->state = TREQ_NEED_BUF;
		nvmf_tgroup_req_get_bufs(&req->tq->group->base, &req->req);
	} else {
		tcp_req_exec(req);
	}
}

static void
handle_icreq(struct tcp_qpair *tq)
{
	const struct nvme_tcp_icreq *icreq = &tq->rx_hdr.icreq;
	struct nvme_tcp_icresp *icresp = &tq->icresp_pdu.hdr.icresp;
	struct nvmf_tcp_fatal err;

	if (nvmf_tcp_icreq_check(icreq, &err) != 0) {
		tq_fatal(tq, &err, icreq, NVME_TCP_ICREQ_HLEN);
		return;
	}
	tq->hdgst = (icreq->dgst & NVME_TCP_DGST_HDR_ENABLE) != 0;
	tq->ddgst = (icreq->dgst & NVME_TCP_DGST_DATA_ENABLE) != 0;
	tq->hpda = icreq->hpda;
	memset(icresp, 0, sizeof(*icresp));
	icresp->ch.pdu_type = NVME_TCP_PDU_ICRESP;
	icresp->ch.hlen = NVME_TCP_ICRESP_HLEN;
	icresp->ch.plen = NVME_TCP_ICRESP_HLEN;
	icresp->pfv = NVME_TCP_PFV_1_0;
	icresp->cpda = 0;
	icresp->dgst = (uint8_t)((tq->hdgst ? NVME_TCP_DGST_HDR_ENABLE : 0) |
				 (tq->ddgst ? NVME_TCP_DGST_DATA_ENABLE : 0));
	icresp->maxh2cdata = tq->tt->maxh2cdata;
	tq->icresp_iov[0].iov_base = icresp;
	tq->icresp_iov[0].iov_len = NVME_TCP_ICRESP_HLEN;
	tq->icresp_pdu.iov = tq->icresp_iov;
	tq->icresp_pdu.iovcnt = 1;
	tq->icresp_pdu.len = NVME_TCP_ICRESP_HLEN;
	tq->icresp_pdu.done = NULL;
	tq->icresp_pdu.req = NULL;
	tq->state = TQ_RUNNING;
	/* From now on the clock runs for the Connect. */
	tq->since_tick = ticks_get();
	queue_pdu(tq, &tq->icresp_pdu);
	DEBUGLOG(nvmf_tcp, "qpair %u (%s): ICReq: hdgst %d ddgst %d hpda %u\n", tq->qpair.id,
		 tq->qpair.peer, tq->hdgst, tq->ddgst, tq->hpda);
	rx_reset(tq);
}

static int tq_alloc_reqs(struct tcp_qpair *tq, uint32_t n);
static void tq_free_reqs(struct tcp_qpair *tq);
static bool tq_admitted(const struct tcp_qpair *tq);

/*
 * The entries the queue needs, from its first command: a Connect's SQSIZE
 * + 1 within max_aq_depth (admin) or max_queue_depth (I/O); one for any other
 * command (which the core refuses before a Connect).
 */
static uint32_t
tq_entries(const struct tcp_qpair *tq, const struct nvme_cmd *cmd)
{
	const struct nvme_connect_cmd *cc = (const struct nvme_connect_cmd *)cmd;
	const struct nvmf_transport_opts *o = &tq->tt->base.opts;
	uint32_t n;

	if (cc->opc != NVME_OPC_FABRICS || cc->fctype != NVME_FCTYPE_CONNECT) {
		return 1;
	}
	n = (uint32_t)cc->sqsize + 1;
	return GGA_MIN(n, cc->qid == 0 ? o->max_aq_depth : o->max_queue_depth);
}

static void
tcp_handle_capsule(struct tcp_qpair *tq)
{
	struct tcp_req *req;
	struct nvmf_tcp_rx_ctx ctx;
	uint32_t len = 0, icd_off = 0, data_len = tq->layout.data_len;
	bool icd = false;

	if (tq->reqs == NULL) {
		/*
		 * The Connect (or whatever came first) says how many entries the
		 * queue wants; until it is admitted it has one, enough for the
		 * Connect and the AUTH exchange, which a host runs one at a time.
		 */
		tq->want_reqs = tq_entries(tq, (const struct nvme_cmd *)&tq->rx_hdr.cmd.ccsqe);
		if (tq_alloc_reqs(tq, 1) != 0) {
			ERRLOG("nvmf tcp: qpair %u (%s): no memory for a connection\n",
			       tq->qpair.id, tq->qpair.peer);
			tq_close(tq);
			return;
		}
	} else if (tq->num_reqs < tq->want_reqs && tq->num_busy == 0 && tq_admitted(tq)) {
		/* Admitted, and no request in use (none moves): the queue gets its entries. */
		tq_free_reqs(tq);
		if (tq_alloc_reqs(tq, tq->want_reqs) != 0 ||
		    (tq->rxbuf == NULL && (tq->rxbuf = malloc(TCP_RX_BUF_SIZE)) == NULL)) {
			ERRLOG("nvmf tcp: qpair %u (%s): no memory for a queue of %u entries\n",
			       tq->qpair.id, tq->qpair.peer, tq->want_reqs);
			tq_close(tq);
			return;
		}
	}
	req = TAILQ_FIRST(&tq->free_reqs);
	if (req == NULL) {
		/* More commands than the queue has entries: the host broke the contract. */
		struct nvmf_tcp_fatal err = { NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0 };

		tq_fatal(tq, &err, &tq->rx_hdr, tq->layout.hlen);
		return;
	}
	TAILQ_REMOVE(&tq->free_reqs, req, link);
	tq->num_busy++;
	req->state = TREQ_RECV;
	req->status = 0;
	req->h2c_off = 0;
	req->c2h_off = 0;
	req->req.nbufs = 0;
	memcpy(&req->req.cmd, &tq->rx_hdr.cmd.ccsqe, sizeof(req->req.cmd));
	req->req.qpair = &tq->qpair;
	req->req.xfer = nvmf_cmd_xfer(&req->req.cmd);
	req->req.iov = NULL;
	req->req.iovcnt = 0;
	rx_ctx(tq, &ctx);
	req->status = nvmf_tcp_sgl_parse(&req->req.cmd, data_len, ctx.max_icd,
					 tq->tt->base.opts.max_io_size, &len, &icd, &icd_off);
	req->icd = icd && req->status == 0;
	req->req.length = req->status == 0 ? len : 0;
	if (req->icd && len > 0) {
		req->icd_iov.iov_base = req->icd_buf + icd_off;
		req->icd_iov.iov_len = len;
		req->req.iov = &req->icd_iov;
		req->req.iovcnt = 1;
	}
	if (data_len == 0) {
		rx_reset(tq);
		capsule_ready(req);
		return;
	}
	/* In-capsule data always fits the request's area (checked in the common header). */
	tq->rx_icd_iov.iov_base = req->icd_buf;
	tq->rx_icd_iov.iov_len = data_len;
	rx_start_data(tq, req, req->status == 0 ? &tq->rx_icd_iov : NULL, 1, 0);
}

static void
handle_h2c(struct tcp_qpair *tq)
{
	const struct nvme_tcp_data_hdr *h = &tq->rx_hdr.data;
	struct nvmf_tcp_fatal err = { NVME_TCP_FES_INVALID_PDU_HDR_FIELD,
				      offsetof(struct nvme_tcp_data_hdr, ttag) };
	struct tcp_req *req;

	if (h->ttag >= tq->num_reqs || tq->reqs[h->ttag].state != TREQ_R2T) {
		tq_fatal(tq, &err, h, NVME_TCP_DATA_HLEN);
		return;
	}
	req = &tq->reqs[h->ttag];
	if (nvmf_tcp_h2c_check(h, &tq->layout, req->req.cmd.cid, req->h2c_off, req->req.length,
			       &err) != 0) {
		tq_fatal(tq, &err, h, NVME_TCP_DATA_HLEN);
		return;
	}
	rx_start_data(tq, req, req->req.iov, req->req.iovcnt, h->datao);
}

/* The whole header (and its digest) is in rx_hdr. */
static void
rx_header_done(struct tcp_qpair *tq)
{
	struct nvmf_tcp_fatal err = { NVME_TCP_FES_HDR_DIGEST_ERROR, 0 };

	if (tq->layout.hdgst_len > 0 && !nvmf_tcp_hdgst_ok(tq->rx_hdr.raw, tq->layout.hlen)) {
		tq->group->hdgst_errors++;
		tq_fatal(tq, &err, &tq->rx_hdr, tq->layout.hlen);
		return;
	}
	switch (tq->rx_hdr.ch.pdu_type) {
	case NVME_TCP_PDU_ICREQ:
		handle_icreq(tq);
		break;
	case NVME_TCP_PDU_H2C_TERM_REQ:
		NOTICELOG("nvmf tcp: qpair %u (%s): host terminated the connection (FES 0x%x)\n",
			  tq->qpair.id, tq->qpair.peer, tq->rx_hdr.term.fes);
		tq_close(tq);
		break;
	case NVME_TCP_PDU_CAPSULE_CMD:
		tcp_handle_capsule(tq);
		break;
	case NVME_TCP_PDU_H2C_DATA:
		handle_h2c(tq);
		break;
	default:
		break;
	}
}

/* All data of the current PDU (and its digest) has arrived. */
static void
rx_data_done(struct tcp_qpair *tq)
{
	struct tcp_req *req = tq->rx_req;
	uint32_t got;

	if (tq->layout.ddgst_len > 0) {
		memcpy(&got, tq->rx_ddgst, sizeof(got));
		if (got != tq->rx_crc && req->status == 0) {
			WARNLOG("nvmf tcp: qpair %u (%s): data digest error, cid %u\n",
				tq->qpair.id, tq->qpair.peer, req->req.cmd.cid);
			tq->group->ddgst_errors++;
			req->status = NVME_STATUS(NVME_SCT_GENERIC,
						  NVME_SC_TRANSIENT_TRANSPORT_ERROR);
		}
	}
	if (tq->rx_hdr.ch.pdu_type == NVME_TCP_PDU_CAPSULE_CMD) {
		rx_reset(tq);
		capsule_ready(req);
		return;
	}
	/* H2CData. */
	req->h2c_off += tq->layout.data_len;
	rx_reset(tq);
	if (req->h2c_off == req->req.length) {
		if (req->status != 0) {
			tcp_req_fail(req, req->status);
		} else {
			tcp_req_exec(req);
		}
	}
}

/* Copy n received bytes to the data destination at rx_data_off. */
static void
rx_store(struct tcp_qpair *tq, const uint8_t *src, uint32_t n)
{
	uint32_t off = tq->rx_data_off, left = n;
	int i;

	if (tq->ddgst) {
		tq->rx_crc = crc32c(src, n, tq->rx_crc);
	}
	tq->rx_data_off += n;
	if (tq->rx_iov == NULL) {
		return;
	}
	for (i = 0; i < tq->rx_iovcnt && left > 0; i++) {
		uint32_t seg = (uint32_t)tq->rx_iov[i].iov_len, k;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		k = GGA_MIN(seg - off, left);
		memcpy((uint8_t *)tq->rx_iov[i].iov_base + off, src, k);
		src += k;
		left -= k;
		off = 0;
	}
}

static void
rx_after_data(struct tcp_qpair *tq)
{
	if (tq->layout.ddgst_len > 0) {
		tq->rx_state = RX_DDGST;
		tq->rx_left = NVME_TCP_DIGEST_LEN;
	} else {
		rx_data_done(tq);
	}
}

/* Process the bytes in the staging buffer. */
static void
rx_consume(struct tcp_qpair *tq)
{
	struct nvmf_tcp_rx_ctx ctx;
	struct nvmf_tcp_fatal err;
	uint32_t avail, n;
	const uint8_t *p;

	while (tq->rx_off < tq->rx_len && tq->state != TQ_CLOSED) {
		p = tq->rx_cur + tq->rx_off;
		avail = tq->rx_len - tq->rx_off;
		switch (tq->rx_state) {
		case RX_CH:
		case RX_PSH:
			n = GGA_MIN(avail, tq->rx_need - tq->rx_got);
			memcpy(tq->rx_hdr.raw + tq->rx_got, p, n);
			tq->rx_got += n;
			tq->rx_off += n;
			if (tq->rx_got < tq->rx_need) {
				break;
			}
			if (tq->rx_state == RX_CH) {
				rx_ctx(tq, &ctx);
				if (nvmf_tcp_ch_check(&tq->rx_hdr.ch, &ctx, &tq->layout, &err) !=
				    0) {
					tq_fatal(tq, &err, &tq->rx_hdr, tq->rx_got);
					break;
				}
				tq->rx_state = RX_PSH;
				tq->rx_need = tq->layout.hlen + tq->layout.hdgst_len;
				/* A TermReq's data is part of what we read as its header. */
				if (tq->rx_hdr.ch.pdu_type == NVME_TCP_PDU_H2C_TERM_REQ) {
					tq->rx_need = tq->layout.hlen;
				}
				if (tq->rx_got < tq->rx_need) {
					break;
				}
			}
			rx_header_done(tq);
			break;
		case RX_PAD:
			n = GGA_MIN(avail, tq->rx_left);
			tq->rx_off += n;
			tq->rx_left -= n;
			if (tq->rx_left == 0) {
				tq->rx_state = RX_DATA;
				tq->rx_left = tq->layout.data_len;
			}
			break;
		case RX_DATA:
			n = GGA_MIN(avail, tq->rx_left);
			rx_store(tq, p, n);
			tq->rx_off += n;
			tq->rx_left -= n;
			if (tq->rx_left == 0) {
				rx_after_data(tq);
			}
			break;
		case RX_DDGST:
			n = GGA_MIN(avail, tq->rx_left);
			memcpy(tq->rx_ddgst + (NVME_TCP_DIGEST_LEN - tq->rx_left), p, n);
			tq->rx_off += n;
			tq->rx_left -= n;
			if (tq->rx_left == 0) {
				rx_data_done(tq);
			}
			break;
		case RX_DISCARD:
			tq->rx_off = tq->rx_len;
			break;
		}
	}
}

/* Read data straight into its destination. Returns > 0, 0 (would block), < 0 (closed). */
static int
rx_direct(struct tcp_qpair *tq)
{
	struct iovec iov[TCP_TX_IOV_MAX];
	uint32_t off = tq->rx_data_off, left = tq->rx_left;
	ssize_t n;
	int cnt = 0, i;

	for (i = 0; i < tq->rx_iovcnt && left > 0 && cnt < TCP_TX_IOV_MAX; i++) {
		uint32_t seg = (uint32_t)tq->rx_iov[i].iov_len, k;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		k = GGA_MIN(seg - off, left);
		iov[cnt].iov_base = (uint8_t *)tq->rx_iov[i].iov_base + off;
		iov[cnt].iov_len = k;
		cnt++;
		left -= k;
		off = 0;
	}
	n = nvme_sock_recvv(tq->fd, tq->tls, iov, cnt);
	if (n == -EAGAIN) {
		tq_update_events(tq);
		return 0;
	}
	if (n <= 0) {
		tq_close(tq);
		return -1;
	}
	if (tq->ddgst) {
		uint32_t rem = (uint32_t)n;

		for (i = 0; i < cnt && rem > 0; i++) {
			uint32_t k = (uint32_t)GGA_MIN(iov[i].iov_len, (size_t)rem);

			tq->rx_crc = crc32c(iov[i].iov_base, k, tq->rx_crc);
			rem -= k;
		}
	}
	tq->rx_data_off += (uint32_t)n;
	tq->rx_left -= (uint32_t)n;
	if (tq->rx_left == 0) {
		rx_after_data(tq);
	}
	return 1;
}

static void
rx_process(struct tcp_qpair *tq)
{
	/* Until admitted a connection has no staging buffer: ICReq, Connect, AUTH come through this. */
	uint8_t small[256];
	struct iovec iov;
	int budget = TCP_RX_BUDGET;
	ssize_t n;

	/* Bytes TLS holds already are read past the budget: no event would come for them. */
	while (tq->state != TQ_CLOSED && (budget-- > 0 || nvme_sock_pending(tq->tls))) {
		if (tq->rx_state == RX_DATA && tq->rx_iov != NULL &&
		    tq->rx_left >= TCP_DIRECT_READ_MIN) {
			if (rx_direct(tq) <= 0) {
				return;
			}
			continue;
		}
		iov.iov_base = tq->rxbuf != NULL ? tq->rxbuf : small;
		iov.iov_len = tq->rxbuf != NULL ? TCP_RX_BUF_SIZE : sizeof(small);
		n = nvme_sock_recvv(tq->fd, tq->tls, &iov, 1);
		if (n < 0) {
			if (n != -EAGAIN) {
				tq_close(tq);
			} else {
				tq_update_events(tq);
			}
			return;
		}
		if (n == 0) {
			DEBUGLOG(nvmf_tcp, "qpair %u (%s): host closed the connection\n",
				 tq->qpair.id, tq->qpair.peer);
			tq_close(tq);
			return;
		}
		tq->rx_cur = iov.iov_base;
		tq->rx_off = 0;
		tq->rx_len = (uint32_t)n;
		rx_consume(tq);
		tq->rx_off = tq->rx_len = 0;
		tq->rx_cur = NULL;
	}
}

/* The secure channel's handshake, before the ICReq. */
static void
tls_handshake(struct tcp_qpair *tq)
{
	char why[256] = "";
	int rc;

	/*
	 * TLS state only once the host has sent something: a silent socket costs
	 * none, and one that closes without a byte is no refused handshake.
	 */
	if (tq->tls == NULL) {
		uint8_t b;
		ssize_t n = recv(tq->fd, &b, 1, MSG_PEEK);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			return;
		}
		if (n <= 0) {
			DEBUGLOG(nvmf_tcp, "qpair %u (%s): closed before the TLS handshake\n",
				 tq->qpair.id, tq->qpair.peer);
			tq_close(tq);
			return;
		}
		if (nvme_tls_sock_server(tq->fd, nvmf_tls_psk_find, NULL, &tq->tls) != 0) {
			ERRLOG("nvmf tcp: qpair %u (%s): cannot set up TLS\n", tq->qpair.id,
			       tq->qpair.peer);
			tq_close(tq);
			return;
		}
	}
	rc = nvme_tls_sock_handshake(tq->tls, why, sizeof(why));
	if (rc == NVME_TLS_WANT_READ || rc == NVME_TLS_WANT_WRITE) {
		tq_update_events(tq);
		return;
	}
	if (rc < 0) {
		WARNLOG("nvmf tcp: qpair %u (%s): TLS handshake refused on %s:%s: %s\n",
			tq->qpair.id, tq->qpair.peer, tq->qpair.listen.traddr,
			tq->qpair.listen.trsvcid, why);
		tq->group->tls_refused++;
		tq_close(tq);
		return;
	}
	/* A handshake completes only with a PSK, so with the identity that found it. */
	if (nvme_tls_sock_identity(tq->tls) == NULL ||
	    (tq->qpair.tls_identity = strdup(nvme_tls_sock_identity(tq->tls))) == NULL) {
		tq_close(tq);
		return;
	}
	NOTICELOG("nvmf tcp: qpair %u (%s): secure channel up (%s), PSK identity %s\n",
		  tq->qpair.id, tq->qpair.peer, nvme_tls_sock_cipher(tq->tls),
		  LOG_ESC(tq->qpair.tls_identity));
	tq->state = TQ_AWAIT_ICREQ;
	tq->since_tick = ticks_get();
	tq_update_events(tq);
	/* The ICReq may have come with the handshake's last flight. */
	rx_process(tq);
}

static int
tq_event(void *ctx, uint32_t events)
{
	struct tcp_qpair *tq = ctx;

	tq_hold(tq);
	if (tq->state == TQ_TLS_HANDSHAKE) {
		tls_handshake(tq);
		tq_unhold(tq);
		return POLLER_BUSY;
	}
	if ((events & THREAD_FD_OUT) && tq->state != TQ_CLOSED) {
		tx_flush(tq);
		if (nvme_tls_sock_want_write(tq->tls) && tq->state != TQ_CLOSED) {
			/* A TLS read waited for the socket to take its answer. */
			rx_process(tq);
		}
	}
	if ((events & (THREAD_FD_IN | THREAD_FD_HUP | THREAD_FD_ERR)) && tq->state != TQ_CLOSED) {
		rx_process(tq);
	}
	if (tq->state != TQ_CLOSED && !TAILQ_EMPTY(&tq->tx_queue)) {
		tx_flush(tq);
	}
	tq_unhold(tq);
	return POLLER_BUSY;
}

/*
 * Core callbacks.
 */

void
nvmf_tcp_req_complete(struct nvmf_request *nreq)
{
	struct tcp_req *req = to_tcp_req(nreq);
	struct tcp_qpair *tq = req->tq;

	if (tq->state >= TQ_TERMINATING) {
		tcp_req_release(req);
		return;
	}
	req->state = TREQ_SEND;
	if (NVME_STATUS_IS_SUCCESS(nreq->rsp.status) && nreq->xfer == NVME_XFER_CTRLR_TO_HOST &&
	    nreq->length > 0) {
		req->c2h_off = 0;
		queue_c2h(req);
	} else {
		queue_rsp(req);
	}
}

void
nvmf_tcp_qpair_disconnect(struct nvmf_qpair *qpair)
{
	tq_close(to_tq(qpair));
}
/*
 * Connections.
 */

static void
tq_free_reqs(struct tcp_qpair *tq)
{
	env_dma_free(tq->icd_area);
	free(tq->iov_area);
	free(tq->buf_area);
	free(tq->reqs);
	tq->icd_area = NULL;
	tq->iov_area = NULL;
	tq->buf_area = NULL;
	tq->reqs = NULL;
	tq->num_reqs = 0;
	TAILQ_INIT(&tq->free_reqs);
}

/* The requests of a queue of n entries. */
static int
tq_alloc_reqs(struct tcp_qpair *tq, uint32_t n)
{
	struct tcp_transport *tt = tq->tt;
	uint32_t i, max_iov = tt->max_iov, pdu_iovs = max_iov + 3;

	tq->reqs = calloc(n, sizeof(*tq->reqs));
	tq->iov_area = calloc((size_t)n * (max_iov + pdu_iovs), sizeof(struct iovec));
	tq->buf_area = calloc((size_t)n * max_iov, sizeof(void *));
	tq->icd_area = env_dma_malloc((size_t)n * tt->icd_size, 64);
	if (tq->reqs == NULL || tq->iov_area == NULL || tq->buf_area == NULL ||
	    tq->icd_area == NULL) {
		tq_free_reqs(tq);
		return -ENOMEM;
	}
	tq->num_reqs = n;
	TAILQ_INIT(&tq->free_reqs);
	for (i = 0; i < tq->num_reqs; i++) {
		struct tcp_req *req = &tq->reqs[i];
		struct iovec *iov = tq->iov_area + (size_t)i * (max_iov + pdu_iovs);

		req->tq = tq;
		req->ttag = (uint16_t)i;
		req->state = TREQ_FREE;
		req->req.qpair = &tq->qpair;
		req->icd_buf = tq->icd_area + (size_t)i * tt->icd_size;
		req->req.buf_iov = iov;
		req->pdu.iov = iov + max_iov;
		req->pdu.req = req;
		req->rsp.iov = req->rsp_iov;
		req->rsp.req = req;
		req->req.bufs = tq->buf_area + (size_t)i * max_iov;
		TAILQ_INSERT_TAIL(&tq->free_reqs, req, link);
	}
	return 0;
}
/*
 * Admission.
 */

static void
tq_unpend(struct tcp_qpair *tq)
{
	if (tq->pending) {
		TAILQ_REMOVE(&tq->group->pending, tq, pending_link);
		tq->pending = false;
	}
}

/* Admitted: the queue is live and, where the host must authenticate, authenticated. */
static bool
tq_admitted(const struct tcp_qpair *tq)
{
	return tq->state == TQ_RUNNING && tq->qpair.state == NVMF_QPAIR_LIVE &&
	       !tq->qpair.auth_pending;
}

/* Log the drops and handshake timeouts not logged yet, at most once per TCP_DROP_LOG_US. */
static void
group_log_drops(struct tcp_group *group, uint64_t now)
{
	if (group->drops_unlogged == 0 && group->timeouts_unlogged == 0) {
		return;
	}
	if (group->drop_log_tick != 0 &&
	    ticks_to_us(now - group->drop_log_tick) < TCP_DROP_LOG_US) {
		return;
	}
	NOTICELOG("nvmf tcp: closed %" PRIu64 " connections that had not finished their "
		  "handshake: %" PRIu64 " pushed out by newer ones (max_pending_connections %u), "
		  "%" PRIu64 " over handshake_timeout_ms (%u ms)\n",
		  group->drops_unlogged + group->timeouts_unlogged, group->drops_unlogged,
		  group->tt->base.opts.max_pending_connections, group->timeouts_unlogged,
		  group->tt->base.opts.handshake_timeout_ms);
	group->drops_unlogged = 0;
	group->timeouts_unlogged = 0;
	group->drop_log_tick = now;
}

/*
 * Make room for one more pending connection of listener portid in this
 * group: forget the admitted ones, then close the oldest of the listener's
 * while it has its share of max_pending_connections (the listener's
 * connections are spread evenly over the poll groups).
 */
static void
group_make_room(struct tcp_group *group, uint16_t portid)
{
	uint32_t cap = group->tt->base.opts.max_pending_connections;
	uint32_t ngroups = GGA_MAX(g_nvmf_tgt.num_pgs, 1u);
	uint32_t share = GGA_MAX((cap + ngroups - 1) / ngroups, 1u);
	struct tcp_qpair *tq, *tmp, *oldest = NULL;
	uint32_t count = 0;

	TAILQ_FOREACH_SAFE(tq, &group->pending, pending_link, tmp) {
		if (tq_admitted(tq)) {
			tq_unpend(tq);
		} else if (tq->qpair.admit_portid == portid) {
			count++;
			if (oldest == NULL) {
				oldest = tq;
			}
		}
	}
	while (count >= share && oldest != NULL) {
		tq = oldest;
		for (oldest = TAILQ_NEXT(tq, pending_link);
		     oldest != NULL && oldest->qpair.admit_portid != portid;
		     oldest = TAILQ_NEXT(oldest, pending_link)) {
		}
		DEBUGLOG(nvmf_tcp, "qpair %u (%s): pushed out by a newer connection\n",
			 tq->qpair.id, tq->qpair.peer);
		group->pending_dropped++;
		group->drops_unlogged++;
		tq_close(tq);
		count--;
	}
	group_log_drops(group, ticks_get());
}

int
nvmf_tcp_conn_create(struct tcp_transport *tt, struct tcp_group *group, struct nvmf_poll_group *pg,
		     int fd, const struct nvmf_listen_addr *addr, const char *peer,
		     uint16_t admit_portid)
{
	struct tcp_qpair *tq;

	group_make_room(group, admit_portid);
	/* Nothing else until the Connect: requests and buffers are sized by it. */
	tq = calloc(1, sizeof(*tq));
	if (tq == NULL) {
		return -ENOMEM;
	}
	tq->tt = tt;
	tq->group = group;
	tq->fd = fd;
	tq->state = addr->secure_channel ? TQ_TLS_HANDSHAKE : TQ_AWAIT_ICREQ;
	TAILQ_INIT(&tq->tx_queue);
	TAILQ_INIT(&tq->free_reqs);
	rx_reset(tq);
	tq->accept_tick = ticks_get();
	tq->since_tick = tq->accept_tick;
	tq->ev = thread_fd_register(fd, THREAD_FD_IN, tq_event, tq, "nvmf_tcp_qpair");
	if (tq->ev == NULL) {
		ERRLOG("nvmf tcp: cannot watch the connection from %s\n", peer);
		free(tq);
		return -ENOMEM;
	}
	tq->ev_mask = THREAD_FD_IN;
	tq->qpair.admit_portid = admit_portid;
	nvmf_qpair_init(&tq->qpair, &tt->base, pg, addr, peer);
	TAILQ_INSERT_TAIL(&group->qpairs, tq, link);
	TAILQ_INSERT_TAIL(&group->pending, tq, pending_link);
	tq->pending = true;
	group->base.num_conns++;
	DEBUGLOG(nvmf_tcp, "qpair %u: connection from %s on %s:%s\n", tq->qpair.id, peer,
		 addr->traddr, addr->trsvcid);
	return 0;
}

int
nvmf_tcp_group_poll(struct nvmf_transport_poll_group *tg)
{
	struct tcp_group *group = container_of(tg, struct tcp_group, base);
	struct tcp_qpair *tq;
	int busy = POLLER_IDLE;

	while ((tq = TAILQ_FIRST(&group->dirty)) != NULL) {
		TAILQ_REMOVE(&group->dirty, tq, dirty_link);
		tq->in_dirty = false;
		tx_flush(tq);
		busy = POLLER_BUSY;
	}
	return busy;
}

/*
 * What tq is overdue for, or NULL. A PDU's clock starts when this check
 * first sees it begun, so a PDU is never cut before pdu_timeout_ms (at most
 * one check period after).
 */
static const char *
tq_overdue(struct tcp_qpair *tq, uint64_t now, uint64_t limit_us)
{
	bool mid_pdu = tq->rx_state != RX_CH || tq->rx_got > 0;

	if (tq->state != TQ_RUNNING) {
		return NULL;
	}
	if (tq->qpair.state == NVMF_QPAIR_UNCONNECTED &&
	    ticks_to_us(now - tq->since_tick) > limit_us) {
		return "no Fabrics Connect after the ICReq";
	}
	if (!mid_pdu) {
		tq->tmo_mid = false;
		return NULL;
	}
	if (!tq->tmo_mid || tq->tmo_pdus != tq->rx_pdus) {
		tq->tmo_mid = true;
		tq->tmo_pdus = tq->rx_pdus;
		tq->tmo_since = now;
		return NULL;
	}
	return ticks_to_us(now - tq->tmo_since) > limit_us ? "a PDU begun and not finished" : NULL;
}

int
nvmf_tcp_group_check_timeouts(struct tcp_group *group)
{
	uint32_t limit_ms = group->tt->base.opts.pdu_timeout_ms;
	struct tcp_qpair *tq, *tmp;
	uint64_t now = ticks_get();
	const char *what;
	int busy = POLLER_IDLE;

	uint64_t hs_us = (uint64_t)group->tt->base.opts.handshake_timeout_ms * 1000;

	TAILQ_FOREACH_SAFE(tq, &group->pending, pending_link, tmp) {
		if (tq_admitted(tq)) {
			tq_unpend(tq);
		} else if ((tq->state == TQ_TLS_HANDSHAKE || tq->state == TQ_AWAIT_ICREQ) &&
			   ticks_to_us(now - tq->accept_tick) > hs_us) {
			/* Counted, not logged one by one: a flood would flood the log. */
			DEBUGLOG(nvmf_tcp, "qpair %u (%s): no %s within handshake_timeout_ms\n",
				 tq->qpair.id, tq->qpair.peer,
				 tq->state == TQ_TLS_HANDSHAKE ? "TLS handshake" : "ICReq");
			group->handshake_timeouts++;
			group->timeouts_unlogged++;
			tq_close(tq);
			busy = POLLER_BUSY;
		}
	}
	group_log_drops(group, now);
	TAILQ_FOREACH_SAFE(tq, &group->qpairs, link, tmp) {
		what = tq_overdue(tq, now, (uint64_t)limit_ms * 1000);
		if (what == NULL) {
			continue;
		}
		NOTICELOG("nvmf tcp: qpair %u (%s): %s within %u ms (pdu_timeout_ms); closing the "
			  "connection\n",
			  tq->qpair.id, tq->qpair.peer, what, limit_ms);
		group->pdu_timeouts++;
		tq_close(tq);
		busy = POLLER_BUSY;
	}
	return busy;
}
