/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the NVMe/RDMA target transport without an RDMA
 * device: the real target/rdma.c (CM events, connect requests, listener,
 * poll groups) and target/rdma_conn.c (queue set-up and accept, capsules,
 * SGL parsing, RDMA READ/WRITE and SEND work requests, completions, the
 * request state machine, teardown) with the core, over a fake verbs
 * provider and a fake RDMA CM defined here.
 *
 * The fake stands where libibverbs and librdmacm would (the harness is not
 * linked with them): ibv_post_send/ibv_post_recv/ibv_poll_cq/
 * ibv_req_notify_cq are inline calls through the ibv_context's ops, which
 * point here; the library calls (rdma_get_cm_event, ibv_create_cq,
 * ibv_get_cq_event, ...) are defined here. Posted work requests wait in
 * per-QP FIFOs until the input completes them; completions go through a CQ
 * and, when it is armed, an eventfd completion channel, as on a device. The
 * CM event channel is an eventfd too. Moving a QP to the error state flushes
 * everything posted, as a device does.
 *
 * The fake checks what a device would not forgive (an abort, so libFuzzer
 * keeps the input): more work requests posted than the queue was created
 * with, more SGEs than max_send_sge, an SGE outside the registered arena or
 * with another lkey, a completion queue overflow, a response SEND that is
 * not one 16-byte CQE, a CQ destroyed with unacknowledged events (where
 * ibv_destroy_cq would wait forever), and at the end of every input a
 * connection, controller or CM id left behind after the host went away.
 *
 * Input: byte 0 sets the device: bits 0-1 pick max_sge (1, 2, 4, 16), bits
 * 2 and 4 max_qp_wr (4096, 64, 16, 8), bit 3 a device that does not flush
 * work requests when the QP goes to the error state (they complete only
 * when the input says so, or never: the transport's close timer gives up on
 * them), bit 5 makes rdma_accept() fail, bit 6 makes every chain of two or
 * more send work requests fail at its last one (a partial post). Then
 * operations until the input runs out, each an opcode byte (bits 0-2: what;
 * bit 3: which of two host connections; bit 4: do not poll the thread
 * before the next operation, else it is polled until idle) and operands:
 *   0 connect request: 32 bytes of CM private data, then the host's
 *     initiator depth and responder resources (1 byte each)
 *   1 capsule: 2 bytes (LE) length L, L bytes sent into the oldest posted
 *     receive (longer than its buffer: a local length error completion)
 *   2 complete the oldest posted send work request successfully; a READ
 *     fills the target's buffers with the next input byte
 *   3 complete it with an error (next byte: which status)
 *   4 complete every posted send work request successfully
 *   5 the host disconnects (RDMA_CM_EVENT_DISCONNECTED)
 *   6 another CM event for the connection (next byte: which)
 *   7 time passes: the close timer and the keep-alive timer run out
 * At the end both hosts disconnect and everything must be torn down.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <unistd.h>

#include "gga/env.h"
#include "gga/nvme_rdma.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "target/nvmf_internal.h"
#include "target/rdma_internal.h"
#include "fuzz_common.h"

#define OP_CONNECT       0
#define OP_CAPSULE       1
#define OP_SEND_OK       2
#define OP_SEND_ERR      3
#define OP_SEND_ALL      4
#define OP_DISCONNECT    5
#define OP_CM_EVENT      6
#define OP_TIME          7
#define OP_HOST          (1u << 3)
#define OP_NO_POLL       (1u << 4)
#define DEV_NO_FLUSH     (1u << 3)
#define DEV_ACCEPT_FAILS (1u << 5)
#define DEV_CHAINS_FAIL  (1u << 6)

#define MAX_HOSTS       2
#define FAKE_LKEY       0x1a2b3c4du
/* Rounds of fuzz_poll_all() the connections may take to go away after the hosts left. */
#define TEARDOWN_ROUNDS 100
/* Past the close timer (RDMA_CLOSE_TIMEOUT_US) and a 10 s keep-alive. */
#define TIME_JUMP_US    (11u * 1000 * 1000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const struct nvmf_transport_ops nvmf_rdma_ops;

/*
 * The fake device.
 */

