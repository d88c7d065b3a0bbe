/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of lib/env: the arena allocator and mempools. The sources are
 * included to check the shared pools and caches directly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "gga_ut.h"
#include "lib/env/env.c"
#include "lib/env/mempool.c"

#define MiB (1ull << 20)

static void
init_arena(size_t size)
{
	struct env_opts opts;

	env_opts_init(&opts);
	opts.name = "env_ut";
	opts.arena_size = size;
	UT_ASSERT_EQ_FATAL(env_init(&opts), 0);
}

static void
test_init_fini(void)
{
	struct env_opts opts;
	struct env_mem_region region;
	size_t used, total;

	CU_ASSERT(!env_initialized());
	CU_ASSERT(env_dma_malloc(64, 0) == NULL);
	env_opts_init(&opts);
	UT_ASSERT_EQ(opts.numa_node, -1);
	UT_ASSERT_EQ(opts.arena_size, 0);
	opts.numa_node = 4096;
	UT_ASSERT_EQ(env_init(&opts), -EINVAL);
	opts.numa_node = -2;
	UT_ASSERT_EQ(env_init(&opts), -EINVAL);
	CU_ASSERT(!env_initialized());

	/* Default size, and rounding up to 2 MiB. */
	UT_ASSERT_EQ_FATAL(env_init(NULL), 0);
	CU_ASSERT(env_initialized());
	UT_ASSERT_EQ(env_init(NULL), -EALREADY);
	env_dma_stats(&used, &total);
	UT_ASSERT_EQ(used, 0);
	UT_ASSERT_EQ(total, 256 * MiB);
	UT_ASSERT_EQ((uintptr_t)g_env.base % (2 * MiB), 0);
	UT_ASSERT_EQ(env_mem_find_region(g_env.base, 1, &region), 0);
	CU_ASSERT(region.addr == g_env.base);
	UT_ASSERT_EQ(region.len, 256 * MiB);
	/* With no hugepages reserved on this machine the flag must say so. */
	if (region.hugepages) {
		fprintf(stderr, "  arena backed by hugetlb pages\n");
	}
	CU_ASSERT(region.numa_node >= -1);
	env_fini();
	CU_ASSERT(!env_initialized());
	UT_ASSERT_EQ(env_mem_find_region(region.addr, 1, &region), -ENOENT);

	opts.numa_node = -1;
	opts.arena_size = 3 * MiB + 1;
	opts.no_huge = true;
	UT_ASSERT_EQ_FATAL(env_init(&opts), 0);
	env_dma_stats(&used, &total);
	UT_ASSERT_EQ(total, 4 * MiB);
	CU_ASSERT(!g_env.hugepages);
	env_fini();
	/* A second env_fini is harmless. */
	env_fini();
	UT_ASSERT_EQ(env_core_numa_node(0) >= 0, 1);
}

static void
test_alloc_align(void)
{
	static const size_t aligns[] = { 0, 1, 8, 64, 128, 4096, 65536, 2 * MiB };
	void *bufs[ARRAY_SIZE(aligns)];
	size_t used, i;

	init_arena(16 * MiB);
	for (i = 0; i < ARRAY_SIZE(aligns); i++) {
		size_t align = aligns[i] < 64 ? 64 : aligns[i];

		bufs[i] = env_dma_malloc(100 + i, aligns[i]);
		CU_ASSERT_FATAL(bufs[i] != NULL);
		UT_ASSERT_EQ((uintptr_t)bufs[i] % align, 0);
		memset(bufs[i], (int)i, 100 + i);
	}
	/* Not a power of two. */
	CU_ASSERT(env_dma_malloc(64, 96) == NULL);
	/* Contents survive other allocations: no overlap. */
	for (i = 0; i < ARRAY_SIZE(aligns); i++) {
		uint8_t *p = bufs[i];

		UT_ASSERT_EQ(p[0], i);
		UT_ASSERT_EQ(p[99 + i], i);
	}
	env_dma_stats(&used, NULL);
	/* Sizes are rounded to 64 bytes: 100..107 bytes use 128 each. */
	UT_ASSERT_EQ(used, ARRAY_SIZE(aligns) * 128);
	for (i = 0; i < ARRAY_SIZE(aligns); i++) {
		env_dma_free(bufs[i]);
	}
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 0);
	/* Everything coalesced back into one extent. */
	CU_ASSERT_FATAL(g_env.free_list != NULL);
	CU_ASSERT(g_env.free_list->next == NULL);
	UT_ASSERT_EQ(g_env.free_list->len, 16 * MiB);
	env_fini();
}

