/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals of the NVMe-oF host library shared by its files:
 *   nvme_ctrlr.c   controller: initialisation sequence, keep alive, reset and
 *                  reconnect, detach, namespaces, I/O queue pair ownership
 *   nvme_qpair.c   queue pairs: request pool, submission, completion,
 *                  timeouts, Fabrics Connect, failure handling
 *   nvme_cmd.c     building submission queue entries (pure functions)
 *   nvme_tcp.c     the NVMe/TCP transport: socket, PDU send and receive
 *   nvme_tcp_pdu.c NVMe/TCP PDU building and checking (pure functions)
 *   nvme_rdma.c    the NVMe/RDMA transport: RDMA CM, queue pair, capsules by
 *                  SEND/RECV, keyed SGLs, memory registration (CONFIG_RDMA)
 *   nvme_rdma_util.c NVMe/RDMA private data, SGL and completion-state helpers
 *                  (pure functions)
 *   nvme_transport.c the transports built in, by type
 *
 * The split follows the Linux nvmet idea: the generic code owns the command
 * lifecycle; the transport only moves bytes and reports what arrived. The
 * boundary is struct nvme_transport_ops, as on the target: the generic code
 * does not see a transport's own types (nvme_tcp_internal.h,
 * nvme_rdma_internal.h).
 */
#ifndef GGA_NVME_INTERNAL_H
#define GGA_NVME_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include "gga/nvme_host.h"
#include "gga/nvme_spec.h"
#include "gga/nvme_tcp.h"
#include "gga/thread.h"

#define NVME_ADMIN_QUEUE_SIZE   32
/* Admin queue in-capsule data size of NVMe/TCP (TCP transport spec 7.4.3). */
#define NVME_TCP_ADMIN_ICD_SIZE 8192
/* How often each queue pair checks timeouts and whether to (re)connect. */
#define NVME_QPAIR_POLL_US      (20 * 1000)
/* Header buffer of an outgoing PDU: header, header digest and padding up to PDO. */
#define NVME_TCP_TX_HDR_SIZE    256

/* Path statuses used for commands failed by the host. */
#define NVME_STATUS_HOST_PATH_ERROR NVME_STATUS(NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR)
#define NVME_STATUS_ABORTED_BY_HOST NVME_STATUS(NVME_SCT_PATH, NVME_SC_ABORTED_BY_HOST)
#define NVME_STATUS_SQ_DELETION     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_SQ_DELETION)

struct nvme_qpair;
struct nvme_request;
struct sockaddr_in;

enum nvme_qpair_state {
	QPAIR_DISCONNECTED = 0,
	QPAIR_CONNECTING, /* transport connect, ICReq, Fabrics Connect */
	QPAIR_LIVE,
};

enum nvme_req_state {
	REQ_FREE = 0,
	REQ_QUEUED,      /* waiting for the queue pair to connect */
	REQ_OUTSTANDING, /* handed to the transport */
};

struct nvme_request {
	struct nvme_cmd cmd;
	struct nvme_qpair *qpair;
	/* Slot index in the low bits, a count of the slot's uses above (nvme_qpair.c). */
	uint16_t cid;
	enum nvme_req_state state;
	enum nvme_data_xfer xfer;
	nvme_cmd_cb cb;
	void *cb_arg;
	const struct iovec *iov;
	int iovcnt;
	size_t iov_offset;
	uint32_t data_len;
	uint64_t deadline; /* ticks; 0 = none */
	bool timed_out;
	TAILQ_ENTRY(nvme_request) link;
	/* Storage for a single-buffer payload (internal commands, DSM range). */
	struct iovec local_iov;
	union {
		struct nvme_dsm_range dsm;
		uint64_t resv_keys[2]; /* a reservation command's data */
	};
	/*
	 * The transport's per-request state (ops->req_ctx_size bytes) follows:
	 * a queue pair's requests lie req_stride bytes apart.
	 */
	uint8_t transport_ctx[] __attribute__((aligned(16)));
};

/*
 * Transport operations: the only transport-specific entry points. A
 * transport's queue pair embeds struct nvme_qpair (container_of back), and
 * each request carries req_ctx_size bytes of its state (nvme_request_ctx()).
 */
