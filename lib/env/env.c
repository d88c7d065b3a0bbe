/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The I/O buffer arena and its allocator.
 *
 * The allocator keeps its bookkeeping outside the arena: a free list of
 * extents sorted by offset (first fit, coalescing on free) and a tree of live
 * allocations keyed by offset. Keeping headers out of the arena means freeing
 * validates the pointer, an underrun cannot corrupt the allocator, and free
 * space in the arena is never touched (it stays unbacked until used).
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gga/env.h"
#include "gga/log.h"
#include "gga/util.h"

#define ENV_DEFAULT_ARENA_SIZE (256ull << 20)
#define ENV_HUGE_PAGE_SIZE     (2ull << 20)
#define ENV_MIN_ALIGN          GGA_CACHE_LINE

/* A free extent in the sorted free list, or a live allocation in the tree. */
struct extent {
	size_t off;
	size_t len;
	struct extent *next;
};

struct env {
	bool initialized;
	char name[64];
	uint8_t *base;
	size_t size;
	int numa_node;
	bool hugepages;
	struct extent *free_list;
	void *allocs;
	size_t used;
	size_t num_allocs;
};

static pthread_mutex_t g_env_lock = PTHREAD_MUTEX_INITIALIZER;
static struct env g_env;

void
env_opts_init(struct env_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->name = "gga";
	opts->arena_size = 0;
	opts->numa_node = -1;
	opts->no_huge = false;
}

static int
extent_cmp(const void *a, const void *b)
{
	const struct extent *ea = a, *eb = b;

	return ea->off < eb->off ? -1 : ea->off > eb->off ? 1 : 0;
}

/* Returns the node to place the arena on, -1 when NUMA is unknown, or -EINVAL. */
static int
choose_numa_node(int requested)
{
	int node, cpu;

	if (requested < -1) {
		return -EINVAL;
	}
	if (numa_available() < 0) {
		/* No NUMA support: only "any" or node 0 make sense. */
		return requested <= 0 ? -1 : -EINVAL;
	}
	if (requested >= 0) {
		if (requested > numa_max_node() ||
		    !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned int)requested)) {
			return -EINVAL;
		}
		return requested;
	}
	cpu = sched_getcpu();
	node = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
	return node >= 0 ? node : 0;
}

/*
 * Map the arena at a 2 MiB boundary so transparent hugepages can back all of
 * it: over-map by 2 MiB and trim both ends.
 */
static void *
map_plain(size_t size)
{
	size_t map_size = size + ENV_HUGE_PAGE_SIZE;
	uint8_t *raw, *aligned;
	size_t head, tail;

	raw = mmap(NULL, map_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		return NULL;
	}
	aligned = (uint8_t *)align_up((uintptr_t)raw, ENV_HUGE_PAGE_SIZE);
	head = (size_t)(aligned - raw);
	tail = map_size - head - size;
	if (head > 0) {
		munmap(raw, head);
	}
	if (tail > 0) {
		munmap(aligned + size, tail);
	}
	/* A hint only: THP may be disabled, which is fine. */
	madvise(aligned, size, MADV_HUGEPAGE);
	return aligned;
}

