/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe/RDMA target's pure parts (target/rdma_capsule.c):
 * the RDMA CM connect request check and every reject status, SGL parsing of
 * command capsules with every NVMe status it can answer, capsule sizes, and
 * how a keyed transfer splits into buffers and work requests. None of it
 * needs an RDMA device.
 */
#include <stddef.h>
#include <string.h>

#include "gga/nvme_rdma.h"
#include "gga/nvme_spec.h"
#include "gga_ut.h"

#include "target/rdma_internal.h"

/* rdma_capsule.c uses the core's direction helper; the real one is in nvmf.c. */
#include "target/rdma_capsule.c"

enum nvme_data_xfer
nvmf_cmd_xfer(const struct nvme_cmd *cmd)
{
	const struct nvme_fabrics_cmd *fc = (const struct nvme_fabrics_cmd *)cmd;

	return nvme_opc_data_xfer(cmd->opc == NVME_OPC_FABRICS ? fc->fctype : cmd->opc);
}

static const struct nvmf_rdma_cm_limits g_lim = {
	.max_aq_depth = 32,
	.max_queue_depth = 128,
	.max_io_qpairs = 127,
};

/* Private data as Linux's host sends it: hrqsize = entries, hsqsize = entries - 1. */
static struct nvme_rdma_cm_req
cm_req(uint16_t qid, uint16_t entries)
{
	struct nvme_rdma_cm_req req = {
		.recfmt = NVME_RDMA_CM_RECFMT_1_0,
		.qid = qid,
		.hrqsize = entries,
		.hsqsize = (uint16_t)(entries - 1),
		.cntlid = 0xffff,
	};

	return req;
}

static void
test_cm_req_valid(void)
{
	struct nvme_rdma_cm_req req = cm_req(0, 32);
	struct nvmf_rdma_cm_params p;
	uint8_t padded[56] = { 0 };

	memset(&p, 0xa5, sizeof(p));
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p), 0);
	UT_ASSERT_EQ(p.qid, 0);
	UT_ASSERT_EQ(p.sq_entries, 32);
	UT_ASSERT_EQ(p.hrqsize, 32);
	UT_ASSERT_EQ(p.cntlid, 0xffff);

	req = cm_req(127, 128);
	req.cntlid = 3;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p), 0);
	UT_ASSERT_EQ(p.qid, 127);
	UT_ASSERT_EQ(p.sq_entries, 128);
	UT_ASSERT_EQ(p.cntlid, 3);

	/* The smallest queue: two entries. */
	req = cm_req(1, 2);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p), 0);
	UT_ASSERT_EQ(p.sq_entries, 2);

	/* InfiniBand pads the private data of a REQ to 56 bytes. */
	req = cm_req(1, 64);
	memcpy(padded, &req, sizeof(req));
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(padded, sizeof(padded), &g_lim, &p), 0);
	UT_ASSERT_EQ(p.sq_entries, 64);
	UT_ASSERT_EQ(p.qid, 1);
}

static void
test_cm_req_reject(void)
{
	struct nvme_rdma_cm_req req = cm_req(1, 32);
	struct nvmf_rdma_cm_params p;

	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(NULL, 0, &g_lim, &p), NVME_RDMA_CM_INVALID_LEN);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req) - 1, &g_lim, &p),
		     NVME_RDMA_CM_INVALID_LEN);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, 0, &g_lim, &p), NVME_RDMA_CM_INVALID_LEN);

	req.recfmt = 1;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_RECFMT);

	req = cm_req(128, 32);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_QID);
	req = cm_req(0xffff, 32);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_QID);

	/* hsqsize: 0's based, so 0 is a one-entry queue; limits differ for admin and I/O. */
	req = cm_req(1, 32);
	req.hsqsize = 0;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HSQSIZE);
	req = cm_req(0, 33);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HSQSIZE);
	req = cm_req(1, 129);
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HSQSIZE);
	req = cm_req(1, 128);
	req.hsqsize = 0xffff;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HSQSIZE);

	/* hrqsize: 1's based; 0 and more than the queue may hold are refused. */
	req = cm_req(1, 32);
	req.hrqsize = 0;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HRQSIZE);
	req = cm_req(0, 32);
	req.hrqsize = 33;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HRQSIZE);
	req = cm_req(1, 128);
	req.hrqsize = 129;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_HRQSIZE);

	/* The checks come in the order of the fields: length, recfmt, qid, sizes. */
	req = cm_req(200, 1000);
	req.recfmt = 7;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_RECFMT);
	req.recfmt = 0;
	UT_ASSERT_EQ(nvmf_rdma_cm_req_check(&req, sizeof(req), &g_lim, &p),
		     NVME_RDMA_CM_INVALID_QID);
	UT_ASSERT_STR_EQ(nvme_rdma_cm_status_str(NVME_RDMA_CM_INVALID_HSQSIZE),
			 "invalid host SQ size");
}

