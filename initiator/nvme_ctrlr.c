/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Controllers: the initialisation sequence on the admin queue, keep alive,
 * reset and reconnect with backoff, detach with a clean shutdown, the
 * namespaces, and the I/O queue pairs of the threads that use the
 * controller.
 *
 * Everything but I/O queue pair allocation runs on the controller's thread.
 * I/O threads learn about the controller through one atomic word, the
 * session (generation, cntlid, live bit): a queue pair connected under an
 * older generation belongs to a dead association and disconnects; a
 * disconnected queue pair connects again once the session is live. So a
 * reset needs no message to any I/O thread, and an I/O thread that fails
 * tells the controller with one message.
 *
 * Lifetime: the controller is reference counted (the owner, each I/O queue
 * pair, each message in flight) and freed when the last reference goes.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "nvme_internal.h"

/* How often CSTS is read while waiting for RDY or shutdown completion. */
#define CSTS_POLL_US        (10 * 1000)
/* Bounds of the CSTS.RDY wait (CAP.TO is in 500 ms units). */
#define RDY_TIMEOUT_MIN_MS  500
#define RDY_TIMEOUT_MAX_MS  30000
/* Reconnect failures logged in full; after that one line every LOG_EVERY attempts. */
#define RECONNECT_LOG_FIRST 3
#define RECONNECT_LOG_EVERY 50

static void run_step(struct nvme_ctrlr *ctrlr, enum nvme_ctrlr_init_step step);
static void attempt_succeeded(struct nvme_ctrlr *ctrlr);
static void ctrlr_attempt_failed(struct nvme_ctrlr *ctrlr, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ctrlr_finish_detach(struct nvme_ctrlr *ctrlr);
static void ctrlr_start_attempt(struct nvme_ctrlr *ctrlr);
static void ctrlr_reset(struct nvme_ctrlr *ctrlr, const char *reason);

void
nvme_ctrlr_opts_init(struct nvme_ctrlr_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->keep_alive_timeout_ms = 10000;
	opts->io_queue_size = 128;
	opts->num_io_queues = 64;
	opts->connect_timeout_ms = 5000;
	opts->command_timeout_ms = 30000;
	opts->reconnect_delay_min_ms = 100;
	opts->reconnect_delay_max_ms = 2000;
	opts->shutdown_timeout_ms = 2000;
}

void
nvme_ctrlr_get_ref(struct nvme_ctrlr *ctrlr)
{
	__atomic_add_fetch(&ctrlr->refs, 1, __ATOMIC_RELAXED);
}

static void
ctrlr_free(struct nvme_ctrlr *ctrlr)
{
	pthread_mutex_destroy(&ctrlr->lock);
	free(ctrlr->qid_used);
	free(ctrlr->ns_found);
	free(ctrlr->ns_list);
	free(ctrlr->ns);
	free(ctrlr->cdata);
	free(ctrlr->id_buf);
	/* The DH-HMAC-CHAP secrets in the options. */
	explicit_bzero(&ctrlr->opts, sizeof(ctrlr->opts));
	free(ctrlr);
}

void
nvme_ctrlr_put_ref(struct nvme_ctrlr *ctrlr)
{
	if (__atomic_sub_fetch(&ctrlr->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		ctrlr_free(ctrlr);
	}
}

static void
publish_session(struct nvme_ctrlr *ctrlr, bool live)
{
	__atomic_store_n(&ctrlr->session,
			 NVME_SESSION(ctrlr->gen, live ? ctrlr->admin->cntlid : 0, live),
			 __ATOMIC_RELEASE);
}

static uint64_t
load_session(const struct nvme_ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr->session, __ATOMIC_ACQUIRE);
}

static void
stop_timers(struct nvme_ctrlr *ctrlr)
{
	poller_unregister(&ctrlr->init_poller);
	poller_unregister(&ctrlr->keep_alive_poller);
	poller_unregister(&ctrlr->reconnect_poller);
}

/* ------------------------------------------------------------------------ */
/* Admin commands of the initialisation and of the shutdown                 */
/* ------------------------------------------------------------------------ */

/*
 * Each step of the initialisation and of a detach's shutdown sends one admin
 * command (step_cmd) and has one handler for its completion (ctrlr_steps). The
 * completion of an initialisation command fails the attempt on an error
 * status, unless the step is optional; a shutdown handler sees every status,
 * and whatever it meets ends the detach, never the attempt.
 */

/* Build the command of a step. Returns the bytes it reads into id_buf, or -EINVAL. */
static int
step_cmd(struct nvme_ctrlr *ctrlr, enum nvme_ctrlr_init_step step, struct nvme_cmd *cmd)
{
	switch (step) {
	case INIT_GET_CAP:
		nvme_cmd_build_prop_get(cmd, NVME_REG_CAP, true);
		return 0;
	case INIT_GET_VS:
		nvme_cmd_build_prop_get(cmd, NVME_REG_VS, false);
		return 0;
	case INIT_SET_CC:
		ctrlr->cc = NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16;
		nvme_cmd_build_prop_set(cmd, NVME_REG_CC, ctrlr->cc, false);
		return 0;
	case INIT_WAIT_RDY:
	case SHUTDOWN_WAIT:
		nvme_cmd_build_prop_get(cmd, NVME_REG_CSTS, false);
		return 0;
	case INIT_IDENTIFY_CTRLR:
		nvme_cmd_build_identify(cmd, NVME_CNS_CTRLR, 0);
		return NVME_IDENTIFY_DATA_SIZE;
	case INIT_SET_NUM_QUEUES:
		nvme_cmd_build_set_num_queues(cmd, ctrlr->opts.num_io_queues);
		return 0;
	case INIT_ACTIVE_NS_LIST:
		nvme_cmd_build_identify(cmd, NVME_CNS_ACTIVE_NS_LIST, 0);
		return NVME_IDENTIFY_DATA_SIZE;
	case INIT_IDENTIFY_NS:
		nvme_cmd_build_identify(cmd, NVME_CNS_NS, ctrlr->ns_list[ctrlr->ns_list_pos]);
		return NVME_IDENTIFY_DATA_SIZE;
	case SHUTDOWN_SET_CC:
		nvme_cmd_build_prop_set(cmd, NVME_REG_CC,
					(ctrlr->cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL,
					false);
		return 0;
	case INIT_IDLE:
	case INIT_CONNECT_ADMIN:
	case INIT_DONE:
		/* These steps wait for no command. */
		break;
	}
	return -EINVAL;
}

/* Read CSTS again after CSTS_POLL_US (CSTS.RDY of the init, CSTS.SHST of a shutdown). */
static int
csts_poll(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	poller_unregister(&ctrlr->init_poller);
	run_step(ctrlr, ctrlr->step);
	return POLLER_BUSY;
}

/* Returns 0, or -ENOMEM if the timer cannot be set. */
static int
csts_poll_later(struct nvme_ctrlr *ctrlr)
{
	ctrlr->init_poller = poller_register(csts_poll, ctrlr, CSTS_POLL_US, "nvme_csts");
	return ctrlr->init_poller != NULL ? 0 : -ENOMEM;
}

static int
ns_info_cmp(const void *a, const void *b)
{
	const struct nvme_ns_info *x = a, *y = b;

	return x->nsid < y->nsid ? -1 : x->nsid > y->nsid;
}

/* All namespaces identified: adopt them (first connect) or check them (reconnect). */
static int
ns_scan_done(struct nvme_ctrlr *ctrlr)
{
	struct nvme_ns_info *found = ctrlr->ns_found;
	struct nvme_ns *old;
	uint32_t i;

	qsort(found, ctrlr->num_ns_found, sizeof(*found), ns_info_cmp);
	if (!ctrlr->ns_known) {
		ctrlr->ns = calloc(GGA_MAX(ctrlr->num_ns_found, 1u), sizeof(*ctrlr->ns));
		if (ctrlr->ns == NULL) {
			return -ENOMEM;
		}
		for (i = 0; i < ctrlr->num_ns_found; i++) {
			ctrlr->ns[i].ctrlr = ctrlr;
			ctrlr->ns[i].info = found[i];
		}
		ctrlr->num_ns = ctrlr->num_ns_found;
		ctrlr->ns_known = true;
		return 0;
	}
	/* The bdevs above were built on this geometry: a changed namespace is not the same disk. */
	for (i = 0; i < ctrlr->num_ns; i++) {
		const struct nvme_ns_info *now = NULL;
		uint32_t j;

		old = &ctrlr->ns[i];
		for (j = 0; j < ctrlr->num_ns_found; j++) {
			if (found[j].nsid == old->info.nsid) {
				now = &found[j];
				break;
			}
		}
		if (now == NULL) {
			WARNLOG("nvme %s: namespace %u is gone after reconnect\n", ctrlr->name,
				old->info.nsid);
			continue;
		}
		if (now->block_size != old->info.block_size || now->md_size != old->info.md_size ||
		    now->extended_lba != old->info.extended_lba ||
		    now->num_blocks < old->info.num_blocks) {
			return -ESTALE;
		}
	}
	return 0;
}

/* ---- completion handlers of the initialisation, in the order of the steps ---- */

static void
get_cap_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	ctrlr->cap = (uint64_t)cpl->cdw0 | (uint64_t)cpl->cdw1 << 32;
	run_step(ctrlr, INIT_GET_VS);
}

static void
get_vs_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	ctrlr->vs = cpl->cdw0;
	run_step(ctrlr, INIT_SET_CC);
}

