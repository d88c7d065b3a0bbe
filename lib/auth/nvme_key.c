/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key formats of the NVMe specifications: DH-HMAC-CHAP secrets
 * ("DHHC-1:HH:...:") and TLS PSKs in the interchange format
 * ("NVMeTLSkey-1:HH:...:"). Both carry base64 of the key followed by the
 * CRC-32 (the zlib/gzip one) of the key, least significant byte first.
 */
#include <errno.h>
#include <string.h>

#include <isa-l/crc.h>
#include <openssl/evp.h>

#include "gga/nvme_auth.h"

/* The longest base64 text: a 64-byte key and its CRC, 68 bytes. */
#define KEY_B64_MAX 92

/*
 * Parse "<prefix>:HH:<base64>:" into hash and key (the CRC checked and
 * stripped). Returns the key length or -EINVAL.
 */
static int
key_text_parse(const char *text, const char *prefix, uint8_t *hash, uint8_t *key, size_t key_max)
{
	size_t plen = strlen(prefix), blen, pad = 0;
	uint8_t raw[KEY_B64_MAX];
	const char *b64, *end;
	uint32_t crc, want;
	int n;

	if (text == NULL || strncmp(text, prefix, plen) != 0 || text[plen] != ':') {
		return -EINVAL;
	}
	text += plen + 1;
	if (text[0] < '0' || text[0] > '9' || text[1] < '0' || text[1] > '9' || text[2] != ':') {
		return -EINVAL;
	}
	*hash = (uint8_t)((text[0] - '0') * 10 + (text[1] - '0'));
	b64 = text + 3;
	end = strchr(b64, ':');
	/* Exactly one ':' ends it; nothing may follow. */
	if (end == NULL || end[1] != '\0') {
		return -EINVAL;
	}
	blen = (size_t)(end - b64);
	if (blen == 0 || blen % 4 != 0 || blen > KEY_B64_MAX) {
		return -EINVAL;
	}
	for (size_t i = 0; i < blen; i++) {
		char c = b64[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '+' || c == '/' ||
			  (c == '=' && i >= blen - 2);

		if (!ok || (pad > 0 && c != '=')) {
			return -EINVAL;
		}
		pad += c == '=';
	}
	n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)blen);
	if (n < 0 || (size_t)n < pad + 4 + 1) {
		explicit_bzero(raw, sizeof(raw));
		return -EINVAL;
	}
	n -= (int)pad;
	n -= 4;
	if ((size_t)n > key_max) {
		explicit_bzero(raw, sizeof(raw));
		return -EINVAL;
	}
	want = (uint32_t)raw[n] | (uint32_t)raw[n + 1] << 8 | (uint32_t)raw[n + 2] << 16 |
	       (uint32_t)raw[n + 3] << 24;
	crc = crc32_gzip_refl(0, raw, (uint64_t)n);
	if (crc != want) {
		explicit_bzero(raw, sizeof(raw));
		return -EINVAL;
	}
	memcpy(key, raw, (size_t)n);
	explicit_bzero(raw, sizeof(raw));
	return n;
}

int
nvme_dhchap_secret_parse(const char *text, struct nvme_dhchap_secret *secret)
{
	int n;

	memset(secret, 0, sizeof(*secret));
	n = key_text_parse(text, "DHHC-1", &secret->hash, secret->key, sizeof(secret->key));
	if (n < 0) {
		return n;
	}
	/* Any of the three lengths with any transform, as Linux and SPDK accept. */
	if ((n != 32 && n != 48 && n != 64) || secret->hash > NVME_AUTH_HASH_MAX) {
		explicit_bzero(secret, sizeof(*secret));
		return -EINVAL;
	}
	secret->len = (uint8_t)n;
	return 0;
}

int
nvme_tls_psk_parse(const char *text, struct nvme_tls_psk *psk)
{
	int n;

	memset(psk, 0, sizeof(*psk));
	n = key_text_parse(text, "NVMeTLSkey-1", &psk->hash, psk->key, sizeof(psk->key));
	if (n < 0) {
		return n;
	}
	/* 00: used as is (32 or 48 bytes); 01/02: the hash its length must match. */
	if ((psk->hash == NVME_AUTH_HASH_NONE && n != 32 && n != 48) ||
	    (psk->hash != NVME_AUTH_HASH_NONE && psk->hash != NVME_AUTH_HASH_SHA256 &&
	     psk->hash != NVME_AUTH_HASH_SHA384) ||
	    (psk->hash != NVME_AUTH_HASH_NONE && (size_t)n != nvme_auth_hash_len(psk->hash))) {
		explicit_bzero(psk, sizeof(*psk));
		return -EINVAL;
	}
	psk->len = (uint8_t)n;
	return 0;
}
