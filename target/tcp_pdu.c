/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP PDU checks on the controller side. Pure functions of their
 * arguments: tcp.c calls them as bytes arrive, the unit tests and the fuzzer
 * call them on buffers.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "gga/util.h"

#include "nvmf_transport.h"
#include "tcp_internal.h"

#define FIELD_OFFSET(type, field) ((uint32_t)offsetof(type, field))

static int
fatal(struct nvmf_tcp_fatal *err, uint16_t fes, uint32_t fei)
{
	err->fes = fes;
	err->fei = fei;
	return -EPROTO;
}

static int
invalid_field(struct nvmf_tcp_fatal *err, uint32_t fei)
{
	return fatal(err, NVME_TCP_FES_INVALID_PDU_HDR_FIELD, fei);
}

int
nvmf_tcp_ch_check(const struct nvme_tcp_common_hdr *ch, const struct nvmf_tcp_rx_ctx *ctx,
		  struct nvmf_tcp_layout *layout, struct nvmf_tcp_fatal *err)
{
	uint32_t expect_hlen, min_plen;
	bool digests_allowed;

	switch (ch->pdu_type) {
	case NVME_TCP_PDU_ICREQ:
		expect_hlen = NVME_TCP_ICREQ_HLEN;
		digests_allowed = false;
		break;
	case NVME_TCP_PDU_H2C_TERM_REQ:
		expect_hlen = NVME_TCP_TERM_REQ_HLEN;
		digests_allowed = false;
		break;
	case NVME_TCP_PDU_CAPSULE_CMD:
		expect_hlen = NVME_TCP_CMD_HLEN;
		digests_allowed = true;
		break;
	case NVME_TCP_PDU_H2C_DATA:
		expect_hlen = NVME_TCP_DATA_HLEN;
		digests_allowed = true;
		break;
	default:
		/* Not a PDU a host sends. */
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, pdu_type));
	}
	/* ICReq first and only once; a host may terminate at any time. */
	if (ch->pdu_type != NVME_TCP_PDU_H2C_TERM_REQ &&
	    (ch->pdu_type == NVME_TCP_PDU_ICREQ) == ctx->ic_done) {
		return fatal(err, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0);
	}
	if (ch->hlen != expect_hlen) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, hlen));
	}

	memset(layout, 0, sizeof(*layout));
	layout->hlen = expect_hlen;
	if (!digests_allowed) {
		if (ch->flags & (NVME_TCP_F_HDGST | NVME_TCP_F_DDGST)) {
			return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, flags));
		}
		if (ch->pdu_type == NVME_TCP_PDU_ICREQ && ch->plen != NVME_TCP_ICREQ_HLEN) {
			return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, plen));
		}
		if (ch->pdu_type == NVME_TCP_PDU_H2C_TERM_REQ &&
		    (ch->plen < NVME_TCP_TERM_REQ_MIN_PLEN ||
		     ch->plen > NVME_TCP_TERM_REQ_MAX_PLEN)) {
			return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, plen));
		}
		/* A TermReq's data (the offending header) follows its header directly. */
		layout->data_len = ch->plen - expect_hlen;
		return 0;
	}

	/* CapsuleCmd and H2CData: digests exactly as negotiated. */
	if (!!(ch->flags & NVME_TCP_F_HDGST) != ctx->hdgst) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, flags));
	}
	layout->hdgst_len = ctx->hdgst ? NVME_TCP_DIGEST_LEN : 0;
	min_plen = expect_hlen + layout->hdgst_len;
	if (ch->plen < min_plen) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, plen));
	}
	if (ch->plen == min_plen) {
		/* No data: an H2CData PDU must carry some; no data digest without data. */
		if (ch->pdu_type == NVME_TCP_PDU_H2C_DATA) {
			return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, plen));
		}
		if (ch->flags & NVME_TCP_F_DDGST) {
			return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, flags));
		}
		return 0;
	}
	if (!!(ch->flags & NVME_TCP_F_DDGST) != ctx->ddgst) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, flags));
	}
	layout->ddgst_len = ctx->ddgst ? NVME_TCP_DIGEST_LEN : 0;
	/* CPDA is 0: data starts on any dword boundary after the header digest. */
	if (ch->pdo < min_plen || ch->pdo % 4 != 0 ||
	    (uint64_t)ch->pdo + layout->ddgst_len >= ch->plen) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_common_hdr, pdo));
	}
	layout->pad_len = ch->pdo - min_plen;
	layout->data_len = ch->plen - ch->pdo - layout->ddgst_len;
	if (ch->pdu_type == NVME_TCP_PDU_CAPSULE_CMD && layout->data_len > ctx->max_icd) {
		return fatal(err, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0);
	}
	if (ch->pdu_type == NVME_TCP_PDU_H2C_DATA && layout->data_len > ctx->maxh2cdata) {
		return fatal(err, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0);
	}
	return 0;
}