static void
set_cc_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	ctrlr->init_deadline = ticks_get() +
			       us_to_ticks(1000ull * GGA_MIN(GGA_MAX(NVME_CAP_TO(ctrlr->cap) * 500u,
								     RDY_TIMEOUT_MIN_MS),
							     RDY_TIMEOUT_MAX_MS));
	run_step(ctrlr, INIT_WAIT_RDY);
}

static void
wait_rdy_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	ctrlr->csts = cpl->cdw0;
	if ((ctrlr->csts & NVME_CSTS_CFS) != 0) {
		ctrlr_attempt_failed(ctrlr, -EIO, "controller fatal status (CSTS 0x%x)",
				     ctrlr->csts);
	} else if ((ctrlr->csts & NVME_CSTS_RDY) != 0) {
		run_step(ctrlr, INIT_IDENTIFY_CTRLR);
	} else if (ticks_get() > ctrlr->init_deadline) {
		ctrlr_attempt_failed(ctrlr, -ETIMEDOUT,
				     "controller not ready (CSTS.RDY = 0) in time");
	} else if (csts_poll_later(ctrlr) != 0) {
		ctrlr_attempt_failed(ctrlr, -ENOMEM, "out of memory");
	}
}

/* The limits of the I/O queues and transfers follow from CAP and the identify data. */
static void
identify_ctrlr_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	memcpy(ctrlr->cdata, ctrlr->id_buf, sizeof(*ctrlr->cdata));
	__atomic_store_n(&ctrlr->max_xfer_size, nvme_mdts_to_bytes(ctrlr->cdata->mdts, ctrlr->cap),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ctrlr->io_icd_size,
			 ctrlr->cdata->ioccsz >= 4 ? ctrlr->cdata->ioccsz * 16 - NVME_SQE_SIZE : 0,
			 __ATOMIC_RELAXED);
	ctrlr->io_queue_size = GGA_MIN(ctrlr->opts.io_queue_size, NVME_CAP_MQES(ctrlr->cap) + 1);
	if (ctrlr->cdata->maxcmd != 0) {
		ctrlr->io_queue_size = GGA_MIN(ctrlr->io_queue_size,
					       (uint32_t)ctrlr->cdata->maxcmd);
	}
	ctrlr->io_queue_size = GGA_MAX(ctrlr->io_queue_size, 2u);
	run_step(ctrlr, INIT_SET_NUM_QUEUES);
}

/* Optional: a controller that refuses the feature gets as many queues as were asked for. */
static void
set_num_queues_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	uint32_t nsq, ncq;

	if (NVME_STATUS_IS_SUCCESS(status)) {
		nsq = (cpl->cdw0 & 0xffff) + 1;
		ncq = (cpl->cdw0 >> 16) + 1;
		ctrlr->num_io_queues = GGA_MIN(ctrlr->opts.num_io_queues, GGA_MIN(nsq, ncq));
	} else {
		WARNLOG("nvme %s: Set Features Number of Queues failed (%s); assuming %u\n",
			ctrlr->name, nvme_status_string(status), ctrlr->opts.num_io_queues);
		ctrlr->num_io_queues = ctrlr->opts.num_io_queues;
	}
	run_step(ctrlr, INIT_ACTIVE_NS_LIST);
}

/* Identify the next namespace of the list, or finish the scan. */
static void
ns_scan_next(struct nvme_ctrlr *ctrlr)
{
	int rc;

	if (ctrlr->ns_list_pos < ctrlr->ns_list_len) {
		run_step(ctrlr, INIT_IDENTIFY_NS);
		return;
	}
	rc = ns_scan_done(ctrlr);
	if (rc == -ESTALE) {
		ctrlr_attempt_failed(ctrlr, rc, "a namespace changed its format or shrank");
	} else if (rc != 0) {
		ctrlr_attempt_failed(ctrlr, rc, "out of memory");
	} else {
		attempt_succeeded(ctrlr);
	}
}

