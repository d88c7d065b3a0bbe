/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe/TCP transport of the target: transport creation, listening
 * sockets, poll groups. Connections themselves are in tcp_conn.c.
 *
 * Listening sockets live on the app thread; each accepted connection goes to
 * a poll group (round robin over the reactor threads) and stays there. All
 * sockets are non-blocking fd events of their thread, so an idle target
 * sleeps.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
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

/*
 * Connections.
 */

struct new_conn {
	struct tcp_transport *tt;
	struct nvmf_poll_group *pg;
	int fd;
	uint16_t admit_portid;
	struct nvmf_listen_addr addr;
	char peer[64];
};
static void
new_conn_msg(void *arg)
{
	struct new_conn *nc = arg;
	struct tcp_group *group;

	group = (struct tcp_group *)nvmf_poll_group_get_tgroup(nc->pg, &nc->tt->base);
	/* A connection that arrives while the target stops is not taken. */
	if (group == NULL ||
	    __atomic_load_n(&g_nvmf_tgt.state, __ATOMIC_SEQ_CST) != NVMF_TGT_RUNNING ||
	    nvmf_tcp_conn_create(nc->tt, group, nc->pg, nc->fd, &nc->addr, nc->peer,
				 nc->admit_portid) != 0) {
		close(nc->fd);
		nvmf_tgt_conn_gone(nc->admit_portid);
	}
	free(nc);
}

static void
peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	nvmf_sockaddr_str(getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 ?
				  (struct sockaddr *)&ss :
				  NULL,
			  buf, len);
}

static int tcp_listener_event(void *ctx, uint32_t events);

static int
listener_accept_retry(void *arg)
{
	struct tcp_listener *l = arg;

	poller_unregister(&l->accept_retry);
	if (l->ev == NULL) {
		l->ev = thread_fd_register(l->fd, THREAD_FD_IN, tcp_listener_event, l,
					   "nvmf_tcp_listen");
		if (l->ev == NULL) {
			ERRLOG("nvmf tcp: cannot watch %s:%s again: %s\n", l->addr.traddr,
			       l->addr.trsvcid, strerror(errno));
		}
	}
	return POLLER_BUSY;
}

/*
 * Out of fds or memory: the listening socket stays readable, and watching
 * it would spin the reactor (and flood the log). Stop watching it for a
 * while; connections wait in the backlog meanwhile.
 */
static void
listener_accept_pause(struct tcp_listener *l, int err)
{
	if (!l->accept_warned) {
		/* Once until an accept succeeds again: a shortage can last. */
		WARNLOG("nvmf tcp: cannot accept connections on %s:%s for now: %s; retrying "
			"every %u ms\n",
			l->addr.traddr, l->addr.trsvcid, strerror(err), TCP_ACCEPT_RETRY_US / 1000);
		l->accept_warned = true;
	}
	thread_fd_unregister(&l->ev);
	if (l->accept_retry == NULL) {
		l->accept_retry = poller_register(listener_accept_retry, l, TCP_ACCEPT_RETRY_US,
						  "nvmf_tcp_accept_retry");
	}
}

static int
tcp_listener_event(void *ctx, uint32_t events)
{
	struct tcp_listener *l = ctx;
	struct nvmf_poll_group *pg;
	struct new_conn *nc;
	uint16_t portid;
	int fd, one = 1, i;

	for (i = 0; i < 64; i++) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				listener_accept_pause(l, errno);
				break;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				WARNLOG("nvmf tcp: accept on %s:%s: %s\n", l->addr.traddr,
					l->addr.trsvcid, strerror(errno));
			}
			break;
		}
		l->accept_warned = false;
		portid = nvmf_tgt_conn_admit(&l->addr);
		if (portid == 0) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pg = nvmf_tgt_next_poll_group();
		nc = calloc(1, sizeof(*nc));
		if (pg == NULL || nc == NULL) {
			free(nc);
			close(fd);
			nvmf_tgt_conn_gone(portid);
			continue;
		}
		nc->admit_portid = portid;
		nc->tt = l->tt;
		nc->pg = pg;
		nc->fd = fd;
		nc->addr = l->addr;
		peer_name(fd, nc->peer, sizeof(nc->peer));
		if (thread_send_msg(nvmf_poll_group_get_thread(pg), new_conn_msg, nc) != 0) {
			close(fd);
			free(nc);
			nvmf_tgt_conn_gone(portid);
		}
	}
	return POLLER_BUSY;
}

static int
tcp_transport_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
	struct tcp_transport *tt = container_of(t, struct tcp_transport, base);
	struct sockaddr_storage ss;
	struct tcp_listener *l;
	size_t sl;
	int fd, one = 1, rc;

	rc = nvmf_listen_addr_to_sockaddr(addr, &ss, &sl);
	if (rc != 0) {
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return -ENOMEM;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out_free_listener;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, (socklen_t)sl) != 0 ||
	    listen(fd, TCP_LISTEN_BACKLOG) != 0) {
		rc = -errno;
		ERRLOG("nvmf tcp: cannot listen on %s:%s: %s\n", addr->traddr, addr->trsvcid,
		       strerror(errno));
		goto out_close_fd;
	}
	l->ev = thread_fd_register(fd, THREAD_FD_IN, tcp_listener_event, l, "nvmf_tcp_listen");
	if (l->ev == NULL) {
		rc = -ENOMEM;
		goto out_close_fd;
	}
	l->tt = tt;
	l->addr = *addr;
	l->fd = fd;
	TAILQ_INSERT_TAIL(&tt->listeners, l, link);
	NOTICELOG("nvmf tcp: listening on %s:%s\n", addr->traddr, addr->trsvcid);
	return 0;

out_close_fd:
	close(fd);
