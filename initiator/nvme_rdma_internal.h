/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/RDMA transport's own types (nvme_rdma.c, nvme_rdma_util.c): its
 * queue pair, which embeds struct nvme_qpair, its per-request state and the
 * pure helpers. The generic code reaches the transport through nvme_rdma_ops.
 */
#ifndef GGA_NVME_RDMA_INTERNAL_H
#define GGA_NVME_RDMA_INTERNAL_H

#include "gga/util.h"

#include "nvme_internal.h"

/* Where the data of an NVMe/RDMA command travels. */
enum nvme_rdma_data_mode {
	RDMA_DATA_NONE = 0,
	RDMA_DATA_INCAPSULE,      /* in the capsule: the caller's buffer as a second SGE */
	RDMA_DATA_INCAPSULE_COPY, /* in the capsule: a bounce buffer copy as second SGE */
	RDMA_DATA_KEYED,          /* keyed SGL on the caller's buffer (registered arena) */
	RDMA_DATA_BOUNCE,         /* keyed SGL on a registered bounce buffer, copied */
};

/* Per-request NVMe/RDMA state. */
struct nvme_rdma_req {
	enum nvme_rdma_data_mode mode;
	/* A request completes when both happened, in either order. */
	bool send_done;
	bool rsp_received;
	int32_t bounce; /* bounce buffer index, -1 for none */
	struct nvme_cpl cpl;
};

enum nvme_rdma_conn_state {
	RDMA_CONN_CLOSED = 0,
	RDMA_CONN_ADDR,       /* rdma_resolve_addr in progress */
	RDMA_CONN_ROUTE,      /* rdma_resolve_route in progress */
	RDMA_CONN_CONNECTING, /* rdma_connect sent, waiting for ESTABLISHED */
	RDMA_CONN_READY,
};

struct nvme_rdma_device;
struct rdma_event_channel;
struct rdma_cm_id;
struct ibv_comp_channel;
struct ibv_cq;
struct ibv_mr;

/*
 * The connection of an NVMe/RDMA queue pair. The verbs objects and the
 * buffer block exist from connect to disconnect; the struct itself lives as
 * long as the queue pair.
 */
struct nvme_rdma_conn {
	enum nvme_rdma_conn_state state;
	struct rdma_event_channel *cm_channel;
	struct fd_event *cm_ev;
	struct rdma_cm_id *cm_id;
	struct nvme_rdma_device *dev;
	struct ibv_comp_channel *comp_channel;
	struct fd_event *comp_ev;
	struct ibv_cq *cq;
	struct poller *cq_poller;
	bool cq_armed;
	uint32_t cq_events_unacked;
	/* The arena as registered with this device (len 0: none). */
	uintptr_t arena_base;
	size_t arena_len;
	uint32_t arena_lkey;
	uint32_t arena_rkey;
	/* One block: command capsules, response buffers, bounce buffers. */
	uint8_t *buf;
	struct ibv_mr *buf_mr; /* NULL when the block lies in the registered arena */
	uint32_t buf_lkey;
	uint32_t buf_rkey;
	uint8_t *capsules; /* one per request slot (cid), capsule_size each */
	uint32_t capsule_size;
	uint8_t *rsps; /* num_rsps response capsules, one RECV each */
	uint32_t num_rsps;
	uint8_t *bounce;
	uint32_t bounce_size;
	uint32_t num_bounce;
	uint16_t *bounce_free; /* stack of free bounce indexes */
	uint32_t bounce_free_cnt;
	uint32_t max_icd;
	uint32_t max_send_sge;
	/* Bumped at every close so a callback can tell that the connection changed under it. */
	uint32_t epoch;
};

/* A queue pair on this transport: the generic queue pair and its connection. */
struct nvme_rdma_qpair {
	struct nvme_qpair qpair;
	struct nvme_rdma_conn conn;
};

static inline struct nvme_rdma_conn *
nvme_rdma_conn(const struct nvme_qpair *qpair)
{
	return &container_of(qpair, struct nvme_rdma_qpair, qpair)->conn;
}

static inline struct nvme_rdma_req *
nvme_rdma_req(const struct nvme_request *req)
{
	return nvme_request_ctx(req);
}

/* nvme_rdma_util.c: pure NVMe/RDMA helpers (built with CONFIG_RDMA; no verbs calls). */
struct nvme_rdma_cm_req;
/* RDMA CM connect private data: hrqsize = entries, hsqsize = entries - 1. */
void nvme_rdma_build_cm_req(struct nvme_rdma_cm_req *req, uint16_t qid, uint16_t entries,
			    uint16_t cntlid);
/*
 * Describe a connect reject into buf: cm_status is the RDMA CM reject reason,
 * pdata/pdata_len the reject's private data (NULL/0 if none). Returns the
 * errno to fail with (-ECONNREFUSED; -EINVAL for the queue size rejects).
 */
int nvme_rdma_describe_reject(int cm_status, const void *pdata, uint32_t pdata_len, char *buf,
			      size_t len);
/*
 * How a command's data travels: contiguous tells whether the data is one
 * virtually contiguous range, in_arena whether that range lies in the
 * registered arena, max_icd the in-capsule data limit of the queue.
 */
enum nvme_rdma_data_mode nvme_rdma_choose_data_mode(enum nvme_data_xfer xfer, uint32_t len,
						    bool contiguous, bool in_arena,
						    uint32_t max_icd);
/* Fill the SGL of a command for a mode: in-capsule at offset 0, or keyed (addr, len, key). */
void nvme_rdma_cmd_set_sgl(struct nvme_cmd *cmd, enum nvme_rdma_data_mode mode, uint64_t addr,
			   uint32_t len, uint32_t rkey);
/* Check a received response capsule: 0 and *cpl, or -EPROTO if it is too short. */
int nvme_rdma_parse_rsp(const void *buf, uint32_t byte_len, struct nvme_cpl *cpl);
/* Reset the completion state of a request being sent. */
void nvme_rdma_req_start(struct nvme_rdma_req *rr, enum nvme_rdma_data_mode mode, int32_t bounce);
/* The SEND of the command completed. Returns 1 if the request completes now, else 0. */
int nvme_rdma_req_send_done(struct nvme_rdma_req *rr);
/* The response arrived. Returns 1 if it completes now, 0 if not, -EPROTO for a duplicate. */
int nvme_rdma_req_rsp_received(struct nvme_rdma_req *rr, const struct nvme_cpl *cpl);
/* Copy between a byte range of an iovec array and a flat buffer. Returns bytes copied. */
size_t nvme_rdma_copy_from_iov(void *dst, const struct iovec *iov, int iovcnt, size_t offset,
			       size_t len);
size_t nvme_rdma_copy_to_iov(const struct iovec *iov, int iovcnt, size_t offset, const void *src,
			     size_t len);

#endif /* GGA_NVME_RDMA_INTERNAL_H */
