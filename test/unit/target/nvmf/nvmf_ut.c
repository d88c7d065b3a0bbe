/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe-oF target core, driven through a fake transport on
 * one hand-polled thread (app thread and poll group at once): status
 * mapping, NQN rules, properties and the CC/CSTS state machine, Connect
 * validation with the exact status/IATTR/IPO, controller lifetime, Identify
 * data layout, features, Get Log Page, asynchronous events, the discovery
 * log, and I/O command checks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gga/app.h"
#include "gga/bdev_module.h"
#include "gga/nvmf.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"

#include "target/nvmf_internal.h"
#include "test/common/nvmf_fake_transport.h"

#define SUBNQN   "nqn.2016-06.io.gga:ut1"
#define SUBNQN2  "nqn.2016-06.io.gga:ut2"
#define HOSTNQN  "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define HOSTNQN2 "nqn.2014-08.io.example:host2"

static struct thread *g_thread;

/* ---- The fake transport (test/common/nvmf_fake_transport.c) ---- */

/* A request with room for its data. */
struct ut_req {
	struct fake_req f;
	uint8_t buf[8192] __attribute__((aligned(64)));
};

static struct nvmf_listen_addr g_addr = {
	.trtype = NVME_TRTYPE_LOOP,
	.adrfam = NVME_ADRFAM_IPV4,
	.traddr = "127.0.0.1",
	.trsvcid = "4420",
};
static struct nvmf_listen_addr g_other_addr = {
	.trtype = NVME_TRTYPE_LOOP,
	.adrfam = NVME_ADRFAM_IPV4,
	.traddr = "127.0.0.1",
	.trsvcid = "4421",
};

static void
poll_all(void)
{
	int i;

	for (i = 0; i < 1000 && thread_poll(g_thread, 0, 0) > 0; i++) {
	}
}

static struct fake_qpair *
new_qpair(const struct nvmf_listen_addr *addr)
{
	struct fake_qpair *fq = fake_qpair_new(addr, "ut");

	CU_ASSERT_FATAL(fq != NULL);
	return fq;
}

static void
close_qpair(struct fake_qpair *fq)
{
	fake_qpair_disconnect(&fq->qpair);
	poll_all();
	CU_ASSERT(fq->fini_done);
	free(fq);
}

/* Execute a command and poll until it completes. */
static struct nvme_cpl
exec(struct fake_qpair *fq, struct ut_req *r, const struct nvme_cmd *cmd, const void *data,
     uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->f.req.qpair = &fq->qpair;
	r->f.req.cmd = *cmd;
	r->f.req.xfer = nvmf_cmd_xfer(cmd);
	if (data != NULL) {
		memcpy(r->buf, data, len);
	}
	r->f.iov.iov_base = r->buf;
	r->f.iov.iov_len = len;
	r->f.req.iov = &r->f.iov;
	r->f.req.iovcnt = len > 0 ? 1 : 0;
	r->f.req.length = len;
	nvmf_request_exec(&r->f.req);
	poll_all();
	return r->f.req.rsp;
}

static struct nvme_cpl
cmd0(struct fake_qpair *fq, struct ut_req *r, uint8_t opc, uint32_t nsid, uint32_t cdw10,
     uint32_t cdw11, uint32_t len)
{
	struct nvme_cmd cmd = { .opc = opc, .nsid = nsid, .cdw10 = cdw10, .cdw11 = cdw11 };

	return exec(fq, r, &cmd, NULL, len);
}

static struct nvme_cpl
connect(struct fake_qpair *fq, const char *subnqn, const char *hostnqn, uint16_t qid,
	uint16_t sqsize, uint16_t cntlid)
{
	struct nvme_connect_cmd cmd = { .opc = NVME_OPC_FABRICS,
					.flags = NVME_CMD_FLAGS_SGL,
					.fctype = NVME_FCTYPE_CONNECT,
					.qid = qid,
					.sqsize = sqsize };
	struct nvme_connect_data data = { .cntlid = cntlid };
	static struct ut_req r;

	memset(data.hostid, 0xab, sizeof(data.hostid));
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", subnqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", hostnqn);
	return exec(fq, &r, (struct nvme_cmd *)&cmd, &data, sizeof(data));
}

static struct nvme_cpl
prop(struct fake_qpair *fq, bool set, uint32_t ofst, uint8_t size8, uint64_t value)
{
	struct nvme_prop_set_cmd cmd = { .opc = NVME_OPC_FABRICS,
					 .fctype = set ? NVME_FCTYPE_PROPERTY_SET :
							 NVME_FCTYPE_PROPERTY_GET,
					 .attrib = size8,
					 .ofst = ofst,
					 .value = value };
	static struct ut_req r;

	return exec(fq, &r, (struct nvme_cmd *)&cmd, NULL, 0);
}

#define SC(cpl)  NVME_STATUS_GET_SC((cpl).status)
#define SCT(cpl) NVME_STATUS_GET_SCT((cpl).status)

static struct nvmf_subsystem *g_subsys;

static int
suite_init(void)
{
	struct nvmf_subsystem *s2;

	if (thread_lib_init() != 0) {
		return -1;
	}
	g_thread = thread_create("ut");
	thread_set_current(g_thread);
	if (nvmf_get_app_subsystem()->init() != 0) {
		return -1;
	}
	fake_transport_add(3);
	if (nvmf_subsystem_create(SUBNQN, NVMF_SUBTYPE_NVME, 8, &g_subsys) != 0 ||
	    nvmf_subsystem_add_listener(g_subsys, &g_addr, NVME_ANA_OPTIMIZED) != 0 ||
	    nvmf_subsystem_add_host(g_subsys, HOSTNQN, NULL, NULL, 0) != 0) {
		return -1;
	}
	/* A second subsystem open to anyone, for the discovery log. */
	if (nvmf_subsystem_create(SUBNQN2, NVMF_SUBTYPE_NVME, 4, &s2) != 0 ||
	    nvmf_subsystem_add_listener(s2, &g_addr, NVME_ANA_OPTIMIZED) != 0 ||
	    nvmf_subsystem_add_listener(s2, &g_other_addr, NVME_ANA_OPTIMIZED) != 0) {
		return -1;
	}
	nvmf_subsystem_set_allow_any_host(s2, true);
	return 0;
}

static bool g_fini_done;

static void
fini_done(void *arg)
{
	g_fini_done = true;
}