struct nvme_transport_ops {
	const char *name;
	enum nvme_transport_type trtype;
	/* Size of the transport's queue pair, which embeds struct nvme_qpair. */
	size_t qpair_size;
	/* The struct nvme_qpair's offset in it. */
	size_t qpair_offset;
	/* Bytes of transport state per request. */
	size_t req_ctx_size;
	/* Set up (zeroed) / release the transport's part of a queue pair; init may fail. */
	int (*qpair_init)(struct nvme_qpair *qpair);
	void (*qpair_fini)(struct nvme_qpair *qpair);
	/* Start connecting; nvme_qpair_transport_ready() or nvme_qpair_fail() follows. */
	int (*connect)(struct nvme_qpair *qpair);
	/* Close the connection at once; no request is touched. */
	void (*disconnect)(struct nvme_qpair *qpair);
	/* Send a request (state REQ_OUTSTANDING); errors fail the queue pair. */
	int (*submit)(struct nvme_qpair *qpair, struct nvme_request *req);
	/* Largest in-capsule data of this connection. */
	uint32_t (*max_in_capsule)(const struct nvme_qpair *qpair);
};

typedef void (*nvme_qpair_event_fn)(struct nvme_qpair *qpair, int rc);

struct nvme_qpair {
	struct nvme_ctrlr *ctrlr;
	const struct nvme_transport_ops *ops;
	struct thread *thread;
	char name[48];
	uint16_t qid;
	uint16_t num_entries; /* SQ size (1-based) */
	enum nvme_qpair_state state;
	bool is_admin;

	/* num_reqs + 1 requests (the last is connect_req), req_stride bytes apart. */
	struct nvme_request *reqs;
	size_t req_stride;
	uint32_t num_reqs;
	uint16_t cid_slot_mask; /* the cid bits that index reqs[] */
	TAILQ_HEAD(, nvme_request) free_reqs;
	/* Oldest first: timeouts look at the head only. */
	TAILQ_HEAD(, nvme_request) outstanding;
	TAILQ_HEAD(, nvme_request) queued;
	uint32_t num_outstanding;

	uint64_t cmd_timeout_ticks;
	uint64_t connect_deadline;
	struct poller *poller;

	/* Association: the cntlid and controller generation this queue connected under. */
	uint16_t cntlid;
	uint32_t gen;
	/* The generation this queue failed under: no reconnect until the controller resets. */
	uint32_t failed_gen;
	bool has_failed;
	/* The Fabrics Connect uses a request slot of its own, beyond the pool. */
	struct nvme_request *connect_req;
	struct nvme_connect_data *connect_data;
	/* DH-HMAC-CHAP after Connect (the connect_req slot carries it). */
	struct nvme_qpair_auth *auth;

	/* connect_done(qpair, rc) ends a connect attempt; lost(qpair, rc) reports a lost queue. */
	nvme_qpair_event_fn connect_done;
	nvme_qpair_event_fn lost;
	/* Runs when the queue pair is really freed (possibly after a deferral). */
	void (*destroyed)(struct nvme_qpair *qpair);

	/* Completion callbacks running: a free requested meanwhile waits for them. */
	uint32_t cb_depth;
	bool free_pending;
	bool destroying;
	bool timed_out_seen; /* the last failure was a command timeout */
	char fail_reason[256];
};

/*
 * Controller internals. The steps of the initialisation and of a detach's
 * shutdown; each step that sends a command has its entry in ctrlr_steps
 * (nvme_ctrlr.c).
 */
enum nvme_ctrlr_init_step {
	INIT_IDLE = 0,
	INIT_CONNECT_ADMIN,
	INIT_GET_CAP,
	INIT_GET_VS,
	INIT_SET_CC,
	INIT_WAIT_RDY,
	INIT_IDENTIFY_CTRLR,
	INIT_SET_NUM_QUEUES,
	INIT_ACTIVE_NS_LIST,
	INIT_IDENTIFY_NS,
	INIT_DONE,
	SHUTDOWN_SET_CC,
	SHUTDOWN_WAIT,
};

struct nvme_ns {
	struct nvme_ctrlr *ctrlr;
	struct nvme_ns_info info;
};

/* The session word: generation 63:32, cntlid 31:16, live bit 0 (read by I/O threads). */
#define NVME_SESSION_LIVE 1ull
#define NVME_SESSION(gen, cntlid, live) \
	((uint64_t)(gen) << 32 | (uint64_t)(cntlid) << 16 | ((live) ? NVME_SESSION_LIVE : 0))
