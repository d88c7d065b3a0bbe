/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for DH-HMAC-CHAP's two state machines
 * (lib/auth/nvme_dhchap.c): a hostile peer talks to a controller and to a
 * host, in any order, with messages of its own making.
 *
 * Input: a configuration byte, then records [op][len_lo][len_hi][len bytes].
 *   config bit 0: DH group ffdhe2048 allowed too (slow: rarely set by seeds)
 *   config bit 1: the host asks for the controller's response
 *   op % 4: 0 AUTH_Send to the controller, 1 AUTH_Receive from it
 *           (len: the allocation length), 2 a message to the host,
 *           3 the host's next message.
 * Properties: neither side crashes or reads out of bounds (ASan); the
 * controller never authenticates a peer (the peer has no key); a host that
 * checks the controller never succeeds (the peer cannot make R2); a failed
 * transaction stays failed unless a new Negotiate starts one.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gga/nvme_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN  "nqn.2016-06.io.gga:fuzz"

static void
params(struct nvme_dhchap_params *p, uint8_t cfg)
{
	memset(p, 0, sizeof(*p));
	p->hostnqn = HOSTNQN;
	p->subnqn = SUBNQN;
	p->host_key.hash = NVME_AUTH_HASH_SHA256;
	p->host_key.len = 32;
	memset(p->host_key.key, 0x5a, 32);
	if (cfg & 2) {
		p->ctrlr_key.hash = NVME_AUTH_HASH_NONE;
		p->ctrlr_key.len = 48;
		memset(p->ctrlr_key.key, 0xa5, 48);
	}
	p->digests = NVME_AUTH_DIGESTS_ALL;
	p->dhgroups = (cfg & 1) ? 0x03 : 0x01;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[8192];
	struct nvme_dhchap_params p;
	struct nvme_dhchap c, h;
	size_t pos = 1;
	uint8_t cfg;

	if (size < 1) {
		return 0;
	}
	cfg = data[0];
	params(&p, cfg);
	nvme_dhchap_ctrlr_init(&c, &p, 7);
	nvme_dhchap_host_init(&h, &p, 3, 9);
	while (pos + 3 <= size) {
		uint8_t op = data[pos] % 4;
		size_t len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
		const uint8_t *msg = data + pos + 3;

		pos += 3;
		if (op != 1 && op != 3) {
			if (len > size - pos) {
				len = size - pos;
			}
			pos += len;
		}
		switch (op) {
		case 0: {
			/* Exactly the message's bytes, so ASan sees any read past them. */
			uint8_t *m = malloc(len > 0 ? len : 1);

			if (m == NULL) {
				abort();
			}
			memcpy(m, msg, len);
			(void)nvme_dhchap_ctrlr_send(&c, m, len);
			free(m);
			break;
		}
		case 1: {
			uint8_t *m = malloc(len > 0 ? len : 1);

			if (m == NULL) {
				abort();
			}
			(void)nvme_dhchap_ctrlr_recv(&c, m, len);
			free(m);
			break;
		}
		case 2: {
			uint8_t *m = malloc(len > 0 ? len : 1);

			if (m == NULL) {
				abort();
			}
			memcpy(m, msg, len);
			(void)nvme_dhchap_host_recv(&h, m, len);
			free(m);
			break;
		}
		default:
			(void)nvme_dhchap_host_next(&h, buf, len < sizeof(buf) ? len : sizeof(buf));
			break;
		}
		if (nvme_dhchap_result(&c) == NVME_DHCHAP_RES_SUCCESS) {
			abort(); /* authenticated a peer that has no key */
		}
		if ((cfg & 2) && nvme_dhchap_result(&h) == NVME_DHCHAP_RES_SUCCESS) {
			abort(); /* accepted a controller response nobody could make */
		}
	}
	nvme_dhchap_fini(&c);
	nvme_dhchap_fini(&h);
	return 0;
}