struct fake_send {
	struct ibv_send_wr wr;
	struct ibv_sge sge[RDMA_MAX_SGE];
};

struct fake_qp {
	struct ibv_qp qp;
	uint32_t max_send, max_recv, max_send_sge;
	/* Posted, not completed: FIFOs (a ring each). */
	struct fake_send *sends;
	uint32_t send_head, send_count;
	struct ibv_recv_wr *recvs;
	struct ibv_sge *recv_sges;
	uint32_t recv_head, recv_count;
	bool error;
};

struct fake_channel {
	struct ibv_comp_channel ch;
	struct ibv_cq *cq;
};

struct fake_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	uint32_t head, count;
	bool armed;
	uint32_t events_got;
	uint32_t events_acked;
};

struct fake_event {
	struct rdma_cm_event ev;
	uint8_t pdata[sizeof(struct nvme_rdma_cm_req)];
	TAILQ_ENTRY(fake_event) link;
};

struct fake_id {
	struct rdma_cm_id id;
	int host;          /* index in g_hosts, or -1 (the listener) */
	bool disconnected; /* rdma_disconnect called */
};

static struct ibv_context g_ctx;
static struct ibv_device g_device;
static struct ibv_pd g_pd;
static struct ibv_mr g_mr;
static struct ibv_device_attr g_attr;
static struct env_mem_region g_arena;
static struct rdma_event_channel *g_ec;
static struct fake_id *g_listen_id;
static TAILQ_HEAD(fake_event_head, fake_event) g_events = TAILQ_HEAD_INITIALIZER(g_events);
/* The hosts' connections: their CM ids while the target has not destroyed them. */
static struct fake_id *g_hosts[MAX_HOSTS];
static struct nvmf_subsystem *g_subsys;
static struct rdma_transport *g_rt;
static volatile uint32_t g_sink;
static bool g_verbose;
/* This input's device: byte 0 of the input. */
static uint8_t g_dev_cfg;

static void __attribute__((noreturn)) fail(const char *what)
{
	fprintf(stderr, "fuzz_rdma_capsule: %s\n", what);
	abort();
}

static void
efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one)) {
		fail("eventfd write");
	}
}

static bool
efd_take(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v);
}

/* Every buffer the target hands the device must lie in the registered arena. */
static void
check_sge(const struct ibv_sge *sge)
{
	uintptr_t lo = (uintptr_t)g_arena.addr;

	if (sge->lkey != FAKE_LKEY || sge->addr < lo ||
	    sge->addr + sge->length > lo + g_arena.len || sge->addr + sge->length < sge->addr) {
		fail("an SGE outside the registered arena or with another lkey");
	}
}

static struct fake_cq *
to_fcq(struct ibv_cq *cq)
{
	return container_of(cq, struct fake_cq, cq);
}

static struct fake_qp *
to_fqp(struct ibv_qp *qp)
{
	return container_of(qp, struct fake_qp, qp);
}

static void
cq_push(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode opcode,
	uint32_t byte_len)
{
	struct fake_cq *fcq = to_fcq(cq);
	struct ibv_wc *wc;

	if (fcq->count == (uint32_t)cq->cqe) {
		fail("completion queue overflow");
	}
	wc = &fcq->ring[(fcq->head + fcq->count++) % (uint32_t)cq->cqe];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = status;
	wc->opcode = opcode;
	wc->byte_len = byte_len;
	if (fcq->armed) {
		fcq->armed = false;
		efd_signal(cq->channel->fd);
	}
}

static enum ibv_wc_opcode
wc_opcode(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ  ? IBV_WC_RDMA_READ :
	       op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
					 IBV_WC_SEND;
}