/* Optional: before NVMe 1.1 there is no list, and every nsid up to NN is a candidate. */
static void
active_ns_list_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	const uint32_t *list = ctrlr->id_buf;
	uint32_t i, max;

	ctrlr->ns_list_len = 0;
	if (NVME_STATUS_IS_SUCCESS(status)) {
		for (i = 0; i < NVME_IDENTIFY_DATA_SIZE / 4 && list[i] != 0; i++) {
			ctrlr->ns_list[ctrlr->ns_list_len++] = list[i];
		}
	} else {
		max = GGA_MIN(ctrlr->cdata->nn, NVME_IDENTIFY_DATA_SIZE / 4u);
		for (i = 1; i <= max; i++) {
			ctrlr->ns_list[ctrlr->ns_list_len++] = i;
		}
	}
	ctrlr->ns_list_pos = 0;
	ctrlr->num_ns_found = 0;
	ns_scan_next(ctrlr);
}

static void
identify_ns_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	struct nvme_ns_info *info = &ctrlr->ns_found[ctrlr->num_ns_found];
	int rc;

	memset(info, 0, sizeof(*info));
	info->nsid = ctrlr->ns_list[ctrlr->ns_list_pos];
	rc = nvme_ns_info_from_identify(info, ctrlr->id_buf);
	if (rc != 0 || info->num_blocks == 0) {
		/* Inactive (all zero) or a format we cannot use: not a namespace for us. */
		if (rc != 0) {
			WARNLOG("nvme %s: namespace %u: unusable LBA format or size; skipped\n",
				ctrlr->name, info->nsid);
		}
	} else {
		info->dsm_supported = (ctrlr->cdata->oncs & NVME_ONCS_DSM) != 0;
		info->write_zeroes_supported = (ctrlr->cdata->oncs & NVME_ONCS_WRITE_ZEROES) != 0;
		info->reservations_supported = (ctrlr->cdata->oncs & NVME_ONCS_RESERVATIONS) != 0;
		info->volatile_write_cache = (ctrlr->cdata->vwc & NVME_VWC_PRESENT) != 0;
		ctrlr->num_ns_found++;
	}
	ctrlr->ns_list_pos++;
	ns_scan_next(ctrlr);
}

/* ---- completion handlers of a detach's shutdown ---- */

static void
shutdown_cc_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	if (!NVME_STATUS_IS_SUCCESS(status)) {
		/* Refused, or the queue broke: there is no shutdown to wait for. */
		ctrlr_finish_detach(ctrlr);
		return;
	}
	run_step(ctrlr, SHUTDOWN_WAIT);
}

static void
shutdown_wait_done(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status)
{
	if (!NVME_STATUS_IS_SUCCESS(status) ||
	    (cpl->cdw0 & NVME_CSTS_SHST_MASK) == NVME_CSTS_SHST_COMPLETE) {
		ctrlr_finish_detach(ctrlr);
		return;
	}
	if (ticks_get() < ctrlr->init_deadline) {
		if (csts_poll_later(ctrlr) != 0) {
			ctrlr_finish_detach(ctrlr);
		}
		return;
	}
	WARNLOG("nvme %s: shutdown not complete after %u ms; closing anyway\n", ctrlr->name,
		ctrlr->opts.shutdown_timeout_ms);
	ctrlr_finish_detach(ctrlr);
}

/* The steps that send a command: name (for messages) and completion handler. */
struct ctrlr_step {
	const char *name;
	void (*done)(struct nvme_ctrlr *ctrlr, const struct nvme_cpl *cpl, uint16_t status);
	/* An optional feature: an error status reaches done instead of failing the attempt. */
	bool optional;
	/* Part of a detach's shutdown: every status reaches done; failures end the detach. */
	bool shutdown;
};

static const struct ctrlr_step ctrlr_steps[] = {
	[INIT_GET_CAP] = { "Property Get CAP", get_cap_done },
	[INIT_GET_VS] = { "Property Get VS", get_vs_done },
	[INIT_SET_CC] = { "Property Set CC", set_cc_done },
	[INIT_WAIT_RDY] = { "Property Get CSTS", wait_rdy_done },
	[INIT_IDENTIFY_CTRLR] = { "Identify Controller", identify_ctrlr_done },
	[INIT_SET_NUM_QUEUES] = { "Set Features Number of Queues", set_num_queues_done,
				  .optional = true },
	[INIT_ACTIVE_NS_LIST] = { "Identify Active Namespace List", active_ns_list_done,
				  .optional = true },
	[INIT_IDENTIFY_NS] = { "Identify Namespace", identify_ns_done },
	[SHUTDOWN_SET_CC] = { "Property Set CC.SHN", shutdown_cc_done, .shutdown = true },
	[SHUTDOWN_WAIT] = { "Property Get CSTS", shutdown_wait_done, .shutdown = true },
};
static_assert(ARRAY_SIZE(ctrlr_steps) == SHUTDOWN_WAIT + 1, "every step has its entry");

/* An error of an initialisation command fails the attempt. Returns true if it did. */
static bool
init_cpl_failed(struct nvme_ctrlr *ctrlr, const struct ctrlr_step *step, uint16_t status)
{
	const char *why;

	if (NVME_STATUS_GET_SCT(status) == NVME_SCT_PATH) {
		/* The admin queue broke or timed out: its own reason says why. */
		why = ctrlr->admin->fail_reason[0] != '\0' ? ctrlr->admin->fail_reason :
							     nvme_status_string(status);
		ctrlr_attempt_failed(ctrlr, ctrlr->admin->timed_out_seen ? -ETIMEDOUT : -ECONNRESET,
				     "%s", why);
		return true;
	}
	if (!NVME_STATUS_IS_SUCCESS(status) && !step->optional) {
		ctrlr_attempt_failed(ctrlr, -EIO, "%s failed: %s (sct 0x%x, sc 0x%x)", step->name,
				     nvme_status_string(status), NVME_STATUS_GET_SCT(status),
				     NVME_STATUS_GET_SC(status));
		return true;
	}
	return false;
}

static void
step_cpl(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct nvme_ctrlr *ctrlr = cb_arg;
	const struct ctrlr_step *step = &ctrlr_steps[ctrlr->step];
	uint16_t status = cpl->status & ~NVME_STATUS_P;

	if (step->done == NULL) {
		/* A command of an abandoned attempt or shutdown, failed by the disconnect. */
		return;
	}
	if (!step->shutdown && init_cpl_failed(ctrlr, step, status)) {
		return;
	}
	step->done(ctrlr, cpl, status);
}

