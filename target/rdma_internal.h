/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/RDMA transport internals: the pure checks of rdma_capsule.c (CM
 * private data, SGL parsing, capsule sizes, how a transfer splits into RDMA
 * work requests; no device needed, so unit tests reach them), and the
 * structures shared by rdma.c (transport, devices, listeners, CM events, poll
 * groups) and rdma_conn.c (connections, requests, completions).
 *
 * Only rdma_capsule.c's part of this header is free of libibverbs; the rest
 * is compiled only when GGA_CONFIG_RDMA is defined.
 */
#ifndef GGA_NVMF_RDMA_INTERNAL_H
#define GGA_NVMF_RDMA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/uio.h>

#include "gga/nvme_rdma.h"
#include "gga/nvme_spec.h"

#include "nvmf_transport.h"

/* In-capsule data an admin queue takes whatever the option says (Connect data and more). */
#define RDMA_ADMIN_ICD_SIZE 4096u
/* Local SGEs of one RDMA READ/WRITE (further limited by the device). */
#define RDMA_MAX_SGE        16u

/*
 * The limits a connect request is checked against.
 */
struct nvmf_rdma_cm_limits {
	uint32_t max_aq_depth;    /* admin queue entries */
	uint32_t max_queue_depth; /* I/O queue entries */
	uint32_t max_io_qpairs;   /* highest I/O queue ID */
};

/* What a valid connect request asks for. */
struct nvmf_rdma_cm_params {
	uint16_t qid;
	uint32_t sq_entries; /* hsqsize + 1: commands the host may send at once */
	uint32_t hrqsize;    /* responses the host can take at once */
	uint16_t cntlid;
};

/*
 * Check the private data of an RDMA_CM connect request (`len` bytes, which
 * may include transport padding beyond the 32 NVMe bytes). Returns 0 and
 * fills *params, or the enum nvme_rdma_cm_status to reject with.
 */
uint16_t nvmf_rdma_cm_req_check(const void *pdata, size_t len,
				const struct nvmf_rdma_cm_limits *lim,
				struct nvmf_rdma_cm_params *params);

/* Where a command's data is, from its SGL. */
struct nvmf_rdma_sgl {
	uint32_t length; /* bytes to move (0: none) */
	bool icd;        /* in the capsule, at icd_offset of the capsule's data */
	uint32_t icd_offset;
	uint64_t raddr; /* keyed: host address and key */
	uint32_t rkey;
	bool invalidate; /* keyed: the host asks for Send with Invalidate of rkey */
};

/*
 * Parse a command capsule's SGL for NVMe/RDMA. icd_len is how many bytes
 * followed the 64-byte command in the capsule, max_icd what the capsule
 * buffer may hold. Returns 0 (with *sgl filled) or the NVMe status (with DNR)
 * to complete the command with.
 */
uint16_t nvmf_rdma_sgl_parse(const struct nvme_cmd *cmd, uint32_t icd_len, uint32_t max_icd,
			     uint32_t max_io_size, struct nvmf_rdma_sgl *sgl);

/* Bytes of a command capsule carrying up to icd bytes of data. */
uint32_t nvmf_rdma_capsule_size(uint32_t icd);

/* In-capsule data bytes of one capsule buffer of a queue (the admin queue takes more). */
uint32_t nvmf_rdma_queue_icd(uint16_t qid, uint32_t in_capsule_data_size);

/*
 * How a keyed transfer of `length` bytes is carried: data buffers of `unit`
 * bytes, and RDMA READ/WRITE work requests of up to max_sge buffers each.
 */
struct nvmf_rdma_xfer_plan {
	uint32_t nbufs;
	uint32_t nwrs;
};
void nvmf_rdma_xfer_plan(uint32_t length, uint32_t unit, uint32_t max_sge,
			 struct nvmf_rdma_xfer_plan *plan);

#ifdef GGA_CONFIG_RDMA

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "gga/env.h"
#include "gga/thread.h"

