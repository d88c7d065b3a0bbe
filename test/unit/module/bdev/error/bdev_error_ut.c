/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the error bdev, stacked on malloc bdevs: create/delete
 * through the C API and RPC, pass-through I/O, every injection type, NVMe
 * status propagation, reset and removal with held I/O, hot-remove of the
 * base, and configuration replay.
 */
#include <errno.h>

#include "module/bdev/error/bdev_error.h"
#include "module/bdev/malloc/bdev_malloc.h"
#include "test/unit/module/bdev/bdev_ut_common.h"

#define BS               512
#define NBLOCKS          64
#define NVME_SC_INTERNAL 0x06
#define NVME_SC_ABORTED  0x07

static void
register_modules(void)
{
	bdev_malloc_module_register();
	bdev_error_module_register();
}

static struct bdev *
make_base(const char *name, uint32_t md_size)
{
	struct bdev_malloc_opts opts = {
		.name = name,
		.num_blocks = NBLOCKS,
		.block_size = BS,
		.md_size = md_size,
	};
	struct bdev *bdev = NULL;

	UT_ASSERT_EQ(bdev_malloc_create(&opts, &bdev), 0);
	return bdev;
}

static struct bdev *
make_ee(const char *base_name, const char *uuid, int *rc_out)
{
	struct bdev_error_opts opts = { .base_name = base_name, .uuid = uuid };
	struct bdev *bdev = NULL;
	int rc;

	rc = bdev_error_create(&opts, &bdev);
	if (rc_out != NULL) {
		*rc_out = rc;
	}
	return rc == 0 ? bdev : NULL;
}

static int
inject(const char *name, enum bdev_io_type io_type, enum bdev_error_type error_type, uint32_t num)
{
	struct bdev_error_inject_opts opts = {
		.io_type = io_type,
		.error_type = error_type,
		.num = num,
	};

	return bdev_error_inject_error(name, &opts);
}

static int
ee_delete_sync(const char *name)
{
	struct ut_cpl cpl = { 0 };
	int rc;

	rc = bdev_error_delete(name, ut_cpl_done, &cpl);
	if (rc != 0) {
		return rc;
	}
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	return cpl.rc;
}

static int
malloc_delete_sync(const char *name)
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

/* The injections listed by dump_info_json (json_decref it). */
static json_t *
dump_injections(const char *name)
{
	struct bdev *bdev = bdev_get_by_name(name);
	json_t *info, *injections;

	if (bdev == NULL) {
		return NULL;
	}
	info = json_object();
	bdev->fn_table->dump_info_json(bdev->ctxt, info);
	injections = json_object_get(json_object_get(info, "error"), "injections");
	json_incref(injections);
	json_decref(info);
	return injections;
}

