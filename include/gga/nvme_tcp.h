/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP PDU definitions (NVMe/TCP Transport Specification 1.0) shared by
 * the target (target/tcp.c) and the host (initiator/).
 *
 * These are the shared wire definitions: both sides use them as they are.
 * Add definitions additively; never change an existing layout or value.
 *
 * A PDU is: header (hlen bytes, starting with the 8-byte common header),
 * then a 4-byte header digest if HDGSTF is set, then padding up to pdo, then
 * data, then a 4-byte data digest if DDGSTF is set; plen counts all of it.
 * Both digests are CRC-32C (crc32c() in gga/util.h), stored little-endian.
 * Multi-byte fields are little-endian (see nvme_spec.h).
 */
#ifndef GGA_NVME_TCP_H
#define GGA_NVME_TCP_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gga/nvme_spec.h"
#include "gga/util.h"

#define NVME_TCP_DEFAULT_PORT      4420
#define NVME_TCP_DISCOVERY_PORT    8009
#define NVME_TCP_DIGEST_LEN        4
/* Maximum header length of any PDU type (ICReq/ICResp). */
#define NVME_TCP_MAX_HLEN          128
/* MAXH2CDATA must be at least 4 KiB and a multiple of 4. */
#define NVME_TCP_MIN_MAXH2CDATA    4096
/* Maximum PDA value (alignment = (PDA + 1) * 4 bytes). */
#define NVME_TCP_MAX_PDA           31
/* A TermReq carries at most this many bytes of the offending PDU header. */
#define NVME_TCP_TERM_REQ_MAX_DATA 128
#define NVME_TCP_TERM_REQ_MIN_PLEN 24
#define NVME_TCP_TERM_REQ_MAX_PLEN 152

enum nvme_tcp_pfv {
	NVME_TCP_PFV_1_0 = 0x0,
};

enum nvme_tcp_pdu_type {
	NVME_TCP_PDU_ICREQ = 0x00,
	NVME_TCP_PDU_ICRESP = 0x01,
	NVME_TCP_PDU_H2C_TERM_REQ = 0x02,
	NVME_TCP_PDU_C2H_TERM_REQ = 0x03,
	NVME_TCP_PDU_CAPSULE_CMD = 0x04,
	NVME_TCP_PDU_CAPSULE_RESP = 0x05,
	NVME_TCP_PDU_H2C_DATA = 0x06,
	NVME_TCP_PDU_C2H_DATA = 0x07,
	NVME_TCP_PDU_R2T = 0x09,
};

/* Common header flags. */
#define NVME_TCP_F_HDGST        (1u << 0) /* header digest present */
#define NVME_TCP_F_DDGST        (1u << 1) /* data digest present */
#define NVME_TCP_F_DATA_LAST    (1u << 2) /* H2CData/C2HData: last PDU of the transfer */
#define NVME_TCP_F_DATA_SUCCESS (1u << 3) /* C2HData: command done, no CapsuleResp follows */

/* ICReq/ICResp DGST field. */
#define NVME_TCP_DGST_HDR_ENABLE  (1u << 0)
#define NVME_TCP_DGST_DATA_ENABLE (1u << 1)

/* Fatal error status (FES) of a TermReq. */
enum nvme_tcp_fes {
	NVME_TCP_FES_INVALID_PDU_HDR_FIELD = 0x01, /* FEI = byte offset of the field */
	NVME_TCP_FES_PDU_SEQUENCE_ERROR = 0x02,
	NVME_TCP_FES_HDR_DIGEST_ERROR = 0x03,
	NVME_TCP_FES_DATA_OUT_OF_RANGE = 0x04,
	NVME_TCP_FES_DATA_LIMIT_EXCEEDED = 0x05,   /* also: R2T limit exceeded */
	NVME_TCP_FES_UNSUPPORTED_PARAMETER = 0x06, /* FEI = byte offset of the parameter */
};

/* Common header: 8 bytes at the start of every PDU. */
struct nvme_tcp_common_hdr {
	uint8_t pdu_type;
	uint8_t flags;
	uint8_t hlen;
	uint8_t pdo;
	uint32_t plen;
};
static_assert(sizeof(struct nvme_tcp_common_hdr) == 8, "common header size");
static_assert(offsetof(struct nvme_tcp_common_hdr, plen) == 4, "plen offset");

/* ICReq (host to controller), hlen = plen = 128. */
struct nvme_tcp_icreq {
	struct nvme_tcp_common_hdr ch;
	uint16_t pfv;
	uint8_t hpda; /* host PDU data alignment, (hpda + 1) * 4 bytes */
	uint8_t dgst;
	uint32_t maxr2t; /* 0-based max outstanding R2Ts per command */
	uint8_t rsvd[112];
};
static_assert(sizeof(struct nvme_tcp_icreq) == 128, "ICReq size");
static_assert(offsetof(struct nvme_tcp_icreq, pfv) == 8, "ICReq pfv");
static_assert(offsetof(struct nvme_tcp_icreq, hpda) == 10, "ICReq hpda");
static_assert(offsetof(struct nvme_tcp_icreq, dgst) == 11, "ICReq dgst");
static_assert(offsetof(struct nvme_tcp_icreq, maxr2t) == 12, "ICReq maxr2t");

/* ICResp (controller to host), hlen = plen = 128. */
struct nvme_tcp_icresp {
	struct nvme_tcp_common_hdr ch;
	uint16_t pfv;
	uint8_t cpda; /* controller PDU data alignment */
	uint8_t dgst;
	uint32_t maxh2cdata; /* max data bytes in one H2CData PDU */
	uint8_t rsvd[112];
};
static_assert(sizeof(struct nvme_tcp_icresp) == 128, "ICResp size");
static_assert(offsetof(struct nvme_tcp_icresp, cpda) == 10, "ICResp cpda");
static_assert(offsetof(struct nvme_tcp_icresp, maxh2cdata) == 12, "ICResp maxh2cdata");

