/* SPDX-License-Identifier: BSD-3-Clause */
/* DH-HMAC-CHAP secrets and TLS PSKs read from keys of the keyring. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga/keyring.h"
#include "gga/nvme_auth.h"

/* Parse a key's text into out: 0 or -EINVAL. */
typedef int (*key_parse_fn)(const char *text, void *out);

static int
parse_dhchap(const char *text, void *out)
{
	return nvme_dhchap_secret_parse(text, out);
}

static int
parse_tls(const char *text, void *out)
{
	return nvme_tls_psk_parse(text, out);
}

static int
key_load(struct key *key, key_parse_fn parse, void *out)
{
	char text[KEYRING_MAX_KEY_SIZE + 1];
	int rc;

	rc = key_get_key(key, text, sizeof(text) - 1);
	if (rc >= 0) {
		text[rc] = '\0';
		rc = parse(text, out);
	}
	explicit_bzero(text, sizeof(text));
	return rc;
}

/* The lookups of both kinds; what names the format in the messages. */
static int
key_lookup(const char *name, struct key **key_out, key_parse_fn parse, void *out, void *tmp,
	   size_t size, const char *what, char *msg, size_t msg_len)
{
	struct key *key;
	int rc;

	if (key_out != NULL) {
		*key_out = NULL;
	}
	key = keyring_get_key(name);
	if (key == NULL) {
		snprintf(msg, msg_len, "no key named %s (keyring_file_add_key first)", name);
		return -ENOKEY;
	}
	rc = key_load(key, parse, out != NULL ? out : tmp);
	explicit_bzero(tmp, size);
	if (rc == -EINVAL) {
		snprintf(msg, msg_len, "key %s is not %s", name, what);
	} else if (rc != 0) {
		snprintf(msg, msg_len, "key %s cannot be read: %s", name, strerror(-rc));
	}
	if (rc != 0 || key_out == NULL) {
		keyring_put_key(key);
	} else {
		*key_out = key;
	}
	return rc;
}

int
nvme_dhchap_secret_load(struct key *key, struct nvme_dhchap_secret *secret)
{
	return key_load(key, parse_dhchap, secret);
}

int
nvme_dhchap_key_lookup(const char *name, struct key **key_out, struct nvme_dhchap_secret *secret,
		       char *msg, size_t msg_len)
{
	struct nvme_dhchap_secret tmp;

	return key_lookup(name, key_out, parse_dhchap, secret, &tmp, sizeof(tmp),
			  "a DH-HMAC-CHAP secret (DHHC-1:HH:...:)", msg, msg_len);
}

int
nvme_tls_psk_load(struct key *key, struct nvme_tls_psk *psk)
{
	return key_load(key, parse_tls, psk);
}

int
nvme_tls_key_lookup(const char *name, struct key **key_out, struct nvme_tls_psk *psk, char *msg,
		    size_t msg_len)
{
	struct nvme_tls_psk tmp;

	return key_lookup(name, key_out, parse_tls, psk, &tmp, sizeof(tmp),
			  "a TLS PSK (NVMeTLSkey-1:HH:...:)", msg, msg_len);
}
