/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the controller state machine of the host
 * (initiator/nvme_ctrlr.c): the initialisation sequence command by command,
 * the failure of each step (an error status, a broken queue, a command
 * timeout, a command that cannot be sent), the optional steps, the wait for
 * CSTS.RDY, reconnect with its backoff, the shutdown of a detach (answered,
 * refused, stalled, cut short) and a detach without one. The queue pair code
 * is the real one (nvme_qpair.c) over a fake transport that sends nothing:
 * the test plays the controller and answers each admin command by hand. The
 * log lines of the code under test are captured and checked.
 */
/* Before any header: the log lines of the included sources come to ut_log_print. */
#define log_print ut_log_print

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gga_ut.h"
#include "gga_ut_thread.h"

#include "initiator/nvme_cmd.c"
#include "initiator/nvme_qpair.c"
#include "initiator/nvme_ctrlr.c"
#include "initiator/nvme_transport.c"

#define UT_CNTLID        5
#define UT_NN            2
#define UT_NUM_QUEUES    4 /* what Set Features Number of Queues grants */
#define UT_MAXCMD        32
#define UT_NQN           "nqn.2016-06.io.gga:ut"
#define UT_WHERE         "cannot connect to " UT_NQN " (TCP) at 127.0.0.1:4420: "
#define UT_INVALID_FIELD "Invalid Field in Command (sct 0x0, sc 0x2)"

/* ---- captured log ---- */

static char g_log[256 * 1024];
static size_t g_log_len;

void
ut_log_print(enum log_level level, const char *file, int line, const char *func, const char *fmt,
	     ...)
{
	static const char *names[] = { "ERROR", "WARN", "NOTICE", "INFO", "DEBUG" };
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "  log %s: %s", names[level], msg);
	n = snprintf(g_log + g_log_len, sizeof(g_log) - g_log_len, "%s: %s", names[level], msg);
	if (n > 0) {
		g_log_len = GGA_MIN(g_log_len + (size_t)n, sizeof(g_log) - 1);
	}
}

static void
log_reset(void)
{
	g_log_len = 0;
	g_log[0] = '\0';
}

/* How many captured lines contain `needle` (level included, as "WARN: nvme ..."). */
static int
log_count(const char *needle)
{
	const char *p = g_log;
	int n = 0;

	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return n;
}

#define UT_ASSERT_LOG(needle, count)                                                          \
	do {                                                                                  \
		if (log_count(needle) != (count)) {                                           \
			fprintf(stderr, "%s:%d: want %d log line(s) with \"%s\"\n", __FILE__, \
				__LINE__, (count), (needle));                                 \
		}                                                                             \
		CU_ASSERT(log_count(needle) == (count));                                      \
	} while (0)

/* ---- the fake transport: nothing goes on a wire ---- */

static struct {
	struct nvme_qpair *connecting; /* the queue pair of the last transport connect */
	int connects;
	int disconnects;
	int submits;
	int connect_rc; /* what every transport connect returns */
	int submit_rc;  /* what the next submit returns (then 0 again) */
} g_fake;

static int
fake_connect(struct nvme_qpair *qp)
{
	g_fake.connects++;
	g_fake.connecting = qp;
	return g_fake.connect_rc;
}

static void
fake_disconnect(struct nvme_qpair *qp)
{
	g_fake.disconnects++;
}

static int
fake_submit(struct nvme_qpair *qp, struct nvme_request *req)
{
	int rc = g_fake.submit_rc;

	g_fake.submit_rc = 0;
	g_fake.submits++;
	return rc;
}

static uint32_t
fake_max_in_capsule(const struct nvme_qpair *qp)
{
	return NVME_TCP_ADMIN_ICD_SIZE;
}

/* The controller looks its transport up by type (nvme_transport.c): both are the fake. */
#define FAKE_OPS(type)                                                                         \
	{                                                                                      \
		.name = "fake", .trtype = (type), .qpair_size = sizeof(struct nvme_qpair),     \
		.connect = fake_connect, .disconnect = fake_disconnect, .submit = fake_submit, \
		.max_in_capsule = fake_max_in_capsule,                                         \
	}
const struct nvme_transport_ops nvme_tcp_ops = FAKE_OPS(NVME_TRANSPORT_TCP);
const struct nvme_transport_ops nvme_rdma_ops = FAKE_OPS(NVME_TRANSPORT_RDMA);

/* ---- the fake controller ---- */

static struct {
	uint64_t cap;
	uint32_t cc;               /* the last Property Set CC */
	uint64_t nsze;             /* blocks of every namespace */
	uint32_t lbads[UT_NN + 1]; /* LBA data size of each nsid (0: inactive) */
} g_ctl;

static struct thread *g_thread;
static struct nvme_ctrlr *g_ctrlr; /* the controller under test */
static struct {
	int calls;
	int rc;
	struct nvme_ctrlr *ctrlr;
	char reason[1024];
} g_conn;
static int g_detached;
static int g_reconnects;
/* Times the reconnect callback said the controller was lost. */
static int g_lost;

static void
ctl_reset(void)
{
	memset(&g_ctl, 0, sizeof(g_ctl));
	/* MQES 127, CAP.TO 2 (1 s), MPSMIN 0 (4 KiB pages). */
	g_ctl.cap = 127 | 2ull << NVME_CAP_TO_SHIFT | NVME_CAP_CSS_NVM;
	g_ctl.nsze = 1 << 20;
	g_ctl.lbads[1] = 9;
	g_ctl.lbads[2] = 12;
}

/* CSTS as a controller shows it after the CC writes it got. */
static uint32_t
ctl_csts(void)
{
	uint32_t csts = (g_ctl.cc & NVME_CC_EN) != 0 ? NVME_CSTS_RDY : 0;

	if ((g_ctl.cc & NVME_CC_SHN_MASK) != 0) {
		csts |= NVME_CSTS_SHST_COMPLETE;
	}
	return csts;
}

