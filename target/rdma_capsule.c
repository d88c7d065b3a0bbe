/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pure parts of the NVMe/RDMA target transport: checks of the RDMA CM
 * connect request's private data, SGL parsing of command capsules, capsule
 * sizes and the split of a keyed transfer into work requests. None of this
 * touches a device, so the unit tests call it directly.
 */
#include <errno.h>
#include <string.h>

#include "gga/nvme_rdma.h"
#include "gga/nvme_spec.h"
#include "gga/util.h"

#include "rdma_internal.h"

uint16_t
nvmf_rdma_cm_req_check(const void *pdata, size_t len, const struct nvmf_rdma_cm_limits *lim,
		       struct nvmf_rdma_cm_params *params)
{
	struct nvme_rdma_cm_req req;
	uint32_t limit;

	if (pdata == NULL || len < sizeof(req)) {
		return NVME_RDMA_CM_INVALID_LEN;
	}
	memcpy(&req, pdata, sizeof(req));
	if (req.recfmt != NVME_RDMA_CM_RECFMT_1_0) {
		return NVME_RDMA_CM_INVALID_RECFMT;
	}
	if (req.qid > lim->max_io_qpairs) {
		return NVME_RDMA_CM_INVALID_QID;
	}
	limit = req.qid == 0 ? lim->max_aq_depth : lim->max_queue_depth;
	/* hsqsize is 0's based, and a queue has at least two entries. */
	if (req.hsqsize < 1 || (uint32_t)req.hsqsize + 1 > limit) {
		return NVME_RDMA_CM_INVALID_HSQSIZE;
	}
	/* hrqsize is 1's based: the host's receive queue takes that many responses. */
	if (req.hrqsize == 0 || req.hrqsize > limit) {
		return NVME_RDMA_CM_INVALID_HRQSIZE;
	}
	params->qid = req.qid;
	params->sq_entries = (uint32_t)req.hsqsize + 1;
	params->hrqsize = req.hrqsize;
	params->cntlid = req.cntlid;
	return 0;
}

static uint16_t
sgl_status(uint8_t sc)
{
	return NVME_STATUS(NVME_SCT_GENERIC, sc) | NVME_STATUS_DNR;
}

uint16_t
nvmf_rdma_sgl_parse(const struct nvme_cmd *cmd, uint32_t icd_len, uint32_t max_icd,
		    uint32_t max_io_size, struct nvmf_rdma_sgl *out)
{
	const struct nvme_sgl_desc *sgl = &cmd->dptr.sgl1;
	enum nvme_data_xfer xfer = nvmf_cmd_xfer(cmd);
	uint32_t len;

	memset(out, 0, sizeof(*out));
	if (xfer == NVME_XFER_NONE) {
		/* Any descriptor (hosts send a null keyed one); no data may come along. */
		return icd_len == 0 ? 0 : sgl_status(NVME_SC_INVALID_FIELD);
	}
	if (xfer == NVME_XFER_BIDIRECTIONAL) {
		return sgl_status(NVME_SC_INVALID_OPCODE);
	}
	/* Fabrics use SGLs only. */
	if ((cmd->flags & NVME_CMD_PSDT_MASK) >> NVME_CMD_PSDT_SHIFT != NVME_PSDT_SGL_MPTR_CONTIG) {
		return sgl_status(NVME_SC_INVALID_FIELD);
	}
	switch (nvme_sgl_id(sgl)) {
	case NVME_SGL_ID_INCAPSULE:
		len = sgl->unkeyed.length;
		if (xfer != NVME_XFER_HOST_TO_CTRLR) {
			return sgl_status(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID);
		}
		/* ICDOFF is 0: the offset counts from the first byte after the SQE. */
		if (sgl->address > icd_len) {
			return sgl_status(NVME_SC_INVALID_SGL_OFFSET);
		}
		if (len > icd_len - sgl->address || len > max_icd) {
			return sgl_status(NVME_SC_DATA_SGL_LENGTH_INVALID);
		}
		out->icd = true;
		out->icd_offset = (uint32_t)sgl->address;
		out->length = len;
		return 0;
	case NVME_SGL_ID_KEYED:
	case NVME_SGL_ID_KEYED_INVALIDATE:
		if (icd_len != 0) {
			/* Data in the capsule that the descriptor does not describe. */
			return sgl_status(NVME_SC_INVALID_FIELD);
		}
		len = nvme_sgl_keyed_length(sgl);
		if (len > max_io_size || len > NVME_RDMA_MAX_KEYED_SGL_LEN) {
			return sgl_status(NVME_SC_DATA_SGL_LENGTH_INVALID);
		}
		out->length = len;
		out->raddr = sgl->address;
		out->rkey = nvme_sgl_keyed_key(sgl);
		out->invalidate = nvme_sgl_id(sgl) == NVME_SGL_ID_KEYED_INVALIDATE;
		return 0;
	default:
		return sgl_status(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID);
	}
}

uint32_t
nvmf_rdma_capsule_size(uint32_t icd)
{
	return NVME_RDMA_CMD_CAPSULE_MIN + icd;
}

uint32_t
nvmf_rdma_queue_icd(uint16_t qid, uint32_t in_capsule_data_size)
{
	return qid == 0 ? GGA_MAX(in_capsule_data_size, RDMA_ADMIN_ICD_SIZE) : in_capsule_data_size;
}

void
nvmf_rdma_xfer_plan(uint32_t length, uint32_t unit, uint32_t max_sge,
		    struct nvmf_rdma_xfer_plan *plan)
{
	if (max_sge == 0) {
		max_sge = 1;
	}
	plan->nbufs = length == 0 ? 0 : (length + unit - 1) / unit;
	plan->nwrs = (plan->nbufs + max_sge - 1) / max_sge;
}
