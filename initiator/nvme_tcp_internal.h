/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/TCP transport's own types (nvme_tcp.c): its queue pair, which
 * embeds struct nvme_qpair, and its per-request state. Only nvme_tcp.c (and
 * its unit test) see them; the generic code reaches the transport through
 * nvme_tcp_ops.
 */
#ifndef GGA_NVME_TCP_INTERNAL_H
#define GGA_NVME_TCP_INTERNAL_H

#include "gga/util.h"

#include "nvme_internal.h"

/* Bytes of socket input buffered at once for headers and small data. */
#define NVME_TCP_RBUF_SIZE     (64u * 1024)
/* Data this large (and not yet buffered) is read straight into the caller's buffer. */
#define NVME_TCP_RX_DIRECT_MIN 2048u
/* iovecs gathered into one sendmsg()/readv(). */
#define NVME_TCP_MAX_IOVS      64

enum nvme_tcp_tx_kind {
	TCP_TX_CMD,
	TCP_TX_H2C,
	TCP_TX_ICREQ,
	TCP_TX_TERM,
};

/* One outgoing PDU: header (+digest, +pad), then an optional data range, then its digest. */
struct nvme_tcp_tx {
	TAILQ_ENTRY(nvme_tcp_tx) link;
	enum nvme_tcp_tx_kind kind;
	bool queued;
	uint8_t *hdr;
	uint32_t hdr_len;
	const struct iovec *iov;
	int iovcnt;
	size_t iov_offset;
	uint32_t data_len;
	uint8_t ddgst[NVME_TCP_DIGEST_LEN];
	uint32_t ddgst_len;
	uint32_t len; /* hdr_len + data_len + ddgst_len */
	uint32_t sent;
	struct nvme_request *req;
};

/* Per-request NVMe/TCP state. */
struct nvme_tcp_req {
	uint8_t hdr[NVME_TCP_TX_HDR_SIZE] __attribute__((aligned(8)));
	struct nvme_tcp_tx tx;
	bool in_capsule;
	/* C2HData: next expected data offset. */
	uint32_t c2h_next;
	/* R2T being served: transfer tag and the end of the requested range. */
	bool r2t_active;
	uint16_t ttag;
	uint32_t h2c_next;
	uint32_t r2t_end;
	/* A data digest mismatch: complete with Transient Transport Error. */
	bool ddgst_error;
	/* The response came while our PDU was still being sent: complete when it is. */
	bool cpl_deferred;
	struct nvme_cpl cpl;
};

enum nvme_tcp_conn_state {
	TCP_CONN_CLOSED = 0,
	TCP_CONN_CONNECTING, /* non-blocking connect() in progress */
	TCP_CONN_TLS,        /* secure channel: the TLS handshake */
	TCP_CONN_WAIT_ICRESP,
	TCP_CONN_READY,
};

enum nvme_tcp_rx_state {
	TCP_RX_HDR = 0, /* common header, then the rest of the header and digest */
	TCP_RX_PAD,     /* padding between header and data */
	TCP_RX_DATA,    /* C2HData payload into the request's buffer */
	TCP_RX_DDGST,   /* data digest */
	TCP_RX_DISCARD, /* TermReq payload: read and dropped */
};

/* The connection of an NVMe/TCP queue pair. */
struct nvme_tcp_conn {
	int fd;
	/* The secure channel (ctrlr opts tls_psk set); NULL on plaintext. */
	struct nvme_tls_sock *tls;
	struct fd_event *ev;
	uint32_t ev_mask;
	enum nvme_tcp_conn_state state;
	/* Negotiated in ICReq/ICResp. */
	bool hdgst;
	bool ddgst;
	uint32_t cpda;
	uint32_t maxh2cdata;
	uint32_t max_icd;
	/* Sending. */
	TAILQ_HEAD(, nvme_tcp_tx) txq;
	struct nvme_tcp_tx ctrl_tx; /* ICReq or H2CTermReq */
	uint8_t ctrl_buf[NVME_TCP_ICREQ_HLEN + NVME_TCP_TERM_REQ_MAX_DATA];
	struct poller *flush_poller;
	/* Receiving. */
	uint8_t *rbuf;
	uint32_t rbuf_len;
	uint32_t rbuf_off;
	enum nvme_tcp_rx_state rx_state;
	union nvme_tcp_pdu_hdr rx_hdr;
	uint32_t rx_got;
	uint32_t rx_need;
	struct nvme_request *rx_req;
	uint32_t rx_data_off; /* data offset of the next byte, in the command's data */
	uint32_t rx_datal;    /* data bytes of the current C2HData PDU */
	uint32_t rx_left;     /* bytes left in the current state */
	uint32_t rx_crc;
	uint8_t rx_ddgst[NVME_TCP_DIGEST_LEN];
	/* Bumped at every close so a callback can tell that the connection changed under it. */
	uint32_t epoch;
};

/* A queue pair on this transport: the generic queue pair and its connection. */
struct nvme_tcp_qpair {
	struct nvme_qpair qpair;
	struct nvme_tcp_conn conn;
};

static inline struct nvme_tcp_conn *
nvme_tcp_conn(const struct nvme_qpair *qpair)
{
	return &container_of(qpair, struct nvme_tcp_qpair, qpair)->conn;
}

static inline struct nvme_tcp_req *
nvme_tcp_req(const struct nvme_request *req)
{
	return nvme_request_ctx(req);
}

/* Poll the transport of an admin queue (flush); used while waiting synchronously in tests. */
int nvme_tcp_flush(struct nvme_qpair *qpair);

#endif /* GGA_NVME_TCP_INTERNAL_H */
