/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * I/O commands (Read, Write, Flush, Write Zeroes, Dataset Management),
 * executed on the qpair's thread through that thread's bdev channel, and
 * the per-thread namespace channels that make namespace removal safe.
 *
 * A namespace is an io_device. The first I/O to it on a thread gets the
 * thread's channel (which holds a bdev channel) and caches it in the poll
 * group's per-subsystem table. Removal sets ns->removing (new I/O fails),
 * then walks the channels: each thread drops its cached reference once its
 * I/O to the namespace has drained, and the bdev is closed when the last
 * channel is gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/util.h"

#include "nvmf_internal.h"

#define INVALID_NS STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_NAMESPACE_OR_FORMAT)

/*
 * Namespace channels.
 */

static int
ns_channel_create(void *io_device, void *ctx)
{
	struct nvmf_ns *ns = io_device;
	struct nvmf_ns_channel *nsch = ctx;

	nsch->ns = ns;
	nvmf_ns_resv_channel_init(ns, nsch);
	nsch->bdev_ch = bdev_get_io_channel(ns->desc);
	return nsch->bdev_ch != NULL ? 0 : -ENOMEM;
}

static void
ns_channel_destroy(void *io_device, void *ctx)
{
	struct nvmf_ns_channel *nsch = ctx;

	io_channel_put(nsch->bdev_ch);
}

int
nvmf_ns_io_device_register(struct nvmf_ns *ns)
{
	io_device_register(ns, ns_channel_create, ns_channel_destroy,
			   sizeof(struct nvmf_ns_channel), "nvmf_ns");
	return 0;
}

/* The walk's step on one thread is over: drop the cached reference, go on. */
static void
ns_channel_release_finish(struct nvmf_ns_channel *nsch)
{
	struct io_channel_iter *i = nsch->remove_iter;

	nsch->remove_iter = NULL;
	if (nsch->pgs != NULL) {
		nsch->pgs = NULL;
		io_channel_put(io_channel_from_ctx(nsch));
	}
	io_channel_iter_continue(i, 0);
}

static void
ns_channel_release_fn(struct io_channel_iter *i)
{
	struct nvmf_ns_channel *nsch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	struct nvmf_ns *ns = nsch->ns;

	if (nsch->pgs != NULL && nsch->pgs->ns_ch[ns->nsid - 1] == nsch) {
		nsch->pgs->ns_ch[ns->nsid - 1] = NULL;
	}
	nsch->remove_iter = i;
	if (nsch->outstanding == 0) {
		ns_channel_release_finish(nsch);
	}
}

static void
ns_unregistered(void *io_device)
{
	struct nvmf_ns *ns = io_device;

	ns->released_cb(ns);
}

static void
ns_channel_release_done(struct io_channel_iter *i, int status)
{
	struct nvmf_ns *ns = io_channel_iter_get_io_device(i);

	io_device_unregister(ns, ns_unregistered);
}

void
nvmf_ns_channels_release(struct nvmf_ns *ns, void (*cb)(struct nvmf_ns *ns))
{
	ns->released_cb = cb;
	io_device_for_each_channel(ns, ns_channel_release_fn, NULL, ns_channel_release_done);
}

/* This thread's channel for nsid, or NULL with *status set. */
static struct nvmf_ns_channel *
get_ns_channel(struct nvmf_qpair *qpair, uint32_t nsid, uint16_t *status)
{
	struct nvmf_subsystem *subsys = qpair->ctrlr->subsys;
	struct nvmf_pg_subsys *pgs = qpair->pgs;
	struct nvmf_ns_channel *nsch;
	struct io_channel *ch;
	struct nvmf_ns *ns;

	if (nsid == 0 || nsid > subsys->max_nsid) {
		*status = INVALID_NS;
		return NULL;
	}
	ns = __atomic_load_n(&subsys->ns[nsid - 1], __ATOMIC_ACQUIRE);
	if (ns == NULL || __atomic_load_n(&ns->removing, __ATOMIC_SEQ_CST)) {
		*status = INVALID_NS;
		return NULL;
	}
	if (pgs == NULL) {
		pgs = qpair->pg->subsys[subsys->id];
		if (pgs == NULL) {
			pgs = calloc(1, sizeof(*pgs) + subsys->max_nsid * sizeof(pgs->ns_ch[0]));
			if (pgs == NULL) {
				*status = nvmf_errno_to_status(-ENOMEM);
				return NULL;
			}
			pgs->max_nsid = subsys->max_nsid;
			qpair->pg->subsys[subsys->id] = pgs;
		}
		qpair->pgs = pgs;
	}
	nsch = pgs->ns_ch[nsid - 1];
	if (nsch != NULL) {
		return nsch;
	}
	ch = io_channel_get(ns);
	if (ch == NULL) {
		*status = nvmf_errno_to_status(-ENODEV);
		return NULL;
	}
	nsch = io_channel_get_ctx(ch);
	/*
	 * A removal that started after the check above may have walked this
	 * thread before the channel existed: look again now that it does.
	 */
	if (__atomic_load_n(&ns->removing, __ATOMIC_SEQ_CST)) {
		io_channel_put(ch);
		*status = INVALID_NS;
		return NULL;
	}
	nsch->pgs = pgs;
	pgs->ns_ch[nsid - 1] = nsch;
	return nsch;
}

