/* SPDX-License-Identifier: BSD-3-Clause */
/* One logical block as packed records (gga_packed_block.h). */
#include <errno.h>
#include <string.h>

#include "gga/util.h"
#include "gga_packed_block.h"

static bool
id_matches(const struct gga_codec *c, const struct gga_pk_wu_id *id)
{
	return id != NULL && id->k == gga_codec_k(c) && id->m == gga_codec_m(c);
}

/* Build one WU per member, record i from rec (role-free) and frag[i]. */
static int
build_wus(uint32_t n, const struct gga_pk_rec *rec, const void *const frag[],
	  const struct gga_pk_wu_id *id, void *const wu_buf[], uint32_t cap,
	  struct gga_pkb_write *out)
{
	struct gga_pk_wu_id wid = *id;
	struct gga_pk_wu wu;
	uint32_t i;
	int off, len;

	for (i = 0; i < n; i++) {
		if (wu_buf[i] == NULL) {
			return -EINVAL;
		}
		wid.role = (uint8_t)i;
		if (gga_pk_wu_init(&wu, wu_buf[i], cap, &wid) != 0) {
			return -EINVAL;
		}
		off = gga_pk_wu_add_record(&wu, rec, frag != NULL ? frag[i] : NULL);
		if (off < 0) {
			return off;
		}
		len = gga_pk_wu_finish(&wu);
		if (len < 0) {
			return len;
		}
		/* The same record length gives the same layout on every member. */
		out->rec_off = (uint32_t)off;
		out->rec_size = gga_pk_record_size(
			rec->type == GGA_PK_REC_DATA ? gga_pk_frag_len(rec->payload_len, id->k) :
						       0);
		out->wu_len = (uint32_t)len;
	}
	return 0;
}

int
gga_pkb_build(const struct gga_codec *c, struct gga_codec_scratch *s, const void *block,
	      uint64_t lba, uint64_t gen, const struct gga_pk_wu_id *id, void *const frag[],
	      void *const wu_buf[], uint32_t cap, struct gga_pkb_write *out)
{
	struct gga_pk_rec rec;
	int rc;

	if (c == NULL || out == NULL || gen == 0 || !id_matches(c, id) || frag == NULL ||
	    wu_buf == NULL) {
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	rc = gga_codec_pack(c, s, block, 0, frag, &out->info);
	if (rc != 0) {
		return rc;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = GGA_PK_REC_DATA;
	rec.encoding = (uint8_t)out->info.encoding;
	rec.lba = lba;
	rec.generation = gen;
	rec.payload_len = out->info.payload_len;
	rec.block_crc = out->info.block_crc;
	return build_wus(id->k + id->m, &rec, (const void *const *)frag, id, wu_buf, cap, out);
}

int
gga_pkb_build_trim(uint32_t n, uint64_t lba, uint32_t count, uint64_t gen,
		   const struct gga_pk_wu_id *id, void *const wu_buf[], uint32_t cap,
		   struct gga_pkb_write *out)
{
	struct gga_pk_rec rec;

	if (out == NULL || id == NULL || wu_buf == NULL || gen == 0 || count == 0 ||
	    n != (uint32_t)id->k + id->m) {
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	memset(&rec, 0, sizeof(rec));
	rec.type = GGA_PK_REC_TRIM;
	rec.lba = lba;
	rec.generation = gen;
	rec.payload_len = count;
	return build_wus(n, &rec, NULL, id, wu_buf, cap, out);
}

uint32_t
gga_pkb_wu_max(const struct gga_codec *c, uint32_t lba_size)
{
	uint32_t used = GGA_PK_WU_HDR_SIZE + gga_pk_record_size(gga_codec_frag_size(c));

	return (used + lba_size - 1) / lba_size * lba_size;
}

static bool
same_write(const struct gga_pk_rec *a, const struct gga_pk_rec *b)
{
	return a->encoding == b->encoding && a->payload_len == b->payload_len &&
	       a->block_crc == b->block_crc && a->frag_len == b->frag_len;
}

int
gga_pkb_read(const struct gga_codec *c, struct gga_codec_scratch *s, const void *const rec[],
	     uint32_t len, uint32_t present, uint64_t lba, uint64_t gen, void *block_out,
	     uint32_t *bad_mask)
{
	const void *frag[GGA_CODEC_MAX_FRAGS] = { NULL };
	uint32_t n, i, good = 0, bad = 0;
	struct gga_pk_rec r, ref;
	struct gga_pack_info info;
	bool have_ref = false;
	int rc;

	if (bad_mask != NULL) {
		*bad_mask = 0;
	}
	if (c == NULL || rec == NULL || block_out == NULL || gen == 0) {
		return -EINVAL;
	}
	n = gga_codec_k(c) + gga_codec_m(c);
	if ((present >> n) != 0) {
		return -EINVAL;
	}
	memset(&ref, 0, sizeof(ref));
	for (i = 0; i < n; i++) {
		if (!(present & (1u << i))) {
			continue;
		}
		if (rec[i] == NULL || gga_pk_record_decode(rec[i], len, lba, gen, &r) != 0 ||
		    r.role != i || r.k != gga_codec_k(c) || r.m != gga_codec_m(c) ||
		    (have_ref && !same_write(&r, &ref))) {
			bad |= 1u << i;
			continue;
		}
		if (!have_ref) {
			ref = r;
			have_ref = true;
		}
		frag[i] = (const uint8_t *)rec[i] + GGA_PK_REC_HDR_SIZE;
		good |= 1u << i;
	}
	if (bad_mask != NULL) {
		*bad_mask = bad;
	}
	/* A write counts where k members hold it, a zero block's as any other. */
	if (!have_ref || (uint32_t)__builtin_popcount(good) < gga_codec_k(c)) {
		return -EIO;
	}
	info.encoding = (enum gga_encoding)ref.encoding;
	info.payload_len = ref.payload_len;
	info.frag_len = ref.frag_len;
	info.block_crc = ref.block_crc;
	rc = gga_codec_unpack(c, s, frag, good, &info, block_out, NULL);
	/* A record whose fields the codec refuses (raw not B long) is damage, not a bad call. */
	return rc == 0 ? 0 : -EIO;
}
