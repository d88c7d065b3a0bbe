/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe/TCP PDU checks (target/tcp_pdu.c) and of the shared
 * wire headers: layouts, digests, the header checks with every fatal error
 * status, ICReq and H2CData checks, and SGL parsing.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "gga/nvme_spec.h"
#include "gga/nvme_tcp.h"
#include "gga_ut.h"

#include "target/tcp_internal.h"

/* tcp_pdu.c uses the core's direction helper; the real one is in nvmf.c. */
#include "target/tcp_pdu.c"

enum nvme_data_xfer
nvmf_cmd_xfer(const struct nvme_cmd *cmd)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)cmd;

	return nvme_opc_data_xfer(cmd->opc == NVME_OPC_FABRICS ? fc->fctype : cmd->opc);
}

static const struct nvmf_tcp_rx_ctx g_ctx_plain = {
	.ic_done = true,
	.max_icd = 8192,
	.maxh2cdata = 131072,
};
static const struct nvmf_tcp_rx_ctx g_ctx_dgst = {
	.ic_done = true,
	.hdgst = true,
	.ddgst = true,
	.max_icd = 8192,
	.maxh2cdata = 131072,
};

static struct nvme_tcp_common_hdr
ch(uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	struct nvme_tcp_common_hdr h = {
		.pdu_type = type,
		.flags = flags,
		.hlen = hlen,
		.pdo = pdo,
		.plen = plen,
	};

	return h;
}

static int
check(struct nvme_tcp_common_hdr h, const struct nvmf_tcp_rx_ctx *ctx, struct nvmf_tcp_layout *l,
      struct nvmf_tcp_fatal *err)
{
	memset(err, 0xff, sizeof(*err));
	return nvmf_tcp_ch_check(&h, ctx, l, err);
}

static void
test_wire_layouts(void)
{
	union nvme_tcp_pdu_hdr u;

	UT_ASSERT_EQ(sizeof(struct nvme_cmd), 64);
	UT_ASSERT_EQ(sizeof(struct nvme_cpl), 16);
	UT_ASSERT_EQ(sizeof(struct nvme_tcp_icreq), 128);
	UT_ASSERT_EQ(sizeof(struct nvme_tcp_cmd), 72);
	UT_ASSERT_EQ(offsetof(struct nvme_tcp_term_req_hdr, fei), 10);
	UT_ASSERT_EQ(sizeof(u.raw), 132);
	/* CRC-32C check value, and continuation. */
	UT_ASSERT_EQ(crc32c("123456789", 9, 0), 0xe3069283u);
	UT_ASSERT_EQ(crc32c("6789", 4, crc32c("12345", 5, 0)), 0xe3069283u);
	/* Data offsets for header digest and host alignment. */
	UT_ASSERT_EQ(nvme_tcp_pdo(24, false, 0), 24);
	UT_ASSERT_EQ(nvme_tcp_pdo(24, true, 0), 28);
	UT_ASSERT_EQ(nvme_tcp_pdo(24, true, 7), 32);
	UT_ASSERT_EQ(nvme_tcp_pdo(72, false, 31), 128);
	/* Status helpers. */
	UT_ASSERT_EQ(NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_CONNECT_INVALID_HOST), 0x0308);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(0x0308 | NVME_STATUS_DNR), 0x84);
	UT_ASSERT_EQ(NVME_STATUS_GET_SCT(0x0308), 1);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(NVME_STATUS_P));
	/* Keyed SGL accessors (RDMA form). */
	{
		struct nvme_sgl_desc sgl;

		nvme_sgl_set_keyed(&sgl, 0x1122334455667788ull, 0xabcdef, 0x12345678,
				   NVME_SGL_ID_KEYED);
		UT_ASSERT_EQ(nvme_sgl_keyed_length(&sgl), 0xabcdef);
		UT_ASSERT_EQ(nvme_sgl_keyed_key(&sgl), 0x12345678);
		UT_ASSERT_EQ(nvme_sgl_id(&sgl), 0x40);
		UT_ASSERT_EQ(((uint8_t *)&sgl)[15], 0x40);
	}
}

