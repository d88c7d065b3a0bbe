/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pure parts of the NVMe/RDMA host transport: connect private data,
 * reject decoding, the choice of how a command's data travels and its SGL,
 * response capsule checks and the two-event completion state of a request.
 * No verbs calls here, so the unit tests run without an RDMA device.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga/nvme_rdma.h"
#include "gga/util.h"

#include "nvme_rdma_internal.h"

/* IB CM reject reasons the host tells apart (IBTA CM REJ reason codes). */
#define CM_REJ_INVALID_SERVICE_ID 8
#define CM_REJ_CONSUMER_DEFINED   28

void
nvme_rdma_build_cm_req(struct nvme_rdma_cm_req *req, uint16_t qid, uint16_t entries,
		       uint16_t cntlid)
{
	memset(req, 0, sizeof(*req));
	req->recfmt = NVME_RDMA_CM_RECFMT_1_0;
	req->qid = qid;
	/* One RECV per queue entry; the SQ size is 0's based as in Connect. */
	req->hrqsize = entries;
	req->hsqsize = (uint16_t)(entries - 1);
	req->cntlid = cntlid;
}

int
nvme_rdma_describe_reject(int cm_status, const void *pdata, uint32_t pdata_len, char *buf,
			  size_t len)
{
	struct nvme_rdma_cm_rej rej;

	if (cm_status == CM_REJ_CONSUMER_DEFINED && pdata != NULL && pdata_len >= sizeof(rej)) {
		memcpy(&rej, pdata, sizeof(rej));
		if (rej.recfmt == NVME_RDMA_CM_RECFMT_1_0 && rej.sts != 0) {
			snprintf(buf, len,
				 "connect rejected by the controller: %s "
				 "(NVMe/RDMA status 0x%x)",
				 nvme_rdma_cm_status_str(rej.sts), rej.sts);
			return rej.sts == NVME_RDMA_CM_INVALID_HSQSIZE ||
					       rej.sts == NVME_RDMA_CM_INVALID_HRQSIZE ?
				       -EINVAL :
				       -ECONNREFUSED;
		}
	}
	if (cm_status == CM_REJ_INVALID_SERVICE_ID) {
		snprintf(buf, len,
			 "connect rejected: nothing listens on that address and port "
			 "(RDMA CM reject reason %d)",
			 cm_status);
	} else {
		snprintf(buf, len, "connect rejected (RDMA CM reject reason %d)", cm_status);
	}
	return -ECONNREFUSED;
}

enum nvme_rdma_data_mode
nvme_rdma_choose_data_mode(enum nvme_data_xfer xfer, uint32_t len, bool contiguous, bool in_arena,
			   uint32_t max_icd)
{
	if (len == 0 || xfer == NVME_XFER_NONE) {
		return RDMA_DATA_NONE;
	}
	if (xfer == NVME_XFER_HOST_TO_CTRLR && len <= max_icd) {
		/* Small writes ride in the capsule: no RDMA READ round trip. */
		return contiguous && in_arena ? RDMA_DATA_INCAPSULE : RDMA_DATA_INCAPSULE_COPY;
	}
	if (contiguous && in_arena && len <= NVME_RDMA_MAX_KEYED_SGL_LEN) {
		return RDMA_DATA_KEYED;
	}
	return RDMA_DATA_BOUNCE;
}

void
nvme_rdma_cmd_set_sgl(struct nvme_cmd *cmd, enum nvme_rdma_data_mode mode, uint64_t addr,
		      uint32_t len, uint32_t rkey)
{
	switch (mode) {
	case RDMA_DATA_INCAPSULE:
	case RDMA_DATA_INCAPSULE_COPY:
		/* Offset 0 of the capsule's data area, right behind the SQE. */
		nvme_sgl_set_unkeyed(&cmd->dptr.sgl1, 0, len, NVME_SGL_ID_INCAPSULE);
		break;
	case RDMA_DATA_KEYED:
	case RDMA_DATA_BOUNCE:
		nvme_sgl_set_keyed(&cmd->dptr.sgl1, addr, len, rkey, NVME_SGL_ID_KEYED);
		break;
	case RDMA_DATA_NONE:
	default:
		/* A command without data carries a null keyed descriptor, as Linux hosts send. */
		nvme_sgl_set_keyed(&cmd->dptr.sgl1, 0, 0, 0, NVME_SGL_ID_KEYED);
		break;
	}
}

int
nvme_rdma_parse_rsp(const void *buf, uint32_t byte_len, struct nvme_cpl *cpl)
{
	if (byte_len < NVME_RDMA_RSP_CAPSULE_SIZE) {
		return -EPROTO;
	}
	memcpy(cpl, buf, sizeof(*cpl));
	return 0;
}

void
nvme_rdma_req_start(struct nvme_rdma_req *rr, enum nvme_rdma_data_mode mode, int32_t bounce)
{
	rr->mode = mode;
	rr->send_done = false;
	rr->rsp_received = false;
	rr->bounce = bounce;
}

int
nvme_rdma_req_send_done(struct nvme_rdma_req *rr)
{
	rr->send_done = true;
	return rr->rsp_received ? 1 : 0;
}

int
nvme_rdma_req_rsp_received(struct nvme_rdma_req *rr, const struct nvme_cpl *cpl)
{
	if (rr->rsp_received) {
		return -EPROTO;
	}
	rr->cpl = *cpl;
	rr->rsp_received = true;
	/*
	 * The target may answer before our SEND completion is reaped: the
	 * capsule buffer stays ours until then, so the request waits for it.
	 */
	return rr->send_done ? 1 : 0;
}

size_t
nvme_rdma_copy_from_iov(void *dst, const struct iovec *iov, int iovcnt, size_t offset, size_t len)
{
	uint8_t *d = dst;
	size_t done = 0, seg;
	int i;

	for (i = 0; i < iovcnt && done < len; i++) {
		seg = iov[i].iov_len;
		if (offset >= seg) {
			offset -= seg;
			continue;
		}
		seg = GGA_MIN(seg - offset, len - done);
		memcpy(d + done, (const uint8_t *)iov[i].iov_base + offset, seg);
		done += seg;
		offset = 0;
	}
	return done;
}

size_t
nvme_rdma_copy_to_iov(const struct iovec *iov, int iovcnt, size_t offset, const void *src,
		      size_t len)
{
	const uint8_t *s = src;
	size_t done = 0, seg;
	int i;

	for (i = 0; i < iovcnt && done < len; i++) {
		seg = iov[i].iov_len;
		if (offset >= seg) {
			offset -= seg;
			continue;
		}
		seg = GGA_MIN(seg - offset, len - done);
		memcpy((uint8_t *)iov[i].iov_base + offset, s + done, seg);
		done += seg;
		offset = 0;
	}
	return done;
}
