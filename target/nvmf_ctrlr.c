/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Controllers (dynamic controller model): Connect for admin and I/O queues,
 * Property Get/Set and the CC/CSTS state machine, keep-alive, and the
 * controller's lifetime, which ends when its admin queue and every I/O
 * queue are gone. App thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/util.h"

#include "gga/nvme_auth.h"

#include "nvmf_internal.h"

/*
 * Registers.
 */

void
nvmf_ctrlr_regs_init(struct nvmf_ctrlr_regs *regs, uint32_t max_queue_depth)
{
	memset(regs, 0, sizeof(*regs));
	regs->cap = ((uint64_t)(max_queue_depth - 1) & NVME_CAP_MQES_MASK) | NVME_CAP_CQR |
		    ((uint64_t)NVMF_CAP_TO << NVME_CAP_TO_SHIFT) | NVME_CAP_CSS_NVM;
	regs->vs = NVME_VS_1_3;
}

/* Property size from the attribute byte: 4 or 8, or 0 if invalid. */
static uint32_t
prop_size(uint8_t attrib)
{
	switch (attrib & 0x7) {
	case NVME_PROP_SIZE_4:
		return 4;
	case NVME_PROP_SIZE_8:
		return 8;
	default:
		return 0;
	}
}

uint16_t
nvmf_prop_get(const struct nvmf_ctrlr_regs *regs, uint8_t attrib, uint32_t ofst, uint64_t *value)
{
	uint32_t size = prop_size(attrib);

	switch (ofst) {
	case NVME_REG_CAP:
		if (size != 8) {
			break;
		}
		*value = regs->cap;
		return 0;
	case NVME_REG_VS:
	case NVME_REG_CC:
	case NVME_REG_CSTS:
		if (size != 4) {
			break;
		}
		*value = ofst == NVME_REG_VS ? regs->vs :
			 ofst == NVME_REG_CC ? regs->cc :
					       regs->csts;
		return 0;
	default:
		break;
	}
	return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
}

uint16_t
nvmf_prop_set_check(const struct nvmf_ctrlr_regs *regs, uint8_t attrib, uint32_t ofst,
		    uint64_t value, uint32_t *new_cc)
{
	/* Only CC is writable over fabrics (no NSSR: CAP.NSSRS is 0). */
	if (ofst != NVME_REG_CC || prop_size(attrib) != 4 || value > UINT32_MAX) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
	}
	*new_cc = (uint32_t)value;
	return 0;
}

uint32_t
nvmf_ctrlr_apply_cc(struct nvmf_ctrlr_regs *regs, uint32_t new_cc, bool discovery)
{
	uint32_t old_cc = regs->cc, changes = 0;
	bool bad;

	regs->cc = new_cc;
	if ((new_cc & NVME_CC_EN) && !(old_cc & NVME_CC_EN)) {
		/*
		 * Only the NVM command set, 4 KiB pages (CAP.MPSMIN = MPSMAX = 0),
		 * round-robin arbitration, and 64/16-byte queue entries. A discovery
		 * controller has no I/O queues, so it does not care about the sizes.
		 */
		bad = (new_cc & NVME_CC_CSS_MASK) != 0 || (new_cc & NVME_CC_MPS_MASK) != 0 ||
		      (new_cc & NVME_CC_AMS_MASK) != 0;
		if (!discovery) {
			bad |= (new_cc & NVME_CC_IOSQES_MASK) != NVME_CC_IOSQES_64 ||
			       (new_cc & NVME_CC_IOCQES_MASK) != NVME_CC_IOCQES_16;
		}
		if (bad) {
			regs->csts |= NVME_CSTS_CFS;
		} else if (!(regs->csts & NVME_CSTS_CFS)) {
			regs->csts |= NVME_CSTS_RDY;
			changes |= NVMF_CC_ENABLED;
		}
	} else if (!(new_cc & NVME_CC_EN) && (old_cc & NVME_CC_EN)) {
		/* A controller reset: not ready, I/O queues go away, shutdown state clears. */
		regs->csts &= ~(NVME_CSTS_RDY | NVME_CSTS_SHST_MASK);
		changes |= NVMF_CC_DISABLED;
	}
	if ((new_cc & NVME_CC_SHN_MASK) && !(old_cc & NVME_CC_SHN_MASK)) {
		regs->csts = (regs->csts & ~NVME_CSTS_SHST_MASK) | NVME_CSTS_SHST_OCCURRING;
		changes |= NVMF_CC_SHUTDOWN;
	} else if (!(new_cc & NVME_CC_SHN_MASK) && (old_cc & NVME_CC_SHN_MASK)) {
		regs->csts &= ~NVME_CSTS_SHST_MASK;
	}
	return changes;
}

