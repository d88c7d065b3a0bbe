/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of what the target's transports share (target/nvmf_transport.c),
 * through a fake transport on one hand-polled thread: a poll group's life
 * (init, poller, fini, an init that fails), data buffers taken at once or in
 * arrival order after a wait (a request never overtakes one that waits), a
 * waiting request recycled, the statistics every transport has, the data
 * buffer pool's size check, socket addresses of listen addresses and peers,
 * and a message sent with nvmf_send_msg_or_spin().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "gga/env.h"
#include "gga/thread.h"
#include "gga/util.h"
#include "gga_ut.h"

/* The static poller function (tgroup_poll) is reached from here. */
#include "target/nvmf_transport.c"

static struct thread *g_thread;

/* ---- The fake transport ---- */

struct ut_group {
	struct nvmf_transport_poll_group base;
	int inits;
	int polls;
	int poll_rc;
};

static int g_init_rc;
static int g_finis;
static struct nvmf_request *g_ready[8];
static int g_num_ready;

static int
ut_group_init(struct nvmf_transport_poll_group *tg)
{
	container_of(tg, struct ut_group, base)->inits++;
	return g_init_rc;
}

static void
ut_group_fini(struct nvmf_transport_poll_group *tg)
{
	g_finis++;
}

static int
ut_group_poll(struct nvmf_transport_poll_group *tg)
{
	struct ut_group *group = container_of(tg, struct ut_group, base);

	group->polls++;
	return group->poll_rc;
}

static void
ut_bufs_ready(struct nvmf_request *req)
{
	if (g_num_ready < (int)ARRAY_SIZE(g_ready)) {
		g_ready[g_num_ready] = req;
	}
	g_num_ready++;
}

static void
ut_dump_stats(struct nvmf_transport_poll_group *tg, json_t *obj)
{
	json_object_set_new(obj, "ut_polls",
			    json_integer(container_of(tg, struct ut_group, base)->polls));
}

static const struct nvmf_tgroup_ops g_ut_tgroup_ops = {
	.size = sizeof(struct ut_group),
	.name = "ut_group",
	.init = ut_group_init,
	.fini = ut_group_fini,
	.poll = ut_group_poll,
	.bufs_ready = ut_bufs_ready,
	.dump_stats = ut_dump_stats,
};

static const struct nvmf_transport_ops g_ut_ops = {
	.name = "UT",
	.trtype = NVME_TRTYPE_LOOP,
	.tgroup = &g_ut_tgroup_ops,
};

static struct nvmf_transport g_t = {
	.ops = &g_ut_ops,
	.opts = { .io_unit_size = 4096, .max_io_size = 8192, .num_shared_buffers = 4 },
};

/* A request with room for max_io_size / io_unit_size buffers. */
struct ut_req {
	struct nvmf_request req;
	struct iovec iov[2];
	void *bufs[2];
};

static void
ut_req_init(struct ut_req *r, uint32_t length)
{
	memset(r, 0, sizeof(*r));
	r->req.buf_iov = r->iov;
	r->req.bufs = r->bufs;
	r->req.length = length;
}

/* ---- Tests ---- */

static void
test_tgroup_lifecycle(void)
{
	struct nvmf_transport_poll_group *tg = NULL;
	struct ut_group *group;

	g_init_rc = 0;
	g_finis = 0;
	CU_ASSERT_FATAL(nvmf_tgroup_create(&g_t, NULL, &tg) == 0);
	CU_ASSERT_FATAL(tg != NULL);
	group = container_of(tg, struct ut_group, base);
	CU_ASSERT(tg->transport == &g_t);
	UT_ASSERT_EQ(group->inits, 1);
	CU_ASSERT(tg->poller != NULL);
	CU_ASSERT(TAILQ_EMPTY(&tg->buf_wait));

	/* The core's poller runs the transport's poll and passes its answer on. */
	thread_poll(g_thread, 0, 0);
	UT_ASSERT_EQ(group->polls, 1);
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_IDLE);
	group->poll_rc = POLLER_BUSY;
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_BUSY);
	UT_ASSERT_EQ(group->polls, 3);

	nvmf_tgroup_destroy(tg);
	UT_ASSERT_EQ(g_finis, 1);

	/* An init that fails: its error comes back, fini is not called, nothing leaks. */
	g_init_rc = -EIO;
	tg = NULL;
	UT_ASSERT_EQ(nvmf_tgroup_create(&g_t, NULL, &tg), -EIO);
	CU_ASSERT(tg == NULL);
	UT_ASSERT_EQ(g_finis, 1);
	g_init_rc = 0;
}

static void
test_buf_pool_create(void)
{
	struct nvmf_transport t = g_t;

	/* One 8 KiB transfer needs two 4 KiB buffers. */
	t.opts.num_shared_buffers = 1;
	UT_ASSERT_EQ(nvmf_transport_buf_pool_create(&t, &t.opts, "ut_small"), -EINVAL);
	t.opts.num_shared_buffers = 2;
	UT_ASSERT_EQ(nvmf_transport_buf_pool_create(&t, &t.opts, "ut_two"), 0);
	CU_ASSERT_FATAL(t.buf_pool != NULL);
	mempool_free(t.buf_pool);
}

