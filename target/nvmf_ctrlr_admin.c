/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Admin commands: Identify, Get Log Page, Set/Get Features, Keep Alive,
 * Asynchronous Event Request, Abort. App thread only; every command but a
 * held AER completes before returning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/util.h"

#include "nvmf_internal.h"

#define INVALID_FIELD STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD)
#define INVALID_NS    STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_NAMESPACE_OR_FORMAT)

static bool
is_discovery(const struct nvmf_ctrlr *ctrlr)
{
	return ctrlr->subsys->subtype == NVMF_SUBTYPE_DISCOVERY;
}

size_t
nvmf_request_copy_to(struct nvmf_request *req, const void *buf, size_t len)
{
	size_t n = GGA_MIN(len, (size_t)req->length), done, off = 0;
	int i;

	done = iov_from_buf(req->iov, req->iovcnt, buf, n);
	/* Zero what the command asked for beyond the data we have. */
	for (i = 0; i < req->iovcnt; i++) {
		size_t seg = req->iov[i].iov_len;

		if (off + seg > done) {
			size_t skip = done > off ? done - off : 0;

			memset((uint8_t *)req->iov[i].iov_base + skip, 0, seg - skip);
		}
		off += seg;
	}
	return done;
}

size_t
nvmf_request_copy_from(struct nvmf_request *req, void *buf, size_t len)
{
	return iov_to_buf(req->iov, req->iovcnt, buf, GGA_MIN(len, (size_t)req->length));
}

/*
 * Identify.
 */

void
nvmf_identify_ctrlr_fill(const struct nvmf_ctrlr *ctrlr, struct nvme_identify_ctrlr *id)
{
	const struct nvmf_subsystem *subsys = ctrlr->subsys;
	const struct nvmf_transport_opts *opts = &ctrlr->transport->opts;
	bool disc = is_discovery(ctrlr);
	uint32_t pages = opts->max_io_size / 4096;

	memset(id, 0, sizeof(*id));
	nvme_str_pad(id->sn, sizeof(id->sn), disc ? NVMF_DEFAULT_SN : subsys->sn);
	nvme_str_pad(id->mn, sizeof(id->mn), disc ? NVMF_DEFAULT_MN : subsys->mn);
	nvme_str_pad(id->fr, sizeof(id->fr), NVMF_FW_REVISION);
	id->rab = 6;
	id->cmic = NVME_CMIC_MULTI_CTRLR;
	/* MDTS counts 4 KiB pages (CAP.MPSMIN) and includes interleaved metadata. */
	id->mdts = pages > 0 ? (uint8_t)u64log2(pages) : 0;
	id->cntlid = ctrlr->cntlid;
	id->ver = ctrlr->regs.vs;
	id->oaes = disc ? NVME_OAES_DISCOVERY_LOG_NOTICE : NVME_OAES_NS_ATTR_NOTICE;
	id->ctratt = 1; /* 128-bit host identifier */
	id->cntrltype = disc ? NVME_CNTRLTYPE_DISCOVERY : NVME_CNTRLTYPE_IO;
	id->acl = NVMF_MAX_ABORTS - 1;
	id->aerl = NVMF_MAX_AER - 1;
	id->frmw = 0x3; /* one slot, read-only */
	id->lpa = NVME_LPA_EXTENDED_DATA |
		  (disc ? 0 : NVME_LPA_COMMAND_EFFECTS | NVME_LPA_SMART_PER_NS);
	if (!disc) {
		id->wctemp = NVMF_WCTEMP_K;
		id->cctemp = NVMF_CCTEMP_K;
	}
	id->elpe = disc ? 0 : NVMF_ERR_LOG_ENTRIES - 1;
	id->kas = NVMF_KAS;
	id->sqes = 0x66;
	id->cqes = 0x44;
	id->maxcmd = (uint16_t)opts->max_queue_depth;
	id->nn = disc ? 0 : subsys->max_nsid;
	id->oncs = disc ? 0 : NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES | NVME_ONCS_RESERVATIONS;
	id->vwc = disc ? 0 : NVME_VWC_PRESENT;
	id->sgls = ctrlr->transport->ops->sgls;
	memcpy(id->subnqn, subsys->nqn, strnlen(subsys->nqn, sizeof(id->subnqn)));
	id->ioccsz = (NVME_SQE_SIZE + opts->in_capsule_data_size) / 16;
	id->iorcsz = NVME_CQE_SIZE / 16;
	id->icdoff = 0;
	id->fcatt = 0; /* dynamic controller model */
	id->msdbd = 1;
	if (!disc && subsys->ana_reporting) {
		id->cmic |= NVME_CMIC_ANA_REPORTING;
		id->oaes |= NVME_OAES_ANA_CHANGE_NOTICE;
		/* A state changes at once: the transition time is a bound, not a wait. */
		id->anatt = NVMF_ANATT_SEC;
		/* The five states; ANAGRPID fixed while attached (6); non-zero ids (7). */
		id->anacap = 0x1f | (1u << 6) | (1u << 7);
		id->anagrpmax = subsys->max_nsid;
		id->nanagrpid = subsys->max_nsid;
		/* Linux sizes its ANA log buffer with MNAN and refuses 0 with ANA. */
		id->mnan = subsys->max_nsid;
	}
}