/*
 * Command checks (pure: the fuzzer and the unit tests call them).
 */

uint16_t
nvmf_io_rw_check(const struct nvme_cmd *cmd, uint64_t num_blocks, uint32_t buf_block_size,
		 uint32_t length, bool has_data)
{
	uint64_t slba = nvme_cmd_slba(cmd);
	uint32_t nlb = nvme_cmd_nlb(cmd);

	if (slba >= num_blocks || nlb > num_blocks - slba) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_LBA_OUT_OF_RANGE);
	}
	if (has_data && (uint64_t)nlb * buf_block_size != length) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID);
	}
	return 0;
}

/*
 * Execution.
 */

static void
nvmf_io_finish(struct nvmf_request *req, uint16_t status)
{
	struct nvmf_ns_channel *nsch = req->nsch;

	req->nsch = NULL;
	req->qpair->pg->completed_nvme_io++;
	nvmf_ns_resv_io_done(nsch, req->resv_epoch);
	if (--nsch->outstanding == 0 && nsch->remove_iter != NULL) {
		ns_channel_release_finish(nsch);
	}
	nvmf_request_set_status(req, status);
	nvmf_request_complete(req);
}

static void
nvmf_io_done(struct bdev_io *io, bool success, void *arg)
{
	struct nvmf_request *req = arg;
	uint16_t dnr = 0;
	int sct = 0, sc = 0;

	if (!success) {
		bdev_io_get_nvme_status(io, &sct, &sc);
		if (sct == 0 && sc == 0) {
			sc = NVME_SC_INTERNAL_DEVICE_ERROR;
		}
		/* A full thin namespace: retrying the same write cannot help. */
		if (sct == NVME_SCT_GENERIC && sc == NVME_SC_CAPACITY_EXCEEDED) {
			dnr = NVME_STATUS_DNR;
		}
	}
	bdev_free_io(io);
	nvmf_io_finish(req, NVME_STATUS(sct, sc) | dnr);
}

static void nvmf_io_submit(void *arg);
static void dsm_next(void *arg);

/*
 * A submit call failed: wait for a bdev_io if it ran out of them (retrying
 * `fn` then), fail the command otherwise.
 */
static void
nvmf_io_submit_failed(struct nvmf_request *req, int rc, msg_fn fn)
{
	struct nvmf_ns_channel *nsch = req->nsch;

	if (rc == -ENOMEM) {
		req->bdev_wait.bdev = nsch->ns->bdev;
		req->bdev_wait.cb_fn = fn;
		req->bdev_wait.cb_arg = req;
		if (bdev_queue_io_wait(nsch->ns->bdev, nsch->bdev_ch, &req->bdev_wait) == 0) {
			req->qpair->pg->pending_bdev_io++;
			return;
		}
		/* A bdev_io is available right now. */
		fn(req);
		return;
	}
	nvmf_io_finish(req, nvmf_errno_to_status(rc));
}

static void
nvmf_io_submit(void *arg)
{
	struct nvmf_request *req = arg;
	struct nvmf_ns_channel *nsch = req->nsch;
	struct nvmf_ns *ns = nsch->ns;
	uint64_t slba = nvme_cmd_slba(&req->cmd);
	uint32_t nlb = nvme_cmd_nlb(&req->cmd);
	int rc;

	switch (req->cmd.opc) {
	case NVME_OPC_READ:
		rc = bdev_readv_blocks(ns->desc, nsch->bdev_ch, req->iov, req->iovcnt, slba, nlb,
				       nvmf_io_done, req);
		break;
	case NVME_OPC_WRITE:
		rc = bdev_writev_blocks(ns->desc, nsch->bdev_ch, req->iov, req->iovcnt, slba, nlb,
					nvmf_io_done, req);
		break;
	case NVME_OPC_WRITE_ZEROES:
		rc = bdev_write_zeroes_blocks(ns->desc, nsch->bdev_ch, slba, nlb, nvmf_io_done,
					      req);
		break;
	case NVME_OPC_FLUSH:
		rc = bdev_flush_blocks(ns->desc, nsch->bdev_ch, 0, ns->num_blocks, nvmf_io_done,
				       req);
		break;
	default:
		rc = -ENOTSUP;
		break;
	}
	if (rc != 0) {
		nvmf_io_submit_failed(req, rc, nvmf_io_submit);
	}
}

/* The i-th range of a Dataset Management command's data. */
static void
dsm_range(struct nvmf_request *req, uint32_t i, struct nvme_dsm_range *range)
{
	size_t off = (size_t)i * sizeof(*range), copied = 0;
	int k;

	memset(range, 0, sizeof(*range));
	for (k = 0; k < req->iovcnt && copied < sizeof(*range); k++) {
		size_t len = req->iov[k].iov_len, n;

		if (off >= len) {
			off -= len;
			continue;
		}
		n = GGA_MIN(len - off, sizeof(*range) - copied);
		memcpy((uint8_t *)range + copied, (uint8_t *)req->iov[k].iov_base + off, n);
		copied += n;
		off = 0;
	}
}