/*
 * Lifetime.
 */

/* The controller with cntlid; with any, provisional ones (auth pending) count too. */
static struct nvmf_ctrlr *
find_ctrlr(const struct nvmf_subsystem *subsys, uint16_t cntlid, bool any)
{
	struct nvmf_ctrlr *ctrlr;

	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		if (ctrlr->cntlid == cntlid && (any || !ctrlr->auth_pending)) {
			return ctrlr;
		}
	}
	return NULL;
}

/*
 * The next free controller id of the subsystem, or 0 if all are in use.
 * One no controller has, else one only provisional controllers have: a
 * Connect that has not authenticated holds no id against anyone.
 */
static uint16_t
alloc_cntlid(struct nvmf_subsystem *subsys)
{
	uint32_t tries, pass;
	uint16_t id;

	for (pass = 0; pass < 2; pass++) {
		for (tries = 0; tries <= (uint32_t)(subsys->max_cntlid - subsys->min_cntlid);
		     tries++) {
			id = subsys->next_cntlid;
			if (id < subsys->min_cntlid || id > subsys->max_cntlid) {
				id = subsys->min_cntlid;
			}
			subsys->next_cntlid = id >= subsys->max_cntlid ? subsys->min_cntlid :
									 (uint16_t)(id + 1);
			if (find_ctrlr(subsys, id, pass == 0) == NULL) {
				return id;
			}
		}
	}
	return 0;
}

static void
ctrlr_free(struct nvmf_ctrlr *ctrlr)
{
	struct nvmf_subsystem *subsys = ctrlr->subsys;

	if (ctrlr->auth_pending) {
		/* Never authenticated: not worth a line per attempt. */
		DEBUGLOG(nvmf, "subsystem %s: provisional controller %u of host %s gone\n",
			 subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn));
	} else {
		NOTICELOG("nvmf: subsystem %s: controller %u of host %s gone\n", subsys->nqn,
			  ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn));
	}
	poller_unregister(&ctrlr->ka_poller);
	TAILQ_REMOVE(&subsys->ctrlrs, ctrlr, link);
	free(ctrlr->resv_mask);
	free(ctrlr->ana_state);
	free(ctrlr->io_qpairs);
	pthread_mutex_destroy(&ctrlr->err_lock);
	free(ctrlr);
	if (TAILQ_EMPTY(&subsys->ctrlrs) && subsys->ctrlrs_gone_cb != NULL) {
		subsys->ctrlrs_gone_cb(subsys);
	}
}

/*
 * Once no I/O qpair is left and every command of the ones detached is back:
 * a shutdown is complete (the host sees CSTS.SHST = complete only after its
 * last writes reached the bdevs), a dying controller is freed.
 */
static void
ctrlr_check_quiet(struct nvmf_ctrlr *ctrlr)
{
	if (ctrlr->num_io_qpairs > 0 || ctrlr->io_draining > 0) {
		return;
	}
	if (ctrlr->shutting_down) {
		ctrlr->regs.csts = (ctrlr->regs.csts & ~NVME_CSTS_SHST_MASK) |
				   NVME_CSTS_SHST_COMPLETE;
		ctrlr->shutting_down = false;
		NOTICELOG("nvmf: subsystem %s: controller %u of host %s: shutdown complete\n",
			  ctrlr->subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn));
	}
	/* Queues that never authenticated do no I/O, but they point at the controller. */
	if (ctrlr->state == NVMF_CTRLR_DYING && TAILQ_EMPTY(&ctrlr->pending_io)) {
		ctrlr_free(ctrlr);
	}
}

static void
disconnect_io_qpairs(struct nvmf_ctrlr *ctrlr)
{
	struct nvmf_qpair *qpair, *tmp;
	uint32_t qid;

	for (qid = 1; qid <= ctrlr->max_io_qpairs; qid++) {
		if (ctrlr->io_qpairs[qid] != NULL) {
			nvmf_qpair_disconnect(ctrlr->io_qpairs[qid]);
		}
	}
	TAILQ_FOREACH_SAFE(qpair, &ctrlr->pending_io, pending_link, tmp) {
		nvmf_qpair_disconnect(qpair);
	}
}

