/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/RDMA transport of the host: one RC queue pair per NVMe queue,
 * set up through the RDMA CM, watched by the queue pair's thread.
 *
 * Connecting: everything is asynchronous. Each connection has its own CM
 * event channel (a non-blocking fd in the thread's epoll set): address and
 * route resolution, then the protection domain, completion queue and QP,
 * a RECV posted for every response slot, and rdma_connect with the NVMe/RDMA
 * private data. ESTABLISHED hands over to the core, which sends the Fabrics
 * Connect command; every failure event fails the queue pair, and the core's
 * connect timeout bounds the whole sequence.
 *
 * Commands: the 64-byte SQE is copied into the slot's capsule buffer and
 * SENT. Small writes carry their data in the capsule as a second SGE: the
 * caller's buffer when it lies in the arena, else a bounce buffer it was
 * copied into.
 * Other data is described by one keyed SGL data block: the caller's buffer
 * when it is one range inside the arena (registered once per device), or a
 * registered bounce buffer of the queue that the data is copied through.
 * Nothing is allocated or registered per I/O.
 *
 * Completions: responses arrive by RECV, are matched by command id, and the
 * RECV is posted again at once. A request completes when both its SEND
 * completion and its response have been seen, in either order, since the
 * capsule buffer is ours again only then. The CQ is drained by a poller
 * while there is work; when a poll finds nothing the CQ is armed and the
 * completion channel fd wakes the thread, so an idle queue costs nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/nvme_rdma.h"
#include "gga/util.h"

#include "nvme_rdma_internal.h"

/* Work completions reaped per ibv_poll_cq call. */
#define CQ_BATCH          32
/* Completion channel events acknowledged at once (ibv_ack_cq_events takes a lock). */
#define CQ_ACK_BATCH      64
/* In-capsule data used at most, whatever IOCCSZ allows. */
#define MAX_ICD           8192u
/*
 * Bounce buffers: at most this many per queue, of at most this size. They
 * serve only data outside the arena or in several pieces (rare: I/O buffers
 * come from the arena), so a few per queue keep the arena free for the rest.
 */
#define MAX_BOUNCE_BUFS   4u
#define MAX_BOUNCE_SIZE   (128u * 1024)
#define ADMIN_BOUNCE_BUFS 4u
/* RDMA READ/WRITE the target may have outstanding against us, at most. */
#define MAX_RD_ATOMIC     16
/* wr_id: kind in the high half, index (cid or response slot) in the low half. */
/* Round x up to a multiple of the power of two a. */
#define ALIGN_UP(x, a)    (((x) + (a)-1) & ~((__typeof__(x))(a)-1))
#define WRID_SEND         1ull
#define WRID_RECV         2ull
#define WRID(kind, idx)   ((kind) << 32 | (uint64_t)(idx))
#define WRID_KIND(id)     ((id) >> 32)
#define WRID_IDX(id)      ((uint32_t)(id))

/*
 * A verbs device as this process uses it: one protection domain and the
 * arena registered once in it. Kept for the life of the process, so that
 * reconnect attempts do not register the arena again each time.
 */
struct nvme_rdma_device {
	struct nvme_rdma_device *next;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *arena_mr;
	int max_qp_rd_atom;
	int max_qp_init_rd_atom;
	uint32_t max_sge;
};

static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvme_rdma_device *g_devs;

static int rdma_cm_on_event(void *ctx, uint32_t events);
static int rdma_comp_on_event(void *ctx, uint32_t events);
static int rdma_cq_poll(void *ctx);

/* The arena, found through a probe allocation (the region never moves while initialised). */
static int
arena_region(struct env_mem_region *region)
{
	void *probe = env_dma_malloc(64, 0);
	int rc;

	if (probe == NULL) {
		return -ENOENT;
	}
	rc = env_mem_find_region(probe, 64, region);
	env_dma_free(probe);
	return rc;
}

static struct nvme_rdma_device *
device_get(struct ibv_context *verbs, const char *name)
{
	struct nvme_rdma_device *dev;
	struct ibv_device_attr attr;
	struct env_mem_region region;

	pthread_mutex_lock(&g_dev_lock);
	for (dev = g_devs; dev != NULL; dev = dev->next) {
		if (dev->verbs == verbs) {
			goto out_unlock;
		}
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL) {
		goto out_unlock;
	}
	dev->verbs = verbs;
	dev->max_qp_rd_atom = 4;
	dev->max_qp_init_rd_atom = 4;
	dev->max_sge = 2;
	if (ibv_query_device(verbs, &attr) == 0) {
		dev->max_qp_rd_atom = attr.max_qp_rd_atom;
		dev->max_qp_init_rd_atom = attr.max_qp_init_rd_atom;
		dev->max_sge = (uint32_t)attr.max_sge;
	}
	dev->pd = ibv_alloc_pd(verbs);
	if (dev->pd == NULL) {
		ERRLOG("nvme %s: ibv_alloc_pd on %s failed: %s\n", name,
		       ibv_get_device_name(verbs->device), strerror(errno));
		free(dev);
		dev = NULL;
		goto out_unlock;
	}
	if (arena_region(&region) == 0) {
		dev->arena_mr = ibv_reg_mr(dev->pd, region.addr, region.len,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_WRITE);
		if (dev->arena_mr == NULL) {
			/* Still usable: all data then goes through registered bounce buffers. */
			WARNLOG("nvme %s: cannot register the %zu-byte buffer arena with %s (%s); "
				"data will be copied through bounce buffers (check ulimit -l)\n",
				name, region.len, ibv_get_device_name(verbs->device),
				strerror(errno));
		}
	}
	dev->next = g_devs;
	g_devs = dev;
out_unlock:
	pthread_mutex_unlock(&g_dev_lock);
	return dev;
}

static bool
in_arena(const struct nvme_rdma_conn *conn, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	return a >= conn->arena_base && len <= conn->arena_len &&
	       a - conn->arena_base <= conn->arena_len - len;
}

static int
set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		return -errno;
	}
	return 0;
}