void
nvmf_identify_ns_fill(const struct nvmf_ns *ns, struct nvme_identify_ns *id)
{
	struct bdev_space space = { .thin = false };

	memset(id, 0, sizeof(*id));
	id->nsze = ns->num_blocks;
	id->ncap = ns->num_blocks;
	id->nuse = ns->num_blocks;
	if (ns->bdev != NULL) {
		bdev_get_space(ns->bdev, &space);
	}
	if (space.thin) {
		/* Asked at each Identify: NUSE follows writes and deallocations. */
		id->nsfeat |= NVME_NSFEAT_THIN_PROV;
		id->ncap = GGA_MIN(space.capacity_blocks, ns->num_blocks);
		id->nuse = GGA_MIN(space.used_blocks, id->ncap);
		if (space.dealloc_zeroes && bdev_io_type_supported(ns->bdev, BDEV_IO_TYPE_UNMAP)) {
			id->dlfeat = NVME_DLFEAT_READ_ZEROES | NVME_DLFEAT_WZ_DEALLOC;
		}
	}
	id->nlbaf = 0;
	/*
	 * One format: the bdev's geometry. Metadata is interleaved at the end of
	 * each block (extended LBA), exactly the bdev layer's buffer layout, so a
	 * transfer is nlb * (block_size + md_size) bytes.
	 */
	id->flbas = ns->md_size > 0 ? NVME_FLBAS_EXTENDED : 0;
	id->mc = ns->md_size > 0 ? NVME_MC_EXTENDED : 0;
	id->nmic = 1; /* may be shared by several controllers */
	id->rescap = nvmf_ns_resv_rescap(ns);
	if (ns->subsys->ana_reporting) {
		id->anagrpid = ns->anagrpid;
	}
	id->lbaf[0] = NVME_LBAF(ns->md_size, u64log2(ns->block_size), 0);
	memcpy(id->nguid, ns->uuid, sizeof(id->nguid));
}

size_t
nvmf_ns_id_desc_fill(const struct nvmf_ns *ns, uint8_t *buf, size_t len)
{
	struct nvme_ns_id_desc *d;
	size_t off = 0;

	memset(buf, 0, len);
	if (len < 3 * sizeof(*d) + 16 + 16 + 1 + sizeof(*d)) {
		return 0;
	}
	d = (struct nvme_ns_id_desc *)buf;
	d->nidt = NVME_NIDT_NGUID;
	d->nidl = 16;
	memcpy(d->nid, ns->uuid, 16);
	off += sizeof(*d) + 16;
	d = (struct nvme_ns_id_desc *)(buf + off);
	d->nidt = NVME_NIDT_UUID;
	d->nidl = 16;
	memcpy(d->nid, ns->uuid, 16);
	off += sizeof(*d) + 16;
	d = (struct nvme_ns_id_desc *)(buf + off);
	d->nidt = NVME_NIDT_CSI;
	d->nidl = 1;
	d->nid[0] = 0; /* NVM command set */
	off += sizeof(*d) + 1;
	return off;
}

static uint16_t
identify(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	uint8_t cns = (uint8_t)(req->cmd.cdw10 & 0xff);
	uint32_t nsid = req->cmd.nsid, i, n = 0;
	union {
		struct nvme_identify_ctrlr ctrlr;
		struct nvme_identify_ns ns;
		uint32_t list[NVME_IDENTIFY_DATA_SIZE / 4];
		uint8_t raw[NVME_IDENTIFY_DATA_SIZE];
	} * data;
	const struct nvmf_ns *ns;
	uint16_t status = 0;

	if (req->xfer != NVME_XFER_CTRLR_TO_HOST || req->length == 0) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID);
	}
	if (is_discovery(ctrlr) && cns != NVME_CNS_CTRLR) {
		return INVALID_FIELD;
	}
	data = calloc(1, sizeof(*data));
	if (data == NULL) {
		return nvmf_errno_to_status(-ENOMEM);
	}
	switch (cns) {
	case NVME_CNS_CTRLR:
		nvmf_identify_ctrlr_fill(ctrlr, &data->ctrlr);
		break;
	case NVME_CNS_NS:
		if (nsid == 0 || nsid > ctrlr->subsys->max_nsid) {
			status = INVALID_NS;
			break;
		}
		/* An inactive namespace id reads as zeros. */
		ns = nvmf_subsystem_get_ns(ctrlr->subsys, nsid);
		if (ns != NULL && !ns->removing) {
			nvmf_identify_ns_fill(ns, &data->ns);
		}
		break;
	case NVME_CNS_ACTIVE_NS_LIST:
		if (nsid >= 0xfffffffeu) {
			status = INVALID_NS;
			break;
		}
		for (i = nsid + 1; i <= ctrlr->subsys->max_nsid && n < ARRAY_SIZE(data->list);
		     i++) {
			ns = nvmf_subsystem_get_ns(ctrlr->subsys, i);
			if (ns != NULL && !ns->removing) {
				data->list[n++] = i;
			}
		}
		break;
	case NVME_CNS_NS_ID_DESCRIPTORS:
		ns = nvmf_subsystem_get_ns(ctrlr->subsys, nsid);
		if (ns == NULL || ns->removing) {
			status = INVALID_NS;
			break;
		}
		nvmf_ns_id_desc_fill(ns, data->raw, sizeof(data->raw));
		break;
	default:
		status = INVALID_FIELD;
		break;
	}
	if (status == 0) {
		nvmf_request_copy_to(req, data, sizeof(*data));
	}
	free(data);
	return status;
}

/*
 * Get Log Page.
 */

/*
 * The ANA log page as ctrlr sees it: a 16-byte header (change count, group
 * descriptors), then one 32-byte descriptor per ANA group that has
 * namespaces (id, namespace count, change count, state), each followed by
 * its NSIDs unless rgo (Return Groups Only).
 */
