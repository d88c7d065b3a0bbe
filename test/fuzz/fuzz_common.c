/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The set-up the libFuzzer harnesses over the target core share (see
 * fuzz_common.h). Done once per process, on the first input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/app.h"
#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/log.h"
#include "gga/nvmf.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "module/bdev/malloc/bdev_malloc.h"
#include "fuzz_common.h"

struct thread *g_fuzz_thread;
static const char *g_name = "fuzz";

void
fuzz_die(const char *what)
{
	fprintf(stderr, "%s: set-up failed: %s\n", g_name, what);
	abort();
}

int
fuzz_poll_all(void)
{
	int i;

	for (i = 0; i < FUZZ_MAX_POLLS && thread_poll(g_fuzz_thread, 0, 0) > 0; i++) {
	}
	return i;
}

void
fuzz_time_jump(uint64_t us)
{
	thread_poll(g_fuzz_thread, 0, ticks_get() + us_to_ticks(us));
	fuzz_poll_all();
}

void
fuzz_env_init(const char *name)
{
	struct bdev_malloc_opts mopts = { .name = "FuzzMalloc0",
					  .num_blocks = FUZZ_NS_BLOCKS,
					  .block_size = FUZZ_NS_BLOCK_SIZE };
	struct env_opts opts;

	g_name = name;
	log_set_level(getenv("FUZZ_VERBOSE") ? LOG_LEVEL_DEBUG : LOG_LEVEL_DISABLED);
	env_opts_init(&opts);
	opts.name = name;
	opts.arena_size = 64ull * 1024 * 1024;
	opts.no_huge = true;
	if (env_init(&opts) != 0 || thread_lib_init() != 0) {
		fuzz_die("env/thread");
	}
	g_fuzz_thread = thread_create("fuzz");
	if (g_fuzz_thread == NULL) {
		fuzz_die("thread");
	}
	thread_set_current(g_fuzz_thread);
	bdev_malloc_module_register();
	rpc_set_state(RPC_STATE_RUNTIME);
	if (bdev_subsystem_init() != 0) {
		fuzz_die("bdev");
	}
	fuzz_poll_all();
	if (bdev_malloc_create(&mopts, NULL) != 0) {
		fuzz_die("malloc bdev");
	}
	if (nvmf_get_app_subsystem()->init() != 0) {
		fuzz_die("nvmf");
	}
}

static void
transport_created(void *arg, int rc)
{
	*(int *)arg = rc;
}

struct nvmf_transport *
fuzz_transport_create(const struct nvmf_transport_ops *ops, const struct nvmf_transport_opts *opts)
{
	int rc = 1;

	if (nvmf_tgt_create_transport(ops, opts, transport_created, &rc) != 0) {
		fuzz_die("transport");
	}
	fuzz_poll_all();
	if (rc != 0) {
		fuzz_die("transport poll groups");
	}
	return nvmf_tgt_find_transport(ops->trtype);
}

/* A target-level listener whose transport never listened (see fuzz_subsystem_create()). */
static void
listener_without_socket(const struct nvmf_listen_addr *addr)
{
	struct nvmf_tgt_listener *tl = calloc(1, sizeof(*tl));

	if (tl == NULL) {
		fuzz_die("listener");
	}
	tl->addr = *addr;
	tl->transport = nvmf_tgt_find_transport(addr->trtype);
	tl->refs = 1;
	tl->stopped = true;
	tl->portid = ++g_nvmf_tgt.next_portid;
	TAILQ_INSERT_TAIL(&g_nvmf_tgt.listeners, tl, link);
}

struct nvmf_subsystem *
fuzz_subsystem_create(const struct nvmf_listen_addr *addr, bool transport_listens)
{
	struct nvmf_subsystem *subsys;
	uint32_t nsid;

	if (!transport_listens) {
		listener_without_socket(addr);
	}
	if (nvmf_subsystem_create(FUZZ_SUBNQN, NVMF_SUBTYPE_NVME, 4, &subsys) != 0 ||
	    nvmf_subsystem_add_listener(subsys, addr, NVME_ANA_OPTIMIZED) != 0 ||
	    nvmf_subsystem_add_ns(subsys, "FuzzMalloc0", 1, NULL, &nsid) != 0) {
		fuzz_die("subsystem");
	}
	nvmf_subsystem_set_allow_any_host(subsys, true);
	fuzz_poll_all();
	return subsys;
}
