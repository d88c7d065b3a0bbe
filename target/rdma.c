/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/RDMA transport of the target: transport creation, devices (a
 * protection domain and the arena's registration per ibv_context), RDMA CM
 * listeners and events, poll groups. Connections are in rdma_conn.c, the pure
 * checks in rdma_capsule.c.
 *
 * Connection management runs on the app thread: one RDMA CM event channel
 * per transport, its fd non-blocking and registered with the app thread's
 * reactor, carries the events of every listener and connection. A connect
 * request is checked (NVMe/RDMA private data), its queues are created and its
 * receives posted, it is accepted, and then it belongs to a poll group's
 * thread. Events that end a connection are forwarded to that thread.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"

#include "nvmf_internal.h"
#include "rdma_internal.h"

/*
 * Devices.
 */

struct rdma_device *
nvmf_rdma_device_get(struct rdma_transport *rt, struct ibv_context *verbs)
{
	struct rdma_device *dev;
	uint32_t sge;

	TAILQ_FOREACH(dev, &rt->devices, link) {
		if (dev->verbs == verbs) {
			return dev;
		}
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL) {
		return NULL;
	}
	dev->verbs = verbs;
	if (ibv_query_device(verbs, &dev->attr) != 0) {
		ERRLOG("nvmf rdma: cannot query device %s\n", ibv_get_device_name(verbs->device));
		goto out_free_dev;
	}
	dev->pd = ibv_alloc_pd(verbs);
	if (dev->pd == NULL) {
		ERRLOG("nvmf rdma: cannot allocate a protection domain on %s\n",
		       ibv_get_device_name(verbs->device));
		goto out_free_dev;
	}
	/*
	 * All I/O memory (capsules, responses, data buffers) lies in the one
	 * arena: register it once and use its lkey for every buffer. The target
	 * only reads and writes host memory, so nothing here is remotely
	 * accessible.
	 */
	dev->mr = ibv_reg_mr(dev->pd, rt->arena.addr, rt->arena.len, IBV_ACCESS_LOCAL_WRITE);
	if (dev->mr == NULL) {
		ERRLOG("nvmf rdma: cannot register the %zu-byte buffer arena on %s: %s\n",
		       rt->arena.len, ibv_get_device_name(verbs->device), strerror(errno));
		goto out_dealloc_pd;
	}
	sge = (uint32_t)dev->attr.max_sge;
	if (dev->attr.max_sge_rd > 0) {
		sge = GGA_MIN(sge, (uint32_t)dev->attr.max_sge_rd);
	}
	dev->max_sge = GGA_MAX(GGA_MIN(sge, RDMA_MAX_SGE), 1u);
	TAILQ_INSERT_TAIL(&rt->devices, dev, link);
	NOTICELOG("nvmf rdma: using device %s (%u SGEs per READ/WRITE, %d max QP WRs)\n",
		  ibv_get_device_name(verbs->device), dev->max_sge, dev->attr.max_qp_wr);
	return dev;

out_dealloc_pd:
	ibv_dealloc_pd(dev->pd);
out_free_dev:
	free(dev);
	return NULL;
}

static void
device_free(struct rdma_device *dev)
{
	if (ibv_dereg_mr(dev->mr) != 0) {
		WARNLOG("nvmf rdma: cannot deregister the arena\n");
	}
	if (ibv_dealloc_pd(dev->pd) != 0) {
		WARNLOG("nvmf rdma: cannot free a protection domain (still in use?)\n");
	}
	free(dev);
}

/*
 * CM events (app thread).
 */

static void
reject(struct rdma_cm_id *id, uint16_t sts)
{
	struct nvme_rdma_cm_rej rej = {
		.recfmt = NVME_RDMA_CM_RECFMT_1_0,
		.sts = sts,
	};

	if (rdma_reject(id, &rej, sizeof(rej)) != 0) {
		WARNLOG("nvmf rdma: cannot reject a connect request: %s\n", strerror(errno));
	}
	rdma_destroy_id(id);
}

static void
connect_request(struct rdma_listener *l, struct rdma_cm_id *id, const uint8_t *pdata,
		size_t pdata_len, const struct rdma_conn_param *peer)
{
	const struct nvmf_transport_opts *o = &l->rt->base.opts;
	struct nvmf_rdma_cm_limits lim = {
		.max_aq_depth = o->max_aq_depth,
		.max_queue_depth = o->max_queue_depth,
		.max_io_qpairs = o->max_io_qpairs_per_ctrlr,
	};
	struct nvmf_rdma_cm_params params;
	uint16_t sts, portid = 0;

	sts = nvmf_rdma_cm_req_check(pdata, pdata_len, &lim, &params);
	if (sts == 0 && __atomic_load_n(&g_nvmf_tgt.state, __ATOMIC_SEQ_CST) != NVMF_TGT_RUNNING) {
		sts = NVME_RDMA_CM_NO_RSC;
	}
	if (sts == 0) {
		portid = nvmf_tgt_conn_admit(&l->addr);
		sts = portid != 0 ? 0 : NVME_RDMA_CM_NO_RSC;
	}
	if (sts == 0) {
		sts = nvmf_rdma_conn_accept(l->rt, l, id, &params, peer, portid);
		if (sts != 0) {
			nvmf_tgt_conn_gone(portid);
		}
	}
	if (sts != 0) {
		NOTICELOG("nvmf rdma: rejecting a connection on %s:%s: %s\n", l->addr.traddr,
			  l->addr.trsvcid, nvme_rdma_cm_status_str(sts));
		reject(id, sts);
	}
}

static void
rdma_listener_event(struct rdma_listener *l, enum rdma_cm_event_type type)
{
	switch (type) {
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		WARNLOG("nvmf rdma: the device under listener %s:%s went away\n", l->addr.traddr,
			l->addr.trsvcid);
		break;
	case RDMA_CM_EVENT_ADDR_CHANGE:
		NOTICELOG("nvmf rdma: address of listener %s:%s changed\n", l->addr.traddr,
			  l->addr.trsvcid);
		break;
	default:
		DEBUGLOG(nvmf_rdma, "listener %s:%s: event %s\n", l->addr.traddr, l->addr.trsvcid,
			 rdma_event_str(type));
		break;
	}
}

static void
conn_event(struct rdma_qpair *rq, enum rdma_cm_event_type type)
{
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		DEBUGLOG(nvmf_rdma, "connection from %s established\n", rq->peer);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		DEBUGLOG(nvmf_rdma, "connection from %s: %s\n", rq->peer, rdma_event_str(type));
		nvmf_rdma_conn_cm_disconnect(rq);
		break;
	default:
		DEBUGLOG(nvmf_rdma, "connection from %s: event %s ignored\n", rq->peer,
			 rdma_event_str(type));
		break;
	}
}

