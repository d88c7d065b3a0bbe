/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe-oF target core internals, shared by the files of target/.
 *
 * Threads and ownership:
 *   - The app thread owns the target, subsystems, namespaces, hosts,
 *     listeners and controllers. RPCs, Connect, every admin command and
 *     keep-alive timers run there.
 *   - Each reactor thread has a poll group. A qpair lives on one poll group;
 *     its transport receives and sends there, and I/O commands execute there
 *     through per-thread bdev channels (no locks on the I/O path).
 *   - An admin command travels qpair thread -> app thread -> qpair thread by
 *     messages; an I/O command never leaves its thread.
 * A namespace is an io_device: its channel on a thread holds that thread's
 * bdev channel and counts the I/O in flight, so removal can wait for it.
 */
#ifndef GGA_NVMF_INTERNAL_H
#define GGA_NVMF_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <jansson.h>

#include "gga/bdev.h"
#include "gga/nvme_spec.h"
#include "gga/keyring.h"
#include "gga/nvme_auth.h"
#include "gga/thread.h"

#include "nvmf_feat.h"
#include "nvmf_resv.h"
#include "nvmf_transport.h"

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                             \
	for ((var) = TAILQ_FIRST(head); (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1); \
	     (var) = (tvar))
#endif

#define NVMF_MAX_SUBSYSTEMS         1024
#define NVMF_MAX_TRANSPORTS         4
#define NVMF_DEFAULT_MAX_NAMESPACES 32
#define NVMF_MAX_NAMESPACES         1024
#define NVMF_MAX_AER                4 /* AERL + 1 */
#define NVMF_MAX_ABORTS             4 /* ACL + 1 */
#define NVMF_RESV_NOTIF_MAX         16
/* Error Information log entries a controller keeps (ELPE + 1). */
#define NVMF_ERR_LOG_ENTRIES        16
/* Keep alive granularity in 100 ms units: 1 second. */
#define NVMF_KAS                    10
/* CAP.TO in 500 ms units. */
#define NVMF_CAP_TO                 15
#define NVMF_DEFAULT_SN             "00000000000000000000"
#define NVMF_DEFAULT_MN             "gga Controller"
#define NVMF_FW_REVISION            "0.1.0"
/* ANA Transition Time (Identify Controller ANATT), seconds. */
#define NVMF_ANATT_SEC              10

enum nvmf_subtype {
	NVMF_SUBTYPE_DISCOVERY,
	NVMF_SUBTYPE_NVME,
};

enum nvmf_subsystem_state {
	NVMF_SUBSYS_ACTIVE,
	NVMF_SUBSYS_DELETING,
};

/* A command's status with Do Not Retry set. */
#define STATUS_DNR(sct, sc) (NVME_STATUS(sct, sc) | NVME_STATUS_DNR)

struct nvmf_host {
	char nqn[NVME_NQN_FIELD_LEN];
	/* TLS: the host's PSK (a secure channel required when set). */
	struct key *psk;
	/* DH-HMAC-CHAP: the host's key (auth required when set) and the controller's. */
	struct key *dhchap_key;
	struct key *dhchap_ctrlr_key;
	TAILQ_ENTRY(nvmf_host) link;
};

/* A listening endpoint of the target, shared by every subsystem that names it. */
struct nvmf_tgt_listener {
	struct nvmf_listen_addr addr;
	struct nvmf_transport *transport;
	uint32_t refs;
	uint16_t portid;
	/* Connections admitted and not yet detached; a refusal was logged. */
	uint32_t num_conns;
	bool conn_limit_warned;
	/* The socket was closed early (shutdown); only the bookkeeping is left. */
	bool stopped;
	TAILQ_ENTRY(nvmf_tgt_listener) link;
};

struct nvmf_subsystem_listener {
	struct nvmf_tgt_listener *tl;
	/* ANA state of each ANA group (index anagrpid - 1, max_nsid of them). */
	uint8_t *ana_state;
	TAILQ_ENTRY(nvmf_subsystem_listener) link;
};