static struct nvme_cmd
unkeyed_cmd(uint8_t opc, uint8_t sgl_id, uint64_t addr, uint32_t len)
{
	struct nvme_cmd cmd = { .opc = opc, .flags = NVME_CMD_FLAGS_SGL };

	nvme_sgl_set_unkeyed(&cmd.dptr.sgl1, addr, len, sgl_id);
	return cmd;
}

static struct nvme_cmd
keyed_cmd(uint8_t opc, uint8_t sgl_id, uint64_t addr, uint32_t len, uint32_t key)
{
	struct nvme_cmd cmd = { .opc = opc, .flags = NVME_CMD_FLAGS_SGL };

	nvme_sgl_set_keyed(&cmd.dptr.sgl1, addr, len, key, sgl_id);
	return cmd;
}

#define DNR(sc) (NVME_STATUS(NVME_SCT_GENERIC, (sc)) | NVME_STATUS_DNR)

static void
test_sgl_incapsule(void)
{
	struct nvme_cmd cmd;
	struct nvmf_rdma_sgl s;

	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 4096);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 4096, 4096, 131072, &s), 0);
	CU_ASSERT(s.icd);
	UT_ASSERT_EQ(s.length, 4096);
	UT_ASSERT_EQ(s.icd_offset, 0);
	UT_ASSERT_EQ(s.rkey, 0);

	/* An offset inside the capsule's data. */
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 512, 1024);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 2048, 4096, 131072, &s), 0);
	CU_ASSERT(s.icd);
	UT_ASSERT_EQ(s.icd_offset, 512);
	UT_ASSERT_EQ(s.length, 1024);

	/* Exactly to the end of the received data. */
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 1024, 1024);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 2048, 4096, 131072, &s), 0);

	/* A Fabrics Connect carries its 1 KiB of data in the capsule. */
	{
		struct nvme_fabrics_cmd *fc = (struct nvme_fabrics_cmd *)&cmd;

		cmd = unkeyed_cmd(NVME_OPC_FABRICS, NVME_SGL_ID_INCAPSULE, 0, 1024);
		fc->fctype = NVME_FCTYPE_CONNECT;
		UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 1024, 4096, 131072, &s), 0);
		CU_ASSERT(s.icd);
		UT_ASSERT_EQ(s.length, 1024);
	}

	/* Offset beyond the data that came. */
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 2049, 0);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 2048, 4096, 131072, &s),
		     DNR(NVME_SC_INVALID_SGL_OFFSET));
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 1ull << 40, 512);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 2048, 4096, 131072, &s),
		     DNR(NVME_SC_INVALID_SGL_OFFSET));
	/* Length past the received data, or past what a capsule may hold. */
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 1024, 1025);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 2048, 4096, 131072, &s),
		     DNR(NVME_SC_DATA_SGL_LENGTH_INVALID));
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 8192);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 8192, 4096, 131072, &s),
		     DNR(NVME_SC_DATA_SGL_LENGTH_INVALID));
	cmd = unkeyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_INCAPSULE, 0, 0xffffffffu);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 4096, 4096, 131072, &s),
		     DNR(NVME_SC_DATA_SGL_LENGTH_INVALID));
	/* In-capsule data only goes to the controller. */
	cmd = unkeyed_cmd(NVME_OPC_READ, NVME_SGL_ID_INCAPSULE, 0, 512);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 512, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	CU_ASSERT(!s.icd);
	UT_ASSERT_EQ(s.length, 0);
}