static int
suite_fini(void)
{
	int i;

	nvmf_get_app_subsystem()->fini(fini_done, NULL);
	for (i = 0; i < 500 && !g_fini_done; i++) {
		poll_all();
		usleep(2000);
	}
	if (!g_fini_done) {
		return -1;
	}
	rpc_unregister_all();
	thread_set_current(NULL);
	thread_destroy(g_thread);
	thread_lib_fini();
	return 0;
}

/* ---- Pure pieces ---- */

static void
test_errno_to_status(void)
{
	UT_ASSERT_EQ(nvmf_errno_to_status(0), 0);
	UT_ASSERT_EQ(nvmf_errno_to_status(-EINVAL),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_DNR);
	UT_ASSERT_EQ(nvmf_errno_to_status(-ERANGE),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_OUT_OF_RANGE) | NVME_STATUS_DNR);
	UT_ASSERT_EQ(nvmf_errno_to_status(-ENOTSUP),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE) | NVME_STATUS_DNR);
	/* Transient conditions leave the host free to retry. */
	UT_ASSERT_EQ(nvmf_errno_to_status(-ENOMEM),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INTERNAL_DEVICE_ERROR));
	UT_ASSERT_EQ(nvmf_errno_to_status(-ENODEV),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_NAMESPACE_NOT_READY));
	UT_ASSERT_EQ(nvmf_errno_to_status(-ECANCELED),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORTED_BY_REQUEST));
	UT_ASSERT_EQ(nvmf_errno_to_status(-EILSEQ),
		     NVME_STATUS(NVME_SCT_MEDIA_ERROR, NVME_SC_UNRECOVERED_READ_ERROR));
	UT_ASSERT_EQ(nvmf_errno_to_status(-EBADF) & ~NVME_STATUS_DNR,
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_NAMESPACE_IS_WRITE_PROTECTED));
	UT_ASSERT_EQ(nvmf_errno_to_status(-12345),
		     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INTERNAL_DEVICE_ERROR));
}

static void
test_nqn_rules(void)
{
	CU_ASSERT(nvmf_nqn_is_valid("nqn.2016-06.io.spdk:cnode1"));
	CU_ASSERT(nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:"
				    "0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b"));
	CU_ASSERT(nvmf_nqn_is_valid("nqn.2014-08.org.example"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"));
	/* The UUID form: hex of either case, dashes in place, 36 characters exactly. */
	CU_ASSERT(nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:"
				    "0B9F8A3C-1D2E-4F50-8A6B-7C8D9E0F1A2B"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:"
				     "0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:"
				     "0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2bc"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2014-08.org.nvmexpress:uuid:"
				     "0b9f8a3c1-d2e-4f50-8a6b-7c8d9e0f1a2b"));
	CU_ASSERT(!nvmf_nqn_is_valid("iqn.2016-06.io.spdk:cnode1"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.16-06.io.spdk:x"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2016-13.io.spdk:x"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2016-06.:x"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2016-06.io.sp dk:x"));
	CU_ASSERT(!nvmf_nqn_is_valid("nqn.2016-06.io.spdk:x\ty"));
	CU_ASSERT(!nvmf_nqn_is_valid(NULL));
	{
		char long_nqn[300];

		memset(long_nqn, 'a', sizeof(long_nqn));
		memcpy(long_nqn, "nqn.2016-06.io.spdk:", 20);
		long_nqn[223] = '\0';
		CU_ASSERT(nvmf_nqn_is_valid(long_nqn));
		long_nqn[223] = 'a';
		long_nqn[224] = '\0';
		CU_ASSERT(!nvmf_nqn_is_valid(long_nqn));
	}
	CU_ASSERT(nvmf_sn_is_valid("ABC123"));
	CU_ASSERT(!nvmf_sn_is_valid("123456789012345678901"));
	CU_ASSERT(!nvmf_sn_is_valid(""));
	CU_ASSERT(!nvmf_mn_is_valid("bad\x01"));
}

static void
test_properties_and_cc(void)
{
	struct nvmf_ctrlr_regs regs;
	uint32_t cc, changes;
	uint64_t v = 0;
	uint32_t good = NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16;

	nvmf_ctrlr_regs_init(&regs, 128);
	UT_ASSERT_EQ(nvmf_prop_get(&regs, NVME_PROP_SIZE_8, NVME_REG_CAP, &v), 0);
	UT_ASSERT_EQ(NVME_CAP_MQES(v), 127);
	UT_ASSERT_EQ(NVME_CAP_TO(v), NVMF_CAP_TO);
	CU_ASSERT((v & NVME_CAP_CSS_NVM) != 0);
	CU_ASSERT((v & NVME_CAP_CQR) != 0);
	UT_ASSERT_EQ(nvmf_prop_get(&regs, NVME_PROP_SIZE_4, NVME_REG_VS, &v), 0);
	UT_ASSERT_EQ(v, NVME_VS_1_3);
	/* Wrong sizes, unknown offsets, reserved size encodings. */
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_prop_get(&regs, NVME_PROP_SIZE_4, NVME_REG_CAP, &v)),
		     NVME_SC_INVALID_FIELD);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_prop_get(&regs, NVME_PROP_SIZE_8, NVME_REG_CC, &v)),
		     NVME_SC_INVALID_FIELD);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_prop_get(&regs, 2, NVME_REG_CSTS, &v)),
		     NVME_SC_INVALID_FIELD);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_prop_get(&regs, 0, 0x1000, &v)),
		     NVME_SC_INVALID_FIELD);
	/* Only CC is writable, with 4 bytes. */
	UT_ASSERT_EQ(nvmf_prop_set_check(&regs, 0, NVME_REG_CC, good, &cc), 0);
	UT_ASSERT_EQ(cc, good);
	CU_ASSERT(nvmf_prop_set_check(&regs, 0, NVME_REG_CSTS, 1, &cc) != 0);
	CU_ASSERT(nvmf_prop_set_check(&regs, 1, NVME_REG_CAP, 1, &cc) != 0);
	CU_ASSERT(nvmf_prop_set_check(&regs, 1, NVME_REG_CC, good, &cc) != 0);
	CU_ASSERT(nvmf_prop_set_check(&regs, 0, NVME_REG_NSSR, 0x4E564D65, &cc) != 0);

	/* Enable -> ready; disable -> not ready. */
	changes = nvmf_ctrlr_apply_cc(&regs, good, false);
	UT_ASSERT_EQ(changes, NVMF_CC_ENABLED);
	UT_ASSERT_EQ(regs.csts, NVME_CSTS_RDY);
	changes = nvmf_ctrlr_apply_cc(&regs, good, false);
	UT_ASSERT_EQ(changes, 0);
	changes = nvmf_ctrlr_apply_cc(&regs, good & ~NVME_CC_EN, false);
	UT_ASSERT_EQ(changes, NVMF_CC_DISABLED);
	UT_ASSERT_EQ(regs.csts, 0);
	/* Shutdown notification: SHST occurring (the caller completes it). */
	nvmf_ctrlr_apply_cc(&regs, good, false);
	changes = nvmf_ctrlr_apply_cc(&regs, good | NVME_CC_SHN_NORMAL, false);
	UT_ASSERT_EQ(changes, NVMF_CC_SHUTDOWN);
	UT_ASSERT_EQ(regs.csts & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_OCCURRING);
	changes = nvmf_ctrlr_apply_cc(&regs, good, false);
	UT_ASSERT_EQ(regs.csts & NVME_CSTS_SHST_MASK, 0);
	nvmf_ctrlr_apply_cc(&regs, 0, false);
	/* Bad queue entry sizes: fatal status, never ready. */
	changes = nvmf_ctrlr_apply_cc(&regs, NVME_CC_EN, false);
	UT_ASSERT_EQ(changes, 0);
	CU_ASSERT(regs.csts & NVME_CSTS_CFS);
	CU_ASSERT(!(regs.csts & NVME_CSTS_RDY));
	/* ... which a discovery controller does not need. */
	nvmf_ctrlr_regs_init(&regs, 128);
	UT_ASSERT_EQ(nvmf_ctrlr_apply_cc(&regs, NVME_CC_EN, true), NVMF_CC_ENABLED);
	/* Page size other than 4 KiB. */
	nvmf_ctrlr_regs_init(&regs, 128);
	nvmf_ctrlr_apply_cc(&regs, good | (1u << NVME_CC_MPS_SHIFT), false);
	CU_ASSERT(regs.csts & NVME_CSTS_CFS);
}

