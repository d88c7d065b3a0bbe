/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP transport internals: the pure PDU checks of tcp_pdu.c (callable
 * on a byte buffer, for unit tests and the fuzzer), and the structures shared
 * by tcp.c and tcp_conn.c.
 */
#ifndef GGA_NVMF_TCP_INTERNAL_H
#define GGA_NVMF_TCP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/uio.h>

#include "gga/nvme_spec.h"
#include "gga/nvme_tcp.h"
#include "gga/nvme_tls_sock.h"

#include "nvmf_transport.h"

/* What the receiver knows when it checks a PDU header. */
struct nvmf_tcp_rx_ctx {
	bool ic_done;        /* ICReq/ICResp exchanged */
	bool hdgst;          /* header digests negotiated */
	bool ddgst;          /* data digests negotiated */
	uint32_t max_icd;    /* in-capsule data bytes a CapsuleCmd may carry */
	uint32_t maxh2cdata; /* data bytes an H2CData PDU may carry */
};

/* Where the parts of a PDU are, from its common header. */
struct nvmf_tcp_layout {
	uint32_t hlen;      /* header bytes */
	uint32_t hdgst_len; /* 0 or 4 */
	uint32_t pad_len;   /* bytes between header digest and data */
	uint32_t data_len;
	uint32_t ddgst_len; /* 0 or 4 */
};

/* A fatal error to report in a C2HTermReq. */
struct nvmf_tcp_fatal {
	uint16_t fes;
	uint32_t fei;
};

/*
 * Check the 8-byte common header of a PDU a controller received. Returns 0
 * and the PDU's layout, or -EPROTO with the fatal error to report.
 */
int nvmf_tcp_ch_check(const struct nvme_tcp_common_hdr *ch, const struct nvmf_tcp_rx_ctx *ctx,
		      struct nvmf_tcp_layout *layout, struct nvmf_tcp_fatal *err);

/* True if the header digest after `hlen` header bytes matches. */
bool nvmf_tcp_hdgst_ok(const uint8_t *hdr, uint32_t hlen);

/* Check an ICReq's fields (PFV, HPDA). Returns 0 or -EPROTO with err set. */
int nvmf_tcp_icreq_check(const struct nvme_tcp_icreq *icreq, struct nvmf_tcp_fatal *err);

/*
 * Check an H2CData header against the command it names: the transfer the
 * controller asked for is [0, length), of which `received` bytes have come.
 * Returns 0 or -EPROTO with err set.
 */
int nvmf_tcp_h2c_check(const struct nvme_tcp_data_hdr *h2c, const struct nvmf_tcp_layout *layout,
		       uint16_t cid, uint32_t received, uint32_t length,
		       struct nvmf_tcp_fatal *err);

/*
 * Parse a command capsule's SGL for this transport. icd_len is the amount of
 * in-capsule data the PDU carried. Returns 0 (setting *length, and *icd and
 * *icd_offset for in-capsule data) or the NVMe status to complete the
 * command with.
 */
uint16_t nvmf_tcp_sgl_parse(const struct nvme_cmd *cmd, uint32_t icd_len, uint32_t max_icd,
			    uint32_t max_io_size, uint32_t *length, bool *icd,
			    uint32_t *icd_offset);

/*
 * The transport's structures (tcp.c: transport, listeners, poll groups;
 * tcp_conn.c: connections and their requests).
 */
#define TCP_RX_BUF_SIZE     (64u * 1024)
/* Data of at least this many bytes is read straight into its buffer. */
#define TCP_DIRECT_READ_MIN 4096u
#define TCP_RX_BUDGET       64
#define TCP_TX_IOV_MAX      64
/* sendmsg() calls of one flush; EPOLLOUT or the next poll goes on from there. */
#define TCP_TX_BUDGET       64
/* Data bytes per C2HData PDU; larger reads are split. */
#define TCP_C2H_MAX_DATA    (64u * 1024)
#define TCP_MAXH2CDATA      (128u * 1024)
/* The admin queue always takes 8 KiB of in-capsule data (Connect, Set Features...). */
#define TCP_ADMIN_ICD_SIZE  8192u
/* After a C2HTermReq, how long to wait for the host to close. */
#define TCP_LINGER_US       (2u * 1000 * 1000)
#define TCP_LISTEN_BACKLOG  512
/* Out of fds or memory on accept: stop watching the listener this long. */
#define TCP_ACCEPT_RETRY_US (100u * 1000)
/* Admission drops and handshake timeouts are logged as counts, at most once per this period. */
#define TCP_DROP_LOG_US     (1000u * 1000)

