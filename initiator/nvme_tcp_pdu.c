/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP PDUs, host side: building the headers we send and checking the
 * headers we receive. Pure functions over buffers; nvme_tcp.c moves them.
 */
#include <errno.h>
#include <string.h>

#include "gga/util.h"

#include "nvme_internal.h"

void
nvme_tcp_build_icreq(struct nvme_tcp_icreq *icreq, bool hdgst, bool ddgst)
{
	memset(icreq, 0, sizeof(*icreq));
	icreq->ch.pdu_type = NVME_TCP_PDU_ICREQ;
	icreq->ch.hlen = NVME_TCP_ICREQ_HLEN;
	icreq->ch.plen = NVME_TCP_ICREQ_HLEN;
	icreq->pfv = NVME_TCP_PFV_1_0;
	/* No alignment wanted for data the controller sends us. */
	icreq->hpda = 0;
	icreq->dgst = (hdgst ? NVME_TCP_DGST_HDR_ENABLE : 0) |
		      (ddgst ? NVME_TCP_DGST_DATA_ENABLE : 0);
	/* One outstanding R2T per command (0-based). */
	icreq->maxr2t = 0;
}

int
nvme_tcp_check_icresp(const struct nvme_tcp_icresp *icresp, bool hdgst, bool ddgst, uint32_t *cpda,
		      uint32_t *maxh2cdata, const char **why)
{
	bool got_hdgst = (icresp->dgst & NVME_TCP_DGST_HDR_ENABLE) != 0;
	bool got_ddgst = (icresp->dgst & NVME_TCP_DGST_DATA_ENABLE) != 0;

	if (icresp->ch.pdu_type != NVME_TCP_PDU_ICRESP || icresp->ch.hlen != NVME_TCP_ICRESP_HLEN ||
	    icresp->ch.plen != NVME_TCP_ICRESP_HLEN || icresp->ch.pdo != 0) {
		*why = "malformed ICResp header";
		return -EPROTO;
	}
	if (icresp->pfv != NVME_TCP_PFV_1_0) {
		*why = "unsupported PDU format version in ICResp";
		return -EPROTO;
	}
	if (icresp->cpda > NVME_TCP_MAX_PDA) {
		*why = "invalid CPDA in ICResp";
		return -EPROTO;
	}
	if ((icresp->dgst & ~(NVME_TCP_DGST_HDR_ENABLE | NVME_TCP_DGST_DATA_ENABLE)) != 0) {
		*why = "invalid digest field in ICResp";
		return -EPROTO;
	}
	/* The controller may only turn on what we asked for, and must turn on what we asked for. */
	if (got_hdgst != hdgst) {
		*why = hdgst ? "controller refused header digests" :
			       "controller enabled header digests that were not requested";
		return -EPROTO;
	}
	if (got_ddgst != ddgst) {
		*why = ddgst ? "controller refused data digests" :
			       "controller enabled data digests that were not requested";
		return -EPROTO;
	}
	if (icresp->maxh2cdata < NVME_TCP_MIN_MAXH2CDATA || icresp->maxh2cdata % 4 != 0) {
		*why = "invalid MAXH2CDATA in ICResp";
		return -EPROTO;
	}
	*cpda = icresp->cpda;
	*maxh2cdata = icresp->maxh2cdata;
	return 0;
}

/* Digest, padding and lengths common to CapsuleCmd and H2CData. */
static uint32_t
finish_hdr(uint8_t *buf, uint32_t hlen, uint32_t data_len, bool hdgst, bool ddgst, uint32_t cpda)
{
	struct nvme_tcp_common_hdr *ch = (struct nvme_tcp_common_hdr *)buf;
	uint32_t hdr_total = hlen + (hdgst ? NVME_TCP_DIGEST_LEN : 0);
	uint32_t pdo = 0, plen;
	uint32_t digest;

	ch->hlen = (uint8_t)hlen;
	if (hdgst) {
		ch->flags |= NVME_TCP_F_HDGST;
	}
	if (data_len > 0) {
		pdo = nvme_tcp_pdo(hlen, hdgst, cpda);
		if (ddgst) {
			ch->flags |= NVME_TCP_F_DDGST;
		}
		plen = pdo + data_len + (ddgst ? NVME_TCP_DIGEST_LEN : 0);
	} else {
		plen = hdr_total;
	}
	ch->pdo = (uint8_t)pdo;
	ch->plen = plen;
	/* The digest covers the finished header, flags and lengths included. */
	if (hdgst) {
		digest = nvme_tcp_hdgst(buf, hlen);
		memcpy(buf + hlen, &digest, sizeof(digest));
	}
	if (pdo > hdr_total) {
		memset(buf + hdr_total, 0, pdo - hdr_total);
		return pdo;
	}
	return data_len > 0 ? pdo : hdr_total;
}