static void
test_alloc_zero_and_bad_free(void)
{
	uint8_t *buf, *z;
	size_t used;
	int local;
	size_t i;

	init_arena(4 * MiB);
	buf = env_dma_malloc(4096, 4096);
	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0xff, 4096);
	env_dma_free(buf);
	z = env_dma_zmalloc(4096, 4096);
	/* First fit hands the same block back: it must have been zeroed. */
	CU_ASSERT(z == buf);
	for (i = 0; i < 4096; i++) {
		if (z[i] != 0) {
			break;
		}
	}
	UT_ASSERT_EQ(i, 4096);

	/* Foreign pointers, interior pointers and double frees are refused. */
	env_dma_free(&local);
	env_dma_free(z + 64);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 4096);
	env_dma_free(z);
	env_dma_free(z);
	env_dma_free(NULL);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 0);
	/* Zero bytes still gives a distinct buffer. */
	buf = env_dma_malloc(0, 0);
	z = env_dma_malloc(0, 0);
	CU_ASSERT(buf != NULL && z != NULL && buf != z);
	env_dma_free(buf);
	env_dma_free(z);
	env_fini();
}

static void
test_alloc_exhaust_coalesce(void)
{
	void *q[4], *big, *extra;
	size_t used;
	int i;

	init_arena(8 * MiB);
	for (i = 0; i < 4; i++) {
		q[i] = env_dma_malloc(2 * MiB, 0);
		CU_ASSERT_FATAL(q[i] != NULL);
	}
	/* Full. */
	CU_ASSERT(env_dma_malloc(64, 0) == NULL);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 8 * MiB);

	/* Free the middle two in an order that needs merging on both sides. */
	env_dma_free(q[2]);
	env_dma_free(q[1]);
	big = env_dma_malloc(4 * MiB, 0);
	CU_ASSERT(big == q[1]);
	CU_ASSERT(env_dma_malloc(64, 0) == NULL);
	env_dma_free(big);

	/* Free the ends too (prev- and next-merges): then the whole arena fits again. */
	env_dma_free(q[0]);
	CU_ASSERT(env_dma_malloc(8 * MiB, 0) == NULL);
	env_dma_free(q[3]);
	big = env_dma_malloc(8 * MiB, 0);
	CU_ASSERT(big == q[0]);
	extra = env_dma_malloc(64, 0);
	CU_ASSERT(extra == NULL);
	env_dma_free(big);

	/* An aligned carve from the middle of an extent leaves both sides usable. */
	q[0] = env_dma_malloc(64, 0);
	q[1] = env_dma_malloc(1 * MiB, 2 * MiB);
	CU_ASSERT_FATAL(q[0] != NULL && q[1] != NULL);
	UT_ASSERT_EQ((uintptr_t)q[1] % (2 * MiB), 0);
	q[2] = env_dma_malloc(128, 0);
	/* The gap before the aligned block is used first. */
	CU_ASSERT((uint8_t *)q[2] < (uint8_t *)q[1]);
	env_dma_free(q[1]);
	env_dma_free(q[0]);
	env_dma_free(q[2]);
	CU_ASSERT(g_env.free_list != NULL && g_env.free_list->next == NULL);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 0);
	env_fini();
}

static void
test_find_region(void)
{
	struct env_mem_region region;
	uint8_t *buf;
	int local;

	init_arena(4 * MiB);
	buf = env_dma_malloc(4096, 0);
	CU_ASSERT_FATAL(buf != NULL);
	memset(&region, 0, sizeof(region));
	UT_ASSERT_EQ(env_mem_find_region(buf, 4096, &region), 0);
	CU_ASSERT(region.addr == g_env.base);
	UT_ASSERT_EQ(region.len, 4 * MiB);
	UT_ASSERT_EQ(region.numa_node, g_env.numa_node);
	UT_ASSERT_EQ(env_mem_find_region(g_env.base, 4 * MiB, &region), 0);
	UT_ASSERT_EQ(env_mem_find_region(g_env.base + 4 * MiB - 1, 1, &region), 0);
	/* Straddling the end, past the end, before the start, elsewhere. */
	UT_ASSERT_EQ(env_mem_find_region(g_env.base + 4 * MiB - 1, 2, &region), -ENOENT);
	UT_ASSERT_EQ(env_mem_find_region(g_env.base + 4 * MiB, 1, &region), -ENOENT);
	UT_ASSERT_EQ(env_mem_find_region(g_env.base - 1, 2, &region), -ENOENT);
	UT_ASSERT_EQ(env_mem_find_region(&local, sizeof(local), &region), -ENOENT);
	UT_ASSERT_EQ(env_mem_find_region(buf, SIZE_MAX, &region), -ENOENT);
	env_dma_free(buf);
	env_fini();
}