static void
ctl_identify(void *buf, uint8_t cns, uint32_t nsid)
{
	struct nvme_identify_ctrlr *ic = buf;
	struct nvme_identify_ns *ns = buf;
	uint32_t *list = buf;
	uint32_t i, n = 0;

	memset(buf, 0, NVME_IDENTIFY_DATA_SIZE);
	switch (cns) {
	case NVME_CNS_CTRLR:
		ic->mdts = 5;
		ic->maxcmd = UT_MAXCMD;
		ic->nn = UT_NN;
		ic->oncs = NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES;
		ic->vwc = NVME_VWC_PRESENT;
		ic->ioccsz = (NVME_SQE_SIZE + 8192) / 16;
		break;
	case NVME_CNS_ACTIVE_NS_LIST:
		for (i = 1; i <= UT_NN; i++) {
			if (g_ctl.lbads[i] != 0) {
				list[n++] = i;
			}
		}
		break;
	case NVME_CNS_NS:
		if (nsid <= UT_NN && g_ctl.lbads[nsid] != 0) {
			ns->nsze = g_ctl.nsze;
			ns->ncap = g_ctl.nsze;
			ns->lbaf[0] = NVME_LBAF(0, g_ctl.lbads[nsid], 0);
		}
		break;
	}
}

static struct nvme_request *
oldest(void)
{
	struct nvme_request *req = TAILQ_FIRST(&g_ctrlr->admin->outstanding);

	CU_ASSERT_FATAL(req != NULL);
	return req;
}

static bool
nothing_outstanding(void)
{
	return TAILQ_EMPTY(&g_ctrlr->admin->outstanding);
}

static void
answer(struct nvme_request *req, uint16_t status, uint32_t cdw0, uint32_t cdw1)
{
	struct nvme_cpl cpl = { .cdw0 = cdw0, .cdw1 = cdw1, .status = status };

	nvme_qpair_complete(req->qpair, req, &cpl);
}

/* Answer the oldest admin command as a healthy controller would. */
static void
answer_ok(void)
{
	struct nvme_request *req = oldest();
	const struct nvme_prop_set_cmd *prop = (const void *)&req->cmd;
	uint32_t cdw0 = 0, cdw1 = 0;

	switch (req->cmd.opc) {
	case NVME_OPC_FABRICS:
		if (prop->fctype == NVME_FCTYPE_CONNECT) {
			cdw0 = UT_CNTLID;
		} else if (prop->fctype == NVME_FCTYPE_PROPERTY_SET && prop->ofst == NVME_REG_CC) {
			g_ctl.cc = (uint32_t)prop->value;
		} else if (prop->ofst == NVME_REG_CAP) {
			cdw0 = (uint32_t)g_ctl.cap;
			cdw1 = (uint32_t)(g_ctl.cap >> 32);
		} else if (prop->ofst == NVME_REG_VS) {
			cdw0 = 0x10400;
		} else if (prop->ofst == NVME_REG_CSTS) {
			cdw0 = ctl_csts();
		}
		break;
	case NVME_OPC_IDENTIFY:
		UT_ASSERT_EQ_FATAL(req->data_len, NVME_IDENTIFY_DATA_SIZE);
		ctl_identify(req->iov[0].iov_base, (uint8_t)req->cmd.cdw10, req->cmd.nsid);
		break;
	case NVME_OPC_SET_FEATURES:
		cdw0 = (UT_NUM_QUEUES - 1) << 16 | (UT_NUM_QUEUES - 1);
		break;
	}
	answer(req, 0, cdw0, cdw1);
}

/* The oldest command is this Fabrics command (Property Get/Set of ofst, or Connect). */
static struct nvme_request *
expect_fabrics(uint8_t fctype, uint32_t ofst, uint8_t attrib)
{
	struct nvme_request *req = oldest();
	const struct nvme_prop_get_cmd *prop = (const void *)&req->cmd;

	UT_ASSERT_EQ(req->cmd.opc, NVME_OPC_FABRICS);
	UT_ASSERT_EQ(prop->fctype, fctype);
	if (fctype != NVME_FCTYPE_CONNECT) {
		UT_ASSERT_EQ(prop->ofst, ofst);
		UT_ASSERT_EQ(prop->attrib, attrib);
	}
	return req;
}

static struct nvme_request *
expect_identify(uint8_t cns, uint32_t nsid)
{
	struct nvme_request *req = oldest();

	UT_ASSERT_EQ(req->cmd.opc, NVME_OPC_IDENTIFY);
	UT_ASSERT_EQ(req->cmd.cdw10, cns);
	UT_ASSERT_EQ(req->cmd.nsid, nsid);
	UT_ASSERT_EQ(req->data_len, NVME_IDENTIFY_DATA_SIZE);
	return req;
}

/* ---- driving the controller ---- */

static void
connect_cb(void *cb_arg, struct nvme_ctrlr *ctrlr, int rc, const char *reason)
{
	g_conn.calls++;
	g_conn.rc = rc;
	g_conn.ctrlr = ctrlr;
	snprintf(g_conn.reason, sizeof(g_conn.reason), "%s", reason != NULL ? reason : "");
}

static void
detach_cb(void *cb_arg)
{
	g_detached++;
}

static void
reconnect_cb(void *cb_arg, struct nvme_ctrlr *ctrlr, bool connected)
{
	CU_ASSERT(ctrlr == g_ctrlr);
	if (connected) {
		g_reconnects++;
	} else {
		g_lost++;
	}
}

/* Run the messages of the thread only: no timed poller is due at tick 1. */
static void
poll_msgs(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		thread_poll(g_thread, 0, 1);
	}
}

