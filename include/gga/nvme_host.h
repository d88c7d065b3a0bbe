/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe over Fabrics host (initiator) library: connect to a remote NVMe-oF
 * controller, identify it and its namespaces, and run I/O on per-thread
 * queue pairs. Transports: NVMe/TCP, and NVMe/RDMA when built with rdma-core
 * (CONFIG_RDMA; refused with -EPROTONOSUPPORT otherwise).
 *
 * Threads. A controller belongs to the thread that called
 * nvme_ctrlr_connect() (normally the app thread): its admin queue, keep-alive
 * timer, reconnect logic and detach run there, and the nvme_ctrlr_* calls
 * that change it must be made there. An I/O queue pair belongs to the thread
 * that allocated it, and I/O is submitted and completed on that thread only;
 * there are no locks on the I/O path. Sockets are fd events of their thread
 * (thread_fd_register), so an idle thread sleeps.
 *
 * Async contract: a call that returns 0 calls its callback exactly once, later
 * (never from inside the call), on the calling thread; a call that returns a
 * negative errno never calls it.
 *
 * Failures and recovery. When a queue's connection breaks (the target closed
 * it, a socket error, a protocol error, or a command timed out), every command
 * outstanding on that queue completes at once with a path status
 * (NVME_SCT_PATH / NVME_SC_HOST_PATH_ERROR, or NVME_SC_ABORTED_BY_HOST for the
 * command that timed out): commands never hang. The controller then resets:
 * it drops every queue, and reconnects the admin queue with exponential
 * backoff (reconnect_delay_min_ms doubling up to reconnect_delay_max_ms,
 * forever, until detached), re-running the whole initialisation; I/O queue
 * pairs reconnect by themselves once the controller is back.
 *
 * I/O submitted while the controller is not connected fails fast: the submit
 * call returns -ENXIO. I/O submitted while the controller is connected but
 * this thread's queue pair is still (re)connecting waits in the queue pair, at
 * most connect_timeout_ms, and then completes with a path error if the queue
 * pair did not come up.
 */
#ifndef GGA_NVME_HOST_H
#define GGA_NVME_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "gga/nvme_auth.h"
#include "gga/nvme_spec.h"

struct nvme_ctrlr;
struct nvme_ns;
struct nvme_qpair;

enum nvme_transport_type {
	NVME_TRANSPORT_TCP = NVME_TRTYPE_TCP,
	NVME_TRANSPORT_RDMA = NVME_TRTYPE_RDMA,
};

#define NVME_TRADDR_MAX_LEN  (NVME_TRADDR_LEN - 1)
#define NVME_TRSVCID_MAX_LEN (NVME_TRSVCID_LEN - 1)

/* Where a controller is: transport, address family, address, port and subsystem NQN. */
struct nvme_transport_id {
	enum nvme_transport_type trtype;
	enum nvme_adrfam adrfam;
	char traddr[NVME_TRADDR_LEN];
	char trsvcid[NVME_TRSVCID_LEN];
	char subnqn[NVME_NQN_MAX_LEN + 1];
};

/* Parse "tcp"/"rdma" (any case). Returns 0 or -EINVAL. */
int nvme_transport_type_parse(const char *str, enum nvme_transport_type *type);
/* "TCP" or "RDMA". */
const char *nvme_transport_type_name(enum nvme_transport_type type);
/* Parse "ipv4"/"ipv6" (any case). Returns 0 or -EINVAL. */
int nvme_adrfam_parse(const char *str, enum nvme_adrfam *adrfam);
/* "IPv4", "IPv6", ... */
const char *nvme_adrfam_name(enum nvme_adrfam adrfam);

