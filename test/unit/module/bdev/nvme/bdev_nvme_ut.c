/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe bdev module (module/bdev/nvme): attach and the
 * bdevs it creates, I/O splitting by the controller's limits, NVMe status
 * propagation, fail-fast while disconnected, save_config, get_controllers,
 * detach, and the unwinding of a failed attach. The host library is stubbed:
 * the test plays the controller and completes commands by hand.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../bdev_ut_common.h"

#include "module/bdev/malloc/bdev_malloc.h"
#include "module/bdev/nvme/bdev_nvme.c"
#include "module/bdev/nvme/bdev_nvme_paths.c"
#include "module/bdev/nvme/bdev_nvme_rpc.c"

/* ---- the host library, stubbed ---- */

struct nvme_ns {
	struct nvme_ctrlr *ctrlr;
	struct nvme_ns_info info;
};

struct nvme_ctrlr {
	struct nvme_transport_id trid;
	struct nvme_ctrlr_opts opts;
	struct nvme_ns ns[2];
	uint32_t num_ns;
	uint32_t max_xfer;
	int qpairs;
	int detaches;
	nvme_ctrlr_detach_cb detach_cb;
	void *detach_cb_arg;
	nvme_ctrlr_reconnect_cb reconnect_cb;
	void *reconnect_cb_arg;
	int resets;
	/* A first connect is in flight (its callback not called yet). */
	bool connecting;
	/* Connects given up by a detach while in flight. */
	int abandoned;
};

struct nvme_qpair {
	struct nvme_ctrlr *ctrlr;
};

enum sub_op { SUB_READ, SUB_WRITE, SUB_WZ, SUB_FLUSH, SUB_DEALLOC, SUB_RESV };

struct sub {
	enum sub_op op;
	struct nvme_ns *ns;
	uint64_t lba;
	uint32_t nlb;
	size_t iov_offset;
	nvme_cmd_cb cb;
	void *cb_arg;
};

static struct nvme_ctrlr g_ctrlr;
static nvme_ctrlr_connect_cb g_connect_cb;
static void *g_connect_arg;
static int g_connect_calls;
static struct sub g_subs[64];
static int g_nsubs;
static int g_submit_rc;

int
nvme_ctrlr_connect_start(const struct nvme_transport_id *trid, const struct nvme_ctrlr_opts *opts,
			 nvme_ctrlr_connect_cb cb, void *cb_arg, struct nvme_ctrlr **ctrlrp)
{
	/* One attempt at a time: a second one would mean an attempt was leaked. */
	CU_ASSERT(!g_ctrlr.connecting);
	g_ctrlr.trid = *trid;
	g_ctrlr.opts = *opts;
	g_ctrlr.connecting = true;
	g_connect_cb = cb;
	g_connect_arg = cb_arg;
	g_connect_calls++;
	if (ctrlrp != NULL) {
		*ctrlrp = &g_ctrlr;
	}
	return 0;
}

/* The stubbed connect finishes: connected (rc 0) or failed with rc. */
static void
connect_finish(int rc)
{
	CU_ASSERT_FATAL(g_ctrlr.connecting);
	g_ctrlr.connecting = false;
	if (rc == 0) {
		g_connect_cb(g_connect_arg, &g_ctrlr, 0, NULL);
	} else {
		g_connect_cb(g_connect_arg, NULL, rc, "cannot connect to 127.0.0.1:4420");
	}
}

static void
detach_msg(void *ctx)
{
	struct nvme_ctrlr *ctrlr = ctx;

	ctrlr->detach_cb(ctrlr->detach_cb_arg);
}

int
nvme_ctrlr_detach(struct nvme_ctrlr *ctrlr, nvme_ctrlr_detach_cb cb, void *cb_arg)
{
	if (ctrlr->qpairs != 0) {
		return -EBUSY;
	}
	if (ctrlr->connecting) {
		/* Given up: the library never calls its connect callback. */
		ctrlr->connecting = false;
		ctrlr->abandoned++;
	}
	ctrlr->detaches++;
	ctrlr->detach_cb = cb;
	ctrlr->detach_cb_arg = cb_arg;
	thread_send_msg(thread_get_current(), detach_msg, ctrlr);
	return 0;
}

void
nvme_ctrlr_opts_init(struct nvme_ctrlr_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->keep_alive_timeout_ms = 10000;
	/* Short, so that the retries of a first connect run within the test (real timers). */
	opts->reconnect_delay_min_ms = 1;
	opts->reconnect_delay_max_ms = 4;
}

enum nvme_ctrlr_state
nvme_ctrlr_get_state(const struct nvme_ctrlr *ctrlr)
{
	return NVME_CTRLR_CONNECTED;
}

const char *
nvme_ctrlr_state_name(enum nvme_ctrlr_state state)
{
	return "connected";
}

const struct nvme_ctrlr_opts *
nvme_ctrlr_get_opts(const struct nvme_ctrlr *ctrlr)
{
	return &ctrlr->opts;
}

uint16_t
nvme_ctrlr_get_cntlid(const struct nvme_ctrlr *ctrlr)
{
	return 7;
}

uint64_t
nvme_ctrlr_get_reconnect_count(const struct nvme_ctrlr *ctrlr)
{
	return 0;
}

void
nvme_ctrlr_request_reset(struct nvme_ctrlr *ctrlr, const char *reason)
{
	CU_ASSERT(reason != NULL);
	ctrlr->resets++;
}

void
nvme_ctrlr_set_reconnect_cb(struct nvme_ctrlr *ctrlr, nvme_ctrlr_reconnect_cb cb, void *cb_arg)
{
	ctrlr->reconnect_cb = cb;
	ctrlr->reconnect_cb_arg = cb_arg;
}

uint32_t
nvme_ctrlr_get_max_xfer_size(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->max_xfer;
}

uint32_t
nvme_ctrlr_get_num_ns(const struct nvme_ctrlr *ctrlr)
{
	return ctrlr->num_ns;
}

struct nvme_ns *
nvme_ctrlr_get_ns_by_index(struct nvme_ctrlr *ctrlr, uint32_t index)
{
	return index < ctrlr->num_ns ? &ctrlr->ns[index] : NULL;
}

