/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the file bdev: create/delete and every parameter error,
 * round trips with and without metadata (direct and buffered, aligned and
 * bounced, multi-chunk), zeroing (fallocate and written zeros), flush,
 * reset, queueing beyond the ring and the bounce buffers, completion
 * wake-ups, persistence across delete and re-create, refusal of a wrong
 * geometry, and a loop block device when the machine has one.
 *
 * Files live in a private directory under /tmp, removed at the end.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/loop.h>

#include "module/bdev/file/bdev_file.c"
#include "module/bdev/file/bdev_file_create.c"
#include "module/bdev/file/bdev_file_rpc.c"
#include "test/unit/module/bdev/bdev_ut_common.h"

static char g_dir[64];

static const char *
tmp_path(const char *name)
{
	static char paths[4][128];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", g_dir, name);
	return p;
}

static bool
file_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static int64_t
file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* Write `len` bytes of `byte` at `off` of a file (outside the bdev). */
static int
file_fill(const char *path, off_t off, size_t len, int byte)
{
	uint8_t buf[4096];
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	size_t n;

	if (fd < 0) {
		return -errno;
	}
	memset(buf, byte, sizeof(buf));
	while (len > 0) {
		n = GGA_MIN(len, sizeof(buf));
		if (pwrite(fd, buf, n, off) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
		off += (off_t)n;
		len -= n;
	}
	close(fd);
	return 0;
}

static int
file_read(const char *path, off_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		return -errno;
	}
	n = pread(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* A cheap fingerprint of a whole file, to show that a refused create left it alone. */
/* Does the filesystem holding `path` refuse to extend a file to `size` bytes? */
static bool
fs_refuses_size(const char *path, uint64_t size)
{
	char probe[PATH_MAX];
	bool refused;
	int fd;

	snprintf(probe, sizeof(probe), "%s.probe", path);
	fd = open(probe, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		return false;
	}
	refused = ftruncate(fd, (off_t)size) != 0;
	close(fd);
	unlink(probe);
	return refused;
}

static uint64_t
file_hash(const char *path)
{
	uint8_t buf[4096];
	uint64_t h = 1469598103934665603ull;
	int fd = open(path, O_RDONLY);
	ssize_t n, i;

	if (fd < 0) {
		return 0;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++) {
			h = (h ^ buf[i]) * 1099511628211ull;
		}
	}
	close(fd);
	return h ^ (uint64_t)file_size(path);
}

static int
create_bdev(const char *name, const char *path, uint32_t bs, uint32_t md, uint64_t n,
	    const char *uuid, bool create, struct bdev **out, char *msg, size_t msg_len)
{
	struct bdev_file_opts opts = {
		.name = name,
		.filename = path,
		.block_size = bs,
		.md_size = md,
		.num_blocks = n,
		.uuid = uuid,
		.create = create,
	};

	return bdev_file_create(&opts, out, msg, msg_len);
}

/* Create, expecting failure `rc` with a message that mentions `word`. */
#define EXPECT_CREATE_FAIL(rc_want, word, ...)                                                  \
	do {                                                                                    \
		char _msg[256] = "";                                                            \
		int _rc = create_bdev(__VA_ARGS__, NULL, _msg, sizeof(_msg));                   \
		UT_ASSERT_EQ(_rc, rc_want);                                                     \
		if (strstr(_msg, word) == NULL) {                                               \
			fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, \
				_msg, word);                                                    \
		}                                                                               \
		CU_ASSERT(strstr(_msg, word) != NULL);                                          \
	} while (0)

static int
delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };
	int rc;

	rc = bdev_file_delete(name, ut_cpl_done, &cpl);
	if (rc != 0) {
		return rc;
	}
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	return cpl.rc;
}

static struct file_disk *
disk_of(const char *name)
{
	struct bdev *bdev = bdev_get_by_name(name);

	return bdev != NULL ? bdev->ctxt : NULL;
}

/* Vectored I/O over a flat buffer cut into pieces of the given lengths (last: the rest). */
static int
io_vec(struct ut_dev *dev, bool write, uint8_t *buf, size_t len, const size_t *cuts, int ncuts,
       uint64_t lba, uint64_t n, struct ut_io *r)
{
	struct iovec iov[16];
	size_t off = 0;
	int i, cnt = 0, rc;

	for (i = 0; i < ncuts && off < len; i++) {
		iov[cnt].iov_base = buf + off;
		iov[cnt].iov_len = GGA_MIN(cuts[i], len - off);
		off += iov[cnt++].iov_len;
	}
	if (off < len) {
		iov[cnt].iov_base = buf + off;
		iov[cnt++].iov_len = len - off;
	}
	memset(r, 0, sizeof(*r));
	thread_set_current(dev->thread);
	if (write) {
		rc = bdev_writev_blocks(dev->desc, dev->ch, iov, cnt, lba, n, ut_io_done, r);
	} else {
		rc = bdev_readv_blocks(dev->desc, dev->ch, iov, cnt, lba, n, ut_io_done, r);
	}
	thread_set_current(g_ut_app);
	if (rc == 0) {
		UT_POLL_UNTIL(r->done);
	}
	return rc;
}

/*
 * The file's bytes must be the model's: data at data_offset + lba * bs,
 * metadata at md_offset + lba * md.
 */
