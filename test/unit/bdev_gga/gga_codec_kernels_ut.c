/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of how the gga codec uses ISA-L's kernels: the XOR parity row's
 * derived CRC and XOR kernel, and the vector registers left clean after them.
 */
#include <cpuid.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

#include "gga/util.h"
#include "gga_codec_ut_env.h"
#include "gga_ut.h"

/*
 * A parity fragment that is the XOR of the data fragments (the first row of
 * the Vandermonde matrix) gets its CRC from theirs, not from a pass over it:
 * every parity fragment's recorded CRC must still be the CRC of its bytes,
 * for every kind of block, odd and even k, and both matrices (k = 1 is the odd case).
 */
static void
test_parity_crc(void)
{
	static const struct {
		uint32_t bs, k, m;
		enum gga_matrix matrix;
	} geo[] = {
		{ 4096, 2, 1, GGA_MATRIX_VANDERMONDE }, { 4096, 8, 2, GGA_MATRIX_VANDERMONDE },
		{ 4096, 4, 2, GGA_MATRIX_VANDERMONDE }, { 512, 1, 2, GGA_MATRIX_VANDERMONDE },
		{ 4096, 2, 1, GGA_MATRIX_CAUCHY },      { 4096, 4, 2, GGA_MATRIX_CAUCHY },
	};
	struct gga_frag_md md;
	struct env e;
	size_t g;
	uint32_t i, r;
	int kind;

	for (g = 0; g < ARRAY_SIZE(geo); g++) {
		env_init(&e, geo[g].bs, geo[g].k, geo[g].m, geo[g].matrix);
		for (kind = 0; kind < KIND_COUNT; kind++) {
			for (r = 0; r < 4; r++) {
				fill_kind(e.block, e.B, (enum kind)kind);
				UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 9 + r, 1 + r, NULL), 0);
				for (i = e.k; i < e.n; i++) {
					UT_ASSERT_EQ_FATAL(gga_frag_md_decode(e.f.md[i], 9 + r,
									      &md),
							   0);
					UT_ASSERT_EQ(md.data_crc,
						     gga_crc32c(e.f.data[i], e.f.frag_size, 0));
				}
			}
		}
		env_fini(&e);
	}
}

/*
 * The XOR parity row runs ISA-L's XOR kernel when every buffer is 32-byte
 * aligned, and the erasure code otherwise; both must give the same
 * fragments, and a data fragment rebuilt from the XOR parity (the XOR path
 * again, when aligned) must give the block back.
 */
static void
test_xor_parity(void)
{
	static const struct {
		uint32_t bs, k, m;
		enum gga_matrix matrix;
	} geo[] = {
		{ 4096, 2, 1, GGA_MATRIX_VANDERMONDE },
		{ 4096, 4, 2, GGA_MATRIX_VANDERMONDE },
		{ 4096, 8, 2, GGA_MATRIX_VANDERMONDE },
		{ 4096, 2, 1, GGA_MATRIX_CAUCHY },
	};
	static const enum kind kinds[] = { KIND_RANDOM, KIND_MILD, KIND_HIGH };
	void *fd[2][GGA_CODEC_MAX_FRAGS], *fm[2][GGA_CODEC_MAX_FRAGS];
	const void *cfd[GGA_CODEC_MAX_FRAGS], *cfm[GGA_CODEC_MAX_FRAGS];
	uint8_t *area[2], *md_area, *out, x;
	struct env e;
	size_t g, kd, b;
	uint32_t i, j, F, a;

	for (g = 0; g < ARRAY_SIZE(geo); g++) {
		env_init(&e, geo[g].bs, geo[g].k, geo[g].m, geo[g].matrix);
		F = e.B / e.k;
		/* [0]: every fragment 64-byte aligned; [1]: every one 8 bytes off. */
		area[0] = aligned_alloc(64, (size_t)e.n * F);
		area[1] = aligned_alloc(64, (size_t)e.n * (F + 64));
		md_area = calloc(2 * e.n, TEST_MD_SIZE);
		out = aligned_alloc(64, e.B);
		CU_ASSERT_FATAL(area[0] != NULL && area[1] != NULL && md_area != NULL &&
				out != NULL);
		for (i = 0; i < e.n; i++) {
			fd[0][i] = area[0] + (size_t)i * F;
			fd[1][i] = area[1] + (size_t)i * (F + 64) + 8;
			fm[0][i] = md_area + (size_t)i * TEST_MD_SIZE;
			fm[1][i] = md_area + (size_t)(e.n + i) * TEST_MD_SIZE;
		}
		for (kd = 0; kd < ARRAY_SIZE(kinds); kd++) {
			fill_kind(e.block, e.B, kinds[kd]);
			for (a = 0; a < 2; a++) {
				UT_ASSERT_EQ_FATAL(gga_codec_encode(e.c, e.s, e.block, 3, 4, fd[a],
								    fm[a], NULL),
						   0);
			}
			for (i = 0; i < e.n; i++) {
				CU_ASSERT(memcmp(fd[0][i], fd[1][i], F) == 0);
				CU_ASSERT(memcmp(fm[0][i], fm[1][i], TEST_MD_SIZE) == 0);
			}
			if (geo[g].matrix == GGA_MATRIX_VANDERMONDE) {
				for (b = 0; b < F; b++) {
					x = 0;
					for (i = 0; i < e.k; i++) {
						x ^= ((uint8_t *)fd[0][i])[b];
					}
					if (x != ((uint8_t *)fd[0][e.k])[b]) {
						break;
					}
				}
				UT_ASSERT_EQ(b, F);
			}
			for (a = 0; a < 2; a++) {
				for (i = 0; i < e.n; i++) {
					cfd[i] = fd[a][i];
					cfm[i] = fm[a][i];
				}
				for (j = 0; j < e.k; j++) {
					memset(out, 0xa5, e.B);
					UT_ASSERT_EQ(gga_codec_decode(e.c, e.s, cfd, cfm,
								      e.all & ~(1u << j), 3, out,
								      NULL),
						     0);
					CU_ASSERT(memcmp(out, e.block, e.B) == 0);
				}
			}
		}
		free(area[0]);
		free(area[1]);
		free(md_area);
		free(out);
		env_fini(&e);
	}
}

