/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the malloc bdev: create/delete through the C API and RPC,
 * parameter errors, data round trips with and without metadata, zeroing,
 * configuration replay, and the thin disk's accounting.
 */
#include <errno.h>

#include "gga/nvme_spec.h"

#include "module/bdev/malloc/bdev_malloc.h"
#include "test/unit/module/bdev/bdev_ut_common.h"

static struct bdev *
create(const char *name, uint64_t num_blocks, uint32_t block_size, uint32_t md_size,
       const char *uuid, int *rc_out)
{
	struct bdev_malloc_opts opts = {
		.name = name,
		.num_blocks = num_blocks,
		.block_size = block_size,
		.md_size = md_size,
		.uuid = uuid,
	};
	struct bdev *bdev = NULL;
	int rc;

	rc = bdev_malloc_create(&opts, &bdev);
	if (rc_out != NULL) {
		*rc_out = rc;
	}
	return rc == 0 ? bdev : NULL;
}

static int
delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };
	int rc;

	rc = bdev_malloc_delete(name, ut_cpl_done, &cpl);
	if (rc != 0) {
		return rc;
	}
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	return cpl.rc;
}

static void
test_create_delete(void)
{
	const char *uuid = "0f1e2d3c-4b5a-4697-8877-665544332211";
	struct bdev *b0, *b1, *b;
	json_t *info;
	int rc;

	/* Default names take the lowest free number. */
	b0 = create(NULL, 64, 512, 0, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_name(b0), "Malloc0");
	b1 = create(NULL, 64, 4096, 8, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_name(b1), "Malloc1");
	UT_ASSERT_EQ(bdev_get_block_size(b1), 4096);
	UT_ASSERT_EQ(bdev_get_md_size(b1), 8);
	UT_ASSERT_EQ(bdev_get_buf_block_size(b1), 4104);
	UT_ASSERT_EQ(bdev_get_num_blocks(b1), 64);
	UT_ASSERT_STR_EQ(bdev_get_module_name(b1), "malloc");
	UT_ASSERT_EQ(delete_sync("Malloc0"), 0);
	CU_ASSERT(bdev_get_by_name("Malloc0") == NULL);
	b0 = create(NULL, 8, 512, 0, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_name(b0), "Malloc0");

	/* A given uuid is kept. */
	b = create("withuuid", 8, 512, 0, uuid, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(b), uuid);

	info = json_object();
	b1->fn_table->dump_info_json(b1->ctxt, info);
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_object_get(info, "malloc"), "md_size")),
		     8);
	json_decref(info);

	/* Parameter errors create nothing. */
	create("", 8, 512, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 0, 512, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 1000, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 256, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 131072, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 512, 12, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 512, 256, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 512, 0, "not-a-uuid", &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	create("bad", 8, 512, 0, "0f1e2d3c-4b5a-4697-8877-66554433221g", &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	/*
	 * A size beyond the module's limit is a lack of memory; a byte count
	 * that overflows 64 bits is an invalid num_blocks.
	 */
	create("bad", BDEV_MALLOC_MAX_BYTES / 4096 + 1, 4096, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -ENOMEM);
	create("bad", UINT64_MAX / 2, 65536, 128, NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	CU_ASSERT(bdev_get_by_name("bad") == NULL);

	create("withuuid", 8, 512, 0, NULL, &rc);
	UT_ASSERT_EQ(rc, -EEXIST);

	UT_ASSERT_EQ(bdev_malloc_delete("nope", ut_cpl_done, NULL), -ENODEV);
	UT_ASSERT_EQ(delete_sync("withuuid"), 0);
	UT_ASSERT_EQ(delete_sync("Malloc0"), 0);
	UT_ASSERT_EQ(delete_sync("Malloc1"), 0);
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_rpc(void)
{
	json_t *resp;
	struct bdev *bdev;

	resp = ut_rpc_call("bdev_malloc_create", "{\"num_blocks\": 16, \"block_size\": 4096}");
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "Malloc0");
	json_decref(resp);

	resp = ut_rpc_call("bdev_malloc_create",
			   "{\"name\": \"r1\", \"num_blocks\": 32, \"block_size\": 512, "
			   "\"md_size\": 64, \"uuid\": \"11111111-2222-4333-8444-555555555555\"}");
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "r1");
	json_decref(resp);
	bdev = bdev_get_by_name("r1");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 64);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 32);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), "11111111-2222-4333-8444-555555555555");

	/* Parameter errors name the parameter. */
	resp = ut_rpc_call("bdev_malloc_create", "{\"name\": \"x\", \"block_size\": 512}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "num_blocks") != NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_malloc_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 1000}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "block_size") != NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_malloc_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
			   "\"md_size\": 12}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "md_size") != NULL);
	json_decref(resp);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 0, \"block_size\": 512}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"\", \"num_blocks\": 8, \"block_size\": 512}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"uuid\": \"zz\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"colour\": 1}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 1099511627776, "
				 "\"block_size\": 4096}"),
		     -ENOMEM);
	/* md_interleave false is refused with metadata only (gga's is interleaved). */
	resp = ut_rpc_call("bdev_malloc_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
			   "\"md_size\": 8, \"md_interleave\": false}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "md_interleave") != NULL);
	json_decref(resp);
	/* null's SPDK parameters are not malloc's. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"preferred_write_granularity\": 0}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"numa_id\": 0}"),
		     RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(bdev_get_by_name("x") == NULL);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"md_interleave\": false, \"numa_id\": -1, \"dif_type\": 0}"),
		     0);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_delete", "{\"name\": \"x\"}"), 0);

	resp = ut_rpc_call("bdev_malloc_create",
			   "{\"name\": \"r1\", \"num_blocks\": 8, \"block_size\": 512}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(ut_rpc_error_message(resp), "bdev 'r1' already exists");
	json_decref(resp);

	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_delete", "{\"name\": \"nope\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_delete", "{}"), RPC_ERROR_INVALID_PARAMS);
	resp = ut_rpc_call("bdev_malloc_delete", "{\"name\": \"r1\"}");
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	CU_ASSERT(bdev_get_by_name("r1") == NULL);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_delete", "{\"name\": \"Malloc0\"}"), 0);
	CU_ASSERT(bdev_first() == NULL);
}

/* Expected contents of the disk, kept alongside to compare against. */
static void
io_round_trip(uint32_t md_size, struct thread *thread)
{
	const uint32_t bs = 512, nblocks = 4096;
	uint32_t bbs = bs + md_size;
	size_t disk_len = (size_t)nblocks * bbs;
	uint8_t *model, *buf;
	struct iovec iov[3];
	struct ut_dev dev;
	struct ut_io r;
	struct bdev *bdev;
	int rc;

	bdev = create("io", nblocks, bs, md_size, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "io", thread), 0);
	model = calloc(1, disk_len);
	buf = env_dma_malloc(disk_len, 0);
	CU_ASSERT_FATAL(model != NULL && buf != NULL);

	/* Never written: zeros, metadata included. */
	memset(buf, 0xa5, disk_len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(mem_is_zero(buf, disk_len));

	/* Write 8 blocks with a pattern (data and metadata), read them back. */
	ut_pattern(model + 10 * bbs, 8 * bbs, md_size + 1);
	memcpy(buf, model + 10 * bbs, 8 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 10, 8, &r), 0);
	CU_ASSERT(r.success);
	memset(buf, 0, 8 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 10, 8, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model + 10 * bbs, 8 * bbs) == 0);

	/* A vectored read whose elements split blocks at odd places. */
	memset(buf, 0, 8 * bbs);
	iov[0] = (struct iovec){ .iov_base = buf, .iov_len = 100 };
	iov[1] = (struct iovec){ .iov_base = buf + 100, .iov_len = 3 * bbs };
	iov[2] = (struct iovec){ .iov_base = buf + 100 + 3 * bbs, .iov_len = 5 * bbs - 100 };
	memset(&r, 0, sizeof(r));
	thread_set_current(thread);
	rc = bdev_readv_blocks(dev.desc, dev.ch, iov, 3, 10, 8, ut_io_done, &r);
	thread_set_current(g_ut_app);
	UT_ASSERT_EQ(rc, 0);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.success);
	CU_ASSERT(memcmp(buf, model + 10 * bbs, 8 * bbs) == 0);

	/* write_zeroes and unmap zero whole blocks, metadata included. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 12, 2, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 12 * bbs, 0, 2 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 17, 1, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 17 * bbs, 0, bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 10, 8, &r), 0);
	CU_ASSERT(memcmp(buf, model + 10 * bbs, 8 * bbs) == 0);

	/* A large zeroing (the page-release path) leaves its unaligned edges exact. */
	ut_pattern(model, disk_len, 99);
	memcpy(buf, model, disk_len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 3, nblocks - 7, &r), 0);
	CU_ASSERT(r.success);
	memset(model + 3 * bbs, 0, (size_t)(nblocks - 7) * bbs);
	memset(buf, 0xa5, disk_len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(memcmp(buf, model, disk_len) == 0);
	/* And the released pages take new data again. */
	ut_pattern(model + 2000 * bbs, 4 * bbs, 5);
	memcpy(buf, model + 2000 * bbs, 4 * bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 2000, 4, &r), 0);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 1000, 900, &r), 0);
	memset(model + 1000 * bbs, 0, 900 * (size_t)bbs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(memcmp(buf, model, disk_len) == 0);

	/* flush and reset succeed; the bdev layer rejects out-of-range I/O. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_FLUSH, NULL, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, nblocks - 1, 2, &r), -EINVAL);
	CU_ASSERT(bdev_io_type_supported(bdev, BDEV_IO_TYPE_UNMAP));

	ut_dev_close(&dev);
	UT_ASSERT_EQ(delete_sync("io"), 0);
	env_dma_free(buf);
	free(model);
}

static void
test_io_md0(void)
{
	io_round_trip(0, g_ut_app);
}

static void
test_io_md64(void)
{
	io_round_trip(64, g_ut_app);
}

static void
test_io_md64_worker(void)
{
	io_round_trip(64, g_ut_worker);
}

static void
test_config_replay(void)
{
	char name[64], uuid[40];
	struct bdev *bdev;
	json_t *entry, *params;
	int rc;

	bdev = create(NULL, 100, 4096, 64, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	snprintf(name, sizeof(name), "%s", bdev_get_name(bdev));
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));

	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(entry, "method")), "bdev_malloc_create");
	params = json_object_get(entry, "params");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "name")), name);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "uuid")), uuid);

	UT_ASSERT_EQ(delete_sync(name), 0);
	CU_ASSERT(bdev_get_by_name(name) == NULL);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);

	bdev = bdev_get_by_name(name);
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 100);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 4096);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 64);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(delete_sync(name), 0);
}

static uint64_t
used_blocks(struct bdev *bdev)
{
	struct bdev_space space;

	bdev_get_space(bdev, &space);
	CU_ASSERT(space.thin);
	return space.used_blocks;
}

/* A write past the limit fails whole with Capacity Exceeded; unmap frees. */
static void
test_thin(void)
{
	const uint32_t bs = 512, nblocks = 200;
	struct bdev_malloc_opts opts = {
		.name = "thin", .num_blocks = nblocks, .block_size = bs, .thin_blocks = 100
	};
	struct bdev_space space;
	struct ut_dev dev;
	struct ut_io r;
	struct bdev *bdev = NULL, *plain;
	json_t *info, *entry;
	uint8_t *buf;
	int rc;

	/* A plain disk is not thin: every block counts as used. */
	plain = create("plain", 64, bs, 0, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	bdev_get_space(plain, &space);
	CU_ASSERT(!space.thin);
	UT_ASSERT_EQ(space.used_blocks, 64);
	UT_ASSERT_EQ(space.capacity_blocks, 64);
	UT_ASSERT_EQ(delete_sync("plain"), 0);

	opts.thin_blocks = nblocks + 1;
	UT_ASSERT_EQ(bdev_malloc_create(&opts, &bdev), -EINVAL);
	opts.thin_blocks = 100;
	UT_ASSERT_EQ_FATAL(bdev_malloc_create(&opts, &bdev), 0);
	bdev_get_space(bdev, &space);
	CU_ASSERT(space.thin);
	CU_ASSERT(space.dealloc_zeroes);
	UT_ASSERT_EQ(space.used_blocks, 0);
	UT_ASSERT_EQ(space.capacity_blocks, 100);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "thin", g_ut_app), 0);
	buf = env_dma_malloc((size_t)nblocks * bs, 0);
	CU_ASSERT_FATAL(buf != NULL);

	/* 90 blocks, then 10 of them again (no new space), then 10 more: full. */
	memset(buf, 0x11, (size_t)nblocks * bs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, 90, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 90);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 80, 10, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 90);
	/* 85..104: 15 new blocks, 5 too many; nothing of it is written. */
	memset(buf, 0x22, 20 * bs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 85, 20, &r), 0);
	CU_ASSERT(!r.success);
	UT_ASSERT_EQ(r.sct, NVME_SCT_GENERIC);
	UT_ASSERT_EQ(r.sc, NVME_SC_CAPACITY_EXCEEDED);
	UT_ASSERT_EQ(r.err, -ENOSPC);
	UT_ASSERT_EQ(used_blocks(bdev), 90);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 85, 20, &r), 0);
	CU_ASSERT(r.success);
	CU_ASSERT(buf[0] == 0x11 && buf[5 * bs - 1] == 0x11);
	CU_ASSERT(mem_is_zero(buf + 5 * bs, 15 * bs));
	memset(buf, 0x33, (size_t)nblocks * bs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 150, 10, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 100);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 160, 1, &r), 0);
	UT_ASSERT_EQ(r.err, -ENOSPC);
	/* Full: overwrites of allocated blocks and reads go on. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, 90, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(r.success);

	/* Unmap (a range partly unallocated) and write_zeroes free; freed blocks read zeros. */
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 40, 60, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 50);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 155, 5, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 45);
	memset(buf, 0xa5, (size_t)nblocks * bs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, 0, nblocks, &r), 0);
	CU_ASSERT(buf[39 * bs] == 0x33);
	CU_ASSERT(mem_is_zero(buf + 40 * bs, 110 * bs));
	CU_ASSERT(buf[150 * bs] == 0x33);
	CU_ASSERT(mem_is_zero(buf + 155 * bs, 45 * bs));
	/* And writes work again, up to the limit. */
	memset(buf, 0x44, (size_t)nblocks * bs);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 100, 60, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(used_blocks(bdev), 100);

	/* bdev_get_bdevs shows the space; the configuration keeps thin_blocks. */
	info = json_object();
	bdev->fn_table->dump_info_json(bdev->ctxt, info);
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_object_get(info, "malloc"), "thin_blocks")),
		     100);
	json_decref(info);
	info = ut_rpc_call("bdev_get_bdevs", "{\"name\": \"thin\"}");
	CU_ASSERT_FATAL(info != NULL);
	entry = json_object_get(json_array_get(json_object_get(info, "result"), 0), "thin");
	UT_ASSERT_EQ(json_integer_value(json_object_get(entry, "used_blocks")), 100);
	UT_ASSERT_EQ(json_integer_value(json_object_get(entry, "capacity_blocks")), 100);
	json_decref(info);
	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_EQ(json_integer_value(
			     json_object_get(json_object_get(entry, "params"), "thin_blocks")),
		     100);
	ut_dev_close(&dev);
	UT_ASSERT_EQ(delete_sync("thin"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("thin");
	CU_ASSERT_FATAL(bdev != NULL);
	bdev_get_space(bdev, &space);
	CU_ASSERT(space.thin);
	UT_ASSERT_EQ(space.capacity_blocks, 100);
	UT_ASSERT_EQ(delete_sync("thin"), 0);

	/* The RPC checks thin_blocks. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"t\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"thin_blocks\": 9}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_malloc_create",
				 "{\"name\": \"t\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"thin_blocks\": 0}"),
		     RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(bdev_get_by_name("t") == NULL);
	env_dma_free(buf);
}

static int
suite_init(void)
{
	return ut_setup(bdev_malloc_module_register) == 0 ? 0 : 1;
}

static int
suite_fini(void)
{
	return ut_teardown() == 0 ? 0 : 1;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_create_delete),  UT_TEST(test_rpc),
		UT_TEST(test_io_md0),         UT_TEST(test_io_md64),
		UT_TEST(test_io_md64_worker), UT_TEST(test_config_replay),
		UT_TEST(test_thin),
	};

	return ut_run("bdev_malloc", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