struct nvmf_ns {
	struct nvmf_subsystem *subsys;
	uint32_t nsid;
	struct bdev *bdev;
	struct bdev_desc *desc;
	/* Allocated: a bdev name has no length limit. */
	char *bdev_name;
	uint32_t block_size;
	uint32_t md_size;
	uint32_t buf_block_size;
	uint64_t num_blocks;
	uint8_t uuid[16];
	uint32_t anagrpid; /* 1..max_nsid (default: the nsid) */
	bool has_unmap;
	bool has_write_zeroes;
	bool has_flush;
	/* Set (app thread) when removal starts; read by I/O threads. */
	bool removing;
	/*
	 * Its bdev may not be served from this node (bdev_is_accessible: a gga
	 * bdev whose front is standby): its ANA group reads inaccessible
	 * through every listener. App thread writes, I/O threads read.
	 */
	bool inaccessible;
	/* Its bdev's health was degraded when last looked at (app thread; for the log line). */
	bool degraded;
	/* Removal completion: every channel released, then the caller's callback. */
	void (*released_cb)(struct nvmf_ns *ns);
	void (*remove_cb)(void *arg, int rc);
	void *remove_arg;

	/*
	 * Reservations (nvmf_ns_resv.c). `resv` is the namespace's state, changed
	 * on the app thread under resv_lock; each thread's channel keeps a copy
	 * that the change's channel walk installs, and channels created later
	 * copy it under the lock. One change at a time: the walk of a change
	 * (resv_busy) must end before the next command runs (resv_queue).
	 */
	struct nvmf_resv resv;
	pthread_mutex_t resv_lock;
	char *ptpl_file; /* persist through power loss: where (NULL: not offered) */
	bool resv_inited;
	bool resv_busy;
	TAILQ_HEAD(, nvmf_request) resv_queue;
	/* A removal that waits for the walk of a change to end. */
	void (*resv_then_release)(struct nvmf_ns *ns);
};

/* A namespace's per-thread context (the io_channel of the nvmf_ns io_device). */
struct nvmf_ns_channel {
	struct nvmf_ns *ns;
	struct io_channel *bdev_ch;
	struct nvmf_pg_subsys *pgs;
	uint64_t outstanding;
	/* Removal walk waiting for outstanding to reach 0. */
	struct io_channel_iter *remove_iter;
	/*
	 * Reservations: this thread's copy of the namespace's state, which
	 * every command that reads or writes is checked against. Commands are
	 * counted per epoch (the request's resv_epoch); installing a new state
	 * starts a new epoch, and the walk that installs it waits on this thread
	 * until no command of the old epoch is left (resv_iter), so a change is
	 * complete only when no command admitted under the old state is in flight.
	 */
	struct nvmf_resv resv;
	uint8_t resv_epoch;
	uint64_t resv_inflight[2];
	struct io_channel_iter *resv_iter;
};

/* A subsystem's state on one poll group (that poll group's thread only). */
struct nvmf_pg_subsys {
	uint32_t max_nsid;
	struct nvmf_ns_channel *ns_ch[]; /* [max_nsid], index nsid - 1 */
};

struct nvmf_subsystem {
	uint32_t id; /* index in g_nvmf_tgt.subsystems */
	char nqn[NVME_NQN_FIELD_LEN];
	enum nvmf_subtype subtype;
	enum nvmf_subsystem_state state;
	char sn[NVME_SN_LEN + 1];
	char mn[NVME_MN_LEN + 1];
	bool allow_any_host;
	/* ANA: reported (CMIC bit 3, log page 0Ch) and enforced per listener. */
	bool ana_reporting;
	uint64_t ana_chgcnt;
	/* Namespaces whose bdev may not be served from here (nvmf_ns.inaccessible). */
	uint32_t inaccessible_ns;
	/* Controller IDs this subsystem hands out (two fronts of one NQN must not overlap). */
	uint16_t min_cntlid;
	uint16_t max_cntlid;
	uint32_t max_nsid;
	struct nvmf_ns **ns; /* [max_nsid]; slots read by I/O threads */
	uint32_t num_ns;
	uint16_t next_cntlid;
	TAILQ_HEAD(, nvmf_host) hosts;
	TAILQ_HEAD(, nvmf_subsystem_listener) listeners;
	TAILQ_HEAD(, nvmf_ctrlr) ctrlrs;
	/* Deletion in progress: called when the last controller is gone. */
	void (*ctrlrs_gone_cb)(struct nvmf_subsystem *subsys);
	void *delete_ctx;
	TAILQ_ENTRY(nvmf_subsystem) link;
};

/* The controller registers exposed as properties. */
struct nvmf_ctrlr_regs {
	uint64_t cap;
	uint32_t vs;
	uint32_t cc;
	uint32_t csts;
};

