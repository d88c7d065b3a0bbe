/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small pool of worker threads for the costly steps of DH-HMAC-CHAP (DH
 * key generation, shared-secret derivation with the peer value's subgroup
 * check, the hashes): the reactors hand a job over and hear back when it is
 * done, so an exchange costs them microseconds.
 *
 * Admission is bounded: at most max_jobs jobs queued or running in all, and
 * at most max_per_key of them under one key (the target uses the host NQN),
 * so a peer that can start exchanges at will fills its own share and no
 * more. A job over either cap is refused at once, never queued.
 *
 * A job's done runs on the worker after its work (or instead of it, once the
 * job was cancelled before it started); it is the owner's hook to pass the
 * result to its own thread, and the job's memory is the owner's again after
 * it returns. Destroying the pool finishes every job still queued (work
 * skipped if cancelled) and joins the threads.
 */
#ifndef GGA_NVME_AUTH_POOL_H
#define GGA_NVME_AUTH_POOL_H

#include <stdbool.h>
#include <stdint.h>

struct nvme_auth_pool;
struct nvme_auth_job;

typedef void (*nvme_auth_job_fn)(struct nvme_auth_job *job);

struct nvme_auth_job {
	nvme_auth_job_fn work;
	nvme_auth_job_fn done;
	/* Pool private. */
	bool cancelled;
	uint32_t key_slot;
	struct nvme_auth_job *next;
};

struct nvme_auth_pool_opts {
	uint32_t threads;     /* 1..8 */
	uint32_t max_jobs;    /* queued or running, in all (>= 1) */
	uint32_t max_per_key; /* queued or running under one key (1..max_jobs) */
	int nice;             /* the workers' nice value (a reactor comes first) */
};

struct nvme_auth_pool_stats {
	uint64_t jobs;        /* admitted */
	uint64_t refused_all; /* refused: max_jobs reached */
	uint64_t refused_key; /* refused: the key's max_per_key reached */
	uint32_t inflight;
};

#define NVME_AUTH_POOL_KEY_LEN 256

int nvme_auth_pool_create(const struct nvme_auth_pool_opts *opts, struct nvme_auth_pool **pool);
/*
 * Queue job under key (any thread). 0: admitted; -EBUSY: max_jobs jobs are
 * in; -EUSERS: key has max_per_key jobs in; -ESHUTDOWN: the pool stops.
 */
int nvme_auth_pool_submit(struct nvme_auth_pool *pool, const char *key, struct nvme_auth_job *job);
/* The job's work need not run (any thread); its done still runs. */
void nvme_auth_job_cancel(struct nvme_auth_job *job);
bool nvme_auth_job_cancelled(const struct nvme_auth_job *job);
void nvme_auth_pool_get_stats(struct nvme_auth_pool *pool, struct nvme_auth_pool_stats *stats);
/* Finish the queued jobs, join the threads, free (NULL: nothing). */
void nvme_auth_pool_destroy(struct nvme_auth_pool *pool);

#endif /* GGA_NVME_AUTH_POOL_H */
