/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fixed-size element pools with per-thread caches.
 *
 * Each pool has a shared stack guarded by its mutex, touched only in bulk.
 * Each OS thread that uses a pool gets a cache, found through a thread-local
 * table indexed by the pool's id, so mempool_get/put in steady state are a
 * few loads and stores. Caches are also linked into their pool (under the
 * global lock) so mempool_free() and mempool_count() can reach every thread's
 * cache, and a thread-exit destructor returns a thread's elements.
 *
 * Lock order: g_mempool_lock, then a pool's lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"

#define MEMPOOL_NAME_LEN      64
#define MEMPOOL_MAX_ELT_ALIGN 4096

struct mempool_cache {
	/* NULL once the pool is freed; the cache waits to be reused or freed. */
	struct mempool *mp;
	uint32_t len;
	/* Elements fetched by a refill; the cache holds up to twice this. */
	uint32_t size;
	uint32_t capacity;
	TAILQ_ENTRY(mempool_cache) link;
	void *objs[];
};

TAILQ_HEAD(mempool_cache_list, mempool_cache);

struct mempool {
	uint32_t id;
	uint32_t cache_size;
	size_t elt_size;
	size_t count;
	uint8_t *mem;
	size_t mem_len;
	pthread_mutex_t lock;
	/* Shared stack, guarded by lock. */
	void **stack;
	size_t stack_len;
	/* Every thread's cache of this pool, guarded by g_mempool_lock. */
	struct mempool_cache_list caches;
	char name[MEMPOOL_NAME_LEN];
};

static pthread_mutex_t g_mempool_lock = PTHREAD_MUTEX_INITIALIZER;
/* Live pools by id; a freed pool's id is reused. */
static struct mempool **g_pools;
static uint32_t g_pools_cap;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_cache_key;
static bool g_key_ok;

static __thread struct mempool_cache **tls_caches;
static __thread uint32_t tls_num_caches;

/* Called with g_mempool_lock held: hands every element of the cache to its pool. */
static void
cache_flush_all(struct mempool_cache *c)
{
	struct mempool *mp = c->mp;
	uint32_t len = __atomic_load_n(&c->len, __ATOMIC_RELAXED);
	uint32_t i;

	if (len == 0) {
		return;
	}
	pthread_mutex_lock(&mp->lock);
	for (i = 0; i < len; i++) {
		if (mp->stack_len == mp->count) {
			ERRLOG("mempool %s: more elements returned than it has\n", mp->name);
			break;
		}
		mp->stack[mp->stack_len++] = c->objs[i];
	}
	pthread_mutex_unlock(&mp->lock);
	__atomic_store_n(&c->len, 0, __ATOMIC_RELAXED);
}

static void
thread_exit_destructor(void *arg)
{
	uint32_t i;

	pthread_mutex_lock(&g_mempool_lock);
	for (i = 0; i < tls_num_caches; i++) {
		struct mempool_cache *c = tls_caches[i];

		if (c == NULL) {
			continue;
		}
		if (c->mp != NULL) {
			cache_flush_all(c);
			TAILQ_REMOVE(&c->mp->caches, c, link);
		}
		free(c);
	}
	free(tls_caches);
	tls_caches = NULL;
	tls_num_caches = 0;
	pthread_mutex_unlock(&g_mempool_lock);
}

static void
create_key(void)
{
	g_key_ok = pthread_key_create(&g_cache_key, thread_exit_destructor) == 0;
}

