/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target/nvmf_feat.c: the value-only features (Arbitration, Power
 * Management, Temperature Threshold, Error Recovery, Write Atomicity Normal)
 * through Get and Set Features with every select, what is refused and with
 * which status, the temperature thresholds' bounds, and the Commands
 * Supported and Effects log; the SMART / Health log from the bdevs'
 * health and statistics, and its asynchronous events, walked over every
 * order of warnings, reads and AEC settings up to a bound.
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

static struct bdev_health
health(bool degraded, uint8_t spare, uint8_t threshold, uint64_t media)
{
	struct bdev_health h = { .degraded = degraded,
				 .spare_pct = spare,
				 .spare_threshold_pct = threshold,
				 .media_errors = media };

	return h;
}

static void
test_smart_mapping(void)
{
	struct nvmf_feat f;
	struct nvme_smart_log log;
	/* A whole gga 2 + 1, a malloc, a gga 4 + 2 that lost one (83 over 66). */
	struct bdev_health h[3] = { health(false, 100, 66, 0), health(false, 100, 0, 0),
				    health(true, 83, 66, 3) };
	struct bdev_io_stat st[3] = { 0 };

	nvmf_feat_init(&f);
	/* Nothing, whole: spare 100, threshold 0, the temperature. */
	nvmf_smart_fill(&log, &f, NULL, NULL, 0, 0, 0);
	UT_ASSERT_EQ(log.critical_warning, 0);
	UT_ASSERT_EQ(log.avail_spare, 100);
	UT_ASSERT_EQ(log.avail_spare_threshold, 0);
	UT_ASSERT_EQ(log.temperature[0] | log.temperature[1] << 8, NVMF_TEMP_K);

	/* The namespace nearest its threshold gives the spare; any degraded one bit 2. */
	st[0].bytes_read = 512 * 1000; /* exactly one unit */
	st[0].num_read_ops = 3;
	st[1].bytes_read = 1; /* rounded up: with the 1000 above, two units */
	st[1].bytes_written = 512 * 1001;
	st[1].num_write_ops = 7;
	st[2].num_write_zeroes_ops = 9; /* not host writes */
	nvmf_smart_fill(&log, &f, h, st, 3, 7200 + 59, 5);
	UT_ASSERT_EQ(log.critical_warning, NVME_SMART_WARN_RELIABILITY);
	UT_ASSERT_EQ(log.avail_spare, 83);
	UT_ASSERT_EQ(log.avail_spare_threshold, 66);
	UT_ASSERT_EQ(log.media_errors[0], 3);
	UT_ASSERT_EQ(log.host_reads[0], 3);
	UT_ASSERT_EQ(log.host_writes[0], 7);
	UT_ASSERT_EQ(log.data_units_read[0], 2);
	UT_ASSERT_EQ(log.data_units_written[0], 2);
	UT_ASSERT_EQ(log.power_on_hours[0], 2);
	UT_ASSERT_EQ(log.num_err_log_entries[0], 5);
	UT_ASSERT_EQ(nvmf_smart_warning(&f, h, 3), log.critical_warning);

	/* Exactly k of n in sync is at the threshold, not below; one fewer is below. */
	h[0] = health(true, 66, 66, 0);
	UT_ASSERT_EQ(nvmf_smart_warning(&f, h, 1), NVME_SMART_WARN_RELIABILITY);
	h[0] = health(true, 33, 66, 0);
	UT_ASSERT_EQ(nvmf_smart_warning(&f, h, 1),
		     NVME_SMART_WARN_RELIABILITY | NVME_SMART_WARN_SPARE);
	nvmf_smart_fill(&log, &f, h, NULL, 3, 0, 0);
	UT_ASSERT_EQ(log.avail_spare, 33);
	UT_ASSERT_EQ(log.avail_spare_threshold, 66);
	UT_ASSERT_EQ(log.host_reads[0], 0);
	h[0].read_only = true;
	UT_ASSERT_EQ(nvmf_smart_warning(&f, h, 1) & NVME_SMART_WARN_READ_ONLY,
		     NVME_SMART_WARN_READ_ONLY);

	/* Temperature: bit 1 at or past a threshold. */
	UT_ASSERT_EQ(nvmf_feat_set(&f, NVME_FEAT_TEMPERATURE_THRESHOLD, NVMF_TEMP_K), 0);
	UT_ASSERT_EQ(nvmf_smart_warning(&f, NULL, 0), NVME_SMART_WARN_TEMPERATURE);
}

