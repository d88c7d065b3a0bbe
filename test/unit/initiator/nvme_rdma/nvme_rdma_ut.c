/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe/RDMA host helpers that need no RDMA device: connect
 * private data, reject decoding, the data mode decision and the SGL it
 * produces, response capsule checks and the request completion state.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga_ut.h"

#include "initiator/nvme_rdma_util.c"

static void
test_cm_req(void)
{
	struct nvme_rdma_cm_req req;
	const uint8_t *raw = (const uint8_t *)&req;
	size_t i;

	memset(&req, 0xa5, sizeof(req));
	nvme_rdma_build_cm_req(&req, 3, 128, 0x1234);
	UT_ASSERT_EQ(req.recfmt, 0);
	UT_ASSERT_EQ(req.qid, 3);
	UT_ASSERT_EQ(req.hrqsize, 128);
	UT_ASSERT_EQ(req.hsqsize, 127);
	UT_ASSERT_EQ(req.cntlid, 0x1234);
	/* Little-endian on the wire, reserved bytes zero. */
	UT_ASSERT_EQ(raw[2], 3);
	UT_ASSERT_EQ(raw[4], 128);
	UT_ASSERT_EQ(raw[6], 127);
	UT_ASSERT_EQ(raw[8], 0x34);
	UT_ASSERT_EQ(raw[9], 0x12);
	for (i = 10; i < sizeof(req); i++) {
		UT_ASSERT_EQ(raw[i], 0);
	}
	/* The admin queue of a dynamic controller: 32 entries, cntlid 0xffff. */
	nvme_rdma_build_cm_req(&req, 0, 32, 0xffff);
	UT_ASSERT_EQ(req.qid, 0);
	UT_ASSERT_EQ(req.hrqsize, 32);
	UT_ASSERT_EQ(req.hsqsize, 31);
	UT_ASSERT_EQ(req.cntlid, 0xffff);
}

static void
test_reject(void)
{
	/* As a REJ carries it: 4 bytes of NVMe/RDMA data, zero padded. */
	uint8_t pdata[148] = { 0 };
	struct nvme_rdma_cm_rej rej = { .recfmt = 0, .sts = NVME_RDMA_CM_INVALID_HSQSIZE };
	char why[160];
	int rc;

	memcpy(pdata, &rej, sizeof(rej));
	rc = nvme_rdma_describe_reject(28, pdata, sizeof(pdata), why, sizeof(why));
	UT_ASSERT_EQ(rc, -EINVAL);
	CU_ASSERT(strstr(why, "invalid host SQ size") != NULL);
	CU_ASSERT(strstr(why, "0x4") != NULL);

	rej.sts = NVME_RDMA_CM_NO_RSC;
	memcpy(pdata, &rej, sizeof(rej));
	rc = nvme_rdma_describe_reject(28, pdata, sizeof(pdata), why, sizeof(why));
	UT_ASSERT_EQ(rc, -ECONNREFUSED);
	CU_ASSERT(strstr(why, "no resources") != NULL);

	rej.sts = 0x77;
	memcpy(pdata, &rej, sizeof(rej));
	nvme_rdma_describe_reject(28, pdata, sizeof(pdata), why, sizeof(why));
	CU_ASSERT(strstr(why, "unknown reject status") != NULL);

	/* Too short to be NVMe/RDMA data: only the CM reason. */
	rc = nvme_rdma_describe_reject(28, pdata, 2, why, sizeof(why));
	UT_ASSERT_EQ(rc, -ECONNREFUSED);
	CU_ASSERT(strstr(why, "reason 28") != NULL);
	CU_ASSERT(strstr(why, "controller") == NULL);

	/* No listener: invalid service id, no private data. */
	rc = nvme_rdma_describe_reject(8, NULL, 0, why, sizeof(why));
	UT_ASSERT_EQ(rc, -ECONNREFUSED);
	CU_ASSERT(strstr(why, "nothing listens") != NULL);

	/* Private data with another CM reason is not an NVMe/RDMA reject. */
	rej.sts = NVME_RDMA_CM_NO_RSC;
	memcpy(pdata, &rej, sizeof(rej));
	nvme_rdma_describe_reject(2, pdata, sizeof(pdata), why, sizeof(why));
	CU_ASSERT(strstr(why, "no resources") == NULL);
	CU_ASSERT(strstr(why, "reason 2") != NULL);
}