static void
conn_reset_fields(struct nvme_rdma_conn *conn)
{
	uint32_t epoch = conn->epoch;

	memset(conn, 0, sizeof(*conn));
	conn->epoch = epoch;
}

static void
rdma_disconnect_qp(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);

	if (conn->state == RDMA_CONN_CLOSED && conn->cm_channel == NULL) {
		return;
	}
	poller_unregister(&conn->cq_poller);
	thread_fd_unregister(&conn->comp_ev);
	thread_fd_unregister(&conn->cm_ev);
	if (conn->cm_id != NULL) {
		if (conn->state >= RDMA_CONN_CONNECTING) {
			/* Tell the target; the QP goes to the error state, destroyed at once. */
			(void)rdma_disconnect(conn->cm_id);
		}
		if (conn->cm_id->qp != NULL) {
			rdma_destroy_qp(conn->cm_id);
		}
	}
	if (conn->cq != NULL) {
		if (conn->cq_events_unacked > 0) {
			ibv_ack_cq_events(conn->cq, conn->cq_events_unacked);
		}
		if (ibv_destroy_cq(conn->cq) != 0) {
			WARNLOG("nvme %s: ibv_destroy_cq: %s\n", qp->name, strerror(errno));
		}
	}
	if (conn->comp_channel != NULL) {
		ibv_destroy_comp_channel(conn->comp_channel);
	}
	if (conn->buf_mr != NULL) {
		ibv_dereg_mr(conn->buf_mr);
	}
	if (conn->buf != NULL) {
		/* Without an MR of its own, the block came from the registered arena. */
		if (conn->buf_mr == NULL) {
			env_dma_free(conn->buf);
		} else {
			free(conn->buf);
		}
	}
	free(conn->bounce_free);
	if (conn->cm_id != NULL) {
		rdma_destroy_id(conn->cm_id);
	}
	if (conn->cm_channel != NULL) {
		rdma_destroy_event_channel(conn->cm_channel);
	}
	conn->epoch++;
	conn_reset_fields(conn);
}