void
nvmf_ctrlr_disconnect(struct nvmf_ctrlr *ctrlr)
{
	disconnect_io_qpairs(ctrlr);
	if (ctrlr->admin_qpair != NULL) {
		nvmf_qpair_disconnect(ctrlr->admin_qpair);
	}
}

void
nvmf_ctrlr_qpair_detach(struct nvmf_qpair *qpair)
{
	struct nvmf_ctrlr *ctrlr = qpair->ctrlr;

	if (ctrlr == NULL) {
		return;
	}
	if (qpair->bind_pending) {
		/* Never authenticated: it held nothing of the controller's. */
		TAILQ_REMOVE(&ctrlr->pending_io, qpair, pending_link);
		qpair->bind_pending = false;
		ctrlr_check_quiet(ctrlr);
		return;
	}
	if (qpair == ctrlr->admin_qpair) {
		ctrlr->admin_qpair = NULL;
		ctrlr->state = NVMF_CTRLR_DYING;
		poller_unregister(&ctrlr->ka_poller);
		/* Held AERs go back now, before the qpair's thread learns it is detached. */
		nvmf_ctrlr_aer_complete_all(ctrlr, NVME_STATUS(NVME_SCT_GENERIC,
							       NVME_SC_ABORTED_SQ_DELETION));
		disconnect_io_qpairs(ctrlr);
	} else if (qpair->qid <= ctrlr->max_io_qpairs && ctrlr->io_qpairs[qpair->qid] == qpair) {
		ctrlr->io_qpairs[qpair->qid] = NULL;
		ctrlr->num_io_qpairs--;
		ctrlr->io_draining++;
		qpair->drain_ctrlr = ctrlr;
	}
	ctrlr_check_quiet(ctrlr);
}

void
nvmf_ctrlr_io_drained(struct nvmf_ctrlr *ctrlr)
{
	ctrlr->io_draining--;
	ctrlr_check_quiet(ctrlr);
}

/* No command within KATO: the host is gone; fail the controller and drop its queues. */
static int
keep_alive_poll(void *arg)
{
	struct nvmf_ctrlr *ctrlr = arg;
	uint64_t last = ctrlr->last_ka_tick, t, now = ticks_get();
	uint32_t qid;

	if (ctrlr->admin_qpair != NULL) {
		t = __atomic_load_n(&ctrlr->admin_qpair->last_cmd_tick, __ATOMIC_RELAXED);
		last = GGA_MAX(last, t);
	}
	for (qid = 1; qid <= ctrlr->max_io_qpairs; qid++) {
		if (ctrlr->io_qpairs[qid] != NULL) {
			t = __atomic_load_n(&ctrlr->io_qpairs[qid]->last_cmd_tick,
					    __ATOMIC_RELAXED);
			last = GGA_MAX(last, t);
		}
	}
	if (now <= last || ticks_to_us(now - last) <= (uint64_t)ctrlr->kato_ms * 1000) {
		return POLLER_IDLE;
	}
	ERRLOG("nvmf: subsystem %s: controller %u (host %s): keep alive timeout (%u ms); "
	       "disconnecting\n",
	       ctrlr->subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn), ctrlr->kato_ms);
	ctrlr->regs.csts |= NVME_CSTS_CFS;
	poller_unregister(&ctrlr->ka_poller);
	nvmf_ctrlr_disconnect(ctrlr);
	return POLLER_BUSY;
}

/* (Re)arm the keep alive timer for ctrlr->kato_ms (0 = off). */
static int
keep_alive_arm(struct nvmf_ctrlr *ctrlr)
{
	uint64_t period_us;

	poller_unregister(&ctrlr->ka_poller);
	ctrlr->last_ka_tick = ticks_get();
	if (ctrlr->kato_ms == 0) {
		return 0;
	}
	/* Check four times per KATO: a dead host is found within 1.25 KATO. */
	period_us = GGA_MAX((uint64_t)ctrlr->kato_ms * 1000 / 4, 1000);
	ctrlr->ka_poller = poller_register(keep_alive_poll, ctrlr, period_us, "nvmf_keep_alive");
	return ctrlr->ka_poller != NULL ? 0 : -ENOMEM;
}

void
nvmf_ctrlr_keep_alive(struct nvmf_ctrlr *ctrlr)
{
	ctrlr->last_ka_tick = ticks_get();
}

