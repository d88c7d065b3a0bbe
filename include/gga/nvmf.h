/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NVMe over Fabrics target (target/, libgga_nvmf.a): subsystems,
 * namespaces backed by bdevs, controllers, and the NVMe/TCP and NVMe/RDMA
 * transports, all configured over JSON-RPC with SPDK's method names
 * (nvmf_create_transport, nvmf_create_subsystem, nvmf_subsystem_add_ns,
 * nvmf_subsystem_add_listener, ...; see docs/RPC.md).
 *
 * An application that exports bdevs registers the target as an app
 * subsystem before app_start():
 *
 *	app_subsystem_register(nvmf_get_app_subsystem());
 *
 * Its init registers the RPCs and creates the discovery subsystem; its
 * save_config part recreates transports, subsystems, hosts, namespaces and
 * listeners; its fini (at SIGINT/SIGTERM) closes the listeners, disconnects
 * every host and releases the namespaces before the bdev layer stops.
 */
#ifndef GGA_NVMF_H
#define GGA_NVMF_H

struct app_subsystem;

struct app_subsystem *nvmf_get_app_subsystem(void);

#endif /* GGA_NVMF_H */
