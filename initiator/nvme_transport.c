/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transports built into the host library, registered explicitly as on
 * the target (target/nvmf.c). A build without rdma-core leaves nvme_rdma.c
 * out and lists no RDMA transport: a controller on RDMA is then refused.
 */
#include <stddef.h>

#include "gga/util.h"

#include "nvme_internal.h"

static const struct nvme_transport_ops *const g_transports[] = {
	&nvme_tcp_ops,
#ifdef GGA_CONFIG_RDMA
	&nvme_rdma_ops,
#endif
};

const struct nvme_transport_ops *
nvme_transport_find(enum nvme_transport_type trtype)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(g_transports); i++) {
		if (g_transports[i]->trtype == trtype) {
			return g_transports[i];
		}
	}
	return NULL;
}