/* Run what is due within `ms` from now (timers), as if that time had passed. */
static void
advance_ms(uint64_t ms)
{
	thread_poll(g_thread, 0, ticks_get() + us_to_ticks(ms * 1000));
}

static void
ut_opts(struct nvme_ctrlr_opts *opts)
{
	nvme_ctrlr_opts_init(opts);
	/* Off: its timer would send Keep Alive commands as the tests advance time. */
	opts->keep_alive_timeout_ms = 0;
	snprintf(opts->hostnqn, sizeof(opts->hostnqn), "nqn.2016-06.io.gga:host");
}

/* Everything back to a healthy controller, then nvme_ctrlr_connect(). */
static void
connect_call(const struct nvme_ctrlr_opts *opts, int connect_rc)
{
	static const struct nvme_transport_id trid = {
		.trtype = NVME_TRANSPORT_TCP,
		.adrfam = NVME_ADRFAM_IPV4,
		.traddr = "127.0.0.1",
		.trsvcid = "4420",
		.subnqn = UT_NQN,
	};

	memset(&g_conn, 0, sizeof(g_conn));
	memset(&g_fake, 0, sizeof(g_fake));
	g_fake.connect_rc = connect_rc;
	g_detached = 0;
	g_reconnects = 0;
	g_lost = 0;
	ctl_reset();
	log_reset();
	UT_ASSERT_EQ_FATAL(nvme_ctrlr_connect(&trid, opts, connect_cb, NULL), 0);
}

/*
 * nvme_ctrlr_connect() and its admin queue's transport connect; the
 * transport comes up and the Fabrics Connect is outstanding.
 */
static void
start_connect(const struct nvme_ctrlr_opts *opts)
{
	connect_call(opts, 0);
	/* The attempt starts from a message, never inside the call. */
	UT_ASSERT_EQ(g_fake.connects, 0);
	poll_msgs();
	UT_ASSERT_EQ_FATAL(g_fake.connects, 1);
	g_ctrlr = g_fake.connecting->ctrlr;
	CU_ASSERT_FATAL(g_ctrlr->admin == g_fake.connecting);
	nvme_qpair_transport_ready(g_ctrlr->admin);
}

/* Answer as a healthy controller until the host waits in `step`. */
static void
run_until(enum nvme_ctrlr_init_step step)
{
	int i;

	for (i = 0; i < 64 && g_ctrlr->step != step; i++) {
		answer_ok();
	}
	UT_ASSERT_EQ_FATAL(g_ctrlr->step, step);
}

static void
connect_ok(const struct nvme_ctrlr_opts *opts)
{
	start_connect(opts);
	run_until(INIT_DONE);
	UT_ASSERT_EQ_FATAL(g_conn.calls, 1);
	UT_ASSERT_EQ_FATAL(g_conn.rc, 0);
	nvme_ctrlr_set_reconnect_cb(g_ctrlr, reconnect_cb, NULL);
}

/* The first connect failed: the callback once with rc and the reason, which is logged. */
static void
expect_connect_report(int rc, const char *why)
{
	char want[1024];

	snprintf(want, sizeof(want), UT_WHERE "%s", why);
	UT_ASSERT_EQ(g_conn.calls, 1);
	UT_ASSERT_EQ(g_conn.rc, rc);
	CU_ASSERT(g_conn.ctrlr == NULL);
	UT_ASSERT_STR_EQ(g_conn.reason, want);
	snprintf(want, sizeof(want), "ERROR: nvme: " UT_WHERE "%s\n", why);
	UT_ASSERT_LOG(want, 1);
}

/* The same, with the admin queue closed, no timer left; nothing runs after it. */
static void
expect_connect_failed(int rc, const char *why)
{
	int submits = g_fake.submits;

	expect_connect_report(rc, why);
	UT_ASSERT_EQ(g_ctrlr->state, NVME_CTRLR_CONNECTING);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDLE);
	UT_ASSERT_EQ(g_ctrlr->admin->state, QPAIR_DISCONNECTED);
	CU_ASSERT(nothing_outstanding());
	CU_ASSERT(g_ctrlr->init_poller == NULL);
	CU_ASSERT(g_ctrlr->reconnect_poller == NULL);
	UT_ASSERT_LOG("reconnect", 0);
	/* The controller is freed from a message (LeakSanitizer checks); nothing else runs. */
	poll_msgs();
	advance_ms(5000);
	UT_ASSERT_EQ(g_fake.submits, submits);
	UT_ASSERT_EQ(g_fake.connects, 1);
	UT_ASSERT_EQ(g_conn.calls, 1);
	g_ctrlr = NULL;
}