static void
test_create_delete(void)
{
	struct bdev *base, *ee;
	struct bdev_desc *desc;
	int rc;

	base = make_base("B0", 64);
	CU_ASSERT_FATAL(base != NULL);
	ee = make_ee("B0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_name(ee), "EE_B0");
	UT_ASSERT_STR_EQ(bdev_get_module_name(ee), "error");
	UT_ASSERT_EQ(bdev_get_block_size(ee), BS);
	UT_ASSERT_EQ(bdev_get_md_size(ee), 64);
	UT_ASSERT_EQ(bdev_get_num_blocks(ee), NBLOCKS);
	CU_ASSERT(bdev_is_claimed(base));
	CU_ASSERT(strcmp(bdev_get_uuid_str(ee), bdev_get_uuid_str(base)) != 0);
	/* The claim keeps writers off the base. */
	UT_ASSERT_EQ(bdev_open("B0", true, ut_dev_event, NULL, &desc), -EPERM);

	make_ee("B0", NULL, &rc);
	UT_ASSERT_EQ(rc, -EEXIST);
	make_ee("nope", NULL, &rc);
	UT_ASSERT_EQ(rc, -ENODEV);
	make_ee("", NULL, &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	make_ee("B0", "1234", &rc);
	UT_ASSERT_EQ(rc, -EINVAL);
	UT_ASSERT_EQ(inject("EE_B0", BDEV_IO_TYPE_RESET, BDEV_ERROR_FAILURE, 1), -EINVAL);
	UT_ASSERT_EQ(inject("B0", BDEV_IO_TYPE_READ, BDEV_ERROR_FAILURE, 1), -ENODEV);

	UT_ASSERT_EQ(bdev_error_delete("B0", NULL, NULL), -ENODEV);
	UT_ASSERT_EQ(bdev_error_delete("nope", NULL, NULL), -ENODEV);
	UT_ASSERT_EQ(ee_delete_sync("EE_B0"), 0);
	CU_ASSERT(bdev_get_by_name("EE_B0") == NULL);
	CU_ASSERT(!bdev_is_claimed(base));

	/* The base is free again: a new error bdev, with a chosen uuid. */
	ee = make_ee("B0", "01234567-89ab-4def-8123-456789abcdef", &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(ee), "01234567-89ab-4def-8123-456789abcdef");
	UT_ASSERT_EQ(ee_delete_sync("EE_B0"), 0);
	UT_ASSERT_EQ(malloc_delete_sync("B0"), 0);
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_rpc(void)
{
	json_t *resp, *injections, *inj;

	CU_ASSERT_FATAL(make_base("R0", 0) != NULL);
	resp = ut_rpc_call("bdev_error_create", "{\"base_name\": \"R0\"}");
	CU_ASSERT_FATAL(resp != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(resp, "result")), "EE_R0");
	json_decref(resp);

	resp = ut_rpc_call("bdev_error_create", "{}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), RPC_ERROR_INVALID_PARAMS);
	CU_ASSERT(strstr(ut_rpc_error_message(resp), "base_name") != NULL);
	json_decref(resp);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_create", "{\"base_name\": \"nope\"}"), -ENODEV);
	resp = ut_rpc_call("bdev_error_create", "{\"base_name\": \"R0\"}");
	UT_ASSERT_EQ(ut_rpc_error_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(ut_rpc_error_message(resp), "bdev 'EE_R0' already exists");
	json_decref(resp);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_create", "{\"base_name\": \"R0\", \"uuid\": \"u\"}"),
		     RPC_ERROR_INVALID_PARAMS);

	/* Injection parameters. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"reset\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"read\", "
				 "\"error_type\": \"explode\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"flush\", "
				 "\"error_type\": \"corrupt_data\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"read\", "
				 "\"error_type\": \"corrupt_data\", \"corrupt_value\": 0}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"read\", "
				 "\"error_type\": \"corrupt_data\", \"corrupt_value\": 256}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"read\", \"num\": -1}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error", "{\"name\": \"EE_R0\"}"),
		     RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"R0\", \"io_type\": \"read\"}"),
		     -ENODEV);

	/* Defaults: failure, once. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"read\"}"),
		     0);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"write\", "
				 "\"error_type\": \"corrupt_data\", \"num\": 0, "
				 "\"corrupt_offset\": 9}"),
		     0);
	injections = dump_injections("EE_R0");
	UT_ASSERT_EQ_FATAL(json_array_size(injections), 2);
	inj = json_array_get(injections, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(inj, "io_type")), "read");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(inj, "error_type")), "failure");
	UT_ASSERT_EQ(json_integer_value(json_object_get(inj, "num")), 1);
	inj = json_array_get(injections, 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(inj, "io_type")), "write");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(inj, "error_type")), "corrupt_data");
	UT_ASSERT_EQ(json_integer_value(json_object_get(inj, "num")), 0);
	UT_ASSERT_EQ(json_integer_value(json_object_get(inj, "corrupt_offset")), 9);
	UT_ASSERT_EQ(json_integer_value(json_object_get(inj, "corrupt_value")), 0xff);
	json_decref(injections);

	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_R0\", \"io_type\": \"clear\"}"),
		     0);
	injections = dump_injections("EE_R0");
	UT_ASSERT_EQ(json_array_size(injections), 0);
	json_decref(injections);

	UT_ASSERT_EQ(ut_rpc_code("bdev_error_delete", "{\"name\": \"R0\"}"), -ENODEV);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_delete", "{\"name\": \"EE_R0\"}"), 0);
	CU_ASSERT(bdev_get_by_name("EE_R0") == NULL);
	UT_ASSERT_EQ(malloc_delete_sync("R0"), 0);
}

struct fixture {
	struct ut_dev ee;   /* read-write, on the app thread */
	struct ut_dev ee_w; /* read-write, on the worker thread */
	struct ut_dev base; /* read-only view of the base */
	uint8_t *buf;
	uint8_t *buf2;
	size_t len; /* 8 blocks */
	uint32_t bbs;
};

static void
fixture_up(struct fixture *f, const char *base_name, uint32_t md_size)
{
	char ee_name[64];
	int rc;

	memset(f, 0, sizeof(*f));
	CU_ASSERT_FATAL(make_base(base_name, md_size) != NULL);
	make_ee(base_name, NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	snprintf(ee_name, sizeof(ee_name), "EE_%s", base_name);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&f->ee, ee_name, g_ut_app), 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&f->ee_w, ee_name, g_ut_worker), 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open_mode(&f->base, base_name, false, g_ut_app), 0);
	f->bbs = BS + md_size;
	f->len = 8 * (size_t)f->bbs;
	f->buf = env_dma_malloc(f->len, 0);
	f->buf2 = env_dma_malloc(f->len, 0);
	CU_ASSERT_FATAL(f->buf != NULL && f->buf2 != NULL);
}

