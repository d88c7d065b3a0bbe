/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gga_codec_bench: how fast the gga codec encodes and decodes on one core,
 * and how close it comes to the limit its parts set. Each part (LZ4
 * compress, LZ4 decompress, ISA-L encode, CRC-32C) is timed alone over the
 * same data set, then the full encode and decode; the limit of a pipeline
 * that runs parts one after another on the same core is 1 / sum(1 / rate).
 *
 *   gga_codec_bench [-b BLOCK_SIZE] [-c PERCENT|random|zeros] [-t SECONDS]
 *                   [-k K -m M] [--matrix vandermonde|cauchy] [-n BLOCKS] [--json]
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/erasure_code.h>
#include <lz4.h>

#include "bdev_gga/gga_codec.h"
#include "gga/util.h"

/* The data set: at most this many blocks and this many bytes of blocks. */
#define MAX_SET_BLOCKS 1024
#define MAX_SET_BYTES  (16u << 20)
/* Random chunks and runs alternate at this granularity. */
#define CHUNK_BYTES    16
/* The most measurement rounds per row. */
#define MAX_ROUNDS     200

struct opts {
	uint32_t block_size;
	int percent; /* random share 0..100, or -1 for zeros */
	double seconds;
	uint32_t k, m;
	enum gga_matrix matrix;
	uint32_t nblocks; /* 0: derive from block size */
	bool json;
};

struct bench {
	struct opts o;
	struct gga_codec *codec;
	struct gga_codec_scratch *scratch;
	uint32_t B, F, md, n, nblocks;
	uint8_t *blocks; /* nblocks * B: the data set */
	uint8_t *comp;   /* nblocks * bound: LZ4 output per block */
	int *comp_len;
	int comp_bound;
	uint8_t *frags;  /* nblocks * n * (F + md): encoded fragments per block */
	uint8_t *out;    /* B: decode output, reused */
	uint8_t *wfrags; /* n * (F + md): encode output, reused */
	uint8_t *parity; /* m * F: ISA-L output, reused */
	uint8_t *cbuf;   /* bound: LZ4 output of the compress-alone row */
	uint8_t *ec_tbls;
	void *lz4_state;
	uint32_t enc_count[4]; /* per enum gga_encoding */
	uint64_t payload_sum;
	volatile uint32_t sink;
};

enum row_id {
	ROW_LZ4C,
	ROW_LZ4D,
	ROW_EC,
	ROW_CRC_B,
	ROW_CRC_ENC,
	ROW_CRC_DEC,
	ROW_ENCODE,
	ROW_DECODE,
	ROW_DECODE_REC,
	ROW_ENCODE_NOLZ4,
	ROW_COUNT,
};

static const char *const g_row_names[ROW_COUNT] = {
	"lz4_compress",      "lz4_decompress",    "isal_ec_encode", "crc32c_block",
	"crc32c_encode_set", "crc32c_decode_set", "encode",         "decode",
	"decode_recovery",   "encode_no_lz4",
};