struct nvme_ctrlr_opts {
	/* Host NQN; empty: a default derived from the host id. */
	char hostnqn[NVME_NQN_MAX_LEN + 1];
	/*
	 * Host identifier; all zero: the UUID of a host NQN of the form
	 * nqn.2014-08.org.nvmexpress:uuid:<uuid>, else a random one per controller.
	 */
	uint8_t hostid[16];
	/* NVMe/TCP header and data digests (CRC-32C). */
	bool header_digest;
	bool data_digest;
	/* Keep Alive Timeout sent in Connect; Keep Alive is sent every half of it. 0 = off. */
	uint32_t keep_alive_timeout_ms;
	/* Entries of each I/O queue (capped by CAP.MQES + 1); one is kept free. */
	uint32_t io_queue_size;
	/* I/O queues requested with Set Features Number of Queues. */
	uint32_t num_io_queues;
	/*
	 * Bound of one queue connect: TCP connect and ICReq/ICResp (RDMA: address and
	 * route resolution, CM connect), then Fabrics Connect.
	 */
	uint32_t connect_timeout_ms;
	/* Per-command timeout (admin and I/O). 0 = none. */
	uint32_t command_timeout_ms;
	/* Reconnect backoff after a controller failure. */
	uint32_t reconnect_delay_min_ms;
	uint32_t reconnect_delay_max_ms;
	/* Bound of the shutdown (CC.SHN) wait in detach. */
	uint32_t shutdown_timeout_ms;
	/*
	 * A failed first connect is logged at debug level only: the caller
	 * reports it (one that retries every few seconds logs a few of them).
	 */
	bool quiet_connect_failure;
	/*
	 * DH-HMAC-CHAP (NVMe in-band authentication). dhchap_key: the host's
	 * secret (len 0: none; a controller that requires authentication is
	 * then refused). dhchap_ctrlr_key: the controller's (len 0: not
	 * checked); with it the host authenticates the controller too and
	 * refuses one that does not ask for authentication. Digests and groups
	 * offered: bit (1 << id), 0 = all.
	 */
	struct nvme_dhchap_secret dhchap_key;
	struct nvme_dhchap_secret dhchap_ctrlr_key;
	uint8_t dhchap_digests;
	uint8_t dhchap_dhgroups;
	/*
	 * NVMe/TCP secure channel: the configured PSK (len 0: plaintext). Each
	 * queue opens with TLS 1.3 before its ICReq, offering the version 0
	 * identity of (hostnqn, subnqn) and the TLS PSK derived from this key
	 * (the only version SPDK's target takes; gga_tgt takes both).
	 */
	struct nvme_tls_psk tls_psk;
};

/* Defaults: KATO 10 s, 128-entry I/O queues, 64 I/O queues, connect 5 s,
 * commands 30 s, reconnect 100 ms .. 2 s, shutdown 2 s, no digests. */
void nvme_ctrlr_opts_init(struct nvme_ctrlr_opts *opts);

/*
 * Connect callback. On success rc is 0, ctrlr is the connected, identified
 * controller (namespaces known) and reason is NULL. On failure ctrlr is NULL,
 * rc a negative errno, and reason a message naming the address and the cause
 * (valid during the call only). Nothing is left behind on failure.
 *   -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, -ECONNRESET ... from TCP or the RDMA CM
 *   -EPROTO     the controller broke the NVMe/TCP or NVMe/RDMA protocol (ICResp, digests)
 *   -ENODEV     Connect refused with Connect Invalid Parameters (e.g. unknown subnqn)
 *   -EACCES     Connect refused with Connect Invalid Host
 *   -EIO        another Connect/initialisation command status
 *   -ETIMEDOUT  a step did not finish in time (connect, CSTS.RDY, a command)
 */
typedef void (*nvme_ctrlr_connect_cb)(void *cb_arg, struct nvme_ctrlr *ctrlr, int rc,
				      const char *reason);

/*
 * Connect to a controller: TCP connect and ICReq/ICResp (or RDMA CM connect),
 * Fabrics Connect of the admin queue, Property Get CAP/VS, Property Set
 * CC.EN=1, wait for CSTS.RDY, Identify Controller, Set Features Number of
 * Queues, Identify the active namespaces. Returns 0 (cb will be called), -EINVAL (bad trid or opts: empty
 * traddr, non-numeric trsvcid, traddr not an IPv4 address, NQN too long),
 * -EPROTONOSUPPORT (rdma in a build without RDMA), -ENOMEM.
 */
int nvme_ctrlr_connect(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts,
		       nvme_ctrlr_connect_cb cb, void *cb_arg);

/*
 * nvme_ctrlr_connect(), and *ctrlrp (if not NULL) is the controller being
 * connected, so that the caller can give up before cb runs: nvme_ctrlr_detach()
 * of a controller still in its first connect (NVME_CTRLR_CONNECTING) abandons
 * the attempt, closes its connection and frees it; cb is then never called,
 * the detach callback is. A caller that keeps retrying a first connect (the
 * NVMe bdev's retry_first_connect) needs it to cancel an attempt in flight.
 */
int nvme_ctrlr_connect_start(const struct nvme_transport_id *trid,
			     const struct nvme_ctrlr_opts *opts, nvme_ctrlr_connect_cb cb,
			     void *cb_arg, struct nvme_ctrlr **ctrlrp);

/*
 * Detach: shut the controller down cleanly (Property Set CC.SHN=normal, wait
 * for CSTS.SHST=complete at most shutdown_timeout_ms) if it is connected,
 * close the admin queue and free everything. Every I/O queue pair must have
 * been freed. A controller in its first connect (see nvme_ctrlr_connect_start)
 * is abandoned: its connect callback is never called. Returns 0 (cb, if not NULL, will be called), -EBUSY (I/O queue
 * pairs remain, or a detach is already running).
 */