#define NVME_SESSION_GEN(s)    ((uint32_t)((s) >> 32))
#define NVME_SESSION_CNTLID(s) ((uint16_t)((s) >> 16))

struct nvme_ctrlr {
	struct nvme_transport_id trid;
	struct nvme_ctrlr_opts opts;
	const struct nvme_transport_ops *ops;
	struct thread *thread;
	/* "traddr:trsvcid", for messages. */
	char name[NVME_TRADDR_LEN + NVME_TRSVCID_LEN + 8];

	enum nvme_ctrlr_state state;
	enum nvme_ctrlr_init_step step;
	uint64_t session; /* atomic */
	uint32_t gen;
	uint32_t refs; /* atomic */

	struct nvme_qpair *admin;
	uint64_t cap;
	uint32_t cc;
	uint32_t vs;
	uint32_t csts;
	struct nvme_identify_ctrlr *cdata;
	void *id_buf; /* 4 KiB identify buffer */
	uint32_t max_xfer_size;
	uint32_t io_icd_size; /* atomic: read by I/O threads */
	uint32_t io_queue_size;
	uint32_t num_io_queues;
	uint64_t init_deadline;
	struct poller *init_poller;
	struct poller *shutdown_poller; /* bounds a detach's shutdown */
	struct poller *keep_alive_poller;
	bool keep_alive_outstanding;
	uint64_t reconnect_count;

	/* Active namespaces, by increasing nsid. */
	struct nvme_ns *ns;
	uint32_t num_ns;
	uint32_t *ns_list; /* from the last Identify active namespace list */
	uint32_t ns_list_len;
	uint32_t ns_list_pos;
	struct nvme_ns_info *ns_found; /* namespaces identified by the running attempt */
	uint32_t num_ns_found;
	bool ns_known; /* the first connect created ctrlr->ns */

	/* Reconnect backoff. */
	struct poller *reconnect_poller;
	uint32_t reconnect_delay_ms;
	uint32_t reconnect_attempts;
	int last_error;

	/* I/O queue ids: taken by threads allocating queue pairs (setup path). */
	pthread_mutex_t lock;
	uint8_t *qid_used; /* [1..num_io_queues] */
	uint32_t qid_slots;
	uint32_t num_io_qpairs;

	nvme_ctrlr_connect_cb connect_cb;
	void *connect_cb_arg;
	nvme_ctrlr_reconnect_cb reconnect_cb;
	void *reconnect_cb_arg;
	nvme_ctrlr_detach_cb detach_cb;
	void *detach_cb_arg;
	char reason[1024];
};

/* nvme_ctrlr.c */
void nvme_ctrlr_get_ref(struct nvme_ctrlr *ctrlr);
void nvme_ctrlr_put_ref(struct nvme_ctrlr *ctrlr);
/* An I/O queue pair of generation `gen` failed (any thread): the controller resets. */
void nvme_ctrlr_report_io_failure(struct nvme_ctrlr *ctrlr, uint32_t gen, const char *reason);
/* Periodic check of an I/O queue pair (its thread): follow controller resets, reconnect. */
void nvme_ctrlr_io_qpair_poll(struct nvme_qpair *qpair);
/* An I/O queue pair is disconnected and I/O arrives: start connecting if the controller is up. */
bool nvme_ctrlr_io_qpair_kick(struct nvme_qpair *qpair);
/* In-capsule data size of I/O queues (from IOCCSZ). */
uint32_t nvme_ctrlr_io_icd_size(const struct nvme_ctrlr *ctrlr);

/* nvme_qpair.c */
struct nvme_qpair *nvme_qpair_create(struct nvme_ctrlr *ctrlr, uint16_t qid, uint16_t num_entries,
				     bool is_admin);