/* Complete the oldest posted send work request; READ data is `fill`. */
static bool
qp_complete_send(struct fake_qp *fq, enum ibv_wc_status status, uint8_t fill)
{
	struct fake_send *s;
	uint32_t i, sum = 0;
	int j;

	if (fq->send_count == 0) {
		return false;
	}
	s = &fq->sends[fq->send_head];
	fq->send_head = (fq->send_head + 1) % fq->max_send;
	fq->send_count--;
	for (j = 0; status == IBV_WC_SUCCESS && j < s->wr.num_sge; j++) {
		uint8_t *p = (uint8_t *)(uintptr_t)s->sge[j].addr;

		if (s->wr.opcode == IBV_WR_RDMA_READ) {
			memset(p, fill, s->sge[j].length);
		} else {
			for (i = 0; i < s->sge[j].length; i++) {
				sum += p[i];
			}
		}
	}
	g_sink += sum;
	if (status == IBV_WC_SUCCESS &&
	    (s->wr.opcode == IBV_WR_SEND || s->wr.opcode == IBV_WR_SEND_WITH_INV)) {
		const struct nvme_cpl *cpl = (const struct nvme_cpl *)(uintptr_t)s->sge[0].addr;

		if (s->wr.num_sge != 1 || s->sge[0].length != NVME_RDMA_RSP_CAPSULE_SIZE) {
			fail("a response SEND that is not one CQE");
		}
		if (g_verbose) {
			fprintf(stderr, "fuzz_rdma_capsule: response cid %u status 0x%04x\n",
				cpl->cid, cpl->status);
		}
	}
	cq_push(fq->qp.send_cq, s->wr.wr_id, status, wc_opcode(s->wr.opcode), 0);
	return true;
}

/* The QP went to the error state: everything posted comes back flushed. */
static void
qp_flush(struct fake_qp *fq)
{
	while (qp_complete_send(fq, IBV_WC_WR_FLUSH_ERR, 0)) {
	}
	while (fq->recv_count > 0) {
		cq_push(fq->qp.recv_cq, fq->recvs[fq->recv_head].wr_id, IBV_WC_WR_FLUSH_ERR,
			IBV_WC_RECV, 0);
		fq->recv_head = (fq->recv_head + 1) % fq->max_recv;
		fq->recv_count--;
	}
}

static int
fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fake_qp *fq = to_fqp(qp);
	struct fake_send *s;
	int j;

	if ((g_dev_cfg & DEV_CHAINS_FAIL) && wr != NULL && wr->next != NULL) {
		/* Everything but the last work request of the chain goes. */
		for (; wr->next != NULL; wr = wr->next) {
			struct ibv_send_wr one = *wr;

			one.next = NULL;
			fake_post_send(qp, &one, bad);
		}
		*bad = wr;
		return ENOMEM;
	}
	for (; wr != NULL; wr = wr->next) {
		if (fq->send_count == fq->max_send) {
			fail("send queue overflow");
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > fq->max_send_sge) {
			fail("more SGEs than the QP takes");
		}
		s = &fq->sends[(fq->send_head + fq->send_count++) % fq->max_send];
		s->wr = *wr;
		s->wr.next = NULL;
		for (j = 0; j < wr->num_sge; j++) {
			check_sge(&wr->sg_list[j]);
			s->sge[j] = wr->sg_list[j];
		}
		s->wr.sg_list = s->sge;
		if (fq->error && !(g_dev_cfg & DEV_NO_FLUSH)) {
			qp_complete_send(fq, IBV_WC_WR_FLUSH_ERR, 0);
		}
	}
	return 0;
}

static int
fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fake_qp *fq = to_fqp(qp);
	uint32_t slot;

	for (; wr != NULL; wr = wr->next) {
		if (fq->recv_count == fq->max_recv) {
			fail("receive queue overflow");
		}
		if (wr->num_sge != 1) {
			fail("a receive with other than one SGE");
		}
		check_sge(wr->sg_list);
		slot = (fq->recv_head + fq->recv_count++) % fq->max_recv;
		fq->recvs[slot] = *wr;
		fq->recv_sges[slot] = wr->sg_list[0];
		if (fq->error && !(g_dev_cfg & DEV_NO_FLUSH)) {
			qp_flush(fq);
		}
	}
	return 0;
}

static int
fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *fcq = to_fcq(cq);
	int i;

	for (i = 0; i < n && fcq->count > 0; i++) {
		wc[i] = fcq->ring[fcq->head];
		fcq->head = (fcq->head + 1) % (uint32_t)cq->cqe;
		fcq->count--;
	}
	return i;
}

static int
fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	to_fcq(cq)->armed = true;
	return 0;
}

/* libibverbs. */

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	*attr = g_attr;
	return 0;
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return "fake0";
}

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	g_pd.context = context;
	return &g_pd;
}

