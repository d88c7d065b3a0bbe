/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the host's command building (initiator/nvme_cmd.c): every
 * field of the SQEs the host sends, Identify parsing, MDTS, status mapping.
 * The PDU tests (nvme_tcp_pdu_ut.c) run in the same binary.
 */
#include <errno.h>
#include <string.h>

#include "gga_ut.h"
#include "initiator/nvme_internal.h"

void nvme_tcp_pdu_tests(const struct ut_test **tests, size_t *count);

static void
test_rw(void)
{
	struct nvme_cmd cmd;

	memset(&cmd, 0xff, sizeof(cmd));
	nvme_cmd_build_rw(&cmd, NVME_OPC_WRITE, 7, 0x123456789aull, 65536);
	UT_ASSERT_EQ(cmd.opc, NVME_OPC_WRITE);
	/* PSDT = SGL, no fused operation. */
	UT_ASSERT_EQ(cmd.flags, 0x40);
	UT_ASSERT_EQ(cmd.nsid, 7);
	UT_ASSERT_EQ(cmd.cdw10, 0x3456789a);
	UT_ASSERT_EQ(cmd.cdw11, 0x12);
	/* NLB is 0-based: 65536 blocks is 0xffff. */
	UT_ASSERT_EQ(cmd.cdw12, 0xffff);
	UT_ASSERT_EQ(cmd.cdw13, 0);
	UT_ASSERT_EQ(cmd.mptr, 0);
	UT_ASSERT_EQ(nvme_cmd_slba(&cmd), 0x123456789aull);
	UT_ASSERT_EQ(nvme_cmd_nlb(&cmd), 65536);

	nvme_cmd_build_rw(&cmd, NVME_OPC_READ, 1, 0, 1);
	UT_ASSERT_EQ(cmd.opc, 0x02);
	UT_ASSERT_EQ(cmd.cdw12, 0);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_CTRLR_TO_HOST);
	nvme_cmd_build_rw(&cmd, NVME_OPC_WRITE_ZEROES, 1, 8, 16);
	UT_ASSERT_EQ(cmd.opc, 0x08);
	UT_ASSERT_EQ(cmd.cdw12, 15);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_NONE);
}

static void
test_sgl(void)
{
	struct nvme_cmd cmd;
	const uint8_t *raw = (const uint8_t *)&cmd;

	nvme_cmd_build_rw(&cmd, NVME_OPC_WRITE, 1, 0, 8);
	nvme_cmd_set_sgl(&cmd, 4096, true);
	/* In-capsule: data block descriptor, offset subtype: byte 39 = 0x01. */
	UT_ASSERT_EQ(raw[39], 0x01);
	UT_ASSERT_EQ(cmd.dptr.sgl1.address, 0);
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 4096);

	nvme_cmd_set_sgl(&cmd, 1u << 20, false);
	/* Transport data block, transport specific subtype: 0x5a. */
	UT_ASSERT_EQ(raw[39], 0x5a);
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 1u << 20);

	/* No data: a zero-length transport descriptor. */
	nvme_cmd_set_sgl(&cmd, 0, true);
	UT_ASSERT_EQ(raw[39], 0x5a);
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 0);
}

