/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth/nvme_tls.c: the NVMe/TCP TLS PSK derivation against known answers.
 * The expected values are printed by tls_kat.py (next to this file: Python's
 * hmac and hashlib, HKDF written out from RFC 5869/8446), not computed with
 * this code. They were also confirmed by running SPDK's own derivation
 * (include/spdk_internal/nvme_tcp.h: every version 0 and RFC 8446 value) and
 * libnvme's own derive_*() functions (src/nvme/linux.c: every value, both
 * encodings) on the same inputs; the "libnvme-*" cases use the inputs of
 * libnvme's test/psk.c, whose published version 1 identities they reproduce.
 */
#include <errno.h>
#include <stdlib.h>

#include "gga/nvme_auth.h"
#include "gga/util.h"
#include "gga_ut.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN  "nqn.2016-06.io.gga:kat"

struct kat_kdf {
	const char *retained;
	const char *digest;
	const char *identity_v1;
	const char *tls_v0;
	const char *tls_v1;
};

struct kat {
	const char *name;
	uint8_t hash; /* of the interchange format: 0, 1, 2 */
	const char *configured;
	const char *interchange;
	const char *hostnqn;
	const char *subnqn;
	const char *identity_v0;
	struct kat_kdf kdf[2]; /* [NVME_TLS_KDF_RFC8446], [NVME_TLS_KDF_COMPAT] */
};