void *
nvmf_ana_log_build(const struct nvmf_ctrlr *ctrlr, bool rgo, size_t *len)
{
	const struct nvmf_subsystem *subsys = ctrlr->subsys;
	const struct nvmf_ns *ns;
	uint32_t g, i, n, ngrps = 0;
	size_t off = 16, cap = 16 + (size_t)subsys->max_nsid * (32 + 4);
	uint8_t *log = calloc(1, cap), *d;

	if (log == NULL) {
		return NULL;
	}
	for (g = 1; g <= subsys->max_nsid; g++) {
		d = log + off;
		n = 0;
		for (i = 1; i <= subsys->max_nsid; i++) {
			ns = nvmf_subsystem_get_ns(subsys, i);
			if (ns == NULL || ns->removing || ns->anagrpid != g) {
				continue;
			}
			if (!rgo) {
				memcpy(d + 32 + 4 * n, &i, 4);
			}
			n++;
		}
		if (n == 0) {
			continue;
		}
		memcpy(d, &g, 4);
		memcpy(d + 4, rgo ? &(uint32_t){ 0 } : &n, 4);
		memcpy(d + 8, &subsys->ana_chgcnt, 8);
		d[16] = nvmf_ctrlr_group_ana_state(ctrlr, g);
		off += 32 + (rgo ? 0 : 4 * (size_t)n);
		ngrps++;
	}
	memcpy(log, &subsys->ana_chgcnt, 8);
	memcpy(log + 8, &(uint16_t){ (uint16_t)ngrps }, 2);
	*len = off;
	return log;
}

/* Copy log[offset, offset + req->length) out; beyond the log, zeros. */
static uint16_t
log_copy(struct nvmf_request *req, const void *log, size_t log_len, uint64_t offset)
{
	if (offset > log_len) {
		return INVALID_FIELD;
	}
	nvmf_request_copy_to(req, (const uint8_t *)log + offset, log_len - (size_t)offset);
	return 0;
}

static uint16_t resv_notif_log(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, bool rae,
			       uint64_t offset);

/*
 * Error Information (01h): the entries kept, newest first, then zeros.
 * Reading it changes nothing (entries are not consumed).
 */
static uint16_t
error_log(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, uint64_t offset)
{
	struct nvme_error_log_entry log[NVMF_ERR_LOG_ENTRIES] = { 0 };
	uint64_t n, i;

	pthread_mutex_lock(&ctrlr->err_lock);
	n = GGA_MIN(ctrlr->err_count, (uint64_t)NVMF_ERR_LOG_ENTRIES);
	for (i = 0; i < n; i++) {
		log[i] = ctrlr->err_log[(ctrlr->err_count - 1 - i) % NVMF_ERR_LOG_ENTRIES];
	}
	pthread_mutex_unlock(&ctrlr->err_lock);
	return log_copy(req, log, sizeof(log), offset);
}

/* The starting LBA of the NVM commands that have one (others: 0). */
static uint64_t
cmd_slba(const struct nvme_cmd *cmd)
{
	switch (cmd->opc) {
	case NVME_OPC_READ:
	case NVME_OPC_WRITE:
	case NVME_OPC_WRITE_ZEROES:
		return (uint64_t)cmd->cdw10 | (uint64_t)cmd->cdw11 << 32;
	default:
		return 0;
	}
}

void
nvmf_ctrlr_error_record(struct nvmf_ctrlr *ctrlr, const struct nvmf_request *req)
{
	struct nvme_error_log_entry *e;
	uint16_t status = req->rsp.status & (uint16_t)~NVME_STATUS_P;

	/* Commands a queue's teardown ends are not errors of the command. */
	if (status == NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_SQ_DELETION)) {
		return;
	}
	pthread_mutex_lock(&ctrlr->err_lock);
	e = &ctrlr->err_log[ctrlr->err_count % NVMF_ERR_LOG_ENTRIES];
	memset(e, 0, sizeof(*e));
	e->error_count = ++ctrlr->err_count;
	e->sqid = req->qpair->qid;
	e->cid = req->cmd.cid;
	e->status = status;
	e->error_location = 0xffff; /* not known */
	e->lba = cmd_slba(&req->cmd);
	e->nsid = req->cmd.nsid;
	e->trtype = (uint8_t)req->qpair->transport->ops->trtype;
	pthread_mutex_unlock(&ctrlr->err_lock);
}

/*
 * SMART / Health (02h), controller-wide (NSID 0 or FFFFFFFFh) or of one
 * namespace. The bdevs' statistics are summed on their threads, so the
 * page is built when they are back: everything else it needs is copied
 * now, and the request is completed without the controller, which may be
 * gone by then (a host that disconnects with the command in flight).
 */
struct smart_ctx {
	struct nvmf_request *req;
	struct nvmf_feat feat;
	uint64_t offset;
	uint64_t power_on_s;
	uint64_t err_count;
	uint32_t pending;
	uint32_t n;
	struct bdev_health *health; /* [n] */
	struct bdev_io_stat *stats; /* [n] */
	struct bdev_desc **descs;   /* [n]; NULL: left out (being removed) */
};

static void
smart_desc_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	/* The descriptor closes when the statistics are back; a removal waits for that. */
	(void)type;
	(void)bdev;
	(void)ctx;
}

static void
smart_ctx_free(struct smart_ctx *ctx)
{
	free(ctx->health);
	free(ctx->stats);
	free(ctx->descs);
	free(ctx);
}