enum nvmf_ctrlr_state {
	NVMF_CTRLR_LIVE,
	NVMF_CTRLR_DYING, /* admin queue gone or fatal: waiting for the I/O queues */
};

struct nvmf_ctrlr {
	struct nvmf_subsystem *subsys;
	struct nvmf_transport *transport;
	uint16_t cntlid;
	enum nvmf_ctrlr_state state;
	/*
	 * The admin queue has not authenticated yet: the cntlid is provisional
	 * (not held against other Connects; another may be given at success),
	 * no I/O queue can find the controller, its keep-alive timer is off.
	 */
	bool auth_pending;
	/* I/O queues connected to it that have not authenticated (not in io_qpairs). */
	TAILQ_HEAD(, nvmf_qpair) pending_io;
	char hostnqn[NVME_NQN_FIELD_LEN];
	uint8_t hostid[16];
	/*
	 * ANA state of each group as seen through this controller's listener
	 * ([max_nsid]; written on the app thread, read by I/O threads).
	 */
	uint8_t *ana_state;
	struct nvmf_ctrlr_regs regs;
	struct nvmf_qpair *admin_qpair;
	struct nvmf_qpair **io_qpairs; /* [max_io_qpairs + 1], index qid */
	uint32_t max_io_qpairs;
	uint32_t num_io_qpairs;
	/* I/O qpairs detached whose requests are not all back yet (SHST waits for them). */
	uint32_t io_draining;
	/* CC.SHN written: SHST becomes complete when the last I/O qpair is gone and drained. */
	bool shutting_down;

	/* Features (the value-only ones in feat: nvmf_feat.h). */
	struct nvmf_feat feat;
	uint32_t kato_ms;
	uint32_t aec;
	uint32_t num_queues_requested; /* Set Features Number of Queues happened */
	bool io_qpairs_seen;

	/* Keep alive. */
	struct poller *ka_poller;
	uint64_t last_ka_tick;

	/* Asynchronous events. */
	struct nvmf_request *aer[NVMF_MAX_AER];
	uint32_t num_aer;
	uint32_t pending_events; /* NVMF_EVENT_* waiting for an AER */
	uint32_t masked_events;  /* sent, not yet cleared by reading the log */
	uint32_t changed_ns[NVME_CHANGED_NS_LIST_MAX];
	uint32_t num_changed_ns;
	bool changed_ns_overflow;

	/*
	 * Reservation notifications waiting to be read (log page 80h), oldest
	 * first; a notification that finds the queue full only counts
	 * (resv_log_count). resv_mask: Feature 82h per namespace ([max_nsid]).
	 */
	struct {
		uint64_t count;
		uint32_t nsid;
		uint8_t type;
	} resv_notif[NVMF_RESV_NOTIF_MAX];
	uint32_t resv_notif_head;
	uint32_t resv_notif_len;
	uint64_t resv_log_count;
	uint8_t *resv_mask;

	/*
	 * SMART / Health: the critical warning bits already sent as an
	 * asynchronous event (nvmf_smart_event), the information of the event
	 * waiting for an AER, and the warning last seen (for the log line).
	 */
	uint8_t smart_reported;
	uint8_t smart_aen_info;
	uint8_t smart_warning;

	/*
	 * Error Information log (01h): the last NVMF_ERR_LOG_ENTRIES failed
	 * commands, err_count made in all. I/O threads add (nvmf_ctrlr_error_record),
	 * so under err_lock.
	 */
	pthread_mutex_t err_lock;
	uint64_t err_count;
	struct nvme_error_log_entry err_log[NVMF_ERR_LOG_ENTRIES];

	TAILQ_ENTRY(nvmf_ctrlr) link;
};

#define NVMF_EVENT_NS_CHANGED        (1u << 0)
#define NVMF_EVENT_DISCOVERY_CHANGED (1u << 1)
#define NVMF_EVENT_ANA_CHANGED       (1u << 2)
#define NVMF_EVENT_RESV_LOG          (1u << 3)
#define NVMF_EVENT_SMART             (1u << 4)

struct nvmf_poll_group {
	struct thread *thread;
	uint32_t index;
	struct nvmf_transport_poll_group *tgroups[NVMF_MAX_TRANSPORTS];
	struct nvmf_pg_subsys *subsys[NVMF_MAX_SUBSYSTEMS];
	TAILQ_HEAD(, nvmf_qpair) qpairs;
	uint32_t num_qpairs;
	/* Statistics (this thread only). */
	uint64_t admin_qpairs;
	uint64_t io_qpairs;
	uint32_t current_admin_qpairs;
	uint32_t current_io_qpairs;
	uint64_t pending_bdev_io;
	uint64_t completed_nvme_io;
};