static const struct kat g_kats[] = {
	{
		"sha256",
		1,
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
		HOSTNQN,
		SUBNQN,
		"NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat",
		{
			{
				"528bdd057636a22352e20f7203eb3450998ca16c98efc27315eea7d0c52ac634",
				"GquBKLoPrEEu1KVwlKdm1py94+3lZI6R05Nu2SqSdB0=",
				"NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat GquBKLoPrEEu1KVwlKdm1py94+3lZI6R05Nu2SqSdB0=",
				"ac722e1fd91feb397846e9dff56bf397fa3015bbc9801b1ff6f9229b5f68be12",
				"d9c8f83d768d05670b56766cc4cd2150a939006f6fd3fde3b10721b67f0275f5",
			},
			{
				"12b69334b1fe99295ace3dbbe075c3f8c6b6b74b903f37a9d50c45c8728c5049",
				"8Bbi2m5PoDrjfp0vuhPGNN5cfeWFQ5LyCUqPBJExyo4=",
				"NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat 8Bbi2m5PoDrjfp0vuhPGNN5cfeWFQ5LyCUqPBJExyo4=",
				"6a5d79d72a90fe49b814a1ff5e2c96929b180596cd0aed2e3c9446345db164c2",
				"439c9e132732d2ed089e48ebd21de27c4882a5c26d1a04f0d8ef7847261d1bd8",
			},
		},
	},
	{
		"sha384",
		2,
		"303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
		"NVMeTLSkey-1:02:MDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5f+ENbJA==:",
		HOSTNQN,
		SUBNQN,
		"NVMe0R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat",
		{
			{
				"57a513d5f15e6fa74606c6fa9056bfe1ae3754ff5722a08eee7adbd73a0fc0e76afeabc38a9f549976a8d32ab0e4655d",
				"BwL8xYQCmCBSEavRCh5OEnlS6j8gkdwi0NZEsSQLwZMmKsZtM+iXODs7LXLa3/8u",
				"NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat BwL8xYQCmCBSEavRCh5OEnlS6j8gkdwi0NZEsSQLwZMmKsZtM+iXODs7LXLa3/8u",
				"007e6e7ca3f32cab5ca0fa4f23e26f5c3bfe930ca8bbbcd0b4a1551fcafe4f2a5391f5074c6879b86cb77f1b4d6b3067",
				"0924f73b184c9135eff13492cd7c176dd2d542382d132d6f1477ded82bd9b4d3f58c9de83163d9e350a99d2fb579ab0a",
			},
			{
				"4dd74c9b64281476c7bb70e920d5c7bb8b5a8760e930b2cbc745fcec3b9d40c96e6791f19cba6988d3e086eb00e60594",
				"gUNUh+a0lP+yG1sOC9BeYeYM03/bYGUXlsbsiwxZJfqNxKB+2wJQgVAmCJA4AnT9",
				"NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat gUNUh+a0lP+yG1sOC9BeYeYM03/bYGUXlsbsiwxZJfqNxKB+2wJQgVAmCJA4AnT9",
				"a88d55d1911dd33faaa9cea0b3740e8ec2d56342235cf096ea69075ef8a270153f226027c7bf51478bbec968f39e23a6",
				"79fa528aec7f5b508b6b315158d5572a78f4ea21eb6122721f4118b347a955b0501ff1e0215f20875f2444a45cd26ceb",
			},
		},
	},
	{
		"none-32",
		0,
		"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		"NVMeTLSkey-1:00:gIGCg4SFhoeIiYqLjI2Oj5CRkpOUlZaXmJmam5ydnp9vmVbU:",
		HOSTNQN,
		SUBNQN,
		"NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat",
		{
			{
				"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
				"FtCkMLbNLQZ9JEu8gZziFVWrMkEaf+moNGYVH5VzBrg=",
				"NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat FtCkMLbNLQZ9JEu8gZziFVWrMkEaf+moNGYVH5VzBrg=",
				"9c55a82189974e6c02ba0359bc4374b9bc1ea3aa67fa0b06b4477261fbe6773c",
				"347f1ce364bbf92bd5d6dc1e6a371344144a3f78d8be994ac88b3234d4cedfbe",
			},
			{
				"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
				"FtCkMLbNLQZ9JEu8gZziFVWrMkEaf+moNGYVH5VzBrg=",
				"NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat FtCkMLbNLQZ9JEu8gZziFVWrMkEaf+moNGYVH5VzBrg=",
				"46b9cfdabb5b1f08dda51178cb415d9b44855fe0d9099a0ebdb7df797b432491",
				"c48784ce807cf1f7afc1727e1182f0403376c9df0ddf4a24f96e1c61fe8cd7ae",
			},
		},
	},
	{
		"none-48",
		0,
		"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf",
		"NVMeTLSkey-1:00:oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr/AwcLDxMXGx8jJysvMzc7PZqjjjw==:",
		HOSTNQN,
		SUBNQN,
		"NVMe0R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat",
		{
			{
				"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf",
				"kkxr/5/L0sZc5rzVWuwYf4kOshvUBgHdOh5ZCGkcS46X2SAbsMnda0adEnxfTnzV",
				"NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat kkxr/5/L0sZc5rzVWuwYf4kOshvUBgHdOh5ZCGkcS46X2SAbsMnda0adEnxfTnzV",
				"d57bd9d5d7cacefbb98ef3fac4508eab2736417d29d57e89a03a1b6bf6f2b570116184696d772d068b4f7f571a99f7b7",
				"eae537a24ce5ecec858684a5d79f5efd53b36bb247296c088e46e67c917a2005668161e295f9eee1ba9f978813c6cb33",
			},
			{
				"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf",
				"kkxr/5/L0sZc5rzVWuwYf4kOshvUBgHdOh5ZCGkcS46X2SAbsMnda0adEnxfTnzV",
				"NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555 nqn.2016-06.io.gga:kat kkxr/5/L0sZc5rzVWuwYf4kOshvUBgHdOh5ZCGkcS46X2SAbsMnda0adEnxfTnzV",
				"1e48731657aed933f3973f1b10e15bed7d9de0c95a040a693a058de99205772dff682d41b38dbcadd0a28476e8b5f83e",
				"9c2e345c994233ad689bdb60f8bfbee0ff71788526442e60eef0196f3752da27e56f39e00ce47c5dc5943e61a905289d",
			},
		},
	},
	{
		"libnvme-sha256",
		1,
		"5512dbb6737d0106f65975b773dfb011ffc344bcf442e2dd6d8bc4870b5d5b03",
		"NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:",
		"nqn.psk-test-host",
		"nqn.psk-test-subsys",
		"NVMe0R01 nqn.psk-test-host nqn.psk-test-subsys",
		{
			{
				"073311dec37e219ff3acd43f130130c5bdd443c066e1cc3424e49030234ff7d5",
				"iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=",
				"NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=",
				"05c6503551ad136e6ee32e6eeb3f6d500b69701d84ec71e328f65c7f51566f68",
				"8fc3c0badfd4c0c66fa3ca33aadd0314f85536cc9bc47338b60f3e6e563786ca",
			},
			{
				"ad4cdadfcbaf4e353fcbd09aac891c4d75c5300fe5ee7bb04ae87726a312eddc",
				"66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=",
				"NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys 66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=",
				"09fb1983ac6d6d0353e7cae4f23daddd651c367fa347c59d9cf6936f5a83eafb",
				"b9f5ab2a41ba6e72a23a12066302a2f775fa6c0942c8e0b18ca8ac07edf305e2",
			},
		},
	},
	{
		"libnvme-sha384",
		2,
		"5512dbb6737d0106f65975b773dfb011ffc344bcf442e2dd6d8bc4870b5d5b03ffc344bcf442e2dd6d8bc4870b5d5b03",
		"NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:",
		"nqn.psk-test-host",
		"nqn.psk-test-subsys",
		"NVMe0R02 nqn.psk-test-host nqn.psk-test-subsys",
		{
			{
				"73973a1b51a9acdde29a0610ac6a3ef852cf45936cca6830a661d18f68502f1a4c7a8ecb37524e0b1f7087cb4d680ad9",
				"QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a",
				"NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a",
				"f42ba63824cdfe421914c582921f85b5b5b7e2d4df084caeedc9be20b212e8bb0fe8a23e9d59a1c8fc6449da4970a78d",
				"a2b2f943f479fc682555cec89857c80ed004ce92f32a973d5764155bb7e36b17a85368a0666d250afac9282dda2e62ca",
			},
			{
				"12d2452bc4783f50286bf940ad1caa05a304065e379024d9278ca7c9d8a42400c47029f198bfcdf5f14c07cb04eb7306",
				"RsKmYJ3nAn1ApjjMloJFbAkLPivONDAX/xW327YBUsn2eGShXSjCZvBaOxscLqmz",
				"NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys RsKmYJ3nAn1ApjjMloJFbAkLPivONDAX/xW327YBUsn2eGShXSjCZvBaOxscLqmz",
				"2ee4754186a625b28a3936ef4a40d839c3ad958b2e017562ee07e2501f172ce999dc9c29033ea7ee33f814f192c13f47",
				"fcefe2e2a2e682b1447dcabf1ec268f78f08c63cd075753abcc8bda2c5c34d48d3014aa8d76ad80107e4f5c9f27e2149",
			},
		},
	},

};