static void
test_connect(void)
{
	struct nvme_connect_data data;
	struct nvme_connect_cmd *cc;
	struct nvme_cmd cmd;
	uint8_t hostid[16];
	const uint8_t *raw = (const uint8_t *)&cmd;

	nvme_cmd_build_connect(&cmd, 0, 31, 10000);
	cc = (struct nvme_connect_cmd *)&cmd;
	UT_ASSERT_EQ(cmd.opc, 0x7f);
	UT_ASSERT_EQ(raw[4], NVME_FCTYPE_CONNECT);
	UT_ASSERT_EQ(cc->recfmt, 0);
	UT_ASSERT_EQ(cc->qid, 0);
	UT_ASSERT_EQ(cc->sqsize, 31);
	UT_ASSERT_EQ(cc->kato, 10000);
	/* Byte offsets of the spec: QID at 42, SQSIZE at 44, KATO at 48. */
	UT_ASSERT_EQ(raw[44], 31);
	UT_ASSERT_EQ(raw[48] | raw[49] << 8, 10000);

	/* KATO is an admin queue attribute only. */
	nvme_cmd_build_connect(&cmd, 3, 127, 10000);
	UT_ASSERT_EQ(raw[42], 3);
	UT_ASSERT_EQ(cc->kato, 0);

	memset(hostid, 0xab, sizeof(hostid));
	memset(&data, 0xff, sizeof(data));
	nvme_connect_data_build(&data, hostid, 0xffff, "nqn.2016-06.io.gga:sub",
				"nqn.2014-08.org.nvmexpress:uuid:1");
	UT_ASSERT_EQ(data.hostid[15], 0xab);
	UT_ASSERT_EQ(data.cntlid, 0xffff);
	UT_ASSERT_STR_EQ(data.subnqn, "nqn.2016-06.io.gga:sub");
	UT_ASSERT_STR_EQ(data.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:1");
	/* Everything else is zero. */
	UT_ASSERT_EQ(data.rsvd1[0], 0);
	UT_ASSERT_EQ(data.rsvd2[255], 0);
	UT_ASSERT_EQ(data.subnqn[255], 0);
}

static void
test_properties(void)
{
	struct nvme_prop_get_cmd *pg;
	struct nvme_prop_set_cmd *ps;
	struct nvme_cmd cmd;

	nvme_cmd_build_prop_get(&cmd, NVME_REG_CAP, true);
	pg = (struct nvme_prop_get_cmd *)&cmd;
	UT_ASSERT_EQ(pg->fctype, NVME_FCTYPE_PROPERTY_GET);
	UT_ASSERT_EQ(pg->attrib, NVME_PROP_SIZE_8);
	UT_ASSERT_EQ(pg->ofst, 0);
	nvme_cmd_build_prop_get(&cmd, NVME_REG_CSTS, false);
	UT_ASSERT_EQ(pg->attrib, NVME_PROP_SIZE_4);
	UT_ASSERT_EQ(pg->ofst, 0x1c);

	nvme_cmd_build_prop_set(&cmd, NVME_REG_CC, 0x1ffffffffull, false);
	ps = (struct nvme_prop_set_cmd *)&cmd;
	UT_ASSERT_EQ(ps->fctype, NVME_FCTYPE_PROPERTY_SET);
	UT_ASSERT_EQ(ps->attrib, NVME_PROP_SIZE_4);
	UT_ASSERT_EQ(ps->ofst, 0x14);
	/* A 4-byte property carries only the low dword. */
	UT_ASSERT_EQ(ps->value, 0xffffffffull);
}

static void
test_admin(void)
{
	struct nvme_cmd cmd;

	nvme_cmd_build_identify(&cmd, NVME_CNS_ACTIVE_NS_LIST, 0);
	UT_ASSERT_EQ(cmd.opc, 0x06);
	UT_ASSERT_EQ(cmd.cdw10, 2);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_CTRLR_TO_HOST);
	nvme_cmd_build_identify(&cmd, NVME_CNS_NS, 5);
	UT_ASSERT_EQ(cmd.nsid, 5);
	UT_ASSERT_EQ(cmd.cdw10, 0);

	nvme_cmd_build_set_num_queues(&cmd, 64);
	UT_ASSERT_EQ(cmd.opc, 0x09);
	UT_ASSERT_EQ(cmd.cdw10, 7);
	/* NSQR 15:0 and NCQR 31:16, both 0-based. */
	UT_ASSERT_EQ(cmd.cdw11, 0x003f003f);

	nvme_cmd_build_keep_alive(&cmd);
	UT_ASSERT_EQ(cmd.opc, 0x18);

	nvme_cmd_build_dsm(&cmd, 2, 1, NVME_DSM_ATTR_DEALLOCATE);
	UT_ASSERT_EQ(cmd.opc, 0x09);
	UT_ASSERT_EQ(cmd.nsid, 2);
	UT_ASSERT_EQ(cmd.cdw10, 0);
	UT_ASSERT_EQ(cmd.cdw11, 4);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_HOST_TO_CTRLR);

	nvme_cmd_build_flush(&cmd, 9);
	UT_ASSERT_EQ(cmd.opc, 0x00);
	UT_ASSERT_EQ(cmd.nsid, 9);

	nvme_cmd_build_get_log_page(&cmd, NVME_LOG_ANA, 0xffffffffu, 0x40008);
	UT_ASSERT_EQ(cmd.opc, 0x02);
	UT_ASSERT_EQ(cmd.cdw10, 0x0001000cu); /* NUMDL 0x0001 (0x10002 dwords - 1) */
	UT_ASSERT_EQ(cmd.cdw11, 1);           /* NUMDU */
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_CTRLR_TO_HOST);

	/* Reservations: action 2:0, IEKEY 3, RTYPE 15:8, CPTPL 31:30. */
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_REGISTER, 3, 2, true, 0, 3);
	UT_ASSERT_EQ(cmd.opc, 0x0d);
	UT_ASSERT_EQ(cmd.nsid, 3);
	UT_ASSERT_EQ(cmd.cdw10, 0xc000000a);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_HOST_TO_CTRLR);
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_ACQUIRE, 1, 2, false, 2, 0);
	UT_ASSERT_EQ(cmd.opc, 0x11);
	UT_ASSERT_EQ(cmd.cdw10, 0x202);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_HOST_TO_CTRLR);
	nvme_cmd_build_resv(&cmd, NVME_OPC_RESERVATION_RELEASE, 1, 1, false, 6, 0);
	UT_ASSERT_EQ(cmd.opc, 0x15);
	UT_ASSERT_EQ(cmd.cdw10, 0x601);
	nvme_cmd_build_resv_report(&cmd, 4, 4096);
	UT_ASSERT_EQ(cmd.opc, 0x0e);
	UT_ASSERT_EQ(cmd.cdw10, 1023);
	UT_ASSERT_EQ(cmd.cdw11, 1);
	UT_ASSERT_EQ(nvme_opc_data_xfer(cmd.opc), NVME_XFER_CTRLR_TO_HOST);
}