static size_t
shared_len(struct mempool *mp)
{
	size_t n;

	pthread_mutex_lock(&mp->lock);
	n = mp->stack_len;
	pthread_mutex_unlock(&mp->lock);
	return n;
}

static void
test_mempool_basic(void)
{
	struct mempool *mp;
	void *elts[101];
	size_t used, i, j;

	/* Before env_init: refused. */
	errno = 0;
	CU_ASSERT(mempool_create("early", 10, 64, 0) == NULL);
	UT_ASSERT_EQ(errno, EINVAL);

	init_arena(8 * MiB);
	errno = 0;
	CU_ASSERT(mempool_create("empty", 0, 64, 0) == NULL);
	UT_ASSERT_EQ(errno, EINVAL);
	CU_ASSERT(mempool_create("cache", 10, 64, 11) == NULL);
	errno = 0;
	CU_ASSERT(mempool_create("huge", 1000, 1 * MiB, 0) == NULL);
	UT_ASSERT_EQ(errno, ENOMEM);

	mp = mempool_create("basic", 100, 100, 0);
	CU_ASSERT_FATAL(mp != NULL);
	UT_ASSERT_STR_EQ(mempool_name(mp), "basic");
	UT_ASSERT_EQ(mempool_elt_size(mp), 128);
	UT_ASSERT_EQ(mempool_count(mp), 100);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 100 * 128);
	for (i = 0; i < 100; i++) {
		elts[i] = mempool_get(mp);
		CU_ASSERT_FATAL(elts[i] != NULL);
		UT_ASSERT_EQ((uintptr_t)elts[i] % 64, 0);
		UT_ASSERT_EQ(env_mem_find_region(elts[i], 128, &(struct env_mem_region){ 0 }), 0);
		memset(elts[i], (int)i, 128);
	}
	CU_ASSERT(mempool_get(mp) == NULL);
	UT_ASSERT_EQ(mempool_count(mp), 0);
	/* All distinct and non-overlapping. */
	for (i = 0; i < 100; i++) {
		for (j = i + 1; j < 100; j++) {
			uintptr_t a = (uintptr_t)elts[i], b = (uintptr_t)elts[j];

			CU_ASSERT(a + 128 <= b || b + 128 <= a);
		}
		UT_ASSERT_EQ(((uint8_t *)elts[i])[127], i);
	}
	for (i = 0; i < 100; i++) {
		mempool_put(mp, elts[i]);
	}
	UT_ASSERT_EQ(mempool_count(mp), 100);
	mempool_free(mp);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 0);

	/* Page-sized elements are page-aligned. */
	mp = mempool_create("pages", 8, 4096, 2);
	CU_ASSERT_FATAL(mp != NULL);
	for (i = 0; i < 8; i++) {
		elts[i] = mempool_get(mp);
		CU_ASSERT_FATAL(elts[i] != NULL);
		UT_ASSERT_EQ((uintptr_t)elts[i] % 4096, 0);
	}
	mempool_put_bulk(mp, elts, 8);
	UT_ASSERT_EQ(mempool_count(mp), 8);
	mempool_free(mp);
	env_fini();
}

