/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/TCP transport of the host: one non-blocking TCP connection per
 * queue pair, watched by the queue pair's thread (thread_fd_register), so a
 * quiet connection costs nothing.
 *
 * Sending: PDUs are queued on the connection and written by an untimed
 * poller with one sendmsg() per batch, so the commands submitted from many
 * completions of one socket read leave in one system call. Data is never
 * copied: the iovecs of a PDU point at its header and at the caller's
 * buffer. A short write leaves the rest queued and waits for EPOLLOUT.
 *
 * Receiving: a state machine that survives partial reads. Socket input is
 * read in chunks into a buffer, where headers and small payloads are taken
 * from; a C2HData payload that has not arrived yet is read with readv()
 * straight into the caller's iovecs. Digests are checked as bytes land.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gga/log.h"
#include "gga/nvme_tls_sock.h"
#include "gga/util.h"

#include "nvme_tcp_internal.h"

/* Socket reads per readiness event before letting the thread do other work. */
#define RX_READS_PER_EVENT 32

static int tcp_on_event(void *ctx, uint32_t events);
static int tcp_flush_poll(void *ctx);

static void
set_events(struct nvme_tcp_conn *conn, uint32_t mask)
{
	if (conn->ev != NULL && conn->ev_mask != mask && thread_fd_modify(conn->ev, mask) == 0) {
		conn->ev_mask = mask;
	}
}

static void
rx_reset(struct nvme_tcp_conn *conn)
{
	conn->rx_state = TCP_RX_HDR;
	conn->rx_got = 0;
	conn->rx_need = sizeof(struct nvme_tcp_common_hdr);
	conn->rx_req = NULL;
}

static void
tx_queue(struct nvme_tcp_conn *conn, struct nvme_tcp_tx *tx)
{
	tx->sent = 0;
	tx->len = tx->hdr_len + tx->data_len + tx->ddgst_len;
	tx->queued = true;
	TAILQ_INSERT_TAIL(&conn->txq, tx, link);
}

/* A fresh connection on socket fd: nothing negotiated, nothing buffered. */
static void
conn_start(struct nvme_tcp_conn *conn, int fd)
{
	conn->fd = fd;
	conn->state = TCP_CONN_CONNECTING;
	conn->hdgst = false;
	conn->ddgst = false;
	conn->cpda = 0;
	conn->rbuf_len = 0;
	conn->rbuf_off = 0;
	rx_reset(conn);
	TAILQ_INIT(&conn->txq);
}

static int
tcp_connect(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct sockaddr_in sin;
	int one = 1;
	int fd, rc;

	rc = nvme_qpair_sockaddr(qp, &sin);
	if (rc != 0) {
		return rc;
	}

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return nvme_qpair_error(qp, -errno, "socket: %s", strerror(errno));
	}
	/* Capsules are small and latency bound: never wait to coalesce them. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn_start(conn, fd);

	rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (rc != 0 && errno != EINPROGRESS) {
		rc = -errno;
		nvme_qpair_error(qp, rc, "connect: %s", strerror(-rc));
		goto out_close_fd;
	}
	conn->ev_mask = THREAD_FD_OUT;
	conn->ev = thread_fd_register(fd, conn->ev_mask, tcp_on_event, qp, qp->name);
	if (conn->ev == NULL) {
		rc = -ENOMEM;
		nvme_qpair_error(qp, rc, "cannot watch the socket");
		goto out_close_fd;
	}
	conn->flush_poller = poller_register(tcp_flush_poll, qp, 0, "nvme_tcp_tx");
	if (conn->flush_poller == NULL) {
		rc = -ENOMEM;
		nvme_qpair_error(qp, rc, "cannot register the send poller");
		goto out_unregister_fd;
	}
	/* Even a connect that finished at once is reported by EPOLLOUT. */
	return 0;

out_unregister_fd:
	thread_fd_unregister(&conn->ev);
out_close_fd:
	close(fd);
	conn->fd = -1;
	conn->state = TCP_CONN_CLOSED;
	return rc;
}

static void
tcp_disconnect(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_tcp_tx *tx;

	if (conn->fd < 0) {
		return;
	}
	poller_unregister(&conn->flush_poller);
	thread_fd_unregister(&conn->ev);
	nvme_tls_sock_free(conn->tls);
	conn->tls = NULL;
	close(conn->fd);
	conn->fd = -1;
	conn->state = TCP_CONN_CLOSED;
	while ((tx = TAILQ_FIRST(&conn->txq)) != NULL) {
		TAILQ_REMOVE(&conn->txq, tx, link);
		tx->queued = false;
	}
	conn->rbuf_len = 0;
	conn->rbuf_off = 0;
	rx_reset(conn);
	conn->epoch++;
}