int
ibv_dealloc_pd(struct ibv_pd *pd)
{
	return 0;
}

/* In parentheses: verbs.h makes ibv_reg_mr a macro over an inline that calls one of these. */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	g_arena.addr = addr;
	g_arena.len = length;
	g_mr.context = pd->context;
	g_mr.pd = pd;
	g_mr.addr = addr;
	g_mr.length = length;
	g_mr.lkey = FAKE_LKEY;
	return &g_mr;
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	fail("a registration with optional access flags");
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
	return 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct fake_channel *fch = calloc(1, sizeof(*fch));

	if (fch == NULL) {
		return NULL;
	}
	fch->ch.context = context;
	fch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (fch->ch.fd < 0) {
		free(fch);
		return NULL;
	}
	return &fch->ch;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	close(channel->fd);
	free(container_of(channel, struct fake_channel, ch));
	return 0;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	struct fake_cq *fcq = calloc(1, sizeof(*fcq));

	if (fcq == NULL || cqe <= 0 || cqe > g_attr.max_cqe) {
		free(fcq);
		return NULL;
	}
	fcq->ring = calloc((size_t)cqe, sizeof(*fcq->ring));
	if (fcq->ring == NULL) {
		free(fcq);
		return NULL;
	}
	container_of(channel, struct fake_channel, ch)->cq = &fcq->cq;
	fcq->cq.context = context;
	fcq->cq.channel = channel;
	fcq->cq.cq_context = cq_context;
	fcq->cq.cqe = cqe;
	return &fcq->cq;
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *fcq = to_fcq(cq);

	if (fcq->events_acked != fcq->events_got) {
		fail("a CQ destroyed with unacknowledged events (ibv_destroy_cq would hang)");
	}
	free(fcq->ring);
	free(fcq);
	return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (!efd_take(channel->fd)) {
		errno = EAGAIN;
		return -1;
	}
	*cq = container_of(channel, struct fake_channel, ch)->cq;
	*cq_context = (*cq)->cq_context;
	/* Only events read here count for ibv_destroy_cq(); one left in the channel does not. */
	to_fcq(*cq)->events_got++;
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct fake_cq *fcq = to_fcq(cq);

	fcq->events_acked += nevents;
	if (fcq->events_acked > fcq->events_got) {
		fail("more CQ events acknowledged than received");
	}
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct fake_qp *fq = to_fqp(qp);

	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR && !fq->error) {
		fq->error = true;
		if (!(g_dev_cfg & DEV_NO_FLUSH)) {
			qp_flush(fq);
		}
	}
	return 0;
}

const char *
ibv_wc_status_str(enum ibv_wc_status status)
{
	return "fake status";
}

/* librdmacm. */

static void
cm_event_queue(struct fake_id *fid, enum rdma_cm_event_type type, const void *pdata,
	       size_t pdata_len)
{
	struct fake_event *e = calloc(1, sizeof(*e));

	if (e == NULL) {
		fail("out of memory");
	}
	e->ev.id = &fid->id;
	e->ev.listen_id = type == RDMA_CM_EVENT_CONNECT_REQUEST ? &g_listen_id->id : NULL;
	e->ev.event = type;
	if (pdata != NULL) {
		memcpy(e->pdata, pdata, GGA_MIN(pdata_len, sizeof(e->pdata)));
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)GGA_MIN(pdata_len, sizeof(e->pdata));
	}
	TAILQ_INSERT_TAIL(&g_events, e, link);
	efd_signal(g_ec->fd);
}

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	g_ec = calloc(1, sizeof(*g_ec));
	if (g_ec == NULL) {
		return NULL;
	}
	g_ec->fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	return g_ec;
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	close(channel->fd);
	free(channel);
}

int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct fake_event *e = TAILQ_FIRST(&g_events);

	if (e == NULL || !efd_take(channel->fd)) {
		errno = EAGAIN;
		return -1;
	}
	TAILQ_REMOVE(&g_events, e, link);
	*event = &e->ev;
	return 0;
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	free(container_of(event, struct fake_event, ev));
	return 0;
}

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	return "fake event";
}