static void
test_bufs_wait_in_order(void)
{
	struct nvmf_transport_poll_group *tg = NULL;
	struct ut_req r[6];
	json_t *obj;

	CU_ASSERT_FATAL(nvmf_transport_buf_pool_create(&g_t, &g_t.opts, "ut_data") == 0);
	CU_ASSERT_FATAL(nvmf_tgroup_create(&g_t, NULL, &tg) == 0);
	g_num_ready = 0;

	/* Two requests take the pool's four buffers at once. */
	ut_req_init(&r[0], 8192);
	nvmf_tgroup_req_get_bufs(tg, &r[0].req);
	ut_req_init(&r[1], 5000);
	nvmf_tgroup_req_get_bufs(tg, &r[1].req);
	UT_ASSERT_EQ_FATAL(g_num_ready, 2);
	CU_ASSERT(g_ready[0] == &r[0].req && g_ready[1] == &r[1].req);
	UT_ASSERT_EQ(r[1].req.nbufs, 2);
	UT_ASSERT_EQ(r[1].req.iovcnt, 2);
	CU_ASSERT(r[1].req.iov == r[1].iov);
	CU_ASSERT(r[1].iov[0].iov_base == r[1].bufs[0]);
	UT_ASSERT_EQ(r[1].iov[0].iov_len, 4096);
	UT_ASSERT_EQ(r[1].iov[1].iov_len, 5000 - 4096);
	UT_ASSERT_EQ(tg->buf_waits, 0);

	/* The pool is empty: the next two wait, and the poller keeps polling. */
	ut_req_init(&r[2], 100);
	nvmf_tgroup_req_get_bufs(tg, &r[2].req);
	ut_req_init(&r[3], 100);
	nvmf_tgroup_req_get_bufs(tg, &r[3].req);
	UT_ASSERT_EQ(g_num_ready, 2);
	CU_ASSERT(r[2].req.buf_waiting && r[3].req.buf_waiting);
	UT_ASSERT_EQ(tg->buf_waits, 2);
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_BUSY);
	UT_ASSERT_EQ(g_num_ready, 2);

	/* Buffers come back: the poller serves the waiting requests in order. */
	nvmf_tgroup_req_put_bufs(tg, &r[0].req);
	UT_ASSERT_EQ(r[0].req.nbufs, 0);
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_BUSY);
	UT_ASSERT_EQ_FATAL(g_num_ready, 4);
	CU_ASSERT(g_ready[2] == &r[2].req && g_ready[3] == &r[3].req);
	CU_ASSERT(!r[2].req.buf_waiting && !r[3].req.buf_waiting);
	CU_ASSERT(TAILQ_EMPTY(&tg->buf_wait));
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_IDLE);

	/*
	 * One buffer free: an 8 KiB request waits, and a 100-byte one the pool
	 * could serve waits behind it rather than overtake it.
	 */
	nvmf_tgroup_req_put_bufs(tg, &r[2].req);
	ut_req_init(&r[4], 8192);
	nvmf_tgroup_req_get_bufs(tg, &r[4].req);
	ut_req_init(&r[5], 100);
	nvmf_tgroup_req_get_bufs(tg, &r[5].req);
	UT_ASSERT_EQ(g_num_ready, 4);
	CU_ASSERT(r[4].req.buf_waiting && r[5].req.buf_waiting);
	UT_ASSERT_EQ(tg->buf_waits, 4);

	/* A waiting request recycled leaves the queue and gives back nothing. */
	nvmf_tgroup_req_put_bufs(tg, &r[5].req);
	CU_ASSERT(!r[5].req.buf_waiting);
	CU_ASSERT(TAILQ_FIRST(&tg->buf_wait) == &r[4].req);
	CU_ASSERT(TAILQ_NEXT(&r[4].req, link) == NULL);
	UT_ASSERT_EQ(tgroup_poll(tg), POLLER_BUSY);
	UT_ASSERT_EQ(g_num_ready, 4);
	nvmf_tgroup_req_put_bufs(tg, &r[3].req);
	thread_poll(g_thread, 0, 0);
	UT_ASSERT_EQ_FATAL(g_num_ready, 5);
	CU_ASSERT(g_ready[4] == &r[4].req);
	UT_ASSERT_EQ(r[4].req.nbufs, 2);

	/* The statistics every transport has, then the transport's own. */
	tg->num_conns = 3;
	obj = json_object();
	CU_ASSERT_FATAL(obj != NULL);
	nvmf_tgroup_dump_stats(tg, obj);
	UT_ASSERT_EQ(json_integer_value(json_object_get(obj, "connections")), 3);
	UT_ASSERT_EQ(json_integer_value(json_object_get(obj, "buffer_waits")), 4);
	CU_ASSERT(json_object_get(obj, "ut_polls") != NULL);
	json_decref(obj);
	tg->num_conns = 0;

	nvmf_tgroup_req_put_bufs(tg, &r[4].req);
	nvmf_tgroup_req_put_bufs(tg, &r[1].req);
	nvmf_tgroup_destroy(tg);
	/* Every buffer is back: the pool could hand out all four at once. */
	ut_req_init(&r[0], 8192);
	ut_req_init(&r[1], 8192);
	CU_ASSERT(req_take_bufs(&g_t, &r[0].req) && req_take_bufs(&g_t, &r[1].req));
	mempool_put_bulk(g_t.buf_pool, r[0].bufs, 2);
	mempool_put_bulk(g_t.buf_pool, r[1].bufs, 2);
	mempool_free(g_t.buf_pool);
	g_t.buf_pool = NULL;
}

