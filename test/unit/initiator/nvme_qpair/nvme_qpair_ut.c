/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of queue pairs and the NVMe/TCP transport of the host
 * (initiator/nvme_qpair.c, nvme_tcp.c, nvme_ns.c), without a network: the
 * queue pair's connection is one end of a socketpair and the test plays the
 * controller on the other end, byte by byte where it matters, so PDUs
 * arrive split across many events. The controller side of the library is
 * stubbed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gga_ut.h"
#include "gga_ut_thread.h"

#include "initiator/nvme_cmd.c"
#include "initiator/nvme_ns.c"
#include "initiator/nvme_qpair.c"
#include "initiator/nvme_tcp.c"
#include "initiator/nvme_tcp_pdu.c"

/* ---- stubs of nvme_ctrlr.c ---- */

static int g_io_failures;
static uint32_t g_max_xfer = UINT32_MAX;

void
nvme_ctrlr_io_qpair_poll(struct nvme_qpair *qpair)
{
}

bool
nvme_ctrlr_io_qpair_kick(struct nvme_qpair *qpair)
{
	return false;
}

uint32_t
nvme_ctrlr_io_icd_size(const struct nvme_ctrlr *ctrlr)
{
	return 4096;
}

uint32_t
nvme_ctrlr_get_max_xfer_size(const struct nvme_ctrlr *ctrlr)
{
	return g_max_xfer;
}

void
nvme_ctrlr_report_io_failure(struct nvme_ctrlr *ctrlr, uint32_t gen, const char *reason)
{
	g_io_failures++;
}

/* ---- harness ---- */

static struct thread *g_thread;
static struct nvme_ctrlr g_ctrlr;
static int g_peer = -1;
static int g_connect_rc;
static int g_connect_calls;
static int g_lost_calls;

struct cpl_rec {
	int calls;
	uint16_t status;
	uint32_t cdw0;
	struct nvme_qpair *free_qp; /* destroy this queue pair from the callback */
};

static void
rec_cb(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct cpl_rec *rec = cb_arg;

	rec->calls++;
	rec->status = cpl->status;
	rec->cdw0 = cpl->cdw0;
	if (rec->free_qp != NULL) {
		nvme_qpair_destroy(rec->free_qp);
		rec->free_qp = NULL;
	}
}

static void
test_connect_done(struct nvme_qpair *qp, int rc)
{
	g_connect_calls++;
	g_connect_rc = rc;
}

static void
test_lost(struct nvme_qpair *qp, int rc)
{
	g_lost_calls++;
}

static int
suite_init(void)
{
	g_thread = ut_thread_start();
	if (g_thread == NULL) {
		return -1;
	}
	g_ctrlr.opts.command_timeout_ms = 30000;
	g_ctrlr.opts.connect_timeout_ms = 5000;
	g_ctrlr.ops = &nvme_tcp_ops;
	snprintf(g_ctrlr.name, sizeof(g_ctrlr.name), "ut");
	snprintf(g_ctrlr.trid.subnqn, sizeof(g_ctrlr.trid.subnqn), "nqn.2016-06.io.gga:ut");
	snprintf(g_ctrlr.opts.hostnqn, sizeof(g_ctrlr.opts.hostnqn), "nqn.2016-06.io.gga:host");
	return 0;
}

static int
suite_fini(void)
{
	ut_thread_stop(g_thread);
	return 0;
}

/* A live I/O queue pair whose controller is the test, through a socketpair. */
static struct nvme_qpair *
make_qpair(uint16_t entries, bool hdgst, bool ddgst, uint32_t max_icd, uint32_t maxh2c)
{
	struct nvme_qpair *qp;
	int sv[2];

	qp = nvme_qpair_create(&g_ctrlr, 1, entries, false);
	CU_ASSERT_FATAL(qp != NULL);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	nvme_tcp_conn(qp)->fd = sv[0];
	nvme_tcp_conn(qp)->state = TCP_CONN_READY;
	nvme_tcp_conn(qp)->hdgst = hdgst;
	nvme_tcp_conn(qp)->ddgst = ddgst;
	nvme_tcp_conn(qp)->max_icd = max_icd;
	nvme_tcp_conn(qp)->maxh2cdata = maxh2c;
	TAILQ_INIT(&nvme_tcp_conn(qp)->txq);
	rx_reset(nvme_tcp_conn(qp));
	qp->state = QPAIR_LIVE;
	qp->connect_done = test_connect_done;
	qp->lost = test_lost;
	g_peer = sv[1];
	g_connect_calls = 0;
	g_lost_calls = 0;
	g_io_failures = 0;
	return qp;
}

static void
close_peer(void)
{
	if (g_peer >= 0) {
		close(g_peer);
		g_peer = -1;
	}
}