void nvme_qpair_destroy(struct nvme_qpair *qpair);
/* Start connecting with this cntlid (0xffff for the admin queue); connect_done follows. */
int nvme_qpair_connect(struct nvme_qpair *qpair, uint16_t cntlid, uint32_t gen);
/* Drop the connection; everything outstanding completes with `status`. */
void nvme_qpair_disconnect(struct nvme_qpair *qpair, uint16_t status);
/* Transport: the connection is up (ICResp done); send Fabrics Connect. */
void nvme_qpair_transport_ready(struct nvme_qpair *qpair);
/* Transport or timer: the connection failed; rc is a negative errno. */
void nvme_qpair_fail(struct nvme_qpair *qpair, int rc, const char *reason);
/* Transport: say why the connection fails (its fail_reason, for the log). Returns rc. */
int nvme_qpair_error(struct nvme_qpair *qpair, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Transport: the controller's IPv4 address and port; -EINVAL (with the reason) if none. */
int nvme_qpair_sockaddr(struct nvme_qpair *qpair, struct sockaddr_in *sin);
/* Transport: the completion of a request arrived. */
void nvme_qpair_complete(struct nvme_qpair *qpair, struct nvme_request *req,
			 const struct nvme_cpl *cpl);
/*
 * Callbacks may free the queue pair: code that runs them and touches the
 * queue pair afterwards brackets them with hold/release. release returns true
 * if the queue pair was freed (then it must not be touched).
 */
void nvme_qpair_hold(struct nvme_qpair *qpair);
bool nvme_qpair_release(struct nvme_qpair *qpair);
/* Transport: look up an outstanding request by cid (NULL if none). */
struct nvme_request *nvme_qpair_find_req(struct nvme_qpair *qpair, uint16_t cid);

/* The request in a slot of a queue pair (slot <= num_reqs). */
static inline struct nvme_request *
nvme_qpair_req(const struct nvme_qpair *qpair, uint32_t slot)
{
	return (struct nvme_request *)((uint8_t *)qpair->reqs + (size_t)slot * qpair->req_stride);
}

/* The request's slot in its queue pair (its cid without the use count). */
static inline uint32_t
nvme_request_slot(const struct nvme_request *req)
{
	const struct nvme_qpair *qpair = req->qpair;

	return (uint32_t)(((const uint8_t *)req - (const uint8_t *)qpair->reqs) /
			  qpair->req_stride);
}

/* The transport's state of a request. */
static inline void *
nvme_request_ctx(const struct nvme_request *req)
{
	return (void *)req->transport_ctx;
}
/*
 * Submit a command. data: iov range of data_len bytes (NULL/0 for none);
 * direction from the opcode. Returns 0 or -ENOMEM/-ENXIO/-EINVAL.
 */
int nvme_qpair_submit(struct nvme_qpair *qpair, const struct nvme_cmd *cmd, const struct iovec *iov,
		      int iovcnt, size_t iov_offset, uint32_t data_len, nvme_cmd_cb cb,
		      void *cb_arg);
/* Same, with a flat buffer. */
int nvme_qpair_submit_buf(struct nvme_qpair *qpair, const struct nvme_cmd *cmd, void *buf,
			  uint32_t len, nvme_cmd_cb cb, void *cb_arg);

/* nvme_cmd.c: pure SQE builders. */
void nvme_cmd_build_connect(struct nvme_cmd *cmd, uint16_t qid, uint16_t sqsize_0based,
			    uint32_t kato_ms);
void nvme_connect_data_build(struct nvme_connect_data *data, const uint8_t hostid[16],
			     uint16_t cntlid, const char *subnqn, const char *hostnqn);
void nvme_cmd_build_prop_get(struct nvme_cmd *cmd, uint32_t offset, bool eight_bytes);
void nvme_cmd_build_prop_set(struct nvme_cmd *cmd, uint32_t offset, uint64_t value,
			     bool eight_bytes);
void nvme_cmd_build_identify(struct nvme_cmd *cmd, uint8_t cns, uint32_t nsid);
void nvme_cmd_build_set_num_queues(struct nvme_cmd *cmd, uint32_t num_queues);
void nvme_cmd_build_keep_alive(struct nvme_cmd *cmd);
void nvme_cmd_build_rw(struct nvme_cmd *cmd, uint8_t opc, uint32_t nsid, uint64_t lba,
		       uint32_t nlb);
void nvme_cmd_build_flush(struct nvme_cmd *cmd, uint32_t nsid);
/* Get Log Page lid, len bytes (a multiple of 4) from offset 0, RAE clear. */
void nvme_cmd_build_get_log_page(struct nvme_cmd *cmd, uint8_t lid, uint32_t nsid, uint32_t len);
/* Reservation Register, Acquire or Release (opc); rtype/cptpl 0 where the command has none. */
void nvme_cmd_build_resv(struct nvme_cmd *cmd, uint8_t opc, uint32_t nsid, uint32_t action,
			 bool iekey, uint32_t rtype, uint32_t cptpl);
/* Reservation Report of len bytes (a multiple of 4), the extended data structure. */
void nvme_cmd_build_resv_report(struct nvme_cmd *cmd, uint32_t nsid, uint32_t len);
void nvme_cmd_build_dsm(struct nvme_cmd *cmd, uint32_t nsid, uint32_t nr_ranges,
			uint32_t attributes);
/* Fill the data pointer SGL: none, in-capsule or transport data block. */
void nvme_cmd_set_sgl(struct nvme_cmd *cmd, uint32_t len, bool in_capsule);
/* Parse an Identify Namespace: fills info except nsid and ONCS/VWC flags. Returns 0/-EINVAL. */
int nvme_ns_info_from_identify(struct nvme_ns_info *info, const struct nvme_identify_ns *id);
/* Max transfer in bytes from MDTS and CAP.MPSMIN (UINT32_MAX when unlimited). */
uint32_t nvme_mdts_to_bytes(uint8_t mdts, uint64_t cap);
/* The errno and message for a failed Connect status. */
int nvme_connect_status_errno(uint16_t status);

/* nvme_tcp_pdu.c: pure PDU helpers. */
void nvme_tcp_build_icreq(struct nvme_tcp_icreq *icreq, bool hdgst, bool ddgst);
/* Check an ICResp; on success sets the negotiated values. Returns 0 or -EPROTO with *why. */
int nvme_tcp_check_icresp(const struct nvme_tcp_icresp *icresp, bool hdgst, bool ddgst,
			  uint32_t *cpda, uint32_t *maxh2cdata, const char **why);
/*
 * Build a CapsuleCmd header into buf (NVME_TCP_TX_HDR_SIZE bytes): the common
 * header, the SQE, the header digest and zero padding up to PDO when icd_len
 * is non-zero. Returns the number of header bytes (everything before data).
 */
uint32_t nvme_tcp_build_cmd_hdr(uint8_t *buf, const struct nvme_cmd *cmd, uint32_t icd_len,
				bool hdgst, bool ddgst, uint32_t cpda);
/* Build an H2CData header likewise. Returns the header bytes. */
uint32_t nvme_tcp_build_h2c_hdr(uint8_t *buf, uint16_t cccid, uint16_t ttag, uint32_t datao,
				uint32_t datal, bool last, bool hdgst, bool ddgst, uint32_t cpda);
/* Build an H2CTermReq with up to 128 bytes of the offending header. Returns plen. */
uint32_t nvme_tcp_build_term_req(uint8_t *buf, uint16_t fes, uint32_t fei, const void *hdr,
				 uint32_t hdr_len);
/*
 * Check a received common header (host side) against the negotiated digests.
 * Returns 0 and sets *hdr_total (header + header digest bytes), or an FES
 * (NVME_TCP_FES_*) with *fei the offending byte offset.
 */
int nvme_tcp_check_ch(const struct nvme_tcp_common_hdr *ch, bool icresp_expected, bool hdgst,
		      bool ddgst, uint32_t *hdr_total, uint32_t *fei);
/* CRC-32C of the byte range [offset, offset + len) of an iovec array. */
uint32_t nvme_tcp_iov_crc(const struct iovec *iov, int iovcnt, size_t offset, size_t len,
			  uint32_t crc);
/*
 * The iovecs covering [offset, offset + len) of iov, at most max entries.
 * Returns the count; the bytes covered may be less than len if max is reached.
 */
int nvme_iov_range(const struct iovec *iov, int iovcnt, size_t offset, size_t len,
		   struct iovec *out, int max);

/* nvme_transport.c: the transports built in; NULL for a type left out of the build. */
const struct nvme_transport_ops *nvme_transport_find(enum nvme_transport_type trtype);
extern const struct nvme_transport_ops nvme_tcp_ops;  /* nvme_tcp.c */
extern const struct nvme_transport_ops nvme_rdma_ops; /* nvme_rdma.c */

#endif /* GGA_NVME_INTERNAL_H */
