/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness shared by the gga bdev unit tests (bdev_gga/bdev_gga_ut.c and
 * bdev_gga_fault/bdev_gga_fault_ut.c), which #include this file: the members
 * (malloc bdevs of 512 + 64 bytes, so logical blocks of 1024 bytes), the
 * suite set-up on two hand-polled threads, creation and deletion helpers,
 * direct member access (read, write, flip a bit, snapshot) and the test
 * device the I/O tests read and write through.
 */
#include <errno.h>
#include <stdlib.h>

#include "bdev_gga/bdev_gga.h"
#include "bdev_gga/bdev_gga_bitmap.h"
#include "bdev_gga/bdev_gga_disk.h"
#include "bdev_gga/bdev_gga_io.h"
#include "bdev_gga/bdev_gga_member.h"
#include "bdev_gga/bdev_gga_remove.h"
#include "bdev_gga/bdev_gga_sb.h"
#include "bdev_gga/bdev_gga_walk.h"
#include "module/bdev/error/bdev_error.h"
#include "module/bdev/malloc/bdev_malloc.h"
#include "test/unit/module/bdev/bdev_ut_common.h"

/* Members of 512 + 64 bytes: logical blocks of 1024 bytes. */
#define MBS           512
#define MD            64
#define SB_BLOCKS     (GGA_SB_REGION_BYTES / MBS)
#define NBLK          256
#define MEMBER_BLOCKS (SB_BLOCKS + NBLK)
#define LBS           (2 * MBS)
#define MEMBER_BYTES  ((size_t)MEMBER_BLOCKS * (MBS + MD))

void
register_modules(void)
{
	bdev_malloc_module_register();
	bdev_error_module_register();
	bdev_gga_module_register();
	bdev_gga_rpc_register();
}

int
suite_init(void)
{
	/* More than the module tests' 64 MiB: each gga bdev creates its buffer pools in the arena. */
	return ut_setup_arena(register_modules, "bdev_gga_ut", 160ull * 1024 * 1024);
}

int
suite_fini(void)
{
	return ut_teardown();
}

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

void
fill_random(uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		g_rng ^= g_rng << 13;
		g_rng ^= g_rng >> 7;
		g_rng ^= g_rng << 17;
		buf[i] = (uint8_t)g_rng;
	}
}

/* Text-like data that LZ4 shrinks. */
void
fill_compressible(uint8_t *buf, size_t len, uint32_t seed)
{
	static const char words[] = "the quick brown fox jumps over the lazy gga bdev ";
	size_t i;

	for (i = 0; i < len; i++) {
		buf[i] = (uint8_t)words[(i + seed) % (sizeof(words) - 1)];
	}
	buf[0] = (uint8_t)seed;
}

void
make_malloc(const char *name, uint32_t bs, uint32_t md, uint64_t blocks)
{
	struct bdev_malloc_opts opts = {
		.name = name,
		.num_blocks = blocks,
		.block_size = bs,
		.md_size = md,
	};

	UT_ASSERT_EQ_FATAL(bdev_malloc_create(&opts, NULL), 0);
}

/* Three members named <p>1, <p>2, <p>3 of the standard geometry. */
void
make_members(const char *p)
{
	char name[32];
	int i;

	for (i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "%s%d", p, i);
		make_malloc(name, MBS, MD, MEMBER_BLOCKS);
	}
}

void
malloc_delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };

	UT_ASSERT_EQ_FATAL(bdev_malloc_delete(name, ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
}

void
delete_members(const char *p)
{
	char name[32];
	int i;

	for (i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "%s%d", p, i);
		malloc_delete_sync(name);
	}
}

struct create_res {
	bool done;
	int rc;
	struct bdev *bdev;
	char msg[512];
};