static void
test_rw_check(void)
{
	struct nvme_cmd cmd = { .opc = NVME_OPC_READ };

	cmd.cdw10 = 96;
	cmd.cdw12 = 3; /* 4 blocks */
	UT_ASSERT_EQ(nvmf_io_rw_check(&cmd, 100, 520, 4 * 520, true), 0);
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_io_rw_check(&cmd, 100, 520, 4 * 512, true)),
		     NVME_SC_DATA_SGL_LENGTH_INVALID);
	UT_ASSERT_EQ(nvmf_io_rw_check(&cmd, 100, 520, 0, false), 0);
	cmd.cdw12 = 4; /* 5 blocks: one past the end */
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_io_rw_check(&cmd, 100, 520, 5 * 520, true)),
		     NVME_SC_LBA_OUT_OF_RANGE);
	CU_ASSERT(nvmf_io_rw_check(&cmd, 100, 520, 5 * 520, true) & NVME_STATUS_DNR);
	/* SLBA + NLB overflowing 64 bits. */
	cmd.cdw10 = 0xffffffff;
	cmd.cdw11 = 0xffffffff;
	cmd.cdw12 = 0xffff;
	UT_ASSERT_EQ(NVME_STATUS_GET_SC(nvmf_io_rw_check(&cmd, UINT64_MAX, 512, 65536 * 512, true)),
		     NVME_SC_LBA_OUT_OF_RANGE);
	/* A 16-bit NLB of 0xffff is 65536 blocks. */
	cmd.cdw10 = 0;
	cmd.cdw11 = 0;
	UT_ASSERT_EQ(nvmf_io_rw_check(&cmd, 65536, 512, 65536 * 512, true), 0);
}

/* A thin bdev as far as Identify Namespace looks: its space and whether it unmaps. */
static struct bdev_space g_thin_space;
static bool g_thin_unmap;

static void
thin_get_space(void *ctxt, struct bdev_space *space)
{
	*space = g_thin_space;
}

static bool
thin_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	return type != BDEV_IO_TYPE_UNMAP || g_thin_unmap;
}

static void
test_identify_ns_thin(void)
{
	static const struct bdev_fn_table thin_fn = {
		.io_type_supported = thin_io_type_supported,
		.get_space = thin_get_space,
	};
	static const struct bdev_fn_table plain_fn = {
		.io_type_supported = thin_io_type_supported,
	};
	struct bdev bdev = { .num_blocks = 2048, .block_size = 512, .fn_table = &plain_fn };
	struct nvme_identify_ns id;
	struct nvmf_subsystem subsys = { .ana_reporting = false };
	struct nvmf_ns ns = {
		.subsys = &subsys, .nsid = 1, .block_size = 512, .num_blocks = 2048, .bdev = &bdev
	};
	uint8_t *raw = (uint8_t *)&id;
	uint64_t nsze, ncap, nuse;

	/* Not thin: every block allocated, NSFEAT and DLFEAT clear. */
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&ncap, raw + 8, 8);
	memcpy(&nuse, raw + 16, 8);
	UT_ASSERT_EQ(ncap, 2048);
	UT_ASSERT_EQ(nuse, 2048);
	UT_ASSERT_EQ(raw[24], 0);
	UT_ASSERT_EQ(raw[33], 0);

	/* Thin: THINP, NCAP and NUSE from the bdev, read again at each Identify. */
	bdev.fn_table = &thin_fn;
	g_thin_unmap = true;
	g_thin_space = (struct bdev_space){
		.thin = true, .dealloc_zeroes = true, .used_blocks = 0, .capacity_blocks = 1024
	};
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&nsze, raw, 8);
	memcpy(&ncap, raw + 8, 8);
	memcpy(&nuse, raw + 16, 8);
	UT_ASSERT_EQ(nsze, 2048);
	UT_ASSERT_EQ(ncap, 1024);
	UT_ASSERT_EQ(nuse, 0);
	UT_ASSERT_EQ(raw[24] & NVME_NSFEAT_THIN_PROV, NVME_NSFEAT_THIN_PROV);
	UT_ASSERT_EQ(raw[33], 0x09); /* DLFEAT: reads zeros; Write Zeroes deallocates */
	g_thin_space.used_blocks = 700;
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&nuse, raw + 16, 8);
	UT_ASSERT_EQ(nuse, 700);
	/* Capacity above the size is cut to NSZE; NUSE never passes NCAP. */
	g_thin_space.capacity_blocks = 5000;
	g_thin_space.used_blocks = 6000;
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&ncap, raw + 8, 8);
	memcpy(&nuse, raw + 16, 8);
	UT_ASSERT_EQ(ncap, 2048);
	UT_ASSERT_EQ(nuse, 2048);
	/* No DLFEAT unless the bdev unmaps and its deallocated blocks read zeros. */
	g_thin_unmap = false;
	nvmf_identify_ns_fill(&ns, &id);
	UT_ASSERT_EQ(raw[33], 0);
	g_thin_unmap = true;
	g_thin_space.dealloc_zeroes = false;
	nvmf_identify_ns_fill(&ns, &id);
	UT_ASSERT_EQ(raw[33], 0);
	UT_ASSERT_EQ(raw[24] & NVME_NSFEAT_THIN_PROV, NVME_NSFEAT_THIN_PROV);
}