/* Slow path: give the calling thread a cache of `mp`. Returns NULL on ENOMEM. */
static struct mempool_cache *
cache_attach(struct mempool *mp)
{
	struct mempool_cache *c;
	uint32_t capacity = 2 * mp->cache_size;

	pthread_once(&g_key_once, create_key);
	if (!g_key_ok) {
		return NULL;
	}
	if (mp->id >= tls_num_caches) {
		uint32_t n = GGA_MAX(mp->id + 1, 2 * tls_num_caches);
		struct mempool_cache **table;

		/* The table is this thread's alone: no lock needed to grow it. */
		table = realloc(tls_caches, n * sizeof(*table));
		if (table == NULL) {
			return NULL;
		}
		memset(table + tls_num_caches, 0, (n - tls_num_caches) * sizeof(*table));
		tls_caches = table;
		tls_num_caches = n;
		/* Any non-NULL value makes the destructor run when this thread exits. */
		pthread_setspecific(g_cache_key, (void *)1);
	}

	pthread_mutex_lock(&g_mempool_lock);
	c = tls_caches[mp->id];
	if (c != NULL && c->mp != NULL) {
		/* A live pool with our id is us: nothing to do (cannot be another pool). */
		pthread_mutex_unlock(&g_mempool_lock);
		return c->mp == mp ? c : NULL;
	}
	if (c != NULL && c->capacity < capacity) {
		free(c);
		c = NULL;
		tls_caches[mp->id] = NULL;
	}
	if (c == NULL) {
		c = malloc(sizeof(*c) + capacity * sizeof(void *));
		if (c == NULL) {
			pthread_mutex_unlock(&g_mempool_lock);
			return NULL;
		}
		tls_caches[mp->id] = c;
	}
	/* A reused cache may be larger: use only what this pool's cache size asks for. */
	c->capacity = capacity;
	c->len = 0;
	c->size = mp->cache_size;
	c->mp = mp;
	TAILQ_INSERT_TAIL(&mp->caches, c, link);
	pthread_mutex_unlock(&g_mempool_lock);
	return c;
}

static inline struct mempool_cache *
thread_cache(const struct mempool *mp)
{
	struct mempool_cache *c;

	if (likely(mp->id < tls_num_caches)) {
		c = tls_caches[mp->id];
		if (likely(c != NULL && c->mp == mp)) {
			return c;
		}
	}
	return NULL;
}

