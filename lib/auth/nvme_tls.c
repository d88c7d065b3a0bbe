/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP TLS 1.3 PSKs (NVMe/TCP Transport 1.1 section 3.6.1.3, TP 8011 and
 * TP 8018): the retained PSK, the PSK digest, the PSK identity and the TLS
 * PSK, on OpenSSL 3's HKDF (EVP_KDF) and HMAC (EVP_MAC).
 *
 * The steps, as the specification gives them (quoted in libnvme's
 * src/nvme/linux.c and in libnvme issue #870):
 *   retained PSK = HKDF-Expand-Label(HKDF-Extract(0, configured PSK),
 *                                    "HostNQN", NQNh, Length(configured PSK))
 *                  (interchange hash 01: SHA-256, 02: SHA-384; 00: the
 *                  configured PSK is the retained PSK);
 *   PSK digest   = Base64(HMAC(retained PSK, NQNh || " " || NQNc || " " ||
 *                                            "NVMe-over-Fabrics"));
 *   identity     = "NVMe0R<hh> NQNh NQNc" (version 0) or
 *                  "NVMe1R<hh> NQNh NQNc <PSK digest>" (version 1), <hh> the
 *                  hash of the cipher suite (01 TLS_AES_128_GCM_SHA256 for a
 *                  32-byte PSK, 02 TLS_AES_256_GCM_SHA384 for a 48-byte one);
 *   TLS PSK      = HKDF-Expand-Label(HKDF-Extract(0, retained PSK),
 *                                    "nvme-tls-psk", context, L), the context
 *                  being the identity (version 0) or "<hh> <PSK digest>"
 *                  (version 1), L the hash length.
 * HKDF-Expand-Label is RFC 8446 section 7.1: HKDF-Expand with info =
 * uint16 L (big-endian) || uint8 len || "tls13 " label || uint8 len ||
 * context (the vectors of section 3.4 carry their length). So the label
 * bytes are "tls13 HostNQN" and "tls13 nvme-tls-psk". HKDF-Extract(0, ...)
 * uses HashLen zero bytes as salt (RFC 5869 2.2; an empty salt gives the same
 * HMAC key).
 *
 * Which implementation this follows. The implementations disagreed on the
 * encoding of that info, not on the labels or the inputs:
 *  - SPDK (include/spdk_internal/nvme_tcp.h, nvme_tcp_derive_retained_psk()
 *    and nvme_tcp_derive_tls_psk(), read at spdk 3230130e) has always
 *    encoded it as RFC 8446 says. SPDK has version 0 identities only
 *    ("NVMe0R<hh>"; spdk issue #3838 shows its target refusing NVMe1R01).
 *  - libnvme until 1.15 wrote the length in host byte order (little-endian
 *    on x86-64) and the label and context without their length bytes:
 *    info = LE16(L) || "tls13 HostNQN" || NQNh, and
 *    LE16(L) || "tls13 nvme-tls-psk" || context. Chris Leech found TLS
 *    handshakes between the Linux host (libnvme, tlshd) and SPDK's target
 *    failing on that, judged SPDK correct and fixed libnvme (commit
 *    fde6b1f5 "libnvme: TLS PSK derivation fixes", PR #1040, July 2025,
 *    released in 1.16; reverted once in 855525b8 and re-applied with the old
 *    encoding kept as nvme_insert_tls_key_compat() and
 *    nvme_generate_tls_key_identity_compat(), PR #1051).
 *  - Linux's nvme_auth_derive_tls_psk() (drivers/nvme/common/auth.c, the
 *    TLS PSK of secure channel concatenation) wrote BE16(L) ||
 *    "tls13 nvme-tls-psk" || "%02d %s" without the length bytes until
 *    "nvme-auth: use hkdf_expand_label()" (Chris Leech, Hannes Reinecke,
 *    linux-nvme/linux-crypto, August 2025); Eric Biggers' 2026 rework of
 *    that function keeps the RFC layout. Its nvme_auth_generate_digest()
 *    computes the digest above. Earlier, libnvme PR #871 (issue #870, July
 *    2024) had made the version 1 context "<hh> <PSK digest>" where it had
 *    been the digest alone.
 * Today SPDK, libnvme (default) and Linux agree on RFC 8446's encoding:
 * that is NVME_TLS_KDF_RFC8446, the default. NVME_TLS_KDF_COMPAT computes
 * what libnvme <= 1.15 did (and its *_compat functions still do), for keys
 * that older nvme-cli versions inserted into a host's keyring. Identities of
 * both versions are built; version 0 is the one SPDK and nvme-cli's default
 * use.
 *
 * The known answers of test/unit/lib/tls/nvme_tls_ut.c come from
 * test/unit/lib/tls/tls_kat.py (hmac/hashlib only) and were confirmed
 * against SPDK's and libnvme's own code and libnvme's published test
 * vectors (test/psk.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "gga/nvme_auth.h"

/* The labels of HKDF-Expand-Label, with RFC 8446's "tls13 " prefix. */
#define LABEL_RETAINED "tls13 HostNQN"
#define LABEL_TLS_PSK  "tls13 nvme-tls-psk"

/* uint16 length, then label and context of up to 255 bytes each with their lengths. */
#define HKDF_INFO_MAX (2 + 1 + 255 + 1 + 255)

static bool
tls_hash_ok(uint8_t hash)
{
	return hash == NVME_AUTH_HASH_SHA256 || hash == NVME_AUTH_HASH_SHA384;
}

static bool
nqn_ok(const char *nqn)
{
	size_t len;

	if (nqn == NULL) {
		return false;
	}
	len = strnlen(nqn, NVME_TLS_NQN_MAX + 1);
	return len > 0 && len <= NVME_TLS_NQN_MAX;
}

/*
 * The info of HKDF-Expand-Label(secret, label, context, len): RFC 8446's
 * HkdfLabel, or libnvme's old encoding of it (little-endian length, no
 * length bytes). Returns its length, or -EINVAL if label or context are
 * longer than a vector of 255 bytes.
 */
static int
hkdf_label(enum nvme_tls_kdf kdf, uint16_t len, const char *label, const char *context,
	   uint8_t *info)
{
	size_t label_len = strlen(label), ctx_len = strlen(context), pos = 0;
	bool rfc = kdf == NVME_TLS_KDF_RFC8446;

	if (label_len > 255 || ctx_len > 255) {
		return -EINVAL;
	}
	info[pos++] = (uint8_t)(rfc ? len >> 8 : len);
	info[pos++] = (uint8_t)(rfc ? len : len >> 8);
	if (rfc) {
		info[pos++] = (uint8_t)label_len;
	}
	memcpy(info + pos, label, label_len);
	pos += label_len;
	if (rfc) {
		info[pos++] = (uint8_t)ctx_len;
	}
	memcpy(info + pos, context, ctx_len);
	pos += ctx_len;
	return (int)pos;
}

/*
 * One HKDF step with OpenSSL's EVP_KDF "HKDF": mode "EXTRACT_ONLY" (key the
 * IKM, salt given, out the PRK of the hash's length) or "EXPAND_ONLY" (key
 * the PRK, info given). 0 or -EIO.
 */
static int
hkdf_step(uint8_t hash, const char *mode, const uint8_t *key, size_t key_len, const uint8_t *salt,
	  size_t salt_len, const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
	OSSL_PARAM params[6], *p = params;
	EVP_KDF_CTX *ctx = NULL;
	EVP_KDF *kdf;
	int rc = -EIO;

	kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	if (kdf == NULL) {
		return -EIO;
	}
	ctx = EVP_KDF_CTX_new(kdf);
	if (ctx == NULL) {
		rc = -ENOMEM;
		goto out_free_kdf;
	}
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						(char *)nvme_auth_hash_name(hash), 0);
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, (char *)mode, 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_len);
	if (salt != NULL) {
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt,
							 salt_len);
	}
	if (info != NULL) {
		/* All of the info in one parameter (OpenSSL 3.0 keeps only the last one). */
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info,
							 info_len);
	}
	*p = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(ctx, out, out_len, params) == 1) {
		rc = 0;
	}
	EVP_KDF_CTX_free(ctx);