uint32_t
nvme_tcp_build_cmd_hdr(uint8_t *buf, const struct nvme_cmd *cmd, uint32_t icd_len, bool hdgst,
		       bool ddgst, uint32_t cpda)
{
	struct nvme_tcp_cmd *pdu = (struct nvme_tcp_cmd *)buf;

	memset(pdu, 0, sizeof(*pdu));
	pdu->ch.pdu_type = NVME_TCP_PDU_CAPSULE_CMD;
	pdu->ccsqe = *cmd;
	return finish_hdr(buf, NVME_TCP_CMD_HLEN, icd_len, hdgst, ddgst, cpda);
}

uint32_t
nvme_tcp_build_h2c_hdr(uint8_t *buf, uint16_t cccid, uint16_t ttag, uint32_t datao, uint32_t datal,
		       bool last, bool hdgst, bool ddgst, uint32_t cpda)
{
	struct nvme_tcp_data_hdr *pdu = (struct nvme_tcp_data_hdr *)buf;

	memset(pdu, 0, sizeof(*pdu));
	pdu->ch.pdu_type = NVME_TCP_PDU_H2C_DATA;
	pdu->ch.flags = last ? NVME_TCP_F_DATA_LAST : 0;
	pdu->cccid = cccid;
	pdu->ttag = ttag;
	pdu->datao = datao;
	pdu->datal = datal;
	return finish_hdr(buf, NVME_TCP_DATA_HLEN, datal, hdgst, ddgst, cpda);
}

uint32_t
nvme_tcp_build_term_req(uint8_t *buf, uint16_t fes, uint32_t fei, const void *hdr, uint32_t hdr_len)
{
	struct nvme_tcp_term_req_hdr *term = (struct nvme_tcp_term_req_hdr *)buf;

	if (hdr_len > NVME_TCP_TERM_REQ_MAX_DATA) {
		hdr_len = NVME_TCP_TERM_REQ_MAX_DATA;
	}
	memset(term, 0, sizeof(*term));
	term->ch.pdu_type = NVME_TCP_PDU_H2C_TERM_REQ;
	term->ch.hlen = NVME_TCP_TERM_REQ_HLEN;
	term->ch.plen = NVME_TCP_TERM_REQ_HLEN + hdr_len;
	term->fes = fes;
	nvme_tcp_term_req_set_fei(term, fei);
	if (hdr_len > 0) {
		memcpy(buf + NVME_TCP_TERM_REQ_HLEN, hdr, hdr_len);
	}
	return NVME_TCP_TERM_REQ_HLEN + hdr_len;
}

/* The fixed header length of a PDU type the host may receive, 0 if it may not. */
static uint32_t
c2h_hlen(uint8_t type)
{
	switch (type) {
	case NVME_TCP_PDU_ICRESP:
		return NVME_TCP_ICRESP_HLEN;
	case NVME_TCP_PDU_C2H_TERM_REQ:
		return NVME_TCP_TERM_REQ_HLEN;
	case NVME_TCP_PDU_CAPSULE_RESP:
		return NVME_TCP_RSP_HLEN;
	case NVME_TCP_PDU_C2H_DATA:
		return NVME_TCP_DATA_HLEN;
	case NVME_TCP_PDU_R2T:
		return NVME_TCP_R2T_HLEN;
	default:
		return 0;
	}
}

