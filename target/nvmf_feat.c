/* SPDX-License-Identifier: BSD-3-Clause */
/* The value-only features of a controller (target/nvmf_feat.h says which and how). */
#include <string.h>

#include "gga/nvme_spec.h"

#include "nvmf_feat.h"

#define INVALID_FIELD (NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD) | NVME_STATUS_DNR)

/* Supported capabilities (Get Features, select 3): bit 1 namespace specific, bit 2 changeable. */
#define CAP_NS_SPECIFIC (1u << 1)
#define CAP_CHANGEABLE  (1u << 2)

/* Temperature Threshold dword 11 / dword 0. */
#define TMPTH(v)         ((v)&0xffffu)
#define TMPSEL(v)        (((v) >> 16) & 0xfu)
#define THSEL(v)         (((v) >> 20) & 0x3u)
#define TMPSEL_COMPOSITE 0x0u
#define TMPSEL_ALL       0xfu
#define THSEL_OVER       0x0u
#define THSEL_UNDER      0x1u

/* Arbitration: AB 2:0, LPW 15:8, MPW 23:16, HPW 31:24 (7:3 reserved). */
#define ARB_MASK        0xffffff07u
#define ARB_AB_NO_LIMIT 0x7u
/* Power Management: PS 4:0, WH 7:5. */
#define PM_PS(v)        ((v)&0x1fu)
#define PM_WH(v)        (((v) >> 5) & 0x7u)
#define PM_MASK         0xffu
/* Error Recovery: TLER 15:0, DULBE 16. */
#define ER_TLER_MASK    0xffffu
#define ER_DULBE        (1u << 16)
/* Write Atomicity Normal: DN 0. */
#define WA_DN           1u

void
nvmf_feat_init(struct nvmf_feat *f)
{
	f->arbitration = ARB_AB_NO_LIMIT;
	f->power_mgmt = 0;
	f->temp_over = NVMF_TEMP_OVER_DEFAULT_K;
	f->temp_under = 0;
	f->error_recovery = 0;
	f->write_atomicity = 0;
}

/* Which threshold dword 11 names: 0 with *over set, or Invalid Field. */
static uint16_t
temp_select(uint32_t cdw11, bool allow_all, bool *over)
{
	uint32_t tmpsel = TMPSEL(cdw11), thsel = THSEL(cdw11);

	if ((tmpsel != TMPSEL_COMPOSITE && !(allow_all && tmpsel == TMPSEL_ALL)) ||
	    (thsel != THSEL_OVER && thsel != THSEL_UNDER)) {
		return INVALID_FIELD;
	}
	*over = thsel == THSEL_OVER;
	return 0;
}

uint16_t
nvmf_feat_get(const struct nvmf_feat *f, uint8_t fid, uint32_t sel, uint32_t cdw11, uint32_t *cdw0)
{
	struct nvmf_feat def;
	const struct nvmf_feat *v = f;
	uint32_t caps = CAP_CHANGEABLE;
	uint16_t status;
	bool over;

	if (sel > NVME_FEAT_SEL_SUPPORTED) {
		return INVALID_FIELD;
	}
	if (sel == NVME_FEAT_SEL_DEFAULT || sel == NVME_FEAT_SEL_SAVED) {
		/* Nothing is saveable: saved is the default. */
		nvmf_feat_init(&def);
		v = &def;
	}
	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		*cdw0 = v->arbitration;
		break;
	case NVME_FEAT_POWER_MANAGEMENT:
		*cdw0 = v->power_mgmt;
		break;
	case NVME_FEAT_TEMPERATURE_THRESHOLD:
		status = temp_select(cdw11, false, &over);
		if (status != 0) {
			return status;
		}
		*cdw0 = (over ? v->temp_over : v->temp_under) | (cdw11 & 0x3f0000u);
		break;
	case NVME_FEAT_ERROR_RECOVERY:
		*cdw0 = v->error_recovery;
		caps |= CAP_NS_SPECIFIC;
		break;
	case NVME_FEAT_WRITE_ATOMICITY:
		*cdw0 = v->write_atomicity;
		break;
	default:
		return NVMF_FEAT_NOT_MINE;
	}
	if (sel == NVME_FEAT_SEL_SUPPORTED) {
		*cdw0 = caps;
	}
	return 0;
}

uint16_t
nvmf_feat_set(struct nvmf_feat *f, uint8_t fid, uint32_t cdw11)
{
	uint16_t status;
	bool over;

	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		f->arbitration = cdw11 & ARB_MASK;
		return 0;
	case NVME_FEAT_POWER_MANAGEMENT:
		/* Power state 0 is the only one (NPSS 0); workload hints 3..7 are reserved. */
		if (PM_PS(cdw11) != 0 || PM_WH(cdw11) > 2) {
			return INVALID_FIELD;
		}
		f->power_mgmt = cdw11 & PM_MASK;
		return 0;
	case NVME_FEAT_TEMPERATURE_THRESHOLD:
		status = temp_select(cdw11, true, &over);
		if (status != 0) {
			return status;
		}
		if (over) {
			f->temp_over = (uint16_t)TMPTH(cdw11);
		} else {
			f->temp_under = (uint16_t)TMPTH(cdw11);
		}
		return 0;
	case NVME_FEAT_ERROR_RECOVERY:
		if (cdw11 & ER_DULBE) {
			return INVALID_FIELD;
		}
		f->error_recovery = cdw11 & ER_TLER_MASK;
		return 0;
	case NVME_FEAT_WRITE_ATOMICITY:
		f->write_atomicity = cdw11 & WA_DN;
		return 0;
	default:
		return NVMF_FEAT_NOT_MINE;
	}
}