out_free_kdf:
	EVP_KDF_free(kdf);
	return rc;
}

/*
 * HKDF-Expand-Label(HKDF-Extract(0, ikm), label, context, out_len) with the
 * given hash. 0, -EINVAL (context too long) or -EIO.
 */
static int
extract_expand_label(uint8_t hash, const uint8_t *ikm, size_t ikm_len, const char *label,
		     const char *context, enum nvme_tls_kdf kdf, uint8_t *out, size_t out_len)
{
	static const uint8_t zero_salt[NVME_AUTH_DIGEST_MAX];
	size_t hl = nvme_auth_hash_len(hash);
	uint8_t prk[NVME_AUTH_DIGEST_MAX];
	uint8_t info[HKDF_INFO_MAX];
	int info_len, rc;

	info_len = hkdf_label(kdf, (uint16_t)out_len, label, context, info);
	if (info_len < 0) {
		return info_len;
	}
	rc = hkdf_step(hash, "EXTRACT_ONLY", ikm, ikm_len, zero_salt, hl, NULL, 0, prk, hl);
	if (rc == 0) {
		rc = hkdf_step(hash, "EXPAND_ONLY", prk, hl, NULL, 0, info, (size_t)info_len, out,
			       out_len);
	}
	OPENSSL_cleanse(prk, sizeof(prk));
	return rc;
}