/*
 * The events, walked: every sequence of up to DEPTH steps, each a new
 * critical warning (bits 0..3), a read of the log (unmasks), or a new AEC
 * (none, or all SMART bits), from each start. A model of the host checks
 * that an event is sent only unmasked, only for bits set and enabled and not
 * yet reported; that after each step no bit both set and enabled is left
 * unreported while unmasked; and that a bit that clears and returns is
 * reported again.
 */
#define WALK_DEPTH 5
#define WALK_STEPS (16 + 1 + 2)

struct walk_state {
	uint8_t warning;
	uint32_t aec;
	bool masked;
	uint8_t reported;
};

static unsigned long g_walk_events;

static void
walk_step(struct walk_state *w, unsigned int step)
{
	uint8_t before = w->reported, fresh;
	int info;

	if (step < 16) {
		w->warning = (uint8_t)step;
	} else if (step == 16) {
		w->masked = false;
	} else {
		w->aec = step == 17 ? 0 : NVME_AEC_SMART_MASK;
	}
	info = nvmf_smart_event(w->warning, w->aec, w->masked, &w->reported);
	fresh = (uint8_t)(w->warning & w->aec & ~(before & w->warning));
	if (info < 0) {
		/* Nothing sent: masked, or nothing new and enabled. */
		CU_ASSERT(w->masked || fresh == 0);
		return;
	}
	g_walk_events++;
	CU_ASSERT(!w->masked);
	CU_ASSERT(fresh != 0);
	/* The information names the most serious of the new bits. */
	if (fresh & (NVME_SMART_WARN_RELIABILITY | NVME_SMART_WARN_READ_ONLY)) {
		CU_ASSERT(info == NVME_AER_SMART_RELIABILITY);
	} else if (fresh & NVME_SMART_WARN_SPARE) {
		CU_ASSERT(info == NVME_AER_SMART_SPARE);
	} else {
		CU_ASSERT(info == NVME_AER_SMART_TEMPERATURE);
	}
	/* Only bits set now are ever marked; each new enabled one is. */
	CU_ASSERT((w->reported & ~w->warning) == 0);
	CU_ASSERT((w->reported & fresh) == fresh);
	w->masked = true;
}

static void
walk(struct walk_state w, unsigned int depth)
{
	unsigned int step;

	/* Unmasked, nothing set and enabled is left unreported. */
	if (!w.masked) {
		CU_ASSERT((w.warning & w.aec & ~w.reported) == 0);
	}
	/* A bit that cleared is not held as reported while it is clear. */
	CU_ASSERT((w.reported & ~w.warning) == 0);
	if (depth == WALK_DEPTH) {
		return;
	}
	for (step = 0; step < WALK_STEPS; step++) {
		struct walk_state next = w;

		walk_step(&next, step);
		walk(next, depth + 1);
	}
}

static void
test_smart_events(void)
{
	struct walk_state w = { 0 };
	uint8_t reported = 0;

	/* The orders that matter, by hand first. */
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY, NVME_AEC_NS_ATTR_NOTICE, false,
				      &reported),
		     -1); /* not enabled: Linux's own AEC */
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY, 0xff, false, &reported),
		     NVME_AER_SMART_RELIABILITY);
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY, 0xff, false, &reported), -1);
	/* Whole again: forgotten; degraded again: reported again. */
	UT_ASSERT_EQ(nvmf_smart_event(0, 0xff, false, &reported), -1);
	UT_ASSERT_EQ(reported, 0);
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY, 0xff, true, &reported), -1);
	UT_ASSERT_EQ(reported, 0); /* masked: not marked, so it goes once unmasked */
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY, 0xff, false, &reported),
		     NVME_AER_SMART_RELIABILITY);
	UT_ASSERT_EQ(nvmf_smart_event(NVME_SMART_WARN_RELIABILITY | NVME_SMART_WARN_TEMPERATURE,
				      0xff, false, &reported),
		     NVME_AER_SMART_TEMPERATURE);

	w.aec = NVME_AEC_SMART_MASK;
	walk(w, 0);
	w.aec = 0;
	walk(w, 0);
	/* The walk sent events (it is not vacuous). */
	CU_ASSERT(g_walk_events > 100000);
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_defaults_and_selects), UT_TEST(test_refusals),
		UT_TEST(test_temperature),          UT_TEST(test_command_effects),
		UT_TEST(test_smart_mapping),        UT_TEST(test_smart_events),
	};

	return ut_run("nvmf_feat", tests, ARRAY_SIZE(tests), NULL, NULL);
}