static void
fixture_down(struct fixture *f, const char *base_name)
{
	char ee_name[64];

	snprintf(ee_name, sizeof(ee_name), "EE_%s", base_name);
	ut_dev_close(&f->ee);
	ut_dev_close(&f->ee_w);
	ut_dev_close(&f->base);
	UT_ASSERT_EQ(ee_delete_sync(ee_name), 0);
	UT_ASSERT_EQ(malloc_delete_sync(base_name), 0);
	env_dma_free(f->buf);
	env_dma_free(f->buf2);
}

static void
test_passthrough(void)
{
	struct fixture f;
	struct ut_io r;

	fixture_up(&f, "P0", 64);

	/* Data and metadata written through the error bdev land on the base. */
	ut_pattern(f.buf, f.len, 1);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 4, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	memset(f.buf2, 0, f.len);
	UT_ASSERT_EQ(ut_io_sync(&f.base, BDEV_IO_TYPE_READ, f.buf2, 4, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);
	memset(f.buf2, 0, f.len);
	UT_ASSERT_EQ(ut_io_sync(&f.ee_w, BDEV_IO_TYPE_READ, f.buf2, 4, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);

	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 5, 1, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_UNMAP, NULL, 7, 1, &r), 0);
	CU_ASSERT(r.success);
	memset(f.buf + 1 * f.bbs, 0, f.bbs);
	memset(f.buf + 3 * f.bbs, 0, f.bbs);
	UT_ASSERT_EQ(ut_io_sync(&f.base, BDEV_IO_TYPE_READ, f.buf2, 4, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);
	UT_ASSERT_EQ(ut_io_sync(&f.ee_w, BDEV_IO_TYPE_FLUSH, NULL, 0, NBLOCKS, &r), 0);
	CU_ASSERT(r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.success);

	fixture_down(&f, "P0");
}

static void
test_failure(void)
{
	json_t *injections;
	struct fixture f;
	struct ut_io r;
	int i;

	fixture_up(&f, "F0", 0);
	UT_ASSERT_EQ(inject("EE_F0", BDEV_IO_TYPE_READ, BDEV_ERROR_FAILURE, 3), 0);

	/* The count is shared by the threads. */
	for (i = 0; i < 3; i++) {
		UT_ASSERT_EQ(ut_io_sync(i == 1 ? &f.ee_w : &f.ee, BDEV_IO_TYPE_READ, f.buf, 0, 8,
					&r),
			     0);
		CU_ASSERT(r.done && !r.success);
		UT_ASSERT_EQ(r.sct, 0);
		UT_ASSERT_EQ(r.sc, NVME_SC_INTERNAL);
		/* Other types are not affected. */
		UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
		CU_ASSERT(r.done && r.success);
		if (i == 0) {
			injections = dump_injections("EE_F0");
			UT_ASSERT_EQ(json_integer_value(
					     json_object_get(json_array_get(injections, 0), "num")),
				     2);
			json_decref(injections);
		}
	}
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	injections = dump_injections("EE_F0");
	UT_ASSERT_EQ(json_array_size(injections), 0);
	json_decref(injections);

	fixture_down(&f, "F0");
}

static void
test_pending_reset(void)
{
	struct ut_io w[4], rd, reset;
	struct fixture f;
	int i;

	fixture_up(&f, "H0", 64);
	ut_pattern(f.buf, f.len, 3);
	UT_ASSERT_EQ(inject("EE_H0", BDEV_IO_TYPE_WRITE, BDEV_ERROR_PENDING, 3), 0);

	/* Three writes on two threads are held; the fourth and a read go through. */
	UT_ASSERT_EQ(ut_submit(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 1, &w[0]), 0);
	UT_ASSERT_EQ(ut_submit(&f.ee_w, BDEV_IO_TYPE_WRITE, f.buf, 1, 1, &w[1]), 0);
	UT_ASSERT_EQ(ut_submit(&f.ee_w, BDEV_IO_TYPE_WRITE, f.buf, 2, 1, &w[2]), 0);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 1, &rd), 0);
	CU_ASSERT(rd.done && rd.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 3, 1, &w[3]), 0);
	CU_ASSERT(w[3].done && w[3].success);
	ut_poll_idle();
	for (i = 0; i < 3; i++) {
		CU_ASSERT(!w[i].done);
	}

	/* A reset aborts the held I/O on every thread, then succeeds. */
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_RESET, NULL, 0, 0, &reset), 0);
	CU_ASSERT(reset.done && reset.success);
	UT_POLL_UNTIL(w[0].done && w[1].done && w[2].done);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(w[i].done && !w[i].success);
		UT_ASSERT_EQ(w[i].sc, NVME_SC_ABORTED);
		UT_ASSERT_EQ(w[i].err, -ECANCELED);
	}
	/* The injection is used up: writes go through again. */
	UT_ASSERT_EQ(ut_io_sync(&f.ee_w, BDEV_IO_TYPE_WRITE, f.buf, 0, 1, &w[0]), 0);
	CU_ASSERT(w[0].done && w[0].success);

	fixture_down(&f, "H0");
}