static uint32_t
tcp_max_in_capsule(const struct nvme_qpair *qp)
{
	return nvme_tcp_conn(qp)->max_icd;
}

/* Set up the data part of a PDU and its digest. */
static void
tx_set_data(struct nvme_tcp_conn *conn, struct nvme_tcp_tx *tx, struct nvme_request *req,
	    uint32_t offset, uint32_t len)
{
	uint32_t crc;

	tx->iov = req->iov;
	tx->iovcnt = req->iovcnt;
	tx->iov_offset = req->iov_offset + offset;
	tx->data_len = len;
	tx->ddgst_len = 0;
	if (conn->ddgst && len > 0) {
		crc = nvme_tcp_iov_crc(req->iov, req->iovcnt, tx->iov_offset, len, 0);
		memcpy(tx->ddgst, &crc, sizeof(crc));
		tx->ddgst_len = NVME_TCP_DIGEST_LEN;
	}
}

static int
tcp_submit(struct nvme_qpair *qp, struct nvme_request *req)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_tcp_req *tr = nvme_tcp_req(req);
	struct nvme_tcp_tx *tx = &tr->tx;
	uint32_t len = req->data_len;

	if (unlikely(conn->state != TCP_CONN_READY || tx->queued)) {
		return -ENXIO;
	}
	tr->in_capsule = req->xfer == NVME_XFER_HOST_TO_CTRLR && len > 0 && len <= conn->max_icd;
	tr->c2h_next = 0;
	tr->r2t_active = false;
	tr->h2c_next = 0;
	tr->r2t_end = 0;
	tr->ddgst_error = false;
	tr->cpl_deferred = false;

	nvme_cmd_set_sgl(&req->cmd, len, tr->in_capsule);
	tx->kind = TCP_TX_CMD;
	tx->req = req;
	tx->hdr = tr->hdr;
	tx->hdr_len = nvme_tcp_build_cmd_hdr(tr->hdr, &req->cmd, tr->in_capsule ? len : 0,
					     conn->hdgst, conn->ddgst, conn->cpda);
	if (tr->in_capsule) {
		tx_set_data(conn, tx, req, 0, len);
	} else {
		tx->data_len = 0;
		tx->ddgst_len = 0;
	}
	tx_queue(conn, tx);
	return 0;
}

/* Queue the next H2CData PDU of the R2T being served. */
static void
queue_h2c(struct nvme_qpair *qp, struct nvme_request *req)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_tcp_req *tr = nvme_tcp_req(req);
	struct nvme_tcp_tx *tx = &tr->tx;
	uint32_t datao = tr->h2c_next;
	uint32_t datal = GGA_MIN(conn->maxh2cdata, tr->r2t_end - datao);

	tr->h2c_next += datal;
	tx->kind = TCP_TX_H2C;
	tx->req = req;
	tx->hdr = tr->hdr;
	tx->hdr_len = nvme_tcp_build_h2c_hdr(tr->hdr, req->cid, tr->ttag, datao, datal,
					     tr->h2c_next == tr->r2t_end, conn->hdgst, conn->ddgst,
					     conn->cpda);
	tx_set_data(conn, tx, req, datao, datal);
	tx_queue(conn, tx);
}

/*
 * Success is believed only when all the data moved: every byte of a read
 * arrived, every byte of a write was asked for (a controller that reports a
 * write done without taking its data has not written it).
 */
/*
 * Authentication Receive's AL is an upper bound: a controller (SPDK's)
 * sends only the message, which the host parses by its own lengths.
 */
static bool
short_read_allowed(const struct nvme_request *req)
{
	return req->cmd.opc == NVME_OPC_FABRICS &&
	       ((const struct nvme_fabrics_cmd *)&req->cmd)->fctype == NVME_FCTYPE_AUTH_RECV;
}

static bool
data_all_moved(const struct nvme_request *req)
{
	const struct nvme_tcp_req *tr = nvme_tcp_req(req);

	switch (req->xfer) {
	case NVME_XFER_CTRLR_TO_HOST:
		return tr->c2h_next == req->data_len || short_read_allowed(req);
	case NVME_XFER_HOST_TO_CTRLR:
		return tr->in_capsule || tr->h2c_next == req->data_len;
	default:
		return true;
	}
}

