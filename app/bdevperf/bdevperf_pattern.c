/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Write data for bdevperf: the --pattern generators, and the self-describing
 * blocks that verify writes and later compares.
 *
 * compress:N must make LZ4 (which the gga bdev runs on every block) shrink
 * the data to about N % of its size. Data is laid out in 256-byte chunks of
 * r random bytes followed by a run of one repeated byte: LZ4 emits the random
 * bytes (and the first run byte) as literals and the rest of the run as one
 * match, so a chunk costs r + 1 literal bytes plus a few bytes of sequence
 * overhead. r is picked so that cost is N % of the chunk. Small chunks keep
 * every block, whatever its size and offset, at the same ratio.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdevperf_internal.h"

#define CHUNK_LEN   256u
/* Verify blocks start at pattern offsets that are multiples of this. */
#define ROTATE_STEP 64u

int
bdevperf_pattern_parse(const char *s, struct bdevperf_pattern *p)
{
	unsigned long v;
	char *end;

	if (strcmp(s, "random") == 0) {
		p->type = PATTERN_RANDOM;
		p->compress_pct = 100;
		return 0;
	}
	if (strcmp(s, "zeros") == 0) {
		p->type = PATTERN_ZEROS;
		p->compress_pct = 0;
		return 0;
	}
	if (strncmp(s, "compress:", 9) == 0) {
		s += 9;
		if (*s < '0' || *s > '9') {
			return -EINVAL;
		}
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno != 0 || *end != '\0' || v < 1 || v > 100) {
			return -EINVAL;
		}
		p->type = PATTERN_COMPRESS;
		p->compress_pct = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

const char *
bdevperf_pattern_str(const struct bdevperf_pattern *p, char *buf, size_t len)
{
	switch (p->type) {
	case PATTERN_RANDOM:
		snprintf(buf, len, "random");
		break;
	case PATTERN_ZEROS:
		snprintf(buf, len, "zeros");
		break;
	case PATTERN_COMPRESS:
		snprintf(buf, len, "compress:%u", p->compress_pct);
		break;
	}
	return buf;
}

/* Bytes LZ4 needs to encode a length beyond its 4-bit token field. */
static uint32_t
lz4_len_bytes(uint32_t len)
{
	return len < 15 ? 0 : 1 + (len - 15) / 255;
}

/* Estimated LZ4 output for one chunk with r random bytes. */
static uint32_t
chunk_cost(uint32_t r)
{
	uint32_t literals = r + 1;
	uint32_t match;

	if (r + 1 + 4 > CHUNK_LEN) {
		/* The run is too short to be a match: everything is literal. */
		return CHUNK_LEN + 1;
	}
	match = CHUNK_LEN - literals;
	return 1 + lz4_len_bytes(literals) + literals + 2 + lz4_len_bytes(match - 4);
}

uint32_t
bdevperf_pattern_random_bytes(uint32_t pct)
{
	uint32_t target, best = 0, best_err = UINT32_MAX, err, cost, r;

	if (pct >= 100) {
		return CHUNK_LEN;
	}
	target = (pct * CHUNK_LEN + 50) / 100;
	for (r = 0; r < CHUNK_LEN; r++) {
		cost = chunk_cost(r);
		err = cost > target ? cost - target : target - cost;
		if (err < best_err) {
			best_err = err;
			best = r;
		}
	}
	return best;
}

static void
fill_random(uint64_t *rng, uint8_t *buf, size_t len)
{
	uint64_t v;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		v = bdevperf_rand(rng);
		memcpy(buf + i, &v, 8);
	}
	if (i < len) {
		v = bdevperf_rand(rng);
		memcpy(buf + i, &v, len - i);
	}
}