static void
smart_finish(struct smart_ctx *ctx)
{
	struct nvme_smart_log log;
	uint16_t status;
	uint32_t i;

	nvmf_smart_fill(&log, &ctx->feat, ctx->health, ctx->stats, ctx->n, ctx->power_on_s,
			ctx->err_count);
	status = log_copy(ctx->req, &log, sizeof(log), ctx->offset);
	for (i = 0; i < ctx->n; i++) {
		if (ctx->descs[i] != NULL) {
			bdev_close(ctx->descs[i]);
		}
	}
	if (status != 0) {
		nvmf_request_set_status(ctx->req, status);
	}
	nvmf_request_complete(ctx->req);
	smart_ctx_free(ctx);
}

static void
smart_put(struct smart_ctx *ctx)
{
	if (--ctx->pending == 0) {
		smart_finish(ctx);
	}
}

static void
smart_stat_done(struct bdev *bdev, struct bdev_io_stat *stat, void *cb_arg, int rc)
{
	struct smart_ctx *ctx = cb_arg;

	(void)bdev;
	if (rc != 0) {
		/* Counted as nothing rather than failing the page. */
		memset(stat, 0, sizeof(*stat));
	}
	smart_put(ctx);
}

/*
 * The namespaces a SMART log of nsid covers (all of them for 0 and
 * FFFFFFFFh), and the health of each: *list and *health get n entries (at
 * least one allocated), to be freed by the caller. Returns 0 or -ENOMEM.
 */
static int
smart_collect(const struct nvmf_subsystem *subsys, uint32_t nsid, struct nvmf_ns ***list,
	      struct bdev_health **health, uint32_t *n)
{
	struct nvmf_ns *ns, **l;
	struct bdev_health *h;
	uint32_t i, count = 0;

	l = calloc(subsys->max_nsid > 0 ? subsys->max_nsid : 1, sizeof(*l));
	h = calloc(subsys->max_nsid > 0 ? subsys->max_nsid : 1, sizeof(*h));
	if (l == NULL || h == NULL) {
		free(l);
		free(h);
		return -ENOMEM;
	}
	for (i = 1; i <= subsys->max_nsid; i++) {
		ns = nvmf_subsystem_get_ns(subsys, i);
		if (ns == NULL || ns->removing ||
		    (nsid != 0 && nsid != NVME_NSID_ALL && nsid != i)) {
			continue;
		}
		bdev_get_health(ns->bdev, &h[count]);
		l[count++] = ns;
	}
	*list = l;
	*health = h;
	*n = count;
	return 0;
}

static uint16_t
smart_log(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, bool rae, uint64_t offset, bool *held)
{
	struct nvmf_subsystem *subsys = ctrlr->subsys;
	uint32_t nsid = req->cmd.nsid, i;
	struct nvmf_ns **list = NULL;
	struct smart_ctx *ctx;

	if (nsid != 0 && nsid != NVME_NSID_ALL &&
	    (nsid > subsys->max_nsid || nvmf_subsystem_get_ns(subsys, nsid) == NULL)) {
		return INVALID_NS;
	}
	if (offset > sizeof(struct nvme_smart_log)) {
		return INVALID_FIELD;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL || smart_collect(subsys, nsid, &list, &ctx->health, &ctx->n) != 0) {
		free(ctx);
		return nvmf_errno_to_status(-ENOMEM);
	}
	ctx->stats = calloc(ctx->n > 0 ? ctx->n : 1, sizeof(*ctx->stats));
	ctx->descs = calloc(ctx->n > 0 ? ctx->n : 1, sizeof(*ctx->descs));
	if (ctx->stats == NULL || ctx->descs == NULL) {
		free(list);
		smart_ctx_free(ctx);
		return nvmf_errno_to_status(-ENOMEM);
	}
	ctx->req = req;
	ctx->feat = ctrlr->feat;
	ctx->offset = offset;
	ctx->power_on_s = (ticks_get() - g_nvmf_tgt.start_tick) / ticks_hz();
	pthread_mutex_lock(&ctrlr->err_lock);
	ctx->err_count = ctrlr->err_count;
	pthread_mutex_unlock(&ctrlr->err_lock);
	ctx->pending = 1;
	for (i = 0; i < ctx->n; i++) {
		/* A bdev being removed is left out of the counters. */
		if (bdev_open(list[i]->bdev_name, false, smart_desc_event, NULL, &ctx->descs[i]) ==
		    0) {
			ctx->pending++;
			bdev_get_iostat(bdev_desc_get_bdev(ctx->descs[i]), &ctx->stats[i],
					smart_stat_done, ctx);
		} else {
			ctx->descs[i] = NULL;
		}
	}
	free(list);
	if (!rae) {
		/* Read: the event type is unmasked, and a warning not yet sent may go now. */
		ctrlr->masked_events &= ~NVMF_EVENT_SMART;
		nvmf_ctrlr_health_check(ctrlr);
	}
	*held = true;
	smart_put(ctx);
	return 0;
}

/*
 * The critical warning of the controller's namespaces now, and the event
 * for what is new in it. A discovery or dying controller has none.
 */