static void
test_ns_info(void)
{
	static struct nvme_identify_ns id;
	struct nvme_ns_info info;

	memset(&id, 0, sizeof(id));
	id.nsze = 1000;
	id.nlbaf = 1;
	id.lbaf[0] = NVME_LBAF(0, 9, 0);
	id.lbaf[1] = NVME_LBAF(64, 12, 0);
	id.flbas = 1 | NVME_FLBAS_EXTENDED;
	id.nguid[0] = 0x42;
	memset(&info, 0, sizeof(info));
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), 0);
	UT_ASSERT_EQ(info.num_blocks, 1000);
	UT_ASSERT_EQ(info.block_size, 4096);
	UT_ASSERT_EQ(info.md_size, 64);
	CU_ASSERT(info.extended_lba);
	/* A transfer carries data and metadata of every block. */
	UT_ASSERT_EQ(info.xfer_block_size, 4160);
	UT_ASSERT_EQ(info.nguid[0], 0x42);

	id.flbas = 0;
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), 0);
	UT_ASSERT_EQ(info.block_size, 512);
	UT_ASSERT_EQ(info.md_size, 0);
	CU_ASSERT(!info.extended_lba);
	UT_ASSERT_EQ(info.xfer_block_size, 512);

	/* Metadata in a separate buffer cannot go over fabrics. */
	id.flbas = 1;
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), -EINVAL);
	/* A format index beyond NLBAF. */
	id.flbas = 2;
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), -EINVAL);
	/* A data size below 512 bytes. */
	id.flbas = 0;
	id.lbaf[0] = NVME_LBAF(0, 8, 0);
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), -EINVAL);
	/* More blocks than 64 bits of bytes hold (a hostile target's NSZE). */
	id.lbaf[0] = NVME_LBAF(0, 9, 0);
	id.nsze = UINT64_MAX / 512 + 1;
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), -EINVAL);
	id.nsze = UINT64_MAX / 512;
	UT_ASSERT_EQ(nvme_ns_info_from_identify(&info, &id), 0);
}