int
env_init(const struct env_opts *user_opts)
{
	struct env_opts opts;
	struct extent *whole;
	size_t size;
	void *base = NULL;
	bool huge = false;
	int node;
	int rc;

	if (user_opts != NULL) {
		opts = *user_opts;
	} else {
		env_opts_init(&opts);
	}
	size = opts.arena_size != 0 ? opts.arena_size : ENV_DEFAULT_ARENA_SIZE;
	if (size > SIZE_MAX - 2 * ENV_HUGE_PAGE_SIZE) {
		ERRLOG("%s: arena size %zu is too large\n", opts.name ? opts.name : "env", size);
		return -EINVAL;
	}
	size = align_up(size, ENV_HUGE_PAGE_SIZE);
	node = choose_numa_node(opts.numa_node);
	if (node < -1) {
		ERRLOG("%s: NUMA node %d does not exist\n", opts.name ? opts.name : "env",
		       opts.numa_node);
		return -EINVAL;
	}

	pthread_mutex_lock(&g_env_lock);
	if (g_env.initialized) {
		pthread_mutex_unlock(&g_env_lock);
		return -EALREADY;
	}
	whole = calloc(1, sizeof(*whole));
	if (whole == NULL) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	if (!opts.no_huge) {
		/*
		 * No MAP_NORESERVE here: hugetlb pages are reserved at mmap time,
		 * so a shortage fails now instead of with SIGBUS at first touch.
		 */
		base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (base == MAP_FAILED) {
			NOTICELOG(
				"%s: no %zu MiB of free hugepages (%s): using normal pages; reserve "
				"some (sysctl vm.nr_hugepages=N, 2 MiB each) for fewer TLB misses, "
				"or pass --no-huge\n",
				opts.name ? opts.name : "env", size >> 20, strerror(errno));
			base = NULL;
		} else {
			huge = true;
		}
	}
	if (base == NULL) {
		base = map_plain(size);
	}
	if (base == NULL) {
		ERRLOG("%s: cannot map an arena of %zu bytes: %s (lower --mem-size, or free "
		       "memory)\n",
		       opts.name ? opts.name : "env", size, strerror(errno));
		rc = -ENOMEM;
		goto out_free_whole;
	}
	if (node >= 0) {
		unsigned long mask[(1024 + 63) / 64] = { 0 };

		/* Preferred, not bound: a full node must not turn into SIGBUS or OOM. */
		if (node < 1024) {
			mask[node / 64] |= 1ul << (node % 64);
			if (mbind(base, size, MPOL_PREFERRED, mask, 1024, 0) != 0) {
				WARNLOG("%s: cannot place the arena on NUMA node %d: %s\n",
					opts.name ? opts.name : "env", node, strerror(errno));
			}
		}
	}

	memset(&g_env, 0, sizeof(g_env));
	snprintf(g_env.name, sizeof(g_env.name), "%s", opts.name ? opts.name : "gga");
	g_env.base = base;
	g_env.size = size;
	g_env.numa_node = node;
	g_env.hugepages = huge;
	whole->off = 0;
	whole->len = size;
	g_env.free_list = whole;
	__atomic_store_n(&g_env.initialized, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g_env_lock);
	NOTICELOG("%s: arena of %zu MiB at %p, %s pages, NUMA node %d\n", g_env.name, size >> 20,
		  base, huge ? "huge" : "normal", node);
	return 0;

out_free_whole:
	free(whole);
out_unlock:
	pthread_mutex_unlock(&g_env_lock);
	return rc;
}

void
env_fini(void)
{
	struct extent *e;

	pthread_mutex_lock(&g_env_lock);
	if (!g_env.initialized) {
		pthread_mutex_unlock(&g_env_lock);
		return;
	}
	if (g_env.num_allocs > 0) {
		WARNLOG("%s: %zu buffer(s) of %zu bytes still allocated at env_fini()\n",
			g_env.name, g_env.num_allocs, g_env.used);
	}
	while ((e = g_env.free_list) != NULL) {
		g_env.free_list = e->next;
		free(e);
	}
	tdestroy(g_env.allocs, free);
	munmap(g_env.base, g_env.size);
	__atomic_store_n(&g_env.initialized, false, __ATOMIC_RELEASE);
	memset(&g_env, 0, sizeof(g_env));
	pthread_mutex_unlock(&g_env_lock);
}

bool
env_initialized(void)
{
	return __atomic_load_n(&g_env.initialized, __ATOMIC_ACQUIRE);
}