bool
nvmf_tcp_hdgst_ok(const uint8_t *hdr, uint32_t hlen)
{
	uint32_t want = nvme_tcp_hdgst(hdr, hlen), got;

	memcpy(&got, hdr + hlen, sizeof(got));
	return want == got;
}

int
nvmf_tcp_icreq_check(const struct nvme_tcp_icreq *icreq, struct nvmf_tcp_fatal *err)
{
	if (icreq->pfv != NVME_TCP_PFV_1_0) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_icreq, pfv));
	}
	if (icreq->hpda > NVME_TCP_MAX_PDA) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_icreq, hpda));
	}
	return 0;
}

int
nvmf_tcp_h2c_check(const struct nvme_tcp_data_hdr *h2c, const struct nvmf_tcp_layout *layout,
		   uint16_t cid, uint32_t received, uint32_t length, struct nvmf_tcp_fatal *err)
{
	if (h2c->cccid != cid) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_data_hdr, cccid));
	}
	if (h2c->datal != layout->data_len) {
		return invalid_field(err, FIELD_OFFSET(struct nvme_tcp_data_hdr, datal));
	}
	/* Data must arrive in order and inside the transfer the R2T asked for. */
	if (h2c->datao != received || h2c->datal > length - received) {
		return fatal(err, NVME_TCP_FES_DATA_OUT_OF_RANGE, 0);
	}
	return 0;
}

uint16_t
nvmf_tcp_sgl_parse(const struct nvme_cmd *cmd, uint32_t icd_len, uint32_t max_icd,
		   uint32_t max_io_size, uint32_t *length, bool *icd, uint32_t *icd_offset)
{
	const struct nvme_sgl_desc *sgl = &cmd->dptr.sgl1;
	enum nvme_data_xfer xfer = nvmf_cmd_xfer(cmd);
	uint32_t len;

	*length = 0;
	*icd = false;
	*icd_offset = 0;
	if (xfer == NVME_XFER_NONE) {
		return icd_len == 0 ? 0 :
				      NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) |
					      NVME_STATUS_DNR;
	}
	if (xfer == NVME_XFER_BIDIRECTIONAL) {
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE) | NVME_STATUS_DNR;
	}
	/* Fabrics use SGLs only. */
	if ((cmd->flags & NVME_CMD_PSDT_MASK) >> NVME_CMD_PSDT_SHIFT != NVME_PSDT_SGL_MPTR_CONTIG) {
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_DNR;
	}
	len = sgl->unkeyed.length;
	switch (nvme_sgl_id(sgl)) {
	case NVME_SGL_ID_INCAPSULE:
		if (xfer != NVME_XFER_HOST_TO_CTRLR) {
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID) |
			       NVME_STATUS_DNR;
		}
		if (sgl->address > icd_len) {
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_SGL_OFFSET) |
			       NVME_STATUS_DNR;
		}
		if (len > icd_len - sgl->address || len > max_icd) {
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID) |
			       NVME_STATUS_DNR;
		}
		*icd = true;
		*icd_offset = (uint32_t)sgl->address;
		break;
	case NVME_SGL_ID_TRANSPORT:
		if (icd_len != 0) {
			/* Data in the capsule that the descriptor does not describe. */
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) |
			       NVME_STATUS_DNR;
		}
		if (len > max_io_size) {
			return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID) |
			       NVME_STATUS_DNR;
		}
		break;
	default:
		return NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID) |
		       NVME_STATUS_DNR;
	}
	*length = len;
	return 0;
}