static void
complete_req(struct nvme_qpair *qp, struct nvme_request *req, struct nvme_cpl *cpl)
{
	uint16_t status = cpl->status & ~NVME_STATUS_P;

	if (nvme_tcp_req(req)->tx.queued) {
		/* Our PDU still references the request: finish sending first (tx_done). */
		nvme_tcp_req(req)->cpl = *cpl;
		nvme_tcp_req(req)->cpl_deferred = true;
		return;
	}
	if (NVME_STATUS_IS_SUCCESS(status)) {
		if (nvme_tcp_req(req)->ddgst_error) {
			status = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_TRANSIENT_TRANSPORT_ERROR);
		} else if (!data_all_moved(req)) {
			status = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_TRANSFER_ERROR);
		}
	}
	cpl->status = status;
	nvme_qpair_complete(qp, req, cpl);
}

/* A PDU has left: move its request on. */
static void
tx_done(struct nvme_qpair *qp, struct nvme_tcp_tx *tx)
{
	struct nvme_request *req = tx->req;
	struct nvme_tcp_req *tr;

	if (tx->kind != TCP_TX_CMD && tx->kind != TCP_TX_H2C) {
		return;
	}
	tr = nvme_tcp_req(req);
	if (tx->kind == TCP_TX_H2C) {
		if (tr->h2c_next < tr->r2t_end) {
			queue_h2c(qp, req);
			return;
		}
		tr->r2t_active = false;
	}
	if (tr->cpl_deferred) {
		tr->cpl_deferred = false;
		complete_req(qp, req, &tr->cpl);
	}
}

/* Fill out[] with what is left of tx; returns the count, *whole if all of it fits. */
static int
tx_iovs(const struct nvme_tcp_tx *tx, struct iovec *out, int max, bool *whole)
{
	uint32_t off = tx->sent;
	int n = 0, k;
	size_t covered;

	*whole = false;
	if (off < tx->hdr_len) {
		out[n].iov_base = tx->hdr + off;
		out[n].iov_len = tx->hdr_len - off;
		n++;
		off = 0;
	} else {
		off -= tx->hdr_len;
	}
	if (tx->data_len > 0) {
		if (off < tx->data_len) {
			if (n == max) {
				return n;
			}
			k = nvme_iov_range(tx->iov, tx->iovcnt, tx->iov_offset + off,
					   tx->data_len - off, out + n, max - n);
			covered = iov_length(out + n, k);
			n += k;
			if (covered < tx->data_len - off) {
				return n;
			}
			off = 0;
		} else {
			off -= tx->data_len;
		}
	}
	if (tx->ddgst_len > 0) {
		if (n == max) {
			return n;
		}
		out[n].iov_base = (uint8_t *)tx->ddgst + off;
		out[n].iov_len = tx->ddgst_len - off;
		n++;
	}
	*whole = true;
	return n;
}

int
nvme_tcp_flush(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct iovec iov[NVME_TCP_MAX_IOVS];
	struct nvme_tcp_tx *tx;
	uint32_t epoch = conn->epoch;
	size_t take;
	ssize_t n;
	bool whole;
	int cnt;

	while (conn->state >= TCP_CONN_WAIT_ICRESP && !TAILQ_EMPTY(&conn->txq)) {
		cnt = 0;
		TAILQ_FOREACH(tx, &conn->txq, link) {
			cnt += tx_iovs(tx, iov + cnt, NVME_TCP_MAX_IOVS - cnt, &whole);
			if (!whole || cnt == NVME_TCP_MAX_IOVS) {
				break;
			}
		}
		if (cnt == 0) {
			/* Queued PDUs with no bytes left to send: retrying would spin. */
			return nvme_qpair_error(qp, -EIO,
						"send: the transmit queue holds no bytes");
		}
		n = nvme_sock_sendv(conn->fd, conn->tls, iov, cnt);
		if (n == -EAGAIN) {
			set_events(conn, THREAD_FD_IN | THREAD_FD_OUT);
			return 0;
		}
		if (n < 0) {
			return nvme_qpair_error(qp, (int)n, "send: %s",
						n == -EIO ? "no progress" : strerror((int)-n));
		}
		while (n > 0 && (tx = TAILQ_FIRST(&conn->txq)) != NULL) {
			take = GGA_MIN((size_t)n, (size_t)(tx->len - tx->sent));
			tx->sent += (uint32_t)take;
			n -= (ssize_t)take;
			if (tx->sent == tx->len) {
				TAILQ_REMOVE(&conn->txq, tx, link);
				tx->queued = false;
				tx_done(qp, tx);
				if (conn->epoch != epoch) {
					/* A completion callback closed the connection. */
					return 0;
				}
			}
		}
	}
	if (conn->state >= TCP_CONN_WAIT_ICRESP) {
		set_events(conn, THREAD_FD_IN |
					 (nvme_tls_sock_want_write(conn->tls) ? THREAD_FD_OUT : 0));
	}
	return 0;
}

