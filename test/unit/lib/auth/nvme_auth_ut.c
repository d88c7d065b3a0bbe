/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth: the key formats and DH-HMAC-CHAP's computations against known
 * answers. The expected values were computed with Python's hmac, hashlib,
 * base64 and zlib (test/integration/nvme_auth.py implements the exchange the
 * same way and is checked against SPDK's target), not with this code.
 */
#include <errno.h>
#include <stdlib.h>

#include "gga/nvme_auth.h"
#include "gga/util.h"
#include "gga_ut.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN  "nqn.2016-06.io.gga:kat"

static void
hex(const char *s, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned int b;

		CU_ASSERT_FATAL(sscanf(s + 2 * i, "%2x", &b) == 1);
		out[i] = (uint8_t)b;
	}
}

static void
test_names(void)
{
	UT_ASSERT_EQ(nvme_auth_hash_len(NVME_AUTH_HASH_SHA256), 32);
	UT_ASSERT_EQ(nvme_auth_hash_len(NVME_AUTH_HASH_SHA384), 48);
	UT_ASSERT_EQ(nvme_auth_hash_len(NVME_AUTH_HASH_SHA512), 64);
	UT_ASSERT_EQ(nvme_auth_hash_len(0), 0);
	UT_ASSERT_EQ(nvme_auth_hash_len(4), 0);
	UT_ASSERT_EQ(nvme_auth_hash_from_name("sha384"), 2);
	UT_ASSERT_EQ(nvme_auth_hash_from_name("md5"), -1);
	CU_ASSERT(strcmp(nvme_auth_hash_name(3), "sha512") == 0);
	CU_ASSERT(nvme_auth_hash_name(9) == NULL);
	UT_ASSERT_EQ(nvme_auth_dhgroup_from_name("null"), 0);
	UT_ASSERT_EQ(nvme_auth_dhgroup_from_name("ffdhe8192"), 5);
	UT_ASSERT_EQ(nvme_auth_dhgroup_from_name("ffdhe1024"), -1);
	UT_ASSERT_EQ(nvme_auth_dhgroup_len(0), 0);
	UT_ASSERT_EQ(nvme_auth_dhgroup_len(1), 256);
	UT_ASSERT_EQ(nvme_auth_dhgroup_len(5), 1024);
	UT_ASSERT_EQ(nvme_auth_dhgroup_len(6), 0);
	CU_ASSERT(strcmp(nvme_auth_dhgroup_name(3), "ffdhe4096") == 0);
	CU_ASSERT(strcmp(nvme_auth_rce_str(NVME_AUTH_RCE_DHGROUP_UNUSABLE),
			 "DH group not usable") == 0);
	CU_ASSERT(strcmp(nvme_auth_rce_str(0), "unknown reason") == 0);
}

static void
test_secret_parse(void)
{
	struct nvme_dhchap_secret s;
	struct nvme_tls_psk psk;

	/* 32 bytes 00..1f, transform SHA-256. */
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", &s),
		     0);
	UT_ASSERT_EQ(s.hash, 1);
	UT_ASSERT_EQ(s.len, 32);
	for (int i = 0; i < 32; i++) {
		UT_ASSERT_EQ(s.key[i], i);
	}
	/* 48 bytes, no transform (base64 with padding). */
	UT_ASSERT_EQ(
		nvme_dhchap_secret_parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIS"
					 "IjJCUmJygpKissLS4vcSEgBQ==:",
					 &s),
		0);
	UT_ASSERT_EQ(s.hash, 0);
	UT_ASSERT_EQ(s.len, 48);
	UT_ASSERT_EQ(s.key[47], 47);

	/* Refused: the CRC, the prefix, the hash, the ending, the length, the alphabet. */
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", &s),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-2:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", &s),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:04:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", &s),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR", &s),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:x", &s),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+Kfia*:", &s),
		     -EINVAL);
	/* 4 bytes of key and its CRC: too short. */
	UT_ASSERT_EQ(nvme_dhchap_secret_parse("DHHC-1:00:AAECA4uWvHE=:", &s), -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse("", &s), -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_secret_parse(NULL, &s), -EINVAL);

	UT_ASSERT_EQ(nvme_tls_psk_parse(
			     "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
			     &psk),
		     0);
	UT_ASSERT_EQ(psk.hash, 1);
	UT_ASSERT_EQ(psk.len, 32);
	/* A 32-byte PSK cannot be SHA-384's. */
	UT_ASSERT_EQ(nvme_tls_psk_parse(
			     "NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
			     &psk),
		     -EINVAL);
	/* 00: a 32-byte PSK used as is; 03 is no hash. */
	UT_ASSERT_EQ(nvme_tls_psk_parse(
			     "NVMeTLSkey-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
			     &psk),
		     0);
	UT_ASSERT_EQ(psk.hash, 0);
	UT_ASSERT_EQ(psk.len, 32);
	UT_ASSERT_EQ(nvme_tls_psk_parse(
			     "NVMeTLSkey-1:03:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
			     &psk),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_parse(
			     "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", &psk),
		     -EINVAL);
}

