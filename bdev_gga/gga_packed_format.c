/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encode, decode, build and parse the records and write units of the packed
 * layout (gga_packed_format.h, docs/FORMAT.md §11).
 */
#include <errno.h>

#include "gga/util.h"
#include "gga_packed_format.h"

static bool
geometry_ok(uint32_t k, uint32_t m)
{
	return k >= 1 && m >= 1 && k + m <= GGA_MAX_FRAGS;
}

static uint32_t
round_up(uint32_t v, uint32_t to)
{
	return (v + to - 1) / to * to;
}

/* CRC-32C of len zero bytes: a pad record's data_crc. */
static uint32_t
zero_crc(uint32_t len)
{
	static const uint8_t zeros[256];
	uint32_t crc = 0, n;

	while (len > 0) {
		n = len < sizeof(zeros) ? len : (uint32_t)sizeof(zeros);
		crc = gga_crc32c(zeros, n, crc);
		len -= n;
	}
	return crc;
}

/*
 * The rules of a record header that need no block size; the same for an
 * encoder (refuse to write it) and a decoder (refuse to trust it).
 */
static bool
rec_consistent(const struct gga_pk_rec *r)
{
	if (!geometry_ok(r->k, r->m) || r->role >= r->k + r->m) {
		return false;
	}
	switch (r->type) {
	case GGA_PK_REC_DATA:
		if (r->generation == 0 || r->payload_len > GGA_PK_FRAG_MAX ||
		    r->frag_len != gga_pk_frag_len(r->payload_len, r->k)) {
			return false;
		}
		switch (r->encoding) {
		case GGA_ENC_ZERO:
			return r->payload_len == 0;
		case GGA_ENC_RAW:
		case GGA_ENC_LZ4:
			return r->payload_len > 0;
		default:
			return false;
		}
	case GGA_PK_REC_TRIM:
		return r->generation != 0 && r->encoding == 0 && r->frag_len == 0 &&
		       r->payload_len != 0 && r->data_crc == 0 && r->block_crc == 0 &&
		       r->lba + r->payload_len - 1 >= r->lba;
	case GGA_PK_REC_PAD:
		return r->encoding == 0 && r->lba == 0 && r->generation == 0 &&
		       r->payload_len == 0 && r->block_crc == 0 &&
		       r->frag_len <= GGA_PK_WU_MAX - GGA_PK_WU_HDR_SIZE - GGA_PK_REC_HDR_SIZE;
	default:
		return false;
	}
}

int
gga_pk_rec_hdr_encode(const struct gga_pk_rec *rec, void *buf)
{
	struct gga_pk_rec_disk d;

	if (rec == NULL || buf == NULL || !rec_consistent(rec)) {
		return -EINVAL;
	}
	memset(&d, 0, sizeof(d));
	d.magic = htole32(GGA_PK_REC_MAGIC);
	d.version = GGA_PK_VERSION;
	d.type = rec->type;
	d.role = rec->role;
	d.encoding = rec->encoding;
	d.geometry = (uint8_t)(rec->k << 4 | rec->m);
	d.frag_len = htole32(rec->frag_len);
	d.lba = htole64(rec->lba);
	d.generation = htole64(rec->generation);
	d.payload_len = htole32(rec->payload_len);
	d.data_crc = htole32(rec->data_crc);
	d.block_crc = htole32(rec->block_crc);
	d.hdr_crc = htole32(gga_crc32c(&d, GGA_PK_REC_CRC_LEN, 0));
	memcpy(buf, &d, sizeof(d));
	return 0;
}