static int
rdma_connect_start(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct nvme_ctrlr *ctrlr = qp->ctrlr;
	struct sockaddr_in sin;
	int rc;

	rc = nvme_qpair_sockaddr(qp, &sin);
	if (rc != 0) {
		return rc;
	}
	conn_reset_fields(conn);

	conn->cm_channel = rdma_create_event_channel();
	if (conn->cm_channel == NULL) {
		rc = errno == ENODEV ? -ENODEV : -errno;
		nvme_qpair_error(qp, rc, "rdma_create_event_channel: %s (is rdma_ucm loaded?)",
				 strerror(-rc));
		goto out_disconnect;
	}
	rc = set_nonblock(conn->cm_channel->fd);
	if (rc != 0) {
		nvme_qpair_error(qp, rc, "cannot make the CM channel non-blocking: %s",
				 strerror(-rc));
		goto out_disconnect;
	}
	if (rdma_create_id(conn->cm_channel, &conn->cm_id, qp, RDMA_PS_TCP) != 0) {
		rc = -errno;
		conn->cm_id = NULL;
		nvme_qpair_error(qp, rc, "rdma_create_id: %s", strerror(-rc));
		goto out_disconnect;
	}
	conn->cm_ev = thread_fd_register(conn->cm_channel->fd, THREAD_FD_IN, rdma_cm_on_event, qp,
					 qp->name);
	if (conn->cm_ev == NULL) {
		rc = -ENOMEM;
		nvme_qpair_error(qp, rc, "cannot watch the CM channel");
		goto out_disconnect;
	}
	conn->state = RDMA_CONN_ADDR;
	if (rdma_resolve_addr(conn->cm_id, NULL, (struct sockaddr *)&sin,
			      (int)ctrlr->opts.connect_timeout_ms) != 0) {
		rc = -errno;
		nvme_qpair_error(qp, rc, "rdma_resolve_addr %s: %s", ctrlr->trid.traddr,
				 strerror(-rc));
		goto out_disconnect;
	}
	return 0;

out_disconnect:
	rdma_disconnect_qp(qp);
	return rc;
}

static void
bounce_put(struct nvme_rdma_conn *conn, struct nvme_rdma_req *rr)
{
	if (rr->bounce >= 0) {
		conn->bounce_free[conn->bounce_free_cnt++] = (uint16_t)rr->bounce;
		rr->bounce = -1;
	}
}

/* Take a bounce buffer for the data of req (filled for a write): its index and address. */
static int
bounce_take(struct nvme_qpair *qp, struct nvme_request *req, int32_t *bidx, uint8_t **bounce)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	uint32_t len = req->data_len;

	if (unlikely(len > conn->bounce_size)) {
		ERRLOG("nvme %s: a %u-byte transfer outside the registered arena exceeds "
		       "the %u-byte bounce buffers\n",
		       qp->name, len, conn->bounce_size);
		return -EINVAL;
	}
	if (unlikely(conn->bounce_free_cnt == 0)) {
		/* The bdev layer retries -ENOMEM after a completion. */
		return -ENOMEM;
	}
	*bidx = conn->bounce_free[--conn->bounce_free_cnt];
	*bounce = conn->bounce + (size_t)*bidx * conn->bounce_size;
	if (req->xfer == NVME_XFER_HOST_TO_CTRLR) {
		nvme_rdma_copy_from_iov(*bounce, req->iov, req->iovcnt, req->iov_offset, len);
	}
	return 0;
}

static int
post_recv(struct nvme_qpair *qp, uint32_t slot)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct ibv_sge sge = {
		.addr = (uintptr_t)(conn->rsps + (size_t)slot * NVME_RDMA_RSP_CAPSULE_SIZE),
		.length = NVME_RDMA_RSP_CAPSULE_SIZE,
		.lkey = conn->buf_lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WRID(WRID_RECV, slot),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;
	int rc;

	rc = ibv_post_recv(conn->cm_id->qp, &wr, &bad);
	if (rc != 0) {
		return nvme_qpair_error(qp, -rc, "ibv_post_recv: %s", strerror(rc));
	}
	return 0;
}