static void
test_identify_ns_layout(void)
{
	struct nvme_identify_ns id;
	struct nvmf_subsystem subsys = { .ana_reporting = false };
	struct nvmf_ns ns = { .subsys = &subsys,
			      .nsid = 3,
			      .block_size = 4096,
			      .md_size = 8,
			      .num_blocks = 1000,
			      .anagrpid = 2 };
	uint8_t *raw = (uint8_t *)&id, desc[4096];
	uint32_t lbaf, grp;
	uint64_t nsze;
	size_t n;

	memset(ns.uuid, 0x5a, sizeof(ns.uuid));
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&nsze, raw, 8);
	UT_ASSERT_EQ(nsze, 1000);
	UT_ASSERT_EQ(raw[30], 1);    /* NMIC: shared */
	UT_ASSERT_EQ(raw[31], 0xfe); /* RESCAP: the six types and IEKEY; no PTPL without a file */
	memcpy(&grp, raw + 92, 4);
	UT_ASSERT_EQ(grp, 0); /* ANAGRPID: no ANA reporting */
	subsys.ana_reporting = true;
	ns.ptpl_file = (char *)"/nonexistent";
	nvmf_identify_ns_fill(&ns, &id);
	memcpy(&grp, raw + 92, 4);
	UT_ASSERT_EQ(grp, 2);
	UT_ASSERT_EQ(raw[31], 0xff);
	ns.ptpl_file = NULL;
	UT_ASSERT_EQ(raw[25], 0);    /* NLBAF: one format */
	UT_ASSERT_EQ(raw[26], 0x10); /* FLBAS: format 0, extended LBA */
	UT_ASSERT_EQ(raw[27], 0x01); /* MC: metadata in the data buffer */
	memcpy(&lbaf, raw + 128, 4);
	UT_ASSERT_EQ(lbaf & 0xffff, 8);        /* MS */
	UT_ASSERT_EQ((lbaf >> 16) & 0xff, 12); /* LBADS */
	UT_ASSERT_EQ(raw[104], 0x5a);          /* NGUID */
	ns.md_size = 0;
	ns.block_size = 512;
	nvmf_identify_ns_fill(&ns, &id);
	UT_ASSERT_EQ(raw[26], 0);
	UT_ASSERT_EQ(raw[27], 0);
	memcpy(&lbaf, raw + 128, 4);
	UT_ASSERT_EQ(lbaf, 9u << 16);
	/* Descriptors: NGUID (16), UUID (16), CSI (1), then a zero terminator. */
	n = nvmf_ns_id_desc_fill(&ns, desc, sizeof(desc));
	UT_ASSERT_EQ(n, 20 + 20 + 5);
	UT_ASSERT_EQ(desc[0], NVME_NIDT_NGUID);
	UT_ASSERT_EQ(desc[1], 16);
	UT_ASSERT_EQ(desc[4], 0x5a);
	UT_ASSERT_EQ(desc[20], NVME_NIDT_UUID);
	UT_ASSERT_EQ(desc[40], NVME_NIDT_CSI);
	UT_ASSERT_EQ(desc[41], 1);
	UT_ASSERT_EQ(desc[45], 0);
}

static void
test_discovery_log(void)
{
	struct nvme_discovery_log_hdr *log;
	const struct nvme_discovery_log_entry *e;
	uint64_t gen = g_nvmf_tgt.discovery_genctr;
	size_t len;

	/* HOSTNQN may use both subsystems: 1 + 2 listeners. */
	log = nvmf_discovery_log_build(HOSTNQN, &len);
	CU_ASSERT_FATAL(log != NULL);
	UT_ASSERT_EQ(log->numrec, 3);
	UT_ASSERT_EQ(len, 1024 + 3 * 1024);
	UT_ASSERT_EQ(log->genctr, gen);
	e = &log->entries[0];
	UT_ASSERT_EQ(e->trtype, NVME_TRTYPE_LOOP);
	UT_ASSERT_EQ(e->adrfam, NVME_ADRFAM_IPV4);
	UT_ASSERT_EQ(e->subtype, NVME_SUBTYPE_NVME);
	UT_ASSERT_EQ(e->cntlid, 0xffff);
	UT_ASSERT_EQ(e->asqsz, 32);
	UT_ASSERT_STR_EQ(e->subnqn, SUBNQN);
	UT_ASSERT_STR_EQ(e->traddr, "127.0.0.1");
	UT_ASSERT_STR_EQ(e->trsvcid, "4420");
	UT_ASSERT_STR_EQ((const char *)((const uint8_t *)log + 1024 + 256), SUBNQN);
	UT_ASSERT_STR_EQ(log->entries[2].trsvcid, "4421");
	CU_ASSERT(log->entries[1].portid == e->portid);
	CU_ASSERT(log->entries[2].portid != e->portid);
	free(log);
	/* Another host only sees the open subsystem. */
	log = nvmf_discovery_log_build(HOSTNQN2, &len);
	CU_ASSERT_FATAL(log != NULL);
	UT_ASSERT_EQ(log->numrec, 2);
	UT_ASSERT_STR_EQ(log->entries[0].subnqn, SUBNQN2);
	free(log);
	/* Changes bump the generation counter. */
	CU_ASSERT(nvmf_subsystem_add_host(g_subsys, HOSTNQN2, NULL, NULL, 0) == 0);
	CU_ASSERT(g_nvmf_tgt.discovery_genctr > gen);
	CU_ASSERT(nvmf_subsystem_remove_host(g_subsys, HOSTNQN2) == 0);
	UT_ASSERT_EQ(nvmf_subsystem_remove_host(g_subsys, HOSTNQN2), -ENOENT);
	UT_ASSERT_EQ(nvmf_subsystem_add_host(g_subsys, "junk", NULL, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(nvmf_subsystem_add_listener(g_subsys, &g_addr, NVME_ANA_OPTIMIZED), -EEXIST);
}

/* ---- Through the request path ---- */

static void
test_connect_validation(void)
{
	struct fake_qpair *fq = new_qpair(&g_addr);
	struct fake_qpair *other = new_qpair(&g_other_addr);
	struct nvme_cpl cpl;

	cpl = connect(fq, "nqn.2016-06.io.gga:nope", HOSTNQN, 0, 31, 0xffff);
	UT_ASSERT_EQ(SCT(cpl), NVME_SCT_COMMAND_SPECIFIC);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_CONNECT_INVALID_PARAMETERS);
	CU_ASSERT(cpl.status & NVME_STATUS_DNR);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(1, 256));
	/* Known subsystem, but it does not listen where this host came in. */
	cpl = connect(other, SUBNQN, HOSTNQN, 0, 31, 0xffff);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_CONNECT_INVALID_PARAMETERS);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(1, 256));
	cpl = connect(fq, SUBNQN, HOSTNQN2, 0, 31, 0xffff);
	UT_ASSERT_EQ(SCT(cpl), NVME_SCT_COMMAND_SPECIFIC);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_CONNECT_INVALID_HOST);
	cpl = connect(fq, SUBNQN, HOSTNQN, 0, 0, 0xffff);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(0, 44));
	cpl = connect(fq, SUBNQN, HOSTNQN, 0, 32, 0xffff);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(0, 44));
	cpl = connect(fq, SUBNQN, HOSTNQN, 0, 31, 1);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(1, 16));
	cpl = connect(fq, SUBNQN, HOSTNQN, 1, 31, 77);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(1, 16));
	/* Nothing but Connect before Connect. */
	{
		struct ut_req r;

		cpl = cmd0(fq, &r, NVME_OPC_KEEP_ALIVE, 0, 0, 0, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);
		cpl = prop(fq, false, NVME_REG_CAP, 1, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);
	}
	CU_ASSERT(TAILQ_EMPTY(&g_subsys->ctrlrs));
	close_qpair(fq);
	close_qpair(other);
}