void
nvmf_ctrlr_health_check(struct nvmf_ctrlr *ctrlr)
{
	struct nvmf_subsystem *subsys = ctrlr->subsys;
	struct bdev_health *health;
	struct nvmf_ns **list;
	uint32_t n;
	uint8_t warning;
	int info;

	if (is_discovery(ctrlr) || ctrlr->state != NVMF_CTRLR_LIVE) {
		return;
	}
	if (smart_collect(subsys, NVME_NSID_ALL, &list, &health, &n) != 0) {
		/* Looked at again on the next change or read of the log. */
		return;
	}
	warning = nvmf_smart_warning(&ctrlr->feat, health, n);
	free(health);
	free(list);
	if (warning != ctrlr->smart_warning) {
		NOTICELOG("nvmf: subsystem %s: controller %u: SMART critical warning 0x%02x (was "
			  "0x%02x)\n",
			  subsys->nqn, ctrlr->cntlid, warning, ctrlr->smart_warning);
		ctrlr->smart_warning = warning;
	}
	info = nvmf_smart_event(warning, ctrlr->aec, (ctrlr->masked_events & NVMF_EVENT_SMART) != 0,
				&ctrlr->smart_reported);
	if (info >= 0) {
		ctrlr->smart_aen_info = (uint8_t)info;
		nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_SMART);
	}
}

static uint16_t
get_log_page(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, bool *held)
{
	const struct nvme_cmd *cmd = &req->cmd;
	uint8_t lid = (uint8_t)(cmd->cdw10 & 0xff);
	bool rae = (cmd->cdw10 & NVME_LOG_RAE) != 0;
	uint64_t numd = (((uint64_t)(cmd->cdw11 & 0xffff) << 16) | (cmd->cdw10 >> 16)) + 1;
	uint64_t offset = (uint64_t)cmd->cdw12 | (uint64_t)cmd->cdw13 << 32;
	uint16_t status;
	size_t len;
	void *log;

	if (req->xfer != NVME_XFER_CTRLR_TO_HOST || numd * 4 != req->length) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID);
	}
	if (offset & 3) {
		return INVALID_FIELD;
	}
	if (is_discovery(ctrlr) != (lid == NVME_LOG_DISCOVERY)) {
		return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
	}
	switch (lid) {
	case NVME_LOG_ERROR:
		return error_log(req, ctrlr, offset);
	case NVME_LOG_SMART:
		return smart_log(req, ctrlr, rae, offset, held);
	case NVME_LOG_FIRMWARE_SLOT: {
		/* One read-only slot (FRMW): slot 1 active, its revision that of Identify. */
		uint8_t fw[512] = { 0 };

		fw[0] = 1; /* AFI: slot 1 active, no next reset's slot */
		nvme_str_pad((char *)fw + 8, 8, NVMF_FW_REVISION);
		return log_copy(req, fw, sizeof(fw), offset);
	}
	case NVME_LOG_COMMAND_EFFECTS: {
		uint32_t *cse = calloc(1024, sizeof(uint32_t));

		if (cse == NULL) {
			return nvmf_errno_to_status(-ENOMEM);
		}
		nvmf_cmd_effects_fill(cse, cse + 256);
		status = log_copy(req, cse, 1024 * sizeof(uint32_t), offset);
		free(cse);
		return status;
	}
	case NVME_LOG_CHANGED_NS_LIST: {
		struct nvme_changed_ns_list *list = calloc(1, sizeof(*list));

		if (list == NULL) {
			return nvmf_errno_to_status(-ENOMEM);
		}
		if (ctrlr->changed_ns_overflow) {
			list->ns_list[0] = 0xffffffffu;
		} else {
			memcpy(list->ns_list, ctrlr->changed_ns,
			       ctrlr->num_changed_ns * sizeof(uint32_t));
		}
		status = log_copy(req, list, sizeof(*list), offset);
		free(list);
		if (status == 0 && !rae) {
			ctrlr->num_changed_ns = 0;
			ctrlr->changed_ns_overflow = false;
			ctrlr->masked_events &= ~NVMF_EVENT_NS_CHANGED;
		}
		return status;
	}
	case NVME_LOG_ANA:
		if (!ctrlr->subsys->ana_reporting) {
			return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
		}
		log = nvmf_ana_log_build(ctrlr, (cmd->cdw10 & NVME_LOG_ANA_LSP_RGO) != 0, &len);
		if (log == NULL) {
			return nvmf_errno_to_status(-ENOMEM);
		}
		status = log_copy(req, log, len, offset);
		free(log);
		if (status == 0 && !rae) {
			ctrlr->masked_events &= ~NVMF_EVENT_ANA_CHANGED;
		}
		return status;
	case NVME_LOG_RESERVATION_NOTIFICATION:
		return resv_notif_log(req, ctrlr, rae, offset);
	case NVME_LOG_DISCOVERY:
		log = nvmf_discovery_log_build(ctrlr->hostnqn, &len);
		if (log == NULL) {
			return nvmf_errno_to_status(-ENOMEM);
		}
		status = log_copy(req, log, len, offset);
		free(log);
		if (status == 0 && !rae) {
			ctrlr->masked_events &= ~NVMF_EVENT_DISCOVERY_CHANGED;
		}
		return status;
	default:
		return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_INVALID_LOG_PAGE);
	}
}

/*
 * Features.
 */

static uint32_t
num_queues_value(const struct nvmf_ctrlr *ctrlr)
{
	uint32_t n = ctrlr->max_io_qpairs > 0 ? ctrlr->max_io_qpairs - 1 : 0;

	return NVME_FEAT_NUM_QUEUES(n, n);
}

static uint32_t
default_aec(const struct nvmf_ctrlr *ctrlr)
{
	return is_discovery(ctrlr) ? NVME_AEC_DISCOVERY_LOG_NOTICE : NVME_AEC_NS_ATTR_NOTICE;
}