const struct nvme_ns_info *
nvme_ns_get_info(const struct nvme_ns *ns)
{
	return &ns->info;
}

struct nvme_ns *
nvme_ctrlr_get_ns(struct nvme_ctrlr *ctrlr, uint32_t nsid)
{
	uint32_t i;

	for (i = 0; i < ctrlr->num_ns; i++) {
		if (ctrlr->ns[i].info.nsid == nsid) {
			return &ctrlr->ns[i];
		}
	}
	return NULL;
}

/* The stubbed controller does not report ANA: the log page is never read. */
const struct nvme_identify_ctrlr *
nvme_ctrlr_get_data(const struct nvme_ctrlr *ctrlr)
{
	static const struct nvme_identify_ctrlr id;

	return &id;
}

int
nvme_ctrlr_get_log_page(struct nvme_ctrlr *ctrlr, uint8_t lid, uint32_t nsid, void *buf,
			uint32_t len, nvme_cmd_cb cb, void *cb_arg)
{
	CU_FAIL("no ANA log page without ANA reporting");
	return -ENXIO;
}

struct nvme_qpair *
nvme_ctrlr_alloc_io_qpair(struct nvme_ctrlr *ctrlr)
{
	struct nvme_qpair *qp = calloc(1, sizeof(*qp));

	qp->ctrlr = ctrlr;
	ctrlr->qpairs++;
	return qp;
}

void
nvme_ctrlr_free_io_qpair(struct nvme_qpair *qp)
{
	qp->ctrlr->qpairs--;
	free(qp);
}

static int
record(enum sub_op op, struct nvme_ns *ns, uint64_t lba, uint32_t nlb, size_t off, nvme_cmd_cb cb,
       void *cb_arg)
{
	struct sub *s;

	if (g_submit_rc != 0) {
		return g_submit_rc;
	}
	CU_ASSERT_FATAL(g_nsubs < (int)ARRAY_SIZE(g_subs));
	s = &g_subs[g_nsubs++];
	*s = (struct sub){ op, ns, lba, nlb, off, cb, cb_arg };
	return 0;
}

int
nvme_ns_cmd_readv(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		  struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb, void *cb_arg)
{
	return record(SUB_READ, ns, lba, nlb, iov_offset, cb, cb_arg);
}

int
nvme_ns_cmd_writev(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		   struct iovec *iov, int iovcnt, size_t iov_offset, nvme_cmd_cb cb, void *cb_arg)
{
	return record(SUB_WRITE, ns, lba, nlb, iov_offset, cb, cb_arg);
}

int
nvme_ns_cmd_write_zeroes(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
			 nvme_cmd_cb cb, void *cb_arg)
{
	return record(SUB_WZ, ns, lba, nlb, 0, cb, cb_arg);
}

int
nvme_ns_cmd_flush(struct nvme_qpair *qp, struct nvme_ns *ns, nvme_cmd_cb cb, void *cb_arg)
{
	return record(SUB_FLUSH, ns, 0, 0, 0, cb, cb_arg);
}

int
nvme_ns_cmd_deallocate(struct nvme_qpair *qp, struct nvme_ns *ns, uint64_t lba, uint32_t nlb,
		       nvme_cmd_cb cb, void *cb_arg)
{
	return record(SUB_DEALLOC, ns, lba, nlb, 0, cb, cb_arg);
}

/* Reservations: the stub records the action in lba, the type in nlb, the last key in iov_offset. */
static uint32_t g_resv_opc;

int
nvme_ns_cmd_resv_register(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t rrega, bool iekey,
			  uint32_t cptpl, uint64_t crkey, uint64_t nrkey, nvme_cmd_cb cb,
			  void *cb_arg)
{
	g_resv_opc = NVME_OPC_RESERVATION_REGISTER;
	return record(SUB_RESV, ns, rrega, 0, nrkey, cb, cb_arg);
}

int
nvme_ns_cmd_resv_acquire(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t racqa, uint32_t rtype,
			 uint64_t crkey, uint64_t prkey, nvme_cmd_cb cb, void *cb_arg)
{
	g_resv_opc = NVME_OPC_RESERVATION_ACQUIRE;
	return record(SUB_RESV, ns, racqa, rtype, prkey, cb, cb_arg);
}

int
nvme_ns_cmd_resv_release(struct nvme_qpair *qp, struct nvme_ns *ns, uint32_t rrela, uint32_t rtype,
			 uint64_t crkey, nvme_cmd_cb cb, void *cb_arg)
{
	g_resv_opc = NVME_OPC_RESERVATION_RELEASE;
	return record(SUB_RESV, ns, rrela, rtype, crkey, cb, cb_arg);
}

int
nvme_ns_cmd_resv_report(struct nvme_qpair *qp, struct nvme_ns *ns, void *buf, uint32_t len,
			nvme_cmd_cb cb, void *cb_arg)
{
	g_resv_opc = NVME_OPC_RESERVATION_REPORT;
	return record(SUB_RESV, ns, 0, len, 0, cb, cb_arg);
}

int
nvme_transport_type_parse(const char *str, enum nvme_transport_type *type)
{
	if (strcasecmp(str, "tcp") == 0) {
		*type = NVME_TRANSPORT_TCP;
		return 0;
	}
	if (strcasecmp(str, "rdma") == 0) {
		*type = NVME_TRANSPORT_RDMA;
		return 0;
	}
	return -EINVAL;
}

const char *
nvme_transport_type_name(enum nvme_transport_type type)
{
	return type == NVME_TRANSPORT_TCP ? "TCP" : "RDMA";
}

int
nvme_adrfam_parse(const char *str, enum nvme_adrfam *adrfam)
{
	*adrfam = NVME_ADRFAM_IPV4;
	return strcasecmp(str, "ipv4") == 0 ? 0 : -EINVAL;
}

const char *
nvme_adrfam_name(enum nvme_adrfam adrfam)
{
	return "IPv4";
}

/* ---- helpers ---- */

static void
modules(void)
{
	bdev_malloc_module_register();
	bdev_nvme_module_register();
}

static int
suite_init(void)
{
	return ut_setup(modules);
}

