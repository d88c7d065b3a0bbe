/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DH-HMAC-CHAP on the target's queues: the shell around the controller's
 * state machine of lib/auth/nvme_dhchap.c. A host added with a key must
 * authenticate every queue it connects (the Connect response says so with
 * AUTHREQ.ATR); until the first transaction succeeds the queue takes only
 * Authentication Send and Receive (anything else: Authentication Required).
 * A failed transaction, or one not finished in time, disconnects the queue;
 * a host may authenticate again on a live queue (re-authentication), and if
 * that fails the queue is dropped too.
 *
 * The state lives on the app thread, but the two costly steps (the Receive
 * that makes the DH key for the Challenge, the Send of the Reply that derives
 * the shared secret and checks the responses) run on the worker pool of
 * lib/auth/nvme_auth_pool.c; the command completes when the result is back
 * (a message to the app thread). While a step is out the transaction belongs
 * to the worker: the queue's other Authentication commands are refused, and
 * a queue that goes away leaves its state to be freed by the result. The
 * pool's caps (per host NQN, and in all) refuse a step at once, which fails
 * that transaction.
 */
#include <errno.h>
#include <string.h>

#include "gga/log.h"
#include "gga/nvme_auth.h"
#include "gga/nvme_auth_pool.h"
#include "gga/util.h"

#include "nvmf_internal.h"

/* A queue must authenticate within this after Connect. */
#define AUTH_TIMEOUT_US    (10ull * 1000 * 1000)
/* The largest AUTH_Receive allocation length taken (Linux asks for 4096). */
#define AUTH_BUF_SIZE      8192
/* A failed queue is dropped this long after its failure was sent. */
#define AUTH_DROP_US       (100ull * 1000)
/* The worker pool: threads, and the costly steps queued or running (per host NQN, in all). */
#define AUTH_WORKERS       2
#define AUTH_MAX_JOBS      16
#define AUTH_MAX_PER_HOST  4
#define AUTH_WORKER_NICE   5
/* Refusals are logged at most this often (with the count since the last line). */
#define AUTH_REFUSE_LOG_US (10ull * 1000 * 1000)

struct nvmf_qpair_auth {
	struct nvmf_qpair *qpair;
	char hostnqn[NVME_NQN_FIELD_LEN];
	char subnqn[NVME_NQN_FIELD_LEN];
	struct nvme_dhchap t;
	struct poller *timer;
	bool dropping;
	bool authenticated; /* the first transaction succeeded */
	/* A costly step is on a worker: t and buf are the worker's until its result. */
	bool busy;
	/* The queue went while busy: the result frees this. */
	bool orphaned;
	/* The pool refused a step: its own (rate-limited) line says so, not one per queue. */
	bool refused;
	struct {
		struct nvme_auth_job base;
		struct nvmf_request *req;
		uint32_t len;
		bool send;
		int rc;
	} job;
	uint8_t buf[AUTH_BUF_SIZE];
};

static struct nvme_auth_pool *g_auth_pool;
static struct {
	uint64_t last_tick;
	uint64_t since;
} g_refuse_log;

int
nvmf_auth_init(void)
{
	struct nvme_auth_pool_opts o = { .threads = AUTH_WORKERS,
					 .max_jobs = AUTH_MAX_JOBS,
					 .max_per_key = AUTH_MAX_PER_HOST,
					 .nice = AUTH_WORKER_NICE };

	return nvme_auth_pool_create(&o, &g_auth_pool);
}

void
nvmf_auth_fini(void)
{
	/* Every queue is gone by now, so no step is out: this joins idle threads. */
	nvme_auth_pool_destroy(g_auth_pool);
	g_auth_pool = NULL;
}

json_t *
nvmf_auth_stats_json(void)
{
	struct nvme_auth_pool_stats st = { 0 };

	if (g_auth_pool != NULL) {
		nvme_auth_pool_get_stats(g_auth_pool, &st);
	}
	return json_pack("{s:I, s:I, s:I, s:i}", "jobs", (json_int_t)st.jobs, "refused_host",
			 (json_int_t)st.refused_key, "refused_all", (json_int_t)st.refused_all,
			 "inflight", (int)st.inflight);
}

static void
drop_timer(struct nvmf_qpair_auth *a)
{
	poller_unregister(&a->timer);
}

/* The deadline passed, or a failure was sent: drop the queue. */
static int
auth_timer(void *arg)
{
	struct nvmf_qpair_auth *a = arg;
	struct nvmf_qpair *qpair = a->qpair;

	drop_timer(a);
	if (!a->dropping) {
		WARNLOG("nvmf: host %s (%s) did not authenticate queue %u in %llu s; "
			"disconnecting\n",
			LOG_ESC(a->hostnqn), qpair->peer, qpair->qid, AUTH_TIMEOUT_US / 1000000);
	}
	nvmf_qpair_disconnect(qpair);
	return POLLER_BUSY;
}

static void
arm_timer(struct nvmf_qpair_auth *a, uint64_t us)
{
	drop_timer(a);
	a->timer = poller_register(auth_timer, a, us, "nvmf_auth");
	if (a->timer == NULL) {
		/* Cannot wait: drop the queue now rather than leave it. */
		nvmf_qpair_disconnect(a->qpair);
	}
}