void *
env_dma_malloc(size_t size, size_t align)
{
	struct extent **link, *e, *rec, *tail_ext;
	size_t start = 0;
	void *buf = NULL;

	if (align == 0) {
		align = ENV_MIN_ALIGN;
	}
	if (!is_pow2(align) || size > SIZE_MAX / 2 || align > SIZE_MAX / 2) {
		return NULL;
	}
	align = GGA_MAX(align, ENV_MIN_ALIGN);
	size = align_up(size != 0 ? size : 1, ENV_MIN_ALIGN);

	/* Allocate bookkeeping first so nothing needs undoing under the lock. */
	rec = malloc(sizeof(*rec));
	tail_ext = malloc(sizeof(*tail_ext));
	if (rec == NULL || tail_ext == NULL) {
		goto out_free_extents;
	}

	pthread_mutex_lock(&g_env_lock);
	if (!g_env.initialized) {
		pthread_mutex_unlock(&g_env_lock);
		goto out_free_extents;
	}
	for (link = &g_env.free_list; (e = *link) != NULL; link = &e->next) {
		uintptr_t addr = (uintptr_t)g_env.base + e->off;

		start = (size_t)(align_up(addr, align) - (uintptr_t)g_env.base);
		if (start - e->off <= e->len && e->len - (start - e->off) >= size) {
			break;
		}
	}
	if (e == NULL) {
		pthread_mutex_unlock(&g_env_lock);
		goto out_free_extents;
	}

	rec->off = start;
	rec->len = size;
	rec->next = NULL;
	if (tsearch(rec, &g_env.allocs, extent_cmp) == NULL) {
		pthread_mutex_unlock(&g_env_lock);
		goto out_free_extents;
	}
	{
		size_t end = e->off + e->len;
		size_t head = start - e->off;
		size_t tail = end - (start + size);

		if (head > 0 && tail > 0) {
			/* Carved from the middle: the extent keeps the head, a new one the tail. */
			e->len = head;
			tail_ext->off = start + size;
			tail_ext->len = tail;
			tail_ext->next = e->next;
			e->next = tail_ext;
			tail_ext = NULL;
		} else if (head > 0) {
			e->len = head;
		} else if (tail > 0) {
			e->off = start + size;
			e->len = tail;
		} else {
			*link = e->next;
			free(e);
		}
	}
	g_env.used += size;
	g_env.num_allocs++;
	buf = g_env.base + start;
	rec = NULL;
	pthread_mutex_unlock(&g_env_lock);

out_free_extents:
	free(rec);
	free(tail_ext);
	return buf;
}

void *
env_dma_zmalloc(size_t size, size_t align)
{
	void *buf = env_dma_malloc(size, align);

	if (buf != NULL) {
		memset(buf, 0, size);
	}
	return buf;
}

void
env_dma_free(void *buf)
{
	struct extent key, *rec, *prev, *next, **link;
	void *node;

	if (buf == NULL) {
		return;
	}
	pthread_mutex_lock(&g_env_lock);
	if (!g_env.initialized || (uint8_t *)buf < g_env.base ||
	    (uint8_t *)buf >= g_env.base + g_env.size) {
		pthread_mutex_unlock(&g_env_lock);
		ERRLOG("buffer %p is not in the arena\n", buf);
		return;
	}
	key.off = (size_t)((uint8_t *)buf - g_env.base);
	node = tfind(&key, &g_env.allocs, extent_cmp);
	if (node == NULL) {
		pthread_mutex_unlock(&g_env_lock);
		ERRLOG("%s: buffer %p was not allocated (or was freed twice)\n", g_env.name, buf);
		return;
	}
	rec = *(struct extent **)node;
	tdelete(&key, &g_env.allocs, extent_cmp);
	g_env.used -= rec->len;
	g_env.num_allocs--;

	/* Insert into the sorted free list, merging with the neighbours it touches. */
	prev = NULL;
	for (link = &g_env.free_list; (next = *link) != NULL && next->off < rec->off;
	     link = &next->next) {
		prev = next;
	}
	if (prev != NULL && prev->off + prev->len == rec->off) {
		prev->len += rec->len;
		free(rec);
		rec = prev;
	} else {
		rec->next = next;
		*link = rec;
	}
	if (next != NULL && rec->off + rec->len == next->off) {
		rec->len += next->len;
		rec->next = next->next;
		free(next);
	}
	pthread_mutex_unlock(&g_env_lock);
}

void
env_dma_stats(size_t *used, size_t *total)
{
	pthread_mutex_lock(&g_env_lock);
	if (used != NULL) {
		*used = g_env.used;
	}
	if (total != NULL) {
		*total = g_env.size;
	}
	pthread_mutex_unlock(&g_env_lock);
}

int
env_mem_find_region(const void *addr, size_t len, struct env_mem_region *region)
{
	uintptr_t a = (uintptr_t)addr, base, end;

	if (!env_initialized()) {
		return -ENOENT;
	}
	/* The arena never moves while initialised: no lock needed. */
	base = (uintptr_t)g_env.base;
	end = base + g_env.size;
	if (a < base || a >= end || len > end - a) {
		return -ENOENT;
	}
	region->addr = g_env.base;
	region->len = g_env.size;
	region->numa_node = g_env.numa_node;
	region->hugepages = g_env.hugepages;
	return 0;
}

int
env_core_numa_node(uint32_t core)
{
	int node;

	if (numa_available() < 0) {
		return 0;
	}
	node = numa_node_of_cpu((int)core);
	return node >= 0 ? node : 0;
}
