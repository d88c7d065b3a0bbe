/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the two files of gga_packed_format_ut share: a seeded generator, a
 * callback that collects the records a parse hands out, a WU id, and
 * helpers that reseal a header's crcs after a test edited it.
 */
#ifndef PK_UT_H
#define PK_UT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev_gga/gga_packed_format.h"
#include "gga_ut.h"

#define MAX_RECS 512

/* What a parse handed to its callback. */
struct seen {
	uint32_t n;
	struct gga_pk_rec rec[MAX_RECS];
	uint32_t off[MAX_RECS];
	const uint8_t *frag[MAX_RECS];
};

static inline int
collect(void *ctx, const struct gga_pk_rec *rec, uint32_t off, const uint8_t *frag)
{
	struct seen *s = ctx;

	CU_ASSERT_FATAL(s->n < MAX_RECS);
	s->rec[s->n] = *rec;
	s->off[s->n] = off;
	s->frag[s->n] = frag;
	s->n++;
	return 0;
}

extern uint64_t g_x;

static inline uint64_t
rnd(void)
{
	g_x ^= g_x << 13;
	g_x ^= g_x >> 7;
	g_x ^= g_x << 17;
	return g_x;
}

static inline void
fill_rnd(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		p[i] = (uint8_t)rnd();
	}
}

static inline struct gga_pk_wu_id
make_id(uint32_t lba_size, uint64_t seq, uint32_t wu_off)
{
	struct gga_pk_wu_id id = {
		.seg_seq = seq,
		.wu_off = wu_off,
		.lba_size = lba_size,
		.role = 0,
		.k = 2,
		.m = 1,
	};
	uint32_t i;

	for (i = 0; i < 16; i++) {
		id.array_uuid[i] = (uint8_t)i;
	}
	return id;
}

static inline bool
rec_eq(const struct gga_pk_rec *a, const struct gga_pk_rec *b)
{
	return a->type == b->type && a->role == b->role && a->encoding == b->encoding &&
	       a->k == b->k && a->m == b->m && a->frag_len == b->frag_len && a->lba == b->lba &&
	       a->generation == b->generation && a->payload_len == b->payload_len &&
	       a->data_crc == b->data_crc && a->block_crc == b->block_crc;
}

/* Recompute the hdr_crc of the record header at p, after a test edited it. */
static inline void
reseal_rec(uint8_t *p)
{
	uint32_t crc = htole32(gga_crc32c(p, GGA_PK_REC_CRC_LEN, 0));

	memcpy(p + GGA_PK_REC_CRC_LEN, &crc, 4);
}

/*
 * Recompute both crcs of the WU at p (cap bytes; the body crc only when the
 * header's wu_len fits in them).
 */
static inline void
reseal_wu(uint8_t *p, size_t cap)
{
	uint32_t len, crc;

	memcpy(&len, p + 12, 4);
	len = le32toh(len);
	if (len >= GGA_PK_WU_HDR_SIZE && len <= cap) {
		crc = htole32(gga_crc32c(p + GGA_PK_WU_HDR_SIZE, len - GGA_PK_WU_HDR_SIZE, 0));
		memcpy(p + 48, &crc, 4);
	}
	crc = htole32(gga_crc32c(p, GGA_PK_WU_CRC_LEN, 0));
	memcpy(p + GGA_PK_WU_CRC_LEN, &crc, 4);
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/* gga_packed_wu_ut.c: the write units. */
void test_wu_roundtrip(void);
void test_wu_truncated(void);
void test_wu_torn(void);
void test_wu_stale_foreign(void);
void test_wu_header_every_byte(void);
void test_wu_inconsistent(void);
void test_wu_padding(void);
void test_wu_limits(void);
void test_fuzz(void);

#endif /* PK_UT_H */