/* Read exactly n bytes of what the host sent (after flushing it), bounded in time. */
static void
peer_read(struct nvme_qpair *qp, void *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;
	int tries = 0;

	while (got < n && tries++ < 1000) {
		if (qp != NULL) {
			nvme_tcp_flush(qp);
		}
		r = recv(g_peer, (uint8_t *)buf + got, n - got, MSG_DONTWAIT);
		if (r > 0) {
			got += (size_t)r;
		} else {
			poll(&(struct pollfd){ .fd = g_peer, .events = POLLIN }, 1, 1);
		}
	}
	UT_ASSERT_EQ_FATAL(got, n);
}

static bool
peer_has_data(void)
{
	uint8_t b;

	return recv(g_peer, &b, 1, MSG_DONTWAIT | MSG_PEEK) == 1;
}

/* Send bytes to the host in pieces of `step` and let it process each. */
static void
peer_send(struct nvme_qpair *qp, const void *buf, size_t n, size_t step)
{
	size_t off = 0, k;

	while (off < n) {
		k = GGA_MIN(step, n - off);
		UT_ASSERT_EQ_FATAL(send(g_peer, (const uint8_t *)buf + off, k, 0), (ssize_t)k);
		off += k;
		tcp_on_event(qp, THREAD_FD_IN);
	}
}

/* Build a controller-to-host PDU: header (+digest), padding to pdo, data (+digest). */
static size_t
build_pdu(uint8_t *out, const void *hdr, uint32_t hlen, bool hdgst, uint32_t pdo, const void *data,
	  uint32_t dlen, bool ddgst)
{
	struct nvme_tcp_common_hdr *ch = (struct nvme_tcp_common_hdr *)out;
	size_t len = hlen;
	uint32_t crc;

	memcpy(out, hdr, hlen);
	if (hdgst) {
		ch->flags |= NVME_TCP_F_HDGST;
	}
	if (dlen > 0 && ddgst) {
		ch->flags |= NVME_TCP_F_DDGST;
	}
	ch->hlen = (uint8_t)hlen;
	ch->pdo = (uint8_t)(dlen > 0 ? pdo : 0);
	ch->plen = (dlen > 0 ? pdo + dlen + (ddgst ? 4 : 0) : hlen + (hdgst ? 4 : 0));
	if (hdgst) {
		crc = crc32c(out, hlen, 0);
		memcpy(out + hlen, &crc, 4);
		len += 4;
	}
	if (dlen > 0) {
		memset(out + len, 0, pdo - len);
		memcpy(out + pdo, data, dlen);
		len = pdo + dlen;
		if (ddgst) {
			crc = crc32c(data, dlen, 0);
			memcpy(out + len, &crc, 4);
			len += 4;
		}
	}
	return len;
}

static size_t
build_resp(uint8_t *out, uint16_t cid, uint16_t status, bool hdgst)
{
	struct nvme_tcp_rsp rsp;

	memset(&rsp, 0, sizeof(rsp));
	rsp.ch.pdu_type = NVME_TCP_PDU_CAPSULE_RESP;
	rsp.rccqe.cid = cid;
	rsp.rccqe.status = status;
	rsp.rccqe.cdw0 = 0xabcd;
	return build_pdu(out, &rsp, sizeof(rsp), hdgst, 0, NULL, 0, false);
}

/* Read one CapsuleCmd from the host: the SQE and the in-capsule data, if any. */
static void
peer_read_cmd(struct nvme_qpair *qp, struct nvme_cmd *cmd, uint8_t *data, uint32_t *dlen,
	      bool hdgst, bool ddgst)
{
	static uint8_t hdr[16384];
	struct nvme_tcp_common_hdr *ch = (struct nvme_tcp_common_hdr *)hdr;
	uint32_t crc, got, total;

	peer_read(qp, hdr, 8);
	UT_ASSERT_EQ_FATAL(ch->plen <= sizeof(hdr), true);
	UT_ASSERT_EQ_FATAL(ch->pdu_type, NVME_TCP_PDU_CAPSULE_CMD);
	UT_ASSERT_EQ(ch->hlen, 72);
	UT_ASSERT_EQ((ch->flags & NVME_TCP_F_HDGST) != 0, hdgst);
	peer_read(qp, hdr + 8, ch->plen - 8);
	memcpy(cmd, hdr + 8, sizeof(*cmd));
	if (hdgst) {
		memcpy(&got, hdr + 72, 4);
		UT_ASSERT_EQ(got, crc32c(hdr, 72, 0));
	}
	total = ch->plen;
	*dlen = 0;
	if (ch->pdo != 0) {
		*dlen = total - ch->pdo - (ddgst ? 4 : 0);
		memcpy(data, hdr + ch->pdo, *dlen);
		if (ddgst) {
			UT_ASSERT_EQ((ch->flags & NVME_TCP_F_DDGST) != 0, true);
			memcpy(&crc, hdr + total - 4, 4);
			UT_ASSERT_EQ(crc, crc32c(data, *dlen, 0));
		}
	}
}

/* ---- tests ---- */