/* Send the command of a step; if it cannot be sent, the attempt (or the detach) ends. */
static void
run_step(struct nvme_ctrlr *ctrlr, enum nvme_ctrlr_init_step step)
{
	struct nvme_cmd cmd;
	int len, rc;

	ctrlr->step = step;
	len = step_cmd(ctrlr, step, &cmd);
	rc = len < 0 ? len :
		       nvme_qpair_submit_buf(ctrlr->admin, &cmd, len > 0 ? ctrlr->id_buf : NULL,
					     (uint32_t)len, step_cpl, ctrlr);
	if (rc == 0) {
		return;
	}
	if (ctrlr_steps[step].shutdown) {
		ctrlr_finish_detach(ctrlr);
	} else {
		ctrlr_attempt_failed(ctrlr, rc, "cannot submit an admin command: %s",
				     strerror(-rc));
	}
}

/* ------------------------------------------------------------------------ */
/* Connect, reset, reconnect                                                */
/* ------------------------------------------------------------------------ */

static int keep_alive_poll(void *ctx);

static void
attempt_succeeded(struct nvme_ctrlr *ctrlr)
{
	bool first = ctrlr->state == NVME_CTRLR_CONNECTING;
	uint32_t i;

	ctrlr->step = INIT_DONE;
	if (ctrlr->qid_used == NULL) {
		ctrlr->qid_slots = ctrlr->num_io_queues;
		ctrlr->qid_used = calloc(ctrlr->qid_slots + 1, 1);
		if (ctrlr->qid_used == NULL) {
			ctrlr_attempt_failed(ctrlr, -ENOMEM, "out of memory");
			return;
		}
	}
	ctrlr->gen++;
	ctrlr->state = NVME_CTRLR_CONNECTED;
	publish_session(ctrlr, true);
	if (ctrlr->opts.keep_alive_timeout_ms != 0) {
		ctrlr->keep_alive_outstanding = false;
		ctrlr->keep_alive_poller =
			poller_register(keep_alive_poll, ctrlr,
					1000ull * ctrlr->opts.keep_alive_timeout_ms / 2,
					"nvme_keep_alive");
		if (ctrlr->keep_alive_poller == NULL) {
			WARNLOG("nvme %s: cannot start the keep alive timer\n", ctrlr->name);
		}
	}
	if (first) {
		NOTICELOG("nvme %s: connected to %s, cntlid %u, %u namespace(s), %u I/O queues, "
			  "%s%s\n",
			  ctrlr->name, ctrlr->trid.subnqn, ctrlr->admin->cntlid, ctrlr->num_ns,
			  ctrlr->num_io_queues, ctrlr->opts.header_digest ? "header digest " : "",
			  ctrlr->opts.data_digest ? "data digest" : "");
		for (i = 0; i < ctrlr->num_ns; i++) {
			DEBUGLOG(nvme, "nvme %s: ns %u: %" PRIu64 " blocks of %u + %u\n",
				 ctrlr->name, ctrlr->ns[i].info.nsid, ctrlr->ns[i].info.num_blocks,
				 ctrlr->ns[i].info.block_size, ctrlr->ns[i].info.md_size);
		}
		ctrlr->connect_cb(ctrlr->connect_cb_arg, ctrlr, 0, NULL);
		return;
	}
	ctrlr->reconnect_count++;
	NOTICELOG("nvme %s: reconnected (cntlid %u) after %u attempt(s)\n", ctrlr->name,
		  ctrlr->admin->cntlid, ctrlr->reconnect_attempts + 1);
	ctrlr->reconnect_attempts = 0;
	ctrlr->reconnect_delay_ms = ctrlr->opts.reconnect_delay_min_ms;
	if (ctrlr->reconnect_cb != NULL) {
		ctrlr->reconnect_cb(ctrlr->reconnect_cb_arg, ctrlr, true);
	}
}

static void
ctrlr_free_msg(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	nvme_qpair_destroy(ctrlr->admin);
	ctrlr->admin = NULL;
	nvme_ctrlr_put_ref(ctrlr);
}

static void
detach_done_msg(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;
	nvme_ctrlr_detach_cb cb = ctrlr->detach_cb;
	void *cb_arg = ctrlr->detach_cb_arg;

	nvme_qpair_destroy(ctrlr->admin);
	ctrlr->admin = NULL;
	NOTICELOG("nvme %s: detached\n", ctrlr->name);
	nvme_ctrlr_put_ref(ctrlr);
	if (cb != NULL) {
		cb(cb_arg);
	}
}

static int
reconnect_poll(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	poller_unregister(&ctrlr->reconnect_poller);
	ctrlr_start_attempt(ctrlr);
	return POLLER_BUSY;
}

static void
schedule_reconnect(struct nvme_ctrlr *ctrlr)
{
	uint32_t delay = ctrlr->reconnect_delay_ms;

	ctrlr->reconnect_delay_ms = GGA_MIN(delay * 2, ctrlr->opts.reconnect_delay_max_ms);
	ctrlr->reconnect_poller = poller_register(reconnect_poll, ctrlr, 1000ull * delay,
						  "nvme_reconnect");
	if (ctrlr->reconnect_poller == NULL) {
		ERRLOG("nvme %s: cannot schedule a reconnect; the controller stays down\n",
		       ctrlr->name);
	}
}

/*
 * Abandon the running step (of an attempt or of a shutdown) and drop the
 * admin connection. Commands in flight fail with the disconnect: they must
 * find their step abandoned.
 */
static void
ctrlr_close_admin(struct nvme_ctrlr *ctrlr)
{
	ctrlr->step = INIT_IDLE;
	poller_unregister(&ctrlr->init_poller);
	poller_unregister(&ctrlr->shutdown_poller);
	nvme_qpair_disconnect(ctrlr->admin, NVME_STATUS_HOST_PATH_ERROR);
}

/* A detach has nothing more to tell the controller: close, then call back and free. */
static void
ctrlr_finish_detach(struct nvme_ctrlr *ctrlr)
{
	ctrlr_close_admin(ctrlr);
	if (thread_send_msg(ctrlr->thread, detach_done_msg, ctrlr) != 0) {
		ERRLOG("nvme %s: cannot finish the detach (message queue full)\n", ctrlr->name);
	}
}