static void
test_mempool_bulk(void)
{
	struct mempool *mp;
	void *a[64], *b[64];
	size_t i;

	init_arena(8 * MiB);
	mp = mempool_create("bulk", 100, 64, 16);
	CU_ASSERT_FATAL(mp != NULL);
	UT_ASSERT_EQ(mempool_get_bulk(mp, a, 60), 0);
	UT_ASSERT_EQ(mempool_count(mp), 40);
	/* All-or-nothing: 50 are not there, nothing is taken. */
	UT_ASSERT_EQ(mempool_get_bulk(mp, b, 50), -ENOMEM);
	UT_ASSERT_EQ(mempool_count(mp), 40);
	UT_ASSERT_EQ(mempool_get_bulk(mp, b, 40), 0);
	UT_ASSERT_EQ(mempool_count(mp), 0);
	CU_ASSERT(mempool_get(mp) == NULL);
	for (i = 0; i < 40; i++) {
		CU_ASSERT(b[i] != NULL);
	}
	mempool_put_bulk(mp, a, 60);
	mempool_put_bulk(mp, b, 40);
	UT_ASSERT_EQ(mempool_count(mp), 100);
	/* A bulk get that the cache alone can serve. */
	a[0] = mempool_get(mp);
	UT_ASSERT_EQ(mempool_get_bulk(mp, &a[1], 4), 0);
	mempool_put_bulk(mp, a, 5);
	UT_ASSERT_EQ(mempool_count(mp), 100);
	mempool_free(mp);
	env_fini();
}

static void
test_mempool_cache(void)
{
	struct mempool *mp;
	struct mempool_cache *c;
	void *elts[100], *e;
	size_t i;

	init_arena(8 * MiB);
	mp = mempool_create("cache", 100, 64, 8);
	CU_ASSERT_FATAL(mp != NULL);
	CU_ASSERT(thread_cache(mp) == NULL);
	/* The first get refills the cache with 8 and serves one of them. */
	e = mempool_get(mp);
	CU_ASSERT_FATAL(e != NULL);
	c = thread_cache(mp);
	CU_ASSERT_FATAL(c != NULL);
	UT_ASSERT_EQ(c->len, 7);
	UT_ASSERT_EQ(shared_len(mp), 92);
	UT_ASSERT_EQ(mempool_count(mp), 99);
	/* get+put in steady state touches only the cache. */
	for (i = 0; i < 1000; i++) {
		void *x = mempool_get(mp);

		mempool_put(mp, x);
	}
	UT_ASSERT_EQ(shared_len(mp), 92);
	mempool_put(mp, e);
	UT_ASSERT_EQ(c->len, 8);

	/* Puts beyond twice the cache size hand the oldest half back. */
	for (i = 0; i < 100; i++) {
		elts[i] = mempool_get(mp);
		CU_ASSERT_FATAL(elts[i] != NULL);
	}
	UT_ASSERT_EQ(c->len, 0);
	UT_ASSERT_EQ(shared_len(mp), 0);
	for (i = 0; i < 17; i++) {
		mempool_put(mp, elts[i]);
	}
	/* 16 filled it, the 17th flushed 8 and stayed. */
	UT_ASSERT_EQ(c->len, 9);
	UT_ASSERT_EQ(shared_len(mp), 8);
	/* The hottest element stays in the cache: LIFO. */
	CU_ASSERT(mempool_get(mp) == elts[16]);
	mempool_put(mp, elts[16]);
	for (i = 17; i < 100; i++) {
		mempool_put(mp, elts[i]);
	}
	UT_ASSERT_EQ(mempool_count(mp), 100);
	CU_ASSERT(c->len <= 16);

	mempool_thread_flush();
	UT_ASSERT_EQ(c->len, 0);
	UT_ASSERT_EQ(shared_len(mp), 100);
	mempool_free(mp);

	/* The freed pool's id is reused; the stale cache must not be. */
	mp = mempool_create("reuse", 50, 64, 32);
	CU_ASSERT_FATAL(mp != NULL);
	CU_ASSERT(thread_cache(mp) == NULL);
	e = mempool_get(mp);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT((uint8_t *)e >= mp->mem && (uint8_t *)e < mp->mem + mp->mem_len);
	c = thread_cache(mp);
	CU_ASSERT_FATAL(c != NULL);
	UT_ASSERT_EQ(c->capacity, 64);
	UT_ASSERT_EQ(c->len, 31);
	mempool_put(mp, e);
	mempool_free(mp);
	/* A flush after the pool is gone frees the detached cache. */
	mempool_thread_flush();
	CU_ASSERT(tls_caches[0] == NULL);
	env_fini();
}

