/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory environment.
 *
 * One I/O buffer arena per process: a single virtually-contiguous region,
 * placed on a NUMA node with libnuma, backed by hugepages when the system has
 * them reserved (MAP_HUGETLB) and by plain pages (with a transparent-hugepage
 * hint) otherwise. Because there is exactly one region, the RDMA transports
 * register it once and find the keys of any I/O buffer by address
 * (env_mem_find_region()).
 *
 * On top of the arena sit mempools: fixed-size element pools with a per-thread
 * cache, the allocator of the I/O path (bdev_io, buffers, requests). The
 * arena allocator itself (env_dma_malloc) takes a lock and is meant for
 * set-up paths.
 */
#ifndef GGA_ENV_H
#define GGA_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct env_opts {
	/* Process name, for messages. */
	const char *name;
	/* Arena size in bytes; 0 = default (256 MiB). Reserved, touched lazily. */
	size_t arena_size;
	/* NUMA node to place the arena on; -1 = the node of the calling CPU. */
	int numa_node;
	/* Never try hugepages. */
	bool no_huge;
};

void env_opts_init(struct env_opts *opts);

/*
 * Create the arena. Returns 0, -EALREADY if already initialised, -ENOMEM if
 * no region of that size can be mapped, -EINVAL for bad options.
 */
int env_init(const struct env_opts *opts);

/* Release the arena. Every buffer and mempool must have been freed. */
void env_fini(void);

bool env_initialized(void);

/*
 * Allocate from the arena, aligned to `align` (a power of two, 0 = 64). The
 * memory is not zeroed (env_dma_zmalloc zeroes). Returns NULL when the arena
 * is exhausted or not initialised. Thread-safe.
 */
void *env_dma_malloc(size_t size, size_t align);
void *env_dma_zmalloc(size_t size, size_t align);
void env_dma_free(void *buf);

/* Bytes of the arena in use and in total. */
void env_dma_stats(size_t *used, size_t *total);

/* The arena region, for RDMA registration. */
struct env_mem_region {
	void *addr;
	size_t len;
	int numa_node;  /* -1 if unknown */
	bool hugepages; /* backed by MAP_HUGETLB pages */
};

/*
 * Find the arena region containing [addr, addr+len). Returns 0 and fills
 * *region, or -ENOENT if the range is not (wholly) inside the arena.
 */
int env_mem_find_region(const void *addr, size_t len, struct env_mem_region *region);

/* NUMA node of a core, or 0 when the system has no NUMA information. */
int env_core_numa_node(uint32_t core);

/*
 * Mempools: `count` elements of `elt_size` bytes (rounded up to a cache
 * line), allocated from the arena at create time. Each thread keeps a cache
 * of up to `cache_size` elements (0 = no cache), refilled/flushed in bulk from
 * the shared pool, so mempool_get/put on the I/O path touch no lock in the
 * common case. Any thread may put an element another thread got.
 */
struct mempool;

/* Returns NULL with errno set (ENOMEM, EINVAL). `name` is copied. */
struct mempool *mempool_create(const char *name, size_t count, size_t elt_size, size_t cache_size);
/*
 * Free the pool. All elements should have been returned; if not, a warning
 * names the pool and how many are missing. Caches of all threads are flushed.
 */
void mempool_free(struct mempool *mp);

/* Returns an element, or NULL when the pool is empty. */
void *mempool_get(struct mempool *mp);
/* Get `n` elements at once; all-or-nothing. Returns 0 or -ENOMEM. */
int mempool_get_bulk(struct mempool *mp, void **elts, size_t n);
void mempool_put(struct mempool *mp, void *elt);
void mempool_put_bulk(struct mempool *mp, void **elts, size_t n);

/* Elements currently available (shared pool plus all caches). */
size_t mempool_count(const struct mempool *mp);
size_t mempool_elt_size(const struct mempool *mp);
const char *mempool_name(const struct mempool *mp);

/*
 * Flush the calling thread's caches of every pool back to the shared pools.
 * Reactors call this before they exit.
 */
void mempool_thread_flush(void);

#endif /* GGA_ENV_H */