static void
test_corrupt_data(void)
{
	struct bdev_error_inject_opts opts = {
		.io_type = BDEV_IO_TYPE_WRITE,
		.error_type = BDEV_ERROR_CORRUPT_DATA,
		.num = 1,
		.corrupt_offset = 700,
		.corrupt_value = 0x0f,
	};
	uint8_t *expect;
	struct fixture f;
	struct ut_io r;

	fixture_up(&f, "C0", 64);
	expect = malloc(f.len);
	CU_ASSERT_FATAL(expect != NULL);

	/* A write goes down with byte 700 (block 1, inside its data) XORed. */
	UT_ASSERT_EQ(bdev_error_inject_error("EE_C0", &opts), 0);
	ut_pattern(f.buf, f.len, 4);
	memcpy(expect, f.buf, f.len);
	expect[700] ^= 0x0f;
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.base, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf2, expect, f.len) == 0);
	CU_ASSERT(f.buf2[700] != (uint8_t)(expect[700] ^ 0x0f));
	/* The corruption was made in the caller's buffer, as documented. */
	CU_ASSERT(memcmp(f.buf, expect, f.len) == 0);
	/* Only once. */
	ut_pattern(f.buf, f.len, 4);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
	UT_ASSERT_EQ(ut_io_sync(&f.base, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf2, f.buf, f.len) == 0);

	/* A read comes back with the byte flipped (the RPC default value 0xff), twice. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_C0\", \"io_type\": \"read\", "
				 "\"error_type\": \"corrupt_data\", \"num\": 2, "
				 "\"corrupt_offset\": 2000}"),
		     0);
	memcpy(expect, f.buf, f.len);
	expect[2000] ^= 0xff;
	UT_ASSERT_EQ(ut_io_sync(&f.ee_w, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	CU_ASSERT(memcmp(f.buf2, expect, f.len) == 0);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf2, expect, f.len) == 0);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf2, f.buf, f.len) == 0);
	/* The stored data was never touched by the read corruption. */
	UT_ASSERT_EQ(ut_io_sync(&f.base, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf2, f.buf, f.len) == 0);

	free(expect);
	fixture_down(&f, "C0");
}