static struct nvme_ns g_ns = {
	.ctrlr = &g_ctrlr,
	.info = {
		.nsid = 1, .num_blocks = 1024, .block_size = 512, .md_size = 8,
		.extended_lba = true, .xfer_block_size = 520,
		.dsm_supported = true, .write_zeroes_supported = true,
	},
};

static void
test_write_in_capsule(void)
{
	struct nvme_qpair *qp = make_qpair(8, true, true, 4096, 8192);
	static uint8_t buf[2 * 520], got[8192];
	struct iovec iov[2] = { { buf, 700 }, { buf + 700, 340 } };
	struct cpl_rec rec = { 0 };
	uint8_t resp[64];
	struct nvme_cmd cmd;
	const uint8_t *raw = (const uint8_t *)&cmd;
	uint32_t dlen;
	size_t n;
	int i;

	for (i = 0; i < (int)sizeof(buf); i++) {
		buf[i] = (uint8_t)(i * 13);
	}
	UT_ASSERT_EQ(nvme_ns_cmd_writev(qp, &g_ns, 10, 2, iov, 2, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, got, &dlen, true, true);
	UT_ASSERT_EQ(cmd.opc, NVME_OPC_WRITE);
	UT_ASSERT_EQ(nvme_cmd_slba(&cmd), 10);
	UT_ASSERT_EQ(nvme_cmd_nlb(&cmd), 2);
	/* Metadata travels with the data: 2 * (512 + 8) bytes, in the capsule. */
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 1040);
	UT_ASSERT_EQ(raw[39], NVME_SGL_ID_INCAPSULE);
	UT_ASSERT_EQ(dlen, 1040);
	CU_ASSERT(memcmp(got, buf, 1040) == 0);

	/* The response arrives one byte per event: one completion, at the last byte. */
	n = build_resp(resp, cmd.cid, 0, true);
	peer_send(qp, resp, n - 1, 1);
	UT_ASSERT_EQ(rec.calls, 0);
	peer_send(qp, resp + n - 1, 1, 1);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, 0);
	UT_ASSERT_EQ(rec.cdw0, 0xabcd);
	UT_ASSERT_EQ(qp->num_outstanding, 0);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_read_c2h(void)
{
	struct nvme_qpair *qp = make_qpair(8, true, true, 4096, 8192);
	static uint8_t buf[3 * 520], src[3 * 520], pdus[4096];
	struct iovec iov[3] = { { buf, 100 }, { buf + 100, 1000 }, { buf + 1100, 460 } };
	struct cpl_rec rec = { 0 };
	struct nvme_tcp_data_hdr h;
	struct nvme_cmd cmd;
	const uint8_t *raw = (const uint8_t *)&cmd;
	uint32_t dlen;
	size_t n = 0;
	int i;

	for (i = 0; i < (int)sizeof(src); i++) {
		src[i] = (uint8_t)(i * 7 + 1);
	}
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 3, iov, 3, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, true, true);
	UT_ASSERT_EQ(cmd.opc, NVME_OPC_READ);
	UT_ASSERT_EQ(dlen, 0);
	UT_ASSERT_EQ(raw[39], NVME_SGL_ID_TRANSPORT);
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 1560);

	/* Two C2HData PDUs, the first with padding before its data (PDO 64), then the response. */
	memset(&h, 0, sizeof(h));
	h.ch.pdu_type = NVME_TCP_PDU_C2H_DATA;
	h.cccid = cmd.cid;
	h.datao = 0;
	h.datal = 1000;
	n += build_pdu(pdus + n, &h, sizeof(h), true, 64, src, 1000, true);
	h.ch.flags = NVME_TCP_F_DATA_LAST;
	h.datao = 1000;
	h.datal = 560;
	n += build_pdu(pdus + n, &h, sizeof(h), true, 28, src + 1000, 560, true);
	n += build_resp(pdus + n, cmd.cid, 0, true);
	/* In odd pieces, so headers, pads, data and digests all straddle events. */
	peer_send(qp, pdus, n, 37);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, 0);
	CU_ASSERT(memcmp(buf, src, sizeof(src)) == 0);

	/* Large data goes straight into the buffer; SUCCESS flag: no response follows. */
	memset(buf, 0, sizeof(buf));
	rec.calls = 0;
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 3, iov, 3, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, true, true);
	memset(&h, 0, sizeof(h));
	h.ch.pdu_type = NVME_TCP_PDU_C2H_DATA;
	h.ch.flags = NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS;
	h.cccid = cmd.cid;
	h.datal = 1560;
	n = build_pdu(pdus, &h, sizeof(h), true, 28, src, 1560, true);
	peer_send(qp, pdus, 28, 28);
	peer_send(qp, pdus + 28, n - 28, n);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, 0);
	CU_ASSERT(memcmp(buf, src, sizeof(src)) == 0);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_read_ddgst_error(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, true, 4096, 8192);
	static uint8_t buf[520], src[520], pdus[2048];
	struct iovec iov = { buf, sizeof(buf) };
	struct cpl_rec rec = { 0 };
	struct nvme_tcp_data_hdr h;
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	memset(src, 0x77, sizeof(src));
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 5, 1, &iov, 1, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, false, true);
	memset(&h, 0, sizeof(h));
	h.ch.pdu_type = NVME_TCP_PDU_C2H_DATA;
	h.ch.flags = NVME_TCP_F_DATA_LAST;
	h.cccid = cmd.cid;
	h.datal = 520;
	n = build_pdu(pdus, &h, sizeof(h), false, 24, src, 520, true);
	pdus[n - 1] ^= 1; /* corrupt the data digest */
	n += build_resp(pdus + n, cmd.cid, 0, false);
	peer_send(qp, pdus, n, n);
	/* The command fails; the connection stays. */
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_TRANSIENT_TRANSPORT_ERROR));
	UT_ASSERT_EQ(qp->state, QPAIR_LIVE);
	UT_ASSERT_EQ(g_lost_calls, 0);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_hdgst_error(void)
{
	struct nvme_qpair *qp = make_qpair(8, true, false, 4096, 8192);
	struct cpl_rec rec = { 0 }, rec2 = { 0 };
	struct nvme_tcp_term_req_hdr term;
	uint8_t resp[64];
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec), 0);
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec2), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, true, false);
	peer_read_cmd(qp, &cmd, NULL, &dlen, true, false);
	n = build_resp(resp, cmd.cid, 0, true);
	resp[25] ^= 0xff;
	peer_send(qp, resp, n, n);
	/* Fatal: everything outstanding fails with a path error, the owner hears of it. */
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec2.calls, 1);
	UT_ASSERT_EQ(rec.status, NVME_STATUS_HOST_PATH_ERROR);
	UT_ASSERT_EQ(rec2.status, NVME_STATUS_HOST_PATH_ERROR);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	UT_ASSERT_EQ(g_lost_calls, 1);
	CU_ASSERT(strstr(qp->fail_reason, "header digest") != NULL);
	/* And the controller was told why. */
	peer_read(NULL, &term, sizeof(term));
	UT_ASSERT_EQ(term.ch.pdu_type, NVME_TCP_PDU_H2C_TERM_REQ);
	UT_ASSERT_EQ(term.fes, NVME_TCP_FES_HDR_DIGEST_ERROR);
	/* Fail fast afterwards (the controller stub does not reconnect). */
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec), -ENXIO);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_write_r2t(void)
{
	struct nvme_qpair *qp = make_qpair(8, true, true, 1024, 4096);
	static uint8_t buf[20 * 520], got[20 * 520];
	struct iovec iov[2] = { { buf, 5000 }, { buf + 5000, sizeof(buf) - 5000 } };
	struct cpl_rec rec = { 0 };
	struct nvme_tcp_r2t_hdr r2t;
	struct nvme_tcp_data_hdr h2c;
	uint8_t pdu[64], hdr[64];
	struct nvme_cmd cmd;
	const uint8_t *raw = (const uint8_t *)&cmd;
	uint32_t dlen, off = 0, crc, want, r2to, r2tl;
	size_t n;
	int i, pdus = 0;

	for (i = 0; i < (int)sizeof(buf); i++) {
		buf[i] = (uint8_t)(i * 31 + 5);
	}
	UT_ASSERT_EQ(nvme_ns_cmd_writev(qp, &g_ns, 100, 20, iov, 2, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, true, true);
	/* Beyond the in-capsule size: no data in the capsule, a transport SGL. */
	UT_ASSERT_EQ(dlen, 0);
	UT_ASSERT_EQ(raw[39], NVME_SGL_ID_TRANSPORT);
	UT_ASSERT_EQ(cmd.dptr.sgl1.unkeyed.length, 10400);

	/* Two R2Ts, each answered by H2CData PDUs of at most MAXH2CDATA bytes. */
	for (r2to = 0; r2to < 10400; r2to += r2tl) {
		r2tl = r2to == 0 ? 6000 : 10400 - r2to;
		memset(&r2t, 0, sizeof(r2t));
		r2t.ch.pdu_type = NVME_TCP_PDU_R2T;
		r2t.cccid = cmd.cid;
		r2t.ttag = (uint16_t)(7 + r2to);
		r2t.r2to = r2to;
		r2t.r2tl = r2tl;
		n = build_pdu(pdu, &r2t, sizeof(r2t), true, 0, NULL, 0, false);
		peer_send(qp, pdu, n, 5);
		while (off < r2to + r2tl) {
			peer_read(qp, hdr, 28);
			memcpy(&h2c, hdr, sizeof(h2c));
			UT_ASSERT_EQ_FATAL(h2c.ch.pdu_type, NVME_TCP_PDU_H2C_DATA);
			UT_ASSERT_EQ(h2c.cccid, cmd.cid);
			UT_ASSERT_EQ(h2c.ttag, r2t.ttag);
			UT_ASSERT_EQ_FATAL(h2c.datao, off);
			CU_ASSERT(h2c.datal <= 4096);
			UT_ASSERT_EQ(h2c.ch.pdo, 28);
			UT_ASSERT_EQ((h2c.ch.flags & NVME_TCP_F_DATA_LAST) != 0,
				     off + h2c.datal == r2to + r2tl);
			memcpy(&crc, hdr + 24, 4);
			UT_ASSERT_EQ(crc, crc32c(hdr, 24, 0));
			peer_read(qp, got + off, h2c.datal);
			peer_read(qp, &crc, 4);
			UT_ASSERT_EQ(crc, crc32c(got + off, h2c.datal, 0));
			off += h2c.datal;
			pdus++;
		}
	}
	UT_ASSERT_EQ(pdus, 4); /* 4096 + 1904, then 4096 + 304 */
	CU_ASSERT(memcmp(got, buf, sizeof(buf)) == 0);
	UT_ASSERT_EQ(rec.calls, 0);
	n = build_resp(pdu, cmd.cid, 0, true);
	peer_send(qp, pdu, n, n);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, 0);
	want = 0;
	UT_ASSERT_EQ(qp->num_outstanding, want);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_eof_and_pool(void)
{
	struct nvme_qpair *qp = make_qpair(4, false, false, 4096, 8192);
	struct cpl_rec rec[4] = { 0 };
	int i;

	/* 4 entries: 3 commands at most. */
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec[i]), 0);
	}
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec[3]), -ENOMEM);
	nvme_tcp_flush(qp);
	close_peer();
	tcp_on_event(qp, THREAD_FD_IN | THREAD_FD_HUP);
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(rec[i].calls, 1);
		UT_ASSERT_EQ(rec[i].status, NVME_STATUS_HOST_PATH_ERROR);
	}
	UT_ASSERT_EQ(rec[3].calls, 0);
	UT_ASSERT_EQ(g_lost_calls, 1);
	/* "closed by the controller" or "reset by peer", depending on unread input. */
	CU_ASSERT(strstr(qp->fail_reason, "closed") != NULL ||
		  strstr(qp->fail_reason, "reset") != NULL);
	nvme_qpair_destroy(qp);
}

