/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the NVMe reservations module (target/nvmf_resv.c): register,
 * unregister and replace with their key checks, acquire, preempt (of the
 * holder, of other registrants, of every registrant of an all-registrants
 * reservation), release and clear, the access table of all six types, the
 * generation, persist through power loss, and the extended report's layout.
 */
#include <string.h>

#include "gga/nvme_spec.h"
#include "gga/util.h"
#include "gga_ut.h"

#include "target/nvmf_resv.c"

#define SC_OK       NVME_SC_SUCCESS
#define SC_CONFLICT NVME_SC_RESERVATION_CONFLICT
#define SC_INVALID  NVME_SC_INVALID_FIELD

static uint8_t g_a[16] = { 0xa }, g_b[16] = { 0xb }, g_c[16] = { 0xc };

static void
reg3(struct nvmf_resv *r)
{
	nvmf_resv_init(r);
	UT_ASSERT_EQ(nvmf_resv_register(r, g_a, 1, NVMF_RESV_REGISTER, false, 0, 0, 0xa1, NULL),
		     SC_OK);
	UT_ASSERT_EQ(nvmf_resv_register(r, g_b, 2, NVMF_RESV_REGISTER, false, 0, 0, 0xb1, NULL),
		     SC_OK);
}

static void
test_register(void)
{
	struct nvmf_resv r;
	struct nvmf_resv_result res;

	reg3(&r);
	UT_ASSERT_EQ(r.nregs, 2);
	UT_ASSERT_EQ(r.generation, 2);
	/* The same key again: success, nothing changes; another key: a conflict. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, 0, 0, 0xa1, &res),
		     SC_OK);
	CU_ASSERT(!res.changed);
	UT_ASSERT_EQ(r.generation, 2);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, 0, 0, 0xa2, NULL),
		     SC_CONFLICT);
	/* Replace needs the current key, unless it is ignored. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REPLACE, false, 0, 0x99, 0xa2, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REPLACE, false, 0, 0xa1, 0xa2, &res),
		     SC_OK);
	CU_ASSERT(res.changed);
	UT_ASSERT_EQ(r.regs[0].key, 0xa2);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REPLACE, true, 0, 0, 0xa3, NULL),
		     SC_OK);
	UT_ASSERT_EQ(r.regs[0].key, 0xa3);
	/* A replace of a host not registered: a conflict, or a registration with IEKEY. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_REPLACE, false, 0, 0, 0xc1, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_REPLACE, true, 0, 0, 0xc1, NULL),
		     SC_OK);
	CU_ASSERT(nvmf_resv_is_registered(&r, g_c));
	/* Unregister: the key must match. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_UNREGISTER, false, 0, 0x1, 0, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_UNREGISTER, false, 0, 0xc1, 0, NULL),
		     SC_OK);
	CU_ASSERT(!nvmf_resv_is_registered(&r, g_c));
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_UNREGISTER, true, 0, 0, 0, NULL),
		     SC_CONFLICT);
	/* Bad action, reserved CPTPL value. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, 3, false, 0, 0, 0, NULL), SC_INVALID);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, 1, 0, 0xa3, NULL),
		     SC_INVALID);
	/* CPTPL sets and clears persist through power loss. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, NVMF_RESV_PTPL_SET,
					0, 0xa3, &res),
		     SC_OK);
	CU_ASSERT(r.ptpl && res.changed);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, NVMF_RESV_PTPL_CLEAR,
					0, 0xa3, NULL),
		     SC_OK);
	CU_ASSERT(!r.ptpl);
}

static void
test_capacity(void)
{
	struct nvmf_resv r;
	uint8_t id[16] = { 0 };
	uint32_t i;

	nvmf_resv_init(&r);
	for (i = 0; i < NVMF_RESV_MAX_REGS; i++) {
		id[0] = (uint8_t)i;
		id[1] = 1;
		UT_ASSERT_EQ(nvmf_resv_register(&r, id, 0, NVMF_RESV_REGISTER, false, 0, 0, i,
						NULL),
			     SC_OK);
	}
	id[0] = 0xff;
	UT_ASSERT_EQ(nvmf_resv_register(&r, id, 0, NVMF_RESV_REGISTER, false, 0, 0, 7, NULL),
		     NVME_SC_CAPACITY_EXCEEDED);
	UT_ASSERT_EQ(r.nregs, NVMF_RESV_MAX_REGS);
}

static void
test_acquire_release(void)
{
	struct nvmf_resv r;
	struct nvmf_resv_result res;
	uint32_t gen;

	reg3(&r);
	/* Not registered, or the wrong key: a conflict; a bad type: invalid. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_c, NVMF_RESV_ACQUIRE, false, 1, 0, 0, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 1, 0x5, 0, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 7, 0xa1, 0, NULL),
		     SC_INVALID);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 0, 0xa1, 0, NULL),
		     SC_INVALID);
	/* IEKEY belongs to Register: refused by Acquire and Release. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, true, 1, 0, 0, NULL),
		     SC_INVALID);
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, NVMF_RESV_RELEASE, true, 1, 0, NULL), SC_INVALID);
	gen = r.generation;
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, NVMF_RESV_WRITE_EXCLUSIVE,
				       0xa1, 0, &res),
		     SC_OK);
	CU_ASSERT(res.changed);
	/* An acquire does not change the generation. */
	UT_ASSERT_EQ(r.generation, gen);
	CU_ASSERT(nvmf_resv_is_holder(&r, g_a));
	CU_ASSERT(!nvmf_resv_is_holder(&r, g_b));
	/* Again, same type: success; another type, or another host: a conflict. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 1, 0xa1, 0, NULL), SC_OK);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 2, 0xa1, 0, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_ACQUIRE, false, 1, 0xb1, 0, NULL),
		     SC_CONFLICT);
	/* Release by a registrant that does not hold it: success, nothing changes. */
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_b, NVMF_RESV_RELEASE, false, 1, 0xb1, &res), SC_OK);
	CU_ASSERT(!res.changed);
	UT_ASSERT_EQ(r.type, NVMF_RESV_WRITE_EXCLUSIVE);
	/* By the holder: the type must match. */
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, NVMF_RESV_RELEASE, false, 2, 0xa1, NULL),
		     SC_INVALID);
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, NVMF_RESV_RELEASE, false, 1, 0x1, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, NVMF_RESV_RELEASE, false, 1, 0xa1, &res), SC_OK);
	CU_ASSERT(res.changed);
	UT_ASSERT_EQ(r.type, NVMF_RESV_NONE);
	UT_ASSERT_EQ(r.nregs, 2);
	/* The holder unregistering releases the reservation. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_ACQUIRE, false, 3, 0xb1, 0, NULL), SC_OK);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_b, 2, NVMF_RESV_UNREGISTER, false, 0, 0xb1, 0, NULL),
		     SC_OK);
	UT_ASSERT_EQ(r.type, NVMF_RESV_NONE);
	/* Clear: every registration and the reservation go; the generation moves. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 2, 0xa1, 0, NULL), SC_OK);
	gen = r.generation;
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, NVMF_RESV_CLEAR, false, 0, 0xa1, &res), SC_OK);
	UT_ASSERT_EQ(r.nregs, 0);
	UT_ASSERT_EQ(r.type, NVMF_RESV_NONE);
	UT_ASSERT_EQ(r.generation, gen + 1);
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_a, 2, false, 0, 0xa1, NULL), SC_INVALID);
}

static void
test_preempt(void)
{
	struct nvmf_resv r;
	struct nvmf_resv_result res;
	uint32_t gen;

	/* The holder preempted by its key: it is unregistered, the preempter holds. */
	reg3(&r);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_REGISTER, false, 0, 0, 0xc1, NULL),
		     SC_OK);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, 1, 0xa1, 0, NULL), SC_OK);
	gen = r.generation;
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_PREEMPT_ABORT, false,
				       NVMF_RESV_EXCLUSIVE_ACCESS, 0xb1, 0xa1, &res),
		     SC_OK);
	CU_ASSERT(res.changed);
	UT_ASSERT_EQ(res.npreempted, 1);
	CU_ASSERT(memcmp(res.preempted[0], g_a, 16) == 0);
	CU_ASSERT(!nvmf_resv_is_registered(&r, g_a));
	CU_ASSERT(nvmf_resv_is_holder(&r, g_b));
	UT_ASSERT_EQ(r.type, NVMF_RESV_EXCLUSIVE_ACCESS);
	UT_ASSERT_EQ(r.generation, gen + 1);
	/* The fenced host's writes (and, for this type, reads) conflict now. */
	UT_ASSERT_EQ(nvmf_resv_check(&r, g_a, true), SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_check(&r, g_a, false), SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_check(&r, g_b, true), SC_OK);
	/* A key that is not the holder's: those registrants go, the reservation stays. */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_PREEMPT, false, 2, 0xb1, 0xc1, &res),
		     SC_OK);
	CU_ASSERT(!nvmf_resv_is_registered(&r, g_c));
	CU_ASSERT(nvmf_resv_is_holder(&r, g_b));
	/* A key nobody has: a conflict; 0 with a holder of another key: invalid. */
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_REGISTER, false, 0, 0, 0xc1, NULL),
		     SC_OK);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_c, NVMF_RESV_PREEMPT, false, 2, 0xc1, 0x77, NULL),
		     SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_c, NVMF_RESV_PREEMPT, false, 2, 0xc1, 0, NULL),
		     SC_INVALID);
	/* The standby takes over from a holder that stopped answering (issue 19). */
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_c, NVMF_RESV_PREEMPT, false, 1, 0xc1, 0xb1, &res),
		     SC_OK);
	CU_ASSERT(nvmf_resv_is_holder(&r, g_c));
	UT_ASSERT_EQ(nvmf_resv_check(&r, g_b, true), SC_CONFLICT);
	UT_ASSERT_EQ(nvmf_resv_check(&r, g_b, false), SC_OK);

	/* No reservation: the registrants of the key go, nothing is acquired. */
	reg3(&r);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_PREEMPT, false, 1, 0xa1, 0xb1, NULL),
		     SC_OK);
	CU_ASSERT(!nvmf_resv_is_registered(&r, g_b));
	UT_ASSERT_EQ(r.type, NVMF_RESV_NONE);

	/* All registrants: key 0 removes every other registrant and takes it. */
	reg3(&r);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_c, 3, NVMF_RESV_REGISTER, false, 0, 0, 0xc1, NULL),
		     SC_OK);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false,
				       NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS, 0xa1, 0, NULL),
		     SC_OK);
	CU_ASSERT(nvmf_resv_is_holder(&r, g_b) && nvmf_resv_is_holder(&r, g_c));
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_PREEMPT, false, NVMF_RESV_WRITE_EXCLUSIVE,
				       0xb1, 0, &res),
		     SC_OK);
	UT_ASSERT_EQ(res.npreempted, 2);
	UT_ASSERT_EQ(r.nregs, 1);
	CU_ASSERT(nvmf_resv_is_holder(&r, g_b));
	UT_ASSERT_EQ(r.type, NVMF_RESV_WRITE_EXCLUSIVE);
	/* The last registrant of an all-registrants reservation leaving releases it. */
	UT_ASSERT_EQ(nvmf_resv_release(&r, g_b, NVMF_RESV_RELEASE, false, 1, 0xb1, NULL), SC_OK);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_ACQUIRE, false, 6, 0xb1, 0, NULL), SC_OK);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_b, 2, NVMF_RESV_UNREGISTER, false, 0, 0xb1, 0, NULL),
		     SC_OK);
	UT_ASSERT_EQ(r.type, NVMF_RESV_NONE);
}