/* drop: a write is acknowledged and never reaches the base; reads are untouched. */
static void
test_drop_writes(void)
{
	struct fixture f;
	struct ut_io r;

	fixture_up(&f, "D0", 0);
	ut_pattern(f.buf, f.len, 3);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);

	/* Only writes, unmap and write_zeroes take it. */
	CU_ASSERT(inject("EE_D0", BDEV_IO_TYPE_READ, BDEV_ERROR_DROP, 0) == -EINVAL);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_D0\", \"io_type\": \"all\", "
				 "\"error_type\": \"drop\", \"num\": 1}"),
		     0);
	ut_pattern(f.buf2, f.len, 4);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	/* Acknowledged, yet the old data is still there (read through the error bdev). */
	memset(f.buf2, 0, f.len);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);
	/* num 1: the next write lands. */
	ut_pattern(f.buf, f.len, 5);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
	memset(f.buf2, 0, f.len);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);
	fixture_down(&f, "D0");
}

static void
test_nomem_and_clear(void)
{
	struct fixture f;
	struct ut_io r;
	uint64_t deadline;
	int i;

	fixture_up(&f, "N0", 0);
	ut_pattern(f.buf, f.len, 6);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);

	/* NOMEM is retried by the bdev layer until the injection runs out. */
	UT_ASSERT_EQ(inject("EE_N0", BDEV_IO_TYPE_READ, BDEV_ERROR_NOMEM, 3), 0);
	memset(f.buf2, 0, f.len);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	CU_ASSERT(memcmp(f.buf, f.buf2, f.len) == 0);

	/* An endless NOMEM keeps the I/O queued until the injection is cleared. */
	UT_ASSERT_EQ(inject("EE_N0", BDEV_IO_TYPE_WRITE, BDEV_ERROR_NOMEM, 0), 0);
	UT_ASSERT_EQ(ut_submit(&f.ee_w, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
	deadline = time_now_ns() + 20 * 1000 * 1000;
	while (time_now_ns() < deadline) {
		ut_poll_once();
	}
	CU_ASSERT(!r.done);
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_N0\", \"io_type\": \"clear\"}"),
		     0);
	UT_POLL_UNTIL(r.done);
	CU_ASSERT(r.done && r.success);

	/* "all" until cleared fails every type; clear lifts it. */
	UT_ASSERT_EQ(ut_rpc_code("bdev_error_inject_error",
				 "{\"name\": \"EE_N0\", \"io_type\": \"all\", \"num\": 0}"),
		     0);
	for (i = 0; i < 5; i++) {
		UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
		CU_ASSERT(r.done && !r.success);
		UT_ASSERT_EQ(ut_io_sync(&f.ee_w, BDEV_IO_TYPE_WRITE, f.buf, 0, 8, &r), 0);
		CU_ASSERT(r.done && !r.success);
	}
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_FLUSH, NULL, 0, 8, &r), 0);
	CU_ASSERT(r.done && !r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_UNMAP, NULL, 0, 8, &r), 0);
	CU_ASSERT(r.done && !r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_WRITE_ZEROES, NULL, 0, 8, &r), 0);
	CU_ASSERT(r.done && !r.success);
	UT_ASSERT_EQ(inject("EE_N0", BDEV_ERROR_IO_TYPE_ALL, BDEV_ERROR_NONE, 0), 0);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_READ, f.buf2, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_ASSERT_EQ(ut_io_sync(&f.ee, BDEV_IO_TYPE_UNMAP, NULL, 0, 8, &r), 0);
	CU_ASSERT(r.done && r.success);

	fixture_down(&f, "N0");
}