static int
suite_fini(void)
{
	return ut_teardown();
}

/* Complete submission i (on the worker thread, where the I/O was submitted). */
static void
complete_sub(int i, uint16_t status)
{
	struct nvme_cpl cpl = { .status = status };

	thread_set_current(g_ut_worker);
	g_subs[i].cb(g_subs[i].cb_arg, &cpl);
	thread_set_current(g_ut_app);
	ut_poll_idle();
}

struct attach_rec {
	bool done;
	int rc;
	char err[256];
	char names[4][32];
	size_t count;
};

static void
attach_cb(void *cb_arg, int rc, const char *errmsg, const char *const *names, size_t count)
{
	struct attach_rec *r = cb_arg;
	size_t i;

	r->done = true;
	r->rc = rc;
	snprintf(r->err, sizeof(r->err), "%s", errmsg != NULL ? errmsg : "");
	r->count = count;
	for (i = 0; i < count && i < 4; i++) {
		snprintf(r->names[i], sizeof(r->names[i]), "%s", names[i]);
	}
}

static void
fake_ctrlr_init(void)
{
	memset(&g_ctrlr, 0, sizeof(g_ctrlr));
	g_ctrlr.num_ns = 2;
	g_ctrlr.max_xfer = 128 * 520;
	g_ctrlr.ns[0] = (struct nvme_ns){ &g_ctrlr,
					  { .nsid = 1,
					    .num_blocks = 8192,
					    .block_size = 512,
					    .xfer_block_size = 512,
					    .dsm_supported = true,
					    .write_zeroes_supported = true } };
	g_ctrlr.ns[0].info.nguid[0] = 0x11;
	g_ctrlr.ns[1] = (struct nvme_ns){ &g_ctrlr,
					  { .nsid = 2,
					    .num_blocks = 4096,
					    .block_size = 512,
					    .md_size = 8,
					    .extended_lba = true,
					    .reservations_supported = true,
					    .xfer_block_size = 520 } };
	g_nsubs = 0;
	g_submit_rc = 0;
}

/* Attach "name" (retrying a first connect or not) and let the stubbed connect finish with rc. */
static void
attach_opt(const char *name, bool retry, int connect_rc, struct attach_rec *r)
{
	struct bdev_nvme_attach_opts opts = { .name = name, .hdgst = true };

	memset(r, 0, sizeof(*r));
	opts.trid.trtype = NVME_TRANSPORT_TCP;
	opts.trid.adrfam = NVME_ADRFAM_IPV4;
	snprintf(opts.trid.traddr, sizeof(opts.trid.traddr), "127.0.0.1");
	snprintf(opts.trid.trsvcid, sizeof(opts.trid.trsvcid), "4420");
	snprintf(opts.trid.subnqn, sizeof(opts.trid.subnqn), "nqn.2016-06.io.gga:t");
	opts.retry_first_connect = retry;
	UT_ASSERT_EQ_FATAL(bdev_nvme_attach_controller(&opts, attach_cb, r), 0);
	CU_ASSERT(!r->done);
	connect_finish(connect_rc);
	ut_poll_idle();
	CU_ASSERT(r->done);
}

static void
attach(const char *name, int connect_rc, struct attach_rec *r)
{
	attach_opt(name, false, connect_rc, r);
}

/* The one controller of get_controllers for name (a borrowed object of *all). */
static json_t *
ctrlr_json(const char *name, json_t **all)
{
	*all = bdev_nvme_get_controllers_json(name);
	CU_ASSERT_FATAL(*all != NULL && json_array_size(*all) == 1);
	return json_array_get(*all, 0);
}

static void
detach_cb(void *cb_arg, int rc)
{
	*(int *)cb_arg = rc + 1;
}

static void
detach(const char *name)
{
	int done = 0;

	UT_ASSERT_EQ_FATAL(bdev_nvme_detach_controller(name, detach_cb, &done), 0);
	UT_POLL_UNTIL(done != 0);
	UT_ASSERT_EQ(done, 1);
}

/* Counts BDEV_EVENT_MEDIA_CHANGED in *(int *)ctx. */
static void
media_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	if (type == BDEV_EVENT_MEDIA_CHANGED) {
		(*(int *)ctx)++;
	} else if (type == BDEV_EVENT_OFFLINE) {
		(*(int *)ctx) += 100;
	}
}

/* ---- tests ---- */

