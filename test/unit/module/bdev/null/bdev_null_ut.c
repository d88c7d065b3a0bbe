/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the null bdev: create/delete through the C API and RPC,
 * parameter errors, I/O that succeeds without touching buffers, and
 * configuration replay.
 */
#include <errno.h>

#include "module/bdev/null/bdev_null.h"
#include "test/unit/module/bdev/bdev_ut_common.h"

static int
create(const char *name, uint64_t num_blocks, uint32_t block_size, uint32_t md_size,
       const char *uuid)
{
	struct bdev_null_opts opts = {
		.name = name,
		.num_blocks = num_blocks,
		.block_size = block_size,
		.md_size = md_size,
		.uuid = uuid,
	};

	return bdev_null_create(&opts, NULL);
}

static int
delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };
	int rc;

	rc = bdev_null_delete(name, ut_cpl_done, &cpl);
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
	struct bdev_null_opts opts = { .name = "n1", .num_blocks = 1ull << 40, .block_size = 4096 };
	struct bdev *bdev = NULL;

	/* Size costs nothing: 4 PiB of null disk. */
	UT_ASSERT_EQ_FATAL(bdev_null_create(&opts, &bdev), 0);
	CU_ASSERT_FATAL(bdev == bdev_get_by_name("n1"));
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 1ull << 40);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 4096);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 0);
	UT_ASSERT_STR_EQ(bdev_get_module_name(bdev), "null");

	UT_ASSERT_EQ(create("n2", 8, 512, 128, "abcdef01-2345-4678-89ab-cdef01234567"), 0);
	bdev = bdev_get_by_name("n2");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 128);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), "abcdef01-2345-4678-89ab-cdef01234567");

	UT_ASSERT_EQ(create(NULL, 8, 512, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(create("", 8, 512, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(create("bad", 0, 512, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(create("bad", 8, 768, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(create("bad", 8, 512, 48, NULL), -EINVAL);
	/* A byte count beyond 64 bits is refused, though nothing is allocated. */
	UT_ASSERT_EQ(create("bad", INT64_MAX, 512, 0, NULL), -EINVAL);
	UT_ASSERT_EQ(create("bad", 8, 512, 0, "abcdef01-2345-4678-89ab-cdef0123456"), -EINVAL);
	CU_ASSERT(bdev_get_by_name("bad") == NULL);
	UT_ASSERT_EQ(create("n1", 8, 512, 0, NULL), -EEXIST);

	UT_ASSERT_EQ(bdev_null_delete("nope", NULL, NULL), -ENODEV);
	UT_ASSERT_EQ(delete_sync("n1"), 0);
	UT_ASSERT_EQ(delete_sync("n2"), 0);
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_rpc(void)
{
	json_t *resp;
	struct bdev *bdev;

	resp = ut_rpc_call("bdev_null_create",
			   "{\"name\": \"r1\", \"num_blocks\": 1024, \"block_size\": 512, "
			   "\"md_size\": 8}");
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "r1");
	json_decref(resp);
	bdev = bdev_get_by_name("r1");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 8);

	resp = ut_rpc_call("bdev_null_create", "{\"num_blocks\": 8, \"block_size\": 512}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "name") != NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_null_create", "{\"name\": \"x\", \"block_size\": 512}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "num_blocks") != NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_null_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 3000}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "block_size") != NULL);
	json_decref(resp);
	resp = ut_rpc_call("bdev_null_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
			   "\"md_size\": 7}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "md_size") != NULL);
	json_decref(resp);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"\", \"num_blocks\": 8, \"block_size\": 512}"),
		     RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(bdev_get_by_name("x") == NULL);
	/* Its SPDK parameters (shared decoder, null's own table): at their defaults only. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"preferred_write_granularity\": 4}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"dif_type\": 1}"),
		     RPC_ERROR_INVALID_PARAMS);
	/* malloc's parameters are not null's. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"md_interleave\": true}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"numa_id\": -1}"),
		     RPC_ERROR_INVALID_PARAMS);
	resp = ut_rpc_call("bdev_null_create",
			   "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
			   "\"uuid\": \"0123456789ab-cdef-4123-8456-789abcdef012\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "uuid") != NULL);
	json_decref(resp);
	CU_ASSERT(bdev_get_by_name("x") == NULL);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_create",
				 "{\"name\": \"x\", \"num_blocks\": 8, \"block_size\": 512, "
				 "\"dif_type\": 0, \"preferred_unmap_alignment\": 0}"),
		     0);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_delete", "{\"name\": \"x\"}"), 0);

	resp = ut_rpc_call("bdev_null_create",
			   "{\"name\": \"r1\", \"num_blocks\": 8, \"block_size\": 512}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(ut_rpc_error_message(resp), "bdev 'r1' already exists");
	json_decref(resp);

	UT_ASSERT_EQ(ut_rpc_code("bdev_null_delete", "{\"name\": \"nope\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_null_delete", "{\"name\": \"r1\"}"), 0);
	CU_ASSERT(bdev_get_by_name("r1") == NULL);
}

static void
io_test(uint32_t md_size)
{
	const uint32_t bs = 4096, nblocks = 256;
	size_t len = 16 * (size_t)(bs + md_size);
	struct ut_dev dev;
	struct ut_io r;
	uint8_t *buf, *copy;

	UT_ASSERT_EQ_FATAL(create("io", nblocks, bs, md_size, NULL), 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "io", g_ut_worker), 0);
	buf = env_dma_malloc(len, 0);
	copy = malloc(len);
	CU_ASSERT_FATAL(buf != NULL && copy != NULL);

	/* Writes are dropped and reads leave the buffer as it was. */
	ut_pattern(buf, len, md_size);
	memcpy(copy, buf, len);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE, buf, 0, 16, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, nblocks - 16, 16, &r), 0);
	CU_ASSERT(r.done && r.success);
	CU_ASSERT(memcmp(buf, copy, len) == 0);

	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 0, nblocks, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_UNMAP, NULL, 3, 5, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_FLUSH, NULL, 0, 1, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&dev, BDEV_IO_TYPE_READ, buf, nblocks, 1, &r), -EINVAL);

	ut_dev_close(&dev);
	UT_ASSERT_EQ(delete_sync("io"), 0);
	env_dma_free(buf);
	free(copy);
}

static void
test_io_md0(void)
{
	io_test(0);
}

static void
test_io_md64(void)
{
	io_test(64);
}

static void
test_config_replay(void)
{
	char uuid[40];
	struct bdev *bdev;
	json_t *entry, *params, *info;

	UT_ASSERT_EQ_FATAL(create("cfg", 12345, 1024, 16, NULL), 0);
	bdev = bdev_get_by_name("cfg");
	CU_ASSERT_FATAL(bdev != NULL);
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(bdev));

	info = json_object();
	bdev->fn_table->dump_info_json(bdev->ctxt, info);
	UT_ASSERT_EQ(json_integer_value(json_object_get(json_object_get(info, "null"), "md_size")),
		     16);
	json_decref(info);

	entry = ut_bdev_config(bdev);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(entry, "method")), "bdev_null_create");
	params = json_object_get(entry, "params");
	UT_ASSERT_EQ(json_integer_value(json_object_get(params, "num_blocks")), 12345);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "uuid")), uuid);

	UT_ASSERT_EQ(delete_sync("cfg"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	bdev = bdev_get_by_name("cfg");
	CU_ASSERT_FATAL(bdev != NULL);
	UT_ASSERT_EQ(bdev_get_num_blocks(bdev), 12345);
	UT_ASSERT_EQ(bdev_get_block_size(bdev), 1024);
	UT_ASSERT_EQ(bdev_get_md_size(bdev), 16);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev), uuid);
	UT_ASSERT_EQ(delete_sync("cfg"), 0);
}

static int
suite_init(void)
{
	return ut_setup(bdev_null_module_register) == 0 ? 0 : 1;
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
		UT_TEST(test_create_delete), UT_TEST(test_rpc),           UT_TEST(test_io_md0),
		UT_TEST(test_io_md64),       UT_TEST(test_config_replay),
	};

	return ut_run("bdev_null", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