struct mempool *
mempool_create(const char *name, size_t count, size_t elt_size, size_t cache_size)
{
	struct mempool *mp;
	size_t align, i;
	uint32_t id;

	if (name == NULL) {
		name = "mempool";
	}
	if (count == 0 || elt_size == 0 || cache_size > count || cache_size > UINT32_MAX / 2 ||
	    elt_size > SIZE_MAX / 2) {
		ERRLOG("mempool %s: invalid geometry (count %zu, element %zu, cache %zu)\n", name,
		       count, elt_size, cache_size);
		errno = EINVAL;
		return NULL;
	}
	if (!env_initialized()) {
		ERRLOG("mempool %s: env_init() has not been called\n", name);
		errno = EINVAL;
		return NULL;
	}
	elt_size = align_up(elt_size, GGA_CACHE_LINE);
	if (count > SIZE_MAX / elt_size) {
		errno = EINVAL;
		return NULL;
	}
	mp = calloc(1, sizeof(*mp));
	if (mp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(mp->name, sizeof(mp->name), "%s", name);
	mp->elt_size = elt_size;
	mp->count = count;
	mp->cache_size = (uint32_t)cache_size;
	mp->mem_len = count * elt_size;
	TAILQ_INIT(&mp->caches);
	pthread_mutex_init(&mp->lock, NULL);

	/* Page-aligned elements when their size allows: buffers for O_DIRECT. */
	align = elt_size & -elt_size;
	align = GGA_MIN(align, (size_t)MEMPOOL_MAX_ELT_ALIGN);
	mp->mem = env_dma_malloc(mp->mem_len, align);
	if (mp->mem == NULL) {
		ERRLOG("mempool %s: no room in the arena for %zu x %zu bytes\n", name, count,
		       elt_size);
		goto out_free_pool;
	}
	mp->stack = malloc(count * sizeof(void *));
	if (mp->stack == NULL) {
		goto out_free_mem;
	}
	/* Reversed, so the first get returns the first element. */
	for (i = 0; i < count; i++) {
		mp->stack[i] = mp->mem + (count - 1 - i) * elt_size;
	}
	mp->stack_len = count;

	pthread_mutex_lock(&g_mempool_lock);
	for (id = 0; id < g_pools_cap && g_pools[id] != NULL; id++) {
	}
	if (id == g_pools_cap) {
		uint32_t cap = GGA_MAX(16u, 2 * g_pools_cap);
		struct mempool **pools = realloc(g_pools, cap * sizeof(*pools));

		if (pools == NULL) {
			pthread_mutex_unlock(&g_mempool_lock);
			goto out_free_stack;
		}
		memset(pools + g_pools_cap, 0, (cap - g_pools_cap) * sizeof(*pools));
		g_pools = pools;
		g_pools_cap = cap;
	}
	mp->id = id;
	g_pools[id] = mp;
	pthread_mutex_unlock(&g_mempool_lock);
	DEBUGLOG(env, "mempool %s: %zu x %zu bytes, cache %zu, id %u\n", name, count, elt_size,
		 cache_size, id);
	return mp;

out_free_stack:
	free(mp->stack);
out_free_mem:
	env_dma_free(mp->mem);
out_free_pool:
	pthread_mutex_destroy(&mp->lock);
	free(mp);
	errno = ENOMEM;
	return NULL;
}

void
mempool_free(struct mempool *mp)
{
	struct mempool_cache *c;
	bool empty_table;
	uint32_t i;

	if (mp == NULL) {
		return;
	}
	pthread_mutex_lock(&g_mempool_lock);
	while ((c = TAILQ_FIRST(&mp->caches)) != NULL) {
		cache_flush_all(c);
		TAILQ_REMOVE(&mp->caches, c, link);
		/* The owning thread's table still points here; it reuses or frees it. */
		c->mp = NULL;
	}
	g_pools[mp->id] = NULL;
	empty_table = true;
	for (i = 0; i < g_pools_cap; i++) {
		if (g_pools[i] != NULL) {
			empty_table = false;
			break;
		}
	}
	if (empty_table) {
		free(g_pools);
		g_pools = NULL;
		g_pools_cap = 0;
	}
	pthread_mutex_unlock(&g_mempool_lock);

	if (mp->stack_len != mp->count) {
		WARNLOG("mempool %s: %zu of %zu elements were not returned\n", mp->name,
			mp->count - mp->stack_len, mp->count);
	}
	env_dma_free(mp->mem);
	free(mp->stack);
	pthread_mutex_destroy(&mp->lock);
	free(mp);
}

static void *
shared_get(struct mempool *mp)
{
	void *elt = NULL;

	pthread_mutex_lock(&mp->lock);
	if (mp->stack_len > 0) {
		elt = mp->stack[--mp->stack_len];
	}
	pthread_mutex_unlock(&mp->lock);
	return elt;
}

static void
shared_put(struct mempool *mp, void *elt)
{
	pthread_mutex_lock(&mp->lock);
	if (mp->stack_len < mp->count) {
		mp->stack[mp->stack_len++] = elt;
	} else {
		ERRLOG("mempool %s: element %p returned to a full pool\n", mp->name, elt);
	}
	pthread_mutex_unlock(&mp->lock);
}

static void *__attribute__((noinline)) get_slow(struct mempool *mp)
{
	struct mempool_cache *c;
	uint32_t n;

	if (mp->cache_size == 0) {
		return shared_get(mp);
	}
	c = thread_cache(mp);
	if (c == NULL) {
		c = cache_attach(mp);
		if (c == NULL) {
			return shared_get(mp);
		}
	}
	if (c->len > 0) {
		n = c->len - 1;
		__atomic_store_n(&c->len, n, __ATOMIC_RELAXED);
		return c->objs[n];
	}
	/* Refill to the cache size in one go, then serve from the cache. */
	pthread_mutex_lock(&mp->lock);
	n = (uint32_t)GGA_MIN((size_t)c->size, mp->stack_len);
	mp->stack_len -= n;
	memcpy(c->objs, &mp->stack[mp->stack_len], n * sizeof(void *));
	pthread_mutex_unlock(&mp->lock);
	if (n == 0) {
		return NULL;
	}
	__atomic_store_n(&c->len, n - 1, __ATOMIC_RELAXED);
	return c->objs[n - 1];
}

void *
mempool_get(struct mempool *mp)
{
	struct mempool_cache *c = thread_cache(mp);

	if (likely(c != NULL && c->len > 0)) {
		uint32_t n = c->len - 1;

		__atomic_store_n(&c->len, n, __ATOMIC_RELAXED);
		return c->objs[n];
	}
	return get_slow(mp);
}

static void __attribute__((noinline)) put_slow(struct mempool *mp, void *elt)
{
	struct mempool_cache *c;
	uint32_t keep;

	if (mp->cache_size == 0) {
		shared_put(mp, elt);
		return;
	}
	c = thread_cache(mp);
	if (c == NULL) {
		c = cache_attach(mp);
		if (c == NULL) {
			shared_put(mp, elt);
			return;
		}
	}
	if (c->len == c->capacity) {
		/* Hand the oldest half back; the recently used ones stay warm here. */
		pthread_mutex_lock(&mp->lock);
		if (mp->stack_len + c->size > mp->count) {
			pthread_mutex_unlock(&mp->lock);
			ERRLOG("mempool %s: more elements returned than it has\n", mp->name);
			return;
		}
		memcpy(&mp->stack[mp->stack_len], c->objs, c->size * sizeof(void *));
		mp->stack_len += c->size;
		pthread_mutex_unlock(&mp->lock);
		keep = c->len - c->size;
		memmove(c->objs, &c->objs[c->size], keep * sizeof(void *));
		__atomic_store_n(&c->len, keep, __ATOMIC_RELAXED);
	}
	c->objs[c->len] = elt;
	__atomic_store_n(&c->len, c->len + 1, __ATOMIC_RELAXED);
}

void
mempool_put(struct mempool *mp, void *elt)
{
	struct mempool_cache *c = thread_cache(mp);

#ifdef DEBUG
	if ((uint8_t *)elt < mp->mem || (uint8_t *)elt >= mp->mem + mp->mem_len ||
	    ((uint8_t *)elt - mp->mem) % mp->elt_size != 0) {
		ERRLOG("mempool %s: %p is not one of its elements\n", mp->name, elt);
		return;
	}
#endif
	if (likely(c != NULL && c->len < c->capacity)) {
		c->objs[c->len] = elt;
		__atomic_store_n(&c->len, c->len + 1, __ATOMIC_RELAXED);
		return;
	}
	put_slow(mp, elt);
}

int
mempool_get_bulk(struct mempool *mp, void **elts, size_t n)
{
	struct mempool_cache *c = thread_cache(mp);
	size_t from_cache, i;

	if (c == NULL && mp->cache_size > 0) {
		c = cache_attach(mp);
	}
	if (c != NULL && c->len >= n) {
		for (i = 0; i < n; i++) {
			elts[i] = c->objs[c->len - 1 - i];
		}
		__atomic_store_n(&c->len, c->len - (uint32_t)n, __ATOMIC_RELAXED);
		return 0;
	}
	from_cache = c != NULL ? c->len : 0;
	pthread_mutex_lock(&mp->lock);
	if (mp->stack_len + from_cache < n) {
		pthread_mutex_unlock(&mp->lock);
		return -ENOMEM;
	}
	for (i = 0; i < from_cache; i++) {
		elts[i] = c->objs[from_cache - 1 - i];
	}
	for (; i < n; i++) {
		elts[i] = mp->stack[--mp->stack_len];
	}
	pthread_mutex_unlock(&mp->lock);
	if (c != NULL) {
		__atomic_store_n(&c->len, 0, __ATOMIC_RELAXED);
	}
	return 0;
}

void
mempool_put_bulk(struct mempool *mp, void **elts, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		mempool_put(mp, elts[i]);
	}
}