uint8_t
nvme_tls_psk_cipher_hash(const struct nvme_tls_psk *configured)
{
	switch (configured->len) {
	case 32:
		return NVME_AUTH_HASH_SHA256;
	case 48:
		return NVME_AUTH_HASH_SHA384;
	default:
		return 0;
	}
}

const char *
nvme_tls_cipher_suite(uint8_t hash)
{
	switch (hash) {
	case NVME_AUTH_HASH_SHA256:
		return "TLS_AES_128_GCM_SHA256";
	case NVME_AUTH_HASH_SHA384:
		return "TLS_AES_256_GCM_SHA384";
	default:
		return NULL;
	}
}

int
nvme_tls_retained_psk(const struct nvme_tls_psk *configured, const char *hostnqn,
		      enum nvme_tls_kdf kdf, uint8_t *out)
{
	if (nvme_tls_psk_cipher_hash(configured) == 0 || !nqn_ok(hostnqn) ||
	    (kdf != NVME_TLS_KDF_RFC8446 && kdf != NVME_TLS_KDF_COMPAT)) {
		return -EINVAL;
	}
	if (configured->hash == NVME_AUTH_HASH_NONE) {
		memcpy(out, configured->key, configured->len);
		return 0;
	}
	/* The interchange format ties the PSK's length to its hash. */
	if (!tls_hash_ok(configured->hash) ||
	    configured->len != nvme_auth_hash_len(configured->hash)) {
		return -EINVAL;
	}
	return extract_expand_label(configured->hash, configured->key, configured->len,
				    LABEL_RETAINED, hostnqn, kdf, out, configured->len);
}

int
nvme_tls_psk_digest(uint8_t hash, const uint8_t *psk, size_t psk_len, const char *hostnqn,
		    const char *subnqn, char *digest, size_t size)
{
	static const char seed[] = "NVMe-over-Fabrics";
	size_t hl = nvme_auth_hash_len(hash), outl = 0;
	uint8_t mac_out[NVME_AUTH_DIGEST_MAX];
	OSSL_PARAM params[2];
	EVP_MAC_CTX *ctx = NULL;
	EVP_MAC *mac;
	int rc = -EIO;

	if (!tls_hash_ok(hash) || psk_len != hl || !nqn_ok(hostnqn) || !nqn_ok(subnqn)) {
		return -EINVAL;
	}
	/* Base64 of hl bytes, padded, and the NUL. */
	if (size < 4 * ((hl + 2) / 3) + 1) {
		return -ENOBUFS;
	}
	mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	if (mac == NULL) {
		return -EIO;
	}
	ctx = EVP_MAC_CTX_new(mac);
	if (ctx == NULL) {
		rc = -ENOMEM;
		goto out_free_mac;
	}
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     (char *)nvme_auth_hash_name(hash), 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, psk, psk_len, params) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)hostnqn, strlen(hostnqn)) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)" ", 1) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)subnqn, strlen(subnqn)) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)" ", 1) != 1 ||
	    EVP_MAC_update(ctx, (const uint8_t *)seed, sizeof(seed) - 1) != 1 ||
	    EVP_MAC_final(ctx, mac_out, &outl, sizeof(mac_out)) != 1 || outl != hl) {
		goto out_free_ctx;
	}
	/* EVP_EncodeBlock: standard alphabet, '=' padding, NUL-terminated. */
	EVP_EncodeBlock((unsigned char *)digest, mac_out, (int)hl);
	rc = 0;
out_free_ctx:
	EVP_MAC_CTX_free(ctx);
out_free_mac:
	EVP_MAC_free(mac);
	OPENSSL_cleanse(mac_out, sizeof(mac_out));
	return rc;
}