static void
test_mdts(void)
{
	UT_ASSERT_EQ(nvme_mdts_to_bytes(0, 0), UINT32_MAX);
	UT_ASSERT_EQ(nvme_mdts_to_bytes(5, 0), 128 * 1024);
	/* MPSMIN 1: 8 KiB pages. */
	UT_ASSERT_EQ(nvme_mdts_to_bytes(5, 1ull << NVME_CAP_MPSMIN_SHIFT), 256 * 1024);
	UT_ASSERT_EQ(nvme_mdts_to_bytes(20, 0), UINT32_MAX);
}

static void
test_status(void)
{
	uint16_t invalid_params = NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC,
					      NVME_SC_CONNECT_INVALID_PARAMETERS);
	uint16_t invalid_host = NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC,
					    NVME_SC_CONNECT_INVALID_HOST);
	uint16_t internal = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INTERNAL_DEVICE_ERROR);
	uint16_t lba_range = NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_OUT_OF_RANGE);

	UT_ASSERT_EQ(invalid_params, 0x0304);
	UT_ASSERT_EQ(nvme_connect_status_errno(invalid_params), -ENODEV);
	UT_ASSERT_EQ(nvme_connect_status_errno(invalid_host), -EACCES);
	UT_ASSERT_EQ(nvme_connect_status_errno(internal), -EIO);
	UT_ASSERT_STR_EQ(nvme_status_string(invalid_params), "Connect Invalid Parameters");
	UT_ASSERT_STR_EQ(nvme_status_string(NVME_STATUS_HOST_PATH_ERROR), "Host Pathing Error");
	UT_ASSERT_STR_EQ(nvme_status_string(lba_range), "LBA Out of Range");
	/* The phase bit is ignored. */
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(NVME_STATUS_P));
	CU_ASSERT(!NVME_STATUS_IS_SUCCESS(NVME_STATUS_HOST_PATH_ERROR));
}

static void
test_names(void)
{
	enum nvme_transport_type t;
	enum nvme_adrfam a;

	UT_ASSERT_EQ(nvme_transport_type_parse("TcP", &t), 0);
	UT_ASSERT_EQ(t, NVME_TRANSPORT_TCP);
	UT_ASSERT_EQ(nvme_transport_type_parse("RDMA", &t), 0);
	UT_ASSERT_EQ(t, NVME_TRANSPORT_RDMA);
	UT_ASSERT_EQ(nvme_transport_type_parse("fc", &t), -EINVAL);
	UT_ASSERT_EQ(nvme_transport_type_parse(NULL, &t), -EINVAL);
	UT_ASSERT_EQ(nvme_adrfam_parse("IPv4", &a), 0);
	UT_ASSERT_EQ(a, NVME_ADRFAM_IPV4);
	UT_ASSERT_EQ(nvme_adrfam_parse("ib", &a), -EINVAL);
	UT_ASSERT_STR_EQ(nvme_transport_type_name(NVME_TRANSPORT_TCP), "TCP");
	UT_ASSERT_STR_EQ(nvme_ctrlr_state_name(NVME_CTRLR_RECONNECTING), "reconnecting");
}

static void
dummy_connect_cb(void *cb_arg, struct nvme_ctrlr *ctrlr, int rc, const char *reason)
{
	CU_FAIL("a refused connect must not call back");
}

