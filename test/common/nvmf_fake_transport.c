/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>

#include "gga/util.h"

#include "test/common/nvmf_fake_transport.h"

struct nvmf_transport g_fake_transport;

static void
fake_req_complete(struct nvmf_request *req)
{
	struct fake_req *r = container_of(req, struct fake_req, req);

	/* A request completed twice would be sent twice by a real transport. */
	if (r->done) {
		fprintf(stderr, "fake transport: request completed twice (opc 0x%x)\n",
			req->cmd.opc);
		abort();
	}
	r->done = true;
}

static void
fake_fini_done(struct nvmf_qpair *qpair)
{
	struct fake_qpair *fq = container_of(qpair, struct fake_qpair, qpair);

	fq->fini_done = true;
	if (!fq->hold_release) {
		nvmf_qpair_release(qpair);
	}
}

void
fake_qpair_disconnect(struct nvmf_qpair *qpair)
{
	struct fake_qpair *fq = container_of(qpair, struct fake_qpair, qpair);

	if (!fq->disconnected) {
		fq->disconnected = true;
		nvmf_qpair_fini(qpair, fake_fini_done);
	}
}

static int
fake_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
	return 0;
}

static void
fake_stop_listen(struct nvmf_transport *t, const struct nvmf_listen_addr *addr)
{
}

static void
fake_destroy(struct nvmf_transport *t)
{
}

static const struct nvmf_transport_ops g_fake_ops = {
	.name = "FAKE",
	.trtype = NVME_TRTYPE_LOOP,
	.sgls = NVME_SGLS_SUPPORTED,
	.destroy = fake_destroy,
	.listen = fake_listen,
	.stop_listen = fake_stop_listen,
	.req_complete = fake_req_complete,
	.qpair_disconnect = fake_qpair_disconnect,
};

void
fake_transport_add(uint32_t index)
{
	nvmf_transport_opts_init(&g_fake_ops, &g_fake_transport.opts);
	g_fake_transport.ops = &g_fake_ops;
	g_fake_transport.index = index;
	TAILQ_INSERT_TAIL(&g_nvmf_tgt.transports, &g_fake_transport, link);
}

struct fake_qpair *
fake_qpair_new(const struct nvmf_listen_addr *addr, const char *peer)
{
	struct fake_qpair *fq = calloc(1, sizeof(*fq));

	if (fq != NULL) {
		nvmf_qpair_init(&fq->qpair, &g_fake_transport, &g_nvmf_tgt.pgs[0], addr, peer);
	}
	return fq;
}
