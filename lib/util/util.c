/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gga/util.h"

static uint64_t g_ticks_hz;

uint64_t
time_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ticks_get_slow(void);

uint64_t
ticks_get_slow(void)
{
	return time_now_ns();
}

static uint64_t
calibrate_ticks_hz(void)
{
#if defined(__x86_64__)
	struct timespec req = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	uint64_t t0, t1, n0, n1;

	/* Measure the TSC against CLOCK_MONOTONIC over 20 ms. */
	n0 = time_now_ns();
	t0 = ticks_get();
	while (nanosleep(&req, &req) != 0 && errno == EINTR) {
	}
	n1 = time_now_ns();
	t1 = ticks_get();
	if (n1 <= n0 || t1 <= t0) {
		return 1000000000ull;
	}
	/* Round to 1 MHz: calibration noise is larger than that. */
	return ((t1 - t0) * 1000000000ull / (n1 - n0) + 500000) / 1000000 * 1000000;
#else
	return 1000000000ull;
#endif
}

uint64_t
ticks_hz(void)
{
	uint64_t hz = __atomic_load_n(&g_ticks_hz, __ATOMIC_ACQUIRE);

	if (hz == 0) {
		hz = calibrate_ticks_hz();
		__atomic_store_n(&g_ticks_hz, hz, __ATOMIC_RELEASE);
	}
	return hz;
}

uint64_t
ticks_to_us(uint64_t ticks)
{
	uint64_t hz = ticks_hz();

	return ticks / hz * 1000000ull + (ticks % hz) * 1000000ull / hz;
}

uint64_t
us_to_ticks(uint64_t us)
{
	uint64_t hz = ticks_hz();

	return us / 1000000ull * hz + (us % 1000000ull) * hz / 1000000ull;
}

static inline uint64_t
load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

bool
mem_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* Real data almost always has a non-zero byte among its first eight. */
	if (len >= 8 && load64(p) != 0) {
		return false;
	}
	for (; len >= 64; p += 64, len -= 64) {
		if ((load64(p) | load64(p + 8) | load64(p + 16) | load64(p + 24) | load64(p + 32) |
		     load64(p + 40) | load64(p + 48) | load64(p + 56)) != 0) {
			return false;
		}
	}
	for (; len >= 8; p += 8, len -= 8) {
		if (load64(p) != 0) {
			return false;
		}
	}
	for (; len > 0; p++, len--) {
		if (*p != 0) {
			return false;
		}
	}
	return true;
}

size_t
iov_length(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++) {
		len += iov[i].iov_len;
	}
	return len;
}

size_t
iov_to_buf(const struct iovec *iov, int iovcnt, void *buf, size_t len)
{
	size_t done = 0, n;
	int i;

	for (i = 0; i < iovcnt && done < len; i++) {
		n = GGA_MIN(iov[i].iov_len, len - done);
		memcpy((char *)buf + done, iov[i].iov_base, n);
		done += n;
	}
	return done;
}

size_t
iov_from_buf(const struct iovec *iov, int iovcnt, const void *buf, size_t len)
{
	size_t done = 0, n;
	int i;

	for (i = 0; i < iovcnt && done < len; i++) {
		n = GGA_MIN(iov[i].iov_len, len - done);
		memcpy(iov[i].iov_base, (const char *)buf + done, n);
		done += n;
	}
	return done;
}

int
parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (s == NULL || *s == '\0' || *s == '-') {
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s) {
		return -EINVAL;
	}
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'B' || *end == 'b') {
		end++;
	}
	if (*end != '\0' || (v != 0 && mult > UINT64_MAX / v)) {
		return -EINVAL;
	}
	*out = v * mult;
	return 0;
}

int
parse_core_mask(const char *s, uint64_t *mask)
{
	unsigned long long v;
	char *end;

	if (s == NULL || *s == '\0' || *s == '-') {
		return -EINVAL;
	}
	errno = 0;
	/* SPDK takes masks in hex with or without 0x. */
	v = strtoull(s, &end, 16);
	if (errno != 0 || *end != '\0' || v == 0) {
		return -EINVAL;
	}
	*mask = v;
	return 0;
}