static void
test_data_mode(void)
{
	/* No data. */
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_NONE, 0, false, false, 4096),
		     RDMA_DATA_NONE);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 0, true, true, 4096),
		     RDMA_DATA_NONE);
	/* Small writes: in the capsule, zero-copy only from the arena. */
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 4096, true, true, 4096),
		     RDMA_DATA_INCAPSULE);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 512, true, false, 4096),
		     RDMA_DATA_INCAPSULE_COPY);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 512, false, false, 4096),
		     RDMA_DATA_INCAPSULE_COPY);
	/* Beyond the in-capsule limit (or none, as on the admin queue): keyed or bounce. */
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 4097, true, true, 4096),
		     RDMA_DATA_KEYED);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 1024, true, false, 0),
		     RDMA_DATA_BOUNCE);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_HOST_TO_CTRLR, 8192, false, false, 4096),
		     RDMA_DATA_BOUNCE);
	/* Reads never go in the capsule. */
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_CTRLR_TO_HOST, 512, true, true, 4096),
		     RDMA_DATA_KEYED);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_CTRLR_TO_HOST, 4096, true, false, 4096),
		     RDMA_DATA_BOUNCE);
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_CTRLR_TO_HOST, 4096, false, true, 4096),
		     RDMA_DATA_BOUNCE);
	/* A keyed descriptor holds 24 bits of length. */
	UT_ASSERT_EQ(nvme_rdma_choose_data_mode(NVME_XFER_CTRLR_TO_HOST, 1u << 24, true, true, 0),
		     RDMA_DATA_BOUNCE);
}

static void
test_sgl(void)
{
	struct nvme_cmd cmd;
	const struct nvme_sgl_desc *sgl = &cmd.dptr.sgl1;

	memset(&cmd, 0xff, sizeof(cmd));
	nvme_rdma_cmd_set_sgl(&cmd, RDMA_DATA_KEYED, 0x7f0012345000ull, 131072, 0xdeadbeef);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), NVME_SGL_ID_KEYED);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), 0x40);
	UT_ASSERT_EQ(sgl->address, 0x7f0012345000ull);
	UT_ASSERT_EQ(nvme_sgl_keyed_length(sgl), 131072);
	UT_ASSERT_EQ(nvme_sgl_keyed_key(sgl), 0xdeadbeef);
	/* Byte layout: length 8..10, key 11..14, id 15. */
	UT_ASSERT_EQ(sgl->raw[0], 0x00);
	UT_ASSERT_EQ(sgl->raw[1], 0x00);
	UT_ASSERT_EQ(sgl->raw[2], 0x02);
	UT_ASSERT_EQ(sgl->raw[3], 0xef);
	UT_ASSERT_EQ(sgl->raw[6], 0xde);

	nvme_rdma_cmd_set_sgl(&cmd, RDMA_DATA_BOUNCE, 0x1000, 4096, 7);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), NVME_SGL_ID_KEYED);
	UT_ASSERT_EQ(nvme_sgl_keyed_key(sgl), 7);

	nvme_rdma_cmd_set_sgl(&cmd, RDMA_DATA_INCAPSULE, 0xabc, 2048, 9);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), NVME_SGL_ID_INCAPSULE);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), 0x01);
	UT_ASSERT_EQ(sgl->address, 0);
	UT_ASSERT_EQ(sgl->unkeyed.length, 2048);
	UT_ASSERT_EQ(sgl->unkeyed.rsvd[0] | sgl->unkeyed.rsvd[1] | sgl->unkeyed.rsvd[2], 0);

	nvme_rdma_cmd_set_sgl(&cmd, RDMA_DATA_INCAPSULE_COPY, 0, 100, 0);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), NVME_SGL_ID_INCAPSULE);
	UT_ASSERT_EQ(sgl->unkeyed.length, 100);

	/* No data: a null keyed descriptor (Linux's nvmet-rdma refuses transport SGLs). */
	nvme_rdma_cmd_set_sgl(&cmd, RDMA_DATA_NONE, 0x1234, 99, 99);
	UT_ASSERT_EQ(nvme_sgl_id(sgl), NVME_SGL_ID_KEYED);
	UT_ASSERT_EQ(sgl->address, 0);
	UT_ASSERT_EQ(nvme_sgl_keyed_length(sgl), 0);
	UT_ASSERT_EQ(nvme_sgl_keyed_key(sgl), 0);
	/* The rest of the command is untouched. */
	UT_ASSERT_EQ(cmd.cdw10, 0xffffffffu);
	UT_ASSERT_EQ(cmd.opc, 0xff);
}