/* Best effort: tell the controller why we give up, when the stream is at a PDU boundary. */
static void
send_term_req(struct nvme_qpair *qp, uint16_t fes, uint32_t fei)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_tcp_tx *head = TAILQ_FIRST(&conn->txq);
	uint32_t len;

	if (head != NULL && head->sent != 0) {
		return;
	}
	struct iovec iov;

	len = nvme_tcp_build_term_req(conn->ctrl_buf, fes, fei, conn->rx_hdr.raw,
				      GGA_MIN(conn->rx_got, (uint32_t)NVME_TCP_TERM_REQ_MAX_DATA));
	iov.iov_base = conn->ctrl_buf;
	iov.iov_len = len;
	(void)nvme_sock_sendv(conn->fd, conn->tls, &iov, 1);
}

static int
protocol_error(struct nvme_qpair *qp, uint16_t fes, uint32_t fei, const char *what)
{
	send_term_req(qp, fes, fei);
	return nvme_qpair_error(qp, -EPROTO, "NVMe/TCP protocol error: %s (FES 0x%x, FEI %u)", what,
				fes, fei);
}

static void
tcp_connected(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_tcp_tx *tx = &conn->ctrl_tx;

	conn->state = TCP_CONN_WAIT_ICRESP;
	nvme_tcp_build_icreq((struct nvme_tcp_icreq *)conn->ctrl_buf, qp->ctrlr->opts.header_digest,
			     qp->ctrlr->opts.data_digest);
	memset(tx, 0, sizeof(*tx));
	tx->kind = TCP_TX_ICREQ;
	tx->hdr = conn->ctrl_buf;
	tx->hdr_len = NVME_TCP_ICREQ_HLEN;
	tx_queue(conn, tx);
	set_events(conn, THREAD_FD_IN);
}

static int
handle_icresp(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const char *why = NULL;
	int rc;

	rc = nvme_tcp_check_icresp(&conn->rx_hdr.icresp, qp->ctrlr->opts.header_digest,
				   qp->ctrlr->opts.data_digest, &conn->cpda, &conn->maxh2cdata,
				   &why);
	if (rc != 0) {
		return protocol_error(qp, NVME_TCP_FES_UNSUPPORTED_PARAMETER, 0, why);
	}
	conn->hdgst = qp->ctrlr->opts.header_digest;
	conn->ddgst = qp->ctrlr->opts.data_digest;
	conn->max_icd = qp->is_admin ? NVME_TCP_ADMIN_ICD_SIZE : nvme_ctrlr_io_icd_size(qp->ctrlr);
	conn->state = TCP_CONN_READY;
	rx_reset(conn);
	nvme_qpair_transport_ready(qp);
	return 0;
}

static int
handle_capsule_resp(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_cpl cpl = conn->rx_hdr.rsp.rccqe;
	struct nvme_request *req;

	req = nvme_qpair_find_req(qp, cpl.cid);
	if (req == NULL) {
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD, NVME_TCP_RSP_HLEN - 4,
				      "response for an unknown command id");
	}
	rx_reset(conn);
	complete_req(qp, req, &cpl);
	return 0;
}