static void
test_ch_types_and_sequence(void)
{
	struct nvmf_tcp_rx_ctx before = g_ctx_plain;
	struct nvmf_tcp_layout l;
	struct nvmf_tcp_fatal err;

	before.ic_done = false;
	/* Only ICReq, H2CTermReq, CapsuleCmd and H2CData come from a host. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_RESP, 0, 24, 0, 24), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(err.fei, 0);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_R2T, 0, 24, 0, 24), &g_ctx_plain, &l, &err), -EPROTO);
	UT_ASSERT_EQ(check(ch(0x42, 0, 24, 0, 24), &g_ctx_plain, &l, &err), -EPROTO);
	UT_ASSERT_EQ(err.fei, 0);
	/* ICReq first, once. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_ICREQ, 0, 128, 0, 128), &before, &l, &err), 0);
	UT_ASSERT_EQ(l.hlen, 128);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_ICREQ, 0, 128, 0, 128), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 0, 72), &before, &l, &err), -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
	/* A host may terminate at any time. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_TERM_REQ, 0, 24, 0, 24), &before, &l, &err), 0);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_TERM_REQ, 0, 24, 0, 24 + 128), &g_ctx_plain, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(l.data_len, 128);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_TERM_REQ, 0, 24, 0, 153), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 4);
}

static void
test_ch_lengths(void)
{
	struct nvmf_tcp_rx_ctx before = g_ctx_plain;
	struct nvmf_tcp_layout l;
	struct nvmf_tcp_fatal err;

	before.ic_done = false;
	/* hlen must be the type's. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 80, 0, 80), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(err.fei, 2);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_ICREQ, 0, 128, 0, 132), &before, &l, &err), -EPROTO);
	UT_ASSERT_EQ(err.fei, 4);
	/* plen below the header. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 0, 40), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 4);
	/* A capsule without data. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 0, 72), &g_ctx_plain, &l, &err), 0);
	UT_ASSERT_EQ(l.data_len, 0);
	/* With 4 KiB of data right after the header. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 72, 72 + 4096), &g_ctx_plain, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(l.data_len, 4096);
	UT_ASSERT_EQ(l.pad_len, 0);
	/* Padding before the data is allowed (dword aligned). */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 128, 128 + 512), &g_ctx_plain, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(l.pad_len, 56);
	UT_ASSERT_EQ(l.data_len, 512);
	/* pdo inside the header, unaligned, or past the end. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 16, 72 + 512), &g_ctx_plain, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 3);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 74, 74 + 512), &g_ctx_plain, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 3);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 200, 100), &g_ctx_plain, &l, &err),
		     -EPROTO);
	/* More in-capsule data than the queue takes. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 72, 72 + 8192), &g_ctx_plain, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 72, 72 + 8196), &g_ctx_plain, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_DATA_LIMIT_EXCEEDED);
	/* H2CData: data required, at most MAXH2CDATA. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_DATA, 0, 24, 0, 24), &g_ctx_plain, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 4);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_DATA, 0, 24, 24, 24 + 131072), &g_ctx_plain, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_H2C_DATA, 0, 24, 24, 24 + 131076), &g_ctx_plain, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_DATA_LIMIT_EXCEEDED);
}

static void
test_ch_digests(void)
{
	struct nvmf_tcp_rx_ctx before = g_ctx_plain;
	struct nvmf_tcp_layout l;
	struct nvmf_tcp_fatal err;
	uint8_t f = NVME_TCP_F_HDGST | NVME_TCP_F_DDGST;

	before.ic_done = false;
	/* Flags must match what was negotiated. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, NVME_TCP_F_HDGST, 72, 0, 76), &g_ctx_plain,
			   &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 1);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 0, 72), &g_ctx_dgst, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 1);
	/* No data digest flag without data; both with data. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, NVME_TCP_F_HDGST, 72, 0, 76), &g_ctx_dgst,
			   &l, &err),
		     0);
	UT_ASSERT_EQ(l.hdgst_len, 4);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, f, 72, 0, 76), &g_ctx_dgst, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, f, 72, 76, 76 + 512 + 4), &g_ctx_dgst, &l,
			   &err),
		     0);
	UT_ASSERT_EQ(l.data_len, 512);
	UT_ASSERT_EQ(l.ddgst_len, 4);
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, NVME_TCP_F_HDGST, 72, 76, 76 + 512),
			   &g_ctx_dgst, &l, &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 1);
	/* The data must not start inside the header digest. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_CAPSULE_CMD, f, 72, 72, 72 + 512 + 8), &g_ctx_dgst, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 3);
	/* ICReq and TermReq never carry digests. */
	UT_ASSERT_EQ(check(ch(NVME_TCP_PDU_ICREQ, NVME_TCP_F_HDGST, 128, 0, 128), &before, &l,
			   &err),
		     -EPROTO);
	UT_ASSERT_EQ(err.fei, 1);

	/* Header digest verification. */
	{
		uint8_t buf[72 + 4] = { 0 };
		uint32_t crc;

		buf[0] = NVME_TCP_PDU_CAPSULE_CMD;
		buf[8] = NVME_OPC_READ;
		crc = crc32c(buf, 72, 0);
		memcpy(buf + 72, &crc, 4);
		CU_ASSERT(nvmf_tcp_hdgst_ok(buf, 72));
		buf[9] ^= 1;
		CU_ASSERT(!nvmf_tcp_hdgst_ok(buf, 72));
	}
}