/* The first connect failed: report it, then free the controller. */
static void
ctrlr_connect_failed(struct nvme_ctrlr *ctrlr, int rc, const char *why)
{
	snprintf(ctrlr->reason, sizeof(ctrlr->reason), "cannot connect to %s (%s) at %s:%s: %s",
		 ctrlr->trid.subnqn, nvme_transport_type_name(ctrlr->trid.trtype),
		 ctrlr->trid.traddr, ctrlr->trid.trsvcid, why);
	if (ctrlr->opts.quiet_connect_failure) {
		DEBUGLOG(nvme, "nvme: %s\n", ctrlr->reason);
	} else {
		ERRLOG("nvme: %s\n", ctrlr->reason);
	}
	ctrlr->connect_cb(ctrlr->connect_cb_arg, NULL, rc, ctrlr->reason);
	/* Not from inside the admin queue's callbacks: free from a fresh message. */
	if (thread_send_msg(ctrlr->thread, ctrlr_free_msg, ctrlr) != 0) {
		ERRLOG("nvme %s: cannot free the controller (message queue full)\n", ctrlr->name);
	}
}

/*
 * An attempt (first connect or reconnect) failed: drop the admin connection,
 * then report and free (first connect) or retry with backoff (reconnect).
 */
static void
ctrlr_attempt_failed(struct nvme_ctrlr *ctrlr, int rc, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	/* A detach ends in ctrlr_finish_detach, whatever its shutdown meets. */
	assert(ctrlr->state != NVME_CTRLR_DETACHING);
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);

	ctrlr_close_admin(ctrlr);
	if (ctrlr->state == NVME_CTRLR_CONNECTING) {
		ctrlr_connect_failed(ctrlr, rc, why);
		return;
	}

	ctrlr->last_error = rc;
	ctrlr->reconnect_attempts++;
	if (ctrlr->reconnect_attempts <= RECONNECT_LOG_FIRST ||
	    ctrlr->reconnect_attempts % RECONNECT_LOG_EVERY == 0) {
		WARNLOG("nvme %s: reconnect attempt %u failed: %s; retrying in %u ms%s\n",
			ctrlr->name, ctrlr->reconnect_attempts, why, ctrlr->reconnect_delay_ms,
			ctrlr->reconnect_attempts == RECONNECT_LOG_FIRST ?
				" (further failures logged every 50 attempts)" :
				"");
	}
	schedule_reconnect(ctrlr);
}

static void
admin_connect_done(struct nvme_qpair *qp, int rc)
{
	struct nvme_ctrlr *ctrlr = qp->ctrlr;

	if (ctrlr->step != INIT_CONNECT_ADMIN) {
		return;
	}
	if (rc != 0) {
		ctrlr_attempt_failed(ctrlr, rc, "%s", qp->fail_reason);
		return;
	}
	run_step(ctrlr, INIT_GET_CAP);
}

static void
admin_lost(struct nvme_qpair *qp, int rc)
{
	struct nvme_ctrlr *ctrlr = qp->ctrlr;

	if (ctrlr->state == NVME_CTRLR_CONNECTED) {
		ctrlr_reset(ctrlr, qp->fail_reason);
	} else if (ctrlr->step == INIT_IDLE) {
		/* Nothing was running on the admin queue. */
	} else if (ctrlr->state == NVME_CTRLR_DETACHING) {
		/* Lost while a shutdown waited to read CSTS again: no one is left to tell. */
		ctrlr_finish_detach(ctrlr);
	} else {
		ctrlr_attempt_failed(ctrlr, rc, "%s", qp->fail_reason);
	}
}

static void
ctrlr_start_attempt(struct nvme_ctrlr *ctrlr)
{
	int rc;

	ctrlr->step = INIT_CONNECT_ADMIN;
	rc = nvme_qpair_connect(ctrlr->admin, NVME_CNTLID_DYNAMIC, ctrlr->gen);
	if (rc != 0) {
		ctrlr_attempt_failed(ctrlr, rc, "%s",
				     ctrlr->admin->fail_reason[0] != '\0' ?
					     ctrlr->admin->fail_reason :
					     strerror(-rc));
	}
}

static void
start_msg(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	/* A first connect given up (detached) before it started: nothing to start. */
	if (ctrlr->state == NVME_CTRLR_DETACHING) {
		return;
	}
	ctrlr_start_attempt(ctrlr);
}

static void
ctrlr_reset(struct nvme_ctrlr *ctrlr, const char *reason)
{
	if (ctrlr->state != NVME_CTRLR_CONNECTED) {
		return;
	}
	WARNLOG("nvme %s: controller lost (%s); reconnecting\n", ctrlr->name, reason);
	ctrlr->state = NVME_CTRLR_RECONNECTING;
	/* A new generation: every I/O queue of the old association drops. */
	ctrlr->gen++;
	publish_session(ctrlr, false);
	poller_unregister(&ctrlr->keep_alive_poller);
	ctrlr->step = INIT_IDLE;
	nvme_qpair_disconnect(ctrlr->admin, NVME_STATUS_HOST_PATH_ERROR);
	ctrlr->reconnect_attempts = 0;
	ctrlr->reconnect_delay_ms = ctrlr->opts.reconnect_delay_min_ms;
	schedule_reconnect(ctrlr);
	/* Users that must not count on it meanwhile (a gga member) hear of it now. */
	if (ctrlr->reconnect_cb != NULL) {
		ctrlr->reconnect_cb(ctrlr->reconnect_cb_arg, ctrlr, false);
	}
}

static void
keep_alive_cpl(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct nvme_ctrlr *ctrlr = cb_arg;
	uint16_t status = cpl->status & ~NVME_STATUS_P;

	ctrlr->keep_alive_outstanding = false;
	if (!NVME_STATUS_IS_SUCCESS(status) && NVME_STATUS_GET_SCT(status) != NVME_SCT_PATH) {
		char why[128];

		snprintf(why, sizeof(why), "Keep Alive failed: %s", nvme_status_string(status));
		ctrlr_reset(ctrlr, why);
	}
}

int
nvme_ctrlr_get_log_page(struct nvme_ctrlr *ctrlr, uint8_t lid, uint32_t nsid, void *buf,
			uint32_t len, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	if (len == 0 || len % 4 != 0) {
		return -EINVAL;
	}
	if (ctrlr->state != NVME_CTRLR_CONNECTED) {
		return -ENXIO;
	}
	nvme_cmd_build_get_log_page(&cmd, lid, nsid, len);
	return nvme_qpair_submit_buf(ctrlr->admin, &cmd, buf, len, cb, cb_arg);
}