/* Unacknowledged CQ events before ibv_ack_cq_events (it takes a lock). */
#define RDMA_CQ_ACK_BATCH     16u
#define RDMA_POLL_BATCH       32
/* How long a closing connection waits for its flushed work requests. */
#define RDMA_CLOSE_TIMEOUT_US (5u * 1000 * 1000)
#define RDMA_LISTEN_BACKLOG   128
/* A connection manager channel that keeps failing is watched again after this. */
#define RDMA_CM_RETRY_US      (100u * 1000)

/* What a cm_id's context points to. */
enum rdma_id_kind {
	RDMA_ID_LISTENER,
	RDMA_ID_QPAIR,
};

/* One RDMA device (ibv_context): its protection domain and the arena's registration. */
struct rdma_device {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *mr; /* the env arena */
	struct ibv_device_attr attr;
	uint32_t max_sge; /* local SGEs of one READ/WRITE */
	TAILQ_ENTRY(rdma_device) link;
};

struct rdma_transport {
	struct nvmf_transport base;
	uint32_t max_bufs; /* data buffers of one request */
	struct env_mem_region arena;
	struct rdma_event_channel *ec;
	struct fd_event *ec_ev; /* NULL while paused after an error */
	struct poller *ec_retry;
	bool ec_warned;
	TAILQ_HEAD(, rdma_listener) listeners;
	TAILQ_HEAD(, rdma_device) devices;
	/* Every connection not yet destroyed (app thread). */
	TAILQ_HEAD(, rdma_qpair) conns;
};

struct rdma_listener {
	enum rdma_id_kind kind;
	struct rdma_transport *rt;
	struct nvmf_listen_addr addr;
	struct rdma_cm_id *id;
	TAILQ_ENTRY(rdma_listener) link;
};

struct rdma_req;

struct rdma_group {
	struct nvmf_transport_poll_group base; /* first: the core allocates the group */
	struct rdma_transport *rt;
	TAILQ_HEAD(, rdma_qpair) qpairs;
	/* Connections whose CQ is polled (not armed) right now. */
	TAILQ_HEAD(, rdma_qpair) active;
	uint64_t recvs;
	uint64_t icd_cmds;
	uint64_t reads;
	uint64_t writes;
	uint64_t sends;
	uint64_t sq_waits;
	uint64_t cq_events;
	uint64_t completion_errors;
	uint64_t bad_capsules;
};

/* The first field of every object a work request ID points to. */
enum rdma_wr_kind {
	RDMA_WR_RECV,
	RDMA_WR_DATA, /* RDMA READ or WRITE of a request */
	RDMA_WR_SEND, /* the response */
};

struct rdma_recv {
	enum rdma_wr_kind kind;
	struct rdma_qpair *rq;
	uint8_t *buf;
	uint32_t byte_len;
	struct ibv_recv_wr wr;
	struct ibv_sge sge;
	STAILQ_ENTRY(rdma_recv) link;
};

enum rdma_req_state {
	RREQ_FREE,
	RREQ_NEED_BUF,  /* waiting for data buffers (in the group's buf_wait) */
	RREQ_NEED_READ, /* waiting for send queue slots / read credits */
	RREQ_READING,   /* RDMA READs of host data posted */
	RREQ_EXEC,      /* in the core */
	RREQ_NEED_SEND, /* response (and WRITEs) waiting for send queue slots */
	RREQ_SENDING,   /* WRITEs and response posted */
};

struct rdma_wr_ref {
	enum rdma_wr_kind kind;
	struct rdma_req *req;
};

struct rdma_req {
	struct nvmf_request req;
	struct rdma_qpair *rq;
	enum rdma_req_state state;
	struct nvmf_rdma_sgl sgl;
	/* The capsule, while its in-capsule data is in use. */
	struct rdma_recv *recv;
	struct iovec icd_iov;
	/* RDMA READ/WRITE work requests: [max_wrs], and their SGEs [max_bufs]. */
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint32_t nwrs;
	uint32_t next_wr; /* READs: the next one to post */
	uint32_t wrs_out; /* posted, not yet completed */
	bool wr_error;
	struct rdma_wr_ref data_ref;
	struct rdma_wr_ref send_ref;
	struct nvme_cpl *rsp; /* in the arena */
	struct ibv_send_wr rsp_wr;
	struct ibv_sge rsp_sge;
	TAILQ_ENTRY(rdma_req) link;
};