static void
test_icreq_and_h2c(void)
{
	struct nvme_tcp_icreq icreq = { .ch = ch(NVME_TCP_PDU_ICREQ, 0, 128, 0, 128) };
	struct nvme_tcp_data_hdr h2c = { .ch = ch(NVME_TCP_PDU_H2C_DATA, 0, 24, 24, 24 + 4096) };
	struct nvmf_tcp_layout l = { .hlen = 24, .data_len = 4096 };
	struct nvmf_tcp_fatal err;

	UT_ASSERT_EQ(nvmf_tcp_icreq_check(&icreq, &err), 0);
	icreq.hpda = 31;
	UT_ASSERT_EQ(nvmf_tcp_icreq_check(&icreq, &err), 0);
	icreq.hpda = 32;
	UT_ASSERT_EQ(nvmf_tcp_icreq_check(&icreq, &err), -EPROTO);
	UT_ASSERT_EQ(err.fei, 10);
	icreq.hpda = 0;
	icreq.pfv = 1;
	UT_ASSERT_EQ(nvmf_tcp_icreq_check(&icreq, &err), -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(err.fei, 8);

	h2c.cccid = 7;
	h2c.datao = 4096;
	h2c.datal = 4096;
	/* In order and inside the transfer. */
	UT_ASSERT_EQ(nvmf_tcp_h2c_check(&h2c, &l, 7, 4096, 8192, &err), 0);
	UT_ASSERT_EQ(nvmf_tcp_h2c_check(&h2c, &l, 8, 4096, 8192, &err), -EPROTO);
	UT_ASSERT_EQ(err.fei, 8);
	UT_ASSERT_EQ(nvmf_tcp_h2c_check(&h2c, &l, 7, 0, 8192, &err), -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_DATA_OUT_OF_RANGE);
	UT_ASSERT_EQ(nvmf_tcp_h2c_check(&h2c, &l, 7, 4096, 6000, &err), -EPROTO);
	UT_ASSERT_EQ(err.fes, NVME_TCP_FES_DATA_OUT_OF_RANGE);
	h2c.datal = 1024;
	UT_ASSERT_EQ(nvmf_tcp_h2c_check(&h2c, &l, 7, 4096, 8192, &err), -EPROTO);
	UT_ASSERT_EQ(err.fei, 16);
}

static struct nvme_cmd
rw_cmd(uint8_t opc, uint8_t sgl_id, uint64_t addr, uint32_t len)
{
	struct nvme_cmd cmd = { .opc = opc, .flags = NVME_CMD_FLAGS_SGL };

	nvme_sgl_set_unkeyed(&cmd.dptr.sgl1, addr, len, sgl_id);
	return cmd;
}

static void
test_sgl_parse(void)
{
	struct nvme_cmd cmd;
	uint32_t len, off;
	bool icd;

	/* In-capsule write. */
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 4096);
	UT_ASSERT_EQ(nvmf_tcp_sgl_parse(&cmd, 4096, 8192, 131072, &len, &icd, &off), 0);
	CU_ASSERT(icd);
	UT_ASSERT_EQ(len, 4096);
	/* With an offset into the data. */
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 512, 1024);
	UT_ASSERT_EQ(nvmf_tcp_sgl_parse(&cmd, 4096, 8192, 131072, &len, &icd, &off), 0);
	UT_ASSERT_EQ(off, 512);
	/* Longer than the data carried, past it, or beyond the queue's limit. */
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 8192);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 4096, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_DATA_SGL_LENGTH_INVALID);
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 8192, 0);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 4096, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_INVALID_SGL_OFFSET);
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 4096);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 4096, 2048, 131072, &len, &icd, &off)),
		     NVME_SC_DATA_SGL_LENGTH_INVALID);
	/* In-capsule data for a read makes no sense. */
	cmd = rw_cmd(NVME_OPC_READ, NVME_SGL_ID_INCAPSULE, 0, 512);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 512, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID);
	/* Transport data block: R2T/C2H, bounded by max_io_size. */
	cmd = rw_cmd(NVME_OPC_READ, NVME_SGL_ID_TRANSPORT, 0, 131072);
	UT_ASSERT_EQ(nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off), 0);
	CU_ASSERT(!icd);
	UT_ASSERT_EQ(len, 131072);
	cmd = rw_cmd(NVME_OPC_READ, NVME_SGL_ID_TRANSPORT, 0, 131073);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_DATA_SGL_LENGTH_INVALID);
	cmd = rw_cmd(NVME_OPC_WRITE, NVME_SGL_ID_TRANSPORT, 0, 512);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 512, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_INVALID_FIELD);
	/* Keyed (RDMA) descriptors are not for this transport; PRPs never over fabrics. */
	cmd = rw_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0, 512);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID);
	cmd = rw_cmd(NVME_OPC_READ, NVME_SGL_ID_TRANSPORT, 0, 512);
	cmd.flags = 0;
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_INVALID_FIELD);
	/* No data: the descriptor does not matter, data in the capsule does. */
	cmd = rw_cmd(NVME_OPC_FLUSH, 0xff, 0, 0);
	UT_ASSERT_EQ(nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off), 0);
	UT_ASSERT_EQ(len, 0);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 16, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_INVALID_FIELD);
	/* Fabrics Connect: direction from fctype (host to controller). */
	cmd = rw_cmd(NVME_OPC_FABRICS, NVME_SGL_ID_INCAPSULE, 0, 1024);
	((struct nvme_fabrics_cmd *)&cmd)->fctype = NVME_FCTYPE_CONNECT;
	UT_ASSERT_EQ(nvmf_tcp_sgl_parse(&cmd, 1024, 8192, 131072, &len, &icd, &off), 0);
	CU_ASSERT(icd);
	/* Bidirectional opcodes are refused. */
	cmd = rw_cmd(0x03, NVME_SGL_ID_TRANSPORT, 0, 512);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(
			     nvmf_tcp_sgl_parse(&cmd, 0, 8192, 131072, &len, &icd, &off)),
		     NVME_SC_INVALID_OPCODE);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_wire_layouts),  UT_TEST(test_ch_types_and_sequence),
		UT_TEST(test_ch_lengths),    UT_TEST(test_ch_digests),
		UT_TEST(test_icreq_and_h2c), UT_TEST(test_sgl_parse),
	};

	return ut_run("tcp_pdu", tests, ARRAY_SIZE(tests), NULL, NULL);
}