static struct fake_id *
id_new(void *context, int host)
{
	struct fake_id *fid = calloc(1, sizeof(*fid));

	if (fid == NULL) {
		fail("out of memory");
	}
	fid->id.verbs = &g_ctx;
	fid->id.context = context;
	fid->id.channel = g_ec;
	fid->host = host;
	return fid;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	       enum rdma_port_space ps)
{
	g_listen_id = id_new(context, -1);
	*id = &g_listen_id->id;
	return 0;
}

int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return 0;
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	return 0;
}

/* The kernel drops the events of an id being destroyed. */
int
rdma_destroy_id(struct rdma_cm_id *id)
{
	struct fake_id *fid = container_of(id, struct fake_id, id);
	struct fake_event *e, *tmp;

	if (id->qp != NULL) {
		fail("a CM id destroyed with its QP");
	}
	TAILQ_FOREACH_SAFE(e, &g_events, link, tmp) {
		if (e->ev.id == id) {
			TAILQ_REMOVE(&g_events, e, link);
			efd_take(g_ec->fd);
			free(e);
		}
	}
	if (fid->host >= 0) {
		g_hosts[fid->host] = NULL;
	} else {
		g_listen_id = NULL;
	}
	free(fid);
	return 0;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct fake_qp *fq = calloc(1, sizeof(*fq));

	if (fq == NULL || attr->cap.max_send_wr == 0 || attr->cap.max_recv_wr == 0 ||
	    attr->cap.max_send_wr > (uint32_t)g_attr.max_qp_wr ||
	    attr->cap.max_recv_wr > (uint32_t)g_attr.max_qp_wr ||
	    attr->cap.max_send_sge > (uint32_t)g_attr.max_sge) {
		free(fq);
		errno = EINVAL;
		return -1;
	}
	fq->max_send = attr->cap.max_send_wr;
	fq->max_recv = attr->cap.max_recv_wr;
	fq->max_send_sge = attr->cap.max_send_sge;
	fq->sends = calloc(fq->max_send, sizeof(*fq->sends));
	fq->recvs = calloc(fq->max_recv, sizeof(*fq->recvs));
	fq->recv_sges = calloc(fq->max_recv, sizeof(*fq->recv_sges));
	if (fq->sends == NULL || fq->recvs == NULL || fq->recv_sges == NULL) {
		fail("out of memory");
	}
	fq->qp.context = id->verbs;
	fq->qp.qp_context = attr->qp_context;
	fq->qp.pd = pd;
	fq->qp.send_cq = attr->send_cq;
	fq->qp.recv_cq = attr->recv_cq;
	fq->qp.qp_type = attr->qp_type;
	id->qp = &fq->qp;
	return 0;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct fake_qp *fq = to_fqp(id->qp);

	free(fq->sends);
	free(fq->recvs);
	free(fq->recv_sges);
	free(fq);
	id->qp = NULL;
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (conn_param->private_data_len < sizeof(struct nvme_rdma_cm_rep)) {
		fail("an accept without the NVMe/RDMA private data");
	}
	if (g_dev_cfg & DEV_ACCEPT_FAILS) {
		errno = ECONNREFUSED;
		return -1;
	}
	return 0;
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return 0;
}

