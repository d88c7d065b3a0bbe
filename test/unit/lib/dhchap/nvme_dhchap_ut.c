/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DH-HMAC-CHAP's two state machines (lib/auth/nvme_dhchap.c) against each
 * other: every digest and group, one and two directions, every key
 * transform; the refusals (wrong keys, nothing in common); and a hostile
 * host that sends any sequence of messages it could have seen or made, which
 * must never authenticate. The wire format against an independent
 * implementation is checked by test/integration/nvmf_auth.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "gga/nvme_auth.h"
#include "gga/util.h"
#include "gga_ut.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN  "nqn.2016-06.io.gga:dhchap"

static void
make_secret(struct nvme_dhchap_secret *s, uint8_t hash, uint8_t len, uint8_t seed)
{
	memset(s, 0, sizeof(*s));
	s->hash = hash;
	s->len = len;
	for (uint8_t i = 0; i < len; i++) {
		s->key[i] = (uint8_t)(seed + i * 7);
	}
}

static void
params(struct nvme_dhchap_params *p, uint8_t digests, uint8_t groups, bool bidir)
{
	memset(p, 0, sizeof(*p));
	p->hostnqn = HOSTNQN;
	p->subnqn = SUBNQN;
	make_secret(&p->host_key, NVME_AUTH_HASH_SHA256, 32, 1);
	if (bidir) {
		make_secret(&p->ctrlr_key, NVME_AUTH_HASH_SHA512, 64, 2);
	}
	p->digests = digests;
	p->dhgroups = groups;
}

static uint8_t g_buf[NVME_DHCHAP_MSG_MAX];

/*
 * Run one transaction to its end, host messages to the controller and back.
 * Returns the number of messages; the results are in h and c.
 */
static int
run(struct nvme_dhchap *h, struct nvme_dhchap *c)
{
	int n = 0, len;

	while (nvme_dhchap_result(h) == NVME_DHCHAP_RES_PENDING && n < 16) {
		if (nvme_dhchap_host_receiving(h)) {
			len = nvme_dhchap_ctrlr_recv(c, g_buf, sizeof(g_buf));
			CU_ASSERT_FATAL(len > 0);
			UT_ASSERT_EQ(nvme_dhchap_host_recv(h, g_buf, (size_t)len), 0);
		} else {
			len = nvme_dhchap_host_next(h, g_buf, sizeof(g_buf));
			CU_ASSERT_FATAL(len > 0);
			UT_ASSERT_EQ(nvme_dhchap_ctrlr_send(c, g_buf, (size_t)len), 0);
		}
		n++;
	}
	/* A controller left owing its Failure1 gives it. */
	if (c->state == NVME_DHCHAP_FAILURE1) {
		len = nvme_dhchap_ctrlr_recv(c, g_buf, sizeof(g_buf));
		UT_ASSERT_EQ(len, (int)sizeof(struct nvme_auth_failure));
	}
	return n;
}

