/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target/nvmf_feat.c: the value-only features (Arbitration, Power
 * Management, Temperature Threshold, Error Recovery, Write Atomicity Normal)
 * through Get and Set Features with every select, what is refused and with
 * which status, the temperature thresholds' bounds, and the Commands
 * Supported and Effects log.
 */
#include "gga/nvme_spec.h"
#include "gga/util.h"
#include "gga_ut.h"
#include "target/nvmf_feat.h"

#define INVALID_FIELD (NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_DNR)
#define SEL(s)        (s)

static uint32_t
get(const struct nvmf_feat *f, uint8_t fid, uint32_t sel, uint32_t cdw11)
{
	uint32_t cdw0 = 0xdeadbeef;

	UT_ASSERT_EQ(nvmf_feat_get(f, fid, sel, cdw11, &cdw0), 0);
	return cdw0;
}

static void
test_defaults_and_selects(void)
{
	struct nvmf_feat f;
	uint32_t cdw0;

	nvmf_feat_init(&f);
	/* Defaults: arbitration burst unlimited, the rest 0, over-threshold WCTEMP. */
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ARBITRATION, SEL(0), 0), 7);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_POWER_MANAGEMENT, SEL(0), 0), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, SEL(0), 0), NVMF_WCTEMP_K);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, SEL(0), 1u << 20), 1u << 20);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ERROR_RECOVERY, SEL(0), 0), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_WRITE_ATOMICITY, SEL(0), 0), 0);

	/* Set, then current shows it, default and saved do not. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_ARBITRATION, 0x030201f2), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ARBITRATION, SEL(0), 0), 0x03020102); /* bits 7:3 reserved */
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ARBITRATION, SEL(1), 0), 7);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ARBITRATION, SEL(2), 0), 7);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_ERROR_RECOVERY, 0x1234), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ERROR_RECOVERY, SEL(0), 0), 0x1234);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ERROR_RECOVERY, SEL(2), 0), 0);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_WRITE_ATOMICITY, 0xffffffff), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_WRITE_ATOMICITY, SEL(0), 0), 1);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_POWER_MANAGEMENT, 2u << 5), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_POWER_MANAGEMENT, SEL(0), 0), 2u << 5);

	/* Supported capabilities: changeable; Error Recovery namespace specific too. */
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ARBITRATION, SEL(3), 0), 1u << 2);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, SEL(3), 0), 1u << 2);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ERROR_RECOVERY, SEL(3), 0), (1u << 1) | (1u << 2));

	/* Selects 4..7 are reserved; other features are not this module's. */
	UT_ASSERT_EQ(nvmf_feat_get(&f, NVME_FEAT_ARBITRATION, 4, 0, &cdw0), INVALID_FIELD);
	UT_ASSERT_EQ(nvmf_feat_get(&f, NVME_FEAT_NUMBER_OF_QUEUES, 0, 0, &cdw0),
		     NVMF_FEAT_NOT_MINE);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_KEEP_ALIVE_TIMER, 0), NVMF_FEAT_NOT_MINE);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_INTERRUPT_COALESCING, 0), NVMF_FEAT_NOT_MINE);
}

static void
test_refusals(void)
{
	struct nvmf_feat f;
	uint32_t cdw0;

	nvmf_feat_init(&f);
	/* Power state 1 does not exist (NPSS 0); workload hints 3..7 are reserved. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_POWER_MANAGEMENT, 1), INVALID_FIELD);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_POWER_MANAGEMENT, 3u << 5), INVALID_FIELD);
	/* DULBE is not supported. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_ERROR_RECOVERY, 1u << 16), INVALID_FIELD);
	/* Temperature sensors 1..8 are not implemented, 9..14 reserved, THSEL 2 and 3 reserved. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, (1u << 16) | 300),
		     INVALID_FIELD);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, (9u << 16) | 300),
		     INVALID_FIELD);
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, (2u << 20) | 300),
		     INVALID_FIELD);
	UT_ASSERT_EQ(nvmf_feat_get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 3u << 16, &cdw0),
		     INVALID_FIELD);
	/* All sensors (1111b) may be set, not read. */
	UT_ASSERT_EQ(nvmf_feat_get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 0xfu << 16, &cdw0),
		     INVALID_FIELD);
	/* Nothing refused changed anything. */
	UT_ASSERT_EQ(get(&f, NVME_FEAT_POWER_MANAGEMENT, 0, 0), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_ERROR_RECOVERY, 0, 0), 0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 0), NVMF_WCTEMP_K);
}

static void
test_temperature(void)
{
	struct nvmf_feat f;

	nvmf_feat_init(&f);
	CU_ASSERT(!nvmf_feat_temp_out_of_range(&f, NVMF_TEMP_K));
	/* Over: at the threshold counts. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, NVMF_TEMP_K), 0);
	CU_ASSERT(nvmf_feat_temp_out_of_range(&f, NVMF_TEMP_K));
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, NVMF_TEMP_K + 1), 0);
	CU_ASSERT(!nvmf_feat_temp_out_of_range(&f, NVMF_TEMP_K));
	/* Under, through "all sensors": at the threshold counts too. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD,
				   (0xfu << 16) | (1u << 20) | NVMF_TEMP_K),
		     0);
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 1u << 20),
		     (1u << 20) | NVMF_TEMP_K);
	CU_ASSERT(nvmf_feat_temp_out_of_range(&f, NVMF_TEMP_K));
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD,
				   (1u << 20) | (NVMF_TEMP_K - 1)),
		     0);
	CU_ASSERT(!nvmf_feat_temp_out_of_range(&f, NVMF_TEMP_K));
	/* The over threshold kept its own value. */
	UT_ASSERT_EQ(get(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, 0, 0), NVMF_TEMP_K + 1);
}

static void
test_command_effects(void)
{
	uint32_t acs[256], iocs[256];
	unsigned int i, n = 0;

	nvmf_cmd_effects_fill(acs, iocs);
	UT_ASSERT_EQ(acs[NVME_OPC_IDENTIFY], 1);
	UT_ASSERT_EQ(acs[NVME_OPC_KEEP_ALIVE], 1);
	UT_ASSERT_EQ(acs[NVME_OPC_FABRICS], 0);
	UT_ASSERT_EQ(acs[NVME_OPC_FORMAT_NVM], 0);
	UT_ASSERT_EQ(iocs[NVME_OPC_READ], 1);
	UT_ASSERT_EQ(iocs[NVME_OPC_WRITE], 3);
	UT_ASSERT_EQ(iocs[NVME_OPC_WRITE_ZEROES], 3);
	UT_ASSERT_EQ(iocs[NVME_OPC_DATASET_MANAGEMENT], 3);
	UT_ASSERT_EQ(iocs[NVME_OPC_RESERVATION_ACQUIRE], 1);
	UT_ASSERT_EQ(iocs[NVME_OPC_COMPARE], 0);
	for (i = 0; i < 256; i++) {
		n += acs[i] != 0;
		n += iocs[i] != 0;
	}
	UT_ASSERT_EQ(n, 7 + 9);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_defaults_and_selects),
		UT_TEST(test_refusals),
		UT_TEST(test_temperature),
		UT_TEST(test_command_effects),
	};

	return ut_run("nvmf_feat", tests, ARRAY_SIZE(tests), NULL, NULL);
}