enum nvmf_tgt_state {
	NVMF_TGT_STOPPED,
	NVMF_TGT_RUNNING,
	NVMF_TGT_STOPPING,
};

struct nvmf_tgt {
	enum nvmf_tgt_state state;
	/* nvmf_set_config: the DH-HMAC-CHAP digests and groups allowed (bit 1 << id). */
	uint8_t dhchap_digests;
	uint8_t dhchap_dhgroups;
	/* S1 of the next challenge (never 0). */
	uint32_t auth_seqnum;
	struct nvmf_poll_group *pgs;
	uint32_t num_pgs;
	uint32_t next_pg;
	TAILQ_HEAD(, nvmf_transport) transports;
	uint32_t num_transports;
	TAILQ_HEAD(nvmf_subsystem_head, nvmf_subsystem) subsystems; /* creation order */
	struct nvmf_subsystem *by_id[NVMF_MAX_SUBSYSTEMS];
	struct nvmf_subsystem *discovery;
	TAILQ_HEAD(, nvmf_tgt_listener) listeners;
	uint16_t next_portid;
	uint64_t discovery_genctr;
	/* When the target started (ticks_get): the SMART log's power-on hours. */
	uint64_t start_tick;
	/* Live qpairs (all threads). */
	uint32_t num_qpairs;
	uint32_t next_qpair_id;
};

extern struct nvmf_tgt g_nvmf_tgt;

/* nvmf.c */
uint16_t nvmf_errno_to_status(int rc);
void nvmf_request_complete(struct nvmf_request *req);
struct nvmf_transport *nvmf_tgt_find_transport(enum nvme_trtype trtype);
int nvmf_tgt_create_transport(const struct nvmf_transport_ops *ops,
			      const struct nvmf_transport_opts *opts, void (*cb)(void *arg, int rc),
			      void *arg);
int nvmf_listen_addr_parse(enum nvme_trtype trtype, const char *adrfam, const char *traddr,
			   const char *trsvcid, struct nvmf_listen_addr *addr);
bool nvmf_listen_addr_equal(const struct nvmf_listen_addr *a, const struct nvmf_listen_addr *b);
int nvmf_tgt_listen(const struct nvmf_listen_addr *addr, struct nvmf_tgt_listener **tl);
void nvmf_tgt_unlisten(struct nvmf_tgt_listener *tl);
void nvmf_tgt_discovery_changed(void);
/* Run fn(pg, ctx) on every poll group's thread, then cpl(ctx) on the app thread. */
int nvmf_tgt_for_each_pg(void (*fn)(struct nvmf_poll_group *pg, void *ctx), void *ctx,
			 void (*cpl)(void *ctx));
json_t *nvmf_transport_opts_json(const struct nvmf_transport *t);

/* nvmf_transport.c */
/*
 * Create transport t's part of poll group pg (pg's thread, t->ops->tgroup).
 * Returns 0 with *tgroup set, or -ENOMEM or what ops->tgroup->init returned.
 */
int nvmf_tgroup_create(struct nvmf_transport *t, struct nvmf_poll_group *pg,
		       struct nvmf_transport_poll_group **tgroup);
/* Free a group whose qpairs are all released (a warning if connections are left). */
void nvmf_tgroup_destroy(struct nvmf_transport_poll_group *tgroup);
/* nvmf_get_stats: connections and buffer_waits, then the transport's own (pg's thread). */
void nvmf_tgroup_dump_stats(struct nvmf_transport_poll_group *tgroup, json_t *obj);

/* nvmf_subsystem.c */
bool nvmf_nqn_is_valid(const char *nqn);
bool nvmf_sn_is_valid(const char *sn);
bool nvmf_mn_is_valid(const char *mn);
struct nvmf_subsystem *nvmf_subsystem_find(const char *nqn);
int nvmf_subsystem_create(const char *nqn, enum nvmf_subtype subtype, uint32_t max_nsid,
			  struct nvmf_subsystem **subsys);