static void
test_timeout(void)
{
	struct nvme_qpair *qp;
	struct cpl_rec a = { 0 }, b = { 0 };
	uint32_t saved = g_ctrlr.opts.command_timeout_ms;

	g_ctrlr.opts.command_timeout_ms = 1;
	qp = make_qpair(8, false, false, 4096, 8192);
	g_ctrlr.opts.command_timeout_ms = saved;
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &a), 0);
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &b), 0);
	usleep(5000);
	qpair_poll(qp);
	/* The oldest timed out; the queue is dropped and everything on it fails. */
	UT_ASSERT_EQ(a.calls, 1);
	UT_ASSERT_EQ(a.status, NVME_STATUS_ABORTED_BY_HOST);
	UT_ASSERT_EQ(b.calls, 1);
	UT_ASSERT_EQ(b.status, NVME_STATUS_HOST_PATH_ERROR);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	CU_ASSERT(qp->timed_out_seen);
	UT_ASSERT_EQ(g_lost_calls, 1);
	nvme_qpair_destroy(qp);
	close_peer();
}

/*
 * Pretend the transport just finished ICReq/ICResp on an I/O queue for
 * cntlid 5, submit a read (it waits for the queue) and read the Connect.
 */
static void
start_io_connect(struct nvme_qpair *qp, struct cpl_rec *rec, struct nvme_cmd *cmd, uint8_t *data,
		 uint32_t *dlen)
{
	static uint8_t buf[520];
	static struct iovec iov = { buf, sizeof(buf) };

	qp->state = QPAIR_CONNECTING;
	qp->cntlid = 5;
	nvme_qpair_transport_ready(qp);
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 1, &iov, 1, 0, rec_cb, rec), 0);
	peer_read_cmd(qp, cmd, data, dlen, false, false);
}