/* Detach a connected controller whose shutdown the fake controller answers. */
static void
detach_ok(void)
{
	UT_ASSERT_EQ_FATAL(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	run_until(INIT_IDLE);
	UT_ASSERT_EQ(g_detached, 0);
	poll_msgs();
	UT_ASSERT_EQ(g_detached, 1);
	UT_ASSERT_LOG("NOTICE: nvme 127.0.0.1:4420: detached\n", 1);
	g_ctrlr = NULL;
}

/* ---- tests ---- */

static void
test_init(void)
{
	struct nvme_ctrlr_opts opts;
	const struct nvme_ns_info *info;
	struct nvme_request *req;
	uint64_t left;

	ut_opts(&opts);
	start_connect(&opts);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_CONNECT_ADMIN);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTING);
	expect_fabrics(NVME_FCTYPE_CONNECT, 0, 0);
	answer_ok();

	UT_ASSERT_EQ(g_ctrlr->step, INIT_GET_CAP);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_CAP, NVME_PROP_SIZE_8);
	answer_ok();
	UT_ASSERT_EQ(g_ctrlr->cap, g_ctl.cap);

	UT_ASSERT_EQ(g_ctrlr->step, INIT_GET_VS);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_VS, NVME_PROP_SIZE_4);
	answer_ok();
	UT_ASSERT_EQ(g_ctrlr->vs, 0x10400);

	UT_ASSERT_EQ(g_ctrlr->step, INIT_SET_CC);
	req = expect_fabrics(NVME_FCTYPE_PROPERTY_SET, NVME_REG_CC, NVME_PROP_SIZE_4);
	UT_ASSERT_EQ(((const struct nvme_prop_set_cmd *)&req->cmd)->value,
		     NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16);
	answer_ok();

	/* CSTS.RDY is awaited for CAP.TO: 2 x 500 ms. */
	UT_ASSERT_EQ(g_ctrlr->step, INIT_WAIT_RDY);
	left = ticks_to_us(g_ctrlr->init_deadline - ticks_get());
	CU_ASSERT(left > 900000 && left <= 1000000);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_CSTS, NVME_PROP_SIZE_4);
	answer_ok();

	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDENTIFY_CTRLR);
	expect_identify(NVME_CNS_CTRLR, 0);
	answer_ok();

	UT_ASSERT_EQ(g_ctrlr->step, INIT_SET_NUM_QUEUES);
	req = oldest();
	UT_ASSERT_EQ(req->cmd.opc, NVME_OPC_SET_FEATURES);
	UT_ASSERT_EQ(req->cmd.cdw10, NVME_FEAT_NUMBER_OF_QUEUES);
	UT_ASSERT_EQ(req->cmd.cdw11, NVME_FEAT_NUM_QUEUES(63, 63));
	answer_ok();

	UT_ASSERT_EQ(g_ctrlr->step, INIT_ACTIVE_NS_LIST);
	expect_identify(NVME_CNS_ACTIVE_NS_LIST, 0);
	answer_ok();

	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDENTIFY_NS);
	expect_identify(NVME_CNS_NS, 1);
	answer_ok();
	UT_ASSERT_EQ(g_conn.calls, 0);
	expect_identify(NVME_CNS_NS, 2);
	answer_ok();

	/* Connected: the callback once, with what the controller said. */
	UT_ASSERT_EQ(g_ctrlr->step, INIT_DONE);
	CU_ASSERT(nothing_outstanding());
	UT_ASSERT_EQ(g_conn.calls, 1);
	UT_ASSERT_EQ(g_conn.rc, 0);
	CU_ASSERT(g_conn.ctrlr == g_ctrlr);
	UT_ASSERT_STR_EQ(g_conn.reason, "");
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTED);
	UT_ASSERT_EQ(nvme_ctrlr_get_cntlid(g_ctrlr), UT_CNTLID);
	UT_ASSERT_EQ(nvme_ctrlr_get_num_io_queues(g_ctrlr), UT_NUM_QUEUES);
	UT_ASSERT_EQ(g_ctrlr->io_queue_size, UT_MAXCMD);
	UT_ASSERT_EQ(nvme_ctrlr_get_max_xfer_size(g_ctrlr), 4096u << 5);
	UT_ASSERT_EQ(nvme_ctrlr_io_icd_size(g_ctrlr), 8192);
	UT_ASSERT_EQ(nvme_ctrlr_get_num_ns(g_ctrlr), 2);
	info = nvme_ns_get_info(nvme_ctrlr_get_ns(g_ctrlr, 2));
	UT_ASSERT_EQ(info->block_size, 4096);
	UT_ASSERT_EQ(info->num_blocks, g_ctl.nsze);
	CU_ASSERT(info->dsm_supported && info->write_zeroes_supported &&
		  info->volatile_write_cache);
	UT_ASSERT_EQ(nvme_ns_get_info(nvme_ctrlr_get_ns_by_index(g_ctrlr, 0))->block_size, 512);
	UT_ASSERT_LOG("NOTICE: nvme 127.0.0.1:4420: connected to " UT_NQN ", cntlid 5, "
		      "2 namespace(s), 4 I/O queues",
		      1);
	UT_ASSERT_LOG("WARN", 0);
	UT_ASSERT_LOG("ERROR", 0);
	detach_ok();
}

/* Each mandatory step answered with an error status fails the first connect. */
static void
test_init_step_errors(void)
{
	static const struct {
		enum nvme_ctrlr_init_step step;
		const char *name;
	} steps[] = {
		{ INIT_GET_CAP, "Property Get CAP" },
		{ INIT_GET_VS, "Property Get VS" },
		{ INIT_SET_CC, "Property Set CC" },
		{ INIT_WAIT_RDY, "Property Get CSTS" },
		{ INIT_IDENTIFY_CTRLR, "Identify Controller" },
		{ INIT_IDENTIFY_NS, "Identify Namespace" },
	};
	struct nvme_ctrlr_opts opts;
	char why[256];
	size_t i;

	ut_opts(&opts);
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		start_connect(&opts);
		run_until(steps[i].step);
		answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
		snprintf(why, sizeof(why), "%s failed: " UT_INVALID_FIELD, steps[i].name);
		expect_connect_failed(-EIO, why);
	}
}