static void
test_attach_bdevs(void)
{
	struct attach_rec r;
	struct bdev *b1, *b2;

	fake_ctrlr_init();
	attach("N0", 0, &r);
	UT_ASSERT_EQ(r.rc, 0);
	UT_ASSERT_EQ(r.count, 2);
	UT_ASSERT_STR_EQ(r.names[0], "N0n1");
	UT_ASSERT_STR_EQ(r.names[1], "N0n2");
	/* The options reached the library. */
	CU_ASSERT(g_ctrlr.opts.header_digest);
	CU_ASSERT(!g_ctrlr.opts.data_digest);
	CU_ASSERT(!g_ctrlr.opts.quiet_connect_failure);
	UT_ASSERT_STR_EQ(g_ctrlr.trid.traddr, "127.0.0.1");

	b1 = bdev_get_by_name("N0n1");
	b2 = bdev_get_by_name("N0n2");
	CU_ASSERT_FATAL(b1 != NULL && b2 != NULL);
	UT_ASSERT_EQ(bdev_get_block_size(b1), 512);
	UT_ASSERT_EQ(bdev_get_md_size(b1), 0);
	UT_ASSERT_EQ(bdev_get_num_blocks(b1), 8192);
	UT_ASSERT_EQ(bdev_get_block_size(b2), 512);
	UT_ASSERT_EQ(bdev_get_md_size(b2), 8);
	UT_ASSERT_EQ(bdev_get_buf_block_size(b2), 520);
	UT_ASSERT_STR_EQ(bdev_get_module_name(b1), "nvme");
	/* The NGUID is the UUID. */
	UT_ASSERT_EQ(strncmp(bdev_get_uuid_str(b1), "11000000-", 9), 0);
	CU_ASSERT(bdev_io_type_supported(b1, BDEV_IO_TYPE_UNMAP));
	CU_ASSERT(!bdev_io_type_supported(b2, BDEV_IO_TYPE_UNMAP));
	CU_ASSERT(!bdev_io_type_supported(b2, BDEV_IO_TYPE_WRITE_ZEROES));

	/* A reconnect tells every open descriptor of every namespace that the media may differ. */
	{
		struct bdev_desc *d1, *d2;
		int events[2] = { 0, 0 };

		UT_ASSERT_EQ_FATAL(bdev_open("N0n1", false, media_event, &events[0], &d1), 0);
		UT_ASSERT_EQ_FATAL(bdev_open("N0n2", false, media_event, &events[1], &d2), 0);
		CU_ASSERT_FATAL(g_ctrlr.reconnect_cb != NULL);
		g_ctrlr.reconnect_cb(g_ctrlr.reconnect_cb_arg, &g_ctrlr, true);
		ut_poll_idle();
		UT_ASSERT_EQ(events[0], 1);
		UT_ASSERT_EQ(events[1], 1);
		/* Lost: each user hears BDEV_EVENT_OFFLINE (counted apart, from 100). */
		g_ctrlr.reconnect_cb(g_ctrlr.reconnect_cb_arg, &g_ctrlr, false);
		ut_poll_idle();
		UT_ASSERT_EQ(events[0], 101);
		UT_ASSERT_EQ(events[1], 101);
		bdev_close(d1);
		bdev_close(d2);
	}

	/* The name is taken while attached: without multipath, or for another subsystem. */
	{
		struct bdev_nvme_attach_opts opts = { .name = "N0",
						      .multipath = BDEV_NVME_MP_DISABLE };

		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EEXIST);
		opts.multipath = BDEV_NVME_MP_MULTIPATH;
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EXDEV);
		/* The same subsystem at the same address: that path it has. */
		opts.trid = g_ctrlr.trid;
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EALREADY);
		/* Another address, but other digests or host NQN than the first path's (hdgst on). */
		snprintf(opts.trid.trsvcid, sizeof(opts.trid.trsvcid), "4421");
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EPERM);
		opts.hdgst = true;
		opts.hostnqn = "nqn.2014-08.io.gga:another";
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EPERM);
		opts.hostnqn = NULL;
		opts.retry_first_connect = true;
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -ENOTSUP);
	}
	detach("N0");
	CU_ASSERT(bdev_get_by_name("N0n1") == NULL);
	CU_ASSERT(bdev_get_by_name("N0n2") == NULL);
	UT_ASSERT_EQ(g_ctrlr.detaches, 1);
	UT_ASSERT_EQ(bdev_nvme_detach_controller("N0", NULL, NULL), -ENODEV);
}

/* Submit a reservation on the device's thread and let it reach the stub. */
static int
resv_submit(struct ut_dev *dev, const struct bdev_nvme_resv_cmd *c, struct ut_io *io)
{
	int rc;

	memset(io, 0, sizeof(*io));
	thread_set_current(dev->thread);
	rc = bdev_nvme_reservation(dev->desc, dev->ch, c, ut_io_done, io);
	thread_set_current(g_ut_app);
	ut_poll_idle();
	return rc;
}