out_free_listener:
	free(l);
	return rc;
}

static void
tcp_transport_stop_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
	struct tcp_transport *tt = container_of(t, struct tcp_transport, base);
	struct tcp_listener *l;

	TAILQ_FOREACH(l, &tt->listeners, link) {
		if (nvmf_listen_addr_equal(&l->addr, addr)) {
			TAILQ_REMOVE(&tt->listeners, l, link);
			poller_unregister(&l->accept_retry);
			thread_fd_unregister(&l->ev);
			close(l->fd);
			NOTICELOG("nvmf tcp: stopped listening on %s:%s\n", addr->traddr,
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
tcp_group_check_timeouts(void *arg)
{
	return nvmf_tcp_group_check_timeouts(arg);
}

static int
tcp_group_init(struct nvmf_transport_poll_group *tg)
{
	struct tcp_group *group = container_of(tg, struct tcp_group, base);
	uint64_t period_us;

	group->tt = container_of(tg->transport, struct tcp_transport, base);
	TAILQ_INIT(&group->qpairs);
	TAILQ_INIT(&group->dirty);
	TAILQ_INIT(&group->pending);
	/* Four checks per timeout, at most one a second: an idle target stays asleep. */
	period_us = GGA_MIN(tg->transport->opts.pdu_timeout_ms,
			    tg->transport->opts.handshake_timeout_ms);
	period_us = GGA_MIN(GGA_MAX(period_us * 1000 / 4, 25000), 1000000);
	group->timeout_poller = poller_register(tcp_group_check_timeouts, group, period_us,
						"nvmf_tcp_timeouts");
	return group->timeout_poller != NULL ? 0 : -ENOMEM;
}

static void
tcp_group_fini(struct nvmf_transport_poll_group *tg)
{
	struct tcp_group *group = container_of(tg, struct tcp_group, base);

	poller_unregister(&group->timeout_poller);
}

static void
tcp_group_dump_stats(struct nvmf_transport_poll_group *tg, json_t *obj)
{
	struct tcp_group *group = container_of(tg, struct tcp_group, base);

	json_object_set_new(obj, "c2h_term_reqs", json_integer((json_int_t)group->term_reqs_sent));
	json_object_set_new(obj, "header_digest_errors",
			    json_integer((json_int_t)group->hdgst_errors));
	json_object_set_new(obj, "data_digest_errors",
			    json_integer((json_int_t)group->ddgst_errors));
	json_object_set_new(obj, "pdu_timeouts", json_integer((json_int_t)group->pdu_timeouts));
	json_object_set_new(obj, "tls_handshakes_refused",
			    json_integer((json_int_t)group->tls_refused));
	json_object_set_new(obj, "pending_dropped",
			    json_integer((json_int_t)group->pending_dropped));
	json_object_set_new(obj, "handshake_timeouts",
			    json_integer((json_int_t)group->handshake_timeouts));
}

static_assert(offsetof(struct tcp_group, base) == 0, "the core allocates the group");

static const struct nvmf_tgroup_ops tcp_tgroup_ops = {
	.size = sizeof(struct tcp_group),
	.name = "nvmf_tcp_group",
	.init = tcp_group_init,
	.poll = nvmf_tcp_group_poll,
	.fini = tcp_group_fini,
	.bufs_ready = nvmf_tcp_req_bufs_ready,
	.dump_stats = tcp_group_dump_stats,
};

/*
 * The transport.
 */

static int
tcp_transport_create(const struct nvmf_transport_opts *opts, struct nvmf_transport **out)
{
	struct tcp_transport *tt;
	int rc;

	if (opts->io_unit_size < 512 || opts->max_io_size < opts->io_unit_size ||
	    opts->max_queue_depth < 2 || opts->max_queue_depth > 65536) {
		ERRLOG("nvmf tcp: invalid options\n");
		return -EINVAL;
	}
	tt = calloc(1, sizeof(*tt));
	if (tt == NULL) {
		return -ENOMEM;
	}
	tt->max_iov = (opts->max_io_size + opts->io_unit_size - 1) / opts->io_unit_size;
	tt->icd_size = GGA_MAX(opts->in_capsule_data_size, TCP_ADMIN_ICD_SIZE);
	tt->maxh2cdata = GGA_MAX(GGA_MIN(TCP_MAXH2CDATA, opts->max_io_size),
				 NVME_TCP_MIN_MAXH2CDATA);
	TAILQ_INIT(&tt->listeners);
	rc = nvmf_transport_buf_pool_create(&tt->base, opts, "nvmf_tcp_data");
	if (rc != 0) {
		free(tt);
		return rc;
	}
	*out = &tt->base;
	return 0;
}

static void
tcp_transport_destroy(struct nvmf_transport *t)
{
	struct tcp_transport *tt = container_of(t, struct tcp_transport, base);
	struct tcp_listener *l;

	while ((l = TAILQ_FIRST(&tt->listeners)) != NULL) {
		tcp_transport_stop_listen(t, &l->addr);
	}
	mempool_free(tt->base.buf_pool);
	free(tt);
}

const struct nvmf_transport_ops nvmf_tcp_ops = {
	.name = "TCP",
	.trtype = NVME_TRTYPE_TCP,
	.sgls = NVME_SGLS_SUPPORTED | NVME_SGLS_OFFSET | NVME_SGLS_TRANSPORT_DATA_BLOCK,
	.create = tcp_transport_create,
	.destroy = tcp_transport_destroy,
	.listen = tcp_transport_listen,
	.stop_listen = tcp_transport_stop_listen,
	.tgroup = &tcp_tgroup_ops,
	.req_complete = nvmf_tcp_req_complete,
	.qpair_disconnect = nvmf_tcp_qpair_disconnect,
};