static void
kato_set(struct nvmf_ctrlr *ctrlr, uint32_t kato_ms)
{
	/* Round up to the granularity we report in KAS. */
	uint64_t gran = NVMF_KAS * 100;
	uint32_t cap = ctrlr->transport->opts.max_kato_ms;

	/*
	 * A host that turns keep alive off, or asks for more than the target
	 * allows, could hold a controller (and its queues) for ever after it
	 * vanished: it gets the cap, which Get Features reports.
	 */
	if (cap > 0 && (kato_ms == 0 || kato_ms > cap)) {
		kato_ms = cap;
	}
	ctrlr->kato_ms = (uint32_t)GGA_MIN((kato_ms + gran - 1) / gran * gran, UINT32_MAX);
}

int
nvmf_ctrlr_set_kato(struct nvmf_ctrlr *ctrlr, uint32_t kato_ms)
{
	kato_set(ctrlr, kato_ms);
	/* Not before the admin queue authenticated: nothing keeps the controller yet. */
	return ctrlr->auth_pending ? 0 : keep_alive_arm(ctrlr);
}

static int
ctrlr_create(struct nvmf_subsystem *subsys, struct nvmf_qpair *qpair,
	     const struct nvme_connect_cmd *cmd, const struct nvme_connect_data *data, bool auth,
	     struct nvmf_ctrlr **out)
{
	struct nvmf_transport *t = qpair->transport;
	struct nvmf_ctrlr *ctrlr;
	int rc;

	ctrlr = calloc(1, sizeof(*ctrlr));
	if (ctrlr == NULL) {
		return -ENOMEM;
	}
	/* A default mutex holds nothing: the early error paths below just free it. */
	pthread_mutex_init(&ctrlr->err_lock, NULL);
	ctrlr->max_io_qpairs = subsys->subtype == NVMF_SUBTYPE_DISCOVERY ?
				       0 :
				       t->opts.max_io_qpairs_per_ctrlr;
	ctrlr->io_qpairs = calloc(ctrlr->max_io_qpairs + 1, sizeof(*ctrlr->io_qpairs));
	if (ctrlr->io_qpairs == NULL) {
		free(ctrlr);
		return -ENOMEM;
	}
	ctrlr->cntlid = alloc_cntlid(subsys);
	if (ctrlr->cntlid == 0) {
		free(ctrlr->io_qpairs);
		free(ctrlr);
		return -EBUSY;
	}
	ctrlr->subsys = subsys;
	ctrlr->transport = t;
	ctrlr->state = NVMF_CTRLR_LIVE;
	ctrlr->auth_pending = auth;
	TAILQ_INIT(&ctrlr->pending_io);
	snprintf(ctrlr->hostnqn, sizeof(ctrlr->hostnqn), "%s", data->hostnqn);
	memcpy(ctrlr->hostid, data->hostid, sizeof(ctrlr->hostid));
	nvmf_ctrlr_regs_init(&ctrlr->regs, t->opts.max_queue_depth);
	ctrlr->admin_qpair = qpair;
	/* Namespace notices by default; discovery controllers report log changes instead. */
	nvmf_feat_init(&ctrlr->feat);
	ctrlr->aec = subsys->subtype == NVMF_SUBTYPE_DISCOVERY ? NVME_AEC_DISCOVERY_LOG_NOTICE :
								 NVME_AEC_NS_ATTR_NOTICE;
	if (subsys->subtype == NVMF_SUBTYPE_NVME) {
		const uint8_t *ana = nvmf_subsystem_listener_ana(subsys, &qpair->listen);

		ctrlr->ana_state = malloc(subsys->max_nsid > 0 ? subsys->max_nsid : 1);
		ctrlr->resv_mask = calloc(subsys->max_nsid > 0 ? subsys->max_nsid : 1, 1);
		if (ctrlr->ana_state == NULL || ctrlr->resv_mask == NULL) {
			free(ctrlr->resv_mask);
			free(ctrlr->ana_state);
			free(ctrlr->io_qpairs);
			free(ctrlr);
			return -ENOMEM;
		}
		/* Admitted through a listener of the subsystem: its states; else optimized. */
		if (ana != NULL) {
			memcpy(ctrlr->ana_state, ana, subsys->max_nsid);
		} else {
			memset(ctrlr->ana_state, NVME_ANA_OPTIMIZED, subsys->max_nsid);
		}
	}
	rc = nvmf_ctrlr_set_kato(ctrlr, cmd->kato);
	if (rc != 0) {
		free(ctrlr->resv_mask);
		free(ctrlr->ana_state);
		free(ctrlr->io_qpairs);
		free(ctrlr);
		return rc;
	}
	TAILQ_INSERT_TAIL(&subsys->ctrlrs, ctrlr, link);
	*out = ctrlr;
	return 0;
}