static void
test_io_split_and_status(void)
{
	static uint8_t buf[300 * 520];
	struct attach_rec r;
	struct ut_dev dev;
	struct ut_io io;

	fake_ctrlr_init();
	attach("N0", 0, &r);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "N0n2", g_ut_worker), 0);
	/* The channel holds one queue pair for this thread. */
	UT_ASSERT_EQ(g_ctrlr.qpairs, 1);

	/* 300 blocks, at most 128 per command (MDTS): 128 + 128 + 44, one after the other. */
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_WRITE, buf, 10, 300, &io), 0);
	ut_poll_idle();
	UT_ASSERT_EQ_FATAL(g_nsubs, 1);
	UT_ASSERT_EQ(g_subs[0].op, SUB_WRITE);
	UT_ASSERT_EQ(g_subs[0].lba, 10);
	UT_ASSERT_EQ(g_subs[0].nlb, 128);
	UT_ASSERT_EQ(g_subs[0].iov_offset, 0);
	complete_sub(0, 0);
	UT_ASSERT_EQ_FATAL(g_nsubs, 2);
	UT_ASSERT_EQ(g_subs[1].lba, 138);
	UT_ASSERT_EQ(g_subs[1].nlb, 128);
	/* Offsets count data and metadata of every block. */
	UT_ASSERT_EQ(g_subs[1].iov_offset, 128 * 520);
	complete_sub(1, 0);
	UT_ASSERT_EQ_FATAL(g_nsubs, 3);
	UT_ASSERT_EQ(g_subs[2].lba, 266);
	UT_ASSERT_EQ(g_subs[2].nlb, 44);
	UT_ASSERT_EQ(g_subs[2].iov_offset, 256 * 520);
	CU_ASSERT(!io.done);
	complete_sub(2, 0);
	CU_ASSERT(io.done && io.success);

	/* An NVMe error from the target reaches the bdev user as that status. */
	g_nsubs = 0;
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_READ, buf, 0, 8, &io), 0);
	ut_poll_idle();
	UT_ASSERT_EQ_FATAL(g_nsubs, 1);
	UT_ASSERT_EQ(g_subs[0].op, SUB_READ);
	complete_sub(0, NVME_STATUS(NVME_SCT_MEDIA_ERROR, NVME_SC_UNRECOVERED_READ_ERROR));
	CU_ASSERT(io.done && !io.success);
	UT_ASSERT_EQ(io.sct, NVME_SCT_MEDIA_ERROR);
	UT_ASSERT_EQ(io.sc, NVME_SC_UNRECOVERED_READ_ERROR);

	/* A failure in the middle of a split I/O fails it. */
	g_nsubs = 0;
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_READ, buf, 0, 200, &io), 0);
	ut_poll_idle();
	complete_sub(0, NVME_STATUS(NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR));
	UT_ASSERT_EQ(g_nsubs, 1);
	CU_ASSERT(io.done && !io.success);
	UT_ASSERT_EQ(io.sct, NVME_SCT_PATH);

	/* Disconnected: the library refuses at once, the I/O fails with a path error. */
	g_nsubs = 0;
	g_submit_rc = -ENXIO;
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, 1, &io), 0);
	CU_ASSERT(io.done && !io.success);
	UT_ASSERT_EQ(io.sct, NVME_SCT_PATH);
	UT_ASSERT_EQ(io.sc, NVME_SC_HOST_PATH_ERROR);
	g_submit_rc = 0;

	/* Flush is one command for the namespace. */
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_FLUSH, NULL, 0, 4096, &io), 0);
	ut_poll_idle();
	UT_ASSERT_EQ_FATAL(g_nsubs, 1);
	UT_ASSERT_EQ(g_subs[0].op, SUB_FLUSH);
	complete_sub(0, 0);
	CU_ASSERT(io.done && io.success);

	/* A reservation is one command on the namespace; its Reservation Conflict comes back as is. */
	g_nsubs = 0;
	{
		struct bdev_nvme_resv_cmd c = { .op = BDEV_NVME_RESV_ACQUIRE,
						.action = 2,
						.rtype = 2,
						.crkey = 7,
						.nrkey = 9 };
		uint8_t rep[64];

		UT_ASSERT_EQ(resv_submit(&dev, &c, &io), 0);
		UT_ASSERT_EQ_FATAL(g_nsubs, 1);
		UT_ASSERT_EQ(g_subs[0].op, SUB_RESV);
		UT_ASSERT_EQ(g_resv_opc, NVME_OPC_RESERVATION_ACQUIRE);
		UT_ASSERT_EQ(g_subs[0].lba, 2);
		UT_ASSERT_EQ(g_subs[0].nlb, 2);
		UT_ASSERT_EQ(g_subs[0].iov_offset, 9);
		complete_sub(0, NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_RESERVATION_CONFLICT));
		CU_ASSERT(io.done && !io.success);
		UT_ASSERT_EQ(io.sc, NVME_SC_RESERVATION_CONFLICT);

		g_nsubs = 0;
		memset(&c, 0, sizeof(c));
		c.op = BDEV_NVME_RESV_REPORT;
		c.buf = rep;
		c.len = sizeof(rep);
		UT_ASSERT_EQ(resv_submit(&dev, &c, &io), 0);
		UT_ASSERT_EQ_FATAL(g_nsubs, 1);
		UT_ASSERT_EQ(g_resv_opc, NVME_OPC_RESERVATION_REPORT);
		UT_ASSERT_EQ(g_subs[0].nlb, 64);
		complete_sub(0, 0);
		CU_ASSERT(io.done && io.success);
	}

	/* A reset of the bdev resets the controller (its I/O fails at once), submitting nothing. */
	g_nsubs = 0;
	g_ctrlr.resets = 0;
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &io), 0);
	CU_ASSERT(io.done && io.success);
	UT_ASSERT_EQ(g_ctrlr.resets, 1);
	UT_ASSERT_EQ(g_nsubs, 0);

	ut_dev_close(&dev);
	UT_ASSERT_EQ(g_ctrlr.qpairs, 0);
	detach("N0");
}

static void
test_write_zeroes_unmap_split(void)
{
	struct attach_rec r;
	struct ut_dev dev;
	struct ut_io io;

	fake_ctrlr_init();
	attach("N0", 0, &r);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "N0n1", g_ut_worker), 0);
	/* Write Zeroes: at most 65536 blocks per command, whatever MDTS says. */
	g_ctrlr.ns[0].info.num_blocks = 8192;
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 0, 8192, &io), 0);
	ut_poll_idle();
	UT_ASSERT_EQ_FATAL(g_nsubs, 1);
	UT_ASSERT_EQ(g_subs[0].op, SUB_WZ);
	UT_ASSERT_EQ(g_subs[0].nlb, 8192);
	complete_sub(0, 0);
	CU_ASSERT(io.done && io.success);

	g_nsubs = 0;
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_UNMAP, NULL, 100, 1000, &io), 0);
	ut_poll_idle();
	UT_ASSERT_EQ_FATAL(g_nsubs, 1);
	UT_ASSERT_EQ(g_subs[0].op, SUB_DEALLOC);
	UT_ASSERT_EQ(g_subs[0].lba, 100);
	UT_ASSERT_EQ(g_subs[0].nlb, 1000);
	complete_sub(0, 0);
	CU_ASSERT(io.done && io.success);
	ut_dev_close(&dev);
	detach("N0");
}

static void
test_config_and_rpc_json(void)
{
	struct attach_rec r;
	json_t *config, *call, *params, *ctrlrs;
	size_t i, attaches = 0;

	fake_ctrlr_init();
	attach("N0", 0, &r);
	config = json_array();
	bdev_subsystem_config_json(config);
	/* One attach for the controller, nothing per namespace bdev. */
	json_array_foreach(config, i, call)
	{
		const char *method = json_string_value(json_object_get(call, "method"));

		if (strcmp(method, "bdev_nvme_attach_controller") == 0) {
			attaches++;
			params = json_object_get(call, "params");
			UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "name")), "N0");
#define PARAM_STR(k) json_string_value(json_object_get(params, k))
			UT_ASSERT_STR_EQ(PARAM_STR("trtype"), "tcp");
			UT_ASSERT_STR_EQ(PARAM_STR("trsvcid"), "4420");
#undef PARAM_STR
			UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "subnqn")),
					 "nqn.2016-06.io.gga:t");
			CU_ASSERT(json_is_true(json_object_get(params, "hdgst")));
			CU_ASSERT(json_is_false(json_object_get(params, "ddgst")));
		}
	}
	UT_ASSERT_EQ(attaches, 1);
	json_decref(config);

	ctrlrs = bdev_nvme_get_controllers_json(NULL);
	CU_ASSERT_FATAL(json_array_size(ctrlrs) == 1);
	call = json_array_get(ctrlrs, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(call, "state")), "connected");
	UT_ASSERT_EQ(json_integer_value(json_object_get(call, "cntlid")), 7);
	UT_ASSERT_EQ(json_array_size(json_object_get(call, "namespaces")), 2);
	UT_ASSERT_STR_EQ(json_string_value(
				 json_object_get(json_array_get(json_object_get(call, "namespaces"),
								1),
						 "bdev_name")),
			 "N0n2");
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_array_get(json_object_get(call, "namespaces"), 1),
					     "md_size")),
		     8);
	json_decref(ctrlrs);
	CU_ASSERT(bdev_nvme_get_controllers_json("nope") == NULL);
	detach("N0");
}