/* Both sides of a connection see it go. */
int
rdma_disconnect(struct rdma_cm_id *id)
{
	struct fake_id *fid = container_of(id, struct fake_id, id);

	if (!fid->disconnected) {
		fid->disconnected = true;
		cm_event_queue(fid, RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
	}
	return 0;
}

/*
 * The harness.
 */

static const struct nvmf_listen_addr g_addr = {
	.trtype = NVME_TRTYPE_RDMA,
	.adrfam = NVME_ADRFAM_IPV4,
	.traddr = "127.0.0.1",
	.trsvcid = "4420",
};

static void
setup(void)
{
	struct nvmf_transport_opts opts;

	fuzz_env_init("fuzz_rdma_capsule");
	g_verbose = getenv("FUZZ_VERBOSE") != NULL;
	g_ctx.device = &g_device;
	g_ctx.ops.post_send = fake_post_send;
	g_ctx.ops.post_recv = fake_post_recv;
	g_ctx.ops.poll_cq = fake_poll_cq;
	g_ctx.ops.req_notify_cq = fake_req_notify_cq;
	nvmf_transport_opts_init(&nvmf_rdma_ops, &opts);
	/* Few requests and buffers, so a session can run out of both. */
	opts.max_queue_depth = 32;
	opts.num_shared_buffers = 64;
	g_rt = container_of(fuzz_transport_create(&nvmf_rdma_ops, &opts), struct rdma_transport,
			    base);
	g_subsys = fuzz_subsystem_create(&g_addr, true);
	if (g_listen_id == NULL) {
		fuzz_die("RDMA listener");
	}
}

/*
 * The device's limits for this input. The transport queries the device once
 * (when it listens) and keeps what it learnt; with no connection left from
 * the last input, changing that between inputs is what a different device
 * would have given.
 */
static void
device_set(uint8_t cfg)
{
	static const int sges[] = { 1, 2, 4, RDMA_MAX_SGE };
	static const int wrs[] = { 4096, 64, 16, 8 };
	struct rdma_device *dev = g_rt != NULL ? TAILQ_FIRST(&g_rt->devices) : NULL;

	memset(&g_attr, 0, sizeof(g_attr));
	g_attr.max_sge = sges[cfg & 3];
	g_attr.max_sge_rd = g_attr.max_sge;
	g_attr.max_qp_wr = wrs[((cfg >> 2) & 1) | ((cfg >> 3) & 2)];
	g_attr.max_cqe = 8192;
	g_attr.max_qp_rd_atom = 16;
	g_attr.max_qp_init_rd_atom = 16;
	g_dev_cfg = cfg;
	if (dev != NULL) {
		dev->attr = g_attr;
		dev->max_sge = (uint32_t)g_attr.max_sge;
	}
}

static struct fake_qp *
host_qp(int h)
{
	return g_hosts[h] != NULL && g_hosts[h]->id.qp != NULL ? to_fqp(g_hosts[h]->id.qp) : NULL;
}

static void
op_connect(int h, struct fuzz_input *in)
{
	const uint8_t *pdata = fuzz_take(in, sizeof(struct nvme_rdma_cm_req));
	const uint8_t *depths = fuzz_take(in, 2);
	struct sockaddr_in *peer;
	struct fake_id *fid;
	struct fake_event *e;

	if (pdata == NULL || depths == NULL || g_hosts[h] != NULL) {
		return;
	}
	fid = id_new(NULL, h);
	peer = (struct sockaddr_in *)&fid->id.route.addr.dst_addr;
	peer->sin_family = AF_INET;
	peer->sin_port = htons((uint16_t)(50000 + h));
	peer->sin_addr.s_addr = htonl(0x7f000001);
	g_hosts[h] = fid;
	cm_event_queue(fid, RDMA_CM_EVENT_CONNECT_REQUEST, pdata, sizeof(struct nvme_rdma_cm_req));
	e = TAILQ_LAST(&g_events, fake_event_head);
	e->ev.param.conn.initiator_depth = depths[0];
	e->ev.param.conn.responder_resources = depths[1];
}

/* The host sends a capsule: it lands in the oldest posted receive. */
static void
op_capsule(int h, struct fuzz_input *in)
{
	const uint8_t *lenp = fuzz_take(in, 2), *p;
	struct fake_qp *fq = host_qp(h);
	struct ibv_sge *sge;
	uint64_t wr_id;
	size_t len;

	if (lenp == NULL) {
		return;
	}
	len = GGA_MIN((size_t)lenp[0] | (size_t)lenp[1] << 8, in->left);
	p = fuzz_take(in, len);
	if (fq == NULL || fq->error || fq->recv_count == 0) {
		/* No receive posted: the host's HCA would retry (RNR), then give up. */
		return;
	}
	sge = &fq->recv_sges[fq->recv_head];
	wr_id = fq->recvs[fq->recv_head].wr_id;
	fq->recv_head = (fq->recv_head + 1) % fq->max_recv;
	fq->recv_count--;
	if (len > sge->length) {
		cq_push(fq->qp.recv_cq, wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0);
		return;
	}
	memcpy((void *)(uintptr_t)sge->addr, p, len);
	cq_push(fq->qp.recv_cq, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)len);
}