int
nvme_tls_psk_identity(unsigned int version, uint8_t hash, const char *hostnqn, const char *subnqn,
		      const char *digest, char *identity, size_t size)
{
	int n;

	if (!tls_hash_ok(hash) || !nqn_ok(hostnqn) || !nqn_ok(subnqn) || version > 1) {
		return -EINVAL;
	}
	if (version == 0) {
		n = snprintf(identity, size, "NVMe0R%02u %s %s", hash, hostnqn, subnqn);
	} else {
		size_t dl = 4 * ((nvme_auth_hash_len(hash) + 2) / 3);

		if (digest == NULL || strnlen(digest, dl + 1) != dl) {
			return -EINVAL;
		}
		n = snprintf(identity, size, "NVMe1R%02u %s %s %s", hash, hostnqn, subnqn, digest);
	}
	if (n < 0) {
		return -EINVAL;
	}
	return (size_t)n < size ? 0 : -ENOBUFS;
}

/* Copy the next space-free word of *p into out (size bytes); 0 or -EINVAL. */
static int
next_word(const char **p, char *out, size_t size)
{
	size_t n = strcspn(*p, " ");

	if (n == 0 || n >= size) {
		return -EINVAL;
	}
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n;
	return 0;
}

int
nvme_tls_identity_parse(const char *identity, struct nvme_tls_identity *id)
{
	const char *p = identity;

	memset(id, 0, sizeof(*id));
	if (strncmp(p, "NVMe", 4) != 0 || (p[4] != '0' && p[4] != '1') || p[5] != 'R' ||
	    p[6] != '0' || (p[7] != '1' && p[7] != '2') || p[8] != ' ') {
		return -EINVAL;
	}
	id->version = (unsigned int)(p[4] - '0');
	id->hash = p[7] == '1' ? NVME_AUTH_HASH_SHA256 : NVME_AUTH_HASH_SHA384;
	p += 9;
	if (next_word(&p, id->hostnqn, sizeof(id->hostnqn)) != 0 || *p++ != ' ' ||
	    next_word(&p, id->subnqn, sizeof(id->subnqn)) != 0) {
		goto out_invalid;
	}
	if (id->version == 1 &&
	    (*p++ != ' ' || next_word(&p, id->digest, sizeof(id->digest)) != 0)) {
		goto out_invalid;
	}
	if (*p != '\0') {
		goto out_invalid;
	}
	return 0;

out_invalid:
	memset(id, 0, sizeof(*id));
	return -EINVAL;
}

int
nvme_tls_derive_psk(uint8_t hash, const uint8_t *psk, size_t psk_len, unsigned int version,
		    const char *context, enum nvme_tls_kdf kdf, uint8_t *out)
{
	size_t hl = nvme_auth_hash_len(hash);
	char ctx[3 + NVME_TLS_DIGEST_MAX];
	int n;

	if (!tls_hash_ok(hash) || psk_len != hl || context == NULL || version > 1 ||
	    (kdf != NVME_TLS_KDF_RFC8446 && kdf != NVME_TLS_KDF_COMPAT)) {
		return -EINVAL;
	}
	if (version == 1) {
		n = snprintf(ctx, sizeof(ctx), "%02u %s", hash, context);
		if (n < 0 || (size_t)n >= sizeof(ctx)) {
			return -EINVAL;
		}
		context = ctx;
	}
	return extract_expand_label(hash, psk, psk_len, LABEL_TLS_PSK, context, kdf, out, hl);
}

int
nvme_tls_key_derive(const struct nvme_tls_psk *configured, const char *hostnqn, const char *subnqn,
		    unsigned int version, enum nvme_tls_kdf kdf, struct nvme_tls_key *key)
{
	uint8_t hash = nvme_tls_psk_cipher_hash(configured);
	char digest[NVME_TLS_DIGEST_MAX] = "";
	uint8_t retained[48];
	int rc;

	memset(key, 0, sizeof(*key));
	if (hash == 0 || version > 1) {
		return -EINVAL;
	}
	rc = nvme_tls_retained_psk(configured, hostnqn, kdf, retained);
	if (rc != 0) {
		goto out;
	}
	if (version == 1) {
		rc = nvme_tls_psk_digest(hash, retained, configured->len, hostnqn, subnqn, digest,
					 sizeof(digest));
		if (rc != 0) {
			goto out_wipe;
		}
	}
	rc = nvme_tls_psk_identity(version, hash, hostnqn, subnqn, digest, key->identity,
				   sizeof(key->identity));
	if (rc != 0) {
		goto out_wipe;
	}
	rc = nvme_tls_derive_psk(hash, retained, configured->len, version,
				 version == 0 ? key->identity : digest, kdf, key->psk);
	if (rc == 0) {
		key->hash = hash;
		key->len = configured->len;
	}
out_wipe:
	OPENSSL_cleanse(retained, sizeof(retained));
out:
	if (rc != 0) {
		OPENSSL_cleanse(key, sizeof(*key));
	}
	return rc;
}