static void
test_attach_failures(void)
{
	struct bdev_malloc_opts mopts = { .name = "C0n2", .num_blocks = 16, .block_size = 512 };
	struct attach_rec r;
	struct bdev *mb;

	/* Connect failure: the message comes back, nothing stays, the name is free again. */
	fake_ctrlr_init();
	attach("C0", -ECONNREFUSED, &r);
	UT_ASSERT_EQ(r.rc, -ECONNREFUSED);
	CU_ASSERT(strstr(r.err, "127.0.0.1:4420") != NULL);
	CU_ASSERT(bdev_nvme_get_controllers_json("C0") == NULL);

	/* The second namespace's bdev name is taken: the first bdev is removed again. */
	UT_ASSERT_EQ_FATAL(bdev_malloc_create(&mopts, &mb), 0);
	fake_ctrlr_init();
	attach("C0", 0, &r);
	UT_POLL_UNTIL(r.done);
	UT_ASSERT_EQ(r.rc, -EEXIST);
	CU_ASSERT(strstr(r.err, "C0n2") != NULL);
	CU_ASSERT(bdev_get_by_name("C0n1") == NULL);
	CU_ASSERT(bdev_nvme_get_controllers_json("C0") == NULL);
	UT_ASSERT_EQ(g_ctrlr.detaches, 1);
	UT_ASSERT_EQ(g_ctrlr.qpairs, 0);

	UT_ASSERT_EQ(bdev_malloc_delete("C0n2", NULL, NULL), 0);
	ut_poll_idle();
}

struct rpc_rec {
	bool done;
	json_t *resp;
};

static void
rpc_cb(void *ctx, json_t *response)
{
	struct rpc_rec *r = ctx;

	r->done = true;
	r->resp = response;
}

static json_t *
call_rpc(const char *method, const char *params_text)
{
	struct rpc_rec r = { 0 };
	json_t *params = json_loads(params_text, 0, NULL);

	CU_ASSERT_FATAL(params != NULL);
	UT_ASSERT_EQ_FATAL(rpc_call(method, params, rpc_cb, &r), 0);
	json_decref(params);
	UT_POLL_UNTIL(r.done);
	return r.resp;
}

static void
test_rpc_errors(void)
{
	json_t *resp;
	const char *msg;

#ifdef GGA_CONFIG_RDMA
	/* Built with RDMA: the host is asked for an RDMA controller; a refused connect is an error. */
	{
		struct rpc_rec r = { 0 };
		json_t *params = json_loads("{\"name\":\"R0\",\"trtype\":\"RDMA\","
					    "\"traddr\":\"127.0.0.1\",\"trsvcid\":\"4420\","
					    "\"subnqn\":\"nqn.x\"}",
					    0, NULL);

		UT_ASSERT_EQ_FATAL(rpc_call("bdev_nvme_attach_controller", params, rpc_cb, &r), 0);
		json_decref(params);
		ut_poll_idle();
		CU_ASSERT_FATAL(!r.done);
		UT_ASSERT_EQ(g_ctrlr.trid.trtype, NVME_TRANSPORT_RDMA);
		connect_finish(-ECONNREFUSED);
		UT_POLL_UNTIL(r.done);
		CU_ASSERT(json_object_get(r.resp, "error") != NULL);
		json_decref(r.resp);
		CU_ASSERT(bdev_get_by_name("R0n1") == NULL);
	}
#else
	/* Built without RDMA: refused with a message that says so. */
	resp = call_rpc("bdev_nvme_attach_controller",
			"{\"name\":\"R0\",\"trtype\":\"RDMA\",\"traddr\":\"127.0.0.1\","
			"\"trsvcid\":\"4420\",\"subnqn\":\"nqn.x\"}");
	msg = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
	CU_ASSERT(msg != NULL && strstr(msg, "RDMA") != NULL);
	json_decref(resp);
#endif

	resp = call_rpc("bdev_nvme_attach_controller",
			"{\"name\":\"R0\",\"trtype\":\"fc\",\"traddr\":\"127.0.0.1\","
			"\"trsvcid\":\"4420\",\"subnqn\":\"nqn.x\"}");
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);

	resp = call_rpc("bdev_nvme_attach_controller",
			"{\"name\":\"R0\",\"trtype\":\"tcp\",\"traddr\":\"127.0.0.1\","
			"\"trsvcid\":\"4420\"}");
	msg = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
	CU_ASSERT(msg != NULL && strstr(msg, "subnqn") != NULL);
	json_decref(resp);

	resp = call_rpc("bdev_nvme_detach_controller", "{\"name\":\"nope\"}");
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")),
		     -ENODEV);
	json_decref(resp);

	resp = call_rpc("bdev_nvme_get_controllers", "{}");
	CU_ASSERT(json_is_array(json_object_get(resp, "result")));
	json_decref(resp);

	/* A successful attach through the RPC answers with the bdev names once connected. */
	fake_ctrlr_init();
	{
		struct rpc_rec r = { 0 };
		json_t *params = json_loads("{\"name\":\"R1\",\"trtype\":\"Tcp\","
					    "\"traddr\":\"127.0.0.1\",\"trsvcid\":\"4420\","
					    "\"subnqn\":\"nqn.x\",\"ddgst\":true}",
					    0, NULL);

		UT_ASSERT_EQ_FATAL(rpc_call("bdev_nvme_attach_controller", params, rpc_cb, &r), 0);
		json_decref(params);
		ut_poll_idle();
		CU_ASSERT(!r.done);
		CU_ASSERT(g_ctrlr.opts.data_digest);
		connect_finish(0);
		UT_POLL_UNTIL(r.done);
		UT_ASSERT_EQ(json_array_size(json_object_get(r.resp, "result")), 2);
		UT_ASSERT_STR_EQ(json_string_value(
					 json_array_get(json_object_get(r.resp, "result"), 0)),
				 "R1n1");
		json_decref(r.resp);
	}
	resp = call_rpc("bdev_nvme_detach_controller", "{\"name\":\"R1\"}");
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	CU_ASSERT(bdev_get_by_name("R1n1") == NULL);
}