static int
handle_c2h_data_hdr(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const struct nvme_tcp_data_hdr *h = &conn->rx_hdr.data;
	uint32_t hdr_total = h->ch.hlen + (conn->hdgst ? NVME_TCP_DIGEST_LEN : 0);
	struct nvme_request *req;

	req = nvme_qpair_find_req(qp, h->cccid);
	if (req == NULL || req->xfer != NVME_XFER_CTRLR_TO_HOST) {
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD,
				      offsetof(struct nvme_tcp_data_hdr, cccid),
				      "C2HData for an unknown command or one without read data");
	}
	if (h->datao != nvme_tcp_req(req)->c2h_next) {
		return protocol_error(qp, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0,
				      "C2HData out of order");
	}
	if (h->datal == 0 || h->datal > req->data_len - h->datao) {
		return protocol_error(qp, NVME_TCP_FES_DATA_OUT_OF_RANGE, 0,
				      "C2HData beyond the command's data");
	}
	if (h->ch.plen != h->ch.pdo + h->datal + (conn->ddgst ? NVME_TCP_DIGEST_LEN : 0)) {
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD,
				      offsetof(struct nvme_tcp_common_hdr, plen),
				      "C2HData length fields disagree");
	}
	if ((h->ch.flags & NVME_TCP_F_DATA_SUCCESS) != 0 &&
	    ((h->ch.flags & NVME_TCP_F_DATA_LAST) == 0 ||
	     (h->datao + h->datal != req->data_len && !short_read_allowed(req)))) {
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD,
				      offsetof(struct nvme_tcp_common_hdr, flags),
				      "C2HData SUCCESS flag without the last data");
	}
	conn->rx_req = req;
	conn->rx_data_off = h->datao;
	conn->rx_datal = h->datal;
	conn->rx_crc = 0;
	if (h->ch.pdo > hdr_total) {
		conn->rx_state = TCP_RX_PAD;
		conn->rx_left = h->ch.pdo - hdr_total;
	} else {
		conn->rx_state = TCP_RX_DATA;
		conn->rx_left = h->datal;
	}
	return 0;
}

static int
handle_r2t(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const struct nvme_tcp_r2t_hdr *h = &conn->rx_hdr.r2t;
	struct nvme_request *req;
	struct nvme_tcp_req *tr;

	req = nvme_qpair_find_req(qp, h->cccid);
	if (req == NULL || req->xfer != NVME_XFER_HOST_TO_CTRLR || nvme_tcp_req(req)->in_capsule) {
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD,
				      offsetof(struct nvme_tcp_r2t_hdr, cccid),
				      "R2T for an unknown command or one without data to send");
	}
	tr = nvme_tcp_req(req);
	if (tr->r2t_active || tr->tx.queued || h->r2to != tr->h2c_next) {
		return protocol_error(qp, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0,
				      "R2T while another is served, or out of order");
	}
	if (h->r2tl == 0 || h->r2tl > req->data_len - h->r2to) {
		return protocol_error(qp, NVME_TCP_FES_DATA_OUT_OF_RANGE, 0,
				      "R2T beyond the command's data");
	}
	tr->r2t_active = true;
	tr->ttag = h->ttag;
	tr->r2t_end = h->r2to + h->r2tl;
	rx_reset(conn);
	queue_h2c(qp, req);
	return 0;
}

static int
handle_term_req(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const struct nvme_tcp_term_req_hdr *t = &conn->rx_hdr.term;

	return nvme_qpair_error(
		qp, -ECONNRESET,
		"controller terminated the connection (C2HTermReq FES 0x%x, FEI %u)", t->fes,
		nvme_tcp_term_req_fei(t));
}

/* A whole header (and its digest) is in rx_hdr. */
static int
handle_hdr(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const struct nvme_tcp_common_hdr *ch = &conn->rx_hdr.ch;
	uint32_t digest;

	if ((ch->flags & NVME_TCP_F_HDGST) != 0) {
		memcpy(&digest, conn->rx_hdr.raw + ch->hlen, sizeof(digest));
		if (digest != nvme_tcp_hdgst(conn->rx_hdr.raw, ch->hlen)) {
			return protocol_error(qp, NVME_TCP_FES_HDR_DIGEST_ERROR, 0,
					      "header digest mismatch");
		}
	}
	switch (ch->pdu_type) {
	case NVME_TCP_PDU_ICRESP:
		return handle_icresp(qp);
	case NVME_TCP_PDU_CAPSULE_RESP:
		return handle_capsule_resp(qp);
	case NVME_TCP_PDU_C2H_DATA:
		return handle_c2h_data_hdr(qp);
	case NVME_TCP_PDU_R2T:
		return handle_r2t(qp);
	case NVME_TCP_PDU_C2H_TERM_REQ:
		if (ch->plen > ch->hlen) {
			conn->rx_state = TCP_RX_DISCARD;
			conn->rx_left = ch->plen - ch->hlen;
			return 0;
		}
		return handle_term_req(qp);
	default:
		return protocol_error(qp, NVME_TCP_FES_INVALID_PDU_HDR_FIELD, 0,
				      "unexpected PDU type");
	}
}