int nvmf_subsystem_set_sn(struct nvmf_subsystem *subsys, const char *sn);
int nvmf_subsystem_set_mn(struct nvmf_subsystem *subsys, const char *mn);
/* Disconnect every controller, remove namespaces and listeners, free; cb on the app thread. */
int nvmf_subsystem_delete(struct nvmf_subsystem *subsys, void (*cb)(void *arg), void *arg);
/* Key names (NULL: none) of a host added with DH-HMAC-CHAP. */
struct nvmf_host_opts {
	const char *dhchap_key;
	const char *dhchap_ctrlr_key;
	const char *psk;
};
int nvmf_subsystem_add_host(struct nvmf_subsystem *subsys, const char *hostnqn,
			    const struct nvmf_host_opts *opts, char *msg, size_t msg_len);
const struct nvmf_host *nvmf_subsystem_find_host(const struct nvmf_subsystem *subsys,
						 const char *hostnqn);
int nvmf_subsystem_remove_host(struct nvmf_subsystem *subsys, const char *hostnqn);
void nvmf_subsystem_set_allow_any_host(struct nvmf_subsystem *subsys, bool allow);
bool nvmf_subsystem_host_allowed(const struct nvmf_subsystem *subsys, const char *hostnqn);
int nvmf_subsystem_add_listener(struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr,
				uint8_t ana_state);
/*
 * Set the ANA state of a listener for one ANA group (anagrpid 0: all), tell
 * the controllers that came in through it (ANA change event). -ENOENT no
 * such listener, -EINVAL ana_reporting is off or anagrpid out of range.
 */
int nvmf_subsystem_set_ana_state(struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr,
				 uint32_t anagrpid, uint8_t state);
/* The ANA states of the listener at addr (max_nsid of them), or NULL. */
const uint8_t *nvmf_subsystem_listener_ana(const struct nvmf_subsystem *subsys,
					   const struct nvmf_listen_addr *addr);
/* -EINVAL unless 1 <= min <= max <= 0xffef. */
int nvmf_subsystem_set_cntlid_range(struct nvmf_subsystem *subsys, uint16_t min, uint16_t max);
/*
 * The ANA state of group anagrpid through ctrlr: its listener's, or
 * inaccessible while a namespace of the group may not be served from here.
 */
uint8_t nvmf_ctrlr_group_ana_state(const struct nvmf_ctrlr *ctrlr, uint32_t anagrpid);
/* 0, or the ANA path status of a command to ns through ctrlr (any thread). */
uint16_t nvmf_ctrlr_ana_check(const struct nvmf_ctrlr *ctrlr, const struct nvmf_ns *ns);
const char *nvmf_ana_state_str(uint8_t state);
int nvmf_ana_state_parse(const char *s, uint8_t *state);
int nvmf_subsystem_remove_listener(struct nvmf_subsystem *subsys,
				   const struct nvmf_listen_addr *addr);
bool nvmf_subsystem_listener_allowed(const struct nvmf_subsystem *subsys,
				     const struct nvmf_listen_addr *addr);
/* A namespace's options beyond its bdev and nsid (NULL: none). */
struct nvmf_ns_opts {
	const char *ptpl_file;
	uint32_t anagrpid; /* 0: the nsid */
	/* Out: why the options were refused (-EINVAL). */
	char why[160];
};
int nvmf_subsystem_add_ns(struct nvmf_subsystem *subsys, const char *bdev_name, uint32_t nsid,
			  struct nvmf_ns_opts *opts, uint32_t *nsid_out);
int nvmf_subsystem_remove_ns(struct nvmf_subsystem *subsys, uint32_t nsid,
			     void (*cb)(void *arg, int rc), void *arg);
struct nvmf_ns *nvmf_subsystem_get_ns(const struct nvmf_subsystem *subsys, uint32_t nsid);
/* nvmf_tls.c: secure channels (TLS PSKs by host and subsystem). */
/* Add (app thread) the PSK of host on subsystem subnqn; the table takes its own reference. */
int nvmf_tls_psk_add(const char *hostnqn, const char *subnqn, struct key *key);
void nvmf_tls_psk_remove(const char *hostnqn, const char *subnqn);
/* The handshake's lookup (nvme_tls_psk_find_fn; any thread): the TLS PSK of identity. */
int nvmf_tls_psk_find(void *ctx, const char *identity, struct nvme_tls_key *key, char *why,
		      size_t why_len);
/*
 * At Connect (app thread): 0, or the status refusing it: a TLS queue must
 * name its identity's host and subsystem; a host with a psk must use TLS.
 */