/* Capsule, response and bounce buffers of one connection: one block, registered once. */
static int
alloc_buffers(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct nvme_rdma_device *dev = conn->dev;
	uint32_t max_xfer, slots = qp->num_reqs + 1;
	size_t caps_len, rsps_len, total;
	uint32_t i;
	int rc;

	conn->max_icd = qp->is_admin ? 0 : GGA_MIN(nvme_ctrlr_io_icd_size(qp->ctrlr), MAX_ICD);
	/* In-capsule data is a second SGE: the capsule buffer holds the SQE only. */
	conn->capsule_size = NVME_SQE_SIZE;
	conn->num_rsps = qp->num_entries;
	if (qp->is_admin) {
		conn->bounce_size = NVME_IDENTIFY_DATA_SIZE;
		conn->num_bounce = ADMIN_BOUNCE_BUFS;
	} else {
		max_xfer = nvme_ctrlr_get_max_xfer_size(qp->ctrlr);
		conn->bounce_size = GGA_MAX(GGA_MIN(max_xfer, MAX_BOUNCE_SIZE),
					    GGA_MAX(NVME_IDENTIFY_DATA_SIZE, conn->max_icd));
		conn->bounce_size = ALIGN_UP(conn->bounce_size, 4096u);
		conn->num_bounce = GGA_MIN(slots, MAX_BOUNCE_BUFS);
	}
	caps_len = ALIGN_UP((size_t)slots * conn->capsule_size, 4096);
	rsps_len = ALIGN_UP((size_t)conn->num_rsps * NVME_RDMA_RSP_CAPSULE_SIZE, 4096);
	total = caps_len + rsps_len + (size_t)conn->num_bounce * conn->bounce_size;

	conn->bounce_free = calloc(conn->num_bounce, sizeof(*conn->bounce_free));
	if (conn->bounce_free == NULL) {
		return nvme_qpair_error(qp, -ENOMEM, "out of memory");
	}
	conn->buf = dev->arena_mr != NULL ? env_dma_malloc(total, 4096) : NULL;
	if (conn->buf != NULL) {
		conn->buf_lkey = dev->arena_mr->lkey;
		conn->buf_rkey = dev->arena_mr->rkey;
	} else {
		/* No registered arena (or it is full): a block of our own, registered once. */
		conn->buf = aligned_alloc(4096, total);
		if (conn->buf == NULL) {
			return nvme_qpair_error(qp, -ENOMEM,
						"out of memory for %zu bytes of buffers", total);
		}
		conn->buf_mr = ibv_reg_mr(dev->pd, conn->buf, total,
					  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_WRITE);
		if (conn->buf_mr == NULL) {
			rc = nvme_qpair_error(qp, -errno, "ibv_reg_mr of %zu bytes: %s", total,
					      strerror(errno));
			free(conn->buf);
			conn->buf = NULL;
			return rc;
		}
		conn->buf_lkey = conn->buf_mr->lkey;
		conn->buf_rkey = conn->buf_mr->rkey;
	}
	memset(conn->buf, 0, caps_len + rsps_len);
	conn->capsules = conn->buf;
	conn->rsps = conn->buf + caps_len;
	conn->bounce = conn->rsps + rsps_len;
	for (i = 0; i < conn->num_bounce; i++) {
		conn->bounce_free[i] = (uint16_t)(conn->num_bounce - 1 - i);
	}
	conn->bounce_free_cnt = conn->num_bounce;
	return 0;
}