static size_t
unhex(const char *s, uint8_t *out, size_t max)
{
	size_t len = strlen(s) / 2;

	CU_ASSERT_FATAL(len <= max);
	for (size_t i = 0; i < len; i++) {
		unsigned int b;

		CU_ASSERT_FATAL(sscanf(s + 2 * i, "%2x", &b) == 1);
		out[i] = (uint8_t)b;
	}
	return len;
}

/* Compare bytes with a hex string, printing both on a mismatch. */
static void
assert_hex(const char *what, const struct kat *k, int kdf, const uint8_t *got, size_t len,
	   const char *want)
{
	char hex[2 * 64 + 1];

	CU_ASSERT_FATAL(len <= 64);
	for (size_t i = 0; i < len; i++) {
		snprintf(hex + 2 * i, 3, "%02x", got[i]);
	}
	hex[2 * len] = '\0';
	if (strcmp(hex, want) != 0) {
		fprintf(stderr, "%s kdf %d %s:\n  got  %s\n  want %s\n", k->name, kdf, what, hex,
			want);
	}
	CU_ASSERT(strcmp(hex, want) == 0);
}

/* The configured PSK of a case (hash 00 built directly: see test_interchange). */
static void
configured_psk(const struct kat *k, struct nvme_tls_psk *psk)
{
	memset(psk, 0, sizeof(*psk));
	psk->hash = k->hash;
	psk->len = (uint8_t)unhex(k->configured, psk->key, sizeof(psk->key));
}

static void
test_names(void)
{
	struct nvme_tls_psk psk = { .len = 32 };

	UT_ASSERT_STR_EQ(nvme_tls_cipher_suite(NVME_AUTH_HASH_SHA256), "TLS_AES_128_GCM_SHA256");
	UT_ASSERT_STR_EQ(nvme_tls_cipher_suite(NVME_AUTH_HASH_SHA384), "TLS_AES_256_GCM_SHA384");
	CU_ASSERT(nvme_tls_cipher_suite(NVME_AUTH_HASH_NONE) == NULL);
	CU_ASSERT(nvme_tls_cipher_suite(NVME_AUTH_HASH_SHA512) == NULL);
	/* The cipher suite follows the PSK's length, whatever its transform hash. */
	UT_ASSERT_EQ(nvme_tls_psk_cipher_hash(&psk), NVME_AUTH_HASH_SHA256);
	psk.len = 48;
	UT_ASSERT_EQ(nvme_tls_psk_cipher_hash(&psk), NVME_AUTH_HASH_SHA384);
	psk.len = 64;
	UT_ASSERT_EQ(nvme_tls_psk_cipher_hash(&psk), 0);
}