/* Wait for the retry timer to start the next attempt (real time: 1..4 ms). */
static void
wait_attempt(int calls)
{
	UT_POLL_UNTIL(g_connect_calls >= calls);
	UT_ASSERT_EQ_FATAL(g_connect_calls, calls);
	CU_ASSERT_FATAL(g_ctrlr.connecting);
}

static void
test_retry_then_connect(void)
{
	struct attach_rec r;
	struct nvme_bdev_ctrlr *nctrlr;
	json_t *all, *c;

	fake_ctrlr_init();
	g_connect_calls = 0;
	/* Refused: the call succeeds at once, with no bdev; the controller stays, attaching. */
	attach_opt("T0", true, -ECONNREFUSED, &r);
	/* The module logs the failures (first, then every 50th), not the library. */
	CU_ASSERT(g_ctrlr.opts.quiet_connect_failure);
	UT_ASSERT_EQ(r.rc, 0);
	UT_ASSERT_EQ(r.count, 0);
	CU_ASSERT(bdev_get_by_name("T0n1") == NULL);
	nctrlr = nctrlr_by_name("T0");
	CU_ASSERT_FATAL(nctrlr != NULL);
	c = ctrlr_json("T0", &all);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(c, "state")), "attaching");
	CU_ASSERT(json_is_true(json_object_get(c, "retry_first_connect")));
	UT_ASSERT_EQ(json_integer_value(json_object_get(c, "connect_attempts")), 1);
	CU_ASSERT(strstr(json_string_value(json_object_get(c, "last_error")), "127.0.0.1:4420") !=
		  NULL);
	UT_ASSERT_EQ(json_array_size(json_object_get(c, "namespaces")), 0);
	json_decref(all);
	/* The next attempt waits for a timer, the library's reconnect backoff (1 ms doubling). */
	CU_ASSERT(nctrlr->retry_poller != NULL);
	UT_ASSERT_EQ(nctrlr->retry_delay_ms, 2);
	/* The name stays taken (and gets no second path before its first connects). */
	{
		struct bdev_nvme_attach_opts opts = { .name = "T0",
						      .multipath = BDEV_NVME_MP_DISABLE };

		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EEXIST);
		opts.multipath = BDEV_NVME_MP_MULTIPATH;
		UT_ASSERT_EQ(bdev_nvme_attach_controller(&opts, attach_cb, &r), -EBUSY);
	}

	/* Unknown subsystem NQN (target still being configured), then a timeout: retried. */
	wait_attempt(2);
	CU_ASSERT(nctrlr->retry_poller == NULL);
	connect_finish(-ENODEV);
	UT_ASSERT_EQ(nctrlr->retry_delay_ms, 4);
	wait_attempt(3);
	connect_finish(-ETIMEDOUT);
	/* Capped at reconnect_delay_max_ms. */
	UT_ASSERT_EQ(nctrlr->retry_delay_ms, 4);
	/* Once answered, any failure is retried: the controller is configured. */
	wait_attempt(4);
	connect_finish(-EPROTO);
	c = ctrlr_json("T0", &all);
	UT_ASSERT_EQ(json_integer_value(json_object_get(c, "connect_attempts")), 4);
	json_decref(all);

	/* It connects: the bdevs are registered, the attach callback is not called again. */
	wait_attempt(5);
	r.done = false;
	connect_finish(0);
	ut_poll_idle();
	CU_ASSERT(!r.done);
	CU_ASSERT(bdev_get_by_name("T0n1") != NULL);
	CU_ASSERT(bdev_get_by_name("T0n2") != NULL);
	CU_ASSERT(g_ctrlr.reconnect_cb != NULL);
	c = ctrlr_json("T0", &all);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(c, "state")), "connected");
	UT_ASSERT_EQ(json_array_size(json_object_get(c, "namespaces")), 2);
	CU_ASSERT(json_object_get(c, "last_error") == NULL);
	json_decref(all);
	/* No attempt after that. */
	ut_poll_idle();
	UT_ASSERT_EQ(g_connect_calls, 5);

	detach("T0");
	CU_ASSERT(bdev_get_by_name("T0n1") == NULL);
	CU_ASSERT(nctrlr_by_name("T0") == NULL);
	UT_ASSERT_EQ(g_ctrlr.abandoned, 0);
}

static void
test_retry_detach(void)
{
	struct attach_rec r;
	int calls;

	/* Between attempts: the timer is cancelled, nothing is left, no attempt follows. */
	fake_ctrlr_init();
	g_connect_calls = 0;
	attach_opt("T1", true, -ECONNREFUSED, &r);
	UT_ASSERT_EQ(r.rc, 0);
	CU_ASSERT_FATAL(nctrlr_by_name("T1") != NULL);
	CU_ASSERT(nctrlr_by_name("T1")->retry_poller != NULL);
	detach("T1");
	CU_ASSERT(nctrlr_by_name("T1") == NULL);
	CU_ASSERT(bdev_nvme_get_controllers_json("T1") == NULL);
	calls = g_connect_calls;
	{
		uint64_t until = time_now_ns() + 20ull * 1000 * 1000;

		while (time_now_ns() < until) {
			ut_poll_once();
		}
	}
	UT_ASSERT_EQ(g_connect_calls, calls);
	UT_ASSERT_EQ(g_ctrlr.detaches, 0);

	/* During an attempt: the library abandons it (its callback never comes). */
	attach_opt("T1", true, -EHOSTUNREACH, &r);
	UT_ASSERT_EQ(r.rc, 0);
	wait_attempt(g_connect_calls + 1);
	detach("T1");
	UT_ASSERT_EQ(g_ctrlr.abandoned, 1);
	CU_ASSERT(!g_ctrlr.connecting);
	CU_ASSERT(nctrlr_by_name("T1") == NULL);

	/* The name is free again; an attach not answered yet cannot be detached. */
	attach_opt("T1", true, 0, &r);
	UT_ASSERT_EQ(r.rc, 0);
	UT_ASSERT_EQ(r.count, 2);
	detach("T1");
	{
		struct bdev_nvme_attach_opts opts = { .name = "T1", .retry_first_connect = true };

		opts.trid.trtype = NVME_TRANSPORT_TCP;
		opts.trid.adrfam = NVME_ADRFAM_IPV4;
		UT_ASSERT_EQ_FATAL(bdev_nvme_attach_controller(&opts, attach_cb, &r), 0);
		UT_ASSERT_EQ(bdev_nvme_detach_controller("T1", NULL, NULL), -EBUSY);
		connect_finish(-ECONNREFUSED);
		ut_poll_idle();
		CU_ASSERT(r.done && r.rc == 0);
		detach("T1");
	}
}