static int
keep_alive_poll(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;
	struct nvme_cmd cmd;

	if (ctrlr->state != NVME_CTRLR_CONNECTED || ctrlr->keep_alive_outstanding) {
		return POLLER_IDLE;
	}
	nvme_cmd_build_keep_alive(&cmd);
	if (nvme_qpair_submit(ctrlr->admin, &cmd, NULL, 0, 0, 0, keep_alive_cpl, ctrlr) == 0) {
		ctrlr->keep_alive_outstanding = true;
	}
	return POLLER_BUSY;
}

static int
check_trid(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts)
{
	struct in_addr addr;
	unsigned long port;
	char *end;

	if (trid->trtype != NVME_TRANSPORT_TCP && trid->trtype != NVME_TRANSPORT_RDMA) {
		return -EINVAL;
	}
	if (nvme_transport_find(trid->trtype) == NULL) {
		/* Built without it (./configure --without-rdma). */
		return -EPROTONOSUPPORT;
	}
	if (trid->adrfam != NVME_ADRFAM_IPV4) {
		return -EAFNOSUPPORT;
	}
	if (inet_pton(AF_INET, trid->traddr, &addr) != 1) {
		return -EINVAL;
	}
	errno = 0;
	port = strtoul(trid->trsvcid, &end, 10);
	if (trid->trsvcid[0] == '\0' || *end != '\0' || errno != 0 || port == 0 || port > 65535) {
		return -EINVAL;
	}
	if (trid->subnqn[0] == '\0' ||
	    strnlen(trid->subnqn, sizeof(trid->subnqn)) > NVME_NQN_MAX_LEN ||
	    strnlen(opts->hostnqn, sizeof(opts->hostnqn)) > NVME_NQN_MAX_LEN) {
		return -EINVAL;
	}
	if (opts->io_queue_size < 2 || opts->num_io_queues == 0 || opts->connect_timeout_ms == 0 ||
	    opts->reconnect_delay_min_ms == 0 ||
	    opts->reconnect_delay_max_ms < opts->reconnect_delay_min_ms) {
		return -EINVAL;
	}
	return 0;
}

static struct nvme_ctrlr *
ctrlr_alloc(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts,
	    nvme_ctrlr_connect_cb cb, void *cb_arg)
{
	struct nvme_ctrlr *ctrlr;

	ctrlr = calloc(1, sizeof(*ctrlr));
	if (ctrlr == NULL) {
		return NULL;
	}
	ctrlr->trid = *trid;
	ctrlr->opts = *opts;
	ctrlr->ops = nvme_transport_find(trid->trtype);
	ctrlr->thread = thread_get_current();
	ctrlr->refs = 1;
	ctrlr->state = NVME_CTRLR_CONNECTING;
	ctrlr->connect_cb = cb;
	ctrlr->connect_cb_arg = cb_arg;
	ctrlr->reconnect_delay_ms = opts->reconnect_delay_min_ms;
	pthread_mutex_init(&ctrlr->lock, NULL);
	snprintf(ctrlr->name, sizeof(ctrlr->name), "%s:%s", trid->traddr, trid->trsvcid);
	return ctrlr;
}

/* A host ID and NQN of our own where the options give none. */
static int
ctrlr_set_host_ids(struct nvme_ctrlr *ctrlr)
{
	static const char uuid_nqn[] = "nqn.2014-08.org.nvmexpress:uuid:";
	char hostid_str[UUID_STR_LEN];
	uint8_t id[16];

	/*
	 * A host NQN of the UUID form names its host identifier, as nvme-cli and
	 * SPDK take it: a host that keeps its NQN keeps its reservations.
	 */
	if (mem_is_zero(ctrlr->opts.hostid, sizeof(ctrlr->opts.hostid)) &&
	    strncmp(ctrlr->opts.hostnqn, uuid_nqn, sizeof(uuid_nqn) - 1) == 0 &&
	    uuid_parse(ctrlr->opts.hostnqn + sizeof(uuid_nqn) - 1, id) == 0) {
		memcpy(ctrlr->opts.hostid, id, sizeof(id));
	}
	if (mem_is_zero(ctrlr->opts.hostid, sizeof(ctrlr->opts.hostid)) &&
	    getrandom(ctrlr->opts.hostid, sizeof(ctrlr->opts.hostid), 0) !=
		    (ssize_t)sizeof(ctrlr->opts.hostid)) {
		return -EIO;
	}
	if (ctrlr->opts.hostnqn[0] == '\0') {
		uuid_format(ctrlr->opts.hostid, hostid_str);
		snprintf(ctrlr->opts.hostnqn, sizeof(ctrlr->opts.hostnqn),
			 "nqn.2014-08.org.nvmexpress:uuid:%s", hostid_str);
	}
	return 0;
}

/* The identify buffer and the namespace lists (ctrlr_free releases them). */
static int
ctrlr_alloc_bufs(struct nvme_ctrlr *ctrlr)
{
	ctrlr->id_buf = aligned_alloc(4096, NVME_IDENTIFY_DATA_SIZE);
	ctrlr->cdata = calloc(1, sizeof(*ctrlr->cdata));
	ctrlr->ns_list = calloc(NVME_IDENTIFY_DATA_SIZE / 4, sizeof(uint32_t));
	ctrlr->ns_found = calloc(NVME_IDENTIFY_DATA_SIZE / 4, sizeof(*ctrlr->ns_found));
	if (ctrlr->id_buf == NULL || ctrlr->cdata == NULL || ctrlr->ns_list == NULL ||
	    ctrlr->ns_found == NULL) {
		return -ENOMEM;
	}
	return 0;
}

int
nvme_ctrlr_connect(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts,
		   nvme_ctrlr_connect_cb cb, void *cb_arg)
{
	return nvme_ctrlr_connect_start(trid, opts, cb, cb_arg, NULL);
}

