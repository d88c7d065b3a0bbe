/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the NVMe/TCP controller-side PDU checks
 * (target/tcp_pdu.c). The input is one configuration byte followed by a
 * stream of PDUs as a host would send them; the harness walks the stream the
 * way target/tcp_conn.c does (common header check, header digest, per-type
 * checks, in-capsule data, R2T'd H2CData, data digests) and stops at the
 * first error the target would treat as fatal.
 *
 * Every buffer the real transport would write or read is allocated here at
 * exactly the size the checks promise, so a check that lets through a length
 * or offset the transport cannot handle shows up as an ASan report.
 *
 * Configuration byte:
 *   bit 0: the ICReq exchange already happened (lets the fuzzer start with
 *          commands); then bits 1/2 are the negotiated header/data digests
 *   bit 3: an I/O queue (in-capsule data limit of I/O queues, else admin)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gga/nvme_spec.h"
#include "gga/nvme_tcp.h"
#include "gga/util.h"

#include "target/tcp_internal.h"
#include "fuzz_common.h"

#define CFG_IC_DONE  (1u << 0)
#define CFG_HDGST    (1u << 1)
#define CFG_DDGST    (1u << 2)
#define CFG_IO_QUEUE (1u << 3)

/* The transport's defaults (target/tcp.c): admin and I/O in-capsule data, largest I/O. */
#define FUZZ_ADMIN_ICD   TCP_ADMIN_ICD_SIZE
#define FUZZ_IO_ICD      4096u
#define FUZZ_MAX_IO_SIZE (128u * 1024)
/* Commands waiting for H2CData; the ttag of an R2T is the slot index. */
#define FUZZ_MAX_R2T     4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keeps the reads of in-capsule data from being optimized away. */
static volatile uint32_t g_sink;

struct r2t_slot {
	bool busy;
	uint16_t cid;
	uint32_t length;
	uint32_t received;
	uint8_t *buf; /* exactly length bytes */
};

/*
 * Consume a PDU's padding, data and data digest. The data goes to dst
 * (NULL = discard) at dst_off. Returns false if the input ran out or the
 * data digest is wrong (the target fails the command; the harness stops).
 */
static bool
take_data(struct fuzz_input *s, const struct nvmf_tcp_layout *layout, uint8_t *dst,
	  uint32_t dst_off)
{
	const uint8_t *pad, *d, *dg;
	uint32_t want;

	pad = fuzz_take(s, layout->pad_len);
	d = fuzz_take(s, layout->data_len);
	if (pad == NULL || d == NULL) {
		return false;
	}
	if (dst != NULL && layout->data_len > 0) {
		memcpy(dst + dst_off, d, layout->data_len);
	}
	if (layout->ddgst_len == 0) {
		return true;
	}
	dg = fuzz_take(s, NVME_TCP_DIGEST_LEN);
	if (dg == NULL) {
		return false;
	}
	want = crc32c(d, layout->data_len, 0);
	return memcmp(&want, dg, sizeof(want)) == 0;
}

static bool
handle_capsule(struct fuzz_input *s, const union nvme_tcp_pdu_hdr *hdr,
	       const struct nvmf_tcp_layout *layout, const struct nvmf_tcp_rx_ctx *ctx,
	       struct r2t_slot *slots)
{
	struct nvme_cmd cmd;
	uint32_t len, icd_off;
	uint8_t *icd_area, *copy;
	uint16_t status;
	bool icd, ok;
	int i;

	memcpy(&cmd, &hdr->cmd.ccsqe, sizeof(cmd));
	status = nvmf_tcp_sgl_parse(&cmd, layout->data_len, ctx->max_icd, FUZZ_MAX_IO_SIZE, &len,
				    &icd, &icd_off);
	/* The request's in-capsule area is max_icd bytes; the data is received into it. */
	icd_area = malloc(ctx->max_icd > 0 ? ctx->max_icd : 1);
	if (icd_area == NULL) {
		return false;
	}
	ok = take_data(s, layout, status == 0 ? icd_area : NULL, 0);
	if (ok && status == 0 && icd && len > 0) {
		/*
		 * The command reads [icd_off, icd_off + len): that must lie in what
		 * actually arrived, which this copy is exactly the size of.
		 */
		copy = malloc(layout->data_len);
		if (copy != NULL) {
			memcpy(copy, icd_area, layout->data_len);
			g_sink += crc32c(copy + icd_off, len, 0);
			free(copy);
		}
	} else if (ok && status == 0 && !icd && len > 0) {
		/* Data to fetch with an R2T: park the command in a free slot. */
		for (i = 0; i < FUZZ_MAX_R2T; i++) {
			if (!slots[i].busy) {
				slots[i].buf = malloc(len);
				if (slots[i].buf == NULL) {
					break;
				}
				slots[i].busy = true;
				slots[i].cid = cmd.cid;
				slots[i].length = len;
				slots[i].received = 0;
				break;
			}
		}
	}
	free(icd_area);
	return ok;
}

static bool
handle_h2c(struct fuzz_input *s, const union nvme_tcp_pdu_hdr *hdr,
	   const struct nvmf_tcp_layout *layout, struct r2t_slot *slots)
{
	const struct nvme_tcp_data_hdr *h = &hdr->data;
	struct nvmf_tcp_fatal err;
	struct r2t_slot *slot;

	if (h->ttag >= FUZZ_MAX_R2T || !slots[h->ttag].busy) {
		return false;
	}
	slot = &slots[h->ttag];
	if (nvmf_tcp_h2c_check(h, layout, slot->cid, slot->received, slot->length, &err) != 0) {
		return false;
	}
	if (!take_data(s, layout, slot->buf, h->datao)) {
		return false;
	}
	slot->received += layout->data_len;
	if (slot->received == slot->length) {
		free(slot->buf);
		memset(slot, 0, sizeof(*slot));
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct r2t_slot slots[FUZZ_MAX_R2T] = {};
	union nvme_tcp_pdu_hdr hdr;
	struct nvmf_tcp_rx_ctx ctx = {};
	struct nvmf_tcp_layout layout;
	struct nvmf_tcp_fatal err;
	struct fuzz_input s = { data, size };
	const uint8_t *p;
	uint32_t need;
	uint8_t cfg;
	int i;

	if (size < 1) {
		return 0;
	}
	cfg = *fuzz_take(&s, 1);
	ctx.ic_done = cfg & CFG_IC_DONE;
	ctx.hdgst = ctx.ic_done && (cfg & CFG_HDGST);
	ctx.ddgst = ctx.ic_done && (cfg & CFG_DDGST);
	ctx.max_icd = (cfg & CFG_IO_QUEUE) ? FUZZ_IO_ICD : FUZZ_ADMIN_ICD;
	ctx.maxh2cdata = TCP_MAXH2CDATA;

	for (;;) {
		p = fuzz_take(&s, sizeof(struct nvme_tcp_common_hdr));
		if (p == NULL) {
			break;
		}
		memset(&hdr, 0, sizeof(hdr));
		memcpy(&hdr, p, sizeof(struct nvme_tcp_common_hdr));
		if (nvmf_tcp_ch_check(&hdr.ch, &ctx, &layout, &err) != 0) {
			break;
		}
		/* The layout must account for every byte of the PDU the host said it sends. */
		if (hdr.ch.pdu_type != NVME_TCP_PDU_H2C_TERM_REQ &&
		    (uint64_t)layout.hlen + layout.hdgst_len + layout.pad_len + layout.data_len +
				    layout.ddgst_len !=
			    hdr.ch.plen) {
			__builtin_trap();
		}
		need = layout.hlen + layout.hdgst_len;
		if (need > sizeof(hdr.raw)) {
			__builtin_trap();
		}
		p = fuzz_take(&s, need - sizeof(struct nvme_tcp_common_hdr));
		if (p == NULL) {
			break;
		}
		memcpy(hdr.raw + sizeof(struct nvme_tcp_common_hdr), p,
		       need - sizeof(struct nvme_tcp_common_hdr));
		if (layout.hdgst_len > 0 && !nvmf_tcp_hdgst_ok(hdr.raw, layout.hlen)) {
			break;
		}
		if (hdr.ch.pdu_type == NVME_TCP_PDU_ICREQ) {
			if (nvmf_tcp_icreq_check(&hdr.icreq, &err) != 0) {
				break;
			}
			ctx.ic_done = true;
			ctx.hdgst = hdr.icreq.dgst & NVME_TCP_DGST_HDR_ENABLE;
			ctx.ddgst = hdr.icreq.dgst & NVME_TCP_DGST_DATA_ENABLE;
		} else if (hdr.ch.pdu_type == NVME_TCP_PDU_H2C_TERM_REQ) {
			/* The host ends the connection. */
			break;
		} else if (hdr.ch.pdu_type == NVME_TCP_PDU_CAPSULE_CMD) {
			if (!handle_capsule(&s, &hdr, &layout, &ctx, slots)) {
				break;
			}
		} else if (hdr.ch.pdu_type == NVME_TCP_PDU_H2C_DATA) {
			if (!handle_h2c(&s, &hdr, &layout, slots)) {
				break;
			}
		} else {
			/* ch_check accepted a type a host does not send. */
			__builtin_trap();
		}
	}
	for (i = 0; i < FUZZ_MAX_R2T; i++) {
		free(slots[i].buf);
	}
	return 0;
}