static void
test_transform_and_responses(void)
{
	struct nvme_dhchap_secret s;
	uint8_t key[NVME_AUTH_KEY_MAX], out[NVME_AUTH_DIGEST_MAX], want[NVME_AUTH_DIGEST_MAX];
	uint8_t c1[32], c2[48], c3[64], z[256];
	size_t key_len;

	CU_ASSERT_FATAL(
		nvme_dhchap_secret_parse(
			"DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", &s) == 0);
	UT_ASSERT_EQ(nvme_dhchap_transform(&s, HOSTNQN, key, &key_len), 0);
	UT_ASSERT_EQ(key_len, 32);
	hex("6ce1e4ea31e8331a4fe5826bfde17a5cd386b8f0338748919e279ba6c55bf727", want, 32);
	CU_ASSERT(memcmp(key, want, 32) == 0);

	/* R1 = HMAC-SHA256(Kh, C1 || LE32(0x01020304) || LE16(0x0506) || 0 || "HostHost" || ...). */
	memset(c1, 0xa5, sizeof(c1));
	UT_ASSERT_EQ(nvme_dhchap_response(1, key, key_len, c1, 0x01020304, 0x0506, 0,
					  NVME_DHCHAP_HOST, HOSTNQN, SUBNQN, out),
		     0);
	hex("b6a1cea400325c9d2a4e95270b308071f2026f00a90c082419203d16abdc0b6e", want, 32);
	CU_ASSERT(memcmp(out, want, 32) == 0);
	CU_ASSERT(nvme_auth_equal(out, want, 32));
	want[31] ^= 1;
	CU_ASSERT(!nvme_auth_equal(out, want, 32));

	/* R2 with an untransformed 48-byte key and SHA-384. */
	CU_ASSERT_FATAL(
		nvme_dhchap_secret_parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIS"
					 "IjJCUmJygpKissLS4vcSEgBQ==:",
					 &s) == 0);
	UT_ASSERT_EQ(nvme_dhchap_transform(&s, SUBNQN, key, &key_len), 0);
	UT_ASSERT_EQ(key_len, 48);
	memset(c2, 0x3c, sizeof(c2));
	UT_ASSERT_EQ(nvme_dhchap_response(2, key, key_len, c2, 7, 1, 0, NVME_DHCHAP_CTRLR, HOSTNQN,
					  SUBNQN, out),
		     0);
	hex("a8da454c3b22bd7d4000bbc1d87b4be4a045662685b83a0a6d5484a0b70efb2bb66700023647e4da87e5d0d4"
	    "1a3cbce0",
	    want, 48);
	CU_ASSERT(memcmp(out, want, 48) == 0);

	/* Ca = HMAC-SHA512(SHA512(Z), C). */
	memset(z, 1, sizeof(z));
	memset(c3, 0x77, sizeof(c3));
	UT_ASSERT_EQ(nvme_dhchap_augment(3, z, sizeof(z), c3, out), 0);
	hex("a04d45cebad8d58bec43f5a9b284afdfd6ea0cf96e03780d108547db468e61c7ed9822c6007a4c79f9f9e7de"
	    "c1cdae8d4404bbe310dfd5dda4fbc14b0638634a",
	    want, 64);
	CU_ASSERT(memcmp(out, want, 64) == 0);
	UT_ASSERT_EQ(nvme_dhchap_augment(0, z, sizeof(z), c3, out), -EINVAL);
	UT_ASSERT_EQ(nvme_dhchap_response(7, key, key_len, c2, 7, 1, 0, NVME_DHCHAP_CTRLR, HOSTNQN,
					  SUBNQN, out),
		     -EINVAL);
}