/* The admin queue breaks, a command times out, a command cannot be sent. */
static void
test_init_queue_failures(void)
{
	struct nvme_ctrlr_opts opts;
	struct nvme_request *req;

	ut_opts(&opts);

	/* The Fabrics Connect is refused. */
	start_connect(&opts);
	answer(oldest(), NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_CONNECT_INVALID_HOST), 0,
	       0);
	expect_connect_failed(-EACCES, "Fabrics Connect failed: Connect Invalid Host "
				       "(sct 0x1, sc 0x84)");

	/* The connection breaks while Property Get VS is outstanding. */
	start_connect(&opts);
	run_until(INIT_GET_VS);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection closed by the controller");
	expect_connect_failed(-ECONNRESET, "connection closed by the controller");

	/* Identify Controller times out (as qpair_poll fails a late command). */
	start_connect(&opts);
	run_until(INIT_IDENTIFY_CTRLR);
	req = oldest();
	req->timed_out = true;
	g_ctrlr->admin->timed_out_seen = true;
	nvme_qpair_fail(g_ctrlr->admin, -ETIMEDOUT, "command timed out");
	expect_connect_failed(-ETIMEDOUT, "command timed out");

	/* Property Set CC cannot be sent. */
	start_connect(&opts);
	run_until(INIT_GET_VS);
	g_fake.submit_rc = -EIO;
	answer_ok();
	expect_connect_failed(-EIO, "cannot submit an admin command: Input/output error");
}

static void
test_init_connect_refused(void)
{
	struct nvme_ctrlr_opts opts;

	ut_opts(&opts);
	connect_call(&opts, -ECONNREFUSED);
	UT_ASSERT_EQ(g_conn.calls, 0);
	/* The attempt and the free of the controller run here (LeakSanitizer checks the free). */
	poll_msgs();
	UT_ASSERT_EQ(g_fake.connects, 1);
	expect_connect_report(-ECONNREFUSED, "Connection refused");
	UT_ASSERT_LOG("reconnect", 0);
	advance_ms(5000);
	UT_ASSERT_EQ(g_fake.connects, 1);
	UT_ASSERT_EQ(g_fake.submits, 0);
	g_ctrlr = NULL;

	/* quiet_connect_failure: the caller hears the same, the log has no error line. */
	opts.quiet_connect_failure = true;
	connect_call(&opts, -ECONNREFUSED);
	poll_msgs();
	UT_ASSERT_EQ(g_conn.calls, 1);
	UT_ASSERT_EQ(g_conn.rc, -ECONNREFUSED);
	CU_ASSERT(strstr(g_conn.reason, "Connection refused") != NULL);
	UT_ASSERT_LOG("ERROR: nvme: ", 0);
	g_ctrlr = NULL;
}

/* CSTS.RDY late, never, or with the fatal status bit. */
static void
test_init_wait_rdy(void)
{
	struct nvme_ctrlr_opts opts;
	int submits;

	ut_opts(&opts);

	/* Not ready: CSTS is read again after CSTS_POLL_US, not before. */
	start_connect(&opts);
	run_until(INIT_WAIT_RDY);
	answer(oldest(), 0, 0, 0);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_WAIT_RDY);
	CU_ASSERT(nothing_outstanding());
	CU_ASSERT(g_ctrlr->init_poller != NULL);
	submits = g_fake.submits;
	poll_msgs();
	UT_ASSERT_EQ(g_fake.submits, submits);
	advance_ms(CSTS_POLL_US / 1000);
	UT_ASSERT_EQ(g_fake.submits, submits + 1);
	CU_ASSERT(g_ctrlr->init_poller == NULL);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_CSTS, NVME_PROP_SIZE_4);
	run_until(INIT_DONE);
	UT_ASSERT_EQ(g_conn.rc, 0);
	detach_ok();

	/* Controller fatal status. */
	start_connect(&opts);
	run_until(INIT_WAIT_RDY);
	answer(oldest(), 0, NVME_CSTS_CFS, 0);
	expect_connect_failed(-EIO, "controller fatal status (CSTS 0x2)");

	/* Still not ready at the deadline (CAP.TO 0 gives the 500 ms floor). */
	start_connect(&opts);
	g_ctl.cap &= ~(NVME_CAP_TO_MASK << NVME_CAP_TO_SHIFT);
	run_until(INIT_WAIT_RDY);
	CU_ASSERT(ticks_to_us(g_ctrlr->init_deadline - ticks_get()) > 400000);
	CU_ASSERT(ticks_to_us(g_ctrlr->init_deadline - ticks_get()) <= 500000);
	g_ctrlr->init_deadline = ticks_get();
	answer(oldest(), 0, 0, 0);
	expect_connect_failed(-ETIMEDOUT, "controller not ready (CSTS.RDY = 0) in time");
}

/* Set Features and the active namespace list may fail; namespaces may be unusable. */
static void
test_init_optional_steps(void)
{
	struct nvme_ctrlr_opts opts;

	ut_opts(&opts);
	opts.num_io_queues = 8;
	start_connect(&opts);
	run_until(INIT_SET_NUM_QUEUES);
	answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
	UT_ASSERT_EQ(g_ctrlr->num_io_queues, 8);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: Set Features Number of Queues failed "
		      "(Invalid Field in Command); assuming 8\n",
		      1);

	/* No list (NVMe 1.0): every nsid up to NN is identified; nsid 1 is inactive. */
	g_ctl.lbads[1] = 0;
	UT_ASSERT_EQ(g_ctrlr->step, INIT_ACTIVE_NS_LIST);
	answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
	expect_identify(NVME_CNS_NS, 1);
	answer_ok();
	expect_identify(NVME_CNS_NS, 2);
	answer_ok();
	UT_ASSERT_EQ(g_ctrlr->step, INIT_DONE);
	UT_ASSERT_EQ(g_conn.rc, 0);
	UT_ASSERT_EQ(nvme_ctrlr_get_num_ns(g_ctrlr), 1);
	CU_ASSERT(nvme_ctrlr_get_ns(g_ctrlr, 2) != NULL);
	detach_ok();

	/* An unusable LBA format is skipped with a warning; no namespace at all still connects. */
	start_connect(&opts);
	g_ctl.lbads[1] = 8;
	g_ctl.lbads[2] = 0;
	run_until(INIT_DONE);
	UT_ASSERT_EQ(g_conn.rc, 0);
	UT_ASSERT_EQ(nvme_ctrlr_get_num_ns(g_ctrlr), 0);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: namespace 1: unusable LBA format or size; "
		      "skipped\n",
		      1);
	UT_ASSERT_LOG("0 namespace(s), 4 I/O queues", 1);
	detach_ok();

	/* An empty active namespace list: no Identify Namespace at all. */
	start_connect(&opts);
	g_ctl.lbads[1] = 0;
	g_ctl.lbads[2] = 0;
	run_until(INIT_ACTIVE_NS_LIST);
	answer_ok();
	UT_ASSERT_EQ(g_ctrlr->step, INIT_DONE);
	UT_ASSERT_EQ(g_conn.rc, 0);
	detach_ok();
}