void
create_done(void *cb_arg, struct bdev *bdev, int rc, const char *msg)
{
	struct create_res *r = cb_arg;

	r->done = true;
	r->rc = rc;
	r->bdev = bdev;
	snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

int
create_opts_sync(const struct bdev_gga_opts *opts, struct create_res *r)
{
	int rc;

	memset(r, 0, sizeof(*r));
	rc = bdev_gga_create(opts, create_done, r);
	if (rc != 0) {
		return rc;
	}
	/* The callback never runs inside the call. */
	CU_ASSERT(!r->done);
	UT_POLL_UNTIL(r->done);
	CU_ASSERT_FATAL(r->done);
	if (r->rc != 0) {
		fprintf(stderr, "  (create %s: %d %s)\n", opts->name, r->rc, r->msg);
	}
	return r->rc;
}

int
create3(const char *name, const char *d1, const char *d2, const char *p, uint32_t every_n,
	enum bdev_gga_mode mode, struct create_res *r)
{
	struct bdev_gga_opts opts;

	bdev_gga_opts_init(&opts);
	opts.name = name;
	opts.members[0] = d1;
	opts.members[1] = d2;
	opts.members[2] = p;
	opts.recovery_read_every_n = every_n;
	opts.mode = mode;
	return create_opts_sync(&opts, r);
}

/* gga bdev <p> over <p>1, <p>2, <p>3. */
struct gga_disk *
make_gga(const char *p, uint32_t every_n)
{
	char n1[32], n2[32], n3[32];
	struct create_res r;

	snprintf(n1, sizeof(n1), "%s1", p);
	snprintf(n2, sizeof(n2), "%s2", p);
	snprintf(n3, sizeof(n3), "%s3", p);
	UT_ASSERT_EQ_FATAL(create3(p, n1, n2, n3, every_n, BDEV_GGA_MODE_AUTO, &r), 0);
	return r.bdev->ctxt;
}

void
gga_delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };

	UT_ASSERT_EQ_FATAL(bdev_gga_delete(name, ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	UT_ASSERT_EQ(cpl.rc, 0);
	CU_ASSERT(bdev_get_by_name(name) == NULL);
}

/* Call `method` with `params`: its error code; the message must contain `want` (if not NULL). */
int
rpc_refused(const char *method, const char *params, const char *want)
{
	json_t *resp = ut_rpc_call(method, params);
	int code;

	CU_ASSERT_FATAL(resp != NULL);
	code = ut_rpc_error_code(resp);
	if (want != NULL && strstr(ut_rpc_error_message(resp), want) == NULL) {
		fprintf(stderr, "  %s: \"%s\" lacks \"%s\"\n", method, ut_rpc_error_message(resp),
			want);
		code = -99997;
	}
	json_decref(resp);
	return code;
}

void
info_done(void *cb_arg, int rc)
{
	struct ut_cpl *c = cb_arg;

	c->done = true;
	c->rc = rc;
}

void
get_info(const char *name, struct bdev_gga_info *info)
{
	struct ut_cpl cpl = { 0 };

	UT_ASSERT_EQ_FATAL(bdev_gga_get_info(name, info, info_done, &cpl), 0);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT_FATAL(cpl.done);
}

struct bdev_gga_counters
counters(const char *name)
{
	struct bdev_gga_info info;
	struct bdev_gga_counters c;

	get_info(name, &info);
	c = info.counters;
	bdev_gga_info_clear(&info);
	return c;
}

/* Read or write blocks through a descriptor (app thread). */
int
desc_rw(struct bdev_desc *desc, bool write, uint64_t mlba, uint32_t n, void *buf)
{
	struct io_channel *ch;
	struct ut_io r = { 0 };
	int rc;

	ch = bdev_get_io_channel(desc);
	if (ch == NULL) {
		return -ENOMEM;
	}
	if (write) {
		rc = bdev_write_blocks(desc, ch, buf, mlba, n, ut_io_done, &r);
	} else {
		rc = bdev_read_blocks(desc, ch, buf, mlba, n, ut_io_done, &r);
	}
	if (rc == 0) {
		UT_POLL_UNTIL(r.done);
		rc = r.success ? 0 : -EIO;
	}
	io_channel_put(ch);
	ut_poll_idle();
	return rc;
}

/* Read or write member blocks through the gga bdev's own descriptor (app thread). */
int
member_rw(struct gga_disk *disk, uint32_t i, bool write, uint64_t mlba, uint32_t n, void *buf)
{
	return desc_rw(disk->members[i].desc, write, mlba, n, buf);
}

/* The whole content of a base bdev, read through a read-only descriptor. */
uint8_t *
snapshot(const char *name)
{
	struct bdev *bdev = bdev_get_by_name(name);
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *buf;
	size_t len;

	CU_ASSERT_FATAL(bdev != NULL);
	len = bdev_get_num_blocks(bdev) * bdev_get_buf_block_size(bdev);
	buf = malloc(len);
	CU_ASSERT_FATAL(buf != NULL);
	UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&dev, name, false, g_ut_app), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, bdev_get_num_blocks(bdev), &r), 0);
	CU_ASSERT(r.success);
	ut_dev_close(&dev);
	return buf;
}

