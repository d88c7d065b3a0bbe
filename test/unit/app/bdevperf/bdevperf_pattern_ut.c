/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bdevperf's data patterns and verify blocks: --pattern parsing, the LZ4
 * ratio that compress:N achieves (checked with liblz4 itself), and that
 * verify data is unique per (lba, write) and that every differing byte,
 * metadata included, is caught and located.
 */
#include <math.h>
#include <stdlib.h>

#include <lz4.h>

#include "gga_ut.h"

#include "app/bdevperf/bdevperf_pattern.c"

static void
test_parse(void)
{
	struct bdevperf_pattern p;

	UT_ASSERT_EQ(bdevperf_pattern_parse("random", &p), 0);
	UT_ASSERT_EQ(p.type, PATTERN_RANDOM);
	UT_ASSERT_EQ(bdevperf_pattern_parse("zeros", &p), 0);
	UT_ASSERT_EQ(p.type, PATTERN_ZEROS);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:50", &p), 0);
	UT_ASSERT_EQ(p.type, PATTERN_COMPRESS);
	UT_ASSERT_EQ(p.compress_pct, 50);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:1", &p), 0);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:100", &p), 0);
	UT_ASSERT_EQ(p.compress_pct, 100);

	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:0", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:101", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:-5", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress:5x", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("compress", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("Random", &p), -EINVAL);
	UT_ASSERT_EQ(bdevperf_pattern_parse("", &p), -EINVAL);
}

static void
test_str(void)
{
	struct bdevperf_pattern p = { .type = PATTERN_COMPRESS, .compress_pct = 25 };
	char buf[32];

	UT_ASSERT_STR_EQ(bdevperf_pattern_str(&p, buf, sizeof(buf)), "compress:25");
	p.type = PATTERN_ZEROS;
	UT_ASSERT_STR_EQ(bdevperf_pattern_str(&p, buf, sizeof(buf)), "zeros");
	p.type = PATTERN_RANDOM;
	UT_ASSERT_STR_EQ(bdevperf_pattern_str(&p, buf, sizeof(buf)), "random");
}

/* LZ4-compressed size of each block_size block of buf, in percent, averaged. */
static double
lz4_ratio(const uint8_t *buf, size_t len, size_t block_size, double *worst_dev, double target)
{
	int bound = LZ4_compressBound((int)block_size);
	char *out = malloc((size_t)bound);
	double sum = 0, r;
	size_t off, n = 0;
	int clen;

	CU_ASSERT_FATAL(out != NULL);
	*worst_dev = 0;
	for (off = 0; off + block_size <= len; off += block_size) {
		clen = LZ4_compress_default((const char *)buf + off, out, (int)block_size, bound);
		CU_ASSERT_FATAL(clen > 0);
		r = 100.0 * clen / (double)block_size;
		sum += r;
		if (fabs(r - target) > *worst_dev) {
			*worst_dev = fabs(r - target);
		}
		n++;
	}
	free(out);
	return sum / (double)n;
}

static void
check_compress(uint32_t pct, size_t block_size)
{
	struct bdevperf_pattern p = { .type = PATTERN_COMPRESS, .compress_pct = pct };
	size_t len = 64 * 4096;
	uint8_t *buf = malloc(len);
	uint64_t rng = bdevperf_rand_seed(pct, block_size);
	double ratio, worst;

	CU_ASSERT_FATAL(buf != NULL);
	bdevperf_pattern_fill(&p, &rng, buf, len);
	ratio = lz4_ratio(buf, len, block_size, &worst, pct);
	printf("compress:%u, %zu-byte blocks: LZ4 to %.2f %% (worst block off by %.2f)\n", pct,
	       block_size, ratio, worst);
	/* "About N %": within 3 points on average, and no block far off. */
	CU_ASSERT(fabs(ratio - pct) <= 3.0);
	CU_ASSERT(worst <= 5.0);
	free(buf);
}

static void
test_compress_ratio(void)
{
	static const uint32_t pcts[] = { 10, 25, 50, 75, 100 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pcts); i++) {
		check_compress(pcts[i], 4096);
		check_compress(pcts[i], 8192);
	}
	/* Small blocks pay LZ4's per-block overhead but stay close. */
	check_compress(50, 512);
}