/* The last data byte (and digest) of a C2HData PDU arrived. */
static int
c2h_data_done(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_request *req = conn->rx_req;
	uint8_t flags = conn->rx_hdr.ch.flags;
	struct nvme_cpl cpl;
	uint32_t digest;

	if (conn->ddgst) {
		memcpy(&digest, conn->rx_ddgst, sizeof(digest));
		if (digest != conn->rx_crc) {
			WARNLOG("nvme %s: cid %u: data digest mismatch, the command will fail\n",
				qp->name, req->cid);
			nvme_tcp_req(req)->ddgst_error = true;
		}
	}
	nvme_tcp_req(req)->c2h_next += conn->rx_datal;
	rx_reset(conn);
	if ((flags & NVME_TCP_F_DATA_SUCCESS) != 0) {
		/* No CapsuleResp follows: the controller reported success with the data. */
		memset(&cpl, 0, sizeof(cpl));
		cpl.cid = req->cid;
		cpl.sqid = qp->qid;
		complete_req(qp, req, &cpl);
	}
	return 0;
}

/* Data bytes have landed in the request buffer at rx_data_off: account for them. */
static int
rx_data_advance(struct nvme_qpair *qp, uint32_t n)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_request *req = conn->rx_req;

	if (conn->ddgst) {
		conn->rx_crc = nvme_tcp_iov_crc(req->iov, req->iovcnt,
						req->iov_offset + conn->rx_data_off, n,
						conn->rx_crc);
	}
	conn->rx_data_off += n;
	conn->rx_left -= n;
	if (conn->rx_left == 0) {
		if (conn->ddgst) {
			conn->rx_state = TCP_RX_DDGST;
			conn->rx_left = NVME_TCP_DIGEST_LEN;
			return 0;
		}
		return c2h_data_done(qp);
	}
	return 0;
}

/* Copy from one iovec range position; returns bytes copied. */
static uint32_t
copy_to_req(struct nvme_request *req, uint32_t data_off, const uint8_t *src, uint32_t len)
{
	struct iovec iov[NVME_TCP_MAX_IOVS];
	uint32_t done = 0;
	int n, i;

	while (done < len) {
		n = nvme_iov_range(req->iov, req->iovcnt, req->iov_offset + data_off + done,
				   len - done, iov, NVME_TCP_MAX_IOVS);
		if (n == 0) {
			break;
		}
		for (i = 0; i < n; i++) {
			memcpy(iov[i].iov_base, src + done, iov[i].iov_len);
			done += (uint32_t)iov[i].iov_len;
		}
	}
	return done;
}

/* Consume buffered input according to the receive state. */
static int
rx_step(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	uint8_t *src = conn->rbuf + conn->rbuf_off;
	uint32_t avail = conn->rbuf_len - conn->rbuf_off;
	uint32_t take, hdr_total, fei;
	int fes;

	switch (conn->rx_state) {
	case TCP_RX_HDR:
		take = GGA_MIN(avail, conn->rx_need - conn->rx_got);
		memcpy(conn->rx_hdr.raw + conn->rx_got, src, take);
		conn->rbuf_off += take;
		conn->rx_got += take;
		if (conn->rx_got < conn->rx_need) {
			return 0;
		}
		if (conn->rx_need == sizeof(struct nvme_tcp_common_hdr)) {
			fes = nvme_tcp_check_ch(&conn->rx_hdr.ch,
						conn->state == TCP_CONN_WAIT_ICRESP, conn->hdgst,
						conn->ddgst, &hdr_total, &fei);
			if (fes != 0) {
				return protocol_error(qp, (uint16_t)fes, fei, "bad PDU header");
			}
			conn->rx_need = hdr_total;
			return 0;
		}
		return handle_hdr(qp);
	case TCP_RX_PAD:
		take = GGA_MIN(avail, conn->rx_left);
		conn->rbuf_off += take;
		conn->rx_left -= take;
		if (conn->rx_left == 0) {
			conn->rx_state = TCP_RX_DATA;
			conn->rx_left = conn->rx_datal;
		}
		return 0;
	case TCP_RX_DATA:
		take = GGA_MIN(avail, conn->rx_left);
		copy_to_req(conn->rx_req, conn->rx_data_off, src, take);
		conn->rbuf_off += take;
		return rx_data_advance(qp, take);
	case TCP_RX_DDGST:
		take = GGA_MIN(avail, conn->rx_left);
		memcpy(conn->rx_ddgst + NVME_TCP_DIGEST_LEN - conn->rx_left, src, take);
		conn->rbuf_off += take;
		conn->rx_left -= take;
		return conn->rx_left == 0 ? c2h_data_done(qp) : 0;
	case TCP_RX_DISCARD:
		take = GGA_MIN(avail, conn->rx_left);
		conn->rbuf_off += take;
		conn->rx_left -= take;
		return conn->rx_left == 0 ? handle_term_req(qp) : 0;
	}
	return 0;
}