static void
check_layout(const char *path, const struct file_disk *disk, const uint8_t *model)
{
	uint32_t bs = disk->block_size, md = disk->md_size, bbs = bs + md;
	uint8_t *data = malloc((size_t)disk->num_blocks * bs);
	uint8_t *mdbuf = malloc((size_t)disk->num_blocks * md + 1);
	uint64_t i;
	bool same = true;

	CU_ASSERT_FATAL(data != NULL && mdbuf != NULL);
	UT_ASSERT_EQ(file_read(path, (off_t)disk->data_offset, data, disk->num_blocks * bs), 0);
	if (md != 0) {
		UT_ASSERT_EQ(file_read(path, (off_t)disk->md_offset, mdbuf, disk->num_blocks * md),
			     0);
	}
	for (i = 0; i < disk->num_blocks && same; i++) {
		same = memcmp(data + i * bs, model + i * bbs, bs) == 0 &&
		       (md == 0 || memcmp(mdbuf + i * md, model + i * bbs + bs, md) == 0);
		if (!same) {
			fprintf(stderr, "layout mismatch at block %" PRIu64 "\n", i);
		}
	}
	CU_ASSERT(same);
	free(data);
	free(mdbuf);
}

/*
 * The round trip every configuration goes through: `name` is a fresh,
 * zero-filled bdev on `path`. Leaves the model of the disk in *model_out.
 */
static void
round_trip(const char *name, const char *path, struct thread *thread, uint8_t **model_out)
{
	struct file_disk *disk = disk_of(name);
	uint32_t bs, md, bbs;
	uint64_t nblocks;
	size_t disk_len, big;
	uint8_t *model, *buf, *buf2;
	struct ut_dev dev;
	struct ut_io r;
	size_t cuts[4];

	CU_ASSERT_FATAL(disk != NULL);
	bs = disk->block_size;
	md = disk->md_size;
	bbs = bs + md;
	nblocks = disk->num_blocks;
	disk_len = (size_t)nblocks * bbs;
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, name, thread), 0);
	model = calloc(1, disk_len);
	buf = env_dma_malloc(disk_len + 4096, 4096);
	buf2 = env_dma_malloc(disk_len + 4096, 4096);
	CU_ASSERT_FATAL(model != NULL && buf != NULL && buf2 != NULL);

	/* Never written: zeros, metadata included. */
	memset(buf, 0xa5, disk_len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(mem_is_zero(buf, disk_len));

	/* Aligned single buffer. */
	ut_pattern(model + 10 * bbs, 8 * bbs, md + 1);
	memcpy(buf, model + 10 * bbs, 8 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 10, 8, &r), 0);
	CU_ASSERT(r.success);
	memset(buf, 0, 8 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 10, 8, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model + 10 * bbs, 8 * bbs) == 0);

	/* Reads and writes whose iovecs split blocks (and metadata) at odd places. */
	cuts[0] = 100;
	cuts[1] = 3 * bbs + 7;
	cuts[2] = bs - 1;
	memset(buf, 0, 8 * bbs);
	UT_ASSERT_EQ(io_vec(&dev, false, buf + 1, 8 * bbs, cuts, 3, 10, 8, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf + 1, model + 10 * bbs, 8 * bbs) == 0);
	ut_pattern(model + 20 * bbs, 5 * bbs, md + 2);
	memcpy(buf + 3, model + 20 * bbs, 5 * bbs);
	UT_ASSERT_EQ(io_vec(&dev, true, buf + 3, 5 * bbs, cuts, 3, 20, 5, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 20, 5, &r), 0);
	CU_ASSERT(memcmp(buf, model + 20 * bbs, 5 * bbs) == 0);

	/* Aligned pieces: without metadata these go to the kernel as they are. */
	cuts[0] = 2 * (size_t)bbs;
	cuts[1] = (size_t)bbs;
	ut_pattern(model + 30 * bbs, 6 * bbs, md + 3);
	memcpy(buf, model + 30 * bbs, 6 * bbs);
	UT_ASSERT_EQ(io_vec(&dev, true, buf, 6 * bbs, cuts, 2, 30, 6, &r), 0);
	CU_ASSERT(r.success);
	memset(buf, 0, 6 * bbs);
	UT_ASSERT_EQ(io_vec(&dev, false, buf, 6 * bbs, cuts, 2, 30, 6, &r), 0);
	CU_ASSERT(memcmp(buf, model + 30 * bbs, 6 * bbs) == 0);

	/* Large I/O: several bounce chunks, odd cuts on the write, aligned read back. */
	big = GGA_MIN((size_t)nblocks - 100,
		      (size_t)3 * disk->bounce[FILE_BOUNCE_CLASS_LARGE].blocks + 5);
	ut_pattern(model + 100 * bbs, big * bbs, md + 4);
	memcpy(buf + 5, model + 100 * bbs, big * bbs);
	cuts[0] = 3;
	cuts[1] = (size_t)disk->bounce[FILE_BOUNCE_CLASS_LARGE].blocks * bbs;
	cuts[2] = 1000;
	UT_ASSERT_EQ(io_vec(&dev, true, buf + 5, big * bbs, cuts, 3, 100, big, &r), 0);
	CU_ASSERT(r.success);
	memset(buf2, 0, big * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf2, 100, big, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf2, model + 100 * bbs, big * bbs) == 0);
	memset(buf2, 0, big * bbs);
	UT_ASSERT_EQ(io_vec(&dev, false, buf2 + 7, big * bbs, cuts, 3, 100, big, &r), 0);
	CU_ASSERT(memcmp(buf2 + 7, model + 100 * bbs, big * bbs) == 0);

	/* write_zeroes and unmap zero whole blocks, metadata included; neighbours stay. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 12, 2, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 12 * bbs, 0, 2 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 17, 1, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 17 * bbs, 0, bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 101, big - 2, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 101 * bbs, 0, (big - 2) * bbs);
	memset(buf, 0xa5, disk_len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model, disk_len) == 0);

	/* flush and reset succeed; the bdev layer rejects out-of-range I/O. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_FLUSH, NULL, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, nblocks - 1, 2, &r), -EINVAL);

	/* What the bdev says is what the file holds, in the documented layout. */
	check_layout(path, disk, model);

	ut_dev_close(&dev);
	env_dma_free(buf);
	env_dma_free(buf2);
	*model_out = model;
}