/* The interchange strings of the 01/02 cases parse to the configured PSKs. */
static void
test_interchange(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(g_kats); i++) {
		const struct kat *k = &g_kats[i];
		struct nvme_tls_psk want, got;

		if (k->hash == NVME_AUTH_HASH_NONE) {
			/* nvme_tls_psk_parse() takes 01 and 02 only. */
			continue;
		}
		configured_psk(k, &want);
		UT_ASSERT_EQ_FATAL(nvme_tls_psk_parse(k->interchange, &got), 0);
		UT_ASSERT_EQ(got.hash, want.hash);
		UT_ASSERT_EQ(got.len, want.len);
		CU_ASSERT(memcmp(got.key, want.key, want.len) == 0);
	}
}

/* Each step on its own: retained PSK, digest, identities, TLS PSKs; both encodings. */
static void
test_steps(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(g_kats); i++) {
		const struct kat *k = &g_kats[i];
		struct nvme_tls_psk psk;
		uint8_t hash;

		configured_psk(k, &psk);
		hash = nvme_tls_psk_cipher_hash(&psk);
		for (int kdf = NVME_TLS_KDF_RFC8446; kdf <= NVME_TLS_KDF_COMPAT; kdf++) {
			const struct kat_kdf *w = &k->kdf[kdf];
			char digest[NVME_TLS_DIGEST_MAX], id0[NVME_TLS_IDENTITY_MAX],
				id1[NVME_TLS_IDENTITY_MAX];
			uint8_t retained[48], tls[48];

			UT_ASSERT_EQ_FATAL(nvme_tls_retained_psk(&psk, k->hostnqn, kdf, retained),
					   0);
			assert_hex("retained", k, kdf, retained, psk.len, w->retained);

			UT_ASSERT_EQ_FATAL(nvme_tls_psk_digest(hash, retained, psk.len, k->hostnqn,
							       k->subnqn, digest, sizeof(digest)),
					   0);
			UT_ASSERT_STR_EQ(digest, w->digest);

			UT_ASSERT_EQ(nvme_tls_psk_identity(0, hash, k->hostnqn, k->subnqn, NULL,
							   id0, sizeof(id0)),
				     0);
			UT_ASSERT_STR_EQ(id0, k->identity_v0);
			UT_ASSERT_EQ(nvme_tls_psk_identity(1, hash, k->hostnqn, k->subnqn, digest,
							   id1, sizeof(id1)),
				     0);
			UT_ASSERT_STR_EQ(id1, w->identity_v1);

			UT_ASSERT_EQ(nvme_tls_derive_psk(hash, retained, psk.len, 0, id0, kdf, tls),
				     0);
			assert_hex("tls psk v0", k, kdf, tls, psk.len, w->tls_v0);
			UT_ASSERT_EQ(nvme_tls_derive_psk(hash, retained, psk.len, 1, digest, kdf,
							 tls),
				     0);
			assert_hex("tls psk v1", k, kdf, tls, psk.len, w->tls_v1);
		}
	}
}

/* The whole chain from the configured PSK, as a transport calls it. */
static void
test_key_derive(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(g_kats); i++) {
		const struct kat *k = &g_kats[i];
		struct nvme_tls_psk psk;

		configured_psk(k, &psk);
		for (int kdf = NVME_TLS_KDF_RFC8446; kdf <= NVME_TLS_KDF_COMPAT; kdf++) {
			for (unsigned int v = 0; v <= 1; v++) {
				struct nvme_tls_key key;

				UT_ASSERT_EQ_FATAL(nvme_tls_key_derive(&psk, k->hostnqn, k->subnqn,
								       v, kdf, &key),
						   0);
				UT_ASSERT_EQ(key.hash, psk.len == 32 ? NVME_AUTH_HASH_SHA256 :
								       NVME_AUTH_HASH_SHA384);
				UT_ASSERT_EQ(key.len, psk.len);
				UT_ASSERT_STR_EQ(key.identity,
						 v == 0 ? k->identity_v0 : k->kdf[kdf].identity_v1);
				assert_hex(v == 0 ? "key v0" : "key v1", k, kdf, key.psk, key.len,
					   v == 0 ? k->kdf[kdf].tls_v0 : k->kdf[kdf].tls_v1);
			}
		}
	}
}