static void
test_rsp(void)
{
	uint8_t buf[NVME_RDMA_RSP_CAPSULE_SIZE];
	struct nvme_cpl in = { 0 }, out;

	in.cdw0 = 0x11223344;
	in.sqhd = 5;
	in.sqid = 2;
	in.cid = 77;
	in.status = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_P;
	memcpy(buf, &in, sizeof(in));
	UT_ASSERT_EQ(nvme_rdma_parse_rsp(buf, sizeof(buf), &out), 0);
	UT_ASSERT_EQ(out.cid, 77);
	UT_ASSERT_EQ(out.cdw0, 0x11223344u);
	UT_ASSERT_EQ(out.sqid, 2);
	UT_ASSERT_EQ(out.status, in.status);
	UT_ASSERT_EQ(nvme_rdma_parse_rsp(buf, 15, &out), -EPROTO);
	UT_ASSERT_EQ(nvme_rdma_parse_rsp(buf, 0, &out), -EPROTO);
}

static void
test_completion_order(void)
{
	struct nvme_rdma_req rr;
	struct nvme_cpl cpl = { .cid = 3, .cdw0 = 42 };

	/* SEND completion first, then the response: completes on the response. */
	nvme_rdma_req_start(&rr, RDMA_DATA_KEYED, -1);
	UT_ASSERT_EQ(rr.mode, RDMA_DATA_KEYED);
	UT_ASSERT_EQ(rr.bounce, -1);
	UT_ASSERT_EQ(nvme_rdma_req_send_done(&rr), 0);
	UT_ASSERT_EQ(nvme_rdma_req_rsp_received(&rr, &cpl), 1);
	UT_ASSERT_EQ(rr.cpl.cdw0, 42);

	/* Response first (the target answered before our SEND completion was reaped). */
	nvme_rdma_req_start(&rr, RDMA_DATA_BOUNCE, 5);
	UT_ASSERT_EQ(rr.bounce, 5);
	UT_ASSERT_EQ(rr.send_done, false);
	UT_ASSERT_EQ(rr.rsp_received, false);
	UT_ASSERT_EQ(nvme_rdma_req_rsp_received(&rr, &cpl), 0);
	UT_ASSERT_EQ(rr.cpl.cid, 3);
	UT_ASSERT_EQ(nvme_rdma_req_send_done(&rr), 1);

	/* A second response for the same command is a protocol error. */
	nvme_rdma_req_start(&rr, RDMA_DATA_NONE, -1);
	UT_ASSERT_EQ(nvme_rdma_req_rsp_received(&rr, &cpl), 0);
	UT_ASSERT_EQ(nvme_rdma_req_rsp_received(&rr, &cpl), -EPROTO);
}

static void
test_copy(void)
{
	uint8_t a[5] = { 1, 2, 3, 4, 5 }, b[3] = { 6, 7, 8 }, flat[8], back[5] = { 0 };
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	uint8_t zero[3] = { 0 };

	memset(flat, 0, sizeof(flat));
	/* Bytes 3..6 of the iovec range span both elements. */
	UT_ASSERT_EQ(nvme_rdma_copy_from_iov(flat, iov, 2, 3, 4), 4);
	UT_ASSERT_EQ(flat[0], 4);
	UT_ASSERT_EQ(flat[1], 5);
	UT_ASSERT_EQ(flat[2], 6);
	UT_ASSERT_EQ(flat[3], 7);
	UT_ASSERT_EQ(flat[4], 0);
	/* Stops at the end of the iovecs. */
	UT_ASSERT_EQ(nvme_rdma_copy_from_iov(flat, iov, 2, 6, 10), 2);

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	flat[0] = 0xa;
	flat[1] = 0xb;
	flat[2] = 0xc;
	UT_ASSERT_EQ(nvme_rdma_copy_to_iov(iov, 2, 4, flat, 3), 3);
	UT_ASSERT_EQ(a[4], 0xa);
	UT_ASSERT_EQ(b[0], 0xb);
	UT_ASSERT_EQ(b[1], 0xc);
	UT_ASSERT_EQ(memcmp(a, back, 4), 0);
	UT_ASSERT_EQ(b[2], zero[0]);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_cm_req), UT_TEST(test_reject), UT_TEST(test_data_mode),
		UT_TEST(test_sgl),    UT_TEST(test_rsp),    UT_TEST(test_completion_order),
		UT_TEST(test_copy),
	};

	return ut_run("nvme_rdma", tests, ARRAY_SIZE(tests), NULL, NULL);
}