size_t
mempool_count(const struct mempool *mp)
{
	struct mempool *m = (struct mempool *)mp;
	const struct mempool_cache *c;
	size_t count;

	pthread_mutex_lock(&g_mempool_lock);
	pthread_mutex_lock(&m->lock);
	count = m->stack_len;
	pthread_mutex_unlock(&m->lock);
	/* Other threads' caches change under us: the sum is a snapshot. */
	TAILQ_FOREACH(c, &m->caches, link) {
		count += __atomic_load_n(&c->len, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&g_mempool_lock);
	return count;
}

size_t
mempool_elt_size(const struct mempool *mp)
{
	return mp->elt_size;
}

const char *
mempool_name(const struct mempool *mp)
{
	return mp->name;
}

void
mempool_thread_flush(void)
{
	uint32_t i;

	pthread_mutex_lock(&g_mempool_lock);
	for (i = 0; i < tls_num_caches; i++) {
		struct mempool_cache *c = tls_caches[i];

		if (c == NULL) {
			continue;
		}
		if (c->mp != NULL) {
			cache_flush_all(c);
		} else {
			/* Its pool is gone: nothing will reuse it soon. */
			free(c);
			tls_caches[i] = NULL;
		}
	}
	pthread_mutex_unlock(&g_mempool_lock);
}