/* Error bdevs stack: the upper one passes the lower one's NVMe status through. */
static void
test_stacked_status(void)
{
	struct ut_io r, held;
	struct ut_dev top;
	uint8_t *buf;
	int rc;

	CU_ASSERT_FATAL(make_base("S0", 0) != NULL);
	make_ee("S0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	make_ee("EE_S0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&top, "EE_EE_S0", g_ut_worker), 0);
	buf = env_dma_malloc(BS, 0);

	UT_ASSERT_EQ(inject("EE_S0", BDEV_IO_TYPE_READ, BDEV_ERROR_FAILURE, 1), 0);
	UT_ASSERT_EQ(ut_io_sync(&top, BDEV_IO_TYPE_READ, buf, 0, 1, &r), 0);
	CU_ASSERT(r.done && !r.success);
	UT_ASSERT_EQ(r.sct, 0);
	UT_ASSERT_EQ(r.sc, NVME_SC_INTERNAL);

	/* A write held below is aborted by a reset from above and reported as aborted. */
	UT_ASSERT_EQ(inject("EE_S0", BDEV_IO_TYPE_WRITE, BDEV_ERROR_PENDING, 1), 0);
	UT_ASSERT_EQ(ut_submit(&top, BDEV_IO_TYPE_WRITE, buf, 0, 1, &held), 0);
	ut_poll_idle();
	CU_ASSERT(!held.done);
	UT_ASSERT_EQ(ut_io_sync(&top, BDEV_IO_TYPE_RESET, NULL, 0, 0, &r), 0);
	CU_ASSERT(r.done && r.success);
	UT_POLL_UNTIL(held.done);
	CU_ASSERT(held.done && !held.success);
	UT_ASSERT_EQ(held.sct, 0);
	UT_ASSERT_EQ(held.sc, NVME_SC_ABORTED);

	ut_dev_close(&top);
	env_dma_free(buf);
	/* Deleting the lowest bdev takes both error bdevs down with it. */
	UT_ASSERT_EQ(malloc_delete_sync("S0"), 0);
	ut_poll_idle();
	CU_ASSERT(bdev_first() == NULL);
}

static void
test_delete_with_pending(void)
{
	struct ut_cpl cpl = { 0 };
	struct ut_dev dev;
	struct ut_io held[2];
	uint8_t *buf;
	int rc;

	CU_ASSERT_FATAL(make_base("D0", 0) != NULL);
	make_ee("D0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "EE_D0", g_ut_worker), 0);
	buf = env_dma_malloc(BS, 0);
	UT_ASSERT_EQ(inject("EE_D0", BDEV_ERROR_IO_TYPE_ALL, BDEV_ERROR_PENDING, 0), 0);
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_READ, buf, 0, 1, &held[0]), 0);
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_FLUSH, NULL, 0, 1, &held[1]), 0);
	ut_poll_idle();
	CU_ASSERT(!held[0].done && !held[1].done);

	/* Delete aborts what is held, tells the user, and finishes once it closes. */
	UT_ASSERT_EQ(bdev_error_delete("EE_D0", ut_cpl_done, &cpl), 0);
	UT_ASSERT_EQ(bdev_error_delete("EE_D0", NULL, NULL), -EBUSY);
	UT_POLL_UNTIL(held[0].done && held[1].done && dev.removed);
	CU_ASSERT(held[0].done && !held[0].success);
	CU_ASSERT(held[1].done && !held[1].success);
	CU_ASSERT(dev.removed);
	CU_ASSERT(!cpl.done);
	ut_dev_close(&dev);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	UT_ASSERT_EQ(cpl.rc, 0);
	CU_ASSERT(bdev_get_by_name("EE_D0") == NULL);
	CU_ASSERT(!bdev_is_claimed(bdev_get_by_name("D0")));

	env_dma_free(buf);
	UT_ASSERT_EQ(malloc_delete_sync("D0"), 0);
}

