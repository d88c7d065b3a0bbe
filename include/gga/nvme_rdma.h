/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/RDMA wire definitions (NVMe RDMA Transport Specification) shared by
 * the target (target/rdma.c) and the host (initiator/nvme_rdma.c).
 *
 * NVMe/RDMA has no PDUs of its own: command capsules (the 64-byte SQE,
 * optionally followed by in-capsule data) and response capsules (the 16-byte
 * CQE) travel as RDMA SEND/RECV messages, and data moves by RDMA READ/WRITE
 * against the host memory named by keyed SGL data blocks (nvme_spec.h). What
 * is specific to the transport is the private data exchanged in the RDMA CM
 * connect request, accept and reject, defined here.
 *
 * These are the shared wire definitions: both sides use them as they are.
 * Add definitions additively; never change an existing layout or value.
 * Multi-byte fields are little-endian (see nvme_spec.h).
 */
#ifndef GGA_NVME_RDMA_H
#define GGA_NVME_RDMA_H

#include <assert.h>
#include <stdint.h>

#include "gga/nvme_spec.h"

#define NVME_RDMA_DEFAULT_PORT      4420
/* The only record format defined so far. */
#define NVME_RDMA_CM_RECFMT_1_0     0x0000
/* Capsules: a command is the SQE plus in-capsule data, a response the CQE. */
#define NVME_RDMA_CMD_CAPSULE_MIN   64
#define NVME_RDMA_RSP_CAPSULE_SIZE  16
/* A keyed SGL data block carries at most 2^24 - 1 bytes. */
#define NVME_RDMA_MAX_KEYED_SGL_LEN 0xffffffu

/*
 * RDMA_CM_REQUEST private data (host → target, 32 bytes).
 *
 * hrqsize: RECV buffers the host posted for responses (1's based).
 * hsqsize: the host's submission queue size, 0's based, as Connect's SQSIZE.
 * Linux's host sends hrqsize = queue entries and hsqsize = entries - 1; its
 * target takes hsqsize + 1 as the number of commands it must be able to
 * receive and hrqsize as the number of responses it may have in flight.
 * cntlid: the controller ID for I/O queues (0xffff for the admin queue of a
 * dynamic controller); informational, Connect carries the real one.
 */
struct nvme_rdma_cm_req {
	uint16_t recfmt;
	uint16_t qid;
	uint16_t hrqsize;
	uint16_t hsqsize;
	uint16_t cntlid;
	uint8_t rsvd[22];
} __attribute__((packed));
static_assert(sizeof(struct nvme_rdma_cm_req) == 32, "RDMA CM request private data");

/* RDMA_CM_ACCEPT private data (target → host, 32 bytes). crqsize: RECVs the target posted. */
struct nvme_rdma_cm_rep {
	uint16_t recfmt;
	uint16_t crqsize;
	uint8_t rsvd[28];
} __attribute__((packed));
static_assert(sizeof(struct nvme_rdma_cm_rep) == 32, "RDMA CM accept private data");

/* RDMA_CM_REJECT private data (target → host, 4 bytes). */
struct nvme_rdma_cm_rej {
	uint16_t recfmt;
	uint16_t sts; /* enum nvme_rdma_cm_status */
} __attribute__((packed));
static_assert(sizeof(struct nvme_rdma_cm_rej) == 4, "RDMA CM reject private data");

/* Why a target rejects a connect request (nvme_rdma_cm_rej.sts). */
enum nvme_rdma_cm_status {
	NVME_RDMA_CM_INVALID_LEN = 0x01, /* private data too short */
	NVME_RDMA_CM_INVALID_RECFMT = 0x02,
	NVME_RDMA_CM_INVALID_QID = 0x03,
	NVME_RDMA_CM_INVALID_HSQSIZE = 0x04,
	NVME_RDMA_CM_INVALID_HRQSIZE = 0x05,
	NVME_RDMA_CM_NO_RSC = 0x06,      /* out of resources */
	NVME_RDMA_CM_INVALID_IRD = 0x07, /* responder resources */
	NVME_RDMA_CM_INVALID_ORD = 0x08, /* initiator depth */
	NVME_RDMA_CM_INVALID_CNTLID = 0x09,
};

/*
 * TSAS of a discovery log entry for NVMe/RDMA (nvme_discovery_log_entry.tsas):
 * byte 0 RDMA_QPTYPE, byte 1 RDMA_PRTYPE, byte 2 RDMA_CMS, bytes 8-9 RDMA_PKEY.
 */
#define NVME_RDMA_TSAS_QPTYPE      0
#define NVME_RDMA_TSAS_PRTYPE      1
#define NVME_RDMA_TSAS_CMS         2
#define NVME_RDMA_QPTYPE_CONNECTED 1 /* reliable connected */
#define NVME_RDMA_PRTYPE_NONE      1 /* no provider specified */
#define NVME_RDMA_CMS_RDMA_CM      1 /* RDMA_IP_CM */

/* A short English name of a reject status, for log messages. */
static inline const char *
nvme_rdma_cm_status_str(uint16_t sts)
{
	switch (sts) {
	case NVME_RDMA_CM_INVALID_LEN:
		return "invalid private data length";
	case NVME_RDMA_CM_INVALID_RECFMT:
		return "invalid record format";
	case NVME_RDMA_CM_INVALID_QID:
		return "invalid queue ID";
	case NVME_RDMA_CM_INVALID_HSQSIZE:
		return "invalid host SQ size";
	case NVME_RDMA_CM_INVALID_HRQSIZE:
		return "invalid host RQ size";
	case NVME_RDMA_CM_NO_RSC:
		return "no resources";
	case NVME_RDMA_CM_INVALID_IRD:
		return "invalid IRD";
	case NVME_RDMA_CM_INVALID_ORD:
		return "invalid ORD";
	case NVME_RDMA_CM_INVALID_CNTLID:
		return "invalid controller ID";
	default:
		return "unknown reject status";
	}
}

#endif /* GGA_NVME_RDMA_H */