static void
test_sgl_keyed(void)
{
	struct nvme_cmd cmd;
	struct nvmf_rdma_sgl s;

	cmd = keyed_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0x1122334455667788ull, 131072,
			0xdeadbeef);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), 0);
	CU_ASSERT(!s.icd);
	CU_ASSERT(!s.invalidate);
	UT_ASSERT_EQ(s.length, 131072);
	CU_ASSERT(s.raddr == 0x1122334455667788ull);
	UT_ASSERT_EQ(s.rkey, 0xdeadbeef);

	cmd = keyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_KEYED_INVALIDATE, 0x1000, 4097, 0x42);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), 0);
	CU_ASSERT(s.invalidate);
	UT_ASSERT_EQ(s.length, 4097);
	UT_ASSERT_EQ(s.rkey, 0x42);

	/* Zero bytes: nothing to move. */
	cmd = keyed_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0, 0, 0);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), 0);
	UT_ASSERT_EQ(s.length, 0);

	/* The 24-bit length is read whole: 0x020000 is 128 KiB, 0xffffff too long. */
	cmd = keyed_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0, 131073, 1);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_DATA_SGL_LENGTH_INVALID));
	cmd = keyed_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0, 0xffffff, 1);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 0x1000000, &s), 0);
	UT_ASSERT_EQ(s.length, 0xffffff);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_DATA_SGL_LENGTH_INVALID));

	/* Capsule data that no descriptor describes. */
	cmd = keyed_cmd(NVME_OPC_WRITE, NVME_SGL_ID_KEYED, 0, 512, 1);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 512, 4096, 131072, &s), DNR(NVME_SC_INVALID_FIELD));
}

static void
test_sgl_bad(void)
{
	struct nvme_cmd cmd;
	struct nvmf_rdma_sgl s;

	/* NVMe/TCP's transport data block is not NVMe/RDMA's. */
	cmd = unkeyed_cmd(NVME_OPC_READ, NVME_SGL_ID_TRANSPORT, 0, 4096);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	/* A plain data block with an address, a segment, a bit bucket, vendor specific. */
	cmd = unkeyed_cmd(NVME_OPC_READ,
			  NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS), 0, 4096);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	cmd = unkeyed_cmd(NVME_OPC_WRITE,
			  NVME_SGL_ID(NVME_SGL_TYPE_LAST_SEGMENT, NVME_SGL_SUBTYPE_OFFSET), 0, 32);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	cmd = unkeyed_cmd(NVME_OPC_READ,
			  NVME_SGL_ID(NVME_SGL_TYPE_BIT_BUCKET, NVME_SGL_SUBTYPE_ADDRESS), 0, 32);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	cmd = keyed_cmd(NVME_OPC_READ,
			NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET), 0, 32,
			1);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));
	cmd = unkeyed_cmd(NVME_OPC_READ, NVME_SGL_ID(NVME_SGL_TYPE_VENDOR_SPECIFIC, 0), 0, 32);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s),
		     DNR(NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID));

	/* PRPs are not for fabrics. */
	cmd = keyed_cmd(NVME_OPC_READ, NVME_SGL_ID_KEYED, 0, 4096, 1);
	cmd.flags = 0;
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), DNR(NVME_SC_INVALID_FIELD));

	/* A bidirectional opcode has no single direction to move data in. */
	cmd = keyed_cmd(0x03, NVME_SGL_ID_KEYED, 0, 4096, 1);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), DNR(NVME_SC_INVALID_OPCODE));
}