static void
test_dh_known(void)
{
	/* g = 2: private 3 gives public 8; with the peer's 2^5 the secret is 2^15. */
	uint8_t three = 3, pub[256], peer[256] = { 0 }, z[256], want[256] = { 0 };
	struct nvme_dh *dh;

	dh = nvme_dh_new(NVME_AUTH_DHGROUP_2048, &three, 1);
	CU_ASSERT_FATAL(dh != NULL);
	UT_ASSERT_EQ(nvme_dh_public(dh, pub, sizeof(pub)), 0);
	want[255] = 8;
	CU_ASSERT(memcmp(pub, want, sizeof(pub)) == 0);
	peer[255] = 32;
	UT_ASSERT_EQ(nvme_dh_derive(dh, peer, sizeof(peer), z, sizeof(z)), 0);
	want[255] = 0;
	want[254] = 0x80;
	CU_ASSERT(memcmp(z, want, sizeof(z)) == 0);

	/* Refused peer values: 0, 1, p - 1 (all ones is above p) and a short one. */
	memset(peer, 0, sizeof(peer));
	UT_ASSERT_EQ(nvme_dh_derive(dh, peer, sizeof(peer), z, sizeof(z)), -EINVAL);
	peer[255] = 1;
	UT_ASSERT_EQ(nvme_dh_derive(dh, peer, sizeof(peer), z, sizeof(z)), -EINVAL);
	memset(peer, 0xff, sizeof(peer));
	UT_ASSERT_EQ(nvme_dh_derive(dh, peer, sizeof(peer), z, sizeof(z)), -EINVAL);
	UT_ASSERT_EQ(nvme_dh_derive(dh, peer, 128, z, sizeof(z)), -EINVAL);
	UT_ASSERT_EQ(nvme_dh_public(dh, pub, 128), -EINVAL);
	nvme_dh_free(dh);
	CU_ASSERT(nvme_dh_new(NVME_AUTH_DHGROUP_NULL, NULL, 0) == NULL);
	CU_ASSERT(nvme_dh_new(9, NULL, 0) == NULL);
}

static void
test_dh_agree(void)
{
	static uint8_t pa[NVME_AUTH_DH_MAX], pb[NVME_AUTH_DH_MAX], za[NVME_AUTH_DH_MAX],
		zb[NVME_AUTH_DH_MAX];

	/* Two fresh pairs agree in every group (8192 once: it is the slow one). */
	for (uint8_t g = NVME_AUTH_DHGROUP_2048; g <= NVME_AUTH_DHGROUP_MAX; g++) {
		size_t len = nvme_auth_dhgroup_len(g);
		struct nvme_dh *a = nvme_dh_new(g, NULL, 0), *b = nvme_dh_new(g, NULL, 0);

		CU_ASSERT_FATAL(a != NULL && b != NULL);
		UT_ASSERT_EQ(nvme_dh_public(a, pa, len), 0);
		UT_ASSERT_EQ(nvme_dh_public(b, pb, len), 0);
		CU_ASSERT(memcmp(pa, pb, len) != 0);
		UT_ASSERT_EQ(nvme_dh_derive(a, pb, len, za, len), 0);
		UT_ASSERT_EQ(nvme_dh_derive(b, pa, len, zb, len), 0);
		CU_ASSERT(memcmp(za, zb, len) == 0);
		nvme_dh_free(a);
		nvme_dh_free(b);
	}
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_names),
		UT_TEST(test_secret_parse),
		UT_TEST(test_transform_and_responses),
		UT_TEST(test_dh_known),
		UT_TEST(test_dh_agree),
	};

	return ut_run("nvme_auth", tests, ARRAY_SIZE(tests), NULL, NULL);
}