static void
test_controller_lifecycle(void)
{
	struct fake_qpair *admin = new_qpair(&g_addr), *io1 = new_qpair(&g_addr);
	struct fake_qpair *io2 = new_qpair(&g_addr);
	struct nvme_identify_ctrlr *id;
	struct nvmf_ctrlr *ctrlr;
	struct ut_req r;
	struct nvme_cpl cpl;
	uint16_t cntlid;

	cpl = connect(admin, SUBNQN, HOSTNQN, 0, 31, 0xffff);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));
	cntlid = (uint16_t)cpl.cdw0;
	CU_ASSERT(cntlid >= 1 && cntlid <= 0xffef);
	UT_ASSERT_EQ(admin->qpair.state, NVMF_QPAIR_LIVE);
	UT_ASSERT_EQ(admin->qpair.sq_entries, 32);
	ctrlr = admin->qpair.ctrlr;
	CU_ASSERT_FATAL(ctrlr != NULL);
	/* A second Connect on the same queue. */
	cpl = connect(admin, SUBNQN, HOSTNQN, 0, 31, 0xffff);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);
	/* Admin commands wait for CC.EN; I/O queues too. */
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_CTRLR, 0, 4096);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);
	cpl = connect(io1, SUBNQN, HOSTNQN, 1, 127, cntlid);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);
	cpl = prop(admin, true, NVME_REG_CC, 0, NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	cpl = prop(admin, false, NVME_REG_CSTS, 0, 0);
	UT_ASSERT_EQ(cpl.cdw0, NVME_CSTS_RDY);
	cpl = prop(admin, false, NVME_REG_CAP, 1, 0);
	UT_ASSERT_EQ(cpl.cdw0 & 0xffff, 127);
	UT_ASSERT_EQ(cpl.cdw1 >> 5, 1); /* CSS NVM at bit 37 */

	/* Identify Controller, checked at the raw offsets. */
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_CTRLR, 0, 4096);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));
	id = (struct nvme_identify_ctrlr *)r.buf;
	UT_ASSERT_EQ(*(uint16_t *)(r.buf + 78), cntlid);
	UT_ASSERT_EQ(*(uint32_t *)(r.buf + 80), NVME_VS_1_3);
	UT_ASSERT_STR_EQ((char *)r.buf + 768, SUBNQN);
	UT_ASSERT_EQ(memcmp(r.buf + 4, NVMF_DEFAULT_SN, 20), 0);
	UT_ASSERT_EQ(r.buf[24 + 14], ' '); /* MN is space padded */
	UT_ASSERT_EQ(r.buf[111], NVME_CNTRLTYPE_IO);
	UT_ASSERT_EQ(r.buf[259], NVMF_MAX_AER - 1);
	UT_ASSERT_EQ(r.buf[512], 0x66);
	UT_ASSERT_EQ(r.buf[513], 0x44);
	UT_ASSERT_EQ(*(uint32_t *)(r.buf + 516), 8);                 /* NN = max_namespaces */
	UT_ASSERT_EQ(*(uint32_t *)(r.buf + 1792), (64 + 8192) / 16); /* IOCCSZ */
	UT_ASSERT_EQ(*(uint32_t *)(r.buf + 1796), 1);                /* IORCSZ */
	UT_ASSERT_EQ(r.buf[1803], 1);                                /* MSDBD */
	UT_ASSERT_EQ(r.buf[77], 5); /* MDTS: 128 KiB in 4 KiB pages */
	UT_ASSERT_EQ(id->kas, NVMF_KAS);
	/* No namespaces: active list empty, nsid 1 inactive (zeros), nsid 9 invalid. */
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_ACTIVE_NS_LIST, 0, 4096);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(*(uint32_t *)r.buf, 0);
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 1, NVME_CNS_NS, 0, 4096);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 9, NVME_CNS_NS, 0, 4096);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_NAMESPACE_OR_FORMAT);
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 1, NVME_CNS_NS_ID_DESCRIPTORS, 0, 4096);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_NAMESPACE_OR_FORMAT);

	/* Features. */
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_KEEP_ALIVE_TIMER, 1500, 0);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	cpl = cmd0(admin, &r, NVME_OPC_GET_FEATURES, 0, NVME_FEAT_KEEP_ALIVE_TIMER, 0, 0);
	UT_ASSERT_EQ(cpl.cdw0, 2000); /* rounded up to KAS */
	CU_ASSERT(ctrlr->ka_poller != NULL);
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_NUMBER_OF_QUEUES, 0xffff, 0);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_FIELD);
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_NUMBER_OF_QUEUES, 0x00030003, 0);
	UT_ASSERT_EQ(cpl.cdw0, NVME_FEAT_NUM_QUEUES(126, 126));
	/* The value-only features (target/nvmf_feat.c has their own test). */
	cpl = cmd0(admin, &r, NVME_OPC_GET_FEATURES, 0, NVME_FEAT_ARBITRATION, 0, 0);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(cpl.cdw0, 7);
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_POWER_MANAGEMENT, 1, 0);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_FIELD);
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_TEMPERATURE_THRESHOLD, 350, 0);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	cpl = cmd0(admin, &r, NVME_OPC_GET_FEATURES, 0, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 0);
	UT_ASSERT_EQ(cpl.cdw0, 350);
	cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_INTERRUPT_COALESCING, 0, 0);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_FIELD);
	/* Identify: the temperature thresholds, the Commands Supported and Effects log. */
	cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_CTRLR, 0, 4096);
	UT_ASSERT_EQ(((struct nvme_identify_ctrlr *)r.buf)->wctemp, NVMF_WCTEMP_K);
	UT_ASSERT_EQ(((struct nvme_identify_ctrlr *)r.buf)->cctemp, NVMF_CCTEMP_K);
	CU_ASSERT(((struct nvme_identify_ctrlr *)r.buf)->lpa & NVME_LPA_COMMAND_EFFECTS);
	/* Firmware Slot Information: slot 1 active, the revision of Identify. */
	cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_FIRMWARE_SLOT | (127u << 16), 0,
		   512);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(r.buf[0], 1);
	CU_ASSERT(memcmp(r.buf + 8, NVMF_FW_REVISION, strlen(NVMF_FW_REVISION)) == 0);
	/*
	 * Commands Supported and Effects: every admin opcode it marks supported is
	 * executed, every other one is Invalid Opcode (AER, which waits, and the
	 * Fabrics opcode aside).
	 */
	cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_COMMAND_EFFECTS | (1023u << 16), 0,
		   4096);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	{
		uint32_t acs[256];
		unsigned int opc;

		memcpy(acs, r.buf, sizeof(acs));
		UT_ASSERT_EQ(acs[NVME_OPC_IDENTIFY], 1);
		for (opc = 0; opc < 256; opc++) {
			if (opc == NVME_OPC_ASYNC_EVENT_REQUEST || opc == NVME_OPC_FABRICS) {
				continue;
			}
			cpl = cmd0(admin, &r, (uint8_t)opc, 0, 0, 0, 0);
			if ((acs[opc] & 1) !=
			    (SC(cpl) != NVME_SC_INVALID_OPCODE || SCT(cpl) != NVME_SCT_GENERIC)) {
				fprintf(stderr,
					"admin opcode 0x%02x: effects 0x%x, status %u/0x%x\n", opc,
					acs[opc], SCT(cpl), SC(cpl));
				CU_FAIL("the effects log and the admin commands disagree");
			}
		}
	}
	cpl = cmd0(admin, &r, NVME_OPC_GET_FEATURES, 0,
		   NVME_FEAT_ASYNC_EVENT_CONFIG | (NVME_FEAT_SEL_SUPPORTED << 8), 0, 0);
	UT_ASSERT_EQ(cpl.cdw0, 1u << 2);

	/* Get Log Page: length must match the SGL; offsets dword aligned. */
	cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, 512);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(r.buf[3], 100);
	cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, 256);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_DATA_SGL_LENGTH_INVALID);
	cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, 0x42 | (127u << 16), 0, 512);
	UT_ASSERT_EQ(SCT(cpl), NVME_SCT_COMMAND_SPECIFIC);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_LOG_PAGE);

	/*
	 * Error Information: the opcode walk above failed some 250 commands; the
	 * log holds the 16 newest, newest first (the unknown log page, then the
	 * short SMART read), and SMART counts them all.
	 */
	{
		struct nvme_error_log_entry e[NVMF_ERR_LOG_ENTRIES];
		uint64_t made;
		int i;

		cpl = cmd0(admin, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_CTRLR, 0, 4096);
		UT_ASSERT_EQ(((struct nvme_identify_ctrlr *)r.buf)->elpe, NVMF_ERR_LOG_ENTRIES - 1);
		cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (255u << 16), 0,
			   sizeof(e));
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		memcpy(e, r.buf, sizeof(e));
		made = e[0].error_count;
		CU_ASSERT(made > 200);
		for (i = 0; i < NVMF_ERR_LOG_ENTRIES; i++) {
			UT_ASSERT_EQ(e[i].error_count, made - (uint64_t)i);
			UT_ASSERT_EQ(e[i].sqid, 0);
			UT_ASSERT_EQ(e[i].error_location, 0xffff);
		}
		UT_ASSERT_EQ(e[0].status,
			     NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_INVALID_LOG_PAGE) |
				     NVME_STATUS_DNR);
		UT_ASSERT_EQ(e[1].status,
			     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_SGL_LENGTH_INVALID) |
				     NVME_STATUS_DNR);
		UT_ASSERT_EQ(e[2].status & 0x0ffe,
			     NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE));
		cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0,
			   512);
		UT_ASSERT_EQ(((struct nvme_smart_log *)r.buf)->num_err_log_entries[0], made);
		/* A read of one entry gives the newest. */
		cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (15u << 16), 0,
			   64);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		UT_ASSERT_EQ(((struct nvme_error_log_entry *)r.buf)->error_count, made);
	}

	/* Asynchronous events: held, completed by a namespace change, masked until read. */
	{
		struct ut_req aer1, aer2, extra[NVMF_MAX_AER];
		int i;

		cmd0(admin, &aer1, NVME_OPC_ASYNC_EVENT_REQUEST, 0, 0, 0, 0);
		CU_ASSERT(!aer1.f.done);
		nvmf_ctrlr_ns_changed(ctrlr, 5);
		poll_all();
		CU_ASSERT(aer1.f.done);
		UT_ASSERT_EQ(aer1.f.req.rsp.cdw0, 0x040002);
		cmd0(admin, &aer2, NVME_OPC_ASYNC_EVENT_REQUEST, 0, 0, 0, 0);
		nvmf_ctrlr_ns_changed(ctrlr, 6);
		poll_all();
		CU_ASSERT(!aer2.f.done); /* masked: the log was not read yet */
		cpl = cmd0(admin, &r, NVME_OPC_GET_LOG_PAGE, 0,
			   NVME_LOG_CHANGED_NS_LIST | (1023u << 16), 0, 4096);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		UT_ASSERT_EQ(((uint32_t *)r.buf)[0], 5);
		UT_ASSERT_EQ(((uint32_t *)r.buf)[1], 6);
		UT_ASSERT_EQ(((uint32_t *)r.buf)[2], 0);
		nvmf_ctrlr_ns_changed(ctrlr, 7);
		poll_all();
		CU_ASSERT(aer2.f.done);
		/* The limit: NVMF_MAX_AER outstanding. */
		for (i = 0; i < NVMF_MAX_AER; i++) {
			cmd0(admin, &extra[i], NVME_OPC_ASYNC_EVENT_REQUEST, 0, 0, 0, 0);
			CU_ASSERT(!extra[i].f.done);
		}
		cpl = cmd0(admin, &r, NVME_OPC_ASYNC_EVENT_REQUEST, 0, 0, 0, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED);

		/* I/O queues. */
		cpl = connect(io1, SUBNQN, HOSTNQN, 1, 127, cntlid);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		UT_ASSERT_EQ(ctrlr->num_io_qpairs, 1);
		cpl = connect(io2, SUBNQN, HOSTNQN, 1, 127, cntlid);
		UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(0, 42));
		cpl = connect(io2, SUBNQN, HOSTNQN, 128, 127, cntlid);
		UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(0, 42));
		cpl = connect(io2, SUBNQN, HOSTNQN, 2, 128, cntlid);
		UT_ASSERT_EQ(cpl.cdw0, NVME_CONNECT_INVALID_PARAM(0, 44));
		cpl = connect(io2, SUBNQN, HOSTNQN, 2, 127, cntlid);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		/* Properties belong to the admin queue; I/O to a missing namespace fails. */
		cpl = prop(io1, false, NVME_REG_CSTS, 0, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_OPCODE);
		cpl = cmd0(io1, &r, NVME_OPC_READ, 1, 0, 0, 512);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_NAMESPACE_OR_FORMAT);
		cpl = cmd0(io1, &r, NVME_OPC_FLUSH, 99, 0, 0, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_NAMESPACE_OR_FORMAT);
		/* Number of Queues cannot change once I/O queues exist. */
		cpl = cmd0(admin, &r, NVME_OPC_SET_FEATURES, 0, NVME_FEAT_NUMBER_OF_QUEUES, 0, 0);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_COMMAND_SEQUENCE_ERROR);

		/* Shutdown: the I/O queues are asked to go; SHST completes when they have. */
		cpl = prop(admin, true, NVME_REG_CC, 0,
			   NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16 | NVME_CC_SHN_NORMAL);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		CU_ASSERT(io1->disconnected && io2->disconnected);
		/*
		 * Held AERs stay with the admin queue: a host that dropped them
		 * before CC.SHN must not get completions for CIDs it reuses.
		 */
		for (i = 0; i < NVMF_MAX_AER; i++) {
			CU_ASSERT(!extra[i].f.done);
		}
		cpl = prop(admin, false, NVME_REG_CSTS, 0, 0);
		UT_ASSERT_EQ(cpl.cdw0 & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_COMPLETE);
		UT_ASSERT_EQ(ctrlr->num_io_qpairs, 0);
		UT_ASSERT_EQ(ctrlr->io_draining, 0);

		/* The admin queue going away hands them back and ends the controller. */
		fake_qpair_disconnect(&admin->qpair);
		poll_all();
		CU_ASSERT(admin->fini_done);
		for (i = 0; i < NVMF_MAX_AER; i++) {
			CU_ASSERT(extra[i].f.done);
			UT_ASSERT_EQ(SC(extra[i].f.req.rsp), NVME_SC_ABORTED_SQ_DELETION);
		}
	}
	CU_ASSERT(io1->fini_done && io2->fini_done);
	free(io1);
	free(io2);
	free(admin);
	CU_ASSERT(TAILQ_EMPTY(&g_subsys->ctrlrs));
}