static void
test_fabrics_connect(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	static uint8_t data[4096];
	struct nvme_connect_data *cd = (struct nvme_connect_data *)data;
	struct nvme_connect_cmd *cc;
	struct cpl_rec rec = { 0 };
	uint8_t resp[64];
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	start_io_connect(qp, &rec, &cmd, data, &dlen);
	cc = (struct nvme_connect_cmd *)&cmd;
	UT_ASSERT_EQ(cc->opc, NVME_OPC_FABRICS);
	UT_ASSERT_EQ(cc->fctype, NVME_FCTYPE_CONNECT);
	UT_ASSERT_EQ(cc->qid, 1);
	UT_ASSERT_EQ(cc->sqsize, 7);
	UT_ASSERT_EQ(dlen, 1024);
	UT_ASSERT_EQ(cd->cntlid, 5);
	UT_ASSERT_STR_EQ(cd->subnqn, "nqn.2016-06.io.gga:ut");
	UT_ASSERT_STR_EQ(cd->hostnqn, "nqn.2016-06.io.gga:host");
	CU_ASSERT(!peer_has_data());

	n = build_resp(resp, cmd.cid, 0, false);
	/* An I/O queue's Connect answers with the cntlid of its controller. */
	((struct nvme_tcp_rsp *)resp)->rccqe.cdw0 = 5;
	peer_send(qp, resp, n, 3);
	UT_ASSERT_EQ(qp->state, QPAIR_LIVE);
	UT_ASSERT_EQ(g_connect_calls, 1);
	UT_ASSERT_EQ(g_connect_rc, 0);
	/* Now the read goes out. */
	peer_read_cmd(qp, &cmd, NULL, &dlen, false, false);
	UT_ASSERT_EQ(cmd.opc, NVME_OPC_READ);
	nvme_qpair_destroy(qp);
	/* Destroying fails what is left, with SQ deletion. */
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, NVME_STATUS_SQ_DELETION);
	close_peer();
}

