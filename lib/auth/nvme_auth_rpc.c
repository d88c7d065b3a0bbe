/* SPDX-License-Identifier: BSD-3-Clause */
/* The DH-HMAC-CHAP lists of nvmf_set_config and bdev_nvme_set_options. */
#include "gga/nvme_auth.h"
#include "gga/rpc.h"

int
nvme_auth_rpc_lists(struct rpc_request *req, json_t *digests, json_t *dhgroups,
		    uint8_t *digest_mask, uint8_t *dhgroup_mask)
{
	int d = *digest_mask, g = *dhgroup_mask;

	if (digests != NULL) {
		d = rpc_name_mask(req, "dhchap_digests", digests, nvme_auth_hash_from_name);
		if (d < 0) {
			return -1;
		}
	}
	if (dhgroups != NULL) {
		g = rpc_name_mask(req, "dhchap_dhgroups", dhgroups, nvme_auth_dhgroup_from_name);
		if (g < 0) {
			return -1;
		}
	}
	*digest_mask = (uint8_t)d;
	*dhgroup_mask = (uint8_t)g;
	return 0;
}
