/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The contract between the NVMe-oF target core and its transports.
 *
 * The core parses and executes commands; a transport only moves bytes (the
 * Linux nvmet split). A transport:
 *   - listens on addresses and accepts connections (on the app thread), and
 *     hands each new connection to a poll group (nvmf_tgt_next_poll_group()),
 *     one per reactor thread, round robin;
 *   - embeds a struct nvmf_qpair in its connection and a struct
 *     nvmf_request in each of its per-connection, preallocated requests, and
 *     gets back to its own structures with container_of();
 *   - receives a command capsule, works out from the SGL how many bytes move
 *     in which direction (nvmf_cmd_xfer()), gets buffers (from env mempools,
 *     so an RDMA transport can register them), pulls host-to-controller data
 *     in, and calls nvmf_request_exec();
 *   - when the core calls ops->req_complete(), pushes controller-to-host data
 *     out (if the command succeeded) and sends req->rsp.
 *
 * Threads: a qpair, its requests and its transport poll group live on one
 * thread (the poll group's). Every callback into a transport runs there,
 * except create/destroy/listen/stop_listen, which run on the app thread.
 */
#ifndef GGA_NVMF_TRANSPORT_H
#define GGA_NVMF_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/nvme_spec.h"
#include "gga/thread.h"

struct mempool;
struct sockaddr;
struct sockaddr_storage;
struct nvmf_transport;
struct nvmf_poll_group;
struct nvmf_qpair;
struct nvmf_request;
struct nvmf_transport_poll_group;
struct nvmf_ctrlr;
struct nvmf_pg_subsys;
struct nvmf_ns_channel;

/* Transport options, SPDK's names; nvmf_create_transport sets them. */
struct nvmf_transport_opts {
	uint32_t max_queue_depth; /* I/O queue entries (sqsize + 1) */
	uint32_t max_io_qpairs_per_ctrlr;
	uint32_t in_capsule_data_size; /* bytes of data a command capsule may carry */
	uint32_t max_io_size;          /* largest transfer of one command */
	uint32_t io_unit_size;         /* size of one data buffer */
	uint32_t max_aq_depth;         /* admin queue entries */
	uint32_t num_shared_buffers;   /* data buffers in the transport's pool */
	uint32_t buf_cache_size;       /* per-thread cache of that pool */
	/* Limits a peer cannot exceed (gga's own; SPDK has no such options). */
	uint32_t max_connections_per_listener; /* open connections on one listen address */
	uint32_t pdu_timeout_ms;               /* TCP: ICReq, Connect, and each PDU once begun */
	uint32_t max_kato_ms;                  /* cap on a host's KATO, 0 = none (0 included) */
	/* TCP: connections of one listener not admitted yet; the oldest goes first. */
	uint32_t max_pending_connections;
	uint32_t handshake_timeout_ms; /* TCP: TLS handshake and ICReq, from the accept */
};

/* An address a transport listens on (what nvmf_subsystem_add_listener names). */
struct nvmf_listen_addr {
	enum nvme_trtype trtype;
	enum nvme_adrfam adrfam;
	char traddr[NVME_TRADDR_LEN + 1];
	char trsvcid[NVME_TRSVCID_LEN + 1];
	/*
	 * NVMe/TCP: connections must open with TLS 1.3 (nvmf_subsystem_add_listener
	 * secure_channel). A property of the listener, not part of the address:
	 * nvmf_listen_addr_equal() ignores it.
	 */
	bool secure_channel;
};

struct nvmf_transport_ops {
	/* "TCP": the trtype string of RPCs and save_config. */
	const char *name;
	enum nvme_trtype trtype;
	/* The Identify Controller SGLS bits this transport supports. */
	uint32_t sgls;

	/* Fill the transport's defaults (applied before RPC parameters). */
	void (*opts_init)(struct nvmf_transport_opts *opts);

	/*
	 * Create a transport (app thread). Returns 0 with *transport set, or a
	 * negative errno (-EINVAL for options the transport cannot honour, with a
	 * message logged; -ENOMEM).
	 */
	int (*create)(const struct nvmf_transport_opts *opts, struct nvmf_transport **transport);
	/* Free a transport that no longer listens and has no poll groups (app thread). */
	void (*destroy)(struct nvmf_transport *transport);

	/* Start/stop listening (app thread). listen returns 0 or a negative errno. */
	int (*listen)(struct nvmf_transport *transport, const struct nvmf_listen_addr *addr);
	void (*stop_listen)(struct nvmf_transport *transport, const struct nvmf_listen_addr *addr);

	/* The transport's part of every poll group, which the core creates and polls. */
	const struct nvmf_tgroup_ops *tgroup;

	/*
	 * The core finished req (req->rsp is filled): send the data of a
	 * successful controller-to-host command, then the response, and recycle
	 * the request. Called on the qpair's thread; also for requests of a
	 * closing qpair (then nothing is sent).
	 */
	void (*req_complete)(struct nvmf_request *req);

	/*
	 * Tear the connection down (qpair's thread; idempotent). The transport
	 * stops receiving and then calls nvmf_qpair_fini().
	 */
	void (*qpair_disconnect)(struct nvmf_qpair *qpair);

	/* Optional: add transport-specific options to nvmf_get_transports / save_config. */
	void (*dump_opts)(const struct nvmf_transport *transport, json_t *obj);
};

struct nvmf_transport {
	const struct nvmf_transport_ops *ops;
	struct nvmf_transport_opts opts;
	/* Data buffers of opts.io_unit_size bytes (the transport creates the pool). */
	struct mempool *buf_pool;
	/* Index of this transport's tgroup in every poll group. */
	uint32_t index;
	TAILQ_ENTRY(nvmf_transport) link;
};

/*
 * A transport's part of a poll group (ops->tgroup). The core allocates it
 * (size bytes, zeroed), sets up the common part and registers its poller on
 * the poll group's thread, where every one of these runs.
 */
struct nvmf_tgroup_ops {
	/* Bytes of the transport's group, which embeds struct nvmf_transport_poll_group first. */
	size_t size;
	/* The poller's name. */
	const char *name;
	/* Optional: set up the transport's part of a new group. Returns 0 or a negative errno. */
	int (*init)(struct nvmf_transport_poll_group *tgroup);
	/* Optional: undo init (once every qpair of the group is released). */
	void (*fini)(struct nvmf_transport_poll_group *tgroup);
	/*
	 * The group's work, on every pass of its thread: POLLER_BUSY or
	 * POLLER_IDLE. The core then retries the requests waiting for buffers.
	 */
	int (*poll)(struct nvmf_transport_poll_group *tgroup);
	/*
	 * req has the data buffers nvmf_tgroup_req_get_bufs() asked for (in
	 * req->buf_iov, req->iov set to it): now or, if it had to wait, from
	 * the group's poller.
	 */
	void (*bufs_ready)(struct nvmf_request *req);
	/*
	 * Optional: add the group's own statistics to nvmf_get_stats, after the
	 * ones every transport has (connections, buffer_waits).
	 */
	void (*dump_stats)(struct nvmf_transport_poll_group *tgroup, json_t *obj);
};

/* The core's part of a transport poll group (see struct nvmf_tgroup_ops). */
struct nvmf_transport_poll_group {
	struct nvmf_transport *transport;
	struct nvmf_poll_group *pg;
	struct poller *poller;
	/* Connections of the group (the transport counts them). */
	uint32_t num_conns;
	/* Requests waiting for data buffers, in arrival order. */
	TAILQ_HEAD(, nvmf_request) buf_wait;
	/* Requests that had to wait for data buffers. */
	uint64_t buf_waits;
};

enum nvmf_qpair_state {
	NVMF_QPAIR_UNCONNECTED = 0, /* waiting for Connect */
	NVMF_QPAIR_CONNECTING,      /* Connect at the app thread */
	NVMF_QPAIR_LIVE,
	NVMF_QPAIR_CLOSING, /* nvmf_qpair_fini() called */
};

/* The core's view of a queue pair; transports embed it. */
struct nvmf_qpair {
	struct nvmf_transport *transport;
	struct nvmf_poll_group *pg;
	struct thread *thread;
	/* Set by a successful Connect (app thread), fixed afterwards. */
	struct nvmf_ctrlr *ctrlr;
	uint16_t qid;
	uint16_t sq_entries; /* sqsize + 1 */
	uint16_t sqhd;
	enum nvmf_qpair_state state;
	/* The subsystem's per-poll-group state, for I/O qpairs (qpair's thread). */
	struct nvmf_pg_subsys *pgs;
	/* The address the connection came in on; Connect checks it. */
	struct nvmf_listen_addr listen;
	/* Set when an I/O qpair is detached: its controller hears when its requests are back. */
	struct nvmf_ctrlr *drain_ctrlr;
	/* The listener that admitted it (nvmf_tgt_conn_admit), 0 = none; set before init. */
	uint16_t admit_portid;
	/* The peer's address, for log messages. */
	char peer[64];
	/*
	 * DH-HMAC-CHAP: the transaction (app thread), and whether the queue
	 * still waits for its first success (set at Connect, cleared on the
	 * qpair's thread when that success completes): until then only
	 * Authentication Send/Receive are taken.
	 */
	struct nvmf_qpair_auth *auth;
	bool auth_pending;
	/*
	 * An I/O queue connected to ctrlr that has not authenticated yet: its
	 * qid is not bound into the controller (ctrlr->pending_io, app thread).
	 */
	bool bind_pending;
	TAILQ_ENTRY(nvmf_qpair) pending_link;
	/*
	 * The PSK identity of a secure channel (TLS), set by the transport before
	 * the Connect and freed by it with the qpair; NULL on a plaintext connection.
	 */
	char *tls_identity;
	uint32_t id;
	/* ticks_get() of the last command: keep-alive traffic (read by the app thread). */
	uint64_t last_cmd_tick;
	void (*fini_cb)(struct nvmf_qpair *qpair);
	TAILQ_ENTRY(nvmf_qpair) link;
};

/* A command as the core sees it; transports embed it in their requests. */
struct nvmf_request {
	struct nvmf_qpair *qpair;
	struct nvme_cmd cmd;
	struct nvme_cpl rsp;
	/* Data: length bytes described by iov[0..iovcnt) (set by the transport). */
	struct iovec *iov;
	int iovcnt;
	uint32_t length;
	enum nvme_data_xfer xfer;

	/*
	 * Data buffers from the transport's pool (nvmf_tgroup_req_get_bufs()):
	 * the transport points buf_iov and bufs at arrays large enough for its
	 * largest transfer; nbufs buffers are held. buf_waiting: in buf_wait.
	 */
	struct iovec *buf_iov;
	void **bufs;
	uint32_t nbufs;
	bool buf_waiting;

	/* Core private. */
	struct nvmf_ns_channel *nsch;
	/* The queue's first authentication succeeded with this request. */
	bool auth_done;
	struct bdev_io_wait_entry bdev_wait;
	uint32_t dsm_next;
	uint32_t dsm_count;
	uint8_t resv_epoch;
	/* A reservation command waiting for the namespace's previous one. */
	TAILQ_ENTRY(nvmf_request) resv_link;
	TAILQ_ENTRY(nvmf_request) link;
};

/*
 * Core entry points for transports.
 */

/* The direction data moves for a command (opcode bits, or fctype for Fabrics commands). */
enum nvme_data_xfer nvmf_cmd_xfer(const struct nvme_cmd *cmd);

/* Fill a transport's default options (ops->opts_init plus the core's defaults). */
void nvmf_transport_opts_init(const struct nvmf_transport_ops *ops,
			      struct nvmf_transport_opts *opts);

/* Find a registered transport type by name (case-insensitive), or NULL. */
const struct nvmf_transport_ops *nvmf_transport_ops_find(const char *name);

/* The poll group the next new connection should go to (round robin; app thread). */
struct nvmf_poll_group *nvmf_tgt_next_poll_group(void);
struct thread *nvmf_poll_group_get_thread(const struct nvmf_poll_group *pg);
/* This transport's part of pg, or NULL if none. */
struct nvmf_transport_poll_group *nvmf_poll_group_get_tgroup(const struct nvmf_poll_group *pg,
							     const struct nvmf_transport *t);

/*
 * Admission of a new connection on `listen` (app thread, before the
 * connection costs anything): returns a token (the listener's portid) to put
 * in qpair->admit_portid, or 0 if the listener already has
 * max_connections_per_listener connections (the transport refuses it; the
 * first refusal is logged). The core gives the slot back when the qpair is
 * detached; a transport whose connection never got to nvmf_qpair_init()
 * gives it back with nvmf_tgt_conn_gone() (any thread).
 */
uint16_t nvmf_tgt_conn_admit(const struct nvmf_listen_addr *listen);
void nvmf_tgt_conn_gone(uint16_t portid);

/*
 * Register a new connection with the core (qpair's thread, before any
 * request). `listen` is the address it was accepted on; `peer` names the host
 * in logs.
 */
void nvmf_qpair_init(struct nvmf_qpair *qpair, struct nvmf_transport *transport,
		     struct nvmf_poll_group *pg, const struct nvmf_listen_addr *listen,
		     const char *peer);

/* Execute a command whose data (if host-to-controller) is in req->iov. Qpair's thread. */
void nvmf_request_exec(struct nvmf_request *req);

/*
 * Complete req with `status` (NVME_STATUS(sct, sc), plus NVME_STATUS_DNR
 * when retrying cannot help) without executing it: for commands the
 * transport rejects (bad SGL, transfer too long, data digest error). The
 * core calls ops->req_complete() before this returns. Qpair's thread.
 */
void nvmf_request_fail(struct nvmf_request *req, uint16_t status);

/*
 * The transport stopped receiving on qpair (host gone, fatal protocol error,
 * or ops->qpair_disconnect). The core detaches it from its controller, which
 * completes the commands the controller holds for it (Asynchronous Event
 * Requests) through ops->req_complete, then calls cb(qpair) on the qpair's
 * thread. The transport frees the qpair once cb has run and all of its
 * requests have come back, calling nvmf_qpair_release() just before.
 */
void nvmf_qpair_fini(struct nvmf_qpair *qpair, void (*cb)(struct nvmf_qpair *qpair));
void nvmf_qpair_release(struct nvmf_qpair *qpair);

/*
 * Create transport->buf_pool: opts->num_shared_buffers buffers of
 * opts->io_unit_size bytes, in the env arena (so an RDMA device can register
 * them), named `name`. Returns 0, -EINVAL if they cannot hold one
 * max_io_size transfer, or -ENOMEM (both logged). The transport frees the
 * pool (mempool_free) when it is destroyed.
 */
int nvmf_transport_buf_pool_create(struct nvmf_transport *transport,
				   const struct nvmf_transport_opts *opts, const char *name);

/*
 * Data buffers for req->length bytes from the transport's pool, in order:
 * if no request waits and the pool has them, ops->bufs_ready(req) runs
 * before this returns; else req waits in the group's buf_wait until the
 * poller gets them. The transport marks req as waiting for buffers before
 * the call; bufs_ready moves it on.
 */
void nvmf_tgroup_req_get_bufs(struct nvmf_transport_poll_group *tgroup, struct nvmf_request *req);
/* Recycling req: take it out of buf_wait if it waits, give back the buffers it holds. */
void nvmf_tgroup_req_put_bufs(struct nvmf_transport_poll_group *tgroup, struct nvmf_request *req);

/*
 * The socket address of an IPv4 or IPv6 listen address (trsvcid is the
 * port). Returns 0 with *ss and *len set, -EINVAL if traddr does not parse,
 * -EAFNOSUPPORT for another address family.
 */
int nvmf_listen_addr_to_sockaddr(const struct nvmf_listen_addr *addr, struct sockaddr_storage *ss,
				 size_t *len);
/* "host:port" of a peer's address, for logs ("?:0" if sa is NULL or neither IPv4 nor IPv6). */
void nvmf_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);

/*
 * Send fn(arg) to thread, retrying until its message queue takes it: for
 * messages that must not be lost (a request's way back, a detach, a
 * connection's way to or from the app thread). Logs the first retry.
 */
void nvmf_send_msg_or_spin(struct thread *thread, msg_fn fn, void *arg);

/* Names of transport types and address families, as RPCs and logs spell them. */
const char *nvmf_trtype_str(enum nvme_trtype trtype);
const char *nvmf_adrfam_str(enum nvme_adrfam adrfam);

#endif /* GGA_NVMF_TRANSPORT_H */