uint8_t
nvmf_ctrlr_group_ana_state(const struct nvmf_ctrlr *ctrlr, uint32_t anagrpid)
{
	struct nvmf_subsystem *subsys = ctrlr->subsys;
	const struct nvmf_ns *ns;
	uint32_t i;

	/* A namespace its bdev keeps from this node makes its group inaccessible here. */
	for (i = 1; __atomic_load_n(&subsys->inaccessible_ns, __ATOMIC_ACQUIRE) > 0 &&
		    i <= subsys->max_nsid;
	     i++) {
		ns = nvmf_subsystem_get_ns(subsys, i);
		if (ns != NULL && ns->anagrpid == anagrpid &&
		    __atomic_load_n(&ns->inaccessible, __ATOMIC_ACQUIRE)) {
			return NVME_ANA_INACCESSIBLE;
		}
	}
	return __atomic_load_n(&ctrlr->ana_state[anagrpid - 1], __ATOMIC_SEQ_CST);
}

uint16_t
nvmf_ctrlr_ana_check(const struct nvmf_ctrlr *ctrlr, const struct nvmf_ns *ns)
{
	uint8_t state;

	if (!ctrlr->subsys->ana_reporting || ctrlr->ana_state == NULL) {
		return 0;
	}
	state = nvmf_ctrlr_group_ana_state(ctrlr, ns->anagrpid);
	/* Path errors without DNR: the host retries them on another path. */
	switch (state) {
	case NVME_ANA_OPTIMIZED:
	case NVME_ANA_NON_OPTIMIZED:
		return 0;
	case NVME_ANA_INACCESSIBLE:
		return NVME_STATUS(NVME_SCT_PATH, NVME_SC_ANA_INACCESSIBLE);
	case NVME_ANA_PERSISTENT_LOSS:
		return NVME_STATUS(NVME_SCT_PATH, NVME_SC_ANA_PERSISTENT_LOSS);
	default:
		return NVME_STATUS(NVME_SCT_PATH, NVME_SC_ANA_TRANSITION);
	}
}

/*
 * Connect.
 */

static void
connect_invalid_param(struct nvmf_request *req, uint8_t iattr, uint16_t ipo)
{
	nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC,
						NVME_SC_CONNECT_INVALID_PARAMETERS));
	req->rsp.cdw0 = NVME_CONNECT_INVALID_PARAM(iattr, ipo);
}

static void
connect_admin(struct nvmf_request *req, struct nvmf_subsystem *subsys,
	      const struct nvme_connect_cmd *cmd, const struct nvme_connect_data *data, bool auth)
{
	struct nvmf_qpair *qpair = req->qpair;
	struct nvmf_ctrlr *ctrlr;
	int rc;

	if (cmd->sqsize == 0 || cmd->sqsize > qpair->transport->opts.max_aq_depth - 1) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_CMD,
				      offsetof(struct nvme_connect_cmd, sqsize));
		return;
	}
	if (data->cntlid != NVME_CNTLID_DYNAMIC) {
		/* Dynamic controller model: the host must ask for "any" controller. */
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, cntlid));
		return;
	}
	rc = ctrlr_create(subsys, qpair, cmd, data, auth, &ctrlr);
	if (rc != 0) {
		ERRLOG("nvmf: subsystem %s: cannot create a controller for host %s: %s\n",
		       subsys->nqn, LOG_ESC(data->hostnqn), strerror(-rc));
		nvmf_request_set_status(req, NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC,
							 NVME_SC_CONNECT_CONTROLLER_BUSY));
		return;
	}
	qpair->ctrlr = ctrlr;
	qpair->qid = 0;
	qpair->sq_entries = (uint16_t)(cmd->sqsize + 1);
	req->rsp.cdw0 = ctrlr->cntlid;
	if (auth) {
		/* Said when the admin queue authenticates: until then the controller is a draft. */
		DEBUGLOG(nvmf, "subsystem %s: controller %u (provisional) for host %s (%s)\n",
			 subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn), qpair->peer);
		return;
	}
	NOTICELOG("nvmf: subsystem %s: controller %u for host %s (%s), kato %u ms\n", subsys->nqn,
		  ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn), qpair->peer, ctrlr->kato_ms);
}