static void
test_retry_permanent_errors(void)
{
	static const int errs[] = { -EPROTO, -EACCES, -EIO };
	struct attach_rec r;
	size_t i;

	/* A first failure that cannot pass fails the call as without the option. */
	for (i = 0; i < ARRAY_SIZE(errs); i++) {
		fake_ctrlr_init();
		g_connect_calls = 0;
		attach_opt("T2", true, errs[i], &r);
		UT_ASSERT_EQ(r.rc, errs[i]);
		CU_ASSERT(nctrlr_by_name("T2") == NULL);
		ut_poll_idle();
		UT_ASSERT_EQ(g_connect_calls, 1);
	}
	/* Without the option a refused connect still fails. */
	attach_opt("T2", false, -ECONNREFUSED, &r);
	UT_ASSERT_EQ(r.rc, -ECONNREFUSED);
	CU_ASSERT(nctrlr_by_name("T2") == NULL);

	/* Connected, but no usable namespace: fails, nothing left, the controller detached. */
	fake_ctrlr_init();
	g_ctrlr.num_ns = 0;
	attach_opt("T2", true, 0, &r);
	UT_POLL_UNTIL(r.done);
	UT_ASSERT_EQ(r.rc, -ENODEV);
	CU_ASSERT(nctrlr_by_name("T2") == NULL);
	UT_ASSERT_EQ(g_ctrlr.detaches, 1);
}

static void
test_retry_save_config_and_shutdown(void)
{
	struct attach_rec r;
	struct rpc_rec rr = { 0 };
	json_t *config, *call, *params, *saved = NULL;
	size_t i;

	fake_ctrlr_init();
	g_connect_calls = 0;
	attach_opt("T3", true, -ECONNREFUSED, &r);
	UT_ASSERT_EQ(r.rc, 0);

	/* Written while not connected, with the option, so that a restart keeps trying. */
	config = json_array();
	bdev_subsystem_config_json(config);
	json_array_foreach(config, i, call)
	{
		params = json_object_get(call, "params");
		if (strcmp(json_string_value(json_object_get(call, "method")),
			   "bdev_nvme_attach_controller") == 0 &&
		    strcmp(json_string_value(json_object_get(params, "name")), "T3") == 0) {
			CU_ASSERT(saved == NULL);
			saved = json_incref(call);
		}
	}
	json_decref(config);
	CU_ASSERT_FATAL(saved != NULL);
	params = json_object_get(saved, "params");
	CU_ASSERT(json_is_true(json_object_get(params, "retry_first_connect")));
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "traddr")), "127.0.0.1");
	detach("T3");

	/* Replayed through the RPC with the target still down: answers [] at once. */
	UT_ASSERT_EQ_FATAL(rpc_call("bdev_nvme_attach_controller", params, rpc_cb, &rr), 0);
	ut_poll_idle();
	CU_ASSERT_FATAL(!rr.done);
	connect_finish(-ECONNREFUSED);
	UT_POLL_UNTIL(rr.done);
	CU_ASSERT(json_is_array(json_object_get(rr.resp, "result")));
	UT_ASSERT_EQ(json_array_size(json_object_get(rr.resp, "result")), 0);
	json_decref(rr.resp);
	json_decref(saved);
	CU_ASSERT_FATAL(nctrlr_by_name("T3") != NULL);

	/*
	 * Shutdown (the module's fini, once every bdev is gone) gives up the
	 * retrying controller, between attempts and during one.
	 */
	nvme_module_fini();
	ut_poll_idle();
	CU_ASSERT(nctrlr_by_name("T3") == NULL);
	UT_ASSERT_EQ(g_ctrlr.abandoned, 0);

	attach_opt("T3", true, -ECONNREFUSED, &r);
	wait_attempt(g_connect_calls + 1);
	nvme_module_fini();
	ut_poll_idle();
	CU_ASSERT(nctrlr_by_name("T3") == NULL);
	UT_ASSERT_EQ(g_ctrlr.abandoned, 1);

	/* An attach not answered yet is given up too, and its caller hears so. */
	{
		struct bdev_nvme_attach_opts opts = { .name = "T3" };

		memset(&r, 0, sizeof(r));
		opts.trid.trtype = NVME_TRANSPORT_TCP;
		UT_ASSERT_EQ_FATAL(bdev_nvme_attach_controller(&opts, attach_cb, &r), 0);
		nvme_module_fini();
		ut_poll_idle();
		CU_ASSERT(r.done);
		UT_ASSERT_EQ(r.rc, -ECANCELED);
		CU_ASSERT(nctrlr_by_name("T3") == NULL);
		UT_ASSERT_EQ(g_ctrlr.abandoned, 2);
	}
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_attach_bdevs),
		UT_TEST(test_io_split_and_status),
		UT_TEST(test_write_zeroes_unmap_split),
		UT_TEST(test_config_and_rpc_json),
		UT_TEST(test_attach_failures),
		UT_TEST(test_rpc_errors),
		UT_TEST(test_retry_then_connect),
		UT_TEST(test_retry_detach),
		UT_TEST(test_retry_permanent_errors),
		UT_TEST(test_retry_save_config_and_shutdown),
	};

	return ut_run("bdev_nvme", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