static void
test_discovery_controller(void)
{
	struct fake_qpair *fq = new_qpair(&g_other_addr);
	struct nvmf_ctrlr *ctrlr;
	struct ut_req r, aer;
	struct nvme_cpl cpl;

	/* The discovery service answers on every listener. */
	cpl = connect(fq, NVME_DISCOVERY_NQN, HOSTNQN2, 0, 31, 0xffff);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));
	ctrlr = fq->qpair.ctrlr;
	prop(fq, true, NVME_REG_CC, 0, NVME_CC_EN);
	cpl = cmd0(fq, &r, NVME_OPC_IDENTIFY, 0, NVME_CNS_CTRLR, 0, 4096);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(r.buf[111], NVME_CNTRLTYPE_DISCOVERY);
	UT_ASSERT_STR_EQ((char *)r.buf + 768, NVME_DISCOVERY_NQN);
	cpl = cmd0(fq, &r, NVME_OPC_IDENTIFY, 1, NVME_CNS_NS, 0, 4096);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_FIELD);
	/* The log page, whole and from an offset. */
	cpl = cmd0(fq, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_DISCOVERY | (255u << 16), 0, 1024);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_EQ(((struct nvme_discovery_log_hdr *)r.buf)->numrec, 2);
	cpl = cmd0(fq, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_DISCOVERY | (1023u << 16), 0, 4096);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	UT_ASSERT_STR_EQ((char *)r.buf + 1024 + 256, SUBNQN2);
	UT_ASSERT_EQ(r.buf[3 * 1024], 0); /* past the log: zeros */
	{
		struct nvme_cmd cmd = { .opc = NVME_OPC_GET_LOG_PAGE,
					.cdw10 = NVME_LOG_DISCOVERY | (255u << 16),
					.cdw12 = 1024 };

		cpl = exec(fq, &r, &cmd, NULL, 1024);
		CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
		UT_ASSERT_STR_EQ((char *)r.buf + 256, SUBNQN2);
		cmd.cdw12 = 1 << 20;
		cpl = exec(fq, &r, &cmd, NULL, 1024);
		UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_FIELD);
	}
	cpl = cmd0(fq, &r, NVME_OPC_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, 512);
	UT_ASSERT_EQ(SC(cpl), NVME_SC_INVALID_LOG_PAGE);
	/* A change of the log raises a discovery AEN. */
	cmd0(fq, &aer, NVME_OPC_ASYNC_EVENT_REQUEST, 0, 0, 0, 0);
	CU_ASSERT(!aer.f.done);
	CU_ASSERT(nvmf_subsystem_add_host(g_subsys, HOSTNQN2, NULL, NULL, 0) == 0);
	poll_all();
	CU_ASSERT(aer.f.done);
	UT_ASSERT_EQ(aer.f.req.rsp.cdw0, NVME_AER_CDW0(NVME_AER_TYPE_NOTICE, 0xf0, 0x70));
	CU_ASSERT(nvmf_subsystem_remove_host(g_subsys, HOSTNQN2) == 0);
	(void)ctrlr;
	close_qpair(fq);
}