static void
connect_io(struct nvmf_request *req, struct nvmf_subsystem *subsys,
	   const struct nvme_connect_cmd *cmd, const struct nvme_connect_data *data, bool auth)
{
	struct nvmf_qpair *qpair = req->qpair;
	struct nvmf_ctrlr *ctrlr;

	ctrlr = find_ctrlr(subsys, data->cntlid, false);
	if (ctrlr == NULL || ctrlr->state != NVMF_CTRLR_LIVE ||
	    ctrlr->transport != qpair->transport) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, cntlid));
		return;
	}
	if (strcmp(ctrlr->hostnqn, data->hostnqn) != 0) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, hostnqn));
		return;
	}
	if (memcmp(ctrlr->hostid, data->hostid, sizeof(ctrlr->hostid)) != 0) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, hostid));
		return;
	}
	if (cmd->qid > ctrlr->max_io_qpairs || ctrlr->io_qpairs[cmd->qid] != NULL) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_CMD,
				      offsetof(struct nvme_connect_cmd, qid));
		return;
	}
	if (!(ctrlr->regs.cc & NVME_CC_EN) || !(ctrlr->regs.csts & NVME_CSTS_RDY) ||
	    ctrlr->shutting_down) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
		return;
	}
	if (cmd->sqsize == 0 || cmd->sqsize > qpair->transport->opts.max_queue_depth - 1) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_CMD,
				      offsetof(struct nvme_connect_cmd, sqsize));
		return;
	}
	if (auth) {
		/* The qid is bound when the queue authenticates: a Connect alone takes nothing. */
		TAILQ_INSERT_TAIL(&ctrlr->pending_io, qpair, pending_link);
		qpair->bind_pending = true;
	} else {
		ctrlr->io_qpairs[cmd->qid] = qpair;
		ctrlr->num_io_qpairs++;
		ctrlr->io_qpairs_seen = true;
	}
	qpair->ctrlr = ctrlr;
	qpair->qid = cmd->qid;
	qpair->sq_entries = (uint16_t)(cmd->sqsize + 1);
	req->rsp.cdw0 = ctrlr->cntlid;
	DEBUGLOG(nvmf, "subsystem %s: controller %u: I/O queue %u (%s)\n", subsys->nqn,
		 ctrlr->cntlid, qpair->qid, qpair->peer);
}

static void
connect(struct nvmf_request *req)
{
	const struct nvme_connect_cmd *cmd = (const struct nvme_connect_cmd *)&req->cmd;
	struct nvmf_qpair *qpair = req->qpair;
	struct nvme_connect_data data;
	struct nvmf_subsystem *subsys;
	uint16_t status;
	int auth;

	if (qpair->ctrlr != NULL) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
		return;
	}
	if (req->xfer != NVME_XFER_HOST_TO_CTRLR || req->length < sizeof(data)) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_DATA_SGL_LENGTH_INVALID));
		return;
	}
	nvmf_request_copy_from(req, &data, sizeof(data));
	if (cmd->recfmt != 0) {
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC,
							NVME_SC_CONNECT_INCOMPATIBLE_FORMAT));
		return;
	}
	if (strnlen(data.subnqn, sizeof(data.subnqn)) == sizeof(data.subnqn)) {
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, subnqn));
		return;
	}
	if (strnlen(data.hostnqn, sizeof(data.hostnqn)) == sizeof(data.hostnqn) ||
	    data.hostnqn[0] == '\0') {
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, hostnqn));
		return;
	}
	subsys = nvmf_subsystem_find(data.subnqn);
	if (subsys == NULL || subsys->state != NVMF_SUBSYS_ACTIVE ||
	    g_nvmf_tgt.state != NVMF_TGT_RUNNING ||
	    !nvmf_subsystem_listener_allowed(subsys, &qpair->listen)) {
		WARNLOG("nvmf: Connect from %s (%s) to unknown subsystem %s on %s:%s\n",
			LOG_ESC(data.hostnqn), qpair->peer, LOG_ESC(data.subnqn),
			qpair->listen.traddr, qpair->listen.trsvcid);
		connect_invalid_param(req, NVME_CONNECT_IATTR_DATA,
				      offsetof(struct nvme_connect_data, subnqn));
		return;
	}
	if (!nvmf_subsystem_host_allowed(subsys, data.hostnqn)) {
		WARNLOG("nvmf: subsystem %s does not allow host %s (%s)\n", subsys->nqn,
			LOG_ESC(data.hostnqn), qpair->peer);
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC,
							NVME_SC_CONNECT_INVALID_HOST));
		return;
	}
	status = nvmf_tls_connect_check(qpair, subsys, data.hostnqn);
	if (status != 0) {
		nvmf_request_set_status(req, status);
		return;
	}
	/* A host with a key authenticates every queue before using it. */
	auth = nvmf_auth_qpair_init(qpair, subsys, data.hostnqn);
	if (auth < 0) {
		nvmf_request_set_status(req, NVME_STATUS(NVME_SCT_GENERIC,
							 NVME_SC_INTERNAL_DEVICE_ERROR));
		return;
	}
	if (cmd->qid == 0) {
		connect_admin(req, subsys, cmd, &data, auth > 0);
	} else {
		connect_io(req, subsys, cmd, &data, auth > 0);
	}
	if (!NVME_STATUS_IS_SUCCESS(req->rsp.status)) {
		nvmf_auth_qpair_fini(qpair);
	} else if (auth > 0) {
		req->rsp.cdw0 |= NVME_CONNECT_RSP_ATR;
		qpair->auth_pending = true;
	}
}