void
bdevperf_pattern_fill(const struct bdevperf_pattern *p, uint64_t *rng, uint8_t *buf, size_t len)
{
	uint32_t r, n;
	size_t off;

	switch (p->type) {
	case PATTERN_ZEROS:
		memset(buf, 0, len);
		return;
	case PATTERN_RANDOM:
		fill_random(rng, buf, len);
		return;
	case PATTERN_COMPRESS:
		break;
	}
	r = bdevperf_pattern_random_bytes(p->compress_pct);
	for (off = 0; off < len; off += CHUNK_LEN) {
		n = (uint32_t)GGA_MIN((size_t)CHUNK_LEN, len - off);
		fill_random(rng, buf + off, GGA_MIN(r, n));
		if (n > r) {
			memset(buf + off + r, (int)(bdevperf_rand(rng) >> 56), n - r);
		}
	}
}

size_t
bdevperf_pattern_alloc_len(uint32_t block_size, uint32_t md_size)
{
	return BDEVPERF_PATTERN_LEN + block_size + md_size;
}

void
bdevperf_pattern_fill_source(const struct bdevperf_pattern *p, uint64_t *rng, uint8_t *buf,
			     size_t alloc_len)
{
	size_t off, n;

	bdevperf_pattern_fill(p, rng, buf, BDEVPERF_PATTERN_LEN);
	/* The tail repeats the head so a block may start anywhere in the first part. */
	for (off = BDEVPERF_PATTERN_LEN; off < alloc_len; off += n) {
		n = GGA_MIN((size_t)BDEVPERF_PATTERN_LEN, alloc_len - off);
		memcpy(buf + off, buf, n);
	}
}

/* Where in the pattern the data of block (lba, seq) starts. */
static inline size_t
pattern_rotation(uint64_t lba, uint64_t seq)
{
	uint64_t h = (lba ^ (seq << 24) ^ (seq >> 40)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 54) * ROTATE_STEP % BDEVPERF_PATTERN_LEN;
}

void
bdevperf_verify_fill(uint8_t *buf, uint64_t lba, uint64_t nblocks, uint64_t seq,
		     uint32_t block_size, uint32_t md_size, const uint8_t *pattern)
{
	uint64_t hdr[2], i;
	uint8_t *blk;
	size_t rot;

	for (i = 0; i < nblocks; i++, lba++) {
		blk = buf + i * (size_t)(block_size + md_size);
		rot = pattern_rotation(lba, seq);
		/*
		 * The header makes each block's content unique to where and when
		 * it was written, so a read that returns another block's data, or
		 * an older write of this one, never compares equal.
		 */
		hdr[0] = lba;
		hdr[1] = seq;
		memcpy(blk, hdr, BDEVPERF_VERIFY_HDR);
		memcpy(blk + BDEVPERF_VERIFY_HDR, pattern + rot + BDEVPERF_VERIFY_HDR,
		       block_size - BDEVPERF_VERIFY_HDR);
		if (md_size > 0) {
			memcpy(blk + block_size,
			       pattern + (rot + 4 * ROTATE_STEP) % BDEVPERF_PATTERN_LEN, md_size);
			hdr[0] = ~lba;
			memcpy(blk + block_size, hdr, GGA_MIN(md_size, BDEVPERF_VERIFY_HDR));
		}
	}
}

uint64_t
bdevperf_verify_compare(const uint8_t *expected, const uint8_t *actual, uint64_t nblocks,
			uint32_t buf_block_size, uint64_t *first_block, uint32_t *first_offset)
{
	uint64_t i, bad = 0;
	const uint8_t *e, *a;
	uint32_t j;

	if (memcmp(expected, actual, nblocks * buf_block_size) == 0) {
		return 0;
	}
	for (i = 0; i < nblocks; i++) {
		e = expected + i * buf_block_size;
		a = actual + i * buf_block_size;
		if (memcmp(e, a, buf_block_size) == 0) {
			continue;
		}
		if (bad == 0) {
			for (j = 0; j < buf_block_size && e[j] == a[j]; j++) {
			}
			*first_block = i;
			*first_offset = j;
		}
		bad++;
	}
	return bad;
}