/* The route is known: create the verbs resources and send the connect request. */
static int
route_resolved(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct ibv_context *verbs = conn->cm_id->verbs;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param param;
	struct nvme_rdma_cm_req req;
	struct env_mem_region region;
	uint32_t i;
	int rc;

	conn->dev = device_get(verbs, qp->name);
	if (conn->dev == NULL) {
		return nvme_qpair_error(qp, -ENOMEM, "cannot set up the RDMA device");
	}
	if (conn->dev->arena_mr != NULL && arena_region(&region) == 0) {
		conn->arena_base = (uintptr_t)region.addr;
		conn->arena_len = region.len;
		conn->arena_lkey = conn->dev->arena_mr->lkey;
		conn->arena_rkey = conn->dev->arena_mr->rkey;
	}
	if (conn->dev->max_sge < 2) {
		return nvme_qpair_error(qp, -ENOTSUP,
					"the RDMA device has fewer than 2 SGEs per WR");
	}
	conn->max_send_sge = 2;

	conn->comp_channel = ibv_create_comp_channel(verbs);
	if (conn->comp_channel == NULL) {
		return nvme_qpair_error(qp, -errno, "ibv_create_comp_channel: %s", strerror(errno));
	}
	rc = set_nonblock(conn->comp_channel->fd);
	if (rc != 0) {
		return nvme_qpair_error(qp, rc, "cannot make the completion channel non-blocking");
	}
	conn->cq = ibv_create_cq(verbs, 2 * qp->num_entries, qp, conn->comp_channel, 0);
	if (conn->cq == NULL) {
		return nvme_qpair_error(qp, -errno, "ibv_create_cq: %s", strerror(errno));
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_context = qp;
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.qp_type = IBV_QPT_RC;
	/* Every command slot (and the Connect's) may have its SEND in flight. */
	attr.cap.max_send_wr = qp->num_entries;
	attr.cap.max_recv_wr = qp->num_entries;
	attr.cap.max_send_sge = conn->max_send_sge;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(conn->cm_id, conn->dev->pd, &attr) != 0) {
		return nvme_qpair_error(qp, -errno, "rdma_create_qp: %s", strerror(errno));
	}
	rc = alloc_buffers(qp);
	if (rc != 0) {
		return rc;
	}
	/* Responses may come as soon as the target accepts: every RECV is posted first. */
	for (i = 0; i < conn->num_rsps; i++) {
		rc = post_recv(qp, i);
		if (rc != 0) {
			return rc;
		}
	}
	conn->comp_ev = thread_fd_register(conn->comp_channel->fd, THREAD_FD_IN, rdma_comp_on_event,
					   qp, qp->name);
	if (conn->comp_ev == NULL) {
		return nvme_qpair_error(qp, -ENOMEM, "cannot watch the completion channel");
	}

	nvme_rdma_build_cm_req(&req, qp->qid, qp->num_entries, qp->cntlid);
	memset(&param, 0, sizeof(param));
	param.private_data = &req;
	param.private_data_len = sizeof(req);
	/* The target reads our write data: let it have RDMA READs in flight. */
	param.responder_resources = (uint8_t)GGA_MIN(conn->dev->max_qp_rd_atom, MAX_RD_ATOMIC);
	param.initiator_depth = (uint8_t)GGA_MIN(conn->dev->max_qp_init_rd_atom, MAX_RD_ATOMIC);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(conn->cm_id, &param) != 0) {
		return nvme_qpair_error(qp, -errno, "rdma_connect: %s", strerror(errno));
	}
	conn->state = RDMA_CONN_CONNECTING;
	return 0;
}

static int
established(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);

	conn->cq_poller = poller_register(rdma_cq_poll, qp, 0, "nvme_rdma_cq");
	if (conn->cq_poller == NULL) {
		return nvme_qpair_error(qp, -ENOMEM, "cannot register the completion poller");
	}
	conn->state = RDMA_CONN_READY;
	DEBUGLOG(nvme, "%s: RDMA connection established (in-capsule data %u bytes)\n", qp->name,
		 conn->max_icd);
	nvme_qpair_transport_ready(qp);
	return 0;
}

/* Handle one CM event (already acknowledged; pdata is a copy). */
static int
handle_cm_event(struct nvme_qpair *qp, enum rdma_cm_event_type type, int status, const void *pdata,
		uint32_t pdata_len)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	const char *addr = qp->ctrlr->trid.traddr;
	char why[160];
	int rc;

	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (conn->state != RDMA_CONN_ADDR) {
			break;
		}
		conn->state = RDMA_CONN_ROUTE;
		if (rdma_resolve_route(conn->cm_id, (int)qp->ctrlr->opts.connect_timeout_ms) != 0) {
			return nvme_qpair_error(qp, -errno, "rdma_resolve_route %s: %s", addr,
						strerror(errno));
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (conn->state != RDMA_CONN_ROUTE) {
			break;
		}
		return route_resolved(qp);
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->state != RDMA_CONN_CONNECTING) {
			break;
		}
		return established(qp);
	case RDMA_CM_EVENT_REJECTED:
		rc = nvme_rdma_describe_reject(status, pdata, pdata_len, why, sizeof(why));
		return nvme_qpair_error(qp, rc, "%s", why);
	case RDMA_CM_EVENT_ADDR_ERROR:
		return nvme_qpair_error(qp, -EHOSTUNREACH,
					"cannot resolve %s to an RDMA device "
					"(status %d: %s)",
					addr, status, strerror(-status));
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return nvme_qpair_error(qp, -EHOSTUNREACH, "no RDMA route to %s (status %d: %s)",
					addr, status, strerror(-status));
	case RDMA_CM_EVENT_UNREACHABLE:
		return nvme_qpair_error(qp, -EHOSTUNREACH, "controller unreachable (status %d)",
					status);
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return nvme_qpair_error(qp, -ECONNRESET, "RDMA connect error (status %d)", status);
	case RDMA_CM_EVENT_DISCONNECTED:
		return nvme_qpair_error(qp, -ECONNRESET, "disconnected by the controller");
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return nvme_qpair_error(qp, -ENODEV, "the RDMA device was removed");
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return nvme_qpair_error(qp, -ENETRESET, "the local address changed");
	default:
		/* TIMEWAIT_EXIT and others: nothing to do. */
		break;
	}
	return 0;
}