static void
test_addresses(void)
{
	struct nvmf_listen_addr a = {
		.trtype = NVME_TRTYPE_TCP,
		.adrfam = NVME_ADRFAM_IPV4,
		.traddr = "127.0.0.1",
		.trsvcid = "4420",
	};
	struct sockaddr_storage ss;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char buf[64];
	size_t len = 0;

	UT_ASSERT_EQ(nvmf_listen_addr_to_sockaddr(&a, &ss, &len), 0);
	UT_ASSERT_EQ(ss.ss_family, AF_INET);
	UT_ASSERT_EQ(len, sizeof(struct sockaddr_in));
	UT_ASSERT_EQ(ntohs(((struct sockaddr_in *)&ss)->sin_port), 4420);
	nvmf_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf));
	UT_ASSERT_STR_EQ(buf, "127.0.0.1:4420");

	a.adrfam = NVME_ADRFAM_IPV6;
	snprintf(a.traddr, sizeof(a.traddr), "::1");
	snprintf(a.trsvcid, sizeof(a.trsvcid), "4421");
	UT_ASSERT_EQ(nvmf_listen_addr_to_sockaddr(&a, &ss, &len), 0);
	UT_ASSERT_EQ(ss.ss_family, AF_INET6);
	UT_ASSERT_EQ(len, sizeof(struct sockaddr_in6));
	nvmf_sockaddr_str((struct sockaddr *)&ss, buf, sizeof(buf));
	UT_ASSERT_STR_EQ(buf, "::1:4421");

	/* An IPv4 address given as IPv6 does not parse; other families are not sockets here. */
	snprintf(a.traddr, sizeof(a.traddr), "127.0.0.1");
	UT_ASSERT_EQ(nvmf_listen_addr_to_sockaddr(&a, &ss, &len), -EINVAL);
	a.adrfam = NVME_ADRFAM_IPV4;
	snprintf(a.traddr, sizeof(a.traddr), "300.0.0.1");
	UT_ASSERT_EQ(nvmf_listen_addr_to_sockaddr(&a, &ss, &len), -EINVAL);
	a.adrfam = NVME_ADRFAM_IB;
	UT_ASSERT_EQ(nvmf_listen_addr_to_sockaddr(&a, &ss, &len), -EAFNOSUPPORT);

	/* A peer of unknown address. */
	nvmf_sockaddr_str(NULL, buf, sizeof(buf));
	UT_ASSERT_STR_EQ(buf, "?:0");
	nvmf_sockaddr_str((struct sockaddr *)&sun, buf, sizeof(buf));
	UT_ASSERT_STR_EQ(buf, "?:0");
}

static void
count_msg(void *arg)
{
	(*(int *)arg)++;
}

static void
test_send_msg(void)
{
	int count = 0;

	nvmf_send_msg_or_spin(g_thread, count_msg, &count);
	nvmf_send_msg_or_spin(g_thread, count_msg, &count);
	UT_ASSERT_EQ(count, 0);
	thread_poll(g_thread, 0, 0);
	UT_ASSERT_EQ(count, 2);
}

static int
suite_init(void)
{
	struct env_opts opts;

	env_opts_init(&opts);
	opts.name = "nvmf_transport_ut";
	opts.arena_size = 16u << 20;
	opts.no_huge = true;
	if (env_init(&opts) != 0 || thread_lib_init() != 0) {
		return -1;
	}
	g_thread = thread_create("ut");
	if (g_thread == NULL) {
		return -1;
	}
	thread_set_current(g_thread);
	return 0;
}

static int
suite_fini(void)
{
	thread_destroy(g_thread);
	thread_lib_fini();
	env_fini();
	return 0;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_tgroup_lifecycle),   UT_TEST(test_buf_pool_create),
		UT_TEST(test_bufs_wait_in_order), UT_TEST(test_addresses),
		UT_TEST(test_send_msg),
	};

	return ut_run("nvmf_transport", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