static void
test_pairs(void)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;

	for (uint8_t d = NVME_AUTH_HASH_SHA256; d <= NVME_AUTH_HASH_MAX; d++) {
		for (uint8_t g = NVME_AUTH_DHGROUP_NULL; g <= NVME_AUTH_DHGROUP_3072; g++) {
			for (int bidir = 0; bidir < 2; bidir++) {
				params(&hp, NVME_AUTH_DIGESTS_ALL, NVME_AUTH_DHGROUPS_ALL, bidir);
				params(&cp, (uint8_t)(1u << d), (uint8_t)(1u << g), bidir);
				nvme_dhchap_host_init(&h, &hp, 7, 100);
				nvme_dhchap_ctrlr_init(&c, &cp, 200);
				/* Negotiate, Challenge, Reply, Success1 (+ Success2). */
				UT_ASSERT_EQ(run(&h, &c), bidir ? 5 : 4);
				UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_SUCCESS);
				UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
				UT_ASSERT_EQ(c.hash, d);
				UT_ASSERT_EQ(c.dhgroup, g);
				UT_ASSERT_EQ(c.bidir, bidir);
				nvme_dhchap_fini(&h);
				nvme_dhchap_fini(&c);
			}
		}
	}
	/* The strongest pair in common is chosen; every key transform works. */
	for (uint8_t t = NVME_AUTH_HASH_NONE; t <= NVME_AUTH_HASH_MAX; t++) {
		params(&hp, 0x06, 0x03, true);
		make_secret(&hp.host_key, t, 48, 9);
		make_secret(&hp.ctrlr_key, (uint8_t)(NVME_AUTH_HASH_MAX - t), 64, 3);
		cp = hp;
		cp.digests = NVME_AUTH_DIGESTS_ALL;
		cp.dhgroups = NVME_AUTH_DHGROUPS_ALL;
		nvme_dhchap_host_init(&h, &hp, 1, 5);
		nvme_dhchap_ctrlr_init(&c, &cp, 6);
		run(&h, &c);
		UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
		UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_SUCCESS);
		UT_ASSERT_EQ(c.hash, NVME_AUTH_HASH_SHA384);
		UT_ASSERT_EQ(c.dhgroup, NVME_AUTH_DHGROUP_2048);
		nvme_dhchap_fini(&h);
		nvme_dhchap_fini(&c);
	}
}

static void
test_wrong_keys(void)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;

	/* A wrong host key: the controller sends Failure1 "failed". */
	params(&hp, NVME_AUTH_DIGESTS_ALL, 0x01, false);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x01, false);
	hp.host_key.key[3] ^= 1;
	nvme_dhchap_host_init(&h, &hp, 2, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(h.rce, NVME_AUTH_RCE_FAILED);
	CU_ASSERT(strcmp(c.why, "wrong response") == 0);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);

	/* The right host key under another NQN fails too (the transform binds it). */
	params(&hp, NVME_AUTH_DIGESTS_ALL, 0x01, false);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x01, false);
	hp.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555556";
	nvme_dhchap_host_init(&h, &hp, 2, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);

	/* A wrong controller key: the host refuses its response with Failure2. */
	params(&hp, NVME_AUTH_DIGESTS_ALL, 0x02, true);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x02, true);
	cp.ctrlr_key.key[0] ^= 0x80;
	nvme_dhchap_host_init(&h, &hp, 3, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	CU_ASSERT(strcmp(h.why, "wrong controller response") == 0);
	CU_ASSERT(strcmp(c.why, "the host sent Failure2") == 0);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);

	/* The host asks for the controller's response; the controller has no key. */
	params(&hp, NVME_AUTH_DIGESTS_ALL, 0x01, true);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x01, false);
	nvme_dhchap_host_init(&h, &hp, 4, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);
}

static void
check_refusal(uint8_t host_digests, uint8_t host_groups, uint8_t digests, uint8_t groups,
	      uint8_t rce)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;

	params(&hp, host_digests, host_groups, false);
	params(&cp, digests, groups, false);
	nvme_dhchap_host_init(&h, &hp, 5, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	UT_ASSERT_EQ(run(&h, &c), 2);
	UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(h.rce, rce);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);
}

static void
test_nothing_in_common(void)
{
	check_refusal(0x02, NVME_AUTH_DHGROUPS_ALL, 0x0c, NVME_AUTH_DHGROUPS_ALL,
		      NVME_AUTH_RCE_HASH_UNUSABLE);
	check_refusal(NVME_AUTH_DIGESTS_ALL, 0x01, NVME_AUTH_DIGESTS_ALL, 0x3e,
		      NVME_AUTH_RCE_DHGROUP_UNUSABLE);
}