static int
rdma_cm_on_event(void *ctx, uint32_t events)
{
	struct nvme_qpair *qp = ctx;
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	uint32_t epoch = conn->epoch;
	struct rdma_cm_event *ev;
	uint8_t pdata[256];
	uint32_t pdata_len;
	enum rdma_cm_event_type type;
	int status, rc = 0;

	(void)events;
	nvme_qpair_hold(qp);
	while (rc == 0 && conn->epoch == epoch && conn->cm_channel != NULL) {
		if (rdma_get_cm_event(conn->cm_channel, &ev) != 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				rc = nvme_qpair_error(qp, -errno, "rdma_get_cm_event: %s",
						      strerror(errno));
			}
			break;
		}
		type = ev->event;
		status = ev->status;
		pdata_len = 0;
		if (ev->param.conn.private_data != NULL) {
			pdata_len = GGA_MIN((uint32_t)ev->param.conn.private_data_len,
					    (uint32_t)sizeof(pdata));
			memcpy(pdata, ev->param.conn.private_data, pdata_len);
		}
		/* Acknowledge first: destroying the id waits for every event to be acknowledged. */
		rdma_ack_cm_event(ev);
		DEBUGLOG(nvme, "%s: CM event %s (status %d)\n", qp->name, rdma_event_str(type),
			 status);
		rc = handle_cm_event(qp, type, status, pdata, pdata_len);
	}
	if (rc != 0 && conn->epoch == epoch) {
		nvme_qpair_fail(qp, rc, NULL);
	}
	nvme_qpair_release(qp);
	return 1;
}

static void
finish_req(struct nvme_qpair *qp, struct nvme_request *req)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct nvme_rdma_req *rr = nvme_rdma_req(req);
	struct nvme_cpl cpl = rr->cpl;

	if (rr->bounce >= 0) {
		if (req->xfer == NVME_XFER_CTRLR_TO_HOST &&
		    NVME_STATUS_IS_SUCCESS(cpl.status & ~NVME_STATUS_P)) {
			nvme_rdma_copy_to_iov(req->iov, req->iovcnt, req->iov_offset,
					      conn->bounce + (size_t)rr->bounce * conn->bounce_size,
					      req->data_len);
		}
		bounce_put(conn, rr);
	}
	cpl.status &= ~NVME_STATUS_P;
	nvme_qpair_complete(qp, req, &cpl);
}

