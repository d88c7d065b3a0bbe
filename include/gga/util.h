/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers used everywhere: containers, arithmetic, time.
 */
#ifndef GGA_UTIL_H
#define GGA_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <isa-l/crc.h>

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define GGA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GGA_MAX(a, b) ((a) > (b) ? (a) : (b))

#define GGA_CACHE_LINE 64

static inline bool
is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static inline uint64_t
align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

static inline uint32_t
u64log2(uint64_t v)
{
	return 63 - (uint32_t)__builtin_clzll(v);
}

/* Bits set in v; without -mpopcnt __builtin_popcount would be a libgcc call. */
static inline uint32_t
popcount32(uint32_t v)
{
	v = v - ((v >> 1) & 0x55555555u);
	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	v = (v + (v >> 4)) & 0x0f0f0f0fu;
	return (v * 0x01010101u) >> 24;
}

/*
 * Ticks: a cheap monotonic clock for the I/O path (the TSC on x86-64).
 * ticks_hz() is calibrated once against CLOCK_MONOTONIC on first use.
 */
static inline uint64_t
ticks_get(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	extern uint64_t ticks_get_slow(void);
	return ticks_get_slow();
#endif
}

uint64_t ticks_hz(void);
uint64_t ticks_to_us(uint64_t ticks);
uint64_t us_to_ticks(uint64_t us);

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t time_now_ns(void);

/*
 * Call after ISA-L's vector code (its CRC and erasure-code kernels). Their
 * AVX2 and AVX-512 versions return with the upper halves of the vector
 * registers still in use (no VZEROUPPER), and the SSE code gcc writes for
 * the rest of gga then pays for that state on every vector instruction
 * until something clears it. On the 2-vCPU Xeon of docs/BENCHMARKS.md this
 * cost the gga bdev a third of its 4 KiB read rate. Clearing is one cheap
 * instruction; it is skipped on a CPU without AVX, where it does not exist
 * (and ISA-L runs its SSE versions).
 */
static inline void
simd_upper_clean(void)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx")) {
		__asm__ volatile("vzeroupper");
	}
#endif
}

/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82f63b78, initial value and
 * final xor 0xffffffff): the iSCSI/ext4/NVMe-TCP digest, check value
 * 0xe3069283 for "123456789". Pass crc = 0 to start; pass a previous result
 * to continue, so crc32c(b, nb, crc32c(a, na, 0)) is the CRC of a then b.
 * ISA-L's crc32_iscsi() applies neither inversion itself, hence the two ~.
 */
static inline uint32_t
crc32c(const void *buf, size_t len, uint32_t crc)
{
	uint32_t r = ~crc32_iscsi((unsigned char *)(uintptr_t)buf, (int)len, ~crc);

	simd_upper_clean();
	return r;
}

/*
 * True when all len bytes at buf are zero (len 0 included). Quick to answer
 * false for ordinary data, and scans 64 bytes a step otherwise.
 */
bool mem_is_zero(const void *buf, size_t len);

/* Total length of an iovec array. */
size_t iov_length(const struct iovec *iov, int iovcnt);

/* Copy between a flat buffer and an iovec array; return bytes copied. */
size_t iov_to_buf(const struct iovec *iov, int iovcnt, void *buf, size_t len);
size_t iov_from_buf(const struct iovec *iov, int iovcnt, const void *buf, size_t len);

/*
 * Parse a size with an optional k/m/g (KiB/MiB/GiB) suffix. Returns 0 and sets
 * *out, or -EINVAL.
 */
int parse_size(const char *s, uint64_t *out);

/* Parse a core mask ("0x3", "3") into a bit set of up to 64 cores. */
int parse_core_mask(const char *s, uint64_t *mask);

#endif /* GGA_UTIL_H */