/* The access table: holder, registrant, other host; read, write. */
static void
test_access_table(void)
{
	static const struct {
		uint32_t type;
		int reg_read, reg_write, other_read, other_write;
	} t[] = {
		{ NVMF_RESV_WRITE_EXCLUSIVE, SC_OK, SC_CONFLICT, SC_OK, SC_CONFLICT },
		{ NVMF_RESV_EXCLUSIVE_ACCESS, SC_CONFLICT, SC_CONFLICT, SC_CONFLICT, SC_CONFLICT },
		{ NVMF_RESV_WRITE_EXCLUSIVE_REG_ONLY, SC_OK, SC_OK, SC_OK, SC_CONFLICT },
		{ NVMF_RESV_EXCLUSIVE_ACCESS_REG_ONLY, SC_OK, SC_OK, SC_CONFLICT, SC_CONFLICT },
		{ NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS, SC_OK, SC_OK, SC_OK, SC_CONFLICT },
		{ NVMF_RESV_EXCLUSIVE_ACCESS_ALL_REGS, SC_OK, SC_OK, SC_CONFLICT, SC_CONFLICT },
	};
	struct nvmf_resv r;
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		reg3(&r);
		/* Nothing reserved: everyone may do anything. */
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_c, true), SC_OK);
		UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_a, NVMF_RESV_ACQUIRE, false, t[i].type, 0xa1,
					       0, NULL),
			     SC_OK);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_a, false), SC_OK);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_a, true), SC_OK);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_b, false), t[i].reg_read);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_b, true), t[i].reg_write);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_c, false), t[i].other_read);
		UT_ASSERT_EQ(nvmf_resv_check(&r, g_c, true), t[i].other_write);
	}
}