static int
handle_wc(struct nvme_qpair *qp, const struct ibv_wc *wc)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	uint32_t idx = WRID_IDX(wc->wr_id);
	struct nvme_request *req;
	struct nvme_cpl cpl;
	int rc;

	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			/* The QP went to the error state: an ordinary end, not a loud error. */
			return nvme_qpair_error(qp, -ECONNRESET,
						"RDMA queue pair flushed (connection lost)");
		}
		return nvme_qpair_error(qp, -EIO,
					"RDMA %s completion failed: %s (vendor error 0x%x)",
					WRID_KIND(wc->wr_id) == WRID_SEND ? "SEND" : "RECV",
					ibv_wc_status_str(wc->status), wc->vendor_err);
	}
	if (WRID_KIND(wc->wr_id) == WRID_SEND) {
		if (unlikely(idx > qp->num_reqs)) {
			return nvme_qpair_error(qp, -EPROTO, "SEND completion for an unknown slot");
		}
		req = nvme_qpair_req(qp, idx);
		if (req->state == REQ_OUTSTANDING &&
		    nvme_rdma_req_send_done(nvme_rdma_req(req)) == 1) {
			finish_req(qp, req);
		}
		return 0;
	}
	if (unlikely(idx >= conn->num_rsps ||
		     nvme_rdma_parse_rsp(conn->rsps + (size_t)idx * NVME_RDMA_RSP_CAPSULE_SIZE,
					 wc->byte_len, &cpl) != 0)) {
		return nvme_qpair_error(qp, -EPROTO,
					"NVMe/RDMA protocol error: response of %u bytes",
					wc->byte_len);
	}
	/* The CQE is copied out: the buffer can take the next response. */
	rc = post_recv(qp, idx);
	if (unlikely(rc != 0)) {
		return rc;
	}
	req = nvme_qpair_find_req(qp, cpl.cid);
	if (unlikely(req == NULL)) {
		return nvme_qpair_error(qp, -EPROTO,
					"NVMe/RDMA protocol error: response for unknown "
					"command id %u",
					cpl.cid);
	}
	rc = nvme_rdma_req_rsp_received(nvme_rdma_req(req), &cpl);
	if (unlikely(rc < 0)) {
		return nvme_qpair_error(qp, -EPROTO,
					"NVMe/RDMA protocol error: second response for "
					"command id %u",
					cpl.cid);
	}
	if (rc == 1) {
		finish_req(qp, req);
	}
	return 0;
}

/* Reap completions. Returns how many, or a negative errno after failing the queue pair. */
static int
drain_cq(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	uint32_t epoch = conn->epoch;
	struct ibv_wc wc[CQ_BATCH];
	int n, i, rc, total = 0;

	do {
		n = ibv_poll_cq(conn->cq, CQ_BATCH, wc);
		if (unlikely(n < 0)) {
			rc = nvme_qpair_error(qp, -EIO, "ibv_poll_cq failed");
			nvme_qpair_fail(qp, rc, NULL);
			return rc;
		}
		for (i = 0; i < n; i++) {
			rc = handle_wc(qp, &wc[i]);
			if (conn->epoch != epoch) {
				/* A callback closed the connection: the rest is stale. */
				return total + i + 1;
			}
			if (unlikely(rc != 0)) {
				if (rc == -ECONNRESET) {
					DEBUGLOG(nvme, "%s: %s\n", qp->name, qp->fail_reason);
				}
				nvme_qpair_fail(qp, rc, NULL);
				return rc;
			}
		}
		total += n;
	} while (n == CQ_BATCH);
	return total;
}

/* Drain; when nothing came, arm the CQ and look once more (an entry may have raced the arm). */
static int
poll_and_arm(struct nvme_qpair *qp)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	uint32_t epoch = conn->epoch;
	int n;

	n = drain_cq(qp);
	if (n != 0 || conn->epoch != epoch || conn->cq_armed) {
		return n;
	}
	if (ibv_req_notify_cq(conn->cq, 0) != 0) {
		/* Cannot sleep on this CQ: keep polling it. */
		return 1;
	}
	conn->cq_armed = true;
	return drain_cq(qp);
}

static int
rdma_cq_poll(void *ctx)
{
	struct nvme_qpair *qp = ctx;
	int n;

	if (nvme_rdma_conn(qp)->state != RDMA_CONN_READY) {
		return POLLER_IDLE;
	}
	nvme_qpair_hold(qp);
	n = poll_and_arm(qp);
	nvme_qpair_release(qp);
	return n != 0 ? POLLER_BUSY : POLLER_IDLE;
}

static int
rdma_comp_on_event(void *ctx, uint32_t events)
{
	struct nvme_qpair *qp = ctx;
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct ibv_cq *cq;
	void *cq_ctx;

	(void)events;
	while (ibv_get_cq_event(conn->comp_channel, &cq, &cq_ctx) == 0) {
		conn->cq_armed = false;
		if (++conn->cq_events_unacked >= CQ_ACK_BATCH) {
			ibv_ack_cq_events(conn->cq, conn->cq_events_unacked);
			conn->cq_events_unacked = 0;
		}
	}
	if (conn->state == RDMA_CONN_READY) {
		nvme_qpair_hold(qp);
		poll_and_arm(qp);
		nvme_qpair_release(qp);
	}
	return 1;
}