static void
test_create_errors(void)
{
	const char *f = tmp_path("errors.img"), *g = tmp_path("other.img");
	struct bdev *bdev;
	bool big_refused;
	uint64_t h;
	char msg[256];

	/* Parameter errors: nothing created. */
	EXPECT_CREATE_FAIL(-EINVAL, "name", "", f, 512, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "name", NULL, f, 512, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "filename", "e", "", 512, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "filename", "e", NULL, 512, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "e", f, 1000, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "e", f, 256, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "e", f, 131072, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "md_size", "e", f, 512, 12, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "md_size", "e", f, 512, 256, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "uuid", "e", f, 512, 0, 8, "not-a-uuid", true);
	EXPECT_CREATE_FAIL(-EINVAL, "uuid", "e", f, 512, 0, 8,
			   "0f1e2d3c-4b5a-4697-8877-66554433221g", true);
	/* A new file needs its size and block size. */
	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "e", f, 0, 0, 8, NULL, true);
	EXPECT_CREATE_FAIL(-EINVAL, "num_blocks", "e", f, 512, 0, 0, NULL, true);
	EXPECT_CREATE_FAIL(-ENOENT, "does not exist", "e", f, 512, 0, 8, NULL, false);
	EXPECT_CREATE_FAIL(-ENOENT, "no such device", "e", "/dev/gga_no_such_disk", 512, 0, 8, NULL,
			   true);
	EXPECT_CREATE_FAIL(-EINVAL, "neither", "e", g_dir, 512, 0, 8, NULL, true);
	CU_ASSERT(!file_exists(f));

	/* Failures after the file was created remove it again. */
	EXPECT_CREATE_FAIL(-EINVAL, "num_blocks", "e", f, 65536, 128, UINT64_MAX / 2, NULL, true);
	CU_ASSERT(!file_exists(f));
	/*
	 * 4 PiB is beyond ext4's and xfs's file size limits, but tmpfs allows
	 * sparse files of almost any size, so probe the filesystem first.
	 */
	big_refused = fs_refuses_size(f, 4096ull << 40);
	if (big_refused) {
		EXPECT_CREATE_FAIL(-EFBIG, "extend", "e", f, 4096, 0, 1ull << 40, NULL, true);
	} else {
		printf("\n  skip: the filesystem of %s allows a 4 PiB file; "
		       "extension failures not checked\n",
		       f);
	}
	CU_ASSERT(!file_exists(f));
	CU_ASSERT(bdev_get_by_name("e") == NULL);

	/* A file smaller than a block, without num_blocks. */
	UT_ASSERT_EQ(file_fill(f, 0, 100, 0), 0);
	EXPECT_CREATE_FAIL(-EINVAL, "num_blocks", "e", f, 512, 0, 0, NULL, true);
	/* Too large to extend to: the file keeps its size. */
	if (big_refused) {
		EXPECT_CREATE_FAIL(-EFBIG, "extend", "e", f, 4096, 0, 1ull << 40, NULL, true);
	}
	UT_ASSERT_EQ(file_size(f), 100);
	/* Metadata over a file that holds data but no header: refused, untouched. */
	UT_ASSERT_EQ(file_fill(f, 0, 8192, 0x5a), 0);
	h = file_hash(f);
	EXPECT_CREATE_FAIL(-EINVAL, "no file bdev header", "e", f, 512, 64, 8, NULL, true);
	UT_ASSERT_EQ(file_hash(f), h);
	CU_ASSERT(unlink(f) == 0);

	/* Name taken; file already used by another bdev (flock). */
	UT_ASSERT_EQ_FATAL(create_bdev("busy", f, 512, 0, 64, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	EXPECT_CREATE_FAIL(-EEXIST, "already exists", "busy", g, 512, 0, 64, NULL, true);
	CU_ASSERT(!file_exists(g));
	EXPECT_CREATE_FAIL(-EBUSY, "in use", "busy2", f, 512, 0, 64, NULL, true);
	CU_ASSERT(bdev_get_by_name("busy2") == NULL);
	UT_ASSERT_EQ(bdev_file_delete("nope", ut_cpl_done, NULL), -ENODEV);
	UT_ASSERT_EQ(bdev_file_delete(NULL, ut_cpl_done, NULL), -ENODEV);
	UT_ASSERT_EQ(delete_sync("busy"), 0);
	/* Deleting closes the file and keeps it. */
	UT_ASSERT_EQ(file_size(f), 64 * 512);
	CU_ASSERT(unlink(f) == 0);
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_create_delete(void)
{
	const char *f = tmp_path("cd.img");
	struct bdev *bdev;
	struct file_disk *disk;
	json_t *info, *file;
	char msg[256], cwd[512];

	/* A new file is created sparse at the size asked for. */
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 4096, 0, 256, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_STR_EQ(bdev_get_name(bdev), "cd");
	UT_ASSERT_STR_EQ(bdev_get_module_name(bdev), "file");
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 4096);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 0);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 256);
	UT_ASSERT_EQ(file_size(f), 256 * 4096);
	disk = bdev->ctxt;
	/* ext4 under /tmp does direct I/O; callers get told the alignment. */
	CU_ASSERT(disk->direct);
	UT_ASSERT_EQ(bdev_get_buf_align(bdev), disk->dio_mem_align);
	info = json_object();
	bdev->fn_table->dump_info_json(bdev->ctxt, info);
	file = json_object_get(info, "file");
	CU_ASSERT(strstr(json_string_value(json_object_get(file, "filename")), "cd.img") != NULL);
	CU_ASSERT(json_is_false(json_object_get(file, "block_device")));
	CU_ASSERT(json_is_false(json_object_get(file, "formatted")));
	json_decref(info);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	CU_ASSERT(bdev_get_by_name("cd") == NULL);
	UT_ASSERT_EQ(file_size(f), 256 * 4096);

	/* Reopened without num_blocks: derived from the size. */
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 4096, 0, 0, NULL, false, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 256);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	/* With 512-byte blocks the same file holds 8x as many. */
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 512, 0, 0, NULL, false, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 2048);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	/* More blocks than the file has: extended; fewer: the file is not shrunk. */
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 4096, 0, 300, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ(file_size(f), 300 * 4096);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 4096, 0, 10, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 10);
	UT_ASSERT_EQ(file_size(f), 300 * 4096);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	/* A regular file without a header does not know its block size. */
	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "cd", f, 0, 0, 0, NULL, false);

	/* A relative path is saved absolute, so that a replay elsewhere finds the file. */
	CU_ASSERT_FATAL(getcwd(cwd, sizeof(cwd)) != NULL);
	CU_ASSERT_FATAL(chdir(g_dir) == 0);
	UT_ASSERT_EQ_FATAL(create_bdev("rel", "rel.img", 512, 0, 8, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	CU_ASSERT(chdir(cwd) == 0);
	UT_ASSERT_STR_EQ(((struct file_disk *)bdev->ctxt)->filename, tmp_path("rel.img"));
	UT_ASSERT_EQ(delete_sync("rel"), 0);
	CU_ASSERT(unlink(tmp_path("rel.img")) == 0);

	/* With metadata: header, data, metadata; uuid generated and stored. */
	CU_ASSERT(unlink(f) == 0);
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 512, 64, 1000, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	UT_ASSERT_EQ(disk->data_offset, 4096);
	UT_ASSERT_EQ(disk->md_offset, align_up(4096 + 1000 * 512, 4096));
	UT_ASSERT_EQ(file_size(f), disk->md_offset + 1000 * 64);
	UT_ASSERT_EQ(bdev_get_buf_align(bdev), 1);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	CU_ASSERT(unlink(f) == 0);

	/* A pre-sized blank file is formatted to the blocks that fit. */
	UT_ASSERT_EQ(file_fill(f, 0, 1 << 20, 0), 0);
	UT_ASSERT_EQ_FATAL(create_bdev("cd", f, 4096, 128, 0, NULL, false, &bdev, msg, sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	CU_ASSERT(disk->md_offset + disk->num_blocks * 128 <= 1 << 20);
	CU_ASSERT(layout_end(disk->num_blocks + 1, 4096, 128) > 1 << 20);
	UT_ASSERT_EQ(file_size(f), 1 << 20);
	UT_ASSERT_EQ(delete_sync("cd"), 0);
	CU_ASSERT(unlink(f) == 0);
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_rpc(void)
{
	char params[512];
	json_t *resp, *entry;
	struct bdev *bdev;
	const char *f = tmp_path("rpc.img");

	snprintf(params, sizeof(params),
		 "{\"name\": \"r0\", \"filename\": \"%s\", \"block_size\": 512, "
		 "\"md_size\": 16, \"num_blocks\": 64, "
		 "\"uuid\": \"11111111-2222-4333-8444-555555555555\"}",
		 f);
	resp = ut_rpc_call("bdev_file_create", params);
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "r0");
	json_decref(resp);
	bdev = bdev_get_by_name("r0");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 16);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), "11111111-2222-4333-8444-555555555555");

	/* write_config_json: everything needed to reopen, and never create. */
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(entry, "method")), "bdev_file_create");
	CU_ASSERT(json_is_false(json_object_get(json_object_get(entry, "params"), "create")));
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_object_get(entry, "params"), "num_blocks")),
		     64);

	/* Errors name the parameter. */
	resp = ut_rpc_call("bdev_file_create", "{\"name\": \"x\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "filename") != NULL);
	json_decref(resp);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 1000, \"num_blocks\": 8}",
		 g_dir);
	resp = ut_rpc_call("bdev_file_create", params);
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "block_size") != NULL);
	json_decref(resp);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"md_size\": 12, \"num_blocks\": 8}",
		 g_dir);
	resp = ut_rpc_call("bdev_file_create", params);
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "md_size") != NULL);
	json_decref(resp);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"num_blocks\": 0}",
		 g_dir);
	UT_ASSERT_EQ(ut_rpc_code("bdev_file_create", params), RPC_ERROR_INVALID_PARAMS);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"num_blocks\": 8, \"colour\": 1}",
		 g_dir);
	UT_ASSERT_EQ(ut_rpc_code("bdev_file_create", params), RPC_ERROR_INVALID_PARAMS);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"num_blocks\": 8, \"create\": \"yes\"}",
		 g_dir);
	UT_ASSERT_EQ(ut_rpc_code("bdev_file_create", params), RPC_ERROR_INVALID_PARAMS);
	snprintf(params, sizeof(params),
		 "{\"name\": \"x\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"num_blocks\": 8, \"create\": false}",
		 g_dir);
	resp = ut_rpc_call("bdev_file_create", params);
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -ENOENT);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "does not exist") != NULL);
	json_decref(resp);
	snprintf(params, sizeof(params),
		 "{\"name\": \"r0\", \"filename\": \"%s/x.img\", "
		 "\"block_size\": 512, \"num_blocks\": 8}",
		 g_dir);
	resp = ut_rpc_call("bdev_file_create", params);
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(ut_rpc_error_message(resp), "bdev 'r0' already exists");
	json_decref(resp);
	CU_ASSERT(!file_exists(tmp_path("x.img")));
	CU_ASSERT(bdev_get_by_name("x") == NULL);

	UT_ASSERT_EQ(ut_rpc_code("bdev_file_delete", "{\"name\": \"nope\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_file_delete", "{}"), RPC_ERROR_INVALID_PARAMS);
	resp = ut_rpc_call("bdev_file_delete", "{\"name\": \"r0\"}");
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	CU_ASSERT(bdev_get_by_name("r0") == NULL);
	CU_ASSERT(file_exists(f));

	/* The saved config brings the bdev back. */
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("r0");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 64);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), "11111111-2222-4333-8444-555555555555");
	UT_ASSERT_EQ(delete_sync("r0"), 0);
	CU_ASSERT(unlink(f) == 0);
}

