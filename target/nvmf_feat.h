/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GGA_NVMF_FEAT_H
#define GGA_NVMF_FEAT_H

/*
 * The controller's features that are values and nothing else (NVMe Base
 * 2.0 section 5.27.1): Arbitration (01h), Power Management (02h),
 * Temperature Threshold (04h), Error Recovery (05h) and Write Atomicity
 * Normal (0Ah). Pure: the admin command code (nvmf_ctrlr_admin.c) hands
 * Get/Set Features of these here and the features with side effects
 * (queues, keep alive, events, reservations) stay there.
 *
 * What gga answers, feature by feature:
 *  - Arbitration: round robin only (CAP.AMS 0); AB, LPW, MPW and HPW are
 *    kept as set and change nothing. Default AB 111b (no limit), weights 0.
 *  - Power Management: one power state (NPSS 0), so PS must be 0 (Invalid
 *    Field otherwise); the Workload Hint is kept as set (0..2, others
 *    reserved: Invalid Field). Default 0.
 *  - Temperature Threshold: the Composite Temperature only (TMPSEL 0; 1111b,
 *    all implemented sensors, sets it too; a sensor 1..8 is not implemented:
 *    Invalid Field), over (THSEL 00b) and under (01b) thresholds. Defaults:
 *    over NVMF_TEMP_OVER_DEFAULT_K, under 0.
 *  - Error Recovery: TLER kept as set; DULBE is not supported (NSFEAT bit 2
 *    clear): Invalid Field. Namespace specific as the specification makes it
 *    (the supported capabilities say so); gga keeps one value, since TLER
 *    changes nothing here.
 *  - Write Atomicity Normal: DN kept as set; with AWUN and AWUPF 0 it changes
 *    nothing.
 * None is saveable; "saved" returns the default. Supported capabilities:
 * changeable (bit 2), and namespace specific (bit 1) for Error Recovery.
 */

#include <stdbool.h>
#include <stdint.h>

/*
 * The composite temperature gga reports (293 K, 20 C), the warning and
 * critical thresholds of Identify Controller (WCTEMP, CCTEMP) and the
 * default over-threshold, which is WCTEMP as the specification wants it.
 */
#define NVMF_TEMP_K              293
#define NVMF_WCTEMP_K            343
#define NVMF_CCTEMP_K            358
#define NVMF_TEMP_OVER_DEFAULT_K NVMF_WCTEMP_K

struct nvmf_feat {
	uint32_t arbitration;
	uint32_t power_mgmt;
	uint16_t temp_over;
	uint16_t temp_under;
	uint32_t error_recovery;
	uint32_t write_atomicity;
};

/* Returned by nvmf_feat_get/set for a feature this module does not hold. */
#define NVMF_FEAT_NOT_MINE 0xffff

void nvmf_feat_init(struct nvmf_feat *f);

/*
 * Get Features of fid with select sel (0 current, 1 default, 2 saved, 3
 * supported capabilities) and the command's dword 11: 0 with *cdw0 set, a
 * status (NVME_STATUS with DNR), or NVMF_FEAT_NOT_MINE.
 */
uint16_t nvmf_feat_get(const struct nvmf_feat *f, uint8_t fid, uint32_t sel, uint32_t cdw11,
		       uint32_t *cdw0);

/* Set Features of fid with dword 11: 0, a status, or NVMF_FEAT_NOT_MINE. */
uint16_t nvmf_feat_set(struct nvmf_feat *f, uint8_t fid, uint32_t cdw11);

/* Is the composite temperature at or over its over-threshold, or at or under its under-threshold? */
bool nvmf_feat_temp_out_of_range(const struct nvmf_feat *f, uint16_t temp_k);

#endif /* GGA_NVMF_FEAT_H */

/*
 * The Commands Supported and Effects log page (05h) of an I/O controller:
 * acs[256] for the admin opcodes, iocs[256] for the NVM command set's, each
 * CSUPP (bit 0) for a command gga executes and LBCC (bit 1) for one that
 * may change logical block content. No command restricts what else may run
 * (CSE 0), none changes capabilities or the namespace inventory. Fabrics
 * commands (7Fh) are not in it (they are not admin or I/O commands).
 */
void nvmf_cmd_effects_fill(uint32_t *acs, uint32_t *iocs);
