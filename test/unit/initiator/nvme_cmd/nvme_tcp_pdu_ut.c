/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of NVMe/TCP PDU building and checking (initiator/nvme_tcp_pdu.c):
 * lengths, offsets, flags, digests and padding of what the host sends, and
 * the header checks of what it receives.
 */
#include <errno.h>
#include <string.h>

#include "gga_ut.h"
#include "initiator/nvme_internal.h"

void nvme_tcp_pdu_tests(const struct ut_test **tests, size_t *count);

static uint32_t
le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void
test_crc32c(void)
{
	static const char check[] = "123456789";
	const char *a = "1234", *b = "56789";

	/* The CRC-32C check value. */
	UT_ASSERT_EQ(crc32c(check, 9, 0), 0xe3069283u);
	/* Continuation over pieces equals the whole. */
	UT_ASSERT_EQ(crc32c(b, 5, crc32c(a, 4, 0)), 0xe3069283u);
}

static void
test_icreq(void)
{
	struct nvme_tcp_icreq icreq;
	const uint8_t *raw = (const uint8_t *)&icreq;

	memset(&icreq, 0xff, sizeof(icreq));
	nvme_tcp_build_icreq(&icreq, true, false);
	UT_ASSERT_EQ(raw[0], NVME_TCP_PDU_ICREQ);
	UT_ASSERT_EQ(raw[1], 0);
	UT_ASSERT_EQ(raw[2], 128);
	UT_ASSERT_EQ(raw[3], 0);
	UT_ASSERT_EQ(le32_at(raw + 4), 128);
	UT_ASSERT_EQ(raw[8] | raw[9] << 8, 0); /* PFV */
	UT_ASSERT_EQ(raw[10], 0);              /* HPDA */
	UT_ASSERT_EQ(raw[11], NVME_TCP_DGST_HDR_ENABLE);
	UT_ASSERT_EQ(le32_at(raw + 12), 0); /* MAXR2T, 0-based: one */
	UT_ASSERT_EQ(raw[127], 0);
	nvme_tcp_build_icreq(&icreq, true, true);
	UT_ASSERT_EQ(raw[11], 3);
}

static void
test_icresp(void)
{
	struct nvme_tcp_icresp r;
	uint32_t cpda = 99, maxh2c = 0;
	const char *why = NULL;

	memset(&r, 0, sizeof(r));
	r.ch.pdu_type = NVME_TCP_PDU_ICRESP;
	r.ch.hlen = 128;
	r.ch.plen = 128;
	r.cpda = 1;
	r.dgst = NVME_TCP_DGST_HDR_ENABLE | NVME_TCP_DGST_DATA_ENABLE;
	r.maxh2cdata = 131072;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, true, true, &cpda, &maxh2c, &why), 0);
	UT_ASSERT_EQ(cpda, 1);
	UT_ASSERT_EQ(maxh2c, 131072);

	/* Digests must come back exactly as requested. */
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, true, &cpda, &maxh2c, &why), -EPROTO);
	CU_ASSERT(why != NULL && strstr(why, "header digests") != NULL);
	r.dgst = 0;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, true, false, &cpda, &maxh2c, &why), -EPROTO);
	CU_ASSERT(why != NULL && strstr(why, "refused header") != NULL);
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), 0);

	r.maxh2cdata = 2048;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), -EPROTO);
	r.maxh2cdata = 4098;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), -EPROTO);
	r.maxh2cdata = 4096;
	r.pfv = 1;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), -EPROTO);
	r.pfv = 0;
	r.cpda = 32;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), -EPROTO);
	r.cpda = 0;
	r.ch.plen = 132;
	UT_ASSERT_EQ(nvme_tcp_check_icresp(&r, false, false, &cpda, &maxh2c, &why), -EPROTO);
}