static void
test_fabrics_connect_refused(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	static uint8_t data[4096];
	struct nvme_tcp_rsp rsp;
	uint8_t pdu[64];
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	qp->state = QPAIR_CONNECTING;
	nvme_qpair_transport_ready(qp);
	peer_read_cmd(qp, &cmd, data, &dlen, false, false);
	memset(&rsp, 0, sizeof(rsp));
	rsp.ch.pdu_type = NVME_TCP_PDU_CAPSULE_RESP;
	rsp.rccqe.cid = cmd.cid;
	rsp.rccqe.status = NVME_STATUS(NVME_SCT_COMMAND_SPECIFIC,
				       NVME_SC_CONNECT_INVALID_PARAMETERS);
	rsp.rccqe.cdw0 = NVME_CONNECT_INVALID_PARAM(NVME_CONNECT_IATTR_DATA,
						    offsetof(struct nvme_connect_data, subnqn));
	n = build_pdu(pdu, &rsp, sizeof(rsp), false, 0, NULL, 0, false);
	peer_send(qp, pdu, n, n);
	UT_ASSERT_EQ(g_connect_calls, 1);
	UT_ASSERT_EQ(g_connect_rc, -ENODEV);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	CU_ASSERT(strstr(qp->fail_reason, "Connect Invalid Parameters") != NULL);
	CU_ASSERT(strstr(qp->fail_reason, "unknown subsystem NQN") != NULL);
	nvme_qpair_destroy(qp);
	close_peer();
}

/* An I/O queue whose Connect names another controller is not used. */
static void
test_fabrics_connect_other_cntlid(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	static uint8_t data[4096];
	struct cpl_rec rec = { 0 };
	uint8_t resp[64];
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	start_io_connect(qp, &rec, &cmd, data, &dlen);
	n = build_resp(resp, cmd.cid, 0, false);
	((struct nvme_tcp_rsp *)resp)->rccqe.cdw0 = 6;
	peer_send(qp, resp, n, n);
	UT_ASSERT_EQ(g_connect_calls, 1);
	UT_ASSERT_EQ(g_connect_rc, -EPROTO);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	CU_ASSERT(strstr(qp->fail_reason, "cntlid 6, not 5") != NULL);
	/* The read that waited for the queue never went out: it fails. */
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, NVME_STATUS_HOST_PATH_ERROR);
	nvme_qpair_destroy(qp);
	close_peer();
}

/*
 * A completion sent twice: the slot is used again at once (most recently
 * freed first), but the second completion must not complete the new command.
 */
static void
test_completion_twice(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	struct cpl_rec a = { 0 }, b = { 0 };
	struct nvme_cmd cmd_a, cmd_b;
	uint8_t resp[64];
	uint32_t dlen;
	size_t n;

	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &a), 0);
	peer_read_cmd(qp, &cmd_a, NULL, &dlen, false, false);
	n = build_resp(resp, cmd_a.cid, 0, false);
	peer_send(qp, resp, n, n);
	UT_ASSERT_EQ(a.calls, 1);
	UT_ASSERT_EQ(a.status, 0);
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &b), 0);
	peer_read_cmd(qp, &cmd_b, NULL, &dlen, false, false);
	/* Same slot, another command id. */
	UT_ASSERT_EQ(cmd_b.cid & qp->cid_slot_mask, cmd_a.cid & qp->cid_slot_mask);
	CU_ASSERT(cmd_b.cid != cmd_a.cid);
	peer_send(qp, resp, n, n);
	UT_ASSERT_EQ(a.calls, 1);
	UT_ASSERT_EQ(b.calls, 1);
	UT_ASSERT_EQ(b.status, NVME_STATUS_HOST_PATH_ERROR);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	CU_ASSERT(strstr(qp->fail_reason, "unknown command id") != NULL);
	nvme_qpair_destroy(qp);
	close_peer();
}