enum rdma_qpair_state {
	RQ_INIT,    /* being set up on the app thread */
	RQ_RUNNING, /* on its poll group */
	RQ_CLOSED,  /* QP in error; waiting for flushes and the core */
	RQ_DONE,    /* poll group side finished; the app thread destroys it */
};

struct rdma_qpair {
	struct nvmf_qpair qpair;
	enum rdma_id_kind kind; /* cm_id context */
	struct rdma_transport *rt;
	struct rdma_device *dev;
	struct rdma_group *group;
	struct nvmf_poll_group *pg;
	struct nvmf_listen_addr listen;
	char peer[64];
	struct rdma_cm_id *id;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct fd_event *ev;
	struct poller *close_timer;
	enum rdma_qpair_state state;
	uint16_t cm_qid;
	bool active; /* in group->active */
	bool fini_started;
	bool fini_done;
	uint32_t holds;
	uint32_t cq_events_unacked;

	/* Receive side: one capsule buffer per command the host may send. */
	struct rdma_recv *recvs;
	uint32_t num_recvs;
	uint32_t recvs_posted;
	uint32_t icd_size; /* data bytes one capsule buffer holds */
	uint8_t *capsule_area;
	STAILQ_HEAD(, rdma_recv) pending; /* capsules waiting for a free request */

	/* Requests and the send queue. */
	struct rdma_req *reqs;
	uint32_t num_reqs;
	uint32_t num_busy;
	TAILQ_HEAD(, rdma_req) free_reqs;
	TAILQ_HEAD(, rdma_req) sq_wait;
	uint32_t sq_free;    /* send queue slots */
	uint32_t reads_free; /* RDMA READs the initiator depth still allows */
	uint32_t max_reads;
	uint32_t sends_out;
	struct nvme_cpl *rsp_area;
	struct iovec *iov_area;
	void **buf_area;
	struct ibv_send_wr *wr_area;
	struct ibv_sge *sge_area;

	/* App thread only. */
	bool app_disc_sent;
	bool app_disc_acked;
	bool app_pg_done;
	TAILQ_ENTRY(rdma_qpair) conn_link;
	/* Poll group thread only. */
	TAILQ_ENTRY(rdma_qpair) link;
	TAILQ_ENTRY(rdma_qpair) active_link;
};

/* rdma.c */
struct rdma_device *nvmf_rdma_device_get(struct rdma_transport *rt, struct ibv_context *verbs);

/* rdma_conn.c */

/*
 * A validated connect request: create the connection's queues on the app
 * thread, post its receives, accept, and hand it to a poll group. Returns 0
 * (the connection owns admit_portid, the token of nvmf_tgt_conn_admit()), or
 * the reject status to answer the request with (the caller rejects and
 * destroys id, and still owns the token).
 */
uint16_t nvmf_rdma_conn_accept(struct rdma_transport *rt, struct rdma_listener *l,
			       struct rdma_cm_id *id, const struct nvmf_rdma_cm_params *params,
			       const struct rdma_conn_param *peer, uint16_t admit_portid);
/* A CM event that ends the connection (app thread). */
void nvmf_rdma_conn_cm_disconnect(struct rdma_qpair *rq);
/* Destroy the app-side remains of a connection at transport destruction. */
void nvmf_rdma_conn_destroy(struct rdma_qpair *rq);
/* Poll the group's active connections (its poller; the core then retries buffers). */
int nvmf_rdma_group_poll(struct nvmf_transport_poll_group *tgroup);
/* The group's tgroup ops->bufs_ready: lay out the READs/WRITEs, pull host data or run a read. */
void nvmf_rdma_req_bufs_ready(struct nvmf_request *req);
void nvmf_rdma_req_complete(struct nvmf_request *req);
void nvmf_rdma_qpair_disconnect(struct nvmf_qpair *qpair);

#endif /* GGA_CONFIG_RDMA */

#endif /* GGA_NVMF_RDMA_INTERNAL_H */