static int cm_event_ready(void *ctx, uint32_t events);

static int
cm_watch_again(void *arg)
{
	struct rdma_transport *rt = arg;

	poller_unregister(&rt->ec_retry);
	rt->ec_ev = thread_fd_register(rt->ec->fd, THREAD_FD_IN, cm_event_ready, rt,
				       "nvmf_rdma_cm");
	if (rt->ec_ev == NULL) {
		ERRLOG("nvmf rdma: cannot watch the connection manager again\n");
	}
	return POLLER_BUSY;
}

/*
 * The event channel is readable but yields an error other than EAGAIN: the
 * fd would fire again at once, spinning the reactor and flooding the log.
 * Stop watching it for a while (as a TCP listener out of fds does).
 */
static void
cm_pause(struct rdma_transport *rt, int err)
{
	if (!rt->ec_warned) {
		WARNLOG("nvmf rdma: rdma_get_cm_event: %s; retrying every %u ms\n", strerror(err),
			RDMA_CM_RETRY_US / 1000);
		rt->ec_warned = true;
	}
	thread_fd_unregister(&rt->ec_ev);
	if (rt->ec_retry == NULL) {
		rt->ec_retry = poller_register(cm_watch_again, rt, RDMA_CM_RETRY_US,
					       "nvmf_rdma_cm_retry");
	}
}

static int
cm_event_ready(void *ctx, uint32_t events)
{
	struct rdma_transport *rt = ctx;
	struct rdma_cm_event *ev;
	struct rdma_conn_param peer;
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id, *listen_id;
	uint8_t pdata[256];
	size_t pdata_len;
	int i;

	for (i = 0; i < 32; i++) {
		if (rdma_get_cm_event(rt->ec, &ev) != 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				cm_pause(rt, errno);
			}
			break;
		}
		rt->ec_warned = false;
		/* Copy what is needed and acknowledge first: ids can then be destroyed freely. */
		type = ev->event;
		id = ev->id;
		listen_id = ev->listen_id;
		pdata_len = 0;
		memset(&peer, 0, sizeof(peer));
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			peer = ev->param.conn;
			pdata_len = GGA_MIN((size_t)ev->param.conn.private_data_len, sizeof(pdata));
			if (ev->param.conn.private_data != NULL) {
				memcpy(pdata, ev->param.conn.private_data, pdata_len);
			} else {
				pdata_len = 0;
			}
			peer.private_data = NULL;
			peer.private_data_len = 0;
		}
		rdma_ack_cm_event(ev);

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_listener *l = listen_id != NULL ? listen_id->context : NULL;

			if (l == NULL || l->kind != RDMA_ID_LISTENER) {
				reject(id, NVME_RDMA_CM_NO_RSC);
				continue;
			}
			id->context = NULL;
			connect_request(l, id, pdata, pdata_len, &peer);
			continue;
		}
		if (id == NULL || id->context == NULL) {
			continue;
		}
		if (*(enum rdma_id_kind *)id->context == RDMA_ID_LISTENER) {
			rdma_listener_event(id->context, type);
		} else {
			conn_event(container_of((enum rdma_id_kind *)id->context, struct rdma_qpair,
						kind),
				   type);
		}
	}
	return POLLER_BUSY;
}

