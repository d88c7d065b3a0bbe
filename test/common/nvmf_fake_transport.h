/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fake NVMe-oF transport for tests that drive the target core without
 * sockets or verbs (test/unit/target/nvmf, test/fuzz/fuzz_nvmf_cmd): the test
 * builds each request itself and calls nvmf_request_exec(); completing a
 * request only marks it done, and a disconnect finishes the qpair at once.
 * Everything runs on the one thread the test polls.
 */
#ifndef GGA_TEST_NVMF_FAKE_TRANSPORT_H
#define GGA_TEST_NVMF_FAKE_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "target/nvmf_internal.h"

struct fake_qpair {
	struct nvmf_qpair qpair;
	bool disconnected;
	bool fini_done;
	/* Requests still out: the test releases the qpair later, by hand. */
	bool hold_release;
};

/* A request of the fake transport; tests embed it in their own. */
struct fake_req {
	struct nvmf_request req;
	struct iovec iov;
	bool done;
};

extern struct nvmf_transport g_fake_transport;

/*
 * Give g_fake_transport its default options and add it to the target as
 * transport number `index` (after nvmf's subsystem init).
 */
void fake_transport_add(uint32_t index);

/* A qpair of the fake transport on poll group 0, accepted on addr; NULL without memory. */
struct fake_qpair *fake_qpair_new(const struct nvmf_listen_addr *addr, const char *peer);

/*
 * The transport's qpair_disconnect: the first call starts the core's fini,
 * whose end sets fini_done and releases the qpair (unless hold_release).
 */
void fake_qpair_disconnect(struct nvmf_qpair *qpair);

#endif /* GGA_TEST_NVMF_FAKE_TRANSPORT_H */