static void
io_test(uint32_t bs, uint32_t md, uint64_t nblocks, struct thread *thread)
{
	const char *f = tmp_path("io.img");
	struct bdev *bdev;
	uint8_t *model;
	char msg[256];

	UT_ASSERT_EQ_FATAL(create_bdev("io", f, bs, md, nblocks, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	round_trip("io", f, thread, &model);
	free(model);
	/* ext4 and tmpfs punch holes: zeroing never had to fall back to writing. */
	CU_ASSERT(disk_of("io")->data_falloc && disk_of("io")->md_falloc);
	UT_ASSERT_EQ(delete_sync("io"), 0);
	CU_ASSERT(unlink(f) == 0);
}

static void
test_io_md0(void)
{
	io_test(4096, 0, 1024, g_ut_worker);
	io_test(512, 0, 4096, g_ut_app);
}

static void
test_io_md64(void)
{
	io_test(512, 64, 4096, g_ut_worker);
	io_test(4096, 8, 512, g_ut_app);
}

static void
test_io_buffered(void)
{
	struct file_disk *disk;
	const char *f = tmp_path("buf.img");
	struct bdev *bdev;
	uint8_t *model;
	char msg[256];

	g_file_force_buffered = true;
	UT_ASSERT_EQ_FATAL(create_bdev("buf", f, 512, 0, 2048, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	CU_ASSERT(!disk->direct);
	UT_ASSERT_EQ(disk->bounce[FILE_BOUNCE_CLASS_SMALL].count, 0);
	UT_ASSERT_EQ(disk->bounce[FILE_BOUNCE_CLASS_LARGE].count, 0);
	UT_ASSERT_EQ(bdev_get_buf_align(bdev), 1);
	round_trip("buf", f, g_ut_worker, &model);
	free(model);
	UT_ASSERT_EQ(delete_sync("buf"), 0);
	CU_ASSERT(unlink(f) == 0);

	UT_ASSERT_EQ_FATAL(create_bdev("buf", f, 512, 32, 2048, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	CU_ASSERT(!((struct file_disk *)bdev->ctxt)->direct);
	round_trip("buf", f, g_ut_worker, &model);
	free(model);
	UT_ASSERT_EQ(delete_sync("buf"), 0);
	CU_ASSERT(unlink(f) == 0);
	g_file_force_buffered = false;
}

/* tmpfs (/dev/shm): direct I/O where the kernel has it (6.6+), buffered otherwise. */
static void
test_tmpfs(void)
{
	struct file_disk *disk;
	struct bdev *bdev;
	uint8_t *model;
	char path[64], msg[256];

	if (access("/dev/shm", W_OK) != 0) {
		printf("\n  skipped: no writable /dev/shm\n");
		return;
	}
	snprintf(path, sizeof(path), "/dev/shm/bdev_file_ut.%d.img", (int)getpid());
	UT_ASSERT_EQ_FATAL(create_bdev("shm", path, 512, 64, 1024, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	printf("(tmpfs: %s I/O) ", disk->direct ? "direct" : "buffered");
	round_trip("shm", path, g_ut_worker, &model);
	free(model);
	UT_ASSERT_EQ(delete_sync("shm"), 0);
	CU_ASSERT(unlink(path) == 0);
}

/* write_zeroes and unmap where fallocate is not available: zeros are written. */
static void
test_zero_fallback(void)
{
	const char *f = tmp_path("zero.img");
	uint32_t bs = 512, md = 64, bbs = bs + md, nblocks = 6000;
	size_t len = (size_t)nblocks * bbs;
	struct file_disk *disk;
	struct ut_dev dev;
	struct ut_io r;
	struct bdev *bdev;
	uint8_t *model, *buf;
	char msg[256];

	UT_ASSERT_EQ_FATAL(create_bdev("zero", f, bs, md, nblocks, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	disk->data_falloc = false;
	disk->md_falloc = false;
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "zero", g_ut_worker), 0);
	model = malloc(len);
	buf = env_dma_malloc(len, 4096);
	CU_ASSERT_FATAL(model != NULL && buf != NULL);
	ut_pattern(model, len, 77);
	memcpy(buf, model, len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	/* Several zero-buffer chunks (2048 blocks of 512 bytes each). */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 7, 5000, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 7 * (size_t)bbs, 0, 5000 * (size_t)bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 5500, 3, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 5500 * (size_t)bbs, 0, 3 * (size_t)bbs);
	memset(buf, 0xa5, len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(memcmp(buf, model, len) == 0);
	check_layout(f, disk, model);
	/* Still off: the flags are the disk's, not the I/O's. */
	CU_ASSERT(!disk->data_falloc && !disk->md_falloc);
	ut_dev_close(&dev);
	env_dma_free(buf);
	free(model);
	UT_ASSERT_EQ(delete_sync("zero"), 0);
	CU_ASSERT(unlink(f) == 0);
}

/*
 * More I/O at once than the ring (256 SQEs) and the bounce buffers (64 small
 * and 8 large with metadata) take, small and large mixed: everything waits
 * its turn, borrows the other class of bounce buffer, and completes.
 */
static void
queue_test(uint32_t md, uint32_t count)
{
	const char *f = tmp_path("q.img");
	uint32_t bs = 512, bbs = bs + md;
	struct ut_dev dev;
	struct ut_io *r;
	struct bdev *bdev;
	uint8_t *buf, *back;
	uint64_t lba, total = 0;
	uint32_t i, done, len;
	char msg[256];
	bool ok = true;

	for (i = 0; i < count; i++) {
		total += i % 7 == 0 ? 40 : 2;
	}
	UT_ASSERT_EQ_FATAL(create_bdev("q", f, bs, md, total, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "q", g_ut_worker), 0);
	r = calloc(count, sizeof(*r));
	buf = env_dma_malloc(total * bbs, 4096);
	back = env_dma_malloc(total * bbs, 4096);
	CU_ASSERT_FATAL(r != NULL && buf != NULL && back != NULL);
	ut_pattern(buf, total * bbs, md + 9);
	for (i = 0, lba = 0; i < count; i++, lba += len) {
		len = i % 7 == 0 ? 40 : 2;
		UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_WRITE, buf + lba * bbs, lba, len, &r[i]),
			     0);
	}
	UT_POLL_UNTIL(({
		for (done = 0, i = 0; i < count; i++) {
			done += r[i].done;
		}
		done == count;
	}));
	UT_ASSERT_EQ(done, count);
	for (i = 0; i < count; i++) {
		ok = ok && r[i].success;
	}
	CU_ASSERT(ok);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, back, 0, total, &r[0]), 0);
	CU_ASSERT(memcmp(buf, back, total * bbs) == 0);
	ut_dev_close(&dev);
	env_dma_free(buf);
	env_dma_free(back);
	free(r);
	UT_ASSERT_EQ(delete_sync("q"), 0);
	CU_ASSERT(unlink(f) == 0);
}

static void
test_queueing(void)
{
	queue_test(0, 700);
	queue_test(64, 300);
}

/* Completions wake a thread asleep in thread_wait(); with nothing outstanding it sleeps. */
static void
test_event_wakeup(void)
{
	const char *f = tmp_path("ev.img");
	struct ut_dev dev;
	struct ut_io r;
	struct bdev *bdev;
	uint8_t *buf;
	uint64_t t0, slept_ns;
	char msg[256];
	int i;

	UT_ASSERT_EQ_FATAL(create_bdev("ev", f, 4096, 0, 64, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "ev", g_ut_worker), 0);
	buf = env_dma_malloc(16 * 4096, 4096);
	CU_ASSERT_FATAL(buf != NULL);
	ut_poll_idle();

	/*
	 * Idle: the channel's poller finds nothing and the eventfd stays quiet,
	 * so the thread sleeps out its timeout. (Late wake-ups can still arrive
	 * from rings of earlier tests, notably with the buffered fallback on
	 * tmpfs: allow a few early returns, within 2 s. A thread that never
	 * sleeps fails all ten.)
	 */
	UT_ASSERT_EQ(thread_poll(g_ut_worker, 0, 0), 0);
	for (i = 0, slept_ns = 0; i < 10 && slept_ns < 150ull * 1000 * 1000; i++) {
		t0 = time_now_ns();
		UT_ASSERT_EQ(thread_wait(g_ut_worker, 200 * 1000), 0);
		slept_ns = time_now_ns() - t0;
		UT_ASSERT_EQ(thread_poll(g_ut_worker, 0, 0), 0);
	}
	CU_ASSERT(slept_ns >= 150ull * 1000 * 1000);

	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(ut_submit(&dev, i == 1 ? BDEV_IO_TYPE_WRITE : BDEV_IO_TYPE_READ, buf,
				       0, 16, &r),
			     0);
		/*
		 * One iteration submits the SQE; from then on the thread only
		 * sleeps (3 s a time) and handles what woke it: the completion
		 * must arrive well before one timeout passes.
		 */
		thread_poll(g_ut_worker, 0, 0);
		t0 = time_now_ns();
		while (!r.done && time_now_ns() - t0 < UT_TIMEOUT_NS) {
			UT_ASSERT_EQ(thread_wait(g_ut_worker, 3ull * 1000 * 1000), 0);
			thread_poll(g_ut_worker, 0, 0);
		}
		slept_ns = time_now_ns() - t0;
		CU_ASSERT(r.done && r.success);
		CU_ASSERT(slept_ns < 2000ull * 1000 * 1000);
	}
	ut_poll_idle();
	UT_ASSERT_EQ(thread_poll(g_ut_worker, 0, 0), 0);

	ut_dev_close(&dev);
	env_dma_free(buf);
	UT_ASSERT_EQ(delete_sync("ev"), 0);
	CU_ASSERT(unlink(f) == 0);
}

/* A reset completes only after the I/O submitted before it. */
static void
test_reset_drains(void)
{
	const char *f = tmp_path("reset.img");
	struct ut_dev dev;
	struct ut_io w[8], rr;
	struct bdev *bdev;
	uint8_t *buf;
	char msg[256];
	bool all = true;
	int i;

	UT_ASSERT_EQ_FATAL(create_bdev("rst", f, 512, 64, 1024, NULL, true, &bdev, msg,
				       sizeof(msg)),
			   0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "rst", g_ut_worker), 0);
	buf = env_dma_malloc(8 * 64 * 576, 4096);
	CU_ASSERT_FATAL(buf != NULL);
	ut_pattern(buf, 8 * 64 * 576, 5);
	for (i = 0; i < 8; i++) {
		UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_WRITE, buf + i * 64 * 576, i * 64, 64,
				       &w[i]),
			     0);
	}
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &rr), 0);
	UT_POLL_UNTIL(rr.done);
	CU_ASSERT(rr.success);
	for (i = 0; i < 8; i++) {
		all = all && w[i].done && w[i].success;
	}
	CU_ASSERT(all);
	ut_poll_idle();
	ut_dev_close(&dev);
	env_dma_free(buf);
	UT_ASSERT_EQ(delete_sync("rst"), 0);
	CU_ASSERT(unlink(f) == 0);
}