/*
 * Listeners.
 */

static int
rdma_transport_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
	struct rdma_transport *rt = container_of(t, struct rdma_transport, base);
	struct sockaddr_storage ss;
	struct rdma_listener *l;
	size_t sl;
	int rc;

	rc = nvmf_listen_addr_to_sockaddr(addr, &ss, &sl);
	if (rc != 0) {
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return -ENOMEM;
	}
	l->kind = RDMA_ID_LISTENER;
	l->rt = rt;
	l->addr = *addr;
	if (rdma_create_id(rt->ec, &l->id, l, RDMA_PS_TCP) != 0) {
		rc = -errno;
		ERRLOG("nvmf rdma: cannot create a CM id for %s:%s: %s\n", addr->traddr,
		       addr->trsvcid, strerror(errno));
		goto out_free_listener;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&ss) != 0) {
		rc = -errno;
		ERRLOG("nvmf rdma: cannot bind to %s:%s: %s (no RDMA device on that address?)\n",
		       addr->traddr, addr->trsvcid, strerror(errno));
		goto out_destroy_id;
	}
	if (rdma_listen(l->id, RDMA_LISTEN_BACKLOG) != 0) {
		rc = -errno;
		ERRLOG("nvmf rdma: cannot listen on %s:%s: %s\n", addr->traddr, addr->trsvcid,
		       strerror(errno));
		goto out_destroy_id;
	}
	/* Set the device up now, so the first connection does not pay for the registration. */
	if (l->id->verbs != NULL && nvmf_rdma_device_get(rt, l->id->verbs) == NULL) {
		rc = -ENOMEM;
		goto out_destroy_id;
	}
	TAILQ_INSERT_TAIL(&rt->listeners, l, link);
	NOTICELOG("nvmf rdma: listening on %s:%s\n", addr->traddr, addr->trsvcid);
	return 0;

out_destroy_id:
	rdma_destroy_id(l->id);
out_free_listener:
	free(l);
	return rc;
}

static void
rdma_transport_stop_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
	struct rdma_transport *rt = container_of(t, struct rdma_transport, base);
	struct rdma_listener *l;

	TAILQ_FOREACH(l, &rt->listeners, link) {
		if (nvmf_listen_addr_equal(&l->addr, addr)) {
			TAILQ_REMOVE(&rt->listeners, l, link);
			rdma_destroy_id(l->id);
			NOTICELOG("nvmf rdma: stopped listening on %s:%s\n", addr->traddr,
				  addr->trsvcid);
			free(l);
			return;
		}
	}
}

/*
 * Poll groups.
 */

static int
rdma_group_init(struct nvmf_transport_poll_group *tg)
{
	struct rdma_group *group = container_of(tg, struct rdma_group, base);

	group->rt = container_of(tg->transport, struct rdma_transport, base);
	TAILQ_INIT(&group->qpairs);
	TAILQ_INIT(&group->active);
	return 0;
}

static void
rdma_group_dump_stats(struct nvmf_transport_poll_group *tg, json_t *obj)
{
	struct rdma_group *group = container_of(tg, struct rdma_group, base);

	json_object_set_new(obj, "recvs", json_integer((json_int_t)group->recvs));
	json_object_set_new(obj, "in_capsule_data_commands",
			    json_integer((json_int_t)group->icd_cmds));
	json_object_set_new(obj, "rdma_reads", json_integer((json_int_t)group->reads));
	json_object_set_new(obj, "rdma_writes", json_integer((json_int_t)group->writes));
	json_object_set_new(obj, "sends", json_integer((json_int_t)group->sends));
	json_object_set_new(obj, "cq_events", json_integer((json_int_t)group->cq_events));
	json_object_set_new(obj, "send_queue_waits", json_integer((json_int_t)group->sq_waits));
	json_object_set_new(obj, "completion_errors",
			    json_integer((json_int_t)group->completion_errors));
	json_object_set_new(obj, "bad_capsules", json_integer((json_int_t)group->bad_capsules));
}

static_assert(offsetof(struct rdma_group, base) == 0, "the core allocates the group");

static const struct nvmf_tgroup_ops rdma_tgroup_ops = {
	.size = sizeof(struct rdma_group),
	.name = "nvmf_rdma_group",
	.init = rdma_group_init,
	.poll = nvmf_rdma_group_poll,
	.bufs_ready = nvmf_rdma_req_bufs_ready,
	.dump_stats = rdma_group_dump_stats,
};

