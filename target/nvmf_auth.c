/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DH-HMAC-CHAP on the target's queues: the shell around the controller's
 * state machine of lib/auth/nvme_dhchap.c. A host added with a key must
 * authenticate every queue it connects (the Connect response says so with
 * AUTHREQ.ATR); until the first transaction succeeds the queue takes only
 * Authentication Send and Receive (anything else: Authentication Required).
 * A failed transaction, or one not finished in time, disconnects the queue;
 * a host may authenticate again on a live queue (re-authentication), and if
 * that fails the queue is dropped too. App thread only.
 */
#include <errno.h>
#include <string.h>

#include "gga/log.h"
#include "gga/nvme_auth.h"

#include "nvmf_internal.h"

/* A queue must authenticate within this after Connect. */
#define AUTH_TIMEOUT_US (10ull * 1000 * 1000)
/* The largest AUTH_Receive allocation length taken (Linux asks for 4096). */
#define AUTH_BUF_SIZE   8192
/* A failed queue is dropped this long after its failure was sent. */
#define AUTH_DROP_US    (100ull * 1000)

struct nvmf_qpair_auth {
	struct nvmf_qpair *qpair;
	char hostnqn[NVME_NQN_FIELD_LEN];
	char subnqn[NVME_NQN_FIELD_LEN];
	struct nvme_dhchap t;
	struct poller *timer;
	bool dropping;
	bool authenticated; /* the first transaction succeeded */
	uint8_t buf[AUTH_BUF_SIZE];
};

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
	nvme_dhchap_fini(&a->t);
	explicit_bzero(a->buf, sizeof(a->buf));
	free(a);
	qpair->auth = NULL;
}

static void
auth_result(struct nvmf_request *req, struct nvmf_qpair_auth *a)
{
	struct nvmf_qpair *qpair = req->qpair;

	switch (nvme_dhchap_result(&a->t)) {
	case NVME_DHCHAP_RES_SUCCESS:
		if (!a->authenticated) {
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
			WARNLOG("nvmf: DH-HMAC-CHAP of host %s (%s) on queue %u of %s failed: %s; "
				"disconnecting\n",
				LOG_ESC(a->hostnqn), qpair->peer, qpair->qid, a->subnqn,
				a->t.why != NULL ? a->t.why : "?");
			arm_timer(a, AUTH_DROP_US);
		}
		break;
	default:
		break;
	}
}

void
nvmf_auth_exec(struct nvmf_request *req)
{
	const struct nvme_auth_cmd *cmd = (const struct nvme_auth_cmd *)&req->cmd;
	struct nvmf_qpair_auth *a = req->qpair->auth;
	bool send = cmd->fctype == NVME_FCTYPE_AUTH_SEND;
	int rc;

	if (a == NULL || a->dropping) {
		/* No transaction on this queue: its host has no key here. */
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
		return;
	}
	if (cmd->secp != NVME_AUTH_SECP || cmd->spsp0 != NVME_AUTH_SPSP ||
	    cmd->spsp1 != NVME_AUTH_SPSP || cmd->len == 0 ||
	    req->xfer != (send ? NVME_XFER_HOST_TO_CTRLR : NVME_XFER_CTRLR_TO_HOST) ||
	    req->length != cmd->len || (send && cmd->len > NVME_DHCHAP_MSG_MAX) ||
	    (!send && cmd->len > sizeof(a->buf))) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD));
		return;
	}
	if (send) {
		nvmf_request_copy_from(req, a->buf, cmd->len);
		rc = nvme_dhchap_ctrlr_send(&a->t, a->buf, cmd->len);
	} else {
		/* The whole transfer is written: zeros after the message, nothing stale. */
		memset(a->buf, 0, sizeof(a->buf));
		rc = nvme_dhchap_ctrlr_recv(&a->t, a->buf, cmd->len);
		if (rc > 0) {
			nvmf_request_copy_to(req, a->buf, req->length);
		}
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