uint16_t nvmf_tls_connect_check(const struct nvmf_qpair *qpair, const struct nvmf_subsystem *subsys,
				const char *hostnqn);

/* nvmf_auth.c: DH-HMAC-CHAP on a queue (app thread). */
/*
 * At Connect: a host with a key must authenticate this queue. 1: required
 * (transaction set up), 0: not required, -errno: cannot (a key unreadable).
 */
int nvmf_auth_qpair_init(struct nvmf_qpair *qpair, struct nvmf_subsystem *subsys,
			 const char *hostnqn);
void nvmf_auth_qpair_fini(struct nvmf_qpair *qpair);
/* The queue needs no authentication or has authenticated once (app thread). */
bool nvmf_auth_qpair_authenticated(const struct nvmf_qpair *qpair);
/* Authentication Send / Receive; true: it completes later (a step went to a worker). */
bool nvmf_auth_exec(struct nvmf_request *req);
/* The worker pool (nvmf subsystem start and stop) and its counts for nvmf_get_stats. */
int nvmf_auth_init(void);
void nvmf_auth_fini(void);
json_t *nvmf_auth_stats_json(void);

/* The discovery log page for hostnqn, built into a new buffer of *len bytes. */
void *nvmf_discovery_log_build(const char *hostnqn, size_t *len);
json_t *nvmf_subsystem_info_json(const struct nvmf_subsystem *subsys);
/* nvmf_subsystem_get_listeners: each listener's address and ANA states. */
json_t *nvmf_subsystem_listeners_json(const struct nvmf_subsystem *subsys);
void nvmf_subsystem_write_config_json(const struct nvmf_subsystem *subsys, json_t *config);
void nvmf_pg_subsys_free(struct nvmf_poll_group *pg, uint32_t sid);

/* nvmf_ctrlr.c */
void nvmf_ctrlr_exec_fabrics(struct nvmf_request *req);
void nvmf_ctrlr_qpair_detach(struct nvmf_qpair *qpair);
/*
 * A queue's first authentication succeeded: bind it (app thread). An admin
 * queue takes its controller id for good and starts keep-alive; an I/O queue
 * takes its qid. -EEXIST: the qid is taken by then; -EBUSY: no controller id
 * is free; -ENODEV: the controller is not live.
 */
int nvmf_ctrlr_qpair_authenticated(struct nvmf_qpair *qpair);
/* Every request of an I/O qpair detached from ctrlr is back (app thread). */
void nvmf_ctrlr_io_drained(struct nvmf_ctrlr *ctrlr);
void nvmf_ctrlr_disconnect(struct nvmf_ctrlr *ctrlr);
void nvmf_ctrlr_ns_changed(struct nvmf_ctrlr *ctrlr, uint32_t nsid);
void nvmf_ctrlr_discovery_changed(struct nvmf_ctrlr *ctrlr);
void nvmf_ctrlr_keep_alive(struct nvmf_ctrlr *ctrlr);
/* Set the keep alive timeout (ms, rounded up to KAS; 0 = off) and restart the timer. */
int nvmf_ctrlr_set_kato(struct nvmf_ctrlr *ctrlr, uint32_t kato_ms);
void nvmf_qpair_disconnect(struct nvmf_qpair *qpair);
/* Pure helpers (no side effects beyond regs), for the fuzzer and unit tests. */
void nvmf_ctrlr_regs_init(struct nvmf_ctrlr_regs *regs, uint32_t max_queue_depth);
uint16_t nvmf_prop_get(const struct nvmf_ctrlr_regs *regs, uint8_t attrib, uint32_t ofst,
		       uint64_t *value);
/* Validates a Property Set; on success returns 0 and the new CC in *new_cc. */
uint16_t nvmf_prop_set_check(const struct nvmf_ctrlr_regs *regs, uint8_t attrib, uint32_t ofst,
			     uint64_t value, uint32_t *new_cc);
/* Apply a CC write to CSTS (enable/disable/shutdown); returns what changed (NVMF_CC_*). */
#define NVMF_CC_ENABLED  (1u << 0)
#define NVMF_CC_DISABLED (1u << 1)
#define NVMF_CC_SHUTDOWN (1u << 2)
uint32_t nvmf_ctrlr_apply_cc(struct nvmf_ctrlr_regs *regs, uint32_t new_cc, bool discovery);