/* A read returned n <= 0: closed by the peer, nothing now (-EAGAIN) or an error. */
static int
rx_failed(struct nvme_qpair *qp, ssize_t n)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);

	if (n == 0) {
		return nvme_qpair_error(qp, -ECONNRESET, "connection closed by the controller");
	}
	if (n == -EAGAIN) {
		if (nvme_tls_sock_want_write(conn->tls)) {
			set_events(conn, THREAD_FD_IN | THREAD_FD_OUT);
		}
		return -EAGAIN;
	}
	return nvme_qpair_error(qp, (int)n, "receive: %s", strerror((int)-n));
}

/* Read a large payload straight into the caller's buffer. */
static int
rx_direct(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct nvme_request *req = conn->rx_req;
	struct iovec iov[NVME_TCP_MAX_IOVS];
	ssize_t n;
	int cnt;

	cnt = nvme_iov_range(req->iov, req->iovcnt, req->iov_offset + conn->rx_data_off,
			     conn->rx_left, iov, NVME_TCP_MAX_IOVS);
	n = nvme_sock_recvv(conn->fd, conn->tls, iov, cnt);
	if (n > 0) {
		return rx_data_advance(qp, (uint32_t)n);
	}
	return rx_failed(qp, n);
}

static int
rx_fill(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	struct iovec iov = { .iov_base = conn->rbuf, .iov_len = NVME_TCP_RBUF_SIZE };
	ssize_t n;

	n = nvme_sock_recvv(conn->fd, conn->tls, &iov, 1);
	if (n > 0) {
		conn->rbuf_off = 0;
		conn->rbuf_len = (uint32_t)n;
		return 0;
	}
	return rx_failed(qp, n);
}

/*
 * Process input until the socket is drained (or the read budget is spent;
 * epoll is level-triggered, so the rest comes with the next event). Buffered
 * bytes are always consumed before returning: epoll does not see them.
 */
static int
tcp_rx(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	uint32_t epoch = conn->epoch;
	int reads = 0;
	int rc;

	for (;;) {
		if (conn->rbuf_off == conn->rbuf_len) {
			/* Bytes TLS holds already are read past the budget: no event comes for them. */
			if (reads++ >= RX_READS_PER_EVENT && !nvme_sock_pending(conn->tls)) {
				return 0;
			}
			if (conn->rx_state == TCP_RX_DATA &&
			    conn->rx_left >= NVME_TCP_RX_DIRECT_MIN) {
				rc = rx_direct(qp);
			} else {
				rc = rx_fill(qp);
			}
			if (rc == -EAGAIN) {
				return 0;
			}
		} else {
			rc = rx_step(qp);
		}
		if (rc != 0) {
			return rc;
		}
		if (conn->epoch != epoch) {
			/* A completion callback dropped the connection. */
			return 0;
		}
	}
}

/* The secure channel's handshake, after the TCP connect and before the ICReq. */
static int
tls_step(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	char why[256] = "";
	int rc;

	rc = nvme_tls_sock_handshake(conn->tls, why, sizeof(why));
	if (rc == NVME_TLS_WANT_READ) {
		set_events(conn, THREAD_FD_IN);
		return 0;
	}
	if (rc == NVME_TLS_WANT_WRITE) {
		set_events(conn, THREAD_FD_IN | THREAD_FD_OUT);
		return 0;
	}
	if (rc < 0) {
		return nvme_qpair_error(qp, rc == -ECONNRESET ? -ECONNRESET : -EPROTO,
					"TLS handshake failed: %s", why);
	}
	DEBUGLOG(nvme, "%s: secure channel up (%s)\n", qp->name, nvme_tls_sock_cipher(conn->tls));
	tcp_connected(qp);
	return nvme_tcp_flush(qp);
}