int
nvmf_auth_qpair_init(struct nvmf_qpair *qpair, struct nvmf_subsystem *subsys, const char *hostnqn)
{
	const struct nvmf_host *host = nvmf_subsystem_find_host(subsys, hostnqn);
	struct nvme_dhchap_params p = { 0 };
	struct nvmf_qpair_auth *a;
	int rc;

	if (host == NULL || host->dhchap_key == NULL) {
		return 0;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		return -ENOMEM;
	}
	a->qpair = qpair;
	snprintf(a->hostnqn, sizeof(a->hostnqn), "%s", hostnqn);
	snprintf(a->subnqn, sizeof(a->subnqn), "%s", subsys->nqn);
	p.hostnqn = a->hostnqn;
	p.subnqn = a->subnqn;
	p.digests = g_nvmf_tgt.dhchap_digests;
	p.dhgroups = g_nvmf_tgt.dhchap_dhgroups;
	rc = nvme_dhchap_secret_load(host->dhchap_key, &p.host_key);
	if (rc == 0 && host->dhchap_ctrlr_key != NULL) {
		rc = nvme_dhchap_secret_load(host->dhchap_ctrlr_key, &p.ctrlr_key);
	}
	if (rc != 0) {
		ERRLOG("nvmf: subsystem %s: host %s: its DH-HMAC-CHAP key cannot be used (%s); "
		       "refusing the Connect\n",
		       subsys->nqn, LOG_ESC(hostnqn), strerror(-rc));
		explicit_bzero(&p, sizeof(p));
		free(a);
		return rc;
	}
	if (++g_nvmf_tgt.auth_seqnum == 0) {
		g_nvmf_tgt.auth_seqnum = 1;
	}
	nvme_dhchap_ctrlr_init(&a->t, &p, g_nvmf_tgt.auth_seqnum);
	explicit_bzero(&p, sizeof(p));
	qpair->auth = a;
	arm_timer(a, AUTH_TIMEOUT_US);
	return 1;
}

void
nvmf_auth_qpair_fini(struct nvmf_qpair *qpair)
{
	struct nvmf_qpair_auth *a = qpair->auth;

	if (a == NULL) {
		return;
	}
	drop_timer(a);
	qpair->auth = NULL;
	if (a->busy) {
		/* The worker still has t and buf: its result frees them (work skipped if queued). */
		nvme_auth_job_cancel(&a->job.base);
		a->orphaned = true;
		return;
	}
	nvme_dhchap_fini(&a->t);
	explicit_bzero(a->buf, sizeof(a->buf));
	free(a);
}

bool
nvmf_auth_qpair_authenticated(const struct nvmf_qpair *qpair)
{
	return qpair->auth == NULL || qpair->auth->authenticated;
}

static void
auth_result(struct nvmf_request *req, struct nvmf_qpair_auth *a)
{
	struct nvmf_qpair *qpair = req->qpair;
	int rc;

	switch (nvme_dhchap_result(&a->t)) {
	case NVME_DHCHAP_RES_SUCCESS:
		if (!a->authenticated) {
			/* Only now does the queue take its controller id or its qid. */
			rc = nvmf_ctrlr_qpair_authenticated(qpair);
			if (rc != 0) {
				a->dropping = true;
				WARNLOG("nvmf: host %s (%s) authenticated queue %u of %s, but %s; "
					"disconnecting\n",
					LOG_ESC(a->hostnqn), qpair->peer, qpair->qid, a->subnqn,
					rc == -EEXIST ? "its queue id is taken meanwhile" :
					rc == -EBUSY  ? "no controller id is free" :
							"its controller is gone");
				arm_timer(a, AUTH_DROP_US);
				break;
			}
			a->authenticated = true;
			drop_timer(a);
			req->auth_done = true;
			NOTICELOG("nvmf: host %s (%s) authenticated queue %u of %s (DH-HMAC-CHAP "
				  "%s, %s%s)\n",
				  LOG_ESC(a->hostnqn), qpair->peer, qpair->qid, a->subnqn,
				  nvme_auth_hash_name(a->t.hash),
				  nvme_auth_dhgroup_name(a->t.dhgroup),
				  a->t.bidir ? ", bidirectional" : "");
		}
		break;
	case NVME_DHCHAP_RES_FAILED:
		if (!a->dropping) {
			a->dropping = true;
			if (!a->refused) {
				WARNLOG("nvmf: DH-HMAC-CHAP of host %s (%s) on queue %u of %s failed: "
					"%s; disconnecting\n",
					LOG_ESC(a->hostnqn), qpair->peer, qpair->qid, a->subnqn,
					a->t.why != NULL ? a->t.why : "?");
			}
			arm_timer(a, AUTH_DROP_US);
		}
		break;
	default:
		break;
	}
}