int
nvmf_ctrlr_qpair_authenticated(struct nvmf_qpair *qpair)
{
	struct nvmf_ctrlr *ctrlr = qpair->ctrlr;
	struct nvmf_subsystem *subsys;
	uint16_t id;
	int rc;

	if (ctrlr == NULL) {
		return -ENODEV;
	}
	subsys = ctrlr->subsys;
	if (qpair->qid == 0) {
		if (!ctrlr->auth_pending) {
			return 0;
		}
		if (ctrlr->state != NVMF_CTRLR_LIVE) {
			return -ENODEV;
		}
		/* Rare: the provisional id went to another controller meanwhile. */
		if (find_ctrlr(subsys, ctrlr->cntlid, false) != NULL) {
			id = alloc_cntlid(subsys);
			if (id == 0 || find_ctrlr(subsys, id, false) != NULL) {
				return -EBUSY;
			}
			NOTICELOG("nvmf: subsystem %s: controller %u of host %s is now %u (its id "
				  "went to another controller before it authenticated)\n",
				  subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn), id);
			ctrlr->cntlid = id;
		}
		ctrlr->auth_pending = false;
		rc = keep_alive_arm(ctrlr);
		if (rc != 0) {
			return rc;
		}
		NOTICELOG("nvmf: subsystem %s: controller %u for host %s (%s), kato %u ms\n",
			  subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn), qpair->peer,
			  ctrlr->kato_ms);
		return 0;
	}
	if (!qpair->bind_pending) {
		return 0;
	}
	if (ctrlr->state != NVMF_CTRLR_LIVE || ctrlr->shutting_down ||
	    !(ctrlr->regs.csts & NVME_CSTS_RDY)) {
		return -ENODEV;
	}
	if (ctrlr->io_qpairs[qpair->qid] != NULL) {
		return -EEXIST;
	}
	TAILQ_REMOVE(&ctrlr->pending_io, qpair, pending_link);
	qpair->bind_pending = false;
	ctrlr->io_qpairs[qpair->qid] = qpair;
	ctrlr->num_io_qpairs++;
	ctrlr->io_qpairs_seen = true;
	DEBUGLOG(nvmf, "subsystem %s: controller %u: I/O queue %u authenticated (%s)\n",
		 subsys->nqn, ctrlr->cntlid, qpair->qid, qpair->peer);
	return 0;
}

/*
 * Property Get/Set.
 */

static void
prop_get(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	const struct nvme_prop_get_cmd *cmd = (const struct nvme_prop_get_cmd *)&req->cmd;
	uint64_t value = 0;
	uint16_t status;

	status = nvmf_prop_get(&ctrlr->regs, cmd->attrib, cmd->ofst, &value);
	if (status != 0) {
		nvmf_request_set_status(req, status);
		return;
	}
	req->rsp.cdw0 = (uint32_t)value;
	req->rsp.cdw1 = (uint32_t)(value >> 32);
}