bool
nvmf_feat_temp_out_of_range(const struct nvmf_feat *f, uint16_t temp_k)
{
	/* At or past a threshold (NVMe Base 2.0, Critical Warning bit 1). */
	return temp_k >= f->temp_over || temp_k <= f->temp_under;
}

/* The namespace nearest its spare threshold (the most below it), or -1 with none. */
static long
nearest_spare(const struct bdev_health *health, size_t n)
{
	long best = -1;
	int margin, best_margin = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		margin = (int)health[i].spare_pct - (int)health[i].spare_threshold_pct;
		if (best < 0 || margin < best_margin) {
			best = (long)i;
			best_margin = margin;
		}
	}
	return best;
}

uint8_t
nvmf_smart_warning(const struct nvmf_feat *f, const struct bdev_health *health, size_t n)
{
	uint8_t w = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (health[i].spare_pct < health[i].spare_threshold_pct) {
			w |= NVME_SMART_WARN_SPARE;
		}
		if (health[i].degraded) {
			w |= NVME_SMART_WARN_RELIABILITY;
		}
		if (health[i].read_only) {
			w |= NVME_SMART_WARN_READ_ONLY;
		}
	}
	if (nvmf_feat_temp_out_of_range(f, NVMF_TEMP_K)) {
		w |= NVME_SMART_WARN_TEMPERATURE;
	}
	return w;
}

/* Bytes as data units: thousands of 512-byte units, each rounded up. */
static uint64_t
data_units(uint64_t bytes)
{
	uint64_t units = bytes / 512 + (bytes % 512 != 0);

	return units / 1000 + (units % 1000 != 0);
}

void
nvmf_smart_fill(struct nvme_smart_log *log, const struct nvmf_feat *f,
		const struct bdev_health *health, const struct bdev_io_stat *stats, size_t n,
		uint64_t power_on_s, uint64_t err_count)
{
	uint64_t bytes_read = 0, bytes_written = 0;
	long near = nearest_spare(health, n);
	size_t i;

	memset(log, 0, sizeof(*log));
	log->critical_warning = nvmf_smart_warning(f, health, n);
	log->temperature[0] = (uint8_t)(NVMF_TEMP_K & 0xff);
	log->temperature[1] = (uint8_t)(NVMF_TEMP_K >> 8);
	log->avail_spare = near < 0 ? 100 : health[near].spare_pct;
	log->avail_spare_threshold = near < 0 ? 0 : health[near].spare_threshold_pct;
	for (i = 0; i < n; i++) {
		log->media_errors[0] += health[i].media_errors;
		if (stats != NULL) {
			bytes_read += stats[i].bytes_read;
			bytes_written += stats[i].bytes_written;
			log->host_reads[0] += stats[i].num_read_ops;
			log->host_writes[0] += stats[i].num_write_ops;
		}
	}
	log->data_units_read[0] = data_units(bytes_read);
	log->data_units_written[0] = data_units(bytes_written);
	log->power_on_hours[0] = power_on_s / 3600;
	log->num_err_log_entries[0] = err_count;
}

int
nvmf_smart_event(uint8_t warning, uint32_t aec, bool masked, uint8_t *reported)
{
	uint8_t fresh;

	*reported &= warning;
	fresh = (uint8_t)(warning & ~*reported & (aec & NVME_AEC_SMART_MASK));
	if (fresh == 0 || masked) {
		return -1;
	}
	*reported |= fresh;
	if (fresh &
	    (NVME_SMART_WARN_RELIABILITY | NVME_SMART_WARN_READ_ONLY | NVME_SMART_WARN_VOLATILE)) {
		return NVME_AER_SMART_RELIABILITY;
	}
	if (fresh & NVME_SMART_WARN_SPARE) {
		return NVME_AER_SMART_SPARE;
	}
	return NVME_AER_SMART_TEMPERATURE;
}

#define CSE_CSUPP (1u << 0)
#define CSE_LBCC  (1u << 1)

void
nvmf_cmd_effects_fill(uint32_t *acs, uint32_t *iocs)
{
	static const uint8_t admin[] = {
		NVME_OPC_GET_LOG_PAGE, NVME_OPC_IDENTIFY,     NVME_OPC_ABORT,
		NVME_OPC_SET_FEATURES, NVME_OPC_GET_FEATURES, NVME_OPC_ASYNC_EVENT_REQUEST,
		NVME_OPC_KEEP_ALIVE,
	};
	static const uint8_t io_read[] = {
		NVME_OPC_FLUSH,
		NVME_OPC_READ,
		NVME_OPC_RESERVATION_REGISTER,
		NVME_OPC_RESERVATION_REPORT,
		NVME_OPC_RESERVATION_ACQUIRE,
		NVME_OPC_RESERVATION_RELEASE,
	};
	static const uint8_t io_write[] = {
		NVME_OPC_WRITE,
		NVME_OPC_WRITE_ZEROES,
		NVME_OPC_DATASET_MANAGEMENT,
	};
	size_t i;

	memset(acs, 0, 256 * sizeof(*acs));
	memset(iocs, 0, 256 * sizeof(*iocs));
	for (i = 0; i < sizeof(admin); i++) {
		acs[admin[i]] = CSE_CSUPP;
	}
	for (i = 0; i < sizeof(io_read); i++) {
		iocs[io_read[i]] = CSE_CSUPP;
	}
	for (i = 0; i < sizeof(io_write); i++) {
		iocs[io_write[i]] = CSE_CSUPP | CSE_LBCC;
	}
}