/* A write reported done before the controller asked for its data did not happen. */
static void
test_write_done_without_data(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 1024, 4096);
	static uint8_t buf[4 * 520];
	struct iovec iov = { buf, sizeof(buf) };
	struct cpl_rec rec = { 0 };
	struct nvme_tcp_r2t_hdr r2t;
	uint8_t pdu[64], hdr[24];
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	UT_ASSERT_EQ(nvme_ns_cmd_writev(qp, &g_ns, 0, 4, &iov, 1, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, false, false);
	UT_ASSERT_EQ(dlen, 0);
	n = build_resp(pdu, cmd.cid, 0, false);
	peer_send(qp, pdu, n, n);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_TRANSFER_ERROR));

	/* Half of it asked for, then success: the same. */
	UT_ASSERT_EQ(nvme_ns_cmd_writev(qp, &g_ns, 0, 4, &iov, 1, 0, rec_cb, &rec), 0);
	peer_read_cmd(qp, &cmd, NULL, &dlen, false, false);
	memset(&r2t, 0, sizeof(r2t));
	r2t.ch.pdu_type = NVME_TCP_PDU_R2T;
	r2t.cccid = cmd.cid;
	r2t.r2tl = 1040;
	n = build_pdu(pdu, &r2t, sizeof(r2t), false, 0, NULL, 0, false);
	peer_send(qp, pdu, n, n);
	peer_read(qp, hdr, sizeof(hdr));
	peer_read(qp, buf, 1040);
	n = build_resp(pdu, cmd.cid, 0, false);
	peer_send(qp, pdu, n, n);
	UT_ASSERT_EQ(rec.calls, 2);
	UT_ASSERT_EQ(rec.status, NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_TRANSFER_ERROR));
	/* The queue itself is fine. */
	UT_ASSERT_EQ(qp->state, QPAIR_LIVE);
	nvme_qpair_destroy(qp);
	close_peer();
}

/*
 * C2HData with SUCCESS for a read whose command capsule has not left yet (a
 * controller guessing command ids): the request must stay until its PDU is
 * sent, or its slot would be reused under the queued PDU.
 */
static void
test_c2h_success_before_cmd_sent(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	static uint8_t buf[520], src[520], pdu[1024];
	struct iovec iov = { buf, sizeof(buf) };
	struct cpl_rec rec = { 0 };
	struct nvme_tcp_data_hdr h;
	struct nvme_request *req;
	struct nvme_cmd cmd;
	uint32_t dlen;
	size_t n;

	memset(src, 0x5a, sizeof(src));
	/* The submit takes the head of the free list. */
	req = TAILQ_FIRST(&qp->free_reqs);
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 1, &iov, 1, 0, rec_cb, &rec), 0);
	CU_ASSERT_FATAL(req->state == REQ_OUTSTANDING && nvme_tcp_req(req)->tx.queued);
	memset(&h, 0, sizeof(h));
	h.ch.pdu_type = NVME_TCP_PDU_C2H_DATA;
	h.ch.flags = NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS;
	h.cccid = req->cid;
	h.datal = 520;
	n = build_pdu(pdu, &h, sizeof(h), false, 24, src, 520, false);
	peer_send(qp, pdu, n, n);
	UT_ASSERT_EQ(rec.calls, 0);
	/* The capsule leaves: now the read completes, and its slot is free. */
	peer_read_cmd(qp, &cmd, NULL, &dlen, false, false);
	UT_ASSERT_EQ(cmd.cid, h.cccid);
	UT_ASSERT_EQ(rec.calls, 1);
	UT_ASSERT_EQ(rec.status, 0);
	UT_ASSERT_EQ(qp->num_outstanding, 0);
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_free_in_callback(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	struct cpl_rec a = { 0 }, b = { 0 };

	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &a), 0);
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &b), 0);
	/* The first failed completion frees the queue pair; the second still completes. */
	a.free_qp = qp;
	close_peer();
	tcp_on_event(qp, THREAD_FD_IN);
	UT_ASSERT_EQ(a.calls, 1);
	UT_ASSERT_EQ(b.calls, 1);
	UT_ASSERT_EQ(b.status, NVME_STATUS_HOST_PATH_ERROR);
}

