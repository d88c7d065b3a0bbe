/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the exhaustive checkers share (gga_lifecycle_ut, gga_front_ut): a
 * world is a plain struct compared and hashed as bytes, and a memo table of
 * (fingerprint, remaining depth) -> sequences counted, so a world already
 * walked to the same remaining depth is not walked again.
 */
#ifndef UT_EXPLORE_H
#define UT_EXPLORE_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A 64-bit fingerprint of len bytes (FNV-1a over words, with a shift mix). */
static inline uint64_t
ut_hash_bytes(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull, x;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&x, p + i, 8);
		h = (h ^ x) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++) {
		h = (h ^ p[i]) * 0x100000001b3ull;
	}
	return h;
}

struct ut_memo_entry {
	uint64_t fp;
	uint64_t count;
	uint32_t rem; /* 0: free */
};

struct ut_memo {
	struct ut_memo_entry *slots;
	uint32_t bits;
	bool full; /* a lookup found no slot: some worlds are walked twice */
};

static inline bool
ut_memo_init(struct ut_memo *m, uint32_t bits)
{
	m->bits = bits;
	m->full = false;
	m->slots = calloc(1ull << bits, sizeof(*m->slots));
	return m->slots != NULL;
}

/* Forget everything (a new depth of iterative deepening). */
static inline void
ut_memo_clear(struct ut_memo *m)
{
	memset(m->slots, 0, (1ull << m->bits) * sizeof(*m->slots));
}

static inline void
ut_memo_fini(struct ut_memo *m)
{
	free(m->slots);
	m->slots = NULL;
}

/*
 * The entry of (fp, rem): *hit true if it was stored, else a free entry to
 * store it in, or NULL when the probe found none (m->full is set).
 */
static inline struct ut_memo_entry *
ut_memo_slot(struct ut_memo *m, uint64_t fp, uint32_t rem, bool *hit)
{
	uint64_t key = fp ^ ((uint64_t)rem * 0x9e3779b97f4a7c15ull), mask = (1ull << m->bits) - 1;
	uint64_t i, idx = key & mask;
	struct ut_memo_entry *s;

	for (i = 0; i < 64; i++) {
		s = &m->slots[(idx + i) & mask];
		if (s->rem == 0) {
			*hit = false;
			return s;
		}
		if (s->fp == fp && s->rem == rem) {
			*hit = true;
			return s;
		}
	}
	*hit = false;
	m->full = true;
	return NULL;
}

/*
 * The rest of a checker's summary line, after its own title: what the walk
 * to max_depth found (`found`: the depth of the first violation, 0 none),
 * the sequences it counted, the worlds expanded and the steps run, its time
 * since t0.
 */
static inline void
ut_explore_summary(uint32_t found, uint32_t max_depth, uint64_t count, uint64_t states,
		   uint64_t steps, const struct timespec *t0, const struct ut_memo *m)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (found) {
		printf("violation at depth %u", found);
	} else {
		printf("depth %u, %" PRIu64 " event sequences of 1..%u events, no violation",
		       max_depth, count, max_depth);
	}
	printf("; %" PRIu64 " states expanded, %" PRIu64 " steps, %.2f s%s\n", states, steps,
	       (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9,
	       m->full ? " (memo table full: some states explored twice)" : "");
}

#endif /* UT_EXPLORE_H */