/* Data, metadata and uuid come back after delete + re-create on the same file. */
static void
test_persistence(void)
{
	const char *f = tmp_path("persist.img");
	char uuid[40], msg[256];
	struct file_disk *disk;
	struct bdev *bdev;
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *model, *buf;
	size_t len;
	json_t *entry;

	/* With metadata: everything from the header, even without the geometry. */
	UT_ASSERT_EQ_FATAL(create_bdev("p", f, 512, 64, 2048, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));
	round_trip("p", f, g_ut_worker, &model);
	UT_ASSERT_EQ(delete_sync("p"), 0);
	UT_ASSERT_EQ_FATAL(create_bdev("p", f, 0, 64, 0, NULL, false, &bdev, msg, sizeof(msg)), 0);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 512);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 2048);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	disk = bdev->ctxt;
	CU_ASSERT(disk->formatted);
	len = (size_t)2048 * 576;
	buf = env_dma_malloc(len, 4096);
	CU_ASSERT_FATAL(buf != NULL);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "p", g_ut_app), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, 2048, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model, len) == 0);
	ut_dev_close(&dev);
	/* And through the saved configuration. */
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_EQ(delete_sync("p"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("p");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(delete_sync("p"), 0);
	free(model);
	CU_ASSERT(unlink(f) == 0);

	/* Without metadata the uuid lives in the saved configuration. */
	UT_ASSERT_EQ_FATAL(create_bdev("p", f, 4096, 0, 256, NULL, true, &bdev, msg, sizeof(msg)),
			   0);
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));
	round_trip("p", f, g_ut_worker, &model);
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_EQ(delete_sync("p"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("p");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "p", g_ut_worker), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, 256, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model, 256 * 4096) == 0);
	ut_dev_close(&dev);
	UT_ASSERT_EQ(delete_sync("p"), 0);
	env_dma_free(buf);
	free(model);
	CU_ASSERT(unlink(f) == 0);
}

