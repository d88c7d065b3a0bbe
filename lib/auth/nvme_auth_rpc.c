/* SPDX-License-Identifier: BSD-3-Clause */
/* The DH-HMAC-CHAP lists of nvmf_set_config and bdev_nvme_set_options: decoded and saved. */
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

void
nvme_auth_rpc_lists_config(json_t *config, const char *method, uint8_t digest_mask,
			   uint8_t dhgroup_mask)
{
	json_t *digests, *groups;

	if (digest_mask == NVME_AUTH_DIGESTS_ALL && dhgroup_mask == NVME_AUTH_DHGROUPS_ALL) {
		return;
	}
	digests = json_array();
	groups = json_array();
	for (uint8_t id = 0; id <= NVME_AUTH_DHGROUP_MAX; id++) {
		if (digest_mask & (1u << id)) {
			json_array_append_new(digests, json_string(nvme_auth_hash_name(id)));
		}
		if (dhgroup_mask & (1u << id)) {
			json_array_append_new(groups, json_string(nvme_auth_dhgroup_name(id)));
		}
	}
	json_array_append_new(config,
			      json_pack("{s:s, s:{s:o, s:o}}", "method", method, "params",
					"dhchap_digests", digests, "dhchap_dhgroups", groups));
}