static uint16_t
set_features(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	uint8_t fid = (uint8_t)(req->cmd.cdw10 & 0xff);
	uint32_t cdw11 = req->cmd.cdw11;
	bool disc = is_discovery(ctrlr);
	struct nvmf_ns *ns;

	uint16_t status;

	if (req->cmd.cdw10 & NVME_FEAT_SAVE) {
		return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_FEATURE_ID_NOT_SAVEABLE);
	}
	status = disc ? NVMF_FEAT_NOT_MINE : nvmf_feat_set(&ctrlr->feat, fid, cdw11);
	if (status != NVMF_FEAT_NOT_MINE) {
		if (status == 0 && fid == NVME_FEAT_TEMPERATURE_THRESHOLD) {
			/* A threshold the temperature is now past is a warning, and an event. */
			nvmf_ctrlr_health_check(ctrlr);
		}
		return status;
	}
	switch (fid) {
	case NVME_FEAT_NUMBER_OF_QUEUES:
		if (disc) {
			return INVALID_FIELD;
		}
		if (ctrlr->io_qpairs_seen) {
			return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_COMMAND_SEQUENCE_ERROR);
		}
		if ((cdw11 & 0xffff) == 0xffff || (cdw11 >> 16) == 0xffff) {
			return INVALID_FIELD;
		}
		ctrlr->num_queues_requested = cdw11;
		req->rsp.cdw0 = num_queues_value(ctrlr);
		return 0;
	case NVME_FEAT_ASYNC_EVENT_CONFIG:
		ctrlr->aec = cdw11 & (disc ? NVME_AEC_DISCOVERY_LOG_NOTICE :
					     NVME_AEC_NS_ATTR_NOTICE | NVME_AEC_SMART_MASK |
						      (ctrlr->subsys->ana_reporting ?
							       NVME_AEC_ANA_CHANGE_NOTICE :
							       0));
		/* A warning whose event was off until now is sent now. */
		nvmf_ctrlr_health_check(ctrlr);
		return 0;
	case NVME_FEAT_KEEP_ALIVE_TIMER:
		if (nvmf_ctrlr_set_kato(ctrlr, cdw11) != 0) {
			return nvmf_errno_to_status(-ENOMEM);
		}
		return 0;
	case NVME_FEAT_VOLATILE_WRITE_CACHE:
		/* Writes always reach the bdev; Flush is passed through either way. */
		return disc ? INVALID_FIELD : 0;
	case NVME_FEAT_RESERVATION_PERSIST:
		ns = disc ? NULL : nvmf_subsystem_get_ns(ctrlr->subsys, req->cmd.nsid);
		if (ns == NULL) {
			return disc ? INVALID_FIELD : INVALID_NS;
		}
		return nvmf_ns_resv_set_ptpl(ns, cdw11 & 1u);
	case NVME_FEAT_RESERVATION_NOTIF_MASK:
		if (disc) {
			return INVALID_FIELD;
		}
		if (req->cmd.nsid == NVME_NSID_ALL) {
			memset(ctrlr->resv_mask, (int)(cdw11 & NVME_RESV_NOTIF_MASK_ALL),
			       ctrlr->subsys->max_nsid);
			return 0;
		}
		if (nvmf_subsystem_get_ns(ctrlr->subsys, req->cmd.nsid) == NULL) {
			return INVALID_NS;
		}
		ctrlr->resv_mask[req->cmd.nsid - 1] = (uint8_t)(cdw11 & NVME_RESV_NOTIF_MASK_ALL);
		return 0;
	default:
		return INVALID_FIELD;
	}
}

static uint16_t
get_features(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	uint8_t fid = (uint8_t)(req->cmd.cdw10 & 0xff);
	uint32_t sel = (req->cmd.cdw10 & NVME_FEAT_SEL_MASK) >> NVME_FEAT_SEL_SHIFT;
	bool disc = is_discovery(ctrlr);
	bool current = sel == NVME_FEAT_SEL_CURRENT;
	struct nvmf_ns *ns;
	uint32_t value;

	uint16_t status;

	if (sel > NVME_FEAT_SEL_SUPPORTED) {
		return INVALID_FIELD;
	}
	status = disc ? NVMF_FEAT_NOT_MINE :
			nvmf_feat_get(&ctrlr->feat, fid, sel, req->cmd.cdw11, &req->rsp.cdw0);
	if (status != NVMF_FEAT_NOT_MINE) {
		return status;
	}
	switch (fid) {
	case NVME_FEAT_NUMBER_OF_QUEUES:
		if (disc) {
			return INVALID_FIELD;
		}
		value = num_queues_value(ctrlr);
		break;
	case NVME_FEAT_ASYNC_EVENT_CONFIG:
		value = current ? ctrlr->aec : default_aec(ctrlr);
		break;
	case NVME_FEAT_KEEP_ALIVE_TIMER:
		value = current ? ctrlr->kato_ms : 0;
		break;
	case NVME_FEAT_VOLATILE_WRITE_CACHE:
		if (disc) {
			return INVALID_FIELD;
		}
		value = 1;
		break;
	case NVME_FEAT_RESERVATION_PERSIST:
		ns = disc ? NULL : nvmf_subsystem_get_ns(ctrlr->subsys, req->cmd.nsid);
		if (ns == NULL) {
			return disc ? INVALID_FIELD : INVALID_NS;
		}
		/* Default: off; per namespace (bit 1), changeable (bit 2). */
		nvmf_ns_resv_get_ptpl(ns, &value);
		req->rsp.cdw0 = sel == NVME_FEAT_SEL_SUPPORTED ? (1u << 1) | (1u << 2) :
				current                        ? value :
								 0;
		return 0;
	case NVME_FEAT_HOST_IDENTIFIER:
		/*
		 * The one from Connect, 128 bits (CTRATT bit 0): a 64-bit one
		 * (EXHID 0) is Invalid Field. It cannot be set over fabrics.
		 */
		if (disc || !(req->cmd.cdw11 & 1u)) {
			return INVALID_FIELD;
		}
		if (req->xfer != NVME_XFER_CTRLR_TO_HOST || req->length < sizeof(ctrlr->hostid)) {
			return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID);
		}
		nvmf_request_copy_to(req, ctrlr->hostid, sizeof(ctrlr->hostid));
		req->rsp.cdw0 = sel == NVME_FEAT_SEL_SUPPORTED ? 0 : 1; /* EXHID */
		return 0;
	case NVME_FEAT_RESERVATION_NOTIF_MASK:
		if (disc || nvmf_subsystem_get_ns(ctrlr->subsys, req->cmd.nsid) == NULL) {
			return disc ? INVALID_FIELD : INVALID_NS;
		}
		value = ctrlr->resv_mask[req->cmd.nsid - 1];
		req->rsp.cdw0 = sel == NVME_FEAT_SEL_SUPPORTED ? (1u << 1) | (1u << 2) :
				current                        ? value :
								 0;
		return 0;
	default:
		return INVALID_FIELD;
	}
	/* Supported capabilities: changeable (bit 2), neither saveable nor per namespace. */
	req->rsp.cdw0 = sel == NVME_FEAT_SEL_SUPPORTED ? (1u << 2) : value;
	return 0;
}