int
nvme_tcp_check_ch(const struct nvme_tcp_common_hdr *ch, bool icresp_expected, bool hdgst,
		  bool ddgst, uint32_t *hdr_total, uint32_t *fei)
{
	uint32_t hlen = c2h_hlen(ch->pdu_type);
	bool digests = ch->pdu_type != NVME_TCP_PDU_ICRESP &&
		       ch->pdu_type != NVME_TCP_PDU_C2H_TERM_REQ;
	bool has_hdgst = (ch->flags & NVME_TCP_F_HDGST) != 0;
	bool has_ddgst = (ch->flags & NVME_TCP_F_DDGST) != 0;
	uint32_t total;

	*fei = offsetof(struct nvme_tcp_common_hdr, pdu_type);
	if (hlen == 0 || (ch->pdu_type == NVME_TCP_PDU_ICRESP) != icresp_expected) {
		/* A TermReq may come at any time, even instead of the ICResp. */
		if (ch->pdu_type != NVME_TCP_PDU_C2H_TERM_REQ || hlen == 0) {
			return hlen == 0 ? NVME_TCP_FES_INVALID_PDU_HDR_FIELD :
					   NVME_TCP_FES_PDU_SEQUENCE_ERROR;
		}
	}
	*fei = offsetof(struct nvme_tcp_common_hdr, flags);
	if (digests) {
		if (has_hdgst != hdgst) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
		/* Only a data PDU may carry a data digest, and it must if negotiated. */
		if (ch->pdu_type == NVME_TCP_PDU_C2H_DATA) {
			if (has_ddgst != ddgst) {
				return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
			}
		} else if (has_ddgst) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
	} else if ((ch->flags & (NVME_TCP_F_HDGST | NVME_TCP_F_DDGST)) != 0) {
		return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
	}
	*fei = offsetof(struct nvme_tcp_common_hdr, hlen);
	if (ch->hlen != hlen) {
		return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
	}
	total = hlen + (digests && hdgst ? NVME_TCP_DIGEST_LEN : 0);
	*fei = offsetof(struct nvme_tcp_common_hdr, pdo);
	if (ch->pdu_type == NVME_TCP_PDU_C2H_DATA) {
		if (ch->pdo < total || ch->pdo % 4 != 0) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
	} else if (ch->pdo != 0) {
		return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
	}
	*fei = offsetof(struct nvme_tcp_common_hdr, plen);
	switch (ch->pdu_type) {
	case NVME_TCP_PDU_C2H_DATA:
		if (ch->plen <= (uint32_t)ch->pdo + (has_ddgst ? NVME_TCP_DIGEST_LEN : 0)) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
		break;
	case NVME_TCP_PDU_C2H_TERM_REQ:
		if (ch->plen < NVME_TCP_TERM_REQ_MIN_PLEN ||
		    ch->plen > NVME_TCP_TERM_REQ_MAX_PLEN) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
		break;
	default:
		if (ch->plen != total) {
			return NVME_TCP_FES_INVALID_PDU_HDR_FIELD;
		}
		break;
	}
	*hdr_total = total;
	*fei = 0;
	return 0;
}

int
nvme_iov_range(const struct iovec *iov, int iovcnt, size_t offset, size_t len, struct iovec *out,
	       int max)
{
	int i, n = 0;

	for (i = 0; i < iovcnt && len > 0 && n < max; i++) {
		size_t seg = iov[i].iov_len;

		if (offset >= seg) {
			offset -= seg;
			continue;
		}
		seg -= offset;
		if (seg > len) {
			seg = len;
		}
		out[n].iov_base = (uint8_t *)iov[i].iov_base + offset;
		out[n].iov_len = seg;
		n++;
		len -= seg;
		offset = 0;
	}
	return n;
}

uint32_t
nvme_tcp_iov_crc(const struct iovec *iov, int iovcnt, size_t offset, size_t len, uint32_t crc)
{
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		size_t seg = iov[i].iov_len;

		if (offset >= seg) {
			offset -= seg;
			continue;
		}
		seg -= offset;
		if (seg > len) {
			seg = len;
		}
		crc = crc32c((const uint8_t *)iov[i].iov_base + offset, seg, crc);
		len -= seg;
		offset = 0;
	}
	return crc;
}