typedef void (*nvme_ctrlr_detach_cb)(void *cb_arg);
int nvme_ctrlr_detach(struct nvme_ctrlr *ctrlr, nvme_ctrlr_detach_cb cb, void *cb_arg);

enum nvme_ctrlr_state {
	NVME_CTRLR_CONNECTING, /* first connect, not handed out yet */
	NVME_CTRLR_CONNECTED,
	NVME_CTRLR_RECONNECTING, /* lost; resetting or waiting to retry */
	NVME_CTRLR_DETACHING,
};

enum nvme_ctrlr_state nvme_ctrlr_get_state(const struct nvme_ctrlr *ctrlr);
/* "connecting", "connected", "reconnecting", "detaching". */
const char *nvme_ctrlr_state_name(enum nvme_ctrlr_state state);

const struct nvme_transport_id *nvme_ctrlr_get_trid(const struct nvme_ctrlr *ctrlr);
const struct nvme_ctrlr_opts *nvme_ctrlr_get_opts(const struct nvme_ctrlr *ctrlr);
/* Controller id of the current association (0 while not connected). */
uint16_t nvme_ctrlr_get_cntlid(const struct nvme_ctrlr *ctrlr);
/* Identify Controller data of the last successful connect. */
const struct nvme_identify_ctrlr *nvme_ctrlr_get_data(const struct nvme_ctrlr *ctrlr);
/* Largest data transfer of one command in bytes (MDTS), UINT32_MAX if unlimited. */
uint32_t nvme_ctrlr_get_max_xfer_size(const struct nvme_ctrlr *ctrlr);
/* Number of I/O queues the controller granted. */
uint32_t nvme_ctrlr_get_num_io_queues(const struct nvme_ctrlr *ctrlr);
/* Times the controller has been re-connected after a failure. */
uint64_t nvme_ctrlr_get_reconnect_count(const struct nvme_ctrlr *ctrlr);

/*
 * Called on the controller's thread each time the controller is lost
 * (connected false: its I/O fails until it reconnects) and each time it is
 * connected again after a failure (connected true: the target may have
 * restarted, on other media). NULL: none.
 */
typedef void (*nvme_ctrlr_reconnect_cb)(void *cb_arg, struct nvme_ctrlr *ctrlr, bool connected);

/*
 * Any thread: drop the controller's association and reconnect, as when the
 * connection is lost: every command in flight on any queue fails at once
 * (host path error) and the reconnect callback runs, with connected false
 * then true. What a user does with a target that stopped answering: nothing
 * that target sends afterwards reaches the old commands' buffers. Nothing
 * happens if the controller is not connected.
 */
void nvme_ctrlr_request_reset(struct nvme_ctrlr *ctrlr, const char *reason);
void nvme_ctrlr_set_reconnect_cb(struct nvme_ctrlr *ctrlr, nvme_ctrlr_reconnect_cb cb,
				 void *cb_arg);

/*
 * Namespaces: the active namespaces found at the first connect, in nsid
 * order. The objects live as long as the controller; their geometry is fixed
 * (a reconnect to a controller whose namespace changed geometry is treated as
 * a failed reconnect).
 */
uint32_t nvme_ctrlr_get_num_ns(const struct nvme_ctrlr *ctrlr);
/* The i-th active namespace (0-based), or NULL. */
struct nvme_ns *nvme_ctrlr_get_ns_by_index(struct nvme_ctrlr *ctrlr, uint32_t index);
/* The active namespace with this nsid, or NULL. */
struct nvme_ns *nvme_ctrlr_get_ns(struct nvme_ctrlr *ctrlr, uint32_t nsid);

struct nvme_ns_info {
	uint32_t nsid;
	uint64_t num_blocks; /* NSZE */
	uint32_t block_size; /* LBA data size */
	uint32_t md_size;    /* metadata bytes per block */
	bool extended_lba;   /* metadata interleaved after each block */
	/* Bytes per block in a transfer: block_size, + md_size when extended. */
	uint32_t xfer_block_size;
	uint8_t nguid[16];
	uint8_t eui64[8];
	bool dsm_supported;          /* ONCS Dataset Management */
	bool write_zeroes_supported; /* ONCS Write Zeroes */
	bool reservations_supported; /* ONCS Reservations */
	bool volatile_write_cache;   /* VWC present: Flush is meaningful */
};

const struct nvme_ns_info *nvme_ns_get_info(const struct nvme_ns *ns);
struct nvme_ctrlr *nvme_ns_get_ctrlr(const struct nvme_ns *ns);

/*
 * I/O queue pairs. Allocate on the thread that will use it (any thread); the
 * queue connects in the background (Fabrics Connect with the controller's
 * cntlid and a free queue id) and reconnects after controller resets.
 * Returns NULL with errno set: EBUSY (every granted queue id is in use),
 * ENOMEM, ENODEV (the controller is detaching).
 */