/* Reopening a formatted file with another geometry is refused and changes nothing. */
static void
test_wrong_geometry(void)
{
	const char *f = tmp_path("geo.img");
	const char *uuid = "0f1e2d3c-4b5a-4697-8877-665544332211";
	struct bdev *bdev;
	char msg[256];
	uint64_t h;
	int fd;
	uint8_t byte;

	UT_ASSERT_EQ_FATAL(create_bdev("geo", f, 512, 64, 100, uuid, true, &bdev, msg, sizeof(msg)),
			   0);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(delete_sync("geo"), 0);
	h = file_hash(f);

	EXPECT_CREATE_FAIL(-EINVAL, "block_size", "geo", f, 4096, 64, 0, NULL, false);
	EXPECT_CREATE_FAIL(-EINVAL, "md_size", "geo", f, 512, 32, 0, NULL, false);
	EXPECT_CREATE_FAIL(-EINVAL, "md_size", "geo", f, 512, 0, 0, NULL, false);
	EXPECT_CREATE_FAIL(-EINVAL, "num_blocks", "geo", f, 512, 64, 200, NULL, false);
	EXPECT_CREATE_FAIL(-EINVAL, "uuid", "geo", f, 512, 64, 100,
			   "11111111-2222-4333-8444-555555555555", false);
	UT_ASSERT_EQ(file_hash(f), h);
	CU_ASSERT(bdev_first() == NULL);
	/* The right geometry, given in full, opens it. */
	UT_ASSERT_EQ_FATAL(create_bdev("geo", f, 512, 64, 100, uuid, false, &bdev, msg,
				       sizeof(msg)),
			   0);
	UT_ASSERT_EQ(delete_sync("geo"), 0);

	/* A damaged header is refused. */
	fd = open(f, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(pread(fd, &byte, 1, 20) == 1);
	byte ^= 0xff;
	CU_ASSERT(pwrite(fd, &byte, 1, 20) == 1);
	close(fd);
	h = file_hash(f);
	EXPECT_CREATE_FAIL(-EINVAL, "damaged", "geo", f, 512, 64, 100, NULL, false);
	UT_ASSERT_EQ(file_hash(f), h);
	/* Truncated behind our back: refused too. */
	byte ^= 0xff;
	fd = open(f, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(pwrite(fd, &byte, 1, 20) == 1);
	CU_ASSERT(ftruncate(fd, 8192) == 0);
	close(fd);
	EXPECT_CREATE_FAIL(-EINVAL, "shorter", "geo", f, 512, 64, 100, NULL, false);
	CU_ASSERT(unlink(f) == 0);
}

/* A loop device over a file in the temp dir: the block-device paths. */
static int
loop_attach(const char *backing, char *dev_path, size_t len, int *loop_fd)
{
	struct loop_config cfg;
	int ctl, bfd, lfd = -1, nr, tries, rc = -ENODEV;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		return -errno;
	}
	bfd = open(backing, O_RDWR | O_CLOEXEC);
	if (bfd < 0) {
		rc = -errno;
		close(ctl);
		return rc;
	}
	/* Another process may take the free device first: try a few. */
	for (tries = 0; tries < 5; tries++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0) {
			rc = -errno;
			break;
		}
		snprintf(dev_path, len, "/dev/loop%d", nr);
		lfd = open(dev_path, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			rc = -errno;
			break;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (uint32_t)bfd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
			rc = 0;
			break;
		}
		rc = -errno;
		close(lfd);
		lfd = -1;
		if (rc != -EBUSY) {
			break;
		}
	}
	close(bfd);
	close(ctl);
	*loop_fd = lfd;
	return rc;
}