/* One step of the transaction (app thread, or a worker while a->busy). */
static int
auth_step(struct nvmf_qpair_auth *a, bool send, uint32_t len)
{
	if (send) {
		return nvme_dhchap_ctrlr_send(&a->t, a->buf, len);
	}
	/* The whole transfer is written: zeros after the message, nothing stale. */
	memset(a->buf, 0, sizeof(a->buf));
	return nvme_dhchap_ctrlr_recv(&a->t, a->buf, len);
}

/* The step's result into the request's data and status (app thread). */
static void
auth_finish(struct nvmf_request *req, struct nvmf_qpair_auth *a, bool send, int rc)
{
	if (!send && rc > 0) {
		nvmf_request_copy_to(req, a->buf, req->length);
	}
	explicit_bzero(a->buf, sizeof(a->buf));
	if (rc == -EPROTO) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
	} else if (rc == -ENOBUFS) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));
	} else if (rc < 0) {
		nvmf_request_set_status(req, NVME_STATUS(NVME_SCT_GENERIC,
							 NVME_SC_INTERNAL_DEVICE_ERROR));
	}
	auth_result(req, a);
}

static void
job_work(struct nvme_auth_job *job)
{
	struct nvmf_qpair_auth *a = container_of(job, struct nvmf_qpair_auth, job.base);

	a->job.rc = auth_step(a, a->job.send, a->job.len);
}

/* Back on the app thread: complete the command, or free what a gone queue left. */
static void
job_result_msg(void *arg)
{
	struct nvmf_qpair_auth *a = arg;
	struct nvmf_request *req = a->job.req;

	a->busy = false;
	a->job.req = NULL;
	if (a->orphaned) {
		nvme_dhchap_fini(&a->t);
		explicit_bzero(a->buf, sizeof(a->buf));
		free(a);
		nvmf_request_set_status(req,
					NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_SQ_DELETION));
	} else {
		auth_finish(req, a, a->job.send, a->job.rc);
	}
	nvmf_request_complete(req);
}

static void
job_done(struct nvme_auth_job *job)
{
	struct nvmf_qpair_auth *a = container_of(job, struct nvmf_qpair_auth, job.base);

	nvmf_send_msg_or_spin(thread_get_app(), job_result_msg, a);
}

/* A step over the pool's caps: the transaction fails; the log says so now and then. */
static void
auth_refused(struct nvmf_qpair_auth *a, int rc)
{
	uint64_t now = ticks_get();

	nvme_dhchap_ctrlr_abort(&a->t, rc == -EUSERS ?
					       "too many authentications of this host at once" :
					       "too many authentications at once");
	a->refused = true;
	g_refuse_log.since++;
	if (g_refuse_log.last_tick == 0 ||
	    ticks_to_us(now - g_refuse_log.last_tick) >= AUTH_REFUSE_LOG_US) {
		WARNLOG("nvmf: refusing DH-HMAC-CHAP of host %s (%s) on %s: %s (at most %u per "
			"host, %u in all); %llu refused since the last such line\n",
			LOG_ESC(a->hostnqn), a->qpair->peer, a->subnqn,
			rc == -EUSERS ? "that host has too many in progress" :
					"too many in progress",
			AUTH_MAX_PER_HOST, AUTH_MAX_JOBS, (unsigned long long)g_refuse_log.since);
		g_refuse_log.last_tick = now;
		g_refuse_log.since = 0;
	}
}

bool
nvmf_auth_exec(struct nvmf_request *req)
{
	const struct nvme_auth_cmd *cmd = (const struct nvme_auth_cmd *)&req->cmd;
	struct nvmf_qpair_auth *a = req->qpair->auth;
	bool send = cmd->fctype == NVME_FCTYPE_AUTH_SEND;
	int rc;

	if (a == NULL || a->dropping || a->busy) {
		/* No transaction on this queue (its host has no key here), or a step is out. */
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
		return false;
	}
	if (cmd->secp != NVME_AUTH_SECP || cmd->spsp0 != NVME_AUTH_SPSP ||
	    cmd->spsp1 != NVME_AUTH_SPSP || cmd->len == 0 ||
	    req->xfer != (send ? NVME_XFER_HOST_TO_CTRLR : NVME_XFER_CTRLR_TO_HOST) ||
	    req->length != cmd->len || (send && cmd->len > NVME_DHCHAP_MSG_MAX) ||
	    (!send && cmd->len > sizeof(a->buf))) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));
		return false;
	}
	if (send) {
		nvmf_request_copy_from(req, a->buf, cmd->len);
	}
	if (nvme_dhchap_ctrlr_costly(&a->t, send)) {
		a->job.base.work = job_work;
		a->job.base.done = job_done;
		a->job.req = req;
		a->job.len = cmd->len;
		a->job.send = send;
		a->job.rc = 0;
		a->busy = true;
		rc = nvme_auth_pool_submit(g_auth_pool, a->hostnqn, &a->job.base);
		if (rc == 0) {
			return true;
		}
		a->busy = false;
		a->job.req = NULL;
		auth_refused(a, rc);
		/* The Reply is taken; the Receive after it (or this one) carries the Failure1. */
		if (send) {
			auth_finish(req, a, send, 0);
			return false;
		}
	}
	rc = auth_step(a, send, cmd->len);
	auth_finish(req, a, send, rc);
	return false;
}