static void
test_host_removal_disconnects(void)
{
	struct fake_qpair *fq = new_qpair(&g_addr);
	struct nvme_cpl cpl;

	CU_ASSERT(nvmf_subsystem_add_host(g_subsys, HOSTNQN2, NULL, NULL, 0) == 0);
	cpl = connect(fq, SUBNQN, HOSTNQN2, 0, 31, 0xffff);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));
	CU_ASSERT(nvmf_subsystem_remove_host(g_subsys, HOSTNQN2) == 0);
	poll_all();
	CU_ASSERT(fq->disconnected);
	CU_ASSERT(fq->fini_done);
	CU_ASSERT(TAILQ_EMPTY(&g_subsys->ctrlrs));
	free(fq);
}

/* CSTS.SHST says complete only once the I/O queues' last requests are back. */
static void
test_shutdown_waits_for_drain(void)
{
	struct fake_qpair *admin = new_qpair(&g_addr), *io = new_qpair(&g_addr);
	struct nvme_cpl cpl;
	uint16_t cntlid;

	cpl = connect(admin, SUBNQN, HOSTNQN, 0, 31, 0xffff);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));
	cntlid = (uint16_t)cpl.cdw0;
	cpl = prop(admin, true, NVME_REG_CC, 0, NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	cpl = connect(io, SUBNQN, HOSTNQN, 1, 127, cntlid);
	CU_ASSERT_FATAL(NVME_STATUS_IS_SUCCESS(cpl.status));

	io->hold_release = true;
	cpl = prop(admin, true, NVME_REG_CC, 0,
		   NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16 | NVME_CC_SHN_NORMAL);
	CU_ASSERT(NVME_STATUS_IS_SUCCESS(cpl.status));
	poll_all();
	CU_ASSERT(io->disconnected && io->fini_done);
	cpl = prop(admin, false, NVME_REG_CSTS, 0, 0);
	UT_ASSERT_EQ(cpl.cdw0 & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_OCCURRING);

	/* The transport's last request came back. */
	nvmf_qpair_release(&io->qpair);
	poll_all();
	cpl = prop(admin, false, NVME_REG_CSTS, 0, 0);
	UT_ASSERT_EQ(cpl.cdw0 & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_COMPLETE);
	free(io);
	close_qpair(admin);
	CU_ASSERT(TAILQ_EMPTY(&g_subsys->ctrlrs));
}