static void
test_block_device(void)
{
	const char *backing = tmp_path("loop.img");
	char dev_path[64], uuid[40], msg[256];
	struct file_disk *disk;
	struct bdev *bdev;
	uint8_t *model;
	int lfd = -1, rc;

	if (access("/dev/loop-control", F_OK) != 0) {
		printf("\n  skipped: no /dev/loop-control on this machine\n");
		return;
	}
	UT_ASSERT_EQ_FATAL(file_fill(backing, 0, 8u << 20, 0), 0);
	rc = loop_attach(backing, dev_path, sizeof(dev_path), &lfd);
	if (rc != 0) {
		printf("\n  skipped: cannot set up a loop device: %s\n", strerror(-rc));
		unlink(backing);
		return;
	}

	/* Raw: the geometry is the device's. */
	UT_ASSERT_EQ_FATAL(create_bdev("blk", dev_path, 0, 0, 0, NULL, false, &bdev, msg,
				       sizeof(msg)),
			   0);
	disk = bdev->ctxt;
	CU_ASSERT(disk->blockdev);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 512);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), (8u << 20) / 512);
	/* O_EXCL: nobody else gets it while the bdev holds it. */
	EXPECT_CREATE_FAIL(-EBUSY, "in use", "blk2", dev_path, 0, 0, 0, NULL, false);
	round_trip("blk", dev_path, g_ut_worker, &model);
	free(model);
	UT_ASSERT_EQ(delete_sync("blk"), 0);
	EXPECT_CREATE_FAIL(-EINVAL, "num_blocks", "blk", dev_path, 512, 0, 20000, NULL, false);
	/* Data there but no header: metadata refused... */
	UT_ASSERT_EQ(file_fill(dev_path, 0, 4096, 0x11), 0);
	EXPECT_CREATE_FAIL(-EINVAL, "no file bdev header", "blk", dev_path, 512, 64, 0, NULL,
			   false);
	/* ...until the first 4 KiB are zeroed (all of it here: the round trip expects zeros). */
	UT_ASSERT_EQ(file_fill(dev_path, 0, 8u << 20, 0), 0);
	UT_ASSERT_EQ_FATAL(create_bdev("blk", dev_path, 4096, 64, 1000, NULL, false, &bdev, msg,
				       sizeof(msg)),
			   0);
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));
	round_trip("blk", dev_path, g_ut_worker, &model);
	UT_ASSERT_EQ(delete_sync("blk"), 0);
	UT_ASSERT_EQ_FATAL(create_bdev("blk", dev_path, 0, 64, 0, NULL, false, &bdev, msg,
				       sizeof(msg)),
			   0);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 1000);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 4096);
	check_layout(dev_path, bdev->ctxt, model);
	free(model);
	UT_ASSERT_EQ(delete_sync("blk"), 0);

	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	unlink(backing);
}

static int
remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(path);
}

static int
suite_init(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/bdev_file_ut.XXXXXX");
	if (mkdtemp(g_dir) == NULL) {
		return 1;
	}
	return ut_setup(bdev_file_module_register) == 0 ? 0 : 1;
}

static int
suite_fini(void)
{
	int rc = ut_teardown() == 0 ? 0 : 1;

	nftw(g_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	return rc;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_create_errors),
		UT_TEST(test_create_delete),
		UT_TEST(test_rpc),
		UT_TEST(test_io_md0),
		UT_TEST(test_io_md64),
		UT_TEST(test_io_buffered),
		UT_TEST(test_tmpfs),
		UT_TEST(test_zero_fallback),
		UT_TEST(test_queueing),
		UT_TEST(test_event_wakeup),
		UT_TEST(test_reset_drains),
		UT_TEST(test_persistence),
		UT_TEST(test_wrong_geometry),
		UT_TEST(test_block_device),
	};

	return ut_run("bdev_file", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