static void
test_cmd_hdr(void)
{
	uint8_t buf[NVME_TCP_TX_HDR_SIZE];
	struct nvme_tcp_cmd *pdu = (struct nvme_tcp_cmd *)buf;
	struct nvme_cmd cmd;
	uint32_t len;

	nvme_cmd_build_rw(&cmd, NVME_OPC_READ, 1, 0, 8);
	cmd.cid = 17;

	/* No data, no digests: header only. */
	len = nvme_tcp_build_cmd_hdr(buf, &cmd, 0, false, false, 0);
	UT_ASSERT_EQ(len, 72);
	UT_ASSERT_EQ(pdu->ch.pdu_type, NVME_TCP_PDU_CAPSULE_CMD);
	UT_ASSERT_EQ(pdu->ch.flags, 0);
	UT_ASSERT_EQ(pdu->ch.hlen, 72);
	UT_ASSERT_EQ(pdu->ch.pdo, 0);
	UT_ASSERT_EQ(pdu->ch.plen, 72);
	UT_ASSERT_EQ(pdu->ccsqe.cid, 17);

	/* Header digest, no data: the digest follows the header; data digest flag stays off. */
	len = nvme_tcp_build_cmd_hdr(buf, &cmd, 0, true, true, 0);
	UT_ASSERT_EQ(len, 76);
	UT_ASSERT_EQ(pdu->ch.flags, NVME_TCP_F_HDGST);
	UT_ASSERT_EQ(pdu->ch.plen, 76);
	UT_ASSERT_EQ(le32_at(buf + 72), crc32c(buf, 72, 0));

	/* In-capsule data with both digests: PDO after the header digest, DDGST counted in PLEN. */
	len = nvme_tcp_build_cmd_hdr(buf, &cmd, 4096, true, true, 0);
	UT_ASSERT_EQ(len, 76);
	UT_ASSERT_EQ(pdu->ch.flags, NVME_TCP_F_HDGST | NVME_TCP_F_DDGST);
	UT_ASSERT_EQ(pdu->ch.pdo, 76);
	UT_ASSERT_EQ(pdu->ch.plen, 76 + 4096 + 4);
	UT_ASSERT_EQ(le32_at(buf + 72), crc32c(buf, 72, 0));

	/* CPDA 7: data aligned to 32 bytes, zero padding between digest and data. */
	memset(buf, 0xee, sizeof(buf));
	len = nvme_tcp_build_cmd_hdr(buf, &cmd, 512, true, false, 7);
	UT_ASSERT_EQ(len, 96);
	UT_ASSERT_EQ(pdu->ch.pdo, 96);
	UT_ASSERT_EQ(pdu->ch.plen, 96 + 512);
	UT_ASSERT_EQ(buf[76], 0);
	UT_ASSERT_EQ(buf[95], 0);
	UT_ASSERT_EQ(le32_at(buf + 72), crc32c(buf, 72, 0));

	/* No header digest, data: PDO is the header length. */
	len = nvme_tcp_build_cmd_hdr(buf, &cmd, 100, false, false, 0);
	UT_ASSERT_EQ(len, 72);
	UT_ASSERT_EQ(pdu->ch.pdo, 72);
	UT_ASSERT_EQ(pdu->ch.plen, 172);
}

static void
test_h2c_hdr(void)
{
	uint8_t buf[NVME_TCP_TX_HDR_SIZE];
	struct nvme_tcp_data_hdr *h = (struct nvme_tcp_data_hdr *)buf;
	uint32_t len;

	len = nvme_tcp_build_h2c_hdr(buf, 5, 0x1234, 8192, 4096, false, false, true, 0);
	UT_ASSERT_EQ(len, 24);
	UT_ASSERT_EQ(h->ch.pdu_type, NVME_TCP_PDU_H2C_DATA);
	UT_ASSERT_EQ(h->ch.flags, NVME_TCP_F_DDGST);
	UT_ASSERT_EQ(h->ch.hlen, 24);
	UT_ASSERT_EQ(h->ch.pdo, 24);
	UT_ASSERT_EQ(h->ch.plen, 24 + 4096 + 4);
	UT_ASSERT_EQ(h->cccid, 5);
	UT_ASSERT_EQ(h->ttag, 0x1234);
	UT_ASSERT_EQ(h->datao, 8192);
	UT_ASSERT_EQ(h->datal, 4096);

	len = nvme_tcp_build_h2c_hdr(buf, 5, 1, 0, 100, true, true, false, 0);
	UT_ASSERT_EQ(len, 28);
	UT_ASSERT_EQ(h->ch.flags, NVME_TCP_F_DATA_LAST | NVME_TCP_F_HDGST);
	UT_ASSERT_EQ(h->ch.pdo, 28);
	UT_ASSERT_EQ(h->ch.plen, 128);
	UT_ASSERT_EQ(le32_at(buf + 24), crc32c(buf, 24, 0));
}

static void
test_term_req(void)
{
	uint8_t buf[NVME_TCP_ICREQ_HLEN + NVME_TCP_TERM_REQ_MAX_DATA];
	struct nvme_tcp_term_req_hdr *t = (struct nvme_tcp_term_req_hdr *)buf;
	uint8_t bad[200];
	uint32_t plen;

	memset(bad, 0x5a, sizeof(bad));
	plen = nvme_tcp_build_term_req(buf, NVME_TCP_FES_HDR_DIGEST_ERROR, 0x01020304, bad,
				       sizeof(bad));
	/* At most 128 bytes of the offending header travel back. */
	UT_ASSERT_EQ(plen, 24 + 128);
	UT_ASSERT_EQ(t->ch.pdu_type, NVME_TCP_PDU_H2C_TERM_REQ);
	UT_ASSERT_EQ(t->ch.hlen, 24);
	UT_ASSERT_EQ(t->ch.pdo, 0);
	UT_ASSERT_EQ(t->ch.plen, 152);
	UT_ASSERT_EQ(t->fes, NVME_TCP_FES_HDR_DIGEST_ERROR);
	UT_ASSERT_EQ(nvme_tcp_term_req_fei(t), 0x01020304);
	UT_ASSERT_EQ(buf[24], 0x5a);
	UT_ASSERT_EQ(buf[151], 0x5a);
}