/*
 * Asynchronous events.
 */

static void
aer_try_complete(struct nvmf_ctrlr *ctrlr)
{
	struct nvmf_request *req;
	uint32_t ev;

	while (ctrlr->pending_events != 0 && ctrlr->num_aer > 0) {
		ev = ctrlr->pending_events & (uint32_t) - (int32_t)ctrlr->pending_events;
		ctrlr->pending_events &= ~ev;
		ctrlr->masked_events |= ev;
		req = ctrlr->aer[--ctrlr->num_aer];
		ctrlr->aer[ctrlr->num_aer] = NULL;
		if (ev == NVMF_EVENT_NS_CHANGED) {
			req->rsp.cdw0 = NVME_AER_CDW0(NVME_AER_TYPE_NOTICE,
						      NVME_AER_NOTICE_NS_ATTR_CHANGED,
						      NVME_LOG_CHANGED_NS_LIST);
		} else if (ev == NVMF_EVENT_ANA_CHANGED) {
			req->rsp.cdw0 = NVME_AER_CDW0(NVME_AER_TYPE_NOTICE,
						      NVME_AER_NOTICE_ANA_CHANGE, NVME_LOG_ANA);
		} else if (ev == NVMF_EVENT_SMART) {
			req->rsp.cdw0 = NVME_AER_CDW0(NVME_AER_TYPE_SMART, ctrlr->smart_aen_info,
						      NVME_LOG_SMART);
		} else if (ev == NVMF_EVENT_RESV_LOG) {
			req->rsp.cdw0 = NVME_AER_CDW0(NVME_AER_TYPE_IO_CMD_SET,
						      NVME_AER_IO_RESV_LOG_AVAILABLE,
						      NVME_LOG_RESERVATION_NOTIFICATION);
		} else {
			req->rsp.cdw0 = NVME_AER_CDW0(NVME_AER_TYPE_NOTICE,
						      NVME_AER_NOTICE_DISCOVERY_LOG,
						      NVME_LOG_DISCOVERY);
		}
		DEBUGLOG(nvmf, "controller %u: asynchronous event 0x%x\n", ctrlr->cntlid,
			 req->rsp.cdw0);
		nvmf_request_complete(req);
	}
}

void
nvmf_ctrlr_event_post(struct nvmf_ctrlr *ctrlr, uint32_t event)
{
	uint32_t enable = event == NVMF_EVENT_NS_CHANGED  ? NVME_AEC_NS_ATTR_NOTICE :
			  event == NVMF_EVENT_ANA_CHANGED ? NVME_AEC_ANA_CHANGE_NOTICE :
							    NVME_AEC_DISCOVERY_LOG_NOTICE;

	/*
	 * Reported once until the host reads the log page that clears it.
	 * Reservation notifications have no AEC bit: Feature 82h masks them at
	 * the source. SMART events have one per warning bit: nvmf_smart_event
	 * checks them.
	 */
	if ((event != NVMF_EVENT_RESV_LOG && event != NVMF_EVENT_SMART && !(ctrlr->aec & enable)) ||
	    (ctrlr->masked_events & event)) {
		return;
	}
	ctrlr->pending_events |= event;
	aer_try_complete(ctrlr);
}

void
nvmf_ctrlr_resv_notify(struct nvmf_ctrlr *ctrlr, uint32_t nsid, uint8_t type)
{
	uint32_t tail;

	if (ctrlr->resv_mask == NULL || nsid == 0 || nsid > ctrlr->subsys->max_nsid ||
	    (ctrlr->resv_mask[nsid - 1] & (1u << type))) {
		return;
	}
	/* Counted even when the queue is full: the host sees the gap in the count. */
	ctrlr->resv_log_count++;
	if (ctrlr->resv_notif_len == NVMF_RESV_NOTIF_MAX) {
		return;
	}
	tail = (ctrlr->resv_notif_head + ctrlr->resv_notif_len) % NVMF_RESV_NOTIF_MAX;
	ctrlr->resv_notif[tail].count = ctrlr->resv_log_count;
	ctrlr->resv_notif[tail].nsid = nsid;
	ctrlr->resv_notif[tail].type = type;
	ctrlr->resv_notif_len++;
	nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_RESV_LOG);
}

