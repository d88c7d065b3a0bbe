/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the libFuzzer harnesses that run the target core share: one
 * hand-polled thread (app thread and poll group at once), the env, the bdev
 * layer with a malloc bdev, the NVMe-oF core, and an NVM subsystem with that
 * bdev as namespace 1 that any host may use on one address.
 */
#ifndef GGA_TEST_FUZZ_COMMON_H
#define GGA_TEST_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target/nvmf_internal.h"

#define FUZZ_SUBNQN        "nqn.2016-06.io.gga:fuzz"
#define FUZZ_HOSTNQN       "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define FUZZ_NS_BLOCKS     256
#define FUZZ_NS_BLOCK_SIZE 512
/* thread_poll() calls of one fuzz_poll_all(): work left after that is a hang. */
#define FUZZ_MAX_POLLS     1000

extern struct thread *g_fuzz_thread;

/* Print "NAME: set-up failed: WHAT" and abort. */
void fuzz_die(const char *what) __attribute__((noreturn));

/* The env, the thread, the bdev layer with FuzzMalloc0, the NVMe-oF core. `name` names the env. */
void fuzz_env_init(const char *name);

/* Poll the thread until an iteration does nothing (at most FUZZ_MAX_POLLS). Returns the polls. */
int fuzz_poll_all(void);

/*
 * Let `us` microseconds pass for the timed pollers (ICReq wait, TermReq
 * linger, keep-alive, RDMA close timer): one poll with the clock that far
 * ahead, then fuzz_poll_all().
 */
void fuzz_time_jump(uint64_t us);

/*
 * Create a transport through the core (so every poll group gets its part)
 * and wait for it; aborts on failure.
 */
struct nvmf_transport *fuzz_transport_create(const struct nvmf_transport_ops *ops,
					     const struct nvmf_transport_opts *opts);

/*
 * Create FUZZ_SUBNQN (FuzzMalloc0 as namespace 1, any host) listening on
 * `addr`. Unless transport_listens, the target-level listener is entered as
 * already stopped, so the transport opens no socket for it (the harness
 * hands connections over itself); Connect checks the address all the same.
 */
struct nvmf_subsystem *fuzz_subsystem_create(const struct nvmf_listen_addr *addr,
					     bool transport_listens);

/* The unread rest of an input. */
struct fuzz_input {
	const uint8_t *p;
	size_t left;
};

/* The next n bytes of the input, or NULL (and nothing taken) if fewer are left. */
static inline const uint8_t *
fuzz_take(struct fuzz_input *in, size_t n)
{
	const uint8_t *p = in->p;

	if (in->left < n) {
		return NULL;
	}
	in->p += n;
	in->left -= n;
	return p;
}

/* A small deterministic generator (xorshift32) for chunk sizes and choices. */
static inline uint32_t
fuzz_rand(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

#endif /* GGA_TEST_FUZZ_COMMON_H */