struct tcp_transport {
	struct nvmf_transport base;
	uint32_t max_iov;  /* data buffers of one request */
	uint32_t icd_size; /* in-capsule area of one request */
	uint32_t maxh2cdata;
	TAILQ_HEAD(, tcp_listener) listeners;
};

struct tcp_listener {
	struct tcp_transport *tt;
	struct nvmf_listen_addr addr;
	int fd;
	struct fd_event *ev; /* NULL while accepting is paused */
	struct poller *accept_retry;
	bool accept_warned;
	TAILQ_ENTRY(tcp_listener) link;
};

struct tcp_qpair;
struct tcp_req;

struct tcp_group {
	struct nvmf_transport_poll_group base; /* first: the core allocates the group */
	struct tcp_transport *tt;
	struct poller *timeout_poller;
	TAILQ_HEAD(, tcp_qpair) qpairs;
	TAILQ_HEAD(, tcp_qpair) dirty;
	uint64_t term_reqs_sent;
	uint64_t hdgst_errors;
	uint64_t ddgst_errors;
	uint64_t pdu_timeouts;
	uint64_t tls_refused; /* secure channel handshakes that failed */
	/*
	 * Connections not admitted yet (see tcp_conn.c), oldest first: the
	 * oldest of a listener goes when a new one would pass its share of
	 * max_pending_connections.
	 */
	TAILQ_HEAD(, tcp_qpair) pending;
	uint64_t pending_dropped;    /* pending connections dropped for a newer one */
	uint64_t handshake_timeouts; /* closed for handshake_timeout_ms */
	/* Not logged yet (at most one line per TCP_DROP_LOG_US), and when the last line went. */
	uint64_t drops_unlogged;
	uint64_t timeouts_unlogged;
	uint64_t drop_log_tick;
};

struct tcp_pdu {
	union nvme_tcp_pdu_hdr hdr;
	uint8_t ddgst[NVME_TCP_DIGEST_LEN];
	struct iovec *iov;
	int iovcnt;
	uint32_t len;
	uint32_t sent;
	struct tcp_req *req;
	void (*done)(struct tcp_qpair *tq, struct tcp_pdu *pdu);
	bool queued;
	TAILQ_ENTRY(tcp_pdu) link;
};

enum tcp_req_state {
	TREQ_FREE,
	TREQ_RECV,     /* capsule or its in-capsule data arriving */
	TREQ_NEED_BUF, /* waiting for data buffers (in the group's buf_wait) */
	TREQ_R2T,      /* R2T sent, H2CData arriving */
	TREQ_EXEC,     /* in the core */
	TREQ_SEND,     /* C2HData / CapsuleResp queued */
};

struct tcp_req {
	struct nvmf_request req;
	struct tcp_qpair *tq;
	enum tcp_req_state state;
	uint16_t ttag;
	/* A failure found before execution, reported once the data is in. */
	uint16_t status;
	bool icd;
	uint32_t h2c_off;
	uint32_t c2h_off;
	uint8_t *icd_buf;
	struct iovec icd_iov;
	struct tcp_pdu pdu; /* R2T or C2HData */
	struct tcp_pdu rsp; /* CapsuleResp */
	struct iovec rsp_iov[1];
	TAILQ_ENTRY(tcp_req) link;
};

enum tcp_qpair_state {
	TQ_TLS_HANDSHAKE, /* secure channel: TLS before the ICReq */
	TQ_AWAIT_ICREQ,
	TQ_RUNNING,
	TQ_TERMINATING, /* C2HTermReq queued; input is discarded */
	TQ_CLOSED,      /* socket closed */
};

enum tcp_rx_state {
	RX_CH,
	RX_PSH,
	RX_PAD,
	RX_DATA,
	RX_DDGST,
	RX_DISCARD,
};