static void
dsm_done(struct bdev_io *io, bool success, void *arg)
{
	struct nvmf_request *req = arg;

	if (!success) {
		nvmf_io_done(io, success, arg);
		return;
	}
	bdev_free_io(io);
	req->dsm_next++;
	dsm_next(req);
}

/* Deallocate the ranges one after another: each is one unmap of the bdev. */
static void
dsm_next(void *arg)
{
	struct nvmf_request *req = arg;
	struct nvmf_ns_channel *nsch = req->nsch;
	struct nvme_dsm_range range;
	int rc;

	for (; req->dsm_next < req->dsm_count; req->dsm_next++) {
		dsm_range(req, req->dsm_next, &range);
		if (range.length == 0) {
			continue;
		}
		rc = bdev_unmap_blocks(nsch->ns->desc, nsch->bdev_ch, range.starting_lba,
				       range.length, dsm_done, req);
		if (rc != 0) {
			nvmf_io_submit_failed(req, rc, dsm_next);
		}
		return;
	}
	nvmf_io_finish(req, 0);
}

static uint16_t
dsm_start(struct nvmf_request *req)
{
	struct nvmf_ns *ns = req->nsch->ns;
	struct nvme_dsm_range range;
	uint32_t nr = (req->cmd.cdw10 & NVME_DSM_NR_MASK) + 1, i;

	if (req->xfer != NVME_XFER_HOST_TO_CTRLR || req->length < nr * sizeof(range)) {
		return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID);
	}
	/* Check every range before touching any. */
	for (i = 0; i < nr; i++) {
		dsm_range(req, i, &range);
		if (range.length > 0 && (range.starting_lba >= ns->num_blocks ||
					 range.length > ns->num_blocks - range.starting_lba)) {
			return STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_LBA_OUT_OF_RANGE);
		}
	}
	/* Deallocation is advisory: without unmap support there is nothing to do. */
	if (!(req->cmd.cdw11 & NVME_DSM_ATTR_DEALLOCATE) || !ns->has_unmap) {
		nvmf_io_finish(req, 0);
		return 0;
	}
	req->dsm_next = 0;
	req->dsm_count = nr;
	dsm_next(req);
	return 0;
}

void
nvmf_io_exec(struct nvmf_request *req)
{
	struct nvmf_ns_channel *nsch;
	struct nvmf_ns *ns;
	uint16_t status = 0;

	switch (req->cmd.opc) {
	case NVME_OPC_RESERVATION_REGISTER:
	case NVME_OPC_RESERVATION_REPORT:
	case NVME_OPC_RESERVATION_ACQUIRE:
	case NVME_OPC_RESERVATION_RELEASE:
		/* The namespace's reservations live on the app thread. */
		nvmf_ns_resv_exec(req);
		return;
	default:
		break;
	}
	nsch = get_ns_channel(req->qpair, req->cmd.nsid, &status);
	if (nsch == NULL) {
		nvmf_request_set_status(req, status);
		nvmf_request_complete(req);
		return;
	}
	ns = nsch->ns;
	req->nsch = nsch;
	nsch->outstanding++;
	req->resv_epoch = nsch->resv_epoch;
	nsch->resv_inflight[req->resv_epoch]++;
	status = nvmf_ctrlr_ana_check(req->qpair->ctrlr, ns);
	if (status == 0) {
		status = nvmf_ns_resv_check(nsch, req);
	}
	if (status != 0) {
		nvmf_io_finish(req, status);
		return;
	}
	switch (req->cmd.opc) {
	case NVME_OPC_READ:
	case NVME_OPC_WRITE:
		status = nvmf_io_rw_check(&req->cmd, ns->num_blocks, ns->buf_block_size,
					  req->length, true);
		if (status == 0 &&
		    req->xfer != (req->cmd.opc == NVME_OPC_READ ? NVME_XFER_CTRLR_TO_HOST :
								  NVME_XFER_HOST_TO_CTRLR)) {
			status = STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD);
		}
		break;
	case NVME_OPC_WRITE_ZEROES:
		status = nvmf_io_rw_check(&req->cmd, ns->num_blocks, ns->buf_block_size, 0, false);
		if (status == 0 && !ns->has_write_zeroes) {
			status = STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
		}
		break;
	case NVME_OPC_FLUSH:
		if (!ns->has_flush) {
			/* Nothing is cached below us: the data is already durable. */
			nvmf_io_finish(req, 0);
			return;
		}
		break;
	case NVME_OPC_DATASET_MANAGEMENT:
		status = dsm_start(req);
		if (status == 0) {
			return;
		}
		break;
	default:
		status = STATUS_DNR(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE);
		break;
	}
	if (status != 0) {
		nvmf_io_finish(req, status);
		return;
	}
	nvmf_io_submit(req);
}