static void
rdma_disconnect_op(struct nvme_qpair *qp)
{
	rdma_disconnect_qp(qp);
}

static uint32_t
rdma_max_in_capsule(const struct nvme_qpair *qp)
{
	return nvme_rdma_conn(qp)->max_icd;
}

static int
rdma_submit(struct nvme_qpair *qp, struct nvme_request *req)
{
	struct nvme_rdma_conn *conn = nvme_rdma_conn(qp);
	struct nvme_rdma_req *rr = nvme_rdma_req(req);
	uint32_t len = req->data_len;
	uint8_t *capsule, *bounce;
	struct iovec piece[2];
	struct ibv_sge sge[2];
	struct ibv_send_wr wr, *bad;
	enum nvme_rdma_data_mode mode;
	bool contiguous = false, arena = false;
	int32_t bidx = -1;
	int n, rc;

	if (unlikely(conn->state != RDMA_CONN_READY)) {
		return -ENXIO;
	}
	if (len > 0) {
		n = nvme_iov_range(req->iov, req->iovcnt, req->iov_offset, len, piece, 2);
		contiguous = n == 1 && piece[0].iov_len == len;
		arena = contiguous && in_arena(conn, piece[0].iov_base, len);
	}
	mode = nvme_rdma_choose_data_mode(req->xfer, len, contiguous, arena, conn->max_icd);
	capsule = conn->capsules + (size_t)nvme_request_slot(req) * conn->capsule_size;
	sge[0].addr = (uintptr_t)capsule;
	sge[0].length = NVME_SQE_SIZE;
	sge[0].lkey = conn->buf_lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WRID(WRID_SEND, nvme_request_slot(req));
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;

	switch (mode) {
	case RDMA_DATA_NONE:
		nvme_rdma_cmd_set_sgl(&req->cmd, mode, 0, 0, 0);
		break;
	case RDMA_DATA_INCAPSULE:
		nvme_rdma_cmd_set_sgl(&req->cmd, mode, 0, len, 0);
		sge[1].addr = (uintptr_t)piece[0].iov_base;
		sge[1].length = len;
		sge[1].lkey = conn->arena_lkey;
		wr.num_sge = 2;
		break;
	case RDMA_DATA_KEYED:
		nvme_rdma_cmd_set_sgl(&req->cmd, mode, (uintptr_t)piece[0].iov_base, len,
				      conn->arena_rkey);
		break;
	case RDMA_DATA_INCAPSULE_COPY:
	case RDMA_DATA_BOUNCE:
		rc = bounce_take(qp, req, &bidx, &bounce);
		if (unlikely(rc != 0)) {
			return rc;
		}
		nvme_rdma_cmd_set_sgl(&req->cmd, mode, (uintptr_t)bounce, len, conn->buf_rkey);
		if (mode == RDMA_DATA_INCAPSULE_COPY) {
			sge[1].addr = (uintptr_t)bounce;
			sge[1].length = len;
			sge[1].lkey = conn->buf_lkey;
			wr.num_sge = 2;
		}
		break;
	}
	nvme_rdma_req_start(rr, mode, bidx);
	memcpy(capsule, &req->cmd, NVME_SQE_SIZE);
	rc = ibv_post_send(conn->cm_id->qp, &wr, &bad);
	if (unlikely(rc != 0)) {
		bounce_put(conn, rr);
		return nvme_qpair_error(qp, -EIO, "ibv_post_send: %s", strerror(rc));
	}
	return 0;
}

const struct nvme_transport_ops nvme_rdma_ops = {
	.name = "RDMA",
	.trtype = NVME_TRANSPORT_RDMA,
	.qpair_size = sizeof(struct nvme_rdma_qpair),
	.qpair_offset = offsetof(struct nvme_rdma_qpair, qpair),
	.req_ctx_size = sizeof(struct nvme_rdma_req),
	.connect = rdma_connect_start,
	.disconnect = rdma_disconnect_op,
	.submit = rdma_submit,
	.max_in_capsule = rdma_max_in_capsule,
};
