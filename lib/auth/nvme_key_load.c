/* SPDX-License-Identifier: BSD-3-Clause */
/* DH-HMAC-CHAP secrets read from keys of the keyring. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gga/keyring.h"
#include "gga/nvme_auth.h"

int
nvme_dhchap_secret_load(struct key *key, struct nvme_dhchap_secret *secret)
{
	char text[KEYRING_MAX_KEY_SIZE + 1];
	int rc;

	rc = key_get_key(key, text, sizeof(text) - 1);
	if (rc >= 0) {
		text[rc] = '\0';
		rc = nvme_dhchap_secret_parse(text, secret);
	}
	explicit_bzero(text, sizeof(text));
	return rc;
}

int
nvme_dhchap_key_lookup(const char *name, struct key **key_out, struct nvme_dhchap_secret *secret,
		       char *msg, size_t msg_len)
{
	struct nvme_dhchap_secret tmp;
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
	rc = nvme_dhchap_secret_load(key, secret != NULL ? secret : &tmp);
	explicit_bzero(&tmp, sizeof(tmp));
	if (rc == -EINVAL) {
		snprintf(msg, msg_len, "key %s is not a DH-HMAC-CHAP secret (DHHC-1:HH:...:)",
			 name);
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