struct xthread {
	struct mempool *mp;
	void **elts;
	size_t n;
	pthread_barrier_t *barrier;
	bool flush;
};

static void *
put_all_main(void *arg)
{
	struct xthread *x = arg;
	size_t i;

	for (i = 0; i < x->n; i++) {
		mempool_put(x->mp, x->elts[i]);
	}
	if (x->flush) {
		mempool_thread_flush();
	}
	if (x->barrier != NULL) {
		/* Hold the cache while the main thread looks, then exit with it. */
		pthread_barrier_wait(x->barrier);
		pthread_barrier_wait(x->barrier);
	}
	return NULL;
}

static void
test_mempool_cross_thread(void)
{
	struct mempool *mp;
	void *elts[200];
	struct xthread x;
	pthread_barrier_t barrier;
	pthread_t tid;
	size_t i;

	init_arena(8 * MiB);
	mp = mempool_create("xthread", 200, 256, 16);
	CU_ASSERT_FATAL(mp != NULL);
	for (i = 0; i < 200; i++) {
		elts[i] = mempool_get(mp);
		CU_ASSERT_FATAL(elts[i] != NULL);
	}
	UT_ASSERT_EQ(mempool_count(mp), 0);

	/* Another thread puts them all and exits: its exit returns its cache. */
	memset(&x, 0, sizeof(x));
	x.mp = mp;
	x.elts = elts;
	x.n = 100;
	CU_ASSERT_FATAL(pthread_create(&tid, NULL, put_all_main, &x) == 0);
	pthread_join(tid, NULL);
	UT_ASSERT_EQ(mempool_count(mp), 100);
	UT_ASSERT_EQ(shared_len(mp), 100);
	CU_ASSERT(TAILQ_EMPTY(&mp->caches) || TAILQ_NEXT(TAILQ_FIRST(&mp->caches), link) == NULL);

	/* One with an explicit flush that stays alive: its cache is empty but counted. */
	pthread_barrier_init(&barrier, NULL, 2);
	x.elts = &elts[100];
	x.n = 50;
	x.flush = true;
	x.barrier = &barrier;
	CU_ASSERT_FATAL(pthread_create(&tid, NULL, put_all_main, &x) == 0);
	pthread_barrier_wait(&barrier);
	UT_ASSERT_EQ(shared_len(mp), 150);
	UT_ASSERT_EQ(mempool_count(mp), 150);
	pthread_barrier_wait(&barrier);
	pthread_join(tid, NULL);

	/* And one that still holds elements in its cache when the pool is freed. */
	x.elts = &elts[150];
	x.n = 50;
	x.flush = false;
	CU_ASSERT_FATAL(pthread_create(&tid, NULL, put_all_main, &x) == 0);
	pthread_barrier_wait(&barrier);
	UT_ASSERT_EQ(mempool_count(mp), 200);
	CU_ASSERT(shared_len(mp) < 200);
	/* mempool_free flushes the other thread's cache (no warning expected). */
	mempool_free(mp);
	pthread_barrier_wait(&barrier);
	/* The thread exits with a detached cache: its destructor just frees it. */
	pthread_join(tid, NULL);
	pthread_barrier_destroy(&barrier);
	env_fini();
}

static void
test_mempool_free_missing(void)
{
	struct mempool *mp;
	void *e;
	size_t used;

	init_arena(4 * MiB);
	mp = mempool_create("missing", 10, 64, 0);
	CU_ASSERT_FATAL(mp != NULL);
	e = mempool_get(mp);
	CU_ASSERT(e != NULL);
	/* Warns that 1 of 10 is missing, and still frees everything. */
	mempool_free(mp);
	env_dma_stats(&used, NULL);
	UT_ASSERT_EQ(used, 0);
	mempool_free(NULL);
	env_fini();
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_init_fini),
		UT_TEST(test_alloc_align),
		UT_TEST(test_alloc_zero_and_bad_free),
		UT_TEST(test_alloc_exhaust_coalesce),
		UT_TEST(test_find_region),
		UT_TEST(test_mempool_basic),
		UT_TEST(test_mempool_bulk),
		UT_TEST(test_mempool_cache),
		UT_TEST(test_mempool_cross_thread),
		UT_TEST(test_mempool_free_missing),
	};

	return ut_run("env", tests, ARRAY_SIZE(tests), NULL, NULL);
}