int
gga_pk_rec_hdr_decode(const void *buf, struct gga_pk_rec *rec)
{
	struct gga_pk_rec_disk d;
	struct gga_pk_rec r;

	if (buf == NULL || rec == NULL) {
		return -EINVAL;
	}
	memcpy(&d, buf, sizeof(d));
	if (mem_is_zero(buf, sizeof(d))) {
		return -ENODATA;
	}
	if (le32toh(d.magic) != GGA_PK_REC_MAGIC) {
		return -EILSEQ;
	}
	if (d.version != GGA_PK_VERSION) {
		return -EPROTONOSUPPORT;
	}
	if (le32toh(d.hdr_crc) != gga_crc32c(&d, GGA_PK_REC_CRC_LEN, 0)) {
		return -EBADMSG;
	}
	r.type = d.type;
	r.role = d.role;
	r.encoding = d.encoding;
	r.k = d.geometry >> 4;
	r.m = d.geometry & 0xf;
	r.frag_len = le32toh(d.frag_len);
	r.lba = le64toh(d.lba);
	r.generation = le64toh(d.generation);
	r.payload_len = le32toh(d.payload_len);
	r.data_crc = le32toh(d.data_crc);
	r.block_crc = le32toh(d.block_crc);
	if (!mem_is_zero(d.reserved, sizeof(d.reserved)) || !rec_consistent(&r)) {
		return -EUCLEAN;
	}
	*rec = r;
	return 0;
}

int
gga_pk_record_decode(const void *buf, size_t len, uint64_t lba, uint64_t generation,
		     struct gga_pk_rec *rec)
{
	struct gga_pk_rec r;
	int rc;

	if (buf == NULL || rec == NULL) {
		return -EINVAL;
	}
	if (len < GGA_PK_REC_HDR_SIZE) {
		return -EMSGSIZE;
	}
	rc = gga_pk_rec_hdr_decode(buf, &r);
	if (rc != 0) {
		return rc;
	}
	if (r.type != GGA_PK_REC_DATA || r.lba != lba ||
	    (generation != 0 && r.generation != generation)) {
		return -ESTALE;
	}
	if (len - GGA_PK_REC_HDR_SIZE < r.frag_len) {
		return -EMSGSIZE;
	}
	if (gga_crc32c((const uint8_t *)buf + GGA_PK_REC_HDR_SIZE, r.frag_len, 0) != r.data_crc) {
		return -EIO;
	}
	*rec = r;
	return 0;
}

/* A WU id a builder may write, or a parser may expect. */
static bool
id_ok(const struct gga_pk_wu_id *id)
{
	return id->lba_size >= 512 && id->lba_size <= 65536 && is_pow2(id->lba_size) &&
	       geometry_ok(id->k, id->m) && id->role < id->k + id->m && id->seg_seq != 0 &&
	       id->wu_off % id->lba_size == 0 && id->wu_off < GGA_PK_SEG_BYTES;
}

int
gga_pk_wu_hdr_decode(const void *buf, const struct gga_pk_wu_id *want, struct gga_pk_wu_hdr *hdr)
{
	struct gga_pk_wu_disk d;
	struct gga_pk_wu_hdr h;

	if (buf == NULL || hdr == NULL) {
		return -EINVAL;
	}
	memcpy(&d, buf, sizeof(d));
	if (mem_is_zero(buf, sizeof(d))) {
		return -ENODATA;
	}
	if (le32toh(d.magic) != GGA_PK_WU_MAGIC) {
		return -EILSEQ;
	}
	if (d.version != GGA_PK_VERSION) {
		return -EPROTONOSUPPORT;
	}
	if (le32toh(d.hdr_crc) != gga_crc32c(&d, GGA_PK_WU_CRC_LEN, 0)) {
		return -EBADMSG;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.id.array_uuid, d.array_uuid, sizeof(h.id.array_uuid));
	h.id.seg_seq = le64toh(d.seg_seq);
	h.id.wu_off = le32toh(d.wu_off);
	h.id.lba_size = d.lba_shift <= 16 ? 1u << d.lba_shift : 0;
	h.id.role = d.role;
	h.id.k = d.geometry >> 4;
	h.id.m = d.geometry & 0xf;
	h.wu_len = le32toh(d.wu_len);
	h.rec_count = le32toh(d.rec_count);
	h.used = le32toh(d.used);
	h.body_crc = le32toh(d.body_crc);
	if (!id_ok(&h.id) || !mem_is_zero(d.reserved, sizeof(d.reserved)) ||
	    h.used < GGA_PK_WU_HDR_SIZE || h.used > GGA_PK_WU_MAX || h.used % GGA_PK_ALIGN != 0 ||
	    h.wu_len != round_up(h.used, h.id.lba_size) || h.wu_len > GGA_PK_WU_MAX ||
	    h.wu_len > GGA_PK_SEG_BYTES - h.id.wu_off ||
	    h.rec_count > (h.used - GGA_PK_WU_HDR_SIZE) / GGA_PK_REC_HDR_SIZE) {
		return -EUCLEAN;
	}
	if (want != NULL) {
		if (memcmp(h.id.array_uuid, want->array_uuid, sizeof(h.id.array_uuid)) != 0 ||
		    h.id.role != want->role || h.id.k != want->k || h.id.m != want->m ||
		    h.id.lba_size != want->lba_size) {
			return -EXDEV;
		}
		if (h.id.seg_seq != want->seg_seq || h.id.wu_off != want->wu_off) {
			return -ESTALE;
		}
	}
	*hdr = h;
	return 0;
}