int
nvme_ctrlr_connect_start(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts,
			 nvme_ctrlr_connect_cb cb, void *cb_arg, struct nvme_ctrlr **ctrlrp)
{
	struct nvme_ctrlr *ctrlr;
	int rc;

	if (trid == NULL || opts == NULL || cb == NULL) {
		return -EINVAL;
	}
	rc = check_trid(trid, opts);
	if (rc != 0) {
		return rc;
	}
	ctrlr = ctrlr_alloc(trid, opts, cb, cb_arg);
	if (ctrlr == NULL) {
		return -ENOMEM;
	}
	rc = ctrlr_set_host_ids(ctrlr);
	if (rc != 0) {
		goto out_free_ctrlr;
	}
	rc = ctrlr_alloc_bufs(ctrlr);
	if (rc != 0) {
		goto out_free_ctrlr;
	}
	ctrlr->admin = nvme_qpair_create(ctrlr, 0, NVME_ADMIN_QUEUE_SIZE, true);
	if (ctrlr->admin == NULL) {
		rc = -ENOMEM;
		goto out_free_ctrlr;
	}
	ctrlr->admin->connect_done = admin_connect_done;
	ctrlr->admin->lost = admin_lost;

	/* The callback must not run inside this call: start from a message. */
	rc = thread_send_msg(ctrlr->thread, start_msg, ctrlr);
	if (rc != 0) {
		goto out_destroy_admin;
	}
	if (ctrlrp != NULL) {
		*ctrlrp = ctrlr;
	}
	return 0;

out_destroy_admin:
	nvme_qpair_destroy(ctrlr->admin);
out_free_ctrlr:
	ctrlr_free(ctrlr);
	return rc;
}

/* The shutdown of a detach got no answer in shutdown_timeout_ms: close anyway. */
static int
shutdown_expired(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	poller_unregister(&ctrlr->shutdown_poller);
	if (ctrlr_steps[ctrlr->step].shutdown) {
		WARNLOG("nvme %s: %s not answered in %u ms; closing anyway\n", ctrlr->name,
			ctrlr_steps[ctrlr->step].name, ctrlr->opts.shutdown_timeout_ms);
		ctrlr_finish_detach(ctrlr);
	}
	return POLLER_BUSY;
}

int
nvme_ctrlr_detach(struct nvme_ctrlr *ctrlr, nvme_ctrlr_detach_cb cb, void *cb_arg)
{
	enum nvme_ctrlr_state prev = ctrlr->state;
	uint32_t io_qpairs;

	if (prev == NVME_CTRLR_DETACHING) {
		return -EBUSY;
	}
	/*
	 * A first connect in progress (nvme_ctrlr_connect_start) is given up as a
	 * reconnect attempt is: its connect callback is never called. It has no
	 * association to shut down, and no I/O queue pair.
	 */
	/* Under the lock so that no thread allocates a queue pair meanwhile. */
	pthread_mutex_lock(&ctrlr->lock);
	io_qpairs = ctrlr->num_io_qpairs;
	if (io_qpairs == 0) {
		__atomic_store_n(&ctrlr->state, NVME_CTRLR_DETACHING, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctrlr->lock);
	if (io_qpairs > 0) {
		return -EBUSY;
	}
	ctrlr->detach_cb = cb;
	ctrlr->detach_cb_arg = cb_arg;
	ctrlr->gen++;
	publish_session(ctrlr, false);
	stop_timers(ctrlr);

	if (prev == NVME_CTRLR_CONNECTED && ctrlr->step == INIT_DONE &&
	    nvme_qpair_is_connected(ctrlr->admin)) {
		/*
		 * A clean shutdown tells the target to flush and forget us at once;
		 * one that does not answer gets shutdown_timeout_ms, not the
		 * command timeout (a stalled target must not hold up a SIGTERM).
		 */
		ctrlr->init_deadline = ticks_get() +
				       us_to_ticks(1000ull * ctrlr->opts.shutdown_timeout_ms);
		ctrlr->shutdown_poller = poller_register(shutdown_expired, ctrlr,
							 1000ull * ctrlr->opts.shutdown_timeout_ms,
							 "nvme_shutdown");
		run_step(ctrlr, SHUTDOWN_SET_CC);
		return 0;
	}
	ctrlr_finish_detach(ctrlr);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* I/O queue pairs                                                          */
/* ------------------------------------------------------------------------ */

struct io_failure_msg {
	struct nvme_ctrlr *ctrlr;
	uint32_t gen;
	char reason[160];
};

static void
io_failure_msg(void *ctx)
{
	struct io_failure_msg *msg = ctx;
	struct nvme_ctrlr *ctrlr = msg->ctrlr;

	if (ctrlr->state == NVME_CTRLR_CONNECTED && msg->gen == ctrlr->gen) {
		ctrlr_reset(ctrlr, msg->reason);
	}
	free(msg);
	nvme_ctrlr_put_ref(ctrlr);
}

/* Reset the controller of association `gen` (any thread), unless that association is gone. */
static void
reset_gen(struct nvme_ctrlr *ctrlr, uint32_t gen, const char *what, const char *reason)
{
	struct io_failure_msg *msg;

	msg = malloc(sizeof(*msg));
	if (msg == NULL) {
		return;
	}
	msg->ctrlr = ctrlr;
	msg->gen = gen;
	snprintf(msg->reason, sizeof(msg->reason), "%s%s", what, reason);
	nvme_ctrlr_get_ref(ctrlr);
	if (thread_send_msg(ctrlr->thread, io_failure_msg, msg) != 0) {
		free(msg);
		nvme_ctrlr_put_ref(ctrlr);
	}
}

void
nvme_ctrlr_report_io_failure(struct nvme_ctrlr *ctrlr, uint32_t gen, const char *reason)
{
	reset_gen(ctrlr, gen, "I/O queue: ", reason);
}

void
nvme_ctrlr_request_reset(struct nvme_ctrlr *ctrlr, const char *reason)
{
	uint64_t s = load_session(ctrlr);

	if ((s & NVME_SESSION_LIVE) == 0) {
		/* Already lost: its I/O has failed, and it is reconnecting. */
		return;
	}
	reset_gen(ctrlr, NVME_SESSION_GEN(s), "", reason);
}

static void
io_connect_done(struct nvme_qpair *qp, int rc)
{
	if (rc != 0) {
		/* The controller decides: a reset makes every queue start over together. */
		DEBUGLOG(nvme, "%s: connect failed: %s\n", qp->name, qp->fail_reason);
		nvme_ctrlr_report_io_failure(qp->ctrlr, qp->gen, qp->fail_reason);
	}
}

static void
io_lost(struct nvme_qpair *qp, int rc)
{
	DEBUGLOG(nvme, "%s: I/O queue lost: %s\n", qp->name, qp->fail_reason);
	nvme_ctrlr_report_io_failure(qp->ctrlr, qp->gen, qp->fail_reason);
}

static void
io_destroyed(struct nvme_qpair *qp)
{
	struct nvme_ctrlr *ctrlr = qp->ctrlr;

	pthread_mutex_lock(&ctrlr->lock);
	ctrlr->qid_used[qp->qid] = 0;
	ctrlr->num_io_qpairs--;
	pthread_mutex_unlock(&ctrlr->lock);
	nvme_ctrlr_put_ref(ctrlr);
}

bool
nvme_ctrlr_io_qpair_kick(struct nvme_qpair *qp)
{
	uint64_t s = load_session(qp->ctrlr);
	int rc;

	if (qp->state != QPAIR_DISCONNECTED || (s & NVME_SESSION_LIVE) == 0) {
		return qp->state == QPAIR_CONNECTING;
	}
	if (qp->has_failed && qp->failed_gen == NVME_SESSION_GEN(s)) {
		/* This queue failed in the current association: wait for the controller's reset. */
		return false;
	}
	rc = nvme_qpair_connect(qp, NVME_SESSION_CNTLID(s), NVME_SESSION_GEN(s));
	if (rc != 0) {
		DEBUGLOG(nvme, "%s: cannot start connecting: %s\n", qp->name, strerror(-rc));
		nvme_ctrlr_report_io_failure(qp->ctrlr, NVME_SESSION_GEN(s), strerror(-rc));
		return false;
	}
	return true;
}

void
nvme_ctrlr_io_qpair_poll(struct nvme_qpair *qp)
{
	uint64_t s = load_session(qp->ctrlr);

	if (qp->state != QPAIR_DISCONNECTED &&
	    ((s & NVME_SESSION_LIVE) == 0 || NVME_SESSION_GEN(s) != qp->gen)) {
		/* The controller was reset: this queue belongs to the dead association. */
		nvme_qpair_disconnect(qp, NVME_STATUS_HOST_PATH_ERROR);
		return;
	}
	if (qp->state == QPAIR_DISCONNECTED && (s & NVME_SESSION_LIVE) != 0) {
		nvme_ctrlr_io_qpair_kick(qp);
	}
}

uint32_t
nvme_ctrlr_io_icd_size(const struct nvme_ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr->io_icd_size, __ATOMIC_RELAXED);
}

struct nvme_qpair *
nvme_ctrlr_alloc_io_qpair(struct nvme_ctrlr *ctrlr)
{
	struct nvme_qpair *qp;
	uint32_t qid = 0, i;

	pthread_mutex_lock(&ctrlr->lock);
	if (__atomic_load_n(&ctrlr->state, __ATOMIC_ACQUIRE) == NVME_CTRLR_DETACHING) {
		pthread_mutex_unlock(&ctrlr->lock);
		errno = ENODEV;
		return NULL;
	}
	for (i = 1; i <= ctrlr->qid_slots; i++) {
		if (ctrlr->qid_used[i] == 0) {
			qid = i;
			ctrlr->qid_used[i] = 1;
			ctrlr->num_io_qpairs++;
			break;
		}
	}
	pthread_mutex_unlock(&ctrlr->lock);
	if (qid == 0) {
		ERRLOG("nvme %s: all %u I/O queues are in use\n", ctrlr->name, ctrlr->qid_slots);
		errno = EBUSY;
		return NULL;
	}
	nvme_ctrlr_get_ref(ctrlr);
	qp = nvme_qpair_create(ctrlr, (uint16_t)qid, (uint16_t)ctrlr->io_queue_size, false);
	if (qp == NULL) {
		pthread_mutex_lock(&ctrlr->lock);
		ctrlr->qid_used[qid] = 0;
		ctrlr->num_io_qpairs--;
		pthread_mutex_unlock(&ctrlr->lock);
		nvme_ctrlr_put_ref(ctrlr);
		errno = ENOMEM;
		return NULL;
	}
	qp->connect_done = io_connect_done;
	qp->lost = io_lost;
	qp->destroyed = io_destroyed;
	nvme_ctrlr_io_qpair_kick(qp);
	return qp;
}

void
nvme_ctrlr_free_io_qpair(struct nvme_qpair *qp)
{
	if (qp != NULL) {
		nvme_qpair_destroy(qp);
	}
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                */
/* ------------------------------------------------------------------------ */

enum nvme_ctrlr_state
nvme_ctrlr_get_state(const struct nvme_ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr->state, __ATOMIC_ACQUIRE);
}

const char *
nvme_ctrlr_state_name(enum nvme_ctrlr_state state)
{
	switch (state) {
	case NVME_CTRLR_CONNECTING:
		return "connecting";
	case NVME_CTRLR_CONNECTED:
		return "connected";
	case NVME_CTRLR_RECONNECTING:
		return "reconnecting";
	case NVME_CTRLR_DETACHING:
		return "detaching";
	}
	return "unknown";
}

const struct nvme_transport_id *
nvme_ctrlr_get_trid(const struct nvme_ctrlr *ctrlr)
{
	return &ctrlr->trid;
}

const struct nvme_ctrlr_opts *
nvme_ctrlr_get_opts(const struct nvme_ctrlr *ctrlr)
{
	return &ctrlr->opts;
}

uint16_t
nvme_ctrlr_get_cntlid(const struct nvme_ctrlr *ctrlr)
{
	uint64_t s = load_session(ctrlr);

	return (s & NVME_SESSION_LIVE) != 0 ? NVME_SESSION_CNTLID(s) : 0;
}

const struct nvme_identify_ctrlr *
nvme_ctrlr_get_data(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->cdata;
}

uint32_t
nvme_ctrlr_get_max_xfer_size(const struct nvme_ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr->max_xfer_size, __ATOMIC_RELAXED);
}