static void
test_protocol_errors(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, false, 4096, 8192);
	struct cpl_rec rec = { 0 };
	uint8_t resp[64];
	size_t n;

	/* A response for a command id that is not outstanding. */
	UT_ASSERT_EQ(nvme_ns_cmd_flush(qp, &g_ns, rec_cb, &rec), 0);
	nvme_tcp_flush(qp);
	n = build_resp(resp, 5, 0, false);
	peer_send(qp, resp, n, n);
	UT_ASSERT_EQ(qp->state, QPAIR_DISCONNECTED);
	UT_ASSERT_EQ(rec.status, NVME_STATUS_HOST_PATH_ERROR);
	CU_ASSERT(strstr(qp->fail_reason, "unknown command id") != NULL);
	nvme_qpair_destroy(qp);
	close_peer();

	/* Argument checks that need no connection. */
	qp = make_qpair(8, false, false, 4096, 8192);
	UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 0, NULL, 0, 0, rec_cb, &rec), -EINVAL);
	UT_ASSERT_EQ(nvme_ns_cmd_write_zeroes(qp, &g_ns, 0, 65537, rec_cb, &rec), -EINVAL);
	g_max_xfer = 4096;
	{
		static uint8_t big[16 * 520];
		struct iovec iov = { big, sizeof(big) };

		/* 16 blocks of 520 bytes exceed a 4 KiB MDTS. */
		UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 16, &iov, 1, 0, rec_cb, &rec),
			     -EINVAL);
		/* A buffer too short for the blocks. */
		g_max_xfer = UINT32_MAX;
		iov.iov_len = 520;
		UT_ASSERT_EQ(nvme_ns_cmd_readv(qp, &g_ns, 0, 2, &iov, 1, 0, rec_cb, &rec), -EINVAL);
	}
	g_ns.info.dsm_supported = false;
	UT_ASSERT_EQ(nvme_ns_cmd_deallocate(qp, &g_ns, 0, 8, rec_cb, &rec), -ENOTSUP);
	g_ns.info.dsm_supported = true;
	nvme_qpair_destroy(qp);
	close_peer();
}

static void
test_deallocate(void)
{
	struct nvme_qpair *qp = make_qpair(8, false, true, 4096, 8192);
	struct cpl_rec rec = { 0 };
	struct nvme_dsm_range range;
	uint8_t data[64];
	struct nvme_cmd cmd;
	uint32_t dlen;

	UT_ASSERT_EQ(nvme_ns_cmd_deallocate(qp, &g_ns, 0x100000000ull, 0xffffffffu, rec_cb, &rec),
		     0);
	peer_read_cmd(qp, &cmd, data, &dlen, false, true);
	UT_ASSERT_EQ(cmd.opc, NVME_OPC_DATASET_MANAGEMENT);
	UT_ASSERT_EQ(cmd.cdw10, 0);
	UT_ASSERT_EQ(cmd.cdw11, NVME_DSM_ATTR_DEALLOCATE);
	UT_ASSERT_EQ(dlen, 16);
	memcpy(&range, data, sizeof(range));
	UT_ASSERT_EQ(range.starting_lba, 0x100000000ull);
	UT_ASSERT_EQ(range.length, 0xffffffffu);
	nvme_qpair_destroy(qp);
	close_peer();
}

/*
 * The TCP queue pair embeds the generic one, set up by the transport's
 * qpair_init; each request is followed by its TCP state, within its stride:
 * filling one request's state leaves the next request intact.
 */
static void
test_transport_layout(void)
{
	struct nvme_qpair *qp;
	struct nvme_request *req;
	uint32_t i;

	qp = nvme_qpair_create(&g_ctrlr, 1, 8, false);
	CU_ASSERT_FATAL(qp != NULL);
	UT_ASSERT_EQ(qp->num_reqs, 7);
	UT_ASSERT_EQ(nvme_tcp_conn(qp)->fd, -1);
	CU_ASSERT(nvme_tcp_conn(qp)->rbuf != NULL);
	CU_ASSERT(qp->req_stride >= sizeof(struct nvme_request) + sizeof(struct nvme_tcp_req));
	CU_ASSERT(qp->connect_req == nvme_qpair_req(qp, qp->num_reqs));
	for (i = 0; i <= qp->num_reqs; i++) {
		req = nvme_qpair_req(qp, i);
		memset(nvme_tcp_req(req), 0xa5, sizeof(struct nvme_tcp_req));
	}
	for (i = 0; i <= qp->num_reqs; i++) {
		req = nvme_qpair_req(qp, i);
		CU_ASSERT(req->qpair == qp);
		UT_ASSERT_EQ(req->cid, i);
		UT_ASSERT_EQ(nvme_request_slot(req), i);
		UT_ASSERT_EQ((uintptr_t)nvme_request_ctx(req) % 16, 0);
		CU_ASSERT((uint8_t *)nvme_tcp_req(req) + sizeof(struct nvme_tcp_req) <=
			  (uint8_t *)req + qp->req_stride);
		memset(nvme_tcp_req(req), 0, sizeof(struct nvme_tcp_req));
	}
	nvme_qpair_destroy(qp);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_write_in_capsule),
		UT_TEST(test_read_c2h),
		UT_TEST(test_read_ddgst_error),
		UT_TEST(test_hdgst_error),
		UT_TEST(test_write_r2t),
		UT_TEST(test_eof_and_pool),
		UT_TEST(test_timeout),
		UT_TEST(test_fabrics_connect),
		UT_TEST(test_fabrics_connect_refused),
		UT_TEST(test_fabrics_connect_other_cntlid),
		UT_TEST(test_completion_twice),
		UT_TEST(test_write_done_without_data),
		UT_TEST(test_c2h_success_before_cmd_sent),
		UT_TEST(test_free_in_callback),
		UT_TEST(test_protocol_errors),
		UT_TEST(test_deallocate),
		UT_TEST(test_transport_layout),
	};

	return ut_run("nvme_qpair", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