static const char *const g_row_titles[ROW_COUNT] = {
	"LZ4 compress",
	"LZ4 decompress",
	"ISA-L EC encode (k+m over B/k)",
	"CRC-32C over B",
	"CRC-32C encode set (B+(k+m)B/k)",
	"CRC-32C decode set (B+k*B/k)",
	"gga encode",
	"gga decode (data fragments)",
	"gga decode (d1 missing)",
	"gga encode, no LZ4 (raw)",
};

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t
rng_next(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-b BLOCK_SIZE] [-c PERCENT|random|zeros] [-t SECONDS] [-k K -m M]\n"
		"          [--matrix vandermonde|cauchy] [-n BLOCKS] [--json]\n"
		"  -b  logical block size, 512..65536 (default 4096)\n"
		"  -c  share of random bytes in the data, the rest runs of one byte\n"
		"      (default 50; random = 100; zeros = all-zero blocks)\n"
		"  -t  seconds per measurement row (default 1)\n"
		"  -k  data fragments (default 2); -m parity fragments (default 1)\n"
		"  -n  blocks in the data set (default min(1024, 16 MiB / block size))\n",
		prog);
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "matrix", required_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->block_size = 4096;
	o->percent = 50;
	o->seconds = 1.0;
	o->k = 2;
	o->m = 1;
	o->matrix = GGA_MATRIX_VANDERMONDE;
	while ((c = getopt_long(argc, argv, "b:c:t:k:m:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_size(optarg, &v) != 0 || v > UINT32_MAX) {
				fprintf(stderr, "bad block size '%s'\n", optarg);
				return -EINVAL;
			}
			o->block_size = (uint32_t)v;
			break;
		case 'c':
			if (strcmp(optarg, "random") == 0) {
				o->percent = 100;
			} else if (strcmp(optarg, "zeros") == 0) {
				o->percent = -1;
			} else {
				o->percent = (int)strtol(optarg, &end, 10);
				if (*end != '\0' || o->percent < 0 || o->percent > 100) {
					fprintf(stderr, "bad compressibility '%s'\n", optarg);
					return -EINVAL;
				}
			}
			break;
		case 't':
			o->seconds = strtod(optarg, &end);
			if (*end != '\0' || !(o->seconds > 0.0) || o->seconds > 600.0) {
				fprintf(stderr, "bad time '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'k':
		case 'm':
		case 'n':
			v = strtoull(optarg, &end, 10);
			if (*end != '\0' || v == 0 || v > 1u << 20) {
				fprintf(stderr, "bad -%c '%s'\n", c, optarg);
				return -EINVAL;
			}
			if (c == 'k') {
				o->k = (uint32_t)v;
			} else if (c == 'm') {
				o->m = (uint32_t)v;
			} else {
				o->nblocks = (uint32_t)v;
			}
			break;
		case 'M':
			if (gga_matrix_parse(optarg, &o->matrix) != 0) {
				fprintf(stderr, "bad matrix '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'J':
			o->json = true;
			break;
		default:
			usage(argv[0]);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		usage(argv[0]);
		return -EINVAL;
	}
	return 0;
}

/* A block of the requested compressibility: random chunks among runs of one byte. */
static void
fill_block(uint8_t *p, uint32_t len, int percent)
{
	uint32_t off, acc = (uint32_t)(rng_next() % 100);
	uint64_t r;
	int i;

	if (percent < 0) {
		memset(p, 0, len);
		return;
	}
	for (off = 0; off < len; off += CHUNK_BYTES) {
		acc += (uint32_t)percent;
		if (acc >= 100) {
			acc -= 100;
			for (i = 0; i < CHUNK_BYTES; i += 8) {
				r = rng_next();
				memcpy(p + off + i, &r, 8);
			}
		} else {
			memset(p + off, (int)(rng_next() & 0xff), CHUNK_BYTES);
		}
	}
}

static uint8_t *
frag_base(struct bench *b, uint8_t *set, uint32_t i)
{
	return set + (size_t)i * (b->F + b->md);
}

static uint8_t *
block_frags(struct bench *b, uint32_t blk)
{
	return b->frags + (size_t)blk * b->n * (b->F + b->md);
}

/* Pointer arrays to the fragments of one set laid out as member blocks. */
static void
frag_ptrs(struct bench *b, uint8_t *set, void *data[], void *md[])
{
	uint32_t i;

	for (i = 0; i < b->n; i++) {
		data[i] = frag_base(b, set, i);
		md[i] = frag_base(b, set, i) + b->F;
	}
}

static void
frag_cptrs(struct bench *b, uint8_t *set, const void *data[], const void *md[])
{
	uint32_t i;

	for (i = 0; i < b->n; i++) {
		data[i] = frag_base(b, set, i);
		md[i] = frag_base(b, set, i) + b->F;
	}
}

static int
bench_setup(struct bench *b)
{
	struct gga_codec_opts copts;
	struct gga_encode_info info;
	void *data[GGA_CODEC_MAX_FRAGS], *md[GGA_CODEC_MAX_FRAGS];
	const void *cdata[GGA_CODEC_MAX_FRAGS], *cmd[GGA_CODEC_MAX_FRAGS];
	uint32_t i;
	int rc;

	gga_codec_opts_init(&copts);
	copts.block_size = b->o.block_size;
	copts.k = b->o.k;
	copts.m = b->o.m;
	copts.matrix = b->o.matrix;
	rc = gga_codec_create(&copts, &b->codec);
	if (rc != 0) {
		fprintf(stderr, "cannot create codec: %s\n", strerror(-rc));
		return rc;
	}
	rc = gga_codec_scratch_alloc(b->codec, &b->scratch);
	if (rc != 0) {
		return rc;
	}
	b->B = b->o.block_size;
	b->F = gga_codec_frag_size(b->codec);
	b->md = gga_codec_md_size(b->codec);
	b->n = b->o.k + b->o.m;
	b->nblocks = b->o.nblocks != 0 ? b->o.nblocks :
					 GGA_MIN(MAX_SET_BLOCKS, GGA_MAX(16, MAX_SET_BYTES / b->B));
	b->comp_bound = LZ4_compressBound((int)b->B);

	if (posix_memalign((void **)&b->blocks, 64, (size_t)b->nblocks * b->B) != 0 ||
	    posix_memalign((void **)&b->comp, 64, (size_t)b->nblocks * b->comp_bound) != 0 ||
	    posix_memalign((void **)&b->frags, 64, (size_t)b->nblocks * b->n * (b->F + b->md)) !=
		    0 ||
	    (b->out = calloc(1, b->B)) == NULL ||
	    (b->wfrags = calloc(b->n, b->F + b->md)) == NULL ||
	    posix_memalign((void **)&b->parity, 64, (size_t)b->o.m * b->F) != 0 ||
	    posix_memalign((void **)&b->cbuf, 64, (size_t)b->comp_bound) != 0 ||
	    posix_memalign(&b->lz4_state, 64, (size_t)LZ4_sizeofState()) != 0) {
		return -ENOMEM;
	}
	b->comp_len = calloc(b->nblocks, sizeof(*b->comp_len));
	b->ec_tbls = malloc((size_t)32 * b->o.k * b->o.m);
	if (b->comp_len == NULL || b->ec_tbls == NULL) {
		return -ENOMEM;
	}

	/* The same matrix and tables the codec uses, built here for the EC-alone row. */
	{
		uint8_t gen[GGA_CODEC_MAX_FRAGS * GGA_CODEC_MAX_FRAGS];

		if (b->o.matrix == GGA_MATRIX_VANDERMONDE) {
			gf_gen_rs_matrix(gen, (int)b->n, (int)b->o.k);
		} else {
			gf_gen_cauchy1_matrix(gen, (int)b->n, (int)b->o.k);
		}
		ec_init_tables((int)b->o.k, (int)b->o.m, &gen[b->o.k * b->o.k], b->ec_tbls);
	}

	for (i = 0; i < b->nblocks; i++) {
		uint8_t *blk = b->blocks + (size_t)i * b->B;

		fill_block(blk, b->B, b->o.percent);
		b->comp_len[i] = LZ4_compress_fast_extState(b->lz4_state, (const char *)blk,
							    (char *)b->comp +
								    (size_t)i * b->comp_bound,
							    (int)b->B, b->comp_bound, 1);
		frag_ptrs(b, block_frags(b, i), data, md);
		rc = gga_codec_encode(b->codec, b->scratch, blk, i, 1, data, md, &info);
		if (rc != 0) {
			return rc;
		}
		b->enc_count[info.encoding]++;
		b->payload_sum += info.payload_len;
		/* Check the round trip once before timing anything. */
		frag_cptrs(b, block_frags(b, i), cdata, cmd);
		rc = gga_codec_decode(b->codec, b->scratch, cdata, cmd, (1u << b->o.k) - 1, i,
				      b->out, NULL);
		if (rc != 0 || memcmp(b->out, blk, b->B) != 0) {
			fprintf(stderr, "block %u does not round-trip (rc %d)\n", i, rc);
			return -EIO;
		}
		rc = gga_codec_decode(b->codec, b->scratch, cdata, cmd, ((1u << b->n) - 1) & ~1u, i,
				      b->out, NULL);
		if (rc != 0 || memcmp(b->out, blk, b->B) != 0) {
			fprintf(stderr, "block %u does not recover (rc %d)\n", i, rc);
			return -EIO;
		}
	}
	return 0;
}

static void
bench_cleanup(struct bench *b)
{
	free(b->blocks);
	free(b->comp);
	free(b->comp_len);
	free(b->frags);
	free(b->out);
	free(b->wfrags);
	free(b->parity);
	free(b->cbuf);
	free(b->ec_tbls);
	free(b->lz4_state);
	gga_codec_scratch_free(b->scratch);
	gga_codec_destroy(b->codec);
}

/* Do one unit of row `row` on block i. Returns nonzero on a codec error. */
static int
run_one(struct bench *b, enum row_id row, uint32_t i)
{
	uint8_t *blk = b->blocks + (size_t)i * b->B;
	uint8_t *data[GGA_CODEC_MAX_FRAGS], *par[GGA_CODEC_MAX_FRAGS];
	void *wdata[GGA_CODEC_MAX_FRAGS], *wmd[GGA_CODEC_MAX_FRAGS];
	const void *cdata[GGA_CODEC_MAX_FRAGS], *cmd[GGA_CODEC_MAX_FRAGS];
	uint32_t j, crc = 0, present;
	int rc = 0;

	switch (row) {
	case ROW_LZ4C:
		rc = LZ4_compress_fast_extState(b->lz4_state, (const char *)blk, (char *)b->cbuf,
						(int)b->B, b->comp_bound, 1);
		return rc <= 0;
	case ROW_LZ4D:
		rc = LZ4_decompress_safe((const char *)b->comp + (size_t)i * b->comp_bound,
					 (char *)b->out, b->comp_len[i], (int)b->B);
		return rc != (int)b->B;
	case ROW_EC:
		for (j = 0; j < b->o.k; j++) {
			data[j] = blk + (size_t)j * b->F;
		}
		for (j = 0; j < b->o.m; j++) {
			par[j] = b->parity + (size_t)j * b->F;
		}
		ec_encode_data((int)b->F, (int)b->o.k, (int)b->o.m, b->ec_tbls, data, par);
		simd_upper_clean();
		return 0;
	case ROW_CRC_B:
		b->sink += gga_crc32c(blk, b->B, 0);
		return 0;
	case ROW_CRC_ENC:
		/* What encode checksums: the input block, then its output fragments. */
		crc = gga_crc32c(blk, b->B, 0);
		for (j = 0; j < b->n; j++) {
			crc ^= gga_crc32c(frag_base(b, b->wfrags, j), b->F, 0);
		}
		b->sink += crc;
		return 0;
	case ROW_CRC_DEC:
		/* What decode checksums: the stored data fragments, then the output block. */
		for (j = 0; j < b->o.k; j++) {
			crc ^= gga_crc32c(frag_base(b, block_frags(b, i), j), b->F, 0);
		}
		crc ^= gga_crc32c(b->out, b->B, 0);
		b->sink += crc;
		return 0;
	case ROW_ENCODE:
		frag_ptrs(b, b->wfrags, wdata, wmd);
		return gga_codec_encode(b->codec, b->scratch, blk, i, 2, wdata, wmd, NULL);
	case ROW_ENCODE_NOLZ4:
		/* What a region known to be incompressible costs (bdev_gga_io.c skips LZ4). */
		frag_ptrs(b, b->wfrags, wdata, wmd);
		return gga_codec_encode_ex(b->codec, b->scratch, blk, i, 2, GGA_ENCODE_NO_LZ4,
					   wdata, wmd, NULL);
	case ROW_DECODE:
	case ROW_DECODE_REC:
		frag_cptrs(b, block_frags(b, i), cdata, cmd);
		present = row == ROW_DECODE ? (1u << b->o.k) - 1 : ((1u << b->n) - 1) & ~1u;
		return gga_codec_decode(b->codec, b->scratch, cdata, cmd, present, i, b->out, NULL);
	default:
		return 1;
	}
}

/*
 * Thread CPU time: the machine running this is often shared, and time spent
 * preempted says nothing about the codec.
 */
static uint64_t
cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct row_state {
	uint32_t next_block;
	uint32_t batch; /* blocks between two looks at the clock */
	uint32_t nrounds;
	double rates[MAX_ROUNDS];
};

/*
 * Run one row for slice_ns of CPU time and record its rate in blocks per
 * second. The batch between clock reads grows until a batch takes 20 us, so
 * reading the clock costs nothing even on the fastest rows.
 */
static int
run_slice(struct bench *b, enum row_id row, uint64_t slice_ns, struct row_state *st)
{
	uint64_t start, prev, now, count = 0;
	uint32_t j;

	start = prev = cpu_now_ns();
	do {
		for (j = 0; j < st->batch; j++) {
			if (run_one(b, row, st->next_block) != 0) {
				fprintf(stderr, "%s failed on block %u\n", g_row_names[row],
					st->next_block);
				return -EIO;
			}
			if (++st->next_block == b->nblocks) {
				st->next_block = 0;
			}
		}
		count += st->batch;
		now = cpu_now_ns();
		if (now - prev < 20000 && st->batch < (1u << 20)) {
			st->batch *= 2;
		}
		prev = now;
	} while (now - start < slice_ns);
	st->rates[st->nrounds++] = (double)count * 1e9 / (double)(now - start);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/*
 * Measure every row. The time per row is cut into rounds of about 20 ms and
 * the rows take turns, so load from elsewhere (this often runs on a shared
 * machine, maybe beside a busy hyperthread sibling) hits all rows alike.
 * Each row's rate is its best round, the one least disturbed; the median is
 * kept for the JSON output.
 */
static int
run_rows(struct bench *b, double *best, double *med, uint32_t *rounds_out)
{
	static struct row_state st[ROW_COUNT];
	uint32_t rounds, round, i;
	uint64_t slice_ns;
	int r, rc;

	rounds = (uint32_t)(b->o.seconds / 0.02 + 0.5);
	rounds = GGA_MAX(1, GGA_MIN(MAX_ROUNDS, rounds));
	slice_ns = (uint64_t)(b->o.seconds * 1e9 / rounds);
	memset(st, 0, sizeof(st));
	for (r = 0; r < ROW_COUNT; r++) {
		st[r].batch = 1;
	}
	for (round = 0; round < rounds; round++) {
		for (r = 0; r < ROW_COUNT; r++) {
			rc = run_slice(b, (enum row_id)r, slice_ns, &st[r]);
			if (rc != 0) {
				return rc;
			}
		}
	}
	for (r = 0; r < ROW_COUNT; r++) {
		best[r] = 0.0;
		for (i = 0; i < st[r].nrounds; i++) {
			best[r] = GGA_MAX(best[r], st[r].rates[i]);
		}
		med[r] = median(st[r].rates, st[r].nrounds);
	}
	*rounds_out = rounds;
	return 0;
}

static double
serial_limit(const double *rates, size_t count)
{
	double inv = 0.0;
	size_t i;

	for (i = 0; i < count; i++) {
		inv += 1.0 / rates[i];
	}
	return 1.0 / inv;
}

static void
data_label(const struct opts *o, char *buf, size_t len)
{
	if (o->percent < 0) {
		snprintf(buf, len, "zeros");
	} else if (o->percent == 100) {
		snprintf(buf, len, "random");
	} else {
		snprintf(buf, len, "%d%% random", o->percent);
	}
}

static void
report(struct bench *b, const double *rate, const double *med, uint32_t rounds)
{
	double enc_parts[3] = { rate[ROW_LZ4C], rate[ROW_EC], rate[ROW_CRC_ENC] };
	double dec_parts[2] = { rate[ROW_LZ4D], rate[ROW_CRC_DEC] };
	double enc_limit = serial_limit(enc_parts, 3), dec_limit = serial_limit(dec_parts, 2);
	double mib = (double)b->B / (1024.0 * 1024.0);
	double payload = (double)b->payload_sum / b->nblocks;
	char label[32];
	int r;

	data_label(&b->o, label, sizeof(label));
	if (b->o.json) {
		printf("{\"block_size\": %u, \"k\": %u, \"m\": %u, \"matrix\": \"%s\", "
		       "\"data\": \"%s\", \"blocks\": %u, \"seconds_per_row\": %.3f, "
		       "\"rounds\": %u,\n",
		       b->B, b->o.k, b->o.m, gga_matrix_name(b->o.matrix), label, b->nblocks,
		       b->o.seconds, rounds);
		printf(" \"encodings\": {\"lz4\": %u, \"raw\": %u, \"zero\": %u}, "
		       "\"mean_payload\": %.1f,\n \"rows\": [\n",
		       b->enc_count[GGA_ENC_LZ4], b->enc_count[GGA_ENC_RAW],
		       b->enc_count[GGA_ENC_ZERO], payload);
		for (r = 0; r < ROW_COUNT; r++) {
			printf("  {\"name\": \"%s\", \"blocks_per_s\": %.0f, \"mib_per_s\": %.1f, "
			       "\"median_blocks_per_s\": %.0f}%s\n",
			       g_row_names[r], rate[r], rate[r] * mib, med[r],
			       r + 1 < ROW_COUNT ? "," : "");
		}
		printf(" ],\n \"encode_limit_blocks_per_s\": %.0f, \"decode_limit_blocks_per_s\": "
		       "%.0f,\n \"encode_pct_of_limit\": %.1f, \"decode_pct_of_limit\": %.1f}\n",
		       enc_limit, dec_limit, 100.0 * rate[ROW_ENCODE] / enc_limit,
		       100.0 * rate[ROW_DECODE] / dec_limit);
		return;
	}
	printf("gga_codec_bench: %u-byte blocks, %u+%u %s, data %s, %u blocks\n", b->B, b->o.k,
	       b->o.m, gga_matrix_name(b->o.matrix), label, b->nblocks);
	printf("rates: best of %u rounds of %.0f ms CPU time per row, rows interleaved\n", rounds,
	       b->o.seconds * 1000.0 / rounds);
	printf("encodings: lz4 %u, raw %u, zero %u; mean payload %.0f bytes (%.1f%% of block)\n\n",
	       b->enc_count[GGA_ENC_LZ4], b->enc_count[GGA_ENC_RAW], b->enc_count[GGA_ENC_ZERO],
	       payload, 100.0 * payload / b->B);
	printf("%-36s %14s %12s\n", "row", "blocks/s", "MiB/s");
	for (r = 0; r < ROW_COUNT; r++) {
		printf("%-36s %14.0f %12.1f\n", g_row_titles[r], rate[r], rate[r] * mib);
	}
	printf("%-36s %14.0f %12.1f\n", "encode limit (lz4c + ec + crc)", enc_limit,
	       enc_limit * mib);
	printf("%-36s %14.0f %12.1f\n", "decode limit (lz4d + crc)", dec_limit, dec_limit * mib);
	printf("%-36s %13.1f%%\n", "encode / encode limit", 100.0 * rate[ROW_ENCODE] / enc_limit);
	printf("%-36s %13.1f%%\n", "decode / decode limit", 100.0 * rate[ROW_DECODE] / dec_limit);
}

int
main(int argc, char **argv)
{
	struct bench b;
	double rate[ROW_COUNT], med[ROW_COUNT];
	cpu_set_t set;
	uint32_t rounds;
	int rc, cpu;

	memset(&b, 0, sizeof(b));
	if (parse_args(argc, argv, &b.o) != 0) {
		return 2;
	}
	/* One core: stay where we started so no row pays for a migration. */
	cpu = sched_getcpu();
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	rc = bench_setup(&b);
	if (rc != 0) {
		fprintf(stderr, "setup failed: %s\n", strerror(-rc));
		bench_cleanup(&b);
		return 1;
	}
	rc = run_rows(&b, rate, med, &rounds);
	if (rc != 0) {
		bench_cleanup(&b);
		return 1;
	}
	report(&b, rate, med, rounds);
	bench_cleanup(&b);
	return 0;
}
