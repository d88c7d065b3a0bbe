/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * I/O commands on a namespace: check the request against the namespace's
 * geometry and the controller's limits, build the command, submit it.
 */
#include <errno.h>

#include "gga/util.h"

#include "nvme_internal.h"

/* Data bytes of nlb blocks, or 0 if the command would exceed MDTS or the buffer. */
static uint32_t
xfer_len(const struct nvme_ns *ns, uint32_t nlb, const struct iovec *iov, int iovcnt,
	 size_t iov_offset)
{
	uint64_t len = (uint64_t)nlb * ns->info.xfer_block_size;

	if (len > nvme_ctrlr_get_max_xfer_size(ns->ctrlr) ||
	    iov_offset + len > iov_length(iov, iovcnt)) {
		return 0;
	}
	return (uint32_t)len;
}

static int
rw(struct nvme_qpair *qp, struct nvme_ns *ns, uint8_t opc, uint64_t lba, uint32_t nlb,
   struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;
	uint32_t len;

	if (unlikely(nlb == 0 || nlb > NVME_RW_NLB_MASK + 1u)) {
		return -EINVAL;
	}
	len = xfer_len(ns, nlb, iov, iovcnt, iov_offset);
	if (unlikely(len == 0)) {
		return -EINVAL;
	}
	nvme_cmd_build_rw(&cmd, opc, ns->info.nsid, lba, nlb);
	return nvme_qpair_submit(qp, &cmd, iov, iovcnt, iov_offset, len, cb, cb_arg);
}

int
nvme_ns_cmd_readv(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		  struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb, void *cb_arg)
{
	return rw(qp, ns, NVME_OPC_READ, lba, nlb, iov, iovcnt, iov_offset, cb, cb_arg);
}

int
nvme_ns_cmd_writev(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		   struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb, void *cb_arg)
{
	return rw(qp, ns, NVME_OPC_WRITE, lba, nlb, iov, iovcnt, iov_offset, cb, cb_arg);
}

int
nvme_ns_cmd_write_zeroes(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
			 nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	if (!ns->info.write_zeroes_supported) {
		return -ENOTSUP;
	}
	if (nlb == 0 || nlb > NVME_RW_NLB_MASK + 1u) {
		return -EINVAL;
	}
	nvme_cmd_build_rw(&cmd, NVME_OPC_WRITE_ZEROES, ns->info.nsid, lba, nlb);
	return nvme_qpair_submit(qp, &cmd, NULL, 0, 0, 0, cb, cb_arg);
}

int
nvme_ns_cmd_flush(struct nvme_qpair *qp, struct nvme_ns *ns, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	nvme_cmd_build_flush(&cmd, ns->info.nsid);
	return nvme_qpair_submit(qp, &cmd, NULL, 0, 0, 0, cb, cb_arg);
}

int
nvme_ns_cmd_deallocate(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		       nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_request *req;
	struct nvme_cmd cmd;

	if (!ns->info.dsm_supported) {
		return -ENOTSUP;
	}
	if (nlb == 0) {
		return -EINVAL;
	}
	/* The range travels as data: it lives in the request slot the submit will take. */
	req = TAILQ_FIRST(&qp->free_reqs);
	if (req == NULL) {
		return qp->state == QPAIR_LIVE || qp->state == QPAIR_CONNECTING ? -ENOMEM : -ENXIO;
	}
	req->dsm.attributes = 0;
	req->dsm.length = nlb;
	req->dsm.starting_lba = lba;
	req->local_iov.iov_base = &req->dsm;
	req->local_iov.iov_len = sizeof(req->dsm);
	nvme_cmd_build_dsm(&cmd, ns->info.nsid, 1, NVME_DSM_ATTR_DEALLOCATE);
	return nvme_qpair_submit(qp, &cmd, &req->local_iov, 1, 0, sizeof(req->dsm), cb, cb_arg);
}

/* A reservation command whose data (1 or 2 keys) lives in the request slot. */
static int
resv_keys_cmd(struct nvme_qpair *qp, struct nvme_cmd *cmd, uint64_t key0, uint64_t key1,
	      uint32_t nkeys, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_request *req = TAILQ_FIRST(&qp->free_reqs);

	if (req == NULL) {
		return qp->state == QPAIR_LIVE || qp->state == QPAIR_CONNECTING ? -ENOMEM : -ENXIO;
	}
	req->resv_keys[0] = key0;
	req->resv_keys[1] = key1;
	req->local_iov.iov_base = req->resv_keys;
	req->local_iov.iov_len = nkeys * sizeof(uint64_t);
	return nvme_qpair_submit(qp, cmd, &req->local_iov, 1, 0, nkeys * sizeof(uint64_t), cb,
				 cb_arg);
}

int
nvme_ns_cmd_resv_register(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t rrega, bool iekey,
			  uint32_t cptpl, uint64_t crkey, uint64_t nrkey, nvme_cmd_cb cb,
			  void *cb_arg)
{
	struct nvme_cmd cmd;

	if (rrega > 2 || cptpl == 1 || cptpl > 3) {
		return -EINVAL;
	}
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_REGISTER, ns->info.nsid, rrega, iekey, 0,
			    cptpl);
	return resv_keys_cmd(qp, &cmd, crkey, nrkey, 2, cb, cb_arg);
}

int
nvme_ns_cmd_resv_acquire(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t racqa, uint32_t rtype,
			 uint64_t crkey, uint64_t prkey, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	if (racqa > 2 || rtype < 1 || rtype > 6) {
		return -EINVAL;
	}
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_ACQUIRE, ns->info.nsid, racqa, false, rtype,
			    0);
	return resv_keys_cmd(qp, &cmd, crkey, prkey, 2, cb, cb_arg);
}

int
nvme_ns_cmd_resv_release(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t rrela, uint32_t rtype,
			 uint64_t crkey, nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	if (rrela > 1 || rtype > 6) {
		return -EINVAL;
	}
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_RELEASE, ns->info.nsid, rrela, false, rtype,
			    0);
	return resv_keys_cmd(qp, &cmd, crkey, 0, 1, cb, cb_arg);
}

int
nvme_ns_cmd_resv_report(struct nvme_qpair *qp, struct nvme_ns *ns, void *buf, uint32_t len,
			nvme_cmd_cb cb, void *cb_arg)
{
	struct nvme_cmd cmd;

	if (len < 64 || len % 4 != 0) {
		return -EINVAL;
	}
	nvme_cmd_build_resv_report(&cmd, ns->info.nsid, len);
	return nvme_qpair_submit_buf(qp, &cmd, buf, len, cb, cb_arg);
}