static void
test_hot_remove(void)
{
	struct ut_cpl cpl = { 0 };
	struct ut_dev dev;
	struct ut_io held;
	uint8_t *buf;
	int rc;

	CU_ASSERT_FATAL(make_base("X0", 0) != NULL);
	make_ee("X0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	UT_ASSERT_EQ_FATAL(ut_dev_open(&dev, "EE_X0", g_ut_worker), 0);
	buf = env_dma_malloc(BS, 0);
	UT_ASSERT_EQ(inject("EE_X0", BDEV_IO_TYPE_WRITE, BDEV_ERROR_PENDING, 1), 0);
	UT_ASSERT_EQ(ut_submit(&dev, BDEV_IO_TYPE_WRITE, buf, 0, 1, &held), 0);
	ut_poll_idle();
	CU_ASSERT(!held.done);

	/* Removing the base removes the error bdev, aborting its held I/O. */
	UT_ASSERT_EQ(bdev_malloc_delete("X0", ut_cpl_done, &cpl), 0);
	UT_POLL_UNTIL(held.done && dev.removed);
	CU_ASSERT(held.done && !held.success);
	CU_ASSERT(dev.removed);
	ut_dev_close(&dev);
	UT_POLL_UNTIL(cpl.done);
	CU_ASSERT(cpl.done);
	UT_ASSERT_EQ(cpl.rc, 0);
	CU_ASSERT(bdev_get_by_name("EE_X0") == NULL);
	CU_ASSERT(bdev_get_by_name("X0") == NULL);
	env_dma_free(buf);
}

static void
test_config_replay(void)
{
	json_t *entry, *params, *config;
	char uuid[40], base_uuid[40];
	struct bdev *ee;
	size_t i;
	int rc;

	CU_ASSERT_FATAL(make_base("K0", 16) != NULL);
	ee = make_ee("K0", NULL, &rc);
	UT_ASSERT_EQ_FATAL(rc, 0);
	snprintf(uuid, sizeof(uuid), "%s", bdev_get_uuid_str(ee));
	UT_ASSERT_EQ(inject("EE_K0", BDEV_IO_TYPE_READ, BDEV_ERROR_FAILURE, 5), 0);

	entry = ut_bdev_config(ee);
	CU_ASSERT_FATAL(entry != NULL);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(entry, "method")), "bdev_error_create");
	params = json_object_get(entry, "params");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "base_name")), "K0");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(params, "uuid")), uuid);
	UT_ASSERT_EQ(json_object_size(params), 2);

	UT_ASSERT_EQ(ee_delete_sync("EE_K0"), 0);
	UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	json_decref(entry);
	ee = bdev_get_by_name("EE_K0");
	CU_ASSERT_FATAL(ee != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(ee), uuid);
	UT_ASSERT_EQ(bdev_get_md_size(ee), 16);
	UT_ASSERT_EQ(bdev_get_num_blocks(ee), NBLOCKS);
	UT_ASSERT_EQ(bdev_get_block_size(ee), BS);
	/* The injections were run-time state and did not come back. */
	params = dump_injections("EE_K0");
	UT_ASSERT_EQ(json_array_size(params), 0);
	json_decref(params);

	/*
	 * The whole subsystem's configuration lists the base before the error
	 * bdev, and replaying it after deleting both brings both back as they were.
	 */
	config = json_array();
	bdev_subsystem_config_json(config);
	UT_ASSERT_EQ_FATAL(json_array_size(config), 2);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(config, 0), "method")),
			 "bdev_malloc_create");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_array_get(config, 1), "method")),
			 "bdev_error_create");
	snprintf(base_uuid, sizeof(base_uuid), "%s", bdev_get_uuid_str(bdev_get_by_name("K0")));
	UT_ASSERT_EQ(malloc_delete_sync("K0"), 0);
	ut_poll_idle();
	CU_ASSERT(bdev_first() == NULL);
	json_array_foreach(config, i, entry)
	{
		UT_ASSERT_EQ(ut_rpc_replay(entry), 0);
	}
	json_decref(config);
	CU_ASSERT_FATAL(bdev_get_by_name("K0") != NULL && bdev_get_by_name("EE_K0") != NULL);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev_get_by_name("K0")), base_uuid);
	UT_ASSERT_STR_EQ(bdev_get_uuid_str(bdev_get_by_name("EE_K0")), uuid);
	CU_ASSERT(bdev_is_claimed(bdev_get_by_name("K0")));

	/* Left for the subsystem shutdown to unregister, top-most first. */
}

static int
suite_init(void)
{
	return ut_setup(register_modules) == 0 ? 0 : 1;
}

static int
suite_fini(void)
{
	int rc = ut_teardown();

	return rc == 0 ? 0 : 1;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_create_delete),   UT_TEST(test_rpc),
		UT_TEST(test_passthrough),     UT_TEST(test_failure),
		UT_TEST(test_pending_reset),   UT_TEST(test_corrupt_data),
		UT_TEST(test_nomem_and_clear), UT_TEST(test_drop_writes),
		UT_TEST(test_stacked_status),  UT_TEST(test_delete_with_pending),
		UT_TEST(test_hot_remove),      UT_TEST(test_config_replay),
	};

	return ut_run("bdev_error", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