static void
test_bad_negotiate(void)
{
	struct nvme_dhchap_params cp;
	struct nvme_auth_negotiate *n = (void *)g_buf;
	struct nvme_auth_failure *f = (void *)g_buf;
	struct nvme_dhchap c;
	static const struct {
		uint8_t napd, sc_c, auth_id, halen;
		size_t len;
		uint8_t rce;
	} cases[] = {
		{ 1, 0, 1, 1, 8, NVME_AUTH_RCE_INCORRECT_PAYLOAD }, /* descriptor missing */
		{ 0, 0, 1, 1, 72, NVME_AUTH_RCE_INCORRECT_PAYLOAD },
		{ 1, 1, 1, 1, 72, NVME_AUTH_RCE_SCC_MISMATCH },
		{ 1, 0, 2, 1, 72, NVME_AUTH_RCE_PROTOCOL_UNUSABLE },
		{ 1, 0, 1, 31, 72, NVME_AUTH_RCE_INCORRECT_PAYLOAD },
		{ 1, 0, 1, 0, 72, NVME_AUTH_RCE_HASH_UNUSABLE },
		{ 1, 0, 1, 1, 4, NVME_AUTH_RCE_INCORRECT_MESSAGE },
	};

	params(&cp, NVME_AUTH_DIGESTS_ALL, NVME_AUTH_DHGROUPS_ALL, false);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(g_buf, 0, sizeof(g_buf));
		n->hdr.auth_type = NVME_AUTH_TYPE_COMMON;
		n->hdr.auth_id = NVME_AUTH_ID_NEGOTIATE;
		n->hdr.t_id = 9;
		n->napd = cases[i].napd;
		n->sc_c = cases[i].sc_c;
		n->descs[0].auth_id = cases[i].auth_id;
		n->descs[0].halen = cases[i].halen;
		n->descs[0].dhlen = 1;
		n->descs[0].hash_ids[0] = NVME_AUTH_HASH_SHA256;
		nvme_dhchap_ctrlr_init(&c, &cp, 1);
		UT_ASSERT_EQ(nvme_dhchap_ctrlr_send(&c, g_buf, cases[i].len), 0);
		UT_ASSERT_EQ(c.state, NVME_DHCHAP_FAILURE1);
		/* Too small a buffer consumes nothing; then the Failure1. */
		UT_ASSERT_EQ(nvme_dhchap_ctrlr_recv(&c, g_buf, 4), -ENOBUFS);
		UT_ASSERT_EQ(nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf)), 8);
		UT_ASSERT_EQ(f->hdr.auth_id, NVME_AUTH_ID_FAILURE1);
		UT_ASSERT_EQ(f->rc, NVME_AUTH_RC_FAILED);
		UT_ASSERT_EQ(f->rce, cases[i].rce);
		UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
		/* Nothing more is due either way. */
		UT_ASSERT_EQ(nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf)), -EPROTO);
		UT_ASSERT_EQ(nvme_dhchap_ctrlr_send(&c, g_buf, 72), -EPROTO);
		nvme_dhchap_fini(&c);
	}
	/* A receive before any Negotiate ends the transaction with Failure1. */
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	UT_ASSERT_EQ(nvme_dhchap_ctrlr_recv(&c, g_buf, 4), -ENOBUFS);
	UT_ASSERT_EQ(nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf)), 8);
	UT_ASSERT_EQ(f->hdr.auth_id, NVME_AUTH_ID_FAILURE1);
	UT_ASSERT_EQ(f->rce, NVME_AUTH_RCE_INCORRECT_MESSAGE);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	nvme_dhchap_fini(&c);
}

static void
test_reauth(void)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;

	params(&hp, NVME_AUTH_DIGESTS_ALL, 0x01, true);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x01, true);
	nvme_dhchap_host_init(&h, &hp, 1, 1);
	nvme_dhchap_ctrlr_init(&c, &cp, 1);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
	nvme_dhchap_fini(&h);
	/* A second transaction on the same controller state, another t_id. */
	nvme_dhchap_host_init(&h, &hp, 2, 2);
	c.seq++;
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
	UT_ASSERT_EQ(c.t_id, 2);
	nvme_dhchap_fini(&h);
	/* And one with a wrong key fails after a success. */
	hp.host_key.key[0] ^= 1;
	nvme_dhchap_host_init(&h, &hp, 3, 3);
	run(&h, &c);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);
}