/* The controller is lost; reconnect attempts fail in several ways, with backoff, then work. */
static void
test_reconnect(void)
{
	struct nvme_ctrlr_opts opts;
	uint32_t gen;
	int i;

	ut_opts(&opts);
	opts.reconnect_delay_min_ms = 100;
	opts.reconnect_delay_max_ms = 400;
	connect_ok(&opts);
	gen = g_ctrlr->gen;

	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: controller lost (connection reset by peer); "
		      "reconnecting\n",
		      1);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_RECONNECTING);
	UT_ASSERT_EQ(nvme_ctrlr_get_cntlid(g_ctrlr), 0);
	CU_ASSERT(g_ctrlr->gen != gen);
	CU_ASSERT(g_ctrlr->reconnect_poller != NULL);

	/* Attempt 1 after 100 ms: the transport connect fails. */
	advance_ms(50);
	UT_ASSERT_EQ(g_fake.connects, 1);
	advance_ms(100);
	UT_ASSERT_EQ_FATAL(g_fake.connects, 2);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_CONNECT_ADMIN);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNREFUSED, "connection refused");
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: reconnect attempt 1 failed: connection "
		      "refused; retrying in 200 ms\n",
		      1);
	UT_ASSERT_EQ(g_ctrlr->last_error, -ECONNREFUSED);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_RECONNECTING);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDLE);

	/* Attempt 2 after 200 ms: Property Get VS fails. */
	advance_ms(100);
	UT_ASSERT_EQ(g_fake.connects, 2);
	advance_ms(200);
	UT_ASSERT_EQ_FATAL(g_fake.connects, 3);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_GET_VS);
	answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: reconnect attempt 2 failed: Property Get VS "
		      "failed: " UT_INVALID_FIELD "; retrying in 400 ms\n",
		      1);
	UT_ASSERT_EQ(g_ctrlr->last_error, -EIO);

	/* Attempts 3 to 50 fail in the transport connect; the delay stays at the 400 ms cap. */
	g_fake.connect_rc = -ECONNREFUSED;
	for (i = 3; i <= 50; i++) {
		advance_ms(400);
		UT_ASSERT_EQ_FATAL(g_fake.connects, i + 1);
	}
	UT_ASSERT_LOG("reconnect attempt 3 failed: Connection refused; retrying in 400 ms "
		      "(further failures logged every 50 attempts)\n",
		      1);
	UT_ASSERT_LOG("reconnect attempt 50 failed: Connection refused; retrying in 400 ms\n", 1);
	UT_ASSERT_LOG("reconnect attempt", 4);
	UT_ASSERT_EQ(g_ctrlr->reconnect_delay_ms, 400);
	UT_ASSERT_EQ(g_conn.calls, 1);
	UT_ASSERT_EQ(g_reconnects, 0);

	/* Attempt 51 works: the reconnect callback, the counters and the backoff reset. */
	g_fake.connect_rc = 0;
	advance_ms(400);
	UT_ASSERT_EQ_FATAL(g_fake.connects, 52);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_DONE);
	UT_ASSERT_LOG("NOTICE: nvme 127.0.0.1:4420: reconnected (cntlid 5) after 51 attempt(s)\n",
		      1);
	UT_ASSERT_EQ(g_reconnects, 1);
	UT_ASSERT_EQ(g_conn.calls, 1);
	UT_ASSERT_EQ(nvme_ctrlr_get_reconnect_count(g_ctrlr), 1);
	UT_ASSERT_EQ(g_ctrlr->reconnect_attempts, 0);
	UT_ASSERT_EQ(g_ctrlr->reconnect_delay_ms, 100);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTED);
	UT_ASSERT_EQ(nvme_ctrlr_get_cntlid(g_ctrlr), UT_CNTLID);
	UT_ASSERT_LOG("connected to", 1);
	detach_ok();
}

/*
 * A user asks for a reset (a member that stopped answering): the association
 * drops as if lost, the callback says so, and it reconnects. Asked again
 * while reconnecting, nothing more happens.
 */
static void
test_requested_reset(void)
{
	struct nvme_ctrlr_opts opts;
	uint32_t gen;

	ut_opts(&opts);
	connect_ok(&opts);
	gen = g_ctrlr->gen;
	nvme_ctrlr_request_reset(g_ctrlr, "member stalled");
	poll_msgs();
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: controller lost (member stalled); "
		      "reconnecting\n",
		      1);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_RECONNECTING);
	CU_ASSERT(g_ctrlr->gen != gen);
	UT_ASSERT_EQ(g_lost, 1);
	nvme_ctrlr_request_reset(g_ctrlr, "again");
	poll_msgs();
	UT_ASSERT_LOG("controller lost", 1);
	UT_ASSERT_EQ(g_lost, 1);
	advance_ms(opts.reconnect_delay_min_ms);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_DONE);
	UT_ASSERT_EQ(g_reconnects, 1);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTED);
	detach_ok();
}