static int
tls_start(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	const struct nvme_ctrlr_opts *opts = &qp->ctrlr->opts;
	struct nvme_tls_key key;
	int rc;

	rc = nvme_tls_key_derive(&opts->tls_psk, opts->hostnqn, qp->ctrlr->trid.subnqn, 0,
				 NVME_TLS_KDF_RFC8446, &key);
	if (rc != 0) {
		return nvme_qpair_error(qp, rc, "cannot derive the TLS PSK of %s for %s",
					opts->hostnqn, qp->ctrlr->trid.subnqn);
	}
	rc = nvme_tls_sock_client(conn->fd, &key, &conn->tls);
	explicit_bzero(&key, sizeof(key));
	if (rc != 0) {
		return nvme_qpair_error(qp, rc, "cannot set up TLS");
	}
	conn->state = TCP_CONN_TLS;
	return tls_step(qp);
}

static int
tcp_on_event(void *ctx, uint32_t events)
{
	struct nvme_qpair *qp = ctx;
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	uint32_t epoch = conn->epoch;
	socklen_t len = sizeof(int);
	int err = 0, rc = 0;

	nvme_qpair_hold(qp);
	if (conn->state == TCP_CONN_CONNECTING) {
		if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
			err = errno;
		}
		if (err != 0) {
			rc = nvme_qpair_error(qp, -err, "connect: %s", strerror(err));
		} else if (qp->ctrlr->opts.tls_psk.len > 0) {
			rc = tls_start(qp);
		} else {
			tcp_connected(qp);
			rc = nvme_tcp_flush(qp);
		}
		goto out_release_qpair;
	}
	if (conn->state == TCP_CONN_TLS) {
		rc = tls_step(qp);
		goto out_release_qpair;
	}
	if ((events & THREAD_FD_OUT) != 0) {
		rc = nvme_tcp_flush(qp);
		if (rc == 0 && conn->epoch == epoch && nvme_tls_sock_want_write(conn->tls)) {
			/* A TLS read waited for the socket to take its answer. */
			rc = tcp_rx(qp);
		}
	}
	if (rc == 0 && conn->epoch == epoch &&
	    (events & (THREAD_FD_IN | THREAD_FD_ERR | THREAD_FD_HUP)) != 0) {
		rc = tcp_rx(qp);
	}
out_release_qpair:
	if (rc != 0 && conn->epoch == epoch) {
		nvme_qpair_fail(qp, rc, NULL);
	}
	nvme_qpair_release(qp);
	return 1;
}

static int
tcp_flush_poll(void *ctx)
{
	struct nvme_qpair *qp = ctx;
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);
	uint32_t epoch = conn->epoch;
	int rc;

	if (TAILQ_EMPTY(&conn->txq) || (conn->ev_mask & THREAD_FD_OUT) != 0 ||
	    conn->state < TCP_CONN_WAIT_ICRESP) {
		return POLLER_IDLE;
	}
	nvme_qpair_hold(qp);
	rc = nvme_tcp_flush(qp);
	if (rc != 0 && conn->epoch == epoch) {
		nvme_qpair_fail(qp, rc, NULL);
	}
	nvme_qpair_release(qp);
	return POLLER_BUSY;
}

static int
tcp_qpair_init(struct nvme_qpair *qp)
{
	struct nvme_tcp_conn *conn = nvme_tcp_conn(qp);

	conn->rbuf = malloc(NVME_TCP_RBUF_SIZE);
	if (conn->rbuf == NULL) {
		return -ENOMEM;
	}
	conn->fd = -1;
	TAILQ_INIT(&conn->txq);
	return 0;
}

static void
tcp_qpair_fini(struct nvme_qpair *qp)
{
	free(nvme_tcp_conn(qp)->rbuf);
}

const struct nvme_transport_ops nvme_tcp_ops = {
	.name = "TCP",
	.trtype = NVME_TRANSPORT_TCP,
	.qpair_size = sizeof(struct nvme_tcp_qpair),
	.qpair_offset = offsetof(struct nvme_tcp_qpair, qpair),
	.req_ctx_size = sizeof(struct nvme_tcp_req),
	.qpair_init = tcp_qpair_init,
	.qpair_fini = tcp_qpair_fini,
	.connect = tcp_connect,
	.disconnect = tcp_disconnect,
	.submit = tcp_submit,
	.max_in_capsule = tcp_max_in_capsule,
};