/*
 * A hostile host: it knows no key, but saw every message of an earlier,
 * successful transaction (same t_id), and can send them in any order, cut
 * short, or send Failure2, and read whenever it likes. Every sequence of up to
 * DEPTH steps is tried against a fresh controller; none may authenticate,
 * and a controller that failed stays failed.
 */
#define DEPTH 6

struct msg {
	uint8_t data[NVME_DHCHAP_MSG_MAX];
	size_t len;
};

static struct msg g_pool[8];
static size_t g_npool;
static uint64_t g_sequences;

static void
explore(const struct nvme_dhchap_params *cp, const uint8_t *ops, int depth)
{
	static uint8_t rbuf[NVME_DHCHAP_MSG_MAX];
	uint8_t seq[DEPTH + 1];
	struct nvme_dhchap c;
	bool failed = false;

	nvme_dhchap_ctrlr_init(&c, cp, 77);
	for (int i = 0; i < depth; i++) {
		if (ops[i] == g_npool) {
			(void)nvme_dhchap_ctrlr_recv(&c, rbuf, sizeof(rbuf));
		} else {
			(void)nvme_dhchap_ctrlr_send(&c, g_pool[ops[i]].data, g_pool[ops[i]].len);
		}
		CU_ASSERT(nvme_dhchap_result(&c) != NVME_DHCHAP_RES_SUCCESS);
		if (failed) {
			CU_ASSERT(nvme_dhchap_result(&c) == NVME_DHCHAP_RES_FAILED);
		}
		failed = nvme_dhchap_result(&c) == NVME_DHCHAP_RES_FAILED;
	}
	nvme_dhchap_fini(&c);
	g_sequences++;
	if (depth == DEPTH) {
		return;
	}
	if (depth > 0) {
		memcpy(seq, ops, (size_t)depth);
	}
	for (uint8_t op = 0; op <= g_npool; op++) {
		seq[depth] = op;
		explore(cp, seq, depth + 1);
	}
}

static void
test_hostile_host(void)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;
	int len;

	for (int bidir = 0; bidir < 2; bidir++) {
		/* Record a good transaction's host messages. */
		params(&hp, NVME_AUTH_DIGESTS_ALL, 0x01, bidir);
		params(&cp, NVME_AUTH_DIGESTS_ALL, 0x01, bidir);
		nvme_dhchap_host_init(&h, &hp, 7, 3);
		nvme_dhchap_ctrlr_init(&c, &cp, 77);
		g_npool = 0;
		while (nvme_dhchap_result(&h) == NVME_DHCHAP_RES_PENDING) {
			if (nvme_dhchap_host_receiving(&h)) {
				len = nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf));
				CU_ASSERT_FATAL(len > 0);
				nvme_dhchap_host_recv(&h, g_buf, (size_t)len);
			} else {
				len = nvme_dhchap_host_next(&h, g_buf, sizeof(g_buf));
				CU_ASSERT_FATAL(len > 0);
				memcpy(g_pool[g_npool].data, g_buf, (size_t)len);
				g_pool[g_npool++].len = (size_t)len;
				nvme_dhchap_ctrlr_send(&c, g_buf, (size_t)len);
			}
		}
		UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
		nvme_dhchap_fini(&h);
		nvme_dhchap_fini(&c);
		/* Plus: the Reply cut short, a Failure2, and an all-zero Reply. */
		g_pool[g_npool] = g_pool[1];
		g_pool[g_npool++].len = 20;
		memset(&g_pool[g_npool], 0, sizeof(g_pool[0]));
		g_pool[g_npool].data[1] = NVME_AUTH_ID_FAILURE2;
		g_pool[g_npool++].len = 8;
		g_pool[g_npool] = g_pool[1];
		memset(g_pool[g_npool].data + 16, 0, g_pool[g_npool].len - 16);
		g_npool++;
		g_sequences = 0;
		explore(&cp, NULL, 0);
		printf("  bidir %d: %zu messages, %" PRIu64 " sequences\n", bidir, g_npool,
		       g_sequences);
		CU_ASSERT(g_sequences > 1000);
	}
}