int
gga_pk_wu_init(struct gga_pk_wu *wu, void *buf, uint32_t cap, const struct gga_pk_wu_id *id)
{
	uint32_t room;

	if (wu == NULL || buf == NULL || id == NULL || !id_ok(id)) {
		return -EINVAL;
	}
	room = GGA_PK_SEG_BYTES - id->wu_off;
	if (cap > room) {
		cap = room;
	}
	if (cap > GGA_PK_WU_MAX) {
		cap = GGA_PK_WU_MAX;
	}
	cap -= cap % id->lba_size;
	if (cap < GGA_PK_WU_HDR_SIZE) {
		return -EINVAL;
	}
	memset(wu, 0, sizeof(*wu));
	wu->buf = buf;
	wu->cap = cap;
	wu->used = GGA_PK_WU_HDR_SIZE;
	wu->id = *id;
	return 0;
}

int
gga_pk_wu_add_record(struct gga_pk_wu *wu, const struct gga_pk_rec *rec, const void *frag)
{
	struct gga_pk_rec r;
	uint32_t off, size;

	if (wu == NULL || rec == NULL || wu->sealed) {
		return -EINVAL;
	}
	r = *rec;
	r.role = wu->id.role;
	r.k = wu->id.k;
	r.m = wu->id.m;
	switch (r.type) {
	case GGA_PK_REC_DATA:
		if (r.payload_len > GGA_PK_FRAG_MAX) {
			return -EINVAL;
		}
		r.frag_len = gga_pk_frag_len(r.payload_len, r.k);
		if (r.frag_len > 0 && frag == NULL) {
			return -EINVAL;
		}
		r.data_crc = r.frag_len > 0 ? gga_crc32c(frag, r.frag_len, 0) : 0;
		break;
	case GGA_PK_REC_TRIM:
		r.frag_len = 0;
		r.data_crc = 0;
		break;
	case GGA_PK_REC_PAD:
		if (r.frag_len > GGA_PK_WU_MAX) {
			return -ENOSPC;
		}
		r.data_crc = zero_crc(r.frag_len);
		break;
	default:
		return -EINVAL;
	}
	if (!rec_consistent(&r)) {
		return -EINVAL;
	}
	off = wu->used;
	size = gga_pk_record_size(r.frag_len);
	if (size > wu->cap - off) {
		return -ENOSPC;
	}
	gga_pk_rec_hdr_encode(&r, wu->buf + off);
	if (r.type == GGA_PK_REC_DATA && r.frag_len > 0) {
		memcpy(wu->buf + off + GGA_PK_REC_HDR_SIZE, frag, r.frag_len);
	} else {
		memset(wu->buf + off + GGA_PK_REC_HDR_SIZE, 0, r.frag_len);
	}
	/* The record's padding to 16 bytes. */
	memset(wu->buf + off + GGA_PK_REC_HDR_SIZE + r.frag_len, 0,
	       size - GGA_PK_REC_HDR_SIZE - r.frag_len);
	wu->used = off + size;
	wu->rec_count++;
	return (int)off;
}