/* A reconnect that finds a namespace changed fails; one that finds it gone goes on. */
static void
test_reconnect_namespaces(void)
{
	struct nvme_ctrlr_opts opts;

	ut_opts(&opts);
	connect_ok(&opts);

	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	g_ctl.nsze /= 2;
	advance_ms(opts.reconnect_delay_min_ms);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_IDLE);
	UT_ASSERT_LOG("reconnect attempt 1 failed: a namespace changed its format or shrank; "
		      "retrying in 200 ms\n",
		      1);
	UT_ASSERT_EQ(g_ctrlr->last_error, -ESTALE);
	UT_ASSERT_EQ(g_reconnects, 0);
	/* Lost once, when the connection went; not again per failed attempt. */
	UT_ASSERT_EQ(g_lost, 1);

	/* Back to its size, but nsid 1 is gone: the controller is back, nsid 1 is kept. */
	g_ctl.nsze *= 2;
	g_ctl.lbads[1] = 0;
	advance_ms(2 * opts.reconnect_delay_min_ms);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_DONE);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: namespace 1 is gone after reconnect\n", 1);
	UT_ASSERT_EQ(g_reconnects, 1);
	UT_ASSERT_EQ(nvme_ctrlr_get_num_ns(g_ctrlr), 2);
	detach_ok();
}

/* A clean shutdown: CC.SHN, then CSTS.SHST polled until complete. */
static void
test_shutdown(void)
{
	struct nvme_ctrlr_opts opts;
	struct nvme_request *req;
	int submits, disconnects;

	ut_opts(&opts);
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_DETACHING);
	UT_ASSERT_EQ(nvme_ctrlr_get_cntlid(g_ctrlr), 0);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), -EBUSY);
	UT_ASSERT_EQ(g_ctrlr->step, SHUTDOWN_SET_CC);
	req = expect_fabrics(NVME_FCTYPE_PROPERTY_SET, NVME_REG_CC, NVME_PROP_SIZE_4);
	UT_ASSERT_EQ(((const struct nvme_prop_set_cmd *)&req->cmd)->value,
		     NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16 | NVME_CC_SHN_NORMAL);
	answer_ok();

	/* Shutdown occurring: read again after CSTS_POLL_US. */
	UT_ASSERT_EQ(g_ctrlr->step, SHUTDOWN_WAIT);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_CSTS, NVME_PROP_SIZE_4);
	answer(oldest(), 0, NVME_CSTS_RDY | NVME_CSTS_SHST_OCCURRING, 0);
	UT_ASSERT_EQ(g_ctrlr->step, SHUTDOWN_WAIT);
	CU_ASSERT(nothing_outstanding());
	submits = g_fake.submits;
	disconnects = g_fake.disconnects;
	advance_ms(CSTS_POLL_US / 1000);
	UT_ASSERT_EQ(g_fake.submits, submits + 1);
	expect_fabrics(NVME_FCTYPE_PROPERTY_GET, NVME_REG_CSTS, NVME_PROP_SIZE_4);
	answer_ok();

	/* Complete: the admin queue closes, the callback follows from a message. */
	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDLE);
	UT_ASSERT_EQ(g_fake.disconnects, disconnects + 1);
	CU_ASSERT(g_ctrlr->shutdown_poller == NULL);
	CU_ASSERT(g_ctrlr->init_poller == NULL);
	UT_ASSERT_EQ(g_detached, 0);
	poll_msgs();
	UT_ASSERT_EQ(g_detached, 1);
	UT_ASSERT_LOG("NOTICE: nvme 127.0.0.1:4420: detached\n", 1);
	UT_ASSERT_LOG("WARN", 0);
	UT_ASSERT_LOG("ERROR", 0);
	UT_ASSERT_LOG("reconnect", 0);
	g_ctrlr = NULL;
	advance_ms(10000);
	UT_ASSERT_EQ(g_fake.connects, 1);
}

/* Detach once the shutdown ends early: refused, unanswered, never complete, cut short. */
static void
expect_detached(void)
{
	int submits = g_fake.submits;
	int connects = g_fake.connects;

	UT_ASSERT_EQ(g_ctrlr->step, INIT_IDLE);
	UT_ASSERT_EQ(g_ctrlr->admin->state, QPAIR_DISCONNECTED);
	CU_ASSERT(g_ctrlr->shutdown_poller == NULL);
	CU_ASSERT(g_ctrlr->init_poller == NULL);
	poll_msgs();
	UT_ASSERT_EQ(g_detached, 1);
	UT_ASSERT_LOG("NOTICE: nvme 127.0.0.1:4420: detached\n", 1);
	UT_ASSERT_LOG("reconnect attempt", 0);
	UT_ASSERT_LOG("reconnected", 0);
	UT_ASSERT_LOG("cannot connect", 0);
	g_ctrlr = NULL;
	advance_ms(10000);
	UT_ASSERT_EQ(g_fake.submits, submits);
	UT_ASSERT_EQ(g_fake.connects, connects);
	UT_ASSERT_EQ(g_detached, 1);
}

