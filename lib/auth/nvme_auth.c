/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DH-HMAC-CHAP's computations (NVMe Base 2.0 8.13.5) on OpenSSL 3: the key
 * transform, the augmented challenge, the responses, finite-field
 * Diffie-Hellman over the RFC 7919 groups, random numbers and a
 * constant-time compare. Nothing here keeps state between calls.
 */
#include <errno.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/dh.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "gga/nvme_auth.h"

static const struct {
	const char *name;
	const char *ossl;
	size_t len;
} g_hashes[] = {
	[NVME_AUTH_HASH_SHA256] = { "sha256", "SHA256", 32 },
	[NVME_AUTH_HASH_SHA384] = { "sha384", "SHA384", 48 },
	[NVME_AUTH_HASH_SHA512] = { "sha512", "SHA512", 64 },
};

static const struct {
	const char *name;
	size_t len;
} g_groups[] = {
	[NVME_AUTH_DHGROUP_NULL] = { "null", 0 },
	[NVME_AUTH_DHGROUP_2048] = { "ffdhe2048", 256 },
	[NVME_AUTH_DHGROUP_3072] = { "ffdhe3072", 384 },
	[NVME_AUTH_DHGROUP_4096] = { "ffdhe4096", 512 },
	[NVME_AUTH_DHGROUP_6144] = { "ffdhe6144", 768 },
	[NVME_AUTH_DHGROUP_8192] = { "ffdhe8192", 1024 },
};

const char *
nvme_auth_rce_str(uint8_t rce)
{
	switch (rce) {
	case NVME_AUTH_RCE_FAILED:
		return "authentication failed";
	case NVME_AUTH_RCE_PROTOCOL_UNUSABLE:
		return "protocol not usable";
	case NVME_AUTH_RCE_SCC_MISMATCH:
		return "secure channel concatenation mismatch";
	case NVME_AUTH_RCE_HASH_UNUSABLE:
		return "hash function not usable";
	case NVME_AUTH_RCE_DHGROUP_UNUSABLE:
		return "DH group not usable";
	case NVME_AUTH_RCE_INCORRECT_PAYLOAD:
		return "incorrect payload";
	case NVME_AUTH_RCE_INCORRECT_MESSAGE:
		return "incorrect protocol message";
	default:
		return "unknown reason";
	}
}

size_t
nvme_auth_hash_len(uint8_t hash)
{
	return hash >= NVME_AUTH_HASH_SHA256 && hash <= NVME_AUTH_HASH_MAX ? g_hashes[hash].len : 0;
}

const char *
nvme_auth_hash_name(uint8_t hash)
{
	return nvme_auth_hash_len(hash) != 0 ? g_hashes[hash].name : NULL;
}

int
nvme_auth_hash_from_name(const char *name)
{
	for (int i = NVME_AUTH_HASH_SHA256; i <= NVME_AUTH_HASH_MAX; i++) {
		if (name != NULL && strcmp(name, g_hashes[i].name) == 0) {
			return i;
		}
	}
	return -1;
}

size_t
nvme_auth_dhgroup_len(uint8_t group)
{
	return group <= NVME_AUTH_DHGROUP_MAX ? g_groups[group].len : 0;
}

const char *
nvme_auth_dhgroup_name(uint8_t group)
{
	return group <= NVME_AUTH_DHGROUP_MAX ? g_groups[group].name : NULL;
}

int
nvme_auth_dhgroup_from_name(const char *name)
{
	for (int i = 0; i <= NVME_AUTH_DHGROUP_MAX; i++) {
		if (name != NULL && strcmp(name, g_groups[i].name) == 0) {
			return i;
		}
	}
	return -1;
}

bool
nvme_auth_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