bool
unchanged(const char *name, const uint8_t *before)
{
	struct bdev *bdev = bdev_get_by_name(name);
	uint8_t *now = snapshot(name);
	bool same = memcmp(now, before,
			   bdev_get_num_blocks(bdev) * bdev_get_buf_block_size(bdev)) == 0;

	free(now);
	return same;
}

/* Decode logical block `lba` from all three members: 0 if all are valid, same generation. */
int
check_consistent(struct gga_disk *disk, uint64_t lba, uint64_t *generation, void *out)
{
	uint8_t *frag[3];
	const void *fd[3], *fm[3];
	struct gga_codec_scratch *s;
	struct gga_decode_info info;
	uint32_t i;
	int rc;

	UT_ASSERT_EQ_FATAL(gga_codec_scratch_alloc(disk->codec, &s), 0);
	for (i = 0; i < 3; i++) {
		frag[i] = malloc(disk->mbs);
		UT_ASSERT_EQ_FATAL(member_rw(disk, i, false, disk->data_offset + lba, 1, frag[i]),
				   0);
		fd[i] = frag[i];
		fm[i] = frag[i] + disk->frag_size;
	}
	rc = gga_codec_decode(disk->codec, s, fd, fm, 7, lba, out, &info);
	if (rc == 0 && info.valid_mask != 7) {
		rc = -EUCLEAN;
	}
	if (generation != NULL) {
		*generation = info.generation;
	}
	for (i = 0; i < 3; i++) {
		free(frag[i]);
	}
	gga_codec_scratch_free(s);
	return rc;
}

uint64_t
frag_generation(struct gga_disk *disk, uint32_t member, uint64_t lba)
{
	uint8_t *frag = malloc(disk->mbs);
	struct gga_frag_md md;
	int rc;

	UT_ASSERT_EQ_FATAL(member_rw(disk, member, false, disk->data_offset + lba, 1, frag), 0);
	rc = gga_frag_md_decode(frag + disk->frag_size, lba, &md);
	free(frag);
	return rc == 0 ? md.generation : 0;
}

/* An open gga bdev on the worker thread. */
static struct ut_dev g_dev;

void
open_dev(const char *name)
{
	UT_ASSERT_EQ_FATAL(ut_dev_open(&g_dev, name, g_ut_worker), 0);
}

bool
dev_write(uint64_t lba, uint64_t n, void *buf)
{
	struct ut_io r;

	return ut_io_sync(&g_dev, BDEV_IO_TYPE_WRITE, buf, lba, n, &r) == 0 && r.done && r.success;
}

bool
dev_read(uint64_t lba, uint64_t n, void *buf)
{
	struct ut_io r;

	return ut_io_sync(&g_dev, BDEV_IO_TYPE_READ, buf, lba, n, &r) == 0 && r.done && r.success;
}

bool
dev_iov(bool write, uint64_t lba, uint64_t n, uint8_t *buf, const size_t *cuts, int ncuts)
{
	struct iovec iov[16];
	struct ut_io r = { 0 };
	size_t off = 0, total = n * LBS;
	int i, cnt = 0, rc;

	for (i = 0; i < ncuts && off < total; i++) {
		iov[cnt].iov_base = buf + off;
		iov[cnt].iov_len = GGA_MIN(cuts[i], total - off);
		off += iov[cnt++].iov_len;
	}
	if (off < total) {
		iov[cnt].iov_base = buf + off;
		iov[cnt++].iov_len = total - off;
	}
	thread_set_current(g_dev.thread);
	if (write) {
		rc = bdev_writev_blocks(g_dev.desc, g_dev.ch, iov, cnt, lba, n, ut_io_done, &r);
	} else {
		rc = bdev_readv_blocks(g_dev.desc, g_dev.ch, iov, cnt, lba, n, ut_io_done, &r);
	}
	thread_set_current(g_ut_app);
	if (rc != 0) {
		return false;
	}
	UT_POLL_UNTIL(r.done);
	return r.done && r.success;
}

void
flip(struct gga_disk *disk, uint32_t member, uint64_t lba, uint32_t offset, uint8_t bit)
{
	uint8_t *frag = malloc(disk->mbs);

	UT_ASSERT_EQ(member_rw(disk, member, false, disk->data_offset + lba, 1, frag), 0);
	frag[offset] ^= bit;
	UT_ASSERT_EQ(member_rw(disk, member, true, disk->data_offset + lba, 1, frag), 0);
	free(frag);
}
