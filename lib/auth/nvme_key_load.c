/* SPDX-License-Identifier: BSD-3-Clause */
/* A DH-HMAC-CHAP secret read from a key of the keyring. */
#include <errno.h>
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