/* Log page 80h: the oldest notification (taken off the queue unless rae), or an empty one. */
static uint16_t
resv_notif_log(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, bool rae, uint64_t offset)
{
	struct nvme_resv_notif_log log = { 0 };
	uint16_t status;

	if (ctrlr->resv_notif_len > 0) {
		log.log_page_count = ctrlr->resv_notif[ctrlr->resv_notif_head].count;
		log.type = ctrlr->resv_notif[ctrlr->resv_notif_head].type;
		log.nsid = ctrlr->resv_notif[ctrlr->resv_notif_head].nsid;
		log.navail = (uint8_t)GGA_MIN(ctrlr->resv_notif_len - 1, 255u);
	}
	status = log_copy(req, &log, sizeof(log), offset);
	if (status != 0 || rae) {
		return status;
	}
	if (ctrlr->resv_notif_len > 0) {
		ctrlr->resv_notif_head = (ctrlr->resv_notif_head + 1) % NVMF_RESV_NOTIF_MAX;
		ctrlr->resv_notif_len--;
	}
	ctrlr->masked_events &= ~NVMF_EVENT_RESV_LOG;
	if (ctrlr->resv_notif_len > 0) {
		/* More to read: tell the host again. */
		nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_RESV_LOG);
	}
	return 0;
}

void
nvmf_ctrlr_aer_complete_all(struct nvmf_ctrlr *ctrlr, uint16_t status)
{
	struct nvmf_request *req;

	while (ctrlr->num_aer > 0) {
		req = ctrlr->aer[--ctrlr->num_aer];
		ctrlr->aer[ctrlr->num_aer] = NULL;
		nvmf_request_set_status(req, status);
		nvmf_request_complete(req);
	}
}

/* Returns true if the request is held (completed later). */
static bool
async_event_request(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr, uint16_t *status)
{
	if (ctrlr->num_aer >= NVMF_MAX_AER) {
		*status = STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC,
				     NVME_SC_ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED);
		return false;
	}
	ctrlr->aer[ctrlr->num_aer++] = req;
	aer_try_complete(ctrlr);
	return true;
}

/* Only a held AER can be aborted; anything else has completed or will soon. */
static uint16_t
abort_cmd(struct nvmf_request *req, struct nvmf_ctrlr *ctrlr)
{
	uint16_t sqid = (uint16_t)(req->cmd.cdw10 & 0xffff);
	uint16_t cid = (uint16_t)(req->cmd.cdw10 >> 16);
	struct nvmf_request *victim;
	uint32_t i;

	req->rsp.cdw0 = NVME_ABORT_NOT_ABORTED;
	if (sqid != 0) {
		return 0;
	}
	for (i = 0; i < ctrlr->num_aer; i++) {
		if (ctrlr->aer[i]->cmd.cid != cid) {
			continue;
		}
		victim = ctrlr->aer[i];
		ctrlr->aer[i] = ctrlr->aer[--ctrlr->num_aer];
		ctrlr->aer[ctrlr->num_aer] = NULL;
		nvmf_request_set_status(victim,
					NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_BY_REQUEST));
		nvmf_request_complete(victim);
		req->rsp.cdw0 = 0;
		break;
	}
	return 0;
}

void
nvmf_ctrlr_exec_admin(struct nvmf_request *req)
{
	struct nvmf_ctrlr *ctrlr = req->qpair->ctrlr;
	uint16_t status = 0;

	if (ctrlr == NULL || ctrlr->state != NVMF_CTRLR_LIVE) {
		nvmf_request_set_status(req,
					NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_SQ_DELETION));
		nvmf_request_complete(req);
		return;
	}
	nvmf_ctrlr_keep_alive(ctrlr);
	if (!(ctrlr->regs.cc & NVME_CC_EN) || !(ctrlr->regs.csts & NVME_CSTS_RDY)) {
		/* Before CC.EN = 1 only Fabrics commands are allowed. */
		nvmf_request_set_status(req, STATUS_DNR(NVME_SCT_GENERIC,
							NVME_SC_COMMAND_SEQUENCE_ERROR));
		nvmf_request_complete(req);
		return;
	}
	switch (req->cmd.opc) {
	case NVME_OPC_IDENTIFY:
		status = identify(req, ctrlr);
		break;
	case NVME_OPC_GET_LOG_PAGE: {
		bool held = false;

		status = get_log_page(req, ctrlr, &held);
		if (held) {
			return;
		}
		break;
	}
	case NVME_OPC_SET_FEATURES:
		status = set_features(req, ctrlr);
		break;
	case NVME_OPC_GET_FEATURES:
		status = get_features(req, ctrlr);
		break;
	case NVME_OPC_KEEP_ALIVE:
		break;
	case NVME_OPC_ASYNC_EVENT_REQUEST:
		if (async_event_request(req, ctrlr, &status)) {
			return;
		}
		break;
	case NVME_OPC_ABORT:
		if (is_discovery(ctrlr)) {
			status = STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
		} else {
			status = abort_cmd(req, ctrlr);
		}
		break;
	default:
		status = STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
		break;
	}
	if (status != 0) {
		nvmf_request_set_status(req, status);
		nvmf_ctrlr_error_record(ctrlr, req);
	}
	nvmf_request_complete(req);
}