/*
 * The transport.
 */

static void
rdma_transport_opts_init(struct nvmf_transport_opts *opts)
{
	/* SPDK's RDMA defaults where they differ from the core's. */
	opts->in_capsule_data_size = 4096;
	opts->num_shared_buffers = 4095;
}

static int
rdma_transport_create(const struct nvmf_transport_opts *opts, struct nvmf_transport **out)
{
	struct rdma_transport *rt;
	void *probe;
	int flags, rc;

	if (opts->io_unit_size < 512 || opts->max_io_size < opts->io_unit_size ||
	    opts->max_queue_depth < 2 || opts->max_queue_depth > 4096 ||
	    opts->max_io_size > NVME_RDMA_MAX_KEYED_SGL_LEN + 1) {
		ERRLOG("nvmf rdma: invalid options\n");
		return -EINVAL;
	}
	rt = calloc(1, sizeof(*rt));
	if (rt == NULL) {
		return -ENOMEM;
	}
	TAILQ_INIT(&rt->listeners);
	TAILQ_INIT(&rt->devices);
	TAILQ_INIT(&rt->conns);
	rt->max_bufs = (opts->max_io_size + opts->io_unit_size - 1) / opts->io_unit_size;
	rc = nvmf_transport_buf_pool_create(&rt->base, opts, "nvmf_rdma_data");
	if (rc != 0) {
		goto out_free_transport;
	}
	/* The arena the pool lies in is what every device registers. */
	probe = mempool_get(rt->base.buf_pool);
	rc = probe != NULL ? env_mem_find_region(probe, 1, &rt->arena) : -ENOMEM;
	if (probe != NULL) {
		mempool_put(rt->base.buf_pool, probe);
	}
	if (rc != 0) {
		ERRLOG("nvmf rdma: data buffers are not in the I/O arena\n");
		goto out_free_pool;
	}
	rt->ec = rdma_create_event_channel();
	if (rt->ec == NULL) {
		rc = errno == ENODEV || errno == ENOENT ? -ENODEV : -errno;
		ERRLOG("nvmf rdma: cannot open the RDMA connection manager: %s "
		       "(no RDMA support in this kernel? load rdma_ucm)\n",
		       strerror(errno));
		goto out_free_pool;
	}
	flags = fcntl(rt->ec->fd, F_GETFL);
	if (flags < 0 || fcntl(rt->ec->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		rc = -errno;
		goto out_destroy_channel;
	}
	rt->ec_ev = thread_fd_register(rt->ec->fd, THREAD_FD_IN, cm_event_ready, rt,
				       "nvmf_rdma_cm");
	if (rt->ec_ev == NULL) {
		rc = -ENOMEM;
		goto out_destroy_channel;
	}
	*out = &rt->base;
	return 0;

out_destroy_channel:
	rdma_destroy_event_channel(rt->ec);
out_free_pool:
	mempool_free(rt->base.buf_pool);
out_free_transport:
	free(rt);
	return rc;
}

static void
rdma_transport_destroy(struct nvmf_transport *t)
{
	struct rdma_transport *rt = container_of(t, struct rdma_transport, base);
	struct rdma_listener *l;
	struct rdma_device *dev;
	struct rdma_qpair *rq;

	while ((l = TAILQ_FIRST(&rt->listeners)) != NULL) {
		rdma_transport_stop_listen(t, &l->addr);
	}
	while ((rq = TAILQ_FIRST(&rt->conns)) != NULL) {
		nvmf_rdma_conn_destroy(rq);
	}
	thread_fd_unregister(&rt->ec_ev);
	poller_unregister(&rt->ec_retry);
	rdma_destroy_event_channel(rt->ec);
	while ((dev = TAILQ_FIRST(&rt->devices)) != NULL) {
		TAILQ_REMOVE(&rt->devices, dev, link);
		device_free(dev);
	}
	mempool_free(rt->base.buf_pool);
	free(rt);
}

const struct nvmf_transport_ops nvmf_rdma_ops = {
	.name = "RDMA",
	.trtype = NVME_TRTYPE_RDMA,
	.sgls = NVME_SGLS_SUPPORTED | NVME_SGLS_KEYED | NVME_SGLS_OFFSET,
	.opts_init = rdma_transport_opts_init,
	.create = rdma_transport_create,
	.destroy = rdma_transport_destroy,
	.listen = rdma_transport_listen,
	.stop_listen = rdma_transport_stop_listen,
	.tgroup = &rdma_tgroup_ops,
	.req_complete = nvmf_rdma_req_complete,
	.qpair_disconnect = nvmf_rdma_qpair_disconnect,
};