/*
 * H2CTermReq / C2HTermReq, hlen = 24, followed (pdo = 0, no digests) by up to
 * 128 bytes of the PDU header that caused the error.
 */
struct nvme_tcp_term_req_hdr {
	struct nvme_tcp_common_hdr ch;
	uint16_t fes;
	uint8_t fei[4]; /* fatal error information, little-endian, unaligned */
	uint8_t rsvd[10];
};
static_assert(sizeof(struct nvme_tcp_term_req_hdr) == 24, "TermReq header size");
static_assert(offsetof(struct nvme_tcp_term_req_hdr, fes) == 8, "TermReq fes");
static_assert(offsetof(struct nvme_tcp_term_req_hdr, fei) == 10, "TermReq fei");

/* CapsuleCmd, hlen = 72: the SQE follows the common header; in-capsule data at pdo. */
struct nvme_tcp_cmd {
	struct nvme_tcp_common_hdr ch;
	struct nvme_cmd ccsqe;
};
static_assert(sizeof(struct nvme_tcp_cmd) == 72, "CapsuleCmd header size");

/* CapsuleResp, hlen = 24. */
struct nvme_tcp_rsp {
	struct nvme_tcp_common_hdr ch;
	struct nvme_cpl rccqe;
};
static_assert(sizeof(struct nvme_tcp_rsp) == 24, "CapsuleResp header size");

/* H2CData / C2HData, hlen = 24. ttag is reserved in C2HData. */
struct nvme_tcp_data_hdr {
	struct nvme_tcp_common_hdr ch;
	uint16_t cccid; /* command capsule CID */
	uint16_t ttag;  /* H2CData: transfer tag from the R2T */
	uint32_t datao; /* offset of this PDU's data in the command's data */
	uint32_t datal; /* length of this PDU's data */
	uint8_t rsvd[4];
};
static_assert(sizeof(struct nvme_tcp_data_hdr) == 24, "data PDU header size");
static_assert(offsetof(struct nvme_tcp_data_hdr, cccid) == 8, "data cccid");
static_assert(offsetof(struct nvme_tcp_data_hdr, ttag) == 10, "data ttag");
static_assert(offsetof(struct nvme_tcp_data_hdr, datao) == 12, "data datao");
static_assert(offsetof(struct nvme_tcp_data_hdr, datal) == 16, "data datal");

/* R2T, hlen = 24. */
struct nvme_tcp_r2t_hdr {
	struct nvme_tcp_common_hdr ch;
	uint16_t cccid;
	uint16_t ttag;
	uint32_t r2to; /* offset of the requested data */
	uint32_t r2tl; /* length of the requested data */
	uint8_t rsvd[4];
};
static_assert(sizeof(struct nvme_tcp_r2t_hdr) == 24, "R2T header size");
static_assert(offsetof(struct nvme_tcp_r2t_hdr, r2to) == 12, "R2T r2to");
static_assert(offsetof(struct nvme_tcp_r2t_hdr, r2tl) == 16, "R2T r2tl");

/* Fixed hlen of each PDU type. */
#define NVME_TCP_ICREQ_HLEN    128
#define NVME_TCP_ICRESP_HLEN   128
#define NVME_TCP_TERM_REQ_HLEN 24
#define NVME_TCP_CMD_HLEN      72
#define NVME_TCP_RSP_HLEN      24
#define NVME_TCP_DATA_HLEN     24
#define NVME_TCP_R2T_HLEN      24

/* Any PDU header, sized for the largest one plus its header digest. */
union nvme_tcp_pdu_hdr {
	struct nvme_tcp_common_hdr ch;
	struct nvme_tcp_icreq icreq;
	struct nvme_tcp_icresp icresp;
	struct nvme_tcp_term_req_hdr term;
	struct nvme_tcp_cmd cmd;
	struct nvme_tcp_rsp rsp;
	struct nvme_tcp_data_hdr data;
	struct nvme_tcp_r2t_hdr r2t;
	uint8_t raw[NVME_TCP_MAX_HLEN + NVME_TCP_DIGEST_LEN];
};

static inline uint32_t
nvme_tcp_term_req_fei(const struct nvme_tcp_term_req_hdr *t)
{
	return (uint32_t)t->fei[0] | (uint32_t)t->fei[1] << 8 | (uint32_t)t->fei[2] << 16 |
	       (uint32_t)t->fei[3] << 24;
}

static inline void
nvme_tcp_term_req_set_fei(struct nvme_tcp_term_req_hdr *t, uint32_t fei)
{
	t->fei[0] = (uint8_t)fei;
	t->fei[1] = (uint8_t)(fei >> 8);
	t->fei[2] = (uint8_t)(fei >> 16);
	t->fei[3] = (uint8_t)(fei >> 24);
}

/* The header digest of a PDU whose header is hlen bytes at hdr. */
static inline uint32_t
nvme_tcp_hdgst(const void *hdr, uint32_t hlen)
{
	return crc32c(hdr, hlen, 0);
}

/* Data offset a PDU with this header length and header digest setting would use for pda. */
static inline uint32_t
nvme_tcp_pdo(uint32_t hlen, bool hdgst, uint32_t pda)
{
	uint32_t off = hlen + (hdgst ? NVME_TCP_DIGEST_LEN : 0);
	uint32_t align = (pda + 1) * 4;

	return (off + align - 1) / align * align;
}

#endif /* GGA_NVME_TCP_H */