static void
test_compress_ratio_verify_blocks(void)
{
	struct bdevperf_pattern p = { .type = PATTERN_COMPRESS, .compress_pct = 50 };
	size_t alloc = bdevperf_pattern_alloc_len(4096, 0), len = 32 * 4096;
	uint8_t *src = malloc(alloc), *buf = malloc(len);
	uint64_t rng = 99;
	double ratio, worst;

	CU_ASSERT_FATAL(src != NULL && buf != NULL);
	bdevperf_pattern_fill_source(&p, &rng, src, alloc);
	/* Verify writes keep the ratio: the 16-byte header is all they add. */
	bdevperf_verify_fill(buf, 1000, 32, 7, 4096, 0, src);
	ratio = lz4_ratio(buf, len, 4096, &worst, 50);
	printf("verify blocks with compress:50: LZ4 to %.2f %%\n", ratio);
	CU_ASSERT(fabs(ratio - 50) <= 3.0);
	free(src);
	free(buf);
}

static void
test_zeros_and_random(void)
{
	struct bdevperf_pattern p = { .type = PATTERN_ZEROS };
	size_t len = 16 * 4096, i, nonzero = 0;
	uint8_t *buf = malloc(len);
	uint64_t rng = 1;
	double ratio, worst;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0xaa, len);
	bdevperf_pattern_fill(&p, &rng, buf, len);
	for (i = 0; i < len; i++) {
		nonzero += buf[i] != 0;
	}
	UT_ASSERT_EQ(nonzero, 0);

	p.type = PATTERN_RANDOM;
	bdevperf_pattern_fill(&p, &rng, buf, len);
	ratio = lz4_ratio(buf, len, 4096, &worst, 100);
	CU_ASSERT(ratio >= 100.0);
	/* An odd length fills the tail too. */
	memset(buf, 0, 64);
	bdevperf_pattern_fill(&p, &rng, buf, 13);
	CU_ASSERT(memcmp(buf + 8, "\0\0\0\0\0", 5) != 0);
	UT_ASSERT_EQ(buf[13], 0);
	free(buf);
}

static void
test_random_bytes_monotonic(void)
{
	uint32_t pct, prev = 0, r;

	for (pct = 1; pct <= 100; pct++) {
		r = bdevperf_pattern_random_bytes(pct);
		CU_ASSERT(r >= prev);
		CU_ASSERT(r <= CHUNK_LEN);
		prev = r;
	}
	UT_ASSERT_EQ(bdevperf_pattern_random_bytes(100), CHUNK_LEN);
}

struct verify_env {
	uint32_t bs, md;
	uint8_t *src;
};

static void
verify_env_init(struct verify_env *e, uint32_t bs, uint32_t md, enum bdevperf_pattern_type t)
{
	struct bdevperf_pattern p = { .type = t, .compress_pct = 50 };
	size_t alloc = bdevperf_pattern_alloc_len(bs, md);
	uint64_t rng = 5;

	e->bs = bs;
	e->md = md;
	e->src = malloc(alloc);
	CU_ASSERT_FATAL(e->src != NULL);
	bdevperf_pattern_fill_source(&p, &rng, e->src, alloc);
	/* The tail repeats the head. */
	CU_ASSERT(memcmp(e->src + BDEVPERF_PATTERN_LEN, e->src, alloc - BDEVPERF_PATTERN_LEN) == 0);
}