uint32_t
nvme_ctrlr_get_num_io_queues(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->num_io_queues;
}

uint64_t
nvme_ctrlr_get_reconnect_count(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->reconnect_count;
}

void
nvme_ctrlr_set_reconnect_cb(struct nvme_ctrlr *ctrlr, nvme_ctrlr_reconnect_cb cb, void *cb_arg)
{
	ctrlr->reconnect_cb = cb;
	ctrlr->reconnect_cb_arg = cb_arg;
}

uint32_t
nvme_ctrlr_get_num_ns(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->num_ns;
}

struct nvme_ns *
nvme_ctrlr_get_ns_by_index(struct nvme_ctrlr *ctrlr, uint32_t index)
{
	return index < ctrlr->num_ns ? &ctrlr->ns[index] : NULL;
}

struct nvme_ns *
nvme_ctrlr_get_ns(struct nvme_ctrlr *ctrlr, uint32_t nsid)
{
	uint32_t i;

	for (i = 0; i < ctrlr->num_ns; i++) {
		if (ctrlr->ns[i].info.nsid == nsid) {
			return &ctrlr->ns[i];
		}
	}
	return NULL;
}

const struct nvme_ns_info *
nvme_ns_get_info(const struct nvme_ns *ns)
{
	return &ns->info;
}

struct nvme_ctrlr *
nvme_ns_get_ctrlr(const struct nvme_ns *ns)
{
	return ns->ctrlr;
}
