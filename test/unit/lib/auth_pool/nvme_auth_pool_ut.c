/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DH-HMAC-CHAP worker pool (lib/auth/nvme_auth_pool.c): jobs run off the
 * caller's thread and each gets its done once; the caps refuse at once (in
 * all, and per key) and free as jobs end; a cancelled job skips its work
 * but not its done; destroying the pool finishes what is queued.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "gga/nvme_auth_pool.h"
#include "gga/util.h"
#include "gga_ut.h"

struct tjob {
	struct nvme_auth_job base;
	pthread_t worked_on;
	int worked;
	int done;
};

/* Jobs block in their work until the gate opens. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static bool g_gate_open;
static int g_started;
static int g_done;

static void
tjob_work(struct nvme_auth_job *job)
{
	struct tjob *t = (struct tjob *)job;

	pthread_mutex_lock(&g_lock);
	g_started++;
	pthread_cond_broadcast(&g_cond);
	while (!g_gate_open) {
		pthread_cond_wait(&g_cond, &g_lock);
	}
	t->worked_on = pthread_self();
	t->worked++;
	pthread_mutex_unlock(&g_lock);
}

static void
tjob_done(struct nvme_auth_job *job)
{
	struct tjob *t = (struct tjob *)job;

	pthread_mutex_lock(&g_lock);
	t->done++;
	g_done++;
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
}

static void
reset(bool open)
{
	pthread_mutex_lock(&g_lock);
	g_gate_open = open;
	g_started = 0;
	g_done = 0;
	pthread_mutex_unlock(&g_lock);
}

static void
gate_open(void)
{
	pthread_mutex_lock(&g_lock);
	g_gate_open = true;
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
}

/* Wait (bounded) until *what reaches n under g_lock. */
static bool
wait_for(int *what, int n)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&g_lock);
		bool ok = *what >= n;
		pthread_mutex_unlock(&g_lock);
		if (ok) {
			return true;
		}
		usleep(1000);
	}
	return false;
}

static void
tjob_init(struct tjob *t)
{
	memset(t, 0, sizeof(*t));
	t->base.work = tjob_work;
	t->base.done = tjob_done;
}

static void
test_runs_off_thread(void)
{
	struct nvme_auth_pool_opts o = { .threads = 2, .max_jobs = 8, .max_per_key = 8 };
	struct nvme_auth_pool *p = NULL;
	struct tjob j[6];

	reset(true);
	CU_ASSERT_EQUAL_FATAL(nvme_auth_pool_create(&o, &p), 0);
	for (int i = 0; i < 6; i++) {
		tjob_init(&j[i]);
		CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "h", &j[i].base), 0);
	}
	CU_ASSERT(wait_for(&g_done, 6));
	for (int i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(j[i].worked, 1);
		CU_ASSERT_EQUAL(j[i].done, 1);
		CU_ASSERT(!pthread_equal(j[i].worked_on, pthread_self()));
	}
	nvme_auth_pool_destroy(p);
}

static void
test_caps(void)
{
	struct nvme_auth_pool_opts o = { .threads = 1, .max_jobs = 5, .max_per_key = 2 };
	struct nvme_auth_pool_stats st;
	struct nvme_auth_pool *p = NULL;
	struct tjob j[8];

	reset(false);
	CU_ASSERT_EQUAL_FATAL(nvme_auth_pool_create(&o, &p), 0);
	for (int i = 0; i < 8; i++) {
		tjob_init(&j[i]);
	}
	/* Key a: two in, the third refused for its key. */
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "a", &j[0].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "a", &j[1].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "a", &j[2].base), -EUSERS);
	/* Other keys still get in, up to five in all. */
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "b", &j[3].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "b", &j[4].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "c", &j[5].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "d", &j[6].base), -EBUSY);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "a", &j[6].base), -EUSERS);
	nvme_auth_pool_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.jobs, 5);
	CU_ASSERT_EQUAL(st.refused_key, 2);
	CU_ASSERT_EQUAL(st.refused_all, 1);
	CU_ASSERT_EQUAL(st.inflight, 5);
	/* Once the jobs end, the shares are free again. */
	gate_open();
	CU_ASSERT(wait_for(&g_done, 5));
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "a", &j[2].base), 0);
	CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "d", &j[6].base), 0);
	CU_ASSERT(wait_for(&g_done, 7));
	nvme_auth_pool_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.inflight, 0);
	nvme_auth_pool_destroy(p);
	for (int i = 0; i < 7; i++) {
		CU_ASSERT_EQUAL(j[i].done, 1);
	}
	CU_ASSERT_EQUAL(j[7].done, 0);
}

static void
test_cancel_and_destroy(void)
{
	struct nvme_auth_pool_opts o = { .threads = 1, .max_jobs = 4, .max_per_key = 4 };
	struct nvme_auth_pool *p = NULL;
	struct tjob j[3];

	reset(false);
	CU_ASSERT_EQUAL_FATAL(nvme_auth_pool_create(&o, &p), 0);
	for (int i = 0; i < 3; i++) {
		tjob_init(&j[i]);
		CU_ASSERT_EQUAL(nvme_auth_pool_submit(p, "h", &j[i].base), 0);
	}
	/* The first is running (blocked); the queued two are cancelled. */
	CU_ASSERT(wait_for(&g_started, 1));
	nvme_auth_job_cancel(&j[1].base);
	nvme_auth_job_cancel(&j[2].base);
	gate_open();
	/* Destroy finishes the queue before it joins. */
	nvme_auth_pool_destroy(p);
	CU_ASSERT_EQUAL(j[0].worked, 1);
	CU_ASSERT_EQUAL(j[1].worked, 0);
	CU_ASSERT_EQUAL(j[2].worked, 0);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(j[i].done, 1);
	}
	nvme_auth_pool_destroy(NULL);
}

static void
test_bad_opts(void)
{
	struct nvme_auth_pool *p = NULL;
	struct nvme_auth_pool_opts o = { .threads = 0, .max_jobs = 4, .max_per_key = 4 };

	CU_ASSERT_EQUAL(nvme_auth_pool_create(&o, &p), -EINVAL);
	o.threads = 1;
	o.max_per_key = 5;
	CU_ASSERT_EQUAL(nvme_auth_pool_create(&o, &p), -EINVAL);
	o.max_jobs = 0;
	CU_ASSERT_EQUAL(nvme_auth_pool_create(&o, &p), -EINVAL);
	CU_ASSERT_PTR_NULL(p);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_runs_off_thread),
		UT_TEST(test_caps),
		UT_TEST(test_cancel_and_destroy),
		UT_TEST(test_bad_opts),
	};

	return ut_run("nvme_auth_pool", tests, ARRAY_SIZE(tests), NULL, NULL);
}