static void
test_verify_fill_unique(void)
{
	static const enum bdevperf_pattern_type types[] = { PATTERN_RANDOM, PATTERN_ZEROS,
							    PATTERN_COMPRESS };
	uint8_t *a, *b;
	struct verify_env e;
	uint64_t hdr[2];
	size_t i, bbs;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		verify_env_init(&e, 512, 64, types[i]);
		bbs = e.bs + e.md;
		a = malloc(4 * bbs);
		b = malloc(4 * bbs);
		CU_ASSERT_FATAL(a != NULL && b != NULL);

		bdevperf_verify_fill(a, 100, 4, 1, e.bs, e.md, e.src);
		bdevperf_verify_fill(b, 100, 4, 1, e.bs, e.md, e.src);
		CU_ASSERT(memcmp(a, b, 4 * bbs) == 0);

		/* Each block names its lba and write sequence. */
		memcpy(hdr, a + 2 * bbs, sizeof(hdr));
		UT_ASSERT_EQ(hdr[0], 102);
		UT_ASSERT_EQ(hdr[1], 1);
		/* ... and so does its metadata. */
		memcpy(hdr, a + 2 * bbs + e.bs, sizeof(hdr));
		UT_ASSERT_EQ(hdr[0], ~102ull);
		UT_ASSERT_EQ(hdr[1], 1);

		/* Another write of the same range differs in every block, data and metadata. */
		bdevperf_verify_fill(b, 100, 4, 2, e.bs, e.md, e.src);
		UT_ASSERT_EQ(bdevperf_verify_compare(a, b, 4, (uint32_t)bbs, &(uint64_t){ 0 },
						     &(uint32_t){ 0 }),
			     4);
		CU_ASSERT(memcmp(a + e.bs, b + e.bs, e.md) != 0);

		/* The same write seq one block further differs too (misdirected I/O). */
		bdevperf_verify_fill(b, 101, 4, 1, e.bs, e.md, e.src);
		CU_ASSERT(memcmp(a + bbs, b, bbs) == 0);
		CU_ASSERT(memcmp(a, b, bbs) != 0);

		free(a);
		free(b);
		free(e.src);
	}
}

static void
test_verify_compare(void)
{
	struct verify_env e;
	uint8_t *a, *b;
	uint64_t blk = 99;
	uint32_t off = 99, bbs;

	verify_env_init(&e, 4096, 8, PATTERN_RANDOM);
	bbs = e.bs + e.md;
	a = malloc(8 * bbs);
	b = malloc(8 * bbs);
	CU_ASSERT_FATAL(a != NULL && b != NULL);
	bdevperf_verify_fill(a, 0, 8, 3, e.bs, e.md, e.src);
	memcpy(b, a, 8 * bbs);
	UT_ASSERT_EQ(bdevperf_verify_compare(a, b, 8, bbs, &blk, &off), 0);
	/* Untouched on success. */
	UT_ASSERT_EQ(blk, 99);

	b[5 * bbs + 100] ^= 1;
	UT_ASSERT_EQ(bdevperf_verify_compare(a, b, 8, bbs, &blk, &off), 1);
	UT_ASSERT_EQ(blk, 5);
	UT_ASSERT_EQ(off, 100);

	/* The first differing block and byte are reported; all bad blocks counted. */
	b[2 * bbs + 4097] ^= 0x80;
	UT_ASSERT_EQ(bdevperf_verify_compare(a, b, 8, bbs, &blk, &off), 2);
	UT_ASSERT_EQ(blk, 2);
	UT_ASSERT_EQ(off, 4097);

	/* Last byte of the last block's metadata. */
	memcpy(b, a, 8 * bbs);
	b[8 * bbs - 1] ^= 0xff;
	UT_ASSERT_EQ(bdevperf_verify_compare(a, b, 8, bbs, &blk, &off), 1);
	UT_ASSERT_EQ(blk, 7);
	UT_ASSERT_EQ(off, bbs - 1);
	free(a);
	free(b);
	free(e.src);
}

static void
test_prng(void)
{
	uint64_t s = bdevperf_rand_seed(0, 0), t = bdevperf_rand_seed(0, 1), v;
	uint32_t hist[10] = { 0 }, i;

	CU_ASSERT(s != 0 && t != 0 && s != t);
	CU_ASSERT(bdevperf_rand_seed(1, 0) != s);
	for (i = 0; i < 100000; i++) {
		v = bdevperf_rand_below(&s, 10);
		CU_ASSERT_FATAL(v < 10);
		hist[v]++;
	}
	/* Roughly uniform: each of 10 values within 5 % of 10,000. */
	for (i = 0; i < 10; i++) {
		CU_ASSERT(hist[i] > 9500 && hist[i] < 10500);
	}
	UT_ASSERT_EQ(bdevperf_rand_below(&s, 1), 0);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_parse),
		UT_TEST(test_str),
		UT_TEST(test_compress_ratio),
		UT_TEST(test_compress_ratio_verify_blocks),
		UT_TEST(test_zeros_and_random),
		UT_TEST(test_random_bytes_monotonic),
		UT_TEST(test_verify_fill_unique),
		UT_TEST(test_verify_compare),
		UT_TEST(test_prng),
	};

	return ut_run("bdevperf_pattern", tests, ARRAY_SIZE(tests), NULL, NULL);
}