static void
test_check_ch(void)
{
	struct nvme_tcp_common_hdr ch;
	uint32_t total = 0, fei = 0;

	/* CapsuleResp without and with header digest. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_RESP, 0, 24, 0, 24 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei), 0);
	UT_ASSERT_EQ(total, 24);
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(fei, 1);
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_RESP, NVME_TCP_F_HDGST, 24, 0, 28 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, true, &total, &fei), 0);
	UT_ASSERT_EQ(total, 28);
	/* A response never carries a data digest. */
	ch.flags |= NVME_TCP_F_DDGST;
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, true, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	/* Wrong hlen, wrong plen. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_RESP, 0, 32, 0, 32 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(fei, 2);
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_RESP, 0, 24, 0, 30 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(fei, 4);

	/* C2HData: PDO must leave room for the header digest; data digest as negotiated. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_C2H_DATA,
					   NVME_TCP_F_HDGST | NVME_TCP_F_DDGST, 24, 28,
					   28 + 512 + 4 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, true, &total, &fei), 0);
	UT_ASSERT_EQ(total, 28);
	ch.pdo = 24;
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, true, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(fei, 3);
	ch.pdo = 28;
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	/* C2HData with no data at all. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_C2H_DATA, 0, 24, 24, 24 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);

	/* Host-to-controller types are never valid on the host. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_CMD, 0, 72, 0, 72 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);
	UT_ASSERT_EQ(fei, 0);

	/* ICResp only when expected, and nothing else while it is. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_ICRESP, 0, 128, 0, 128 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, true, false, false, &total, &fei), 0);
	UT_ASSERT_EQ(total, 128);
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, false, &total, &fei),
		     NVME_TCP_FES_PDU_SEQUENCE_ERROR);
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_CAPSULE_RESP, 0, 24, 0, 24 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, true, false, false, &total, &fei),
		     NVME_TCP_FES_PDU_SEQUENCE_ERROR);

	/* A TermReq: any time, no digests, 24..152 bytes. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_C2H_TERM_REQ, 0, 24, 0, 24 + 72 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, true, true, true, &total, &fei), 0);
	UT_ASSERT_EQ(total, 24);
	ch.plen = 153;
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, true, true, &total, &fei),
		     NVME_TCP_FES_INVALID_PDU_HDR_FIELD);

	/* R2T. */
	ch = (struct nvme_tcp_common_hdr){ NVME_TCP_PDU_R2T, 0, 24, 0, 24 };
	UT_ASSERT_EQ(nvme_tcp_check_ch(&ch, false, false, true, &total, &fei), 0);
}

static void
test_iov_range(void)
{
	uint8_t a[10], b[20], c[30], flat[60];
	struct iovec iov[3] = { { a, 10 }, { b, 20 }, { c, 30 } };
	struct iovec out[4];
	int n, i;

	for (i = 0; i < 60; i++) {
		flat[i] = (uint8_t)(i * 7 + 3);
	}
	iov_from_buf(iov, 3, flat, 60);

	n = nvme_iov_range(iov, 3, 5, 30, out, 4);
	UT_ASSERT_EQ(n, 3);
	CU_ASSERT(out[0].iov_base == a + 5 && out[0].iov_len == 5);
	CU_ASSERT(out[1].iov_base == b && out[1].iov_len == 20);
	CU_ASSERT(out[2].iov_base == c && out[2].iov_len == 5);

	n = nvme_iov_range(iov, 3, 30, 30, out, 4);
	UT_ASSERT_EQ(n, 1);
	CU_ASSERT(out[0].iov_base == c && out[0].iov_len == 30);

	/* Limited by max: fewer bytes covered. */
	n = nvme_iov_range(iov, 3, 0, 60, out, 2);
	UT_ASSERT_EQ(n, 2);
	UT_ASSERT_EQ(iov_length(out, n), 30);

	/* Beyond the end: nothing. */
	UT_ASSERT_EQ(nvme_iov_range(iov, 3, 60, 10, out, 4), 0);

	/* The CRC of a range over pieces is the CRC of the flat bytes. */
	UT_ASSERT_EQ(nvme_tcp_iov_crc(iov, 3, 7, 41, 0), crc32c(flat + 7, 41, 0));
	UT_ASSERT_EQ(nvme_tcp_iov_crc(iov, 3, 0, 60, 0), crc32c(flat, 60, 0));
}

static const struct ut_test g_pdu_tests[] = {
	UT_TEST(test_crc32c),   UT_TEST(test_icreq),     UT_TEST(test_icresp),
	UT_TEST(test_cmd_hdr),  UT_TEST(test_h2c_hdr),   UT_TEST(test_term_req),
	UT_TEST(test_check_ch), UT_TEST(test_iov_range),
};

void
nvme_tcp_pdu_tests(const struct ut_test **tests, size_t *count)
{
	*tests = g_pdu_tests;
	*count = ARRAY_SIZE(g_pdu_tests);
}