int
gga_pk_wu_finish(struct gga_pk_wu *wu)
{
	struct gga_pk_wu_disk d;
	uint32_t len;

	if (wu == NULL || wu->sealed) {
		return -EINVAL;
	}
	len = round_up(wu->used, wu->id.lba_size);
	memset(wu->buf + wu->used, 0, len - wu->used);
	memset(&d, 0, sizeof(d));
	d.magic = htole32(GGA_PK_WU_MAGIC);
	d.version = GGA_PK_VERSION;
	d.role = wu->id.role;
	d.geometry = (uint8_t)(wu->id.k << 4 | wu->id.m);
	d.lba_shift = (uint8_t)__builtin_ctz(wu->id.lba_size);
	d.wu_off = htole32(wu->id.wu_off);
	d.wu_len = htole32(len);
	d.seg_seq = htole64(wu->id.seg_seq);
	memcpy(d.array_uuid, wu->id.array_uuid, sizeof(d.array_uuid));
	d.rec_count = htole32(wu->rec_count);
	d.used = htole32(wu->used);
	d.body_crc = htole32(gga_crc32c(wu->buf + GGA_PK_WU_HDR_SIZE, len - GGA_PK_WU_HDR_SIZE, 0));
	d.hdr_crc = htole32(gga_crc32c(&d, GGA_PK_WU_CRC_LEN, 0));
	memcpy(wu->buf, &d, sizeof(d));
	wu->sealed = true;
	return (int)len;
}

/* Check every record of a WU whose crcs passed; no callback yet. */
static int
wu_check_body(const uint8_t *p, const struct gga_pk_wu_hdr *h, unsigned flags)
{
	struct gga_pk_rec r;
	uint32_t off = GGA_PK_WU_HDR_SIZE, n = 0, size;

	while (off < h->used) {
		if (h->used - off < GGA_PK_REC_HDR_SIZE ||
		    gga_pk_rec_hdr_decode(p + off, &r) != 0 || r.role != h->id.role ||
		    r.k != h->id.k || r.m != h->id.m) {
			return -EUCLEAN;
		}
		size = gga_pk_record_size(r.frag_len);
		if (size > h->used - off) {
			return -EUCLEAN;
		}
		if (!mem_is_zero(p + off + GGA_PK_REC_HDR_SIZE + r.frag_len,
				 size - GGA_PK_REC_HDR_SIZE - r.frag_len)) {
			return -EUCLEAN;
		}
		if ((r.type == GGA_PK_REC_PAD || (flags & GGA_PK_PARSE_DATA_CRC)) &&
		    gga_crc32c(p + off + GGA_PK_REC_HDR_SIZE, r.frag_len, 0) != r.data_crc) {
			return -EUCLEAN;
		}
		if (r.type == GGA_PK_REC_PAD &&
		    !mem_is_zero(p + off + GGA_PK_REC_HDR_SIZE, r.frag_len)) {
			return -EUCLEAN;
		}
		off += size;
		n++;
	}
	if (n != h->rec_count || !mem_is_zero(p + h->used, h->wu_len - h->used)) {
		return -EUCLEAN;
	}
	return 0;
}

int
gga_pk_wu_parse(const void *buf, size_t len, const struct gga_pk_wu_id *want, unsigned flags,
		gga_pk_rec_fn fn, void *ctx)
{
	const uint8_t *p = buf;
	struct gga_pk_wu_hdr h;
	struct gga_pk_rec r;
	uint32_t off;
	int rc;

	if (buf == NULL || want == NULL) {
		return -EINVAL;
	}
	if (len < GGA_PK_WU_HDR_SIZE) {
		return -EMSGSIZE;
	}
	rc = gga_pk_wu_hdr_decode(buf, want, &h);
	if (rc != 0) {
		return rc;
	}
	if (len < h.wu_len) {
		return -EMSGSIZE;
	}
	if (gga_crc32c(p + GGA_PK_WU_HDR_SIZE, h.wu_len - GGA_PK_WU_HDR_SIZE, 0) != h.body_crc) {
		return -EIO;
	}
	rc = wu_check_body(p, &h, flags);
	if (rc != 0 || fn == NULL) {
		return rc != 0 ? rc : (int)h.wu_len;
	}
	for (off = GGA_PK_WU_HDR_SIZE; off < h.used; off += gga_pk_record_size(r.frag_len)) {
		gga_pk_rec_hdr_decode(p + off, &r);
		if (r.type == GGA_PK_REC_PAD) {
			continue;
		}
		rc = fn(ctx, &r, off, p + off + GGA_PK_REC_HDR_SIZE);
		if (rc != 0) {
			return rc;
		}
	}
	return (int)h.wu_len;
}