int
nvme_auth_random(void *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

/* An HMAC over parts; a part with len 0 is skipped. out holds the hash's length. */
struct hmac_part {
	const void *buf;
	size_t len;
};

static int
hmac_parts(uint8_t hash, const uint8_t *key, size_t key_len, const struct hmac_part *parts,
	   size_t nparts, uint8_t *out)
{
	OSSL_PARAM params[2];
	EVP_MAC_CTX *ctx = NULL;
	EVP_MAC *mac;
	size_t outl = 0;
	int rc = -EIO;

	if (nvme_auth_hash_len(hash) == 0) {
		return -EINVAL;
	}
	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (mac == NULL) {
		return -ENOMEM;
	}
	ctx = EVP_MAC_CTX_new(mac);
	if (ctx == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     (char *)g_hashes[hash].ossl, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, key, key_len, params) != 1) {
		goto out;
	}
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].len > 0 && EVP_MAC_update(ctx, parts[i].buf, parts[i].len) != 1) {
			goto out;
		}
	}
	if (EVP_MAC_final(ctx, out, &outl, NVME_AUTH_DIGEST_MAX) != 1 ||
	    outl != nvme_auth_hash_len(hash)) {
		goto out;
	}
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return rc;
}

int
nvme_dhchap_transform(const struct nvme_dhchap_secret *secret, const char *nqn, uint8_t *out,
		      size_t *out_len)
{
	static const char suffix[] = "NVMe-over-Fabrics";
	struct hmac_part parts[] = {
		{ nqn, strlen(nqn) },
		{ suffix, sizeof(suffix) - 1 },
	};
	int rc;

	if (secret->hash == NVME_AUTH_HASH_NONE) {
		memcpy(out, secret->key, secret->len);
		*out_len = secret->len;
		return 0;
	}
	rc = hmac_parts(secret->hash, secret->key, secret->len, parts, 2, out);
	if (rc == 0) {
		*out_len = nvme_auth_hash_len(secret->hash);
	}
	return rc;
}

int
nvme_dhchap_augment(uint8_t hash, const uint8_t *z, size_t z_len, const uint8_t *challenge,
		    uint8_t *out)
{
	uint8_t hz[NVME_AUTH_DIGEST_MAX];
	unsigned int hz_len = 0;
	size_t hl = nvme_auth_hash_len(hash);
	struct hmac_part part = { challenge, hl };
	int rc;

	if (hl == 0) {
		return -EINVAL;
	}
	if (EVP_Digest(z, z_len, hz, &hz_len, EVP_get_digestbyname(g_hashes[hash].ossl), NULL) !=
		    1 ||
	    hz_len != hl) {
		return -EIO;
	}
	rc = hmac_parts(hash, hz, hl, &part, 1, out);
	OPENSSL_cleanse(hz, sizeof(hz));
	return rc;
}

int
nvme_dhchap_response(uint8_t hash, const uint8_t *key, size_t key_len, const uint8_t *challenge,
		     uint32_t seqnum, uint16_t t_id, uint8_t sc_c, enum nvme_dhchap_role role,
		     const char *hostnqn, const char *subnqn, uint8_t *out)
{
	static const uint8_t zero;
	uint8_t seq[4] = { (uint8_t)seqnum, (uint8_t)(seqnum >> 8), (uint8_t)(seqnum >> 16),
			   (uint8_t)(seqnum >> 24) };
	uint8_t tid[2] = { (uint8_t)t_id, (uint8_t)(t_id >> 8) };
	bool host = role == NVME_DHCHAP_HOST;
	const char *first = host ? hostnqn : subnqn, *second = host ? subnqn : hostnqn;
	struct hmac_part parts[] = {
		{ challenge, nvme_auth_hash_len(hash) },
		{ seq, sizeof(seq) },
		{ tid, sizeof(tid) },
		{ &sc_c, 1 },
		{ host ? "HostHost" : "Controller", host ? 8 : 10 },
		{ first, strlen(first) },
		{ &zero, 1 },
		{ second, strlen(second) },
	};

	return hmac_parts(hash, key, key_len, parts, sizeof(parts) / sizeof(parts[0]), out);
}

/*
 * Diffie-Hellman.
 */

struct nvme_dh {
	uint8_t group;
	EVP_PKEY *pkey;
	uint8_t pub[NVME_AUTH_DH_MAX];
};

/* A DH key of a named group from a public and/or private value (NULL: absent). */
static EVP_PKEY *
dh_from_values(uint8_t group, const BIGNUM *pub, const BIGNUM *priv)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pkey = NULL;

	if (bld == NULL ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, g_groups[group].name,
					     0) ||
	    (pub != NULL && !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PUB_KEY, pub)) ||
	    (priv != NULL && !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, priv))) {
		goto out;
	}
	params = OSSL_PARAM_BLD_to_param(bld);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL);
	if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, priv != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
			      params) != 1) {
		pkey = NULL;
	}
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	return pkey;
}