struct nvme_qpair *nvme_ctrlr_alloc_io_qpair(struct nvme_ctrlr *ctrlr);

/*
 * Free a queue pair (on its thread). Commands still outstanding complete with
 * NVME_SC_ABORTED_SQ_DELETION first. The connection is closed.
 */
void nvme_ctrlr_free_io_qpair(struct nvme_qpair *qpair);

/* True when the queue pair can send commands now. */
bool nvme_qpair_is_connected(const struct nvme_qpair *qpair);

/*
 * Completion callback: cpl->status is the NVMe status field (check it with
 * NVME_STATUS_IS_SUCCESS, NVME_STATUS_GET_SCT/SC); cdw0 the command result.
 */
typedef void (*nvme_cmd_cb)(void *cb_arg, const struct nvme_cpl *cpl);

/*
 * I/O commands. lba/nlb in logical blocks (nlb 1..65536 for read, write and
 * write zeroes, 1..2^32-1 for deallocate). The data of read and write is the
 * byte range [iov_offset, iov_offset + nlb * xfer_block_size) of iov: with an
 * extended-LBA format each block's metadata follows its data. Returns 0 (cb
 * will be called), or:
 *   -EINVAL  nlb out of range, transfer beyond MDTS, iov too short
 *   -ENOTSUP the controller does not support the command (ONCS)
 *   -ENOMEM  every request slot of the queue pair is in use (retry after a completion)
 *   -ENXIO   the controller is not connected (fails fast while reconnecting)
 */
int nvme_ns_cmd_readv(struct nvme_qpair *qpair, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		      struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb,
		      void *cb_arg);
int nvme_ns_cmd_writev(struct nvme_qpair *qpair, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		       struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb,
		       void *cb_arg);
int nvme_ns_cmd_write_zeroes(struct nvme_qpair *qpair, struct nvme_ns *ns, uint64_t lba,
			     uint32_t nlb, nvme_cmd_cb cb, void *cb_arg);
int nvme_ns_cmd_flush(struct nvme_qpair *qpair, struct nvme_ns *ns, nvme_cmd_cb cb, void *cb_arg);
/* Dataset Management with the deallocate attribute, one range. */
int nvme_ns_cmd_deallocate(struct nvme_qpair *qpair, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
			   nvme_cmd_cb cb, void *cb_arg);

/*
 * Reservation commands (NVMe Base Specification, "Reservations"), with the
 * fields of command dword 10: rrega/racqa/rrela the action, rtype the
 * reservation type (1..6), cptpl the persist-through-power-loss change
 * (0 none, 2 clear, 3 set). The keys travel in the request slot; a report
 * reads the extended data structure (len >= 64, a multiple of 4) into buf,
 * which must live until cb. Returns 0 (cb will be called), -EINVAL (a field
 * out of range), -ENOMEM or -ENXIO as the I/O commands above. A command the
 * target's reservations forbid completes with NVME_SC_RESERVATION_CONFLICT.
 */
int nvme_ns_cmd_resv_register(struct nvme_qpair *qpair, struct nvme_ns *ns, uint32_t rrega,
			      bool iekey, uint32_t cptpl, uint64_t crkey, uint64_t nrkey,
			      nvme_cmd_cb cb, void *cb_arg);
int nvme_ns_cmd_resv_acquire(struct nvme_qpair *qpair, struct nvme_ns *ns, uint32_t racqa,
			     uint32_t rtype, uint64_t crkey, uint64_t prkey, nvme_cmd_cb cb,
			     void *cb_arg);
int nvme_ns_cmd_resv_release(struct nvme_qpair *qpair, struct nvme_ns *ns, uint32_t rrela,
			     uint32_t rtype, uint64_t crkey, nvme_cmd_cb cb, void *cb_arg);
int nvme_ns_cmd_resv_report(struct nvme_qpair *qpair, struct nvme_ns *ns, void *buf, uint32_t len,
			    nvme_cmd_cb cb, void *cb_arg);

/*
 * Get Log Page `lid` (controller's thread) of len bytes (a multiple of 4)
 * from offset 0 into buf, which must live until cb; RAE clear. It fails
 * with a path status if the association is lost meanwhile. Returns 0 (cb
 * will be called), -EINVAL, -ENXIO (not connected), -ENOMEM (admin queue full).
 */
int nvme_ctrlr_get_log_page(struct nvme_ctrlr *ctrlr, uint8_t lid, uint32_t nsid, void *buf,
			    uint32_t len, nvme_cmd_cb cb, void *cb_arg);

/* A short human-readable name of an NVMe status ("Invalid Field in Command", ...). */
const char *nvme_status_string(uint16_t status);

#endif /* GGA_NVME_HOST_H */