static void
test_shutdown_cut_short(void)
{
	struct nvme_ctrlr_opts opts;

	ut_opts(&opts);

	/* CC.SHN refused: no CSTS read. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
	UT_ASSERT_LOG("WARN", 0);
	expect_detached();

	/* CC.SHN never answered: shutdown_timeout_ms bounds it. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	advance_ms(opts.shutdown_timeout_ms / 2);
	UT_ASSERT_EQ(g_ctrlr->step, SHUTDOWN_SET_CC);
	advance_ms(opts.shutdown_timeout_ms);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: Property Set CC.SHN not answered in 2000 ms; "
		      "closing anyway\n",
		      1);
	expect_detached();

	/* CSTS never answered. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	answer_ok();
	UT_ASSERT_EQ(g_ctrlr->step, SHUTDOWN_WAIT);
	advance_ms(opts.shutdown_timeout_ms);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: Property Get CSTS not answered in 2000 ms; "
		      "closing anyway\n",
		      1);
	expect_detached();

	/* CSTS.SHST still not complete at the deadline. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	answer_ok();
	g_ctrlr->init_deadline = ticks_get();
	answer(oldest(), 0, NVME_CSTS_SHST_OCCURRING, 0);
	UT_ASSERT_LOG("WARN: nvme 127.0.0.1:4420: shutdown not complete after 2000 ms; "
		      "closing anyway\n",
		      1);
	expect_detached();

	/* CSTS read fails. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	answer_ok();
	answer(oldest(), NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD), 0, 0);
	UT_ASSERT_LOG("WARN", 0);
	expect_detached();

	/* The connection breaks with CC.SHN outstanding. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	UT_ASSERT_LOG("controller lost", 0);
	expect_detached();

	/* The connection breaks while the shutdown waits to read CSTS again. */
	connect_ok(&opts);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	answer_ok();
	answer(oldest(), 0, NVME_CSTS_SHST_OCCURRING, 0);
	CU_ASSERT(g_ctrlr->init_poller != NULL);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	expect_detached();

	/* CC.SHN cannot be sent. */
	connect_ok(&opts);
	g_fake.submit_rc = -EIO;
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	expect_detached();
}

/* A detach with no live association sends nothing; one with I/O queues is refused. */
static void
test_detach_without_shutdown(void)
{
	struct nvme_ctrlr_opts opts;
	struct nvme_qpair *qp;
	int submits, disconnects, connects;

	ut_opts(&opts);

	/*
	 * While the first connect runs (its Fabrics Connect outstanding): the
	 * attempt is abandoned, the connect callback never runs.
	 */
	start_connect(&opts);
	run_until(INIT_IDENTIFY_CTRLR);
	submits = g_fake.submits;
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), -EBUSY);
	UT_ASSERT_EQ(g_fake.submits, submits);
	CU_ASSERT(nothing_outstanding());
	expect_detached();
	UT_ASSERT_EQ(g_conn.calls, 0);

	/* Before the first attempt even started (its message not run yet): none starts. */
	{
		static const struct nvme_transport_id trid = {
			.trtype = NVME_TRANSPORT_TCP,
			.adrfam = NVME_ADRFAM_IPV4,
			.traddr = "127.0.0.1",
			.trsvcid = "4420",
			.subnqn = UT_NQN,
		};

		g_detached = 0;
		log_reset();
		g_ctrlr = NULL;
		UT_ASSERT_EQ_FATAL(nvme_ctrlr_connect_start(&trid, &opts, connect_cb, NULL,
							    &g_ctrlr),
				   0);
		CU_ASSERT_FATAL(g_ctrlr != NULL);
		UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTING);
		connects = g_fake.connects;
		UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
		expect_detached();
		UT_ASSERT_EQ(g_fake.connects, connects);
		UT_ASSERT_EQ(g_conn.calls, 0);
	}

	/* A first connect that finishes normally. */
	connect_ok(&opts);

	/* Refused while an I/O queue pair exists. */
	qp = nvme_ctrlr_alloc_io_qpair(g_ctrlr);
	CU_ASSERT_FATAL(qp != NULL);
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), -EBUSY);
	UT_ASSERT_EQ(nvme_ctrlr_get_state(g_ctrlr), NVME_CTRLR_CONNECTED);
	nvme_ctrlr_free_io_qpair(qp);

	/* Waiting for the next reconnect attempt: no command, no attempt after. */
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	submits = g_fake.submits;
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	UT_ASSERT_EQ(g_fake.submits, submits);
	CU_ASSERT(g_ctrlr->reconnect_poller == NULL);
	expect_detached();

	/* While a reconnect attempt's transport connects: the connection is closed. */
	connect_ok(&opts);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	advance_ms(opts.reconnect_delay_min_ms);
	UT_ASSERT_EQ(g_ctrlr->step, INIT_CONNECT_ADMIN);
	submits = g_fake.submits;
	disconnects = g_fake.disconnects;
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	UT_ASSERT_EQ(g_fake.disconnects, disconnects + 1);
	UT_ASSERT_EQ(g_fake.submits, submits);
	expect_detached();

	/* In the middle of a reconnect attempt: its command fails with the disconnect. */
	connect_ok(&opts);
	nvme_qpair_fail(g_ctrlr->admin, -ECONNRESET, "connection reset by peer");
	advance_ms(opts.reconnect_delay_min_ms);
	nvme_qpair_transport_ready(g_ctrlr->admin);
	run_until(INIT_IDENTIFY_CTRLR);
	submits = g_fake.submits;
	UT_ASSERT_EQ(nvme_ctrlr_detach(g_ctrlr, detach_cb, NULL), 0);
	UT_ASSERT_EQ(g_fake.submits, submits);
	CU_ASSERT(nothing_outstanding());
	expect_detached();
}

static int
suite_init(void)
{
	g_thread = ut_thread_start();
	return g_thread != NULL ? 0 : -1;
}

static int
suite_fini(void)
{
	ut_thread_stop(g_thread);
	return 0;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_init),
		UT_TEST(test_init_step_errors),
		UT_TEST(test_init_queue_failures),
		UT_TEST(test_init_connect_refused),
		UT_TEST(test_init_wait_rdy),
		UT_TEST(test_init_optional_steps),
		UT_TEST(test_reconnect),
		UT_TEST(test_reconnect_namespaces),
		UT_TEST(test_requested_reset),
		UT_TEST(test_shutdown),
		UT_TEST(test_shutdown_cut_short),
		UT_TEST(test_detach_without_shutdown),
	};

	return ut_run("nvme_ctrlr", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