/*
 * The steps the target hands to its workers are exactly the costly ones: the
 * Receive of the Challenge (DH key) and the Send of the Reply (derivation);
 * an abort (a refused step) makes the next Receive a Failure1 "failed".
 */
static void
test_costly_and_abort(void)
{
	struct nvme_dhchap_params hp, cp;
	struct nvme_dhchap h, c;
	int len, costly_send = 0, costly_recv = 0;

	params(&hp, NVME_AUTH_DIGESTS_ALL, NVME_AUTH_DHGROUPS_ALL, true);
	params(&cp, NVME_AUTH_DIGESTS_ALL, 0x02, true);
	nvme_dhchap_host_init(&h, &hp, 3, 9);
	nvme_dhchap_ctrlr_init(&c, &cp, 4);
	while (nvme_dhchap_result(&h) == NVME_DHCHAP_RES_PENDING) {
		if (nvme_dhchap_host_receiving(&h)) {
			bool costly = nvme_dhchap_ctrlr_costly(&c, false);

			CU_ASSERT(costly == (c.state == NVME_DHCHAP_CHALLENGE));
			costly_recv += costly;
			len = nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf));
			CU_ASSERT_FATAL(len > 0);
			UT_ASSERT_EQ(nvme_dhchap_host_recv(&h, g_buf, (size_t)len), 0);
		} else {
			bool costly = nvme_dhchap_ctrlr_costly(&c, true);

			costly_send += costly;
			len = nvme_dhchap_host_next(&h, g_buf, sizeof(g_buf));
			CU_ASSERT_FATAL(len > 0);
			CU_ASSERT(costly == (((struct nvme_auth_header *)g_buf)->auth_id ==
					     NVME_AUTH_ID_REPLY));
			UT_ASSERT_EQ(nvme_dhchap_ctrlr_send(&c, g_buf, (size_t)len), 0);
		}
	}
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_SUCCESS);
	UT_ASSERT_EQ(costly_recv, 1);
	UT_ASSERT_EQ(costly_send, 1);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);

	/* Refused at the Challenge: the host reads a Failure1, authentication failed. */
	nvme_dhchap_host_init(&h, &hp, 5, 9);
	nvme_dhchap_ctrlr_init(&c, &cp, 4);
	len = nvme_dhchap_host_next(&h, g_buf, sizeof(g_buf));
	UT_ASSERT_EQ(nvme_dhchap_ctrlr_send(&c, g_buf, (size_t)len), 0);
	CU_ASSERT(nvme_dhchap_ctrlr_costly(&c, false));
	nvme_dhchap_ctrlr_abort(&c, "refused");
	len = nvme_dhchap_ctrlr_recv(&c, g_buf, sizeof(g_buf));
	UT_ASSERT_EQ(len, (int)sizeof(struct nvme_auth_failure));
	UT_ASSERT_EQ(nvme_dhchap_host_recv(&h, g_buf, (size_t)len), 0);
	UT_ASSERT_EQ(nvme_dhchap_result(&h), NVME_DHCHAP_RES_FAILED);
	UT_ASSERT_EQ(h.rce, NVME_AUTH_RCE_FAILED);
	UT_ASSERT_EQ(nvme_dhchap_result(&c), NVME_DHCHAP_RES_FAILED);
	CU_ASSERT(strcmp(c.why, "refused") == 0);
	/* An abort after the end changes nothing. */
	nvme_dhchap_ctrlr_abort(&c, "again");
	CU_ASSERT(strcmp(c.why, "refused") == 0);
	nvme_dhchap_fini(&h);
	nvme_dhchap_fini(&c);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_pairs),
		UT_TEST(test_wrong_keys),
		UT_TEST(test_nothing_in_common),
		UT_TEST(test_bad_negotiate),
		UT_TEST(test_reauth),
		UT_TEST(test_hostile_host),
		UT_TEST(test_costly_and_abort),
	};

	return ut_run("nvme_dhchap", tests, ARRAY_SIZE(tests), NULL, NULL);
}