/*
 * The upper halves of the vector registers in use, from XINUSE (XGETBV with
 * ECX = 1): bit 2 for YMM0-15, bit 6 for ZMM0-15. False when the CPU cannot
 * tell (no AVX, or no XGETBV with ECX = 1).
 */
static bool
vector_upper_in_use(uint64_t *in_use)
{
#if defined(__x86_64__)
	uint32_t a, b, c, d, lo, hi;

	if (!__builtin_cpu_supports("avx") || __get_cpuid_max(0, NULL) < 0xd) {
		return false;
	}
	__cpuid_count(0xd, 1, a, b, c, d);
	if (!(a & (1u << 2))) {
		return false;
	}
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	*in_use = (((uint64_t)hi << 32) | lo) & ((1u << 2) | (1u << 6));
	return true;
#else
	(void)in_use;
	return false;
#endif
}

/*
 * ISA-L's AVX2/AVX-512 kernels return with the vector registers' upper
 * halves in use, and every SSE instruction after them pays for it (a third
 * of the gga bdev's read rate on the benchmark machine). crc32c() and the
 * codec must leave them clean.
 */
static void
test_vector_state_clean(void)
{
	struct gga_decode_info info;
	uint64_t in_use = 0;
	struct env e;

	env_init(&e, 4096, 2, 1, GGA_MATRIX_VANDERMONDE);
	fill_kind(e.block, e.B, KIND_RANDOM);
	/* ISA-L alone: does it leave state behind on this CPU at all? */
	(void)crc32_iscsi(e.block, (int)e.B, 0);
	if (!vector_upper_in_use(&in_use) || in_use == 0) {
		printf("\n  note: test_vector_state_clean checks nothing here: %s\n",
		       in_use == 0 ? "ISA-L leaves no upper vector state on this CPU" :
				     "the CPU cannot report XINUSE");
		env_fini(&e);
		return;
	}
	(void)crc32c(e.block, e.B, 0);
	CU_ASSERT(vector_upper_in_use(&in_use) && in_use == 0);
	(void)crc32_iscsi(e.block, (int)e.B, 0);
	UT_ASSERT_EQ_FATAL(env_encode(&e, &e.f, 7, 1, NULL), 0);
	CU_ASSERT(vector_upper_in_use(&in_use) && in_use == 0);
	(void)crc32_iscsi(e.block, (int)e.B, 0);
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all, 7, e.block, &info), 0);
	CU_ASSERT(vector_upper_in_use(&in_use) && in_use == 0);
	/* A recovery runs the erasure code's decode. */
	(void)crc32_iscsi(e.block, (int)e.B, 0);
	UT_ASSERT_EQ(env_decode(&e, &e.f, e.all & ~1u, 7, e.block, &info), 0);
	CU_ASSERT(vector_upper_in_use(&in_use) && in_use == 0);
	env_fini(&e);
}

const struct ut_test g_kernel_tests[] = {
	UT_TEST(test_parity_crc),
	UT_TEST(test_xor_parity),
	UT_TEST(test_vector_state_clean),
};
const size_t g_kernel_tests_count = ARRAY_SIZE(g_kernel_tests);