static void
test_connect_args(void)
{
	struct nvme_transport_id trid = {
		.trtype = NVME_TRANSPORT_TCP,
		.adrfam = NVME_ADRFAM_IPV4,
	};
	struct nvme_ctrlr_opts opts;

	nvme_ctrlr_opts_init(&opts);
	UT_ASSERT_EQ(opts.keep_alive_timeout_ms, 10000);
	UT_ASSERT_EQ(opts.reconnect_delay_min_ms, 100);
	UT_ASSERT_EQ(opts.reconnect_delay_max_ms, 2000);
	snprintf(trid.traddr, sizeof(trid.traddr), "127.0.0.1");
	snprintf(trid.trsvcid, sizeof(trid.trsvcid), "4420");
	snprintf(trid.subnqn, sizeof(trid.subnqn), "nqn.x");

	/* Refused before anything is created (no thread is needed for that). */
	trid.trtype = NVME_TRANSPORT_RDMA;
#ifdef GGA_CONFIG_RDMA
	/* RDMA is accepted, with the same address checks as TCP. */
	snprintf(trid.traddr, sizeof(trid.traddr), "localhost");
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EINVAL);
	snprintf(trid.traddr, sizeof(trid.traddr), "127.0.0.1");
	trid.adrfam = NVME_ADRFAM_IPV6;
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EAFNOSUPPORT);
	trid.adrfam = NVME_ADRFAM_IPV4;
#else
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EPROTONOSUPPORT);
#endif
	trid.trtype = NVME_TRANSPORT_TCP;
	snprintf(trid.traddr, sizeof(trid.traddr), "localhost");
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EINVAL);
	snprintf(trid.traddr, sizeof(trid.traddr), "127.0.0.1");
	snprintf(trid.trsvcid, sizeof(trid.trsvcid), "44x");
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EINVAL);
	snprintf(trid.trsvcid, sizeof(trid.trsvcid), "70000");
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EINVAL);
	snprintf(trid.trsvcid, sizeof(trid.trsvcid), "4420");
	trid.subnqn[0] = '\0';
	UT_ASSERT_EQ(nvme_ctrlr_connect(&trid, &opts, dummy_connect_cb, NULL), -EINVAL);
}

/* The transports built in, by type: RDMA only in a build with rdma-core. */
static void
test_transport_find(void)
{
	const struct nvme_transport_ops *ops;

	ops = nvme_transport_find(NVME_TRANSPORT_TCP);
	CU_ASSERT_FATAL(ops == &nvme_tcp_ops);
	UT_ASSERT_EQ(ops->trtype, NVME_TRANSPORT_TCP);
	CU_ASSERT(ops->qpair_size >= ops->qpair_offset + sizeof(struct nvme_qpair));
	CU_ASSERT(ops->req_ctx_size > 0);
	ops = nvme_transport_find(NVME_TRANSPORT_RDMA);
#ifdef GGA_CONFIG_RDMA
	CU_ASSERT_FATAL(ops == &nvme_rdma_ops);
	UT_ASSERT_EQ(ops->trtype, NVME_TRANSPORT_RDMA);
	CU_ASSERT(ops->qpair_size >= ops->qpair_offset + sizeof(struct nvme_qpair));
	CU_ASSERT(ops->req_ctx_size > 0);
#else
	CU_ASSERT(ops == NULL);
#endif
	CU_ASSERT(nvme_transport_find((enum nvme_transport_type)0x7f) == NULL);
}

int
main(void)
{
	static const struct ut_test cmd_tests[] = {
		UT_TEST(test_rw),
		UT_TEST(test_sgl),
		UT_TEST(test_connect),
		UT_TEST(test_properties),
		UT_TEST(test_admin),
		UT_TEST(test_ns_info),
		UT_TEST(test_mdts),
		UT_TEST(test_status),
		UT_TEST(test_names),
		UT_TEST(test_connect_args),
		UT_TEST(test_transport_find),
	};
	struct ut_test all[64];
	const struct ut_test *pdu_tests;
	size_t n = 0, pdu_count, i;

	for (i = 0; i < ARRAY_SIZE(cmd_tests); i++) {
		all[n++] = cmd_tests[i];
	}
	nvme_tcp_pdu_tests(&pdu_tests, &pdu_count);
	for (i = 0; i < pdu_count && n < ARRAY_SIZE(all); i++) {
		all[n++] = pdu_tests[i];
	}
	return ut_run("nvme_cmd", all, n, NULL, NULL);
}