static void
prop_set(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	const struct nvme_prop_set_cmd *cmd = (const struct nvme_prop_set_cmd *)&req->cmd;
	bool discovery = ctrlr->subsys->subtype == NVMF_SUBTYPE_DISCOVERY;
	uint32_t new_cc, changes;
	uint16_t status;

	status = nvmf_prop_set_check(&ctrlr->regs, cmd->attrib, cmd->ofst, cmd->value, &new_cc);
	if (status != 0) {
		nvmf_request_set_status(req, status);
		return;
	}
	changes = nvmf_ctrlr_apply_cc(&ctrlr->regs, new_cc, discovery);
	if (ctrlr->regs.csts & NVME_CSTS_CFS) {
		WARNLOG("nvmf: subsystem %s: controller %u: unsupported CC 0x%x; controller "
			"fatal status set\n",
			ctrlr->subsys->nqn, ctrlr->cntlid, new_cc);
	}
	if (changes & (NVMF_CC_DISABLED | NVMF_CC_SHUTDOWN)) {
		DEBUGLOG(nvmf, "controller %u: %s\n", ctrlr->cntlid,
			 changes & NVMF_CC_SHUTDOWN ? "shutdown" : "reset");
		disconnect_io_qpairs(ctrlr);
	}
	/*
	 * A reset hands the host its held AERs back. A shutdown does not: the
	 * admin queue lives on, and hosts (SPDK's) drop their AERs before
	 * writing CC.SHN and take a completion for a CID they no longer know as
	 * a protocol error, which would fail the Property Set itself.
	 */
	if (changes & NVMF_CC_DISABLED) {
		nvmf_ctrlr_aer_complete_all(ctrlr, NVME_STATUS(NVME_SCT_GENERIC,
							       NVME_SC_ABORTED_SQ_DELETION));
	}
	if (changes & NVMF_CC_SHUTDOWN) {
		NOTICELOG(
			"nvmf: subsystem %s: controller %u of host %s: %s shutdown notification\n",
			ctrlr->subsys->nqn, ctrlr->cntlid, LOG_ESC(ctrlr->hostnqn),
			(new_cc & NVME_CC_SHN_MASK) == NVME_CC_SHN_ABRUPT ? "abrupt" : "normal");
		ctrlr->shutting_down = true;
		ctrlr_check_quiet(ctrlr);
	}
	if (changes & NVMF_CC_DISABLED) {
		ctrlr->shutting_down = false;
		ctrlr->num_queues_requested = 0;
		ctrlr->io_qpairs_seen = false;
	}
}

void
nvmf_ctrlr_exec_fabrics(struct nvmf_request *req)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)&req->cmd;
	struct nvmf_qpair *qpair = req->qpair;
	struct nvmf_ctrlr *ctrlr = qpair->ctrlr;

	/* A queue that has not authenticated keeps nothing alive. */
	if (ctrlr != NULL && nvmf_auth_qpair_authenticated(qpair)) {
		nvmf_ctrlr_keep_alive(ctrlr);
	}
	switch (fc->fctype) {
	case NVME_FCTYPE_CONNECT:
		connect(req);
		break;
	case NVME_FCTYPE_AUTH_SEND:
	case NVME_FCTYPE_AUTH_RECV:
		if (ctrlr == NULL) {
			nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
								NVME_SC_COMMAND_SEQUENCE_ERROR));
		} else if (nvmf_auth_exec(req)) {
			return; /* completed when the worker's result is back */
		}
		break;
	case NVME_FCTYPE_PROPERTY_GET:
	case NVME_FCTYPE_PROPERTY_SET:
		/* Properties belong to the admin queue. */
		if (ctrlr == NULL || qpair->qid != 0) {
			nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
								NVME_SC_INVALID_OPCODE));
		} else if (fc->fctype == NVME_FCTYPE_PROPERTY_GET) {
			prop_get(req, ctrlr);
		} else {
			prop_set(req, ctrlr);
		}
		break;
	default:
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE));
		break;
	}
	nvmf_request_complete(req);
}

/*
 * Namespace and discovery changes: remember the change, raise the event.
 */

void
nvmf_ctrlr_ns_changed(struct nvmf_ctrlr *ctrlr, uint32_t nsid)
{
	uint32_t i;

	if (ctrlr->state != NVMF_CTRLR_LIVE) {
		return;
	}
	if (!ctrlr->changed_ns_overflow) {
		for (i = 0; i < ctrlr->num_changed_ns && ctrlr->changed_ns[i] != nsid; i++) {
		}
		if (i == ctrlr->num_changed_ns) {
			if (ctrlr->num_changed_ns == NVME_CHANGED_NS_LIST_MAX) {
				ctrlr->changed_ns_overflow = true;
			} else {
				ctrlr->changed_ns[ctrlr->num_changed_ns++] = nsid;
			}
		}
	}
	nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_NS_CHANGED);
	/* A namespace that came or went may bring or take a warning. */
	nvmf_ctrlr_health_check(ctrlr);
}

void
nvmf_ctrlr_discovery_changed(struct nvmf_ctrlr *ctrlr)
{
	if (ctrlr->state == NVMF_CTRLR_LIVE) {
		nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_DISCOVERY_CHANGED);
	}
}