struct tcp_qpair {
	struct nvmf_qpair qpair;
	struct tcp_group *group;
	struct tcp_transport *tt;
	int fd;
	/* The secure channel of a secure_channel listener; NULL on plaintext. */
	struct nvme_tls_sock *tls;
	struct fd_event *ev;
	uint32_t ev_mask;
	enum tcp_qpair_state state;
	bool hdgst;
	bool ddgst;
	uint32_t hpda;
	bool fini_started;
	bool fini_done;
	bool in_dirty;
	bool write_shut;
	bool pending; /* in group->pending: not admitted yet */
	uint32_t holds;
	/* Closes the connection when it fires: the ICReq wait, then the TermReq linger. */
	struct poller *linger;

	/* Receive. */
	enum tcp_rx_state rx_state;
	uint64_t rx_pdus; /* PDUs awaited so far (rx_reset calls) */
	/* Accepted (ticks): the clock for the TLS handshake and the ICReq. */
	uint64_t accept_tick;
	/* ICReq received (ticks): the clock for the Connect. */
	uint64_t since_tick;
	/* The timeout check saw PDU number tmo_pdus begun at tmo_since (ticks). */
	bool tmo_mid;
	uint64_t tmo_pdus;
	uint64_t tmo_since;
	/* Staging buffer, allocated once the queue is admitted (a stack buffer until then). */
	uint8_t *rxbuf;
	const uint8_t *rx_cur; /* the bytes rx_consume() works on */
	uint32_t rx_off;
	uint32_t rx_len;
	union nvme_tcp_pdu_hdr rx_hdr;
	uint32_t rx_got;
	uint32_t rx_need;
	struct nvmf_tcp_layout layout;
	struct tcp_req *rx_req;
	struct iovec *rx_iov; /* data destination, NULL = discard */
	int rx_iovcnt;
	struct iovec rx_icd_iov;
	uint32_t rx_data_off; /* offset in rx_iov of the next byte */
	uint32_t rx_left;
	uint32_t rx_crc;
	uint8_t rx_ddgst[NVME_TCP_DIGEST_LEN];

	/* Transmit. */
	TAILQ_HEAD(, tcp_pdu) tx_queue;
	/*
	 * The ICResp and the C2HTermReq have a PDU each: a host may send its
	 * ICReq and a fatal PDU in one segment, so the TermReq can be queued
	 * while the ICResp still is.
	 */
	struct tcp_pdu icresp_pdu;
	struct iovec icresp_iov[1];
	struct tcp_pdu term_pdu;
	struct iovec term_iov[1];
	uint8_t term_buf[NVME_TCP_TERM_REQ_MAX_PLEN];

	/*
	 * Requests: none until the Connect, one until the queue is admitted, then
	 * want_reqs (the Connect's SQSIZE + 1, within the limits).
	 */
	struct tcp_req *reqs;
	uint32_t want_reqs;
	uint32_t num_reqs;
	uint32_t num_busy;
	TAILQ_HEAD(, tcp_req) free_reqs;
	uint8_t *icd_area;
	struct iovec *iov_area;
	void **buf_area;

	TAILQ_ENTRY(tcp_qpair) link;
	TAILQ_ENTRY(tcp_qpair) dirty_link;
	TAILQ_ENTRY(tcp_qpair) pending_link;
};

/* tcp_conn.c */

/*
 * Set up a connection accepted on `addr` on the calling thread (pg's), with
 * the admission token of nvmf_tgt_conn_admit(). Returns 0 (the connection
 * owns fd and the token from then on) or a negative errno (the caller still
 * owns both).
 */
int nvmf_tcp_conn_create(struct tcp_transport *tt, struct tcp_group *group,
			 struct nvmf_poll_group *pg, int fd, const struct nvmf_listen_addr *addr,
			 const char *peer, uint16_t admit_portid);
/* Flush connections with queued PDUs (the group's poller; the core then retries buffers). */
int nvmf_tcp_group_poll(struct nvmf_transport_poll_group *tgroup);
/* The group's tgroup ops->bufs_ready: pull host data with an R2T, or execute a read. */
void nvmf_tcp_req_bufs_ready(struct nvmf_request *req);
/*
 * Close the group's connections that overran handshake_timeout_ms (TLS
 * handshake and ICReq) or pdu_timeout_ms (a Connect that did not come, a PDU
 * begun and not finished); timed poller.
 */
int nvmf_tcp_group_check_timeouts(struct tcp_group *group);
void nvmf_tcp_req_complete(struct nvmf_request *req);
void nvmf_tcp_qpair_disconnect(struct nvmf_qpair *qpair);

#endif /* GGA_NVMF_TCP_INTERNAL_H */