static void
test_errors(void)
{
	char nqn[NVME_TLS_NQN_MAX + 2], id[NVME_TLS_IDENTITY_MAX], digest[NVME_TLS_DIGEST_MAX];
	const struct kat *k = &g_kats[0];
	struct nvme_tls_psk psk;
	struct nvme_tls_key key;
	uint8_t out[48] = { 0 };

	configured_psk(k, &psk);
	memset(nqn, 'a', sizeof(nqn));
	nqn[NVME_TLS_NQN_MAX + 1] = '\0'; /* 224 bytes: one too many */

	/* Hashes and lengths. */
	psk.len = 64;
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, HOSTNQN, NVME_TLS_KDF_RFC8446, out), -EINVAL);
	psk.len = 32;
	psk.hash = NVME_AUTH_HASH_SHA384; /* 02 with a 32-byte key */
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, HOSTNQN, NVME_TLS_KDF_RFC8446, out), -EINVAL);
	psk.hash = NVME_AUTH_HASH_SHA512;
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, HOSTNQN, NVME_TLS_KDF_RFC8446, out), -EINVAL);
	psk.hash = NVME_AUTH_HASH_SHA256;
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, HOSTNQN, (enum nvme_tls_kdf)2, out), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_derive_psk(NVME_AUTH_HASH_SHA512, out, 64, 0, "x",
					 NVME_TLS_KDF_RFC8446, out),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_tls_derive_psk(NVME_AUTH_HASH_SHA256, out, 48, 0, "x",
					 NVME_TLS_KDF_RFC8446, out),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_tls_derive_psk(NVME_AUTH_HASH_SHA256, out, 32, 2, "x",
					 NVME_TLS_KDF_RFC8446, out),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_digest(NVME_AUTH_HASH_SHA384, out, 32, HOSTNQN, SUBNQN, digest,
					 sizeof(digest)),
		     -EINVAL);

	/* NQNs: empty, too long. */
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, "", NVME_TLS_KDF_RFC8446, out), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, nqn, NVME_TLS_KDF_RFC8446, out), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_identity(0, 1, HOSTNQN, nqn, NULL, id, sizeof(id)), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_digest(1, out, 32, nqn, SUBNQN, digest, sizeof(digest)), -EINVAL);
	nqn[NVME_TLS_NQN_MAX] = '\0'; /* 223: the longest NQN */
	UT_ASSERT_EQ(nvme_tls_retained_psk(&psk, nqn, NVME_TLS_KDF_RFC8446, out), 0);

	/* Identities: version, digest, room. */
	UT_ASSERT_EQ(nvme_tls_psk_identity(2, 1, HOSTNQN, SUBNQN, NULL, id, sizeof(id)), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_identity(1, 1, HOSTNQN, SUBNQN, NULL, id, sizeof(id)), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_identity(1, 1, HOSTNQN, SUBNQN, "", id, sizeof(id)), -EINVAL);
	/* A SHA-384 digest (64 characters) with an identity of hash 01. */
	UT_ASSERT_EQ(nvme_tls_psk_identity(1, 1, HOSTNQN, SUBNQN, g_kats[1].kdf[0].digest, id,
					   sizeof(id)),
		     -EINVAL);
	UT_ASSERT_EQ(nvme_tls_psk_identity(0, 1, HOSTNQN, SUBNQN, NULL, id, strlen(k->identity_v0)),
		     -ENOBUFS);
	UT_ASSERT_EQ(nvme_tls_psk_identity(0, 1, HOSTNQN, SUBNQN, NULL, id,
					   strlen(k->identity_v0) + 1),
		     0);
	UT_ASSERT_EQ(nvme_tls_psk_digest(1, out, 32, HOSTNQN, SUBNQN, digest, 44), -ENOBUFS);

	/*
	 * A version 0 identity over 255 bytes cannot be an HkdfLabel context
	 * (SPDK refuses it too); version 1's context is short.
	 */
	UT_ASSERT_EQ(nvme_tls_key_derive(&psk, nqn, nqn, 0, NVME_TLS_KDF_RFC8446, &key), -EINVAL);
	CU_ASSERT(key.len == 0 && key.identity[0] == '\0');
	UT_ASSERT_EQ(nvme_tls_key_derive(&psk, nqn, nqn, 1, NVME_TLS_KDF_RFC8446, &key), 0);
	UT_ASSERT_EQ(strlen(key.identity), 8 + 1 + 223 + 1 + 223 + 1 + 44);
	UT_ASSERT_EQ(nvme_tls_key_derive(&psk, HOSTNQN, SUBNQN, 2, NVME_TLS_KDF_RFC8446, &key),
		     -EINVAL);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_names),      UT_TEST(test_interchange), UT_TEST(test_steps),
		UT_TEST(test_key_derive), UT_TEST(test_errors),
	};

	return ut_run("nvme_tls", tests, ARRAY_SIZE(tests), NULL, NULL);
}