struct nvme_dh *
nvme_dh_new(uint8_t group, const uint8_t *priv, size_t priv_len)
{
	size_t len = nvme_auth_dhgroup_len(group);
	BIGNUM *x = NULL, *y = NULL, *p = NULL, *g = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	struct nvme_dh *dh;
	BN_CTX *bnctx = NULL;
	bool ok = false;

	if (len == 0) {
		return NULL;
	}
	dh = calloc(1, sizeof(*dh));
	if (dh == NULL) {
		return NULL;
	}
	dh->group = group;
	if (priv == NULL) {
		OSSL_PARAM params[2] = {
			OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
							 (char *)g_groups[group].name, 0),
			OSSL_PARAM_construct_end(),
		};

		ctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL);
		if (ctx == NULL || EVP_PKEY_keygen_init(ctx) != 1 ||
		    EVP_PKEY_CTX_set_params(ctx, params) != 1 ||
		    EVP_PKEY_generate(ctx, &dh->pkey) != 1 ||
		    EVP_PKEY_get_bn_param(dh->pkey, OSSL_PKEY_PARAM_PUB_KEY, &y) != 1) {
			goto out;
		}
	} else {
		/* A given private value (known-answer tests): y = g^x mod p. */
		EVP_PKEY *params_key = dh_from_values(group, NULL, NULL);

		x = BN_bin2bn(priv, (int)priv_len, NULL);
		bnctx = BN_CTX_new();
		y = BN_new();
		if (params_key == NULL || x == NULL || bnctx == NULL || y == NULL ||
		    EVP_PKEY_get_bn_param(params_key, OSSL_PKEY_PARAM_FFC_P, &p) != 1 ||
		    EVP_PKEY_get_bn_param(params_key, OSSL_PKEY_PARAM_FFC_G, &g) != 1 ||
		    BN_mod_exp(y, g, x, p, bnctx) != 1) {
			EVP_PKEY_free(params_key);
			goto out;
		}
		EVP_PKEY_free(params_key);
		dh->pkey = dh_from_values(group, y, x);
		if (dh->pkey == NULL) {
			goto out;
		}
	}
	ok = BN_bn2binpad(y, dh->pub, (int)len) == (int)len;
out:
	EVP_PKEY_CTX_free(ctx);
	BN_CTX_free(bnctx);
	BN_clear_free(x);
	BN_free(y);
	BN_free(p);
	BN_free(g);
	if (!ok) {
		nvme_dh_free(dh);
		return NULL;
	}
	return dh;
}

void
nvme_dh_free(struct nvme_dh *dh)
{
	if (dh != NULL) {
		EVP_PKEY_free(dh->pkey);
		free(dh);
	}
}

int
nvme_dh_public(const struct nvme_dh *dh, uint8_t *out, size_t len)
{
	if (len != nvme_auth_dhgroup_len(dh->group)) {
		return -EINVAL;
	}
	memcpy(out, dh->pub, len);
	return 0;
}

int
nvme_dh_derive(const struct nvme_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *z,
	       size_t z_len)
{
	size_t len = nvme_auth_dhgroup_len(dh->group), outl = z_len;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *peer_key = NULL;
	BIGNUM *y;
	int rc = -EINVAL;

	if (peer_len != len || z_len != len) {
		return -EINVAL;
	}
	y = BN_bin2bn(peer, (int)peer_len, NULL);
	if (y == NULL) {
		return -ENOMEM;
	}
	peer_key = dh_from_values(dh->group, y, NULL);
	BN_free(y);
	if (peer_key == NULL) {
		return -EINVAL;
	}
	ctx = EVP_PKEY_CTX_new(dh->pkey, NULL);
	if (ctx == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* The peer's value is validated (range and subgroup) before use. */
	if (EVP_PKEY_derive_init(ctx) != 1 || EVP_PKEY_CTX_set_dh_pad(ctx, 1) != 1 ||
	    EVP_PKEY_derive_set_peer_ex(ctx, peer_key, 1) != 1 ||
	    EVP_PKEY_derive(ctx, z, &outl) != 1 || outl != len) {
		OPENSSL_cleanse(z, z_len);
		goto out;
	}
	rc = 0;
out:
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(peer_key);
	return rc;
}
