/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every transport of the target needs, written once: the transport's
 * poll groups (allocated, polled and freed here; the transport's tgroup
 * table adds what is its own), its connection count and the statistics all
 * transports have; the data buffer pool and the queue of requests waiting
 * for buffers, retried by the group's poller; socket addresses of listen
 * addresses and peers; and a cross-thread message that must not be lost.
 * The TCP and RDMA transports call these; the contract is in
 * nvmf_transport.h.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"

#include "nvmf_internal.h"

void
nvmf_send_msg_or_spin(struct thread *thread, msg_fn fn, void *arg)
{
	int i;

	for (i = 0; thread_send_msg(thread, fn, arg) != 0; i++) {
		if (i == 0) {
			WARNLOG("nvmf: message queue of thread %s full; retrying\n",
				thread_get_name(thread));
		}
		sched_yield();
	}
}

/*
 * Addresses.
 */

int
nvmf_listen_addr_to_sockaddr(const struct nvmf_listen_addr *addr, struct sockaddr_storage *ss,
			     size_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (addr->adrfam == NVME_ADRFAM_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)atoi(addr->trsvcid));
		if (inet_pton(AF_INET, addr->traddr, &sin->sin_addr) != 1) {
			return -EINVAL;
		}
		*len = sizeof(*sin);
	} else if (addr->adrfam == NVME_ADRFAM_IPV6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)atoi(addr->trsvcid));
		if (inet_pton(AF_INET6, addr->traddr, &sin6->sin6_addr) != 1) {
			return -EINVAL;
		}
		*len = sizeof(*sin6);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

void
nvmf_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa != NULL && sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
	} else if (sa != NULL && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
	}
	snprintf(buf, len, "%s:%d", host, port);
}

/*
 * Data buffers.
 */

int
nvmf_transport_buf_pool_create(struct nvmf_transport *t, const struct nvmf_transport_opts *opts,
			       const char *name)
{
	uint32_t max_bufs = (opts->max_io_size + opts->io_unit_size - 1) / opts->io_unit_size;

	if (opts->num_shared_buffers < max_bufs) {
		ERRLOG("nvmf: %s: num_shared_buffers %u cannot hold one %u-byte transfer\n", name,
		       opts->num_shared_buffers, opts->max_io_size);
		return -EINVAL;
	}
	t->buf_pool = mempool_create(name, opts->num_shared_buffers, opts->io_unit_size,
				     opts->buf_cache_size);
	if (t->buf_pool == NULL) {
		ERRLOG("nvmf: %s: cannot allocate %u data buffers of %u bytes\n", name,
		       opts->num_shared_buffers, opts->io_unit_size);
		return -ENOMEM;
	}
	return 0;
}

/* Take buffers for req->length bytes. Returns false if the pool is short. */
static bool
req_take_bufs(const struct nvmf_transport *t, struct nvmf_request *req)
{
	uint32_t unit = t->opts.io_unit_size, len = req->length, n, i;

	n = (len + unit - 1) / unit;
	if (mempool_get_bulk(t->buf_pool, req->bufs, n) != 0) {
		return false;
	}
	for (i = 0; i < n; i++) {
		req->buf_iov[i].iov_base = req->bufs[i];
		req->buf_iov[i].iov_len = GGA_MIN(unit, len - i * unit);
	}
	req->nbufs = n;
	req->iov = req->buf_iov;
	req->iovcnt = (int)n;
	return true;
}

void
nvmf_tgroup_req_get_bufs(struct nvmf_transport_poll_group *tg, struct nvmf_request *req)
{
	/* Behind others that wait, so a large transfer is not starved by small ones. */
	if (TAILQ_EMPTY(&tg->buf_wait) && req_take_bufs(tg->transport, req)) {
		tg->transport->ops->tgroup->bufs_ready(req);
		return;
	}
	req->buf_waiting = true;
	TAILQ_INSERT_TAIL(&tg->buf_wait, req, link);
	tg->buf_waits++;
}

void
nvmf_tgroup_req_put_bufs(struct nvmf_transport_poll_group *tg, struct nvmf_request *req)
{
	if (req->buf_waiting) {
		TAILQ_REMOVE(&tg->buf_wait, req, link);
		req->buf_waiting = false;
	}
	if (req->nbufs > 0) {
		mempool_put_bulk(tg->transport->buf_pool, req->bufs, req->nbufs);
		req->nbufs = 0;
	}
}

/* Serve the requests waiting for buffers, in order, while the pool lasts. */
static int
buf_wait_retry(struct nvmf_transport_poll_group *tg)
{
	struct nvmf_request *req;
	int busy = POLLER_IDLE;

	while ((req = TAILQ_FIRST(&tg->buf_wait)) != NULL) {
		if (!req_take_bufs(tg->transport, req)) {
			/* Buffers come back from other threads too: keep polling. */
			return POLLER_BUSY;
		}
		TAILQ_REMOVE(&tg->buf_wait, req, link);
		req->buf_waiting = false;
		tg->transport->ops->tgroup->bufs_ready(req);
		busy = POLLER_BUSY;
	}
	return busy;
}

/*
 * Poll groups.
 */

static int
tgroup_poll(void *arg)
{
	struct nvmf_transport_poll_group *tg = arg;
	int busy;

	busy = tg->transport->ops->tgroup->poll(tg);
	if (buf_wait_retry(tg) == POLLER_BUSY) {
		busy = POLLER_BUSY;
	}
	return busy;
}

int
nvmf_tgroup_create(struct nvmf_transport *t, struct nvmf_poll_group *pg,
		   struct nvmf_transport_poll_group **out)
{
	const struct nvmf_tgroup_ops *ops = t->ops->tgroup;
	struct nvmf_transport_poll_group *tg;
	int rc;

	assert(ops->size >= sizeof(*tg));
	tg = calloc(1, ops->size);
	if (tg == NULL) {
		return -ENOMEM;
	}
	tg->transport = t;
	tg->pg = pg;
	TAILQ_INIT(&tg->buf_wait);
	tg->poller = poller_register(tgroup_poll, tg, 0, ops->name);
	if (tg->poller == NULL) {
		rc = -ENOMEM;
		goto out_free_group;
	}
	rc = ops->init != NULL ? ops->init(tg) : 0;
	if (rc != 0) {
		goto out_unregister_poller;
	}
	*out = tg;
	return 0;

out_unregister_poller:
	poller_unregister(&tg->poller);
out_free_group:
	free(tg);
	return rc;
}

void
nvmf_tgroup_destroy(struct nvmf_transport_poll_group *tg)
{
	const struct nvmf_tgroup_ops *ops = tg->transport->ops->tgroup;

	if (tg->num_conns > 0) {
		WARNLOG("nvmf %s: poll group destroyed with %u connections left\n",
			tg->transport->ops->name, tg->num_conns);
	}
	poller_unregister(&tg->poller);
	if (ops->fini != NULL) {
		ops->fini(tg);
	}
	free(tg);
}

void
nvmf_tgroup_dump_stats(struct nvmf_transport_poll_group *tg, json_t *obj)
{
	const struct nvmf_tgroup_ops *ops = tg->transport->ops->tgroup;

	json_object_set_new(obj, "connections", json_integer((json_int_t)tg->num_conns));
	json_object_set_new(obj, "buffer_waits", json_integer((json_int_t)tg->buf_waits));
	if (ops->dump_stats != NULL) {
		ops->dump_stats(tg, obj);
	}
}