static uint64_t
le(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;

	while (n-- > 0) {
		v = v << 8 | p[n];
	}
	return v;
}

static void
test_report(void)
{
	struct nvmf_resv r;
	uint8_t buf[256];

	reg3(&r);
	UT_ASSERT_EQ(nvmf_resv_acquire(&r, g_b, NVMF_RESV_ACQUIRE, false, 3, 0xb1, 0, NULL), SC_OK);
	UT_ASSERT_EQ(nvmf_resv_register(&r, g_a, 1, NVMF_RESV_REGISTER, false, NVMF_RESV_PTPL_SET,
					0, 0xa1, NULL),
		     SC_OK);
	UT_ASSERT_EQ(nvmf_resv_report_len(&r), 64 + 2 * 64);
	UT_ASSERT_EQ(nvmf_resv_report(&r, false, buf, sizeof(buf)),
		     NVME_SC_HOSTID_INCONSISTENT_FORMAT);
	memset(buf, 0xee, sizeof(buf));
	UT_ASSERT_EQ(nvmf_resv_report(&r, true, buf, sizeof(buf)), SC_OK);
	UT_ASSERT_EQ(le(buf, 4), r.generation);
	UT_ASSERT_EQ(buf[4], 3);
	UT_ASSERT_EQ(le(buf + 5, 2), 2);
	UT_ASSERT_EQ(buf[9], 1);
	/* Entries: CNTLID, RCSTS (holder), RKEY, 128-bit HOSTID. */
	UT_ASSERT_EQ(le(buf + 64, 2), 1);
	UT_ASSERT_EQ(buf[64 + 2], 0);
	UT_ASSERT_EQ(le(buf + 64 + 8, 8), 0xa1);
	CU_ASSERT(memcmp(buf + 64 + 16, g_a, 16) == 0);
	UT_ASSERT_EQ(le(buf + 128, 2), 2);
	UT_ASSERT_EQ(buf[128 + 2], 1);
	UT_ASSERT_EQ(le(buf + 128 + 8, 8), 0xb1);
	/* Past the data: zeros. A short buffer takes what fits. */
	UT_ASSERT_EQ(buf[200], 0);
	memset(buf, 0xee, sizeof(buf));
	UT_ASSERT_EQ(nvmf_resv_report(&r, true, buf, 10), SC_OK);
	UT_ASSERT_EQ(buf[4], 3);
	UT_ASSERT_EQ(buf[10], 0xee);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_register), UT_TEST(test_capacity),     UT_TEST(test_acquire_release),
		UT_TEST(test_preempt),  UT_TEST(test_access_table), UT_TEST(test_report),
	};

	return ut_run("nvmf_resv", tests, ARRAY_SIZE(tests), NULL, NULL);
}