/* max_connections_per_listener: admission, slots given back by detach and by hand. */
static void
test_conn_admission(void)
{
	struct nvmf_listen_addr a = g_other_addr, unknown = g_other_addr;
	uint32_t saved = g_fake_transport.opts.max_connections_per_listener;
	struct nvmf_tgt_listener *tl;
	struct fake_qpair *fq;
	uint16_t p1, p2;

	snprintf(a.trsvcid, sizeof(a.trsvcid), "4430");
	snprintf(unknown.trsvcid, sizeof(unknown.trsvcid), "4431");
	g_fake_transport.opts.max_connections_per_listener = 2;
	CU_ASSERT_FATAL(nvmf_tgt_listen(&a, &tl) == 0);
	p1 = nvmf_tgt_conn_admit(&a);
	p2 = nvmf_tgt_conn_admit(&a);
	CU_ASSERT(p1 == tl->portid && p2 == tl->portid);
	CU_ASSERT(nvmf_tgt_conn_admit(&a) == 0);
	CU_ASSERT(tl->conn_limit_warned);
	CU_ASSERT(nvmf_tgt_conn_admit(&unknown) == 0);

	/* A qpair that was admitted gives its slot back when it is detached. */
	fq = calloc(1, sizeof(*fq));
	CU_ASSERT_FATAL(fq != NULL);
	fq->qpair.admit_portid = p1;
	nvmf_qpair_init(&fq->qpair, &g_fake_transport, &g_nvmf_tgt.pgs[0], &a, "ut");
	fake_qpair_disconnect(&fq->qpair);
	poll_all();
	CU_ASSERT(fq->fini_done);
	CU_ASSERT(tl->num_conns == 1 && !tl->conn_limit_warned);
	free(fq);
	CU_ASSERT(nvmf_tgt_conn_admit(&a) == tl->portid);
	CU_ASSERT(nvmf_tgt_conn_admit(&a) == 0);

	/* By hand (a connection that never reached the core); 0 is no slot. */
	nvmf_tgt_conn_gone(p2);
	nvmf_tgt_conn_gone(0);
	CU_ASSERT(tl->num_conns == 1);
	/* Slots of a listener that is gone are forgotten. */
	nvmf_tgt_unlisten(tl);
	nvmf_tgt_conn_gone(p1);
	g_fake_transport.opts.max_connections_per_listener = saved;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_errno_to_status),
		UT_TEST(test_nqn_rules),
		UT_TEST(test_properties_and_cc),
		UT_TEST(test_rw_check),
		UT_TEST(test_identify_ns_layout),
		UT_TEST(test_identify_ns_thin),
		UT_TEST(test_discovery_log),
		UT_TEST(test_connect_validation),
		UT_TEST(test_controller_lifecycle),
		UT_TEST(test_discovery_controller),
		UT_TEST(test_host_removal_disconnects),
		UT_TEST(test_conn_admission),
		UT_TEST(test_shutdown_waits_for_drain),
	};

	return ut_run("nvmf", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