/* nvmf_ctrlr_admin.c */
void nvmf_ctrlr_exec_admin(struct nvmf_request *req);
void nvmf_ctrlr_aer_complete_all(struct nvmf_ctrlr *ctrlr, uint16_t status);
void nvmf_ctrlr_event_post(struct nvmf_ctrlr *ctrlr, uint32_t event);
/*
 * Look at the namespaces' health again (app thread): a SMART / Health event
 * for a critical warning that is new (nvmf_smart_event). After a bdev's
 * health or accessibility changed, a namespace came or went, the
 * temperature threshold or AEC changed, or the host read the SMART log.
 */
void nvmf_ctrlr_health_check(struct nvmf_ctrlr *ctrlr);
/* Record a failed command in the controller's Error Information log (any thread). */
void nvmf_ctrlr_error_record(struct nvmf_ctrlr *ctrlr, const struct nvmf_request *req);
/* Queue a reservation notification (enum nvme_resv_notif_type) unless masked; AEN. */
void nvmf_ctrlr_resv_notify(struct nvmf_ctrlr *ctrlr, uint32_t nsid, uint8_t type);
void nvmf_identify_ctrlr_fill(const struct nvmf_ctrlr *ctrlr, struct nvme_identify_ctrlr *id);
void nvmf_identify_ns_fill(const struct nvmf_ns *ns, struct nvme_identify_ns *id);
size_t nvmf_ns_id_desc_fill(const struct nvmf_ns *ns, uint8_t *buf, size_t len);
/* The ANA log page (0Ch) as ctrlr sees it, in a new buffer of *len bytes. */
void *nvmf_ana_log_build(const struct nvmf_ctrlr *ctrlr, bool rgo, size_t *len);

/* nvmf_io.c */
void nvmf_io_exec(struct nvmf_request *req);
/* Pure checks of a Read/Write/Write Zeroes: 0 or the NVMe status. */
uint16_t nvmf_io_rw_check(const struct nvme_cmd *cmd, uint64_t num_blocks, uint32_t buf_block_size,
			  uint32_t length, bool has_data);
int nvmf_ns_io_device_register(struct nvmf_ns *ns);
void nvmf_ns_channels_release(struct nvmf_ns *ns, void (*cb)(struct nvmf_ns *ns));

/* nvmf_ns_resv.c */
/*
 * Set up a namespace's reservations; with ptpl_file (may be NULL), load
 * what a previous run persisted there. -EINVAL: the file is not ours or
 * not readable (*why says what), nothing is set up.
 */
int nvmf_ns_resv_init(struct nvmf_ns *ns, const char *ptpl_file, char *why, size_t why_len);
void nvmf_ns_resv_fini(struct nvmf_ns *ns);
/* A Reservation Register, Report, Acquire or Release command (qpair's thread). */
void nvmf_ns_resv_exec(struct nvmf_request *req);
/* Install the namespace's state in a new channel (the channel's thread). */
void nvmf_ns_resv_channel_init(struct nvmf_ns *ns, struct nvmf_ns_channel *nsch);
/* 0 or the Reservation Conflict status for a command of the namespace (I/O thread). */
uint16_t nvmf_ns_resv_check(const struct nvmf_ns_channel *nsch, const struct nvmf_request *req);
/* A command of the channel's epoch ended: the walk of a change may go on. */
void nvmf_ns_resv_io_done(struct nvmf_ns_channel *nsch, uint8_t epoch);
/* Removal: 0 to release the channels now, or 1 when it waits for a change's walk (then cb). */
int nvmf_ns_resv_defer_release(struct nvmf_ns *ns, void (*cb)(struct nvmf_ns *ns));
/* Get/Set Features Reservation Persistence (app thread). */
uint16_t nvmf_ns_resv_get_ptpl(const struct nvmf_ns *ns, uint32_t *value);
uint16_t nvmf_ns_resv_set_ptpl(struct nvmf_ns *ns, bool ptpl);
/* Identify Namespace RESCAP. */
uint8_t nvmf_ns_resv_rescap(const struct nvmf_ns *ns);

/* Copy bytes out of/into a request's data. */
size_t nvmf_request_copy_to(struct nvmf_request *req, const void *buf, size_t len);
size_t nvmf_request_copy_from(struct nvmf_request *req, void *buf, size_t len);

/* Complete a request with a status (and DNR unless transient). */
void nvmf_request_set_status(struct nvmf_request *req, uint16_t status);

/* nvmf_rpc.c */
void nvmf_rpc_register(void);

#endif /* GGA_NVMF_INTERNAL_H */