static void
test_sgl_no_data(void)
{
	struct nvme_cmd cmd;
	struct nvmf_rdma_sgl s;

	/* Hosts send a null keyed descriptor with commands that move nothing. */
	cmd = keyed_cmd(NVME_OPC_FLUSH, NVME_SGL_ID_KEYED, 0, 0, 0);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), 0);
	UT_ASSERT_EQ(s.length, 0);
	CU_ASSERT(!s.icd);
	/* Whatever the descriptor says, the opcode decides. */
	cmd = keyed_cmd(NVME_OPC_FLUSH, NVME_SGL_ID_KEYED, 0, 4096, 5);
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 0, 4096, 131072, &s), 0);
	UT_ASSERT_EQ(s.length, 0);
	/* But no data may come with it. */
	UT_ASSERT_EQ(nvmf_rdma_sgl_parse(&cmd, 16, 4096, 131072, &s), DNR(NVME_SC_INVALID_FIELD));
}

static void
test_capsule_sizes(void)
{
	UT_ASSERT_EQ(nvmf_rdma_capsule_size(0), 64);
	UT_ASSERT_EQ(nvmf_rdma_capsule_size(4096), 4160);
	/* Identify's IOCCSZ counts 16-byte units of the whole capsule. */
	UT_ASSERT_EQ(nvmf_rdma_capsule_size(4096) / 16, 260);
	UT_ASSERT_EQ(nvmf_rdma_capsule_size(8192) / 16, 516);
	/* The admin queue takes Connect data and more even with no I/O in-capsule data. */
	UT_ASSERT_EQ(nvmf_rdma_queue_icd(0, 0), RDMA_ADMIN_ICD_SIZE);
	UT_ASSERT_EQ(nvmf_rdma_queue_icd(0, 8192), 8192);
	UT_ASSERT_EQ(nvmf_rdma_queue_icd(1, 0), 0);
	UT_ASSERT_EQ(nvmf_rdma_queue_icd(5, 4096), 4096);
	CU_ASSERT(RDMA_ADMIN_ICD_SIZE >= 1024);
}

static void
test_xfer_plan(void)
{
	struct nvmf_rdma_xfer_plan p;

	nvmf_rdma_xfer_plan(0, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 0);
	UT_ASSERT_EQ(p.nwrs, 0);
	nvmf_rdma_xfer_plan(1, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 1);
	UT_ASSERT_EQ(p.nwrs, 1);
	nvmf_rdma_xfer_plan(8192, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 1);
	nvmf_rdma_xfer_plan(8193, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 2);
	UT_ASSERT_EQ(p.nwrs, 1);
	nvmf_rdma_xfer_plan(131072, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 16);
	UT_ASSERT_EQ(p.nwrs, 1);
	nvmf_rdma_xfer_plan(131072, 8192, 4, &p);
	UT_ASSERT_EQ(p.nwrs, 4);
	nvmf_rdma_xfer_plan(131072, 8192, 5, &p);
	UT_ASSERT_EQ(p.nwrs, 4);
	nvmf_rdma_xfer_plan(131072 + 1, 8192, 16, &p);
	UT_ASSERT_EQ(p.nbufs, 17);
	UT_ASSERT_EQ(p.nwrs, 2);
	/* A device reporting no SGE limit still gets one buffer per work request. */
	nvmf_rdma_xfer_plan(65536, 4096, 0, &p);
	UT_ASSERT_EQ(p.nbufs, 16);
	UT_ASSERT_EQ(p.nwrs, 16);
	nvmf_rdma_xfer_plan(NVME_RDMA_MAX_KEYED_SGL_LEN, 131072, 1, &p);
	UT_ASSERT_EQ(p.nbufs, 128);
	UT_ASSERT_EQ(p.nwrs, 128);
}

static const struct ut_test g_tests[] = {
	UT_TEST(test_cm_req_valid),  UT_TEST(test_cm_req_reject), UT_TEST(test_sgl_incapsule),
	UT_TEST(test_sgl_keyed),     UT_TEST(test_sgl_bad),       UT_TEST(test_sgl_no_data),
	UT_TEST(test_capsule_sizes), UT_TEST(test_xfer_plan),
};

int
main(void)
{
	return ut_run("nvmf_rdma", g_tests, ARRAY_SIZE(g_tests), NULL, NULL);
}