static void
op_send_err(int h, struct fuzz_input *in)
{
	static const enum ibv_wc_status errs[] = {
		IBV_WC_REM_ACCESS_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_LOC_PROT_ERR,
		IBV_WC_REM_OP_ERR,     IBV_WC_WR_FLUSH_ERR,
	};
	const uint8_t *which = fuzz_take(in, 1);
	struct fake_qp *fq = host_qp(h);

	if (which != NULL && fq != NULL) {
		qp_complete_send(fq, errs[*which % ARRAY_SIZE(errs)], 0);
	}
}

static void
op_cm_event(int h, struct fuzz_input *in)
{
	static const enum rdma_cm_event_type types[] = {
		RDMA_CM_EVENT_ESTABLISHED,   RDMA_CM_EVENT_TIMEWAIT_EXIT,
		RDMA_CM_EVENT_REJECTED,      RDMA_CM_EVENT_UNREACHABLE,
		RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_DEVICE_REMOVAL,
		RDMA_CM_EVENT_ADDR_CHANGE,   RDMA_CM_EVENT_CONNECT_RESPONSE,
	};
	const uint8_t *which = fuzz_take(in, 1);

	if (which != NULL && g_hosts[h] != NULL) {
		cm_event_queue(g_hosts[h], types[*which % ARRAY_SIZE(types)], NULL, 0);
	}
}

static void
run_op(uint8_t op, struct fuzz_input *in)
{
	int h = (op & OP_HOST) ? 1 : 0;
	const uint8_t *fill;

	switch (op & 7) {
	case OP_CONNECT:
		op_connect(h, in);
		break;
	case OP_CAPSULE:
		op_capsule(h, in);
		break;
	case OP_SEND_OK:
		fill = fuzz_take(in, 1);
		if (fill != NULL && host_qp(h) != NULL) {
			qp_complete_send(host_qp(h), IBV_WC_SUCCESS, *fill);
		}
		break;
	case OP_SEND_ERR:
		op_send_err(h, in);
		break;
	case OP_SEND_ALL:
		while (host_qp(h) != NULL && qp_complete_send(host_qp(h), IBV_WC_SUCCESS, 0)) {
		}
		break;
	case OP_DISCONNECT:
		if (g_hosts[h] != NULL) {
			cm_event_queue(g_hosts[h], RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
		}
		break;
	case OP_CM_EVENT:
		op_cm_event(h, in);
		break;
	default:
		fuzz_time_jump(TIME_JUMP_US);
		break;
	}
}

/* The hosts are gone: every connection, controller and CM id must go too. */
static void
teardown(void)
{
	int i, h;

	for (i = 0; i < TEARDOWN_ROUNDS; i++) {
		for (h = 0; h < MAX_HOSTS; h++) {
			if (g_hosts[h] != NULL && i % 10 == 0) {
				cm_event_queue(g_hosts[h], RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
			}
		}
		if (i == TEARDOWN_ROUNDS / 2) {
			/* Work requests a device never completed: the close timer forgets them. */
			fuzz_time_jump(TIME_JUMP_US);
		}
		fuzz_poll_all();
		if (g_hosts[0] == NULL && g_hosts[1] == NULL && TAILQ_EMPTY(&g_subsys->ctrlrs) &&
		    g_nvmf_tgt.num_qpairs == 0) {
			return;
		}
	}
	fail(g_hosts[0] != NULL || g_hosts[1] != NULL ? "a connection outlived its host" :
	     !TAILQ_EMPTY(&g_subsys->ctrlrs)          ? "a controller outlived its connections" :
							"the core still counts a qpair");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool initialized;
	struct fuzz_input in = { data + 1, size > 0 ? size - 1 : 0 };
	const uint8_t *op;

	if (size < 1) {
		return 0;
	}
	device_set(data[0]);
	if (!initialized) {
		setup();
		initialized = true;
	}
	g_subsys->next_cntlid = NVME_CNTLID_MIN;
	while ((op = fuzz_take(&in, 1)) != NULL) {
		run_op(*op, &in);
		if (!(*op & OP_NO_POLL)) {
			fuzz_poll_all();
		}
	}
	teardown();
	return 0;
}
