/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worker threads for DH-HMAC-CHAP's costly steps (see nvme_auth_pool.h).
 * One mutex guards the FIFO and the counts; the jobs run outside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gga/nvme_auth_pool.h"

#define POOL_MAX_THREADS 8

struct key_slot {
	char key[NVME_AUTH_POOL_KEY_LEN];
	uint32_t jobs; /* 0: the slot is free */
};

struct nvme_auth_pool {
	struct nvme_auth_pool_opts opts;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nvme_auth_job *head, *tail;
	bool stopping;
	uint32_t inflight;
	struct nvme_auth_pool_stats stats;
	struct key_slot *keys; /* [max_jobs]: no more keys than jobs can be in */
	pthread_t threads[POOL_MAX_THREADS];
	uint32_t num_threads;
};

static struct nvme_auth_job *
take(struct nvme_auth_pool *p)
{
	struct nvme_auth_job *job;

	pthread_mutex_lock(&p->lock);
	while (p->head == NULL && !p->stopping) {
		pthread_cond_wait(&p->cond, &p->lock);
	}
	job = p->head;
	if (job != NULL) {
		p->head = job->next;
		if (p->head == NULL) {
			p->tail = NULL;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return job;
}

static void
release(struct nvme_auth_pool *p, struct nvme_auth_job *job)
{
	pthread_mutex_lock(&p->lock);
	p->keys[job->key_slot].jobs--;
	p->inflight--;
	pthread_mutex_unlock(&p->lock);
}

static void *
worker_main(void *arg)
{
	struct nvme_auth_pool *p = arg;
	struct nvme_auth_job *job;

	/* Lower than the reactors: an exchange may wait, a queue's I/O should not. */
	if (p->opts.nice != 0) {
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), p->opts.nice);
	}
	/* Drains the FIFO even when stopping: every job gets its done. */
	while ((job = take(p)) != NULL) {
		if (!nvme_auth_job_cancelled(job)) {
			job->work(job);
		}
		/* The slot frees before done: the owner may submit again from there on. */
		release(p, job);
		job->done(job);
	}
	return NULL;
}

int
nvme_auth_pool_create(const struct nvme_auth_pool_opts *opts, struct nvme_auth_pool **pool)
{
	struct nvme_auth_pool *p;
	char name[16];
	int rc;

	if (opts->threads == 0 || opts->threads > POOL_MAX_THREADS || opts->max_jobs == 0 ||
	    opts->max_per_key == 0 || opts->max_per_key > opts->max_jobs) {
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		return -ENOMEM;
	}
	p->keys = calloc(opts->max_jobs, sizeof(*p->keys));
	if (p->keys == NULL) {
		free(p);
		return -ENOMEM;
	}
	p->opts = *opts;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (uint32_t i = 0; i < opts->threads; i++) {
		rc = pthread_create(&p->threads[i], NULL, worker_main, p);
		if (rc != 0) {
			nvme_auth_pool_destroy(p);
			return -rc;
		}
		p->num_threads++;
		snprintf(name, sizeof(name), "auth_worker%u", i % POOL_MAX_THREADS);
		pthread_setname_np(p->threads[i], name);
	}
	*pool = p;
	return 0;
}

int
nvme_auth_pool_submit(struct nvme_auth_pool *p, const char *key, struct nvme_auth_job *job)
{
	uint32_t i, slot = UINT32_MAX;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		rc = -ESHUTDOWN;
		goto out;
	}
	for (i = 0; i < p->opts.max_jobs; i++) {
		if (p->keys[i].jobs > 0 &&
		    strncmp(p->keys[i].key, key, sizeof(p->keys[i].key)) == 0) {
			slot = i;
			break;
		}
		if (p->keys[i].jobs == 0 && slot == UINT32_MAX) {
			slot = i; /* the first free one, unless the key has its own further on */
		}
	}
	/* The key's own slot first: its cap is the tighter answer. */
	if (slot != UINT32_MAX && p->keys[slot].jobs >= p->opts.max_per_key) {
		p->stats.refused_key++;
		rc = -EUSERS;
		goto out;
	}
	if (p->inflight >= p->opts.max_jobs || slot == UINT32_MAX) {
		p->stats.refused_all++;
		rc = -EBUSY;
		goto out;
	}
	if (p->keys[slot].jobs == 0) {
		snprintf(p->keys[slot].key, sizeof(p->keys[slot].key), "%s", key);
	}
	p->keys[slot].jobs++;
	p->inflight++;
	p->stats.jobs++;
	job->key_slot = slot;
	job->next = NULL;
	__atomic_store_n(&job->cancelled, false, __ATOMIC_RELAXED);
	if (p->tail != NULL) {
		p->tail->next = job;
	} else {
		p->head = job;
	}
	p->tail = job;
	pthread_cond_signal(&p->cond);
out:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void
nvme_auth_job_cancel(struct nvme_auth_job *job)
{
	__atomic_store_n(&job->cancelled, true, __ATOMIC_RELEASE);
}

bool
nvme_auth_job_cancelled(const struct nvme_auth_job *job)
{
	return __atomic_load_n(&job->cancelled, __ATOMIC_ACQUIRE);
}

void
nvme_auth_pool_get_stats(struct nvme_auth_pool *p, struct nvme_auth_pool_stats *stats)
{
	pthread_mutex_lock(&p->lock);
	*stats = p->stats;
	stats->inflight = p->inflight;
	pthread_mutex_unlock(&p->lock);
}

void
nvme_auth_pool_destroy(struct nvme_auth_pool *p)
{
	if (p == NULL) {
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (uint32_t i = 0; i < p->num_threads; i++) {
		pthread_join(p->threads[i], NULL);
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->keys);
	free(p);
}
